//! The run queue of one physical CPU: its vCPUs and the events that move them between running,
//! ready and blocked. Which vCPU runs next is decided in `policy`.

use heapless::Vec;

use super::entry::{Entry, Place, Tickets};
use super::{SchedError, VcpuId, VcpuState, MAX_VCPUS};

/// The vCPUs of one physical CPU (see the module documentation for the rules and the calls the
/// hypervisor makes). Every method runs in time bounded by `MAX_VCPUS` and never allocates.
#[derive(Debug)]
pub struct RunQueue {
    pub(super) slice: u64,
    pub(super) entries: Vec<Entry, MAX_VCPUS>,
    pub(super) tickets: Tickets,
}

impl RunQueue {
    /// An empty queue whose vCPUs share a priority level in turns of `slice` counter ticks
    /// (at least one).
    pub fn new(slice: u64) -> RunQueue {
        RunQueue {
            slice: slice.max(1),
            entries: Vec::new(),
            tickets: Tickets::new(),
        }
    }

    /// Adds a ready vCPU at the tail of its level; a higher `priority` runs first.
    pub fn add(&mut self, vcpu: VcpuId, priority: u8) -> Result<(), SchedError> {
        if self.find(vcpu).is_some() {
            return Err(SchedError::AlreadyQueued(vcpu));
        }
        let place = self.ready_at_tail();
        let entry = Entry {
            vcpu,
            priority,
            place,
        };
        self.entries.push(entry).map_err(|_| SchedError::Full)
    }

    /// Takes a vCPU out for good (its VM stopped); if it was running, nothing runs until the
    /// next `pick`.
    pub fn remove(&mut self, vcpu: VcpuId) -> Result<(), SchedError> {
        let index = self.find(vcpu).ok_or(SchedError::UnknownVcpu(vcpu))?;
        self.entries.swap_remove(index);
        Ok(())
    }

    /// WFI: the vCPU waits until `wake` or until the counter reaches `deadline`, its timer's
    /// deadline (`None`: only an interrupt wakes it). A running vCPU gives up the CPU and the
    /// rest of its slice; a deadline already past wakes it at the next `pick`.
    pub fn block(&mut self, vcpu: VcpuId, deadline: Option<u64>) -> Result<(), SchedError> {
        self.entry_mut(vcpu)?.place = Place::Blocked { deadline };
        Ok(())
    }

    /// An interrupt became pending for the vCPU: a blocked vCPU becomes ready at the tail of
    /// its level with a fresh slice; a ready or running one is left as it is.
    pub fn wake(&mut self, vcpu: VcpuId) -> Result<(), SchedError> {
        let index = self.find(vcpu).ok_or(SchedError::UnknownVcpu(vcpu))?;
        if self.entries[index].state() == VcpuState::Blocked {
            self.entries[index].place = self.ready_at_tail();
        }
        Ok(())
    }

    /// The running vCPU gives up the CPU: it goes to the tail of its level with a fresh slice
    /// (POSIX `sched_yield`), so it runs again at the next `pick` only if no peer is ready.
    pub fn yield_now(&mut self) -> Result<(), SchedError> {
        let index = self
            .entries
            .iter()
            .position(|e| e.state() == VcpuState::Running)
            .ok_or(SchedError::Idle)?;
        self.entries[index].place = self.ready_at_tail();
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
        let entry = self.entry_mut(vcpu)?;
        if entry.state() == VcpuState::Blocked {
            entry.place = Place::Blocked { deadline };
        }
        Ok(())
    }

    /// Makes ready, earliest deadline first, every blocked vCPU whose deadline the counter
    /// has reached at `now`.
    pub fn expire(&mut self, now: u64) {
        while let Some(index) = self.earliest_due(now) {
            self.entries[index].place = self.ready_at_tail();
        }
    }

    /// The vCPU on the CPU, if any.
    pub fn running(&self) -> Option<VcpuId> {
        self.entries
            .iter()
            .find(|e| e.state() == VcpuState::Running)
            .map(|e| e.vcpu)
    }

    /// Where `vcpu` stands; `None` if it is not in this queue.
    pub fn state(&self, vcpu: VcpuId) -> Option<VcpuState> {
        self.find(vcpu).map(|i| self.entries[i].state())
    }

    fn find(&self, vcpu: VcpuId) -> Option<usize> {
        self.entries.iter().position(|e| e.vcpu == vcpu)
    }

    /// The blocked vCPU with the earliest deadline reached at `now` (ties: lowest `VcpuId`).
    fn earliest_due(&self, now: u64) -> Option<usize> {
        (0..self.entries.len())
            .filter(|&i| self.entries[i].due(now))
            .min_by_key(|&i| (self.entries[i].wake_deadline(), self.entries[i].vcpu))
    }

    fn entry_mut(&mut self, vcpu: VcpuId) -> Result<&mut Entry, SchedError> {
        self.entries
            .iter_mut()
            .find(|e| e.vcpu == vcpu)
            .ok_or(SchedError::UnknownVcpu(vcpu))
    }

    /// A place at the tail of a level, with a fresh slice.
    pub(super) fn ready_at_tail(&mut self) -> Place {
        Place::Ready {
            order: self.tickets.tail(),
            slice_left: self.slice,
        }
    }
}
