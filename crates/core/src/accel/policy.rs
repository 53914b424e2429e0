//! Choosing a solution for a request (Ker-ONE section 4.4.1). A policy is a plain function
//! from the request and the compatible regions to a solution; the manager takes any
//! `Policy`, so a system that values preemption over idle regions (section 6.3) swaps one
//! function. A policy must only return regions from the candidates, and must never return
//! `Preempt` for a region whose client's priority is not lower than the request's: the
//! manager checks both and treats a violation as no solution.

use super::prr::PrrState;
use super::{DevId, PrrId, VmId};

/// Request(vm, dev, prio): a VM wrote to an unconnected interface, or a preempted task
/// has unfinished work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub vm: VmId,
    pub dev: DevId,
    pub prio: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// The region is Idle: allocate it.
    Assign,
    /// The region runs (or holds) a lower-priority task: take it at its next consistency
    /// point.
    Preempt,
}

/// Solution{vm, dev, Method(prr), Reconfig} (eq. 1); the request carries vm and dev.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Solution {
    pub prr: PrrId,
    pub method: Method,
    pub reconfig: bool,
}

/// A compatible region as a policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub prr: PrrId,
    pub state: PrrState,
    pub size: u64,
    /// The region already holds the requested device's bitstream.
    pub loaded: bool,
    /// The priority of the task it hosts (Busy, Hold, Idle) or is being given to (Preempt,
    /// Switch, Reconfig), if any.
    pub priority: Option<u8>,
}

/// A solution policy; `None` is Unavailable.
pub type Policy = fn(&Request, &[Candidate]) -> Option<Solution>;

/// Ker-ONE's policy: an Idle region first, else preempt a lower-priority one; among
/// several, the smallest (the least reconfiguration time), and at equal size one that needs
/// no reconfiguration. Idle first keeps low-priority tasks from being starved (section 6.3).
/// A region already being preempted or reconfigured for a lower-priority request is
/// preemptable too (the manager hands it over): so a request never waits for two
/// reconfigurations on behalf of lower priorities.
pub fn idle_then_smallest(request: &Request, candidates: &[Candidate]) -> Option<Solution> {
    // One pass: the best Idle region and the best preemptable one, each the smallest, then
    // one already loaded, then the lowest number.
    let key = |c: &Candidate| (c.size, !c.loaded, c.prr);
    let mut idle: Option<&Candidate> = None;
    let mut preemptable: Option<&Candidate> = None;
    for c in candidates {
        let best = if c.state == PrrState::Idle {
            &mut idle
        } else if matches!(
            c.state,
            PrrState::Busy | PrrState::Hold | PrrState::Preempt | PrrState::Reconfig
        ) && c.priority.is_some_and(|p| p < request.prio)
        {
            &mut preemptable
        } else {
            continue;
        };
        if best.is_none_or(|b| key(c) < key(b)) {
            *best = Some(c);
        }
    }
    let (c, method) = match (idle, preemptable) {
        (Some(c), _) => (c, Method::Assign),
        (None, Some(c)) => (c, Method::Preempt),
        (None, None) => return None,
    };
    Some(Solution {
        prr: c.prr,
        method,
        reconfig: !c.loaded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(prr: PrrId, state: PrrState, size: u64, loaded: bool, priority: Option<u8>) -> Candidate {
        Candidate {
            prr,
            state,
            size,
            loaded,
            priority,
        }
    }

    const RTOS: Request = Request {
        vm: 0,
        dev: 0,
        prio: 10,
    };

    #[test]
    fn idle_beats_preemption_and_small_beats_large() {
        let cands = [
            c(0, PrrState::Busy, 10, true, Some(1)),
            c(1, PrrState::Idle, 30, false, None),
            c(2, PrrState::Idle, 20, false, Some(1)),
        ];
        let s = idle_then_smallest(&RTOS, &cands).unwrap();
        assert_eq!((s.prr, s.method, s.reconfig), (2, Method::Assign, true));
    }

    #[test]
    fn only_lower_priorities_are_preempted() {
        let cands = [
            c(0, PrrState::Busy, 10, true, Some(10)),
            c(1, PrrState::Busy, 20, false, Some(3)),
            c(2, PrrState::Switch, 5, false, Some(1)),
        ];
        let s = idle_then_smallest(&RTOS, &cands).unwrap();
        assert_eq!((s.prr, s.method, s.reconfig), (1, Method::Preempt, true));
        let gpos = Request { prio: 3, ..RTOS };
        assert_eq!(idle_then_smallest(&gpos, &cands), None);
    }
}
