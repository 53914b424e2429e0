//! The QEMU scenarios of `cargo xtask test`, as data: what boots (a Partita configuration, or
//! Linux directly on QEMU for comparison) on which CPU, the Linux job it runs, the exit status
//! QEMU must end with and what the console must (not) show.
//!
//! Console expectations are line patterns where `*` stands for any text. Adding a scenario
//! is adding a row to `SCENARIOS`; running them is `suite`'s job.

use crate::qemu::Cpu;

/// A line pattern the console must show, must not show, or show an exact number of times.
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    Line(&'static str),
    NoLine(&'static str),
    Count(&'static str, usize),
}

/// What a scenario boots.
pub enum Boot {
    /// Partita with this configuration file, relative to the workspace root.
    Partita(&'static str),
    /// Debian's kernel and the project's initramfs directly on QEMU (no hypervisor).
    NativeLinux,
}

pub struct Scenario {
    pub name: &'static str,
    pub boot: Boot,
    /// The command every Linux VM (or native Linux) runs instead of its shell.
    pub job: Option<&'static str>,
    pub cpu: Cpu,
    pub exit_status: i32,
    pub timeout_secs: u64,
    pub expect: &'static [Expect],
}

const PROBE_PASSED: &str = "[probe] probe: all * checks passed";
const PROBE_FAILED: &str = "[probe] FAIL *";
const PANIC: &str = "[partita] panic: *";
const PROBE_FAULT: &str = "[partita] vm probe: fault: *";
const PROBE_BOOT: &str = "[probe] probe: started*";
const PROBE_REBOOTED: &str = "[probe] probe: reset worked, boot 2";

const CLEAN_PROBE: &[Expect] = &[
    Expect::Line(PROBE_PASSED),
    Expect::NoLine(PROBE_FAILED),
    Expect::NoLine(PANIC),
    Expect::NoLine(PROBE_FAULT),
];

const LINUX_JOB_START: &str = "[linux] partita: job start";
const LINUX_FAULT: &str = "[partita] vm linux: fault: *";
const LINUX_CONFIG: &str = "configs/tests/linux.toml";

/// Counts the arch timer's interrupts a second apart: the timer keeps ticking in the guest.
const TIMER_JOB: &str = "a=$(awk '/arch_timer/{print $2}' /proc/interrupts); sleep 1; \
    b=$(awk '/arch_timer/{print $2}' /proc/interrupts); echo \"timer interrupts $a then $b\"; \
    [ \"$b\" -gt \"$a\" ]";

/// The workloads Linux must complete under Partita and natively (issue 3).
const WORKLOAD_JOB: &str = "set -e; cat /proc/version; \
    cyclictest -m -q -p 80 -i 1000 -l 1000; hackbench -g 2 -l 50; \
    sysbench cpu --time=0 --events=200 run";

/// What the workload job prints, with or without the `[linux] ` tag of Partita's console.
const WORKLOAD_DONE: &[Expect] = &[
    Expect::Line("*Linux version 6.1.0-* (debian-kernel@lists.debian.org) *"),
    Expect::Line("*T: 0 (*) P:80 I:1000 C:   1000 Min:*Avg:*Max:*"),
    Expect::Line("*Time: *"),
    Expect::Line("*total number of events:*200"),
    Expect::Line("*partita: job exit 0"),
    Expect::NoLine(PANIC),
    Expect::NoLine(LINUX_FAULT),
];

pub const SCENARIOS: [Scenario; 10] = [
    Scenario {
        name: "probe-cortex-a72",
        boot: Boot::Partita("configs/probe.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        exit_status: 0,
        timeout_secs: 60,
        expect: CLEAN_PROBE,
    },
    Scenario {
        name: "probe-max",
        boot: Boot::Partita("configs/probe.toml"),
        job: None,
        cpu: Cpu::Max,
        exit_status: 0,
        timeout_secs: 60,
        expect: CLEAN_PROBE,
    },
    Scenario {
        name: "probe-crash",
        boot: Boot::Partita("configs/tests/probe-crash.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        exit_status: 1,
        timeout_secs: 60,
        expect: &[
            Expect::Line("[probe] probe: crashing on purpose"),
            Expect::Line(PROBE_FAULT),
            Expect::NoLine(PANIC),
        ],
    },
    Scenario {
        name: "probe-reset",
        boot: Boot::Partita("configs/tests/probe-reset.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        exit_status: 0,
        timeout_secs: 60,
        expect: &[
            Expect::Count(PROBE_BOOT, 2),
            Expect::Line(PROBE_REBOOTED),
            Expect::NoLine(PROBE_FAILED),
            Expect::NoLine(PANIC),
            Expect::NoLine(PROBE_FAULT),
        ],
    },
    Scenario {
        name: "linux-timer",
        boot: Boot::Partita(LINUX_CONFIG),
        job: Some(TIMER_JOB),
        cpu: Cpu::CortexA72,
        exit_status: 0,
        timeout_secs: 180,
        expect: &[
            Expect::Line(LINUX_JOB_START),
            Expect::Line("[linux] timer interrupts * then *"),
            Expect::Line("[linux] partita: job exit 0"),
            Expect::Line("[partita] vm linux: powered off"),
            Expect::NoLine(PANIC),
            Expect::NoLine(LINUX_FAULT),
        ],
    },
    Scenario {
        name: "linux-timer-max",
        boot: Boot::Partita(LINUX_CONFIG),
        job: Some(TIMER_JOB),
        cpu: Cpu::Max,
        exit_status: 0,
        timeout_secs: 180,
        expect: &[
            Expect::Line("[linux] timer interrupts * then *"),
            Expect::Line("[linux] partita: job exit 0"),
            Expect::NoLine(PANIC),
            Expect::NoLine(LINUX_FAULT),
        ],
    },
    Scenario {
        name: "linux-beside-probe",
        boot: Boot::Partita("configs/tests/linux-beside-probe.toml"),
        job: Some(TIMER_JOB),
        cpu: Cpu::CortexA72,
        exit_status: 0,
        timeout_secs: 180,
        expect: &[
            Expect::Line(PROBE_PASSED),
            Expect::NoLine(PROBE_FAILED),
            Expect::Line("[linux] timer interrupts * then *"),
            Expect::Line("[linux] partita: job exit 0"),
            Expect::Line("[partita] all VMs powered off"),
            Expect::NoLine(PANIC),
            Expect::NoLine(LINUX_FAULT),
        ],
    },
    Scenario {
        name: "linux-panic",
        boot: Boot::Partita(LINUX_CONFIG),
        job: Some("echo c > /proc/sysrq-trigger"),
        cpu: Cpu::CortexA72,
        exit_status: 1,
        timeout_secs: 180,
        expect: &[
            Expect::Line(LINUX_JOB_START),
            Expect::Line("[linux] *Kernel panic - not syncing: sysrq triggered crash"),
            Expect::Line("[partita] vm linux: reset requested; stopped (on_reset = \"fault\")"),
            Expect::NoLine("[linux] partita: job exit *"),
            Expect::NoLine(PANIC),
        ],
    },
    Scenario {
        name: "linux-workloads",
        boot: Boot::Partita(LINUX_CONFIG),
        job: Some(WORKLOAD_JOB),
        cpu: Cpu::CortexA72,
        exit_status: 0,
        timeout_secs: 300,
        expect: WORKLOAD_DONE,
    },
    Scenario {
        name: "linux-workloads-native",
        boot: Boot::NativeLinux,
        job: Some(WORKLOAD_JOB),
        cpu: Cpu::CortexA72,
        exit_status: 0,
        timeout_secs: 300,
        expect: WORKLOAD_DONE,
    },
];

/// Whether `line` matches `pattern`, where each `*` matches any text.
pub fn matches(pattern: &str, line: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Console lines without the carriage returns of a serial console.
pub fn console_lines(output: &str) -> impl Iterator<Item = &str> {
    output.lines().map(|l| l.trim_end_matches('\r'))
}

/// What is wrong with a run's output and status; empty when it passed.
pub fn verdict(scenario: &Scenario, status: i32, output: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if status != scenario.exit_status {
        problems.push(format!(
            "QEMU exited with status {status}, expected {}",
            scenario.exit_status
        ));
    }
    let count = |p: &str| console_lines(output).filter(|l| matches(p, l)).count();
    for e in scenario.expect {
        match *e {
            Expect::Line(p) if count(p) == 0 => problems.push(format!("no line matches \"{p}\"")),
            Expect::NoLine(p) if count(p) > 0 => {
                problems.push(format!("unexpected line matching \"{p}\""))
            }
            Expect::Count(p, n) if count(p) != n => {
                problems.push(format!("{} line(s) match \"{p}\", expected {n}", count(p)))
            }
            _ => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_lines_with_wildcards() {
        assert!(matches(PROBE_PASSED, "[probe] probe: all 12 checks passed"));
        assert!(!matches(
            PROBE_PASSED,
            "[probe] probe: all 12 checks passed!"
        ));
        assert!(!matches(
            PROBE_PASSED,
            "x[probe] probe: all 12 checks passed"
        ));
        assert!(matches("a*b*c", "abc"));
        assert!(matches("a*b*c", "a-b-b-c"));
        assert!(!matches("a*a", "a"));
        assert!(matches("exact", "exact"));
        assert!(!matches("exact", "exactly"));
    }

    #[test]
    fn verdicts_check_status_and_console() {
        let clean = &SCENARIOS[0];
        let good = "[partita] Partita\r\n[probe] ok 1 psci version\r\n[probe] probe: all 1 checks passed\r\n";
        assert!(verdict(clean, 0, good).is_empty());
        assert_eq!(
            verdict(clean, 1, "[probe] FAIL 1 psci version\n"),
            [
                "QEMU exited with status 1, expected 0",
                "no line matches \"[probe] probe: all * checks passed\"",
                "unexpected line matching \"[probe] FAIL *\"",
            ]
        );
        let reset = &SCENARIOS[3];
        assert_eq!(
            verdict(reset, 0, "[probe] probe: started, bootargs \"reset\"\n"),
            [
                "1 line(s) match \"[probe] probe: started*\", expected 2",
                "no line matches \"[probe] probe: reset worked, boot 2\""
            ]
        );
    }

    #[test]
    fn every_scenario_config_exists() {
        for s in &SCENARIOS {
            if let Boot::Partita(config) = s.boot {
                assert!(
                    crate::paths::root().join(config).is_file(),
                    "scenario {} names a missing configuration {}",
                    s.name,
                    config
                );
            }
        }
    }
}
