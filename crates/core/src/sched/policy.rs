//! The scheduling decision of a run queue: who runs after `pick`, whether the running vCPU must
//! give way now, and when the decision can next change (the EL2 timer's next deadline).

use super::entry::{Place, Tickets};
use super::queue::{at_tail, positions, Mask, RunQueue};
use super::{Decision, HandedOver, VcpuId};

/// The earlier of two times, either of which may be missing.
fn earlier(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The place of a running vCPU whose slice ends at `slice_end` when it loses the CPU at
/// `now`: with slice left it was preempted, so it goes back to the head of its level with
/// the rest of its slice (at most `slice`; POSIX); with its slice used up it goes to the
/// tail with a fresh one. Its ticket comes from `tickets`.
fn descheduled(tickets: &mut Tickets, slice: u64, slice_end: u64, now: u64) -> Place {
    match slice_end.checked_sub(now) {
        Some(slice_left) if slice_left > 0 => Place::Ready {
            order: tickets.head(),
            slice_left: slice_left.min(slice),
        },
        _ => at_tail(tickets, slice),
    }
}

/// The running vCPU as the policy sees it.
#[derive(Clone, Copy)]
struct Runner {
    index: usize,
    priority: u8,
    slice_end: u64,
}

impl RunQueue {
    /// Wakes the vCPUs whose deadline has passed (`expire`), then gives the CPU to the
    /// highest-priority ready vCPU: the running one keeps it unless a higher priority is ready
    /// or its slice is over and a peer of its priority is ready.
    pub fn pick(&mut self, now: u64) -> Decision {
        self.expire(now);
        if self.should_preempt(now) {
            self.deschedule(now);
            if let Some(index) = self.head() {
                self.dispatch(index, now);
            }
        }
        let runner = self.runner();
        Decision {
            run: runner.map(|r| self.entries[r.index].vcpu),
            slice_end: runner
                .filter(|r| self.has_ready_peer(r.index))
                .map(|r| r.slice_end),
        }
    }

    /// The EL2 timer fired at `now` on a CPU whose running vCPU is outranked by the blocked
    /// vCPU whose deadline came (the real-time VM's tick beside a GPOS): when that vCPU is
    /// the only one due and no ready vCPU stands at or above its priority, `pick(now)` would
    /// do nothing but hand it the CPU, so this does just that, with no search, and returns
    /// it. `None` in every other case, the queue unchanged: then `pick`. The queue is left
    /// as `pick` leaves it (the preempted vCPU at the head of its level with the rest of its
    /// slice, the new one running with a fresh slice); only the FIFO ticket `expire` would
    /// have drawn for the woken vCPU is not drawn, which changes no order. The next event
    /// comes with it: none when no other vCPU waits for a deadline (the woken one outranks
    /// every ready one and has no ready peer), else `next_event(now)`.
    pub fn preempt_at_deadline(&mut self, now: u64) -> Option<HandedOver> {
        match self.pair_preempt_at_deadline(now) {
            Some(handed) => Some(handed),
            None => self.preempt_at_deadline_general(now),
        }
    }

    /// `preempt_at_deadline` in any state, the pair's shortcut aside. Out of line: its
    /// registers would make the shortcut save six pairs of them.
    #[inline(never)]
    pub(super) fn preempt_at_deadline_general(&mut self, now: u64) -> Option<HandedOver> {
        let r = self.runner()?;
        let due = self.soonest_at.filter(|_| self.soonest <= now)?;
        let priority = self.entries[due].priority;
        let bit: Mask = 1 << due;
        let others = self.timed & !bit;
        let ready_top = self.first(self.ready).map(|i| self.entries[i].priority);
        if priority <= r.priority
            || ready_top >= Some(priority)
            || (others != 0 && self.earliest_deadline(others) <= now)
        {
            return None;
        }
        let place = descheduled(&mut self.tickets, self.slice, r.slice_end, now);
        self.entries[r.index].place = place;
        self.ready |= 1 << r.index;
        self.entries[due].place = Place::Running {
            slice_end: now.saturating_add(self.slice),
        };
        self.running = Some(due);
        self.timed = others;
        self.refresh_soonest();
        let next_event = if others == 0 {
            None
        } else {
            self.next_event(now)
        };
        Some(HandedOver {
            run: self.entries[due].vcpu,
            next_event,
        })
    }

    /// The running vCPU waits in WFI at `now` (its timer's deadline is `deadline`) on a CPU
    /// where a ready vCPU takes over (the GPOS while the real-time VM waits for its next
    /// tick). When no blocked vCPU is due and a ready one stands alone first in line, this
    /// is `block(running, None)`, `pick(now)` and `leave(running, || deadline)` in one
    /// step with no search: the running vCPU is blocked with its deadline (it leaves the
    /// CPU now), and the ready vCPU `pick` would choose runs and is returned. `None` in
    /// every other case (nothing would run, a deadline is due, peers wait in one level, or
    /// `deadline` is not after `now`), the queue unchanged: then `block` and `pick`. The next
    /// event comes with it: the earliest deadline when every vCPU waiting for one outranks
    /// the new runner (no deadline is due and no ready vCPU is left at or above it), else
    /// `next_event(now)`.
    pub fn block_and_hand_over(&mut self, now: u64, deadline: Option<u64>) -> Option<HandedOver> {
        match self.pair_block_and_hand_over(now, deadline) {
            Some(handed) => Some(handed),
            None => self.block_and_hand_over_general(now, deadline),
        }
    }

    /// `block_and_hand_over` in any state, the pair's shortcut aside.
    #[inline(always)]
    pub(super) fn block_and_hand_over_general(
        &mut self,
        now: u64,
        deadline: Option<u64>,
    ) -> Option<HandedOver> {
        let r = self.running?;
        let next = self.first(self.ready)?;
        if self.soonest <= now
            || deadline.is_some_and(|d| d <= now)
            || self.ready & self.levels[next] != 1 << next
        {
            return None;
        }
        let Place::Ready { slice_left, .. } = self.entries[next].place else {
            return None;
        };
        self.ready &= !(1 << next);
        self.entries[next].place = Place::Running {
            slice_end: now.saturating_add(slice_left),
        };
        self.running = Some(next);
        // `set_place(r, Blocked { deadline })` for a vCPU that was running: neither ready nor
        // timed, so not the soonest; only the timed set and the earliest deadline change.
        self.entries[r].place = Place::Blocked { deadline };
        let run = self.entries[next].vcpu;
        if let Some(deadline) = deadline {
            self.timed |= 1 << r;
            if self.soonest_at.is_some() {
                return self.handed_over_timed(r, deadline, next, run, now);
            }
            self.soonest_at = Some(r);
            self.soonest = deadline;
        }
        self.handed_over(run, next, now)
    }

    /// `preempt_at_deadline` in a pair's usual state (`RunQueue::pair`: the real-time VM,
    /// entry 0, above the GPOS, entry 1): the GPOS runs, nothing is ready, and the real-time
    /// VM alone waits for a deadline, which came. Then the decision needs none of the general
    /// checks: the real-time VM runs with a fresh slice, the GPOS is descheduled, nothing is
    /// timed and no event is left. `None` in any other state, the queue unchanged.
    #[inline(always)]
    pub(super) fn pair_preempt_at_deadline(&mut self, now: u64) -> Option<HandedOver> {
        if !self.pair
            || self.running != Some(1)
            || self.ready != 0
            || self.timed != 1
            || self.soonest > now
        {
            return None;
        }
        let [high, low] = self.entries.as_mut_slice() else {
            return None;
        };
        let Place::Running { slice_end } = low.place else {
            return None;
        };
        low.place = descheduled(&mut self.tickets, self.slice, slice_end, now);
        high.place = Place::Running {
            slice_end: now.saturating_add(self.slice),
        };
        self.ready = 0b10;
        self.running = Some(0);
        self.timed = 0;
        self.soonest_at = None;
        self.soonest = u64::MAX;
        Some(HandedOver {
            run: high.vcpu,
            next_event: None,
        })
    }

    /// `block_and_hand_over` in a pair's usual state (`RunQueue::pair`): the real-time VM
    /// (entry 0) runs, the GPOS (entry 1) is ready, nothing is timed, and `deadline` is
    /// not past. Then the GPOS runs with the slice it had left, the real-time VM blocks with
    /// `deadline`, which is the only event. `None` in any other state, the queue unchanged.
    #[inline(always)]
    pub(super) fn pair_block_and_hand_over(
        &mut self,
        now: u64,
        deadline: Option<u64>,
    ) -> Option<HandedOver> {
        if !self.pair
            || self.running != Some(0)
            || self.ready != 0b10
            || self.timed != 0
            || deadline.is_some_and(|d| d <= now)
        {
            return None;
        }
        let [high, low] = self.entries.as_mut_slice() else {
            return None;
        };
        let Place::Ready { slice_left, .. } = low.place else {
            return None;
        };
        low.place = Place::Running {
            slice_end: now.saturating_add(slice_left),
        };
        high.place = Place::Blocked { deadline };
        self.ready = 0;
        self.running = Some(1);
        if let Some(deadline) = deadline {
            self.timed = 1;
            self.soonest_at = Some(0);
            self.soonest = deadline;
        }
        Some(HandedOver {
            run: low.vcpu,
            next_event: deadline,
        })
    }

    /// The rest of `block_and_hand_over` when another vCPU waits for a deadline too:
    /// entry `r`, which blocked with `deadline`, may be the soonest now. Out of line, as
    /// `handed_over_general`: the usual hand-over (the only timed vCPU blocks) makes no call
    /// and keeps no register across one.
    #[inline(never)]
    fn handed_over_timed(
        &mut self,
        r: usize,
        deadline: u64,
        next: usize,
        run: VcpuId,
        now: u64,
    ) -> Option<HandedOver> {
        if self.soonest_at.is_none_or(|s| self.earlier_than(r, s)) {
            self.soonest_at = Some(r);
            self.soonest = deadline;
        }
        self.handed_over(run, next, now)
    }

    /// The answer of a hand-over to `run` (entry `next`) at `now`: the earliest deadline is
    /// the next event when every vCPU waiting for one outranks the new runner, else
    /// `next_event_general` finds it, out of line.
    #[inline(always)]
    fn handed_over(&self, run: VcpuId, next: usize, now: u64) -> Option<HandedOver> {
        if self.timed & !self.above(next) != 0 {
            return self.handed_over_general(run, now);
        }
        Some(HandedOver {
            run,
            next_event: self.deadline(self.timed),
        })
    }

    /// A hand-over to `run` at `now` whose next event `next_event_general` finds.
    #[inline(never)]
    fn handed_over_general(&self, run: VcpuId, now: u64) -> Option<HandedOver> {
        Some(HandedOver {
            run,
            next_event: self.next_event_general(now),
        })
    }

    /// Whether a vCPU is ready, waiting for the CPU: without one, a vCPU that blocks hands
    /// the CPU to no one (`block_and_hand_over` answers `None`).
    #[inline]
    pub fn has_ready(&self) -> bool {
        self.ready != 0
    }

    /// Whether `pick(now)` would run another vCPU than the one running (or any vCPU while
    /// idle): after a `wake`, true means "switch now", whatever the running guest's interrupt
    /// mask. Blocked vCPUs whose deadline has passed count as ready.
    pub fn should_preempt(&self, now: u64) -> bool {
        let Some(top) = self.top_contender(now) else {
            return false;
        };
        match self.runner() {
            None => true,
            Some(r) => top > r.priority || (top == r.priority && now >= r.slice_end),
        }
    }

    /// The earliest time at which `pick` may decide otherwise, to program into CNTHP_CVAL_EL2
    /// (`None`: nothing to wait for): `now` if it would already; the running vCPU's slice end
    /// if a peer of its priority is ready; the deadline of each blocked vCPU that could then
    /// take the CPU (any while idle; a higher priority; the same priority, no earlier than the
    /// slice end). Deadlines of ready vCPUs and of blocked lower-priority ones are left out on
    /// purpose: reaching them changes no decision while the running vCPU runs, and an EL2
    /// interrupt for them would only steal time from the higher-priority VM. Never before `now`.
    pub fn next_event(&self, now: u64) -> Option<u64> {
        match self.next_event_usual(now) {
            Some(event) => event,
            None => self.next_event_general(now),
        }
    }

    /// `next_event` in the usual state after either switch of a CPU shared by the
    /// real-time VM and a GPOS (`preempt_at_deadline`, `block_and_hand_over`): a vCPU runs,
    /// no blocked one is due, no ready one stands at or above its priority (none can take
    /// the CPU or share its slice), and every timed one is above it. Then the earliest
    /// deadline is the only event, found without `should_preempt`'s and the levels'
    /// searches. `None`: another state, for `next_event_general`.
    #[inline]
    fn next_event_usual(&self, now: u64) -> Option<Option<u64>> {
        let r = self.runner()?;
        let above = self.above(r.index);
        let ready_below = self
            .first(self.ready)
            .is_none_or(|i| self.entries[i].priority < r.priority);
        (self.soonest > now && ready_below && self.timed & !above == 0)
            .then(|| self.deadline(self.timed))
    }

    /// The earliest time at which a vCPU of a higher priority than `priority` may want the
    /// CPU (`None`: none can): `now` when one is running or ready, else the earliest
    /// deadline of the blocked ones. Work the CPU does for a VM of that priority (its stop
    /// for good) needs room before this event only: a vCPU of that priority or below waits
    /// for it as it would wait for the VM itself, whatever `next_event` says (with no
    /// vCPU running and one ready, `next_event` is always `now`).
    pub fn next_event_above(&self, priority: u8, now: u64) -> Option<u64> {
        let running: Mask = self.runner().map_or(0, |r| 1 << r.index);
        let higher: Mask = positions(self.ready | self.timed | running)
            .filter(|&i| self.entries[i].priority > priority)
            .fold(0, |set, i| set | 1 << i);
        if higher & !self.timed != 0 {
            return Some(now);
        }
        self.deadline(higher).map(|deadline| deadline.max(now))
    }

    /// `next_event` for any state (its usual case aside). Out of line: `next_event`'s usual
    /// answer saves no registers.
    #[inline(never)]
    pub(crate) fn next_event_general(&self, now: u64) -> Option<u64> {
        if self.should_preempt(now) {
            return Some(now);
        }
        let Some(r) = self.runner() else {
            return self.deadline(self.timed);
        };
        let slice_end = Some(r.slice_end).filter(|_| self.has_ready_peer(r.index));
        let level = self.levels[r.index];
        let higher = self.timed & self.above(r.index);
        let peers = self
            .deadline(self.timed & level)
            .map(|d| d.max(r.slice_end));
        earlier(earlier(slice_end, self.deadline(higher)), peers)
    }

    /// The entries of a higher priority than entry `index` (they come first, in the order
    /// of priority: the bits below its level's lowest).
    #[inline]
    fn above(&self, index: usize) -> Mask {
        let level = self.levels[index];
        (level & level.wrapping_neg()).wrapping_sub(1)
    }

    /// The earliest deadline of `set`, a subset of the `timed` entries.
    fn deadline(&self, set: Mask) -> Option<u64> {
        let earliest = if set == self.timed {
            self.soonest
        } else {
            self.earliest_deadline(set)
        };
        Some(earliest).filter(|_| set != 0)
    }

    /// Takes the CPU from the running vCPU: with slice left it was preempted, so it goes back
    /// to the head of its level with the rest of its slice (POSIX); with its slice used up it
    /// goes to the tail with a fresh one.
    fn deschedule(&mut self, now: u64) {
        let Some(r) = self.runner() else {
            return;
        };
        let place = descheduled(&mut self.tickets, self.slice, r.slice_end, now);
        self.set_place(r.index, place);
    }

    fn dispatch(&mut self, index: usize, now: u64) {
        if let Place::Ready { slice_left, .. } = self.entries[index].place {
            let place = Place::Running {
                slice_end: now.saturating_add(slice_left),
            };
            self.set_place(index, place);
        }
    }

    fn runner(&self) -> Option<Runner> {
        let index = self.running?;
        let entry = &self.entries[index];
        match entry.place {
            Place::Running { slice_end } => Some(Runner {
                index,
                priority: entry.priority,
                slice_end,
            }),
            _ => None,
        }
    }

    /// The first ready vCPU of the highest ready priority.
    fn head(&self) -> Option<usize> {
        let top = self.first(self.ready)?;
        let level = self.ready & self.levels[top];
        if level.count_ones() == 1 {
            return Some(top);
        }
        positions(level)
            .filter_map(|i| {
                self.entries[i]
                    .ready_order()
                    .map(|o| (o, self.entries[i].vcpu, i))
            })
            .min()
            .map(|(_, _, i)| i)
    }

    /// The highest priority among ready vCPUs and blocked ones whose deadline has passed.
    fn top_contender(&self, now: u64) -> Option<u8> {
        let priority = |i: usize| self.entries[i].priority;
        let ready = self.first(self.ready).map(priority);
        let due = if self.soonest <= now {
            positions(self.timed)
                .find(|&i| self.entries[i].due(now))
                .map(priority)
        } else {
            None
        };
        // `None` orders below every `Some`.
        ready.max(due)
    }

    /// The position of the highest-priority entry of `set`.
    fn first(&self, set: Mask) -> Option<usize> {
        positions(set).next()
    }

    /// Whether a vCPU of `entries[index]`'s priority is ready.
    fn has_ready_peer(&self, index: usize) -> bool {
        self.ready & self.levels[index] != 0
    }
}
