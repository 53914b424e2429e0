//! The FreeRTOS guest's result lines, read from its whole console:
//! - `bench: experiment=<e> [test=<t>] metric=<m> value=<v> unit=<u>` (the guest's
//!   BENCHMARKS.md): experiment `<e>` or `<e>/<t>`; `pass`/`fail` values are 1/0;
//! - `bench: experiment=<e> metric=hist bucket_lo_ns=<a> bucket_hi_ns=<b> count=<n>`:
//!   a histogram bucket, metric `hist_ns_<a>_<b>`;
//! - `rt: samples=<n> max_ns=<ns> mean_ns=<ns> misses=<n>` (printed every second by the
//!   demo's latency task): the last one, as experiment `rt-latency`.
//!
//! Other `bench:` lines (`config`, `done`) carry no figure and are skipped.

use super::{key_values, Measure};
use crate::bench::record::hist_metric;

/// Every figure in `console`, in the order printed (the `rt:` summary last).
pub fn parse(console: &str) -> Vec<Measure> {
    let lines: Vec<&str> = console.lines().map(crate::bench::console::clean).collect();
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
    use crate::bench::parse::fixtures::{FREERTOS, RTOS_BENCH};

    #[test]
    fn the_last_rt_line_of_the_demo() {
        let m = parse(FREERTOS);
        assert_eq!(m.len(), 4);
        assert!(m.iter().all(|m| m.experiment == "rt-latency"));
        assert_eq!(m[0].metric, "samples");
        assert_eq!(m[0].value, 2000.0);
        assert_eq!(m[1].unit, "ns");
    }

    #[test]
    fn generic_bench_lines() {
        let m = parse(RTOS_BENCH);
        let find = |e: &str, metric: &str| {
            m.iter()
                .find(|x| x.experiment == e && x.metric == metric)
                .cloned()
                .unwrap()
        };
        assert_eq!(
            find("thread-metric/basic", "score"),
            Measure::new("thread-metric/basic", "score", 123_456.0, "count")
        );
        assert_eq!(find("thread-metric/basic", "check").value, 1.0);
        assert_eq!(find("thread-metric/cooperative", "check").value, 0.0);
        assert_eq!(find("rhealstone/task-switch", "time").unit, "ns");
        assert_eq!(find("dispatch", "p99.9").value, 2100.0);
        assert_eq!(find("dispatch", "hist_ns_1000_2000").value, 1990.0);
        assert!(m.iter().all(|m| m.metric != "mode"));
    }

    #[test]
    fn malformed_lines_are_skipped() {
        let console = "bench: experiment=x metric=m value=abc unit=ns\nbench: done\n\
                       rt: samples=oops\n";
        assert!(parse(console).is_empty());
    }
}
