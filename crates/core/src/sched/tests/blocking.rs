//! WFI and interrupts: blocking, waking, idling, removing, and calls the queue must refuse
//! without changing anything.

use super::super::{Decision, RunQueue, SchedError, VcpuId, VcpuState, MAX_VCPUS};
use super::*;

const IDLE: Decision = Decision {
    run: None,
    slice_end: None,
};

#[test]
fn a_blocked_vcpu_waits_for_an_interrupt() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY)]);
    q.pick(0);
    q.block(LINUX, None).unwrap();
    assert_eq!(q.pick(10), IDLE);
    assert_eq!(q.next_event(10), None);
    assert_eq!(
        q.pick(1_000_000),
        IDLE,
        "no deadline: time alone never wakes it"
    );
    q.wake(LINUX).unwrap();
    assert_eq!(q.state(LINUX), Some(VcpuState::Ready));
    assert!(q.should_preempt(1_000_001));
    assert_eq!(q.pick(1_000_001).run, Some(LINUX));
}

#[test]
fn an_empty_queue_idles() {
    let mut q = RunQueue::new(SLICE);
    assert_eq!(q.pick(0), IDLE);
    assert!(!q.should_preempt(0));
    assert_eq!(q.next_event(0), None);
    assert_eq!(q.running(), None);
}

#[test]
fn waking_a_ready_vcpu_keeps_its_place() {
    let mut q = three_peers();
    q.pick(0);
    q.wake(THIRD).unwrap();
    q.wake(OTHER).unwrap();
    q.wake(LINUX).unwrap();
    assert_eq!(q.state(LINUX), Some(VcpuState::Running));
    assert_eq!(q.pick(SLICE).run, Some(OTHER));
    assert_eq!(q.pick(2 * SLICE).run, Some(THIRD));
}

#[test]
fn removing_the_running_vcpu_frees_the_cpu() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY), (RTOS, RTOS_PRIORITY)]);
    q.pick(0);
    q.remove(RTOS).unwrap();
    assert_eq!(q.running(), None);
    assert_eq!(q.state(RTOS), None);
    assert!(q.should_preempt(1));
    assert_eq!(q.pick(1).run, Some(LINUX));
    assert_eq!(q.remove(RTOS), Err(SchedError::UnknownVcpu(RTOS)));
}

#[test]
fn removing_the_last_vcpu_idles() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY)]);
    q.pick(0);
    q.remove(LINUX).unwrap();
    assert_eq!(q.pick(1), IDLE);
}

#[test]
fn blocking_a_ready_vcpu_takes_it_out_of_turn() {
    let mut q = three_peers();
    q.pick(0);
    q.block(OTHER, None).unwrap();
    assert_eq!(q.pick(SLICE).run, Some(THIRD));
}

#[test]
fn unknown_vcpus_are_refused_and_change_nothing() {
    let mut q = rtos_and_linux();
    let before = q.pick(0);
    let ghost = VcpuId::new(9, 9);
    let refused = Err(SchedError::UnknownVcpu(ghost));
    assert_eq!(q.block(ghost, Some(1)), refused);
    assert_eq!(q.wake(ghost), refused);
    assert_eq!(q.set_timer_deadline(ghost, Some(1)), refused);
    assert_eq!(q.remove(ghost), refused);
    assert_eq!(q.state(ghost), None);
    assert_eq!(q.pick(5), before);
    assert_eq!(q.next_event(5), None);
}

#[test]
fn a_vcpu_is_added_once() {
    let mut q = rtos_and_linux();
    assert_eq!(
        q.add(LINUX, RTOS_PRIORITY),
        Err(SchedError::AlreadyQueued(LINUX))
    );
    assert_eq!(q.pick(0).run, Some(RTOS), "the priority did not change");
}

#[test]
fn a_queue_holds_at_most_max_vcpus() {
    let mut q = RunQueue::new(SLICE);
    for i in 0..MAX_VCPUS {
        let vcpu = VcpuId::new(0, u16::try_from(i).unwrap());
        q.add(vcpu, GPOS_PRIORITY).unwrap();
    }
    let extra = VcpuId::new(1, 0);
    assert_eq!(q.add(extra, RTOS_PRIORITY), Err(SchedError::Full));
    assert_eq!(q.state(extra), None);
    q.remove(VcpuId::new(0, 3)).unwrap();
    assert_eq!(q.add(extra, RTOS_PRIORITY), Ok(()));
    assert_eq!(q.pick(0).run, Some(extra));
}
