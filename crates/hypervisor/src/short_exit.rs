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
//! - a trapped ICC_SGI1R_EL1 write, asked by its own light entry with x19..x29 stored
//!   (`ShortExitHandler::system_register`): the SGI is made pending on its targets, other
//!   vCPUs' CPUs are kicked, this vCPU's list registers chosen again; a self-SGI goes
//!   straight into a free list register when the short injection allows it;
//! - a WFI of its CPU's only vCPU, its interrupts masked or not, or of a vCPU whose timer
//!   fires within its VM's advance (`wait`): the CPU waits for an interrupt at EL2 inside
//!   the exit, and the vCPU's own interrupt goes straight in when it wakes;
//! - a console-UART access (`uart_exit`), asked first by the data-abort vector with only the
//!   guest's caller-saved registers saved (`ShortExitHandler::data_abort`): no class dispatch, a
//!   dozen registers fewer to save and load. An access naming x19..x29 comes back here with
//!   every register saved;
//! - a write to one of the VM's accelerator interfaces, unconnected (`accelerator`): its
//!   request to the fabric, when the answer comes at once (connected, or a guest-model write
//!   dropped); a native-model write that must wait goes to the general path, which blocks
//!   the vCPU.
//!
//! A physical interrupt that arrives meanwhile is taken as soon as the guest runs again. This
//! module must never finish an exit the general path would handle differently: anything it
//! does not recognise returns untouched.

use aarch64_cpu::registers::{Readable, ESR_EL2, FAR_EL2, HPFAR_EL2};

use partita_core::hypercall::{respond_local, ret, Response, CALL_REGISTERS};
use partita_core::trap::{device_access, fault_ipa, Register, ICC_SGI1R_EL1, SYSREG_NAME_BITS};

use crate::arch::aarch64::vectors::{
    CallerSaved, Exit, GuestRegs, Handled, Light, ShortExitHandler, SysregSaved,
};
use crate::arch::aarch64::{gic, timer};
use crate::console;
use crate::counters::{ShortExits, ShortPath};
use crate::fabric::{self, Requested};
use crate::hypercall;
use crate::uart_exit::{Done, Registers, UartExit};
use crate::vgic::{Injected, VirtualGic};
use crate::vm::{inject_expired_timer, update_lines, Hardware, Shared};

/// ESR_EL2.EC values the short exit looks at (the vectors send it no other).
const EC_WFX: u64 = 0x01;
const EC_HVC64: u64 = 0x16;
const EC_SMC64: u64 = 0x17;
const EC_SYSREG: u64 = 0x18;
const EC_DATA_ABORT_LOWER: u64 = 0x24;
/// ESR_EL2.IL: a 32-bit instruction.
const ESR_IL: u64 = 1 << 25;
/// ESR_EL2.ISS.TI of a WFx exit: not a WFI (WFE, or WFIT/WFET).
const ESR_WFX_TI: u64 = 0b11;

/// One vCPU's short exit while it is entered (`Vm::enter`).
pub struct ShortExit<'a> {
    shared: &'a Shared,
    vgic: &'a mut VirtualGic,
    vcpu: usize,
    uart: UartExit,
    counters: ShortExits,
    /// The vCPU is its CPU's only one, and the CPU lent none away: it may wait for an
    /// interrupt at EL2 inside its WFI's exit (`wait`).
    alone: bool,
    /// A physical interrupt acknowledged here that is not this VM's: the scheduler's
    /// interrupt handling takes it before acknowledging any other.
    pub held: Option<u32>,
}

impl ShortExitHandler for ShortExit<'_> {
    /// An exit taken at `start` (the EL2 clock) with every guest register in `regs`: done
    /// when it is finished and the guest may run on.
    #[inline]
    fn exit(&mut self, regs: &mut GuestRegs, start: u64, exit: Exit) -> Handled {
        self.counters.settle(regs.entered);
        // A data abort comes here only when its access names one of x19..x29.
        if exit == Exit::Synchronous && ESR_EL2.get() >> 26 == EC_DATA_ABORT_LOWER {
            return match self.device(regs) {
                Ok(path) => {
                    self.counters.done(start, path);
                    Handled::Done
                }
                Err(_) => match self.accelerator(regs, start) {
                    Light::Done => Handled::Done,
                    _ => Handled::Return(exit),
                },
            };
        }
        match self.dispatch(regs, start, exit) {
            Light::Done => Handled::Done,
            Light::Interrupted => Handled::Return(Exit::Irq),
            Light::General | Light::AllRegisters => Handled::Return(exit),
        }
    }

    /// A trapped system register with the guest's caller-saved registers and x19..x29
    /// stored: an SGI sent (`send_sgi`), without asking ESR_EL2's class again.
    #[inline]
    fn system_register(&mut self, regs: &mut SysregSaved, start: u64) -> Light {
        self.counters.settle(regs.entered());
        let esr = ESR_EL2.get();
        let Some(register) = sgi_register(esr) else {
            return Light::General;
        };
        self.send_sgi(regs.get(register));
        regs.advance(instruction_len(esr));
        self.counters.done(start, ShortPath::Sgi);
        Light::Done
    }

    /// A WFx or SMC with the guest's caller-saved registers only.
    #[inline]
    fn light(&mut self, regs: &mut CallerSaved, start: u64) -> Light {
        self.counters.settle(regs.entered());
        self.dispatch(regs, start, Exit::Synchronous)
    }

    /// An HVC with the guest's caller-saved registers: the call answered
    /// (`hypercall_local`), without asking ESR_EL2's class again.
    #[inline]
    fn hypercall(&mut self, regs: &mut CallerSaved, start: u64) -> Light {
        self.counters.settle(regs.entered());
        match hypercall_local(regs, self.shared, ESR_EL2.get() as u16, false) {
            Ok(path) => {
                self.counters.done(start, path);
                Light::Done
            }
            Err(light) => light,
        }
    }

    /// A physical IRQ with the guest's caller-saved registers.
    #[inline]
    fn interrupt(&mut self, regs: &mut CallerSaved, start: u64) -> Light {
        self.counters.settle(regs.entered());
        self.dispatch(regs, start, Exit::Irq)
    }

    /// A data abort taken at `start`, with the guest's caller-saved registers: a
    /// console-UART access is finished; any other goes to the general path untouched, or to
    /// `exit` when its register was not saved.
    #[inline]
    fn data_abort(&mut self, regs: &mut CallerSaved, start: u64) -> Light {
        self.counters.settle(regs.entered());
        let mut hw = self.shared.hardware();
        let data_write = match self.uart.handle(regs, &mut hw.devices) {
            Done::No => {
                drop(hw);
                crate::counters::abort_taken(start);
                return self.accelerator(regs, start);
            }
            Done::Unsaved => {
                crate::counters::abort_taken(start);
                return Light::AllRegisters;
            }
            Done::Yes { data_write } => data_write,
            Done::LineChanged { data_write } => {
                line_changed(self.shared, self.vgic, self.vcpu, &mut hw);
                data_write
            }
        };
        drop(hw);
        self.counters.device(start, data_write);
        Light::Done
    }
}

impl<'a> ShortExit<'a> {
    /// For vCPU `vcpu` of VM `shared` with its virtual GIC `vgic`, whose console UART is at
    /// `slot` among its devices; `alone`: the vCPU is its CPU's only one.
    pub fn new(
        shared: &'a Shared,
        vgic: &'a mut VirtualGic,
        vcpu: usize,
        slot: Option<usize>,
        alone: bool,
    ) -> Self {
        ShortExit {
            shared,
            vgic,
            vcpu,
            uart: UartExit::new(shared.index(), slot),
            counters: ShortExits::entering(shared.index()),
            alone,
            held: None,
        }
    }

    /// An exit taken at `start` with the guest's registers `regs` (all of them, or the
    /// caller-saved ones).
    #[inline(always)]
    fn dispatch<R: Registers>(&mut self, regs: &mut R, start: u64, exit: Exit) -> Light {
        let path = match exit {
            Exit::Irq => self.interrupt(),
            Exit::Synchronous => {
                let esr = ESR_EL2.get();
                if esr >> 26 == EC_WFX {
                    return self.wait(regs, start, esr);
                }
                self.synchronous(regs, esr)
            }
            Exit::Fiq | Exit::SError => Err(Light::General),
        };
        match path {
            Ok(path) => {
                self.counters.done(start, path);
                Light::Done
            }
            Err(light) => light,
        }
    }

    /// A physical IRQ: the loaded vCPU's timer PPI or an interrupt the VM owns is injected.
    #[inline(always)]
    fn interrupt(&mut self) -> Result<ShortPath, Light> {
        let shared = self.shared;
        let intid = gic::acknowledge().ok_or(Light::General)?;
        if intid != shared.board().timer_virt_irq && !shared.owns(intid) {
            self.held = Some(intid);
            return Err(Light::General);
        }
        gic::end_of_interrupt(intid);
        self.inject_running(intid);
        Ok(ShortPath::Injection)
    }

    /// Injects `intid`, acknowledged and its priority dropped, into the vCPU, which runs on
    /// after it (`VirtualGic::inject_running`): the vCPUs whose interrupts changed are
    /// kicked, and the list registers are chosen again after the general injection.
    #[inline(always)]
    fn inject_running(&mut self, intid: u32) {
        let (shared, vgic) = (self.shared, &mut *self.vgic);
        let mut hw = shared.hardware();
        match vgic.inject_running(&mut hw.vgic, intid) {
            Injected::Again => {}
            Injected::Short => shared.kick_touched(&mut hw.vgic, self.vcpu),
            Injected::General => {
                shared.kick_touched(&mut hw.vgic, self.vcpu);
                vgic.before_entry(&mut hw.vgic);
            }
        }
    }

    #[inline(always)]
    fn synchronous<R: Registers>(&mut self, regs: &mut R, esr: u64) -> Result<ShortPath, Light> {
        let shared = self.shared;
        let len = if esr & ESR_IL != 0 { 4 } else { 2 };
        match esr >> 26 {
            EC_HVC64 => hypercall_local(regs, shared, esr as u16, false),
            EC_SMC64 => {
                let path = hypercall_local(regs, shared, esr as u16, true)?;
                regs.advance(len);
                Ok(path)
            }
            EC_SYSREG => self.sgi(regs, esr),
            _ => Err(Light::General),
        }
    }

    /// A trapped system register access (ESR_EL2 `esr`) with the registers `regs`: an
    /// ICC_SGI1R_EL1 write is sent (`send_sgi`).
    #[inline(always)]
    fn sgi<R: Registers>(&mut self, regs: &mut R, esr: u64) -> Result<ShortPath, Light> {
        let register = sgi_register(esr).ok_or(Light::General)?;
        let value = regs.read(register).ok_or(Light::AllRegisters)?;
        self.send_sgi(value);
        regs.advance(instruction_len(esr));
        Ok(ShortPath::Sgi)
    }

    /// A trapped ICC_SGI1R_EL1 write of `value`: the SGI is made pending on its targets,
    /// other vCPUs' CPUs kicked, and this vCPU's list registers chosen again unless the
    /// short injection took a self-SGI.
    #[inline(always)]
    fn send_sgi(&mut self, value: u64) {
        let (shared, vgic) = (self.shared, &mut *self.vgic);
        let mut hw = shared.hardware();
        let short = vgic.send_sgi(&mut hw.vgic, value);
        shared.kick_touched(&mut hw.vgic, self.vcpu);
        if !short {
            vgic.before_entry(&mut hw.vgic);
        }
    }

    /// A trapped WFI (ESR_EL2 `esr`, taken at `start`) of the CPU's only vCPU, or of one
    /// whose timer fires within its advance (`ahead_of_timer`): what the general path does
    /// for it (`trap::handle`, the scheduler's `block` and `idle`) without leaving the world
    /// switch. With an interrupt to take, the guest runs on. Otherwise its list registers
    /// are chosen, its console output flushed, the held console lines printed (the CPU's
    /// only vCPU: the CPU idles), and the CPU waits in WFI at EL2 with this vCPU loaded;
    /// the interrupt that wakes it is acknowledged and, when it is this vCPU's (its timer
    /// PPI, or one its VM owns), injected, and the guest goes straight back in after its
    /// WFI. Another interrupt returns to the general path as an IRQ exit (`held`), the
    /// guest's WFI done (a spurious wake-up, which WFI allows). A WFE, or any other vCPU
    /// that shares its CPU, goes to the general path untouched: another vCPU may have to
    /// run while this one waits.
    fn wait<R: Registers>(&mut self, regs: &mut R, start: u64, esr: u64) -> Light {
        if esr & ESR_WFX_TI != 0 || !(self.alone || self.ahead_of_timer()) {
            return Light::General;
        }
        let (shared, vgic) = (self.shared, &mut *self.vgic);
        regs.advance(if esr & ESR_IL != 0 { 4 } else { 2 });
        {
            let mut hw = shared.hardware();
            update_lines(shared, vgic, self.vcpu, &mut hw);
            inject_expired_timer(shared, vgic, self.vcpu, &mut hw);
            if !vgic.settled_for_short_wait(&mut hw.vgic) {
                // `has_deliverable` folds the list registers: they are chosen again before
                // the guest runs on, as `Vm::enter` does after the general path's WFI. A
                // guest that runs with them folded (stale) would have its progress on them
                // (acknowledge, EOI) overwritten by the next choice: a timer PPI whose
                // deactivation is lost stays active and never wakes it again.
                let deliverable = vgic.has_deliverable(&mut hw.vgic);
                vgic.before_entry(&mut hw.vgic);
                if deliverable {
                    drop(hw);
                    self.counters.wfi(start);
                    return Light::Done;
                }
            }
            hw.devices.flush_output(shared.index());
        }
        // The held console lines wait for the CPU to idle: a vCPU that waits ahead of its
        // timer holds a CPU another vCPU could use.
        if self.alone {
            console::release_held();
        }
        let idle = self.counters.wfi(start);
        aarch64_cpu::asm::wfi();
        let woke = self.counters.idle(idle);
        let Some(intid) = gic::acknowledge() else {
            return Light::Done;
        };
        if intid != shared.board().timer_virt_irq && !shared.owns(intid) {
            self.held = Some(intid);
            self.counters.interrupted(woke);
            return Light::Interrupted;
        }
        gic::end_of_interrupt(intid);
        self.inject_running(intid);
        self.counters.woke(woke);
        Light::Done
    }

    /// The vCPU's virtual timer fires within its VM's advance (`timer_advance_ns`): the
    /// run queue woke it that early (`Vm::timer_deadline`), or it ran on until then, so it
    /// keeps its CPU and waits for the deadline at EL2, as if alone. The CPU stays its own
    /// for at most the advance: anything else that arrives meanwhile (another VM's
    /// interrupt, the EL2 timer) ends the wait and goes to the general path.
    #[inline]
    fn ahead_of_timer(&self) -> bool {
        let advance = self.shared.timer_advance();
        advance != 0 && timer::virtual_due_within(advance)
    }

    /// A data abort taken at `start` that is no console-UART access: a write to one of the
    /// VM's accelerator interfaces, unconnected, is its request (`fabric::request`, as the
    /// general path's `trap::data_abort` makes it). Answered at once (connected: the write
    /// runs again; the guest programming model's write, dropped: stepped over), the guest
    /// runs on. A native-model write that must wait for a connection goes to the general
    /// path, which asks again (the manager keeps one request per interface, so the answer is
    /// the same) and blocks the vCPU; any other abort goes there untouched.
    fn accelerator<R: Registers>(&mut self, regs: &mut R, start: u64) -> Light {
        let Some(access) = device_access(ESR_EL2.get()).filter(|a| a.write) else {
            return Light::General;
        };
        let value = if access.access.size.mask() == u64::from(u32::MAX) {
            match regs.read(access.access.register) {
                Some(value) => Some(value as u32),
                None => return Light::AllRegisters,
            }
        } else {
            None
        };
        let ipa = fault_ipa(HPFAR_EL2.get(), FAR_EL2.get());
        let home = self.shared.home(self.vcpu);
        match fabric::request(self.shared.index(), home, ipa, value) {
            Some(Requested::Retry) => {}
            Some(Requested::Dropped) => regs.advance(access.instruction_len),
            Some(Requested::Waiting) | None => return Light::General,
        }
        self.counters.accelerator(start);
        Light::Done
    }

    /// A data abort: a console-UART access (`data_abort` with every register saved, when
    /// its access names one of x19..x29).
    #[inline(always)]
    fn device<R: Registers>(&mut self, regs: &mut R) -> Result<ShortPath, Light> {
        let (shared, vgic) = (self.shared, &mut *self.vgic);
        let mut hw = shared.hardware();
        let data_write = match self.uart.handle(regs, &mut hw.devices) {
            Done::No => return Err(Light::General),
            Done::Unsaved => return Err(Light::AllRegisters),
            Done::Yes { data_write } => data_write,
            Done::LineChanged { data_write } => {
                update_lines(shared, vgic, self.vcpu, &mut hw);
                vgic.before_entry(&mut hw.vgic);
                data_write
            }
        };
        Ok(ShortPath::Device {
            uart_write: data_write,
        })
    }

    /// The vCPU's exit leaves the short path, the guest last entered at `entered`
    /// (`GuestRegs::entered`): its short exits' time is EL2's.
    /// Returns the interrupt handed over (`held`) and when the guest stopped running for
    /// the exit (`ShortExits::finish`), its vector's clock being `exited`.
    pub fn finish(&mut self, entered: u64, exited: u64) -> (Option<u32>, u64) {
        let exited = self.counters.finish(entered, exited);
        (self.held, exited)
    }
}

/// The register of a trapped system register access (ESR_EL2 `esr`) that is an
/// ICC_SGI1R_EL1 write, its Rt read straight from the syndrome after one compare; `None`
/// for any other access.
#[inline(always)]
fn sgi_register(esr: u64) -> Option<Register> {
    (esr as u32 & SYSREG_NAME_BITS == ICC_SGI1R_EL1.write_iss())
        .then(|| Register::from_field(esr >> 5))
}

/// The length of the trapped instruction (ESR_EL2.IL): 4 bytes, or 2.
#[inline(always)]
fn instruction_len(esr: u64) -> u64 {
    if esr & ESR_IL != 0 {
        4
    } else {
        2
    }
}

/// The UART's interrupt line changed in a short exit: the virtual GIC hears of it and the
/// list registers are chosen again. Out of line, so that the character's path (the line
/// unchanged) keeps fewer registers.
#[cold]
#[inline(never)]
fn line_changed(shared: &Shared, vgic: &mut VirtualGic, vcpu: usize, hw: &mut Hardware) {
    update_lines(shared, vgic, vcpu, hw);
    vgic.before_entry(&mut hw.vgic);
}

/// HVC/SMC `#imm` when the call depends on the registers and counters alone: answered in
/// x0 (and x1), or its bytes printed as the VM's console output.
#[inline(always)]
fn hypercall_local<R: Registers>(
    regs: &mut R,
    shared: &Shared,
    imm: u16,
    smc: bool,
) -> Result<ShortPath, Light> {
    let x = regs.caller_saved();
    let response = respond_local(&x[..CALL_REGISTERS], imm, hypercall::counters_value);
    match response.ok_or(Light::General)? {
        Response::Return { x0, x1 } => {
            x[0] = x0;
            if let Some(x1) = x1 {
                x[1] = x1;
            }
        }
        Response::Print(bytes) => {
            x[0] = ret::SUCCESS;
            console::vm_output(shared.index(), bytes.as_slice());
        }
        // `respond_local` answers no call that acts on the VM.
        _ => return Err(Light::General),
    }
    Ok(ShortPath::Hypercall { smc })
}
