//! Partita's virtual GIC: the interrupt state of one VM and its emulated GICv3 distributor and
//! redistributors, or GICv2 distributor (`dist_v2`, with the GICv2 list-register encoding in
//! `lr_v2`), and list-register management (Arm IHI 0069 "GIC architecture specification, GICv3
//! and GICv4": chapter 2 "Distribution and routing", chapter 4 "Physical interrupt handling",
//! chapter 6 "Virtual interrupt handling", chapter 12 register descriptions). No crate emulates a
//! GIC, so this is written by hand.
//!
//! The model presents a GIC with a single Security state (GICD_CTLR.DS = 1), affinity routing
//! always enabled (ARE RAO/WI), INTIDs below 1024, no LPIs, no ITS and no extended ranges. The
//! model is authoritative between `Vgic::sync` (after a vCPU exits) and `Vgic::flush` (before it
//! enters): every change made by MMIO emulation or injection happens in that window. It owns plain
//! data only: it never touches the GIC hardware, never runs `unsafe` code and never panics on guest
//! input.
//!
//! The hypervisor drives it per vCPU: after every exit it reads ICH_LR<n>_EL2 and calls
//! `Vgic::sync`; it then emulates (GICD/GICR accesses through `Vgic::distributor` and
//! `Vgic::redistributors`, trapped ICC_SGI1R_EL1 writes through `Vgic::send_sgi`, device lines
//! through `Vgic::set_level`, physical interrupts through `Vgic::inject`); before every entry it
//! calls `Vgic::flush`, writes every value of `LrFlush::values` to ICH_LR<n>_EL2 and ORs
//! `LrFlush::hcr` into ICH_HCR_EL2 (or, without copies, `Vgic::flush_in_place` on its own array
//! of list-register values). A maintenance interrupt only means "exit, so that sync and flush
//! run". Three short cuts skip that round trip when it would change nothing: `Vgic::inject_loaded`
//! (one interrupt into a free list register of a loaded vCPU; in the usual case, nothing
//! else pending, active or live, without a scan), `Vgic::settle_loaded` (a loaded vCPU with
//! nothing left waits without a fold or a choice) and `Vgic::unchanged_since_choice` (list
//! registers loaded back as they were).
//!
//! Every change to an interrupt's state goes through `Vgic::update` (or a bank write followed by
//! `Vgic::refresh`), which keeps each vCPU's pending and active sets equal to the per-interrupt
//! states; `flush`, `sync` and `has_deliverable` read those sets, never every INTID.

mod cpuif;
mod dist;
mod dist_v2;
mod intid_set;
mod lr;
mod lr_v2;
mod redist;
mod regs;
mod sgi;
mod state;

#[cfg(test)]
mod tests;

use alloc::vec::Vec;

use regs::Written;

pub use cpuif::LrFlush;
pub use dist::{DistributorMmio, DISTRIBUTOR_SIZE};
pub use dist_v2::{DistributorV2Mmio, SgirFilter, SgirRequest, DISTRIBUTOR_V2_SIZE};
pub use intid_set::IntidSet;
pub use lr::{ListRegister, LrLink, LrState, ICH_HCR_NPIE, ICH_HCR_UIE, MAX_LIST_REGISTERS};
pub use lr_v2::{from_v2, to_v2};
pub use redist::{RedistributorMmio, REDISTRIBUTOR_STRIDE};
pub use sgi::{Affinity, SelfSgi, SgiRequest, SgiTargetSpec, SgiTargets};
pub use state::{IrqState, Trigger};

/// SGIs and PPIs of one vCPU: INTIDs 0 to 31.
pub const PRIVATE_IRQS: u32 = 32;
/// First INTID of the PPIs.
pub const FIRST_PPI: u32 = 16;
/// INTIDs 1020 to 1023 are special (IHI 0069 chapter 2, INTID ranges), so at most 988 SPIs.
pub const MAX_SPIS: u32 = 1020 - PRIVATE_IRQS;
/// Most vCPUs of one VM: `SgiTargets` is a 64-bit set.
pub const MAX_VCPUS: usize = 64;

/// A request the model cannot satisfy (a hypervisor mistake, never guest input).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VgicError {
    /// `Vgic::new` with no vCPU or more than `MAX_VCPUS`.
    VcpuCount,
    /// `Vgic::new` with more than `MAX_SPIS` SPIs.
    SpiCount,
    /// A vCPU index out of range.
    NoSuchVcpu,
    /// An INTID this VM does not implement.
    NoSuchIntid,
    /// `Vgic::set_hw` for an SGI, or with a physical INTID that is not a PPI or SPI.
    HwMapping,
}

/// GICD_CTLR's group enables (single Security state view, GICD_CTLR with DS = 1): bit 0
/// EnableGrp0, bit 1 EnableGrp1, where GICD_CTLR has them, so the injection's check is a
/// shift, not a choice between two fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct DistControl {
    enables: u8,
}

impl DistControl {
    /// GICD_CTLR's EnableGrp0 and EnableGrp1 bits.
    fn bits(&self) -> u32 {
        u32::from(self.enables)
    }

    /// Takes EnableGrp0 and EnableGrp1 from a GICD_CTLR value.
    fn write(&mut self, ctlr: u64) {
        self.enables = (ctlr & 0b11) as u8;
    }

    fn group_enabled(&self, group1: bool) -> bool {
        (self.enables >> u8::from(group1)) & 1 != 0
    }
}

/// The live contents of one list register since the last flush.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LiveEntry {
    intid: u32,
    /// Whether the list register carries the pending state (otherwise the model keeps it).
    carries_pending: bool,
}

/// The banked interrupts and redistributor state of one vCPU.
#[derive(Clone, Debug)]
struct VcpuIrqs {
    private: [IrqState; PRIVATE_IRQS as usize],
    /// GICR_WAKER.ProcessorSleep; resets to 1.
    processor_sleep: bool,
    live: [Option<LiveEntry>; MAX_LIST_REGISTERS],
    /// How many of `live` the last flush filled (the rest are `None`).
    live_count: usize,
    /// The interrupts this vCPU owns (its SGIs and PPIs, the SPIs routed to it) that are
    /// pending, and those that are active: kept equal to their `IrqState`s by
    /// `Vgic::refresh` after every change, so list registers are chosen from these alone.
    pending: IntidSet,
    active: IntidSet,
    /// `Vgic::epoch` when the list registers were last chosen (`flush_in_place`) or given
    /// an interrupt (`inject_loaded`).
    chosen_at: u64,
    /// The last short injection that left its SGI or PPI alone in list register 0
    /// (`inject_alone`): the interrupt, the list register's value, and `Vgic::epoch` right
    /// after it. While the epoch has not moved, the same injection again, into a free list
    /// register 0, is that value and nothing else (`inject_again`).
    again: Again,
}

/// `VcpuIrqs::again`.
#[derive(Clone, Copy, Debug)]
struct Again {
    intid: u32,
    value: u64,
    epoch: u64,
}

impl Again {
    /// No injection to repeat: an epoch the model never reaches.
    const NONE: Again = Again {
        intid: u32::MAX,
        value: 0,
        epoch: u64::MAX,
    };
}

impl VcpuIrqs {
    fn new() -> Self {
        let mut private = [IrqState::new(Trigger::Level); PRIVATE_IRQS as usize];
        for sgi in &mut private[..FIRST_PPI as usize] {
            sgi.trigger = Trigger::Edge;
        }
        VcpuIrqs {
            private,
            processor_sleep: true,
            live: [None; MAX_LIST_REGISTERS],
            live_count: 0,
            pending: IntidSet::default(),
            active: IntidSet::default(),
            chosen_at: u64::MAX,
            again: Again::NONE,
        }
    }

    /// The model changed `intid` while a list register of this vCPU still presents it (a
    /// change made from another vCPU, whose CPU cannot read that list register): the model's
    /// pending state is the truth from now on, so the next `sync` folds only the active
    /// state back and never undoes the change. A vCPU's own changes come after its `sync`,
    /// when nothing is live, and cost one comparison.
    fn release_live(&mut self, intid: u32) {
        for entry in self.live[..self.live_count].iter_mut().flatten() {
            if entry.intid == intid {
                entry.carries_pending = false;
            }
        }
    }
}

/// The virtual GICv3 of one VM.
#[derive(Clone, Debug)]
pub struct Vgic {
    ctlr: DistControl,
    spis: Vec<IrqState>,
    /// GICD_IROUTER<n> per SPI, RES0 bits cleared.
    routes: Vec<u64>,
    vcpus: Vec<VcpuIrqs>,
    /// Bit n: vCPU n's interrupts changed since `take_touched` (the hypervisor kicks a vCPU
    /// on another CPU so that it looks again).
    touched: u64,
    /// Counts the changes that may touch any interrupt's state or configuration: every
    /// `update` and `refresh`, and every distributor or redistributor access (read or
    /// write, counted when the MMIO handle is made).
    epoch: u64,
}

impl Vgic {
    /// A reset GIC for `vcpus` vCPUs and `spis` SPIs (INTIDs 32 to 32 + spis - 1).
    pub fn new(vcpus: usize, spis: u32) -> Result<Self, VgicError> {
        if vcpus == 0 || vcpus > MAX_VCPUS {
            return Err(VgicError::VcpuCount);
        }
        if spis > MAX_SPIS {
            return Err(VgicError::SpiCount);
        }
        Ok(Vgic {
            ctlr: DistControl::default(),
            spis: alloc::vec![IrqState::new(Trigger::Level); spis as usize],
            routes: alloc::vec![0; spis as usize],
            vcpus: (0..vcpus).map(|_| VcpuIrqs::new()).collect(),
            touched: 0,
            epoch: 0,
        })
    }

    pub fn vcpu_count(&self) -> usize {
        self.vcpus.len()
    }

    pub fn spi_count(&self) -> u32 {
        self.spis.len() as u32
    }

    /// The emulated distributor (GICD_*, one 64 KiB frame) as an MMIO device.
    pub fn distributor(&mut self) -> DistributorMmio<'_> {
        self.epoch += 1;
        DistributorMmio::new(self)
    }

    /// The emulated redistributors (GICR_*, `REDISTRIBUTOR_STRIDE` bytes per vCPU, in vCPU
    /// order) as one MMIO device.
    pub fn redistributors(&mut self) -> RedistributorMmio<'_> {
        self.epoch += 1;
        RedistributorMmio::new(self)
    }

    /// A copy of the state of `intid` as `vcpu` sees it (SPIs are the same for every vCPU).
    pub fn irq(&self, vcpu: usize, intid: u32) -> Result<IrqState, VgicError> {
        self.state(vcpu, intid).copied()
    }

    /// The state of `intid` as `vcpu` sees it, borrowed (the hot paths' `irq`).
    fn state(&self, vcpu: usize, intid: u32) -> Result<&IrqState, VgicError> {
        let v = self.vcpus.get(vcpu).ok_or(VgicError::NoSuchVcpu)?;
        let irq = if intid < PRIVATE_IRQS {
            v.private.get(intid as usize)
        } else {
            self.spis.get((intid - PRIVATE_IRQS) as usize)
        };
        irq.ok_or(VgicError::NoSuchIntid)
    }

    /// Applies `change` to the state of `intid` as `vcpu` sees it, then brings the
    /// pending and active sets up to date.
    fn update<R>(
        &mut self,
        vcpu: usize,
        intid: u32,
        change: impl FnOnce(&mut IrqState) -> R,
    ) -> Result<R, VgicError> {
        self.epoch += 1;
        let v = self.vcpus.get_mut(vcpu).ok_or(VgicError::NoSuchVcpu)?;
        if intid < PRIVATE_IRQS {
            // The common case (timer PPI, SGIs) without a second lookup.
            let irq = v
                .private
                .get_mut(intid as usize)
                .ok_or(VgicError::NoSuchIntid)?;
            let result = change(irq);
            v.pending.set(intid, irq.pending());
            v.active.set(intid, irq.active);
            v.release_live(intid);
            self.touched |= 1 << vcpu;
            return Ok(result);
        }
        let irq = self
            .spis
            .get_mut((intid - PRIVATE_IRQS) as usize)
            .ok_or(VgicError::NoSuchIntid)?;
        let result = change(irq);
        self.refresh(vcpu, intid);
        Ok(result)
    }

    /// Makes the pending and active sets agree with the state of `intid` (for an SGI or
    /// PPI, `vcpu`'s; an SPI counts for the vCPU it is routed to, and for none when its
    /// route names no vCPU). Anything that changes an interrupt's state, trigger, HW link
    /// or route calls this.
    pub(crate) fn refresh(&mut self, vcpu: usize, intid: u32) {
        self.epoch += 1;
        let (Some(owner), Ok(irq)) = (self.owner(vcpu, intid), self.irq(vcpu, intid)) else {
            return;
        };
        if let Some(v) = self.vcpus.get_mut(owner) {
            v.pending.set(intid, irq.pending());
            v.active.set(intid, irq.active);
            v.release_live(intid);
            self.touched |= 1 << owner;
        }
    }

    /// After a bank write (`regs::Written`, `vcpu` selecting the bank of an SGI or PPI):
    /// refreshes each interrupt whose state the write changed, and each whose pending state
    /// it wrote while a list register of its vCPU presents it, so that the write wins over
    /// what the list register held (`VcpuIrqs::release_live`); marks the vCPUs of those
    /// whose configuration changed touched (their sets hold the same). The other interrupts
    /// the register covers are as they were.
    pub(crate) fn refresh_written(&mut self, vcpu: usize, written: Written) {
        let refresh = written.state | written.pending;
        let mut left = refresh;
        while left != 0 {
            let bit = left.trailing_zeros();
            left &= left - 1;
            let intid = written.first + bit;
            if written.state & (1 << bit) != 0 || self.presented(vcpu, intid) {
                self.refresh(vcpu, intid);
            }
        }
        // One interrupt's vCPU is looked up; a write that reconfigures several (Linux's
        // boot-time IGROUPR and IPRIORITYR writes) touches every vCPU of the VM instead,
        // cheaper than a lookup each, and only a kick too many for the others.
        let config = written.config;
        if config.count_ones() > 1 {
            self.touched |= 1u64
                .checked_shl(self.vcpus.len() as u32)
                .map_or(u64::MAX, |b| b - 1);
        } else if let Some(owner) = (config != 0)
            .then(|| self.owner(vcpu, written.first + config.trailing_zeros()))
            .flatten()
        {
            self.touched |= 1 << owner;
        }
    }

    /// The vCPU `intid` belongs to: `vcpu` for an SGI or PPI, the routed one for an SPI.
    fn owner(&self, vcpu: usize, intid: u32) -> Option<usize> {
        if intid < PRIVATE_IRQS {
            Some(vcpu)
        } else {
            self.spi_target(intid)
        }
    }

    /// Whether a list register of the vCPU `intid` belongs to presents it since its last
    /// flush.
    fn presented(&self, vcpu: usize, intid: u32) -> bool {
        self.owner(vcpu, intid)
            .and_then(|owner| self.vcpus.get(owner))
            .is_some_and(|v| {
                v.live
                    .iter()
                    .take(v.live_count)
                    .flatten()
                    .any(|entry| entry.intid == intid)
            })
    }

    /// The vCPUs whose interrupts changed since the last call (bit n: vCPU n), cleared.
    pub fn take_touched(&mut self) -> u64 {
        core::mem::take(&mut self.touched)
    }

    /// Applies `change` to GICD_IROUTER of SPI `intid` (None when the VM has no such SPI),
    /// moving the interrupt to the sets of the vCPU it now names.
    pub(crate) fn change_route(&mut self, intid: u32, change: impl FnOnce(u64) -> u64) {
        let before = self.spi_target(intid);
        let Some(route) = intid
            .checked_sub(PRIVATE_IRQS)
            .and_then(|i| self.routes.get_mut(i as usize))
        else {
            return;
        };
        *route = change(*route);
        if self.spi_target(intid) == before {
            return;
        }
        if let Some(v) = before.and_then(|b| self.vcpus.get_mut(b)) {
            v.pending.set(intid, false);
            v.active.set(intid, false);
        }
        self.refresh(0, intid);
    }

    /// Makes `intid` pending, as an edge or an SGI would (`vcpu` selects the bank of an SGI
    /// or PPI and is ignored for an SPI). For an interrupt backed by a physical one, this is
    /// how the hypervisor forwards each physical occurrence.
    pub fn inject(&mut self, vcpu: usize, intid: u32) -> Result<(), VgicError> {
        self.update(vcpu, intid, |irq| irq.pending_latch = true)
    }

    /// Drives the input line of a level-sensitive interrupt (an emulated device's output).
    /// An edge-triggered interrupt latches a rising edge.
    pub fn set_level(&mut self, vcpu: usize, intid: u32, level: bool) -> Result<(), VgicError> {
        self.update(vcpu, intid, |irq| {
            if irq.trigger == Trigger::Edge && level && !irq.line_level {
                irq.pending_latch = true;
            }
            irq.line_level = level;
        })
    }

    /// Backs the PPI or SPI `intid` by the physical PPI or SPI `pintid` (list registers get
    /// HW = 1), or unbinds it with `None`.
    pub fn set_hw(
        &mut self,
        vcpu: usize,
        intid: u32,
        pintid: Option<u32>,
    ) -> Result<(), VgicError> {
        let peripheral = FIRST_PPI..PRIVATE_IRQS + MAX_SPIS;
        self.irq(vcpu, intid)?;
        if !peripheral.contains(&intid) || pintid.is_some_and(|p| !peripheral.contains(&p)) {
            return Err(VgicError::HwMapping);
        }
        self.update(vcpu, intid, |irq| irq.hw = pintid)
    }

    /// The vCPU an SPI is routed to by its GICD_IROUTER, if that vCPU exists. With
    /// IRM = 1 ("any PE") the model picks vCPU 0.
    pub fn spi_target(&self, intid: u32) -> Option<usize> {
        let route = *self.routes.get(intid.checked_sub(PRIVATE_IRQS)? as usize)?;
        if route & sgi::IROUTER_IRM != 0 {
            return Some(0);
        }
        Affinity::from_irouter(route).vcpu_index(self.vcpus.len())
    }

    /// Makes the SGI that vCPU `source` requested (a trapped ICC_SGI1R_EL1 write, decoded
    /// with `SgiRequest::decode`) pending on its targets, and returns them (so the hypervisor
    /// can wake them).
    pub fn send_sgi(
        &mut self,
        source: usize,
        request: SgiRequest,
    ) -> Result<SgiTargets, VgicError> {
        if source >= self.vcpus.len() {
            return Err(VgicError::NoSuchVcpu);
        }
        let sgi = usize::from(request.intid);
        if sgi >= FIRST_PPI as usize {
            return Err(VgicError::NoSuchIntid);
        }
        let targets = request.targets(source, self.vcpus.len());
        for vcpu in targets.iter() {
            self.update(vcpu, sgi as u32, |irq| irq.pending_latch = true)?;
        }
        Ok(targets)
    }
}
