//! Running other programs (cargo, QEMU, apt-get) and reporting progress.
//!
//! Progress lines start with `==> ` so a user can follow a long build; a failed command is
//! reported with its full command line. QEMU runs with a deadline here, its console either
//! on the terminal or captured for scenario checks. Nothing here decides what to run.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// Prints a progress line.
pub fn step(what: impl AsRef<str>) {
    println!("==> {}", what.as_ref());
}

/// The command line of `cmd`, as a user would type it.
pub fn describe(cmd: &Command) -> String {
    let mut words = vec![cmd.get_program().to_string_lossy().into_owned()];
    words.extend(cmd.get_args().map(|a| quote(&a.to_string_lossy())));
    words.join(" ")
}

fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=.,:/+@%".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Runs `cmd` on the terminal and fails unless it exits 0.
pub fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("cannot start `{}`", describe(cmd)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", describe(cmd));
    }
    Ok(())
}

/// Runs `cmd` and returns its standard output; fails unless it exits 0.
pub fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot start `{}`", describe(cmd)))?;
    if !out.status.success() {
        bail!("`{}` failed ({})", describe(cmd), out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The exit code a shell would report for `status` (128 + signal when killed).
pub fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// How a program run under a deadline ended.
pub enum Ending {
    Exited(i32),
    TimedOut,
}

/// Waits for `child` until `deadline`; past it, asks it to stop (SIGTERM, so QEMU restores
/// the terminal), then kills it.
pub fn wait_until(child: &mut Child, deadline: Option<Duration>) -> Result<Ending> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ending::Exited(exit_code(status)));
        }
        if deadline.is_some_and(|d| start.elapsed() >= d) {
            stop(child)?;
            return Ok(Ending::TimedOut);
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Asks `child` to stop (SIGTERM), and kills it if it has not within two seconds.
pub fn stop(child: &mut Child) -> Result<()> {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let grace = Instant::now();
    while grace.elapsed() < Duration::from_secs(2) {
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.kill()?;
    child.wait()?;
    Ok(())
}

/// A finished captured run: how it ended and everything it printed (stdout and stderr, in
/// the order it arrived, a stderr chunk held back until stdout is at a line's end, so a
/// warning QEMU prints never splits a guest's console line).
pub struct Captured {
    pub ending: Ending,
    /// QEMU was stopped because the output met the caller's `stop` condition.
    pub stopped: bool,
    pub output: String,
}

/// Runs `cmd` with no input and its output captured, stopping it after `deadline`, or as
/// soon as `stop` holds for the output so far.
pub fn capture(
    cmd: &mut Command,
    deadline: Duration,
    stop: impl Fn(&str) -> bool,
) -> Result<Captured> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start `{}`", describe(cmd)))?;
    let output = Arc::new(Mutex::new(Interleaved::default()));
    let readers = [
        child
            .stdout
            .take()
            .map(|p| collect(p, &output, Stream::Stdout)),
        child
            .stderr
            .take()
            .map(|p| collect(p, &output, Stream::Stderr)),
    ];
    let start = Instant::now();
    let (ending, stopped) = loop {
        if let Some(status) = child.try_wait()? {
            break (Ending::Exited(exit_code(status)), false);
        }
        let met = output.lock().is_ok_and(|o| stop(&o.text));
        if met || start.elapsed() >= deadline {
            self::stop(&mut child)?;
            break (Ending::TimedOut, met);
        }
        thread::sleep(Duration::from_millis(50));
    };
    for reader in readers.into_iter().flatten() {
        let _ = reader.join();
    }
    let output = output
        .lock()
        .map(|mut o| {
            o.flush();
            o.text.clone()
        })
        .unwrap_or_default();
    Ok(Captured {
        ending,
        stopped,
        output,
    })
}

/// Which of the child's output streams a chunk came from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stream {
    Stdout,
    Stderr,
}

/// stdout and stderr merged: stdout as it arrives, stderr in the text only where stdout is at
/// the start of a line (held until then).
#[derive(Default)]
struct Interleaved {
    text: String,
    held: String,
}

impl Interleaved {
    fn push(&mut self, stream: Stream, chunk: &str) {
        match stream {
            Stream::Stdout => match chunk.find('\n') {
                // The held text goes after the line this chunk ends.
                Some(end) if !self.held.is_empty() => {
                    self.text.push_str(&chunk[..=end]);
                    self.flush();
                    self.text.push_str(&chunk[end + 1..]);
                }
                _ => self.text.push_str(chunk),
            },
            Stream::Stderr => {
                self.held.push_str(chunk);
                if self.text.is_empty() || self.text.ends_with('\n') {
                    self.flush();
                }
            }
        }
    }

    /// Appends the held stderr text.
    fn flush(&mut self) {
        let held = std::mem::take(&mut self.held);
        self.text.push_str(&held);
    }
}

/// Appends everything `pipe` yields to `output`, as it arrives.
fn collect(
    pipe: impl Read + Send + 'static,
    output: &Arc<Mutex<Interleaved>>,
    stream: Stream,
) -> thread::JoinHandle<()> {
    let output = Arc::clone(output);
    read_pipe(pipe, move |chunk| {
        if let Ok(mut o) = output.lock() {
            o.push(stream, &String::from_utf8_lossy(chunk));
        }
    })
}

/// Passes everything `pipe` yields to `take`, chunk by chunk as it arrives, on a thread of
/// its own that ends with the pipe.
pub fn read_pipe(
    mut pipe: impl Read + Send + 'static,
    mut take: impl FnMut(&[u8]) + Send + 'static,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut chunk) {
            if n == 0 {
                break;
            }
            take(&chunk[..n]);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_waits_for_the_end_of_a_stdout_line() {
        let mut o = Interleaved::default();
        o.push(Stream::Stdout, "(XEN) D");
        o.push(Stream::Stderr, "qemu: warning\n");
        o.push(Stream::Stdout, "OM1: rt: samples=2000\n(XEN) x");
        assert_eq!(
            o.text,
            "(XEN) DOM1: rt: samples=2000\nqemu: warning\n(XEN) x"
        );
        o.push(Stream::Stderr, "late\n");
        o.flush();
        assert_eq!(
            o.text,
            "(XEN) DOM1: rt: samples=2000\nqemu: warning\n(XEN) xlate\n"
        );
        let mut first = Interleaved::default();
        first.push(Stream::Stderr, "audio: warning\n");
        assert_eq!(first.text, "audio: warning\n");
    }

    #[test]
    fn command_lines_are_quoted_for_the_shell() {
        let mut cmd = Command::new("gdb-multiarch");
        cmd.args(["target/partita", "-ex", "target remote :1234", "it's"]);
        assert_eq!(
            describe(&cmd),
            r"gdb-multiarch target/partita -ex 'target remote :1234' 'it'\''s'"
        );
    }

    #[test]
    fn captured_runs_report_status_output_and_timeouts() {
        let done = capture(
            Command::new("sh").args(["-c", "echo hello; sleep 0.2; echo oops >&2; exit 3"]),
            Duration::from_secs(10),
            |_| false,
        )
        .unwrap();
        assert!(matches!(done.ending, Ending::Exited(3)));
        assert!(!done.stopped);
        assert_eq!(done.output, "hello\noops\n");
        let slow = capture(
            Command::new("sleep").arg("10"),
            Duration::from_millis(100),
            |_| false,
        )
        .unwrap();
        assert!(matches!(slow.ending, Ending::TimedOut));
        assert!(!slow.stopped);
        let watched = capture(
            Command::new("sh").args(["-c", "echo ready; exec sleep 10"]),
            Duration::from_secs(5),
            |o| o.contains("ready"),
        )
        .unwrap();
        assert!(watched.stopped);
        assert_eq!(watched.output, "ready\n");
    }
}
