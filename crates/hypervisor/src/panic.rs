//! The panic handler: a broken invariant of Partita itself (never guest input) prints
//! `[partita] panic: <reason>` and ends the run with semihosting status 2.
//!
//! It must never allocate or wait for another CPU: it can run with the heap or the console in
//! any state.

use core::panic::PanicInfo;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::aarch64::semihosting;

/// Exit status of a hypervisor panic.
const PANIC_STATUS: u64 = 2;

static PANICKING: AtomicBool = AtomicBool::new(false);

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    if !PANICKING.swap(true, Ordering::SeqCst) {
        crate::console::print_line_forced(format_args!("panic: {}", info.message()));
        if let Some(location) = info.location() {
            crate::console::print_line_forced(format_args!("  at {location}"));
        }
    }
    semihosting::exit(PANIC_STATUS)
}
