//! AArch64 at EL2: boot entry, exception vectors, Partita's own translation, stage-2 tables,
//! EL1 context switching, PSCI and semihosting calls to the firmware. Everything that needs
//! `unsafe` to touch the CPU lives under this module; nothing here knows about VMs' policy.

pub mod entry;
pub mod fp;
pub mod gic;
pub mod gic_hyp;
pub mod gic_hyp_v2;
pub mod gic_v2;
pub mod gic_v3;
pub mod mmu;
pub mod psci;
pub mod semihosting;
pub mod stage2;
pub mod sysreg;
pub mod timer;
pub mod vectors;
