//! Round robin inside one priority level: fair turns of one slice, the slice end to program,
//! yield, and a vCPU alone in its level never interrupted.

use super::super::{Decision, RunQueue, SchedError, VcpuState};
use super::*;

#[test]
fn two_peers_alternate_one_slice_each() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY), (OTHER, GPOS_PRIORITY)]);
    let mut turns = [0u32; 2];
    let mut now = 0;
    for turn in 0..10u64 {
        let d = q.pick(now);
        let expected = if turn % 2 == 0 { LINUX } else { OTHER };
        assert_eq!(d.run, Some(expected), "turn {turn}");
        assert_eq!(d.slice_end, Some(now + SLICE));
        assert_eq!(q.next_event(now), Some(now + SLICE));
        assert_eq!(q.pick(now + SLICE / 2), d, "mid-slice pick keeps the vCPU");
        turns[usize::from(expected == OTHER)] += 1;
        now += SLICE;
    }
    assert_eq!(turns, [5, 5]);
}

#[test]
fn three_peers_take_turns_in_order() {
    let mut q = three_peers();
    let order: std::vec::Vec<_> = (0..6u64).map(|i| q.pick(i * SLICE).run).collect();
    assert_eq!(
        order,
        [LINUX, OTHER, THIRD, LINUX, OTHER, THIRD]
            .map(Some)
            .to_vec()
    );
}

#[test]
fn a_vcpu_alone_in_its_level_gets_no_slice_end() {
    let mut q = rtos_and_linux();
    assert_eq!(q.pick(0).slice_end, None);
    assert_eq!(q.next_event(0), None);
    assert_eq!(q.pick(10 * SLICE).run, Some(RTOS));
}

#[test]
fn a_peer_woken_inside_the_slice_waits_for_its_end() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY), (OTHER, GPOS_PRIORITY)]);
    q.block(OTHER, None).unwrap();
    assert_eq!(q.pick(0).slice_end, None);
    q.wake(OTHER).unwrap();
    assert!(!q.should_preempt(30));
    assert_eq!(q.next_event(30), Some(SLICE));
    assert_eq!(q.pick(30).slice_end, Some(SLICE));
    assert_eq!(q.pick(SLICE).run, Some(OTHER));
}

#[test]
fn a_peer_woken_after_a_long_solo_run_gets_the_cpu_at_once() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY), (OTHER, GPOS_PRIORITY)]);
    q.block(OTHER, None).unwrap();
    q.pick(0);
    q.wake(OTHER).unwrap();
    assert!(q.should_preempt(5 * SLICE));
    assert_eq!(q.pick(5 * SLICE).run, Some(OTHER));
}

#[test]
fn a_blocking_vcpu_gives_up_its_slice_and_rejoins_at_the_tail() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY), (OTHER, GPOS_PRIORITY)]);
    q.pick(0);
    q.block(LINUX, None).unwrap();
    assert_eq!(
        q.pick(10),
        Decision {
            run: Some(OTHER),
            slice_end: None
        }
    );
    q.wake(LINUX).unwrap();
    assert_eq!(q.next_event(20), Some(10 + SLICE));
    let d = q.pick(10 + SLICE);
    assert_eq!(d.run, Some(LINUX));
    assert_eq!(d.slice_end, Some(10 + 2 * SLICE));
}

#[test]
fn yield_hands_the_cpu_to_the_next_peer() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY), (OTHER, GPOS_PRIORITY)]);
    q.pick(0);
    q.yield_now().unwrap();
    assert_eq!(q.state(LINUX), Some(VcpuState::Ready));
    assert_eq!(q.running(), None);
    let d = q.pick(10);
    assert_eq!(d.run, Some(OTHER));
    assert_eq!(d.slice_end, Some(10 + SLICE));
}

#[test]
fn yield_alone_runs_again() {
    let mut q = rtos_and_linux();
    q.pick(0);
    q.yield_now().unwrap();
    assert_eq!(q.pick(1).run, Some(RTOS));
}

#[test]
fn yield_while_idle_is_refused() {
    let mut q = RunQueue::new(SLICE);
    assert_eq!(q.yield_now(), Err(SchedError::Idle));
}

#[test]
fn a_zero_slice_still_advances_time() {
    let mut q = RunQueue::new(0);
    q.add(LINUX, GPOS_PRIORITY).unwrap();
    q.add(OTHER, GPOS_PRIORITY).unwrap();
    assert_eq!(q.pick(0).slice_end, Some(1));
    assert_eq!(q.pick(1).run, Some(OTHER));
}
