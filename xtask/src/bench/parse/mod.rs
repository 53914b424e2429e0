//! Parsers of what the benchmark programs print, one module per program, each turning
//! the lines of one experiment into `Measure`s with units. They take text only (captured
//! consoles, test fixtures) and never run anything; a missing figure is an error naming
//! what was expected, never a guessed value.

mod automotive;
mod cyclictest;
mod fabric;
mod hackbench;
mod ivc;
mod partita;
mod rtos;
mod stress_ng;
mod sysbench;

pub use fabric::parse as parse_fabric;
pub use partita::parse as parse_partita;
pub use rtos::parse as parse_rtos;
pub use sysbench::Test as SysbenchTest;

use anyhow::{anyhow, Result};

use super::record::Measure;

/// Which parser reads an experiment's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parser {
    Cyclictest,
    Sysbench(SysbenchTest),
    Hackbench,
    StressNg,
    Automotive,
    Ivc,
}

/// The figures `experiment` printed in `lines`.
pub fn parse(parser: Parser, experiment: &str, lines: &[String]) -> Result<Vec<Measure>> {
    match parser {
        Parser::Cyclictest => cyclictest::parse(experiment, lines),
        Parser::Sysbench(test) => sysbench::parse(test, experiment, lines),
        Parser::Hackbench => hackbench::parse(experiment, lines),
        Parser::StressNg => stress_ng::parse(experiment, lines),
        Parser::Automotive => automotive::parse(lines),
        Parser::Ivc => ivc::parse(experiment, lines),
    }
}

/// Several runs of one experiment's time in `unit`: the mean, the fastest, the slowest, how
/// many runs and, with two runs or more, their standard deviation (`time`, `time_min`,
/// `time_max`, `runs`, `time_sd`). A run's time moves from run to run on the same system
/// with what Linux's timer ticks and work items did inside it: a short program's times fall
/// in a few modes (one tick or two, a tick's work or none), and the median jumps from one
/// mode to the next with the share of runs in each, while the mean follows that share; so
/// the mean is the figure compared, and the standard deviation gives its interval
/// (`formula::overhead_interval`).
fn spread(experiment: &str, times: Vec<f64>, unit: &str) -> Result<Vec<Measure>> {
    let fastest = times.iter().copied().reduce(f64::min);
    let slowest = times.iter().copied().reduce(f64::max);
    let (Some(fastest), Some(slowest)) = (fastest, slowest) else {
        return Err(anyhow!("{experiment}: no run"));
    };
    let runs = times.len() as f64;
    let mean = times.iter().sum::<f64>() / runs;
    let mut measures = vec![
        Measure::new(experiment, "time", mean, unit),
        Measure::new(experiment, "time_min", fastest, unit),
        Measure::new(experiment, "time_max", slowest, unit),
        Measure::new(experiment, "runs", runs, "count"),
    ];
    if times.len() >= 2 {
        let squares: f64 = times.iter().map(|t| (t - mean) * (t - mean)).sum();
        let sd = (squares / (runs - 1.0)).sqrt();
        measures.push(Measure::new(experiment, "time_sd", sd, unit));
    }
    Ok(measures)
}

/// The `key=value` words of `text`, in order.
fn key_values(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.split_whitespace()
        .filter_map(|word| word.split_once('='))
}

/// The text after `label` on the first line that holds it, trimmed.
fn after<'a>(lines: &'a [String], label: &str) -> Result<&'a str> {
    lines
        .iter()
        .find_map(|line| line.split_once(label).map(|(_, rest)| rest.trim()))
        .ok_or_else(|| anyhow!("no `{label}` line"))
}

/// A decimal number, with an optional unit suffix such as `s` removed.
fn number(text: &str, suffix: &str) -> Result<f64> {
    let digits = text.trim().trim_end_matches(suffix);
    digits
        .parse::<f64>()
        .map_err(|_| anyhow!("`{text}` is not a number"))
}

#[cfg(test)]
pub(super) mod fixtures {
    /// A captured console's lines between the markers of `name` (markers excluded).
    pub fn section(console: &str, name: &str) -> Vec<String> {
        crate::bench::console::sections(console)
            .into_iter()
            .find(|section| section.name == name)
            .map(|section| section.lines)
            .unwrap_or_default()
    }

    pub const NATIVE: &str = include_str!("../fixtures/native-linux.txt");
    pub const SOLO: &str = include_str!("../fixtures/solo-linux.txt");
    pub const XEN: &str = include_str!("../fixtures/xen-linux.txt");
    pub const FREERTOS: &str = include_str!("../fixtures/native-freertos.txt");
    pub const RTOS_NATIVE: &str = include_str!("../fixtures/native-freertos-bench.txt");
    pub const RTOS_SOLO: &str = include_str!("../fixtures/solo-freertos-bench.txt");
    /// FreeRTOS's latency beside Linux's hackbench loop on one pCPU (kernel log removed).
    pub const RTOS_SHARED: &str = include_str!("../fixtures/shared-freertos.txt");
    /// The suite in a Xen dom0less domU alone (Xen's boot log removed).
    pub const RTOS_XEN_SOLO: &str = include_str!("../fixtures/xen-solo-freertos-bench.txt");
    /// FreeRTOS's latency as a Xen domU beside dom0's hackbench loop on one pCPU (Xen's and
    /// the kernel's logs removed).
    pub const RTOS_XEN_SHARED: &str = include_str!("../fixtures/xen-shared-freertos.txt");
}
