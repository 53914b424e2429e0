//! Probes of system registers and instructions a guest must not reach, or must reach only
//! for itself: EL2 registers, the secure timer, the EL1 physical timer (switched with the
//! vCPU, its interrupt never delivered; undefined when an RTOS VM owns it), the debug
//! breakpoints and OS lock and the PMU (shared hardware that Partita does not switch:
//! RAZ/WI), the Group 0 CPU interface, a WFE storm and set/way and TLB maintenance storms
//! (confined by the hardware to the VM).

use core::arch::asm;

use aarch64_cpu::registers::{Readable, Writeable, CNTP_CTL_EL0, CNTP_CVAL_EL0};

use crate::checks::{expect_eq, expect_no_exception, Outcome};
use crate::gic::{GICD_ICENABLER, GICD_ISENABLER};
use crate::mmio::{Store, UNTOUCHED};
use crate::platform::Platform;

use super::expect_undefined;

const STORM: u32 = 20_000;
const CNTP_PPI: u64 = 30;

/// Reads a system register by name; the result is `UNTOUCHED` if the read was refused.
macro_rules! mrs {
    ($reg:literal) => {{
        let mut value = UNTOUCHED;
        // SAFETY: a system register read into a Rust variable; if it is refused the probe's
        // vector records the exception and skips the instruction.
        unsafe { asm!(concat!("mrs {v}, ", $reg), v = inout(reg) value, options(nostack)) };
        value
    }};
}

/// Writes a system register by name.
macro_rules! msr {
    ($reg:literal, $value:expr) => {{
        let value: u64 = $value;
        // SAFETY: a system register write the probe makes on purpose; none of them can change
        // the probe's own memory; if refused the exception is recorded and skipped.
        unsafe { asm!(concat!("msr ", $reg, ", {v}"), "isb", v = in(reg) value, options(nostack)) };
    }};
}

pub fn wfe_storm(_: &Platform) -> Outcome {
    for _ in 0..STORM {
        aarch64_cpu::asm::wfe();
    }
    expect_no_exception(format_args!("wfe storm"))
}

pub fn el2_registers(_: &Platform) -> Outcome {
    let hcr = mrs!("hcr_el2");
    expect_undefined(format_args!("mrs hcr_el2"))?;
    expect_eq(format_args!("hcr_el2 read"), hcr, UNTOUCHED)?;
    msr!("vttbr_el2", 0);
    expect_undefined(format_args!("msr vttbr_el2"))?;
    msr!("cntvoff_el2", 0);
    expect_undefined(format_args!("msr cntvoff_el2"))?;
    let lr = mrs!("S3_4_C12_C12_0");
    expect_undefined(format_args!("mrs ich_lr0_el2"))?;
    expect_eq(format_args!("ich_lr0_el2 read"), lr, UNTOUCHED)?;
    msr!("S3_4_C12_C11_0", 0);
    expect_undefined(format_args!("msr ich_hcr_el2"))
}

pub fn secure_timer(_: &Platform) -> Outcome {
    msr!("S3_7_C14_C2_1", 1);
    expect_undefined(format_args!("msr cntps_ctl_el1"))?;
    let cval = mrs!("S3_7_C14_C2_2");
    expect_undefined(format_args!("mrs cntps_cval_el1"))?;
    expect_eq(format_args!("cntps_cval_el1 read"), cval, UNTOUCHED)
}

/// Arms the EL1 physical timer to fire at once and leaves it firing: the VM sees its own
/// timer condition, but its interrupt reaches no one (not this VM, not the CPU's others).
/// With `cntp=trapped` in the boot arguments an RTOS VM of the CPU owns the timer
/// (`timer = "physical"`): then every access must be undefined.
pub fn cntp_own(p: &Platform) -> Outcome {
    if p.bootargs
        .split_ascii_whitespace()
        .any(|a| a == "cntp=trapped")
    {
        return cntp_trapped();
    }
    let gic = p.gic;
    CNTP_CVAL_EL0.set(0);
    CNTP_CTL_EL0.set(1);
    Store::Word.run(gic.private(GICD_ISENABLER), 1 << CNTP_PPI);
    let status = CNTP_CTL_EL0.get();
    let seen = (0..1000)
        .filter(|_| gic.highest_pending() == CNTP_PPI)
        .count() as u64;
    Store::Word.run(gic.private(GICD_ICENABLER), 1 << CNTP_PPI);
    expect_eq(format_args!("CNTP_CTL_EL0 (ENABLE|ISTATUS)"), status, 0b101)?;
    expect_eq(format_args!("PPI 30 pending at the VM"), seen, 0)
}

/// The timer another VM owns: reprogramming or even reading it is undefined.
fn cntp_trapped() -> Outcome {
    msr!("cntp_cval_el0", 0);
    expect_undefined(format_args!("msr cntp_cval_el0"))?;
    msr!("cntp_ctl_el0", 1);
    expect_undefined(format_args!("msr cntp_ctl_el0"))?;
    msr!("cntp_tval_el0", 0);
    expect_undefined(format_args!("msr cntp_tval_el0"))?;
    let ctl = mrs!("cntp_ctl_el0");
    expect_undefined(format_args!("mrs cntp_ctl_el0"))?;
    expect_eq(format_args!("cntp_ctl_el0 read"), ctl, UNTOUCHED)
}

pub fn debug_breakpoints(_: &Platform) -> Outcome {
    // A breakpoint and a watchpoint at Partita's load address, enabled for EL1 and EL0.
    msr!("S2_0_C0_C0_4", 0x4020_0000);
    msr!("S2_0_C0_C0_5", 0x1e7);
    msr!("S2_0_C0_C0_6", 0x4020_0000);
    msr!("S2_0_C0_C0_7", 0x1ff7);
    expect_no_exception(format_args!("breakpoint writes"))?;
    let values = [
        mrs!("S2_0_C0_C0_4"),
        mrs!("S2_0_C0_C0_5"),
        mrs!("S2_0_C0_C0_6"),
        mrs!("S2_0_C0_C0_7"),
    ];
    expect_no_exception(format_args!("breakpoint reads"))?;
    for (n, value) in values.into_iter().enumerate() {
        expect_eq(format_args!("DBGB/W register {n} read back"), value, 0)?;
    }
    Ok(())
}

pub fn debug_os_lock(_: &Platform) -> Outcome {
    msr!("S2_0_C1_C0_4", 1);
    msr!("S2_0_C1_C3_4", 1);
    let oslsr = mrs!("S2_0_C1_C1_4");
    let osdlr = mrs!("S2_0_C1_C3_4");
    msr!("S2_0_C1_C3_4", 0);
    msr!("S2_0_C1_C0_4", 0);
    expect_no_exception(format_args!("OS lock accesses"))?;
    expect_eq(format_args!("OSLSR_EL1.OSLK"), oslsr & 2, 0)?;
    expect_eq(format_args!("OSDLR_EL1.DLK"), osdlr & 1, 0)
}

pub fn pmu(_: &Platform) -> Outcome {
    msr!("S3_3_C9_C12_0", 0x7);
    msr!("S3_3_C9_C12_1", 1 << 31);
    msr!("S3_0_C9_C14_1", u64::from(u32::MAX));
    msr!("S3_3_C9_C14_0", 0xf);
    let values = [
        mrs!("S3_3_C9_C12_0"),
        mrs!("S3_3_C9_C12_1"),
        mrs!("S3_0_C9_C14_1"),
        mrs!("S3_3_C9_C14_0"),
        mrs!("S3_3_C9_C13_0"),
    ];
    expect_no_exception(format_args!("PMU accesses"))?;
    for (n, value) in values.into_iter().enumerate() {
        expect_eq(format_args!("PMU register {n} read back"), value, 0)?;
    }
    Ok(())
}

pub fn icc_group0(_: &Platform) -> Outcome {
    msr!("S3_0_C12_C12_6", 1);
    let iar0 = mrs!("S3_0_C12_C8_0");
    let hppir0 = mrs!("S3_0_C12_C8_2");
    msr!("S3_0_C12_C8_1", 27);
    msr!("S3_0_C12_C12_6", 0);
    expect_no_exception(format_args!("ICC Group 0 accesses"))?;
    expect_eq(format_args!("ICC_IAR0_EL1"), iar0 & 0xff_ffff, 1023)?;
    expect_eq(format_args!("ICC_HPPIR0_EL1"), hppir0 & 0xff_ffff, 1023)
}

pub fn maintenance_storm(_: &Platform) -> Outcome {
    for i in 0..STORM / 4 {
        let set_way = u64::from(i) << 6 | u64::from(i % 2) << 31 | u64::from(i % 3) << 1;
        // SAFETY: TLB and instruction-cache invalidation and data-cache maintenance by set
        // and way; with stage 2 on they apply to this VM only or are upgraded to clean and
        // invalidate, so no data is lost.
        unsafe {
            asm!(
                "tlbi vmalle1is",
                "ic ialluis",
                "dc isw, {sw}",
                "dc cisw, {sw}",
                "dsb sy",
                "isb",
                sw = in(reg) set_way,
                options(nostack)
            )
        };
    }
    expect_no_exception(format_args!("maintenance storm"))
}
