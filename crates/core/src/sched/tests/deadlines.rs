//! Timer deadlines of descheduled vCPUs: what goes on the EL2 timer and who wakes when the
//! counter reaches it.

use super::super::{ticks_from_micros, ticks_from_nanos, HandedOver, VcpuState, DEFAULT_SLICE_US};
use super::*;

#[test]
fn a_blocked_vcpu_wakes_at_its_deadline() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY)]);
    q.block(LINUX, Some(500)).unwrap();
    assert_eq!(q.pick(0).run, None);
    assert_eq!(q.next_event(0), Some(500));
    assert!(!q.should_preempt(499));
    assert_eq!(q.pick(499).run, None);
    assert!(q.should_preempt(500));
    assert_eq!(q.pick(500).run, Some(LINUX));
    assert_eq!(q.next_event(500), None, "the deadline was consumed");
}

#[test]
fn a_deadline_already_past_wakes_at_once() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY)]);
    q.pick(0);
    q.block(LINUX, Some(5)).unwrap();
    assert!(q.should_preempt(10));
    assert_eq!(q.next_event(10), Some(10));
    assert_eq!(q.pick(10).run, Some(LINUX));
}

#[test]
fn the_earliest_of_several_deadlines_is_programmed_and_served_first() {
    let mut q = three_peers();
    q.block(LINUX, Some(300)).unwrap();
    q.block(OTHER, Some(200)).unwrap();
    q.block(THIRD, Some(400)).unwrap();
    assert_eq!(q.next_event(0), Some(200));
    assert_eq!(q.pick(0).run, None);
    let d = q.pick(350);
    assert_eq!(d.run, Some(OTHER), "the earliest deadline is queued first");
    assert_eq!(d.slice_end, Some(350 + SLICE));
    assert_eq!(q.state(THIRD), Some(VcpuState::Blocked));
    assert_eq!(
        q.next_event(350),
        Some(350 + SLICE),
        "a peer waking at 400 could not run before the slice end"
    );
    assert_eq!(q.pick(450).run, Some(LINUX));
}

#[test]
fn the_rtos_deadline_is_programmed_while_linux_runs() {
    let mut q = rtos_and_linux();
    q.pick(0);
    q.block(RTOS, Some(1_000)).unwrap();
    assert_eq!(q.pick(50).run, Some(LINUX));
    assert_eq!(q.next_event(50), Some(1_000));
    assert_eq!(q.pick(1_000).run, Some(RTOS));
}

#[test]
fn a_lower_priority_deadline_is_not_programmed_while_the_rtos_runs() {
    let mut q = rtos_and_linux();
    q.block(LINUX, Some(100)).unwrap();
    q.pick(0);
    assert_eq!(q.next_event(0), None);
    q.block(RTOS, Some(1_000)).unwrap();
    assert_eq!(q.pick(50).run, None);
    assert_eq!(q.next_event(50), Some(100));
    assert_eq!(
        q.pick(150).run,
        Some(LINUX),
        "late is fine: the RTOS had the CPU"
    );
    assert_eq!(q.next_event(150), Some(1_000));
}

#[test]
fn a_peer_deadline_inside_the_slice_is_deferred_to_the_slice_end() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY), (OTHER, GPOS_PRIORITY)]);
    q.block(OTHER, Some(30)).unwrap();
    q.pick(0);
    assert_eq!(q.next_event(0), Some(SLICE));
    assert_eq!(q.pick(SLICE).run, Some(OTHER));
}

#[test]
fn a_peer_deadline_after_the_slice_takes_the_cpu_when_it_comes() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY), (OTHER, GPOS_PRIORITY)]);
    q.block(OTHER, Some(250)).unwrap();
    q.pick(0);
    assert_eq!(q.next_event(0), Some(250));
    assert_eq!(q.pick(250).run, Some(OTHER));
}

#[test]
fn a_deadline_set_while_blocked_replaces_the_old_one() {
    let mut q = queue(&[(LINUX, GPOS_PRIORITY)]);
    q.block(LINUX, None).unwrap();
    q.set_timer_deadline(LINUX, Some(70)).unwrap();
    assert_eq!(q.next_event(0), Some(70));
    q.set_timer_deadline(LINUX, None).unwrap();
    assert_eq!(q.next_event(0), None);
    q.set_timer_deadline(LINUX, Some(80)).unwrap();
    assert_eq!(q.pick(80).run, Some(LINUX));
}

#[test]
fn a_ready_vcpu_has_no_deadline_to_program() {
    let mut q = rtos_and_linux();
    q.pick(0);
    q.set_timer_deadline(LINUX, Some(40)).unwrap();
    assert_eq!(q.next_event(0), None, "its expiry would change no decision");
    assert_eq!(q.state(LINUX), Some(VcpuState::Ready));
    q.block(RTOS, None).unwrap();
    assert_eq!(q.pick(50).run, Some(LINUX));
}

#[test]
fn expire_wakes_without_switching() {
    let mut q = rtos_and_linux();
    q.block(RTOS, Some(100)).unwrap();
    q.pick(0);
    q.expire(100);
    assert_eq!(q.state(RTOS), Some(VcpuState::Ready));
    assert_eq!(q.running(), Some(LINUX));
    assert!(q.should_preempt(100));
}

#[test]
fn slices_convert_from_microseconds() {
    assert_eq!(ticks_from_micros(DEFAULT_SLICE_US, 62_500_000), 625_000);
    assert_eq!(ticks_from_micros(1, 1_000_000_000), 1_000);
    assert_eq!(ticks_from_micros(0, 62_500_000), 1, "never an empty slice");
    assert_eq!(ticks_from_micros(u32::MAX, u64::MAX), u64::MAX);
}

#[test]
fn timer_advances_convert_from_nanoseconds_rounded_up() {
    assert_eq!(ticks_from_nanos(0, 62_500_000), 0, "no advance");
    assert_eq!(ticks_from_nanos(2_000, 62_500_000), 125);
    assert_eq!(
        ticks_from_nanos(1, 62_500_000),
        1,
        "never shorter than asked"
    );
    assert_eq!(ticks_from_nanos(2_001, 62_500_000), 126);
    assert_eq!(ticks_from_nanos(100_000, 1_000_000_000), 100_000);
    assert_eq!(ticks_from_nanos(u32::MAX, u64::MAX), u64::MAX);
}

#[test]
fn leaving_the_cpu_gives_a_blocked_vcpu_its_deadline_and_leaves_a_ready_one_alone() {
    let mut q = rtos_and_linux();
    assert_eq!(q.pick(0).run, Some(RTOS));
    q.block(RTOS, None).unwrap();
    assert_eq!(q.pick(0).run, Some(LINUX));
    assert_eq!(q.leave(RTOS, || Some(70)), Some(VcpuState::Blocked));
    assert_eq!(q.next_event(0), Some(70));
    assert_eq!(q.pick(70).run, Some(RTOS));
    let asked = core::cell::Cell::new(false);
    let ready = q.leave(LINUX, || {
        asked.set(true);
        Some(10)
    });
    assert_eq!(ready, Some(VcpuState::Ready));
    assert!(!asked.get(), "a preempted vCPU's deadline is not read");
    assert_eq!(q.next_event(70), None);
    assert_eq!(q.leave(OTHER, || None), None, "not in the queue");
}

#[test]
fn a_deadline_taken_on_leaving_is_ordered_among_the_others() {
    let mut q = three_peers();
    q.block(OTHER, Some(300)).unwrap();
    q.block(THIRD, Some(500)).unwrap();
    assert_eq!(q.pick(0).run, Some(LINUX));
    q.block(LINUX, None).unwrap();
    assert_eq!(q.next_event(0), Some(300));
    assert_eq!(q.leave(LINUX, || Some(200)), Some(VcpuState::Blocked));
    assert_eq!(
        q.next_event(0),
        Some(200),
        "the new deadline is the earliest"
    );
    q.set_timer_deadline(LINUX, Some(400)).unwrap();
    assert_eq!(q.next_event(0), Some(300), "a moved deadline gives way");
    q.set_timer_deadline(LINUX, None).unwrap();
    q.set_timer_deadline(LINUX, Some(300)).unwrap();
    assert_eq!(q.pick(300).run, Some(LINUX), "a tie goes to the lower id");
    assert_eq!(q.next_event(300), Some(300 + SLICE), "OTHER woke too");
}

#[test]
fn the_rtos_deadline_preempts_linux_without_a_pick() {
    let mut q = rtos_and_linux();
    q.pick(0);
    q.block(RTOS, None).unwrap();
    assert_eq!(q.pick(0).run, Some(LINUX));
    q.leave(RTOS, || Some(40));
    assert_eq!(q.preempt_at_deadline(39), None, "not yet due");
    assert_eq!(
        q.preempt_at_deadline(40),
        Some(HandedOver {
            run: RTOS,
            next_event: None
        }),
        "no other deadline: nothing to wake for"
    );
    assert_eq!(q.running(), Some(RTOS));
    assert_eq!(q.state(LINUX), Some(VcpuState::Ready));
    assert_eq!(q.next_event(40), None, "the deadline was consumed");
    q.block(RTOS, None).unwrap();
    let d = q.pick(50);
    assert_eq!(d.run, Some(LINUX));
    assert_eq!(
        q.next_event(50),
        None,
        "Linux alone in its level keeps the CPU"
    );
}

#[test]
fn a_deadline_preempts_without_a_pick_only_when_pick_would_do_just_that() {
    // The runner is not outranked.
    let mut q = three_peers();
    q.pick(0);
    q.block(OTHER, Some(10)).unwrap();
    assert_eq!(q.preempt_at_deadline(20), None);
    assert_eq!(q.running(), Some(LINUX), "the queue is unchanged");
    // Two deadlines came.
    let mut q = queue(&[
        (LINUX, GPOS_PRIORITY),
        (RTOS, RTOS_PRIORITY),
        (OTHER, RTOS_PRIORITY),
    ]);
    q.block(RTOS, Some(10)).unwrap();
    q.block(OTHER, Some(15)).unwrap();
    assert_eq!(q.pick(0).run, Some(LINUX));
    assert_eq!(q.preempt_at_deadline(20), None);
    assert_eq!(q.state(RTOS), Some(VcpuState::Blocked));
    assert_eq!(q.pick(20).run, Some(RTOS));
    // A ready vCPU of the woken one's priority was there first.
    let mut q = queue(&[
        (LINUX, GPOS_PRIORITY),
        (RTOS, RTOS_PRIORITY),
        (OTHER, RTOS_PRIORITY),
    ]);
    q.block(RTOS, Some(10)).unwrap();
    q.block(OTHER, None).unwrap();
    assert_eq!(q.pick(0).run, Some(LINUX));
    q.wake(OTHER).unwrap();
    assert_eq!(q.preempt_at_deadline(10), None);
    assert_eq!(q.pick(10).run, Some(OTHER));
    // Nothing runs.
    let mut q = rtos_and_linux();
    q.block(RTOS, Some(10)).unwrap();
    q.block(LINUX, None).unwrap();
    assert_eq!(q.preempt_at_deadline(10), None);
}

#[test]
fn the_rtos_hands_the_cpu_to_linux_at_its_wfi_with_its_deadline() {
    let mut q = rtos_and_linux();
    assert_eq!(q.pick(0).run, Some(RTOS));
    assert_eq!(
        q.block_and_hand_over(10, Some(10)),
        None,
        "a deadline already reached"
    );
    assert_eq!(q.running(), Some(RTOS), "the queue is unchanged");
    assert_eq!(
        q.block_and_hand_over(10, Some(40)),
        Some(HandedOver {
            run: LINUX,
            next_event: Some(40)
        }),
        "the RTOS's deadline is the next event"
    );
    assert_eq!(q.state(RTOS), Some(VcpuState::Blocked));
    assert_eq!(q.running(), Some(LINUX));
    assert_eq!(q.next_event(10), Some(40));
    assert_eq!(q.preempt_at_deadline(40).map(|h| h.run), Some(RTOS));
    // Nothing else to run: the general path blocks and idles.
    q.block(LINUX, None).unwrap();
    assert_eq!(q.block_and_hand_over(50, Some(90)), None);
    // Two peers wait in one level: `pick` chooses among them.
    let mut q = queue(&[
        (RTOS, RTOS_PRIORITY),
        (LINUX, GPOS_PRIORITY),
        (OTHER, GPOS_PRIORITY),
    ]);
    assert_eq!(q.pick(0).run, Some(RTOS));
    assert_eq!(q.block_and_hand_over(10, None), None);
}

#[test]
fn work_for_a_vm_waits_only_for_the_vcpus_above_it() {
    let mut q = rtos_and_linux();
    q.pick(0);
    q.block(RTOS, None).unwrap();
    assert_eq!(q.pick(10).run, Some(LINUX));
    assert_eq!(
        q.next_event_above(RTOS_PRIORITY, 10),
        None,
        "the RTOS's own work waits for no one: Linux below it runs"
    );
    assert_eq!(
        q.next_event_above(GPOS_PRIORITY, 10),
        None,
        "the RTOS is off"
    );
    q.block(LINUX, None).unwrap();
    q.wake(RTOS).unwrap();
    assert_eq!(
        q.next_event(20),
        Some(20),
        "nothing runs and the RTOS is ready"
    );
    assert_eq!(
        q.next_event_above(GPOS_PRIORITY, 20),
        Some(20),
        "Linux's work waits for the ready RTOS"
    );
    assert_eq!(q.pick(20).run, Some(RTOS));
    assert_eq!(
        q.next_event_above(GPOS_PRIORITY, 30),
        Some(30),
        "nor while it runs"
    );
    q.block(RTOS, Some(1_000)).unwrap();
    assert_eq!(q.pick(40).run, None);
    assert_eq!(
        q.next_event_above(GPOS_PRIORITY, 40),
        Some(1_000),
        "until its tick"
    );
    assert_eq!(
        q.next_event_above(GPOS_PRIORITY, 1_200),
        Some(1_200),
        "a tick due is now"
    );
    assert_eq!(q.next_event_above(RTOS_PRIORITY, 40), None);
}

#[test]
fn a_ready_vm_below_leaves_room_where_next_event_leaves_none() {
    let mut q = rtos_and_linux();
    q.pick(0);
    q.block(RTOS, None).unwrap();
    assert_eq!(q.next_event(5), Some(5), "no vCPU runs, Linux is ready");
    assert_eq!(q.next_event_above(RTOS_PRIORITY, 5), None);
}
