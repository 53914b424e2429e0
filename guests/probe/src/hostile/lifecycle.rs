//! The hostile modes that end, restart or keep their VM, whose outcome the host scenario
//! asserts: `wreck` destroys the probe's own exception vectors and points its translation
//! tables at memory it does not own, then turns its MMU on, so Partita must stop the VM as
//! faulted; `spin` masks every interrupt and loops without ever trapping, so the CPU's other
//! VMs must keep their time through preemption alone; `resetloop` asks for PSCI
//! SYSTEM_RESET as soon as it boots, `RESETS` times in a row (each restart rebuilds its
//! memory), then waits forever in WFI with nothing to wake it.

use core::arch::asm;

use crate::platform::Platform;
use crate::{checks, println, smccc_calls};

/// Translation table bases in memory the VM does not own: Partita's heap (TTBR0) and the
/// FreeRTOS VM's RAM (TTBR1), physically.
const WRECKED_TTBR0: u64 = 0x5000_0000;
const WRECKED_TTBR1: u64 = 0x6000_0000;
/// A vector base no VM memory backs.
const WRECKED_VBAR: u64 = 0xffff_0000_dead_0000;
/// TCR_EL1: 4 KiB granules, 39-bit spaces (T0SZ = T1SZ = 25), walks cacheable.
const TCR: u64 = 25 | (1 << 8) | (1 << 10) | (25 << 16) | (1 << 24) | (1 << 26) | (2 << 30);
/// The probe's vector table is 2 KiB.
const VECTORS_SIZE: usize = 0x800;

extern "C" {
    static probe_vectors: u8;
}

/// Destroys the vector table and the translation regime, then fetches through them.
pub fn wreck() -> ! {
    println!("hostile: wreck: destroying vectors and translation tables");
    // SAFETY: overwrites the probe's own vector table (in its own RAM, MMU off: the bytes are
    // plain memory) with an invalid instruction pattern; nothing returns through it after.
    unsafe {
        let vectors = core::ptr::addr_of!(probe_vectors) as *mut u32;
        for i in 0..VECTORS_SIZE / 4 {
            vectors.add(i).write_volatile(u32::MAX);
        }
    }
    // SAFETY: deliberately destroys the probe's own EL1 translation regime and vectors: the
    // next instruction fetch walks tables outside the VM, which Partita must catch; no Rust
    // code runs after the MMU is on.
    unsafe {
        asm!(
            "msr vbar_el1, {vbar}",
            "msr ttbr0_el1, {ttbr0}",
            "msr ttbr1_el1, {ttbr1}",
            "msr tcr_el1, {tcr}",
            "msr mair_el1, {mair}",
            "isb",
            "tlbi vmalle1",
            "dsb sy",
            "mrs x9, sctlr_el1",
            "orr x9, x9, #1",
            "msr sctlr_el1, x9",
            "isb",
            "2: b 2b",
            vbar = in(reg) WRECKED_VBAR,
            ttbr0 = in(reg) WRECKED_TTBR0,
            ttbr1 = in(reg) WRECKED_TTBR1,
            tcr = in(reg) TCR,
            mair = in(reg) 0xffu64,
            options(noreturn, nostack)
        )
    }
}

/// Never yields: interrupts masked, no trapping instruction, forever.
pub fn spin() -> ! {
    println!("hostile: spin: looping forever with interrupts masked");
    // SAFETY: masks interrupts for this VM only (physical interrupts still reach EL2), then
    // loops on registers.
    unsafe {
        asm!(
            "msr daifset, #0xf",
            "mov x9, #0",
            "2: add x9, x9, #1",
            "b 2b",
            options(noreturn, nostack)
        )
    }
}

/// Boots of the reset loop: the last one stops resetting.
const RESETS: u64 = 50;

/// Resets at once on every boot up to `RESETS`, then sleeps forever.
pub fn reset_loop(platform: &Platform) -> ! {
    let boot = checks::boot_count(platform);
    if boot < RESETS {
        smccc_calls::system_reset();
        println!("hostile: resetloop: SYSTEM_RESET returned at boot {boot}");
    } else {
        println!("hostile: resetloop: {boot} boots, now waiting forever");
    }
    loop {
        aarch64_cpu::asm::wfi();
    }
}
