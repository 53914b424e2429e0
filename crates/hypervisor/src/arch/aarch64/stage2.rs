//! Per-VM stage-2 translation: guest-physical (IPA) to physical, built with `aarch64-paging`'s
//! Stage2 regime, and the VTCR_EL2/VTTBR_EL2 values that select it.
//!
//! The IPA space is 39 bits (VTCR_EL2.T0SZ = 25) walked from level 1 with 4 KiB granules, one
//! 4 KiB root table and no concatenation, so any CPU with at least 40-bit physical addresses
//! takes it (Cortex-A53's PARange is 40 bits, Cortex-A72's 44, QEMU's max 48);
//! `aarch64-paging` uses 2 MiB and 1 GiB blocks wherever both addresses are aligned. Only a
//! VM's memory regions and the inter-VM channels it is a member of are mapped: device windows
//! stay unmapped so every access traps. This module must never map Partita's own memory or
//! another VM's memory; callers pass only the validated regions and channels of one VM.

use core::arch::asm;
use core::sync::atomic::{AtomicBool, Ordering};

use aarch64_cpu::registers::{Readable, Writeable, VTCR_EL2, VTTBR_EL2};
use aarch64_paging::descriptor::{PhysicalAddress, Stage2Attributes};
use aarch64_paging::idmap::IdTranslation;
use aarch64_paging::paging::{Constraints, MemoryRegion, Stage2};
use aarch64_paging::{MapError, Mapping};

use super::sysreg::read_sysreg;

/// VTCR_EL2 without PS: T0SZ = 25 (39-bit IPA), SL0 = 1 (start at level 1), inner/outer
/// write-back walks, inner shareable, 4 KiB granule, 8-bit VMID; bit 31 is RES1.
const VTCR_BASE: u64 = 25 | (1 << 6) | (1 << 8) | (1 << 10) | (3 << 12) | (1 << 31);
/// The level the walk starts at (SL0 = 1 with 4 KiB granules, ARM ARM D8.2.5).
const ROOT_LEVEL: usize = 1;
/// PARange/PS encodings: a 39-bit IPA space needs at least 40-bit outputs here (the boards'
/// RAM lies below 2^40); 48 bits is the most this map uses.
const PS_40_BITS: u64 = 0b010;
const PS_48_BITS: u64 = 0b101;

/// VTCR_EL2 for this CPU: the output size is the CPU's physical address size.
fn vtcr() -> u64 {
    let parange = read_sysreg!("id_aa64mmfr0_el1") & 0xf;
    if parange < PS_40_BITS {
        panic!("stage 2 needs a 40-bit physical address size (PARange {parange:#x})");
    }
    VTCR_BASE | (parange.min(PS_48_BITS) << 16)
}

/// Normal memory, write-back cacheable, inner shareable, read-write-execute for the guest.
const GUEST_RAM: Stage2Attributes = Stage2Attributes::VALID
    .union(Stage2Attributes::MEMATTR_NORMAL_INNER_WB)
    .union(Stage2Attributes::MEMATTR_NORMAL_OUTER_WB)
    .union(Stage2Attributes::SH_INNER)
    .union(Stage2Attributes::S2AP_ACCESS_RW)
    .union(Stage2Attributes::ACCESS_FLAG);

/// An inter-VM channel: normal memory like RAM but never executable, read-write or
/// read-only as the configuration gives the VM (a write to a read-only channel is a
/// stage-2 permission fault, reflected as a data abort).
const CHANNEL_RW: Stage2Attributes = GUEST_RAM.union(Stage2Attributes::XN);
const CHANNEL_RO: Stage2Attributes = GUEST_RAM
    .difference(Stage2Attributes::S2AP_ACCESS_RW)
    .union(Stage2Attributes::S2AP_ACCESS_RO)
    .union(Stage2Attributes::XN);

/// One VM's stage-2 tables and its VMID.
pub struct Stage2Map {
    mapping: Mapping<IdTranslation<Stage2Attributes>, Stage2>,
    vmid: u8,
    /// The TLBs may hold translations of this VMID that are no longer right (a new map, or a
    /// guest restarted on the same map): drop them at the next activation (on any CPU: the
    /// invalidation is broadcast to the inner-shareable domain).
    stale_tlb: AtomicBool,
}

impl Stage2Map {
    pub fn new(vmid: u8) -> Self {
        Stage2Map {
            mapping: Mapping::new(IdTranslation::new(), ROOT_LEVEL, Stage2),
            vmid,
            stale_tlb: AtomicBool::new(true),
        }
    }

    /// Maps `size` bytes of guest RAM at `ipa` to `phys`.
    pub fn map_ram(&mut self, ipa: u64, phys: u64, size: u64) -> Result<(), MapError> {
        let range = MemoryRegion::new(ipa as usize, (ipa + size) as usize);
        self.mapping.map_range(
            &range,
            PhysicalAddress(phys as usize),
            GUEST_RAM,
            Constraints::empty(),
        )
    }

    /// Maps the `size` bytes of a channel at `ipa` to `phys`, read-only when `read_only`.
    pub fn map_channel(
        &mut self,
        ipa: u64,
        phys: u64,
        size: u64,
        read_only: bool,
    ) -> Result<(), MapError> {
        let range = MemoryRegion::new(ipa as usize, (ipa + size) as usize);
        let attributes = if read_only { CHANNEL_RO } else { CHANNEL_RW };
        self.mapping.map_range(
            &range,
            PhysicalAddress(phys as usize),
            attributes,
            Constraints::empty(),
        )
    }

    fn vttbr(&self) -> u64 {
        self.mapping.root_address().0 as u64 | (u64::from(self.vmid) << 48)
    }

    /// Selects this map for EL1/EL0 on this CPU. Translations are tagged with the VMID, so
    /// switching between VMs needs no TLB maintenance; only stale entries are dropped.
    pub fn activate(&self) {
        VTCR_EL2.set(vtcr());
        VTTBR_EL2.set(self.vttbr());
        if self.stale_tlb.swap(false, Ordering::AcqRel) {
            invalidate_selected_vmid();
        }
    }

    /// The guest restarts from scratch: its stage-1 translations cached under this VMID
    /// must go at the next activation.
    pub fn forget_translations(&self) {
        self.stale_tlb.store(true, Ordering::Release);
    }
}

impl Drop for Stage2Map {
    /// The tables go back to the heap: make sure this CPU no longer points at them.
    fn drop(&mut self) {
        if VTTBR_EL2.get() == self.vttbr() {
            invalidate_selected_vmid();
            VTTBR_EL2.set(0);
        }
    }
}

/// Discards every cached stage-1 and stage-2 translation of the VMID in VTTBR_EL2.
fn invalidate_selected_vmid() {
    // SAFETY: TLB maintenance for the VMID in VTTBR_EL2; it only discards cached
    // translations of that VM, and the barriers order it after the table writes.
    unsafe {
        asm!(
            "isb",
            "dsb ishst",
            "tlbi vmalls12e1is",
            "dsb ish",
            "isb",
            options(nostack)
        );
    }
}
