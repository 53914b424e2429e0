//! Start-up: the arm64 Linux Image header and the first instructions.
//!
//! QEMU's `-kernel` and Partita both enter at the header's first word with x0 = the device
//! tree. Entered at EL2 (native QEMU with `virtualization=on`), the code gives EL1 what a
//! hypervisor would: AArch64 at EL1 (HCR_EL2.RW), the EL1 physical timer and counter
//! (CNTHCTL_EL2), a zero virtual offset, no FP/SIMD traps (CPTR_EL2), on a GICv3 the system
//! register interface (ICC_SRE_EL2) with the virtual CPU interface off, and then drops to
//! EL1h with ERET. At EL1 it enables FP/SIMD, installs the vectors, zeroes bss, sets the
//! stack and calls `rust_main(dtb, entry_el)`. It must never touch EL2 state when entered
//! at EL1 (under Partita EL2 belongs to the hypervisor).

core::arch::global_asm!(
    r#"
    .section .text.head, "ax"
    .global _start
_start:
    b       primary_entry           // code0
    .word   0                       // code1
    .quad   0x200000                // text_offset: load at RAM base + 2 MiB
    .quad   __image_size            // image_size (bss and stack included)
    .quad   0                       // flags: little endian, 4 KiB pages unspecified
    .quad   0                       // res2
    .quad   0                       // res3
    .quad   0                       // res4
    .ascii  "ARM\x64"               // magic
    .word   0                       // res5

primary_entry:
    mov     x19, x0                 // device tree address
    mrs     x20, CurrentEL
    lsr     x20, x20, #2
    and     x20, x20, #3
    cmp     x20, #2
    b.ne    el1_entry

    mov     x1, #(1 << 31)          // HCR_EL2.RW: EL1 is AArch64, nothing trapped
    msr     hcr_el2, x1
    mov     x1, #3                  // CNTHCTL_EL2.EL1PCTEN | EL1PCEN
    msr     cnthctl_el2, x1
    msr     cntvoff_el2, xzr
    mov     x1, #0x33ff             // CPTR_EL2: RES1 bits, TFP = 0
    msr     cptr_el2, x1
    msr     hstr_el2, xzr
    mrs     x1, midr_el1
    msr     vpidr_el2, x1
    mrs     x1, mpidr_el1
    msr     vmpidr_el2, x1
    .if {gicv3}                     // a GICv2 has no system register interface
    mrs     x1, icc_sre_el2
    orr     x1, x1, #0x1            // ICC_SRE_EL2.SRE
    orr     x1, x1, #0x8            // ICC_SRE_EL2.Enable: EL1 may use ICC_SRE_EL1
    msr     icc_sre_el2, x1
    isb
    msr     ich_hcr_el2, xzr        // virtual CPU interface off
    .endif
    ldr     x1, =0x30d00800         // SCTLR_EL1: RES1 bits, MMU and caches off
    msr     sctlr_el1, x1
    mov     x1, #0x3c5              // SPSR_EL2: EL1h, D, A, I, F masked
    msr     spsr_el2, x1
    adr     x1, el1_entry
    msr     elr_el2, x1
    eret

el1_entry:
    mov     x1, #(3 << 20)          // CPACR_EL1.FPEN: no FP/SIMD traps
    msr     cpacr_el1, x1
    ldr     x1, =_freertos_vector_table
    msr     vbar_el1, x1
    isb
    ldr     x1, =__stack_top
    mov     sp, x1
    ldr     x1, =__bss_start
    ldr     x2, =__bss_end
1:  cmp     x1, x2
    b.hs    2f
    stp     xzr, xzr, [x1], #16
    b       1b
2:  mov     x0, x19
    mov     x1, x20
    bl      rust_main
3:  wfi
    b       3b
"#,
    gicv3 = const !cfg!(feature = "gicv2") as u32,
);
