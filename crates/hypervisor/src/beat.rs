//! The fabric CPU's beat: its EL2 timer, kept armed at most `BEAT_NS` ahead whatever the CPU
//! does (computing, waiting in WFI, waiting for a lock), and its wake-up from WFI.
//!
//! Under QEMU 7.2's `-icount` round robin a CPU's turn ends at the next timer deadline of any
//! CPU, so the beat bounds every CPU's turn, and with it how long the RTOS's CPU can wait for
//! the others after its tick re-arm ended its own turn (`docs/accelerators.md`). Arming the
//! earliest deadline also ends the fabric CPU's own turn: the other CPUs run until it. On
//! hardware the beat only sets how soon the fabric notices a START (its poll period).

use core::sync::atomic::{AtomicU64, Ordering};

use crate::arch::aarch64::sysreg::read_sysreg;
use crate::arch::aarch64::timer;

/// The longest a beat lasts (ns of virtual time).
const BEAT_NS: u64 = 2_000;

/// MPIDR_EL1's affinity of the fabric CPU (`u64::MAX` until `start`).
static CPU: AtomicU64 = AtomicU64::new(u64::MAX);
/// The compare value armed (counter ticks).
static ARMED: AtomicU64 = AtomicU64::new(0);

fn affinity() -> u64 {
    read_sysreg!("mpidr_el1") & 0xff_00ff_ffff
}

/// This CPU is the fabric's: its waits for locks keep the beat from now on.
pub fn start() {
    CPU.store(affinity(), Ordering::Relaxed);
}

fn period() -> u64 {
    ticks_of(BEAT_NS, timer::frequency().max(1)).max(1)
}

fn arm(at: u64) {
    ARMED.store(at, Ordering::Relaxed);
    timer::arm_hyp_timer(Some(at));
}

/// Re-arms the timer a beat ahead once it is due (the fabric CPU only).
pub fn keep() {
    let now = timer::now();
    if now >= ARMED.load(Ordering::Relaxed) {
        arm(now + period());
    }
}

/// `keep` if this is the fabric CPU (a lock waiter on any CPU calls it).
pub fn keep_if_fabric() {
    if CPU.load(Ordering::Relaxed) == affinity() {
        keep();
    }
}

/// Waits in WFI until virtual time `event` (ns) or a beat from now, whichever is first:
/// the CPU executes nothing meanwhile (QEMU halts it).
pub fn wait(event: Option<u64>) {
    let now = timer::now();
    let mut at = now + period();
    if let Some(event) = event {
        at = at.min(ticks_of(event, timer::frequency().max(1)));
    }
    if at <= now {
        return;
    }
    arm(at);
    // Interrupts stay masked at EL2 on this CPU: the timer's PPI only ends the WFI, and
    // re-arming the timer withdraws it (it is level-sensitive).
    aarch64_cpu::asm::wfi();
}

/// `ns` of virtual time in counter ticks at `frequency`, rounded up.
fn ticks_of(ns: u64, frequency: u64) -> u64 {
    (u128::from(ns) * u128::from(frequency)).div_ceil(1_000_000_000) as u64
}
