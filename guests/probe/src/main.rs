//! The probe: a bare-metal EL1 guest that checks, one numbered line at a time, what Partita
//! promises a VM: hypercalls, MMIO emulation of every load and store form, injected aborts,
//! WFI/WFE, and the power-off, reset and fault paths.
//!
//! It runs with the MMU off, so every access is Device-nGnRnE and must be naturally aligned;
//! the target is built with `+strict-align` and the probe keeps no unaligned data. It never
//! relies on a device Partita does not promise: the UART and test device come from the device
//! tree, with the QEMU `virt` addresses as fallback.
//!
//! Modes, from the boot arguments (`mode=<name>` or the bare name):
//! - default: run every check, then power off (or crash on purpose if one failed);
//! - `crash`: point VBAR_EL1 outside guest memory and touch unmapped memory, so Partita must
//!   stop the VM as faulted;
//! - `reset`: on boot 1 ask PSCI SYSTEM_RESET, on boot 2 report and power off;
//! - `hostile`: run the numbered hostile probes (`hostile`), then power off;
//! - `fabric`: run the fabric's hostile probes (`hostile::fabric::PROBES`), then power off;
//! - `wreck`: destroy its own vectors and translation tables, so Partita must stop the VM;
//! - `spin`: loop forever with interrupts masked, never trapping;
//! - `resetloop`: PSCI SYSTEM_RESET at once on every boot up to the 50th, then WFI forever;
//! - `spi` (with `spi=<n>`): receive a physical SPI of the VM's destination table, and not
//!   one it does not own (`spi.rs`);
//! - `smp`: as a VM with two vCPUs, PSCI and SGIs reach its own vCPUs only (`smp.rs`).
#![no_std]
#![no_main]

mod boot;
mod checks;
mod console;
mod exceptions;
mod gic;
mod hostile;
mod mmio;
mod platform;
mod smccc_calls;
mod smp;
mod spi;

use core::panic::PanicInfo;

use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{Writeable, VBAR_EL1};

use crate::platform::Platform;

/// Guest-physical memory that no VM maps: touching it makes Partita inject an abort.
pub const UNMAPPED: u64 = 0x2000_0000;
/// A vector base outside the probe's memory: an exception taken there cannot be delivered.
const BAD_VECTORS: u64 = 0x1000;

/// What the probe was asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Checks,
    Crash,
    Reset,
    Hostile,
    Fabric,
    Wreck,
    Spin,
    ResetLoop,
    Spi,
    Smp,
}

impl Mode {
    fn from_bootargs(bootargs: &str) -> Mode {
        bootargs
            .split_ascii_whitespace()
            .map(|arg| arg.strip_prefix("mode=").unwrap_or(arg))
            .find_map(|arg| match arg {
                "crash" => Some(Mode::Crash),
                "reset" => Some(Mode::Reset),
                "spi" => Some(Mode::Spi),
                "smp" => Some(Mode::Smp),
                "checks" => Some(Mode::Checks),
                "hostile" => Some(Mode::Hostile),
                "fabric" => Some(Mode::Fabric),
                "wreck" => Some(Mode::Wreck),
                "spin" => Some(Mode::Spin),
                "resetloop" => Some(Mode::ResetLoop),
                _ => None,
            })
            .unwrap_or(Mode::Checks)
    }
}

/// Entered from `boot::_start` with the stack set, .bss zeroed and the vectors installed.
#[no_mangle]
extern "C" fn probe_main(dtb: u64) -> ! {
    let platform = Platform::discover(dtb);
    console::init(platform.uart);
    let mode = Mode::from_bootargs(platform.bootargs);
    println!(
        "probe: started, device tree at {dtb:#x}, bootargs \"{}\", mode {mode:?}",
        platform.bootargs
    );
    match mode {
        Mode::Checks => run_checks(&platform),
        Mode::Crash => crash(),
        Mode::Reset => reset(&platform),
        Mode::Hostile => {
            hostile::run_all(&platform);
            power_off()
        }
        Mode::Fabric => {
            hostile::run_fabric(&platform);
            power_off()
        }
        Mode::Wreck => hostile::lifecycle::wreck(),
        Mode::Spin => hostile::lifecycle::spin(),
        Mode::ResetLoop => hostile::lifecycle::reset_loop(&platform),
        Mode::Spi => spi::run(&platform),
        Mode::Smp => {
            if smp::run(&platform) {
                power_off()
            }
            crash()
        }
    }
}

fn run_checks(platform: &Platform) -> ! {
    let summary = checks::run_all(platform);
    if summary.failed == 0 {
        println!("probe: all {} checks passed", summary.total);
        power_off();
    }
    println!(
        "probe: {} of {} checks failed",
        summary.failed, summary.total
    );
    crash()
}

fn reset(platform: &Platform) -> ! {
    match checks::boot_count(platform) {
        1 => {
            println!("probe: resetting");
            smccc_calls::system_reset();
            println!("probe: SYSTEM_RESET returned");
        }
        2 => {
            println!("probe: reset worked, boot 2");
            power_off();
        }
        n => println!("probe: unexpected boot count {n}"),
    }
    crash()
}

pub fn power_off() -> ! {
    smccc_calls::system_off();
    println!("probe: SYSTEM_OFF returned");
    crash()
}

/// Fails the way a broken guest does: with no usable vector table, the next abort cannot be
/// delivered and Partita must stop the VM as faulted.
pub fn crash() -> ! {
    println!("probe: crashing on purpose");
    VBAR_EL1.set(BAD_VECTORS);
    barrier::isb(barrier::SY);
    mmio::Load::Double.run(UNMAPPED);
    println!("probe: still running after the crash");
    loop {
        aarch64_cpu::asm::wfe();
    }
}

/// partita-core, whose interface register map the fabric probes use, links `alloc`; the probe
/// allocates nothing, so every allocation fails.
struct NoHeap;

// SAFETY: `alloc` returns null (allocation failure), which `GlobalAlloc` allows, and
// `dealloc` is never given a pointer `alloc` returned.
unsafe impl core::alloc::GlobalAlloc for NoHeap {
    unsafe fn alloc(&self, _: core::alloc::Layout) -> *mut u8 {
        core::ptr::null_mut()
    }
    unsafe fn dealloc(&self, _: *mut u8, _: core::alloc::Layout) {}
}

#[global_allocator]
static NO_HEAP: NoHeap = NoHeap;

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    println!("probe: panic: {info}");
    crash()
}
