//! Partita's own calls, when the guest runs under Partita: PARTITA_VERSION tells whether it
//! does (it answers 0 only there; natively the PSCI conduit is SMC to the firmware, and
//! other hypervisors answer NOT_SUPPORTED), and PARTITA_CONSOLE_WRITE hands the console up to
//! 48 bytes per call (x1 = count, x2..x7 = the bytes) instead of one trapped UART write per
//! byte (docs/console.md). The
//! function IDs are Partita's vendor-hypervisor range (crates/core/src/hypercall.rs).

use core::sync::atomic::{AtomicBool, Ordering};

use crate::psci;

pub const PARTITA_VERSION: u32 = 0xc600_0000;
pub const PARTITA_COUNTER: u32 = 0xc600_0001;
const PARTITA_CONSOLE_WRITE: u32 = 0xc600_0002;
/// The most bytes one console write carries.
pub const CONSOLE_CHUNK: usize = 48;

/// PARTITA_VERSION answered at start-up.
static PRESENT: AtomicBool = AtomicBool::new(false);

/// Asks whether Partita is the hypervisor; call once, after `psci::init`.
pub fn detect() {
    let answer = psci::hypervisor_call(PARTITA_VERSION, &[]).map(|r| r[0]);
    PRESENT.store(answer == Some(0), Ordering::Relaxed);
}

/// Whether the guest runs under Partita.
pub fn present() -> bool {
    PRESENT.load(Ordering::Relaxed)
}

/// Hands `bytes` (at most `CONSOLE_CHUNK`) to Partita's console.
pub fn console_write(bytes: &[u8]) {
    let mut chunk = [0u8; CONSOLE_CHUNK];
    let len = bytes.len().min(CONSOLE_CHUNK);
    chunk[..len].copy_from_slice(&bytes[..len]);
    let mut args = [len as u64; 7];
    for (arg, eight) in args[1..].iter_mut().zip(chunk.chunks_exact(8)) {
        *arg = eight.try_into().map_or(0, u64::from_le_bytes);
    }
    let _ = psci::hypervisor_call(PARTITA_CONSOLE_WRITE, &args);
}
