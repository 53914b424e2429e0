use crate::test_rng::Rng;
use crate::vgic::{Affinity, SelfSgi, SgiRequest, SgiTargetSpec, Vgic, VgicError, MAX_VCPUS};
use std::vec::Vec;

/// An ICC_SGI1R_EL1 value from its fields.
fn sgi1r(intid: u64, aff1: u64, rs: u64, target_list: u64) -> u64 {
    (rs << 44) | (intid << 24) | (aff1 << 16) | target_list
}

#[test]
fn decodes_every_field() {
    let raw = (0x12 << 48) | (0x5 << 44) | (0x34 << 32) | (0xb << 24) | (0x56 << 16) | 0x8001;
    assert_eq!(
        SgiRequest::decode(raw),
        SgiRequest {
            intid: 11,
            targets: SgiTargetSpec::List {
                aff3: 0x12,
                aff2: 0x34,
                aff1: 0x56,
                range_selector: 5,
                target_list: 0x8001,
            },
        }
    );
    let all = SgiRequest::decode((1 << 40) | (3 << 24) | 0xffff);
    assert_eq!(all.targets, SgiTargetSpec::AllButSelf);
    assert_eq!(all.intid, 3);
    let noise = SgiRequest::decode(u64::MAX);
    assert_eq!(noise.intid, 15);
}

#[test]
fn uniprocessor_sgi_to_self() {
    let mut v = Vgic::new(1, 32).unwrap();
    let targets = v
        .send_sgi(0, SgiRequest::decode(sgi1r(1, 0, 0, 0b1)))
        .unwrap();
    assert_eq!(targets.iter().collect::<Vec<_>>(), [0]);
    assert!(targets.is_only(0) && !targets.is_only(1) && !targets.is_only(64));
    assert!(v.irq(0, 1).unwrap().pending());
    assert!(!v.irq(0, 2).unwrap().pending());
}

#[test]
fn target_lists_address_vcpus_by_affinity() {
    let mut v = Vgic::new(20, 32).unwrap();
    let targets = v
        .send_sgi(0, SgiRequest::decode(sgi1r(7, 0, 0, (1 << 2) | (1 << 5))))
        .unwrap();
    assert_eq!(targets.iter().collect::<Vec<_>>(), [2, 5]);
    assert!(v.irq(2, 7).unwrap().pending() && v.irq(5, 7).unwrap().pending());
    assert!(!v.irq(0, 7).unwrap().pending());
    let cluster1 = v
        .send_sgi(0, SgiRequest::decode(sgi1r(4, 1, 0, 0b11 | (1 << 15))))
        .unwrap();
    assert_eq!(
        cluster1.iter().collect::<Vec<_>>(),
        [16, 17],
        "vCPU 31 does not exist"
    );
    let range = v
        .send_sgi(0, SgiRequest::decode(sgi1r(4, 0, 1, 0b1)))
        .unwrap();
    assert!(range.is_empty(), "RS = 1 names Aff0 16, which no vCPU has");
}

#[test]
fn irm_reaches_every_other_vcpu() {
    let mut v = Vgic::new(3, 32).unwrap();
    let targets = v
        .send_sgi(1, SgiRequest::decode((1 << 40) | (9 << 24)))
        .unwrap();
    assert_eq!(targets.iter().collect::<Vec<_>>(), [0, 2]);
    assert!(!targets.contains(1));
    assert!(!v.irq(1, 9).unwrap().pending());
    let alone = Vgic::new(1, 32)
        .unwrap()
        .send_sgi(0, SgiRequest::decode(1 << 40))
        .unwrap();
    assert!(alone.is_empty());
}

#[test]
fn other_affinity_levels_reach_nobody_and_bad_sources_are_refused() {
    let mut v = Vgic::new(2, 32).unwrap();
    assert!(
        v.send_sgi(0, SgiRequest::decode((1 << 48) | 0b11))
            .unwrap()
            .is_empty(),
        "Aff3 = 1"
    );
    assert!(
        v.send_sgi(0, SgiRequest::decode((1 << 32) | 0b11))
            .unwrap()
            .is_empty(),
        "Aff2 = 1"
    );
    assert!(v.send_sgi(2, SgiRequest::decode(0b1)).is_err());
    let forged = SgiRequest {
        intid: 200,
        ..SgiRequest::decode(0b1)
    };
    assert_eq!(v.send_sgi(0, forged), Err(VgicError::NoSuchIntid));
}

/// The value a port sends an SGI to itself with, from its MPIDR_EL1 (the FreeRTOS guest's
/// `SgiToSelf`): its Aff0 bit in TargetList, RS = Aff0 / 16, Aff1..Aff3 as they are.
fn port_self_sgi(intid: u64, mpidr: u64) -> u64 {
    let aff = |shift: u32| (mpidr >> shift) & 0xff;
    (1 << (aff(0) % 16))
        | ((aff(0) / 16) << 44)
        | (aff(8) << 16)
        | (intid << 24)
        | (aff(16) << 32)
        | (aff(32) << 48)
}

#[test]
fn a_self_sgi_is_recognised_in_one_compare_and_reaches_its_sender_alone() {
    for vcpu in 0..MAX_VCPUS {
        let own = SelfSgi::new(vcpu);
        let mpidr = Affinity::of_vcpu(vcpu).mpidr();
        for intid in 0..16 {
            let value = port_self_sgi(intid, mpidr);
            assert_eq!(own.intid(value), Some(intid as u32), "vCPU {vcpu}");
            // RES0 bits change nothing.
            assert_eq!(own.intid(value | 0xff00_0e00_f000_0000), Some(intid as u32));
        }
    }
    // Whatever it recognises, the general decoder sends to the sender alone, the same SGI;
    // half the draws are one bit off a self-SGI.
    let mut rng = Rng(0x5e1f);
    for n in 0..200_000u32 {
        let vcpu = rng.below(MAX_VCPUS as u64) as usize;
        let count = vcpu + 1 + rng.below((MAX_VCPUS - vcpu) as u64) as usize;
        let mut value = rng.next();
        if n % 2 == 0 {
            value = port_self_sgi(rng.below(16), Affinity::of_vcpu(vcpu).mpidr())
                ^ (1 << rng.below(64));
        }
        if let Some(intid) = SelfSgi::new(vcpu).intid(value) {
            let request = SgiRequest::decode(value);
            assert!(request.targets(vcpu, count).is_only(vcpu), "{value:#x}");
            assert_eq!(u32::from(request.intid), intid);
        }
    }
    // Not recognised: another vCPU, IRM, a second target, another cluster, RS.
    let own = SelfSgi::new(1);
    for value in [
        1 << 24 | 0b1,
        1 << 40 | 0b10,
        0b110,
        1 << 16 | 0b10,
        1 << 44 | 0b10,
    ] {
        assert_eq!(own.intid(value), None, "{value:#x}");
    }
}

#[test]
fn affinity_layout() {
    let a = Affinity::of_vcpu(35);
    assert_eq!((a.aff1, a.aff0), (2, 3));
    assert_eq!(a.mpidr(), 0x0203);
    assert_eq!(a.packed(), 0x0000_0203);
    let r = Affinity::from_irouter(0x0000_00aa_8033_2211);
    assert_eq!((r.aff3, r.aff2, r.aff1, r.aff0), (0xaa, 0x33, 0x22, 0x11));
    assert_eq!(Affinity::of_vcpu(35).vcpu_index(36), Some(35));
    assert_eq!(Affinity::of_vcpu(35).vcpu_index(35), None);
}

/// Two vCPUs with Group 1 on and SGI 3 enabled on vCPU 1.
fn two_vcpus_sgi3_enabled() -> Vgic {
    use crate::devices::{AccessSize, MmioDevice};
    let mut v = Vgic::new(2, 32).unwrap();
    v.distributor().write(0, AccessSize::Word, 0x2).unwrap();
    let frame = crate::vgic::REDISTRIBUTOR_STRIDE + super::SGI_BASE;
    let mut r = v.redistributors();
    r.write(frame + 0x80, AccessSize::Word, 0xffff_ffff)
        .unwrap();
    r.write(frame + 0x100, AccessSize::Word, 1 << 3).unwrap();
    v
}

#[test]
fn an_sgi_from_another_vcpu_while_the_first_is_live_is_not_lost() {
    use crate::vgic::{ListRegister, LrState};
    let mut v = two_vcpus_sgi3_enabled();
    v.take_touched();
    v.send_sgi(0, SgiRequest::decode(sgi1r(3, 0, 0, 0b10)))
        .unwrap();
    assert_eq!(v.take_touched(), 0b10, "vCPU 1 is to be kicked");
    let mut lrs = [0u64; 4];
    v.flush_in_place(1, &mut lrs).unwrap();
    assert_eq!(ListRegister::decode(lrs[0]).state, LrState::Pending);
    // vCPU 1 runs on its CPU and takes SGI 3; meanwhile vCPU 0 sends it again.
    v.send_sgi(0, SgiRequest::decode(sgi1r(3, 0, 0, 0b10)))
        .unwrap();
    assert_eq!(v.take_touched(), 0b10);
    let mut acked = ListRegister::decode(lrs[0]);
    acked.state = LrState::Active;
    lrs[0] = acked.encode();
    v.sync(1, &lrs).unwrap();
    let sgi = v.irq(1, 3).unwrap();
    assert!(
        sgi.active && sgi.pending(),
        "the second SGI waits behind the first"
    );
    // Its own changes touch only itself.
    v.inject(1, 3).unwrap();
    assert_eq!(v.take_touched(), 0b10);
    assert_eq!(v.take_touched(), 0);
}
