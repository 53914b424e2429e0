//! One vCPU's record in a run queue and the tickets that order each priority level's FIFO.
//! Plain data: the rules that move a vCPU between places live in `queue` and `policy`.

use super::{VcpuId, VcpuState};

/// Where a vCPU stands, with what that place needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// On the CPU; `slice_end` is when a ready peer of its priority may take the CPU.
    Running { slice_end: u64 },
    /// Waiting for its turn: served in increasing `order` within its priority, then runs for
    /// `slice_left` ticks.
    Ready { order: u64, slice_left: u64 },
    /// In WFI, until an interrupt or until the counter reaches `deadline`, the vCPU's own
    /// timer deadline (its timer is saved away while it does not run).
    Blocked { deadline: Option<u64> },
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub(super) vcpu: VcpuId,
    pub(super) priority: u8,
    pub(super) place: Place,
}

impl Entry {
    pub(super) fn state(&self) -> VcpuState {
        match self.place {
            Place::Running { .. } => VcpuState::Running,
            Place::Ready { .. } => VcpuState::Ready,
            Place::Blocked { .. } => VcpuState::Blocked,
        }
    }

    /// The deadline that wakes this vCPU, if it is blocked and has one.
    pub(super) fn wake_deadline(&self) -> Option<u64> {
        match self.place {
            Place::Blocked { deadline } => deadline,
            _ => None,
        }
    }

    /// Whether the vCPU is blocked with a deadline already reached at `now`.
    pub(super) fn due(&self, now: u64) -> bool {
        self.wake_deadline().is_some_and(|d| d <= now)
    }

    /// Its FIFO ticket if it is ready.
    pub(super) fn ready_order(&self) -> Option<u64> {
        match self.place {
            Place::Ready { order, .. } => Some(order),
            _ => None,
        }
    }
}

/// Hands out FIFO positions: tail tickets count up from the middle of the `u64` range, head
/// tickets count down from just below it, so a head ticket sorts before every ticket handed out
/// so far. Each side lasts 2^63 operations (centuries at one per nanosecond); it saturates rather
/// than wrap, and ties are then broken by `VcpuId`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tickets {
    next_tail: u64,
    next_head: u64,
}

const MIDDLE: u64 = 1 << 63;

impl Tickets {
    pub(super) const fn new() -> Tickets {
        Tickets {
            next_tail: MIDDLE,
            next_head: MIDDLE - 1,
        }
    }

    pub(super) fn tail(&mut self) -> u64 {
        let t = self.next_tail;
        self.next_tail = t.saturating_add(1);
        t
    }

    pub(super) fn head(&mut self) -> u64 {
        let t = self.next_head;
        self.next_head = t.saturating_sub(1);
        t
    }
}
