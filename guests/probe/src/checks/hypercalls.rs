//! Checks of Partita's SMCCC/PSCI services: both conduits, implemented and unknown function
//! IDs, and PSCI's answers for a uniprocessor VM.

use core::fmt;

use aarch64_cpu::registers::{Readable, MPIDR_EL1};

use super::{expect_eq, Failure, Outcome};
use crate::platform::Platform;
use crate::smccc_calls::{
    call, hvc, Conduit, Reply, ALREADY_ON, INVALID_PARAMETERS, NOT_SUPPORTED, PARTITA_VERSION,
    PSCI_AFFINITY_INFO_64, PSCI_CPU_ON_64, PSCI_FEATURES, PSCI_SYSTEM_OFF, PSCI_SYSTEM_RESET,
    PSCI_VERSION, SMCCC_VERSION,
};

/// SMCCC 1.1 and PSCI 1.1 both encode as (1 << 16) | 1.
const VERSION_1_1: i64 = 0x1_0001;
/// Function IDs no service implements: an SMC32 SiP call and an SMC64 OEM call.
const UNKNOWN_FUNCTIONS: [u32; 2] = [0x8200_0042, 0xc300_0042];
/// A PSCI function ID that PSCI does not define.
const UNKNOWN_PSCI_FUNCTION: u32 = 0x8400_001f;
/// MPIDR_EL1 affinity fields Aff3..Aff0, as PSCI takes them.
const MPIDR_AFFINITY: u64 = 0xff_00ff_ffff;

fn expect_status(what: fmt::Arguments, reply: Reply, want: i64) -> Outcome {
    let got = reply.status();
    if got == want {
        return Ok(());
    }
    Err(Failure::new(format_args!(
        "{what}: x0 = {got} ({:#x}), want {want}",
        reply.x[0]
    )))
}

pub fn smccc_version(_: &Platform) -> Outcome {
    expect_status(
        format_args!("SMCCC_VERSION"),
        hvc(SMCCC_VERSION, [0; 3]),
        VERSION_1_1,
    )
}

pub fn psci_version_hvc(_: &Platform) -> Outcome {
    expect_status(
        format_args!("PSCI_VERSION"),
        hvc(PSCI_VERSION, [0; 3]),
        VERSION_1_1,
    )
}

pub fn psci_version_smc(_: &Platform) -> Outcome {
    let reply = call(Conduit::Smc, PSCI_VERSION, [0; 3]);
    expect_status(format_args!("PSCI_VERSION"), reply, VERSION_1_1)
}

pub fn psci_features(_: &Platform) -> Outcome {
    for id in [
        PSCI_VERSION,
        PSCI_FEATURES,
        PSCI_SYSTEM_OFF,
        PSCI_SYSTEM_RESET,
    ] {
        let reply = hvc(PSCI_FEATURES, [u64::from(id), 0, 0]);
        expect_status(format_args!("PSCI_FEATURES({id:#x})"), reply, 0)?;
    }
    let reply = hvc(PSCI_FEATURES, [u64::from(UNKNOWN_PSCI_FUNCTION), 0, 0]);
    expect_status(
        format_args!("PSCI_FEATURES({UNKNOWN_PSCI_FUNCTION:#x})"),
        reply,
        NOT_SUPPORTED,
    )
}

fn unknown_functions(conduit: Conduit) -> Outcome {
    for id in UNKNOWN_FUNCTIONS {
        let reply = call(conduit, id, [1, 2, 3]);
        expect_status(format_args!("{conduit:?} {id:#x}"), reply, NOT_SUPPORTED)?;
    }
    Ok(())
}

pub fn unknown_hvc(_: &Platform) -> Outcome {
    unknown_functions(Conduit::Hvc)
}

pub fn unknown_smc(_: &Platform) -> Outcome {
    unknown_functions(Conduit::Smc)
}

pub fn partita_version(_: &Platform) -> Outcome {
    let reply = hvc(PARTITA_VERSION, [0; 3]);
    expect_status(format_args!("PARTITA_VERSION"), reply, 0)?;
    expect_eq(
        format_args!("PARTITA_VERSION x1 above bit 31"),
        reply.x[1] >> 32,
        0,
    )
}

pub fn cpu_on(_: &Platform) -> Outcome {
    let me = MPIDR_EL1.get() & MPIDR_AFFINITY;
    let other = me ^ 1;
    let entry = crate::UNMAPPED;
    let reply = hvc(PSCI_CPU_ON_64, [me, entry, 0]);
    expect_status(format_args!("CPU_ON({me:#x}), itself"), reply, ALREADY_ON)?;
    let reply = hvc(PSCI_CPU_ON_64, [other, entry, 0]);
    expect_status(
        format_args!("CPU_ON({other:#x})"),
        reply,
        INVALID_PARAMETERS,
    )?;
    let reply = hvc(PSCI_AFFINITY_INFO_64, [me, 0, 0]);
    expect_status(format_args!("AFFINITY_INFO({me:#x})"), reply, 0)
}
