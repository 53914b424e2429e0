//! Thread-Metric (the suite Ker-ONE reports), written for this guest from the published
//! test descriptions: eight tests (the two interrupt tests in two variants, raising a
//! self-SGI or, as the reference ports do, a software interrupt), each scored by how often
//! its loop ran during one reporting period while the controller, at the highest priority,
//! sleeps. Besides the score each multi-counter test checks that its counters stay within 1
//! of their average, and each single-thread service test that its service never failed.
//! The task bodies live in `tm_tasks`; this module owns the test table, the period and the
//! scoring.

use super::objects::{self, COUNTERS};
use super::tm_tasks::{self, Svc};
use super::{report, Selection};
use crate::sgi::SgiToSelf;
use crate::{console, freertos};
use core::sync::atomic::Ordering;

const EXPERIMENT: &str = "thread-metric";

/// One test: how to start it and how to score it.
struct Test {
    name: &'static str,
    start: fn() -> Result<(), freertos::OutOfMemory>,
    score: fn() -> Outcome,
}

/// A test's score and, where it has one, the result of its consistency check.
struct Outcome {
    score: u64,
    check: Option<bool>,
}

const TESTS: [Test; 10] = [
    Test {
        name: "basic",
        start: tm_tasks::start_basic,
        score: unchecked,
    },
    Test {
        name: "cooperative",
        start: tm_tasks::start_cooperative,
        score: balanced_sum::<5>,
    },
    Test {
        name: "preemptive",
        start: tm_tasks::start_preemptive,
        score: balanced_sum::<5>,
    },
    Test {
        name: "interrupt",
        start: tm_tasks::start_interrupt::<SgiToSelf>,
        score: handler_count::<2>,
    },
    Test {
        name: "interrupt-preemption",
        start: tm_tasks::start_interrupt_preemption::<SgiToSelf>,
        score: handler_count::<3>,
    },
    Test {
        name: "interrupt-svc",
        start: tm_tasks::start_interrupt::<Svc>,
        score: handler_count::<2>,
    },
    Test {
        name: "interrupt-preemption-svc",
        start: tm_tasks::start_interrupt_preemption::<Svc>,
        score: handler_count::<3>,
    },
    Test {
        name: "message",
        start: tm_tasks::start_message,
        score: error_free,
    },
    Test {
        name: "synchronization",
        start: tm_tasks::start_synchronization,
        score: error_free,
    },
    Test {
        name: "memory",
        start: tm_tasks::start_memory,
        score: error_free,
    },
];

/// Runs every selected test for one period each and reports its score and check.
pub fn run(selection: &Selection) {
    for test in TESTS.iter().filter(|test| selection.runs(test.name)) {
        if (test.start)().is_err() {
            console::halt(format_args!(
                "bench: {}: FreeRTOS heap exhausted",
                test.name
            ));
        }
        freertos::delay_ms(selection.period_ms);
        let outcome = (test.score)();
        objects::teardown();
        report::result(EXPERIMENT, Some(test.name), "score", outcome.score, "count");
        if let Some(passed) = outcome.check {
            report::check(EXPERIMENT, test.name, passed);
        }
    }
}

fn counter(index: usize) -> u64 {
    COUNTERS[index].load(Ordering::Relaxed)
}

/// Whether each of the first N counters lies within 1 of their integer average.
fn balanced<const N: usize>() -> bool {
    let average = (0..N).map(counter).sum::<u64>() / N as u64;
    (0..N).all(|index| counter(index).abs_diff(average) <= 1)
}

fn unchecked() -> Outcome {
    Outcome {
        score: counter(0),
        check: None,
    }
}

/// Score: the sum of the first N counters.
fn balanced_sum<const N: usize>() -> Outcome {
    Outcome {
        score: (0..N).map(counter).sum(),
        check: Some(balanced::<N>()),
    }
}

/// Score: the handler's counter, the last of the N counters.
fn handler_count<const N: usize>() -> Outcome {
    Outcome {
        score: counter(N - 1),
        check: Some(balanced::<N>()),
    }
}

/// Score: the thread's counter; check: its service never failed.
fn error_free() -> Outcome {
    Outcome {
        score: counter(0),
        check: Some(counter(tm_tasks::ERRORS) == 0),
    }
}
