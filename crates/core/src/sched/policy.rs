//! The scheduling decision of a run queue: who runs after `pick`, whether the running vCPU must
//! give way now, and when the decision can next change (the EL2 timer's next deadline).

use super::entry::Place;
use super::queue::RunQueue;
use super::Decision;

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
                .filter(|r| self.has_ready(r.priority))
                .map(|r| r.slice_end),
        }
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
        if self.should_preempt(now) {
            return Some(now);
        }
        let runner = self.runner();
        let slice_end = runner
            .filter(|r| self.has_ready(r.priority))
            .map(|r| r.slice_end);
        let wakes = self.entries.iter().filter_map(|e| {
            let deadline = e.wake_deadline()?;
            match runner {
                None => Some(deadline),
                Some(r) if e.priority > r.priority => Some(deadline),
                Some(r) if e.priority == r.priority => Some(deadline.max(r.slice_end)),
                Some(_) => None,
            }
        });
        slice_end.into_iter().chain(wakes).min()
    }

    /// Takes the CPU from the running vCPU: with slice left it was preempted, so it goes back
    /// to the head of its level with the rest of its slice (POSIX); with its slice used up it
    /// goes to the tail with a fresh one.
    fn deschedule(&mut self, now: u64) {
        let Some(r) = self.runner() else {
            return;
        };
        let place = match r.slice_end.checked_sub(now) {
            Some(slice_left) if slice_left > 0 => Place::Ready {
                order: self.tickets.head(),
                slice_left: slice_left.min(self.slice),
            },
            _ => self.ready_at_tail(),
        };
        self.entries[r.index].place = place;
    }

    fn dispatch(&mut self, index: usize, now: u64) {
        let entry = &mut self.entries[index];
        if let Place::Ready { slice_left, .. } = entry.place {
            entry.place = Place::Running {
                slice_end: now.saturating_add(slice_left),
            };
        }
    }

    fn runner(&self) -> Option<Runner> {
        self.entries
            .iter()
            .enumerate()
            .find_map(|(index, e)| match e.place {
                Place::Running { slice_end } => Some(Runner {
                    index,
                    priority: e.priority,
                    slice_end,
                }),
                _ => None,
            })
    }

    /// The first ready vCPU of the highest ready priority.
    fn head(&self) -> Option<usize> {
        let top = self.top_ready()?;
        (0..self.entries.len())
            .filter(|&i| self.entries[i].priority == top)
            .filter_map(|i| {
                self.entries[i]
                    .ready_order()
                    .map(|o| (o, self.entries[i].vcpu, i))
            })
            .min()
            .map(|(_, _, i)| i)
    }

    fn top_ready(&self) -> Option<u8> {
        self.entries
            .iter()
            .filter(|e| e.ready_order().is_some())
            .map(|e| e.priority)
            .max()
    }

    /// The highest priority among ready vCPUs and blocked ones whose deadline has passed.
    fn top_contender(&self, now: u64) -> Option<u8> {
        self.entries
            .iter()
            .filter(|e| e.ready_order().is_some() || e.due(now))
            .map(|e| e.priority)
            .max()
    }

    fn has_ready(&self, priority: u8) -> bool {
        self.entries
            .iter()
            .any(|e| e.priority == priority && e.ready_order().is_some())
    }
}
