//! A scripted person at the console: a scenario that types on QEMU's standard input through
//! a pipe and checks what the terminal shows, step by step, as `make run`'s user would see
//! it, then checks the VMs' log files.
//!
//! The script is data (`Step`); `converse` runs it against a started QEMU. Each `Shows`
//! waits for its text after the previous one's match, so the steps follow the terminal in
//! order. This module judges only the terminal and the logs; the exit status is the
//! scenario's `End`.

use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::process::{self, describe, Captured, Ending};

/// One thing the person does or looks for.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// Types these bytes.
    Type(&'static str),
    /// Waits until the terminal shows this text after the previous `Shows` match.
    Shows(&'static str),
    /// Remembers where the terminal is: the next `NotShown` looks from here.
    Mark,
    /// The terminal has not shown this text between the last `Mark` and the last match.
    NotShown(&'static str),
    /// VM `.0`'s log file holds this text once QEMU has exited.
    Logged(&'static str, &'static str),
}

/// How long one `Shows` may wait.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `cmd` with a pipe as its input, plays `script` on it, and waits for QEMU to exit
/// within `deadline` after the script. Returns the run and what went wrong (the first step
/// that failed; then QEMU is stopped), with `logs` the folder of the VMs' log files.
pub fn converse(
    cmd: &mut Command,
    script: &[Step],
    logs: &Path,
    deadline: Duration,
) -> Result<(Captured, Vec<String>)> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start `{}`", describe(cmd)))?;
    let terminal = Arc::new(Mutex::new(Vec::new()));
    let readers = [
        child.stdout.take().map(|p| collect(p, &terminal)),
        child.stderr.take().map(|p| collect(p, &terminal)),
    ];
    let mut problems = play(&mut child, script, &terminal);
    let ending = if problems.is_empty() {
        let ending = process::wait_until(&mut child, Some(deadline))?;
        if matches!(ending, Ending::TimedOut) {
            problems.push(format!(
                "QEMU did not exit within {} s of the last step",
                deadline.as_secs()
            ));
        }
        ending
    } else {
        process::wait_until(&mut child, Some(Duration::ZERO))?
    };
    for reader in readers.into_iter().flatten() {
        let _ = reader.join();
    }
    if problems.is_empty() {
        problems.extend(check_logs(script, logs));
    }
    let output = String::from_utf8_lossy(&terminal.lock().map(|t| t.clone()).unwrap_or_default())
        .into_owned();
    Ok((
        Captured {
            ending,
            stopped: false,
            output,
        },
        problems,
    ))
}

/// Plays the typing and looking steps; the first failure, if any.
fn play(child: &mut Child, script: &[Step], terminal: &Arc<Mutex<Vec<u8>>>) -> Vec<String> {
    let mut input = child.stdin.take();
    let mut matched = 0;
    let mut mark = 0;
    for (n, step) in script.iter().enumerate() {
        let failed = match *step {
            Step::Type(text) => input
                .as_mut()
                .and_then(|i| i.write_all(text.as_bytes()).and_then(|()| i.flush()).ok())
                .is_none()
                .then(|| format!("cannot type {text:?}: QEMU's input is closed")),
            Step::Shows(text) => match wait_for(terminal, text, matched) {
                Some(end) => {
                    matched = end;
                    None
                }
                None => Some(format!(
                    "the terminal did not show {text:?} within {} s",
                    STEP_TIMEOUT.as_secs()
                )),
            },
            Step::Mark => {
                mark = matched;
                None
            }
            Step::NotShown(text) => {
                let seen = terminal
                    .lock()
                    .map(|t| find(&t[mark..matched], text).is_some())
                    .unwrap_or(true);
                seen.then(|| format!("the terminal showed {text:?}"))
            }
            Step::Logged(..) => None,
        };
        if let Some(problem) = failed {
            return vec![format!("step {} ({step:?}): {problem}", n + 1)];
        }
    }
    Vec::new()
}

/// Waits for `text` after position `from`; the position after it.
fn wait_for(terminal: &Arc<Mutex<Vec<u8>>>, text: &str, from: usize) -> Option<usize> {
    let start = Instant::now();
    while start.elapsed() < STEP_TIMEOUT {
        if let Some(at) = terminal.lock().ok().and_then(|t| find(&t[from..], text)) {
            return Some(from + at + text.len());
        }
        thread::sleep(Duration::from_millis(50));
    }
    None
}

fn find(haystack: &[u8], text: &str) -> Option<usize> {
    haystack
        .windows(text.len())
        .position(|w| w == text.as_bytes())
}

/// What the `Logged` steps find missing in the log files under `logs`.
fn check_logs(script: &[Step], logs: &Path) -> Vec<String> {
    script
        .iter()
        .filter_map(|step| {
            let Step::Logged(vm, text) = *step else {
                return None;
            };
            let file = logs.join(format!("{vm}.log"));
            match fs::read_to_string(&file) {
                Ok(log) if log.contains(text) => None,
                Ok(_) => Some(format!("{} does not hold {text:?}", file.display())),
                Err(e) => Some(format!("cannot read {}: {e}", file.display())),
            }
        })
        .collect()
}

/// Appends everything `pipe` yields to `terminal`, as it arrives.
fn collect(pipe: impl Read + Send + 'static, terminal: &Arc<Mutex<Vec<u8>>>) -> JoinHandle<()> {
    let terminal = Arc::clone(terminal);
    process::read_pipe(pipe, move |chunk| {
        if let Ok(mut t) = terminal.lock() {
            t.extend_from_slice(chunk);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn talk(script: &[Step], logs: &Path) -> (Captured, Vec<String>) {
        // `cat` answers what it is typed and exits when the script is over and its input
        // closes.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo ready; exec cat"]);
        converse(&mut cmd, script, logs, Duration::from_secs(5)).unwrap()
    }

    #[test]
    fn a_script_types_and_checks_in_order() {
        let logs = std::env::temp_dir().join(format!("xtask-conversation-{}", std::process::id()));
        fs::create_dir_all(&logs).unwrap();
        fs::write(logs.join("vm.log"), "line one\n").unwrap();
        let (run, problems) = talk(
            &[
                Step::Shows("ready"),
                Step::Mark,
                Step::Type("first\n"),
                Step::Shows("first"),
                Step::NotShown("second"),
                Step::Logged("vm", "line one"),
            ],
            &logs,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert!(matches!(run.ending, Ending::Exited(0)));
        assert_eq!(run.output, "ready\nfirst\n");
        let (_, problems) = talk(
            &[
                Step::Shows("ready"),
                Step::Mark,
                Step::Type("second\n"),
                Step::Shows("second"),
                Step::NotShown("second"),
            ],
            &logs,
        );
        assert_eq!(
            problems,
            ["step 5 (NotShown(\"second\")): the terminal showed \"second\""]
        );
        fs::remove_dir_all(&logs).unwrap();
    }

    #[test]
    fn missing_log_text_is_reported() {
        let logs =
            std::env::temp_dir().join(format!("xtask-conversation-logs-{}", std::process::id()));
        fs::create_dir_all(&logs).unwrap();
        fs::write(logs.join("vm.log"), "nothing\n").unwrap();
        let problems = check_logs(&[Step::Logged("vm", "hello")], &logs);
        assert_eq!(
            problems,
            [format!(
                "{} does not hold \"hello\"",
                logs.join("vm.log").display()
            )]
        );
        fs::remove_dir_all(&logs).unwrap();
    }
}
