//! cyclictest (rt-tests 2.5) with `-q -N -h <n>`: the histogram (`<ns> <count>` per 1 ns
//! bucket; the bench prints only the buckets holding samples), then `# Total`,
//! `# Min/Avg/Max Latencies` (ns) and `# Histogram Overflows` summary lines.
//!
//! The records keep the summary to the ns and sum the histogram into `BUCKET_NS` buckets,
//! which is what the plots draw.

use anyhow::Result;

use super::{after, number, Measure};
use crate::bench::record::hist_metric;
use std::collections::BTreeMap;

/// Width of the histogram buckets recorded, ns.
pub const BUCKET_NS: u64 = 100;

pub fn parse(experiment: &str, lines: &[String]) -> Result<Vec<Measure>> {
    let mut measures = vec![
        Measure::new(
            experiment,
            "samples",
            number(after(lines, "# Total:")?, "")?,
            "count",
        ),
        Measure::new(
            experiment,
            "min",
            number(after(lines, "# Min Latencies:")?, "")?,
            "ns",
        ),
        Measure::new(
            experiment,
            "avg",
            number(after(lines, "# Avg Latencies:")?, "")?,
            "ns",
        ),
        Measure::new(
            experiment,
            "max",
            number(after(lines, "# Max Latencies:")?, "")?,
            "ns",
        ),
        Measure::new(
            experiment,
            "overflows",
            number(after(lines, "# Histogram Overflows:")?, "")?,
            "count",
        ),
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
    fn a_run_without_summary_is_an_error() {
        let lines = vec!["004608 001229".to_owned()];
        assert!(parse("cyclictest-idle", &lines).is_err());
    }
}
