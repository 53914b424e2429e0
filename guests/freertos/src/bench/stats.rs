//! Latency statistics: a static buffer of samples (ns, one writer), their summary (min,
//! mean, p99, p99.9, max by the nearest-rank method) and a histogram with quarter-octave
//! buckets: values below 4 ns get 1-ns buckets, and every power of two [2^k, 2^(k+1))
//! from 4 ns on is split into four equal buckets, so the bucket edges are fixed (the same
//! for every run and configuration) and evenly spaced on a logarithmic axis.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

/// The most samples an experiment keeps (the full-mode sample count).
pub const MAX_SAMPLES: usize = 100_000;

/// Room for `MAX_SAMPLES` samples of up to 2^32 - 1 ns, handed out once.
pub struct SampleBuffer {
    samples: UnsafeCell<[u32; MAX_SAMPLES]>,
    claimed: AtomicBool,
}

// SAFETY: the samples are reachable only through `claim`, which hands out the one
// mutable reference at most once.
unsafe impl Sync for SampleBuffer {}

impl SampleBuffer {
    pub const fn new() -> Self {
        Self {
            samples: UnsafeCell::new([0; MAX_SAMPLES]),
            claimed: AtomicBool::new(false),
        }
    }

    /// The buffer, for the one task that fills it; None once claimed.
    #[expect(
        clippy::mut_from_ref,
        reason = "the claimed flag hands the mutable reference out at most once"
    )]
    pub fn claim(&'static self) -> Option<&'static mut [u32; MAX_SAMPLES]> {
        if self.claimed.swap(true, Ordering::AcqRel) {
            return None;
        }
        // SAFETY: this is the first and only claim, so the reference is exclusive.
        Some(unsafe { &mut *self.samples.get() })
    }
}

/// Summary statistics in ns.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    pub min: u64,
    pub mean: u64,
    pub p99: u64,
    pub p99_9: u64,
    pub max: u64,
}

/// Sorts `samples` and summarizes them; None when there are none.
pub fn summarize(samples: &mut [u32]) -> Option<Summary> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_unstable();
    let total: u64 = samples.iter().map(|&s| u64::from(s)).sum();
    let count = samples.len() as u64;
    Some(Summary {
        min: u64::from(samples[0]),
        mean: total / count,
        p99: u64::from(nearest_rank(samples, 990)),
        p99_9: u64::from(nearest_rank(samples, 999)),
        max: u64::from(samples[samples.len() - 1]),
    })
}

/// The smallest sample with at least `per_mille`/1000 of the samples at or below it.
fn nearest_rank(sorted: &[u32], per_mille: usize) -> u32 {
    let rank = (sorted.len() * per_mille).div_ceil(1000).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

/// The bucket [lo, hi) holding `value`.
pub fn bucket(value: u64) -> (u64, u64) {
    if value < 4 {
        return (value, value + 1);
    }
    let octave = 63 - value.leading_zeros();
    let width = 1u64 << (octave - 2);
    let lo = value & !(width - 1);
    (lo, lo + width)
}

/// Calls `emit(lo, hi, count)` for every non-empty bucket of `sorted`, in order.
pub fn histogram(sorted: &[u32], mut emit: impl FnMut(u64, u64, u64)) {
    let mut current: Option<((u64, u64), u64)> = None;
    for &sample in sorted {
        let range = bucket(u64::from(sample));
        current = match current {
            Some((open, count)) if open == range => Some((open, count + 1)),
            Some(((lo, hi), count)) => {
                emit(lo, hi, count);
                Some((range, 1))
            }
            None => Some((range, 1)),
        };
    }
    if let Some(((lo, hi), count)) = current {
        emit(lo, hi, count);
    }
}
