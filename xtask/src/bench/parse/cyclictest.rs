//! cyclictest (rt-tests 2.5) with `-q -N -h <n>`: the histogram (`<ns> <count>` per 1 ns
//! bucket; the bench prints only the buckets holding samples), then `# Total`,
//! `# Min/Avg/Max Latencies` (ns) and `# Histogram Overflows` summary lines.
//!
//! The records keep the summary to the ns and sum the histogram into `BUCKET_NS` buckets,
//! which is what the plots draw. Several runs in one experiment (the full idle row's) are
//! pooled: their samples, histograms and overflows summed, the smallest minimum, the largest
//! maximum and the average of every sample (each run's average weighted by its samples).

use anyhow::{anyhow, Result};

use super::{number, Measure};
use crate::bench::record::hist_metric;
use std::collections::BTreeMap;

/// Width of the histogram buckets recorded, ns.
pub const BUCKET_NS: u64 = 100;

pub fn parse(experiment: &str, lines: &[String]) -> Result<Vec<Measure>> {
    let totals = every(lines, "# Total:")?;
    let (mins, avgs) = (
        every(lines, "# Min Latencies:")?,
        every(lines, "# Avg Latencies:")?,
    );
    let (maxima, overflows) = (
        every(lines, "# Max Latencies:")?,
        every(lines, "# Histogram Overflows:")?,
    );
    let runs = totals.len();
    if [&mins, &avgs, &maxima, &overflows]
        .iter()
        .any(|v| v.len() != runs)
    {
        return Err(anyhow!(
            "{experiment}: {runs} runs but not as many summaries"
        ));
    }
    let samples: f64 = totals.iter().sum();
    let weighted: f64 = totals.iter().zip(&avgs).map(|(n, avg)| n * avg).sum();
    let least = |v: &[f64]| v.iter().copied().reduce(f64::min).unwrap_or(0.0);
    let most = |v: &[f64]| v.iter().copied().reduce(f64::max).unwrap_or(0.0);
    let mut measures = vec![
        Measure::new(experiment, "samples", samples, "count"),
        Measure::new(experiment, "min", least(&mins), "ns"),
        Measure::new(
            experiment,
            "avg",
            if samples > 0.0 {
                weighted / samples
            } else {
                0.0
            },
            "ns",
        ),
        Measure::new(experiment, "max", most(&maxima), "ns"),
        Measure::new(experiment, "overflows", overflows.iter().sum(), "count"),
    ];
    let mut buckets = BTreeMap::<u64, u64>::new();
    for (ns, count) in lines.iter().filter_map(|line| bucket(line)) {
        *buckets.entry(ns / BUCKET_NS * BUCKET_NS).or_default() += count;
    }
    measures.extend(
        buckets
            .into_iter()
            .filter(|&(_, count)| count > 0)
            .map(|(lo, count)| {
                Measure::new(
                    experiment,
                    &hist_metric("ns", lo, lo + BUCKET_NS),
                    count as f64,
                    "count",
                )
            }),
    );
    Ok(measures)
}

/// The number after `label` on every line that holds it (one per run); an error when none
/// does or one is no number.
fn every(lines: &[String], label: &str) -> Result<Vec<f64>> {
    let values = lines
        .iter()
        .filter_map(|line| {
            line.split_once(label)
                .map(|(_, rest)| number(rest.trim(), ""))
        })
        .collect::<Result<Vec<f64>>>()?;
    if values.is_empty() {
        return Err(anyhow!("no `{label}` line"));
    }
    Ok(values)
}

/// A histogram line `<ns> <count>` (both zero-padded decimals).
fn bucket(line: &str) -> Option<(u64, u64)> {
    let (ns, count) = line.trim().split_once(' ')?;
    Some((ns.parse().ok()?, count.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::parse::fixtures::{section, NATIVE, SOLO};

    fn value(measures: &[Measure], metric: &str) -> f64 {
        measures.iter().find(|m| m.metric == metric).unwrap().value
    }

    #[test]
    fn summary_and_histogram_of_a_native_run() {
        let m = parse("cyclictest-idle", &section(NATIVE, "cyclictest-idle")).unwrap();
        assert_eq!(value(&m, "samples"), 2000.0);
        assert_eq!(value(&m, "min"), 4528.0);
        assert_eq!(value(&m, "avg"), 4894.0);
        assert_eq!(value(&m, "max"), 16672.0);
        assert_eq!(value(&m, "overflows"), 0.0);
        // 1 ns buckets 4528 (63) and 4592 (28), then 4608 (1229) and 4640 (3).
        assert_eq!(value(&m, "hist_ns_4500_4600"), 91.0);
        assert_eq!(value(&m, "hist_ns_4600_4700"), 1232.0);
        assert_eq!(value(&m, "hist_ns_16600_16700"), 2.0);
        let total: f64 = m
            .iter()
            .filter(|m| m.metric.starts_with("hist_"))
            .map(|m| m.value)
            .sum();
        assert_eq!(total, 2000.0);
        assert!(m.iter().all(|m| m.experiment == "cyclictest-idle"));
    }

    #[test]
    fn prefixed_partita_console_parses_the_same_way() {
        let m = parse("cyclictest-idle", &section(SOLO, "cyclictest-idle")).unwrap();
        assert_eq!(value(&m, "samples"), 2000.0);
        assert!(value(&m, "max") >= value(&m, "min"));
    }

    #[test]
    fn several_runs_are_pooled() {
        let run = |buckets: &[&str], total, min, avg, max, overflows| {
            let mut lines: Vec<String> = buckets.iter().map(|b| (*b).to_owned()).collect();
            lines.extend([
                format!("# Total: {total:09}"),
                format!("# Min Latencies: {min:05}"),
                format!("# Avg Latencies: {avg:05}"),
                format!("# Max Latencies: {max:05}"),
                format!("# Histogram Overflows: {overflows:05}"),
            ]);
            lines
        };
        let mut lines = run(&["004608 000003", "005310 000001"], 4, 4608, 4784, 5310, 0);
        lines.extend(run(
            &["004650 000001", "006010 000001"],
            3,
            4650,
            38223,
            106000,
            1,
        ));
        let m = parse("cyclictest-idle", &lines).unwrap();
        assert_eq!(value(&m, "samples"), 7.0);
        assert_eq!(value(&m, "min"), 4608.0);
        // (4 * 4784 + 3 * 38223) / 7
        assert_eq!(value(&m, "avg"), 19_115.0);
        assert_eq!(value(&m, "max"), 106_000.0);
        assert_eq!(value(&m, "overflows"), 1.0);
        assert_eq!(value(&m, "hist_ns_4600_4700"), 4.0);
        assert_eq!(value(&m, "hist_ns_6000_6100"), 1.0);
        // A run whose summary lost a line.
        lines.retain(|l| l != "# Max Latencies: 05310");
        assert!(parse("cyclictest-idle", &lines).is_err());
    }

    #[test]
    fn a_run_without_summary_is_an_error() {
        let lines = vec!["004608 001229".to_owned()];
        assert!(parse("cyclictest-idle", &lines).is_err());
    }
}
