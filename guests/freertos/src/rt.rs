//! The dispatch-latency experiment (SPUMONE, section 4.3): a task at the highest priority
//! released every 1 ms by the tick interrupt.
//!
//! Latency = counter value when the task starts running minus the programmed expiry of
//! the release (the compare value the tick handler recorded), in ns of the generic counter.
//! A miss is a release whose task started only after the next release was due, or one the
//! task never saw (several notifications consumed at once, or skipped by a late tick).
//! Once a second (every 1000 releases) it prints exactly one line:
//! `rt: samples=<n> max_ns=<ns> mean_ns=<ns> misses=<n>` (cumulative since start-up).

use crate::{console, freertos, port, timer};
use core::ffi::c_void;

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

    /// Prints the report line; `skipped` releases (never seen by the task) count as misses.
    fn report(&self, skipped: u64) {
        console::line(format_args!(
            "rt: samples={} max_ns={} mean_ns={} misses={}",
            self.samples,
            self.max_ns,
            self.mean_ns(),
            self.misses + skipped
        ));
    }
}

/// The real-time task: wait for the release, time the dispatch, report once a second.
pub extern "C" fn dispatch_latency_task(_: *mut c_void) {
    let frequency = timer::frequency();
    let period = port::tick_period();
    let mut stats = DispatchStats::default();
    let mut releases: u64 = 0;
    let mut next_report = RELEASES_PER_REPORT;
    loop {
        let consumed = u64::from(freertos::wait_notification());
        let started = timer::now();
        let expiry = port::last_release();
        let late = started.saturating_sub(expiry);
        stats.record(timer::ticks_to_ns(late, frequency));
        stats.misses += consumed.saturating_sub(1) + u64::from(late >= period);
        releases += consumed.max(1);
        let skipped = port::skipped_releases();
        if releases + skipped >= next_report {
            stats.report(skipped);
            next_report += RELEASES_PER_REPORT;
        }
    }
}
