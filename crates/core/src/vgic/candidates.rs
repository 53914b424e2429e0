//! The interrupts that may need a list register, so choosing them does not scan every INTID
//! of the VM: flushing a VM with 256 SPIs used to cost tens of microseconds on each entry
//! after a change, which a real-time guest sees in its dispatch latency.
//!
//! The set is conservative: every interrupt that is pending or active (in any vCPU's bank for
//! SGIs and PPIs) has its INTID in it; an INTID may stay in it after its interrupt went idle
//! until `Vgic::prune_candidates` drops it. Whatever may change an interrupt's state marks it
//! (`Vgic::irq_mut`, SGIs), and emulated MMIO, which edits whole banks, asks for a full
//! rescan instead. It owns only the bits; the rules of what is pending live in `state`.

use super::MAX_SPIS;
use super::PRIVATE_IRQS;

const WORDS: usize = ((PRIVATE_IRQS + MAX_SPIS) as usize).div_ceil(64);

/// A set of INTIDs, or "every INTID" until the next rebuild.
#[derive(Clone, Debug)]
pub(crate) struct Candidates {
    bits: [u64; WORDS],
    /// Every INTID counts as a candidate (after MMIO emulation, or at reset).
    everything: bool,
}

impl Candidates {
    pub(crate) fn new() -> Self {
        Candidates {
            bits: [0; WORDS],
            everything: true,
        }
    }

    pub(crate) fn mark(&mut self, intid: u32) {
        if let Some(word) = self.bits.get_mut(intid as usize / 64) {
            *word |= 1 << (intid % 64);
        }
    }

    /// Counts every INTID until the next `rebuild`.
    pub(crate) fn mark_all(&mut self) {
        self.everything = true;
    }

    pub(crate) fn needs_rebuild(&self) -> bool {
        self.everything
    }

    /// Replaces the set with exactly the INTIDs for which `busy` holds, below `limit`.
    pub(crate) fn rebuild(&mut self, limit: u32, busy: impl Fn(u32) -> bool) {
        self.bits = [0; WORDS];
        self.everything = false;
        for intid in (0..limit).filter(|&i| busy(i)) {
            self.mark(intid);
        }
    }

    /// Drops the INTIDs below `limit` for which `busy` no longer holds.
    pub(crate) fn retain(&mut self, limit: u32, busy: impl Fn(u32) -> bool) {
        let words = (limit as usize).div_ceil(64).min(WORDS);
        for (w, word) in self.bits[..words].iter_mut().enumerate() {
            for bit in Bits(*word) {
                if !busy((w * 64) as u32 + bit) {
                    *word &= !(1 << bit);
                }
            }
        }
    }

    /// The INTIDs of the set below `limit`, in increasing order (all of them while a rebuild
    /// is due).
    pub(crate) fn iter(&self, limit: u32) -> Members<'_> {
        let words = (limit as usize).div_ceil(64).min(WORDS);
        Members {
            words: &self.bits[..words],
            everything: self.everything,
            limit,
            next_word: 0,
            current: Bits(0),
        }
    }
}

/// The members of a candidate set, lowest first (`Candidates::iter`).
pub(crate) struct Members<'a> {
    words: &'a [u64],
    everything: bool,
    limit: u32,
    next_word: usize,
    current: Bits,
}

impl Iterator for Members<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        loop {
            if let Some(bit) = self.current.next() {
                let intid = (self.next_word as u32 - 1) * 64 + bit;
                return (intid < self.limit).then_some(intid);
            }
            let &word = self.words.get(self.next_word)?;
            self.next_word += 1;
            self.current = Bits(if self.everything { u64::MAX } else { word });
        }
    }
}

/// The set bits of one word, lowest first.
struct Bits(u64);

impl Iterator for Bits {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            return None;
        }
        let bit = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(bit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn marks_iterate_in_order_below_the_limit() {
        let mut c = Candidates::new();
        c.rebuild(100, |_| false);
        for i in [70, 3, 64, 99, 200] {
            c.mark(i);
        }
        assert_eq!(c.iter(100).collect::<Vec<_>>(), [3, 64, 70, 99]);
        c.retain(1000, |i| i != 64);
        assert_eq!(c.iter(1000).collect::<Vec<_>>(), [3, 70, 99, 200]);
        assert_eq!(c.iter(200).collect::<Vec<_>>(), [3, 70, 99]);
    }

    #[test]
    fn everything_until_rebuilt() {
        let mut c = Candidates::new();
        assert_eq!(c.iter(40).count(), 40);
        c.rebuild(40, |i| i % 10 == 0);
        assert_eq!(c.iter(40).collect::<Vec<_>>(), [0, 10, 20, 30]);
        c.mark_all();
        assert!(c.needs_rebuild());
        assert_eq!(c.iter(5).count(), 5);
    }
}
