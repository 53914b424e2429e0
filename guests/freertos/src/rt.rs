//! The dispatch-latency experiment (SPUMONE, section 4.3): a task at the highest priority
//! released every 1 ms by the tick interrupt.
//!
//! Latency = counter value when the task starts running minus the programmed expiry of
//! the oldest release it has not handled yet (the compare value the tick handler
//! published), in ns of the generic counter; one sample per wake-up. A miss is a release
//! whose task run started only after the following release was due (so releases the task
//! never got a run of its own for are misses too).
//! Once a second (every 1000 releases) it prints exactly one line:
//! `rt: samples=<n> max_ns=<ns> mean_ns=<ns> misses=<n>` (cumulative since start-up).
//! With a sample limit it prints the line once more at the limit and powers off.
//! The figures are also published after every sample (`published`) for the IVC demo,
//! which streams them to Linux.

use crate::{console, freertos, port, psci, timer};
use core::ffi::c_void;
use core::sync::atomic::{AtomicU64, Ordering};

/// Samples after which the guest powers off; u64::MAX means never.
static SAMPLE_LIMIT: AtomicU64 = AtomicU64::new(u64::MAX);

/// Powers the guest off after `samples` samples; call before the scheduler starts.
pub fn limit_samples(samples: u64) {
    SAMPLE_LIMIT.store(samples, Ordering::Relaxed);
}

/// The latest cumulative figures, for readers in other tasks: samples, max_ns, mean_ns,
/// misses. Written only by the real-time task.
static PUBLISHED: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

/// The latest figures: (samples, max_ns, mean_ns, misses).
pub fn published() -> [u64; 4] {
    PUBLISHED.each_ref().map(|v| v.load(Ordering::Relaxed))
}

/// Releases between two report lines (one second at the 1 kHz tick).
const RELEASES_PER_REPORT: u64 = freertos::TICK_RATE_HZ;

/// Cumulative dispatch-latency statistics.
#[derive(Default)]
struct DispatchStats {
    samples: u64,
    total_ns: u64,
    max_ns: u64,
    misses: u64,
}

impl DispatchStats {
    fn record(&mut self, latency_ns: u64) {
        self.samples += 1;
        self.total_ns = self.total_ns.saturating_add(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
    }

    fn mean_ns(&self) -> u64 {
        self.total_ns.checked_div(self.samples).unwrap_or(0)
    }

    fn report(&self) {
        console::line(format_args!(
            "rt: samples={} max_ns={} mean_ns={} misses={}",
            self.samples,
            self.max_ns,
            self.mean_ns(),
            self.misses
        ));
    }
}

/// The real-time task: wait for the release, time the dispatch, report once a second.
pub extern "C" fn dispatch_latency_task(_: *mut c_void) {
    let frequency = timer::frequency();
    let period = port::tick_period();
    let mut stats = DispatchStats::default();
    let mut handled: u64 = 0;
    let mut next_report = RELEASES_PER_REPORT;
    let limit = SAMPLE_LIMIT.load(Ordering::Relaxed);
    loop {
        freertos::wait_notification();
        let started = timer::now();
        let latest = port::latest_release();
        if latest.sequence <= handled {
            // A notification given while the previous run was late: already accounted for.
            continue;
        }
        let unhandled = latest.sequence - handled;
        let oldest_expiry = latest.expiry - (unhandled - 1) * period;
        stats.record(timer::ticks_to_ns(
            started.saturating_sub(oldest_expiry),
            frequency,
        ));
        let latest_missed = started.saturating_sub(latest.expiry) >= period;
        stats.misses += (unhandled - 1) + u64::from(latest_missed);
        handled = latest.sequence;
        for (slot, value) in
            PUBLISHED
                .iter()
                .zip([stats.samples, stats.max_ns, stats.mean_ns(), stats.misses])
        {
            slot.store(value, Ordering::Relaxed);
        }
        let second_over = handled >= next_report;
        if second_over {
            next_report += RELEASES_PER_REPORT;
        }
        if second_over || stats.samples >= limit {
            stats.report();
        }
        if stats.samples >= limit {
            psci::system_off();
        }
    }
}
