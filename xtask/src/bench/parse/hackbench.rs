//! hackbench (rt-tests 2.4): the `Time: <s>` line each run ends with. The experiment runs
//! it several times in one boot (`matrix`'s `hackbench`): one run's time moves by a few
//! per cent from run to run on the same system, so the figure is the mean of the runs,
//! beside the fastest, the slowest and their standard deviation (`spread`).

use anyhow::{anyhow, Result};

use super::{number, spread, Measure};

pub fn parse(experiment: &str, lines: &[String]) -> Result<Vec<Measure>> {
    let times = lines
        .iter()
        .filter_map(|line| line.split_once("Time:").map(|(_, rest)| number(rest, "")))
        .collect::<Result<Vec<f64>>>()?;
    if times.is_empty() {
        return Err(anyhow!("no `Time:` line"));
    }
    spread(experiment, times, "s")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::parse::fixtures::{section, NATIVE};

    #[test]
    fn time_of_a_native_run() {
        let m = parse("hackbench", &section(NATIVE, "hackbench")).unwrap();
        assert_eq!(
            m,
            [
                Measure::new("hackbench", "time", 1.928, "s"),
                Measure::new("hackbench", "time_min", 1.928, "s"),
                Measure::new("hackbench", "time_max", 1.928, "s"),
                Measure::new("hackbench", "runs", 1.0, "count"),
            ]
        );
    }

    fn runs(times: &[&str]) -> Vec<String> {
        times
            .iter()
            .flat_map(|t| {
                [
                    "Running in process mode with 4 groups using 40 file descriptors each (== 160 tasks)".to_owned(),
                    format!("Time: {t}"),
                ]
            })
            .collect()
    }

    #[test]
    fn the_time_is_the_mean_of_the_runs() {
        // Measured natively on 2026-11-27: five runs in one boot.
        let five = parse(
            "hackbench",
            &runs(&["1.912", "1.951", "1.930", "1.911", "1.919"]),
        )
        .unwrap();
        let metrics: Vec<&str> = five.iter().map(|m| m.metric.as_str()).collect();
        assert_eq!(metrics, ["time", "time_min", "time_max", "runs", "time_sd"]);
        assert!((five[0].value - 1.9246).abs() < 1e-9, "{}", five[0].value);
        assert_eq!(five[1], Measure::new("hackbench", "time_min", 1.911, "s"));
        assert_eq!(five[2], Measure::new("hackbench", "time_max", 1.951, "s"));
        assert_eq!(five[3], Measure::new("hackbench", "runs", 5.0, "count"));
        // Deviations -12.6, 26.4, 5.4, -13.6 and -5.6 ms: sqrt(1,101.2e-6 / 4).
        assert!(
            (five[4].value - 0.016_592).abs() < 1e-6,
            "{}",
            five[4].value
        );
    }

    #[test]
    fn no_time_is_an_error() {
        assert!(parse("hackbench", &["Running in process mode".to_owned()]).is_err());
    }

    #[test]
    fn a_time_that_is_no_number_is_an_error() {
        assert!(parse("hackbench", &runs(&["1.920", "fast"])).is_err());
    }
}
