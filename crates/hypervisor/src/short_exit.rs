//! The short exit: the frequent exits of the loaded vCPU finished inside the world switch
//! (`enter_guest`), with the guest's registers saved and the host's not restored, so the
//! guest goes straight back in without returning to the scheduler's loop, folding the list
//! registers for nothing or entering again through `Vm::enter`. Each path does what the
//! general one (`trap::handle`, the scheduler's `handle_interrupts`) would do for that exit
//! and skips only what it can prove unneeded:
//!
//! - a physical IRQ that is the virtual timer's PPI (always the loaded vCPU's: only its CNTV
//!   runs) or an interrupt forwarded to this VM (`Shared::owns`, one bit lookup): priority
//!   dropped, injected, the list registers chosen again. The vCPU is running, so waking it
//!   changes nothing in the run queue, and no scheduling decision depends on it: another
//!   VM's interrupts and the scheduler's timer are other INTIDs, which go to the general
//!   path (the one acknowledged here is handed over as `held`);
//! - HVC or SMC with a call that depends on the registers and the counters alone
//!   (`partita_core::hypercall::respond_local`): answered; PSCI power calls and doorbell
//!   rings go to the general path;
//! - a trapped ICC_SGI1R_EL1 write: the SGI is made pending on its targets, other vCPUs'
//!   CPUs are kicked, this vCPU's list registers chosen again;
//! - a console-UART access (`uart_exit`), asked first by the data-abort vector with only the
//!   guest's caller-saved registers saved (`ShortExitHandler::data_abort`): no class dispatch, a
//!   dozen registers fewer to save and load. An access naming x19..x29 comes back here with
//!   every register saved.
//!
//! A physical interrupt that arrives meanwhile is taken as soon as the guest runs again. This
//! module must never finish an exit the general path would handle differently: anything it
//! does not recognise returns untouched.

use aarch64_cpu::registers::{Readable, ESR_EL2};

use partita_core::hypercall::{respond_local, ret, Response, CALL_REGISTERS};
use partita_core::trap::{SysregAccess, ICC_SGI1R_EL1};

use crate::arch::aarch64::gic;
use crate::arch::aarch64::vectors::{CallerSaved, DataAbort, Exit, GuestRegs, ShortExitHandler};
use crate::console;
use crate::counters::{ShortExits, ShortPath};
use crate::hypercall;
use crate::uart_exit::{Done, UartExit};
use crate::vgic::VirtualGic;
use crate::vm::{update_lines, Shared};

/// ESR_EL2.EC values the short exit looks at (the vectors send it no other).
const EC_HVC64: u64 = 0x16;
const EC_SMC64: u64 = 0x17;
const EC_SYSREG: u64 = 0x18;
const EC_DATA_ABORT_LOWER: u64 = 0x24;
/// ESR_EL2.IL: a 32-bit instruction.
const ESR_IL: u64 = 1 << 25;

/// One vCPU's short exit while it is entered (`Vm::enter`).
pub struct ShortExit<'a> {
    shared: &'a Shared,
    vgic: &'a mut VirtualGic,
    vcpu: usize,
    uart: UartExit,
    counters: ShortExits,
    /// A physical interrupt acknowledged here that is not this VM's: the scheduler's
    /// interrupt handling takes it before acknowledging any other.
    pub held: Option<u32>,
}

impl ShortExitHandler for ShortExit<'_> {
    /// An exit taken at `start` (the EL2 clock) with the guest's registers `regs`: true when
    /// it is finished and the guest may run on.
    #[inline]
    fn exit(&mut self, regs: &mut GuestRegs, start: u64, exit: Exit) -> bool {
        let path = match exit {
            Exit::Irq => self.interrupt(),
            Exit::Synchronous => self.synchronous(regs),
            Exit::Fiq | Exit::SError => None,
        };
        match path {
            Some(path) => {
                self.counters.done(start, path);
                true
            }
            None => false,
        }
    }

    /// A data abort taken at `start`, with the guest's caller-saved registers: a
    /// console-UART access is finished; any other goes to the general path untouched, or to
    /// `exit` when its register was not saved.
    #[inline]
    fn data_abort(&mut self, regs: &mut CallerSaved, start: u64) -> DataAbort {
        let mut hw = self.shared.hardware();
        let data_write = match self.uart.handle(regs, &mut hw.devices) {
            Done::No => {
                crate::counters::abort_taken(start);
                return DataAbort::General;
            }
            Done::Unsaved => {
                crate::counters::abort_taken(start);
                return DataAbort::AllRegisters;
            }
            Done::Yes { data_write } => data_write,
            Done::LineChanged { data_write } => {
                update_lines(self.shared, self.vgic, self.vcpu, &mut hw);
                self.vgic.before_entry(&mut hw.vgic);
                data_write
            }
        };
        drop(hw);
        self.counters.device(start, data_write);
        DataAbort::Done
    }
}

impl<'a> ShortExit<'a> {
    /// For vCPU `vcpu` of VM `shared` with its virtual GIC `vgic`, whose console UART is at
    /// `slot` among its devices.
    pub fn new(
        shared: &'a Shared,
        vgic: &'a mut VirtualGic,
        vcpu: usize,
        slot: Option<usize>,
    ) -> Self {
        ShortExit {
            shared,
            vgic,
            vcpu,
            uart: UartExit::new(shared.index(), slot),
            counters: ShortExits::new(shared.index()),
            held: None,
        }
    }

    /// A physical IRQ: the loaded vCPU's timer PPI or an interrupt the VM owns is injected.
    fn interrupt(&mut self) -> Option<ShortPath> {
        let (shared, vgic) = (self.shared, &mut *self.vgic);
        let intid = gic::acknowledge()?;
        if intid != shared.board().timer_virt_irq && !shared.owns(intid) {
            self.held = Some(intid);
            return None;
        }
        gic::end_of_interrupt(intid);
        let mut hw = shared.hardware();
        vgic.inject(&mut hw.vgic, intid);
        shared.kick_touched(&mut hw.vgic, self.vcpu);
        vgic.before_entry(&mut hw.vgic);
        Some(ShortPath::Injection)
    }

    fn synchronous(&mut self, regs: &mut GuestRegs) -> Option<ShortPath> {
        let (shared, vgic) = (self.shared, &mut *self.vgic);
        let esr = ESR_EL2.get();
        let len = if esr & ESR_IL != 0 { 4 } else { 2 };
        match esr >> 26 {
            EC_DATA_ABORT_LOWER => self.device(regs),
            EC_HVC64 => hypercall_local(regs, shared, esr as u16, false),
            EC_SMC64 => {
                let path = hypercall_local(regs, shared, esr as u16, true)?;
                regs.elr = regs.elr.wrapping_add(len);
                Some(path)
            }
            EC_SYSREG => {
                let access = SysregAccess::decode((esr & 0x1ff_ffff) as u32);
                if access.id != ICC_SGI1R_EL1 || access.read {
                    return None;
                }
                let value = regs.get(access.register);
                let mut hw = shared.hardware();
                vgic.send_sgi(&mut hw.vgic, value);
                shared.kick_touched(&mut hw.vgic, self.vcpu);
                vgic.before_entry(&mut hw.vgic);
                regs.elr = regs.elr.wrapping_add(len);
                Some(ShortPath::Sgi)
            }
            _ => None,
        }
    }

    /// A data abort with every register saved (its access names one of x19..x29, which
    /// `data_abort` could not reach): a console-UART access.
    fn device(&mut self, regs: &mut GuestRegs) -> Option<ShortPath> {
        let (shared, vgic) = (self.shared, &mut *self.vgic);
        let mut hw = shared.hardware();
        let data_write = match self.uart.handle(regs, &mut hw.devices) {
            Done::No | Done::Unsaved => return None,
            Done::Yes { data_write } => data_write,
            Done::LineChanged { data_write } => {
                update_lines(shared, vgic, self.vcpu, &mut hw);
                vgic.before_entry(&mut hw.vgic);
                data_write
            }
        };
        Some(ShortPath::Device {
            uart_write: data_write,
        })
    }

    /// The vCPU's exit leaves the short path: its short exits' time is EL2's.
    pub fn finish(self) -> Option<u32> {
        self.counters.finish();
        self.held
    }
}

/// HVC/SMC `#imm` when the call depends on the registers and counters alone: answered in
/// x0 (and x1), or its bytes printed as the VM's console output.
fn hypercall_local(
    regs: &mut GuestRegs,
    shared: &Shared,
    imm: u16,
    smc: bool,
) -> Option<ShortPath> {
    let mut args = [0u64; CALL_REGISTERS];
    args.copy_from_slice(&regs.x[..CALL_REGISTERS]);
    match respond_local(&args, imm, hypercall::counters_value)? {
        Response::Return { x0, x1 } => {
            regs.x[0] = x0;
            if let Some(x1) = x1 {
                regs.x[1] = x1;
            }
        }
        Response::Print(bytes) => {
            regs.x[0] = ret::SUCCESS;
            console::vm_output(shared.index(), bytes.as_slice());
        }
        // `respond_local` answers no call that acts on the VM.
        _ => return None,
    }
    Some(ShortPath::Hypercall { smc })
}
