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
//!
//! The probe runs on a GICv3 board (QEMU `virt`) or a GICv2 one (the ZCU102), told apart by
//! the GIC its device tree names. Most probes apply to both, some with an attack on each
//! GIC's own registers; a probe of one board's GIC or devices reports `skipped` on the other
//! (`hostile: probe 09 gic-its: skipped (GICv3 board only)`), so every number appears on
//! both.

mod calls;
mod console;
mod devices;
pub mod fabric;
mod forms;
mod gic;
mod gic_v2;
mod ivc;
pub mod lifecycle;
mod memory;
mod mmu;
mod sysregs;

use crate::checks::{Failure, Outcome};
use crate::exceptions;
use crate::gic::Gic;
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

type Body = fn(&Platform) -> Outcome;

/// Where a probe applies, and its body there.
pub enum Run {
    /// On both boards (their addresses from the device tree or `memory::Targets`).
    Any(Body),
    /// The same attack on each GIC version's registers.
    PerGic { v3: Body, v2: Body },
    /// On a GICv3 board (QEMU `virt`) only: its GIC's or its devices' addresses.
    V3(Body),
    /// On a GICv2 board (the ZCU102) only.
    V2(Body),
}

impl Run {
    /// The body for `gic`, or why there is none.
    fn body(&self, gic: Gic) -> Result<Body, &'static str> {
        let v2 = matches!(gic, Gic::V2 { .. });
        match (self, v2) {
            (Run::Any(body), _) | (Run::V3(body), false) | (Run::V2(body), true) => Ok(*body),
            (Run::PerGic { v3, .. }, false) => Ok(*v3),
            (Run::PerGic { v2, .. }, true) => Ok(*v2),
            (Run::V3(_), true) => Err("skipped (GICv3 board only)"),
            (Run::V2(_), false) => Err("skipped (GICv2 board only)"),
        }
    }
}

pub struct Probe {
    pub name: &'static str,
    pub expected: Expected,
    pub run: Run,
}

const fn probe(name: &'static str, expected: Expected, run: Run) -> Probe {
    Probe {
        name,
        expected,
        run,
    }
}

/// The same attack on each GIC version: `per_gic!(v3_body, v2_body)`.
macro_rules! per_gic {
    ($v3:expr, $v2:expr) => {
        Run::PerGic { v3: $v3, v2: $v2 }
    };
}

use Expected::{AbortInjected, Contained, Emulated, Ignored, UndefinedInjected};
use Run::{Any, V2, V3};

/// Every probe of `mode=hostile`, in the order they run and are numbered. docs/security.md
/// lists them with the same numbers.
#[rustfmt::skip]
pub const PROBES: &[Probe] = &[
    probe("freertos-ram-read",       AbortInjected,     Any(memory::freertos_ram_read)),
    probe("freertos-ram-write",      AbortInjected,     Any(memory::freertos_ram_write)),
    probe("sibling-ram",             AbortInjected,     Any(memory::sibling_ram)),
    probe("own-phys-alias",          AbortInjected,     Any(memory::own_phys_alias)),
    probe("partita-image",           AbortInjected,     Any(memory::partita_image)),
    probe("partita-heap",            AbortInjected,     Any(memory::partita_heap)),
    probe("below-own-ram",           AbortInjected,     Any(memory::below_own_ram)),
    probe("ipa-top",                 AbortInjected,     Any(memory::ipa_top)),
    probe("gic-its",                 AbortInjected,     V3(memory::gic_its)),
    probe("gicr-other-cpu",          AbortInjected,     V3(memory::gicr_other_cpu)),
    probe("gicv2-cpu-hyp-frames",    AbortInjected,     per_gic!(memory::gicv2_frames, gic_v2::frames_not_mapped)),
    probe("rtc-fwcfg-gpio",          AbortInjected,     V3(memory::platform_devices)),
    probe("flash-pcie-secure",       AbortInjected,     V3(memory::flash_pcie_secure)),
    probe("gicd-readonly",           Ignored,           per_gic!(devices::gicd_readonly, gic_v2::gicd_readonly)),
    probe("gicr-readonly",           Ignored,           V3(devices::gicr_readonly)),
    probe("gic-reserved",            Ignored,           per_gic!(devices::gic_reserved, gic_v2::reserved)),
    probe("gic-beyond-spis",         Ignored,           per_gic!(devices::gic_beyond_spis, gic_v2::beyond_spis)),
    probe("gicr-lpis",               Ignored,           V3(devices::gicr_lpis)),
    probe("gic-wrong-width",         AbortInjected,     per_gic!(devices::gic_wrong_width, gic_v2::wrong_width)),
    probe("pl011-readonly",          Ignored,           Any(devices::pl011_readonly)),
    probe("testdev-readonly",        Ignored,           Any(devices::testdev_readonly)),
    probe("console-forge",           Contained,         Any(devices::console_forge)),
    probe("stp-no-syndrome",         AbortInjected,     Any(forms::store_pair)),
    probe("simd-q-no-syndrome",      AbortInjected,     Any(forms::simd)),
    probe("writeback-no-syndrome",   AbortInjected,     Any(forms::writeback)),
    probe("exclusive-no-syndrome",   AbortInjected,     Any(forms::exclusives)),
    probe("unaligned-device",        AbortInjected,     Any(forms::unaligned)),
    probe("dc-civac-foreign",        Contained,         Any(forms::cache_maintenance_foreign)),
    probe("s1-walk-foreign-table",   AbortInjected,     Any(mmu::walk_foreign_table)),
    probe("s1-device-alias",         Emulated,          Any(mmu::device_alias)),
    probe("s1-foreign-page",         AbortInjected,     Any(mmu::foreign_page)),
    probe("exec-foreign",            AbortInjected,     Any(mmu::exec_foreign)),
    probe("cpu-on-bad-targets",      Ignored,           Any(calls::cpu_on_bad_targets)),
    probe("affinity-info-bad",       Ignored,           Any(calls::affinity_info_bad)),
    probe("psci-unimplemented",      Ignored,           Any(calls::psci_unimplemented)),
    probe("smc-secure-services",     Ignored,           Any(calls::secure_services)),
    probe("vendor-range",            Ignored,           Any(calls::vendor_range)),
    probe("nonzero-immediate",       Ignored,           Any(calls::nonzero_immediate)),
    probe("x0-upper-bits",           Emulated,          Any(calls::upper_bits)),
    probe("hvc-storm",               Emulated,          Any(calls::storm)),
    probe("sgi-flood-self",          Emulated,          Any(gic::sgi_flood_self)),
    probe("sgi-foreign-targets",     Ignored,           per_gic!(gic::sgi_foreign_targets, gic_v2::sgi_foreign_targets)),
    probe("sgi0r-asgi1r",            UndefinedInjected, V3(gic::other_sgi_registers)),
    probe("spi-foreign-route",       Emulated,          per_gic!(gic::spi_foreign_route, gic_v2::spi_foreign_route)),
    probe("eoi-dir-unowned",         Ignored,           per_gic!(gic::eoi_dir_unowned, gic_v2::eoi_dir_unowned)),
    probe("wfi-storm",               Emulated,          Any(gic::wfi_storm)),
    probe("wfe-storm",               Emulated,          Any(sysregs::wfe_storm)),
    probe("el2-sysregs",             UndefinedInjected, Any(sysregs::el2_registers)),
    probe("secure-timer",            UndefinedInjected, Any(sysregs::secure_timer)),
    probe("cntp-own-only",           Contained,         Any(sysregs::cntp_own)),
    probe("debug-breakpoints",       Ignored,           Any(sysregs::debug_breakpoints)),
    probe("debug-os-lock",           Ignored,           Any(sysregs::debug_os_lock)),
    probe("pmu-counters",            Ignored,           Any(sysregs::pmu)),
    probe("icc-group0",              Emulated,          V3(sysregs::icc_group0)),
    probe("tlbi-dc-sw-storm",        Contained,         Any(sysregs::maintenance_storm)),
    probe("uart-flood",              Emulated,          Any(console::uart_flood)),
    probe("console-call-forge",      Contained,         Any(console::console_call_forge)),
    probe("console-call-bad-count",  Ignored,           Any(console::console_call_bad_count)),
    probe("console-call-storm",      Emulated,          Any(console::console_call_storm)),
    probe("ivc-ring-foreign",        Ignored,           Any(ivc::ring_foreign)),
    probe("ivc-ring-storm",          Contained,         Any(ivc::ring_storm)),
    probe("ivc-readonly-write",      AbortInjected,     Any(ivc::readonly_write)),
    probe("ivc-outside-window",      AbortInjected,     Any(ivc::outside_window)),
    probe("ivc-scribble-ring",       Contained,         Any(ivc::scribble_ring)),
    probe("uart-register-file",      Emulated,          Any(console::uart_register_file)),
    probe("zynqmp-peripherals",      AbortInjected,     V2(gic_v2::peripherals)),
    probe("ocm-qspi-ddr-high",       AbortInjected,     V2(gic_v2::other_memory)),
    probe("gicd-itargetsr-private",  Ignored,           V2(gic_v2::private_targets)),
    probe("gicd-sgi-pending-regs",   Ignored,           V2(gic_v2::sgi_pending_registers)),
    probe("icc-sysregs-absent",      UndefinedInjected, V2(gic_v2::icc_registers_absent)),
    probe("gicv-state-kept",         Contained,         V2(gic_v2::cpu_interface_state_kept)),
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

/// Runs one probe and prints its line (an `ok` or `skipped` line only when `report_ok`); 1 if
/// it breached.
fn run_one(platform: &Platform, number: usize, probe: &Probe, report_ok: bool) -> usize {
    exceptions::take_trap();
    let label = probe.expected.label();
    let body = match probe.run.body(platform.gic) {
        Ok(body) => body,
        Err(why) => {
            if report_ok {
                println!("hostile: probe {number:02} {}: {why}", probe.name);
            }
            return 0;
        }
    };
    let outcome = body(platform).and_then(|()| no_stray_exception());
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
