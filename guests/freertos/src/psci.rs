//! Powering the machine (natively) or the VM (under Partita) off with PSCI SYSTEM_OFF,
//! through the conduit the device tree's psci node names (`method = "smc"` on QEMU with
//! virtualization on, `"hvc"` under a hypervisor). Without a psci node the guest halts.

use crate::console;
use core::sync::atomic::{AtomicU8, Ordering};
use fdt::Fdt;
use smccc::{Hvc, Smc};

const NONE: u8 = 0;
const HVC: u8 = 1;
const SMC: u8 = 2;

/// The conduit found at start-up.
static CONDUIT: AtomicU8 = AtomicU8::new(NONE);

/// Reads the PSCI conduit from the device tree; call once at start-up.
pub fn init(fdt: &Fdt<'_>) {
    let method = fdt
        .find_compatible(&["arm,psci-1.0", "arm,psci-0.2", "arm,psci"])
        .and_then(|node| node.property("method"))
        .and_then(|property| property.as_str());
    let conduit = match method {
        Some("hvc") => HVC,
        Some("smc") => SMC,
        _ => NONE,
    };
    CONDUIT.store(conduit, Ordering::Relaxed);
}

/// The conduit's name for the banner.
pub fn conduit_name() -> &'static str {
    match CONDUIT.load(Ordering::Relaxed) {
        HVC => "hvc",
        SMC => "smc",
        _ => "none",
    }
}

/// A fast call to the hypervisor (HVC conduit only: natively the conduit is SMC to the
/// firmware, which knows no vendor-hypervisor calls): x0..x1 of the result, or None.
pub fn hypervisor_call(function: u32, x1_up: &[u64]) -> Option<[u64; 2]> {
    if CONDUIT.load(Ordering::Relaxed) != HVC {
        return None;
    }
    let mut args = [0; 17];
    let n = x1_up.len().min(args.len());
    args[..n].copy_from_slice(&x1_up[..n]);
    let result = smccc::hvc64(function, args);
    Some([result[0], result[1]])
}

/// Powers off; halts if PSCI is absent or refuses.
pub fn system_off() -> ! {
    let result = match CONDUIT.load(Ordering::Relaxed) {
        HVC => smccc::psci::system_off::<Hvc>(),
        SMC => smccc::psci::system_off::<Smc>(),
        _ => console::halt(format_args!("no PSCI in the device tree: cannot power off")),
    };
    console::halt(format_args!("PSCI SYSTEM_OFF returned {result:?}"))
}
