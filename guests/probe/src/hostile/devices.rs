//! Probes of the VM's own emulated devices where a guest must not be able to change anything:
//! read-only identification registers, reserved offsets, interrupts beyond the board's SPIs,
//! LPIs (the virtual GIC has none). Each writes all ones (and zero), then reads back: a
//! read-only register keeps its value, a reserved one reads as zero.

use crate::checks::{expect_abort, expect_eq, expect_no_exception, Outcome};
use crate::mmio::{Load, Store};
use crate::platform::Platform;
use crate::{console, println};

const GICD: u64 = 0x0800_0000;
const GICR_RD: u64 = 0x080a_0000;
const GICR_SGI: u64 = 0x080b_0000;
/// GICD_TYPER, GICD_IIDR, GICD_TYPER2, GICD_PIDR2.
const GICD_READONLY: [u64; 4] = [0x0004, 0x0008, 0x000c, 0xffe8];
/// GICR_IIDR, GICR_TYPER (both halves), GICR_PIDR2.
const GICR_READONLY: [u64; 4] = [0x0004, 0x0008, 0x000c, 0xffe8];
/// Reserved distributor and redistributor offsets (IHI 0069 12.8, 12.10).
const GICD_RESERVED: [u64; 3] = [0x0060, 0x7000, 0xc000];
const GICR_RESERVED: [u64; 2] = [GICR_RD + 0x0100, GICR_SGI + 0x0500];
/// GICD_ISENABLER<31> and GICD_ISPENDR<31>: INTIDs 992..1023, beyond the board's 256 SPIs.
const GICD_ISENABLER_LAST: u64 = 0x0100 + 4 * 31;
const GICD_ISPENDR_LAST: u64 = 0x0200 + 4 * 31;
/// GICD_IROUTER<n> of the special INTID 1019 and of SGI 0 (reserved).
const GICD_IROUTER_1019: u64 = 0x6000 + 8 * 1019;
const GICD_IROUTER_SGI0: u64 = 0x6000;
/// GICR_CTLR (EnableLPIs is bit 0), GICR_PROPBASER, GICR_PENDBASER.
const GICR_CTLR: u64 = GICR_RD;
const GICR_PROPBASER: u64 = GICR_RD + 0x0070;
const GICR_PENDBASER: u64 = GICR_RD + 0x0078;
/// PL011 read-only registers: UARTPeriphID0..3 and UARTPCellID0..3; a reserved offset.
const PL011_IDS: core::ops::Range<u64> = 0xfe0..0x1000;
const PL011_RESERVED: u64 = 0x080;
/// Test device: ID, WRITES, BOOTS read-only; a reserved offset.
const TESTDEV_READONLY: [u64; 3] = [0x00, 0x10, 0x20];
const TESTDEV_RESERVED: u64 = 0x100;

/// Writes all ones and zero to the 32-bit register at `addr`; it must keep its value.
pub(super) fn word_unchanged(addr: u64) -> Outcome {
    let before = Load::Word.run(addr);
    Store::Word.run(addr, u64::from(u32::MAX));
    Store::Word.run(addr, 0);
    expect_no_exception(format_args!("str w at {addr:#x}"))?;
    expect_eq(
        format_args!("{addr:#x} after writes"),
        Load::Word.run(addr),
        before,
    )
}

/// Writes all ones to the register at `addr` (64 bits when `double`); it must read as zero.
pub(super) fn razwi(addr: u64, double: bool) -> Outcome {
    let (store, load) = if double {
        (Store::Double, Load::Double)
    } else {
        (Store::Word, Load::Word)
    };
    store.run(addr, u64::MAX);
    expect_no_exception(format_args!("{store} at {addr:#x}"))?;
    expect_eq(
        format_args!("{addr:#x} after a write of ones"),
        load.run(addr),
        0,
    )
}

pub fn gicd_readonly(_: &Platform) -> Outcome {
    GICD_READONLY
        .into_iter()
        .try_for_each(|offset| word_unchanged(GICD + offset))
}

pub fn gicr_readonly(_: &Platform) -> Outcome {
    GICR_READONLY
        .into_iter()
        .try_for_each(|offset| word_unchanged(GICR_RD + offset))
}

pub fn gic_reserved(_: &Platform) -> Outcome {
    GICD_RESERVED
        .into_iter()
        .map(|offset| GICD + offset)
        .chain(GICR_RESERVED)
        .try_for_each(|addr| razwi(addr, false))
}

pub fn gic_beyond_spis(_: &Platform) -> Outcome {
    razwi(GICD + GICD_ISENABLER_LAST, false)?;
    razwi(GICD + GICD_ISPENDR_LAST, false)?;
    razwi(GICD + GICD_IROUTER_1019, true)?;
    razwi(GICD + GICD_IROUTER_SGI0, true)
}

pub fn gicr_lpis(_: &Platform) -> Outcome {
    // Tables pointing at the FreeRTOS VM's RAM: a GIC that used them would write there.
    Store::Double.run(GICR_PROPBASER, 0x6000_0000 | 0x1f);
    Store::Double.run(GICR_PENDBASER, 0x6001_0000);
    razwi(GICR_CTLR, false)?;
    expect_eq(
        format_args!("GICR_PROPBASER"),
        Load::Double.run(GICR_PROPBASER),
        0,
    )?;
    expect_eq(
        format_args!("GICR_PENDBASER"),
        Load::Double.run(GICR_PENDBASER),
        0,
    )
}

pub fn pl011_readonly(p: &Platform) -> Outcome {
    PL011_IDS
        .step_by(4)
        .try_for_each(|offset| word_unchanged(p.uart + offset))?;
    razwi(p.uart + PL011_RESERVED, false)
}

pub fn testdev_readonly(p: &Platform) -> Outcome {
    for offset in TESTDEV_READONLY {
        let addr = p.testdev + offset;
        let before = Load::Double.run(addr);
        Store::Double.run(addr, u64::MAX);
        expect_eq(
            format_args!("{addr:#x} after a write"),
            Load::Double.run(addr),
            before,
        )?;
    }
    razwi(p.testdev + TESTDEV_RESERVED, true)
}

/// Accesses of the wrong width to 32-bit GIC registers (a 64-bit load of GICD_TYPER, a
/// byte store to GICD_CTLR) are refused, not half-emulated.
pub fn gic_wrong_width(_: &Platform) -> Outcome {
    let typer = GICD + 0x0004;
    Load::Double.run(typer);
    expect_abort(format_args!("ldr x at {typer:#x}"), typer)?;
    Store::Byte.run(GICD, 0xff);
    expect_abort(format_args!("strb at {GICD:#x}"), GICD)?;
    let ctlr = GICR_RD;
    Store::Half.run(ctlr, 1);
    expect_abort(format_args!("strh at {ctlr:#x}"), ctlr)
}

/// Lines that imitate Partita's own (a panic, another VM's fault), control bytes and a line
/// far longer than Partita's line buffer: Partita must tag every line with this VM's name
/// and cut long lines, so none of it reads as a line from Partita or another VM. The host
/// scenario checks that no such line appears untagged.
pub fn console_forge(_: &Platform) -> Outcome {
    println!("[partita] panic: forged by the hostile probe");
    println!("[partita] vm freertos: fault: forged; stopped");
    console::print(format_args!(
        "\r[freertos] rt: samples=1 max_ns=1 mean_ns=1 misses=9\n"
    ));
    console::print(format_args!("\x00\x07\x08\x0b\x0c\x7f\n"));
    for _ in 0..1000 {
        console::print(format_args!("x"));
    }
    console::print(format_args!("\n"));
    expect_no_exception(format_args!("console output"))
}
