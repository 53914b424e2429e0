//! The tick's EL1 generic timer and the counter it compares with (ARM ARM D11): the virtual
//! timer (CNTV, with the virtual counter) by default, or the physical timer (CNTP, with the
//! physical counter) when the boot arguments say `tick=physical`.
//!
//! The virtual timer runs unchanged natively (CNTVOFF_EL2 = 0) and under a hypervisor,
//! which keeps the virtual counter per VM. The physical timer is Ker-ONE's timer
//! pass-through: under Partita only a VM configured with `timer = "physical"` may use it.
//! The source is chosen once, before the tick starts; every reading of time in the guest
//! (tick, latency stamps, benchmarks) then uses that one counter.

use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{
    Readable, Writeable, CNTFRQ_EL0, CNTPCT_EL0, CNTP_CTL_EL0, CNTP_CVAL_EL0, CNTVCT_EL0,
    CNTV_CTL_EL0, CNTV_CVAL_EL0,
};
use core::sync::atomic::{AtomicBool, Ordering};

/// Which EL1 timer is the tick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Source {
    /// CNTV and the virtual counter.
    #[default]
    Virtual,
    /// CNTP and the physical counter.
    Physical,
}

static PHYSICAL: AtomicBool = AtomicBool::new(false);

/// Chooses the tick's timer; call before the first `start`.
pub fn select(source: Source) {
    PHYSICAL.store(source == Source::Physical, Ordering::Relaxed);
}

/// The timer chosen by `select`.
pub fn source() -> Source {
    if PHYSICAL.load(Ordering::Relaxed) {
        Source::Physical
    } else {
        Source::Virtual
    }
}

/// Counter frequency in Hz, as firmware (or the hypervisor) set CNTFRQ_EL0.
pub fn frequency() -> u64 {
    CNTFRQ_EL0.get()
}

/// The tick's counter, read after earlier instructions have completed.
pub fn now() -> u64 {
    barrier::isb(barrier::SY);
    match source() {
        Source::Virtual => CNTVCT_EL0.get(),
        Source::Physical => CNTPCT_EL0.get(),
    }
}

/// The compare value the timer fires at.
pub fn deadline() -> u64 {
    match source() {
        Source::Virtual => CNTV_CVAL_EL0.get(),
        Source::Physical => CNTP_CVAL_EL0.get(),
    }
}

/// Arms the timer at `counter` with its interrupt unmasked; the interrupt (level) drops if
/// `counter` lies in the future.
pub fn start(counter: u64) {
    match source() {
        Source::Virtual => {
            CNTV_CVAL_EL0.set(counter);
            CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::SET + CNTV_CTL_EL0::IMASK::CLEAR);
        }
        Source::Physical => {
            CNTP_CVAL_EL0.set(counter);
            CNTP_CTL_EL0.write(CNTP_CTL_EL0::ENABLE::SET + CNTP_CTL_EL0::IMASK::CLEAR);
        }
    }
    barrier::isb(barrier::SY);
}

/// Disables the timer, withdrawing its interrupt.
pub fn stop() {
    match source() {
        Source::Virtual => {
            CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::CLEAR + CNTV_CTL_EL0::IMASK::SET);
        }
        Source::Physical => {
            CNTP_CTL_EL0.write(CNTP_CTL_EL0::ENABLE::CLEAR + CNTP_CTL_EL0::IMASK::SET);
        }
    }
    barrier::isb(barrier::SY);
}

/// Converts counter ticks to nanoseconds at `frequency` Hz.
pub fn ticks_to_ns(ticks: u64, frequency: u64) -> u64 {
    let ns = u128::from(ticks) * 1_000_000_000 / u128::from(frequency.max(1));
    u64::try_from(ns).unwrap_or(u64::MAX)
}
