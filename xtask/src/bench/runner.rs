//! Boots one row of the matrix on QEMU and captures its console: the QEMU command of each
//! `Boot` (the same library calls as `cargo xtask run`), a run with a deadline after which
//! QEMU is killed, and progress lines (`[3/24] solo linux sysbench-cpu (elapsed 4m12s)`)
//! printed as the job's experiments begin. It never parses results.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use partita_core::board::Platform;

use super::console::{clean, BEGIN};
use super::matrix::{
    beside_bootargs, freertos_bootargs, scale_config, scale_load, Boot, Load, Mode, FREERTOS_SOLO,
};
use crate::build::{self, ConsoleUse};
use crate::config::System;
use crate::process::{self, Ending};
use crate::qemu::{Clock, Cpu, Machine};
use crate::{linux, paths, xen};

/// Progress over every experiment of the benchmark.
pub struct Progress {
    start: Instant,
    done: usize,
    total: usize,
}

impl Progress {
    pub fn new(total: usize) -> Self {
        Progress {
            start: Instant::now(),
            done: 0,
            total,
        }
    }

    /// Prints the line of the next experiment.
    pub fn next(&mut self, config: &str, guest: &str, experiment: &str) {
        self.done += 1;
        println!(
            "[{}/{}] {config} {guest} {experiment} (elapsed {})",
            self.done,
            self.total,
            minutes_seconds(self.start.elapsed())
        );
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

/// `4m12s`.
pub fn minutes_seconds(elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    format!("{}m{:02}s", secs / 60, secs % 60)
}

/// The QEMU command that boots `boot`; Linux rows run `job`, the FreeRTOS row gets the
/// boot arguments of `mode`. The files the boot needs (image, generated configuration,
/// device trees) are written into `files`, the row's own folder.
/// QEMU emulates `cpu`; a Partita boot runs on its configuration's board, the others on
/// qemu-virt.
pub fn command(
    boot: Boot,
    job: &str,
    mode: Mode,
    cache: &Path,
    files: &Path,
    cpu: Cpu,
) -> Result<BootCommand> {
    let other = |cmd: Command| BootCommand { cmd, partita: None };
    Ok(match boot {
        Boot::NativeLinux | Boot::NativeLinuxSmp(_) => {
            let guest = linux::prepare(cache)?;
            let bootargs = linux::bootargs(Some(job), &[])?;
            let cpus = match boot {
                Boot::NativeLinuxSmp(cpus) => cpus,
                _ => 1,
            };
            let options = linux::NativeOptions {
                clock: Clock::Counted,
                no_reboot: true,
                cpus,
            };
            other(linux::native_command(&guest, &bootargs, &options))
        }
        Boot::NativeFreeRtos => {
            let image = paths::guest_image("freertos");
            let mut cmd = machine(&image, Platform::QemuVirt, 1, cpu);
            cmd.args(["-append", freertos_bootargs(mode)]);
            other(cmd)
        }
        Boot::PartitaFreeRtos => {
            let config = files.join("freertos-solo.toml");
            let text = FREERTOS_SOLO
                .replace("{image}", &paths::guest_image("freertos").to_string_lossy())
                .replace("{bootargs}", freertos_bootargs(mode));
            fs::write(&config, text).with_context(|| format!("writing {}", config.display()))?;
            let image = files.join("partita.img");
            let system = build::boot_image(&config, &image, None, &ConsoleUse::AllTagged)?;
            partita(&image, &system, cpu)
        }
        Boot::Fabric(config) => {
            let image = files.join("partita.img");
            let system = build::boot_image(
                &paths::root().join(config),
                &image,
                None,
                &ConsoleUse::AllTagged,
            )?;
            partita(&image, &system, cpu)
        }
        Boot::Partita(config) | Boot::PartitaSmp(config) | Boot::BesideDemo(config, _) => {
            let image = files.join("partita.img");
            let system = build::boot_image(
                &paths::root().join(config),
                &image,
                Some(job),
                &ConsoleUse::AllTagged,
            )?;
            partita(&image, &system, cpu)
        }
        Boot::Beside { config, load } => {
            let bootargs = format!(
                "{}{}",
                beside_bootargs(mode, boot.emulated_cpus()),
                load.rtos_bootargs()
            );
            beside(&paths::root().join(config), load, &bootargs, files, cpu)?
        }
        Boot::Scale { vms, cpus } => {
            let config = files.join(format!("scale-{vms}vm-{cpus}cpu.toml"));
            let text = scale_config(
                vms,
                cpus,
                &paths::guest_image("freertos"),
                &cache.join("linux").join("Image"),
                &cache.join("linux").join("initramfs.cpio"),
            );
            fs::write(&config, text).with_context(|| format!("writing {}", config.display()))?;
            beside(
                &config,
                scale_load(cpus),
                &beside_bootargs(mode, cpus),
                files,
                cpu,
            )?
        }
        Boot::XenDom0 => other(xen_boot(cache, files, Some(Some(job)), None)?),
        Boot::XenDomU(None) => other(xen_boot(cache, files, None, Some(freertos_bootargs(mode)))?),
        Boot::XenDomU(Some(load)) => other(xen_boot(
            cache,
            files,
            Some(Some(&load.job())),
            Some(&beside_bootargs(mode, 1)),
        )?),
    })
}

/// A row's QEMU command, and the board of the Partita it boots (`None`: a native or Xen
/// boot), whose hypervisor the EL2 profile attributes instructions to.
pub struct BootCommand {
    pub cmd: Command,
    pub partita: Option<Platform>,
}

/// The command that boots `image`, Partita with `system`.
fn partita(image: &Path, system: &System, cpu: Cpu) -> BootCommand {
    let platform = system.config.board.platform;
    BootCommand {
        cmd: machine(image, platform, system.config.board.cpus, cpu),
        partita: Some(platform),
    }
}

/// Partita with the system in `config`: its FreeRTOS VM runs with `bootargs` (the latency
/// benchmark) and its Linux VM runs `load`; its image is written into `files`.
fn beside(
    config: &Path,
    load: Load,
    bootargs: &str,
    files: &Path,
    cpu: Cpu,
) -> Result<BootCommand> {
    let image = files.join("partita.img");
    let system = build::boot_image_with(
        config,
        &image,
        Some(&load.job()),
        Some((BESIDE_RTOS_VM, bootargs)),
        &ConsoleUse::AllTagged,
    )?;
    Ok(partita(&image, &system, cpu))
}

fn xen_boot(
    cache: &Path,
    files: &Path,
    dom0: Option<Option<&str>>,
    freertos: Option<&str>,
) -> Result<Command> {
    let domains = xen::Domains { dom0, freertos };
    let options = xen::XenOptions {
        clock: Clock::Counted,
    };
    Ok(xen::boot(cache, files, &domains, &options)?.command)
}

/// The console line after which a Linux job beside the FreeRTOS demo is over: Linux has
/// powered off (after Partita printed its counters); FreeRTOS never does, so QEMU is
/// stopped there.
pub const DEMO_END: &str = "[partita] vm linux: powered off";

/// The FreeRTOS VM's name in configs/default.toml and configs/split.toml, and the
/// measured one of a scale system.
pub const BESIDE_RTOS_VM: &str = "freertos";

/// The console line after which a run beside a Linux load is over: the FreeRTOS VM has
/// printed `bench: done`, powered off and Partita has printed its counters. Linux never
/// powers off under its load, so QEMU is stopped there.
pub const BESIDE_END: &str = "[partita] vm freertos: powered off";

/// Which console line ends a run early, if any: Partita's `BESIDE_END` beside a Linux
/// load, `DEMO_END` beside the demo; under Xen, the FreeRTOS domU's `bench: done` (Xen prints nothing when a domU
/// powers off, and without dom0, or with dom0 under its endless load, never halts the
/// machine).
pub fn stop_line(boot: Boot) -> Option<fn(&str) -> bool> {
    match boot {
        Boot::Beside { .. } | Boot::Scale { .. } => Some(|line| line.starts_with(BESIDE_END)),
        Boot::BesideDemo(..) => Some(|line| line.starts_with(DEMO_END)),
        Boot::XenDomU(_) => Some(|line| {
            xen::domu_text(line.trim_end()).is_some_and(|(_, text)| text == "bench: done")
        }),
        _ => None,
    }
}

fn machine(image: &Path, platform: Platform, cpus: u8, cpu: Cpu) -> Command {
    Machine {
        board: platform.board(),
        cpu,
        cpus,
        ..Machine::single(Clock::Counted)
    }
    .command(image)
}

/// A finished boot: how QEMU ended and everything it printed (stdout, then stderr).
pub struct Console {
    pub ending: Ending,
    pub output: String,
    /// QEMU was stopped on purpose when a `stop_after` line came.
    pub stopped: bool,
}

/// Runs `cmd` with its console captured, calling `on_begin` with each experiment's name
/// as its begin marker arrives; kills QEMU once `deadline` has passed, or once a line
/// for which `stop_after` holds has been printed.
pub fn execute(
    cmd: &mut Command,
    deadline: Duration,
    stop_after: Option<fn(&str) -> bool>,
    mut on_begin: impl FnMut(&str),
) -> Result<Console> {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start `{}`", process::describe(cmd)))?;
    let lines = child.stdout.take().map(stream_lines);
    let errors = child.stderr.take().map(drain);
    let mut output = String::new();
    let mut stopped = false;
    if let Some(lines) = lines {
        while let Some(left) = deadline.checked_sub(start.elapsed()) {
            match lines.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => {
                    if let Some(name) = clean(&line).strip_prefix(BEGIN) {
                        on_begin(name.trim());
                    }
                    output.push_str(&line);
                    if stop_after.is_some_and(|end| end(&line)) {
                        // SIGTERM first: QEMU then exits as usual and its plugins
                        // write their output.
                        process::stop(&mut child)?;
                        stopped = true;
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    }
    let left = deadline.saturating_sub(start.elapsed());
    let ending = match process::wait_until(&mut child, Some(left))? {
        Ending::TimedOut => {
            let _ = child.kill();
            let _ = child.wait();
            Ending::TimedOut
        }
        exited => exited,
    };
    if let Some(errors) = errors {
        output.push_str(&errors.join().unwrap_or_default());
    }
    Ok(Console {
        ending,
        output,
        stopped,
    })
}

/// Sends each line of `pipe` (with its newline) until it closes.
fn stream_lines(pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (send, receive) = mpsc::channel();
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut bytes = Vec::new();
        while reader.read_until(b'\n', &mut bytes).unwrap_or(0) > 0 {
            if send
                .send(String::from_utf8_lossy(&bytes).into_owned())
                .is_err()
            {
                return;
            }
            bytes.clear();
        }
    });
    receive
}

fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn begin_markers_are_reported_as_they_come() {
        let mut seen = Vec::new();
        let done = execute(
            Command::new("sh").args([
                "-c",
                "echo '[linux] partita-bench: begin a'; echo x; echo 'partita-bench: begin b'",
            ]),
            Duration::from_secs(10),
            None,
            |name| seen.push(name.to_owned()),
        )
        .unwrap();
        assert_eq!(seen, ["a", "b"]);
        assert!(matches!(done.ending, Ending::Exited(0)));
        assert!(done.output.contains("x\n"));
    }

    #[test]
    fn a_run_past_its_deadline_is_killed() {
        let done = execute(
            Command::new("sh").args(["-c", "echo start; exec sleep 20"]),
            Duration::from_millis(1500),
            None,
            |_| {},
        )
        .unwrap();
        assert!(matches!(done.ending, Ending::TimedOut));
        assert_eq!(done.output, "start\n");
    }

    #[test]
    fn a_run_is_stopped_after_its_end_line() {
        let done = execute(
            Command::new("sh").args(["-c", "echo a; echo 'end here'; exec sleep 20"]),
            Duration::from_secs(10),
            Some(|line| line.starts_with("end")),
            |_| {},
        )
        .unwrap();
        assert!(done.stopped);
        assert_eq!(done.output, "a\nend here\n");
    }

    #[test]
    fn elapsed_time_reads_as_minutes_and_seconds() {
        assert_eq!(minutes_seconds(Duration::from_secs(252)), "4m12s");
    }
}
