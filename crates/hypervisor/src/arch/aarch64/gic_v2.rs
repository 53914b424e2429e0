//! The physical GICv2 (behind `gic.rs`): Partita's driver for the distributor and the memory-
//! mapped CPU interface of a GIC-400 (Arm IHI 0048B, chapter 4 register descriptions).
//!
//! Interrupts stay in the group the firmware put them in (a GIC without Security Extensions,
//! as QEMU's is with `secure=off`, resets them to Group 0; a Non-secure view sees Group 1):
//! GICD_CTLR and GICC_CTLR bit 0 enable that group either way, and bit 9 is the EOI mode that
//! splits priority drop (GICC_EOIR) from deactivation (GICC_DIR). An SGI's acknowledge value
//! carries its source CPU, which its end of interrupt and deactivation must repeat: the last
//! source of each SGI is kept per CPU. It never configures an interrupt nobody asked for.

use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use partita_core::board::GicV2;

use super::entry::MAX_CPUS;
use super::gic::PRIVATE_IRQS;
use super::sysreg::read_sysreg;
use crate::board::BOARD;

/// Distributor registers (IHI 0048B 4.3).
const GICD_CTLR: u64 = 0x000;
const GICD_TYPER: u64 = 0x004;
const GICD_ISENABLER: u64 = 0x100;
const GICD_ICENABLER: u64 = 0x180;
const GICD_ISPENDR: u64 = 0x200;
const GICD_ISACTIVER: u64 = 0x300;
const GICD_ICACTIVER: u64 = 0x380;
const GICD_IPRIORITYR: u64 = 0x400;
const GICD_ITARGETSR: u64 = 0x800;
const GICD_SGIR: u64 = 0xf00;
/// CPU interface registers (IHI 0048B 4.4).
const GICC_CTLR: u64 = 0x0000;
const GICC_PMR: u64 = 0x0004;
const GICC_BPR: u64 = 0x0008;
const GICC_IAR: u64 = 0x000c;
const GICC_EOIR: u64 = 0x0010;
const GICC_HPPIR: u64 = 0x0018;
const GICC_DIR: u64 = 0x1000;
/// GICD_CTLR / GICC_CTLR: enable (Group 0 without Security Extensions, Group 1 in the
/// Non-secure view); GICC_CTLR EOImode (EOImodeNS in the Non-secure view).
const CTLR_ENABLE: u32 = 1 << 0;
const GICC_CTLR_EOIMODE: u32 = 1 << 9;
/// The priority of every interrupt Partita enables, and the mask that lets all through.
const PRIORITY: u32 = 0x80;
const PMR_ALL: u32 = 0xff;
/// The INTID field of GICC_IAR and its source CPU field (SGIs).
const IAR_INTID: u32 = 0x3ff;
const IAR_SOURCE: u32 = 0x7 << 10;
const SGIS: usize = 16;
/// INTIDs 1020 to 1023 are special: nothing to acknowledge.
const FIRST_SPECIAL: u32 = 1020;

/// The GIC CPU interface number of each physical CPU (bit n of a target list is interface
/// n), read from the banked GICD_ITARGETSR0 by each CPU at start-up.
static INTERFACE: [AtomicU8; MAX_CPUS] = [const { AtomicU8::new(0) }; MAX_CPUS];
/// The source field of the last acknowledge of each SGI, per CPU.
static SGI_SOURCE: [[AtomicU32; SGIS]; MAX_CPUS] =
    [const { [const { AtomicU32::new(0) }; SGIS] }; MAX_CPUS];

fn read32(addr: u64) -> u32 {
    // SAFETY: `addr` is a register of the board's GIC, mapped as Device memory by `mmu`;
    // reads of GIC registers have no side effect other than the architected one.
    unsafe { read_volatile(addr as *const u32) }
}

fn write32(addr: u64, value: u32) {
    // SAFETY: as `read32`; the callers write only the registers this driver owns.
    unsafe { write_volatile(addr as *mut u32, value) }
}

fn write8(addr: u64, value: u8) {
    // SAFETY: as `write32`; GICD_IPRIORITYR and GICD_ITARGETSR are byte-accessible.
    unsafe { write_volatile(addr as *mut u8, value) }
}

/// This CPU's index among the board's CPUs (found by its MPIDR affinity).
fn this_cpu() -> usize {
    let affinity = read_sysreg!("mpidr_el1") & 0xff_00ff_ffff;
    BOARD.cpus.iter().position(|&a| a == affinity).unwrap_or(0) % MAX_CPUS
}

/// Disables every SPI (boot CPU, once) and enables the distributor.
pub fn init_distributor(gic: &GicV2) {
    let gicd = gic.gicd.base;
    write32(gicd + GICD_CTLR, 0);
    let lines = ((read32(gicd + GICD_TYPER) & 0x1f) + 1) * 32;
    for first in (PRIVATE_IRQS..lines).step_by(32) {
        let bank = u64::from(first / 32) * 4;
        write32(gicd + GICD_ICENABLER + bank, u32::MAX);
        write32(gicd + GICD_ICACTIVER + bank, u32::MAX);
    }
    write32(gicd + GICD_CTLR, CTLR_ENABLE);
}

/// Disables this CPU's SGIs and PPIs, learns its CPU interface number and turns the CPU
/// interface on (every CPU).
pub fn init_cpu(gic: &GicV2, cpu: usize) {
    let gicd = gic.gicd.base;
    write32(gicd + GICD_ICENABLER, u32::MAX);
    write32(gicd + GICD_ICACTIVER, u32::MAX);
    let mask = read32(gicd + GICD_ITARGETSR) & 0xff;
    INTERFACE[cpu % MAX_CPUS].store(mask.trailing_zeros() as u8 % 8, Ordering::Relaxed);
    let gicc = gic.gicc.base;
    write32(gicc + GICC_PMR, PMR_ALL);
    write32(gicc + GICC_BPR, 0);
    write32(gicc + GICC_CTLR, CTLR_ENABLE | GICC_CTLR_EOIMODE);
}

fn bank(intid: u32) -> u64 {
    u64::from(intid / 32) * 4
}

/// Enables `intid`: an SGI or PPI on this CPU, or an SPI targeted at this CPU.
pub fn enable(gic: &GicV2, intid: u32) {
    let gicd = gic.gicd.base;
    write8(gicd + GICD_IPRIORITYR + u64::from(intid), PRIORITY as u8);
    if intid >= PRIVATE_IRQS {
        let me = INTERFACE[this_cpu()].load(Ordering::Relaxed);
        write8(gicd + GICD_ITARGETSR + u64::from(intid), 1 << me);
    }
    write32(gicd + GICD_ISENABLER + bank(intid), 1 << (intid % 32));
}

/// Disables `intid`: an SGI or PPI of this CPU, or an SPI.
pub fn disable(gic: &GicV2, intid: u32) {
    write32(
        gic.gicd.base + GICD_ICENABLER + bank(intid),
        1 << (intid % 32),
    );
}

/// Makes SPI `intid` pending, as if its device had signalled it.
pub fn set_spi_pending(gic: &GicV2, intid: u32) {
    write32(
        gic.gicd.base + GICD_ISPENDR + bank(intid),
        1 << (intid % 32),
    );
}

/// Clears the active state of `intid` (a PPI of this CPU or an SPI).
pub fn clear_active(gic: &GicV2, intid: u32) {
    write32(
        gic.gicd.base + GICD_ICACTIVER + bank(intid),
        1 << (intid % 32),
    );
}

/// Whether this CPU's PPI `intid` is active.
pub fn ppi_active(gic: &GicV2, intid: u32) -> bool {
    intid < PRIVATE_IRQS && read32(gic.gicd.base + GICD_ISACTIVER) & (1 << intid) != 0
}

/// Makes this CPU's PPI `intid` active.
pub fn set_active_ppi(gic: &GicV2, intid: u32) {
    if intid < PRIVATE_IRQS {
        write32(gic.gicd.base + GICD_ISACTIVER, 1 << intid);
    }
}

/// The highest-priority interrupt pending for this CPU (GICC_HPPIR), if any, without
/// acknowledging it.
pub fn highest_pending(gic: &GicV2) -> Option<u32> {
    let intid = read32(gic.gicc.base + GICC_HPPIR) & IAR_INTID;
    (intid < FIRST_SPECIAL).then_some(intid)
}

/// Acknowledges the highest-priority pending interrupt, if any (GICC_IAR).
pub fn acknowledge(gic: &GicV2) -> Option<u32> {
    let iar = read32(gic.gicc.base + GICC_IAR);
    let intid = iar & IAR_INTID;
    if intid >= FIRST_SPECIAL {
        return None;
    }
    if (intid as usize) < SGIS {
        SGI_SOURCE[this_cpu()][intid as usize].store(iar & IAR_SOURCE, Ordering::Relaxed);
    }
    Some(intid)
}

/// `intid` as GICC_EOIR and GICC_DIR want it: an SGI with its source.
fn with_source(intid: u32) -> u32 {
    match SGI_SOURCE[this_cpu()].get(intid as usize) {
        Some(source) => intid | source.load(Ordering::Relaxed),
        None => intid,
    }
}

/// Drops the running priority of `intid` (GICC_EOIR); it stays active.
pub fn end_of_interrupt(gic: &GicV2, intid: u32) {
    write32(gic.gicc.base + GICC_EOIR, with_source(intid));
}

/// Deactivates `intid` (GICC_DIR).
pub fn deactivate(gic: &GicV2, intid: u32) {
    write32(gic.gicc.base + GICC_DIR, with_source(intid));
}

/// Sends SGI `sgi` to physical CPU `cpu` (GICD_SGIR with its CPU interface in the list).
pub fn send_sgi(gic: &GicV2, sgi: u8, cpu: usize) {
    let interface = INTERFACE[cpu % MAX_CPUS].load(Ordering::Relaxed);
    write32(
        gic.gicd.base + GICD_SGIR,
        (1 << (16 + u32::from(interface))) | u32::from(sgi & 0xf),
    );
}
