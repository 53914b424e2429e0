//! The probe's first instructions: from the VM's entry state (EL1h, MMU off, DAIF masked,
//! x0 = device tree) to `probe_main` with FP/SIMD enabled, a stack, a zeroed .bss and the
//! probe's own exception vectors. Nothing here may touch memory before the stack is set.

use core::arch::global_asm;

global_asm!(
    r#"
    .section .text.boot, "ax"
    .global _start
_start:
    mov     x19, x0

    // Rust code may use FP/SIMD registers: CPACR_EL1.FPEN = 0b11 (ARM ARM D19.2.30).
    mov     x1, #(3 << 20)
    msr     cpacr_el1, x1
    isb

    adrp    x1, __stack_top
    add     x1, x1, :lo12:__stack_top
    mov     sp, x1

    adrp    x1, __bss_start
    add     x1, x1, :lo12:__bss_start
    adrp    x2, __bss_end
    add     x2, x2, :lo12:__bss_end
1:  cmp     x1, x2
    b.hs    2f
    stp     xzr, xzr, [x1], #16
    b       1b
2:
    adrp    x1, probe_vectors
    add     x1, x1, :lo12:probe_vectors
    msr     vbar_el1, x1
    isb

    mov     x0, x19
    bl      probe_main
3:  wfe
    b       3b
    "#
);
