//! Trap dispatch: every exit of a guest lands here, is decoded by `partita_core::trap` and is
//! handled by exactly one path that ends in a defined guest-visible result: emulate and
//! resume, inject an exception, or stop the VM.
//!
//! Guest input is hostile: nothing here panics on what a guest can provoke. This module must
//! never touch another VM or Partita's own memory on a guest's behalf.

use aarch64_cpu::registers::{Readable, ESR_EL2, FAR_EL2, HPFAR_EL2};
use partita_core::trap::{
    decode, decode_wait, fault_ipa, DataAbort, Syndrome, SysregAccess, TrapCause, ICC_SGI1R_EL1,
};

use crate::arch::aarch64::vectors::Exit;
use crate::counters::{self, Trap};
use crate::fabric::{self, Requested};
use crate::hypercall;
use crate::inject::{self, Injected};
use crate::system::Stop;
use crate::vm::Vm;

/// What the VM does after a trap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Resume,
    /// A physical interrupt made the vCPU exit, or it rang a doorbell of a VM on this CPU:
    /// the CPU's scheduler handles it.
    Interrupt,
    /// WFI (already stepped over), or a native-model write to an unconnected accelerator
    /// interface (not stepped over: it runs again): the vCPU waits until an interrupt is
    /// pending for it, or its interface is connected.
    Wait,
    /// PSCI CPU_OFF while another vCPU of the VM is on: the vCPU waits for a CPU_ON.
    Off,
    /// PSCI SYSTEM_RESET: rebuild and restart the VM.
    Reset,
    Stop(Stop),
}

/// Handles one exit of `vm`'s vCPU.
pub fn handle(vm: &mut Vm, exit: Exit) -> Outcome {
    match exit {
        // A WFI (the real-time VM's wait for its tick, each switch to the GPOS) is decoded
        // inline; the other classes out of line, so the IRQ and WFI exits save few registers.
        Exit::Synchronous => {
            let esr = ESR_EL2.get();
            match decode_wait(esr) {
                Some(Syndrome {
                    cause: cause @ TrapCause::WaitForInterrupt { wfe },
                    instruction_len,
                }) => {
                    counters::trap(vm.index(), counted(&cause));
                    waited(vm, wfe, instruction_len)
                }
                _ => synchronous(vm, esr),
            }
        }
        Exit::Irq => {
            counters::trap(vm.index(), Trap::Irq);
            Outcome::Interrupt
        }
        // Partita uses Group 1 only: no FIQ is ever enabled.
        Exit::Fiq => Outcome::Resume,
        Exit::SError => vm.fault(format_args!("SError")),
    }
}

/// A WFE or WFI of `len` bytes, counted: stepped over; a WFI waits.
#[inline(always)]
fn waited(vm: &mut Vm, wfe: bool, len: u64) -> Outcome {
    skip(vm, len);
    // Only a one-vCPU VM traps WFE (`Vcpu::new`): no other vCPU could send it an event, so
    // returning at once (a spurious wake-up, which WFE allows) loses nothing.
    if wfe {
        Outcome::Resume
    } else {
        Outcome::Wait
    }
}

/// Any other synchronous exit (ESR_EL2 `esr`).
#[inline(never)]
fn synchronous(vm: &mut Vm, esr: u64) -> Outcome {
    let syndrome = decode(esr);
    let len = syndrome.instruction_len;
    counters::trap(vm.index(), counted(&syndrome.cause));
    match syndrome.cause {
        TrapCause::WaitForInterrupt { wfe } => waited(vm, wfe, len),
        TrapCause::Hvc { imm } => hypercall::handle(vm, imm),
        TrapCause::Smc { imm } => {
            skip(vm, len);
            hypercall::handle(vm, imm)
        }
        TrapCause::DataAbort(abort) => data_abort(vm, abort, len),
        TrapCause::InstructionAbort(_) => {
            let injected = inject::prefetch_abort(vm, FAR_EL2.get());
            reflect(vm, injected)
        }
        TrapCause::SystemRegister { iss } => system_register(vm, SysregAccess::decode(iss), len),
        TrapCause::Other { .. } => {
            let injected = inject::undefined(vm);
            reflect(vm, injected)
        }
    }
}

/// The counter of an exit cause.
fn counted(cause: &TrapCause) -> Trap {
    match cause {
        TrapCause::WaitForInterrupt { wfe: true } => Trap::Wfe,
        TrapCause::WaitForInterrupt { wfe: false } => Trap::Wfi,
        TrapCause::Hvc { .. } => Trap::Hvc,
        TrapCause::Smc { .. } => Trap::Smc,
        TrapCause::DataAbort(_) => Trap::DataAbort,
        TrapCause::InstructionAbort(_) => Trap::InstructionAbort,
        TrapCause::SystemRegister { .. } => Trap::Sysreg,
        TrapCause::Other { .. } => Trap::Other,
    }
}

/// A trapped MSR/MRS: SGI requests go to the virtual GIC; debug and PMU registers (shared
/// hardware, trapped by MDCR_EL2) read as zero and ignore writes; anything else is undefined.
fn system_register(vm: &mut Vm, access: SysregAccess, len: u64) -> Outcome {
    if access.id == ICC_SGI1R_EL1 && !access.read {
        let value = vm.regs.get(access.register);
        vm.send_sgi(value);
        counters::injected(vm.index());
        return skip(vm, len);
    }
    if access.id.is_debug_or_pmu() {
        if access.read {
            vm.regs.set(access.register, 0);
        }
        return skip(vm, len);
    }
    let injected = inject::undefined(vm);
    reflect(vm, injected)
}

/// Steps over the trapped instruction.
fn skip(vm: &mut Vm, len: u64) -> Outcome {
    vm.regs.elr = vm.regs.elr.wrapping_add(len);
    Outcome::Resume
}

fn reflect(vm: &mut Vm, injected: Injected) -> Outcome {
    match injected {
        Injected::Delivered => Outcome::Resume,
        Injected::NoVector { what, vector } => vm.fault(format_args!(
            "{what} at pc {:#x}, but its vector {vector:#x} is not in the VM's memory",
            vm.regs.elr
        )),
    }
}

fn data_abort(vm: &mut Vm, abort: DataAbort, len: u64) -> Outcome {
    let far = FAR_EL2.get();
    let ipa = fault_ipa(HPFAR_EL2.get(), far);
    if abort.write && !abort.stage1_walk {
        // A write to an unconnected accelerator interface is the VM's request; the write
        // itself runs again when the VM resumes (connected by then, or still waiting).
        let value = abort
            .access
            .filter(|a| a.size.mask() == u64::from(u32::MAX))
            .map(|a| vm.regs.get(a.register) as u32);
        match fabric::request(vm.index(), vm.home(), ipa, value) {
            Some(Requested::Retry) => return Outcome::Resume,
            Some(Requested::Dropped) => return skip(vm, len),
            // Native model: the vCPU waits as in WFI, the write not stepped over.
            Some(Requested::Waiting) => return Outcome::Wait,
            None => {}
        }
    }
    let emulated = match abort.access {
        Some(access) if !abort.stage1_walk && !abort.far_invalid => {
            vm.mmio(ipa, access, abort.write)
        }
        _ => false,
    };
    if emulated {
        skip(vm, len)
    } else {
        let injected = inject::data_abort(vm, far, abort.write);
        reflect(vm, injected)
    }
}
