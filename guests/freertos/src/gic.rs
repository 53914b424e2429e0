//! GICv3 set-up for one CPU at EL1 (GICv3/v4 architecture specification, IHI 0069).
//!
//! It owns the distributor enable, finding and waking this CPU's redistributor, the
//! configuration of a private interrupt (group, priority, enable) in the redistributor's
//! SGI frame and of a shared peripheral interrupt (group, priority, trigger, route, enable)
//! in the distributor, and the CPU interface through the ICC_* system registers. Acknowledge and
//! end-of-interrupt belong to the FreeRTOS port (portASM.S); this module never touches them.

use crate::intid::{self, NotA};
use aarch64_cpu::registers::{Readable, MPIDR_EL1};
use core::arch::asm;
use core::fmt;

/// The device-tree compatible string of a GICv3.
pub const COMPATIBLE: &[&str] = &["arm,gic-v3"];
/// The GIC's name in the banner, and the FreeRTOS port built for it.
pub const NAME: &str = "gicv3";
pub const PORT: &str = "ARM_AARCH64_SRE";
/// What the second `reg` region of the GIC node is.
pub const SECOND_FRAME: &str = "redistributors";
/// The mask of the INTID in an acknowledge value (ICC_IAR1_EL1 bits [23:0]).
pub const INTID_MASK: u32 = 0x00ff_ffff;

/// GICD_CTLR and its bits: EnableGrp1NS/EnableGrp1 (bit 0 or 1 depending on the security
/// view), ARE (bit 4), and RWP (register write pending, bit 31). 12.9.4.
const GICD_CTLR: usize = 0x0000;
const GICD_CTLR_ENABLE: u32 = (1 << 4) | (1 << 1) | (1 << 0);
const GICD_CTLR_RWP: u32 = 1 << 31;
/// Size of one redistributor: RD_base and SGI_base frames (GICv4 adds two VLPI frames).
const GICR_FRAME: usize = 0x2_0000;
const GICR_VLPI_FRAMES: usize = 0x2_0000;
const GICR_SGI_BASE: usize = 0x1_0000;
/// GICR_TYPER: affinity in bits [63:32], VLPIS (bit 1), Last (bit 4). 12.11.37.
const GICR_TYPER: usize = 0x0008;
const GICR_TYPER_VLPIS: u64 = 1 << 1;
const GICR_TYPER_LAST: u64 = 1 << 4;
/// GICR_WAKER: ProcessorSleep (bit 1), ChildrenAsleep (bit 2). 12.11.40.
const GICR_WAKER: usize = 0x0014;
const WAKER_PROCESSOR_SLEEP: u32 = 1 << 1;
const WAKER_CHILDREN_ASLEEP: u32 = 1 << 2;
/// SGI-frame registers for INTIDs 0..31.
const GICR_IGROUPR0: usize = 0x0080;
const GICR_ISENABLER0: usize = 0x0100;
const GICR_IPRIORITYR: usize = 0x0400;
/// Distributor registers for SPIs (12.9): one bit, two bits, a byte or a doubleword each.
const GICD_IGROUPR: usize = 0x0080;
const GICD_ISENABLER: usize = 0x0100;
const GICD_IPRIORITYR: usize = 0x0400;
const GICD_ICFGR: usize = 0x0c00;
const GICD_IROUTER: usize = 0x6000;

/// Why the GIC could not be set up.
#[derive(Clone, Copy, Debug)]
pub enum GicError {
    /// No redistributor in the device-tree region matches this CPU's MPIDR.
    NoRedistributor,
    /// The INTID is not of the kind of interrupt it was given as.
    Intid(NotA),
}

impl From<NotA> for GicError {
    fn from(wrong: NotA) -> Self {
        Self::Intid(wrong)
    }
}

impl fmt::Display for GicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoRedistributor => f.write_str("no redistributor matches this CPU's MPIDR"),
            Self::Intid(wrong) => wrong.fmt(f),
        }
    }
}

/// This CPU's view of the GIC.
pub struct Gic {
    distributor: usize,
    redistributor: usize,
}

impl Gic {
    /// Enables the distributor, wakes this CPU's redistributor and enables the CPU interface
    /// with every priority unmasked.
    ///
    /// # Safety
    /// `distributor` and `redistributors..+redistributors_size` must be the GICv3 register
    /// regions of the platform, and nothing else may program them.
    pub unsafe fn init(
        distributor: usize,
        redistributors: usize,
        redistributors_size: usize,
    ) -> Result<Self, GicError> {
        write32(distributor + GICD_CTLR, GICD_CTLR_ENABLE);
        while read32(distributor + GICD_CTLR) & GICD_CTLR_RWP != 0 {}
        let redistributor = find_redistributor(redistributors, redistributors_size)?;
        let waker = read32(redistributor + GICR_WAKER);
        write32(redistributor + GICR_WAKER, waker & !WAKER_PROCESSOR_SLEEP);
        while read32(redistributor + GICR_WAKER) & WAKER_CHILDREN_ASLEEP != 0 {}
        enable_cpu_interface();
        Ok(Self {
            distributor,
            redistributor,
        })
    }

    /// Puts private interrupt `intid` in group 1 at `priority` and enables it.
    pub fn enable_ppi(&self, intid: u32, priority: u8) -> Result<(), GicError> {
        let intid = intid::ppi(intid)?;
        self.enable_private(intid, priority);
        Ok(())
    }

    /// Puts software-generated interrupt `intid` in group 1 at `priority` and enables it.
    pub fn enable_sgi(&self, intid: u32, priority: u8) -> Result<(), GicError> {
        let intid = intid::sgi(intid)?;
        self.enable_private(intid, priority);
        Ok(())
    }

    /// Puts shared interrupt `intid` in group 1 at `priority`, edge-triggered, routed to this
    /// CPU, and enables it.
    pub fn enable_edge_spi(&self, intid: u32, priority: u8) -> Result<(), GicError> {
        let intid = intid::spi(intid)?;
        let d = self.distributor;
        let word = 4 * (intid as usize / 32);
        let bit = 1u32 << (intid % 32);
        write32(
            d + GICD_IGROUPR + word,
            read32(d + GICD_IGROUPR + word) | bit,
        );
        let priority_word = d + GICD_IPRIORITYR + (intid as usize & !3);
        let shift = (intid % 4) * 8;
        let priorities = read32(priority_word) & !(0xff << shift);
        write32(priority_word, priorities | (u32::from(priority) << shift));
        let config = d + GICD_ICFGR + 4 * (intid as usize / 16);
        write32(config, read32(config) | (2 << (2 * (intid % 16))));
        let mpidr = MPIDR_EL1.get();
        let affinity = (mpidr & 0xff_ffff) | (((mpidr >> 32) & 0xff) << 32);
        write64(d + GICD_IROUTER + 8 * intid as usize, affinity);
        write32(d + GICD_ISENABLER + word, bit);
        Ok(())
    }

    /// Group 1, `priority` and enable for INTID 0..31 in the redistributor's SGI frame.
    fn enable_private(&self, intid: u32, priority: u8) {
        let sgi = self.redistributor + GICR_SGI_BASE;
        let bit = 1u32 << intid;
        let priority_word = sgi + GICR_IPRIORITYR + (intid as usize & !3);
        let shift = (intid % 4) * 8;
        write32(sgi + GICR_IGROUPR0, read32(sgi + GICR_IGROUPR0) | bit);
        let priorities = read32(priority_word) & !(0xff << shift);
        write32(priority_word, priorities | (u32::from(priority) << shift));
        write32(sgi + GICR_ISENABLER0, bit);
    }
}

/// ICC_SGI1R_EL1 fields (GICv3 architecture specification, 12.2.22).
const TARGET_LIST_BITS: u64 = 16;
const AFF1_SHIFT: u32 = 16;
const INTID_SHIFT: u32 = 24;
const AFF2_SHIFT: u32 = 32;
const RS_SHIFT: u32 = 44;
const AFF3_SHIFT: u32 = 48;

/// The ICC_SGI1R_EL1 value that sends an SGI to this CPU.
#[derive(Clone, Copy)]
pub struct SgiToSelf(u64);

impl SgiToSelf {
    pub fn new(intid: u32) -> Self {
        let mpidr = MPIDR_EL1.get();
        let affinity = |level: u32| -> u64 {
            let shift = if level == 3 { 32 } else { level * 8 };
            (mpidr >> shift) & 0xff
        };
        let aff0 = affinity(0);
        let value = (1 << (aff0 % TARGET_LIST_BITS))
            | ((aff0 / TARGET_LIST_BITS) << RS_SHIFT)
            | (affinity(1) << AFF1_SHIFT)
            | (u64::from(intid & 0xf) << INTID_SHIFT)
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

/// Walks the redistributor region for the frame whose GICR_TYPER affinity is this CPU's.
fn find_redistributor(base: usize, size: usize) -> Result<usize, GicError> {
    let mpidr = MPIDR_EL1.get();
    let affinity = (mpidr & 0xff_ffff) | (((mpidr >> 32) & 0xff) << 24);
    let mut frame = base;
    while frame + GICR_FRAME <= base + size {
        let typer = read64(frame + GICR_TYPER);
        if typer >> 32 == affinity {
            return Ok(frame);
        }
        if typer & GICR_TYPER_LAST != 0 {
            break;
        }
        frame += GICR_FRAME;
        if typer & GICR_TYPER_VLPIS != 0 {
            frame += GICR_VLPI_FRAMES;
        }
    }
    Err(GicError::NoRedistributor)
}

/// ICC_SRE_EL1.SRE, then priority mask open, binary point 0 (all priority bits group
/// priority, as the port expects), group 1 enabled. 12.2.
fn enable_cpu_interface() {
    // SAFETY: the GICv3 CPU interface registers only affect this CPU's interrupt delivery;
    // interrupts are masked in PSTATE during start-up, so nothing is delivered half-set-up.
    unsafe {
        asm!(
            "mrs {t}, icc_sre_el1",
            "orr {t}, {t}, #1",
            "msr icc_sre_el1, {t}",
            "isb",
            "mov {t}, #0xff",
            "msr icc_pmr_el1, {t}",
            "msr icc_bpr1_el1, xzr",
            "mov {t}, #1",
            "msr icc_igrpen1_el1, {t}",
            "isb",
            t = out(reg) _,
            options(nostack),
        );
    }
}

// Plain `ldr`/`str` with a base register and no writeback: under a hypervisor these GIC
// windows are emulated, and only such accesses carry a syndrome (ESR_EL2.ISV = 1).
// `read_volatile`/`write_volatile` may compile to post-indexed forms that have none.

fn read32(address: usize) -> u32 {
    let value: u32;
    // SAFETY: only called on GIC registers inside the regions `Gic::init`'s caller vouched for.
    unsafe { asm!("ldr {v:w}, [{a}]", a = in(reg) address, v = out(reg) value, options(nostack)) };
    value
}

fn read64(address: usize) -> u64 {
    let value: u64;
    // SAFETY: only called on GIC registers inside the regions `Gic::init`'s caller vouched for.
    unsafe { asm!("ldr {v}, [{a}]", a = in(reg) address, v = out(reg) value, options(nostack)) };
    value
}

fn write32(address: usize, value: u32) {
    // SAFETY: only called on GIC registers inside the regions `Gic::init`'s caller vouched for.
    unsafe { asm!("str {v:w}, [{a}]", a = in(reg) address, v = in(reg) value, options(nostack)) };
}

fn write64(address: usize, value: u64) {
    // SAFETY: only called on GIC registers inside the regions `Gic::init`'s caller vouched for.
    unsafe { asm!("str {v}, [{a}]", a = in(reg) address, v = in(reg) value, options(nostack)) };
}
