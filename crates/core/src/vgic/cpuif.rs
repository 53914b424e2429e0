//! The virtual CPU interface side of the model: choosing which interrupts occupy the list registers
//! before a vCPU runs (`flush`) and folding back what the guest did with them after it ran
//! (`sync`), following IHI 0069 chapter 6 ("Virtual interrupt handling and prioritization": the
//! list registers and maintenance interrupts) and chapter 4 (the interrupt lifecycle). Active
//! interrupts always get a list register (the guest must be able to deactivate them); then enabled
//! pending ones by priority (lower value first, ties by lower INTID). What does not fit stays
//! queued in the model and a maintenance interrupt is requested so it is delivered as soon as room
//! appears. It computes register values only; the hypervisor reads and writes ICH_LR<n>_EL2 and
//! ICH_HCR_EL2.

use heapless::Vec;

use super::lr::{ListRegister, LrLink, LrState, ICH_HCR_NPIE, ICH_HCR_UIE, MAX_LIST_REGISTERS};
use super::state::{IrqState, Trigger};
use super::{LiveEntry, Vgic, VgicError, PRIVATE_IRQS};

/// The list-register contents to load before a vCPU runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LrFlush {
    /// Values for ICH_LR0_EL2 onwards; only the first `count` are meaningful.
    pub lrs: [u64; MAX_LIST_REGISTERS],
    /// How many list registers the vCPU interface has (all of them must be written).
    pub count: usize,
    /// Maintenance enables for ICH_HCR_EL2 (`ICH_HCR_UIE`, `ICH_HCR_NPIE`); the hypervisor
    /// adds En and its own bits.
    pub hcr: u64,
}

impl LrFlush {
    /// The values for ICH_LR0_EL2 to ICH_LR<count - 1>_EL2.
    pub fn values(&self) -> &[u64] {
        &self.lrs[..self.count]
    }
}

/// Ordering key of a list-register candidate: active first, then priority, then INTID.
fn candidate_key(intid: u32, irq: &IrqState) -> u64 {
    (u64::from(!irq.active) << 40) | (u64::from(irq.priority) << 32) | u64::from(intid)
}

/// Folds the state the guest left in a list register back into the interrupt.
fn fold(irq: &mut IrqState, entry: LiveEntry, state: LrState) {
    irq.active = state.is_active();
    if !entry.carries_pending {
        return;
    }
    match (irq.trigger, irq.hw) {
        // Acknowledging a level interrupt consumes a software-set pending state; the line
        // itself is the device's and is sampled again.
        (Trigger::Level, None) => {
            if !state.is_pending() {
                irq.pending_latch = false;
            }
        }
        _ => irq.pending_latch = state.is_pending(),
    }
}

impl Vgic {
    /// Whether `irq` may be signalled to the guest as pending now.
    fn deliverable(&self, irq: &IrqState) -> bool {
        irq.pending() && irq.enabled && self.ctlr.group_enabled(irq.group1)
    }

    /// The interrupts `vcpu` may have to take: its SGIs and PPIs and the SPIs routed to it,
    /// among the candidates (pending or active ones, and perhaps a few idle ones).
    fn owned_irqs(&self, vcpu: usize) -> impl Iterator<Item = (u32, &IrqState)> + '_ {
        let limit = PRIVATE_IRQS + self.spi_count();
        let bank = self.vcpus.get(vcpu);
        self.candidates.iter(limit).filter_map(move |intid| {
            let irq = if intid < PRIVATE_IRQS {
                bank?.private.get(intid as usize)?
            } else {
                if self.spi_target(intid) != Some(vcpu) {
                    return None;
                }
                self.spis.get((intid - PRIVATE_IRQS) as usize)?
            };
            Some((intid, irq))
        })
    }

    /// Brings the candidate set up to date: rebuilt after MMIO emulation, else trimmed of
    /// interrupts that went idle.
    fn prune_candidates(&mut self) {
        let limit = PRIVATE_IRQS + self.spi_count();
        let Vgic {
            candidates,
            spis,
            vcpus,
            ..
        } = self;
        let busy = |intid: u32| {
            let busy = |irq: &IrqState| irq.active || irq.pending();
            if intid < PRIVATE_IRQS {
                vcpus
                    .iter()
                    .any(|v| v.private.get(intid as usize).is_some_and(busy))
            } else {
                spis.get((intid - PRIVATE_IRQS) as usize).is_some_and(busy)
            }
        };
        if candidates.needs_rebuild() {
            candidates.rebuild(limit, busy);
        } else {
            candidates.retain(limit, busy);
        }
    }

    /// The best list-register candidates of `vcpu`, best first: up to `n` of them (at most
    /// `MAX_LIST_REGISTERS + 1`), chosen in one pass over the candidate set.
    pub(crate) fn best_candidates(
        &self,
        vcpu: usize,
        n: usize,
    ) -> Vec<(u64, u32), { MAX_LIST_REGISTERS + 1 }> {
        let mut best: Vec<(u64, u32), { MAX_LIST_REGISTERS + 1 }> = Vec::new();
        let n = n.min(best.capacity());
        for (intid, irq) in self.owned_irqs(vcpu) {
            if !(irq.active || self.deliverable(irq)) {
                continue;
            }
            let key = candidate_key(intid, irq);
            let at = best
                .iter()
                .position(|&(k, _)| key < k)
                .unwrap_or(best.len());
            if at < n {
                if best.len() == n {
                    best.pop();
                }
                let _ = best.insert(at, (key, intid));
            }
        }
        best
    }

    /// The list register presenting `irq`, and what it carries.
    fn list_register(&self, intid: u32, irq: &IrqState) -> (ListRegister, LiveEntry) {
        let deliver = self.deliverable(irq);
        let (pending, link) = match irq.hw {
            // A HW interrupt is never pending and active in a list register: its next
            // occurrence waits in the physical distributor (IHI 0069 chapter 6, ICH_LR<n>_EL2.HW).
            Some(pintid) => (deliver && !irq.active, LrLink::Hardware { pintid }),
            None => (
                deliver,
                LrLink::Virtual {
                    eoi_maintenance: irq.trigger == Trigger::Level && irq.line_level,
                },
            ),
        };
        let lr = ListRegister {
            vintid: intid,
            state: LrState::from_flags(pending, irq.active),
            priority: irq.priority,
            group1: irq.group1,
            link,
        };
        let entry = LiveEntry {
            intid,
            carries_pending: pending,
        };
        (lr, entry)
    }

    /// Folds the list registers `current` (read back from ICH_LR0_EL2 onwards after `vcpu`
    /// ran) into the model, so MMIO emulation and injection see the guest's progress. Only
    /// the State field of each value matters (a free list register, per ICH_ELRSR_EL2, may
    /// be passed as 0). Calling it again before the next `flush` changes nothing.
    pub fn sync(&mut self, vcpu: usize, current: &[u64]) -> Result<(), VgicError> {
        let v = self.vcpus.get_mut(vcpu).ok_or(VgicError::NoSuchVcpu)?;
        let live = core::mem::replace(&mut v.live, [None; MAX_LIST_REGISTERS]);
        for (entry, raw) in live.iter().zip(current) {
            if let Some(entry) = *entry {
                let state = ListRegister::decode(*raw).state;
                fold(self.irq_mut(vcpu, entry.intid)?, entry, state);
            }
        }
        Ok(())
    }

    /// Chooses the list-register contents for `vcpu` before it runs. `current` holds the
    /// list registers as they are now (its length is the number the vCPU interface has,
    /// ICH_VTR_EL2.ListRegs + 1); anything not yet synced is folded in first. Higher-priority
    /// interrupts displace pending-only ones, which stay queued in the model.
    pub fn flush(&mut self, vcpu: usize, current: &[u64]) -> Result<LrFlush, VgicError> {
        self.sync(vcpu, current)?;
        self.prune_candidates();
        let count = current.len().min(MAX_LIST_REGISTERS);
        let mut out = LrFlush {
            lrs: [0; MAX_LIST_REGISTERS],
            count,
            hcr: 0,
        };
        let mut live = [None; MAX_LIST_REGISTERS];
        let mut carries_pending = false;
        let best = self.best_candidates(vcpu, count + 1);
        for ((lr_value, live_slot), &(_, intid)) in out
            .lrs
            .iter_mut()
            .zip(live.iter_mut())
            .zip(best.iter())
            .take(count)
        {
            let irq = self.irq(vcpu, intid)?;
            let (lr, entry) = self.list_register(intid, &irq);
            *lr_value = lr.encode();
            *live_slot = Some(entry);
            carries_pending |= entry.carries_pending;
        }
        if best.len() > count {
            out.hcr = maintenance_request(carries_pending, count);
        }
        if let Some(v) = self.vcpus.get_mut(vcpu) {
            v.live = live;
        }
        Ok(out)
    }

    /// Whether `vcpu` has an interrupt to take (to wake it from WFI). The guest's own masks
    /// (ICH_VMCR_EL2: priority mask, group enables) are the hypervisor's to apply.
    pub fn has_deliverable(&self, vcpu: usize) -> bool {
        self.owned_irqs(vcpu)
            .any(|(_, irq)| self.deliverable(irq) && !(irq.active && irq.hw.is_some()))
    }
}

/// The maintenance interrupt that reports room for queued interrupts: NPIE once the guest
/// has taken every pending one we gave it; if all we gave it is active, UIE once it has
/// deactivated all but one (never with a single list register, which would fire at once).
fn maintenance_request(carries_pending: bool, count: usize) -> u64 {
    if carries_pending {
        ICH_HCR_NPIE
    } else if count >= 2 {
        ICH_HCR_UIE
    } else {
        0
    }
}
