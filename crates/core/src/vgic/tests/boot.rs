//! The register accesses Linux's GICv3 driver (drivers/irqchip/irq-gic-v3.c, 6.1) makes at
//! boot, in order, then the PL011's interrupt going through to a list register.

use super::SGI_BASE;
use crate::devices::{AccessSize, MmioDevice};
use crate::vgic::{ListRegister, LrState, Vgic};

const UART_SPI: u32 = 33;

#[test]
fn linux_boot_sequence() {
    let mut v = Vgic::new(1, 256).unwrap();

    // Probe: both frames must say GICv3.
    let mut d = v.distributor();
    assert_eq!(d.read(0xffe8, AccessSize::Word).unwrap() & 0xf0, 0x30);
    let typer = d.read(0x4, AccessSize::Word).unwrap();
    let lines = ((typer & 0x1f) + 1) * 32;
    assert_eq!(lines, 288);
    assert_eq!(
        d.read(0x8, AccessSize::Word),
        Ok(0x5000_043b),
        "IIDR matches no quirk"
    );
    assert_eq!(d.read(0xc, AccessSize::Word), Ok(0), "TYPER2: no nASSGIcap");
    let mut r = v.redistributors();
    assert_eq!(r.read(0xffe8, AccessSize::Word).unwrap() & 0xf0, 0x30);
    let rtyper = r.read(0x8, AccessSize::Double).unwrap();
    assert_ne!(rtyper & (1 << 4), 0, "a single redistributor ends the walk");
    assert_eq!(rtyper >> 32, 0, "affinity of the boot CPU");

    // gic_dist_init: disable, wait for RWP, configure every SPI, enable with ARE.
    let mut d = v.distributor();
    d.write(0x0, AccessSize::Word, 0).unwrap();
    assert_eq!(d.read(0x0, AccessSize::Word).unwrap() >> 31, 0, "RWP clear");
    for i in (32..lines).step_by(32) {
        d.write(0x80 + i / 8, AccessSize::Word, 0xffff_ffff)
            .unwrap();
    }
    for i in (32..lines).step_by(16) {
        d.write(0xc00 + i / 4, AccessSize::Word, 0).unwrap();
    }
    for i in (32..lines).step_by(4) {
        d.write(0x400 + i, AccessSize::Word, 0xa0a0_a0a0).unwrap();
    }
    for i in (32..lines).step_by(32) {
        d.write(0x380 + i / 8, AccessSize::Word, 0xffff_ffff)
            .unwrap();
        d.write(0x180 + i / 8, AccessSize::Word, 0xffff_ffff)
            .unwrap();
    }
    assert_eq!(d.read(0x0, AccessSize::Word).unwrap() >> 31, 0);
    d.write(0x0, AccessSize::Word, (1 << 4) | (1 << 1) | 1)
        .unwrap();
    let ctlr = d.read(0x0, AccessSize::Word).unwrap();
    assert_eq!(ctlr & 0b11, 0b11, "Group 0 and Group 1 enabled");
    assert_ne!(ctlr & (1 << 6), 0, "DS: single Security state");
    for i in 32..lines {
        d.write(0x6000 + i * 8, AccessSize::Double, 0).unwrap();
    }

    // gic_cpu_init: find our redistributor, wake it, configure SGIs and PPIs.
    let mut r = v.redistributors();
    assert_eq!(r.read(0x8, AccessSize::Double).unwrap() >> 32, 0);
    let waker = r.read(0x14, AccessSize::Word).unwrap();
    r.write(0x14, AccessSize::Word, waker & !0b10).unwrap();
    assert_eq!(
        r.read(0x14, AccessSize::Word).unwrap() & 0b100,
        0,
        "ChildrenAsleep clear"
    );
    r.write(SGI_BASE + 0x80, AccessSize::Word, 0xffff_ffff)
        .unwrap();
    r.write(SGI_BASE + 0x380, AccessSize::Word, 0xffff_ffff)
        .unwrap();
    r.write(SGI_BASE + 0x180, AccessSize::Word, 0xffff_ffff)
        .unwrap();
    for i in (0..32).step_by(4) {
        r.write(SGI_BASE + 0x400 + i, AccessSize::Word, 0xa0a0_a0a0)
            .unwrap();
    }
    assert_eq!(
        r.read(0x0, AccessSize::Word).unwrap() & (1 << 3),
        0,
        "GICR RWP clear"
    );

    // The timer PPI (27, level) and the UART SPI (33, level): set type, then unmask.
    r.write(SGI_BASE + 0xc04, AccessSize::Word, 0).unwrap();
    r.write(SGI_BASE + 0x100, AccessSize::Word, 1 << 27)
        .unwrap();
    let mut d = v.distributor();
    d.write(0xc08, AccessSize::Word, 0).unwrap();
    assert_eq!(
        d.read(0xc08, AccessSize::Word),
        Ok(0),
        "read back as written"
    );
    d.write(0x104, AccessSize::Word, 1 << (UART_SPI - 32))
        .unwrap();

    let uart = v.irq(0, UART_SPI).unwrap();
    assert!(uart.enabled && uart.group1 && !uart.active);
    assert_eq!(uart.priority, 0xa0);
    assert_eq!(v.spi_target(UART_SPI), Some(0));

    // The UART raises its line: it reaches a list register as a Group 1 pending interrupt.
    v.set_level(0, UART_SPI, true).unwrap();
    let flush = v.flush(0, &[0; 4]).unwrap();
    let lr = ListRegister::decode(flush.values()[0]);
    assert_eq!(
        (lr.vintid, lr.state, lr.priority),
        (UART_SPI, LrState::Pending, 0xa0)
    );
    assert!(lr.group1);
    assert_eq!(
        ListRegister::decode(flush.values()[1]).state,
        LrState::Invalid
    );
}
