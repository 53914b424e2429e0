//! The generic timer as Partita uses it at EL2 (ARM ARM D11 "The Generic Timer"): the physical
//! counter that is the scheduler's clock, the EL2 physical timer (CNTHP, PPI 26) that wakes
//! the scheduler at its next event, and the live state of the loaded guest's virtual timer.
//!
//! It only reads and writes timer registers; which deadline to program is the scheduler's
//! decision (`partita_core::sched`). It never programs the EL1 physical timer, which may
//! belong to a real-time VM: it only stops it when that VM is rebuilt or stopped, and reads
//! its deadline, one of the CPU's events while the VM owns it (`owned_physical_deadline`).

use core::sync::atomic::{AtomicBool, Ordering};

use super::entry::{cpu_index, MAX_CPUS};
use super::sysreg::{read_sysreg, write_sysreg};

/// CNTx_CTL bits: ENABLE, IMASK, ISTATUS.
const CTL_ENABLE: u64 = 1;
const CTL_IMASK: u64 = 1 << 1;
const CTL_ISTATUS: u64 = 1 << 2;

/// The physical count now (CNTPCT_EL0, after an ISB so it is not read early).
pub fn now() -> u64 {
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
    read_sysreg!("cntpct_el0")
}

/// Counter ticks per second (CNTFRQ_EL0).
pub fn frequency() -> u64 {
    read_sysreg!("cntfrq_el0")
}

/// Arms CNTHP to fire when the counter reaches `deadline`, or disarms it on `None`.
pub fn arm_hyp_timer(deadline: Option<u64>) {
    match deadline {
        Some(at) => {
            write_sysreg!("cnthp_cval_el2", at);
            write_sysreg!("cnthp_ctl_el2", CTL_ENABLE);
        }
        None => write_sysreg!("cnthp_ctl_el2", 0),
    }
}

/// When CNTHP fires (the CPU's next scheduling event), if it is armed and not masked.
pub fn hyp_deadline() -> Option<u64> {
    let ctl = read_sysreg!("cnthp_ctl_el2");
    (ctl & (CTL_ENABLE | CTL_IMASK) == CTL_ENABLE).then(|| read_sysreg!("cnthp_cval_el2"))
}

/// The loaded guest's virtual-timer deadline in physical ticks (CNTV_CVAL_EL0 +
/// CNTVOFF_EL2), if the timer is enabled and its interrupt not masked.
pub fn virtual_deadline(counter_offset: u64) -> Option<u64> {
    let ctl = read_sysreg!("cntv_ctl_el0");
    (ctl & (CTL_ENABLE | CTL_IMASK) == CTL_ENABLE)
        .then(|| read_sysreg!("cntv_cval_el0").saturating_add(counter_offset))
}

/// Whether the loaded guest's virtual timer is armed (enabled, its interrupt not masked)
/// and its deadline is at most `ticks` away, or passed.
pub fn virtual_due_within(ticks: u64) -> bool {
    let ctl = read_sysreg!("cntv_ctl_el0");
    let left = read_sysreg!("cntv_cval_el0").wrapping_sub(read_sysreg!("cntvct_el0"));
    ctl & (CTL_ENABLE | CTL_IMASK) == CTL_ENABLE && (left as i64) <= ticks as i64
}

/// Whether the loaded guest's virtual timer asserts its interrupt now.
pub fn virtual_firing() -> bool {
    read_sysreg!("cntv_ctl_el0") & (CTL_ENABLE | CTL_IMASK | CTL_ISTATUS)
        == CTL_ENABLE | CTL_ISTATUS
}

/// Per CPU: a VM placed on it owns its EL1 physical timer (`timer = "physical"`).
static PHYSICAL_OWNED: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];

/// Records that a VM owns this CPU's EL1 physical timer, once, before its vCPUs run.
pub fn physical_owned() {
    PHYSICAL_OWNED[cpu_index()].store(true, Ordering::Relaxed);
}

/// When this CPU's EL1 physical timer fires, if a VM owns it and it is armed (enabled, its
/// interrupt not masked) and has not fired yet: the owner's next tick, which the run queue
/// does not see. A timer that fired is a pending or taken interrupt, not an event to come.
pub fn owned_physical_deadline() -> Option<u64> {
    if !PHYSICAL_OWNED[cpu_index()].load(Ordering::Relaxed) {
        return None;
    }
    let ctl = read_sysreg!("cntp_ctl_el0");
    (ctl & (CTL_ENABLE | CTL_IMASK | CTL_ISTATUS) == CTL_ENABLE)
        .then(|| read_sysreg!("cntp_cval_el0"))
}

/// Stops the EL1 physical timer (a real-time VM that owned it is rebuilt or stopped).
pub fn stop_physical() {
    write_sysreg!("cntp_ctl_el0", 0);
}
