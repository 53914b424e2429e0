//! Mode `smp`: the probe as a VM with two vCPUs (configs/tests/probe-smp.toml), checking
//! that PSCI and SGIs reach the VM's own vCPUs only, as hostile input would try otherwise:
//! CPU_ON and AFFINITY_INFO of MPIDRs the VM does not have (another VM's CPUs, other
//! clusters), CPU_ON with entry points outside the VM, SGIs to affinities nobody has, an
//! SPI routed to a CPU that does not exist, and the whole life of vCPU 1 (on, off by
//! itself, on again). Each check prints `ok`/`FAIL` as the default checks do; the mode ends
//! with `probe: smp: all <n> checks passed` and a power-off, or a crash. On a GICv2 board the
//! SGIs go through GICD_SGIR (CPU interfaces the VM does not have, the reserved filter) and
//! the SPI's target is its GICD_ITARGETSR byte.

use core::arch::{asm, global_asm};

use crate::checks::{Failure, Outcome};
use crate::gic::{
    Gic, GICD_ICENABLER, GICD_ICPENDR, GICD_ISENABLER, GICD_ISPENDR, GICD_ITARGETSR, GICD_SGIR,
    SPURIOUS,
};
use crate::mmio::{Load, Store};
use crate::platform::Platform;
use crate::println;
use crate::smccc_calls::{
    call, Conduit, ALREADY_ON, INVALID_PARAMETERS, PSCI_AFFINITY_INFO_64, PSCI_CPU_ON_64,
};

/// PSCI return values this mode expects besides the shared ones.
const ON_PENDING: i64 = -5;
const INVALID_ADDRESS: i64 = -9;
const AFFINITY_ON: i64 = 0;
const AFFINITY_OFF: i64 = 1;
/// The second vCPU's MPIDR affinity (Aff0 = 1).
const VCPU1: u64 = 1;
/// MPIDRs the VM does not have: a third vCPU, another cluster, Aff2 and Aff3.
const FOREIGN: [u64; 4] = [2, 0x100, 0x1_0000, 0x1_0000_0000];
/// Entry points outside the VM's 2 MiB at 0x4000_0000.
const OUTSIDE: [u64; 4] = [0x4020_0000, 0x6000_0000, 0, u64::MAX];
/// Polls of AFFINITY_INFO before a state change counts as lost.
const POLLS: u32 = 100_000;
/// The virtual timer's deadline ahead of each poll: 10 us at QEMU's 62.5 MHz.
const POLL_TICKS: u64 = 625;
const GICD_CTLR: u64 = 0x0800_0000;
const GICD_ISENABLER1: u64 = 0x0800_0104;
const GICD_ICENABLER1: u64 = 0x0800_0184;
const GICD_ISPENDR1: u64 = 0x0800_0204;
const GICD_ICPENDR1: u64 = 0x0800_0284;
/// GICD_IROUTER<n> of SPI 40.
const GICD_IROUTER40: u64 = 0x0800_6000 + 8 * 40;
const SPI: u64 = 40;

// vCPU 1's whole program: turn itself off again with PSCI CPU_OFF (no stack needed).
global_asm!(
    ".global probe_secondary",
    "probe_secondary:",
    "movz x0, #0x0002",
    "movk x0, #0x8400, lsl #16",
    "hvc #0",
    "b .",
);

extern "C" {
    fn probe_secondary();
}

fn status(function: u32, args: [u64; 3]) -> i64 {
    call(Conduit::Hvc, function, args).status()
}

fn expect(what: core::fmt::Arguments, got: i64, want: i64) -> Outcome {
    if got != want {
        return Err(Failure::new(format_args!("{what}: {got}, want {want}")));
    }
    Ok(())
}

fn affinity_info(target: u64, level: u64) -> i64 {
    status(PSCI_AFFINITY_INFO_64, [target, level, 0])
}

/// Arms (or, with `None`, stops) the virtual timer `ticks` ahead, its interrupt left
/// disabled in the GIC. Under QEMU's -icount a CPU's turn lasts until the next timer
/// deadline: without one, this CPU's polling would never let vCPU 1's CPU run.
fn timer_ahead(ticks: Option<u64>) {
    let (ctl, ahead) = match ticks {
        Some(ticks) => (1u64, ticks),
        None => (0, 0),
    };
    // SAFETY: the EL1 virtual timer is this vCPU's own; its PPI is not enabled.
    unsafe {
        asm!(
            "mrs {now}, cntvct_el0",
            "add {now}, {now}, {ahead}",
            "msr cntv_cval_el0, {now}",
            "msr cntv_ctl_el0, {ctl}",
            "isb",
            now = out(reg) _,
            ahead = in(reg) ahead,
            ctl = in(reg) ctl,
            options(nostack)
        )
    };
}

/// Waits until AFFINITY_INFO(vCPU 1) says `want`.
fn wait_for(want: i64) -> Outcome {
    let mut result = Err(Failure::new(format_args!(
        "AFFINITY_INFO(vCPU 1) never became {want}"
    )));
    for _ in 0..POLLS {
        timer_ahead(Some(POLL_TICKS));
        if affinity_info(VCPU1, 0) == want {
            result = Ok(());
            break;
        }
    }
    timer_ahead(None);
    result
}

fn foreign_mpidrs(_: &Platform) -> Outcome {
    for target in FOREIGN {
        let entry = probe_secondary as *const () as u64;
        let got = status(PSCI_CPU_ON_64, [target, entry, 0]);
        expect(format_args!("CPU_ON({target:#x})"), got, INVALID_PARAMETERS)?;
        let got = affinity_info(target, 0);
        expect(
            format_args!("AFFINITY_INFO({target:#x})"),
            got,
            INVALID_PARAMETERS,
        )?;
    }
    expect(
        format_args!("AFFINITY_INFO(cluster 0)"),
        affinity_info(0, 1),
        AFFINITY_ON,
    )?;
    expect(
        format_args!("AFFINITY_INFO(0, level 4)"),
        affinity_info(0, 4),
        INVALID_PARAMETERS,
    )
}

fn entries_outside(_: &Platform) -> Outcome {
    for entry in OUTSIDE {
        let got = status(PSCI_CPU_ON_64, [VCPU1, entry, 0]);
        expect(format_args!("CPU_ON(1, {entry:#x})"), got, INVALID_ADDRESS)?;
    }
    expect(
        format_args!("AFFINITY_INFO(1)"),
        affinity_info(VCPU1, 0),
        AFFINITY_OFF,
    )
}

/// Writes ICC_SGI1R_EL1.
fn sgi1r(value: u64) {
    // SAFETY: an SGI request only makes interrupts pending in the VM's virtual GIC.
    unsafe { asm!("msr S3_0_C12_C11_5, {}", "isb", in(reg) value, options(nostack)) };
}

/// Reads ICC_IAR1_EL1: the INTID acknowledged, 1023 when none is pending.
fn acknowledge() -> u64 {
    let intid: u64;
    // SAFETY: acknowledging touches only the (virtual) CPU interface; interrupts stay masked
    // in PSTATE, and nothing is enabled that could be acknowledged here.
    unsafe { asm!("mrs {}, S3_0_C12_C12_0", out(reg) intid, options(nostack)) };
    intid & 0xff_ffff
}

fn sgis_to_nobody(p: &Platform) -> Outcome {
    if let Gic::V2 { gicd, .. } = p.gic {
        return sgis_to_nobody_v2(p.gic, gicd);
    }
    // Aff0 2..15 in cluster 0, all of cluster 1 and 255, Aff2 and Aff3 set, RS 1..15.
    let requests = [
        (5 << 24) | 0xfffc,
        (5 << 24) | (1 << 16) | 0xffff,
        (5 << 24) | (0xff << 16) | 0xffff,
        (5 << 24) | (1 << 32) | 0xffff,
        (5 << 24) | (1 << 48) | 0xffff,
        (5 << 24) | (0xf << 44) | 0xffff,
    ];
    for request in requests {
        sgi1r(request);
    }
    let got = acknowledge();
    if got != 1023 {
        return Err(Failure::new(format_args!(
            "an SGI to nobody reached this vCPU: INTID {got}"
        )));
    }
    // vCPU 1 is off: SGIs to it stay pending there and change nothing here.
    sgi1r((6 << 24) | 0b10);
    sgi1r((1 << 40) | (7 << 24));
    expect(
        format_args!("AFFINITY_INFO(1)"),
        affinity_info(VCPU1, 0),
        AFFINITY_OFF,
    )
}

fn spi_routed_nowhere(p: &Platform) -> Outcome {
    if let Gic::V2 { gicd, .. } = p.gic {
        return spi_routed_nowhere_v2(p.gic, gicd);
    }
    Store::Word.run(GICD_CTLR, (1 << 1) | (1 << 4));
    for route in [5, 0x100, 0x1_0000, 1 << 32] {
        Store::Double.run(GICD_IROUTER40, route);
        let back = Load::Double.run(GICD_IROUTER40);
        if back != route {
            return Err(Failure::new(format_args!(
                "IROUTER(40) = {route:#x} reads back {back:#x}"
            )));
        }
        Store::Word.run(GICD_ISENABLER1, 1 << (SPI - 32));
        Store::Word.run(GICD_ISPENDR1, 1 << (SPI - 32));
        let got = acknowledge();
        Store::Word.run(GICD_ICPENDR1, 1 << (SPI - 32));
        Store::Word.run(GICD_ICENABLER1, 1 << (SPI - 32));
        if got != 1023 {
            return Err(Failure::new(format_args!(
                "SPI 40 routed to {route:#x} reached this vCPU: acknowledged {got}"
            )));
        }
    }
    Ok(())
}

/// SGIs 5 to 7 enabled here; GICD_SGIR to CPU interfaces 2 to 7 (which the VM does not
/// have) and with the reserved filter reach no one; to vCPU 1 (off) and to "all but me"
/// they pend there only.
fn sgis_to_nobody_v2(gic: Gic, gicd: u64) -> Outcome {
    const SGIS: u64 = 0b1110_0000;
    gic.enable(SGIS);
    for request in [(0xfc << 16) | 5, (3 << 24) | (0xff << 16) | 5] {
        Store::Word.run(gicd + GICD_SGIR, request);
    }
    let pending = gic.pending_private() & SGIS;
    let got = gic.acknowledge();
    Store::Word.run(gicd + GICD_SGIR, (0b10 << 16) | 6);
    Store::Word.run(gicd + GICD_SGIR, (1 << 24) | 7);
    let mine = gic.pending_private() & SGIS;
    gic.disable(SGIS);
    if pending != 0 || got != SPURIOUS {
        return Err(Failure::new(format_args!(
            "an SGI to nobody reached this vCPU: pending {pending:#x}, acknowledged {got}"
        )));
    }
    if mine != 0 {
        return Err(Failure::new(format_args!(
            "SGIs to vCPU 1 pend here: {mine:#x}"
        )));
    }
    expect(
        format_args!("AFFINITY_INFO(1)"),
        affinity_info(VCPU1, 0),
        AFFINITY_OFF,
    )
}

/// SPI 40 targeted at CPU interfaces the VM does not have (its byte reads back as none) and
/// at vCPU 1 (off): pended and enabled, it never reaches this vCPU.
fn spi_routed_nowhere_v2(gic: Gic, gicd: u64) -> Outcome {
    let target = gicd + GICD_ITARGETSR + SPI;
    let bank = 4 * (SPI / 32);
    let bit = 1 << (SPI % 32);
    gic.enable(0);
    for (byte, back_want) in [(0x04, 0), (0x80, 0), (0xfc, 0), (0x02, 0x02)] {
        Store::Byte.run(target, byte);
        let back = Load::Byte.run(target);
        Store::Word.run(gicd + GICD_ISENABLER + bank, bit);
        Store::Word.run(gicd + GICD_ISPENDR + bank, bit);
        let got = gic.acknowledge();
        Store::Word.run(gicd + GICD_ICPENDR + bank, bit);
        Store::Word.run(gicd + GICD_ICENABLER + bank, bit);
        if back != back_want {
            return Err(Failure::new(format_args!(
                "ITARGETSR(40) = {byte:#x} reads back {back:#x}"
            )));
        }
        if got != SPURIOUS {
            return Err(Failure::new(format_args!(
                "SPI 40 targeted at {byte:#x} reached this vCPU: acknowledged {got}"
            )));
        }
    }
    Store::Byte.run(target, 1);
    Ok(())
}

fn second_vcpu_life(_: &Platform) -> Outcome {
    let entry = probe_secondary as *const () as u64;
    for round in 0..2 {
        let got = status(PSCI_CPU_ON_64, [VCPU1, entry, round]);
        expect(format_args!("CPU_ON(1), round {round}"), got, 0)?;
        // Right after: on or still pending, never a second start.
        let again = status(PSCI_CPU_ON_64, [VCPU1, entry, round]);
        if again != ALREADY_ON && again != ON_PENDING && again != 0 {
            return Err(Failure::new(format_args!(
                "a second CPU_ON(1) returned {again}"
            )));
        }
        // vCPU 1 turns itself off (PSCI CPU_OFF).
        wait_for(AFFINITY_OFF)?;
    }
    Ok(())
}

struct Check {
    description: &'static str,
    run: fn(&Platform) -> Outcome,
}

#[rustfmt::skip]
const CHECKS: &[Check] = &[
    Check { description: "CPU_ON, AFFINITY_INFO of MPIDRs the VM does not have", run: foreign_mpidrs },
    Check { description: "CPU_ON of vCPU 1 at entry points outside the VM",       run: entries_outside },
    Check { description: "SGIs to affinities nobody has, and to vCPU 1 off",      run: sgis_to_nobody },
    Check { description: "SPI 40 routed to CPUs that do not exist",               run: spi_routed_nowhere },
    Check { description: "vCPU 1 on, off by itself, on and off again",            run: second_vcpu_life },
];

/// Runs the checks; true when all passed.
pub fn run(platform: &Platform) -> bool {
    let mut failed = 0;
    for (n, check) in CHECKS.iter().enumerate() {
        match (check.run)(platform) {
            Ok(()) => println!("ok {} {}", n + 1, check.description),
            Err(e) => {
                failed += 1;
                println!("FAIL {} {}: {e}", n + 1, check.description);
            }
        }
    }
    if failed == 0 {
        println!("probe: smp: all {} checks passed", CHECKS.len());
    } else {
        println!("probe: smp: {failed} of {} checks failed", CHECKS.len());
    }
    failed == 0
}
