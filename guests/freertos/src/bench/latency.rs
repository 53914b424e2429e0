//! Dispatch latency (SPUMONE, section 4.3) and interrupt latency (Kim & Choi's
//! "interrupt delay"), measured together on the 1 ms tick by the controller, which runs
//! at the highest priority and is released by every tick (`port`).
//!
//! Dispatch latency: counter value when the controller runs after its release minus the
//! programmed expiry of the oldest release it has not handled (the compare value the tick
//! handler published); a miss is a release whose run started a whole period late or that
//! got no run of its own. Interrupt latency: the tick's compare value to the first
//! instruction of the IRQ vector (its counter stamp), for the latest release of each run.
//! Both keep every sample (ns) and report min, mean, p99, p99.9, max and a histogram.

use super::stats::{self, SampleBuffer};
use super::{report, Selection};
use crate::{console, freertos, port, timer};

static DISPATCH_SAMPLES: SampleBuffer = SampleBuffer::new();
static IRQ_SAMPLES: SampleBuffer = SampleBuffer::new();

/// Test name of both latencies for `bench.test`.
const TEST: &str = "latency";

/// Takes `selection.samples` samples of both latencies and reports them.
pub fn run(selection: &Selection) {
    if !selection.runs(TEST) {
        return;
    }
    let (Some(dispatch), Some(irq)) = (DISPATCH_SAMPLES.claim(), IRQ_SAMPLES.claim()) else {
        console::halt(format_args!("bench: latency sample buffers already in use"))
    };
    let count = selection.samples.min(dispatch.len());
    let misses = sample(&mut dispatch[..count], &mut irq[..count]);
    report::result("dispatch", None, "misses", misses, "count");
    summarize("dispatch", &mut dispatch[..count]);
    summarize("irq-latency", &mut irq[..count]);
}

/// Fills both sample slices, one pair per release handled; returns the misses.
fn sample(dispatch: &mut [u32], irq: &mut [u32]) -> u64 {
    let frequency = timer::frequency();
    let period = port::tick_period();
    let to_ns =
        |ticks: u64| u32::try_from(timer::ticks_to_ns(ticks, frequency)).unwrap_or(u32::MAX);
    port::set_release_task(freertos::current_task());
    let mut handled = port::latest_release().sequence;
    let mut misses = 0;
    for (dispatch, irq) in dispatch.iter_mut().zip(irq.iter_mut()) {
        let (started, latest) = loop {
            freertos::wait_notification();
            let started = timer::now();
            let latest = port::latest_release();
            if latest.sequence > handled {
                break (started, latest);
            }
        };
        let unhandled = latest.sequence - handled;
        let oldest_expiry = latest.expiry - (unhandled - 1) * period;
        *dispatch = to_ns(started.saturating_sub(oldest_expiry));
        *irq = to_ns(latest.irq_latency);
        let latest_missed = started.saturating_sub(latest.expiry) >= period;
        misses += (unhandled - 1) + u64::from(latest_missed);
        handled = latest.sequence;
    }
    misses
}

/// Reports the statistics and the histogram of `samples` (sorted in place).
fn summarize(experiment: &str, samples: &mut [u32]) {
    report::result(experiment, None, "samples", samples.len(), "count");
    let Some(summary) = stats::summarize(samples) else {
        return;
    };
    for (metric, value) in [
        ("min", summary.min),
        ("mean", summary.mean),
        ("p99", summary.p99),
        ("p99.9", summary.p99_9),
        ("max", summary.max),
    ] {
        report::result(experiment, None, metric, value, "ns");
    }
    stats::histogram(samples, |lo, hi, count| {
        report::bucket(experiment, lo, hi, count)
    });
}
