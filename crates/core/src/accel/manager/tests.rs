//! The manager on the OFDM fabric of Ker-ONE's section 6.1: three regions, four devices with
//! Table 5's compatibility, an RTOS (priority 10) and a GPOS (priority 1).

use super::*;
use crate::accel::policy::{idle_then_smallest, Method, Solution};
use crate::test_rng::Rng;
use alloc::vec;

const RTOS: VmId = 0;
const GPOS: VmId = 1;
const QAM16: DevId = 0;
const QAM64: DevId = 1;
const FFT512: DevId = 2;
const FFT1024: DevId = 3;
const HOLD: u64 = 500_000;

fn bitstream(prr: PrrId, size: u64) -> Bitstream {
    Bitstream {
        prr,
        id: u16::from(prr),
        size,
        reconfig_ns: crate::accel::timing::reconfig_ns(size, 400),
    }
}

pub(crate) fn ofdm() -> Spec {
    let (s1, s2, s3) = (92_400, 324_000, 482_400);
    Spec {
        regions: vec![s1, s2, s3],
        index: vec![
            vec![bitstream(0, s1), bitstream(1, s2)],
            vec![bitstream(0, s1), bitstream(1, s2)],
            vec![bitstream(1, s2), bitstream(2, s3)],
            vec![bitstream(2, s3)],
        ],
        priorities: vec![10, 1],
        interfaces: vec![0b1111, 0b1111],
        hold_ns: HOLD,
    }
}

fn manager() -> Manager {
    Manager::new(ofdm(), idle_then_smallest)
}

fn run(m: &mut Manager, f: impl FnOnce(&mut Manager, &mut Actions)) -> Actions {
    let mut out = Actions::new();
    f(m, &mut out);
    m.check().unwrap();
    out
}

fn sig(vm: VmId, dev: DevId, signal: Signal) -> Action {
    Action::Signal { vm, dev, signal }
}

#[test]
fn first_use_reconfigures_the_smallest_region_then_connects() {
    let mut m = manager();
    let mut answer = Answer::NoInterface;
    let out = run(&mut m, |m, o| answer = m.request(GPOS, QAM16, 0, o));
    assert_eq!(answer, Answer::Waiting);
    assert_eq!(
        out.as_slice(),
        [
            Action::Reconfigure {
                prr: 0,
                dev: QAM16,
                bitstream: 0,
                ns: 231_000
            },
            sig(GPOS, QAM16, Signal::Wait),
        ]
    );
    // A storm of writes while waiting changes nothing.
    for _ in 0..100 {
        assert!(run(&mut m, |m, o| assert_eq!(
            m.request(GPOS, QAM16, 1, o),
            Answer::Waiting
        ))
        .is_empty());
    }
    let out = run(&mut m, |m, o| m.reconfigured(0, 231_000, o));
    assert_eq!(
        out.as_slice(),
        [
            Action::Connect {
                vm: GPOS,
                dev: QAM16,
                prr: 0,
                resume: false
            },
            sig(GPOS, QAM16, Signal::Ready),
        ]
    );
    assert_eq!(m.prr(0).unwrap().state, PrrState::Hold);
}

/// GPOS's QAM-16 job finished on region 0: its client stays connected.
fn gpos_done_on_region0(m: &mut Manager) {
    run(m, |m, o| {
        m.request(GPOS, QAM16, 0, o);
    });
    run(m, |m, o| m.reconfigured(0, 1, o));
    assert!(m.started(0));
    run(m, |m, o| m.job_done(0, 2, o));
    assert_eq!(m.prr(0).unwrap().state, PrrState::Idle);
    assert_eq!(m.connected(GPOS, QAM16), Some(0));
}

/// GPOS runs QAM-16 on region 0 and QAM-64 on region 1.
fn gpos_busy_on_regions_0_and_1(m: &mut Manager) {
    gpos_done_on_region0(m);
    assert!(m.started(0));
    let out = run(m, |m, o| {
        m.request(GPOS, QAM64, 3, o);
    });
    assert_eq!(
        out[0],
        Action::Reconfigure {
            prr: 1,
            dev: QAM64,
            bitstream: 1,
            ns: 810_000
        }
    );
    run(m, |m, o| m.reconfigured(1, 4, o));
    assert!(m.started(1));
}

#[test]
fn path1_assigns_an_idle_loaded_region_at_once() {
    let mut m = manager();
    gpos_done_on_region0(&mut m);
    let mut answer = Answer::NoInterface;
    let out = run(&mut m, |m, o| answer = m.request(RTOS, QAM16, 10, o));
    assert_eq!(answer, Answer::Connected);
    assert_eq!(
        out.as_slice(),
        [
            Action::Disconnect {
                vm: GPOS,
                dev: QAM16,
                prr: 0
            },
            Action::Connect {
                vm: RTOS,
                dev: QAM16,
                prr: 0,
                resume: false
            },
        ]
    );
    assert_eq!(m.connected(GPOS, QAM16), None);
    // Fig. 15's path 1, whatever the actions: an Assign without reconfiguration.
    assert_eq!(
        m.last_solution(),
        Some(Solution {
            prr: 0,
            method: Method::Assign,
            reconfig: false
        })
    );
}

#[test]
fn a_busy_lower_priority_task_is_preempted_at_its_consistency_point_and_resumes() {
    let mut m = manager();
    gpos_busy_on_regions_0_and_1(&mut m);
    // Both QAM regions run GPOS jobs: the RTOS preempts the smaller one.
    let out = run(&mut m, |m, o| {
        assert_eq!(m.request(RTOS, QAM16, 5, o), Answer::Waiting)
    });
    assert_eq!(
        out.as_slice(),
        [Action::Stop { prr: 0 }, sig(RTOS, QAM16, Signal::Wait)]
    );
    assert_eq!(
        m.last_solution(),
        Some(Solution {
            prr: 0,
            method: Method::Preempt,
            reconfig: false
        })
    );
    assert_eq!(m.prr(0).unwrap().state, PrrState::Preempt);
    let out = run(&mut m, |m, o| m.consistency_point(0, o));
    assert_eq!(
        out.as_slice(),
        [Action::Save {
            vm: GPOS,
            dev: QAM16,
            prr: 0
        }]
    );
    // The new client is connected before the old one is told: the hypervisor connects it
    // first, then does the rest.
    let out = run(&mut m, |m, o| m.switched(0, true, 6, o));
    assert_eq!(
        out.as_slice(),
        [
            Action::Disconnect {
                vm: GPOS,
                dev: QAM16,
                prr: 0
            },
            Action::Connect {
                vm: RTOS,
                dev: QAM16,
                prr: 0,
                resume: false
            },
            sig(RTOS, QAM16, Signal::Ready),
            sig(GPOS, QAM16, Signal::Preempt),
        ]
    );
    // Nothing else can take the preempted work yet: serving the list leaves it queued.
    assert!(run(&mut m, |m, o| m.serve(6, o)).is_empty());
    assert!(m.suspended(GPOS, QAM16));
    assert_eq!(
        m.search_list(),
        [Request {
            vm: GPOS,
            dev: QAM16,
            prio: 1
        }]
    );
    // The RTOS job ends: the GPOS task resumes from its context in region 0.
    assert!(m.started(0));
    let out = run(&mut m, |m, o| m.job_done(0, 7, o));
    assert_eq!(
        out.as_slice(),
        [
            Action::Disconnect {
                vm: RTOS,
                dev: QAM16,
                prr: 0
            },
            Action::Connect {
                vm: GPOS,
                dev: QAM16,
                prr: 0,
                resume: true
            },
            sig(GPOS, QAM16, Signal::Ready),
        ]
    );
}

#[test]
fn equal_priorities_never_preempt_and_wait_in_fifo_order() {
    let mut m = manager();
    run(&mut m, |m, o| {
        m.request(GPOS, FFT1024, 0, o);
    });
    run(&mut m, |m, o| m.reconfigured(2, 1, o));
    assert!(m.started(2));
    // FFT-512 goes to region 1; then nothing is left for FFT-512 of the same VM's peer.
    run(&mut m, |m, o| {
        m.request(GPOS, FFT512, 2, o);
    });
    run(&mut m, |m, o| m.reconfigured(1, 3, o));
    assert!(m.started(1));
    let mut spec = ofdm();
    spec.priorities = vec![1, 1];
    let mut m2 = Manager::new(spec, idle_then_smallest);
    run(&mut m2, |m, o| {
        m.request(GPOS, FFT1024, 0, o);
    });
    run(&mut m2, |m, o| m.reconfigured(2, 1, o));
    assert!(m2.started(2));
    let out = run(&mut m2, |m, o| {
        assert_eq!(m.request(RTOS, FFT1024, 2, o), Answer::Waiting)
    });
    assert_eq!(out.as_slice(), [sig(RTOS, FFT1024, Signal::Wait)]);
    // Unavailable: queued, no solution (no path of Fig. 15 yet).
    assert_eq!(m2.last_solution(), None);
    assert_eq!(m2.search_list().len(), 1);
}

#[test]
fn a_held_region_expires_to_idle_and_a_lower_hold_is_taken_at_once() {
    let mut m = manager();
    run(&mut m, |m, o| {
        m.request(GPOS, FFT1024, 0, o);
    });
    run(&mut m, |m, o| m.reconfigured(2, 1_000, o));
    assert_eq!(m.next_expiry(), Some(1_000 + HOLD));
    // The RTOS takes the held region at once: no consistency point to wait for.
    let out = run(&mut m, |m, o| {
        assert_eq!(m.request(RTOS, FFT1024, 2_000, o), Answer::Connected)
    });
    assert_eq!(
        out.as_slice(),
        [
            Action::Disconnect {
                vm: GPOS,
                dev: FFT1024,
                prr: 2
            },
            sig(GPOS, FFT1024, Signal::Preempt),
            Action::Connect {
                vm: RTOS,
                dev: FFT1024,
                prr: 2,
                resume: false
            },
        ]
    );
    run(&mut m, |m, o| m.expire(2_000 + HOLD, o));
    assert_eq!(m.prr(2).unwrap().state, PrrState::Idle);
}

#[test]
fn a_higher_request_takes_over_a_lower_reconfiguration() {
    let mut m = manager();
    run(&mut m, |m, o| {
        m.request(GPOS, FFT1024, 0, o);
    });
    let out = run(&mut m, |m, o| {
        assert_eq!(m.request(RTOS, FFT1024, 5, o), Answer::Waiting)
    });
    // Same bitstream: the load goes on, for the RTOS now.
    assert_eq!(out.as_slice(), [sig(RTOS, FFT1024, Signal::Wait)]);
    assert_eq!(
        m.search_list(),
        [Request {
            vm: GPOS,
            dev: FFT1024,
            prio: 1
        }]
    );
    let out = run(&mut m, |m, o| m.reconfigured(2, 9, o));
    assert_eq!(
        out[0],
        Action::Connect {
            vm: RTOS,
            dev: FFT1024,
            prr: 2,
            resume: false
        }
    );
}

#[test]
fn a_stopped_vm_releases_everything() {
    let mut m = manager();
    gpos_busy_on_regions_0_and_1(&mut m);
    run(&mut m, |m, o| {
        m.request(RTOS, QAM16, 5, o);
    });
    assert_eq!(m.prr(0).unwrap().state, PrrState::Preempt);
    run(&mut m, |m, o| {
        m.request(GPOS, FFT1024, 5, o);
    });
    let out = run(&mut m, |m, o| m.release_vm(GPOS, 6, o));
    assert!(out.contains(&Action::Disconnect {
        vm: GPOS,
        dev: QAM16,
        prr: 0
    }));
    assert!(out.contains(&Action::Connect {
        vm: RTOS,
        dev: QAM16,
        prr: 0,
        resume: false
    }));
    assert_eq!(m.connected(GPOS, QAM16), None);
    // The GPOS's FFT load finishes for no one.
    run(&mut m, |m, o| m.reconfigured(2, 7, o));
    assert_eq!(m.prr(2).unwrap().state, PrrState::Idle);
}

#[test]
fn unknown_interfaces_are_refused() {
    let mut m = manager();
    let mut out = Actions::new();
    assert_eq!(m.request(7, 0, 0, &mut out), Answer::NoInterface);
    assert_eq!(m.request(0, 40, 0, &mut out), Answer::NoInterface);
    assert!(out.is_empty());
}

/// One random step of the fabric or the VMs; the harness the fuzz target mirrors.
fn random_step(m: &mut Manager, rng: &mut Rng, now: &mut u64) {
    *now += rng.below(300_000);
    let mut out = Actions::new();
    let prr = rng.below(3) as PrrId;
    match rng.below(7) {
        0 | 1 => {
            m.request(rng.below(2) as VmId, rng.below(4) as DevId, *now, &mut out);
        }
        2 => {
            m.started(prr);
        }
        3 => m.job_done(prr, *now, &mut out),
        4 => {
            m.consistency_point(prr, &mut out);
            if !out.is_empty() {
                m.switched(prr, true, *now, &mut out);
                m.serve(*now, &mut out);
            }
        }
        5 => m.reconfigured(prr, *now, &mut out),
        _ => m.expire(*now, &mut out),
    }
    m.check().unwrap();
}

/// Lets the fabric finish everything and no VM ask for more: every request is answered.
pub(crate) fn drain(m: &mut Manager, now: &mut u64) {
    for _ in 0..200 {
        let mut out = Actions::new();
        for prr in 0..m.spec().regions.len() as PrrId {
            match m.prr(prr).unwrap().state {
                PrrState::Busy => m.job_done(prr, *now, &mut out),
                PrrState::Preempt => {
                    m.consistency_point(prr, &mut out);
                    m.switched(prr, true, *now, &mut out);
                    m.serve(*now, &mut out);
                }
                PrrState::Reconfig => m.reconfigured(prr, *now, &mut out),
                PrrState::Hold => {
                    if !m.started(prr) {
                        m.expire(u64::MAX, &mut out);
                    }
                }
                PrrState::Idle | PrrState::Switch => {}
            }
        }
        *now += 1_000_000;
        m.check().unwrap();
    }
    assert!(m.search_list().is_empty(), "{:?}", m.search_list());
}

#[test]
fn random_sequences_keep_the_invariants_and_answer_every_request() {
    let mut rng = Rng(0x5eed);
    for _ in 0..300 {
        let mut m = manager();
        let mut now = 0;
        for _ in 0..rng.below(200) {
            random_step(&mut m, &mut rng, &mut now);
        }
        drain(&mut m, &mut now);
    }
}
