//! The physical GICv3 (behind `gic.rs`): Partita's driver for the distributor, this CPU's redistributor and the
//! CPU interface system registers (Arm IHI 0069, chapter 12 register descriptions).
//!
//! Every interrupt Partita uses is Group 1 with one priority, so none preempts another. The
//! CPU interface runs with EOImode = 1: `end_of_interrupt` only drops the running priority and
//! `deactivate` ends the interrupt, which lets a physical interrupt forwarded to a guest with
//! the list register's HW bit stay active until the guest deactivates it. Written by hand: the
//! driver needs only a dozen registers and must expose the per-redistributor active state the
//! `arm-gic` crate does not. It never configures an interrupt nobody asked for.

use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{AtomicU64, Ordering};

use partita_core::board::GicV3;

use super::entry::{cpu_index, MAX_CPUS};
use super::sysreg::{read_sysreg, write_sysreg};

/// Distributor registers (IHI 0069 12.9).
const GICD_CTLR: u64 = 0x0000;
const GICD_TYPER: u64 = 0x0004;
const GICD_IGROUPR: u64 = 0x0080;
const GICD_ISENABLER: u64 = 0x0100;
const GICD_ICENABLER: u64 = 0x0180;
const GICD_ISPENDR: u64 = 0x0200;
const GICD_ICACTIVER: u64 = 0x0380;
const GICD_IPRIORITYR: u64 = 0x0400;
const GICD_IROUTER: u64 = 0x6000;
/// GICD_CTLR: EnableGrp1 (EnableGrp1NS without DS), ARE (ARE_NS), RWP.
const CTLR_ENABLE_GRP1: u32 = 1 << 1;
const CTLR_ARE: u32 = 1 << 4;
const CTLR_RWP: u32 = 1 << 31;

/// Redistributor registers: RD frame (12.10), SGI frame at +64 KiB (12.11).
const GICR_TYPER: u64 = 0x0008;
const GICR_WAKER: u64 = 0x0014;
const SGI_FRAME: u64 = 0x1_0000;
const GICR_IGROUPR0: u64 = SGI_FRAME + 0x0080;
const GICR_ISENABLER0: u64 = SGI_FRAME + 0x0100;
const GICR_ICENABLER0: u64 = SGI_FRAME + 0x0180;
const GICR_ISACTIVER0: u64 = SGI_FRAME + 0x0300;
const GICR_ICACTIVER0: u64 = SGI_FRAME + 0x0380;
const GICR_IPRIORITYR: u64 = SGI_FRAME + 0x0400;
const TYPER_LAST: u64 = 1 << 4;
const WAKER_PROCESSOR_SLEEP: u32 = 1 << 1;
const WAKER_CHILDREN_ASLEEP: u32 = 1 << 2;

/// ICC_SRE_EL2: SRE, DFB, DIB, Enable (EL1 may use its system registers).
const ICC_SRE_EL2_VALUE: u64 = 0b1111;
/// ICC_CTLR_EL1.EOImode: EOIR drops priority, DIR deactivates.
const ICC_CTLR_EOIMODE: u64 = 1 << 1;
/// The priority of every interrupt Partita enables, and the mask that lets all through.
const PRIORITY: u8 = 0x80;
const PMR_ALL: u64 = 0xff;
/// INTIDs 1020 to 1023 are special: nothing to acknowledge.
const FIRST_SPECIAL: u32 = 1020;

fn read32(addr: u64) -> u32 {
    // SAFETY: `addr` is a register of the board's GIC, mapped as Device memory by `mmu`;
    // reads of GIC registers have no side effect other than the architected one.
    unsafe { read_volatile(addr as *const u32) }
}

fn write32(addr: u64, value: u32) {
    // SAFETY: as `read32`; the callers write only the registers this driver owns.
    unsafe { write_volatile(addr as *mut u32, value) }
}

fn read64(addr: u64) -> u64 {
    // SAFETY: as `read32`, for the 64-bit registers (GICR_TYPER).
    unsafe { read_volatile(addr as *const u64) }
}

fn write64(addr: u64, value: u64) {
    // SAFETY: as `write32`, for GICD_IROUTER<n>.
    unsafe { write_volatile(addr as *mut u64, value) }
}

fn wait_for_distributor(gic: &GicV3) {
    while read32(gic.gicd.base + GICD_CTLR) & CTLR_RWP != 0 {}
}

/// Sets up the distributor (boot CPU, once): affinity routing, Group 1, every SPI disabled.
pub fn init_distributor(gic: &GicV3) {
    let gicd = gic.gicd.base;
    write32(gicd + GICD_CTLR, 0);
    wait_for_distributor(gic);
    let lines = ((read32(gicd + GICD_TYPER) & 0x1f) + 1) * 32;
    for first in (super::gic::PRIVATE_IRQS..lines).step_by(32) {
        let bank = u64::from(first / 32) * 4;
        write32(gicd + GICD_ICENABLER + bank, u32::MAX);
        write32(gicd + GICD_IGROUPR + bank, u32::MAX);
    }
    wait_for_distributor(gic);
    write32(gicd + GICD_CTLR, CTLR_ARE);
    wait_for_distributor(gic);
    write32(gicd + GICD_CTLR, CTLR_ARE | CTLR_ENABLE_GRP1);
    wait_for_distributor(gic);
}

/// This CPU's affinity as GICR_TYPER.Affinity_Value packs it (Aff3.Aff2.Aff1.Aff0).
fn packed_affinity() -> u64 {
    let mpidr = read_sysreg!("mpidr_el1");
    ((mpidr >> 8) & 0xff00_0000) | (mpidr & 0xff_ffff)
}

/// The base of each CPU's redistributor (by `cpu_index`), found by `init_cpu`; 0 before.
static REDISTRIBUTORS: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// The base of this CPU's redistributor: found once (`init_cpu`), so that the PPI accesses
/// of every vCPU switch (the timer PPI's active state) do not search the frames again.
#[inline]
fn redistributor(gic: &GicV3) -> u64 {
    match REDISTRIBUTORS[cpu_index()].load(Ordering::Relaxed) {
        0 => find_redistributor(gic),
        base => base,
    }
}

/// The base of this CPU's redistributor, searched among the frames by affinity.
#[cold]
#[inline(never)]
fn find_redistributor(gic: &GicV3) -> u64 {
    let me = packed_affinity();
    let mut frame = gic.gicr.base;
    while frame < gic.gicr.base + gic.gicr.size {
        let typer = read64(frame + GICR_TYPER);
        if typer >> 32 == me {
            return frame;
        }
        if typer & TYPER_LAST != 0 {
            break;
        }
        frame += gic.gicr_stride;
    }
    panic!("no GIC redistributor for affinity {me:#x}");
}

/// Wakes this CPU's redistributor, puts its SGIs and PPIs in Group 1, disabled, and turns
/// the CPU interface on (every CPU).
pub fn init_cpu(gic: &GicV3) {
    let gicr = find_redistributor(gic);
    REDISTRIBUTORS[cpu_index()].store(gicr, Ordering::Relaxed);
    let waker = read32(gicr + GICR_WAKER);
    write32(gicr + GICR_WAKER, waker & !WAKER_PROCESSOR_SLEEP);
    while read32(gicr + GICR_WAKER) & WAKER_CHILDREN_ASLEEP != 0 {}
    write32(gicr + GICR_ICENABLER0, u32::MAX);
    write32(gicr + GICR_ICACTIVER0, u32::MAX);
    write32(gicr + GICR_IGROUPR0, u32::MAX);
    write_sysreg!("s3_4_c12_c9_5", ICC_SRE_EL2_VALUE); // ICC_SRE_EL2
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
    write_sysreg!("s3_0_c4_c6_0", PMR_ALL); // ICC_PMR_EL1
    write_sysreg!("s3_0_c12_c12_3", 0); // ICC_BPR1_EL1
    write_sysreg!("s3_0_c12_c12_4", ICC_CTLR_EOIMODE); // ICC_CTLR_EL1
    write_sysreg!("s3_0_c12_c12_7", 1); // ICC_IGRPEN1_EL1
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}

fn set_priority(base: u64, intid: u32) {
    let addr = base + u64::from(intid & !3);
    let shift = (intid % 4) * 8;
    let old = read32(addr);
    write32(
        addr,
        (old & !(0xff << shift)) | (u32::from(PRIORITY) << shift),
    );
}

/// Enables `intid`: an SGI or PPI on this CPU, or an SPI routed to this CPU.
pub fn enable(gic: &GicV3, intid: u32) {
    let bit = 1 << (intid % 32);
    if intid < super::gic::PRIVATE_IRQS {
        let gicr = redistributor(gic);
        set_priority(gicr + GICR_IPRIORITYR, intid);
        write32(gicr + GICR_ISENABLER0, bit);
    } else {
        let gicd = gic.gicd.base;
        set_priority(gicd + GICD_IPRIORITYR, intid);
        write64(
            gicd + GICD_IROUTER + 8 * u64::from(intid),
            packed_affinity_route(),
        );
        write32(gicd + GICD_ISENABLER + u64::from(intid / 32) * 4, bit);
    }
}

/// GICD_IROUTER<n> naming this CPU (Aff3 at bits 39:32, Aff2..Aff0 at 23:0).
fn packed_affinity_route() -> u64 {
    let mpidr = read_sysreg!("mpidr_el1");
    (mpidr & 0xff_0000_0000) | (mpidr & 0xff_ffff)
}

/// Disables `intid`: an SGI or PPI of this CPU, or an SPI.
pub fn disable(gic: &GicV3, intid: u32) {
    let bit = 1 << (intid % 32);
    if intid < super::gic::PRIVATE_IRQS {
        write32(redistributor(gic) + GICR_ICENABLER0, bit);
    } else {
        write32(
            gic.gicd.base + GICD_ICENABLER + u64::from(intid / 32) * 4,
            bit,
        );
    }
}

/// Makes SPI `intid` pending, as if its device had signalled it.
pub fn set_spi_pending(gic: &GicV3, intid: u32) {
    write32(
        gic.gicd.base + GICD_ISPENDR + u64::from(intid / 32) * 4,
        1 << (intid % 32),
    );
}

/// Clears the active state of `intid` (a PPI of this CPU or an SPI): a forwarded interrupt
/// whose guest stopped, or left the CPU, before deactivating it.
#[inline]
pub fn clear_active(gic: &GicV3, intid: u32) {
    let bit = 1 << (intid % 32);
    if intid < super::gic::PRIVATE_IRQS {
        write32(redistributor(gic) + GICR_ICACTIVER0, bit);
    } else {
        write32(
            gic.gicd.base + GICD_ICACTIVER + u64::from(intid / 32) * 4,
            bit,
        );
    }
}

/// Whether this CPU's PPI `intid` is active.
#[inline]
pub fn ppi_active(gic: &GicV3, intid: u32) -> bool {
    intid < super::gic::PRIVATE_IRQS
        && read32(redistributor(gic) + GICR_ISACTIVER0) & (1 << intid) != 0
}

/// Makes this CPU's PPI `intid` active: it is not signalled again until the guest that
/// holds its virtual twin (list register HW = 1) deactivates it.
#[inline]
pub fn set_active_ppi(gic: &GicV3, intid: u32) {
    if intid < super::gic::PRIVATE_IRQS {
        write32(redistributor(gic) + GICR_ISACTIVER0, 1 << intid);
    }
}

/// The highest-priority interrupt pending for this CPU (ICC_HPPIR1_EL1), if any, without
/// acknowledging it.
pub fn highest_pending() -> Option<u32> {
    let intid = (read_sysreg!("s3_0_c12_c12_2") & 0xff_ffff) as u32;
    (intid < FIRST_SPECIAL).then_some(intid)
}

/// Acknowledges the highest-priority pending interrupt, if any (ICC_IAR1_EL1).
pub fn acknowledge() -> Option<u32> {
    let intid = (read_sysreg!("s3_0_c12_c12_0") & 0xff_ffff) as u32;
    (intid < FIRST_SPECIAL).then_some(intid)
}

/// Drops the running priority of `intid` (ICC_EOIR1_EL1); it stays active.
pub fn end_of_interrupt(intid: u32) {
    write_sysreg!("s3_0_c12_c12_1", u64::from(intid));
}

/// Deactivates `intid` (ICC_DIR_EL1).
pub fn deactivate(intid: u32) {
    write_sysreg!("s3_0_c12_c11_1", u64::from(intid));
}

/// Sends SGI `sgi` to the CPU with MPIDR affinity `mpidr` (ICC_SGI1R_EL1: Aff3, Aff2, Aff1,
/// the range of Aff0 and its bit in the target list).
pub fn send_sgi(sgi: u8, mpidr: u64) {
    let aff0 = mpidr & 0xff;
    let value = (u64::from(sgi & 0xf) << 24)
        | (1u64 << (aff0 % 16))
        | ((aff0 / 16) << 44)
        | (((mpidr >> 8) & 0xff) << 16)
        | (((mpidr >> 16) & 0xff) << 32)
        | (((mpidr >> 32) & 0xff) << 48);
    write_sysreg!("s3_0_c12_c11_5", value);
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}
