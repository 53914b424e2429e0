//! Boots the Linux guest natively on QEMU (kernel + initramfs, no
//! hypervisor) and encodes a job into the kernel command line the guest's
//! /init understands. It only builds commands and strings; running them is
//! the caller's business.

use super::LinuxGuest;
use crate::qemu::{Clock, Machine};
use anyhow::{bail, Result};
use std::process::Command;

/// Kernel command-line parameter that carries the job, hex encoded.
const JOB_PARAM: &str = "partita.job";

/// Longest kernel command line arm64 Linux accepts (COMMAND_LINE_SIZE - 1).
pub use partita_core::config::MAX_BOOTARGS;

/// The console of a native boot (QEMU's PL011).
const NATIVE_CONSOLE: &str = "ttyAMA0";

/// How to run QEMU for a native boot.
#[derive(Debug, Clone)]
pub struct NativeOptions {
    pub clock: Clock,
    /// Exit QEMU instead of resetting the machine when the guest reboots
    /// (with `panic=-1` in the bootargs, a kernel panic ends QEMU too).
    pub no_reboot: bool,
    /// Emulated CPUs (the native counterpart of an SMP VM has as many as it has vCPUs).
    pub cpus: u8,
}

/// `partita.job=<hex>` for `job` (a shell command run by /init with `sh -c`).
pub fn job_bootarg(job: &str) -> String {
    let hex: String = job.bytes().map(|byte| format!("{byte:02x}")).collect();
    format!("{JOB_PARAM}={hex}")
}

/// The kernel command line of a native boot: console, `nokaslr`, `extra`,
/// then the job if any.
pub fn bootargs(job: Option<&str>, extra: &[&str]) -> Result<String> {
    bootargs_on(NATIVE_CONSOLE, job, extra)
}

/// The kernel command line with `console` as the guest's console (e.g.
/// `hvc0` under Xen): `console=<console> nokaslr`, `extra`, then the job.
pub fn bootargs_on(console: &str, job: Option<&str>, extra: &[&str]) -> Result<String> {
    let mut args = vec![format!("console={console} nokaslr")];
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    args.extend(job.map(job_bootarg));
    let line = args.join(" ");
    if line.len() > MAX_BOOTARGS {
        bail!(
            "kernel command line is {} bytes, more than {MAX_BOOTARGS} (the job is hex encoded: 2 bytes per character)",
            line.len()
        );
    }
    Ok(line)
}

/// The qemu-system-aarch64 command booting `guest` directly with `bootargs` on the one
/// emulated machine (one CPU).
pub fn native_command(guest: &LinuxGuest, bootargs: &str, options: &NativeOptions) -> Command {
    let machine = Machine {
        cpus: options.cpus,
        ..Machine::single(options.clock)
    };
    let mut command = machine.command(&guest.kernel);
    command
        .arg("-initrd")
        .arg(&guest.initramfs)
        .args(["-append", bootargs]);
    if options.no_reboot {
        command.arg("-no-reboot");
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_is_hex_encoded() {
        assert_eq!(
            job_bootarg("echo 'a b'"),
            "partita.job=6563686f202761206227"
        );
    }

    #[test]
    fn bootargs_put_the_job_last() {
        let line = bootargs(Some("true"), &["quiet"]).unwrap();
        assert_eq!(line, "console=ttyAMA0 nokaslr quiet partita.job=74727565");
    }

    #[test]
    fn overlong_job_is_refused() {
        assert!(bootargs(Some(&"x".repeat(1100)), &[]).is_err());
    }
}
