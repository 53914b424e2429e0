//! Calls to the platform's PSCI firmware (QEMU's built-in PSCI with the SMC conduit when
//! `virtualization=on`): power the machine off and start secondary CPUs. Guests' own PSCI
//! calls never reach this module; they are emulated in `hypercall.rs`.

use smccc::{psci, Smc};

use super::entry::secondary_entry;

/// Powers the machine off; QEMU exits with status 0.
pub fn system_off() -> ! {
    let result = psci::system_off::<Smc>();
    panic!("PSCI SYSTEM_OFF returned {result:?}");
}

/// Starts CPU `cpu` (MPIDR affinity `mpidr`) at `secondary_entry` with x0 = `cpu`.
pub fn cpu_on(mpidr: u64, cpu: usize) -> Result<(), psci::error::Error> {
    psci::cpu_on::<Smc>(mpidr, secondary_entry as *const () as u64, cpu as u64)
}
