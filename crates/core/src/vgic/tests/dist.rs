use super::{dist_read, dist_write, vgic};
use crate::devices::{AccessSize, MmioDevice};
use crate::vgic::{Trigger, Vgic};

#[test]
fn ctlr_keeps_group_enables_and_reports_are_ds_without_rwp() {
    let mut v = vgic();
    assert_eq!(
        dist_read(&mut v, 0x0),
        0x50,
        "ARE and DS are RAO, enables reset to 0"
    );
    dist_write(&mut v, 0x0, 0xffff_ffff);
    assert_eq!(dist_read(&mut v, 0x0), 0x53, "RWP (bit 31) always reads 0");
    dist_write(&mut v, 0x0, 0x2);
    assert_eq!(dist_read(&mut v, 0x0), 0x52);
}

#[test]
fn typer_describes_lines_idbits_and_no_lpis() {
    let mut v = vgic();
    let typer = dist_read(&mut v, 0x4);
    assert_eq!(typer & 0x1f, 2, "64 SPIs + 32 private = 3 blocks of 32");
    assert_eq!((typer >> 19) & 0x1f, 9, "IDbits: 10-bit INTIDs");
    assert_eq!(typer & (1 << 17), 0, "no LPIs");
    assert_eq!(typer & (1 << 16), 0, "no MBIS");
    assert_eq!(typer & (1 << 10), 0, "SecurityExtn = 0");
    assert_eq!(typer & (1 << 8), 0, "no extended SPIs");
    let mut big = Vgic::new(1, 988).unwrap();
    assert_eq!(dist_read(&mut big, 0x4) & 0x1f, 31);
    let mut odd = Vgic::new(1, 33).unwrap();
    assert_eq!(dist_read(&mut odd, 0x4) & 0x1f, 2);
}

#[test]
fn identification_registers() {
    let mut v = vgic();
    assert_eq!(dist_read(&mut v, 0x8), 0x5000_043b);
    assert_eq!(dist_read(&mut v, 0xc), 0, "TYPER2");
    assert_eq!(dist_read(&mut v, 0x10), 0, "STATUSR");
    assert_eq!((dist_read(&mut v, 0xffe8) >> 4) & 0xf, 3, "PIDR2.ArchRev");
    dist_write(&mut v, 0x4, 0);
    dist_write(&mut v, 0xffe8, 0);
    assert_eq!((dist_read(&mut v, 0xffe8) >> 4) & 0xf, 3, "read-only");
    assert_eq!(dist_read(&mut v, 0x4) & 0x1f, 2, "read-only");
}

#[test]
fn enable_set_and_clear() {
    let mut v = vgic();
    dist_write(&mut v, 0x104, 0x0000_0003);
    assert!(v.irq(0, 32).unwrap().enabled);
    assert!(v.irq(0, 33).unwrap().enabled);
    assert_eq!(dist_read(&mut v, 0x104), 3);
    assert_eq!(
        dist_read(&mut v, 0x184),
        3,
        "ICENABLER reads the same state"
    );
    dist_write(&mut v, 0x104, 0x4);
    assert_eq!(dist_read(&mut v, 0x104), 7, "zero bits do not clear");
    dist_write(&mut v, 0x184, 0x1);
    assert_eq!(dist_read(&mut v, 0x104), 6);
}

#[test]
fn pending_set_and_clear_respects_the_level_line() {
    let mut v = vgic();
    dist_write(&mut v, 0x204, 1 << 1);
    assert!(v.irq(0, 33).unwrap().pending());
    assert_eq!(dist_read(&mut v, 0x284), 1 << 1);
    dist_write(&mut v, 0x284, 1 << 1);
    assert!(!v.irq(0, 33).unwrap().pending());
    v.set_level(0, 33, true).unwrap();
    dist_write(&mut v, 0x284, 1 << 1);
    assert_eq!(
        dist_read(&mut v, 0x204),
        1 << 1,
        "asserted line stays pending"
    );
    v.set_level(0, 33, false).unwrap();
    assert_eq!(dist_read(&mut v, 0x204), 0);
}

#[test]
fn active_set_and_clear() {
    let mut v = vgic();
    dist_write(&mut v, 0x308, 1 << 31);
    assert!(v.irq(0, 95).unwrap().active);
    assert_eq!(dist_read(&mut v, 0x388), 1 << 31);
    dist_write(&mut v, 0x388, 1 << 31);
    assert!(!v.irq(0, 95).unwrap().active);
}

#[test]
fn group_register_is_read_write() {
    let mut v = vgic();
    dist_write(&mut v, 0x84, 0xffff_ffff);
    assert!(v.irq(0, 63).unwrap().group1);
    assert_eq!(dist_read(&mut v, 0x84), 0xffff_ffff);
    dist_write(&mut v, 0x84, 0);
    assert!(!v.irq(0, 32).unwrap().group1);
}

#[test]
fn priority_byte_and_word_access() {
    let mut v = vgic();
    dist_write(&mut v, 0x420, 0x4433_2211);
    assert_eq!(v.irq(0, 32).unwrap().priority, 0x11);
    assert_eq!(v.irq(0, 35).unwrap().priority, 0x44);
    let mut d = v.distributor();
    assert_eq!(d.read(0x422, AccessSize::Byte), Ok(0x33));
    d.write(0x421, AccessSize::Byte, 0xa0).unwrap();
    assert_eq!(d.read(0x420, AccessSize::Word), Ok(0x4433_a011));
    assert_eq!(v.irq(0, 33).unwrap().priority, 0xa0);
}

#[test]
fn config_register_sets_edge_or_level() {
    let mut v = vgic();
    dist_write(&mut v, 0xc08, 0b10 << 2);
    assert_eq!(v.irq(0, 33).unwrap().trigger, Trigger::Edge);
    assert_eq!(v.irq(0, 32).unwrap().trigger, Trigger::Level);
    assert_eq!(
        dist_read(&mut v, 0xc08),
        0b10 << 2,
        "bit 2F (reserved) reads 0"
    );
    dist_write(&mut v, 0xc08, 0x5555_5555);
    assert_eq!(v.irq(0, 33).unwrap().trigger, Trigger::Level);
}

#[test]
fn private_interrupts_are_raz_wi_in_the_distributor() {
    let mut v = vgic();
    for offset in [0x80, 0x100, 0x200, 0x300, 0x400, 0x41c, 0xc00, 0xc04] {
        dist_write(&mut v, offset, 0xffff_ffff);
        assert_eq!(dist_read(&mut v, offset), 0, "offset {offset:#x}");
    }
    assert!(!v.irq(0, 0).unwrap().enabled);
    assert_eq!(v.irq(0, 16).unwrap().priority, 0);
}

#[test]
fn interrupts_beyond_the_implemented_spis_are_raz_wi() {
    let mut v = vgic();
    dist_write(&mut v, 0x10c, 0xffff_ffff);
    assert_eq!(dist_read(&mut v, 0x10c), 0);
    dist_write(&mut v, 0x460, 0xffff_ffff);
    assert_eq!(dist_read(&mut v, 0x460), 0);
    assert_eq!(dist_read(&mut v, 0x7fc), 0, "INTIDs 1020-1023");
    assert!(v.irq(0, 96).is_err());
}

#[test]
fn irouter_is_64_bit_with_word_halves() {
    let mut v = vgic();
    let mut d = v.distributor();
    let irouter33 = 0x6000 + 8 * 33;
    d.write(irouter33, AccessSize::Double, 0xffff_ffff_ffff_ffff)
        .unwrap();
    assert_eq!(
        d.read(irouter33, AccessSize::Double),
        Ok(0xff_80ff_ffff),
        "RES0 bits dropped"
    );
    d.write(irouter33 + 4, AccessSize::Word, 0).unwrap();
    assert_eq!(d.read(irouter33, AccessSize::Word), Ok(0x80ff_ffff));
    assert_eq!(d.read(irouter33 + 4, AccessSize::Word), Ok(0));
    d.write(irouter33, AccessSize::Word, 0x0000_0001).unwrap();
    assert_eq!(v.spi_target(33), None, "affinity 0.0.0.1 names no vCPU");
    v.distributor()
        .write(irouter33, AccessSize::Word, 0x8000_0000)
        .unwrap();
    assert_eq!(v.spi_target(33), Some(0), "IRM = 1");
    let mut d = v.distributor();
    assert_eq!(
        d.read(0x6000 + 8 * 31, AccessSize::Double),
        Ok(0),
        "no IROUTER below 32"
    );
    d.write(0x6000 + 8 * 96, AccessSize::Double, 5).unwrap();
    assert_eq!(d.read(0x6000 + 8 * 96, AccessSize::Double), Ok(0));
}

#[test]
fn unimplemented_and_reserved_offsets_read_zero_and_ignore_writes() {
    let mut v = vgic();
    for offset in [
        0x14, 0x40, 0x800, 0x820, 0xd00, 0xe00, 0xf00, 0xf10, 0xf20, 0x1000, 0x8000, 0xffe0,
    ] {
        dist_write(&mut v, offset, 0xffff_ffff);
        assert_eq!(dist_read(&mut v, offset), 0, "offset {offset:#x}");
    }
    assert_eq!(
        v.distributor().read(0x10000, AccessSize::Word),
        Err(crate::devices::AccessFault)
    );
}

/// What a distributor write did beyond its MMIO handle: the refreshes it made
/// (`Vgic::refresh` counts each in the epoch) and the vCPUs it marked touched.
fn effect(v: &mut Vgic, offset: u64, value: u64) -> (u64, u64) {
    v.take_touched();
    let before = v.epoch;
    dist_write(v, offset, value);
    (v.epoch - before - 1, v.take_touched())
}

#[test]
fn a_bank_write_refreshes_only_the_interrupts_whose_state_it_changes() {
    let mut v = super::flush::ready();
    assert_eq!(effect(&mut v, 0x184, 1 << 5), (0, 1), "ICENABLER, one bit");
    assert_eq!(effect(&mut v, 0x184, 1 << 5), (0, 0), "already disabled");
    assert_eq!(effect(&mut v, 0x104, 0xffff_ffff), (0, 1), "ISENABLER, all");
    assert_eq!(
        effect(&mut v, 0x84, 0xffff_ffff),
        (0, 0),
        "IGROUPR, unchanged"
    );
    assert_eq!(
        effect(&mut v, 0x384, 0xffff_ffff),
        (0, 0),
        "ICACTIVER, none active"
    );
    assert_eq!(effect(&mut v, 0x204, 0b11), (2, 1), "ISPENDR, two bits");
    assert_eq!(
        effect(&mut v, 0x428, 0xa0a0_a0a0),
        (0, 0),
        "IPRIORITYR, unchanged"
    );
    assert_eq!(
        effect(&mut v, 0x428, 0xa0a0_a080),
        (0, 1),
        "IPRIORITYR, one byte"
    );
    assert_eq!(effect(&mut v, 0xc08, 0b10 << 6), (1, 1), "ICFGR, one edge");
    assert_eq!(v.irq(0, 32 + 3).unwrap().trigger, Trigger::Edge);
}

/// A two-vCPU VM, Group 1 enabled, SPI 40 Group 1, enabled and routed to vCPU 1.
fn spi_40_on_vcpu_1() -> Vgic {
    let mut v = Vgic::new(2, 64).expect("valid configuration");
    dist_write(&mut v, 0x0, 0x2);
    dist_write(&mut v, 0x84, 1 << 8);
    dist_write(&mut v, 0x104, 1 << 8);
    v.distributor()
        .write(0x6000 + 8 * 40, AccessSize::Double, 1)
        .unwrap();
    v
}

#[test]
fn a_configuration_write_touches_the_vcpu_the_interrupt_is_routed_to() {
    let mut v = spi_40_on_vcpu_1();
    assert_eq!(effect(&mut v, 0x184, 1 << 8), (0, 0b10), "ICENABLER");
    assert_eq!(effect(&mut v, 0x428, 0x80), (0, 0b10), "IPRIORITYR");
    assert_eq!(
        effect(&mut v, 0x104, 0xffff_ffff),
        (0, 0b11),
        "ISENABLER of several: every vCPU"
    );
}

/// An ISPENDR write made while another vCPU's list register presents the interrupt wins
/// over that list register, though the model already says pending: once the guest has
/// acknowledged the presented one, the interrupt is pending again.
#[test]
fn a_pending_write_wins_over_the_list_register_presenting_it() {
    let mut v = spi_40_on_vcpu_1();
    v.inject(0, 40).unwrap();
    let mut lrs = [0u64; 4];
    let flush = v.flush(1, &lrs).unwrap();
    lrs.copy_from_slice(flush.values());
    assert_eq!(super::flush::acknowledge(&mut lrs), Some(40));
    dist_write(&mut v, 0x204, 1 << 8);
    v.sync(1, &lrs).unwrap();
    let irq = v.irq(1, 40).unwrap();
    assert!(irq.active && irq.pending(), "{irq:?}");
}
