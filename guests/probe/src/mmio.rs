//! Single MMIO loads and stores in exact instruction forms.
//!
//! Each access is one instruction written in inline assembly, with a plain base register and
//! no writeback, so the trap syndrome Partita sees is the one the check means to exercise
//! (the compiler could otherwise pick pair or writeback forms that carry no syndrome). A
//! load's destination register starts as `UNTOUCHED`, which is what the caller sees if the
//! access aborted and the vector skipped it.

use core::arch::asm;
use core::fmt;

/// One load of the form `$insn, [base]`; evaluates to the whole destination register, which
/// is still `UNTOUCHED` if the load aborted.
macro_rules! load {
    ($insn:literal, $addr:expr) => {{
        let mut value = UNTOUCHED;
        asm!(
            concat!($insn, ", [{a}]"),
            a = in(reg) $addr,
            v = inout(reg) value,
            options(nostack)
        );
        value
    }};
}

/// One store of the form `$insn, [base]`.
macro_rules! store {
    ($insn:literal, $addr:expr, $value:expr) => {
        asm!(
            concat!($insn, ", [{a}]"),
            a = in(reg) $addr,
            v = in(reg) $value,
            options(nostack)
        )
    };
}

/// The value of a load's destination register when the load did not complete.
pub const UNTOUCHED: u64 = 0x5a5a_5a5a_5a5a_5a5a;

/// A load instruction form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    Byte,
    Half,
    Word,
    Double,
    SignedByteX,
    SignedByteW,
    SignedHalfX,
    SignedHalfW,
    SignedWordX,
}

/// A store instruction form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    Byte,
    Half,
    Word,
    Double,
}

impl Load {
    /// Runs the load at `addr` and returns the whole 64-bit destination register.
    pub fn run(self, addr: u64) -> u64 {
        // SAFETY: one load from `addr`, which the probe only points at emulated devices,
        // guest memory or deliberately unmapped guest-physical addresses; an abort is
        // recorded and skipped by the probe's vector, leaving the register `UNTOUCHED`. No
        // Rust-visible memory is read or written.
        unsafe {
            match self {
                Load::Byte => load!("ldrb {v:w}", addr),
                Load::Half => load!("ldrh {v:w}", addr),
                Load::Word => load!("ldr {v:w}", addr),
                Load::Double => load!("ldr {v}", addr),
                Load::SignedByteX => load!("ldrsb {v}", addr),
                Load::SignedByteW => load!("ldrsb {v:w}", addr),
                Load::SignedHalfX => load!("ldrsh {v}", addr),
                Load::SignedHalfW => load!("ldrsh {v:w}", addr),
                Load::SignedWordX => load!("ldrsw {v}", addr),
            }
        }
    }

    fn mnemonic(self) -> &'static str {
        match self {
            Load::Byte => "ldrb w",
            Load::Half => "ldrh w",
            Load::Word => "ldr w",
            Load::Double => "ldr x",
            Load::SignedByteX => "ldrsb x",
            Load::SignedByteW => "ldrsb w",
            Load::SignedHalfX => "ldrsh x",
            Load::SignedHalfW => "ldrsh w",
            Load::SignedWordX => "ldrsw x",
        }
    }
}

impl Store {
    /// Stores the low bytes of `value` at `addr`.
    pub fn run(self, addr: u64, value: u64) {
        // SAFETY: one store to `addr`, which the probe only points at emulated devices or
        // deliberately unmapped guest-physical addresses, never at memory Rust uses; an abort
        // is recorded and skipped by the probe's vector.
        unsafe {
            match self {
                Store::Byte => store!("strb {v:w}", addr, value),
                Store::Half => store!("strh {v:w}", addr, value),
                Store::Word => store!("str {v:w}", addr, value),
                Store::Double => store!("str {v}", addr, value),
            }
        }
    }

    fn mnemonic(self) -> &'static str {
        match self {
            Store::Byte => "strb w",
            Store::Half => "strh w",
            Store::Word => "str w",
            Store::Double => "str x",
        }
    }
}

impl fmt::Display for Load {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mnemonic())
    }
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mnemonic())
    }
}

/// Loads a pair of registers from `addr` with `ldp`, which gives no instruction syndrome;
/// returns both registers.
pub fn load_pair(addr: u64) -> (u64, u64) {
    let (mut first, mut second) = (UNTOUCHED, UNTOUCHED);
    // SAFETY: one `ldp` from an emulated device; the expected abort is recorded and skipped
    // by the probe's vector. No Rust-visible memory is touched.
    unsafe {
        asm!(
            "ldp {x}, {y}, [{a}]",
            a = in(reg) addr,
            x = inout(reg) first,
            y = inout(reg) second,
            options(nostack)
        );
    }
    (first, second)
}

/// Loads from `addr` into XZR, then WZR, and returns the stack pointer before and after:
/// register 31 of a load is the zero register, never SP.
pub fn load_into_zero_registers(addr: u64) -> (u64, u64) {
    let (before, after): (u64, u64);
    // SAFETY: two loads from an emulated device whose results are discarded; SP is only read.
    unsafe {
        asm!(
            "mov {b}, sp",
            "ldr xzr, [{a}]",
            "ldr wzr, [{a}]",
            "mov {c}, sp",
            a = in(reg) addr,
            b = out(reg) before,
            c = out(reg) after,
            options(nostack)
        );
    }
    (before, after)
}

/// Stores XZR (64 bits of zero) at `addr`.
pub fn store_xzr(addr: u64) {
    // SAFETY: one store to an emulated device register, never to memory Rust uses.
    unsafe { asm!("str xzr, [{a}]", a = in(reg) addr, options(nostack)) }
}

/// Stores WZR (32 bits of zero) at `addr`.
pub fn store_wzr(addr: u64) {
    // SAFETY: one store to an emulated device register, never to memory Rust uses.
    unsafe { asm!("str wzr, [{a}]", a = in(reg) addr, options(nostack)) }
}
