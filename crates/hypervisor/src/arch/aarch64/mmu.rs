//! Partita's own EL2 stage-1 translation: an identity map of the board with 1 GiB blocks,
//! its RAM banks as Normal write-back cacheable memory and its device regions as
//! Device-nGnRE, never executable; nothing else is mapped (the board tests check that no
//! block holds both RAM and a device).
//!
//! One small static table (level 1, 39-bit VA) serves every CPU. It is written once by the
//! boot CPU before any MMU is on and never changed afterwards; this module must never map
//! anything the board description does not name.

use core::arch::asm;
use core::sync::atomic::{AtomicU64, Ordering};

use aarch64_cpu::registers::{Writeable, MAIR_EL2, TCR_EL2, TTBR0_EL2};
use partita_core::board::Region;

use crate::board::BOARD;

const BLOCK_SIZE: u64 = 1 << 30;
const ENTRIES: usize = 512;

/// MAIR_EL2 attribute indices.
const ATTR_DEVICE_NGNRE: u64 = 0;
const ATTR_NORMAL_WB: u64 = 1;
/// Attr0 = Device-nGnRE (0x04), Attr1 = Normal inner/outer write-back RW-allocate (0xff).
const MAIR: u64 = 0x04 | (0xff << 8);

/// Block descriptor bits (ARM ARM D8.3, stage-1 VMSAv8-64 block descriptor).
const DESC_BLOCK: u64 = 0b01;
const DESC_AF: u64 = 1 << 10;
const DESC_SH_INNER: u64 = 3 << 8;
const DESC_XN: u64 = 1 << 54;

/// TCR_EL2 (E2H = 0): T0SZ = 25 (39-bit VA, walk starts at level 1), inner/outer write-back
/// walks, inner shareable, 4 KiB granule, PS = 40-bit; bits 31 and 23 are RES1.
const TCR: u64 = 25 | (1 << 8) | (1 << 10) | (3 << 12) | (2 << 16) | (1 << 23) | (1 << 31);

/// SCTLR_EL2 RES1 bits (E2H = 0) plus M (MMU), C (data cache), SA (SP alignment), I (icache).
const SCTLR: u64 = 0x30c5_0830 | 1 | (1 << 2) | (1 << 3) | (1 << 12);

#[repr(C, align(4096))]
struct Table([AtomicU64; ENTRIES]);

static TABLE: Table = Table([const { AtomicU64::new(0) }; ENTRIES]);

fn block(index: usize) -> u64 {
    let base = index as u64 * BLOCK_SIZE;
    let block = Region::new(base, BLOCK_SIZE);
    if BOARD.ram.iter().any(|bank| bank.overlaps(&block)) {
        base | DESC_BLOCK | DESC_AF | DESC_SH_INNER | (ATTR_NORMAL_WB << 2)
    } else if BOARD.devices.iter().any(|device| device.overlaps(&block)) {
        base | DESC_BLOCK | DESC_AF | DESC_XN | (ATTR_DEVICE_NGNRE << 2)
    } else {
        0
    }
}

/// Fills the table (boot CPU, MMU off) and turns the MMU on.
pub fn build_and_enable() {
    for (i, entry) in TABLE.0.iter().enumerate() {
        entry.store(block(i), Ordering::Relaxed);
    }
    enable();
}

/// Turns this CPU's EL2 MMU and caches on with the shared table.
pub fn enable() {
    MAIR_EL2.set(MAIR);
    TCR_EL2.set(TCR);
    TTBR0_EL2.set(TABLE.0.as_ptr() as u64);
    // SAFETY: the table identity-maps all of RAM (code, data, stacks, heap, bundle) and the
    // devices Partita uses, with the attributes set above, so execution continues at the same
    // addresses; the barriers order the table writes and TLB invalidation before the switch.
    unsafe {
        asm!(
            "dsb ish",
            "tlbi alle2",
            "dsb ish",
            "isb",
            "msr sctlr_el2, {sctlr}",
            "isb",
            sctlr = in(reg) SCTLR,
            options(nostack),
        );
    }
}
