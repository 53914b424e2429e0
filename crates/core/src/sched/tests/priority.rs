//! Fixed priorities: the highest ready priority runs, a higher-priority wake preempts at once,
//! a preempted vCPU keeps its place at the head of its level.

use super::super::{Decision, VcpuState};
use super::*;

#[test]
fn the_highest_priority_runs_first_whatever_the_order_of_add() {
    let mut q = rtos_and_linux();
    assert_eq!(
        q.pick(0),
        Decision {
            run: Some(RTOS),
            slice_end: None
        }
    );
    assert_eq!(q.state(LINUX), Some(VcpuState::Ready));
}

#[test]
fn the_gpos_runs_only_while_the_rtos_waits_in_wfi() {
    let mut q = rtos_and_linux();
    q.pick(0);
    q.block(RTOS, None).unwrap();
    assert_eq!(q.pick(10).run, Some(LINUX));
    assert_eq!(q.state(RTOS), Some(VcpuState::Blocked));
}

#[test]
fn an_interrupt_for_the_rtos_preempts_linux_at_once() {
    let mut q = rtos_and_linux();
    q.pick(0);
    q.block(RTOS, None).unwrap();
    q.pick(10);
    q.wake(RTOS).unwrap();
    assert!(q.should_preempt(20));
    assert_eq!(q.next_event(20), Some(20));
    assert_eq!(q.pick(20).run, Some(RTOS));
    assert_eq!(q.state(LINUX), Some(VcpuState::Ready));
    assert!(!q.should_preempt(21));
}

#[test]
fn an_interrupt_for_a_lower_priority_does_not_preempt() {
    let mut q = rtos_and_linux();
    q.block(LINUX, None).unwrap();
    q.pick(0);
    q.wake(LINUX).unwrap();
    assert!(!q.should_preempt(5));
    assert_eq!(q.next_event(5), None);
    assert_eq!(q.pick(5).run, Some(RTOS));
}

#[test]
fn adding_a_higher_priority_vcpu_preempts() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY)]);
    q.pick(0);
    q.add(RTOS, RTOS_PRIORITY).unwrap();
    assert!(q.should_preempt(1));
    assert_eq!(q.pick(1).run, Some(RTOS));
}

#[test]
fn a_preempted_vcpu_resumes_before_its_peers_with_the_rest_of_its_slice() {
    let mut q = queue(&[
        (LINUX, GPOS_PRIORITY),
        (OTHER, GPOS_PRIORITY),
        (RTOS, RTOS_PRIORITY),
    ]);
    q.block(RTOS, None).unwrap();
    assert_eq!(q.pick(0).slice_end, Some(SLICE));
    q.wake(RTOS).unwrap();
    assert_eq!(q.pick(30).run, Some(RTOS));
    q.block(RTOS, None).unwrap();
    let resumed = q.pick(50);
    assert_eq!(resumed.run, Some(LINUX));
    assert_eq!(resumed.slice_end, Some(50 + SLICE - 30));
}

#[test]
fn a_vcpu_preempted_after_its_slice_ran_out_goes_behind_its_peers() {
    let mut q = queue(&[
        (LINUX, GPOS_PRIORITY),
        (OTHER, GPOS_PRIORITY),
        (RTOS, RTOS_PRIORITY),
    ]);
    q.block(RTOS, None).unwrap();
    q.pick(0);
    q.wake(RTOS).unwrap();
    assert_eq!(q.pick(SLICE + 50).run, Some(RTOS));
    q.block(RTOS, None).unwrap();
    assert_eq!(q.pick(SLICE + 60).run, Some(OTHER));
}

#[test]
fn every_level_is_served_in_priority_order() {
    let mut q = queue(&[(LINUX, 1), (OTHER, 3), (THIRD, 2)]);
    assert_eq!(q.pick(0).run, Some(OTHER));
    q.block(OTHER, None).unwrap();
    assert_eq!(q.pick(1).run, Some(THIRD));
    q.block(THIRD, None).unwrap();
    assert_eq!(q.pick(2).run, Some(LINUX));
}
