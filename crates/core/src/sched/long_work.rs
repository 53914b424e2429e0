//! When EL2 work too long to hide in a timer advance may run on a CPU that a real-time VM
//! shares: a VM's stop for good (its counters report printed, its vCPUs and memory dropped,
//! about 40,000 instructions on QEMU at 4f7f649) runs with the CPU's interrupts masked, and
//! Partita does not preempt itself, so begun just before the real-time VM's deadline it
//! would delay that VM's tick by all of it. It waits instead until the run queue's next
//! event is far enough away. A VM's console line (cleaned, tagged and written to the UART,
//! up to about 5,000 instructions) waits the same way, for less room (`has_room`).
//!
//! The CPU's next event is the run queue's (or the EL2 timer's, which holds it), and, on a
//! CPU where a real-time VM owns the EL1 physical timer, that timer's deadline too: the VM
//! keeps its tick there, out of the run queue's sight (`earliest`).

/// The room before the CPU's next event a VM's stop needs: five times what it costs on
/// QEMU, for slower cores.
pub const STOP_ROOM_MICROS: u32 = 200;

/// The longest a stop waits for room: a real-time VM whose period leaves less never keeps
/// another VM from ending.
pub const STOP_WAIT_MICROS: u32 = 100_000;

/// The room before the CPU's next event a VM's console line needs to be printed: four
/// times the longest one costs on QEMU (about 5,000 instructions at 4f7f649).
pub const LINE_ROOM_MICROS: u32 = 20;

/// Whether work that needs `room` ticks fits at `now` before the CPU's next event
/// `next_event` (`None`: nothing to wait for); an event due or passed leaves none.
pub fn has_room(now: u64, next_event: Option<u64>, room: u64) -> bool {
    next_event.is_none_or(|event| event.saturating_sub(now) >= room)
}

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

/// The earlier of two events (`None`: no event), the CPU's next one when both may take it.
pub fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (event, None) | (None, event) => event,
    }
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
        has_room(now, next_event, self.room) || now.saturating_sub(self.since) >= self.longest
    }
}

#[cfg(test)]
mod tests {
    use super::{earliest, has_room, LongWork};

    #[test]
    fn the_next_event_is_the_earlier_of_two() {
        assert_eq!(earliest(None, None), None, "no event at all");
        assert_eq!(earliest(Some(7), None), Some(7));
        assert_eq!(earliest(None, Some(7)), Some(7));
        assert_eq!(earliest(Some(9), Some(7)), Some(7));
        assert_eq!(earliest(Some(7), Some(9)), Some(7));
        assert_eq!(earliest(Some(0), Some(u64::MAX)), Some(0));
    }

    #[test]
    fn room_is_the_time_left_before_the_next_event() {
        assert!(has_room(1_000, None, 50), "nothing to wait for");
        assert!(has_room(1_000, Some(1_050), 50), "exactly the room");
        assert!(!has_room(1_000, Some(1_049), 50), "one tick short");
        assert!(has_room(1_000, Some(1_000), 0), "work that needs no room");
        assert!(!has_room(1_000, Some(1_000), 1), "the event is due");
        assert!(!has_room(1_200, Some(900), 1), "the event has passed");
        assert!(has_room(0, Some(u64::MAX), u64::MAX));
    }

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
