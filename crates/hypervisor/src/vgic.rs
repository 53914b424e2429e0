//! One VM's virtual GICv3 on the hardware: `partita_core::vgic::Vgic` (the model) joined to the
//! VM's distributor and redistributor windows and to this CPU's list registers.
//!
//! The list registers stay loaded across exits that do not concern interrupts (most MMIO,
//! hypercalls): choosing them costs a scan of every interrupt of the VM. Whatever reads or
//! changes the model first folds the live list registers into it (`sync`) and marks them
//! stale; `before_entry` then lets the model choose them again and requests a maintenance
//! interrupt when interrupts wait for room. A maintenance interrupt disables the virtual CPU
//! interface until that refill (it would otherwise stay asserted at EL2). The guest's
//! distributor and redistributor accesses trap (their windows are not in stage 2) and are
//! emulated by the model. The VM is uniprocessor: vCPU 0 only. This module must never touch
//! the physical distributor.

use partita_core::board::{Board, Region};
use partita_core::devices::{AccessFault, AccessSize, MmioDevice};
use partita_core::vgic::{SgiRequest, Vgic, VgicError, MAX_LIST_REGISTERS, REDISTRIBUTOR_STRIDE};

use crate::arch::aarch64::gic_hyp::{self, ICH_HCR_EN};

/// The VM's only vCPU.
const VCPU: usize = 0;

enum Window {
    Distributor,
    Redistributor,
}

pub struct VirtualGic {
    model: Vgic,
    distributor: Region,
    redistributor: Region,
    list_registers: usize,
    /// The list registers must be chosen again before the next entry.
    stale: bool,
}

impl VirtualGic {
    /// A reset GIC with `board`'s distributor and first redistributor windows; its virtual
    /// timer and the `forwarded` physical interrupts (passed-through timer PPI, destination
    /// table SPIs) are backed by the physical ones of the same INTID.
    pub fn new(board: &Board, forwarded: &[u32]) -> Self {
        let mut model = match Vgic::new(1, board.spis) {
            Ok(model) => model,
            Err(e) => panic!("virtual GIC: {e:?}"),
        };
        for &intid in core::iter::once(&board.timer_virt_irq).chain(forwarded) {
            if let Err(e) = model.set_hw(VCPU, intid, Some(intid)) {
                panic!("forwarded interrupt {intid}: {e:?}");
            }
        }
        VirtualGic {
            model,
            distributor: board.gicd,
            redistributor: Region::new(board.gicr.base, REDISTRIBUTOR_STRIDE),
            list_registers: gic_hyp::list_register_count(),
            stale: true,
        }
    }

    /// Whether a guest access at `ipa` belongs to the distributor or redistributor.
    pub fn claims(&self, ipa: u64) -> bool {
        self.window(ipa).is_some()
    }

    /// The window an access reaches and its offset there.
    fn window(&self, ipa: u64) -> Option<(Window, u64)> {
        let at = Region::new(ipa, 1);
        if self.distributor.contains(&at) {
            Some((Window::Distributor, ipa - self.distributor.base))
        } else if self.redistributor.contains(&at) {
            Some((Window::Redistributor, ipa - self.redistributor.base))
        } else {
            None
        }
    }

    pub fn read(&mut self, ipa: u64, size: AccessSize) -> Result<u64, AccessFault> {
        self.sync();
        match self.window(ipa).ok_or(AccessFault)? {
            (Window::Distributor, offset) => self.model.distributor().read(offset, size),
            (Window::Redistributor, offset) => self.model.redistributors().read(offset, size),
        }
    }

    pub fn write(&mut self, ipa: u64, size: AccessSize, value: u64) -> Result<(), AccessFault> {
        self.sync();
        match self.window(ipa).ok_or(AccessFault)? {
            (Window::Distributor, offset) => self.model.distributor().write(offset, size, value),
            (Window::Redistributor, offset) => {
                self.model.redistributors().write(offset, size, value)
            }
        }
    }

    /// A physical occurrence of an interrupt forwarded to the VM.
    pub fn inject(&mut self, intid: u32) {
        self.sync();
        if let Err(e) = self.model.inject(VCPU, intid) {
            panic!("injecting interrupt {intid}: {e:?}");
        }
    }

    /// Drives the level of an emulated device's interrupt line.
    pub fn set_level(&mut self, intid: u32, level: bool) -> Result<(), VgicError> {
        if self.model.irq(VCPU, intid)?.line_level == level {
            return Ok(());
        }
        self.sync();
        self.model.set_level(VCPU, intid, level)
    }

    /// A trapped ICC_SGI1R_EL1 write from the vCPU.
    pub fn send_sgi(&mut self, value: u64) {
        self.sync();
        // The only vCPU can reach only itself; a request for another target is dropped,
        // as the GIC drops SGIs to PEs that do not exist.
        let _ = self.model.send_sgi(VCPU, SgiRequest::decode(value));
    }

    /// Whether the vCPU has an interrupt to take (wakes it from WFI).
    pub fn has_deliverable(&mut self) -> bool {
        self.sync();
        self.model.has_deliverable(VCPU)
    }

    /// The maintenance interrupt fired: interrupts wait for room, or a level interrupt was
    /// deactivated. The virtual CPU interface stays off until the next entry refills it.
    pub fn maintenance(&mut self) {
        self.sync();
        gic_hyp::set_hcr(0);
    }

    fn live(&self) -> [u64; MAX_LIST_REGISTERS] {
        let mut lrs = [0; MAX_LIST_REGISTERS];
        gic_hyp::read_list_registers(&mut lrs[..self.list_registers]);
        lrs
    }

    /// Folds what the guest did with its list registers into the model, once per exit.
    fn sync(&mut self) {
        if self.stale {
            return;
        }
        let lrs = self.live();
        if let Err(e) = self.model.sync(VCPU, &lrs[..self.list_registers]) {
            panic!("virtual GIC sync: {e:?}");
        }
        self.stale = true;
    }

    /// Loads the list registers the model chooses, if anything changed since they were
    /// loaded, and enables the virtual CPU interface.
    pub fn before_entry(&mut self) {
        if !self.stale {
            return;
        }
        self.stale = false;
        let lrs = self.live();
        let flush = match self.model.flush(VCPU, &lrs[..self.list_registers]) {
            Ok(flush) => flush,
            Err(e) => panic!("virtual GIC flush: {e:?}"),
        };
        gic_hyp::write_list_registers(flush.values());
        gic_hyp::set_hcr(ICH_HCR_EN | flush.hcr);
    }

    /// Empties the list registers when the vCPU leaves the CPU (the model keeps the state).
    pub fn unload(&mut self) {
        self.sync();
        gic_hyp::set_hcr(0);
        gic_hyp::write_list_registers(&[0; MAX_LIST_REGISTERS][..self.list_registers]);
    }
}
