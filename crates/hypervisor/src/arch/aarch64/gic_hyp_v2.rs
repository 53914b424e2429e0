//! The GICv2 virtual interface control registers (GICH_*, Arm IHI 0048B 5.3), memory-mapped
//! at the board's GICH frame: list registers, GICH_ELRSR0, GICH_HCR, GICH_VMCR, GICH_APR and GICH_VTR.
//!
//! `gic_hyp.rs` calls this for a GICv2 board and translates list registers between the
//! model's ICH_LR<n>_EL2 form and GICH_LRn's (`partita_core::vgic::{to_v2, from_v2}`); this
//! module only moves 32-bit values. It must never touch the physical CPU interface.

use core::ptr::{read_volatile, write_volatile};

use partita_core::board::GicV2;

const GICH_HCR: u64 = 0x000;
const GICH_VTR: u64 = 0x004;
const GICH_VMCR: u64 = 0x008;
const GICH_APR: u64 = 0x0f0;
const GICH_LR: u64 = 0x100;
const GICH_ELRSR0: u64 = 0x030;

fn read32(gic: &GicV2, offset: u64) -> u32 {
    // SAFETY: `offset` is one of the registers above inside the board's GICH frame, mapped as
    // Device memory by `mmu`; GICH registers are 32-bit and reading them has no side effect.
    unsafe { read_volatile((gic.gich.base + offset) as *const u32) }
}

fn write32(gic: &GicV2, offset: u64, value: u32) {
    // SAFETY: as `read32`; GICH belongs to this CPU's virtual interface, which only the
    // vCPU running here uses.
    unsafe { write_volatile((gic.gich.base + offset) as *mut u32, value) }
}

/// Number of list registers (GICH_VTR.ListRegs + 1).
pub fn list_register_count(gic: &GicV2) -> usize {
    (read32(gic, GICH_VTR) & 0x3f) as usize + 1
}

pub fn read_list_register(gic: &GicV2, n: usize) -> u32 {
    read32(gic, GICH_LR + 4 * n as u64)
}

pub fn write_list_register(gic: &GicV2, n: usize, value: u32) {
    write32(gic, GICH_LR + 4 * n as u64, value);
}

/// GICH_ELRSR0: bit n set when list register n is free.
pub fn empty_list_registers(gic: &GicV2) -> u32 {
    read32(gic, GICH_ELRSR0)
}

pub fn set_hcr(gic: &GicV2, value: u32) {
    write32(gic, GICH_HCR, value);
}

pub fn vmcr(gic: &GicV2) -> u32 {
    read32(gic, GICH_VMCR)
}

pub fn set_vmcr(gic: &GicV2, value: u32) {
    write32(gic, GICH_VMCR, value);
}

pub fn apr(gic: &GicV2) -> u32 {
    read32(gic, GICH_APR)
}

pub fn set_apr(gic: &GicV2, value: u32) {
    write32(gic, GICH_APR, value);
}
