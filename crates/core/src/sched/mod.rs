//! Partita's vCPU scheduling policy: one `RunQueue` per physical CPU, fixed-priority
//! preemptive, round robin with a time slice inside one priority level (the policy of the seeds:
//! SPUMONE's fixed-priority virtual processors, Ker-ONE's priority-based preemptive round robin
//! with the GPOS running in the background). No crate implements a hypervisor's vCPU policy, so
//! it is written by hand.
//!
//! It owns plain data only: which vCPUs share the CPU, their priorities, which one runs, which
//! wait in WFI and until when. Time is the physical counter (CNTPCT_EL0) in ticks. It never
//! touches a register, never allocates (every set is a fixed-capacity `heapless::Vec` inside
//! the queue, so the hypervisor may call it with interrupts masked in its IRQ path) and
//! never panics: an unknown vCPU gets a `SchedError`, any call order leaves a consistent queue.
//!
//! The rules (POSIX `SCHED_RR` applied to vCPUs, IEEE Std 1003.1 "Scheduling Policies"):
//! - the highest-priority ready vCPU runs; a higher-priority vCPU that becomes ready takes the
//!   CPU at the next `pick`, whatever the running guest's own interrupt mask (physical IRQs reach
//!   EL2 first);
//! - vCPUs of one priority take turns: the running one goes to the tail of its level when its
//!   slice has run out and a peer is ready; a vCPU alone in its level is never interrupted;
//! - a vCPU preempted by a higher priority goes back to the *head* of its level and keeps the
//!   rest of its slice ("When a running thread is preempted, it shall become the head of the
//!   thread list for its priority"): the GPOS that lost the CPU to the RTOS resumes first and is
//!   not charged for the RTOS's time;
//! - a vCPU that blocks (WFI), yields or is woken goes to the tail with a fresh slice.
//!
//! How the hypervisor drives it, on each physical CPU, with "now" read from CNTPCT_EL0 (only
//! its own CPU ever touches a queue; an event for a vCPU of another CPU reaches that CPU as a
//! physical SGI and is handled there):
//! - start: `RunQueue::new(ticks_from_micros(slice_us, CNTFRQ_EL0))`, then `add` each vCPU
//!   placed on this CPU with its VM's priority, `pick` and enter the chosen vCPU;
//! - WFI trap with no interrupt pending in the vCPU's vGIC: save its virtual timer and
//!   `block(vcpu, deadline)`, the deadline being CNTV_CVAL_EL0 + CNTVOFF_EL2 in physical
//!   ticks if CNTV_CTL_EL0 has ENABLE set and IMASK clear, else `None`; then `pick`;
//! - WFE trap (a guest spinning on a lock): `yield_now`, then `pick`;
//! - a physical interrupt for a vCPU of this CPU (its device line, its virtual-timer PPI, an
//!   SGI, a doorbell), once it is pending in that vCPU's vGIC: `wake`; if `should_preempt`,
//!   switch to `pick`'s choice at once, whatever the running guest's PSTATE.I;
//! - the EL2 timer (CNTHP) fires: `pick` (it calls `expire` first);
//! - a VM stops or restarts: `remove` (and `add` again) its vCPUs, then `pick`;
//! - two shortcuts that decide exactly as the calls above and answer `None` (the queue
//!   unchanged) otherwise, for the switches a CPU shared by a real-time VM and a GPOS makes
//!   all the time: when CNTHP fires, `preempt_at_deadline` instead of `pick` (the one vCPU
//!   whose deadline came takes the CPU from a lower priority); at a WFI, `block_and_hand_over`
//!   instead of `block`, `pick` and the later `leave` (the one ready vCPU first in line runs,
//!   the blocked one takes its deadline along); each answers `next_event` with its decision
//!   (`HandedOver`), and on a queue of two vCPUs of two priorities (a real-time VM and a
//!   GPOS) first tries the pair's usual state, which it decides with a few word compares;
//! - before entering a guest or waiting, program CNTHP_CVAL_EL2 from `next_event` (disable
//!   CNTHP on `None`); when `Decision::run` names another vCPU, save the old one's context and
//!   virtual timer and restore the new one's; on `None` wait in WFI at EL2.
//!
//! Timer pass-through (Ker-ONE): a VM given the EL1 physical timer exclusively keeps its
//! deadline in its own CNTP, which counts on while it is descheduled and whose PPI reaches EL2
//! (HCR_EL2.IMO); the hypervisor blocks it with no deadline and `wake`s it on that PPI, and
//! never saves or restores that timer. Nothing else differs, so the policy needs no flag for it.
//!
//! Configuration (proposed): `[board] slice_us` (default `DEFAULT_SLICE_US`), the slice of every
//! CPU's round robin. A slice is a property of a CPU's level sharing, not of one VM: POSIX gives
//! one `SCHED_RR` interval to all threads, and a per-VM slice would let one GPOS grant itself
//! more of the CPU than its peers. The RTOS alone at its level never consumes it.

mod entry;
mod ids;
mod long_work;
mod owners;
mod policy;
mod queue;
#[cfg(test)]
mod tests;

pub use ids::IdIndex;
pub use long_work::{
    earliest, has_room, LongWork, LINE_ROOM_MICROS, STOP_ROOM_MICROS, STOP_WAIT_MICROS,
};
pub use owners::{OwnerTable, MAX_OWNERS, OWNED_INTIDS};
pub use queue::RunQueue;

/// Most vCPUs one physical CPU can host.
pub const MAX_VCPUS: usize = 16;

/// Time slice proposed as the default of `[board] slice_us`: 10 ms, long against a guest
/// tick (1 to 4 ms) so round robin costs few switches, short enough for interactive shells.
pub const DEFAULT_SLICE_US: u32 = 10_000;

/// A shortcut's decision (`RunQueue::preempt_at_deadline`, `block_and_hand_over`): the vCPU
/// that runs now, and the queue's next event after the decision, as `next_event` answers at
/// the decision's time (the EL2 timer's next deadline, found with the decision: in the state
/// the two switches of a CPU shared by a real-time VM and a GPOS leave, without a search).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandedOver {
    pub run: VcpuId,
    pub next_event: Option<u64>,
}

/// Names one vCPU of the system: its VM's index in the configuration and its index in the VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VcpuId {
    pub vm: u16,
    pub vcpu: u16,
}

impl VcpuId {
    pub const fn new(vm: u16, vcpu: u16) -> VcpuId {
        VcpuId { vm, vcpu }
    }
}

/// Where a vCPU of the queue stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VcpuState {
    /// On the CPU now.
    Running,
    /// Able to run, waiting for its turn.
    Ready,
    /// In WFI: waits for an interrupt or its timer deadline.
    Blocked,
}

/// What the CPU runs after `RunQueue::pick`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The vCPU to run; `None`: nothing is runnable, wait in WFI at EL2.
    pub run: Option<VcpuId>,
    /// When `run` loses the CPU to a ready peer of its priority; `None` if no peer waits.
    pub slice_end: Option<u64>,
}

/// Why a `RunQueue` call was refused; the queue is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedError {
    /// The vCPU is not in this queue.
    UnknownVcpu(VcpuId),
    /// `add` of a vCPU already in the queue.
    AlreadyQueued(VcpuId),
    /// `add` beyond `MAX_VCPUS`.
    Full,
    /// `yield_now` while no vCPU runs.
    Idle,
}

/// Counter ticks in `nanos` ns at `counter_hz` (CNTFRQ_EL0), rounded up (a timer advance is
/// never shorter than configured), saturating instead of overflowing; 0 for 0 ns.
pub fn ticks_from_nanos(nanos: u32, counter_hz: u64) -> u64 {
    let ticks = (u128::from(nanos) * u128::from(counter_hz)).div_ceil(1_000_000_000);
    u64::try_from(ticks).unwrap_or(u64::MAX)
}

/// Counter ticks in `micros` microseconds at `counter_hz` (CNTFRQ_EL0), at least one tick,
/// saturating instead of overflowing.
pub fn ticks_from_micros(micros: u32, counter_hz: u64) -> u64 {
    let ticks = u128::from(micros) * u128::from(counter_hz) / 1_000_000;
    u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
}
