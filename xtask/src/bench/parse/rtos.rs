//! The FreeRTOS guest's result lines, read from its whole console:
//! - `bench: experiment=<e> [test=<t>] metric=<m> value=<v> unit=<u>` (the guest's
//!   BENCHMARKS.md): experiment `<e>` or `<e>/<t>`; `pass`/`fail` values are 1/0;
//! - `bench: experiment=<e> metric=hist bucket_lo_ns=<a> bucket_hi_ns=<b> count=<n>`:
//!   a histogram bucket, metric `hist_ns_<a>_<b>`;
//! - `rt: samples=<n> max_ns=<ns> mean_ns=<ns> misses=<n>` (printed every second by the
//!   demo's latency task): the last one, as experiment `rt-latency`.
//!
//! Other `bench:` lines (`config`, `done`) carry no figure and are skipped, and so are the
//! lines of any other VM than the measured one (the two-RTOS system's other FreeRTOS prints
//! its own `rt:` lines).

use super::{key_values, Measure};
use crate::bench::console;
use crate::bench::record::hist_metric;

/// Every figure VM `vm` (or an untagged guest: native, Xen) printed in `console`, in the
/// order printed (the `rt:` summary last).
pub fn parse(console: &str, vm: &str) -> Vec<Measure> {
    let lines: Vec<&str> = console
        .lines()
        .filter(|line| console::vm_of(line).is_none_or(|tag| tag == vm))
        .map(console::clean)
        .collect();
    let mut measures: Vec<Measure> = lines
        .iter()
        .filter_map(|line| line.strip_prefix("bench: "))
        .filter_map(bench_line)
        .collect();
    if let Some(last) = lines.iter().rev().find_map(|l| l.strip_prefix("rt: ")) {
        measures.extend(rt_line(last));
    }
    measures
}

fn bench_line(text: &str) -> Option<Measure> {
    let field = |key: &str| key_values(text).find(|&(k, _)| k == key).map(|(_, v)| v);
    let experiment = match field("test") {
        Some(test) => format!("{}/{test}", field("experiment")?),
        None => field("experiment")?.to_owned(),
    };
    let metric = field("metric")?;
    if metric == "hist" {
        let lo = field("bucket_lo_ns")?.parse().ok()?;
        let hi = field("bucket_hi_ns")?.parse().ok()?;
        let count: f64 = field("count")?.parse().ok()?;
        return Some(Measure::new(
            &experiment,
            &hist_metric("ns", lo, hi),
            count,
            "count",
        ));
    }
    let value = match field("value")? {
        "pass" => 1.0,
        "fail" => 0.0,
        number => number.parse().ok()?,
    };
    Some(Measure::new(&experiment, metric, value, field("unit")?))
}

fn rt_line(text: &str) -> Vec<Measure> {
    [
        ("samples", "samples", "count"),
        ("max_ns", "max", "ns"),
        ("mean_ns", "mean", "ns"),
        ("misses", "misses", "count"),
    ]
    .into_iter()
    .filter_map(|(key, metric, unit)| {
        let value = key_values(text).find(|&(k, _)| k == key)?.1.parse().ok()?;
        Some(Measure::new("rt-latency", metric, value, unit))
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::parse::fixtures::{FREERTOS, RTOS_NATIVE, RTOS_SOLO};

    const VM: &str = "freertos";

    #[test]
    fn the_last_rt_line_of_the_demo() {
        let m = parse(FREERTOS, VM);
        assert_eq!(m.len(), 4);
        assert!(m.iter().all(|m| m.experiment == "rt-latency"));
        assert_eq!(m[0].metric, "samples");
        assert_eq!(m[0].value, 2000.0);
        assert_eq!(m[1].unit, "ns");
    }

    #[test]
    fn bench_lines_of_the_suite_under_partita() {
        let m = parse(RTOS_SOLO, VM);
        let find = |e: &str, metric: &str| {
            m.iter()
                .find(|x| x.experiment == e && x.metric == metric)
                .cloned()
                .unwrap()
        };
        assert_eq!(
            find("thread-metric/basic", "score"),
            Measure::new("thread-metric/basic", "score", 121_813.0, "count")
        );
        assert_eq!(find("thread-metric/memory", "check").value, 1.0);
        assert_eq!(find("thread-metric/memory", "check").unit, "bool");
        assert_eq!(
            find("rhealstone/task-switch", "time"),
            Measure::new("rhealstone/task-switch", "time", 161.0, "ns")
        );
        assert_eq!(find("dispatch", "samples").value, 2000.0);
        let buckets: f64 = m
            .iter()
            .filter(|x| x.experiment == "dispatch" && x.metric.starts_with("hist_ns_"))
            .map(|x| x.value)
            .sum();
        assert_eq!(buckets, 2000.0);
        assert!(m.iter().all(|x| x.metric != "mode" && x.metric != "hist"));
        let tests = m.iter().filter(|x| x.metric == "score").count();
        assert_eq!(tests, 8);
        assert_eq!(parse(RTOS_NATIVE, VM).len(), m.len());
    }

    #[test]
    fn pass_and_fail_become_one_and_zero() {
        let console = "bench: experiment=thread-metric test=a metric=check value=pass unit=bool\n\
                       bench: experiment=thread-metric test=b metric=check value=fail unit=bool\n";
        let values: Vec<f64> = parse(console, VM).iter().map(|m| m.value).collect();
        assert_eq!(values, [1.0, 0.0]);
    }

    #[test]
    fn another_vms_lines_are_not_the_measured_ones() {
        let console = "[rtos-high] rt: samples=9 max_ns=9 mean_ns=9 misses=0\n\
                       [freertos] bench: experiment=dispatch metric=max value=5 unit=ns\n\
                       [rtos-high] bench: experiment=dispatch metric=max value=7 unit=ns\n\
                       [linux] rt: samples=1 max_ns=1 mean_ns=1 misses=0\n";
        let m = parse(console, VM);
        assert_eq!(m, [Measure::new("dispatch", "max", 5.0, "ns")]);
    }

    #[test]
    fn malformed_lines_are_skipped() {
        let console = "bench: experiment=x metric=m value=abc unit=ns\nbench: done\n\
                       rt: samples=oops\n";
        assert!(parse(console, VM).is_empty());
    }
}
