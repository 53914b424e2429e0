//! The accelerator manager (`partita_core::accel::manager`) on a random fabric under any
//! sequence of requests (a storm included) and fabric events: after every step its
//! invariants hold (no region hosts two tasks, no interface is connected to two regions,
//! every outstanding request is queued or carried exactly once, nothing queued is
//! solvable); a queued request of the highest priority only ever waits for tasks of its
//! own priority (so an RTOS request waits for a GPOS task at most one consistency point
//! plus one reconfiguration: it is carried, never queued behind it); and once VMs stop
//! asking and the fabric finishes its work, every request has been answered.

#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use partita_core::accel::manager::{Actions, Bitstream, Manager, Spec};
use partita_core::accel::policy::idle_then_smallest;
use partita_core::accel::prr::PrrState;

#[derive(Arbitrary, Debug)]
struct Fabric {
    /// Region sizes (1 to 4 regions).
    regions: Vec<u16>,
    /// Per device, a bit mask of compatible regions (1 to 4 devices).
    compat: Vec<u8>,
    /// Per VM, its priority and a bit mask of its interfaces (1 to 3 VMs).
    vms: Vec<(u8, u8)>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Request { vm: u8, dev: u8, storm: u8 },
    Start { prr: u8 },
    JobDone { prr: u8 },
    Preempted { prr: u8, saved: bool },
    Reconfigured { prr: u8 },
    Expire { advance: u32 },
    Release { vm: u8 },
}

fn spec(f: &Fabric) -> Option<Spec> {
    let regions: Vec<u64> = f
        .regions
        .iter()
        .take(4)
        .map(|&s| u64::from(s) + 1)
        .collect();
    if regions.is_empty() || f.compat.is_empty() || f.vms.is_empty() {
        return None;
    }
    let index = f
        .compat
        .iter()
        .take(4)
        .map(|&mask| {
            (0..regions.len())
                .filter(|&p| mask & (1 << p) != 0)
                .map(|p| Bitstream {
                    prr: p as u8,
                    id: p as u16,
                    size: regions[p],
                    reconfig_ns: regions[p] * 10,
                })
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>();
    if index.iter().any(Vec::is_empty) {
        return None;
    }
    let vms = &f.vms[..f.vms.len().min(3)];
    Some(Spec {
        regions,
        index,
        priorities: vms.iter().map(|v| v.0).collect(),
        interfaces: vms.iter().map(|v| u32::from(v.1)).collect(),
        hold_ns: 1_000,
    })
}

/// A queued request of the highest priority waits only for regions its own priority holds.
fn highest_waits_only_for_peers(m: &Manager) {
    let top = m.spec().priorities.iter().copied().max().unwrap_or(0);
    for r in m.search_list().iter().filter(|r| r.prio == top) {
        for b in &m.spec().index[usize::from(r.dev)] {
            let d = m.prr(b.prr).unwrap();
            let holder = match d.state {
                PrrState::Idle => panic!("{r:?} queued beside idle region {}", b.prr),
                PrrState::Busy | PrrState::Hold => Some(d.priority),
                PrrState::Preempt | PrrState::Reconfig | PrrState::Switch => {
                    m.next_of(b.prr).map(|n| n.prio)
                }
            };
            if let Some(p) = holder {
                assert!(
                    p >= top,
                    "{r:?} queued behind priority {p} on region {}",
                    b.prr
                );
            }
        }
    }
}

fn step(m: &mut Manager, op: &Op, now: &mut u64) {
    let mut out = Actions::new();
    let regions = m.spec().regions.len() as u8;
    match *op {
        Op::Request { vm, dev, storm } => {
            for _ in 0..=storm % 8 {
                m.request(vm % 4, dev % 5, *now, &mut out);
            }
        }
        Op::Start { prr } => {
            m.started(prr % (regions + 1));
        }
        Op::JobDone { prr } => m.job_done(prr % regions, *now, &mut out),
        Op::Preempted { prr, saved } => {
            let prr = prr % regions;
            m.consistency_point(prr, &mut out);
            if m.prr(prr).unwrap().state == PrrState::Switch {
                m.switched(prr, saved, *now, &mut out);
                m.serve(*now, &mut out);
            }
        }
        Op::Reconfigured { prr } => m.reconfigured(prr % regions, *now, &mut out),
        Op::Expire { advance } => {
            *now += u64::from(advance);
            m.expire(*now, &mut out);
        }
        Op::Release { vm } => m.release_vm(vm % 4, *now, &mut out),
    }
    if let Err(broken) = m.check() {
        panic!("after {op:?}: {broken}");
    }
    highest_waits_only_for_peers(m);
}

/// The fabric finishes everything and no VM asks for more.
fn drain(m: &mut Manager, now: &mut u64) {
    for _ in 0..64 {
        let mut out = Actions::new();
        for prr in 0..m.spec().regions.len() as u8 {
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
            out.clear();
        }
        *now += 1_000_000;
        m.check().unwrap();
    }
    assert!(
        m.search_list().is_empty(),
        "unanswered: {:?}",
        m.search_list()
    );
}

fuzz_target!(|input: (Fabric, Vec<Op>)| {
    let (fabric, ops) = input;
    let Some(spec) = spec(&fabric) else {
        return;
    };
    let mut m = Manager::new(spec, idle_then_smallest);
    let mut now = 0;
    for op in &ops {
        step(&mut m, op, &mut now);
    }
    drain(&mut m, &mut now);
});
