//! hackbench (rt-tests 2.4): the `Time: <s>` line each run ends with. The experiment runs
//! it several times in one boot (`matrix`'s `hackbench`): one run's time moves by a few
//! per cent from run to run on the same system, so the figure is the median of the runs,
//! beside the fastest and the slowest.

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
    fn the_time_is_the_median_of_the_runs() {
        // Measured natively on 2026-11-25: six runs in one boot.
        let six = parse(
            "hackbench",
            &runs(&["1.920", "1.928", "1.919", "1.967", "1.922", "1.927"]),
        )
        .unwrap();
        assert_eq!(six[0], Measure::new("hackbench", "time", 1.9245, "s"));
        assert_eq!(six[1], Measure::new("hackbench", "time_min", 1.919, "s"));
        assert_eq!(six[2], Measure::new("hackbench", "time_max", 1.967, "s"));
        assert_eq!(six[3], Measure::new("hackbench", "runs", 6.0, "count"));
        let five = parse(
            "hackbench",
            &runs(&["1.917", "2.004", "1.940", "1.948", "1.916"]),
        )
        .unwrap();
        assert_eq!(five[0], Measure::new("hackbench", "time", 1.940, "s"));
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
