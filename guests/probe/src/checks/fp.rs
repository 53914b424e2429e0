//! The guest's FP/SIMD registers survive exits: Partita keeps them live in the registers
//! while it handles a trap (it never uses them) and moves them only with a vCPU switch.

use core::arch::asm;

use super::{Failure, Outcome};
use crate::platform::Platform;
use crate::smccc_calls::PSCI_VERSION;

/// A distinct 128-bit value for register `n`.
fn pattern(n: usize) -> u128 {
    let byte = n as u128 + 1;
    (byte * 0x0101_0101_0101_0101_0101_0101_0101_0101) ^ (0xdead_beef << (n % 64))
}

/// Loads q0..q31 with patterns, makes an HVC and an emulated MMIO load (two exits), then
/// reads the registers back.
pub fn kept_across_exits(p: &Platform) -> Outcome {
    let mut before = [0u128; 32];
    for (n, q) in before.iter_mut().enumerate() {
        *q = pattern(n);
    }
    let mut after = [0u128; 32];
    // SAFETY: `src` and `dst` point to 512 bytes each, 16-byte aligned (u128 arrays); the
    // HVC is PSCI_VERSION, which changes x0..x3 only (declared); the load reads the test
    // device's ID register, an emulated MMIO window of this VM. Every vector register is
    // declared clobbered.
    unsafe {
        asm!(
            "ldp q0, q1, [{src}, #0]",
            "ldp q2, q3, [{src}, #32]",
            "ldp q4, q5, [{src}, #64]",
            "ldp q6, q7, [{src}, #96]",
            "ldp q8, q9, [{src}, #128]",
            "ldp q10, q11, [{src}, #160]",
            "ldp q12, q13, [{src}, #192]",
            "ldp q14, q15, [{src}, #224]",
            "ldp q16, q17, [{src}, #256]",
            "ldp q18, q19, [{src}, #288]",
            "ldp q20, q21, [{src}, #320]",
            "ldp q22, q23, [{src}, #352]",
            "ldp q24, q25, [{src}, #384]",
            "ldp q26, q27, [{src}, #416]",
            "ldp q28, q29, [{src}, #448]",
            "ldp q30, q31, [{src}, #480]",
            "hvc #0",
            "ldr {id:w}, [{dev}]",
            "stp q0, q1, [{dst}, #0]",
            "stp q2, q3, [{dst}, #32]",
            "stp q4, q5, [{dst}, #64]",
            "stp q6, q7, [{dst}, #96]",
            "stp q8, q9, [{dst}, #128]",
            "stp q10, q11, [{dst}, #160]",
            "stp q12, q13, [{dst}, #192]",
            "stp q14, q15, [{dst}, #224]",
            "stp q16, q17, [{dst}, #256]",
            "stp q18, q19, [{dst}, #288]",
            "stp q20, q21, [{dst}, #320]",
            "stp q22, q23, [{dst}, #352]",
            "stp q24, q25, [{dst}, #384]",
            "stp q26, q27, [{dst}, #416]",
            "stp q28, q29, [{dst}, #448]",
            "stp q30, q31, [{dst}, #480]",
            src = in(reg) before.as_ptr(),
            dst = in(reg) after.as_mut_ptr(),
            dev = in(reg) p.testdev,
            id = out(reg) _,
            inout("x0") u64::from(PSCI_VERSION) => _,
            out("x1") _, out("x2") _, out("x3") _,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _,
            out("v28") _, out("v29") _, out("v30") _, out("v31") _,
            options(nostack),
        );
    }
    match (0..32).find(|&n| before[n] != after[n]) {
        None => Ok(()),
        Some(n) => Err(Failure::new(format_args!(
            "q{n} was {:#x}, now {:#x}",
            before[n], after[n]
        ))),
    }
}
