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
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use aarch64_cpu::registers::{Readable, Writeable, VTCR_EL2, VTTBR_EL2};
use aarch64_paging::descriptor::{PhysicalAddress, Stage2Attributes, VirtualAddress};
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
/// A device frame passed to the guest (the GICv2 virtual CPU interface): Device-nGnRE,
/// read-write, never executable.
const DEVICE: Stage2Attributes = Stage2Attributes::VALID
    .union(Stage2Attributes::MEMATTR_DEVICE_nGnRE)
    .union(Stage2Attributes::S2AP_ACCESS_RW)
    .union(Stage2Attributes::ACCESS_FLAG)
    .union(Stage2Attributes::XN);
const CHANNEL_RO: Stage2Attributes = GUEST_RAM
    .difference(Stage2Attributes::S2AP_ACCESS_RW)
    .union(Stage2Attributes::S2AP_ACCESS_RO)
    .union(Stage2Attributes::XN);

/// An accelerator's interface page: normal memory like a read-only channel until the VM is
/// connected to a region (`InterfacePte::set_writable`).
const INTERFACE_RO: Stage2Attributes = CHANNEL_RO;
/// S2AP's write bit: RO (0b01) and RW (0b11) differ only in it.
const S2AP_WRITE: usize = 1 << 7;

/// The leaf descriptor of one interface page in one VM's stage 2, so a connection change
/// flips one permission bit with no table walk (`docs/accelerators.md`).
pub struct InterfacePte {
    /// The descriptor, inside the VM's tables (which live as long as the VM's `Shared`;
    /// the fabric forgets the handle when the VM stops).
    pte: *const AtomicUsize,
    ipa: u64,
    /// VTTBR_EL2 of the VM: the TLB maintenance runs under its VMID.
    vttbr: u64,
}

// SAFETY: the descriptor is an atomic word in tables that outlive every holder of the
// handle (see `pte`); any CPU may flip its permission bit.
unsafe impl Send for InterfacePte {}
// SAFETY: as above: every access is an atomic read-modify-write.
unsafe impl Sync for InterfacePte {}

impl InterfacePte {
    /// Makes the page writable (connected) or read-only. Making it read-only drops every
    /// cached translation of the page for the VM before returning (`invalidate`), so no CPU
    /// writes it after this; making it writable needs none (a stale read-only entry costs
    /// one spurious permission fault, after which the caller invalidates and retries). A
    /// page read-only already is left as it is: the call that made it so invalidated before
    /// returning, and the callers are serialized (the fabric's lock).
    pub fn set_writable(&self, writable: bool) {
        // SAFETY: `pte` points at the live leaf descriptor of this page (see the field).
        let pte = unsafe { &*self.pte };
        if writable {
            pte.fetch_or(S2AP_WRITE, Ordering::Release);
            // SAFETY: barrier only: the table walker sees the new descriptor.
            unsafe { asm!("dsb ishst", options(nostack)) };
        } else if pte.fetch_and(!S2AP_WRITE, Ordering::Release) & S2AP_WRITE != 0 {
            self.invalidate();
        }
    }

    /// Drops the VM's TLB entries for this page: TLBI IPAS2E1IS for its stage-2 entry, then
    /// (after a DSB, as the architecture requires) TLBI VMALLE1IS, because combined
    /// stage-1+2 entries are tagged by VA, not by IPA, and cannot be picked out. Both run
    /// under the VM's VMID (VTTBR_EL2 is switched for the duration and restored: EL2 code
    /// here never runs a guest in between). Other VMs keep their TLB entries.
    pub fn invalidate(&self) {
        let saved: u64 = read_sysreg!("vttbr_el2");
        // SAFETY: TLB maintenance for one VMID; VTTBR_EL2 only selects the VMID and is
        // restored before any guest runs on this CPU.
        unsafe {
            asm!(
                "msr vttbr_el2, {vttbr}",
                "isb",
                "dsb ishst",
                "tlbi ipas2e1is, {page}",
                "dsb ish",
                "tlbi vmalle1is",
                "dsb ish",
                "msr vttbr_el2, {saved}",
                "isb",
                vttbr = in(reg) self.vttbr,
                page = in(reg) self.ipa >> 12,
                saved = in(reg) saved,
                options(nostack)
            );
        }
    }
}

/// One VM's stage-2 tables and its VMID.
pub struct Stage2Map {
    mapping: Mapping<IdTranslation<Stage2Attributes>, Stage2>,
    vmid: u8,
    /// The TLBs may hold translations of this VMID that are no longer right (a new map, or a
    /// guest restarted on the same map): drop them at the next activation (on any CPU: the
    /// invalidation is broadcast to the inner-shareable domain).
    stale_tlb: AtomicBool,
    /// VTCR_EL2 (`vtcr`), computed once: the same for every map and CPU of the machine.
    vtcr: u64,
}

impl Stage2Map {
    pub fn new(vmid: u8) -> Self {
        Stage2Map {
            mapping: Mapping::new(IdTranslation::new(), ROOT_LEVEL, Stage2),
            vmid,
            stale_tlb: AtomicBool::new(true),
            vtcr: vtcr(),
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

    /// Maps an accelerator's interface page at `ipa` to `phys`, read-only, and returns the
    /// handle that connects and disconnects it.
    pub fn map_interface(&mut self, ipa: u64, phys: u64) -> Result<InterfacePte, MapError> {
        let range = MemoryRegion::new(ipa as usize, (ipa + 0x1000) as usize);
        self.mapping.map_range(
            &range,
            PhysicalAddress(phys as usize),
            INTERFACE_RO,
            Constraints::empty(),
        )?;
        let mut pte = core::ptr::null();
        self.mapping
            .walk_range(&range, &mut |_, descriptor, level| {
                if level == 3 {
                    pte = core::ptr::from_ref(descriptor).cast::<AtomicUsize>();
                }
                Ok(())
            })?;
        if pte.is_null() {
            return Err(MapError::InvalidVirtualAddress(VirtualAddress(
                ipa as usize,
            )));
        }
        Ok(InterfacePte {
            pte,
            ipa,
            vttbr: self.vttbr(),
        })
    }

    /// Maps the `size` bytes of a device frame at `ipa` to `phys` with pages.
    pub fn map_device(&mut self, ipa: u64, phys: u64, size: u64) -> Result<(), MapError> {
        let range = MemoryRegion::new(ipa as usize, (ipa + size) as usize);
        self.mapping.map_range(
            &range,
            PhysicalAddress(phys as usize),
            DEVICE,
            Constraints::NO_BLOCK_MAPPINGS,
        )
    }

    fn vttbr(&self) -> u64 {
        self.mapping.root_address().0 as u64 | (u64::from(self.vmid) << 48)
    }

    /// Selects this map for EL1/EL0 on this CPU. Translations are tagged with the VMID, so
    /// switching between VMs needs no TLB maintenance; only stale entries are dropped.
    #[inline(always)]
    pub fn activate(&self) {
        VTCR_EL2.set(self.vtcr);
        VTTBR_EL2.set(self.vttbr());
        // Looked at before it is cleared: a switch between VMs finds it clear.
        if self.stale_tlb.load(Ordering::Acquire) && self.stale_tlb.swap(false, Ordering::AcqRel) {
            invalidate_selected_vmid();
        }
    }

    /// Drops this CPU's cached translations of the VMID (the map must be active here): another
    /// vCPU of the same VM ran on this CPU last.
    pub fn forget_local_translations(&self) {
        // SAFETY: TLB maintenance for the VMID in VTTBR_EL2 on this CPU only; it only
        // discards cached translations of that VM.
        unsafe {
            asm!(
                "dsb nshst",
                "tlbi vmalls12e1",
                "dsb nsh",
                "isb",
                options(nostack)
            );
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
