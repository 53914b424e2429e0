//! Checks of interrupt delivery through Partita's virtual GIC: WFI waking on the virtual
//! timer (forwarded from the physical timer with the list register's HW bit), WFE returning,
//! and more pending SGIs than the CPU has list registers all arriving (trapped ICC_SGI1R_EL1
//! writes, list-register refill on the maintenance interrupt).
//!
//! The probe keeps PSTATE.I masked: interrupts are never taken, only acknowledged by hand
//! with ICC_IAR1_EL1 / ICC_EOIR1_EL1 (which, from EL1 under Partita, are the virtual ICV_*
//! registers). The guest GIC sits where QEMU `virt` has it, as Partita's device tree says.

use super::{expect_eq, expect_no_exception, Outcome};
use crate::mmio::Store;
use crate::platform::Platform;

/// CNTV_CTL_EL0: ENABLE, and ISTATUS (the timer condition is met).
const TIMER_ENABLE: u64 = 1;
const TIMER_ISTATUS: u64 = 1 << 2;
/// Virtual-counter ticks until the timer fires (a few microseconds).
const TIMER_TICKS: u64 = 200;
/// The virtual timer's PPI.
const TIMER_PPI: u64 = 27;
/// SGIs sent at once: twice the four list registers of Cortex-A72 and QEMU's `max`.
const SGIS: u64 = 8;
/// IAR reads that may return "no interrupt" while Partita refills the list registers.
pub const SPURIOUS_LIMIT: u64 = 10_000;
/// ICC_IAR1_EL1's "no pending interrupt" INTID.
pub const SPURIOUS: u64 = 1023;

/// GICD_CTLR, and the redistributor's GICR_WAKER, GICR_IGROUPR0, GICR_ISENABLER0 and
/// GICR_ICENABLER0.
const GICD_CTLR: u64 = 0x0800_0000;
const GICR_WAKER: u64 = 0x080a_0014;
const GICR_IGROUPR0: u64 = 0x080b_0080;
const GICR_ISENABLER0: u64 = 0x080b_0100;
const GICR_ICENABLER0: u64 = 0x080b_0180;
/// GICD_CTLR: EnableGrp1 and ARE.
const GICD_ENABLE_GRP1_ARE: u64 = (1 << 1) | (1 << 4);

/// Turns the VM's distributor, redistributor and CPU interface on for Group 1 and enables
/// the private interrupts in `enable` (a GICR_ISENABLER0 mask).
pub fn enable_interrupts(enable: u64) {
    Store::Word.run(GICD_CTLR, GICD_ENABLE_GRP1_ARE);
    Store::Word.run(GICR_WAKER, 0);
    Store::Word.run(GICR_IGROUPR0, u64::from(u32::MAX));
    Store::Word.run(GICR_ISENABLER0, enable);
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

/// Acknowledges the highest-priority pending interrupt and, unless there was none, ends it
/// (ICC_IAR1_EL1, ICC_EOIR1_EL1); its INTID or `SPURIOUS`.
pub fn acknowledge() -> u64 {
    let intid: u64;
    // SAFETY: acknowledging an interrupt touches only the CPU interface.
    unsafe { core::arch::asm!("mrs {}, S3_0_C12_C12_0", out(reg) intid) };
    let intid = intid & 0xff_ffff;
    if intid < 1020 {
        // SAFETY: ends the interrupt just acknowledged.
        unsafe { core::arch::asm!("msr S3_0_C12_C12_1, {}", "isb", in(reg) intid) };
    }
    intid
}

/// Sends SGI `sgi` to this CPU (ICC_SGI1R_EL1: TargetList bit 0, affinity 0.0.0).
fn send_sgi_to_self(sgi: u64) {
    // SAFETY: an SGI request only makes an interrupt pending; Partita traps and emulates it.
    unsafe { core::arch::asm!("msr S3_0_C12_C11_5, {}", "isb", in(reg) (sgi << 24) | 1) };
}

/// WFI blocks until an interrupt is pending: with the virtual timer armed and its interrupt
/// enabled it returns with the timer fired and its interrupt pending; WFE returns at once.
pub fn wfi_wfe(_: &Platform) -> Outcome {
    use aarch64_cpu::registers::{Readable, Writeable, CNTV_CTL_EL0, CNTV_TVAL_EL0};
    enable_interrupts(1 << TIMER_PPI);
    CNTV_TVAL_EL0.set(TIMER_TICKS);
    CNTV_CTL_EL0.set(TIMER_ENABLE);
    aarch64_cpu::asm::wfi();
    let ctl = CNTV_CTL_EL0.get();
    CNTV_CTL_EL0.set(0);
    let intid = acknowledge();
    Store::Word.run(GICR_ICENABLER0, 1 << TIMER_PPI);
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

/// Eight SGIs to itself, more than the list registers hold: every one is acknowledged,
/// lowest INTID first (equal priorities), and nothing else.
pub fn sgis_beyond_list_registers(_: &Platform) -> Outcome {
    let all = (1 << SGIS) - 1;
    enable_interrupts(all);
    for sgi in 0..SGIS {
        send_sgi_to_self(sgi);
    }
    let mut next = 0;
    let mut spurious = 0;
    while next < SGIS && spurious < SPURIOUS_LIMIT {
        match acknowledge() {
            SPURIOUS => spurious += 1,
            intid => {
                expect_eq(format_args!("SGI acknowledged"), intid, next)?;
                next += 1;
            }
        }
    }
    Store::Word.run(GICR_ICENABLER0, all);
    expect_no_exception(format_args!("SGI requests"))?;
    expect_eq(format_args!("SGIs acknowledged"), next, SGIS)?;
    expect_eq(
        format_args!("ICC_IAR1_EL1 afterwards"),
        acknowledge(),
        SPURIOUS,
    )
}
