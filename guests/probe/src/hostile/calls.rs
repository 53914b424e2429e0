//! Probes of Partita's SMCCC/PSCI services with arguments a guest must not get anything
//! from: CPU_ON of other or impossible CPUs and entry points outside the VM, AFFINITY_INFO
//! with impossible levels, PSCI functions Partita does not implement (SYSTEM_RESET2,
//! CPU_SUSPEND...), secure-world services (SiP, OEM, trusted applications and OSes, TRNG,
//! SDEI, FF-A), Partita's own vendor range, non-zero immediates carrying a SYSTEM_OFF ID and
//! a storm of calls. Refusals must leave x1..x3 as the guest gave them (nothing leaks).

use core::arch::asm;

use aarch64_cpu::registers::{Readable, MPIDR_EL1};

use crate::checks::{expect_eq, Failure, Outcome};
use crate::platform::Platform;
use crate::smccc_calls::{
    call, Conduit, ALREADY_ON, INVALID_PARAMETERS, NOT_SUPPORTED, PSCI_AFFINITY_INFO_64,
    PSCI_CPU_ON_64, PSCI_FEATURES, PSCI_SYSTEM_OFF, PSCI_VERSION,
};

const PSCI_CPU_ON_32: u32 = 0x8400_0003;
const PSCI_AFFINITY_INFO_32: u32 = 0x8400_0004;
const MPIDR_AFFINITY: u64 = 0xff_00ff_ffff;
/// Targets no VM CPU has: other Aff0/Aff1/Aff2/Aff3 values and all ones.
const BAD_TARGETS: [u64; 5] = [1, 0x100, 0x1_0000, 0xff_0000_0000, u64::MAX];
/// Entry points outside the VM: Partita's image, the FreeRTOS VM's RAM, unmapped, all ones.
const BAD_ENTRIES: [u64; 4] = [0x4020_0000, 0x6000_0000, 0, u64::MAX];
/// PSCI functions Partita does not implement: CPU_SUSPEND, MIGRATE, MIGRATE_INFO_UP_CPU,
/// SYSTEM_SUSPEND, SYSTEM_RESET2 (32 and 64), MEM_PROTECT, an undefined PSCI number.
const PSCI_UNIMPLEMENTED: [u32; 8] = [
    0xc400_0001,
    0xc400_0005,
    0xc400_0007,
    0xc400_000e,
    0x8400_0012,
    0xc400_0012,
    0x8400_0013,
    0x8400_00ff,
];
/// Secure-world and other services: SiP, OEM, standard-service TRNG, SDEI and FF-A, trusted
/// applications, trusted OSes (first and last), Arm architecture calls ARCH_FEATURES and
/// ARCH_WORKAROUND_1, and IDs with reserved bits.
const SECURE_SERVICES: [u32; 12] = [
    0x8200_0000,
    0xc200_ffff,
    0x8300_0001,
    0x8400_0050,
    0xc400_0020,
    0x8400_0063,
    0xb000_0000,
    0xb200_0000,
    0xbf00_ffff,
    0x8000_0001,
    0x8000_8000,
    0xffff_ffff,
];
/// Partita's vendor-hypervisor range past PARTITA_CONSOLE_WRITE, and its SMC32 twin.
const VENDOR_UNKNOWN: [u32; 4] = [0xc600_0003, 0xc600_0100, 0xc600_ffff, 0x8600_0000];
/// PARTITA_COUNTER (x1 = VM index, x2 = counter id): read-only; a VM or counter that does
/// not exist is INVALID_PARAMETERS.
const PARTITA_COUNTER: u32 = 0xc600_0001;
/// Arguments given with refused calls; x1..x3 must come back unchanged.
const ARGS: [u64; 3] = [
    0x1111_1111_1111_1111,
    0x2222_2222_2222_2222,
    0x3333_3333_3333_3333,
];
const STORM: u32 = 20_000;

fn status_is(
    what: core::fmt::Arguments,
    conduit: Conduit,
    function: u32,
    args: [u64; 3],
    want: i64,
) -> Outcome {
    let reply = call(conduit, function, args);
    let got = reply.status();
    if got != want {
        return Err(Failure::new(format_args!(
            "{what}: {conduit:?} {function:#x} returned {got}, want {want}"
        )));
    }
    Ok(())
}

/// `function` is NOT_SUPPORTED through both conduits and leaves x1..x3 alone.
fn not_supported(function: u32) -> Outcome {
    for conduit in [Conduit::Hvc, Conduit::Smc] {
        let reply = call(conduit, function, ARGS);
        expect_eq(
            format_args!("{conduit:?} {function:#x}: x0"),
            reply.status() as u64,
            NOT_SUPPORTED as u64,
        )?;
        if reply.x[1..] != ARGS {
            return Err(Failure::new(format_args!(
                "{conduit:?} {function:#x}: x1..x3 changed to {:x?}",
                &reply.x[1..]
            )));
        }
    }
    Ok(())
}

fn me() -> u64 {
    MPIDR_EL1.get() & MPIDR_AFFINITY
}

pub fn cpu_on_bad_targets(_: &Platform) -> Outcome {
    for function in [PSCI_CPU_ON_64, PSCI_CPU_ON_32] {
        // An SMC32 call sees only the low 32 bits of its arguments.
        let width = if function == PSCI_CPU_ON_64 {
            u64::MAX
        } else {
            u64::from(u32::MAX)
        };
        for target in BAD_TARGETS.into_iter().filter(|t| t & width != me()) {
            for entry in BAD_ENTRIES {
                status_is(
                    format_args!("CPU_ON({target:#x}, {entry:#x})"),
                    Conduit::Hvc,
                    function,
                    [target, entry, 0],
                    INVALID_PARAMETERS,
                )?;
            }
        }
        for entry in BAD_ENTRIES {
            status_is(
                format_args!("CPU_ON(self, {entry:#x})"),
                Conduit::Smc,
                function,
                [me(), entry, 0],
                ALREADY_ON,
            )?;
        }
    }
    Ok(())
}

pub fn affinity_info_bad(_: &Platform) -> Outcome {
    for function in [PSCI_AFFINITY_INFO_64, PSCI_AFFINITY_INFO_32] {
        let width = if function == PSCI_AFFINITY_INFO_64 {
            u64::MAX
        } else {
            u64::from(u32::MAX)
        };
        for target in BAD_TARGETS.into_iter().filter(|t| t & width != me()) {
            status_is(
                format_args!("AFFINITY_INFO({target:#x})"),
                Conduit::Hvc,
                function,
                [target, 0, 0],
                INVALID_PARAMETERS,
            )?;
        }
        for level in [4, 0xff, u64::from(u32::MAX)] {
            status_is(
                format_args!("AFFINITY_INFO(self, level {level})"),
                Conduit::Hvc,
                function,
                [me(), level, 0],
                INVALID_PARAMETERS,
            )?;
        }
    }
    Ok(())
}

pub fn psci_unimplemented(_: &Platform) -> Outcome {
    PSCI_UNIMPLEMENTED.into_iter().try_for_each(not_supported)?;
    for id in [u64::from(u32::MAX), 0xc400_0012, 0x8400_00ff] {
        status_is(
            format_args!("PSCI_FEATURES({id:#x})"),
            Conduit::Hvc,
            PSCI_FEATURES,
            [id, 0, 0],
            NOT_SUPPORTED,
        )?;
    }
    Ok(())
}

pub fn secure_services(_: &Platform) -> Outcome {
    SECURE_SERVICES.into_iter().try_for_each(not_supported)
}

pub fn vendor_range(_: &Platform) -> Outcome {
    VENDOR_UNKNOWN.into_iter().try_for_each(not_supported)?;
    for conduit in [Conduit::Hvc, Conduit::Smc] {
        for args in [ARGS, [0, u64::MAX, 0], [u64::MAX, 0, 0]] {
            status_is(
                format_args!("PARTITA_COUNTER {args:x?}"),
                conduit,
                PARTITA_COUNTER,
                args,
                INVALID_PARAMETERS,
            )?;
        }
    }
    Ok(())
}

/// Executes the call instruction `$insn` (an `hvc` or `smc` with any immediate) with x0 =
/// `$x0` and x1..x3 = 0, and returns x0; SMCCC lets the callee clobber x0..x17, all declared.
macro_rules! raw_call {
    ($insn:literal, $x0:expr) => {{
        let mut x0: u64 = $x0;
        // SAFETY: one call to Partita, which may only write x0..x17 (all declared clobbered).
        unsafe {
            asm!(
                $insn,
                inout("x0") x0,
                inout("x1") 0u64 => _, inout("x2") 0u64 => _, inout("x3") 0u64 => _,
                out("x4") _, out("x5") _, out("x6") _, out("x7") _, out("x8") _, out("x9") _,
                out("x10") _, out("x11") _, out("x12") _, out("x13") _, out("x14") _,
                out("x15") _, out("x16") _, out("x17") _,
                options(nostack)
            );
        }
        x0
    }};
}

/// `hvc #imm` / `smc #imm` with x0 = SYSTEM_OFF: SMCCC uses immediate 0 only, so the VM must
/// keep running and get NOT_SUPPORTED.
pub fn nonzero_immediate(_: &Platform) -> Outcome {
    let hvc_x0 = raw_call!("hvc #1", u64::from(PSCI_SYSTEM_OFF));
    let smc_x0 = raw_call!("smc #0x1234", u64::from(PSCI_SYSTEM_OFF));
    expect_eq(
        format_args!("hvc #1 x0"),
        hvc_x0 as u32 as u64,
        NOT_SUPPORTED as u32 as u64,
    )?;
    expect_eq(
        format_args!("smc #0x1234 x0"),
        smc_x0 as u32 as u64,
        NOT_SUPPORTED as u32 as u64,
    )
}

/// SMCCC passes the function ID in W0: junk in the upper half of x0 must not change the call.
pub fn upper_bits(_: &Platform) -> Outcome {
    let id = 0xdead_beef_0000_0000 | u64::from(PSCI_VERSION);
    let x0 = raw_call!("hvc #0", id);
    expect_eq(
        format_args!("PSCI_VERSION with x0 = {id:#x}"),
        x0 as u32 as u64,
        0x1_0001,
    )
}

pub fn storm(_: &Platform) -> Outcome {
    for i in 0..STORM {
        let conduit = if i % 2 == 0 {
            Conduit::Hvc
        } else {
            Conduit::Smc
        };
        let reply = call(conduit, PSCI_VERSION, [0; 3]);
        if reply.status() != 0x1_0001 {
            return Err(Failure::new(format_args!(
                "call {i}: PSCI_VERSION {:#x}",
                reply.x[0]
            )));
        }
    }
    Ok(())
}
