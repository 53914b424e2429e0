//! The system Partita runs: the bundle read from after the image (configuration and guest
//! images) and the machine-wide VM accounting that decides how the run ends.
//!
//! Written once by the boot CPU, read by every CPU. When the last VM stops, the CPU that
//! stopped it ends the run: PSCI SYSTEM_OFF if every VM powered off cleanly, semihosting
//! status 1 if any stopped because of a fault. This module must never hold per-CPU state.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use partita_core::bundle::{self, Bundle};
use partita_core::config;
use spin::Once;

use crate::arch::aarch64::{psci, semihosting};
use crate::println;

/// Exit status when at least one VM stopped because of a fault.
const FAULT_STATUS: u64 = 1;

pub struct System {
    pub bundle: Bundle<'static>,
    running: AtomicUsize,
    faulted: AtomicBool,
}

static SYSTEM: Once<System> = Once::new();

extern "C" {
    static __bundle_start: u8;
}

/// How a VM ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Clean,
    Fault,
}

/// The bytes the host tool appended after the image.
fn bundle_bytes() -> &'static [u8] {
    let start = core::ptr::addr_of!(__bundle_start);
    // SAFETY: the header is inside RAM right after the image (the host tool writes it there;
    // without it the magic check fails), identity-mapped and never written.
    let header = unsafe { core::slice::from_raw_parts(start, bundle::HEADER_LEN) };
    let len = match bundle::total_len(header) {
        Ok(len) => len,
        Err(e) => panic!("no valid bundle after the image: {e:?}"),
    };
    // SAFETY: the host tool wrote `len` bytes of bundle at `__bundle_start`; that memory is
    // identity-mapped RAM which Partita never writes.
    unsafe { core::slice::from_raw_parts(start, len) }
}

/// Reads and checks the bundle (boot CPU, once).
pub fn init() -> &'static System {
    SYSTEM.call_once(|| {
        let bundle = match Bundle::parse(bundle_bytes()) {
            Ok(b) => b,
            Err(e) => panic!("the bundle does not parse: {e:?}"),
        };
        if let Err(e) = config::validate(&bundle.config) {
            panic!("the bundled configuration is invalid: {e}");
        }
        println!(
            "{} VM(s) on {} CPU(s)",
            bundle.config.vms.len(),
            bundle.config.board.cpus
        );
        System {
            running: AtomicUsize::new(bundle.config.vms.len()),
            faulted: AtomicBool::new(false),
            bundle,
        }
    })
}

/// The system, once the boot CPU has read it.
pub fn get() -> &'static System {
    SYSTEM.wait()
}

impl System {
    /// Records that a VM has stopped for good; ends the run after the last one.
    pub fn vm_stopped(&self, how: Stop) {
        if how == Stop::Fault {
            self.faulted.store(true, Ordering::SeqCst);
        }
        if self.running.fetch_sub(1, Ordering::SeqCst) == 1 {
            if self.faulted.load(Ordering::SeqCst) {
                println!("all VMs stopped, at least one faulted");
                semihosting::exit(FAULT_STATUS);
            }
            println!("all VMs powered off");
            psci::system_off();
        }
    }
}
