//! The software-generated interrupt the benchmarks send to their own CPU (under a
//! hypervisor this exercises the vGIC). It owns the SGI's INTID and priority; the GIC's
//! encoding of the sending and enabling it belong to `gic`, handling it to `bench`. It
//! never sends to another CPU.

use crate::gic;

/// The SGI the benchmarks use.
pub const INTID: u32 = 1;
/// Its GIC priority: above the tick (30 << 3), and at a level allowed to use the FreeRTOS
/// FromISR API (numerically at least configMAX_API_CALL_INTERRUPT_PRIORITY << 3).
pub const PRIORITY: u8 = 29 << 3;

/// The GIC's write that raises `INTID` on this CPU, computed once.
#[derive(Clone, Copy)]
pub struct SgiToSelf(gic::SgiToSelf);

impl SgiToSelf {
    pub fn new() -> Self {
        Self(gic::SgiToSelf::new(INTID))
    }

    /// Raises the SGI; with interrupts unmasked it is taken before this returns.
    pub fn send(self) {
        self.0.send();
    }
}
