//! The run queue of one physical CPU: its vCPUs and the events that move them between running,
//! ready and blocked. Which vCPU runs next is decided in `policy`.

use heapless::Vec;

use super::entry::{Entry, Place, Tickets};
use super::ids::IdIndex;
use super::{SchedError, VcpuId, VcpuState, MAX_VCPUS};

/// A set of positions in `RunQueue::entries`, bit i for `entries[i]`.
pub(super) type Mask = u32;
const _: () = assert!(MAX_VCPUS <= Mask::BITS as usize);

/// The vCPUs of one physical CPU (see the module documentation for the rules and the calls the
/// hypervisor makes). Every method runs in time bounded by `MAX_VCPUS` and never allocates.
///
/// The entries are kept by priority, highest first, and the places they stand in are also
/// kept as bit sets (`ready`, `timed`, `running`, `soonest`), so a decision reads a few
/// words whatever the number of vCPUs: only finding a vCPU by its id, and the events that
/// change who shares the CPU (`add`, `remove`) or wake a vCPU by its deadline, look at the
/// entries one by one; a vCPU is found by its id through an `IdIndex`.
#[derive(Clone, Debug)]
pub struct RunQueue {
    pub(super) slice: u64,
    /// By priority, highest first; within a priority in the order they were added.
    pub(super) entries: Vec<Entry, MAX_VCPUS>,
    pub(super) tickets: Tickets,
    /// The ready entries.
    pub(super) ready: Mask,
    /// The blocked entries with a deadline.
    pub(super) timed: Mask,
    /// The running entry.
    pub(super) running: Option<usize>,
    /// For each entry, the entries of its priority (itself included).
    pub(super) levels: [Mask; MAX_VCPUS],
    /// The earliest deadline of the `timed` entries; `u64::MAX` when there is none.
    pub(super) soonest: u64,
    /// The entry whose deadline `soonest` is (ties: the lowest `VcpuId`).
    pub(super) soonest_at: Option<usize>,
    /// Each entry's position by its id.
    index: IdIndex,
    /// Exactly two entries, of two priorities (entry 0 above entry 1): the shared CPU of a
    /// real-time VM and a GPOS, whose two usual switches `policy` decides by a shortcut.
    pub(super) pair: bool,
}

impl RunQueue {
    /// An empty queue whose vCPUs share a priority level in turns of `slice` counter ticks
    /// (at least one).
    pub fn new(slice: u64) -> RunQueue {
        RunQueue {
            slice: slice.max(1),
            entries: Vec::new(),
            tickets: Tickets::new(),
            ready: 0,
            timed: 0,
            running: None,
            levels: [0; MAX_VCPUS],
            soonest: u64::MAX,
            soonest_at: None,
            index: IdIndex::default(),
            pair: false,
        }
    }

    /// Adds a ready vCPU at the tail of its level; a higher `priority` runs first.
    pub fn add(&mut self, vcpu: VcpuId, priority: u8) -> Result<(), SchedError> {
        if self.find(vcpu).is_some() {
            return Err(SchedError::AlreadyQueued(vcpu));
        }
        if self.entries.is_full() {
            return Err(SchedError::Full);
        }
        let place = self.ready_at_tail();
        let entry = Entry {
            vcpu,
            priority,
            place,
        };
        let at = self
            .entries
            .iter()
            .position(|e| e.priority < priority)
            .unwrap_or(self.entries.len());
        self.entries
            .insert(at, entry)
            .map_err(|_| SchedError::Full)?;
        self.reindex();
        Ok(())
    }

    /// Takes a vCPU out for good (its VM stopped); if it was running, nothing runs until the
    /// next `pick`.
    pub fn remove(&mut self, vcpu: VcpuId) -> Result<(), SchedError> {
        let index = self.find(vcpu).ok_or(SchedError::UnknownVcpu(vcpu))?;
        self.entries.remove(index);
        self.reindex();
        Ok(())
    }

    /// WFI: the vCPU waits until `wake` or until the counter reaches `deadline`, its timer's
    /// deadline (`None`: only an interrupt wakes it). A running vCPU gives up the CPU and the
    /// rest of its slice; a deadline already past wakes it at the next `pick`.
    pub fn block(&mut self, vcpu: VcpuId, deadline: Option<u64>) -> Result<(), SchedError> {
        let index = self.find(vcpu).ok_or(SchedError::UnknownVcpu(vcpu))?;
        self.set_place(index, Place::Blocked { deadline });
        Ok(())
    }

    /// An interrupt became pending for the vCPU: a blocked vCPU becomes ready at the tail of
    /// its level with a fresh slice; a ready or running one is left as it is.
    pub fn wake(&mut self, vcpu: VcpuId) -> Result<(), SchedError> {
        let index = self.find(vcpu).ok_or(SchedError::UnknownVcpu(vcpu))?;
        if self.entries[index].state() == VcpuState::Blocked {
            let place = self.ready_at_tail();
            self.set_place(index, place);
        }
        Ok(())
    }

    /// The running vCPU gives up the CPU: it goes to the tail of its level with a fresh slice
    /// (POSIX `sched_yield`), so it runs again at the next `pick` only if no peer is ready.
    pub fn yield_now(&mut self) -> Result<(), SchedError> {
        let index = self.running.ok_or(SchedError::Idle)?;
        let place = self.ready_at_tail();
        self.set_place(index, place);
        Ok(())
    }

    /// Replaces the timer deadline of a blocked vCPU (`None`: its timer is disabled or
    /// masked), for a hypervisor that changes a saved timer on the vCPU's behalf. A ready or
    /// running vCPU is left as it is: only blocked vCPUs wake on a deadline, and `block` takes
    /// the deadline current when the vCPU stops.
    pub fn set_timer_deadline(
        &mut self,
        vcpu: VcpuId,
        deadline: Option<u64>,
    ) -> Result<(), SchedError> {
        let index = self.find(vcpu).ok_or(SchedError::UnknownVcpu(vcpu))?;
        if self.entries[index].state() == VcpuState::Blocked {
            self.set_place(index, Place::Blocked { deadline });
        }
        Ok(())
    }

    /// The vCPU leaves the CPU (the hypervisor switches it out) and its state is returned: a
    /// blocked one takes its timer's deadline now, `deadline()` (while it stayed loaded, its
    /// own timer was its wake-up), as `set_timer_deadline` would; a ready one (preempted) is
    /// left as it is and `deadline` is not called. One lookup for the switch path.
    pub fn leave(
        &mut self,
        vcpu: VcpuId,
        deadline: impl FnOnce() -> Option<u64>,
    ) -> Option<VcpuState> {
        let index = self.find(vcpu)?;
        let state = self.entries[index].state();
        if state == VcpuState::Blocked {
            self.set_place(
                index,
                Place::Blocked {
                    deadline: deadline(),
                },
            );
        }
        Some(state)
    }

    /// Makes ready, earliest deadline first, every blocked vCPU whose deadline the counter
    /// has reached at `now`.
    pub fn expire(&mut self, now: u64) {
        while self.soonest <= now {
            let Some(index) = self.soonest_at else {
                return;
            };
            let place = self.ready_at_tail();
            self.set_place(index, place);
        }
    }

    /// The vCPU on the CPU, if any.
    pub fn running(&self) -> Option<VcpuId> {
        self.running.map(|i| self.entries[i].vcpu)
    }

    /// Where `vcpu` stands; `None` if it is not in this queue.
    pub fn state(&self, vcpu: VcpuId) -> Option<VcpuState> {
        self.find(vcpu).map(|i| self.entries[i].state())
    }

    fn find(&self, vcpu: VcpuId) -> Option<usize> {
        self.index.get(vcpu)
    }

    /// Puts `entries[index]` in `place`, keeping the bit sets true.
    pub(super) fn set_place(&mut self, index: usize, place: Place) {
        let bit: Mask = 1 << index;
        self.entries[index].place = place;
        self.ready &= !bit;
        self.timed &= !bit;
        if self.running == Some(index) {
            self.running = None;
        }
        match place {
            Place::Ready { .. } => self.ready |= bit,
            Place::Running { .. } => self.running = Some(index),
            Place::Blocked { deadline: Some(_) } => self.timed |= bit,
            Place::Blocked { deadline: None } => {}
        }
        if self.soonest_at == Some(index) {
            // The earliest deadline moved or went: look for the next one.
            self.refresh_soonest();
            return;
        }
        if self.timed & bit != 0 && self.soonest_at.is_none_or(|s| self.earlier_than(index, s)) {
            self.soonest_at = Some(index);
        }
        self.soonest = self
            .soonest_at
            .and_then(|i| self.entries[i].wake_deadline())
            .unwrap_or(u64::MAX);
    }

    /// Finds the earliest deadline among the `timed` entries again (`soonest`, `soonest_at`).
    pub(super) fn refresh_soonest(&mut self) {
        self.soonest_at = positions(self.timed).fold(None, |best, i| match best {
            Some(b) if !self.earlier_than(i, b) => Some(b),
            _ => Some(i),
        });
        self.soonest = self
            .soonest_at
            .and_then(|i| self.entries[i].wake_deadline())
            .unwrap_or(u64::MAX);
    }

    /// Whether timed entry `a`'s deadline comes before timed entry `b`'s (ties: the lower
    /// `VcpuId` first).
    pub(super) fn earlier_than(&self, a: usize, b: usize) -> bool {
        let (da, db) = (
            self.entries[a].wake_deadline(),
            self.entries[b].wake_deadline(),
        );
        da < db || (da == db && self.entries[a].vcpu < self.entries[b].vcpu)
    }

    /// The earliest deadline of the entries of `set` (which must be `timed` ones).
    pub(super) fn earliest_deadline(&self, set: Mask) -> u64 {
        positions(set)
            .filter_map(|i| self.entries[i].wake_deadline())
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Rebuilds the bit sets after the entries moved.
    fn reindex(&mut self) {
        self.ready = 0;
        self.timed = 0;
        self.running = None;
        self.soonest = u64::MAX;
        self.soonest_at = None;
        self.levels = [0; MAX_VCPUS];
        self.index.clear();
        for index in 0..self.entries.len() {
            self.index.insert(self.entries[index].vcpu, index);
            let place = self.entries[index].place;
            self.set_place(index, place);
            self.levels[index] = (0..self.entries.len())
                .filter(|&j| self.entries[j].priority == self.entries[index].priority)
                .fold(0, |set, j| set | 1 << j);
        }
        self.pair = matches!(self.entries.as_slice(), [high, low] if high.priority > low.priority);
    }

    /// A place at the tail of a level, with a fresh slice.
    pub(super) fn ready_at_tail(&mut self) -> Place {
        at_tail(&mut self.tickets, self.slice)
    }
}

/// A place at the tail of a level, with a fresh `slice`, its ticket drawn from `tickets`.
pub(super) fn at_tail(tickets: &mut Tickets, slice: u64) -> Place {
    Place::Ready {
        order: tickets.tail(),
        slice_left: slice,
    }
}

/// The positions in `set`, lowest (highest priority) first.
pub(super) fn positions(set: Mask) -> impl Iterator<Item = usize> {
    let mut left = set;
    core::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let index = left.trailing_zeros() as usize;
        left &= left - 1;
        Some(index)
    })
}
