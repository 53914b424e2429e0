//! The virtual CPU interface side of the model: choosing which interrupts occupy the list registers
//! before a vCPU runs (`flush`) and folding back what the guest did with them after it ran
//! (`sync`), following IHI 0069 chapter 6 ("Virtual interrupt handling and prioritization": the
//! list registers and maintenance interrupts) and chapter 4 (the interrupt lifecycle). Active
//! interrupts always get a list register (the guest must be able to deactivate them); then enabled
//! pending ones by priority (lower value first, ties by lower INTID). What does not fit stays
//! queued in the model and a maintenance interrupt is requested so it is delivered as soon as room
//! appears. Candidates come only from the vCPU's pending and active sets (`intid_set`), in one
//! pass that keeps the best few, so the cost follows the number of pending or active interrupts,
//! not the size of the VM. It computes register values only; the hypervisor reads and writes
//! ICH_LR<n>_EL2 and ICH_HCR_EL2.

use super::lr::{ListRegister, LrLink, LrState, ICH_HCR_NPIE, ICH_HCR_UIE, MAX_LIST_REGISTERS};
use super::state::{IrqState, Trigger};
use super::{Again, LiveEntry, VcpuIrqs, Vgic, VgicError, PRIVATE_IRQS};

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

/// Folds every live list register of `v` as `sync` would when the guest finished all of
/// them (each free in `free`) and each holds an SGI or PPI, the usual case of a timer tick
/// taken before the next: `update`'s work for interrupts of this vCPU alone, which no other
/// list register holds (the caller counts the change). False, nothing changed, otherwise.
///
/// One live list register (a tick's, usually) is folded without the loops over them.
#[inline]
fn fold_all_finished(v: &mut VcpuIrqs, free: u16) -> bool {
    if v.live_count == 1 && free & 1 != 0 {
        return fold_first_finished(v);
    }
    let live = v.live_count.min(MAX_LIST_REGISTERS);
    let all = (1u32 << live) - 1;
    let Some(entries) = v.live.get_mut(..live) else {
        return false;
    };
    if u32::from(free) & all != all || entries.iter().flatten().any(|e| e.intid >= PRIVATE_IRQS) {
        return false;
    }
    for entry in entries.iter_mut().filter_map(Option::take) {
        if let Some(irq) = v.private.get_mut(entry.intid as usize) {
            fold(irq, entry, LrState::Invalid);
            v.pending.set(entry.intid, irq.pending());
            v.active.set(entry.intid, irq.active);
        }
    }
    v.live_count = 0;
    true
}

/// `fold_all_finished` for one live list register, the first, finished: folded when it
/// holds an SGI or PPI (or nothing); false, nothing changed, when it holds an SPI.
#[inline(always)]
fn fold_first_finished(v: &mut VcpuIrqs) -> bool {
    if let Some(entry) = v.live[0] {
        if entry.intid >= PRIVATE_IRQS {
            return false;
        }
        v.live[0] = None;
        if let Some(irq) = v.private.get_mut(entry.intid as usize) {
            fold(irq, entry, LrState::Invalid);
            v.pending.set(entry.intid, irq.pending());
            v.active.set(entry.intid, irq.active);
        }
    }
    v.live_count = 0;
    true
}

/// The best list-register candidates of one vCPU as ordering keys (`candidate_key`), best
/// first, kept in the caller's slice (the list registers about to be rewritten, so no array
/// is initialised or copied on the way), and whether any did not fit.
struct Shortlist<'a> {
    keys: &'a mut [u64],
    len: usize,
    overflow: bool,
}

impl<'a> Shortlist<'a> {
    fn new(keys: &'a mut [u64]) -> Self {
        Shortlist {
            keys,
            len: 0,
            overflow: false,
        }
    }

    /// Inserts `key` in order; the worst key falls out when the list is full.
    fn offer(&mut self, key: u64) {
        let mut at = self.len;
        while at > 0 && self.keys.get(at - 1).is_some_and(|&k| k > key) {
            at -= 1;
        }
        if at >= self.keys.len() {
            self.overflow = true;
            return;
        }
        if self.len == self.keys.len() {
            self.overflow = true;
        } else {
            self.len += 1;
        }
        if let Some(tail) = self.keys.get_mut(at..self.len) {
            tail.rotate_right(1);
            if let Some(first) = tail.first_mut() {
                *first = key;
            }
        }
    }
}

impl Vgic {
    /// Whether `irq` may be signalled to the guest as pending now.
    fn deliverable(&self, irq: &IrqState) -> bool {
        irq.pending() && irq.enabled && self.ctlr.group_enabled(irq.group1)
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
        let live = core::mem::take(&mut v.live_count);
        for slot in 0..live {
            let entry = self
                .vcpus
                .get_mut(vcpu)
                .and_then(|v| v.live.get_mut(slot))
                .and_then(Option::take);
            if let (Some(entry), Some(raw)) = (entry, current.get(slot)) {
                let state = ListRegister::decode(*raw).state;
                self.update(vcpu, entry.intid, |irq| fold(irq, entry, state))?;
            }
        }
        Ok(())
    }

    /// Fills `list` with the best list-register candidates of `vcpu`: active interrupts and
    /// deliverable pending ones, found among its pending and active sets only.
    fn shortlist(&self, vcpu: usize, list: &mut Shortlist) {
        let Some(v) = self.vcpus.get(vcpu) else {
            return;
        };
        for intid in v.pending.union(&v.active) {
            match self.state(vcpu, intid) {
                Ok(irq) if irq.active || self.deliverable(irq) => {
                    list.offer(candidate_key(intid, irq));
                }
                _ => {}
            }
        }
    }

    /// Chooses the list-register contents for `vcpu` before it runs. `current` holds the
    /// list registers as they are now (its length is the number the vCPU interface has,
    /// ICH_VTR_EL2.ListRegs + 1); anything not yet synced is folded in first. Higher-priority
    /// interrupts displace pending-only ones, which stay queued in the model.
    pub fn flush(&mut self, vcpu: usize, current: &[u64]) -> Result<LrFlush, VgicError> {
        let count = current.len().min(MAX_LIST_REGISTERS);
        let mut out = LrFlush {
            lrs: [0; MAX_LIST_REGISTERS],
            count,
            hcr: 0,
        };
        out.lrs[..count].copy_from_slice(&current[..count]);
        out.hcr = self.flush_in_place(vcpu, &mut out.lrs[..count])?;
        Ok(out)
    }

    /// The choice of list registers for `vcpu` when it has nothing live to fold and nothing
    /// pending or active to choose (a vCPU switched in with no interrupt, its usual case):
    /// true, and the choice is made, every list register empty, as `flush` would make it
    /// without its shortlist. False (the model unchanged) otherwise.
    #[inline]
    pub fn choose_idle(&mut self, vcpu: usize) -> Result<bool, VgicError> {
        let epoch = self.epoch;
        let v = self.vcpus.get_mut(vcpu).ok_or(VgicError::NoSuchVcpu)?;
        let idle = v.live_count == 0 && v.pending.is_empty() && v.active.is_empty();
        if idle {
            v.chosen_at = epoch;
        }
        Ok(idle)
    }

    /// `flush` without copies, for the hypervisor's entry path: `lrs` holds the list
    /// registers as they are now (one element per list register the vCPU interface has) and
    /// is overwritten with the values to load, invalid ones as 0 (beyond `MAX_LIST_REGISTERS`,
    /// always 0). Returns the maintenance enables for ICH_HCR_EL2 (`LrFlush::hcr`).
    pub fn flush_in_place(&mut self, vcpu: usize, lrs: &mut [u64]) -> Result<u64, VgicError> {
        if self.choose_idle(vcpu)? {
            // Every list register empty, as the loop below would leave them. Only those
            // that are not are written: a zeroing loop becomes a call to `memset`.
            for lr in lrs.iter_mut().filter(|lr| **lr != 0) {
                *lr = 0;
            }
            return Ok(0);
        }
        if self.vcpus[vcpu].live_count != 0 {
            self.sync(vcpu, lrs)?;
        }
        let count = lrs.len().min(MAX_LIST_REGISTERS);
        let (lrs, beyond) = lrs.split_at_mut(count);
        if !beyond.is_empty() {
            beyond.fill(0);
        }
        let mut list = Shortlist::new(lrs);
        self.shortlist(vcpu, &mut list);
        let (chosen, overflow) = (list.len, list.overflow);
        let mut carries_pending = false;
        for (slot, value) in lrs.iter_mut().enumerate() {
            // One loop for both parts: a separate zeroing loop becomes a call to `memset`,
            // which costs more than the few stores.
            if slot >= chosen {
                *value = 0;
                continue;
            }
            let intid = *value as u32;
            let (lr, entry) = self.list_register(intid, self.state(vcpu, intid)?);
            *value = lr.encode();
            if let Some(live) = self.vcpus.get_mut(vcpu).and_then(|v| v.live.get_mut(slot)) {
                *live = Some(entry);
            }
            carries_pending |= entry.carries_pending;
        }
        let epoch = self.epoch;
        if let Some(v) = self.vcpus.get_mut(vcpu) {
            v.live_count = chosen;
            v.chosen_at = epoch;
        }
        Ok(if overflow {
            maintenance_request(carries_pending, count)
        } else {
            0
        })
    }

    /// `inject` and the list-register choice of the next `flush` in one short step, for the
    /// common injection into a vCPU whose list registers are loaded (flushed, not synced
    /// since): when the interrupt needs no list register but a free one, and nothing else
    /// waits in the model, it goes straight into the lowest free list register and nothing
    /// else is read, folded or chosen again. `free` has bit n set when list register n is
    /// free now (ICH_ELRSR_EL2); `count` is how many the vCPU interface has. Returns the list
    /// register to write and its value; `None` (the model unchanged but for list registers
    /// the guest finished, folded) when the general path (`sync`, `inject`, `flush`) must
    /// run. The model stays the truth: a later `sync` sees the new list register as if
    /// `flush` had chosen it.
    ///
    /// The general path would choose every active and deliverable interrupt of the vCPU; it
    /// chooses the same set here when each of them other than `intid` is in a list register
    /// that still holds it, and one list register is free for `intid`. The order of the list
    /// registers may differ (the guest takes them by priority, whatever their order).
    ///
    /// The usual case (`inject_alone`) costs the same whatever the VM: once the finished
    /// list registers are folded, none is live and the vCPU has nothing active and nothing
    /// pending but `intid` (two summary words), so `intid` is the general path's only
    /// choice. Otherwise the vCPU's pending and active interrupts are each checked against
    /// the live list registers.
    #[inline(always)]
    pub fn inject_loaded(
        &mut self,
        vcpu: usize,
        intid: u32,
        free: u16,
        count: usize,
    ) -> Result<Option<(usize, u64)>, VgicError> {
        match self.inject_alone(vcpu, intid, free, count) {
            Some(done) => Ok(Some(done)),
            None => self.inject_loaded_folding(vcpu, intid, free, count),
        }
    }

    /// `inject_loaded` when its usual case did not apply at once: the finished list
    /// registers are folded, then the usual case is tried again, then every pending and
    /// active interrupt of the vCPU is checked against the live list registers.
    #[inline(never)]
    fn inject_loaded_folding(
        &mut self,
        vcpu: usize,
        intid: u32,
        free: u16,
        count: usize,
    ) -> Result<Option<(usize, u64)>, VgicError> {
        let live = self.fold_finished(vcpu, free)?;
        if live == 0 {
            if let Some(done) = self.inject_alone(vcpu, intid, free, count) {
                return Ok(Some(done));
            }
        }
        let owner = if intid < PRIVATE_IRQS {
            Some(vcpu)
        } else {
            self.spi_target(intid)
        };
        self.state(vcpu, intid)?;
        if owner != Some(vcpu) || !self.others_held(vcpu, intid, live)? {
            return Ok(None);
        }
        let v = self.vcpus.get(vcpu).ok_or(VgicError::NoSuchVcpu)?;
        let slot = (0..count.min(MAX_LIST_REGISTERS))
            .find(|&n| free & (1 << n) != 0 && v.live.get(n).is_none_or(Option::is_none));
        let Some(slot) = slot else {
            return Ok(None);
        };
        let mut candidate = *self.state(vcpu, intid)?;
        candidate.pending_latch = true;
        if !self.deliverable(&candidate) {
            return Ok(None);
        }
        self.update(vcpu, intid, |irq| irq.pending_latch = true)?;
        let (lr, entry) = self.list_register(intid, self.state(vcpu, intid)?);
        let epoch = self.epoch;
        let v = self.vcpus.get_mut(vcpu).ok_or(VgicError::NoSuchVcpu)?;
        if let Some(place) = v.live.get_mut(slot) {
            *place = Some(entry);
        }
        v.live_count = live.max(slot + 1);
        v.chosen_at = epoch;
        Ok(Some((slot, lr.encode())))
    }

    /// `inject_loaded`'s usual case, with no list register of `vcpu` live once those the
    /// guest finished are folded (`fold_all_finished`: all of them, SGIs and PPIs): when `intid` is
    /// its own (a PPI or SGI, or an SPI routed to it), enabled in an enabled group, and
    /// the vCPU has nothing active and nothing pending but `intid`, the general path would
    /// choose `intid` alone: it is made pending as `update` would (one latch, one word of
    /// the pending set) and goes into the lowest free list register, with the live entry
    /// `flush` would record. `None` otherwise, nothing changed but the finished list
    /// registers folded.
    #[inline(always)]
    pub(super) fn inject_alone(
        &mut self,
        vcpu: usize,
        intid: u32,
        free: u16,
        count: usize,
    ) -> Option<(usize, u64)> {
        let slot = free.trailing_zeros() as usize;
        if free == 0 || slot >= count {
            return None;
        }
        if intid >= PRIVATE_IRQS && self.spi_target(intid) != Some(vcpu) {
            return None;
        }
        let Vgic {
            ctlr,
            spis,
            vcpus,
            touched,
            epoch,
            ..
        } = self;
        let v = vcpus.get_mut(vcpu)?;
        // Again: the only live list register, finished, holds this SGI or PPI and nothing is
        // active (a self-SGI sent again, a tick after the last). Folding it would clear its
        // latch (and an active flag that is clear) and the injection set the latch again:
        // the model ends as if it were folded, so it is not.
        let again = v.live_count == 1
            && free & 1 != 0
            && intid < PRIVATE_IRQS
            && v.active.is_empty()
            && v.live[0].is_some_and(|e| e.intid == intid);
        if !again && v.live_count != 0 && !fold_all_finished(v, free) {
            return None;
        }
        if !v.active.is_empty() || !v.pending.has_none_but(intid) {
            return None;
        }
        let irq = match intid.checked_sub(PRIVATE_IRQS) {
            None => v.private.get_mut(intid as usize)?,
            Some(spi) => spis.get_mut(spi as usize)?,
        };
        // Not active: the active set is empty.
        if !irq.enabled || !ctlr.group_enabled(irq.group1) {
            return None;
        }
        irq.pending_latch = true;
        v.pending.set(intid, true);
        *epoch += 1;
        *touched |= 1 << vcpu;
        let link = match irq.hw {
            Some(pintid) => LrLink::Hardware { pintid },
            None => LrLink::Virtual {
                eoi_maintenance: irq.trigger == Trigger::Level && irq.line_level,
            },
        };
        let lr = ListRegister {
            vintid: intid,
            state: LrState::Pending,
            priority: irq.priority,
            group1: irq.group1,
            link,
        };
        if let Some(place) = v.live.get_mut(slot) {
            *place = Some(LiveEntry {
                intid,
                carries_pending: true,
            });
        }
        v.live_count = slot + 1;
        v.chosen_at = *epoch;
        let value = lr.encode();
        if slot == 0 && intid < PRIVATE_IRQS {
            v.again = Again {
                intid,
                value,
                epoch: *epoch,
            };
        }
        Some((slot, value))
    }

    /// `inject_loaded` of `intid` into `vcpu` when the model has not changed since the short
    /// injection that left this same SGI or PPI alone in list register 0 (`inject_alone`,
    /// `VcpuIrqs::again`), and the guest has finished that list register (bit 0 of `free`):
    /// the value to write into list register 0, with the model left as it is. Folding the
    /// finished list register and injecting again, as `inject_alone` does, would end in
    /// this same model (the interrupt pending, alone, in list register 0, nothing active:
    /// all as that injection left them, since nothing changed) and this same value (its
    /// priority, group and link unchanged); only the epoch would count one more change,
    /// which is none. `None`: nothing done, ask `inject_loaded`.
    #[inline(always)]
    pub fn inject_again(&self, vcpu: usize, intid: u32, free: u16) -> Option<u64> {
        let again = self.vcpus.get(vcpu)?.again;
        (free & 1 != 0 && again.epoch == self.epoch && again.intid == intid).then_some(again.value)
    }

    /// Folds the live list registers of `vcpu` that the guest finished (bit n of `free`: list
    /// register n is free now), as `sync` would fold them, and forgets them. Returns how many
    /// live entries are left, the last ones that were folded not counted (the others are in
    /// list registers that still hold them).
    fn fold_finished(&mut self, vcpu: usize, free: u16) -> Result<usize, VgicError> {
        let v = self.vcpus.get_mut(vcpu).ok_or(VgicError::NoSuchVcpu)?;
        let mut live = v.live_count.min(MAX_LIST_REGISTERS);
        let mut finished = u32::from(free) & ((1u32 << live) - 1);
        let mut private = false;
        while finished != 0 {
            let slot = finished.trailing_zeros() as usize;
            finished &= finished - 1;
            let v = self.vcpus.get_mut(vcpu).ok_or(VgicError::NoSuchVcpu)?;
            let Some(entry) = v.live.get_mut(slot).and_then(Option::take) else {
                continue;
            };
            match v.private.get_mut(entry.intid as usize) {
                // An SGI or PPI (the timer's, usually): `update`'s work for one interrupt
                // of this vCPU, which no other list register holds.
                Some(irq) => {
                    fold(irq, entry, LrState::Invalid);
                    v.pending.set(entry.intid, irq.pending());
                    v.active.set(entry.intid, irq.active);
                    private = true;
                }
                None => {
                    self.update(vcpu, entry.intid, |irq| fold(irq, entry, LrState::Invalid))?;
                }
            }
        }
        if private {
            self.epoch += 1;
            self.touched |= 1 << vcpu;
        }
        let v = self.vcpus.get_mut(vcpu).ok_or(VgicError::NoSuchVcpu)?;
        while live > 0 && v.live.get(live - 1).is_some_and(Option::is_none) {
            live -= 1;
        }
        v.live_count = live;
        Ok(live)
    }

    /// Whether every pending-and-deliverable or active interrupt of `vcpu` other than
    /// `intid` is in one of its first `live` list registers, which still holds it carrying
    /// what the model has, and `intid` is in none: the general path would choose them and
    /// `intid`, and they need not be chosen again.
    fn others_held(&self, vcpu: usize, intid: u32, live: usize) -> Result<bool, VgicError> {
        let v = self.vcpus.get(vcpu).ok_or(VgicError::NoSuchVcpu)?;
        let still = v.live.get(..live).unwrap_or_default();
        for member in v.pending.union(&v.active) {
            let Ok(irq) = self.state(vcpu, member) else {
                return Ok(false);
            };
            let held = still.iter().flatten().find(|e| e.intid == member);
            let wanted = irq.active || self.deliverable(irq);
            match held {
                // In a list register that still holds it, carrying what the model has, and
                // not a level line sampled again at its EOI (`fold` would change it).
                Some(entry)
                    if member != intid
                        && (entry.carries_pending || !irq.pending())
                        && !(irq.trigger == Trigger::Level && irq.hw.is_none()) => {}
                // Neither in a list register nor a candidate for one.
                None if !wanted && member != intid => {}
                _ => return Ok(false),
            }
        }
        Ok(!still.iter().flatten().any(|e| e.intid == intid))
    }

    /// For a vCPU about to wait for an interrupt with its list registers loaded (`free` as
    /// for `inject_loaded`): true when `inject_again` would answer, the model unchanged since
    /// the injection it would repeat and the guest done with it. Then nothing is pending or
    /// active in truth (that injection found nothing else, and nothing happened since), so
    /// nothing is there to wake it, and its list registers may stay as they are, list
    /// register 0 not folded: the injection that wakes it, the same interrupt again, needs
    /// no fold (`inject_again`), and any other folds it first, as it would while the vCPU
    /// runs. Nothing changed either way.
    #[inline(always)]
    pub fn idle_again(&self, vcpu: usize, free: u16) -> bool {
        self.vcpus
            .get(vcpu)
            .is_some_and(|v| free & 1 != 0 && v.again.epoch == self.epoch)
    }

    /// For a vCPU about to wait for an interrupt with its list registers loaded (flushed,
    /// not synced since; `free` as for `inject_loaded`): folds those the guest finished and
    /// answers whether nothing is left for it, no list register live and nothing pending or
    /// active. Then nothing is there to wake it, and the loaded list registers, all free,
    /// are what `flush` would choose: neither `sync` nor `flush` need run before it waits,
    /// and the injection that wakes it takes `inject_loaded`'s usual case. False: the model
    /// unchanged but for the folded list registers, and the general path must look.
    ///
    /// Its usual case, one finished list register of an SGI or PPI (a tick's), is inline and
    /// the rest out of line (`settle_loaded_general`), so that case saves no registers.
    #[inline]
    pub fn settle_loaded(&mut self, vcpu: usize, free: u16) -> Result<bool, VgicError> {
        let v = self.vcpus.get_mut(vcpu).ok_or(VgicError::NoSuchVcpu)?;
        if v.live_count == 1 && free & 1 != 0 && fold_first_finished(v) {
            self.epoch += 1;
            self.touched |= 1 << vcpu;
            return Ok(self.settled(vcpu));
        }
        self.settle_loaded_general(vcpu, free)
    }

    /// `settle_loaded` beyond its usual case.
    #[inline(never)]
    fn settle_loaded_general(&mut self, vcpu: usize, free: u16) -> Result<bool, VgicError> {
        let v = self.vcpus.get_mut(vcpu).ok_or(VgicError::NoSuchVcpu)?;
        let live = if v.live_count == 0 {
            0
        } else if fold_all_finished(v, free) {
            self.epoch += 1;
            self.touched |= 1 << vcpu;
            0
        } else {
            self.fold_finished(vcpu, free)?
        };
        Ok(live == 0 && self.settled(vcpu))
    }

    /// With no list register of `vcpu` live: whether nothing is pending or active for it
    /// (`settle_loaded`'s answer); then the loaded list registers, all free, count as chosen
    /// now.
    #[inline(always)]
    fn settled(&mut self, vcpu: usize) -> bool {
        let epoch = self.epoch;
        let Some(v) = self.vcpus.get_mut(vcpu) else {
            return false;
        };
        let idle = v.active.is_empty() && v.pending.is_empty();
        if idle {
            v.chosen_at = epoch;
        }
        idle
    }

    /// Whether nothing in the model changed since `vcpu`'s list registers were last chosen
    /// or given an interrupt: their values then, and whatever the guest made of them since,
    /// may be loaded again as they are, with the ICH_HCR_EL2 maintenance enables of that
    /// choice, instead of being folded and chosen again (the vCPU is switched in again
    /// with its list registers as it left them, as if it had never left). Any change, even
    /// one that leaves this vCPU's interrupts alone, answers false.
    pub fn unchanged_since_choice(&self, vcpu: usize) -> bool {
        self.vcpus
            .get(vcpu)
            .is_some_and(|v| v.chosen_at == self.epoch)
    }

    /// Whether `vcpu` has an interrupt to take (to wake it from WFI). The guest's own masks
    /// (ICH_VMCR_EL2: priority mask, group enables) are the hypervisor's to apply.
    pub fn has_deliverable(&self, vcpu: usize) -> bool {
        let Some(v) = self.vcpus.get(vcpu) else {
            return false;
        };
        v.pending.iter().any(|intid| {
            self.state(vcpu, intid)
                .is_ok_and(|irq| self.deliverable(irq) && !(irq.active && irq.hw.is_some()))
        })
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
