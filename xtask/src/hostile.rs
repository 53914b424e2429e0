//! The hostile suite's verdict (issue 6): reads the console of the `hostile` scenario
//! (configs/tests/hostile.toml) and decides, probe by probe, whether Partita held.
//!
//! The probe VM reports its numbered probes itself (`hostile: probe 07 <name>: <outcome> ok`
//! or `... BREACH <what>`) and ends with `hostile: done, <n> probes, <b> breaches`; every
//! number from 1 to n must appear exactly once. The outcomes a VM cannot report on itself
//! are host probes numbered after them: the wreck VM stopped as faulted, the spinning VM
//! preempted, the resetting VM restarted 49 times, FreeRTOS's deadlines all met and its
//! worst latency within budget, Partita intact. The report ends with exactly one
//! line `hostile: probes=<n> breaches=<b>`. This module only reads text; it never runs QEMU.

use crate::scenarios::{console_lines, matches};

/// The scenarios in `scenarios::SCENARIOS` this report judges: the suite on Cortex-A72, on
/// QEMU's `max` CPU, with FreeRTOS owning the EL1 physical timer, and on the ZCU102 (GICv2).
pub const SCENARIO: &str = "hostile";
pub const SCENARIO_MAX: &str = "hostile-max";
pub const SCENARIO_PHYSICAL_TIMER: &str = "hostile-physical-timer";
pub const SCENARIO_ZCU102: &str = "hostile-zcu102";

/// Whether `scenario` is one of the hostile suite's.
pub fn judges(scenario: &str) -> bool {
    [
        SCENARIO,
        SCENARIO_MAX,
        SCENARIO_PHYSICAL_TIMER,
        SCENARIO_ZCU102,
    ]
    .contains(&scenario)
}
/// The fewest probes the probe VM may run: issue 6 asks for at least 30 attacks.
const MIN_VM_PROBES: usize = 30;
const PROBE_LINE: &str = "[hostile] hostile: probe *";
const DONE_LINE: &str = "[hostile] hostile: done, * probes, * breaches";
const WRECKING: &str = "[wreck] hostile: wreck: destroying*";
const WRECK_STOPPED: &str = "[partita] vm wreck: fault: *; stopped";
const SPINNING: &str = "[spin] hostile: spin: looping*";
const RESET_DONE: &str = "[resetloop] hostile: resetloop: 50 boots, now waiting forever";
const RESET_FIFTY: &str = "[partita] vm resetloop: reset (boot 50)";
const RT_LINE: &str = "[freertos] rt: samples=*";
const RT_NO_MISS: &str = "[freertos] rt: samples=* misses=0";
/// FreeRTOS lines that must follow the probe VM's last line: it outlived the attacks.
const RT_AFTER_DONE: usize = 3;
const PANIC: &str = "[partita] panic: *";
const HOSTILE_OFF: &str = "[partita] vm hostile: powered off";
/// The probes only the host can judge, numbered after the probe VM's, in this order.
const HOST_PROBES: [&str; 6] = [
    "wreck-vectors-tables",
    "spin-never-yields",
    "reset-storm",
    "rtos-deadlines",
    "rtos-latency",
    "partita-intact",
];
/// The worst dispatch latency FreeRTOS may report under attack (`max_ns`, under -icount).
/// Alone it reports about 4 us and under the whole suite 6-9 us; before the fixes the
/// suite found, a resetting VM pushed it to 45 us.
const LATENCY_BUDGET_NS: u64 = 25_000;
/// VMs that must never be stopped: FreeRTOS (the victim), the probe VM (its probes expect to
/// survive), the spinning VM (spinning is not a fault) and the resetting one (resets are
/// restarts).
const MUST_NOT_STOP: [&str; 5] = [
    "[partita] vm freertos: fault*",
    "[partita] vm hostile: fault*",
    "[partita] vm spin: fault*",
    "[partita] vm resetloop: fault*",
    "[partita] vm resetloop: reset requested; stopped*",
];

/// One probe's line of the report.
#[derive(Debug, PartialEq, Eq)]
pub struct ProbeReport {
    pub number: usize,
    /// The report line without its number: `<name>: <outcome> ok` or `<name>: BREACH ...`.
    pub text: String,
    pub breach: bool,
}

/// Every probe's report, in number order.
#[derive(Debug, Default)]
pub struct Report {
    pub probes: Vec<ProbeReport>,
}

impl Report {
    pub fn breaches(&self) -> usize {
        self.probes.iter().filter(|p| p.breach).count()
    }

    /// The report as printed: one line per probe, then the summary line.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .probes
            .iter()
            .map(|p| format!("hostile: probe {:02} {}", p.number, p.text))
            .collect();
        lines.push(format!(
            "hostile: probes={} breaches={}",
            self.probes.len(),
            self.breaches()
        ));
        lines
    }

    /// What the suite reports as failures: every breach.
    pub fn problems(&self) -> Vec<String> {
        self.probes
            .iter()
            .filter(|p| p.breach)
            .map(|p| format!("hostile: probe {:02} {}", p.number, p.text))
            .collect()
    }

    fn push(&mut self, name: &str, outcome: &str, breach: Option<String>) {
        let number = self.probes.len() + 1;
        let text = match &breach {
            None => format!("{name}: {outcome} ok"),
            Some(what) => format!("{name}: BREACH {what} (expected {outcome})"),
        };
        self.probes.push(ProbeReport {
            number,
            text,
            breach: breach.is_some(),
        });
    }
}

/// Reads the scenario's console output into the report.
pub fn report(output: &str) -> Report {
    let lines: Vec<&str> = console_lines(output).collect();
    let mut report = Report::default();
    vm_probes(&lines, &mut report);
    host_probes(&lines, &mut report);
    report
}

/// The probe VM's own lines, numbers 1..=n where n comes from its `done` line (or, if it
/// never got there, the highest number it printed, and one breach for the missing end).
fn vm_probes(lines: &[&str], report: &mut Report) {
    let reported: Vec<(usize, &str)> = lines
        .iter()
        .filter(|l| matches(PROBE_LINE, l))
        .filter_map(|l| parse_probe_line(l))
        .collect();
    let done = lines.iter().find_map(|l| parse_done_line(l));
    let highest = reported.iter().map(|&(n, _)| n).max().unwrap_or(0);
    let count = done.unwrap_or(highest).max(MIN_VM_PROBES);
    for number in 1..=count {
        let mine: Vec<&str> = reported
            .iter()
            .filter(|&&(n, _)| n == number)
            .map(|&(_, text)| text)
            .collect();
        let (text, breach) = match mine.as_slice() {
            [] => ("(unnamed): BREACH no report".to_string(), true),
            [one] => (one.to_string(), one.contains(": BREACH ")),
            [first, ..] => (
                format!("{first} BREACH reported {} times", mine.len()),
                true,
            ),
        };
        report.probes.push(ProbeReport {
            number,
            text,
            breach,
        });
    }
    if done.is_none() {
        report.push(
            "probe-vm-finished",
            "done line",
            Some("the probe VM never printed its done line".to_string()),
        );
    }
}

/// `[hostile] hostile: probe 07 <text>` into (7, "<text>").
fn parse_probe_line(line: &str) -> Option<(usize, &str)> {
    let rest = line.strip_prefix("[hostile] hostile: probe ")?;
    let (number, text) = rest.split_once(' ')?;
    Some((number.parse().ok()?, text))
}

/// The `max_ns=<ns>` of a FreeRTOS `rt:` line.
fn max_ns(line: &str) -> Option<u64> {
    let (_, rest) = line.split_once(" max_ns=")?;
    rest.split(' ').next()?.parse().ok()
}

/// `[hostile] hostile: done, <n> probes, ...` into n.
fn parse_done_line(line: &str) -> Option<usize> {
    if !matches(DONE_LINE, line) {
        return None;
    }
    let rest = line.strip_prefix("[hostile] hostile: done, ")?;
    rest.split_once(' ')?.0.parse().ok()
}

fn find(lines: &[&str], pattern: &str) -> Option<usize> {
    lines.iter().position(|l| matches(pattern, l))
}

/// The outcomes only the host sees.
fn host_probes(lines: &[&str], report: &mut Report) {
    let wreck = match (find(lines, WRECKING), find(lines, WRECK_STOPPED)) {
        (Some(start), Some(stop)) if stop > start => None,
        (None, _) => Some("the wreck VM never started wrecking".to_string()),
        _ => Some("the wreck VM was not stopped as faulted".to_string()),
    };
    report.push(HOST_PROBES[0], "vm-stopped", wreck);

    let done = find(lines, DONE_LINE);
    let spin = match (find(lines, SPINNING), done) {
        (Some(start), Some(done)) if done > start => None,
        (None, _) => Some("the spinning VM never started".to_string()),
        _ => Some("the probe VM did not finish while the spinning VM ran".to_string()),
    };
    report.push(HOST_PROBES[1], "preempted", spin);

    let resets = match (find(lines, RESET_FIFTY), find(lines, RESET_DONE)) {
        (Some(_), Some(_)) => None,
        (None, _) => Some("the resetting VM never reached boot 50".to_string()),
        _ => Some("the resetting VM did not report its 50th boot".to_string()),
    };
    report.push(HOST_PROBES[2], "restarted", resets);

    let rt: Vec<(usize, &&str)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| matches(RT_LINE, l))
        .collect();
    let after_done = rt
        .iter()
        .filter(|(i, _)| done.is_some_and(|d| *i > d))
        .count();
    let deadlines = match rt.iter().find(|(_, l)| !matches(RT_NO_MISS, l)) {
        Some((_, missed)) => Some(format!("FreeRTOS missed a deadline: \"{missed}\"")),
        None if after_done < RT_AFTER_DONE => Some(format!(
            "{after_done} FreeRTOS report(s) after the probes, expected {RT_AFTER_DONE}"
        )),
        None => None,
    };
    report.push(HOST_PROBES[3], "misses=0", deadlines);

    let worst = rt.iter().filter_map(|(_, l)| max_ns(l)).max();
    let latency = match worst {
        Some(ns) if ns <= LATENCY_BUDGET_NS => None,
        Some(ns) => Some(format!("FreeRTOS's worst latency is {ns} ns")),
        None => Some("no FreeRTOS latency reported".to_string()),
    };
    report.push(
        HOST_PROBES[4],
        &format!("max_ns<={LATENCY_BUDGET_NS}"),
        latency,
    );

    let intact = if let Some(panic) = lines.iter().find(|l| matches(PANIC, l)) {
        Some(format!("Partita panicked: \"{panic}\""))
    } else if let Some(stopped) = MUST_NOT_STOP
        .iter()
        .find_map(|p| lines.iter().find(|l| matches(p, l)))
    {
        Some(format!("\"{stopped}\""))
    } else if find(lines, HOSTILE_OFF).is_none() {
        Some("the probe VM did not power off cleanly".to_string())
    } else {
        None
    };
    report.push(HOST_PROBES[5], "no panic", intact);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn console(vm_probes: usize, extra: &[&str]) -> String {
        let mut lines = vec![
            "[wreck] hostile: wreck: destroying vectors and translation tables".to_string(),
            "[partita] vm wreck: fault: prefetch abort at pc 0x4000, but its vector 0x1 is not in the VM's memory; stopped".to_string(),
            "[spin] hostile: spin: looping forever with interrupts masked".to_string(),
            RESET_FIFTY.to_string(),
            RESET_DONE.to_string(),
        ];
        for n in 1..=vm_probes {
            lines.push(format!(
                "[hostile] hostile: probe {n:02} p{n}: abort-injected ok"
            ));
        }
        lines.push(format!(
            "[hostile] hostile: done, {vm_probes} probes, 0 breaches"
        ));
        lines.push(HOSTILE_OFF.to_string());
        for n in 1..=3 {
            lines.push(format!(
                "[freertos] rt: samples={n}000 max_ns=1 mean_ns=1 misses=0"
            ));
        }
        lines.extend(extra.iter().map(|l| l.to_string()));
        lines.join("\r\n")
    }

    #[test]
    fn a_clean_run_reports_every_probe_and_no_breach() {
        let report = report(&console(31, &[]));
        let lines = report.lines();
        assert_eq!(lines.len(), 31 + 6 + 1);
        assert_eq!(lines[6], "hostile: probe 07 p7: abort-injected ok");
        assert_eq!(
            lines[31],
            "hostile: probe 32 wreck-vectors-tables: vm-stopped ok"
        );
        assert_eq!(lines[37], "hostile: probes=37 breaches=0");
        assert!(report.problems().is_empty());
    }

    #[test]
    fn breaches_missing_probes_and_misses_count() {
        let mut text = console(
            31,
            &["[freertos] rt: samples=4000 max_ns=25001 mean_ns=1 misses=2"],
        );
        text = text.replace(
            "probe 05 p5: abort-injected ok",
            "probe 05 p5: BREACH read 0x1 (expected abort-injected)",
        );
        text = text.replace("[hostile] hostile: probe 09 p9: abort-injected ok\r\n", "");
        let report = report(&text);
        assert_eq!(report.breaches(), 4);
        assert_eq!(
            report.problems(),
            [
                "hostile: probe 05 p5: BREACH read 0x1 (expected abort-injected)",
                "hostile: probe 09 (unnamed): BREACH no report",
                "hostile: probe 35 rtos-deadlines: BREACH FreeRTOS missed a deadline: \"[freertos] rt: samples=4000 max_ns=25001 mean_ns=1 misses=2\" (expected misses=0)",
                "hostile: probe 36 rtos-latency: BREACH FreeRTOS's worst latency is 25001 ns (expected max_ns<=25000)",
            ]
        );
    }

    /// docs/security.md numbers every probe as the probe VM's table and this report do.
    #[test]
    fn the_security_page_lists_every_probe_in_order() {
        let root = crate::paths::root();
        let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
        let table = read("guests/probe/src/hostile/mod.rs");
        let mut names: Vec<String> = table
            .lines()
            .filter_map(|l| l.trim().strip_prefix("probe(\""))
            .filter_map(|l| l.split('"').next())
            .map(str::to_string)
            .collect();
        names.extend(HOST_PROBES.iter().map(|name| name.to_string()));
        let page = read("docs/security.md");
        let documented: Vec<String> = page
            .lines()
            .skip_while(|l| *l != "## The hostile probe suite")
            .skip(1)
            .take_while(|l| !l.starts_with("## "))
            .filter_map(|l| l.strip_prefix("| "))
            .filter(|l| l.as_bytes().first().is_some_and(u8::is_ascii_digit))
            .enumerate()
            .map(|(i, l)| {
                let (number, rest) = l.split_once(" | ").unwrap();
                assert_eq!(number, format!("{:02}", i + 1));
                rest.split(" | ").next().unwrap().to_string()
            })
            .collect();
        assert_eq!(documented, names);
    }

    #[test]
    fn too_few_probes_a_panic_or_no_stop_are_breaches() {
        let report = report(&console(2, &["[partita] panic: oops"]));
        assert_eq!(report.probes.len(), MIN_VM_PROBES + HOST_PROBES.len());
        assert!(report.probes[2].breach);
        assert!(report
            .probes
            .last()
            .unwrap()
            .text
            .contains("Partita panicked"));
        let quiet = super::report("");
        assert_eq!(quiet.breaches(), quiet.probes.len());
    }
}
