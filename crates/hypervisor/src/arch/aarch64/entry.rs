//! The boot entry: the arm64 Image header QEMU and boot loaders recognise, and the first
//! instructions of every CPU at EL2.
//!
//! The boot CPU keeps x0 (the firmware's device tree) for `primary_main`. Before any Rust
//! code runs, this sets CPTR_EL2 so FP/SIMD does not trap (Partita's own code never uses it,
//! being soft-float, but `fp.rs` moves the guests' registers and the guests use them),
//! zeroes .bss (boot CPU only) and points SP_EL2 at the CPU's own stack. It must never touch memory other than .bss and the stacks: the MMU is
//! still off, so every access is Device memory and must be aligned.

use core::arch::global_asm;

use super::sysreg::{read_sysreg, write_sysreg};

/// Bytes of stack per CPU; must match `STACK_SIZE` in `linker.ld`.
pub const STACK_SIZE: usize = 0x1_0000;
/// CPUs with a stack; must match `MAX_CPUS` in `linker.ld`.
pub const MAX_CPUS: usize = 8;
const _: () = assert!(MAX_CPUS.is_power_of_two());

/// Records this CPU's index for `cpu_index` in TPIDR_EL2 (which Partita uses for nothing
/// else and guests cannot reach): the first thing each CPU does in Rust.
pub fn set_cpu_index() {
    let index = ((read_sysreg!("mpidr_el1") & 0xff) as usize).min(MAX_CPUS - 1);
    write_sysreg!("tpidr_el2", index as u64);
}

/// This CPU's index (`set_cpu_index`): one register read instead of MPIDR_EL1's affinity
/// taken apart at every count or redistributor access. The mask changes no value (the
/// index is below `MAX_CPUS`, a power of two); it only lets the compiler drop the bounds
/// checks of the per-CPU arrays.
#[inline(always)]
pub fn cpu_index() -> usize {
    read_sysreg!("tpidr_el2") as usize & (MAX_CPUS - 1)
}

/// CPTR_EL2 (E2H = 0) with every RES1 bit set and FP/SIMD (TFP, bit 10) not trapped; TZ
/// (bit 8) is cleared below when SVE exists so guests that find SVE can use it.
const CPTR_EL2_RES1_NO_FP_TRAP: u64 = 0x33ff;

extern "C" {
    /// Where secondary CPUs start (PSCI CPU_ON entry point); x0 holds the CPU index.
    pub fn secondary_entry();
}

global_asm!(
    r#"
.section .text.head, "ax"
.global _start
_start:
    b       primary_entry
    .long   0
    .quad   PARTITA_TEXT_OFFSET
    .quad   __image_size
    .quad   0
    .quad   0
    .quad   0
    .quad   0
    .ascii  "ARM\x64"
    .long   0

.section .text.entry, "ax"
primary_entry:
    mov     x20, x0
    bl      cpu_el2_setup
    adrp    x1, __bss_start
    add     x1, x1, :lo12:__bss_start
    adrp    x2, __bss_end
    add     x2, x2, :lo12:__bss_end
1:  cmp     x1, x2
    b.hs    2f
    stp     xzr, xzr, [x1], #16
    b       1b
2:  mov     x0, #0
    bl      cpu_set_stack
    mov     x0, x20
    bl      primary_main
3:  wfe
    b       3b

.global secondary_entry
secondary_entry:
    mov     x19, x0
    bl      cpu_el2_setup
    mov     x0, x19
    bl      cpu_set_stack
    mov     x0, x19
    bl      secondary_main
4:  wfe
    b       4b

// Clears FP/SIMD (and, when present, SVE) traps at EL2 and selects SP_EL2. Clobbers x1, x2.
cpu_el2_setup:
    mov     x1, #{cptr}
    mrs     x2, id_aa64pfr0_el1
    ubfx    x2, x2, #32, #4
    cbz     x2, 5f
    bic     x1, x1, #(1 << 8)
5:  msr     cptr_el2, x1
    msr     spsel, #1
    isb
    ret

// SP = top of the stack of CPU x0. Clobbers x1, x2.
cpu_set_stack:
    adrp    x1, __stacks_start
    add     x1, x1, :lo12:__stacks_start
    mov     x2, #{stack_size}
    madd    x1, x0, x2, x1
    add     sp, x1, x2
    ret
"#,
    cptr = const CPTR_EL2_RES1_NO_FP_TRAP,
    stack_size = const STACK_SIZE,
);
