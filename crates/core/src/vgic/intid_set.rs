//! A set of INTIDs below 1024 as a two-level bitmap: 32-bit words plus a summary word whose bit
//! `w` says word `w` is not empty. Each vCPU keeps its pending and its active interrupts in one
//! (`VcpuIrqs`), so choosing list registers and waking from WFI cost time in proportion to the
//! interrupts that are pending or active, never to all the INTIDs of the VM: a full scan of a
//! VM with 256 SPIs cost microseconds on each entry after a change, which a real-time guest
//! sees in its dispatch latency. It owns only the bits; what "pending" means lives in `state`
//! and which bits must be set is `Vgic::refresh`'s decision.

/// Words of 32 INTIDs: the summary word has one bit per word.
const WORDS: usize = 32;

/// A set of INTIDs 0 to 1023.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IntidSet {
    words: [u32; WORDS],
    /// Bit `w` is set exactly when `words[w]` is not zero.
    summary: u32,
}

impl IntidSet {
    /// Adds `intid` when `member`, removes it otherwise. INTIDs from 1024 are ignored.
    pub fn set(&mut self, intid: u32, member: bool) {
        let w = (intid / 32) as usize;
        let Some(word) = self.words.get_mut(w) else {
            return;
        };
        let bit = 1 << (intid % 32);
        *word = (*word & !bit) | if member { bit } else { 0 };
        self.summary = (self.summary & !(1 << w)) | (u32::from(*word != 0) << w);
    }

    /// Whether `intid` is a member (never for an INTID from 1024).
    #[inline]
    pub fn contains(&self, intid: u32) -> bool {
        self.words
            .get((intid / 32) as usize)
            .is_some_and(|word| word & (1 << (intid % 32)) != 0)
    }

    /// Whether the set has no member other than `intid` (one or two word compares, however
    /// many INTIDs the VM has).
    #[inline]
    pub fn has_none_but(&self, intid: u32) -> bool {
        let w = intid / 32;
        match self.summary {
            0 => true,
            summary if w < 32 && summary == 1 << w => self
                .words
                .get(w as usize)
                .is_some_and(|word| word & !(1 << (intid % 32)) == 0),
            _ => false,
        }
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.summary == 0
    }

    /// The members, lowest first.
    pub(crate) fn iter(&self) -> Members<'_> {
        Members::new(self, self)
    }

    /// The members of `self` or `other`, lowest first, each once.
    pub(crate) fn union<'a>(&'a self, other: &'a IntidSet) -> Members<'a> {
        Members::new(self, other)
    }
}

/// The members of the union of two sets, lowest first; costs one step per non-empty word and
/// one per member.
pub(crate) struct Members<'a> {
    a: &'a IntidSet,
    b: &'a IntidSet,
    /// Words not visited yet.
    summary: u32,
    /// The unvisited members of the current word, and its first INTID.
    word: u32,
    base: u32,
}

impl<'a> Members<'a> {
    fn new(a: &'a IntidSet, b: &'a IntidSet) -> Self {
        Members {
            a,
            b,
            summary: a.summary | b.summary,
            word: 0,
            base: 0,
        }
    }
}

impl Iterator for Members<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        while self.word == 0 {
            if self.summary == 0 {
                return None;
            }
            let w = self.summary.trailing_zeros();
            self.summary &= self.summary - 1;
            let word = |set: &IntidSet| set.words.get(w as usize).copied().unwrap_or(0);
            self.word = word(self.a) | word(self.b);
            self.base = w * 32;
        }
        let bit = self.word.trailing_zeros();
        self.word &= self.word - 1;
        Some(self.base + bit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn set_of(intids: &[u32]) -> IntidSet {
        let mut s = IntidSet::default();
        for &i in intids {
            s.set(i, true);
        }
        s
    }

    #[test]
    fn members_come_lowest_first_and_removal_empties_the_summary() {
        let mut s = set_of(&[70, 3, 64, 1023, 31, 32, 1024, 5000]);
        assert_eq!(s.iter().collect::<Vec<_>>(), [3, 31, 32, 64, 70, 1023]);
        for i in [3, 31, 32, 64, 70, 1023] {
            s.set(i, false);
        }
        assert_eq!(s, IntidSet::default(), "no stale summary bit");
    }

    #[test]
    fn a_union_lists_each_member_once() {
        let a = set_of(&[1, 40, 41, 300]);
        let b = set_of(&[40, 2, 900]);
        assert_eq!(a.union(&b).collect::<Vec<_>>(), [1, 2, 40, 41, 300, 900]);
        assert_eq!(IntidSet::default().iter().count(), 0);
    }

    #[test]
    fn clearing_one_bit_keeps_the_rest_of_its_word() {
        let mut s = set_of(&[33, 34]);
        s.set(33, false);
        assert_eq!(s.iter().collect::<Vec<_>>(), [34]);
        s.set(34, false);
        s.set(34, false);
        assert_eq!(s, IntidSet::default());
    }

    #[test]
    fn none_but_one_member_is_seen_from_the_summary() {
        assert!(IntidSet::default().is_empty());
        assert!(IntidSet::default().has_none_but(27));
        assert!(set_of(&[27]).has_none_but(27));
        assert!(!set_of(&[27]).is_empty());
        assert!(
            !set_of(&[27]).has_none_but(26),
            "another member of its word"
        );
        assert!(!set_of(&[27]).has_none_but(59), "a member of another word");
        assert!(!set_of(&[27, 28]).has_none_but(27), "two in one word");
        assert!(!set_of(&[27, 40]).has_none_but(27), "two words");
        assert!(!set_of(&[1023]).has_none_but(1024), "beyond the set");
        assert!(set_of(&[]).has_none_but(u32::MAX));
    }

    #[test]
    fn membership_is_one_lookup() {
        let s = set_of(&[0, 27, 33, 1023]);
        for i in [0, 27, 33, 1023] {
            assert!(s.contains(i));
        }
        for i in [1, 26, 28, 32, 1022, 1024, u32::MAX] {
            assert!(!s.contains(i), "{i}");
        }
    }
}
