//! Physical interrupts on a CPU that runs VMs: acknowledged at EL2 (they route there and stay
//! masked in PSTATE at EL2, so they are taken as guest exits or polled after a WFI at EL2),
//! then forwarded to the VM that owns them or consumed by Partita.
//!
//! Forwarded with the list register's HW bit (Partita only drops their priority; the guest's
//! deactivation ends them): the virtual timer's PPI to the loaded vCPU (only its CNTV runs),
//! a passed-through EL1 physical timer's PPI and the destination table's SPIs to their VM.
//! Consumed (then deactivated): the EL2 timer (the scheduler's next event), the maintenance
//! interrupt, console input and its kick SGI, the doorbell SGI and the vCPU kick SGI.
//! Doorbells rung for this CPU's VMs (by another CPU's SGI or by a VM of this CPU) are raised
//! in their virtual GICs after the physical interrupts; kicked vCPUs (another vCPU of their
//! VM changed their interrupts, started them with CPU_ON or ended the VM's boot) are looked
//! at last. This module must never forward an interrupt to a VM that does not own it.

use partita_core::board::Board;

use super::CpuScheduler;
use crate::arch::aarch64::{gic, timer};
use crate::fabric;
use crate::input;
use crate::ivc;
use crate::vm::VCPU_KICK_SGI;

impl CpuScheduler {
    /// Handles every pending physical interrupt; true when the scheduler must decide again
    /// (its timer fired, or a vCPU that should run now was woken).
    pub(super) fn handle_interrupts(&mut self) -> bool {
        let mut decide = false;
        let mut woke = false;
        let mut input = false;
        let mut kicked = false;
        let mut accel = false;
        // The short exit may have acknowledged one already (`Vm::take_acknowledged`).
        let mut held = self
            .loaded_position()
            .and_then(|at| self.vms[at].take_acknowledged());
        while let Some(intid) = held.take().or_else(gic::acknowledge) {
            gic::end_of_interrupt(intid);
            if let Some(at) = self.owner(intid) {
                self.vms[at].inject(intid);
                crate::counters::injected(self.vms[at].index());
                self.wake(at);
                woke = true;
                continue;
            }
            if intid == self.board.timer_hyp_irq {
                timer::arm_hyp_timer(None);
                decide = true;
            } else if intid == self.board.maintenance_irq {
                if let Some(at) = self.loaded_position() {
                    self.vms[at].maintenance();
                }
            } else if intid == self.board.uart.irq {
                input::receive(self.cpu);
                input = true;
            } else if intid == input::KICK_SGI {
                input = true;
            } else if intid == VCPU_KICK_SGI {
                kicked = true;
            } else if intid == fabric::FABRIC_SGI {
                accel = true;
            }
            gic::deactivate(intid);
        }
        if input {
            woke |= self.deliver_input();
        }
        if ivc::cpu_has_pending(self.cpu) {
            woke |= self.deliver_doorbells();
        }
        if accel || fabric::cpu_has_pending(self.cpu) {
            woke |= self.deliver_accelerators();
        }
        if kicked {
            // Migrated vCPUs arriving or leaving change the CPU's set of vCPUs: decide again.
            decide |= self.receive_migrants();
            let (kick_woke, ended) = self.deliver_kicks();
            decide |= self.return_migrants();
            woke |= kick_woke;
            decide |= ended;
        }
        let now = timer::now();
        if decide || (woke && self.queue.should_preempt(now)) {
            return true;
        }
        if woke {
            fabric::arm_next_event(self.cpu, &self.queue);
        }
        false
    }

    /// The position of the VM a physical interrupt is forwarded to, if any.
    fn owner(&self, intid: u32) -> Option<usize> {
        if intid == self.board.timer_virt_irq {
            return self.loaded_position();
        }
        self.owners.owner(intid)
    }

    /// Raises the doorbells rung for this CPU's VMs; wakes a blocked VM that now has an
    /// interrupt to take. True when one was woken.
    fn deliver_doorbells(&mut self) -> bool {
        let mut woke = false;
        for at in 0..self.vms.len() {
            let vm = &mut self.vms[at];
            let rung = ivc::take(vm.index());
            if rung != 0 && vm.receive_doorbells(rung) && vm.has_deliverable() {
                self.wake(at);
                woke = true;
            }
        }
        woke
    }

    /// Raises the accelerator interrupts the fabric made due for this CPU's VMs; wakes a
    /// blocked VM that now has one to take, and every blocked vCPU here when one of them
    /// waited in a trapped write for an interface that is connected now (the others block
    /// again at once). True when one was woken.
    fn deliver_accelerators(&mut self) -> bool {
        let mut woke = false;
        if fabric::take_writer_wake(self.cpu) {
            for at in 0..self.vms.len() {
                self.wake(at);
            }
            woke = true;
        }
        for at in 0..self.vms.len() {
            if self.vms[at].vcpu_index() != 0 {
                continue;
            }
            let due = fabric::take(self.vms[at].index());
            for &intid in &due {
                self.vms[at].inject(intid);
                crate::counters::injected(self.vms[at].index());
            }
            if !due.is_empty() && self.vms[at].has_deliverable() {
                self.wake(at);
                woke = true;
            }
        }
        woke
    }

    /// Moves console input into every VM's UART; wakes a blocked VM that now has an
    /// interrupt to take. True when one was woken.
    fn deliver_input(&mut self) -> bool {
        let mut woke = false;
        for at in 0..self.vms.len() {
            let vm = &mut self.vms[at];
            if !vm.is_on() {
                continue;
            }
            vm.update_interrupt_lines();
            if vm.has_deliverable() {
                self.wake(at);
                woke = true;
            }
        }
        woke
    }
}

impl CpuScheduler {
    /// Looks at this CPU's kicked vCPUs: one started by CPU_ON begins to run, one whose
    /// interrupts another vCPU changed wakes if it has one to take, and the vCPUs of a VM
    /// whose boot ends are parked (`settle_endings`). Returns whether one was woken and
    /// whether a boot ended (the scheduler then decides again).
    fn deliver_kicks(&mut self) -> (bool, bool) {
        let mut woke = false;
        let mut ending = false;
        for at in 0..self.vms.len() {
            let vm = &mut self.vms[at];
            if !vm.take_kick() {
                continue;
            }
            if vm.ending() || vm.retired() {
                ending = true;
                continue;
            }
            // Started by CPU_ON, or given an interrupt by another vCPU of its VM. A vCPU
            // that is not loaded is woken without a look at its interrupts (that takes its
            // VM's lock, which a higher-priority VM's path here must never wait for): if it
            // has none to take, it blocks again when it runs.
            let loaded = self.loaded == Some(super::vcpu_of(vm));
            if vm.start_if_pending() {
                self.wake(at);
                woke = true;
            } else if vm.is_on() && (!loaded || vm.refresh_interrupts()) {
                if loaded {
                    crate::counters::kicked(vm.index());
                }
                self.wake(at);
                woke = true;
            }
        }
        if ending {
            self.settle_endings();
        }
        (woke, ending)
    }
}

/// Enables the physical interrupts a CPU needs to run VMs: the virtual timer, the EL2
/// timer, the GIC maintenance interrupt and the input kick; CPU 0 also takes the console
/// UART. A VM's own forwarded interrupts are enabled when it is built.
pub fn enable_for_vms(board: &Board, cpu: usize) {
    gic::enable(board, board.timer_virt_irq);
    gic::enable(board, board.timer_hyp_irq);
    gic::enable(board, board.maintenance_irq);
    gic::enable(board, input::KICK_SGI);
    gic::enable(board, ivc::DOORBELL_SGI);
    gic::enable(board, VCPU_KICK_SGI);
    gic::enable(board, fabric::FABRIC_SGI);
    if cpu == 0 {
        gic::enable(board, board.uart.irq);
    }
}

/// Handles the pending physical interrupts of a CPU that runs no VM (any more): console
/// input is still read; the rest have no one to go to.
pub fn handle_idle(board: &Board, cpu: u8) {
    while let Some(intid) = gic::acknowledge() {
        gic::end_of_interrupt(intid);
        if intid == board.uart.irq {
            input::receive(cpu);
        }
        gic::deactivate(intid);
    }
}
