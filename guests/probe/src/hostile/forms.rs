//! Probes of instruction forms that give Partita no instruction syndrome (ISV = 0) on an
//! emulated device: store pairs, SIMD registers, pre- and post-index writeback, exclusives,
//! unaligned accesses and cache maintenance on another VM's memory. Each must abort without
//! any side effect: the device keeps its value and a writeback base register is not updated.
//! Every access is one instruction in inline assembly so the form is exactly the one named.

use core::arch::asm;

use crate::checks::{expect_abort, expect_eq, Failure, Outcome};
use crate::exceptions::{self, EC_DATA_ABORT_SAME_EL};
use crate::mmio::{Load, Store, UNTOUCHED};
use crate::platform::Platform;

const SCRATCH: u64 = 0x08;
const MARK: u64 = 0x0123_4567_89ab_cdef;
/// The test device's ID register, which a 128-bit load at its base would read.
const TESTDEV_ID: u64 = 0x8899_aabb_ccdd_eeff;
/// The FreeRTOS VM's RAM, physically (configs/tests/hostile.toml).
const FREERTOS_PHYS: u64 = 0x6000_0000;
/// DFSC of an alignment fault, which the CPU may raise before Partita sees the access.
const DFSC_ALIGNMENT: u64 = 0x21;

/// Sets SCRATCH to `MARK` and returns its address.
fn marked_scratch(p: &Platform) -> u64 {
    let scratch = p.testdev + SCRATCH;
    Store::Double.run(scratch, MARK);
    scratch
}

fn scratch_unchanged(scratch: u64) -> Outcome {
    expect_eq(format_args!("SCRATCH"), Load::Double.run(scratch), MARK)
}

pub fn store_pair(p: &Platform) -> Outcome {
    let scratch = marked_scratch(p);
    // SAFETY: one `stp` to the emulated test device; the abort is recorded and skipped.
    unsafe { asm!("stp {a}, {a}, [{b}]", a = in(reg) 0u64, b = in(reg) scratch, options(nostack)) };
    expect_abort(format_args!("stp at {scratch:#x}"), scratch)?;
    scratch_unchanged(scratch)
}

pub fn simd(p: &Platform) -> Outcome {
    let scratch = marked_scratch(p);
    let mut low = UNTOUCHED;
    // SAFETY: one `ldr q0` and one `str q0` on the emulated test device; both aborts are
    // recorded and skipped; q0 is declared clobbered.
    unsafe {
        asm!(
            "ldr q0, [{b}]",
            "fmov {low}, d0",
            b = in(reg) p.testdev,
            low = inout(reg) low,
            out("v0") _,
            options(nostack)
        )
    };
    expect_abort(format_args!("ldr q0 at {:#x}", p.testdev), p.testdev)?;
    // SAFETY: as above.
    unsafe {
        asm!("movi v0.16b, #0", "str q0, [{b}]", b = in(reg) scratch, out("v0") _, options(nostack))
    };
    expect_abort(format_args!("str q0 at {scratch:#x}"), scratch)?;
    if low == TESTDEV_ID {
        return Err(Failure::new(format_args!(
            "ldr q0 read the device: {low:#x}"
        )));
    }
    scratch_unchanged(scratch)
}

pub fn writeback(p: &Platform) -> Outcome {
    let scratch = marked_scratch(p);
    let mut base = p.testdev;
    let mut value = UNTOUCHED;
    // SAFETY: one pre-indexed load from the emulated test device; the abort is recorded and
    // skipped, and the base register is Rust's `base`.
    unsafe {
        asm!("ldr {v}, [{b}, #8]!", b = inout(reg) base, v = inout(reg) value, options(nostack))
    };
    expect_abort(format_args!("ldr pre-index at {scratch:#x}"), scratch)?;
    expect_eq(format_args!("pre-index base"), base, p.testdev)?;
    expect_eq(format_args!("pre-index register"), value, UNTOUCHED)?;
    let mut base = scratch;
    // SAFETY: one post-indexed store to the emulated test device, as above.
    unsafe { asm!("str {v}, [{b}], #8", b = inout(reg) base, v = in(reg) 0u64, options(nostack)) };
    expect_abort(format_args!("str post-index at {scratch:#x}"), scratch)?;
    expect_eq(format_args!("post-index base"), base, scratch)?;
    scratch_unchanged(scratch)
}

pub fn exclusives(p: &Platform) -> Outcome {
    let scratch = marked_scratch(p);
    let mut value = UNTOUCHED;
    let mut status = UNTOUCHED;
    // SAFETY: one `ldxr` and one `stxr` on the emulated test device; both aborts are
    // recorded and skipped.
    unsafe {
        asm!(
            "ldxr {v}, [{b}]",
            b = in(reg) scratch,
            v = inout(reg) value,
            options(nostack)
        )
    };
    expect_abort(format_args!("ldxr at {scratch:#x}"), scratch)?;
    // SAFETY: as above.
    unsafe {
        asm!(
            "stxr {s:w}, {v}, [{b}]",
            b = in(reg) scratch,
            v = in(reg) 0u64,
            s = inout(reg) status,
            options(nostack)
        )
    };
    // With the exclusive monitor open (the ldxr aborted) the CPU may fail the stxr itself,
    // status 1, without any access; otherwise it must abort.
    if status == UNTOUCHED {
        expect_abort(format_args!("stxr at {scratch:#x}"), scratch)?;
    } else {
        expect_eq(format_args!("stxr status without an abort"), status, 1)?;
    }
    expect_eq(format_args!("ldxr register"), value, UNTOUCHED)?;
    scratch_unchanged(scratch)
}

/// An unaligned access to a device: either the CPU raises an alignment fault (Device memory)
/// or Partita refuses it; never is it emulated.
pub fn unaligned(p: &Platform) -> Outcome {
    let scratch = marked_scratch(p);
    let addr = scratch + 2;
    let got = Load::Word.run(addr);
    expect_abort_any(format_args!("ldr w at {addr:#x}"), addr)?;
    expect_eq(format_args!("unaligned load register"), got, UNTOUCHED)?;
    Store::Word.run(addr, 0);
    expect_abort_any(format_args!("str w at {addr:#x}"), addr)?;
    scratch_unchanged(scratch)
}

/// One data abort at `addr`: external (from Partita) or alignment (from the CPU).
fn expect_abort_any(what: core::fmt::Arguments, addr: u64) -> Outcome {
    let Some(t) = exceptions::take_trap() else {
        return Err(Failure::new(format_args!("{what}: emulated, no abort")));
    };
    let external_or_alignment = matches!(t.fault_status(), 0x10 | DFSC_ALIGNMENT);
    if t.count != 1 || t.class() != EC_DATA_ABORT_SAME_EL || !external_or_alignment || t.far != addr
    {
        return Err(Failure::new(format_args!(
            "{what}: ESR {:#x} FAR {:#x} ({} taken)",
            t.esr, t.far, t.count
        )));
    }
    Ok(())
}

/// Cache maintenance by address on another VM's memory: stage 2 does not map it, so on
/// hardware it faults and Partita injects an abort; QEMU's TCG performs data-cache
/// maintenance without translating the address, so nothing happens. Either way the other
/// VM's lines are untouched (and DC IVAC is upgraded to clean and invalidate under stage 2).
pub fn cache_maintenance_foreign(_: &Platform) -> Outcome {
    // SAFETY: cache maintenance by address on another VM's memory, which stage 2 does not
    // map: an abort is recorded and skipped.
    unsafe { asm!("dc civac, {}", in(reg) FREERTOS_PHYS, options(nostack)) };
    abort_or_nothing(
        format_args!("dc civac at {FREERTOS_PHYS:#x}"),
        FREERTOS_PHYS,
    )?;
    // SAFETY: as above, with the invalidating form.
    unsafe { asm!("dc ivac, {}", in(reg) FREERTOS_PHYS, options(nostack)) };
    abort_or_nothing(format_args!("dc ivac at {FREERTOS_PHYS:#x}"), FREERTOS_PHYS)
}

/// Passes if no exception was taken, or exactly the injected abort at `addr`.
fn abort_or_nothing(what: core::fmt::Arguments, addr: u64) -> Outcome {
    let Some(t) = exceptions::take_trap() else {
        return Ok(());
    };
    let injected = t.class() == EC_DATA_ABORT_SAME_EL && t.fault_status() == 0x10;
    if t.count != 1 || !injected || t.far != addr {
        return Err(Failure::new(format_args!(
            "{what}: ESR {:#x} FAR {:#x} ({} taken)",
            t.esr, t.far, t.count
        )));
    }
    Ok(())
}
