//! Checks of interrupt delivery through Partita's virtual GIC: WFI waking on the virtual
//! timer (forwarded from the physical timer with the list register's HW bit), WFE returning,
//! and more pending SGIs than the CPU has list registers all arriving (trapped ICC_SGI1R_EL1
//! writes, list-register refill on the maintenance interrupt).
//!
//! The probe keeps PSTATE.I masked: interrupts are never taken, only acknowledged by hand
//! (`gic`), on the GIC the device tree names: a GICv3's ICC_IAR1_EL1 / ICC_EOIR1_EL1 (from
//! EL1 under Partita, the virtual ICV_* registers) or a GICv2's GICC_IAR / GICC_EOIR (the
//! board's GICV), with SGIs sent by a trapped ICC_SGI1R_EL1 or GICD_SGIR write.

use super::{expect_eq, expect_no_exception, Outcome};
use crate::gic::SPURIOUS;
use crate::platform::Platform;

/// CNTV_CTL_EL0: ENABLE, and ISTATUS (the timer condition is met).
const TIMER_ENABLE: u64 = 1;
const TIMER_ISTATUS: u64 = 1 << 2;
/// Virtual-counter ticks until the timer fires (a few microseconds).
const TIMER_TICKS: u64 = 200;
/// The virtual timer's PPI.
const TIMER_PPI: u64 = 27;
/// SGIs sent at once: twice the four list registers of Cortex-A72, QEMU's `max` and the
/// GIC-400.
const SGIS: u64 = 8;
/// Acknowledges that may return "no interrupt" while Partita refills the list registers.
pub const SPURIOUS_LIMIT: u64 = 10_000;

/// WFI blocks until an interrupt is pending: with the virtual timer armed and its interrupt
/// enabled it returns with the timer fired and its interrupt pending; WFE returns at once.
pub fn wfi_wfe(p: &Platform) -> Outcome {
    use aarch64_cpu::registers::{Readable, Writeable, CNTV_CTL_EL0, CNTV_TVAL_EL0};
    let gic = p.gic;
    gic.enable(1 << TIMER_PPI);
    CNTV_TVAL_EL0.set(TIMER_TICKS);
    CNTV_CTL_EL0.set(TIMER_ENABLE);
    aarch64_cpu::asm::wfi();
    let ctl = CNTV_CTL_EL0.get();
    CNTV_CTL_EL0.set(0);
    let intid = gic.acknowledge();
    gic.disable(1 << TIMER_PPI);
    expect_no_exception(format_args!("wfi"))?;
    expect_eq(
        format_args!("CNTV_CTL_EL0.ISTATUS after wfi"),
        ctl & TIMER_ISTATUS,
        TIMER_ISTATUS,
    )?;
    expect_eq(format_args!("acknowledge after wfi"), intid, TIMER_PPI)?;
    aarch64_cpu::asm::wfe();
    expect_no_exception(format_args!("wfe"))
}

/// Eight SGIs to itself, more than the list registers hold: every one is acknowledged,
/// lowest INTID first (equal priorities), and nothing else.
pub fn sgis_beyond_list_registers(p: &Platform) -> Outcome {
    let gic = p.gic;
    let all = (1 << SGIS) - 1;
    gic.enable(all);
    for sgi in 0..SGIS {
        gic.sgi_to_self(sgi);
    }
    let mut next = 0;
    let mut spurious = 0;
    while next < SGIS && spurious < SPURIOUS_LIMIT {
        match gic.acknowledge() {
            SPURIOUS => spurious += 1,
            intid => {
                expect_eq(format_args!("SGI acknowledged"), intid, next)?;
                next += 1;
            }
        }
    }
    gic.disable(all);
    expect_no_exception(format_args!("SGI requests"))?;
    expect_eq(format_args!("SGIs acknowledged"), next, SGIS)?;
    expect_eq(
        format_args!("acknowledge afterwards"),
        gic.acknowledge(),
        SPURIOUS,
    )
}
