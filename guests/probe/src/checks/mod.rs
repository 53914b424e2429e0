//! The numbered checks of the default mode, run in table order, and what they share.
//!
//! A check is a description and a function that returns `Err(Failure)` with a one-line
//! detail. The runner clears the trap log before each check and fails a check that leaves an
//! exception it did not consume, so an unexpected abort or undefined instruction never passes
//! unnoticed. Output: `ok <n> <description>` or `FAIL <n> <description>: <detail>`.

mod faults;
mod fp;
mod hypercalls;
pub mod interrupts;
mod testdev;

use core::fmt::{self, Write};

use crate::exceptions::{self, DFSC_EXTERNAL_ABORT, EC_DATA_ABORT_SAME_EL};
use crate::platform::Platform;
use crate::println;

pub use testdev::boot_count;

/// Why a check failed, as one line of text (cut at its capacity).
pub struct Failure(heapless::String<112>);

impl Failure {
    pub fn new(args: fmt::Arguments) -> Failure {
        let mut text = heapless::String::new();
        // A detail longer than the buffer is cut; the beginning says what failed.
        let _ = text.write_fmt(args);
        Failure(text)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub type Outcome = Result<(), Failure>;

pub struct Check {
    pub description: &'static str,
    pub run: fn(&Platform) -> Outcome,
}

const fn check(description: &'static str, run: fn(&Platform) -> Outcome) -> Check {
    Check { description, run }
}

/// Every check, in the order they run and are numbered.
#[rustfmt::skip]
const CHECKS: &[Check] = &[
    check("device tree names the console, test device and GIC",   device_tree),
    check("SMCCC_VERSION via HVC is 1.1",                         hypercalls::smccc_version),
    check("PSCI_VERSION via HVC is 1.1",                          hypercalls::psci_version_hvc),
    check("PSCI_VERSION via SMC is 1.1",                          hypercalls::psci_version_smc),
    check("PSCI_FEATURES: implemented and unknown IDs",           hypercalls::psci_features),
    check("unknown function IDs via HVC return NOT_SUPPORTED",    hypercalls::unknown_hvc),
    check("unknown function IDs via SMC return NOT_SUPPORTED",    hypercalls::unknown_smc),
    check("PARTITA_VERSION answers",                              hypercalls::partita_version),
    check("CPU_ON and AFFINITY_INFO on a uniprocessor VM",        hypercalls::cpu_on),
    check("testdev ID: loads of every size at several offsets",   testdev::id_loads),
    check("testdev ID: sign-extending loads into x and w",        testdev::signed_loads),
    check("testdev SCRATCH: stores of every size merge",          testdev::scratch_stores),
    check("testdev WRITES counts accepted stores",                testdev::writes_count),
    check("testdev: loads into xzr/wzr leave SP alone",           testdev::zero_register_loads),
    check("testdev: stores from xzr/wzr write zero",              testdev::zero_register_stores),
    check("testdev: ldp (no syndrome) aborts",                    faults::load_pair),
    check("testdev FAULT register: load and store abort",         faults::fault_register),
    check("unmapped memory at 0x20000000: load and store abort",  faults::unmapped_low),
    check("unmapped memory at 0x100000000: load and store abort", faults::unmapped_high),
    check("pl011: PrimeCell IDs, 64-bit access aborts",           faults::pl011_ids),
    check("testdev BOOTS is 1",                                   testdev::first_boot),
    check("WFI wakes on the virtual timer, WFE returns",           interrupts::wfi_wfe),
    check("8 SGIs to self: all delivered through 4 list registers", interrupts::sgis_beyond_list_registers),
    check("FP/SIMD q0-q31 survive an HVC and an MMIO exit",       fp::kept_across_exits),
];

pub struct Summary {
    pub total: usize,
    pub failed: usize,
}

pub fn run_all(platform: &Platform) -> Summary {
    let mut failed = 0;
    for (i, check) in CHECKS.iter().enumerate() {
        exceptions::take_trap();
        let outcome = (check.run)(platform).and_then(|()| no_stray_exception());
        match outcome {
            Ok(()) => println!("ok {} {}", i + 1, check.description),
            Err(failure) => {
                failed += 1;
                println!("FAIL {} {}: {failure}", i + 1, check.description);
            }
        }
    }
    Summary {
        total: CHECKS.len(),
        failed,
    }
}

fn device_tree(p: &Platform) -> Outcome {
    let missing = [
        (!p.dtb_found, "no device tree at x0"),
        (!p.uart_from_dtb, "no arm,pl011 node"),
        (!p.testdev_from_dtb, "no partita,testdev node"),
        (!p.gic_from_dtb, "no GIC node"),
    ];
    match missing.iter().find(|(is_missing, _)| *is_missing) {
        Some((_, what)) => Err(Failure::new(format_args!("{what}, using fallbacks"))),
        None => Ok(()),
    }
}

fn no_stray_exception() -> Outcome {
    match exceptions::take_trap() {
        None => Ok(()),
        Some(t) => Err(Failure::new(format_args!(
            "unexpected exception: ESR {:#x}, ELR {:#x}, FAR {:#x} ({} taken)",
            t.esr, t.elr, t.far, t.count
        ))),
    }
}

pub fn expect_eq(what: fmt::Arguments, got: u64, want: u64) -> Outcome {
    if got == want {
        return Ok(());
    }
    Err(Failure::new(format_args!(
        "{what}: got {got:#x}, want {want:#x}"
    )))
}

/// Passes if exactly one synchronous external data abort at `addr` was taken since the last
/// check of the trap log.
pub fn expect_abort(what: fmt::Arguments, addr: u64) -> Outcome {
    let Some(trap) = exceptions::take_trap() else {
        return Err(Failure::new(format_args!("{what}: no abort")));
    };
    expect_eq(format_args!("{what}: exceptions taken"), trap.count, 1)?;
    expect_eq(
        format_args!("{what}: ESR_EL1.EC"),
        trap.class(),
        EC_DATA_ABORT_SAME_EL,
    )?;
    expect_eq(
        format_args!("{what}: ESR_EL1.DFSC"),
        trap.fault_status(),
        DFSC_EXTERNAL_ABORT,
    )?;
    expect_eq(format_args!("{what}: FAR_EL1"), trap.far, addr)
}

/// Passes if no exception was taken since the last check of the trap log.
pub fn expect_no_exception(what: fmt::Arguments) -> Outcome {
    match exceptions::take_trap() {
        None => Ok(()),
        Some(t) => Err(Failure::new(format_args!(
            "{what}: exception ESR {:#x} at ELR {:#x}",
            t.esr, t.elr
        ))),
    }
}
