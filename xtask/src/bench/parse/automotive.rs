//! The automotive suite's result lines (guests/automotive/README.md):
//! `auto: program=<p> input=<small|large> ns=<n> checksum=<hex>`, one experiment
//! `auto-<p>-<input>` per program with its virtual time in ns. The driver may run the suite
//! several times in one boot (`run-all small 41`): a program's figure is then the mean of
//! its runs, beside the fastest, the slowest and their standard deviation (`spread`), as
//! hackbench's.

use anyhow::{anyhow, bail, Result};

use super::{key_values, number, spread, Measure};

pub fn parse(lines: &[String]) -> Result<Vec<Measure>> {
    // Each program's times, in the order the programs first reported.
    let mut runs: Vec<(String, Vec<f64>)> = Vec::new();
    for text in lines.iter().filter_map(|line| line.strip_prefix("auto: ")) {
        let (experiment, ns) = result_line(text)?;
        match runs.iter_mut().find(|(name, _)| *name == experiment) {
            Some((_, times)) => times.push(ns),
            None => runs.push((experiment, vec![ns])),
        }
    }
    if runs.is_empty() {
        bail!("no `auto:` lines");
    }
    let mut measures = Vec::new();
    for (experiment, times) in runs {
        measures.extend(spread(&experiment, times, "ns")?);
    }
    Ok(measures)
}

/// One result line's experiment and time (ns).
fn result_line(text: &str) -> Result<(String, f64)> {
    let field = |key: &str| {
        key_values(text)
            .find(|&(k, _)| k == key)
            .map(|(_, v)| v)
            .ok_or_else(|| anyhow!("`auto: {text}` has no {key}="))
    };
    let experiment = format!("auto-{}-{}", field("program")?, field("input")?);
    Ok((experiment, number(field("ns")?, "")?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::parse::fixtures::{section, NATIVE};

    #[test]
    fn six_programs_of_the_small_input() {
        let m = parse(&section(NATIVE, "auto-small")).unwrap();
        let times: Vec<&Measure> = m.iter().filter(|m| m.metric == "time").collect();
        let names: Vec<&str> = times.iter().map(|m| m.experiment.as_str()).collect();
        assert_eq!(
            names,
            [
                "auto-basicmath-small",
                "auto-bitcount-small",
                "auto-qsort-small",
                "auto-susan-smooth-small",
                "auto-susan-edges-small",
                "auto-susan-corners-small"
            ]
        );
        assert_eq!(
            m[..4],
            [
                Measure::new("auto-basicmath-small", "time", 51_602_672.0, "ns"),
                Measure::new("auto-basicmath-small", "time_min", 51_602_672.0, "ns"),
                Measure::new("auto-basicmath-small", "time_max", 51_602_672.0, "ns"),
                Measure::new("auto-basicmath-small", "runs", 1.0, "count"),
            ]
        );
        assert!(times.iter().all(|m| m.unit == "ns"));
    }

    fn line(program: &str, ns: u64) -> String {
        format!("auto: program={program} input=small ns={ns} checksum=9c5e")
    }

    #[test]
    fn each_program_is_the_mean_of_its_runs() {
        // Three rounds of two programs, as `run-all small 3` prints them (qsort's times
        // are the spread measured across boots on 2026-11-27).
        let lines: Vec<String> = [
            ("qsort", 6_132_432),
            ("susan-edges", 3_777_392),
            ("qsort", 6_170_352),
            ("susan-edges", 3_777_392),
            ("qsort", 6_157_680),
            ("susan-edges", 3_777_377),
        ]
        .iter()
        .map(|&(program, ns)| line(program, ns))
        .collect();
        let m = parse(&lines).unwrap();
        let names: Vec<(&str, &str)> = m
            .iter()
            .map(|m| (m.experiment.as_str(), m.metric.as_str()))
            .collect();
        let metrics = ["time", "time_min", "time_max", "runs", "time_sd"];
        let expected: Vec<(&str, &str)> = ["auto-qsort-small", "auto-susan-edges-small"]
            .iter()
            .flat_map(|e| metrics.iter().map(move |m| (*e, *m)))
            .collect();
        assert_eq!(names, expected);
        let values: Vec<f64> = m.iter().map(|m| m.value).collect();
        assert_eq!(values[..4], [6_153_488.0, 6_132_432.0, 6_170_352.0, 3.0]);
        // Deviations -21,056, 16,864 and 4,192: sqrt(745,322,496 / 2).
        assert!((values[4] - 19_304.43).abs() < 0.01, "{}", values[4]);
        assert_eq!(values[5..9], [3_777_387.0, 3_777_377.0, 3_777_392.0, 3.0]);
        assert!((values[9] - 8.660_254).abs() < 1e-5, "{}", values[9]);
    }

    #[test]
    fn a_line_without_time_is_an_error() {
        let lines = vec!["auto: program=qsort input=small checksum=00".to_owned()];
        assert!(parse(&lines).is_err());
        assert!(parse(&[]).is_err());
    }
}
