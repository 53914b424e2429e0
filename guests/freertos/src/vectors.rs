//! The EL1 exception vector table the FreeRTOS port installs (`_freertos_vector_table`).
//!
//! Tasks run at EL1 on SP_EL0 (EL1t), interrupt handlers and start-up code on SP_EL1
//! (EL1h). An `SVC #0` (the port's `portYIELD`) goes to the port's `FreeRTOS_SWI_Handler`,
//! an `SVC #1` (`raise_software_interrupt`, the benchmarks' software interrupt) is run as
//! an interrupt of its own (`software_interrupt` below), an IRQ goes to the port's
//! `FreeRTOS_IRQ_Handler`; every other exception is reported on the console with its
//! syndrome and the guest halts. This module never handles an exception itself.
//! Each IRQ entry stores the tick's counter in its second instruction (the latency
//! benchmarks' "first instruction of the handler"); nothing else is done before the port.
//! There are two tables, the same but for that counter: `_freertos_vector_table` reads the
//! virtual counter, `_freertos_vector_table_physical` the physical one (`install`).

use crate::console;
use crate::timer::Source;
use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{Readable, Writeable, ELR_EL1, ESR_EL1, FAR_EL1, VBAR_EL1};
use core::sync::atomic::{AtomicU64, Ordering};

/// The tick's counter at the entry of the latest IRQ.
static IRQ_ENTRY_COUNTER: AtomicU64 = AtomicU64::new(0);

extern "C" {
    static _freertos_vector_table: u8;
    static _freertos_vector_table_physical: u8;
}

/// Installs the vector table that stamps IRQ entries with `source`'s counter (the boot code
/// installed the virtual one); call before interrupts are unmasked.
pub fn install(source: Source) {
    let table = match source {
        Source::Virtual => core::ptr::addr_of!(_freertos_vector_table),
        Source::Physical => core::ptr::addr_of!(_freertos_vector_table_physical),
    };
    VBAR_EL1.set(table as u64);
    barrier::isb(barrier::SY);
}

/// The tick's counter read at the entry of the latest IRQ (valid inside its handler,
/// where no other IRQ can be taken).
pub fn irq_entry_counter() -> u64 {
    IRQ_ENTRY_COUNTER.load(Ordering::Relaxed)
}

core::arch::global_asm!(
    r#"
    .macro unexpected kind
    .balign 0x80
    mov     x0, #\kind
    b       report_unexpected_exception
    .endm

    // SVC #1 is the software interrupt, any other SVC goes to the port's context switch;
    // any other synchronous exception is reported. x0/x1 are preserved for the handlers.
    .macro sync_entry kind
    .balign 0x80
    stp     x0, x1, [sp, #-16]!
    mrs     x0, esr_el1
    lsr     x1, x0, #26
    cmp     x1, #0x15
    b.ne    1f
    and     x0, x0, #0xffff
    cmp     x0, #{swi}
    ldp     x0, x1, [sp], #16
    b.eq    software_interrupt
    b       FreeRTOS_SWI_Handler
1:  ldp     x0, x1, [sp], #16
    mov     x0, #\kind
    b       report_unexpected_exception
    .endm

    // An IRQ: stamp the counter (no ISB: as early as possible), then the port's handler.
    .macro irq_entry counter
    .balign 0x80
    stp     x0, x1, [sp, #-16]!
    mrs     x0, \counter
    adrp    x1, {stamp}
    str     x0, [x1, :lo12:{stamp}]
    ldp     x0, x1, [sp], #16
    b       FreeRTOS_IRQ_Handler
    .endm

    .macro vector_table counter
    sync_entry 0                    // current EL, SP_EL0: synchronous
    irq_entry \counter              // current EL, SP_EL0: IRQ
    unexpected 2
    unexpected 3
    sync_entry 4                    // current EL, SP_ELx: synchronous
    irq_entry \counter              // current EL, SP_ELx: IRQ (nested)
    unexpected 6
    unexpected 7
    unexpected 8
    unexpected 9
    unexpected 10
    unexpected 11
    unexpected 12
    unexpected 13
    unexpected 14
    unexpected 15
    .endm

    .section .text.vectors, "ax"
    .balign 0x800
    .global _freertos_vector_table
_freertos_vector_table:
    vector_table cntvct_el0

    .balign 0x800
    .global _freertos_vector_table_physical
_freertos_vector_table_physical:
    vector_table cntpct_el0

    // The software interrupt, as the port's IRQ handler runs an interrupt: on SP_EL1, the
    // caller-saved general registers, ELR and SPSR (a FromISR call unmasks IRQs, and a
    // nested IRQ's return overwrites them) saved, the handler called through
    // `fp_safe_call`, IRQs masked again after it, the port's nesting count raised around
    // it. If the handler asked for a context switch
    // (a FromISR call woke a higher task), the registers are restored and the port's
    // SVC handler switches, saving the task's context as a yield would.
    .section .text.software_interrupt, "ax"
    .balign 8
software_interrupt:
    stp     x0, x1, [sp, #-0x10]!
    stp     x2, x3, [sp, #-0x10]!
    stp     x4, x5, [sp, #-0x10]!
    stp     x6, x7, [sp, #-0x10]!
    stp     x8, x9, [sp, #-0x10]!
    stp     x10, x11, [sp, #-0x10]!
    stp     x12, x13, [sp, #-0x10]!
    stp     x14, x15, [sp, #-0x10]!
    stp     x16, x17, [sp, #-0x10]!
    stp     x18, x30, [sp, #-0x10]!
    mrs     x0, elr_el1
    mrs     x1, spsr_el1
    stp     x0, x1, [sp, #-0x10]!
    adrp    x0, ullPortInterruptNesting
    ldr     x1, [x0, :lo12:ullPortInterruptNesting]
    add     x1, x1, #1
    str     x1, [x0, :lo12:ullPortInterruptNesting]
    adrp    x1, {handler}
    add     x1, x1, :lo12:{handler}
    bl      fp_safe_call
    msr     daifset, #2
    isb
    adrp    x0, ullPortInterruptNesting
    ldr     x1, [x0, :lo12:ullPortInterruptNesting]
    sub     x1, x1, #1
    str     x1, [x0, :lo12:ullPortInterruptNesting]
    ldp     x0, x1, [sp], #0x10
    msr     elr_el1, x0
    msr     spsr_el1, x1
    ldp     x18, x30, [sp], #0x10
    ldp     x16, x17, [sp], #0x10
    ldp     x14, x15, [sp], #0x10
    ldp     x12, x13, [sp], #0x10
    ldp     x10, x11, [sp], #0x10
    ldp     x8, x9, [sp], #0x10
    ldp     x6, x7, [sp], #0x10
    ldp     x4, x5, [sp], #0x10
    ldp     x2, x3, [sp], #0x10
    adrp    x0, ullPortYieldRequired
    ldr     x1, [x0, :lo12:ullPortYieldRequired]
    cbnz    x1, 2f
    ldp     x0, x1, [sp], #0x10
    eret
2:  str     xzr, [x0, :lo12:ullPortYieldRequired]
    ldp     x0, x1, [sp], #0x10
    b       FreeRTOS_SWI_Handler

    // Calls the function at x1 with x0 as its argument, Q0-Q31, FPSR and FPCR saved around
    // it, as the SRE port's weak `vApplicationIRQHandler` does for an IRQ handler: the Rust
    // handlers may use those registers, which the interrupted task owns.
    .section .text.fp_safe_call, "ax"
    .global fp_safe_call
    .balign 8
fp_safe_call:
    stp     x29, x30, [sp, #-0x10]!
    stp     q0, q1, [sp, #-0x20]!
    stp     q2, q3, [sp, #-0x20]!
    stp     q4, q5, [sp, #-0x20]!
    stp     q6, q7, [sp, #-0x20]!
    stp     q8, q9, [sp, #-0x20]!
    stp     q10, q11, [sp, #-0x20]!
    stp     q12, q13, [sp, #-0x20]!
    stp     q14, q15, [sp, #-0x20]!
    stp     q16, q17, [sp, #-0x20]!
    stp     q18, q19, [sp, #-0x20]!
    stp     q20, q21, [sp, #-0x20]!
    stp     q22, q23, [sp, #-0x20]!
    stp     q24, q25, [sp, #-0x20]!
    stp     q26, q27, [sp, #-0x20]!
    stp     q28, q29, [sp, #-0x20]!
    stp     q30, q31, [sp, #-0x20]!
    mrs     x9, fpsr
    mrs     x10, fpcr
    stp     x9, x10, [sp, #-0x10]!
    blr     x1
    ldp     x9, x10, [sp], #0x10
    msr     fpsr, x9
    msr     fpcr, x10
    ldp     q30, q31, [sp], #0x20
    ldp     q28, q29, [sp], #0x20
    ldp     q26, q27, [sp], #0x20
    ldp     q24, q25, [sp], #0x20
    ldp     q22, q23, [sp], #0x20
    ldp     q20, q21, [sp], #0x20
    ldp     q18, q19, [sp], #0x20
    ldp     q16, q17, [sp], #0x20
    ldp     q14, q15, [sp], #0x20
    ldp     q12, q13, [sp], #0x20
    ldp     q10, q11, [sp], #0x20
    ldp     q8, q9, [sp], #0x20
    ldp     q6, q7, [sp], #0x20
    ldp     q4, q5, [sp], #0x20
    ldp     q2, q3, [sp], #0x20
    ldp     q0, q1, [sp], #0x20
    ldp     x29, x30, [sp], #0x10
    ret
"#,
    stamp = sym IRQ_ENTRY_COUNTER,
    swi = const SOFTWARE_INTERRUPT,
    handler = sym crate::port::on_software_interrupt,
);

/// The SVC immediate of the software interrupt (0 is the port's yield).
const SOFTWARE_INTERRUPT: u16 = 1;

/// Raises the software interrupt: its handler (`port::on_software_interrupt`) runs as an
/// interrupt before this returns, and a task it woke runs first if it outranks the caller.
/// This is how Thread-Metric's reference ports raise their interrupt (an SVC, taken at EL1
/// without a hypervisor's involvement), where `sgi` raises one through the GIC.
pub fn raise_software_interrupt() {
    // SAFETY: SVC #1 enters `software_interrupt` above, which restores every general and
    // FP/SIMD register it or its handler touches before returning (or, switching tasks,
    // leaves them to the port's context save), so the caller loses no register.
    unsafe { core::arch::asm!("svc #{imm}", imm = const SOFTWARE_INTERRUPT) };
}

// The GICv2 build's port (ARM_AARCH64) calls `vApplicationIRQHandler` directly, without
// the FP/SIMD save the SRE port's weak one does, and the Rust handler may use those
// registers: this calls `vApplicationFPUSafeIRQHandler` through `fp_safe_call`, as the SRE
// port's does.
#[cfg(feature = "gicv2")]
core::arch::global_asm!(
    r#"
    .section .text.irq_fp, "ax"
    .global vApplicationIRQHandler
    .balign 8
vApplicationIRQHandler:
    adrp    x1, vApplicationFPUSafeIRQHandler
    add     x1, x1, :lo12:vApplicationFPUSafeIRQHandler
    b       fp_safe_call
"#
);

/// Names of the sixteen vector entries, in table order.
const VECTOR_NAMES: [&str; 16] = [
    "sync from EL1t",
    "IRQ from EL1t",
    "FIQ from EL1t",
    "SError from EL1t",
    "sync from EL1h",
    "IRQ from EL1h",
    "FIQ from EL1h",
    "SError from EL1h",
    "sync from EL0 (AArch64)",
    "IRQ from EL0 (AArch64)",
    "FIQ from EL0 (AArch64)",
    "SError from EL0 (AArch64)",
    "sync from EL0 (AArch32)",
    "IRQ from EL0 (AArch32)",
    "FIQ from EL0 (AArch32)",
    "SError from EL0 (AArch32)",
];

/// Reports an exception the guest does not expect and halts.
#[no_mangle]
extern "C" fn report_unexpected_exception(kind: u64) -> ! {
    let name = usize::try_from(kind)
        .ok()
        .and_then(|index| VECTOR_NAMES.get(index))
        .copied()
        .unwrap_or("unknown vector");
    console::halt(format_args!(
        "unexpected exception: {name}: ESR_EL1={:#x} ELR_EL1={:#x} FAR_EL1={:#x}",
        ESR_EL1.get(),
        ELR_EL1.get(),
        FAR_EL1.get()
    ))
}
