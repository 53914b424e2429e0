//! The hostile probes (`mode=hostile`, issue 6): numbered attacks on Partita's isolation, each
//! with the outcome a secure hypervisor must give and an assertion that it did.
//!
//! A probe is a name, the outcome it expects and a function that provokes it and checks what
//! came back, returning a `Failure` (the breach) otherwise. The runner clears the exception log
//! before each probe and counts an exception the probe did not consume as a breach too. Output,
//! one line per probe: `hostile: probe 07 gicr-other-cpu: abort-injected ok` or
//! `hostile: probe 07 gicr-other-cpu: BREACH <what happened>`, then `hostile: done, <n>
//! probes, <b> breaches`. Probes that end or restart their VM live in `lifecycle`
//! (`mode=wreck`, `mode=spin`, `mode=resetloop`); the host scenario asserts those outcomes. Nothing here may touch memory the
//! probe's own Rust code uses except through the documented attack addresses.

mod calls;
mod console;
mod devices;
pub mod fabric;
mod forms;
mod gic;
mod ivc;
pub mod lifecycle;
mod memory;
mod mmu;
mod sysregs;

use crate::checks::{Failure, Outcome};
use crate::exceptions;
use crate::platform::Platform;
use crate::println;

/// What Partita must do with an attack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// The access reaches the VM's own emulated device and is handled by its model.
    Emulated,
    /// A synchronous external abort is injected into the VM.
    AbortInjected,
    /// An undefined-instruction exception is taken by the VM.
    UndefinedInjected,
    /// The write or request has no effect (RAZ/WI, dropped, refused with an error code).
    Ignored,
    /// The instruction runs natively but the hardware confines it to the VM.
    Contained,
}

impl Expected {
    fn label(self) -> &'static str {
        match self {
            Expected::Emulated => "emulated",
            Expected::AbortInjected => "abort-injected",
            Expected::UndefinedInjected => "undefined-injected",
            Expected::Ignored => "ignored",
            Expected::Contained => "contained",
        }
    }
}

pub struct Probe {
    pub name: &'static str,
    pub expected: Expected,
    pub run: fn(&Platform) -> Outcome,
}

const fn probe(name: &'static str, expected: Expected, run: fn(&Platform) -> Outcome) -> Probe {
    Probe {
        name,
        expected,
        run,
    }
}

use Expected::{AbortInjected, Contained, Emulated, Ignored, UndefinedInjected};

/// Every probe of `mode=hostile`, in the order they run and are numbered. docs/security.md
/// lists them with the same numbers.
#[rustfmt::skip]
pub const PROBES: &[Probe] = &[
    probe("freertos-ram-read",       AbortInjected,     memory::freertos_ram_read),
    probe("freertos-ram-write",      AbortInjected,     memory::freertos_ram_write),
    probe("sibling-ram",             AbortInjected,     memory::sibling_ram),
    probe("own-phys-alias",          AbortInjected,     memory::own_phys_alias),
    probe("partita-image",           AbortInjected,     memory::partita_image),
    probe("partita-heap",            AbortInjected,     memory::partita_heap),
    probe("below-own-ram",           AbortInjected,     memory::below_own_ram),
    probe("ipa-top",                 AbortInjected,     memory::ipa_top),
    probe("gic-its",                 AbortInjected,     memory::gic_its),
    probe("gicr-other-cpu",          AbortInjected,     memory::gicr_other_cpu),
    probe("gicv2-cpu-hyp-frames",    AbortInjected,     memory::gicv2_frames),
    probe("rtc-fwcfg-gpio",          AbortInjected,     memory::platform_devices),
    probe("flash-pcie-secure",       AbortInjected,     memory::flash_pcie_secure),
    probe("gicd-readonly",           Ignored,           devices::gicd_readonly),
    probe("gicr-readonly",           Ignored,           devices::gicr_readonly),
    probe("gic-reserved",            Ignored,           devices::gic_reserved),
    probe("gic-beyond-spis",         Ignored,           devices::gic_beyond_spis),
    probe("gicr-lpis",               Ignored,           devices::gicr_lpis),
    probe("gic-wrong-width",         AbortInjected,     devices::gic_wrong_width),
    probe("pl011-readonly",          Ignored,           devices::pl011_readonly),
    probe("testdev-readonly",        Ignored,           devices::testdev_readonly),
    probe("console-forge",           Contained,         devices::console_forge),
    probe("stp-no-syndrome",         AbortInjected,     forms::store_pair),
    probe("simd-q-no-syndrome",      AbortInjected,     forms::simd),
    probe("writeback-no-syndrome",   AbortInjected,     forms::writeback),
    probe("exclusive-no-syndrome",   AbortInjected,     forms::exclusives),
    probe("unaligned-device",        AbortInjected,     forms::unaligned),
    probe("dc-civac-foreign",        Contained,         forms::cache_maintenance_foreign),
    probe("s1-walk-foreign-table",   AbortInjected,     mmu::walk_foreign_table),
    probe("s1-device-alias",         Emulated,          mmu::device_alias),
    probe("s1-foreign-page",         AbortInjected,     mmu::foreign_page),
    probe("exec-foreign",            AbortInjected,     mmu::exec_foreign),
    probe("cpu-on-bad-targets",      Ignored,           calls::cpu_on_bad_targets),
    probe("affinity-info-bad",       Ignored,           calls::affinity_info_bad),
    probe("psci-unimplemented",      Ignored,           calls::psci_unimplemented),
    probe("smc-secure-services",     Ignored,           calls::secure_services),
    probe("vendor-range",            Ignored,           calls::vendor_range),
    probe("nonzero-immediate",       Ignored,           calls::nonzero_immediate),
    probe("x0-upper-bits",           Emulated,          calls::upper_bits),
    probe("hvc-storm",               Emulated,          calls::storm),
    probe("sgi-flood-self",          Emulated,          gic::sgi_flood_self),
    probe("sgi-foreign-targets",     Ignored,           gic::sgi_foreign_targets),
    probe("sgi0r-asgi1r",            UndefinedInjected, gic::other_sgi_registers),
    probe("spi-foreign-route",       Emulated,          gic::spi_foreign_route),
    probe("eoi-dir-unowned",         Ignored,           gic::eoi_dir_unowned),
    probe("wfi-storm",               Emulated,          gic::wfi_storm),
    probe("wfe-storm",               Emulated,          sysregs::wfe_storm),
    probe("el2-sysregs",             UndefinedInjected, sysregs::el2_registers),
    probe("secure-timer",            UndefinedInjected, sysregs::secure_timer),
    probe("cntp-own-only",           Contained,         sysregs::cntp_own),
    probe("debug-breakpoints",       Ignored,           sysregs::debug_breakpoints),
    probe("debug-os-lock",           Ignored,           sysregs::debug_os_lock),
    probe("pmu-counters",            Ignored,           sysregs::pmu),
    probe("icc-group0",              Emulated,          sysregs::icc_group0),
    probe("tlbi-dc-sw-storm",        Contained,         sysregs::maintenance_storm),
    probe("uart-flood",              Emulated,          console::uart_flood),
    probe("console-call-forge",      Contained,         console::console_call_forge),
    probe("console-call-bad-count",  Ignored,           console::console_call_bad_count),
    probe("console-call-storm",      Emulated,          console::console_call_storm),
    probe("ivc-ring-foreign",        Ignored,           ivc::ring_foreign),
    probe("ivc-ring-storm",          Contained,         ivc::ring_storm),
    probe("ivc-readonly-write",      AbortInjected,     ivc::readonly_write),
    probe("ivc-outside-window",      AbortInjected,     ivc::outside_window),
    probe("ivc-scribble-ring",       Contained,         ivc::scribble_ring),
    probe("uart-register-file",      Emulated,          console::uart_register_file),
];

/// Times the whole table runs again, quietly, after the reported pass: the attacks then
/// last several of FreeRTOS's reporting periods.
const REPEATS: u32 = 4;

/// Runs every probe (reporting each), then the whole table `REPEATS` more times (reporting
/// only breaches, under the same number), prints the summary and returns the breaches.
pub fn run_all(platform: &Platform) -> usize {
    run_table(platform, PROBES, REPEATS)
}

/// Runs the fabric's probes once each, prints the summary and returns the breaches.
pub fn run_fabric(platform: &Platform) -> usize {
    run_table(platform, fabric::PROBES, 0)
}

fn run_table(platform: &Platform, probes: &[Probe], repeats: u32) -> usize {
    let mut breaches = 0;
    for (i, probe) in probes.iter().enumerate() {
        breaches += run_one(platform, i + 1, probe, true);
    }
    if repeats > 0 {
        println!("hostile: repeating every probe {repeats} more times");
    }
    for _ in 0..repeats {
        for (i, probe) in probes.iter().enumerate() {
            breaches += run_one(platform, i + 1, probe, false);
        }
    }
    println!(
        "hostile: done, {} probes, {breaches} breaches",
        probes.len()
    );
    breaches
}

/// Runs one probe and prints its line (an `ok` line only when `report_ok`); 1 if it breached.
fn run_one(platform: &Platform, number: usize, probe: &Probe, report_ok: bool) -> usize {
    exceptions::take_trap();
    let outcome = (probe.run)(platform).and_then(|()| no_stray_exception());
    let label = probe.expected.label();
    match outcome {
        Ok(()) => {
            if report_ok {
                println!("hostile: probe {number:02} {}: {label} ok", probe.name);
            }
            0
        }
        Err(failure) => {
            println!(
                "hostile: probe {number:02} {}: BREACH {failure} (expected {label})",
                probe.name
            );
            1
        }
    }
}

fn no_stray_exception() -> Outcome {
    match exceptions::take_trap() {
        None => Ok(()),
        Some(t) => Err(Failure::new(format_args!(
            "unexpected exception ESR {:#x} ELR {:#x} FAR {:#x}",
            t.esr, t.elr, t.far
        ))),
    }
}

/// Passes if exactly one undefined-instruction exception (EC 0) was taken since the trap
/// log was last read.
pub fn expect_undefined(what: core::fmt::Arguments) -> Outcome {
    let Some(trap) = exceptions::take_trap() else {
        return Err(Failure::new(format_args!("{what}: no exception")));
    };
    if trap.count != 1 || trap.class() != 0 {
        return Err(Failure::new(format_args!(
            "{what}: {} exception(s), last ESR {:#x}",
            trap.count, trap.esr
        )));
    }
    Ok(())
}
