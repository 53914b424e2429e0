//! The VM's interrupt controller as its device tree describes it, and the few things the
//! checks and probes do with it on either kind:
//! - a GICv3 (`arm,gic-v3`, QEMU `virt`): distributor, this vCPU's redistributor (its SGI
//!   frame 64 KiB above), and the ICC_* system registers, which under Partita are the
//!   virtual ICV_* ones; interrupts in Group 1;
//! - a GICv2 (`arm,gic-400`, the ZCU102): distributor, with SGIs and PPIs banked in it, and
//!   the memory-mapped CPU interface (under Partita, the board's GICV mapped at the GICC
//!   address); interrupts stay in Group 0, where a GIC without Security Extensions resets
//!   them, and SGIs are sent with GICD_SGIR.
//!
//! The probe keeps PSTATE.I masked: interrupts are acknowledged by hand, never taken.

use core::arch::asm;

use crate::mmio::{Load, Store};

/// The "no pending interrupt" INTID of an acknowledge.
pub const SPURIOUS: u64 = 1023;

/// Distributor registers both versions share (IHI 0069 12.9, IHI 0048B 4.3).
pub const GICD_CTLR: u64 = 0x0000;
pub const GICD_TYPER: u64 = 0x0004;
pub const GICD_IGROUPR: u64 = 0x0080;
pub const GICD_ISENABLER: u64 = 0x0100;
pub const GICD_ICENABLER: u64 = 0x0180;
pub const GICD_ISPENDR: u64 = 0x0200;
pub const GICD_ICPENDR: u64 = 0x0280;
/// GICv3 only: GICD_IROUTER<n> at 8 * n.
pub const GICD_IROUTER: u64 = 0x6000;
/// GICv2 only: GICD_ITARGETSR (a byte per INTID), GICD_ICFGR, GICD_SGIR, GICD_CPENDSGIR,
/// GICD_SPENDSGIR, ICPIDR2.
pub const GICD_ITARGETSR: u64 = 0x0800;
pub const GICD_ICFGR: u64 = 0x0c00;
pub const GICD_SGIR: u64 = 0x0f00;
pub const GICD_CPENDSGIR: u64 = 0x0f10;
pub const GICD_SPENDSGIR: u64 = 0x0f20;
pub const GICD_ICPIDR2: u64 = 0x0fe8;
/// GICv2 CPU interface registers (IHI 0048B 4.4): GICC_CTLR, GICC_PMR, GICC_BPR, GICC_IAR,
/// GICC_EOIR, GICC_HPPIR, GICC_AIAR, GICC_AHPPIR, GICC_DIR.
pub const GICC_CTLR: u64 = 0x0000;
pub const GICC_PMR: u64 = 0x0004;
pub const GICC_BPR: u64 = 0x0008;
pub const GICC_IAR: u64 = 0x000c;
pub const GICC_EOIR: u64 = 0x0010;
pub const GICC_HPPIR: u64 = 0x0018;
pub const GICC_AIAR: u64 = 0x0020;
pub const GICC_AHPPIR: u64 = 0x0028;
pub const GICC_DIR: u64 = 0x1000;
/// GICv3 redistributor registers: GICR_WAKER in the RD frame; GICR_IGROUPR0,
/// GICR_ISENABLER0, GICR_ICENABLER0, GICR_ISPENDR0, GICR_ICPENDR0 in the SGI frame.
const GICR_WAKER: u64 = 0x0014;
const GICR_SGI_FRAME: u64 = 0x1_0000;
/// GICD_CTLR: Group 0 enable (GICv2); EnableGrp1 and ARE (GICv3).
const GICD_V2_ENABLE_GRP0: u64 = 1;
const GICD_V3_ENABLE_GRP1_ARE: u64 = (1 << 1) | (1 << 4);
/// GICC_CTLR: Group 0 enable.
const GICC_ENABLE_GRP0: u64 = 1;
/// GICD_SGIR TargetListFilter 0b10: the requesting CPU only.
pub const SGIR_TO_SELF: u64 = 2 << 24;
/// GICC_IAR: the INTID (bits 9:0); bits 12:10 are an SGI's source CPU.
const IAR_INTID: u64 = 0x3ff;

/// Where the fallbacks put the GIC when the device tree does not say: QEMU `virt`'s.
pub const FALLBACK: Gic = Gic::V3 {
    gicd: 0x0800_0000,
    gicr: 0x080a_0000,
};

/// The VM's GIC: its version and the frames the device tree names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gic {
    V3 { gicd: u64, gicr: u64 },
    V2 { gicd: u64, gicc: u64 },
}

impl Gic {
    /// The device-tree compatibles of each version, as Partita generates them.
    pub const V3_COMPATIBLE: &'static str = "arm,gic-v3";
    pub const V2_COMPATIBLE: &'static [&'static str] = &["arm,gic-400", "arm,cortex-a15-gic"];

    pub fn gicd(self) -> u64 {
        match self {
            Gic::V3 { gicd, .. } | Gic::V2 { gicd, .. } => gicd,
        }
    }

    /// The register holding INTIDs 0..32's bit `offset` names (GICD_ISENABLER and so on):
    /// the redistributor's SGI frame on a GICv3, the banked word 0 of the distributor on a
    /// GICv2.
    pub fn private(self, offset: u64) -> u64 {
        match self {
            Gic::V3 { gicr, .. } => gicr + GICR_SGI_FRAME + offset,
            Gic::V2 { gicd, .. } => gicd + offset,
        }
    }

    /// Turns the distributor and this vCPU's CPU interface on with every priority unmasked
    /// and enables the private interrupts in `enable` (a GICD/GICR_ISENABLER0 mask).
    pub fn enable(self, enable: u64) {
        match self {
            Gic::V3 { gicd, gicr } => {
                Store::Word.run(gicd + GICD_CTLR, GICD_V3_ENABLE_GRP1_ARE);
                Store::Word.run(gicr + GICR_WAKER, 0);
                Store::Word.run(self.private(GICD_IGROUPR), u64::from(u32::MAX));
                // SAFETY: ICC_PMR_EL1 and ICC_IGRPEN1_EL1 only configure this CPU's
                // (virtual) interface.
                unsafe {
                    asm!(
                        "msr S3_0_C4_C6_0, {pmr}",
                        "msr S3_0_C12_C12_7, {one}",
                        "isb",
                        pmr = in(reg) 0xffu64,
                        one = in(reg) 1u64,
                        options(nostack)
                    )
                };
            }
            Gic::V2 { gicd, gicc } => {
                Store::Word.run(gicd + GICD_CTLR, GICD_V2_ENABLE_GRP0);
                Store::Word.run(gicc + GICC_PMR, 0xff);
                Store::Word.run(gicc + GICC_CTLR, GICC_ENABLE_GRP0);
            }
        }
        Store::Word.run(self.private(GICD_ISENABLER), enable);
    }

    /// Disables the private interrupts in `mask`.
    pub fn disable(self, mask: u64) {
        Store::Word.run(self.private(GICD_ICENABLER), mask);
    }

    /// The pending bits of INTIDs 0..32.
    pub fn pending_private(self) -> u64 {
        Load::Word.run(self.private(GICD_ISPENDR))
    }

    /// Enables SPI `intid`, routed to this vCPU (Group 1 with affinity 0.0.0.0 on a GICv3;
    /// Group 0 with target CPU 0 on a GICv2).
    pub fn enable_spi(self, intid: u32) {
        let bank = u64::from(intid / 32) * 4;
        let bit = 1u64 << (intid % 32);
        match self {
            Gic::V3 { gicd, .. } => {
                Store::Word.run(gicd + GICD_IGROUPR + bank, u64::from(u32::MAX));
                Store::Double.run(gicd + GICD_IROUTER + 8 * u64::from(intid), 0);
            }
            Gic::V2 { gicd, .. } => {
                Store::Byte.run(gicd + GICD_ITARGETSR + u64::from(intid), 1);
            }
        }
        Store::Word.run(self.gicd() + GICD_ISENABLER + bank, bit);
    }

    /// Acknowledges the highest-priority pending interrupt and, unless there was none, ends
    /// it; its INTID or `SPURIOUS`.
    pub fn acknowledge(self) -> u64 {
        match self {
            Gic::V3 { .. } => {
                let intid: u64;
                // SAFETY: acknowledging touches only the (virtual) CPU interface.
                unsafe { asm!("mrs {}, S3_0_C12_C12_0", out(reg) intid, options(nostack)) };
                let intid = intid & 0xff_ffff;
                if intid < 1020 {
                    // SAFETY: ends the interrupt just acknowledged.
                    unsafe {
                        asm!("msr S3_0_C12_C12_1, {}", "isb", in(reg) intid, options(nostack))
                    };
                }
                intid
            }
            Gic::V2 { gicc, .. } => {
                let iar = Load::Word.run(gicc + GICC_IAR);
                let intid = iar & IAR_INTID;
                if intid < 1020 {
                    Store::Word.run(gicc + GICC_EOIR, iar);
                }
                intid
            }
        }
    }

    /// The highest-priority pending interrupt's INTID, without acknowledging it.
    pub fn highest_pending(self) -> u64 {
        match self {
            Gic::V3 { .. } => {
                let intid: u64;
                // SAFETY: reads the highest pending interrupt of the virtual CPU interface.
                unsafe { asm!("mrs {}, S3_0_C12_C12_2", out(reg) intid, options(nostack)) };
                intid & 0xff_ffff
            }
            Gic::V2 { gicc, .. } => Load::Word.run(gicc + GICC_HPPIR) & IAR_INTID,
        }
    }

    /// Sends SGI `sgi` to this vCPU (ICC_SGI1R_EL1 to affinity 0.0.0, CPU 0; GICD_SGIR to
    /// itself).
    pub fn sgi_to_self(self, sgi: u64) {
        match self {
            Gic::V3 { .. } => {
                // SAFETY: an SGI request only makes an interrupt pending; Partita traps and
                // emulates it.
                unsafe {
                    asm!("msr S3_0_C12_C11_5, {}", "isb", in(reg) (sgi << 24) | 1, options(nostack))
                };
            }
            Gic::V2 { gicd, .. } => Store::Word.run(gicd + GICD_SGIR, SGIR_TO_SELF | sgi),
        }
    }
}
