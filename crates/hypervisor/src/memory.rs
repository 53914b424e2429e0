//! A VM's RAM as Partita sees it: the guest-physical range, the physical range behind it, and
//! the few ways EL2 writes into it (zeroing, copying an image or device tree in), and the
//! clearing of inter-VM channel memory at boot.
//!
//! EL2 reaches guest RAM through its identity map. Ranges come from the validated
//! configuration, so they lie in board RAM, outside Partita's own memory and outside every
//! other VM's (a channel's memory is outside every VM's RAM too). This module must never hand out a reference into guest memory that outlives a
//! call: the guest may change it at any time.

use core::arch::asm;

use partita_core::board::Region;
use partita_core::config::MemoryRegion;

use crate::arch::aarch64::sysreg::read_sysreg;

/// The smallest data cache line of this CPU (CTR_EL0.DminLine, log2 of words).
fn dcache_line() -> u64 {
    4 << ((read_sysreg!("ctr_el0") >> 16) & 0xf)
}

/// One memory region of a VM.
pub struct GuestMemory {
    pub guest: Region,
    pub phys: u64,
}

impl GuestMemory {
    /// The region as planned by the host tool; `None` when no physical memory was planned.
    pub fn from_config(m: &MemoryRegion) -> Option<Self> {
        Some(GuestMemory {
            guest: m.guest(),
            phys: m.phys?,
        })
    }

    /// Rebuilds `len` bytes of the region from guest-physical `ipa` on: zeroes them, copies
    /// in the parts of `blobs` (guest-physical address, bytes) that fall there, and cleans
    /// them to the point of coherency, so a guest starting with its MMU and caches off sees
    /// what EL2 wrote. A VM is rebuilt in such pieces, so that rebuilding a large one never
    /// holds its CPU for long (`sync_instruction_cache` once at the end).
    pub fn rebuild(&mut self, ipa: u64, len: u64, blobs: &[(u64, &[u8])]) {
        let Some(end) = self.guest.end() else {
            return;
        };
        let len = len.min(end.saturating_sub(ipa));
        if ipa < self.guest.base || len == 0 {
            return;
        }
        let dst = self.phys + (ipa - self.guest.base);
        zero(dst, len);
        for &(at, bytes) in blobs {
            let start = at.max(ipa);
            let stop = at.saturating_add(bytes.len() as u64).min(ipa + len);
            if start >= stop {
                continue;
            }
            let from = &bytes[(start - at) as usize..(stop - at) as usize];
            let to = (self.phys + (start - self.guest.base)) as *mut u8;
            // SAFETY: [start, stop) lies inside [ipa, ipa + len), so inside this VM's RAM,
            // which does not overlap `bytes` (Partita's own memory or the bundle).
            unsafe { core::ptr::copy_nonoverlapping(from.as_ptr(), to, from.len()) };
        }
        clean_to_poc(dst, len);
    }
}

/// Clears `len` bytes of physical memory at `phys` that no guest runs on yet (an inter-VM
/// channel at boot) and cleans them to the point of coherency, for guests that map it
/// uncached.
pub fn clear(phys: u64, len: u64) {
    zero(phys, len);
    clean_to_poc(phys, len);
}

/// Zeroes [start, start + size) of guest RAM, a cache block per instruction (`DC ZVA`) when
/// the CPU allows it. A store loop costs about 3 instructions per 8 bytes, which for a 1 GiB
/// Linux VM is 0.4 s of virtual time under icount before the guest runs; `DC ZVA` costs a
/// tenth of it.
fn zero(start: u64, size: u64) {
    let dczid = read_sysreg!("dczid_el0");
    let block = 4u64 << (dczid & 0xf);
    let prohibited = dczid & (1 << 4) != 0;
    if prohibited || !start.is_multiple_of(4 * block) || !size.is_multiple_of(4 * block) {
        // SAFETY: the caller passes a range of one VM's RAM or of a channel (see the module
        // comment), identity mapped as Normal memory, and no guest runs on it meanwhile.
        unsafe { core::ptr::write_bytes(start as *mut u8, 0, size as usize) };
        return;
    }
    // SAFETY: as above; DC ZVA zeroes exactly one aligned block of that Normal memory per
    // instruction, and the loop stays within [start, start + size) because both are
    // multiples of four blocks.
    unsafe {
        asm!(
            "2:",
            "dc zva, {addr}",
            "add {addr}, {addr}, {block}",
            "dc zva, {addr}",
            "add {addr}, {addr}, {block}",
            "dc zva, {addr}",
            "add {addr}, {addr}, {block}",
            "dc zva, {addr}",
            "add {addr}, {addr}, {block}",
            "cmp {addr}, {end}",
            "b.lo 2b",
            addr = inout(reg) start => _,
            block = in(reg) block,
            end = in(reg) start + size,
            options(nostack),
        )
    };
}

/// Cleans [start, start + len) of guest RAM to the point of coherency, line by line.
fn clean_to_poc(start: u64, len: u64) {
    let step = dcache_line();
    let mut line = start & !(step - 1);
    while line < start + len {
        // SAFETY: cache maintenance by address on mapped RAM; no data changes.
        unsafe { asm!("dc cvac, {}", in(reg) line, options(nostack)) };
        line += step;
    }
}

/// Makes instruction fetches see what EL2 wrote into guest memory (after a rebuild).
pub fn sync_instruction_cache() {
    // SAFETY: barriers and a full instruction-cache invalidate have no memory effects.
    unsafe { asm!("dsb sy", "ic iallu", "dsb sy", "isb", options(nostack)) };
}
