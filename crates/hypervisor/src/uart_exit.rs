//! The short exit for the commonest device access: a load or store the syndrome describes, to
//! the VM's console UART (its first PL011), that the model accepts (a character written, a
//! flag register polled). The world switch's data-abort vector calls it through
//! `ShortExit::data_abort` with the guest's caller-saved registers saved (`CallerSaved`), or
//! the general short exit with all of them for an access that names x19..x29; when it
//! finishes the access the guest is loaded straight back, without restoring the host's
//! registers, returning to the scheduler's loop or entering again.
//!
//! It does what the general path (`trap::handle`) would do for such an access and skips what
//! it can prove unneeded: no other device or the virtual GIC claims a UART's window (the
//! configuration refuses overlaps), and unless the UART's interrupt line changed, nothing the
//! scheduler or the virtual GIC decides depends on it. A physical interrupt that arrived
//! meanwhile is taken as soon as the guest runs again. The PL011 model stays the truth for
//! registers and interrupts. It must never do anything for another exit: any other syndrome,
//! address or refused access goes back to the general path untouched.

use aarch64_cpu::registers::{Readable, ESR_EL2, FAR_EL2, HPFAR_EL2};

use partita_core::trap::{device_access, fault_ipa, Register};

use crate::arch::aarch64::vectors::{CallerSaved, GuestRegs};
use crate::devices::Devices;

/// The guest's registers as a short exit has them saved.
pub trait Registers {
    /// Register `r`'s value; `None` when it is not saved (then it can be neither read nor
    /// written).
    fn read(&self, r: Register) -> Option<u64>;
    /// Writes register `r` (one `read` found saved).
    fn write(&mut self, r: Register, value: u64);
    /// Moves ELR past the trapped instruction of `len` bytes.
    fn advance(&mut self, len: u64);
    /// x0..x18, which are always saved.
    fn caller_saved(&mut self) -> &mut [u64];
}

impl Registers for GuestRegs {
    #[inline]
    fn read(&self, r: Register) -> Option<u64> {
        Some(self.get(r))
    }
    #[inline]
    fn write(&mut self, r: Register, value: u64) {
        self.set(r, value);
    }
    #[inline]
    fn advance(&mut self, len: u64) {
        self.elr = self.elr.wrapping_add(len);
    }
    #[inline]
    fn caller_saved(&mut self) -> &mut [u64] {
        self.caller_saved_mut()
    }
}

impl Registers for CallerSaved {
    #[inline]
    fn read(&self, r: Register) -> Option<u64> {
        self.get(r)
    }
    #[inline]
    fn write(&mut self, r: Register, value: u64) {
        self.set(r, value);
    }
    #[inline]
    fn advance(&mut self, len: u64) {
        CallerSaved::advance(self, len);
    }
    #[inline]
    fn caller_saved(&mut self) -> &mut [u64] {
        CallerSaved::caller_saved(self)
    }
}

/// One VM's short exit for UART accesses while one of its vCPUs is entered (`short_exit::enter`).
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
    /// Nothing, because the access names a register that is not saved.
    Unsaved,
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
    #[inline(always)]
    pub fn handle<R: Registers>(&self, regs: &mut R, devices: &mut Devices) -> Done {
        let Some(slot) = self.slot else {
            return Done::No;
        };
        let Some(access) = device_access(ESR_EL2.get()) else {
            return Done::No;
        };
        let mmio = access.access;
        let Some(register) = regs.read(mmio.register) else {
            return Done::Unsaved;
        };
        let ipa = fault_ipa(HPFAR_EL2.get(), FAR_EL2.get());
        let store = access.write.then(|| register & mmio.size.mask());
        let Some(done) = devices.uart_access(slot, self.vm, ipa, mmio.size, store) else {
            return Done::No;
        };
        if !access.write {
            regs.write(mmio.register, mmio.load_value(done.value));
        }
        regs.advance(access.instruction_len);
        let data_write = access.write && done.data;
        if done.irq_changed {
            Done::LineChanged { data_write }
        } else {
            Done::Yes { data_write }
        }
    }
}
