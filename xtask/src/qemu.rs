//! The one emulated machine every QEMU run uses: a board Partita knows (by default `virt`
//! with EL2 and a GICv3; its `-M` and `-m` come from the board description), no network,
//! semihosting for Partita's exit status, the boot program as `-kernel`.
//!
//! Partita's runs, the native Linux and FreeRTOS runs, Xen, the bench, `debug`, the
//! scenarios and setup's smoke boot all start from `Machine::command` (or `Machine::board`),
//! so a flag the board needs is written once. This module only builds command lines; the
//! callers add what their boot needs (`-initrd`, `-append`, `-device`) and decide whether
//! QEMU runs on the terminal, under gdb or captured by a scenario.

use std::path::Path;
use std::process::Command;

use clap::ValueEnum;
use partita_core::board::{Board, Platform};

/// The CPU model QEMU emulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Cpu {
    /// Cortex-A72 (ARMv8.0-A).
    #[value(name = "cortex-a72")]
    CortexA72,
    /// Cortex-A53 (ARMv8.0-A, 40-bit physical addresses): the embedded boards' core.
    #[value(name = "cortex-a53")]
    CortexA53,
    /// Every architecture feature QEMU implements, with the fast pointer-auth algorithm.
    Max,
}

impl Cpu {
    pub fn qemu_name(self) -> &'static str {
        match self {
            Cpu::CortexA72 => "cortex-a72",
            Cpu::CortexA53 => "cortex-a53",
            Cpu::Max => "max,pauth-impdef=on",
        }
    }
}

/// How time passes in the emulated machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// QEMU's real-time clock: the host's load shows up as guest latency.
    Host,
    /// Deterministic, for measurements and scenarios: 1 instruction = 1 ns of virtual time,
    /// idle time skipped, fixed seed and guest RTC (BENCHMARKS.md), so two runs print the
    /// same and a guest never sees the emulator's slowness as lateness.
    Counted,
    /// Interactive: instructions counted as in `Counted`, but idle time passes in real time
    /// (`sleep=on`), so an idle system prints at the wall clock's pace while a person reads.
    CountedIdleWall,
}

impl Clock {
    /// The clock of a run with `--icount`: `Counted` when it runs a job to its end,
    /// `CountedIdleWall` when a person uses its console; without `--icount`, `Host`.
    pub fn for_run(icount: bool, interactive: bool) -> Clock {
        match (icount, interactive) {
            (false, _) => Clock::Host,
            (true, false) => Clock::Counted,
            (true, true) => Clock::CountedIdleWall,
        }
    }

    fn args(self) -> Vec<&'static str> {
        let icount = match self {
            Clock::Host => return Vec::new(),
            Clock::Counted => "shift=0,align=off,sleep=off",
            Clock::CountedIdleWall => "shift=0,align=off,sleep=on",
        };
        vec![
            "-icount",
            icount,
            "-seed",
            "1",
            "-rtc",
            "base=2020-01-01T00:00:00,clock=vm",
        ]
    }
}

/// The gdb server port of `cargo xtask debug`.
pub const GDB_PORT: u16 = 1234;

/// What to start QEMU with.
#[derive(Clone, Copy, Debug)]
pub struct Machine {
    pub board: &'static Board,
    pub cpu: Cpu,
    pub cpus: u8,
    pub clock: Clock,
    /// Halt at reset and wait for gdb on `GDB_PORT`.
    pub gdb: bool,
}

impl Machine {
    /// One CPU of the default model: the machine of the native, Xen and smoke runs.
    pub fn single(clock: Clock) -> Machine {
        Machine {
            board: Platform::QemuVirt.board(),
            cpu: Cpu::CortexA72,
            cpus: 1,
            clock,
            gdb: false,
        }
    }

    /// The board alone, without console or boot program: `-M`, `-cpu`, memory, CPUs, no
    /// network card (the default one needs `ipxe-qemu`'s ROM, and no guest has a network).
    pub fn board(&self) -> Command {
        let mut cmd = Command::new("qemu-system-aarch64");
        cmd.args(["-M", self.board.qemu.machine])
            .args(["-cpu", self.cpu.qemu_name()])
            .args(["-m", self.board.qemu.memory])
            .args(self.board.qemu.extra)
            .args(["-smp", &self.cpus.to_string()])
            .args(["-nic", "none"]);
        cmd
    }

    /// The board booting `kernel` with the console on QEMU's standard input and output.
    pub fn command(&self, kernel: &Path) -> Command {
        let mut cmd = self.board();
        cmd.arg("-nographic")
            .args(["-semihosting-config", "enable=on,target=native"])
            .arg("-kernel")
            .arg(kernel);
        cmd.args(self.clock.args());
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
            board: Platform::QemuVirt.board(),
            cpu: Cpu::Max,
            cpus: 2,
            clock: Clock::Counted,
            gdb: true,
        };
        assert_eq!(
            describe(&machine.command(Path::new("build/partita.img"))),
            "qemu-system-aarch64 -M virt,virtualization=on,gic-version=3 -cpu max,pauth-impdef=on -m 4G -smp 2 -nic none -nographic -semihosting-config enable=on,target=native -kernel build/partita.img -icount shift=0,align=off,sleep=off -seed 1 -rtc base=2020-01-01T00:00:00,clock=vm -S -gdb tcp::1234"
        );
    }

    #[test]
    fn interactive_runs_let_idle_time_follow_the_wall_clock() {
        assert_eq!(Clock::for_run(true, true), Clock::CountedIdleWall);
        assert_eq!(Clock::for_run(true, false), Clock::Counted);
        assert_eq!(Clock::for_run(false, true), Clock::Host);
        let machine = Machine::single(Clock::CountedIdleWall);
        let line = describe(&machine.command(Path::new("k")));
        assert!(
            line.ends_with(
                "-icount shift=0,align=off,sleep=on -seed 1 -rtc base=2020-01-01T00:00:00,clock=vm"
            ),
            "{line}"
        );
        let host = describe(&Machine::single(Clock::Host).command(Path::new("k")));
        assert!(!host.contains("-icount"), "{host}");
    }
}
