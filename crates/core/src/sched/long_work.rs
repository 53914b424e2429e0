//! When EL2 work too long to hide in a timer advance may run on a CPU that a real-time VM
//! shares: a VM's stop for good (its counters report printed, its vCPUs and memory dropped,
//! about 40,000 instructions on QEMU at 4f7f649) runs with the CPU's interrupts masked, and
//! Partita does not preempt itself, so begun just before the real-time VM's deadline it
//! would delay that VM's tick by all of it. It waits instead until the run queue's next
//! event is far enough away.

/// The room before the CPU's next event a VM's stop needs: five times what it costs on
/// QEMU, for slower cores.
pub const STOP_ROOM_MICROS: u32 = 200;

/// The longest a stop waits for room: a real-time VM whose period leaves less never keeps
/// another VM from ending.
pub const STOP_WAIT_MICROS: u32 = 100_000;

/// Long EL2 work that waits for room (`fits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongWork {
    /// When it was asked for (counter ticks).
    since: u64,
    /// Ticks of room it needs before the next event.
    room: u64,
    /// Ticks after `since` at which it runs whatever the room.
    longest: u64,
}

impl LongWork {
    /// Work asked for at `since` that needs `room` ticks before the CPU's next event and
    /// waits at most `longest` ticks for them.
    pub const fn new(since: u64, room: u64, longest: u64) -> Self {
        LongWork {
            since,
            room,
            longest,
        }
    }

    /// Whether it runs at `now`, the run queue's next event being `next_event`
    /// (`RunQueue::next_event`: when a vCPU that outranks the running one may take the
    /// CPU; `None`: nothing to wait for): it has the room, or it has waited long enough.
    pub fn fits(&self, now: u64, next_event: Option<u64>) -> bool {
        let roomy = next_event.is_none_or(|event| event.saturating_sub(now) >= self.room);
        roomy || now.saturating_sub(self.since) >= self.longest
    }
}

#[cfg(test)]
mod tests {
    use super::LongWork;

    #[test]
    fn long_work_runs_with_room_before_the_next_event() {
        let work = LongWork::new(1_000, 50, 500);
        assert!(work.fits(1_000, None), "nothing to wait for");
        assert!(work.fits(1_000, Some(1_050)), "exactly the room");
        assert!(work.fits(1_000, Some(9_000)));
        assert!(!work.fits(1_000, Some(1_049)), "one tick short");
        assert!(!work.fits(1_000, Some(1_000)), "the event is due");
        assert!(!work.fits(1_200, Some(900)), "the event has passed");
    }

    #[test]
    fn long_work_waits_no_longer_than_its_bound() {
        let work = LongWork::new(1_000, 50, 500);
        assert!(!work.fits(1_499, Some(1_500)));
        assert!(work.fits(1_500, Some(1_500)), "waited its longest");
        assert!(work.fits(u64::MAX, Some(u64::MAX)));
        assert!(
            !work.fits(0, Some(10)),
            "a clock read before `since` never runs it early"
        );
    }
}
