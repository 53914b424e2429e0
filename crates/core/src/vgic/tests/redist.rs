use super::{redist_read, redist_write, vgic, SGI_BASE};
use crate::devices::{AccessSize, MmioDevice};
use crate::vgic::{Trigger, Vgic, REDISTRIBUTOR_STRIDE};

#[test]
fn typer_reports_affinity_processor_number_and_last() {
    let mut v = Vgic::new(3, 32).unwrap();
    let mut r = v.redistributors();
    for vcpu in 0..3u64 {
        let typer = r
            .read(vcpu * REDISTRIBUTOR_STRIDE + 0x8, AccessSize::Double)
            .unwrap();
        assert_eq!(typer >> 32, vcpu, "Affinity_Value = 0.0.0.vcpu");
        assert_eq!((typer >> 8) & 0xffff, vcpu, "Processor_Number");
        assert_eq!(typer & (1 << 4) != 0, vcpu == 2, "Last");
        assert_eq!(typer & 0b11, 0, "no physical or virtual LPIs");
        assert_eq!((typer >> 27) & 0x1f, 0, "PPInum: INTIDs 16-31");
        let low = r
            .read(vcpu * REDISTRIBUTOR_STRIDE + 0x8, AccessSize::Word)
            .unwrap();
        let high = r
            .read(vcpu * REDISTRIBUTOR_STRIDE + 0xc, AccessSize::Word)
            .unwrap();
        assert_eq!(low | (high << 32), typer);
    }
    let vcpu17 = Vgic::new(18, 32)
        .unwrap()
        .redistributors()
        .read(17 * REDISTRIBUTOR_STRIDE + 0x8, AccessSize::Double)
        .unwrap();
    assert_eq!(vcpu17 >> 32, 0x0000_0101, "vCPU 17 is 0.0.1.1");
}

#[test]
fn waker_handshake() {
    let mut v = vgic();
    assert_eq!(redist_read(&mut v, 0x14), 0b110, "asleep at reset");
    redist_write(&mut v, 0x14, 0);
    assert_eq!(
        redist_read(&mut v, 0x14),
        0,
        "ChildrenAsleep follows ProcessorSleep"
    );
    redist_write(&mut v, 0x14, 0b010);
    assert_eq!(redist_read(&mut v, 0x14), 0b110);
    redist_write(&mut v, 0x14, 0b100);
    assert_eq!(redist_read(&mut v, 0x14), 0, "ChildrenAsleep is read-only");
}

#[test]
fn control_identification_and_lpi_registers() {
    let mut v = vgic();
    redist_write(&mut v, 0x0, 0xffff_ffff);
    assert_eq!(
        redist_read(&mut v, 0x0),
        0,
        "no EnableLPIs, RWP and UWP read 0"
    );
    assert_eq!(redist_read(&mut v, 0x4), 0x5000_043b);
    assert_eq!((redist_read(&mut v, 0xffe8) >> 4) & 0xf, 3);
    let mut r = v.redistributors();
    for offset in [0x40, 0x48, 0x70, 0x78, 0xa0, 0xb0] {
        r.write(offset, AccessSize::Double, u64::MAX).unwrap();
        assert_eq!(
            r.read(offset, AccessSize::Double),
            Ok(0),
            "offset {offset:#x}"
        );
    }
    assert_eq!(r.read(0xc0, AccessSize::Word), Ok(0), "SYNCR never busy");
}

#[test]
fn sgi_and_ppi_enable_pending_active_group() {
    let mut v = vgic();
    redist_write(&mut v, SGI_BASE + 0x100, (1 << 27) | (1 << 1));
    assert!(v.irq(0, 27).unwrap().enabled);
    assert!(v.irq(0, 1).unwrap().enabled);
    redist_write(&mut v, SGI_BASE + 0x180, 1 << 1);
    assert_eq!(redist_read(&mut v, SGI_BASE + 0x100), 1 << 27);
    redist_write(&mut v, SGI_BASE + 0x200, 1 << 3);
    assert!(v.irq(0, 3).unwrap().pending());
    redist_write(&mut v, SGI_BASE + 0x280, 1 << 3);
    assert!(!v.irq(0, 3).unwrap().pending());
    redist_write(&mut v, SGI_BASE + 0x300, 1 << 30);
    assert_eq!(redist_read(&mut v, SGI_BASE + 0x380), 1 << 30);
    redist_write(&mut v, SGI_BASE + 0x380, 1 << 30);
    assert!(!v.irq(0, 30).unwrap().active);
    redist_write(&mut v, SGI_BASE + 0x80, 0xffff_ffff);
    assert!(v.irq(0, 0).unwrap().group1 && v.irq(0, 31).unwrap().group1);
}

#[test]
fn private_priorities_by_byte_and_word() {
    let mut v = vgic();
    redist_write(&mut v, SGI_BASE + 0x41c, 0xa0a0_a0a0);
    assert_eq!(v.irq(0, 31).unwrap().priority, 0xa0);
    let mut r = v.redistributors();
    r.write(SGI_BASE + 0x41b, AccessSize::Byte, 0x10).unwrap();
    assert_eq!(r.read(SGI_BASE + 0x418, AccessSize::Word), Ok(0x1000_0000));
    assert_eq!(v.irq(0, 27).unwrap().priority, 0x10);
}

#[test]
fn sgi_config_is_fixed_edge_and_ppi_config_is_programmable() {
    let mut v = vgic();
    assert_eq!(redist_read(&mut v, SGI_BASE + 0xc00), 0xaaaa_aaaa);
    redist_write(&mut v, SGI_BASE + 0xc00, 0);
    assert_eq!(redist_read(&mut v, SGI_BASE + 0xc00), 0xaaaa_aaaa);
    assert_eq!(v.irq(0, 5).unwrap().trigger, Trigger::Edge);
    assert_eq!(redist_read(&mut v, SGI_BASE + 0xc04), 0, "PPIs reset level");
    redist_write(&mut v, SGI_BASE + 0xc04, 0b10 << 22);
    assert_eq!(v.irq(0, 27).unwrap().trigger, Trigger::Edge);
    assert_eq!(redist_read(&mut v, SGI_BASE + 0xc04), 0b10 << 22);
}

#[test]
fn modifier_and_access_control_are_raz_wi() {
    let mut v = vgic();
    for offset in [
        SGI_BASE + 0xd00,
        SGI_BASE + 0xe00,
        SGI_BASE + 0x84,
        SGI_BASE + 0x104,
    ] {
        redist_write(&mut v, offset, 0xffff_ffff);
        assert_eq!(redist_read(&mut v, offset), 0, "offset {offset:#x}");
    }
}

#[test]
fn each_vcpu_has_its_own_bank_and_frames_past_the_last_are_raz_wi() {
    let mut v = Vgic::new(2, 32).unwrap();
    redist_write(&mut v, REDISTRIBUTOR_STRIDE + SGI_BASE + 0x100, 1 << 27);
    assert!(v.irq(1, 27).unwrap().enabled);
    assert!(!v.irq(0, 27).unwrap().enabled);
    let beyond = 2 * REDISTRIBUTOR_STRIDE;
    redist_write(&mut v, beyond + SGI_BASE + 0x100, 0xffff_ffff);
    assert_eq!(redist_read(&mut v, beyond + SGI_BASE + 0x100), 0);
    assert_eq!(
        redist_read(&mut v, beyond + 0xffe8),
        0,
        "no redistributor there"
    );
    let far = v.redistributors().read(u64::MAX - 7, AccessSize::Double);
    assert_eq!(far, Ok(0));
}
