//! Random operation sequences from a seeded generator (injections, device lines, HW links,
//! SGIs, distributor and redistributor writes including routes, and guest progress through
//! flush, acknowledge, EOI and sync), each followed by two checks: every vCPU's pending and
//! active sets equal what the per-interrupt states say, and `flush` chooses exactly what a
//! full scan of every INTID would choose.

use std::vec::Vec;

use crate::test_rng::Rng;

use super::SGI_BASE;
use crate::devices::{AccessSize, MmioDevice};
use crate::vgic::{
    ListRegister, LrState, SgiRequest, Vgic, ICH_HCR_NPIE, ICH_HCR_UIE, PRIVATE_IRQS,
};

const VCPUS: usize = 3;
const SPIS: u32 = 64;
const INTIDS: u32 = PRIVATE_IRQS + SPIS;
const LRS: usize = 4;

/// The test's vGIC and the list registers each vCPU's (modelled) CPU interface holds.
struct System {
    vgic: Vgic,
    lrs: [[u64; LRS]; VCPUS],
    /// The ICH_HCR_EL2 maintenance bits of each vCPU's last flush.
    hcr: [u64; VCPUS],
}

/// A few INTIDs most of the time, so operations pile up on the same interrupts, and now and
/// then one of every INTID the VM has (or one past its last).
fn intid(rng: &mut Rng) -> u32 {
    if rng.chance(4) {
        rng.below(u64::from(INTIDS) + 1) as u32
    } else {
        [1, 3, 20, 27, 32, 33, 40, 63, 64, 95][rng.below(10) as usize]
    }
}

fn dist_write(vgic: &mut Vgic, offset: u64, size: AccessSize, value: u64) {
    // Refused sizes are part of the test: they must change nothing.
    let _ = vgic.distributor().write(offset, size, value);
}

fn redist_write(vgic: &mut Vgic, vcpu: usize, offset: u64, size: AccessSize, value: u64) {
    let base = vcpu as u64 * crate::vgic::REDISTRIBUTOR_STRIDE + SGI_BASE;
    let _ = vgic.redistributors().write(base + offset, size, value);
}

/// A write to a one-bit-per-INTID register (IGROUPR to ICACTIVER) or ICFGR, IPRIORITYR.
fn bank_write(rng: &mut Rng, write: &mut dyn FnMut(u64, AccessSize, u64), words: u64) {
    let value = match rng.below(3) {
        0 => 1 << rng.below(32),
        1 => rng.next() & 0xffff_ffff,
        _ => 0xffff_ffff,
    };
    match rng.below(4) {
        0 | 1 => write(
            0x80 * (1 + rng.below(7)) + 4 * rng.below(words),
            AccessSize::Word,
            value,
        ),
        2 => write(0xc00 + 4 * rng.below(2 * words), AccessSize::Word, value),
        _ => write(
            0x400 + rng.below(32 * words),
            AccessSize::Byte,
            rng.below(256),
        ),
    }
}

/// The guest's CPU interface: acknowledges (pending -> active), deactivates (active ->
/// invalid, or pending if it was pending and active), or leaves a list register alone.
fn guest_progress(rng: &mut Rng, lrs: &mut [u64; LRS]) {
    for raw in lrs.iter_mut() {
        let lr = ListRegister::decode(*raw);
        let state = match (lr.state, rng.below(3)) {
            (LrState::Pending, 0) => LrState::Active,
            (LrState::Active, 0) => LrState::Invalid,
            (LrState::PendingActive, 0) => LrState::Pending,
            (state, _) => state,
        };
        *raw = ListRegister { state, ..lr }.encode();
    }
}

fn step(s: &mut System, rng: &mut Rng) {
    let vcpu = rng.below(VCPUS as u64) as usize;
    match rng.below(10) {
        0 => {
            let _ = s.vgic.inject(vcpu, intid(rng));
        }
        1 => {
            let _ = s.vgic.set_level(vcpu, intid(rng), rng.chance(2));
        }
        2 => {
            let hw = (!rng.chance(3)).then(|| 16 + rng.below(100) as u32);
            let _ = s.vgic.set_hw(vcpu, intid(rng), hw);
        }
        3 => {
            let request = SgiRequest::decode(rng.next() & 0x00ff_ffff_0fff_ffff);
            let _ = s.vgic.send_sgi(vcpu, request);
        }
        4 => bank_write(rng, &mut |o, z, v| dist_write(&mut s.vgic, o, z, v), 3),
        5 => bank_write(
            rng,
            &mut |o, z, v| redist_write(&mut s.vgic, vcpu, o, z, v),
            1,
        ),
        6 => {
            let spi = u64::from(PRIVATE_IRQS) + rng.below(u64::from(SPIS));
            let route = match rng.below(4) {
                0 => 1 << 31,
                1 => 0x100,
                _ => rng.below(VCPUS as u64 + 1),
            };
            let size = if rng.chance(2) {
                AccessSize::Double
            } else {
                AccessSize::Word
            };
            dist_write(&mut s.vgic, 0x6000 + 8 * spi, size, route);
        }
        7 if rng.chance(8) => dist_write(&mut s.vgic, 0, AccessSize::Word, rng.below(4)),
        _ => run_guest(s, rng, vcpu),
    }
}

/// Flush (checked against a full scan), let the guest work, then sync.
fn run_guest(s: &mut System, rng: &mut Rng, vcpu: usize) {
    let expected = full_scan_choice(&s.vgic, vcpu, &s.lrs[vcpu]);
    let flush = s.vgic.flush(vcpu, &s.lrs[vcpu]).expect("flush");
    let chosen: Vec<u32> = flush
        .values()
        .iter()
        .map(|&raw| ListRegister::decode(raw))
        .filter(|lr| lr.state != LrState::Invalid)
        .map(|lr| lr.vintid)
        .collect();
    assert_eq!(chosen, expected.0, "list registers of vCPU {vcpu}");
    assert_eq!(
        flush.hcr & (ICH_HCR_NPIE | ICH_HCR_UIE) != 0,
        expected.1,
        "maintenance request of vCPU {vcpu}"
    );
    s.lrs[vcpu].copy_from_slice(flush.values());
    s.hcr[vcpu] = flush.hcr;
    guest_progress(rng, &mut s.lrs[vcpu]);
    if rng.chance(2) {
        s.vgic.sync(vcpu, &s.lrs[vcpu]).expect("sync");
    }
}

/// The vCPU an interrupt belongs to, by scanning: private ones to their bank, SPIs by route.
fn owner(vgic: &Vgic, vcpu: usize, intid: u32) -> Option<usize> {
    if intid < PRIVATE_IRQS {
        Some(vcpu)
    } else {
        vgic.spi_target(intid)
    }
}

/// What `flush` must choose, found the slow way on a copy: sync, then every INTID of the VM
/// that `vcpu` owns and that is active or deliverable, best first, as many as fit; and
/// whether some did not fit.
fn full_scan_choice(vgic: &Vgic, vcpu: usize, lrs: &[u64]) -> (Vec<u32>, bool) {
    let mut copy = vgic.clone();
    copy.sync(vcpu, lrs).expect("sync");
    let mut keys: Vec<(bool, u8, u32)> = (0..INTIDS)
        .filter(|&i| owner(&copy, vcpu, i) == Some(vcpu))
        .filter_map(|i| {
            let irq = copy.irq(vcpu, i).ok()?;
            let deliverable = irq.pending() && irq.enabled && copy.ctlr.group_enabled(irq.group1);
            (irq.active || deliverable).then_some((!irq.active, irq.priority, i))
        })
        .collect();
    keys.sort_unstable();
    let overflow = keys.len() > LRS;
    let chosen: Vec<u32> = keys.iter().take(LRS).map(|k| k.2).collect();
    // With four list registers every overflow asks for maintenance (NPIE or UIE).
    (chosen, overflow)
}

/// Every vCPU's pending and active sets hold exactly the interrupts it owns that are
/// pending, respectively active.
fn check_sets(vgic: &Vgic) {
    for (v, bank) in vgic.vcpus.iter().enumerate() {
        let expect = |f: &dyn Fn(u32) -> bool| -> Vec<u32> {
            (0..INTIDS)
                .filter(|&i| owner(vgic, v, i) == Some(v) && f(i))
                .collect()
        };
        let pending = expect(&|i| vgic.irq(v, i).is_ok_and(|irq| irq.pending()));
        let active = expect(&|i| vgic.irq(v, i).is_ok_and(|irq| irq.active));
        assert_eq!(
            bank.pending.iter().collect::<Vec<_>>(),
            pending,
            "pending of vCPU {v}"
        );
        assert_eq!(
            bank.active.iter().collect::<Vec<_>>(),
            active,
            "active of vCPU {v}"
        );
    }
}

fn run_sequence(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let mut s = System {
        vgic: Vgic::new(VCPUS, SPIS).expect("valid configuration"),
        lrs: [[0; LRS]; VCPUS],
        hcr: [0; VCPUS],
    };
    // Mostly enabled Group 1, so that flushes have something to choose.
    dist_write(&mut s.vgic, 0, AccessSize::Word, 0x3);
    for w in 1..3 {
        dist_write(&mut s.vgic, 0x80 + 4 * w, AccessSize::Word, rng.next());
        dist_write(
            &mut s.vgic,
            0x100 + 4 * w,
            AccessSize::Word,
            !(rng.next() & rng.next()),
        );
    }
    for v in 0..VCPUS {
        redist_write(&mut s.vgic, v, 0x80, AccessSize::Word, rng.next());
        redist_write(&mut s.vgic, v, 0x100, AccessSize::Word, u64::from(u32::MAX));
    }
    for _ in 0..steps {
        step(&mut s, &mut rng);
        check_sets(&s.vgic);
    }
    assert!(s
        .hcr
        .iter()
        .all(|&h| h & !(ICH_HCR_NPIE | ICH_HCR_UIE) == 0));
}

#[test]
fn pending_and_active_sets_follow_every_change_and_flush_matches_a_full_scan() {
    for seed in 0..200 {
        run_sequence(seed, 300);
    }
}
