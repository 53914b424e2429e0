//! The physical GIC, whichever version the board has: this module chooses between the GICv3
//! driver (`gic_v3.rs`) and the GICv2 driver (`gic_v2.rs`) by the board's description, so
//! the rest of Partita names no GIC version.
//!
//! Every interrupt Partita uses has one priority, so none preempts another, and the CPU
//! interface runs with split priority drop and deactivation: `end_of_interrupt` only drops
//! the running priority and `deactivate` ends the interrupt, which lets a physical interrupt
//! forwarded to a guest with the list register's HW bit stay active until the guest
//! deactivates it.

use partita_core::board::{Board, Gic};

use super::{gic_v2, gic_v3};
use crate::board::BOARD;

/// The board's GIC, as a constant so the hot paths (acknowledge, end of interrupt, ...)
/// choose their version at build time.
const GIC: Gic = BOARD.gic;

/// SGIs and PPIs: INTIDs 0 to 31, banked per CPU.
pub const PRIVATE_IRQS: u32 = 32;

/// Sets up the distributor (boot CPU, once): every SPI disabled.
pub fn init_distributor(board: &Board) {
    match &board.gic {
        Gic::V3(gic) => gic_v3::init_distributor(gic),
        Gic::V2(gic) => gic_v2::init_distributor(gic),
    }
}

/// Sets up this CPU's private interrupts (all disabled) and its CPU interface; `cpu` is the
/// CPU's index in the board description.
pub fn init_cpu(board: &Board, cpu: usize) {
    match &board.gic {
        Gic::V3(gic) => gic_v3::init_cpu(gic),
        Gic::V2(gic) => gic_v2::init_cpu(gic, cpu),
    }
}

/// Enables `intid`: an SGI or PPI on this CPU, or an SPI routed to this CPU.
pub fn enable(board: &Board, intid: u32) {
    match &board.gic {
        Gic::V3(gic) => gic_v3::enable(gic, intid),
        Gic::V2(gic) => gic_v2::enable(gic, intid),
    }
}

/// Disables `intid`: an SGI or PPI of this CPU, or an SPI.
pub fn disable(board: &Board, intid: u32) {
    match &board.gic {
        Gic::V3(gic) => gic_v3::disable(gic, intid),
        Gic::V2(gic) => gic_v2::disable(gic, intid),
    }
}

/// Makes SPI `intid` pending, as if its device had signalled it.
pub fn set_spi_pending(board: &Board, intid: u32) {
    match &board.gic {
        Gic::V3(gic) => gic_v3::set_spi_pending(gic, intid),
        Gic::V2(gic) => gic_v2::set_spi_pending(gic, intid),
    }
}

/// Clears the active state of `intid` (a PPI of this CPU or an SPI): a forwarded interrupt
/// whose guest stopped, or left the CPU, before deactivating it.
#[inline]
pub fn clear_active(board: &Board, intid: u32) {
    match &board.gic {
        Gic::V3(gic) => gic_v3::clear_active(gic, intid),
        Gic::V2(gic) => gic_v2::clear_active(gic, intid),
    }
}

/// Whether this CPU's PPI `intid` is active.
#[inline(always)]
pub fn ppi_active(board: &Board, intid: u32) -> bool {
    match &board.gic {
        Gic::V3(gic) => gic_v3::ppi_active(gic, intid),
        Gic::V2(gic) => gic_v2::ppi_active(gic, intid),
    }
}

/// Makes this CPU's PPI `intid` active: it is not signalled again until the guest that
/// holds its virtual twin (list register HW = 1) deactivates it.
#[inline]
pub fn set_active_ppi(board: &Board, intid: u32) {
    match &board.gic {
        Gic::V3(gic) => gic_v3::set_active_ppi(gic, intid),
        Gic::V2(gic) => gic_v2::set_active_ppi(gic, intid),
    }
}

/// Whether an interrupt is pending for this CPU, without acknowledging it.
pub fn pending() -> bool {
    highest_pending().is_some()
}

/// The highest-priority interrupt pending for this CPU, if any, without acknowledging it.
pub fn highest_pending() -> Option<u32> {
    match &GIC {
        Gic::V3(_) => gic_v3::highest_pending(),
        Gic::V2(gic) => gic_v2::highest_pending(gic),
    }
}

/// Acknowledges the highest-priority pending interrupt, if any.
pub fn acknowledge() -> Option<u32> {
    match &GIC {
        Gic::V3(_) => gic_v3::acknowledge(),
        Gic::V2(gic) => gic_v2::acknowledge(gic),
    }
}

/// Drops the running priority of `intid`; it stays active.
pub fn end_of_interrupt(intid: u32) {
    match &GIC {
        Gic::V3(_) => gic_v3::end_of_interrupt(intid),
        Gic::V2(gic) => gic_v2::end_of_interrupt(gic, intid),
    }
}

/// Deactivates `intid`.
pub fn deactivate(intid: u32) {
    match &GIC {
        Gic::V3(_) => gic_v3::deactivate(intid),
        Gic::V2(gic) => gic_v2::deactivate(gic, intid),
    }
}

/// Sends SGI `sgi` to physical CPU `cpu` (its index in the board description).
pub fn send_sgi(sgi: u8, cpu: u8) {
    match &GIC {
        Gic::V3(_) => gic_v3::send_sgi(sgi, BOARD.cpus[usize::from(cpu)]),
        Gic::V2(gic) => gic_v2::send_sgi(gic, sgi, usize::from(cpu)),
    }
}
