//! Partita's locks: `spin`'s mutex whose waiter executes YIELD between attempts.
//!
//! `core::hint::spin_loop` is ISB on AArch64, which QEMU runs like any instruction. Under
//! `-icount` QEMU 7.2 runs the CPUs in turn on one thread and ends a turn only at the next
//! timer deadline (docs/smp.md, "On QEMU"), so a CPU spinning on a lock that another CPU holds
//! would keep its turn, and the holder could wait for hundreds of ms of virtual time
//! before it ran again to release it. YIELD ends the turn in QEMU's round robin (it is a
//! hint with no architectural effect on hardware).

/// Waits by YIELD.
pub struct Yield;

impl spin::RelaxStrategy for Yield {
    fn relax() {
        // The fabric CPU keeps its beat while it waits: its turns must stay short even when
        // the holder's turn comes only after some far deadline.
        crate::beat::keep_if_fabric();
        yield_cpu();
    }
}

/// Executes YIELD: the emulated CPU hands its turn to the next one.
pub fn yield_cpu() {
    // SAFETY: a hint instruction with no architectural effect.
    unsafe { core::arch::asm!("yield", options(nomem, nostack)) };
}

pub type Mutex<T> = spin::mutex::SpinMutex<T, Yield>;
pub type MutexGuard<'a, T> = spin::mutex::SpinMutexGuard<'a, T, Yield>;

/// A lock served in the order it was asked for (a ticket lock), for state that one CPU may
/// take again and again while another waits: the fabric's manager, which a VM's request
/// storm takes in every trap (docs/accelerators.md). The waiter yields as `Mutex`'s does.
pub type FairMutex<T> = spin::mutex::TicketMutex<T, Yield>;
