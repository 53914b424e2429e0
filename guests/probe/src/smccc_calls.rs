//! SMCCC calls the probe makes, through either conduit, with results decoded the SMCCC way.
//!
//! Function IDs and the calling sequence come from the `smccc` crate; Partita's vendor call
//! ID is from Partita's hypercall contract.

pub use smccc::arch::SMCCC_VERSION;
pub use smccc::psci::{
    PSCI_AFFINITY_INFO_64, PSCI_CPU_ON_64, PSCI_FEATURES, PSCI_SYSTEM_OFF, PSCI_SYSTEM_RESET,
    PSCI_VERSION,
};

/// Partita's vendor-specific hypervisor call: x0 = 0, x1 = (major << 16) | minor.
pub const PARTITA_VERSION: u32 = 0xc600_0000;
/// SMCCC's NOT_SUPPORTED, and PSCI's.
pub const NOT_SUPPORTED: i64 = -1;
pub const INVALID_PARAMETERS: i64 = -2;
pub const ALREADY_ON: i64 = -4;

/// How a call reaches Partita: both must work from EL1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conduit {
    Hvc,
    Smc,
}

/// x0..x3 after a call.
#[derive(Clone, Copy, Debug)]
pub struct Reply {
    pub x: [u64; 4],
    function: u32,
}

impl Reply {
    /// x0 as a signed status: 32 bits for SMC32/HVC32 functions (bit 30 of the ID clear),
    /// whose upper half of x0 SMCCC leaves unspecified.
    pub fn status(&self) -> i64 {
        if self.function & (1 << 30) == 0 {
            i64::from(self.x[0] as u32 as i32)
        } else {
            self.x[0] as i64
        }
    }
}

pub fn call(conduit: Conduit, function: u32, args: [u64; 3]) -> Reply {
    call_with(conduit, function, &args)
}

/// A call with x1.. = `args` (at most 17; the rest zero).
pub fn call_with(conduit: Conduit, function: u32, args: &[u64]) -> Reply {
    let mut regs = [0u64; 17];
    let n = args.len().min(regs.len());
    regs[..n].copy_from_slice(&args[..n]);
    let out = match conduit {
        Conduit::Hvc => smccc::hvc64(function, regs),
        Conduit::Smc => smccc::smc64(function, regs),
    };
    Reply {
        x: [out[0], out[1], out[2], out[3]],
        function,
    }
}

pub fn hvc(function: u32, args: [u64; 3]) -> Reply {
    call(Conduit::Hvc, function, args)
}

/// PSCI SYSTEM_OFF; returns only if Partita refused.
pub fn system_off() {
    hvc(PSCI_SYSTEM_OFF, [0; 3]);
}

/// PSCI SYSTEM_RESET; returns only if Partita refused.
pub fn system_reset() {
    hvc(PSCI_SYSTEM_RESET, [0; 3]);
}
