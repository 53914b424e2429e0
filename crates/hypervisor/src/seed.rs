//! Entropy for guests' `/chosen/rng-seed`: taken from the `rng-seed` QEMU (or a boot loader)
//! puts in the device tree it hands Partita, spread per VM and per boot, or a fixed seed
//! when there is none. With QEMU's `-seed` the whole run is then reproducible.
//!
//! Only the seed is read from the firmware's device tree; its `kaslr-seed` is never passed
//! on (guests are booted with their physical layout fixed). Not cryptographic: it only keeps
//! guests from starting with identical entropy pools.

use fdt::Fdt;
use partita_core::board::Region;
use spin::Once;

/// The seed when the firmware gives none.
const FIXED_SEED: u64 = 0x5061_7274_6974_6121;

static FIRMWARE_SEED: Once<u64> = Once::new();

/// Reads `/chosen/rng-seed` from the firmware's device tree at `dtb` (boot CPU, once,
/// before anything can overwrite it).
pub fn init(dtb: u64, ram: &[Region]) {
    let mut seed = FIXED_SEED;
    if ram.iter().any(|bank| bank.contains(&Region::new(dtb, 64))) {
        // SAFETY: `dtb` lies in RAM, identity mapped; `Fdt::from_ptr` checks the header
        // magic and sizes before it reads further, and nothing writes that memory yet.
        if let Ok(fdt) = unsafe { Fdt::from_ptr(dtb as *const u8) } {
            let bytes = fdt
                .find_node("/chosen")
                .and_then(|c| c.property("rng-seed"))
                .map(|p| p.value)
                .unwrap_or(&[]);
            for chunk in bytes.chunks(8) {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                seed = mix(seed ^ u64::from_le_bytes(word));
            }
        }
    }
    FIRMWARE_SEED.call_once(|| seed);
}

/// A xorshift step.
fn mix(mut x: u64) -> u64 {
    x |= 1;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// The 32-byte seed of VM `index` on its `boots`-th start.
/// The key that seals the fabric's saved contexts (`fabric`): per boot of the machine,
/// never shown to a guest.
pub fn fabric_key() -> u64 {
    let base = FIRMWARE_SEED.get().copied().unwrap_or(FIXED_SEED);
    mix(mix(base ^ 0x4b31_4358_6661_6272))
}

pub fn for_vm(index: usize, boots: u64) -> [u8; 32] {
    let base = FIRMWARE_SEED.get().copied().unwrap_or(FIXED_SEED);
    let mut x = mix(base ^ ((index as u64) << 32) ^ boots);
    let mut seed = [0u8; 32];
    for chunk in seed.chunks_mut(8) {
        x = mix(x);
        chunk.copy_from_slice(&x.to_le_bytes());
    }
    seed
}
