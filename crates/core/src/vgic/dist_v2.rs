//! The emulated GICv2 distributor: the GICD_* frame of Arm IHI 0048B chapter 4 ("Distributor
//! register descriptions") on the same interrupt state as the GICv3 distributor (`dist.rs`)
//! and redistributors (`redist.rs`). The differences are all here: SGIs and PPIs are banked
//! in this frame for the accessing vCPU, SPIs go to the CPUs their GICD_ITARGETSR byte
//! names, and SGIs are sent by writing GICD_SGIR.
//!
//! The view is a GIC without Security Extensions: GICD_CTLR bit 0 enables Group 0, bit 1
//! Group 1. An SPI's target byte is kept as the route of the lowest CPU it names (the model
//! delivers an SPI to one vCPU), so a target byte naming several CPUs reads back as that
//! one; a byte naming none parks the SPI. GICD_ITARGETSR0 to 7 read as the accessing CPU.
//! GICD_CPENDSGIR and GICD_SPENDSGIR read as zero and ignore writes (the model keeps no SGI
//! source). Reserved offsets read as zero and ignore writes; a misaligned access, or one of a
//! size the register does not take, is refused. It owns decoding only, never panics on guest
//! input.

use super::regs::{self, Bank, BankReg, BitReg, Width};
use super::sgi::{Affinity, SgiTargets};
use super::{Vgic, FIRST_PPI, PRIVATE_IRQS};
use crate::devices::{AccessFault, AccessSize, MmioDevice};

/// Size of the GICv2 distributor frame.
pub const DISTRIBUTOR_V2_SIZE: u64 = 0x1000;

const CTLR: u64 = 0x000;
const TYPER: u64 = 0x004;
const IIDR: u64 = 0x008;
const IIDR_END: u64 = 0x00c;
const BITS_START: u64 = 0x080;
const IPRIORITYR: u64 = 0x400;
const ITARGETSR: u64 = 0x800;
const ICFGR: u64 = 0xc00;
const ICFGR_END: u64 = 0xd00;
const SGIR: u64 = 0xf00;
const SGIR_END: u64 = 0xf04;
const CPENDSGIR: u64 = 0xf10;
const SPENDSGIR_END: u64 = 0xf30;
const ICPIDR2: u64 = 0xfe8;
const ICPIDR2_END: u64 = 0xfec;

const CTLR_ENABLE_GRP0: u32 = 1 << 0;
const CTLR_ENABLE_GRP1: u32 = 1 << 1;
/// ICPIDR2: ArchRev = 2 (GICv2), JEDEC-assigned ID code.
const PIDR2_VALUE: u32 = 0x2b;
/// GICD_ICFGR0: SGIs are edge-triggered, read-only.
const SGI_CONFIG: u64 = 0xaaaa_aaaa;
/// The route of an SPI whose target byte names no CPU: Aff3 = 0xff names no vCPU.
const NO_VCPU_ROUTE: u64 = 0xff << 32;
/// Most CPUs a GICv2 target list names.
const TARGET_CPUS: usize = 8;

/// One decoded distributor register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DistReg {
    Ctlr,
    Typer,
    Fixed(u32),
    Bank(BankReg),
    /// GICD_ITARGETSR from this INTID.
    Targets(u32),
    SgiConfig,
    Sgir,
    /// Implemented but without function here: reads zero, ignores writes.
    RazWi(Width),
    Reserved,
}

impl DistReg {
    fn decode(offset: u64) -> Option<Self> {
        let index = |base: u64, stride: u64| ((offset - base) / stride) as u32;
        Some(match offset {
            CTLR..TYPER => DistReg::Ctlr,
            TYPER..IIDR => DistReg::Typer,
            IIDR..IIDR_END => DistReg::Fixed(super::dist::GICD_IIDR_VALUE),
            BITS_START..IPRIORITYR => {
                let kind = BitReg::from_block(offset / 0x80)?;
                DistReg::Bank(BankReg::Bits(kind, ((offset % 0x80) / 4 * 32) as u32))
            }
            IPRIORITYR..ITARGETSR => DistReg::Bank(BankReg::Priority(index(IPRIORITYR, 1))),
            ITARGETSR..ICFGR => DistReg::Targets(index(ITARGETSR, 1)),
            ICFGR..ICFGR_END => match index(ICFGR, 4) {
                0 => DistReg::SgiConfig,
                n => DistReg::Bank(BankReg::Config(n * 16)),
            },
            SGIR..SGIR_END => DistReg::Sgir,
            CPENDSGIR..SPENDSGIR_END => DistReg::RazWi(Width::ByteOrWord),
            ICPIDR2..ICPIDR2_END => DistReg::Fixed(PIDR2_VALUE),
            _ if offset < DISTRIBUTOR_V2_SIZE => DistReg::Reserved,
            _ => return None,
        })
    }

    fn width(self) -> Option<Width> {
        match self {
            DistReg::Ctlr
            | DistReg::Typer
            | DistReg::Fixed(_)
            | DistReg::SgiConfig
            | DistReg::Sgir => Some(Width::Word),
            DistReg::Bank(reg) => Some(reg.width()),
            DistReg::Targets(_) => Some(Width::ByteOrWord),
            DistReg::RazWi(width) => Some(width),
            DistReg::Reserved => None,
        }
    }
}

fn decode(offset: u64, size: AccessSize) -> Result<DistReg, AccessFault> {
    let reg = DistReg::decode(offset).ok_or(AccessFault)?;
    regs::check(offset, size, reg.width())?;
    Ok(reg)
}

/// A decoded GICD_SGIR write (IHI 0048B 4.3.15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgirRequest {
    pub intid: u8,
    pub filter: SgirFilter,
}

/// GICD_SGIR.TargetListFilter with its CPU list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SgirFilter {
    /// The CPUs of the list (bit n: CPU interface n).
    List(u8),
    AllButSelf,
    SelfOnly,
    /// Filter 0b11: reserved, the write is ignored.
    Reserved,
}

impl SgirRequest {
    pub fn decode(sgir: u32) -> Self {
        let filter = match (sgir >> 24) & 3 {
            0 => SgirFilter::List((sgir >> 16) as u8),
            1 => SgirFilter::AllButSelf,
            2 => SgirFilter::SelfOnly,
            _ => SgirFilter::Reserved,
        };
        SgirRequest {
            intid: (sgir & 0xf) as u8,
            filter,
        }
    }

    /// The vCPUs (of `count`) the request from vCPU `source` reaches; CPU interface n is
    /// vCPU n.
    pub fn targets(&self, source: usize, count: usize) -> SgiTargets {
        let mut set = SgiTargets::default();
        for vcpu in 0..count.min(TARGET_CPUS) {
            let hit = match self.filter {
                SgirFilter::List(list) => list & (1 << vcpu) != 0,
                SgirFilter::AllButSelf => vcpu != source,
                SgirFilter::SelfOnly => vcpu == source,
                SgirFilter::Reserved => false,
            };
            if hit {
                set.insert(vcpu);
            }
        }
        set
    }
}

/// The GICv2 distributor of one VM as vCPU `vcpu` sees it, borrowed for one access.
pub struct DistributorV2Mmio<'a> {
    vgic: &'a mut Vgic,
    vcpu: usize,
}

impl<'a> DistributorV2Mmio<'a> {
    pub(crate) fn new(vgic: &'a mut Vgic, vcpu: usize) -> Self {
        DistributorV2Mmio { vgic, vcpu }
    }

    /// The bank an access to INTIDs from `first` reaches: the accessing vCPU's SGIs and
    /// PPIs below 32, the SPIs above.
    fn bank(&mut self, first: u32) -> Option<Bank<'_>> {
        if first < PRIVATE_IRQS {
            let v = self.vgic.vcpus.get_mut(self.vcpu)?;
            Some(Bank {
                irqs: &mut v.private,
                first: 0,
            })
        } else {
            Some(Bank {
                irqs: &mut self.vgic.spis,
                first: PRIVATE_IRQS,
            })
        }
    }

    fn ctlr(&self) -> u32 {
        self.vgic.ctlr.bits() & (CTLR_ENABLE_GRP0 | CTLR_ENABLE_GRP1)
    }

    /// ITLinesNumber and CPUNumber; no Security Extensions.
    fn typer(&self) -> u32 {
        let lines = (PRIVATE_IRQS + self.vgic.spi_count()).div_ceil(32) - 1;
        let cpus = (self.vgic.vcpu_count().min(TARGET_CPUS) - 1) as u32;
        lines | (cpus << 5)
    }

    /// The target byte of `intid`: the accessing CPU for SGIs and PPIs, the CPU an SPI is
    /// routed to, 0 for a parked SPI or an INTID the VM lacks.
    fn target(&self, intid: u32) -> u8 {
        if intid < PRIVATE_IRQS {
            return 1 << (self.vcpu % TARGET_CPUS);
        }
        if intid - PRIVATE_IRQS >= self.vgic.spi_count() {
            return 0;
        }
        match self.vgic.spi_target(intid) {
            Some(vcpu) if vcpu < TARGET_CPUS => 1 << vcpu,
            _ => 0,
        }
    }

    fn set_target(&mut self, intid: u32, mask: u8) {
        if intid < PRIVATE_IRQS {
            return;
        }
        let count = self.vgic.vcpu_count();
        let route = (0..count.min(TARGET_CPUS))
            .find(|&v| mask & (1 << v) != 0)
            .map_or(NO_VCPU_ROUTE, |v| Affinity::of_vcpu(v).mpidr());
        self.vgic.change_route(intid, |_| route);
    }
}

impl MmioDevice for DistributorV2Mmio<'_> {
    fn read(&mut self, offset: u64, size: AccessSize) -> Result<u64, AccessFault> {
        Ok(match decode(offset, size)? {
            DistReg::Ctlr => u64::from(self.ctlr()),
            DistReg::Typer => u64::from(self.typer()),
            DistReg::Fixed(value) => u64::from(value),
            DistReg::Bank(reg) => self
                .bank(reg.first())
                .map_or(0, |bank| bank.read(reg, size)),
            DistReg::Targets(first) => (0..size.bytes() as u32).fold(0, |value, i| {
                value | (u64::from(self.target(first + i)) << (8 * i))
            }),
            DistReg::SgiConfig => SGI_CONFIG,
            DistReg::Sgir | DistReg::RazWi(_) | DistReg::Reserved => 0,
        })
    }

    fn write(&mut self, offset: u64, size: AccessSize, value: u64) -> Result<(), AccessFault> {
        match decode(offset, size)? {
            DistReg::Ctlr => {
                self.vgic.ctlr.write(value);
            }
            DistReg::Bank(reg) => {
                let vcpu = self.vcpu;
                if let Some(written) = self
                    .bank(reg.first())
                    .map(|mut b| b.write(reg, size, value))
                {
                    self.vgic.refresh_written(vcpu, written);
                }
            }
            DistReg::Targets(first) => {
                for i in 0..size.bytes() as u32 {
                    self.set_target(first + i, (value >> (8 * i)) as u8);
                }
            }
            DistReg::Sgir => {
                // A request the model refuses (an SGI beyond 15 cannot be encoded) is dropped,
                // as the GIC drops SGIs to CPUs that do not exist.
                let _ = self
                    .vgic
                    .send_sgi_v2(self.vcpu, SgirRequest::decode(value as u32));
            }
            DistReg::Typer
            | DistReg::Fixed(_)
            | DistReg::SgiConfig
            | DistReg::RazWi(_)
            | DistReg::Reserved => {}
        }
        Ok(())
    }
}

impl Vgic {
    /// The GICv2 distributor as vCPU `vcpu` sees it.
    pub fn distributor_v2(&mut self, vcpu: usize) -> DistributorV2Mmio<'_> {
        self.epoch += 1;
        DistributorV2Mmio::new(self, vcpu)
    }

    /// Makes the SGI vCPU `source` requested with a GICD_SGIR write pending on its targets,
    /// and returns them (so the hypervisor can wake them).
    pub fn send_sgi_v2(
        &mut self,
        source: usize,
        request: SgirRequest,
    ) -> Result<SgiTargets, super::VgicError> {
        if source >= self.vcpu_count() {
            return Err(super::VgicError::NoSuchVcpu);
        }
        let sgi = u32::from(request.intid);
        if sgi >= FIRST_PPI {
            return Err(super::VgicError::NoSuchIntid);
        }
        let targets = request.targets(source, self.vcpu_count());
        for vcpu in targets.iter() {
            self.update(vcpu, sgi, |irq| irq.pending_latch = true)?;
        }
        Ok(targets)
    }
}
