//! Which of a CPU's vCPUs each forwarded physical interrupt belongs to: a table indexed by
//! INTID, so the interrupt path finds an owner in one load, never by scanning the CPU's VMs
//! or their lists of forwarded interrupts. The hypervisor rebuilds it whenever the set of
//! vCPUs on the CPU changes (a VM starts, stops or a vCPU migrates), which is rare; looking
//! up happens on every physical interrupt. It owns plain data only and never panics.

/// INTIDs 0 to 1019: 1020 to 1023 are special and never forwarded.
pub const OWNED_INTIDS: usize = 1020;

/// The most owners a table can name (positions 0 to 254; 255 marks "none").
pub const MAX_OWNERS: usize = NONE as usize;

const NONE: u8 = u8::MAX;

/// A forwarded INTID → the position of the vCPU that owns it.
#[derive(Clone)]
pub struct OwnerTable {
    owners: [u8; OWNED_INTIDS],
}

impl Default for OwnerTable {
    fn default() -> Self {
        OwnerTable {
            owners: [NONE; OWNED_INTIDS],
        }
    }
}

impl OwnerTable {
    /// Forgets every owner.
    pub fn clear(&mut self) {
        self.owners.fill(NONE);
    }

    /// Gives `intid` to `owner` unless it already has one (the first claim wins, as the
    /// configuration's order does). False when the INTID or the owner is out of range, or
    /// it was taken.
    pub fn claim(&mut self, intid: u32, owner: usize) -> bool {
        let Ok(owner) = u8::try_from(owner) else {
            return false;
        };
        match self.owners.get_mut(intid as usize) {
            Some(slot) if *slot == NONE && owner != NONE => {
                *slot = owner;
                true
            }
            _ => false,
        }
    }

    /// The owner of `intid`, if it is forwarded.
    #[inline]
    pub fn owner(&self, intid: u32) -> Option<usize> {
        match self.owners.get(intid as usize) {
            Some(&owner) if owner != NONE => Some(usize::from(owner)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_found_by_intid_and_the_first_claim_wins() {
        let mut table = OwnerTable::default();
        assert!(table.claim(27, 0));
        assert!(table.claim(40, 2));
        assert!(!table.claim(40, 1), "already owned");
        assert_eq!(table.owner(27), Some(0));
        assert_eq!(table.owner(40), Some(2));
        assert_eq!(table.owner(41), None);
        table.clear();
        assert_eq!(table.owner(27), None);
        assert!(table.claim(40, 1));
        assert_eq!(table.owner(40), Some(1));
    }

    #[test]
    fn out_of_range_intids_and_owners_are_refused() {
        let mut table = OwnerTable::default();
        assert!(!table.claim(1020, 0));
        assert!(!table.claim(u32::MAX, 0));
        assert!(!table.claim(33, MAX_OWNERS));
        assert!(!table.claim(33, usize::MAX));
        assert!(table.claim(1019, MAX_OWNERS - 1));
        assert_eq!(table.owner(1019), Some(MAX_OWNERS - 1));
        assert_eq!(table.owner(1020), None);
        assert_eq!(table.owner(u32::MAX), None);
    }
}
