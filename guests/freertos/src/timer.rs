//! The EL1 virtual generic timer (CNTV) and the virtual counter (ARM ARM D11).
//!
//! The tick source: it runs unchanged natively (CNTVOFF_EL2 = 0) and under a hypervisor,
//! which keeps the virtual counter per VM. It owns the CNTV comparator; it never touches
//! the physical timer, which stays free for the alternative tick a configuration may choose.

use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{
    Readable, Writeable, CNTFRQ_EL0, CNTVCT_EL0, CNTV_CTL_EL0, CNTV_CVAL_EL0,
};

/// Counter frequency in Hz, as firmware (or the hypervisor) set CNTFRQ_EL0.
pub fn frequency() -> u64 {
    CNTFRQ_EL0.get()
}

/// The virtual counter, read after earlier instructions have completed.
pub fn now() -> u64 {
    barrier::isb(barrier::SY);
    CNTVCT_EL0.get()
}

/// The compare value the timer fires at.
pub fn deadline() -> u64 {
    CNTV_CVAL_EL0.get()
}

/// Moves the compare value; the interrupt (level) drops if `counter` lies in the future.
pub fn set_deadline(counter: u64) {
    CNTV_CVAL_EL0.set(counter);
    barrier::isb(barrier::SY);
}

/// Arms the timer at `counter` with its interrupt unmasked.
pub fn start(counter: u64) {
    CNTV_CVAL_EL0.set(counter);
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::SET + CNTV_CTL_EL0::IMASK::CLEAR);
    barrier::isb(barrier::SY);
}

/// Disables the timer, withdrawing its interrupt.
pub fn stop() {
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::CLEAR + CNTV_CTL_EL0::IMASK::SET);
    barrier::isb(barrier::SY);
}

/// Converts counter ticks to nanoseconds at `frequency` Hz.
pub fn ticks_to_ns(ticks: u64, frequency: u64) -> u64 {
    let ns = u128::from(ticks) * 1_000_000_000 / u128::from(frequency.max(1));
    u64::try_from(ns).unwrap_or(u64::MAX)
}
