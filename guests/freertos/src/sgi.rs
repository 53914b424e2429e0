//! The software-generated interrupt the benchmarks send to their own CPU (GICv3 SGI through
//! ICC_SGI1R_EL1; under a hypervisor this exercises the vGIC). It owns the SGI's INTID and
//! priority and the sending; enabling it in the redistributor belongs to `gic`, handling
//! it to `bench`. It never sends to another CPU.

use aarch64_cpu::registers::{Readable, MPIDR_EL1};

/// The SGI the benchmarks use.
pub const INTID: u32 = 1;
/// Its GIC priority: above the tick (30 << 3), and at a level allowed to use the FreeRTOS
/// FromISR API (numerically at least configMAX_API_CALL_INTERRUPT_PRIORITY << 3).
pub const PRIORITY: u8 = 29 << 3;

/// ICC_SGI1R_EL1 fields (GICv3 architecture specification, 12.2.22).
const TARGET_LIST_BITS: u64 = 16;
const AFF1_SHIFT: u32 = 16;
const INTID_SHIFT: u32 = 24;
const AFF2_SHIFT: u32 = 32;
const RS_SHIFT: u32 = 44;
const AFF3_SHIFT: u32 = 48;

/// The ICC_SGI1R_EL1 value that sends `INTID` to this CPU, computed once.
#[derive(Clone, Copy)]
pub struct SgiToSelf(u64);

impl SgiToSelf {
    pub fn new() -> Self {
        let mpidr = MPIDR_EL1.get();
        let affinity = |level: u32| -> u64 {
            let shift = if level == 3 { 32 } else { level * 8 };
            (mpidr >> shift) & 0xff
        };
        let aff0 = affinity(0);
        let value = (1 << (aff0 % TARGET_LIST_BITS))
            | ((aff0 / TARGET_LIST_BITS) << RS_SHIFT)
            | (affinity(1) << AFF1_SHIFT)
            | (u64::from(INTID) << INTID_SHIFT)
            | (affinity(2) << AFF2_SHIFT)
            | (affinity(3) << AFF3_SHIFT);
        Self(value)
    }

    /// Raises the SGI; with interrupts unmasked it is taken before this returns.
    pub fn send(self) {
        // SAFETY: writing ICC_SGI1R_EL1 (s3_0_c12_c11_5) only makes an SGI pending on the
        // CPU the value targets, this one; the ISB makes it visible before returning.
        unsafe {
            core::arch::asm!(
                "msr s3_0_c12_c11_5, {value}",
                "isb",
                value = in(reg) self.0,
                options(nostack),
            )
        };
    }
}
