//! The emulated distributor: the GICD_* frame described in IHI 0069 chapter 12 ("Programmers'
//! model": the Distributor register map and register descriptions). SGIs and PPIs live in the
//! redistributors, so with affinity routing (always on here) their distributor bits are RAZ/WI
//! (GICD_CTLR.ARE semantics). Reserved and unimplemented offsets read as zero and ignore writes; a
//! misaligned access or one of a size the register does not take is refused (chapter 12, "GIC
//! memory-mapped register access"). This frame owns only decoding: the interrupt state belongs to
//! `Vgic`.

use super::regs::{self, Bank, BankReg, BitReg, Width};
use super::sgi::IROUTER_MASK;
use super::{Vgic, PRIVATE_IRQS};
use crate::devices::{AccessFault, AccessSize, MmioDevice};

/// Size of the distributor frame.
pub const DISTRIBUTOR_SIZE: u64 = 0x1_0000;

const CTLR: u64 = 0x0000;
const TYPER: u64 = 0x0004;
const IIDR: u64 = 0x0008;
const TYPER2: u64 = 0x000c;
const STATUSR_END: u64 = 0x0014;
const BITS_START: u64 = 0x0080;
const IPRIORITYR: u64 = 0x0400;
const ITARGETSR: u64 = 0x0800;
const ICFGR: u64 = 0x0c00;
const IGRPMODR: u64 = 0x0d00;
const IGRPMODR_END: u64 = 0x0d80;
const NSACR: u64 = 0x0e00;
const SGIR_END: u64 = 0x0f04;
const CPENDSGIR: u64 = 0x0f10;
const SPENDSGIR_END: u64 = 0x0f30;
const IROUTER: u64 = 0x6000;
const IROUTER_END: u64 = 0x8000;
const PIDR2: u64 = 0xffe8;
const PIDR2_END: u64 = 0xffec;

const CTLR_ENABLE_GRP0: u32 = 1 << 0;
const CTLR_ENABLE_GRP1: u32 = 1 << 1;
/// ARE and DS are RAO/WI: affinity routing, single Security state.
const CTLR_ARE: u32 = 1 << 4;
const CTLR_DS: u32 = 1 << 6;
/// GICD_TYPER.IDbits = 9: INTIDs have 10 bits.
const TYPER_IDBITS: u32 = 9 << 19;
/// GICD_IIDR: Arm's JEP106 code (0x43b) with ProductID 0x50 ('P'artita), revision 0.
pub(crate) const GICD_IIDR_VALUE: u32 = 0x5000_043b;
/// GICD_PIDR2 / GICR_PIDR2: ArchRev = 3 (GICv3), JEDEC-assigned ID code.
pub(crate) const PIDR2_VALUE: u32 = 0x3b;

/// One decoded distributor register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DistReg {
    Ctlr,
    Typer,
    /// A read-only identification value.
    Fixed(u32),
    Bank(BankReg),
    Router(u32),
    /// Implemented but without function here: reads zero, ignores writes.
    RazWi(Width),
    /// Reserved: reads zero, ignores writes, any aligned size.
    Reserved,
}

impl DistReg {
    fn decode(offset: u64) -> Option<Self> {
        let index = |base: u64, stride: u64| ((offset - base) / stride) as u32;
        Some(match offset {
            CTLR..TYPER => DistReg::Ctlr,
            TYPER..IIDR => DistReg::Typer,
            IIDR..TYPER2 => DistReg::Fixed(GICD_IIDR_VALUE),
            TYPER2..STATUSR_END => DistReg::Fixed(0),
            BITS_START..IPRIORITYR => {
                let kind = BitReg::from_block(offset / 0x80)?;
                DistReg::Bank(BankReg::Bits(kind, ((offset % 0x80) / 4 * 32) as u32))
            }
            IPRIORITYR..ITARGETSR => DistReg::Bank(BankReg::Priority(index(IPRIORITYR, 1))),
            ITARGETSR..ICFGR => DistReg::RazWi(Width::ByteOrWord),
            ICFGR..IGRPMODR => DistReg::Bank(BankReg::Config(index(ICFGR, 4) * 16)),
            IGRPMODR..IGRPMODR_END | NSACR..SGIR_END => DistReg::RazWi(Width::Word),
            CPENDSGIR..SPENDSGIR_END => DistReg::RazWi(Width::ByteOrWord),
            IROUTER..IROUTER_END => DistReg::Router(index(IROUTER, 8)),
            PIDR2..PIDR2_END => DistReg::Fixed(PIDR2_VALUE),
            _ if offset < DISTRIBUTOR_SIZE => DistReg::Reserved,
            _ => return None,
        })
    }

    fn width(self) -> Option<Width> {
        match self {
            DistReg::Ctlr | DistReg::Typer | DistReg::Fixed(_) => Some(Width::Word),
            DistReg::Bank(reg) => Some(reg.width()),
            DistReg::Router(_) => Some(Width::Double),
            DistReg::RazWi(width) => Some(width),
            DistReg::Reserved => None,
        }
    }
}

/// Decodes and size-checks an access; an offset outside the frame is refused.
fn decode(offset: u64, size: AccessSize) -> Result<DistReg, AccessFault> {
    let reg = DistReg::decode(offset).ok_or(AccessFault)?;
    regs::check(offset, size, reg.width())?;
    Ok(reg)
}

/// The distributor of one VM, borrowed for one access.
pub struct DistributorMmio<'a> {
    vgic: &'a mut Vgic,
}

impl<'a> DistributorMmio<'a> {
    pub(crate) fn new(vgic: &'a mut Vgic) -> Self {
        DistributorMmio { vgic }
    }

    fn spi_bank(&mut self) -> Bank<'_> {
        Bank {
            irqs: &mut self.vgic.spis,
            first: PRIVATE_IRQS,
        }
    }

    fn ctlr(&self) -> u32 {
        (self.vgic.ctlr.bits() & (CTLR_ENABLE_GRP0 | CTLR_ENABLE_GRP1)) | CTLR_ARE | CTLR_DS
    }

    fn typer(&self) -> u32 {
        let it_lines = self.vgic.spi_count().div_ceil(32);
        TYPER_IDBITS | it_lines
    }

    fn route(&self, intid: u32) -> Option<u64> {
        let index = intid.checked_sub(PRIVATE_IRQS)? as usize;
        self.vgic.routes.get(index).copied()
    }
}

impl MmioDevice for DistributorMmio<'_> {
    fn read(&mut self, offset: u64, size: AccessSize) -> Result<u64, AccessFault> {
        Ok(match decode(offset, size)? {
            DistReg::Ctlr => u64::from(self.ctlr()),
            DistReg::Typer => u64::from(self.typer()),
            DistReg::Fixed(value) => u64::from(value),
            DistReg::Bank(reg) => self.spi_bank().read(reg, size),
            DistReg::Router(intid) => regs::read_part(self.route(intid).unwrap_or(0), offset, size),
            DistReg::RazWi(_) | DistReg::Reserved => 0,
        })
    }

    fn write(&mut self, offset: u64, size: AccessSize, value: u64) -> Result<(), AccessFault> {
        match decode(offset, size)? {
            DistReg::Ctlr => {
                self.vgic.ctlr.write(value);
            }
            DistReg::Bank(reg) => {
                let written = self.spi_bank().write(reg, size, value);
                self.vgic.refresh_written(0, written);
            }
            DistReg::Router(intid) => self.vgic.change_route(intid, |route| {
                regs::write_part(route, offset, size, value) & IROUTER_MASK
            }),
            DistReg::Typer | DistReg::Fixed(_) | DistReg::RazWi(_) | DistReg::Reserved => {}
        }
        Ok(())
    }
}
