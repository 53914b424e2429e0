//! Exception injection: making the guest take a synchronous exception at EL1 as if its own
//! hardware had raised it (external aborts for accesses Partita refuses, undefined instruction
//! for traps it does not handle).
//!
//! The guest's EL1 registers are live on the CPU while it runs, so this edits them in place
//! (ARM ARM D1.10 "Exception entry"). It must never deliver to a vector outside the VM's
//! memory: that VM is stopped instead.

use partita_core::trap::{ec, injected_abort_syndrome, UNDEFINED_SYNDROME};

use crate::arch::aarch64::sysreg::{read_sysreg, translate_el1_read, write_sysreg};
use crate::vm::Vm;

/// PSTATE on entry to the guest's handler: EL1h with D, A, I and F masked.
const SPSR_EL1H_MASKED: u64 = 0x3c5;
/// SCTLR_EL1.M: the guest's stage-1 MMU is on.
const SCTLR_M: u64 = 1;

/// The result of an injection.
pub enum Injected {
    Delivered,
    /// The guest's vector for this exception is not in its memory.
    NoVector {
        what: &'static str,
        vector: u64,
    },
}

/// Where the exception was taken from, per the interrupted PSTATE in SPSR_EL2.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    El1h,
    El1t,
    El0Aarch64,
    El0Aarch32,
}

impl Origin {
    fn of(spsr: u64) -> Origin {
        if spsr & 0x10 != 0 {
            return Origin::El0Aarch32;
        }
        match spsr & 0xf {
            0b0101 => Origin::El1h,
            0b0100 => Origin::El1t,
            _ => Origin::El0Aarch64,
        }
    }

    /// Offset of the synchronous vector for this origin in the VBAR_EL1 table.
    fn vector_offset(self) -> u64 {
        match self {
            Origin::El1t => 0x000,
            Origin::El1h => 0x200,
            Origin::El0Aarch64 => 0x400,
            Origin::El0Aarch32 => 0x600,
        }
    }

    fn is_lower_el(self) -> bool {
        matches!(self, Origin::El0Aarch64 | Origin::El0Aarch32)
    }
}

/// A synchronous external abort on a data access at virtual address `far`.
pub fn data_abort(vm: &mut Vm, far: u64, write: bool) -> Injected {
    let origin = Origin::of(vm.regs.spsr);
    let class = if origin.is_lower_el() {
        ec::DABT_LOWER
    } else {
        ec::DABT_CURRENT
    };
    deliver(
        vm,
        "data abort",
        injected_abort_syndrome(class, write),
        Some(far),
    )
}

/// A synchronous external abort on an instruction fetch at virtual address `far`.
pub fn prefetch_abort(vm: &mut Vm, far: u64) -> Injected {
    let origin = Origin::of(vm.regs.spsr);
    let class = if origin.is_lower_el() {
        ec::IABT_LOWER
    } else {
        ec::IABT_CURRENT
    };
    deliver(
        vm,
        "prefetch abort",
        injected_abort_syndrome(class, false),
        Some(far),
    )
}

/// An undefined-instruction exception for the trapped instruction.
pub fn undefined(vm: &mut Vm) -> Injected {
    deliver(vm, "undefined instruction", UNDEFINED_SYNDROME, None)
}

fn deliver(vm: &mut Vm, what: &'static str, esr: u64, far: Option<u64>) -> Injected {
    let origin = Origin::of(vm.regs.spsr);
    let vector = read_sysreg!("vbar_el1").wrapping_add(origin.vector_offset());
    if !vector_in_memory(vm, vector) {
        return Injected::NoVector { what, vector };
    }
    write_sysreg!("esr_el1", esr);
    if let Some(far) = far {
        write_sysreg!("far_el1", far);
    }
    write_sysreg!("elr_el1", vm.regs.elr);
    write_sysreg!("spsr_el1", vm.regs.spsr);
    vm.regs.elr = vector;
    vm.regs.spsr = SPSR_EL1H_MASKED;
    Injected::Delivered
}

/// Whether the guest can fetch its handler at virtual address `vector`.
fn vector_in_memory(vm: &Vm, vector: u64) -> bool {
    let ipa = if read_sysreg!("sctlr_el1") & SCTLR_M == 0 {
        Some(vector)
    } else {
        translate_el1_read(vector)
    };
    ipa.is_some_and(|ipa| vm.is_ram(ipa, 4))
}
