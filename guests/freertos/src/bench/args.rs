//! The benchmark boot arguments, decoded from the `/chosen/bootargs` line into a typed
//! `Selection`. Without a valid `bench=` word the guest runs its demo; a malformed
//! `bench.*` value is ignored like a missing one (the mode's default applies).
//!
//! `bench=<thread-metric|rhealstone|latency|console|all>`, `bench.mode=<quick|full>` (default
//! full), `bench.period_ms=<n>` (Thread-Metric reporting period), `bench.samples=<n>`
//! (latency samples, at most `MAX_SAMPLES`), `bench.loops=<n>` (Rhealstone loops),
//! `bench.test=<name>` (run only the test of that name), `bench.delay_ms=<n>` (wait before
//! the first experiment, e.g. while a VM beside it boots and starts its load).

use super::stats::MAX_SAMPLES;

/// Quick mode (tests' sanity runs) or full mode (BENCHMARKS.md durations).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Quick,
    Full,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Self::Quick => "quick",
            Self::Full => "full",
        }
    }

    fn period_ms(self) -> u64 {
        match self {
            Self::Quick => 1_000,
            Self::Full => 30_000,
        }
    }

    fn samples(self) -> usize {
        match self {
            Self::Quick => 2_000,
            Self::Full => MAX_SAMPLES,
        }
    }

    fn loops(self) -> u64 {
        match self {
            Self::Quick => 1_000,
            Self::Full => 10_000,
        }
    }
}

/// Longest test name `bench.test` can hold.
const TEST_NAME_MAX: usize = 24;

/// What the benchmark run does.
#[derive(Clone, Copy, Debug)]
pub struct Selection {
    pub thread_metric: bool,
    pub rhealstone: bool,
    pub latency: bool,
    pub console: bool,
    pub mode: Mode,
    pub period_ms: u64,
    pub samples: usize,
    pub loops: u64,
    pub delay_ms: u64,
    test: [u8; TEST_NAME_MAX],
    test_len: usize,
}

impl Selection {
    /// The selection `line` asks for; None if it names no benchmark.
    pub fn parse(line: &str) -> Option<Self> {
        let mut experiments = None;
        let mut mode = Mode::Full;
        let (mut period_ms, mut samples, mut loops) = (None, None, None);
        let mut delay_ms = 0;
        let mut test = None;
        for word in line.split_ascii_whitespace() {
            let Some((key, value)) = word.split_once('=') else {
                continue;
            };
            match key {
                "bench" => experiments = parse_experiments(value),
                "bench.mode" if value == "quick" => mode = Mode::Quick,
                "bench.mode" if value == "full" => mode = Mode::Full,
                "bench.period_ms" => period_ms = positive(value),
                "bench.samples" => samples = positive(value),
                "bench.loops" => loops = positive(value),
                "bench.delay_ms" => delay_ms = positive(value).unwrap_or(0),
                "bench.test" if value.len() <= TEST_NAME_MAX => test = Some(value),
                _ => {}
            }
        }
        let (thread_metric, rhealstone, latency, console) = experiments?;
        let mut selection = Self {
            thread_metric,
            rhealstone,
            latency,
            console,
            mode,
            period_ms: period_ms.unwrap_or(mode.period_ms()),
            samples: samples
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(mode.samples())
                .min(MAX_SAMPLES),
            loops: loops.unwrap_or(mode.loops()),
            delay_ms,
            test: [0; TEST_NAME_MAX],
            test_len: 0,
        };
        if let Some(name) = test {
            selection.test[..name.len()].copy_from_slice(name.as_bytes());
            selection.test_len = name.len();
        }
        Some(selection)
    }

    /// Whether the test called `name` is selected (every test is without `bench.test`).
    pub fn runs(&self, name: &str) -> bool {
        self.test_len == 0 || &self.test[..self.test_len] == name.as_bytes()
    }
}

/// Which experiments `bench=<value>` selects: Thread-Metric, Rhealstone, latency, console.
fn parse_experiments(value: &str) -> Option<(bool, bool, bool, bool)> {
    match value {
        "thread-metric" => Some((true, false, false, false)),
        "rhealstone" => Some((false, true, false, false)),
        "latency" => Some((false, false, true, false)),
        "console" => Some((false, false, false, true)),
        "all" => Some((true, true, true, true)),
        _ => None,
    }
}

fn positive(value: &str) -> Option<u64> {
    value.parse().ok().filter(|&n| n > 0)
}
