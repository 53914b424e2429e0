//! The system Partita runs: the bundle read from after the image (configuration and guest
//! images) and the machine-wide VM accounting that decides how the run ends.
//!
//! Written once by the boot CPU, read by every CPU. When the last VM stops, the CPU that
//! stopped it ends the run: PSCI SYSTEM_OFF if every VM powered off cleanly, semihosting
//! status 1 if any stopped because of a fault. This module must never hold per-CPU state.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::lock::Mutex;
use partita_core::bundle::{self, Bundle};
use partita_core::config;
use spin::Once;

use crate::arch::aarch64::{psci, semihosting};
use crate::console;
use crate::println;
use crate::vm;

/// Exit status when at least one VM stopped because of a fault.
const FAULT_STATUS: u64 = 1;

pub struct System {
    pub bundle: Bundle<'static>,
    running: AtomicUsize,
    faulted: AtomicBool,
    /// Per VM: its shared half once the CPU of its vCPU 0 has built it, for the CPUs of its
    /// other vCPUs (each takes it once; the last one empties the slot).
    built: Mutex<Vec<Option<Published>>>,
}

/// A built VM and how many CPUs have yet to take it.
type Published = (Arc<vm::Shared>, usize);

static SYSTEM: Once<System> = Once::new();

extern "C" {
    /// The address of `__bundle_start`, right after the image, as a word (`linker.ld`:
    /// beyond the tiny code model's reach).
    static __bundle_start_address: usize;
}

/// How a VM ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Clean,
    Fault,
}

/// The bytes the host tool appended after the image.
fn bundle_bytes() -> &'static [u8] {
    // SAFETY: the linker script writes this word into .rodata, which nothing writes.
    let start = unsafe { __bundle_start_address } as *const u8;
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
            built: Mutex::new(bundle.config.vms.iter().map(|_| None).collect()),
            bundle,
        }
    })
}

/// The system, once the boot CPU has read it.
pub fn get() -> &'static System {
    SYSTEM.wait()
}

impl System {
    /// Publishes VM `index`, built by the CPU of its vCPU 0, for its other vCPUs' CPUs.
    pub fn publish(&self, index: usize, shared: Arc<vm::Shared>) {
        let takers = self.bundle.config.vms[index].cpus.len() - 1;
        if takers > 0 {
            if let Some(slot) = self.built.lock().get_mut(index) {
                *slot = Some((shared, takers));
            }
        }
    }

    /// VM `index` as the CPU of its vCPU 0 built it: waits until it has.
    pub fn wait_built(&self, index: usize) -> Arc<vm::Shared> {
        loop {
            if let Some(slot) = self.built.lock().get_mut(index) {
                if let Some((shared, takers)) = slot.as_mut() {
                    let shared = shared.clone();
                    *takers -= 1;
                    if *takers == 0 {
                        *slot = None;
                    }
                    return shared;
                }
            }
            crate::lock::yield_cpu();
        }
    }

    /// Records that a VM has stopped for good; ends the run after the last one.
    pub fn vm_stopped(&self, how: Stop) {
        if how == Stop::Fault {
            self.faulted.store(true, Ordering::SeqCst);
        }
        if self.running.fetch_sub(1, Ordering::SeqCst) == 1 {
            // Nothing runs any more: what was kept for later is printed now.
            console::release_held();
            crate::fabric::print_stats();
            if self.faulted.load(Ordering::SeqCst) {
                println!("all VMs stopped, at least one faulted");
                semihosting::exit(FAULT_STATUS);
            }
            println!("all VMs powered off");
            psci::system_off();
        }
    }
}
