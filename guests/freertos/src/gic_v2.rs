//! GICv2 set-up for one CPU at EL1 (GIC architecture specification v2, IHI 0048B), the
//! `gicv2` build's twin of `gic.rs` with the same interface.
//!
//! It owns the distributor enable, the configuration of a private interrupt (priority,
//! enable) and of a shared peripheral interrupt (priority, trigger, target, enable) in the
//! distributor, and the memory-mapped CPU interface's priority mask, binary point and
//! enable. Interrupts stay in Group 0, where a GIC without Security Extensions resets them
//! and where Linux leaves them; Group 0 is signalled as IRQ while GICC_CTLR.FIQEn is clear.
//! Acknowledge and end-of-interrupt belong to the FreeRTOS ARM_AARCH64 port (portASM.S),
//! which was compiled for the addresses in `DISTRIBUTOR` and `CPU_INTERFACE`: `init` refuses
//! a device tree that places the GIC elsewhere. This module never touches acknowledge or
//! end of interrupt.

use crate::intid::{self, NotA};
use core::arch::asm;
use core::fmt;

/// The device-tree compatible strings of a GICv2 this module drives.
pub const COMPATIBLE: &[&str] = &["arm,gic-400", "arm,cortex-a15-gic"];
/// The GIC's name in the banner, and the FreeRTOS port built for it.
pub const NAME: &str = "gicv2";
pub const PORT: &str = "ARM_AARCH64";
/// What the second `reg` region of the GIC node is.
pub const SECOND_FRAME: &str = "cpu interface";
/// The mask of the INTID in an acknowledge value (GICC_IAR bits [9:0]; bits [12:10] are an
/// SGI's source CPU).
pub const INTID_MASK: u32 = 0x3ff;

/// The addresses the port was compiled for (build.rs, from the board description).
const DISTRIBUTOR: &str = env!("PARTITA_GUEST_GICD");
const CPU_INTERFACE: &str = env!("PARTITA_GUEST_GICC");

/// Distributor registers (IHI 0048B 4.3).
const GICD_CTLR: usize = 0x000;
const GICD_ISENABLER: usize = 0x100;
const GICD_IPRIORITYR: usize = 0x400;
const GICD_ITARGETSR: usize = 0x800;
const GICD_ICFGR: usize = 0xc00;
const GICD_SGIR: usize = 0xf00;
/// CPU interface registers (IHI 0048B 4.4).
const GICC_CTLR: usize = 0x00;
const GICC_PMR: usize = 0x04;
const GICC_BPR: usize = 0x08;
/// GICD_CTLR / GICC_CTLR: Group 0 enable.
const ENABLE_GROUP0: u32 = 1;
/// GICD_SGIR TargetListFilter 0b10: to the requesting CPU only.
const SGIR_TO_SELF: u32 = 2 << 24;

/// Why the GIC could not be set up.
#[derive(Clone, Copy, Debug)]
pub enum GicError {
    /// The device tree's GIC is not where the port was compiled to find it.
    ElsewhereThanBuilt { distributor: usize, cpu: usize },
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
            Self::ElsewhereThanBuilt { distributor, cpu } => write!(
                f,
                "the device tree's GIC (distributor {distributor:#x}, cpu interface {cpu:#x}) \
                 is not the one this image was built for (distributor {DISTRIBUTOR}, cpu \
                 interface {CPU_INTERFACE})"
            ),
            Self::Intid(wrong) => wrong.fmt(f),
        }
    }
}

/// This CPU's view of the GIC.
pub struct Gic {
    distributor: usize,
}

impl Gic {
    /// Checks the frames against the port's, enables the distributor and the CPU interface
    /// with every priority unmasked.
    ///
    /// # Safety
    /// `distributor` and `cpu_interface` must be the GICv2 register frames of the platform,
    /// and nothing else may program them.
    pub unsafe fn init(
        distributor: usize,
        cpu_interface: usize,
        _cpu_interface_size: usize,
    ) -> Result<Self, GicError> {
        if distributor != built(DISTRIBUTOR) || cpu_interface != built(CPU_INTERFACE) {
            return Err(GicError::ElsewhereThanBuilt {
                distributor,
                cpu: cpu_interface,
            });
        }
        write32(distributor + GICD_CTLR, ENABLE_GROUP0);
        write32(cpu_interface + GICC_PMR, 0xff);
        write32(cpu_interface + GICC_BPR, 0);
        write32(cpu_interface + GICC_CTLR, ENABLE_GROUP0);
        Ok(Self { distributor })
    }

    /// Puts private interrupt `intid` at `priority` and enables it.
    pub fn enable_ppi(&self, intid: u32, priority: u8) -> Result<(), GicError> {
        let intid = intid::ppi(intid)?;
        self.enable(intid, priority);
        Ok(())
    }

    /// Puts software-generated interrupt `intid` at `priority` and enables it.
    pub fn enable_sgi(&self, intid: u32, priority: u8) -> Result<(), GicError> {
        let intid = intid::sgi(intid)?;
        self.enable(intid, priority);
        Ok(())
    }

    /// Puts shared interrupt `intid` at `priority`, edge-triggered, targeted at this CPU
    /// interface (the one GICD_ITARGETSR0 names), and enables it.
    pub fn enable_edge_spi(&self, intid: u32, priority: u8) -> Result<(), GicError> {
        let intid = intid::spi(intid)?;
        let d = self.distributor;
        let config = d + GICD_ICFGR + 4 * (intid as usize / 16);
        write32(config, read32(config) | (2 << (2 * (intid % 16))));
        let me = read32(d + GICD_ITARGETSR) & 0xff;
        let targets = d + GICD_ITARGETSR + (intid as usize & !3);
        let shift = (intid % 4) * 8;
        write32(
            targets,
            (read32(targets) & !(0xff << shift)) | (me << shift),
        );
        self.enable(intid, priority);
        Ok(())
    }

    /// Priority and enable of `intid` in the distributor (banked for SGIs and PPIs).
    fn enable(&self, intid: u32, priority: u8) {
        let d = self.distributor;
        let priority_word = d + GICD_IPRIORITYR + (intid as usize & !3);
        let shift = (intid % 4) * 8;
        let priorities = read32(priority_word) & !(0xff << shift);
        write32(priority_word, priorities | (u32::from(priority) << shift));
        write32(
            d + GICD_ISENABLER + 4 * (intid as usize / 32),
            1 << (intid % 32),
        );
    }
}

/// The GICD_SGIR write that sends `intid` to this CPU, and where it goes.
#[derive(Clone, Copy)]
pub struct SgiToSelf {
    register: usize,
    value: u32,
}

impl SgiToSelf {
    pub fn new(intid: u32) -> Self {
        Self {
            register: built(DISTRIBUTOR) + GICD_SGIR,
            value: SGIR_TO_SELF | (intid & 0xf),
        }
    }

    /// Raises the SGI; with interrupts unmasked it is taken before this returns.
    pub fn send(self) {
        write32(self.register, self.value);
        aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
    }
}

/// An address build.rs wrote as `0x...` (a malformed one is a build error there).
const fn built(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut value = 0usize;
    let mut i = 2;
    while i < bytes.len() {
        let digit = match bytes[i] {
            b @ b'0'..=b'9' => b - b'0',
            b @ b'a'..=b'f' => b - b'a' + 10,
            _ => 0,
        };
        value = value * 16 + digit as usize;
        i += 1;
    }
    value
}

// Plain `ldr`/`str` with a base register and no writeback: under a hypervisor the
// distributor is emulated, and only such accesses carry a syndrome (ESR_EL2.ISV = 1).

fn read32(address: usize) -> u32 {
    let value: u32;
    // SAFETY: only called on GIC registers inside the frames `Gic::init`'s caller vouched
    // for (or the distributor the port was built for).
    unsafe { asm!("ldr {v:w}, [{a}]", a = in(reg) address, v = out(reg) value, options(nostack)) };
    value
}

fn write32(address: usize, value: u32) {
    // SAFETY: as `read32`.
    unsafe { asm!("str {v:w}, [{a}]", a = in(reg) address, v = in(reg) value, options(nostack)) };
}
