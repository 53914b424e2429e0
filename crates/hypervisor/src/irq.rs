//! Physical interrupts while a VM runs on this CPU: acknowledging them at EL2, forwarding the
//! virtual timer to the VM, reading console input, and blocking a vCPU in WFI.
//!
//! Physical IRQs route to EL2 (HCR_EL2.IMO) and stay masked in PSTATE at EL2, so they are
//! taken only as guest exits or polled here after a WFI at EL2. The virtual timer's PPI is
//! forwarded with the list register's HW bit: Partita only drops its priority, and the
//! guest's deactivation deactivates it. Every other interrupt is Partita's: it is handled,
//! then deactivated. This module must never forward an interrupt the VM does not own.

use partita_core::board::Board;

use crate::arch::aarch64::gic;
use crate::input;
use crate::vm::Vm;

/// Handles every pending physical interrupt; true when one was forwarded to `vm`.
pub fn handle_pending(vm: &mut Vm) -> bool {
    let board = vm.board();
    let mut forwarded = false;
    while let Some(intid) = gic::acknowledge() {
        gic::end_of_interrupt(intid);
        if intid == board.timer_virt_irq {
            vm.vgic.inject(intid);
            forwarded = true;
            continue;
        }
        if intid == board.uart_irq {
            input::receive(vm.cpu());
        }
        if intid == board.maintenance_irq {
            vm.vgic.maintenance();
        }
        // The input kick only makes the vCPU exit, so that the UART model gets the input
        // before it re-enters.
        gic::deactivate(intid);
    }
    forwarded
}

/// Handles the pending physical interrupts of a CPU that runs no VM (any more): console
/// input is still read; the rest have no one to go to.
pub fn handle_idle(board: &Board, cpu: u8) {
    while let Some(intid) = gic::acknowledge() {
        gic::end_of_interrupt(intid);
        if intid == board.uart_irq {
            input::receive(cpu);
        }
        gic::deactivate(intid);
    }
}

/// WFI: waits on this CPU until the vCPU has an interrupt to take, or a physical interrupt
/// was forwarded to it (a wake-up event, even while the guest keeps it disabled).
pub fn wait_for_interrupt(vm: &mut Vm) {
    loop {
        vm.update_interrupt_lines();
        if vm.vgic.has_deliverable() {
            return;
        }
        aarch64_cpu::asm::wfi();
        if handle_pending(vm) {
            return;
        }
    }
}

/// Enables the physical interrupts this CPU needs while it runs VMs: the virtual timer,
/// the GIC maintenance interrupt and the input kick; CPU 0 also takes the console UART.
pub fn enable_for_vms(board: &Board, cpu: usize) {
    gic::enable(board, board.timer_virt_irq);
    gic::enable(board, board.maintenance_irq);
    gic::enable(board, input::KICK_SGI);
    if cpu == 0 {
        gic::enable(board, board.uart_irq);
    }
}
