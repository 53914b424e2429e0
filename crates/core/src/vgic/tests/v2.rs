//! The GICv2 front-end: its distributor registers, Linux's GICv2 boot sequence (gic_dist_init,
//! gic_cpu_init), GICD_SGIR, ITARGETSR routing and the GICH_LR encoding, on the shared model.

use crate::devices::{AccessFault, AccessSize, MmioDevice};
use crate::vgic::{
    from_v2, to_v2, ListRegister, LrLink, LrState, SgirFilter, SgirRequest, Vgic,
    DISTRIBUTOR_V2_SIZE,
};
use std::vec::Vec;

fn read(v: &mut Vgic, vcpu: usize, offset: u64) -> u64 {
    v.distributor_v2(vcpu)
        .read(offset, AccessSize::Word)
        .expect("read")
}

fn write(v: &mut Vgic, vcpu: usize, offset: u64, value: u64) {
    v.distributor_v2(vcpu)
        .write(offset, AccessSize::Word, value)
        .expect("write");
}

#[test]
fn identification_and_typer() {
    let mut v = Vgic::new(1, 64).unwrap();
    // 96 lines: ITLinesNumber 2; one CPU: CPUNumber 0; no Security Extensions.
    assert_eq!(read(&mut v, 0, 0x004), 2);
    assert_eq!(read(&mut v, 0, 0xfe8) & 0xf0, 0x20, "ArchRev 2");
    let mut two = Vgic::new(2, 32).unwrap();
    assert_eq!(read(&mut two, 1, 0x004), 1 | (1 << 5));
}

#[test]
fn ctlr_enables_both_groups() {
    let mut v = Vgic::new(1, 32).unwrap();
    write(&mut v, 0, 0x000, 0b11);
    assert_eq!(read(&mut v, 0, 0x000), 0b11);
    write(&mut v, 0, 0x000, 0b1);
    assert_eq!(read(&mut v, 0, 0x000), 0b1);
}

/// What Linux's GICv2 driver does at boot: disable the distributor, route every SPI to this
/// CPU, make them level, priority 0xa0, disable them, enable the distributor; then, per CPU,
/// clear and enable the banked SGIs and PPIs.
#[test]
fn linux_boot_sequence() {
    let mut v = Vgic::new(1, 64).unwrap();
    write(&mut v, 0, 0x000, 0);
    let lines = (read(&mut v, 0, 0x004) & 0x1f) + 1;
    let cpumask = read(&mut v, 0, 0x800) & 0xff;
    assert_eq!(cpumask, 1, "ITARGETSR0 names the reading CPU");
    let mask = cpumask * 0x0101_0101;
    for i in (32..lines * 32).step_by(4) {
        write(&mut v, 0, 0x800 + i, mask);
    }
    for i in (32..lines * 32).step_by(16) {
        write(&mut v, 0, 0xc00 + i / 4, 0);
    }
    for i in (32..lines * 32).step_by(4) {
        write(&mut v, 0, 0x400 + i, 0xa0a0_a0a0);
    }
    for i in (32..lines * 32).step_by(32) {
        write(&mut v, 0, 0x180 + i / 8, u64::from(u32::MAX));
        write(&mut v, 0, 0x380 + i / 8, u64::from(u32::MAX));
    }
    write(&mut v, 0, 0x000, 1);
    write(&mut v, 0, 0x380, u64::from(u32::MAX));
    write(&mut v, 0, 0x180, 0xffff_0000);
    write(&mut v, 0, 0x100, 0x0000_ffff);
    for i in (0..32).step_by(4) {
        write(&mut v, 0, 0x400 + i, 0xa0a0_a0a0);
    }
    assert_eq!(read(&mut v, 0, 0x100), 0xffff, "SGIs enabled");
    assert_eq!(v.irq(0, 40).unwrap().priority, 0xa0);
    assert_eq!(v.spi_target(40), Some(0));
    assert_eq!(read(&mut v, 0, 0x828), 0x0101_0101);
    // Enable SPI 40 and assert its line: it becomes deliverable to vCPU 0.
    write(&mut v, 0, 0x104, 1 << 8);
    v.set_level(0, 40, true).unwrap();
    assert!(v.has_deliverable(0));
    assert_eq!(
        read(&mut v, 0, 0x204) & (1 << 8),
        1 << 8,
        "ISPENDR1 shows it"
    );
}

#[test]
fn private_interrupts_are_banked_per_vcpu() {
    let mut v = Vgic::new(2, 32).unwrap();
    write(&mut v, 1, 0x100, 1 << 27);
    assert_eq!(read(&mut v, 1, 0x100), 1 << 27);
    assert_eq!(read(&mut v, 0, 0x100), 0);
    assert!(v.irq(1, 27).unwrap().enabled);
    assert_eq!(read(&mut v, 1, 0x800), 0x0202_0202);
    // ICFGR0 is read-only (SGIs are edge); ICFGR1 holds the PPIs' triggers.
    write(&mut v, 0, 0xc00, 0);
    assert_eq!(read(&mut v, 0, 0xc00), 0xaaaa_aaaa);
    write(&mut v, 0, 0xc04, 2 << 22);
    assert_eq!(read(&mut v, 0, 0xc04), 2 << 22);
}

#[test]
fn targets_route_spis() {
    let mut v = Vgic::new(2, 32).unwrap();
    v.distributor_v2(0)
        .write(0x820, AccessSize::Byte, 0b10)
        .unwrap();
    assert_eq!(v.spi_target(32), Some(1));
    // Several CPUs: the lowest gets it, and the byte reads back as that one.
    v.distributor_v2(0)
        .write(0x821, AccessSize::Byte, 0b11)
        .unwrap();
    assert_eq!(v.spi_target(33), Some(0));
    assert_eq!(
        v.distributor_v2(0).read(0x821, AccessSize::Byte).unwrap(),
        1
    );
    // None, or a CPU the VM lacks: the SPI is parked.
    v.distributor_v2(0)
        .write(0x822, AccessSize::Byte, 0b1000_0000)
        .unwrap();
    assert_eq!(v.spi_target(34), None);
    assert_eq!(
        v.distributor_v2(0).read(0x822, AccessSize::Byte).unwrap(),
        0
    );
    // SGI and PPI target bytes are read-only.
    write(&mut v, 0, 0x800, 0);
    assert_eq!(read(&mut v, 0, 0x800), 0x0101_0101);
}

#[test]
fn sgir_decodes_and_pends() {
    assert_eq!(
        SgirRequest::decode(0x0003_0005),
        SgirRequest {
            intid: 5,
            filter: SgirFilter::List(0b11)
        }
    );
    assert_eq!(
        SgirRequest::decode(0x0100_0001).filter,
        SgirFilter::AllButSelf
    );
    assert_eq!(
        SgirRequest::decode(0x0200_0001).filter,
        SgirFilter::SelfOnly
    );
    assert_eq!(SgirRequest::decode(u32::MAX).filter, SgirFilter::Reserved);

    let mut v = Vgic::new(2, 32).unwrap();
    write(&mut v, 0, 0xf00, 0x0200_0003);
    assert!(v.irq(0, 3).unwrap().pending());
    assert!(!v.irq(1, 3).unwrap().pending());
    write(&mut v, 0, 0xf00, 0x0100_0004);
    assert!(v.irq(1, 4).unwrap().pending());
    assert!(!v.irq(0, 4).unwrap().pending());
    let targets = v.send_sgi_v2(1, SgirRequest::decode(0x00ff_0007)).unwrap();
    assert_eq!(targets.iter().collect::<Vec<_>>(), [0, 1]);
    // Reserved filter and CPUs beyond the VM reach nobody.
    let none = v.send_sgi_v2(0, SgirRequest::decode(0x03ff_0002)).unwrap();
    assert!(none.is_empty());
    assert_eq!(read(&mut v, 0, 0xf00), 0, "GICD_SGIR is write-only");
}

#[test]
fn access_rules() {
    let mut v = Vgic::new(1, 32).unwrap();
    let mut d = v.distributor_v2(0);
    assert_eq!(d.read(0x002, AccessSize::Word), Err(AccessFault));
    assert_eq!(d.read(0x000, AccessSize::Byte), Err(AccessFault));
    assert_eq!(d.read(0x400, AccessSize::Byte), Ok(0));
    assert_eq!(
        d.read(DISTRIBUTOR_V2_SIZE, AccessSize::Word),
        Err(AccessFault)
    );
    assert_eq!(d.read(0xd00, AccessSize::Word), Ok(0), "reserved");
    assert_eq!(d.write(0xf10, AccessSize::Byte, 0xff), Ok(()));
    // A vCPU the VM lacks reads zero from the banked registers.
    let mut v = Vgic::new(1, 32).unwrap();
    assert_eq!(v.distributor_v2(3).read(0x100, AccessSize::Word), Ok(0));
}

#[test]
fn list_registers_translate_both_ways() {
    let pending_hw = ListRegister {
        vintid: 27,
        state: LrState::Pending,
        priority: 0xa0,
        group1: false,
        link: LrLink::Hardware { pintid: 27 },
    };
    let raw = pending_hw.encode_v2();
    assert_eq!(raw, (1 << 31) | (27 << 10) | (1 << 28) | (0x14 << 23) | 27);
    assert_eq!(ListRegister::decode_v2(raw), pending_hw);
    let eoi = ListRegister {
        vintid: 40,
        state: LrState::PendingActive,
        priority: 0x80,
        group1: true,
        link: LrLink::Virtual {
            eoi_maintenance: true,
        },
    };
    assert_eq!(ListRegister::decode_v2(eoi.encode_v2()), eoi);
    assert_eq!(from_v2(to_v2(eoi.encode())), eoi.encode());
    assert_eq!(to_v2(0), 0);
    // Priorities keep their top five bits.
    let low = ListRegister {
        priority: 0xa7,
        ..pending_hw
    };
    assert_eq!(ListRegister::decode_v2(low.encode_v2()).priority, 0xa0);
}

/// A whole interrupt through the model with GICv2 list registers: injected, flushed into a
/// GICH_LR value, acknowledged and deactivated by the "guest" (the state in the register
/// changes), synced back.
#[test]
fn an_interrupt_round_trips_through_gich_lrs() {
    let mut v = Vgic::new(1, 32).unwrap();
    write(&mut v, 0, 0x000, 1);
    write(&mut v, 0, 0x104, 1);
    v.inject(0, 32).unwrap();
    let mut lrs = [0u64; 4];
    v.flush_in_place(0, &mut lrs).unwrap();
    let gich: Vec<u32> = lrs.iter().map(|&lr| to_v2(lr)).collect();
    assert_eq!(gich[0] & 0x3ff, 32);
    assert_eq!((gich[0] >> 28) & 3, 1, "pending");
    // The guest acknowledges (active) then deactivates (invalid).
    let back: Vec<u64> = gich.iter().map(|&lr| from_v2(lr & !(3 << 28))).collect();
    v.sync(0, &back).unwrap();
    assert!(!v.irq(0, 32).unwrap().pending());
    assert!(!v.irq(0, 32).unwrap().active);
    assert!(!v.has_deliverable(0));
}
