//! cyclictest (rt-tests 2.4) with `-q -h <n>`: the histogram (`<us> <count>` per bucket),
//! then `# Total`, `# Min/Avg/Max Latencies` and `# Histogram Overflows` summary lines.

use anyhow::Result;

use super::{after, number, Measure};
use crate::bench::record::hist_metric;

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
            "us",
        ),
        Measure::new(
            experiment,
            "avg",
            number(after(lines, "# Avg Latencies:")?, "")?,
            "us",
        ),
        Measure::new(
            experiment,
            "max",
            number(after(lines, "# Max Latencies:")?, "")?,
            "us",
        ),
        Measure::new(
            experiment,
            "overflows",
            number(after(lines, "# Histogram Overflows:")?, "")?,
            "count",
        ),
    ];
    measures.extend(
        lines
            .iter()
            .filter_map(|line| bucket(line))
            .filter(|&(_, count)| count > 0)
            .map(|(us, count)| {
                Measure::new(
                    experiment,
                    &hist_metric("us", us, us + 1),
                    count as f64,
                    "count",
                )
            }),
    );
    Ok(measures)
}

/// A histogram line `<us> <count>` (both zero-padded decimals).
fn bucket(line: &str) -> Option<(u64, u64)> {
    let (us, count) = line.trim().split_once(' ')?;
    Some((us.parse().ok()?, count.trim().parse().ok()?))
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
        assert_eq!(value(&m, "min"), 4.0);
        assert_eq!(value(&m, "avg"), 4.0);
        assert_eq!(value(&m, "max"), 16.0);
        assert_eq!(value(&m, "overflows"), 0.0);
        assert_eq!(value(&m, "hist_us_4_5"), 1501.0);
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
        let lines = vec!["000004 001501".to_owned()];
        assert!(parse("cyclictest-idle", &lines).is_err());
    }
}
