//! sysbench 1.0.20 with fixed work (`--time=0 --events=N` or a total size): the virtual
//! time the work took (`total time:`), the events done, and the test's own rate
//! (`events per second:` for cpu, `MiB transferred (<x> MiB/sec)` for memory).

use anyhow::{anyhow, Result};

use super::{after, number, Measure};

/// The four sysbench tests of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    Cpu,
    Memory,
    Threads,
    Mutex,
}

pub fn parse(test: Test, experiment: &str, lines: &[String]) -> Result<Vec<Measure>> {
    let mut measures = vec![
        Measure::new(
            experiment,
            "total_time",
            number(after(lines, "total time:")?, "s")?,
            "s",
        ),
        Measure::new(
            experiment,
            "events",
            number(after(lines, "total number of events:")?, "")?,
            "count",
        ),
    ];
    match test {
        Test::Cpu => measures.push(Measure::new(
            experiment,
            "events_per_s",
            number(after(lines, "events per second:")?, "")?,
            "events/s",
        )),
        Test::Memory => measures.push(Measure::new(
            experiment,
            "throughput",
            memory_rate(after(lines, "MiB transferred (")?)?,
            "MiB/s",
        )),
        Test::Threads | Test::Mutex => {}
    }
    Ok(measures)
}

/// `955.09 MiB/sec)` -> 955.09.
fn memory_rate(text: &str) -> Result<f64> {
    let rate = text
        .split_whitespace()
        .next()
        .ok_or_else(|| anyhow!("no memory rate in `{text}`"))?;
    number(rate, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::parse::fixtures::{section, NATIVE};

    fn parsed(test: Test, name: &str) -> Vec<(String, f64, String)> {
        parse(test, name, &section(NATIVE, name))
            .unwrap()
            .into_iter()
            .map(|m| (m.metric, m.value, m.unit))
            .collect()
    }

    fn row(metric: &str, value: f64, unit: &str) -> (String, f64, String) {
        (metric.to_owned(), value, unit.to_owned())
    }

    #[test]
    fn cpu() {
        assert_eq!(
            parsed(Test::Cpu, "sysbench-cpu"),
            [
                row("total_time", 0.2076, "s"),
                row("events", 2000.0, "count"),
                row("events_per_s", 9535.48, "events/s")
            ]
        );
    }

    #[test]
    fn memory() {
        assert_eq!(
            parsed(Test::Memory, "sysbench-memory"),
            [
                row("total_time", 0.2659, "s"),
                row("events", 262_144.0, "count"),
                row("throughput", 955.09, "MiB/s")
            ]
        );
    }

    #[test]
    fn threads() {
        assert_eq!(
            parsed(Test::Threads, "sysbench-threads"),
            [
                row("total_time", 2.3731, "s"),
                row("events", 2000.0, "count")
            ]
        );
    }

    #[test]
    fn mutex() {
        assert_eq!(
            parsed(Test::Mutex, "sysbench-mutex"),
            [row("total_time", 2.0091, "s"), row("events", 1.0, "count")]
        );
    }

    #[test]
    fn a_truncated_run_is_an_error() {
        let lines = vec!["Threads started!".to_owned()];
        assert!(parse(Test::Cpu, "sysbench-cpu", &lines).is_err());
    }
}
