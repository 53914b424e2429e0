//! The probe's EL1 exception vectors and the log of synchronous exceptions they record.
//!
//! A synchronous exception taken from EL1 with SP_EL1 (the probe's only context) is recorded
//! in `TRAP_LOG` (count, ESR_EL1, FAR_EL1, ELR_EL1) and skipped by returning to ELR_EL1 + 4,
//! so a check can provoke an abort and then look at its syndrome; an instruction abort
//! returns to the link register instead (the probe reaches such code only with `blr`). Every other vector is
//! unexpected: it reports and crashes. The vectors never return into a faulting instruction.

use core::arch::global_asm;
use core::sync::atomic::{AtomicU64, Ordering};

/// Exception class of a data abort taken without a change in exception level (ARM ARM
/// D19.2.40, ESR_EL1.EC).
pub const EC_DATA_ABORT_SAME_EL: u64 = 0x25;
/// Data fault status code of a synchronous external abort, not on a table walk (ISS.DFSC).
pub const DFSC_EXTERNAL_ABORT: u64 = 0x10;

/// Written by the vector in assembly: offsets 0, 8, 16, 24.
#[repr(C, align(32))]
pub struct TrapLog {
    count: AtomicU64,
    esr: AtomicU64,
    far: AtomicU64,
    elr: AtomicU64,
}

pub static TRAP_LOG: TrapLog = TrapLog {
    count: AtomicU64::new(0),
    esr: AtomicU64::new(0),
    far: AtomicU64::new(0),
    elr: AtomicU64::new(0),
};

/// The last synchronous exception recorded, and how many were taken since the log was cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trap {
    pub count: u64,
    pub esr: u64,
    pub far: u64,
    pub elr: u64,
}

impl Trap {
    /// ESR_EL1.EC.
    pub fn class(&self) -> u64 {
        (self.esr >> 26) & 0x3f
    }

    /// ESR_EL1.ISS.DFSC/IFSC.
    pub fn fault_status(&self) -> u64 {
        self.esr & 0x3f
    }
}

/// Returns and clears what the vectors recorded; `None` if no exception was taken. Plain
/// loads and stores only: exclusives are not usable with the MMU off.
pub fn take_trap() -> Option<Trap> {
    let count = TRAP_LOG.count.load(Ordering::Relaxed);
    if count == 0 {
        return None;
    }
    TRAP_LOG.count.store(0, Ordering::Relaxed);
    Some(Trap {
        count,
        esr: TRAP_LOG.esr.load(Ordering::Relaxed),
        far: TRAP_LOG.far.load(Ordering::Relaxed),
        elr: TRAP_LOG.elr.load(Ordering::Relaxed),
    })
}

/// Any vector but "synchronous, current EL, SP_ELx": reports and stops the probe.
extern "C" fn unexpected_exception(vector: u64, esr: u64, elr: u64, far: u64) -> ! {
    crate::println!(
        "probe: unexpected exception at vector offset {vector:#x}: \
         ESR {esr:#x}, ELR {elr:#x}, FAR {far:#x}"
    );
    crate::crash()
}

global_asm!(
    r#"
    .macro unexpected offset
    .balign 0x80
    mov     x0, #\offset
    b       probe_unexpected_exception
    .endm

    .section .text.vectors, "ax"
    .balign 0x800
    .global probe_vectors
probe_vectors:
    unexpected 0x000
    unexpected 0x080
    unexpected 0x100
    unexpected 0x180

    // Synchronous, current EL with SP_ELx: record and skip the instruction.
    .balign 0x80
    stp     x0, x1, [sp, #-16]!
    adrp    x0, {log}
    add     x0, x0, :lo12:{log}
    ldr     x1, [x0]
    add     x1, x1, #1
    str     x1, [x0]
    mrs     x1, esr_el1
    str     x1, [x0, #8]
    mrs     x1, far_el1
    str     x1, [x0, #16]
    mrs     x1, elr_el1
    str     x1, [x0, #24]
    add     x1, x1, #4
    msr     elr_el1, x1
    // An instruction abort (EC 0x21) came from a branch into memory that cannot be
    // fetched: return to the link register instead.
    mrs     x1, esr_el1
    lsr     x1, x1, #26
    cmp     x1, #0x21
    b.ne    1f
    msr     elr_el1, x30
1:  ldp     x0, x1, [sp], #16
    eret

    unexpected 0x280
    unexpected 0x300
    unexpected 0x380
    unexpected 0x400
    unexpected 0x480
    unexpected 0x500
    unexpected 0x580
    unexpected 0x600
    unexpected 0x680
    unexpected 0x700
    unexpected 0x780

probe_unexpected_exception:
    mrs     x1, esr_el1
    mrs     x2, elr_el1
    mrs     x3, far_el1
    b       {handler}
    "#,
    log = sym TRAP_LOG,
    handler = sym unexpected_exception,
);
