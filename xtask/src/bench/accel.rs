//! The report's section on the reconfigurable accelerators (issue 14): Ker-ONE's OFDM
//! experiment (row `ofdm`, configs/ofdm.toml) beside Ker-ONE's own figures: Table 4's
//! costs, the four allocation paths of Fig. 15 (eq. 6) against the targets, Table 6's
//! software and hardware time per frame, and what the two VMs got done. It only formats
//! `Results` (records of `parse::parse_fabric`).

use std::fmt::Write;

use partita_core::accel::timing::{Parts, PathCosts};

use super::record::Results;
use super::report::number;

/// The row that runs the experiment.
const ROW: &str = "ofdm";

/// Ker-ONE's Cortex-A9 clock (MHz): its microseconds in cycles.
const KER_ONE_MHZ: f64 = 667.0;

/// Table 4's costs: (Partita's part name, Ker-ONE's name, Ker-ONE's figure in us).
const TABLE_4: [(&str, &str, f64); 9] = [
    ("trap", "T_trap", 0.76),
    ("resume", "T_resume", 0.64),
    ("pl_irq", "T_PL_irq", 0.81),
    ("search", "T_Search", 0.50),
    ("solution1", "T_Solution(1)", 1.13),
    ("solution2", "T_Solution(2)", 2.77),
    ("solution3", "T_Solution(3)", 0.34),
    ("irq_pcap", "T_irq_pcap", 0.64),
    ("irq_stop", "T_irq_stop", 0.28),
];

/// Ker-ONE's eq. 6, CPU-side part of each path (us).
const EQ_6: [f64; 4] = [3.03, 6.76, 5.10, 9.96];

/// Ker-ONE's Table 6 hardware time per frame (us), per function.
const TABLE_6: [(&str, f64); 4] = [
    ("qam16", 47.0),
    ("qam64", 31.0),
    ("fft512", 71.1),
    ("fft1024", 90.6),
];

/// The target for path `k` (1-based), in ns of virtual time (one instruction each):
/// path 1 at most 1,000 ns; the others at most half of Ker-ONE's cycles.
fn target_ns(k: usize) -> f64 {
    if k == 1 {
        1_000.0
    } else {
        EQ_6[k - 1] * KER_ONE_MHZ / 2.0
    }
}

fn paths(p: PathCosts) -> [u64; 4] {
    [p.assign, p.assign_reconfig, p.preempt, p.preempt_reconfig]
}

/// Table 4's parts each path of eq. 6 adds up (`Parts::paths`).
const PATH_PARTS: [&[&str]; 4] = [
    &["trap", "search", "resume", "solution1"],
    &[
        "trap",
        "search",
        "resume",
        "solution2",
        "pl_irq",
        "irq_pcap",
    ],
    &[
        "trap",
        "search",
        "resume",
        "solution3",
        "pl_irq",
        "irq_stop",
        "solution1",
    ],
    &[
        "trap",
        "search",
        "resume",
        "solution3",
        "pl_irq",
        "irq_stop",
        "solution2",
        "irq_pcap",
        "solution1",
    ],
];

/// The four paths composed from one statistic of the parts (`min` or `mean`): each only if
/// all its parts were measured (a part that the run printed with `n=0`, such as no
/// consistency point with a context to save, was not).
fn composed(results: &Results, statistic: &str) -> [Option<u64>; 4] {
    let get = |name: &str| {
        let stat = |s: &str| results.value(ROW, "fabric/part", &format!("{name}-{s}"));
        stat("n")
            .filter(|n| n.value > 0.0)
            .and(stat(statistic))
            .map(|r| r.value as u64)
    };
    let part = |name: &str| get(name).unwrap_or(0);
    let all = paths(
        Parts {
            trap: part("trap"),
            resume: part("resume"),
            pl_irq: part("pl_irq"),
            search: part("search"),
            solution: [part("solution1"), part("solution2"), part("solution3")],
            irq_pcap: part("irq_pcap"),
            irq_stop: part("irq_stop"),
        }
        .paths(),
    );
    std::array::from_fn(|k| {
        PATH_PARTS[k]
            .iter()
            .all(|name| get(name).is_some())
            .then_some(all[k])
    })
}

/// The OFDM tasks measured: (vm, function) in record order.
fn tasks(results: &Results) -> Vec<(String, String)> {
    let mut tasks: Vec<(String, String)> = Vec::new();
    for r in results.records.iter().filter(|r| r.config == ROW) {
        let Some(rest) = r.experiment.strip_prefix("ofdm/") else {
            continue;
        };
        let Some((vm, task)) = rest.split_once('/') else {
            continue;
        };
        if task != "dispatch" && !tasks.iter().any(|(v, t)| v == vm && t == task) {
            tasks.push((vm.to_owned(), task.to_owned()));
        }
    }
    tasks
}

/// The section, when the `ofdm` row ran.
pub fn section(out: &mut String, results: &Results) {
    if !results.records.iter().any(|r| r.config == ROW) {
        return;
    }
    let value =
        |experiment: &str, metric: &str| results.value(ROW, experiment, metric).map(|r| r.value);
    let shown = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), number);
    let _ = writeln!(
        out,
        "## Reconfigurable accelerators (issue 14)\n\nKer-ONE's OFDM experiment \
         (configs/ofdm.toml): three regions, four accelerators, an RTOS VM with two periodic \
         tasks and a GPOS VM with three commanding them, frames of 18,800 bits, the fabric \
         emulated on its own CPU (docs/accelerators.md). Each cost is timed with Partita's \
         counter clock from after the manager's lock is taken, so no wait for the lock is \
         counted. Under `-icount` the clock is shared by all CPUs: a window that a turn of \
         another CPU falls into (a beat's deadline, a TLB invalidation broadcast, an SGI) \
         counts that CPU's instructions too. The minimum is the path's own instructions; \
         the paths are composed from the minima (and, for comparison, the means) as Ker-ONE \
         composes eq. 6 from Table 4 (`partita_core::accel::timing::Parts::paths`).\n"
    );
    let _ = writeln!(
        out,
        "| cost | n | min ns | mean ns | max ns | Ker-ONE us | Ker-ONE cycles |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for (name, label, ker_one) in TABLE_4 {
        let get = |s: &str| value("fabric/part", &format!("{name}-{s}"));
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} | {} | {} |",
            shown(get("n")),
            shown(get("min")),
            shown(get("mean")),
            shown(get("max")),
            number(ker_one),
            number((ker_one * KER_ONE_MHZ).round())
        );
    }
    // What a consistency point does once its new client is woken: on no path.
    let after = |s: &str| value("fabric/part", &format!("irq_stop_after-{s}"));
    if after("n").is_some() {
        let _ = writeln!(
            out,
            "| after T_irq_stop, on no path (the old client's page invalidated, its context \
             saved, IPC_PREEMPT, the search list served) | {} | {} | {} | {} | — | — |",
            shown(after("n")),
            shown(after("min")),
            shown(after("mean")),
            shown(after("max")),
        );
    }
    out.push('\n');
    let from_min = composed(results, "min");
    let from_mean = composed(results, "mean");
    let _ = writeln!(
        out,
        "Allocation paths of Fig. 15, CPU-side part (eq. 6 without T_RCFG and T_preempt), \
         ns; trap to answer as the run observed it (lock waits and other CPUs' turns \
         included); the target (path 1 at most 1,000 ns, the others at most half of \
         Ker-ONE's cycles at 667 MHz) is met when the path composed from the minima is \
         within it.\n"
    );
    let _ = writeln!(
        out,
        "| path | from min | from mean | trap to answer: n, mean, max | Ker-ONE us (cycles) \
         | target | met |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |"
    );
    for k in 1..=4 {
        let observed = |s: &str| value("fabric/path", &format!("path{k}-{s}"));
        let min = from_min[k - 1].map(|ns| ns as f64);
        let met = match min {
            Some(ns) if ns <= target_ns(k) => "yes",
            Some(_) => "no",
            None => "—",
        };
        let _ = writeln!(
            out,
            "| {k} | {} | {} | {}, {}, {} | {} ({}) | <= {} | {met} |",
            shown(min),
            shown(from_mean[k - 1].map(|ns| ns as f64)),
            shown(observed("n")),
            shown(observed("mean")),
            shown(observed("max")),
            number(EQ_6[k - 1]),
            number((EQ_6[k - 1] * KER_ONE_MHZ).round()),
            number(target_ns(k).floor())
        );
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "Table 6: time per frame of each task, ns of virtual time. HW: request to OVER over \
         the job's frames (the wait for a region and the emulated fabric's computing \
         included); SW: the same frames in software on the VM's CPU (the GPOS computes \
         its reference while its first job runs, beside its other tasks).\n"
    );
    let _ = writeln!(
        out,
        "| VM | task | frames ok / done | HW ns per frame | SW ns per frame | Ker-ONE T_HW us |\n\
         | --- | --- | ---: | ---: | ---: | ---: |"
    );
    let mut frames = [0.0f64; 2];
    let mut rtos_worst_job: Option<f64> = None;
    let mut rtos_frames_per_job = 1.0f64;
    for (vm, task) in tasks(results) {
        let experiment = format!("ofdm/{vm}/{task}");
        let get = |m: &str| value(&experiment, m);
        let ker_one = TABLE_6.iter().find(|(t, _)| *t == task).map(|(_, us)| *us);
        let (ok, jobs, done) = (get("ok"), get("jobs"), get("frames"));
        let _ = writeln!(
            out,
            "| {vm} | {task} | {} / {} | {} | {} | {} |",
            shown(
                ok.zip(jobs)
                    .zip(done)
                    .map(|((ok, jobs), done)| ok * done / jobs.max(1.0))
            ),
            shown(done),
            shown(get("hw_ns_per_frame")),
            shown(get("sw_ns_per_frame")),
            shown(ker_one)
        );
        let good = get("bad") == Some(0.0);
        let slot = usize::from(vm != "rtos");
        if good {
            frames[slot] += done.unwrap_or(0.0);
        }
        if vm == "rtos" {
            if let Some(worst) = get("worst_job_ns") {
                rtos_worst_job = Some(rtos_worst_job.map_or(worst, |w| w.max(worst)));
            }
            if let (Some(done), Some(jobs)) = (done, jobs) {
                rtos_frames_per_job = rtos_frames_per_job.max(done / jobs.max(1.0));
            }
        }
    }
    out.push('\n');
    let run = |m: &str| value("fabric/run", m);
    let bound = run("rtos_alloc_bound_ns")
        .zip(run("frame_worst_ns"))
        .map(|(alloc, frame)| alloc + rtos_frames_per_job * frame);
    let within = match (rtos_worst_job, bound) {
        (Some(worst), Some(bound)) if worst <= bound => "yes",
        (Some(_), Some(_)) => "no",
        _ => "—",
    };
    let rows = [
        (
            "RTOS frames right (every one checked against the software reference)",
            number(frames[0]),
        ),
        ("GPOS frames completed right", number(frames[1])),
        (
            "RTOS allocation: worst measured, ns (eq. 5 bound)",
            format!(
                "{} ({})",
                shown(run("rtos_alloc_worst_ns")),
                shown(run("rtos_alloc_bound_ns"))
            ),
        ),
        (
            "RTOS worst job, ns, within eq. 5's allocation plus its frames at the worst \
             frame time",
            format!("{} <= {}: {within}", shown(rtos_worst_job), shown(bound)),
        ),
        (
            "RTOS dispatch: misses, worst ns, mean ns",
            format!(
                "{}, {}, {}",
                shown(value("ofdm/rtos/dispatch", "misses")),
                shown(value("ofdm/rtos/dispatch", "max_ns")),
                shown(value("ofdm/rtos/dispatch", "mean_ns"))
            ),
        ),
        (
            "GPOS dispatch: misses",
            shown(value("ofdm/gpos/dispatch", "misses")),
        ),
        (
            "requests, preemptions, reconfigurations, refused jobs",
            format!(
                "{}, {}, {}, {}",
                shown(run("requests")),
                shown(run("preemptions")),
                shown(run("reconfigurations")),
                shown(run("refused"))
            ),
        ),
    ];
    let _ = writeln!(out, "| figure | measured |\n| --- | ---: |");
    for (figure, measured) in rows {
        let _ = writeln!(out, "| {figure} | {measured} |");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::super::provenance::Provenance;
    use super::super::record::{Measure, Results};
    use super::*;

    fn results(console: &str) -> Results {
        Results {
            provenance: Provenance {
                mode: "quick".to_owned(),
                ..Provenance::default()
            },
            records: super::super::parse::parse_fabric(console)
                .into_iter()
                .map(|m: Measure| m.label(ROW))
                .collect(),
            not_measured: Vec::new(),
        }
    }

    const CONSOLE: &str = "\
[rtos] ofdm: task=qam16 model=native jobs=8 frames=8 ok=8 bad=0 hw_ns_per_frame=2949426 sw_ns_per_frame=432704 worst_job_ns=3646704 preempted=0 waits=0
[gpos] ofdm: task=fft1024 model=guest jobs=12 frames=36 ok=12 bad=0 hw_ns_per_frame=3331897 sw_ns_per_frame=7476922 worst_job_ns=24710960 preempted=0 waits=4
[rtos] ofdm: done; rt: samples=321 max_ns=144272 mean_ns=3074 misses=0
[gpos] ofdm: done; rt: samples=142 max_ns=206272 mean_ns=21027 misses=0
[partita] fabric: requests=15 jobs=52 frames=124 preemptions=3 reconfigurations=11 refused=0 signals=wait:11,ready:14,preempt:3
[partita] fabric: path1 n=2 mean_ns=800 max_ns=864
[partita] fabric: part=trap n=15 min_ns=300 mean_ns=1226 max_ns=11706
[partita] fabric: part=resume n=10 min_ns=195 mean_ns=198 max_ns=201
[partita] fabric: part=pl_irq n=14 min_ns=13 mean_ns=14 max_ns=19
[partita] fabric: part=search n=15 min_ns=400 mean_ns=586 max_ns=647
[partita] fabric: part=solution1 n=2 min_ns=100 mean_ns=137 max_ns=144
[partita] fabric: part=solution2 n=3 min_ns=136 mean_ns=161 max_ns=174
[partita] fabric: part=solution3 n=10 min_ns=163 mean_ns=6445 max_ns=34563
[partita] fabric: part=irq_pcap n=11 min_ns=381 mean_ns=475 max_ns=874
[partita] fabric: part=irq_stop n=3 min_ns=1630 mean_ns=26743 max_ns=63406
[partita] fabric: frame_worst_ns=5082416 rtos_alloc_worst_ns=2916400 rtos_alloc_bound_ns=11395808 within=true
";

    #[test]
    fn the_section_composes_the_paths_and_judges_them_against_the_targets() {
        let mut out = String::new();
        section(&mut out, &results(CONSOLE));
        assert!(out.starts_with("## Reconfigurable accelerators (issue 14)"));
        assert!(out.contains("| T_trap | 15 | 300 | 1226 | 11706 | 0.76 | 507 |"));
        // Path 1 from the minima: 300 + 400 + 100 + 195 = 995 ns, within 1,000.
        assert!(out.contains("| 1 | 995 | 2147 | 2, 800, 864 | 3.03 (2021) | <= 1000 | yes |"));
        // Path 2: 300 + 400 + 136 + 195 + 13 + 381 + 195 = 1,620 ns, target 2,254.
        assert!(out.contains("| 2 | 1620 |"));
        assert!(out.contains("| <= 2254 | yes |"));
        assert!(out.contains("| rtos | qam16 | 8 / 8 | 2949426 | 432704 | 47 |"));
        assert!(out.contains("| GPOS frames completed right | 36 |"));
        assert!(out.contains("3646704 <= 16478224: yes"));
        assert!(out.contains("| RTOS dispatch: misses, worst ns, mean ns | 0, 144272, 3074 |"));
    }

    #[test]
    fn a_missing_cost_leaves_the_paths_with_it_unjudged_and_no_row_no_section() {
        let without_stop: String = CONSOLE
            .lines()
            .filter(|l| !l.contains("part=irq_stop"))
            .map(|l| format!("{l}\n"))
            .collect();
        let mut out = String::new();
        section(&mut out, &results(&without_stop));
        assert!(out.contains("| 1 | 995 | 2147 | 2, 800, 864 | 3.03 (2021) | <= 1000 | yes |"));
        assert!(out.contains("| 3 | — | — |"), "{out}");
        let no_stop = CONSOLE.replace(
            "part=irq_stop n=3 min_ns=1630 mean_ns=26743 max_ns=63406",
            "part=irq_stop n=0 min_ns=0 mean_ns=0 max_ns=0",
        );
        let mut out = String::new();
        section(&mut out, &results(&no_stop));
        assert!(out.contains("| 3 | — | — |"), "{out}");
        let mut empty = String::new();
        section(&mut empty, &results(""));
        assert!(empty.is_empty());
    }
}
