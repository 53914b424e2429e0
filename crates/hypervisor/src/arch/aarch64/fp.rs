//! A vCPU's FP/SIMD state (q0-q31, FPCR, FPSR), moved only when the vCPU takes or leaves a
//! physical CPU.
//!
//! Partita is built for `aarch64-unknown-none-softfloat`: no EL2 code touches these
//! registers, so while a vCPU is loaded its FP/SIMD state lives in the registers themselves,
//! through every exit and entry. This module must be the only EL2 code that names them (its
//! assembly enables the FP instructions the soft-float target leaves out).

use core::arch::asm;

/// The FP/SIMD registers of one vCPU while it is off its CPU.
#[repr(C, align(16))]
#[derive(Clone, Default)]
pub struct FpState {
    q: [u128; 32],
    fpcr: u64,
    fpsr: u64,
}

impl FpState {
    /// Copies the CPU's FP/SIMD registers here (the vCPU leaves the CPU).
    pub fn save(&mut self) {
        let q = self.q.as_mut_ptr();
        let (fpcr, fpsr): (u64, u64);
        // SAFETY: `q` points to 512 writable, 16-byte aligned bytes (32 u128, the struct is
        // aligned to 16); the stores write only there. FP/SIMD does not trap at EL2
        // (CPTR_EL2.TFP clear, `entry.rs`).
        unsafe {
            asm!(
                ".arch_extension fp",
                ".arch_extension simd",
                "stp q0, q1, [{q}, #0]",
                "stp q2, q3, [{q}, #32]",
                "stp q4, q5, [{q}, #64]",
                "stp q6, q7, [{q}, #96]",
                "stp q8, q9, [{q}, #128]",
                "stp q10, q11, [{q}, #160]",
                "stp q12, q13, [{q}, #192]",
                "stp q14, q15, [{q}, #224]",
                "stp q16, q17, [{q}, #256]",
                "stp q18, q19, [{q}, #288]",
                "stp q20, q21, [{q}, #320]",
                "stp q22, q23, [{q}, #352]",
                "stp q24, q25, [{q}, #384]",
                "stp q26, q27, [{q}, #416]",
                "stp q28, q29, [{q}, #448]",
                "stp q30, q31, [{q}, #480]",
                "mrs {fpcr}, fpcr",
                "mrs {fpsr}, fpsr",
                q = in(reg) q,
                fpcr = out(reg) fpcr,
                fpsr = out(reg) fpsr,
                options(nostack, preserves_flags),
            );
        }
        self.fpcr = fpcr;
        self.fpsr = fpsr;
    }

    /// Loads these registers into the CPU (the vCPU takes the CPU).
    pub fn restore(&self) {
        let q = self.q.as_ptr();
        // SAFETY: `q` points to 512 readable, 16-byte aligned bytes; the loads change only
        // the FP/SIMD registers, which no EL2 code uses (this crate is built soft-float).
        unsafe {
            asm!(
                ".arch_extension fp",
                ".arch_extension simd",
                "ldp q0, q1, [{q}, #0]",
                "ldp q2, q3, [{q}, #32]",
                "ldp q4, q5, [{q}, #64]",
                "ldp q6, q7, [{q}, #96]",
                "ldp q8, q9, [{q}, #128]",
                "ldp q10, q11, [{q}, #160]",
                "ldp q12, q13, [{q}, #192]",
                "ldp q14, q15, [{q}, #224]",
                "ldp q16, q17, [{q}, #256]",
                "ldp q18, q19, [{q}, #288]",
                "ldp q20, q21, [{q}, #320]",
                "ldp q22, q23, [{q}, #352]",
                "ldp q24, q25, [{q}, #384]",
                "ldp q26, q27, [{q}, #416]",
                "ldp q28, q29, [{q}, #448]",
                "ldp q30, q31, [{q}, #480]",
                "msr fpcr, {fpcr}",
                "msr fpsr, {fpsr}",
                q = in(reg) q,
                fpcr = in(reg) self.fpcr,
                fpsr = in(reg) self.fpsr,
                options(nostack, preserves_flags),
            );
        }
    }
}
