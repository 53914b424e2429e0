//! The QEMU machine Partita runs on: `virt` with EL2 and a GICv3, the boot image as `-kernel`.
//!
//! This module only builds command lines (see the QEMU contract in the project notes); the
//! callers decide whether QEMU runs on the terminal, under gdb or captured by a scenario.

use std::path::Path;
use std::process::Command;

use clap::ValueEnum;

/// The CPU model QEMU emulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Cpu {
    /// Cortex-A72 (ARMv8.0-A).
    #[value(name = "cortex-a72")]
    CortexA72,
    /// Every architecture feature QEMU implements, with the fast pointer-auth algorithm.
    Max,
}

impl Cpu {
    pub fn qemu_name(self) -> &'static str {
        match self {
            Cpu::CortexA72 => "cortex-a72",
            Cpu::Max => "max,pauth-impdef=on",
        }
    }
}

/// QEMU's clock options. Deterministic runs (`--icount`) count instructions (1 instruction =
/// 1 ns of virtual time), skip idle time and fix the seed and the guest's RTC, as
/// BENCHMARKS.md asks: a guest never sees the emulator's own slowness as lateness, and two
/// runs print the same. Other runs use QEMU's real-time clock, where the host's load shows
/// up as guest latency.
pub fn clock_args(deterministic: bool) -> &'static [&'static str] {
    if deterministic {
        &[
            "-icount",
            "shift=0,align=off,sleep=off",
            "-seed",
            "1",
            "-rtc",
            "base=2020-01-01T00:00:00,clock=vm",
        ]
    } else {
        &[]
    }
}

/// The gdb server port of `cargo xtask debug`.
pub const GDB_PORT: u16 = 1234;

/// What to start QEMU with.
pub struct Machine<'a> {
    pub image: &'a Path,
    pub cpu: Cpu,
    pub cpus: u8,
    /// Deterministic virtual time (see `clock_args`).
    pub icount: bool,
    /// Halt at reset and wait for gdb on `GDB_PORT`.
    pub gdb: bool,
}

impl Machine<'_> {
    pub fn command(&self) -> Command {
        let mut cmd = Command::new("qemu-system-aarch64");
        cmd.args(["-M", "virt,virtualization=on,gic-version=3"])
            .args(["-cpu", self.cpu.qemu_name()])
            .args(["-m", "4G"])
            .args(["-smp", &self.cpus.to_string()])
            .arg("-nographic")
            .args(["-semihosting-config", "enable=on,target=native"])
            .arg("-kernel")
            .arg(self.image);
        cmd.args(clock_args(self.icount));
        if self.gdb {
            cmd.args(["-S", "-gdb", &format!("tcp::{GDB_PORT}")]);
        }
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::describe;

    #[test]
    fn the_command_line_follows_the_contract() {
        let machine = Machine {
            image: Path::new("build/partita.img"),
            cpu: Cpu::Max,
            cpus: 2,
            icount: true,
            gdb: true,
        };
        assert_eq!(
            describe(&machine.command()),
            "qemu-system-aarch64 -M virt,virtualization=on,gic-version=3 -cpu max,pauth-impdef=on -m 4G -smp 2 -nographic -semihosting-config enable=on,target=native -kernel build/partita.img -icount shift=0,align=off,sleep=off -seed 1 -rtc base=2020-01-01T00:00:00,clock=vm -S -gdb tcp::1234"
        );
    }
}
