//! The emulated redistributors (IHI 0069 chapter 12, the Redistributor register map and
//! descriptions): per vCPU an RD_base frame (GICR_CTLR, IIDR, TYPER, WAKER, the LPI registers)
//! followed by an SGI_base frame (the banked SGI and PPI registers), 64 KiB each, in vCPU order.
//! There are no LPIs, so the LPI registers are RAZ/WI. GICR_WAKER keeps ProcessorSleep and mirrors
//! it in ChildrenAsleep, which is the handshake Linux's `gic_enable_redist` polls; delivery does
//! not depend on it. Reserved offsets and frames past the last vCPU read as zero and ignore writes;
//! a misaligned access or one of a size the register does not take is refused (chapter 12, "GIC
//! memory-mapped register access"). This frame owns only decoding: the interrupt state belongs to
//! `Vgic`.

use super::dist::{GICD_IIDR_VALUE, PIDR2_VALUE};
use super::regs::{self, Bank, BankReg, BitReg, Width};
use super::{Affinity, Vgic};
use crate::devices::{AccessFault, AccessSize, MmioDevice};

/// Bytes of redistributor space per vCPU: RD_base and SGI_base, 64 KiB each.
pub const REDISTRIBUTOR_STRIDE: u64 = 0x2_0000;
const FRAME_SIZE: u64 = 0x1_0000;

const WAKER_PROCESSOR_SLEEP: u32 = 1 << 1;
const WAKER_CHILDREN_ASLEEP: u32 = 1 << 2;
const TYPER_LAST: u64 = 1 << 4;
/// GICR_ICFGR0: every SGI is edge-triggered (two bits per SGI, Int_config = 0b10).
const SGI_CONFIG: u64 = 0xaaaa_aaaa;

/// One decoded redistributor register of one vCPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RedistReg {
    Typer,
    Waker,
    Fixed(u32),
    Bank(BankReg),
    SgiConfig,
    RazWi(Width),
    Reserved,
}

impl RedistReg {
    fn decode_rd(offset: u64) -> Self {
        match offset {
            0x0000..0x0004 | 0x0010..0x0014 | 0x00c0..0x00c4 => RedistReg::RazWi(Width::Word),
            0x0004..0x0008 => RedistReg::Fixed(GICD_IIDR_VALUE),
            0x0008..0x0010 => RedistReg::Typer,
            0x0014..0x0018 => RedistReg::Waker,
            0x0040..0x0050 | 0x0070..0x0080 | 0x00a0..0x00a8 | 0x00b0..0x00b8 => {
                RedistReg::RazWi(Width::Double)
            }
            0xffe8..0xffec => RedistReg::Fixed(PIDR2_VALUE),
            _ => RedistReg::Reserved,
        }
    }

    fn decode_sgi(offset: u64) -> Self {
        match offset {
            0x0080..0x0400 if offset % 0x80 < 4 => match BitReg::from_block(offset / 0x80) {
                Some(kind) => RedistReg::Bank(BankReg::Bits(kind, 0)),
                None => RedistReg::Reserved,
            },
            0x0400..0x0420 => RedistReg::Bank(BankReg::Priority((offset - 0x400) as u32)),
            0x0c00..0x0c04 => RedistReg::SgiConfig,
            0x0c04..0x0c08 => RedistReg::Bank(BankReg::Config(16)),
            0x0d00..0x0d04 | 0x0e00..0x0e04 => RedistReg::RazWi(Width::Word),
            _ => RedistReg::Reserved,
        }
    }

    fn width(self) -> Option<Width> {
        match self {
            RedistReg::Typer => Some(Width::Double),
            RedistReg::Waker | RedistReg::Fixed(_) | RedistReg::SgiConfig => Some(Width::Word),
            RedistReg::Bank(reg) => Some(reg.width()),
            RedistReg::RazWi(width) => Some(width),
            RedistReg::Reserved => None,
        }
    }
}

/// The redistributors of one VM, borrowed for one access.
pub struct RedistributorMmio<'a> {
    vgic: &'a mut Vgic,
}

impl<'a> RedistributorMmio<'a> {
    pub(crate) fn new(vgic: &'a mut Vgic) -> Self {
        RedistributorMmio { vgic }
    }

    /// The vCPU, the register and the offset inside the frame an access reaches.
    fn decode(&self, offset: u64, size: AccessSize) -> Result<(usize, RedistReg), AccessFault> {
        let vcpu = usize::try_from(offset / REDISTRIBUTOR_STRIDE).unwrap_or(usize::MAX);
        let inner = offset % REDISTRIBUTOR_STRIDE;
        let reg = if vcpu >= self.vgic.vcpus.len() {
            RedistReg::Reserved
        } else if inner < FRAME_SIZE {
            RedistReg::decode_rd(inner)
        } else {
            RedistReg::decode_sgi(inner - FRAME_SIZE)
        };
        regs::check(offset, size, reg.width())?;
        Ok((vcpu, reg))
    }

    fn typer(&self, vcpu: usize) -> u64 {
        let affinity = u64::from(Affinity::of_vcpu(vcpu).packed()) << 32;
        let last = if vcpu + 1 == self.vgic.vcpus.len() {
            TYPER_LAST
        } else {
            0
        };
        affinity | ((vcpu as u64 & 0xffff) << 8) | last
    }

    fn private_bank(&mut self, vcpu: usize) -> Option<Bank<'_>> {
        let v = self.vgic.vcpus.get_mut(vcpu)?;
        Some(Bank {
            irqs: &mut v.private,
            first: 0,
        })
    }

    fn waker(&self, vcpu: usize) -> u32 {
        match self.vgic.vcpus.get(vcpu) {
            Some(v) if v.processor_sleep => WAKER_PROCESSOR_SLEEP | WAKER_CHILDREN_ASLEEP,
            _ => 0,
        }
    }
}

impl MmioDevice for RedistributorMmio<'_> {
    fn read(&mut self, offset: u64, size: AccessSize) -> Result<u64, AccessFault> {
        let (vcpu, reg) = self.decode(offset, size)?;
        Ok(match reg {
            RedistReg::Typer => regs::read_part(self.typer(vcpu), offset, size),
            RedistReg::Waker => u64::from(self.waker(vcpu)),
            RedistReg::Fixed(value) => u64::from(value),
            RedistReg::Bank(reg) => self
                .private_bank(vcpu)
                .map_or(0, |bank| bank.read(reg, size)),
            RedistReg::SgiConfig => SGI_CONFIG,
            RedistReg::RazWi(_) | RedistReg::Reserved => 0,
        })
    }

    fn write(&mut self, offset: u64, size: AccessSize, value: u64) -> Result<(), AccessFault> {
        let (vcpu, reg) = self.decode(offset, size)?;
        match reg {
            RedistReg::Waker => {
                if let Some(v) = self.vgic.vcpus.get_mut(vcpu) {
                    v.processor_sleep = value & u64::from(WAKER_PROCESSOR_SLEEP) != 0;
                }
            }
            RedistReg::Bank(reg) => {
                if let Some(written) = self
                    .private_bank(vcpu)
                    .map(|mut b| b.write(reg, size, value))
                {
                    self.vgic.refresh_written(vcpu, written);
                }
            }
            RedistReg::Typer
            | RedistReg::Fixed(_)
            | RedistReg::SgiConfig
            | RedistReg::RazWi(_)
            | RedistReg::Reserved => {}
        }
        Ok(())
    }
}
