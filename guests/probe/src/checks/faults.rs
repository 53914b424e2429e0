//! Checks of accesses Partita must refuse with an injected synchronous external abort
//! (instructions without syndrome, a device that refuses, unmapped guest-physical memory),
//! of the emulated PL011's identity, and of WFI waking on the virtual timer and WFE returning.

use super::{expect_abort, expect_eq, expect_no_exception, Outcome};
use crate::mmio::{self, Load, Store, UNTOUCHED};
use crate::platform::Platform;

const TESTDEV_FAULT: u64 = 0x18;
const UNMAPPED_HIGH: u64 = 0x1_0000_0000;
/// PL011 `UARTPeriphID0..3` and `UARTPCellID0..3` (PL011 TRM 3.3.16-17); the revision in
/// PeriphID2 bits 7:4 is not checked.
const PL011_ID_BASE: u64 = 0xfe0;
const PL011_IDS: [(u64, u64); 7] = [
    (0x0, 0x11),
    (0x4, 0x10),
    (0xc, 0x00),
    (0x10, 0x0d),
    (0x14, 0xf0),
    (0x18, 0x05),
    (0x1c, 0xb1),
];

pub fn load_pair(p: &Platform) -> Outcome {
    let addr = p.testdev;
    let (first, second) = mmio::load_pair(addr);
    expect_abort(format_args!("ldp at {addr:#x}"), addr)?;
    expect_eq(format_args!("ldp first register"), first, UNTOUCHED)?;
    expect_eq(format_args!("ldp second register"), second, UNTOUCHED)
}

/// A load and a store of `addr` must each abort with FAR = `addr`.
fn load_and_store_abort(addr: u64) -> Outcome {
    let got = Load::Double.run(addr);
    expect_abort(format_args!("ldr x at {addr:#x}"), addr)?;
    expect_eq(format_args!("ldr x at {addr:#x}: register"), got, UNTOUCHED)?;
    Load::Byte.run(addr);
    expect_abort(format_args!("ldrb w at {addr:#x}"), addr)?;
    Store::Word.run(addr, 0x1234_5678);
    expect_abort(format_args!("str w at {addr:#x}"), addr)
}

pub fn fault_register(p: &Platform) -> Outcome {
    load_and_store_abort(p.testdev + TESTDEV_FAULT)
}

pub fn unmapped_low(_: &Platform) -> Outcome {
    load_and_store_abort(crate::UNMAPPED)
}

pub fn unmapped_high(_: &Platform) -> Outcome {
    load_and_store_abort(UNMAPPED_HIGH)
}

pub fn pl011_ids(p: &Platform) -> Outcome {
    for (offset, want) in PL011_IDS {
        let addr = p.uart + PL011_ID_BASE + offset;
        expect_eq(
            format_args!("ldr w at {addr:#x}"),
            Load::Word.run(addr),
            want,
        )?;
    }
    let addr = p.uart + PL011_ID_BASE;
    Load::Double.run(addr);
    expect_abort(format_args!("ldr x at {addr:#x}"), addr)
}

/// CNTV_CTL_EL0: ENABLE, and ISTATUS (the timer condition is met).
const TIMER_ENABLE: u64 = 1;
const TIMER_ISTATUS: u64 = 1 << 2;
/// Virtual-counter ticks until the timer fires (a few microseconds).
const TIMER_TICKS: u64 = 200;
/// The virtual timer's PPI.
const TIMER_PPI: u64 = 27;
/// The guest GIC sits where QEMU `virt` has it (Partita's generated device tree says so):
/// GICD_CTLR, and the redistributor's GICR_WAKER, GICR_IGROUPR0 and GICR_ISENABLER0.
const GICD_CTLR: u64 = 0x0800_0000;
const GICR_WAKER: u64 = 0x080a_0014;
const GICR_IGROUPR0: u64 = 0x080b_0080;
const GICR_ISENABLER0: u64 = 0x080b_0100;
/// GICD_CTLR: EnableGrp1 and ARE.
const GICD_ENABLE_GRP1_ARE: u64 = (1 << 1) | (1 << 4);

/// Enables the virtual timer's interrupt in the VM's GIC and CPU interface (PSTATE.I stays
/// masked, so the interrupt is never taken: it only wakes WFI and is acknowledged by hand).
fn enable_timer_interrupt() {
    Store::Word.run(GICD_CTLR, GICD_ENABLE_GRP1_ARE);
    Store::Word.run(GICR_WAKER, 0);
    Store::Word.run(GICR_IGROUPR0, 1 << TIMER_PPI);
    Store::Word.run(GICR_ISENABLER0, 1 << TIMER_PPI);
    // SAFETY: ICC_PMR_EL1 and ICC_IGRPEN1_EL1 only configure this CPU's (virtual) interface.
    unsafe {
        core::arch::asm!(
            "msr S3_0_C4_C6_0, {pmr}",
            "msr S3_0_C12_C12_7, {one}",
            "isb",
            pmr = in(reg) 0xffu64,
            one = in(reg) 1u64,
        );
    }
}

/// Acknowledges and ends the highest-priority interrupt (ICC_IAR1_EL1, ICC_EOIR1_EL1); its
/// INTID.
fn acknowledge_interrupt() -> u64 {
    let intid: u64;
    // SAFETY: acknowledging and ending an interrupt touches only the CPU interface.
    unsafe {
        core::arch::asm!(
            "mrs {intid}, S3_0_C12_C12_0",
            "msr S3_0_C12_C12_1, {intid}",
            "isb",
            intid = out(reg) intid,
        );
    }
    intid & 0xff_ffff
}

/// WFI blocks until an interrupt is pending: with the virtual timer armed and its interrupt
/// enabled it returns with the timer fired and its interrupt pending; WFE returns at once.
pub fn wfi_wfe(_: &Platform) -> Outcome {
    use aarch64_cpu::registers::{Readable, Writeable, CNTV_CTL_EL0, CNTV_TVAL_EL0};
    enable_timer_interrupt();
    CNTV_TVAL_EL0.set(TIMER_TICKS);
    CNTV_CTL_EL0.set(TIMER_ENABLE);
    aarch64_cpu::asm::wfi();
    let ctl = CNTV_CTL_EL0.get();
    CNTV_CTL_EL0.set(0);
    let intid = acknowledge_interrupt();
    expect_no_exception(format_args!("wfi"))?;
    expect_eq(
        format_args!("CNTV_CTL_EL0.ISTATUS after wfi"),
        ctl & TIMER_ISTATUS,
        TIMER_ISTATUS,
    )?;
    expect_eq(format_args!("ICC_IAR1_EL1 after wfi"), intid, TIMER_PPI)?;
    aarch64_cpu::asm::wfe();
    expect_no_exception(format_args!("wfe"))
}
