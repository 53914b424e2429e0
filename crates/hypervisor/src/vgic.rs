//! A VM's virtual GICv3 on the hardware: `partita_core::vgic::Vgic` (the model, one per VM,
//! held under the VM's lock with its devices) joined to the VM's distributor and
//! redistributor windows and to the list registers of the CPU that runs one of its vCPUs
//! (`VirtualGic`, one per vCPU, owned by that CPU).
//!
//! The list registers stay loaded across exits that do not concern interrupts (most MMIO,
//! hypercalls): reading, folding and choosing them again is work the hot paths (an exit for
//! a UART access, say) need not do. Whatever reads or changes the model first folds the live
//! list registers into it (`sync`) and marks them stale; `before_entry` then lets the model
//! choose them again and requests a maintenance interrupt when interrupts wait for room.
//! Three short cuts keep the model the truth without that work: an injection into loaded
//! list registers may go straight into a free one (`Vgic::inject_loaded`), a vCPU about to
//! wait with nothing left keeps its loaded ones (unfolded when the guest is done with the
//! one interrupt they held and nothing changed since, `Vgic::idle_again`; else folded,
//! `Vgic::settle_loaded`), and a vCPU switched in again with nothing changed in the model
//! gets its parked values back (`Vgic::unchanged_since_choice`), none when the guest had
//! finished them all (`Parked::Finished`). A maintenance interrupt disables the virtual CPU
//! interface until that refill (it would otherwise stay asserted at EL2). The guest's
//! distributor and redistributor accesses trap (their windows are not in stage 2) and are
//! emulated by the model.
//!
//! Several vCPUs: a change one vCPU's CPU makes to another vCPU's interrupts (an SGI, an SPI
//! routed there, a distributor write) is left in the model, and the caller kicks that vCPU
//! (`Vgic::take_touched` says which); its own CPU folds and reloads its list registers. A
//! CPU only ever reads and writes its own list registers. This module must never touch the
//! physical distributor. On a GICv2 board the guest's distributor accesses go to the model's
//! GICv2 front-end and its CPU interface is the hardware's virtual one, mapped into stage 2,
//! so it never traps.

use partita_core::board::{Board, Gic, Region};
use partita_core::devices::{AccessFault, AccessSize, MmioDevice};
use partita_core::vgic::{
    SelfSgi, SgiRequest, Vgic, VgicError, MAX_LIST_REGISTERS, REDISTRIBUTOR_STRIDE,
};

use crate::arch::aarch64::gic_hyp::{self, Visit, ICH_HCR_EN};
use crate::arch::aarch64::stage2::Stage2Map;

enum Window {
    Distributor,
    Redistributor,
}

/// A reset model for a VM with `vcpus` vCPUs on `board`: every vCPU's virtual timer, and
/// vCPU 0's `forwarded` physical interrupts (passed-through timer PPI, destination-table
/// SPIs; validation gives those to VMs with one vCPU only), are backed by the physical ones
/// of the same INTID.
pub fn model(board: &Board, vcpus: usize, forwarded: &[u32]) -> Vgic {
    let mut model = match Vgic::new(vcpus, board.spis) {
        Ok(model) => model,
        Err(e) => panic!("virtual GIC: {e:?}"),
    };
    for vcpu in 0..vcpus {
        let own: &[u32] = if vcpu == 0 { forwarded } else { &[] };
        for &intid in core::iter::once(&board.timer_virt_irq).chain(own) {
            if let Err(e) = model.set_hw(vcpu, intid, Some(intid)) {
                panic!("forwarded interrupt {intid}: {e:?}");
            }
        }
    }
    model.take_touched();
    model
}

/// How `VirtualGic::inject_running` injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injected {
    /// The same interrupt again: list register 0 written, the model unchanged.
    Again,
    /// The short injection: a list register written, the list registers still loaded.
    Short,
    /// The general injection: `before_entry` must choose the list registers.
    General,
}

/// One vCPU's view of its VM's virtual GIC, and this CPU's list registers while it runs.
pub struct VirtualGic {
    vcpu: usize,
    /// The ICC_SGI1R_EL1 values by which the vCPU sends an SGI to itself (`send_sgi`).
    self_sgi: SelfSgi,
    /// The guest sees a GICv2 (the board has one): its distributor window is the model's
    /// GICv2 front-end, its CPU interface the hardware's virtual one (`map_cpu_interface`).
    v2: bool,
    distributor: Region,
    redistributors: Region,
    list_registers: usize,
    /// The list registers as last read (`sync`) or loaded (`before_entry`); kept here so
    /// the entry path copies no array.
    lrs: [u64; MAX_LIST_REGISTERS],
    /// Bit n: ICH_LR<n>_EL2 may hold a non-zero value. The others hold 0, which the guest
    /// cannot change, so they are neither read back nor written again (a timer tick then
    /// touches one list register instead of all four). Never a bit beyond the vCPU
    /// interface's list registers. All of those set at first: the reset value of a list
    /// register is UNKNOWN.
    loaded: u16,
    /// The list registers must be chosen again before the next entry.
    stale: bool,
    /// What `lrs` holds of a vCPU that left the CPU with its list registers not folded into
    /// the model (`unload` takes no lock; the next `sync` or choice folds them).
    parked: Parked,
    /// The maintenance enables of the last choice (`Vgic::flush_in_place`), for ICH_HCR_EL2.
    hcr: u64,
}

impl VirtualGic {
    /// vCPU `vcpu` of a VM with `vcpus` vCPUs, with `board`'s distributor window and one
    /// redistributor frame per vCPU.
    pub fn new(board: &Board, vcpu: usize, vcpus: usize) -> Self {
        // At most `MAX_LIST_REGISTERS` (16).
        let list_registers = gic_hyp::list_register_count();
        VirtualGic {
            vcpu,
            self_sgi: SelfSgi::new(vcpu),
            v2: matches!(board.gic, Gic::V2(_)),
            distributor: board.gic.distributor(),
            redistributors: match &board.gic {
                Gic::V3(gic) => Region::new(gic.gicr.base, REDISTRIBUTOR_STRIDE * vcpus as u64),
                Gic::V2(_) => Region::new(0, 0),
            },
            list_registers,
            lrs: [0; MAX_LIST_REGISTERS],
            loaded: ((1u32 << list_registers) - 1) as u16,
            stale: true,
            parked: Parked::No,
            hcr: 0,
        }
    }

    /// Maps a GICv2 board's virtual CPU interface where the guest finds its CPU interface
    /// (nothing to map for a GICv3, whose CPU interface is system registers).
    pub fn map_cpu_interface(board: &Board, stage2: &mut Stage2Map) {
        if let Gic::V2(gic) = &board.gic {
            if let Err(e) = stage2.map_device(gic.gicc.base, gic.gicv.base, gic.gicc.size) {
                panic!("stage-2 map of the virtual CPU interface failed: {e:?}");
            }
        }
    }

    /// Whether a guest access at `ipa` belongs to the distributor or a redistributor.
    pub fn claims(&self, ipa: u64) -> bool {
        self.window(ipa).is_some()
    }

    /// The window an access reaches and its offset there.
    fn window(&self, ipa: u64) -> Option<(Window, u64)> {
        let at = Region::new(ipa, 1);
        if self.distributor.contains(&at) {
            Some((Window::Distributor, ipa - self.distributor.base))
        } else if self.redistributors.contains(&at) {
            Some((Window::Redistributor, ipa - self.redistributors.base))
        } else {
            None
        }
    }

    pub fn read(
        &mut self,
        model: &mut Vgic,
        ipa: u64,
        size: AccessSize,
    ) -> Result<u64, AccessFault> {
        self.sync(model);
        match self.window(ipa).ok_or(AccessFault)? {
            (Window::Distributor, offset) if self.v2 => {
                model.distributor_v2(self.vcpu).read(offset, size)
            }
            (Window::Distributor, offset) => model.distributor().read(offset, size),
            (Window::Redistributor, offset) => model.redistributors().read(offset, size),
        }
    }

    pub fn write(
        &mut self,
        model: &mut Vgic,
        ipa: u64,
        size: AccessSize,
        value: u64,
    ) -> Result<(), AccessFault> {
        self.sync(model);
        match self.window(ipa).ok_or(AccessFault)? {
            (Window::Distributor, offset) if self.v2 => {
                model.distributor_v2(self.vcpu).write(offset, size, value)
            }
            (Window::Distributor, offset) => model.distributor().write(offset, size, value),
            (Window::Redistributor, offset) => model.redistributors().write(offset, size, value),
        }
    }

    /// A physical occurrence of an interrupt forwarded to this vCPU (its PPIs) or to the VM
    /// (an SPI, which the model routes). True when the short injection took it: its list
    /// register is written and `before_entry` has nothing to do.
    #[inline(always)]
    pub fn inject(&mut self, model: &mut Vgic, intid: u32) -> bool {
        if self.inject_loaded(model, intid) {
            return true;
        }
        self.inject_general(model, intid);
        false
    }

    /// `inject` for an interrupt taken while the vCPU runs (the short exit's IRQ), asking
    /// first whether it is the same SGI or PPI again into list register 0 with nothing
    /// changed since (`Vgic::inject_again`: a timer tick after the last one, the guest
    /// busy between them): then that list register is written and nothing else is
    /// touched, no interrupt of any vCPU changes, and nobody needs a kick.
    #[inline(always)]
    pub fn inject_running(&mut self, model: &mut Vgic, intid: u32) -> Injected {
        if self.stale || self.parked != Parked::No {
            self.inject_general(model, intid);
            return Injected::General;
        }
        let free = gic_hyp::empty_list_registers();
        if self.inject_again(model, intid, free) {
            return Injected::Again;
        }
        if self.inject_free(model, intid, free) {
            return Injected::Short;
        }
        self.inject_general(model, intid);
        Injected::General
    }

    /// `inject_running`'s first case alone, for an IRQ exit's quick part: true when
    /// `intid` went again into list register 0 (`inject_again`), and nothing else changed.
    #[inline(always)]
    pub fn inject_again_running(&mut self, model: &Vgic, intid: u32) -> bool {
        !self.stale
            && self.parked == Parked::No
            && self.inject_again(model, intid, gic_hyp::empty_list_registers())
    }

    /// `inject` when the short injection did not take the interrupt: fold, inject, and
    /// let `before_entry` choose the list registers again.
    #[inline(never)]
    fn inject_general(&mut self, model: &mut Vgic, intid: u32) {
        self.sync(model);
        if let Err(e) = model.inject(self.vcpu, intid) {
            panic!("injecting interrupt {intid}: {e:?}");
        }
    }

    /// The short injection (`Vgic::inject_loaded`): while the list registers are loaded,
    /// `intid` goes straight into a free one when the model allows it. True when it did
    /// (the list registers stay loaded, `before_entry` has nothing to do).
    #[inline(always)]
    fn inject_loaded(&mut self, model: &mut Vgic, intid: u32) -> bool {
        if self.stale || self.parked != Parked::No {
            return false;
        }
        self.inject_free(model, intid, gic_hyp::empty_list_registers())
    }

    /// The same SGI or PPI again into list register 0, the model unchanged since it was
    /// last injected there (`Vgic::inject_again`); `free` as for `inject_free`. True when
    /// the list register is written.
    #[inline(always)]
    fn inject_again(&mut self, model: &Vgic, intid: u32, free: u16) -> bool {
        match model.inject_again(self.vcpu, intid, free) {
            Some(value) => {
                gic_hyp::write_list_register(0, value);
                self.loaded |= 1;
                true
            }
            None => false,
        }
    }

    /// `inject_loaded` with the list registers loaded and `free` read (ICH_ELRSR_EL2).
    #[inline(always)]
    fn inject_free(&mut self, model: &mut Vgic, intid: u32, free: u16) -> bool {
        match model.inject_loaded(self.vcpu, intid, free, self.list_registers) {
            // `lrs` is not written: while the list registers are loaded, the next `sync` or
            // `unload` reads every one `loaded` marks.
            Ok(Some((slot, value))) => {
                gic_hyp::write_list_register(slot, value);
                self.loaded |= 1 << slot;
                true
            }
            Ok(None) => false,
            Err(e) => injection_failed(intid, e),
        }
    }

    /// Drives the level of an emulated device's interrupt line (an SPI).
    pub fn set_level(
        &mut self,
        model: &mut Vgic,
        intid: u32,
        level: bool,
    ) -> Result<(), VgicError> {
        if model.irq(self.vcpu, intid)?.line_level == level {
            return Ok(());
        }
        self.sync(model);
        model.set_level(self.vcpu, intid, level)
    }

    /// A trapped ICC_SGI1R_EL1 write from the vCPU. Targets the VM does not have are
    /// dropped, as the GIC drops SGIs to PEs that do not exist. True when the short
    /// injection took it: its list register is written and `before_entry` has nothing to do.
    ///
    /// A self-SGI as a port sends it (`SelfSgi`: one compare, no decoding) is an injection
    /// into this vCPU, which may take the short one; anything else, and a self-SGI the
    /// short injection refuses, takes the general path (`send_sgi_general`).
    #[inline(always)]
    pub fn send_sgi(&mut self, model: &mut Vgic, value: u64) -> bool {
        if let Some(intid) = self.self_sgi(value) {
            if !(self.stale || self.parked != Parked::No) {
                let free = gic_hyp::empty_list_registers();
                if self.inject_again(model, intid, free) || self.inject_free(model, intid, free) {
                    return true;
                }
            }
        }
        self.send_sgi_general(model, value);
        false
    }

    /// The INTID of a trapped ICC_SGI1R_EL1 write of `value` when it is a self-SGI as a
    /// port sends it (`SelfSgi`: one compare, no decoding).
    #[inline(always)]
    pub fn self_sgi(&self, value: u64) -> Option<u32> {
        self.self_sgi.intid(value)
    }

    /// `send_sgi` when the short injection did not take it: fold, make it pending on its
    /// targets, and let `before_entry` choose the list registers again.
    #[inline(never)]
    fn send_sgi_general(&mut self, model: &mut Vgic, value: u64) {
        self.sync(model);
        let _ = model.send_sgi(self.vcpu, SgiRequest::decode(value));
    }

    /// For the short wait, whose wake-up injects with `inject_running`: unless `Settled::No`,
    /// nothing is there to wake the vCPU, so neither `has_deliverable` nor `before_entry`
    /// need run before it waits (`settled`).
    pub fn settled_for_short_wait(&mut self, model: &mut Vgic) -> Settled {
        self.settled(model)
    }

    /// What `settled` holds on this CPU for its answer `Settled::Again`: list registers
    /// loaded as chosen, no maintenance asked, list register 0 finished. The model's part
    /// (`Vgic::idle_again`: unchanged since the interrupt went into list register 0) is the
    /// caller's to know (`ShortExit::quiet`).
    #[inline(always)]
    pub fn settled_again_here(&self) -> bool {
        !self.stale
            && self.parked == Parked::No
            && self.hcr == 0
            && gic_hyp::empty_list_registers() & 1 != 0
    }

    /// At a WFI the general path or the hand-over handles (`Vm::has_deliverable_at_wfi`):
    /// true when nothing is there to take (`settled`). The list registers are then as they
    /// were (`Settled::Again`), or folded with nothing live, pending or active
    /// (`Settled::Folded`): the state `sync` leaves (the list registers to be chosen again
    /// before the next entry), without `sync`'s reads of the list registers or
    /// `has_deliverable`'s walk. False: the model unchanged but for the folded list
    /// registers; ask `has_deliverable`.
    pub fn settled_at_wfi(&mut self, model: &mut Vgic) -> bool {
        match self.settled(model) {
            Settled::No => false,
            Settled::Again => true,
            Settled::Folded => {
                self.stale = true;
                true
            }
        }
    }

    /// The vCPU is about to wait for an interrupt, its list registers loaded: whether
    /// nothing is there to wake it. Either the guest is done with the one interrupt they
    /// held and nothing changed since (`Vgic::idle_again`): they stay as they are, list
    /// register 0 not folded, so that the same interrupt waking it needs no fold and a
    /// switch takes them away and brings them back as they are (`unload`, `before_entry`); or
    /// `Vgic::settle_loaded` folds those the guest finished and finds nothing live,
    /// pending or active. `Settled::No`: the general answer is needed; also after a choice
    /// that asked for a maintenance interrupt, which the general path clears.
    #[inline(always)]
    fn settled(&mut self, model: &mut Vgic) -> Settled {
        if self.stale || self.parked != Parked::No || self.hcr != 0 {
            return Settled::No;
        }
        let free = gic_hyp::empty_list_registers();
        if model.idle_again(self.vcpu, free) {
            return Settled::Again;
        }
        match model.settle_loaded(self.vcpu, free) {
            Ok(true) => Settled::Folded,
            Ok(false) => Settled::No,
            Err(e) => panic!("virtual GIC settle: {e:?}"),
        }
    }

    /// Whether the vCPU has an interrupt to take (wakes it from WFI).
    pub fn has_deliverable(&mut self, model: &mut Vgic) -> bool {
        self.sync(model);
        model.has_deliverable(self.vcpu)
    }

    /// The maintenance interrupt fired: interrupts wait for room, or a level interrupt was
    /// deactivated. The virtual CPU interface stays off until the next entry refills it.
    pub fn maintenance(&mut self, model: &mut Vgic) {
        self.sync(model);
        gic_hyp::set_hcr(0);
    }

    /// Another CPU changed this vCPU's interrupts (it was kicked): when its list registers
    /// are live on this CPU, they are folded and chosen again before the next entry.
    pub fn refresh(&mut self, model: &mut Vgic) {
        self.sync(model);
    }

    /// Folds what the guest did with its list registers into the model, once per exit.
    fn sync(&mut self, model: &mut Vgic) {
        if self.parked != Parked::No {
            self.parked = Parked::No;
            if let Err(e) = model.sync(self.vcpu, &self.lrs[..self.list_registers]) {
                panic!("virtual GIC sync: {e:?}");
            }
            self.lrs[..self.list_registers].fill(0);
            return;
        }
        if self.stale {
            return;
        }
        gic_hyp::visit_list_registers(self.loaded, &mut self.lrs, Visit::Read);
        if let Err(e) = model.sync(self.vcpu, &self.lrs[..self.list_registers]) {
            panic!("virtual GIC sync: {e:?}");
        }
        self.stale = true;
    }

    /// Loads the list registers the model chooses, if anything changed since they were
    /// loaded, and enables the virtual CPU interface. `stale` means `sync` ran since the
    /// last load and the guest has not run since, so `lrs` still holds the live values.
    #[inline(always)]
    pub fn before_entry(&mut self, model: &mut Vgic) {
        if !self.stale {
            return;
        }
        if self.parked == Parked::Finished && model.unchanged_since_choice(self.vcpu) {
            // Switched in again, the guest had finished every list register, and nothing
            // changed in the model since: they stay empty, as `choose` would leave them (the
            // real-time VM's usual switch-in, inline).
            self.stale = false;
            self.parked = Parked::No;
            gic_hyp::set_hcr(ICH_HCR_EN | self.hcr);
            return;
        }
        self.choose(model);
    }

    /// `before_entry` when the list registers are stale.
    #[inline(never)]
    fn choose(&mut self, model: &mut Vgic) {
        self.stale = false;
        if self.parked == Parked::No
            && self.loaded == 0
            && model.choose_idle(self.vcpu).unwrap_or(false)
        {
            // Nothing to fold or to choose, and every list register empty already (emptied
            // when the vCPU left, or never loaded): only the interface is enabled. `lrs` is
            // all 0 as the list registers (`unload`).
            self.hcr = 0;
            gic_hyp::set_hcr(ICH_HCR_EN);
            return;
        }
        let parked = core::mem::replace(&mut self.parked, Parked::No);
        if parked == Parked::Values && model.unchanged_since_choice(self.vcpu) {
            // Switched in again and nothing changed in the model since the vCPU left: its
            // list registers go back as it left them, still the model's live ones
            // (`before_entry` takes the same case when the guest had finished them all).
            self.load_list_registers();
            gic_hyp::set_hcr(ICH_HCR_EN | self.hcr);
            return;
        }
        // Parked list-register values are folded by the flush itself: it syncs what `lrs`
        // holds for the entries the model still has live.
        let lrs = &mut self.lrs[..self.list_registers];
        self.hcr = match model.flush_in_place(self.vcpu, lrs) {
            Ok(hcr) => hcr,
            Err(e) => panic!("virtual GIC flush: {e:?}"),
        };
        self.load_list_registers();
        gic_hyp::set_hcr(ICH_HCR_EN | self.hcr);
    }

    /// Writes `lrs` to the list registers, skipping those that hold 0 and stay 0.
    fn load_list_registers(&mut self) {
        let values = self.lrs.get(..self.list_registers).unwrap_or_default();
        self.loaded = gic_hyp::write_list_registers(values, self.loaded);
    }

    /// A physical occurrence of `intid` for this vCPU as it is switched in (its virtual
    /// timer expired while it was away). When its list registers were folded before it left
    /// (it left at a WFI: `sync`, then `unload` emptied them all), every one is free and the
    /// model has nothing else for it, `intid` goes straight into one (`Vgic::inject_loaded`
    /// with all of them free) and they count as loaded: no fold, and no choice at the entry.
    /// Otherwise `inject` without the short injection's attempt, which never succeeds on
    /// list registers `unload` parked (out of line, as its panic: the usual case saves few
    /// registers).
    pub fn inject_switched_in(&mut self, model: &mut Vgic, intid: u32) {
        if self.stale && self.parked == Parked::No && self.loaded == 0 {
            // Every list register is free; the short injection takes the lowest free one,
            // so only that one is offered: the slot is known before the model answers.
            let free = 1;
            match model.inject_loaded(self.vcpu, intid, free, self.list_registers) {
                Ok(Some((slot, value))) => {
                    // `unload` left every value of `lrs` 0, as the list registers.
                    if let Some(lr) = self.lrs.get_mut(slot) {
                        *lr = value;
                    }
                    gic_hyp::write_list_register(slot, value);
                    self.loaded = 1 << slot;
                    self.stale = false;
                    self.hcr = 0;
                    gic_hyp::set_hcr(ICH_HCR_EN);
                    return;
                }
                Ok(None) => {}
                Err(e) => injection_failed(intid, e),
            }
        }
        self.inject_general(model, intid);
    }

    /// Empties the list registers when the vCPU leaves the CPU. Their contents stay here
    /// until the next `sync` folds them into the model, so taking a vCPU off the CPU needs
    /// no lock: the path of a higher-priority VM that preempts it never waits for this VM.
    #[inline(always)]
    pub fn unload(&mut self) {
        gic_hyp::set_hcr(0);
        if !self.stale {
            // When the guest finished every one, they park as 0: a fold reads only their
            // state (`Vgic::sync`), and there is nothing to load back (`choose`).
            let (visit, parked) = if self.loaded & !gic_hyp::empty_list_registers() == 0 {
                (Visit::Empty, Parked::Finished)
            } else {
                (Visit::ReadAndEmpty, Parked::Values)
            };
            gic_hyp::visit_list_registers(self.loaded, &mut self.lrs, visit);
            self.parked = parked;
            self.stale = true;
        } else {
            // Folded already: their values are of no more use, and `lrs` is left all 0
            // (`inject_switched_in` relies on it).
            gic_hyp::visit_list_registers(self.loaded, &mut self.lrs, Visit::Empty);
        }
        self.loaded = 0;
    }
}

/// What `VirtualGic::lrs` holds of a vCPU whose list registers were taken away unfolded
/// (`VirtualGic::unload`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parked {
    /// Nothing: the model has them all.
    No,
    /// The values they held.
    Values,
    /// The guest had finished every one (free, ICH_ELRSR_EL2): `lrs` is all 0, which a fold
    /// takes the same way (it reads only their state), and nothing is to be loaded back.
    Finished,
}

/// How a vCPU about to wait finds its list registers (`VirtualGic::settled`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Something may be there to take: the general answer is needed.
    No,
    /// As they were: the guest is done with the one interrupt they held, nothing changed.
    Again,
    /// Folded, nothing live, pending or active.
    Folded,
}

/// The model refused an injection the hypervisor asked for (an INTID it does not have).
#[cold]
#[inline(never)]
fn injection_failed(intid: u32, e: VgicError) -> ! {
    panic!("injecting interrupt {intid}: {e:?}")
}
