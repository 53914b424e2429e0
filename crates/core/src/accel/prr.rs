//! A partially reconfigurable region (PRR) as a state machine (Ker-ONE Fig. 7) and its
//! descriptor.
//!
//! A region is allocated only from Idle (directly, or through Reconfig when it holds
//! another bitstream) or taken from a lower-priority client: from Hold at once, from Busy
//! through Preempt (the task runs on to its next consistency point) and Switch (its context
//! is saved). Whoever gets a region finds it in Hold, reserved until it starts a job or the
//! hold expires. `next` refuses every other transition: the manager treats a refusal as a
//! broken invariant of its own, never as something a guest can cause.

use super::{DevId, VmId};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrrState {
    /// No computation; ready for allocation (its last client may still be connected).
    Idle,
    /// A job is running.
    Busy,
    /// A job is running and will be stopped at its next consistency point.
    Preempt,
    /// The stopped task's context is being saved.
    Switch,
    /// A bitstream is being loaded.
    Reconfig,
    /// Allocated to a client, reserved until it starts a job or the hold expires.
    Hold,
}

/// What happens to a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrrEvent {
    /// Allocated without reconfiguration.
    Assign,
    /// Allocated with reconfiguration.
    AssignReconfig,
    /// Its client started a job.
    Start,
    /// The running job finished.
    JobDone,
    /// A higher-priority request wants the region.
    PreemptRequest,
    /// The task reached a consistency point (or finished) while preempted.
    ConsistencyPoint,
    /// The context is saved; `reconfig` when the new client needs another bitstream.
    Switched { reconfig: bool },
    /// The bitstream is loaded and someone is waiting for it.
    Reconfigured,
    /// The bitstream is loaded but its requester is gone.
    ReconfiguredUnclaimed,
    /// The hold ran out.
    Expire,
    /// The preempting requester is gone before the consistency point: the job runs on.
    Cancel,
    /// The client VM stopped: whatever ran is dropped.
    Release,
}

impl PrrState {
    /// The state after `event`, or `None` when Fig. 7 has no such transition.
    pub fn next(self, event: PrrEvent) -> Option<PrrState> {
        use PrrEvent as E;
        use PrrState as S;
        Some(match (self, event) {
            (S::Idle | S::Hold, E::Assign) => S::Hold,
            (S::Idle | S::Hold, E::AssignReconfig) => S::Reconfig,
            (S::Idle | S::Hold, E::Start) => S::Busy,
            (S::Busy, E::JobDone) => S::Idle,
            (S::Busy, E::PreemptRequest) => S::Preempt,
            (S::Preempt, E::ConsistencyPoint) => S::Switch,
            (S::Preempt, E::Cancel) => S::Busy,
            (S::Switch, E::Switched { reconfig: false }) => S::Hold,
            (S::Switch, E::Switched { reconfig: true }) => S::Reconfig,
            (S::Reconfig, E::Reconfigured) => S::Hold,
            (S::Reconfig, E::ReconfiguredUnclaimed) => S::Idle,
            (S::Hold, E::Expire) => S::Idle,
            (S::Busy | S::Hold, E::Release) => S::Idle,
            _ => return None,
        })
    }
}

/// The PRR descriptor: state, the hosted task (client VM, device, priority), the loaded
/// bitstream and the reconfiguration time (Ker-ONE section 4.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrrDescriptor {
    pub state: PrrState,
    /// The connected task: its VM and device.
    pub client: Option<(VmId, DevId)>,
    /// The task's priority (its VM's).
    pub priority: u8,
    /// The device whose bitstream the region holds.
    pub loaded: Option<DevId>,
    /// The region's size in bytes of bitstream: the policy prefers small regions.
    pub size: u64,
    /// When a hold ends, in ns.
    pub hold_until: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATES: [PrrState; 6] = [
        PrrState::Idle,
        PrrState::Busy,
        PrrState::Preempt,
        PrrState::Switch,
        PrrState::Reconfig,
        PrrState::Hold,
    ];

    #[test]
    fn allocation_starts_only_from_idle_or_hold() {
        for s in STATES {
            let allowed = matches!(s, PrrState::Idle | PrrState::Hold);
            assert_eq!(s.next(PrrEvent::Assign).is_some(), allowed, "{s:?}");
            assert_eq!(s.next(PrrEvent::AssignReconfig).is_some(), allowed, "{s:?}");
        }
    }

    #[test]
    fn a_preempted_task_reaches_the_new_client_through_switch() {
        let mut s = PrrState::Busy;
        for (e, want) in [
            (PrrEvent::PreemptRequest, PrrState::Preempt),
            (PrrEvent::ConsistencyPoint, PrrState::Switch),
            (PrrEvent::Switched { reconfig: true }, PrrState::Reconfig),
            (PrrEvent::Reconfigured, PrrState::Hold),
            (PrrEvent::Start, PrrState::Busy),
            (PrrEvent::JobDone, PrrState::Idle),
        ] {
            s = s.next(e).unwrap();
            assert_eq!(s, want);
        }
    }

    #[test]
    fn a_running_job_is_never_reassigned_or_expired() {
        for e in [PrrEvent::Assign, PrrEvent::Expire, PrrEvent::Reconfigured] {
            assert_eq!(PrrState::Busy.next(e), None);
            assert_eq!(PrrState::Preempt.next(e), None);
        }
        assert_eq!(PrrState::Hold.next(PrrEvent::Expire), Some(PrrState::Idle));
    }
}
