//! The short exit for the commonest device access: a load or store the syndrome describes, to
//! the VM's console UART (its first PL011), that the model accepts (a character written, a flag register
//! polled). The world switch calls it from its data-abort vector with the guest's registers
//! saved (`enter_guest`); when it finishes the access the guest is loaded straight back, without
//! restoring the host's registers, returning to the scheduler's loop or entering again.
//!
//! It does what the general path (`trap::handle`) would do for such an access and skips what
//! it can prove unneeded: no other device or the virtual GIC claims a UART's window (the
//! configuration refuses overlaps), and unless the UART's interrupt line changed, nothing the
//! scheduler or the virtual GIC decides depends on it. A physical interrupt that arrived
//! meanwhile is taken as soon as the guest runs again. The PL011 model stays the truth for
//! registers and interrupts. It must never do anything for another exit: any other syndrome,
//! address or refused access goes back to the general path untouched.

use aarch64_cpu::registers::{Readable, ESR_EL2, FAR_EL2, HPFAR_EL2};

use partita_core::trap::{device_access, fault_ipa};

use crate::arch::aarch64::vectors::GuestRegs;
use crate::counters::ShortExits;
use crate::devices::{Devices, ShortUart};
use crate::vgic::VirtualGic;

/// One VM's short exit while its vCPU is entered (`Vm::enter`).
pub struct UartExit<'a> {
    /// The VM's console UART, the one the short exit serves (others take the general path).
    uart: Option<ShortUart<'a>>,
    vgic: &'a mut VirtualGic,
    counters: ShortExits,
}

impl<'a> UartExit<'a> {
    /// For VM `vm`'s devices and virtual GIC, on this CPU.
    pub fn new(vm: usize, devices: &'a mut Devices, vgic: &'a mut VirtualGic) -> Self {
        UartExit {
            uart: devices.short_uart(vm),
            vgic,
            counters: ShortExits::new(vm),
        }
    }

    /// A data abort taken at `start` (the EL2 clock) with the guest's registers `regs`:
    /// true when it was a UART access, now done (the load's register written, ELR past the
    /// instruction); false, with nothing changed, for any other.
    #[inline]
    pub fn handle(&mut self, regs: &mut GuestRegs, start: u64) -> bool {
        let Some(uart) = self.uart.as_mut() else {
            return false;
        };
        let Some(access) = device_access(ESR_EL2.get()) else {
            return false;
        };
        let ipa = fault_ipa(HPFAR_EL2.get(), FAR_EL2.get());
        let mmio = access.access;
        let store = access
            .write
            .then(|| regs.get(mmio.register) & mmio.size.mask());
        let Some(done) = uart.access(ipa, mmio.size, store) else {
            return false;
        };
        if !access.write {
            regs.set(mmio.register, mmio.load_value(done.value));
        }
        regs.elr = regs.elr.wrapping_add(access.instruction_len);
        if done.irq_changed {
            self.line_changed();
        }
        self.counters.device(start, access.write && done.data);
        true
    }

    /// The vCPU's exit leaves the short path: its short exits are counted.
    pub fn finish(self) {
        self.counters.finish();
    }

    /// The UART's interrupt line changed: the virtual GIC hears of it before the guest runs.
    #[cold]
    fn line_changed(&mut self) {
        if let Some((irq, level)) = self.uart.as_ref().and_then(ShortUart::irq_line) {
            // Validation keeps device interrupts among the board's SPIs.
            let _ = self.vgic.set_level(irq, level);
        }
        self.vgic.before_entry();
    }
}
