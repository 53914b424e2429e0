//! The short exit: the frequent exits of the loaded vCPU finished inside the world switch
//! (`enter_guest`), with the guest's registers saved and the host's not restored, so the
//! guest goes straight back in without returning to the scheduler's loop, folding the list
//! registers for nothing or entering again through `enter`. Each path does what the
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
//!   fires within its VM's advance (`wfx_way`, `wait_here`): the CPU waits for an interrupt
//!   at EL2 inside the exit, and the vCPU's own interrupt goes straight in when it wakes;
//! - a console-UART access (`uart_exit`), asked first by the data-abort vector with only the
//!   guest's caller-saved registers saved (`ShortExitHandler::data_abort`): no class dispatch, a
//!   dozen registers fewer to save and load. An access naming x19..x29 comes back here with
//!   every register saved;
//! - on a CPU shared by two vCPUs (`enter_pair`), the two switches such a CPU makes all the
//!   time: the EL2 timer's interrupt when the run queue hands the CPU to the other vCPU at
//!   its deadline (`switch_at_deadline`), and a WFI after which the other vCPU takes over
//!   (`hand_over`). The vCPU leaves the CPU and the other one is entered without leaving
//!   the world switch (`switch`, `LightAnswer::switched`), with the run queue's decision and the
//!   bookkeeping of the general path's exit, switch and entry. A WFI after the short wait's
//!   tick with nothing done since (`quiet`) hands over without a look under its VM's lock;
//! - a write to one of the VM's accelerator interfaces, unconnected (`accelerator`): its
//!   request to the fabric, when the answer comes at once (connected, or a guest-model write
//!   dropped); a native-model write that must wait goes to the general path, which blocks
//!   the vCPU.
//!
//! The IRQ and the trapped system register are asked a quick part first
//! (`interrupt_quick`, `system_register_quick`): the same interrupt, or the port's self-SGI,
//! again into list register 0, in code that calls nothing, so that their light handler saves
//! only its return address; whatever else they are goes on as above.
//!
//! A physical interrupt that arrives meanwhile is taken as soon as the guest runs again. This
//! module must never finish an exit the general path would handle differently: anything it
//! does not recognise returns untouched.

use aarch64_cpu::registers::{Readable, ESR_EL2, FAR_EL2, HPFAR_EL2};

use partita_core::hypercall::{respond_local, ret, Response, CALL_REGISTERS};
use partita_core::sched::RunQueue;
use partita_core::trap::{device_access, fault_ipa, Register, ICC_SGI1R_EL1, SYSREG_NAME_BITS};

use crate::arch::aarch64::vectors::{
    enter_guest, CallerSaved, Exit, GuestRegs, Handled, Light, LightAnswer, Quick,
    ShortExitHandler, SysregSaved,
};
use crate::arch::aarch64::{gic, timer};
use crate::console;
use crate::counters::{self, ShortExits, ShortPath, Trap};
use crate::fabric::{self, Requested};
use crate::hypercall;
use crate::uart_exit::{Done, Registers, UartExit};
use crate::vgic::{Injected, Settled, VirtualGic};
use crate::vm::{inject_expired_timer, update_lines, AtWfi, Hardware, Shared, Vm, VmState};

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

/// One vCPU's short exit while it is entered (`enter`).
pub struct ShortExit<'a> {
    /// The entered vCPU, but for its registers (the world switch's).
    vm: &'a mut VmState,
    uart: UartExit,
    counters: ShortExits,
    /// The vCPU is its CPU's only one, and the CPU lent none away: it may wait for an
    /// interrupt at EL2 inside its WFI's exit (`wait_here`).
    alone: bool,
    /// A physical interrupt acknowledged here that is not this VM's: the scheduler's
    /// interrupt handling takes it before acknowledging any other.
    held: Option<u32>,
    /// On a CPU shared by two vCPUs, the other one and the run queue (`enter_pair`).
    pair: Option<Pair<'a>>,
    /// The short wait (`wait_here`) found the vCPU's lines and output clean and its model as
    /// its list register 0's interrupt left it (`Settled::Again`), its wake-up put the same
    /// interrupt there again (`Injected::Again`), and no short exit since took the VM's lock
    /// but for that again: a WFI that hands the CPU over may look without the lock
    /// (`VmState::quiet_at_wfi`). Any other short exit clears it.
    quiet: bool,
}

/// A physical IRQ as `ShortExit::acknowledge` found it, for the rest of its exit
/// (`interrupt_quick`, which leaves it as `Quick`; `irq` with every register saved).
enum Taken {
    /// No interrupt (a spurious INTID).
    Spurious,
    /// Another VM's interrupt, or Partita's own: the general path takes it (`held`).
    Foreign(u32),
    /// This vCPU's, its priority dropped: to inject.
    Own(u32),
}

/// How a trapped WFx is taken (`ShortExit::wfx_way`).
enum Wfx {
    /// By the general path: a WFE.
    General,
    /// By the other vCPU of a pair, which takes the CPU (`ShortExit::hand_over`).
    HandOver,
    /// At EL2, the vCPU loaded (`ShortExit::wait_here`).
    Here,
}

/// The other vCPU of a CPU shared by two, and the CPU's run queue: what the short exit needs
/// to hand the CPU from one vCPU to the other inside the world switch (`ShortExit::switch`).
struct Pair<'a> {
    /// The vCPU that is not entered, but for its registers ...
    other: &'a mut VmState,
    /// ... which are these (the world switch holds the entered one's).
    other_regs: *mut GuestRegs,
    queue: &'a mut RunQueue,
    cpu: u8,
    /// The entered vCPU is the other one of `enter_pair`'s call: they traded places an odd
    /// number of times.
    swapped: bool,
    /// The other vCPU's VM is being rebuilt (`VmState::rebuilding`), as it was at
    /// `enter_pair`: only the scheduler's loop, outside the world switch, starts or ends a
    /// rebuild, and a vCPU that leaves the CPU was running, so not being rebuilt.
    other_rebuilding: bool,
}

impl Pair<'_> {
    /// Whether the other vCPU may take the CPU: it is on (PSCI) and its VM is not being
    /// rebuilt, which is known since `enter_pair`.
    #[inline(always)]
    fn other_may_run(&self) -> bool {
        !self.other_rebuilding && self.other.is_on()
    }
}

impl ShortExitHandler for ShortExit<'_> {
    /// An exit taken at `start` (the EL2 clock) with every guest register in `regs`: done
    /// when it is finished and the guest may run on.
    #[inline]
    fn exit(&mut self, regs: &mut GuestRegs, start: u64, exit: Exit) -> Handled {
        self.counters.settle(regs.entered);
        self.quiet = false;
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
            // With every register saved no switch is made (only a light entry's handlers
            // switch: `light`, `interrupt_other`).
            Light::General | Light::AllRegisters => Handled::Return(exit),
        }
    }

    /// A trapped system register with the guest's caller-saved registers and x19..x29
    /// stored, its quick part: a self-SGI as a port sends it, again into list register 0
    /// (`send_sgi_again`).
    #[inline(always)]
    fn system_register_quick(&mut self, regs: &mut SysregSaved, start: u64) -> Option<Light> {
        self.counters.settle(regs.entered());
        let esr = ESR_EL2.get();
        let value = regs.get(sgi_register(esr)?);
        if !self.send_sgi_again(value) {
            return None;
        }
        regs.advance(instruction_len(esr));
        self.counters.done(start, ShortPath::Sgi);
        Some(Light::Done)
    }

    /// A trapped system register with the guest's caller-saved registers and x19..x29
    /// stored: an SGI sent (`send_sgi`), without asking ESR_EL2's class again.
    #[inline]
    fn system_register(&mut self, regs: &mut SysregSaved, start: u64) -> Light {
        self.counters.settle(regs.entered());
        self.quiet = false;
        let esr = ESR_EL2.get();
        let Some(register) = sgi_register(esr) else {
            return Light::General;
        };
        self.send_sgi(regs.get(register));
        regs.advance(instruction_len(esr));
        self.counters.done(start, ShortPath::Sgi);
        Light::Done
    }

    /// A WFx or SMC with the guest's caller-saved registers only: a WFx as `wfx_way` says
    /// (the wait at EL2, the hand-over to the other vCPU of a pair, or the general path);
    /// any other as `dispatch` takes it (`synchronous_done`).
    #[inline]
    fn light(&mut self, regs: &mut CallerSaved, start: u64) -> LightAnswer {
        self.counters.settle(regs.entered());
        let esr = ESR_EL2.get();
        if esr >> 26 == EC_WFX {
            let light = match self.wfx_way(esr) {
                Wfx::HandOver => return self.hand_over(regs, start, esr),
                Wfx::Here => self.wait_here(regs, start, esr),
                Wfx::General => Light::General,
            };
            return LightAnswer::new(light, regs.file());
        }
        LightAnswer::new(self.synchronous_done(regs, start, esr), regs.file())
    }

    /// An HVC with the guest's caller-saved registers: the call answered
    /// (`hypercall_local`), without asking ESR_EL2's class again.
    #[inline]
    fn hypercall(&mut self, regs: &mut CallerSaved, start: u64) -> Light {
        self.counters.settle(regs.entered());
        match hypercall_local(regs, &self.vm.shared, ESR_EL2.get() as u16, false) {
            Ok(path) => {
                self.counters.done(start, path);
                Light::Done
            }
            Err(light) => light,
        }
    }

    type Own = u32;
    type Other = Option<u32>;

    /// A physical IRQ with the guest's caller-saved registers, its quick part: this vCPU's
    /// interrupt again into list register 0 (`inject_again`). Leaves the vCPU's own
    /// interrupt's INTID, or the INTID of another (none: spurious).
    #[inline(always)]
    fn interrupt_quick(&mut self, regs: &mut CallerSaved, start: u64) -> Quick<u32, Option<u32>> {
        self.counters.settle(regs.entered());
        match self.acknowledge() {
            Taken::Own(intid) => {
                if self.inject_again(intid) {
                    self.counters.done(start, ShortPath::Injection);
                    return Quick::Done(Light::Done);
                }
                Quick::Own(intid)
            }
            Taken::Foreign(intid) => Quick::Other(Some(intid)),
            Taken::Spurious => Quick::Other(None),
        }
    }

    /// The vCPU's own physical IRQ the quick part did not finish.
    #[inline]
    fn interrupt(&mut self, start: u64, own: u32) -> Light {
        self.quiet = false;
        self.irq(start, Taken::Own(own))
    }

    /// Another physical IRQ (`held`: its INTID, none when spurious): held for the general
    /// path, or on a CPU shared by two it may be the switch at the run queue's deadline
    /// (`switch_at_deadline`).
    #[inline]
    fn interrupt_other(
        &mut self,
        regs: &mut CallerSaved,
        start: u64,
        held: Option<u32>,
    ) -> LightAnswer {
        if held.is_some() {
            self.held = held;
        }
        if self.pair.is_some() {
            return self.switch_at_deadline(regs, start);
        }
        LightAnswer::new(Light::General, regs.file())
    }

    /// A data abort taken at `start`, with the guest's caller-saved registers: a
    /// console-UART access is finished; any other goes to the general path untouched, or to
    /// `exit` when its register was not saved.
    #[inline]
    fn data_abort(&mut self, regs: &mut CallerSaved, start: u64) -> Light {
        self.counters.settle(regs.entered());
        self.quiet = false;
        let mut hw = self.vm.shared.hardware();
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
                line_changed(
                    &self.vm.shared,
                    &mut self.vm.vgic,
                    self.vm.vcpu_index,
                    &mut hw,
                );
                data_write
            }
        };
        drop(hw);
        self.counters.device(start, data_write);
        Light::Done
    }
}

impl<'a> ShortExit<'a> {
    /// For the entered vCPU `vm`, whose console UART is at `slot` among its devices;
    /// `alone`: the vCPU is its CPU's only one.
    #[inline(always)]
    fn new(vm: &'a mut VmState, slot: Option<usize>, alone: bool) -> Self {
        let index = vm.index();
        ShortExit {
            vm,
            uart: UartExit::new(index, slot),
            counters: ShortExits::entering(index),
            alone,
            held: None,
            pair: None,
            quiet: false,
        }
    }

    /// An exit taken at `start` with the guest's registers `regs` (all of them, or the
    /// caller-saved ones).
    #[inline(always)]
    fn dispatch<R: Registers>(&mut self, regs: &mut R, start: u64, exit: Exit) -> Light {
        let path = match exit {
            Exit::Irq => {
                let taken = self.acknowledge();
                return self.irq(start, taken);
            }
            Exit::Synchronous => {
                let esr = ESR_EL2.get();
                if esr >> 26 == EC_WFX {
                    return match self.wfx_way(esr) {
                        Wfx::Here => self.wait_here(regs, start, esr),
                        // A hand-over needs a light entry's registers (`light`).
                        Wfx::HandOver | Wfx::General => Light::General,
                    };
                }
                return self.synchronous_done(regs, start, esr);
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

    /// Acknowledges a physical IRQ: whose it is, the priority of this vCPU's own (the
    /// loaded vCPU's timer PPI, or an interrupt the VM owns) dropped.
    #[inline(always)]
    fn acknowledge(&self) -> Taken {
        let shared = &*self.vm.shared;
        match gic::acknowledge() {
            None => Taken::Spurious,
            Some(intid) if intid != shared.board().timer_virt_irq && !shared.owns(intid) => {
                Taken::Foreign(intid)
            }
            Some(intid) => {
                gic::end_of_interrupt(intid);
                Taken::Own(intid)
            }
        }
    }

    /// A physical IRQ exit taken at `start` with every register saved, its interrupt
    /// acknowledged (`taken`): this vCPU's own is injected; another is held for the general
    /// path (no switch is made from here: `interrupt_other`).
    #[inline(always)]
    fn irq(&mut self, start: u64, taken: Taken) -> Light {
        match taken {
            Taken::Own(intid) => {
                self.inject_running(intid);
                self.counters.done(start, ShortPath::Injection);
                Light::Done
            }
            Taken::Foreign(intid) => {
                self.held = Some(intid);
                Light::General
            }
            Taken::Spurious => Light::General,
        }
    }

    /// The quick injection of `intid`, this vCPU's own, its priority dropped: the same SGI
    /// or PPI again into list register 0 (`VirtualGic::inject_again_running`), when the
    /// VM's lock is free at once. True when it did; the rest is `inject_running`'s.
    #[inline(always)]
    fn inject_again(&mut self, intid: u32) -> bool {
        let (shared, vgic) = (&*self.vm.shared, &mut self.vm.vgic);
        match shared.try_hardware() {
            Some(hw) => vgic.inject_again_running(&hw.vgic, intid),
            None => false,
        }
    }

    /// Injects `intid`, acknowledged and its priority dropped, into the vCPU, which runs on
    /// after it (`VirtualGic::inject_running`): the vCPUs whose interrupts changed are
    /// kicked, and the list registers are chosen again after the general injection.
    #[inline(always)]
    fn inject_running(&mut self, intid: u32) {
        let (shared, vgic) = (&*self.vm.shared, &mut self.vm.vgic);
        let mut hw = shared.hardware();
        match vgic.inject_running(&mut hw.vgic, intid) {
            // The model unchanged: the vCPU stays `quiet` if it was.
            Injected::Again => {}
            Injected::Short => {
                shared.kick_touched(&mut hw.vgic, self.vm.vcpu_index);
                self.quiet = false;
            }
            Injected::General => {
                shared.kick_touched(&mut hw.vgic, self.vm.vcpu_index);
                vgic.before_entry(&mut hw.vgic);
                self.quiet = false;
            }
        }
    }

    /// `synchronous`, counted: out of line, so that the WFx light entry (`light`: the wait
    /// and the hand-over, out of line themselves) keeps few registers across its calls.
    #[inline(never)]
    fn synchronous_done<R: Registers>(&mut self, regs: &mut R, start: u64, esr: u64) -> Light {
        match self.synchronous(regs, esr) {
            Ok(path) => {
                self.counters.done(start, path);
                Light::Done
            }
            Err(light) => light,
        }
    }

    #[inline(always)]
    fn synchronous<R: Registers>(&mut self, regs: &mut R, esr: u64) -> Result<ShortPath, Light> {
        let shared = &*self.vm.shared;
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

    /// The quick send of a trapped ICC_SGI1R_EL1 write of `value`: a self-SGI as a port
    /// sends it (`VirtualGic::self_sgi`), again into list register 0 (`inject_again`).
    /// True when it did; the rest is `send_sgi`'s.
    #[inline(always)]
    fn send_sgi_again(&mut self, value: u64) -> bool {
        self.vm
            .vgic
            .self_sgi(value)
            .is_some_and(|intid| self.inject_again(intid))
    }

    /// A trapped ICC_SGI1R_EL1 write of `value`: the SGI is made pending on its targets,
    /// other vCPUs' CPUs kicked, and this vCPU's list registers chosen again unless the
    /// short injection took a self-SGI.
    #[inline(always)]
    fn send_sgi(&mut self, value: u64) {
        let (shared, vgic) = (&*self.vm.shared, &mut self.vm.vgic);
        let mut hw = shared.hardware();
        let short = vgic.send_sgi(&mut hw.vgic, value);
        shared.kick_touched(&mut hw.vgic, self.vm.vcpu_index);
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
    /// guest's WFI done (a spurious wake-up, which WFI allows). A WFE goes to the general
    /// path untouched; any other vCPU that shares its CPU hands it over (`hand_over`, from a
    /// light entry), or goes to the general path untouched: another vCPU may have to run
    /// while this one waits.
    ///
    /// The choice is inline and the two ways out of line: the hand-over saves no registers
    /// for the wait's.
    #[inline(always)]
    fn wfx_way(&self, esr: u64) -> Wfx {
        if esr & ESR_WFX_TI != 0 {
            return Wfx::General;
        }
        if !(self.alone || self.ahead_of_timer()) {
            return Wfx::HandOver;
        }
        Wfx::Here
    }

    /// A WFI of a vCPU that keeps its CPU (`wfx_way`): the CPU waits at EL2, this vCPU loaded.
    #[inline(never)]
    fn wait_here<R: Registers>(&mut self, regs: &mut R, start: u64, esr: u64) -> Light {
        let (shared, vgic) = (&*self.vm.shared, &mut self.vm.vgic);
        regs.advance(if esr & ESR_IL != 0 { 4 } else { 2 });
        {
            let mut hw = shared.hardware();
            update_lines(shared, vgic, self.vm.vcpu_index, &mut hw);
            inject_expired_timer(shared, vgic, self.vm.vcpu_index, &mut hw);
            let settled = vgic.settled_for_short_wait(&mut hw.vgic);
            if settled == Settled::No {
                // `has_deliverable` folds the list registers: they are chosen again before
                // the guest runs on, as `enter` does after the general path's WFI. A
                // guest that runs with them folded (stale) would have its progress on them
                // (acknowledge, EOI) overwritten by the next choice: a timer PPI whose
                // deactivation is lost stays active and never wakes it again.
                let deliverable = vgic.has_deliverable(&mut hw.vgic);
                vgic.before_entry(&mut hw.vgic);
                if deliverable {
                    drop(hw);
                    self.quiet = false;
                    self.counters.wfi(start);
                    return Light::Done;
                }
            }
            hw.devices.flush_output(shared.index());
            // Kept by the wake-up's injection when it is the same interrupt again, the model
            // unchanged (`inject_running`).
            self.quiet = settled == Settled::Again && hw.devices.quiet();
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
        let advance = self.vm.shared.timer_advance();
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
        let home = self.vm.home();
        match fabric::request(self.vm.shared.index(), home, ipa, value) {
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
        let (shared, vgic) = (&*self.vm.shared, &mut self.vm.vgic);
        let mut hw = shared.hardware();
        let data_write = match self.uart.handle(regs, &mut hw.devices) {
            Done::No => return Err(Light::General),
            Done::Unsaved => return Err(Light::AllRegisters),
            Done::Yes { data_write } => data_write,
            Done::LineChanged { data_write } => {
                update_lines(shared, vgic, self.vm.vcpu_index, &mut hw);
                vgic.before_entry(&mut hw.vgic);
                data_write
            }
        };
        Ok(ShortPath::Device {
            uart_write: data_write,
        })
    }

    /// The EL2 timer's interrupt, acknowledged (`held`), on a CPU shared by two vCPUs: when
    /// nothing but the entered vCPU's own timer PPI is pending and the run queue hands the
    /// CPU to the other vCPU, whose deadline came (`RunQueue::preempt_at_deadline`), the
    /// interrupt is ended and the switch made here (`switch`), as `CpuScheduler::interrupted`
    /// makes it. Any other case goes to the general path untouched: another interrupt (which
    /// may change the decision), a vCPU that is off or being rebuilt, a VM whose preempted
    /// vCPUs migrate, or a decision that is not just that hand-over.
    #[inline(never)]
    fn switch_at_deadline(&mut self, regs: &mut CallerSaved, start: u64) -> LightAnswer {
        let board = self.vm.shared.board();
        let file = regs.file();
        let Some(pair) = self.pair.as_mut() else {
            return LightAnswer::new(Light::General, file);
        };
        if self.held != Some(board.timer_hyp_irq)
            || !pair.other_may_run()
            || self.vm.migrates()
            || gic::highest_pending().is_some_and(|intid| intid != board.timer_virt_irq)
        {
            return LightAnswer::new(Light::General, file);
        }
        let Some(decision) = pair.queue.preempt_at_deadline(timer::now()) else {
            return LightAnswer::new(Light::General, file);
        };
        self.held = None;
        // Not disarmed first, as the general path does: the switch arms the EL2 timer for
        // the queue's next event before anything looks at the GIC's pending state, and the
        // timer's line, level-sensitive, drops then.
        gic::end_of_interrupt(board.timer_hyp_irq);
        gic::deactivate(board.timer_hyp_irq);
        self.vm.finish_entry_in_switch();
        self.switch(file, start, Trap::Irq, decision.next_event, false)
    }

    /// A WFI (ESR_EL2 `esr`, taken at `start`) the short wait does not hold, of the entered
    /// vCPU of a CPU shared by two: what the general path does for it (`trap::handle`,
    /// `CpuScheduler::wait`) when the vCPU goes on or the other one takes the CPU
    /// (`RunQueue::block_and_hand_over`), without leaving the world switch. With an
    /// interrupt to take, the guest runs on after its WFI, its list registers chosen again
    /// (`VmState::at_hand_over` folded them). Otherwise the CPU goes to the
    /// other vCPU (`switch`), the blocked one taking its deadline along, its console output
    /// sent in the same hold of its VM's lock. The general path takes the
    /// rest: no ready vCPU to take over (the CPU idles: both wait), one that is off or being
    /// rebuilt, or a queue in any other state.
    #[inline(never)]
    fn hand_over(&mut self, regs: &mut CallerSaved, start: u64, esr: u64) -> LightAnswer {
        let file = regs.file();
        let Some(pair) = self.pair.as_mut() else {
            return LightAnswer::new(Light::General, file);
        };
        if !pair.queue.has_ready() || !pair.other_may_run() {
            return LightAnswer::new(Light::General, file);
        }
        let len = instruction_len(esr);
        let found = if self.quiet && self.vm.quiet_at_wfi() {
            AtWfi::Settled
        } else {
            // The look under the lock may fold or inject: the guest that goes on is no longer
            // as the short wait left it.
            self.quiet = false;
            self.vm.at_hand_over()
        };
        if found == AtWfi::Deliverable {
            regs.advance(len);
            self.counters.wfi(start);
            return LightAnswer::new(Light::Done, file);
        }
        let deadline = self.vm.timer_deadline();
        let Some(decision) = pair.queue.block_and_hand_over(timer::now(), deadline) else {
            return LightAnswer::new(Light::General, file);
        };
        regs.advance(len);
        self.vm.finish_entry_in_switch();
        let settled = found == AtWfi::Settled;
        self.switch(file, start, Trap::Wfi, decision.next_event, settled)
    }

    /// Hands the CPU to the pair's other vCPU inside the world switch, the run queue having
    /// decided so: the entered vCPU's exit, taken at `start` with its register file at
    /// `regs`, ended by its caller as a `trap` exit ends on the
    /// general path (`VmState::finish_entry_in_switch`: its console output sent at a WFI,
    /// waiting for the vCPU's next entry at the deadline), is counted
    /// as that trap; the vCPU leaves the CPU and the other one takes it (as
    /// `CpuScheduler::switch_at_deadline` and `hand_over` do), the EL2 timer is armed for
    /// the queue's next event, the new vCPU's entry is prepared as `enter` prepares one,
    /// and the exit, switch and entry are counted
    /// (`ShortExits::switch`). The world switch then saves the rest of the old registers
    /// and enters the new ones (`LightAnswer::switched`). `next_event`: the run queue's, as
    /// its decision found it (`HandedOver`); `settled`: the old vCPU left at a WFI that found
    /// nothing pending or active (`AtWfi::Settled`, `VmState::switch_over`).
    ///
    /// Inline in its two callers, and its pieces in it (`VmState::switch_over`,
    /// `switch_in`, `prepare_entry`, `Vcpu::save` and `load`, `El1Context`'s moves,
    /// `VirtualGic::unload` and `before_entry`, `update_lines`, `Stage2Map::activate`,
    /// `gic::ppi_active`, `ShortExits::switch`): a switch makes one frame, not a dozen
    /// (docs/design.md, "The vCPU switch", tenth round, has the measurements; the run
    /// queue's decisions inlined as well made the switch to the GPOS longer).
    #[inline(always)]
    fn switch(
        &mut self,
        regs: *mut GuestRegs,
        start: u64,
        trap: Trap,
        next_event: Option<u64>,
        settled: bool,
    ) -> LightAnswer {
        let Some(pair) = self.pair.as_mut() else {
            return LightAnswer::new(Light::General, regs);
        };
        let from = self.vm.index();
        self.vm.switch_over(settled);
        core::mem::swap(&mut self.vm, &mut pair.other);
        let switched = core::mem::replace(&mut pair.other_regs, regs);
        pair.swapped = !pair.swapped;
        pair.other_rebuilding = false;
        self.vm.switch_in(pair.cpu);
        let to = self.vm.index();
        fabric::arm_event(pair.cpu, next_event);
        let slot = self.vm.prepare_entry();
        self.uart = UartExit::new(to, slot);
        self.quiet = false;
        self.counters.switch(from, start, trap, to);
        LightAnswer::switched(switched)
    }

    /// The vCPU's exit leaves the short path for the general one, its registers `regs`
    /// (`VmState::finish_entry`).
    fn finish(&mut self, regs: &GuestRegs) {
        let exited = self.counters.finish(regs.entered, regs.exited);
        counters::exited(self.vm.index(), exited);
        self.vm.finish_entry(self.held);
    }
}

/// Enters `vm`'s vCPU, loaded on this CPU, until an exit the scheduler must see: the
/// frequent exits (its timer PPI or an interrupt it owns, a hypercall that needs no
/// scheduler, a self-SGI, an access to the VM's console UART) are finished by the world
/// switch's short exit and the vCPU goes straight back (`ShortExit`); `alone`: it is its
/// CPU's only vCPU, so a WFI may wait at EL2 inside the exit. What the VM's UARTs
/// transmitted and its console has not had yet goes there when it returns.
pub fn enter(vm: &mut Vm, alone: bool) -> Exit {
    let (regs, parts) = vm.split();
    let slot = parts.prepare_entry();
    let mut short = ShortExit::new(parts, slot, alone);
    let exit = enter_guest(regs, &mut short);
    short.finish(regs);
    exit
}

/// `enter` for `vms[at]` on a CPU shared by the two vCPUs of `vms`, with the other one and
/// the CPU's run queue `queue` at hand: the two switches such a CPU makes all the time (the
/// real-time VM's deadline preempting the GPOS, the real-time VM's WFI handing the CPU back)
/// are made inside the world switch (`ShortExit::switch_at_deadline`, `hand_over`).
/// Returns the exit and the position in `vms` of the vCPU entered then. Not two vCPUs:
/// `enter` for `vms[at]`.
pub fn enter_pair(vms: &mut [Vm], at: usize, queue: &mut RunQueue, cpu: u8) -> (Exit, usize) {
    let (first, second) = vms.split_at_mut(1);
    let (Some(a), [b]) = (first.first_mut(), second) else {
        return (enter(&mut vms[at], false), at);
    };
    let (entered, other) = if at == 0 { (a, b) } else { (b, a) };
    let (regs, parts) = entered.split();
    let (other_regs, other) = other.split();
    let slot = parts.prepare_entry();
    let mut short = ShortExit::new(parts, slot, false);
    short.counters.pair(other.index());
    short.pair = Some(Pair {
        other_rebuilding: other.rebuilding(),
        other,
        other_regs: core::ptr::from_mut(&mut *other_regs),
        queue,
        cpu,
        swapped: false,
    });
    let exit = enter_guest(regs, &mut short);
    let swapped = short.pair.as_ref().is_some_and(|p| p.swapped);
    short.finish(if swapped { other_regs } else { regs });
    (exit, if swapped { 1 - at } else { at })
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
