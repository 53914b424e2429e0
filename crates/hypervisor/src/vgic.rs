//! One VM's virtual GICv3 on the hardware: `partita_core::vgic::Vgic` (the model) joined to the
//! VM's distributor and redistributor windows and to this CPU's list registers.
//!
//! The list registers stay loaded across exits that do not concern interrupts (most MMIO,
//! hypercalls): reading, folding and choosing them again is work the hot paths (an exit for
//! a UART access, say) need not do. Whatever reads or
//! changes the model first folds the live list registers into it (`sync`) and marks them
//! stale; `before_entry` then lets the model choose them again and requests a maintenance
//! interrupt when interrupts wait for room. A maintenance interrupt disables the virtual CPU
//! interface until that refill (it would otherwise stay asserted at EL2). The guest's
//! distributor and redistributor accesses trap (their windows are not in stage 2) and are
//! emulated by the model. On a GICv2 board the distributor window is the model's GICv2
//! front-end and the CPU interface window is the hardware's virtual CPU interface, mapped
//! into stage 2 (`map_cpu_interface`), so only distributor accesses trap. The VM is
//! uniprocessor: vCPU 0 only. This module must never touch the physical distributor.

use partita_core::board::{Board, Gic, Region};
use partita_core::devices::{AccessFault, AccessSize, MmioDevice};
use partita_core::vgic::{SgiRequest, Vgic, VgicError, MAX_LIST_REGISTERS};

use crate::arch::aarch64::gic_hyp::{self, ICH_HCR_EN};
use crate::arch::aarch64::stage2::Stage2Map;

/// The VM's only vCPU.
const VCPU: usize = 0;

enum Window {
    Distributor,
    Redistributor,
}

pub struct VirtualGic {
    model: Vgic,
    /// The guest sees a GICv2 (the board has one).
    v2: bool,
    distributor: Region,
    redistributor: Region,
    list_registers: usize,
    /// The list registers as last read (`sync`) or loaded (`before_entry`); kept here so
    /// the entry path copies no array.
    lrs: [u64; MAX_LIST_REGISTERS],
    /// Bit n: ICH_LR<n>_EL2 may hold a non-zero value. The others hold 0, which the guest
    /// cannot change, so they are neither read back nor written again (a timer tick then
    /// touches one list register instead of all four). All set at first: the reset value
    /// of a list register is UNKNOWN.
    loaded: u16,
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
        let [distributor, redistributor] = board.gic.guest_windows();
        VirtualGic {
            model,
            v2: matches!(board.gic, Gic::V2(_)),
            distributor,
            redistributor,
            list_registers: gic_hyp::list_register_count(),
            lrs: [0; MAX_LIST_REGISTERS],
            loaded: u16::MAX,
            stale: true,
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
            (Window::Distributor, offset) if self.v2 => {
                self.model.distributor_v2(VCPU).read(offset, size)
            }
            (Window::Distributor, offset) => self.model.distributor().read(offset, size),
            (Window::Redistributor, offset) => self.model.redistributors().read(offset, size),
        }
    }

    pub fn write(&mut self, ipa: u64, size: AccessSize, value: u64) -> Result<(), AccessFault> {
        self.sync();
        match self.window(ipa).ok_or(AccessFault)? {
            (Window::Distributor, offset) if self.v2 => {
                self.model.distributor_v2(VCPU).write(offset, size, value)
            }
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

    /// Folds what the guest did with its list registers into the model, once per exit.
    fn sync(&mut self) {
        if self.stale {
            return;
        }
        for (n, lr) in self.lrs[..self.list_registers].iter_mut().enumerate() {
            if self.loaded & (1 << n) != 0 {
                *lr = gic_hyp::read_list_register(n);
            }
        }
        if let Err(e) = self.model.sync(VCPU, &self.lrs[..self.list_registers]) {
            panic!("virtual GIC sync: {e:?}");
        }
        self.stale = true;
    }

    /// Loads the list registers the model chooses, if anything changed since they were
    /// loaded, and enables the virtual CPU interface. `stale` means `sync` ran since the
    /// last load and the guest has not run since, so `lrs` still holds the live values.
    pub fn before_entry(&mut self) {
        if !self.stale {
            return;
        }
        self.stale = false;
        let lrs = &mut self.lrs[..self.list_registers];
        let hcr = match self.model.flush_in_place(VCPU, lrs) {
            Ok(hcr) => hcr,
            Err(e) => panic!("virtual GIC flush: {e:?}"),
        };
        self.load_list_registers();
        gic_hyp::set_hcr(ICH_HCR_EN | hcr);
    }

    /// Writes `lrs` to the list registers, skipping those that hold 0 and stay 0.
    fn load_list_registers(&mut self) {
        let mut loaded = 0;
        for (n, &value) in self.lrs[..self.list_registers].iter().enumerate() {
            if value != 0 || self.loaded & (1 << n) != 0 {
                gic_hyp::write_list_register(n, value);
            }
            if value != 0 {
                loaded |= 1 << n;
            }
        }
        self.loaded = loaded;
    }

    /// Empties the list registers when the vCPU leaves the CPU (the model keeps the state).
    pub fn unload(&mut self) {
        self.sync();
        gic_hyp::set_hcr(0);
        // Element by element: assigning a whole zero array is a 128-byte `memset` call,
        // which costs more than the switch's few list registers.
        for (n, lr) in self.lrs[..self.list_registers].iter_mut().enumerate() {
            if self.loaded & (1 << n) != 0 {
                gic_hyp::write_list_register(n, 0);
            }
            *lr = 0;
        }
        self.loaded = 0;
    }
}
