//! Random call sequences from a seeded generator, in any order the hypervisor could make them
//! (and some it should not), each followed by a check of the policy's invariants against a
//! small model of what the test asked for.

use std::format;
use std::vec::Vec;

use crate::test_rng::Rng;

use super::super::{RunQueue, SchedError, VcpuId, VcpuState, MAX_VCPUS};
use super::SLICE;

/// Ids drawn from a set a little larger than a queue holds, so some calls name vCPUs the
/// queue does not know and some `add`s find it full.
const IDS: u64 = 20;
const PRIORITIES: u64 = 4;

/// What the test has asked of the queue: each known vCPU's priority and, while it is blocked,
/// the deadline it was given.
#[derive(Default)]
struct Model {
    vcpus: Vec<(VcpuId, u8, Option<u64>)>,
}

impl Model {
    fn get(&self, vcpu: VcpuId) -> Option<&(VcpuId, u8, Option<u64>)> {
        self.vcpus.iter().find(|v| v.0 == vcpu)
    }

    fn priority(&self, vcpu: VcpuId) -> u8 {
        self.get(vcpu).expect("a modelled vCPU").1
    }

    fn set_deadline(&mut self, vcpu: VcpuId, deadline: Option<u64>) {
        if let Some(v) = self.vcpus.iter_mut().find(|v| v.0 == vcpu) {
            v.2 = deadline;
        }
    }
}

fn id(rng: &mut Rng, ids: u64) -> VcpuId {
    VcpuId::new(0, u16::try_from(rng.below(ids)).unwrap())
}

/// A deadline around `now`: sometimes already past, sometimes far away, sometimes none.
fn deadline(rng: &mut Rng, now: u64) -> Option<u64> {
    match rng.below(4) {
        0 => None,
        1 => Some(now.saturating_sub(rng.below(3 * SLICE))),
        _ => Some(now + rng.below(5 * SLICE)),
    }
}

/// One random call naming one of `ids` vCPUs; `Err` only where the model says the queue
/// must refuse.
fn step(q: &mut RunQueue, model: &mut Model, rng: &mut Rng, now: &mut u64, ids: u64) {
    let vcpu = id(rng, ids);
    let known = model.get(vcpu).is_some();
    let unknown = Err(SchedError::UnknownVcpu(vcpu));
    match rng.below(10) {
        0 => {
            let priority = u8::try_from(rng.below(PRIORITIES)).unwrap();
            let expected = if known {
                Err(SchedError::AlreadyQueued(vcpu))
            } else if model.vcpus.len() == MAX_VCPUS {
                Err(SchedError::Full)
            } else {
                model.vcpus.push((vcpu, priority, None));
                Ok(())
            };
            assert_eq!(q.add(vcpu, priority), expected);
        }
        1 => {
            assert_eq!(q.remove(vcpu), if known { Ok(()) } else { unknown });
            assert_eq!(q.state(vcpu), None);
            model.vcpus.retain(|v| v.0 != vcpu);
        }
        2 | 3 => {
            let vcpu = if rng.below(2) == 0 {
                q.running().unwrap_or(vcpu)
            } else {
                vcpu
            };
            let d = deadline(rng, *now);
            let known = model.get(vcpu).is_some();
            assert_eq!(q.block(vcpu, d).is_ok(), known);
            if known {
                assert_eq!(q.state(vcpu), Some(VcpuState::Blocked));
                model.set_deadline(vcpu, d);
            }
        }
        4 => {
            let result = q.wake(vcpu);
            if known {
                assert_eq!(result, Ok(()));
                assert_ne!(q.state(vcpu), Some(VcpuState::Blocked));
            } else {
                assert_eq!(result, unknown);
            }
        }
        5 => {
            let d = deadline(rng, *now);
            let was_blocked = q.state(vcpu) == Some(VcpuState::Blocked);
            assert_eq!(q.set_timer_deadline(vcpu, d).is_ok(), known);
            if was_blocked {
                model.set_deadline(vcpu, d);
            }
        }
        6 => {
            let was_running = q.running().is_some();
            assert_eq!(q.yield_now().is_ok(), was_running);
            assert_eq!(q.running(), None);
        }
        7 => q.expire(*now),
        _ => *now += rng.below(2 * SLICE),
    }
}

/// Invariants that hold after any call.
fn check_always(q: &RunQueue, model: &Model, now: u64) {
    let running: Vec<VcpuId> = model
        .vcpus
        .iter()
        .map(|v| v.0)
        .filter(|&v| q.state(v) == Some(VcpuState::Running))
        .collect();
    assert!(running.len() <= 1, "two vCPUs running: {running:?}");
    assert_eq!(running.first().copied(), q.running());
    for &(vcpu, _, _) in &model.vcpus {
        assert!(q.state(vcpu).is_some(), "{vcpu:?} lost");
    }
    if let Some(event) = q.next_event(now) {
        assert!(event >= now, "next event {event} before now {now}");
    }
    assert_eq!(
        q.next_event(now),
        q.next_event_general(now),
        "next_event's usual case disagrees with the general one"
    );
    for &(_, priority, _) in &model.vcpus {
        let below = priority.saturating_sub(1);
        let above = || model.vcpus.iter().filter(|v| v.1 > below);
        let contending =
            above().any(|v| matches!(q.state(v.0), Some(VcpuState::Running | VcpuState::Ready)));
        let expected = if contending {
            Some(now)
        } else {
            above()
                .filter(|v| q.state(v.0) == Some(VcpuState::Blocked))
                .filter_map(|v| v.2)
                .min()
                .map(|d| d.max(now))
        };
        assert_eq!(
            q.next_event_above(below, now),
            expected,
            "the next event above priority {below}"
        );
    }
}

/// Invariants that hold right after `pick(now)`.
fn check_after_pick(q: &RunQueue, model: &Model, now: u64) {
    let run = q.running();
    let top_ready = model
        .vcpus
        .iter()
        .filter(|v| q.state(v.0) == Some(VcpuState::Ready))
        .map(|v| v.1)
        .max();
    match run {
        Some(r) => assert!(
            top_ready <= Some(model.priority(r)),
            "{r:?} runs below a ready vCPU"
        ),
        None => assert_eq!(top_ready, None, "idle while a vCPU is ready"),
    }
    assert!(!q.should_preempt(now), "pick left a preemption pending");
    for &(vcpu, priority, deadline) in &model.vcpus {
        if q.state(vcpu) != Some(VcpuState::Blocked) {
            continue;
        }
        let Some(deadline) = deadline else {
            continue;
        };
        assert!(deadline > now, "{vcpu:?} still blocked after its deadline");
        let could_run = run.is_none_or(|r| priority > model.priority(r));
        if could_run {
            let event = q.next_event(now).expect("a wake-up to program");
            assert!(
                event <= deadline,
                "EL2 timer {event} after {vcpu:?}'s deadline {deadline}"
            );
        }
    }
}

/// Two queues that must behave alike from now on: the same states, runner and next event.
fn check_same(a: &RunQueue, b: &RunQueue, model: &Model, now: u64) {
    for &(vcpu, _, _) in &model.vcpus {
        assert_eq!(a.state(vcpu), b.state(vcpu), "{vcpu:?}");
    }
    assert_eq!(a.running(), b.running());
    assert_eq!(a.next_event(now), b.next_event(now));
    assert_eq!(a.should_preempt(now), b.should_preempt(now));
    // The shortcuts keep the queue's own bookkeeping as the general calls do.
    assert_eq!(
        (a.timed, a.soonest, a.soonest_at),
        (b.timed, b.soonest, b.soonest_at)
    );
}

/// How often the shortcuts decided: `preempt_at_deadline`, `block_and_hand_over`, and the
/// pair's shortcuts inside them.
#[derive(Default)]
struct Tally {
    fast_paths: usize,
    hand_overs: usize,
    pair_preempts: usize,
    pair_hand_overs: usize,
}

/// Whether two queues are the same in every field (entries, tickets, bit sets).
fn identical(a: &RunQueue, b: &RunQueue) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

/// A pair's shortcuts decide, where they do, exactly as the general decision (the same
/// answer and the same queue, tickets included); `tally` counts where they did.
fn check_pair_shortcuts(q: &RunQueue, now: u64, deadline: Option<u64>, tally: &mut Tally) {
    let (mut pair, mut general) = (q.clone(), q.clone());
    if let Some(handed) = pair.pair_preempt_at_deadline(now) {
        assert_eq!(Some(handed), general.preempt_at_deadline_general(now));
        assert!(identical(&pair, &general), "{pair:?}\n{general:?}");
        tally.pair_preempts += 1;
    } else {
        assert!(identical(&pair, q), "a refused shortcut changed the queue");
    }
    let (mut pair, mut general) = (q.clone(), q.clone());
    if let Some(handed) = pair.pair_block_and_hand_over(now, deadline) {
        assert_eq!(
            Some(handed),
            general.block_and_hand_over_general(now, deadline)
        );
        assert!(identical(&pair, &general), "{pair:?}\n{general:?}");
        tally.pair_hand_overs += 1;
    } else {
        assert!(identical(&pair, q), "a refused shortcut changed the queue");
    }
}

/// The running vCPU blocks at `now` with a random deadline and leaves the CPU if another
/// vCPU runs: `block_and_hand_over` on a copy of the queue is checked against `block`,
/// `pick` and `leave`, and one of the two goes on; it hands over only when `has_ready`
/// said a vCPU was ready (the short exit asks that first). `hand_overs` counts its
/// successes.
fn hand_over(q: &mut RunQueue, model: &mut Model, rng: &mut Rng, now: u64, hand_overs: &mut usize) {
    let Some(running) = q.running() else {
        return;
    };
    let d = deadline(rng, now);
    let mut fast = q.clone();
    let untouched = q.clone();
    let ready = q.has_ready();
    let handed = fast.block_and_hand_over(now, d);
    assert!(
        ready || handed.is_none(),
        "a hand-over without a ready vCPU"
    );
    q.block(running, None).unwrap();
    model.set_deadline(running, None);
    let run = q.pick(now).run;
    if run.is_some() {
        assert_eq!(q.leave(running, || d), Some(VcpuState::Blocked));
        model.set_deadline(running, d);
    }
    match handed {
        Some(decision) => {
            assert_eq!(
                run,
                Some(decision.run),
                "block_and_hand_over disagrees with pick"
            );
            assert_eq!(
                decision.next_event,
                fast.next_event(now),
                "block_and_hand_over's next event disagrees with next_event"
            );
            check_same(&fast, q, model, now);
            check_after_pick(&fast, model, now);
            *hand_overs += 1;
            if rng.below(2) == 0 {
                *q = fast;
            }
        }
        None => check_same(&fast, &untouched, model, now),
    }
}

/// One random sequence of `calls` calls naming `ids` vCPUs; `tally.fast_paths` counts the
/// picks that `preempt_at_deadline` could take (checked against `pick` on a copy of the
/// queue), `tally.hand_overs` the blocks `block_and_hand_over` could take, and the pair's
/// counts where its shortcuts could decide (`check_pair_shortcuts`, before each call on a
/// pair: on any other queue they refuse at their first test).
fn run_sequence(seed: u64, calls: usize, ids: u64, tally: &mut Tally) {
    let mut rng = Rng(seed);
    let mut q = RunQueue::new(1 + rng.below(2 * SLICE));
    let mut model = Model::default();
    let mut now = rng.below(1_000);
    for _ in 0..calls {
        let before = q.running();
        let preempt = q.should_preempt(now);
        if q.pair {
            check_pair_shortcuts(&q, now, deadline(&mut rng, now), tally);
        }
        if before.is_some() && rng.below(6) == 0 {
            hand_over(&mut q, &mut model, &mut rng, now, &mut tally.hand_overs);
        } else if rng.below(3) == 0 {
            let mut fast = q.clone();
            let preempted = fast.preempt_at_deadline(now);
            let d = q.pick(now);
            if let Some(decision) = preempted {
                assert_eq!(
                    d.run,
                    Some(decision.run),
                    "preempt_at_deadline disagrees with pick"
                );
                assert_eq!(
                    decision.next_event,
                    fast.next_event(now),
                    "preempt_at_deadline's next event disagrees with next_event"
                );
                check_same(&fast, &q, &model, now);
                check_after_pick(&fast, &model, now);
                tally.fast_paths += 1;
                if rng.below(2) == 0 {
                    q = fast;
                }
            }
            assert_eq!(d.run, q.running());
            assert_eq!(
                preempt,
                d.run != before,
                "should_preempt disagrees with pick"
            );
            if let Some(end) = d.slice_end {
                assert!(end > now, "slice end {end} not after {now}");
            }
            check_after_pick(&q, &model, now);
        } else {
            step(&mut q, &mut model, &mut rng, &mut now, ids);
        }
        check_always(&q, &model, now);
    }
}

#[test]
fn random_call_sequences_keep_the_invariants() {
    let mut tally = Tally::default();
    for seed in 0..300 {
        run_sequence(seed, 400, IDS, &mut tally);
    }
    let Tally {
        fast_paths,
        hand_overs,
        ..
    } = tally;
    assert!(
        fast_paths > 100,
        "only {fast_paths} preemptions at a deadline"
    );
    assert!(hand_overs > 100, "only {hand_overs} hand-overs at a WFI");
}

/// Two vCPUs at most, as on a CPU shared by a real-time VM and a GPOS: the pair's shortcuts
/// decide often, and each time exactly as the general decision.
#[test]
fn random_pair_sequences_take_the_pair_shortcuts() {
    let mut tally = Tally::default();
    for seed in 0..300 {
        run_sequence(seed, 400, 2, &mut tally);
    }
    let Tally {
        pair_preempts,
        pair_hand_overs,
        ..
    } = tally;
    assert!(
        pair_preempts > 100,
        "only {pair_preempts} pair preemptions at a deadline"
    );
    assert!(
        pair_hand_overs > 100,
        "only {pair_hand_overs} pair hand-overs at a WFI"
    );
}
