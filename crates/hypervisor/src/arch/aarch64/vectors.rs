//! The EL2 exception vector table, the world switch into a guest (`enter_guest`) and the save
//! of the guest's registers when it traps back.
//!
//! While a guest runs, the EL2 stack holds the host's callee-saved registers and a pointer to
//! the guest's `GuestRegs`. Any exception from a lower EL saves x0..x30 and ELR/SPSR there,
//! restores the host registers and returns from `enter_guest` with the exit kind, so trap
//! handling is ordinary Rust on the ordinary stack. The guest's FP/SIMD registers stay live
//! through an exit: Partita's code never uses them (it is built soft-float), and `fp` moves
//! them only when a vCPU leaves or takes the CPU.
//! Exceptions taken from EL2 itself are Partita bugs and end in a panic. This module must
//! never interpret a trap: decoding belongs to `trap.rs` and `partita_core::trap`.

use core::arch::global_asm;
use core::mem::offset_of;

use aarch64_cpu::registers::{Readable, Writeable, ELR_EL2, ESR_EL2, FAR_EL2, VBAR_EL2};

/// The guest's register file as the world switch saves and loads it.
#[repr(C, align(16))]
#[derive(Clone, Default)]
pub struct GuestRegs {
    pub x: [u64; 31],
    pub elr: u64,
    pub spsr: u64,
}

/// Why `enter_guest` returned: which vector of the lower-EL group was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Synchronous,
    Irq,
    Fiq,
    SError,
}

extern "C" {
    fn enter_guest_raw(regs: *mut GuestRegs) -> u64;
    static partita_vectors: u8;
}

/// Runs the guest with `regs` until it traps to EL2.
pub fn enter_guest(regs: &mut GuestRegs) -> Exit {
    // SAFETY: `regs` is a valid, exclusively borrowed register file for the duration of the
    // call; the assembly saves and restores every callee-saved register of the host and
    // returns on the same stack. Stage 2, HCR_EL2 and the EL1 context of this guest are loaded
    // by the caller, so the guest can only reach its own memory.
    let kind = unsafe { enter_guest_raw(regs) };
    match kind {
        0 => Exit::Synchronous,
        1 => Exit::Irq,
        2 => Exit::Fiq,
        _ => Exit::SError,
    }
}

/// Points VBAR_EL2 at Partita's vector table on this CPU.
pub fn install() {
    let base = core::ptr::addr_of!(partita_vectors) as u64;
    VBAR_EL2.set(base);
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}

/// An exception taken at EL2: Partita itself is broken.
#[no_mangle]
extern "C" fn el2_exception(kind: u64) -> ! {
    panic!(
        "EL2 exception (vector {kind}): ESR_EL2 {:#x}, ELR_EL2 {:#x}, FAR_EL2 {:#x}",
        ESR_EL2.get(),
        ELR_EL2.get(),
        FAR_EL2.get()
    );
}

global_asm!(
    r#"
.macro el2_vector kind
    .balign 0x80
    mov     x0, #\kind
    b       el2_exception
.endm

.macro guest_vector kind
    .balign 0x80
    stp     x0, x1, [sp, #-16]!
    mov     x0, #\kind
    b       guest_exit
.endm

.section .text.vectors, "ax"
.balign 0x800
.global partita_vectors
partita_vectors:
    el2_vector 0
    el2_vector 1
    el2_vector 2
    el2_vector 3
    el2_vector 4
    el2_vector 5
    el2_vector 6
    el2_vector 7
    guest_vector 0
    guest_vector 1
    guest_vector 2
    guest_vector 3
    guest_vector 0
    guest_vector 1
    guest_vector 2
    guest_vector 3

.section .text.enter_guest, "ax"
.global enter_guest_raw
enter_guest_raw:
    stp     x29, x30, [sp, #-16]!
    stp     x27, x28, [sp, #-16]!
    stp     x25, x26, [sp, #-16]!
    stp     x23, x24, [sp, #-16]!
    stp     x21, x22, [sp, #-16]!
    stp     x19, x20, [sp, #-16]!
    stp     x0, xzr, [sp, #-16]!

    ldp     x2, x3, [x0, #{elr}]
    msr     elr_el2, x2
    msr     spsr_el2, x3

    ldp     x2, x3, [x0, #16]
    ldp     x4, x5, [x0, #32]
    ldp     x6, x7, [x0, #48]
    ldp     x8, x9, [x0, #64]
    ldp     x10, x11, [x0, #80]
    ldp     x12, x13, [x0, #96]
    ldp     x14, x15, [x0, #112]
    ldp     x16, x17, [x0, #128]
    ldp     x18, x19, [x0, #144]
    ldp     x20, x21, [x0, #160]
    ldp     x22, x23, [x0, #176]
    ldp     x24, x25, [x0, #192]
    ldp     x26, x27, [x0, #208]
    ldp     x28, x29, [x0, #224]
    ldr     x30, [x0, #240]
    ldp     x0, x1, [x0, #0]
    eret
    dsb     nsh
    isb

// Entered from a guest vector with the guest's x0/x1 pushed and the exit kind in x0.
guest_exit:
    ldr     x1, [sp, #16]
    stp     x2, x3, [x1, #16]
    stp     x4, x5, [x1, #32]
    stp     x6, x7, [x1, #48]
    stp     x8, x9, [x1, #64]
    stp     x10, x11, [x1, #80]
    stp     x12, x13, [x1, #96]
    stp     x14, x15, [x1, #112]
    stp     x16, x17, [x1, #128]
    stp     x18, x19, [x1, #144]
    stp     x20, x21, [x1, #160]
    stp     x22, x23, [x1, #176]
    stp     x24, x25, [x1, #192]
    stp     x26, x27, [x1, #208]
    stp     x28, x29, [x1, #224]
    str     x30, [x1, #240]
    ldp     x2, x3, [sp], #16
    stp     x2, x3, [x1, #0]
    mrs     x2, elr_el2
    mrs     x3, spsr_el2
    stp     x2, x3, [x1, #{elr}]

    add     sp, sp, #16
    ldp     x19, x20, [sp], #16
    ldp     x21, x22, [sp], #16
    ldp     x23, x24, [sp], #16
    ldp     x25, x26, [sp], #16
    ldp     x27, x28, [sp], #16
    ldp     x29, x30, [sp], #16
    ret
"#,
    elr = const offset_of!(GuestRegs, elr),
);

const _: () = {
    assert!(offset_of!(GuestRegs, elr) == 248);
    assert!(offset_of!(GuestRegs, spsr) == 256);
};
