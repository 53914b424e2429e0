//! The short exit for the commonest device access: a load or store the syndrome describes, to
//! the VM's console UART (its first PL011), that the model accepts (a character written, a
//! flag register polled). The world switch's short exit (`short_exit`) calls it for a data
//! abort with the guest's registers saved (`enter_guest`); when it finishes the access the
//! guest is loaded straight back, without restoring the host's registers, returning to the
//! scheduler's loop or entering again.
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
use crate::devices::Devices;

/// One VM's short exit for UART accesses while one of its vCPUs is entered (`Vm::enter`).
pub struct UartExit {
    vm: usize,
    /// Where the VM's console UART is among its devices (`Devices::console_slot`).
    slot: Option<usize>,
}

/// What the short exit did with a data abort.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// Nothing: the general path takes it.
    No,
    /// The access is finished (`data_write`: a character written to the data register).
    Yes { data_write: bool },
    /// The access is finished and the UART's interrupt line changed: the virtual GIC must
    /// hear of it before the guest runs.
    LineChanged { data_write: bool },
}

impl UartExit {
    /// For VM `vm`, whose console UART is at `slot` among its devices, on this CPU.
    pub fn new(vm: usize, slot: Option<usize>) -> Self {
        UartExit { vm, slot }
    }

    /// A data abort with the guest's registers `regs`, the VM's devices locked by the
    /// caller: a console-UART access is done (the load's register written, ELR past the
    /// instruction); any other changes nothing.
    #[inline]
    pub fn handle(&self, regs: &mut GuestRegs, devices: &mut Devices) -> Done {
        let Some(slot) = self.slot else {
            return Done::No;
        };
        let Some(access) = device_access(ESR_EL2.get()) else {
            return Done::No;
        };
        let ipa = fault_ipa(HPFAR_EL2.get(), FAR_EL2.get());
        let mmio = access.access;
        let store = access
            .write
            .then(|| regs.get(mmio.register) & mmio.size.mask());
        let Some(done) = devices.uart_access(slot, self.vm, ipa, mmio.size, store) else {
            return Done::No;
        };
        if !access.write {
            regs.set(mmio.register, mmio.load_value(done.value));
        }
        regs.elr = regs.elr.wrapping_add(access.instruction_len);
        let data_write = access.write && done.data;
        if done.irq_changed {
            Done::LineChanged { data_write }
        } else {
            Done::Yes { data_write }
        }
    }
}
