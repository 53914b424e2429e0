//! The hooks the FreeRTOS port (ARM_AARCH64_SRE, or ARM_AARCH64 in the `gicv2` build) and
//! kernel call into: the tick set-up
//! (`configSETUP_TICK_INTERRUPT`), the IRQ dispatcher (`vApplicationFPUSafeIRQHandler`,
//! reached through the port's FP-saving `vApplicationIRQHandler`), the idle hook and
//! `configASSERT`.
//!
//! The tick is the EL1 virtual timer re-armed at absolute compare values, one period after
//! the one that fired, so releases never drift. Each tick also releases the periodic
//! real-time task: it publishes the release (sequence number and the compare value that
//! fired, i.e. the programmed expiry) and wakes the task with a direct-to-task
//! notification. This module must never block or print from interrupt context.

use crate::freertos::{self, Task};
use crate::{bench, console, gic, ivc, ofdm, sgi, timer, vectors};
use core::ffi::{c_char, c_ulong, c_void, CStr};
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// GIC priority of the tick: the port requires portLOWEST_USABLE_INTERRUPT_PRIORITY
/// (30 of 32 levels) shifted by portPRIORITY_SHIFT (3), see FreeRTOSConfig.h.
pub const TICK_PRIORITY: u8 = 30 << 3;
/// The INTID in an acknowledge value; the special INTIDs 1020..1023 (spurious) match no
/// source and are left alone.
const INTID_MASK: u32 = gic::INTID_MASK;

static TICK_INTID: AtomicU32 = AtomicU32::new(u32::MAX);
static TICK_PERIOD: AtomicU64 = AtomicU64::new(0);
/// The latest release of the real-time task: its sequence number (1 for the first tick)
/// and its programmed expiry (the compare value that fired). Written only by the tick
/// handler; read with `latest_release`.
static RELEASE_SEQUENCE: AtomicU64 = AtomicU64::new(0);
static RELEASE_EXPIRY: AtomicU64 = AtomicU64::new(0);
/// Interrupt latency of the latest tick: counter ticks from the compare value that fired
/// to the first instruction of the IRQ vector.
static RELEASE_IRQ_LATENCY: AtomicU64 = AtomicU64::new(0);
/// The task released by every tick; null until `set_release_task`.
static RELEASE_TASK: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());

/// Chooses the tick's interrupt and counter frequency; call before the scheduler starts.
pub fn configure_tick(intid: u32, counter_frequency: u64) {
    TICK_INTID.store(intid, Ordering::Relaxed);
    let period = (counter_frequency / freertos::TICK_RATE_HZ).max(1);
    TICK_PERIOD.store(period, Ordering::Relaxed);
}

/// Makes `task` the one each tick notifies.
pub fn set_release_task(task: Task) {
    RELEASE_TASK.store(task.into_raw(), Ordering::Release);
}

/// The tick period in counter ticks.
pub fn tick_period() -> u64 {
    TICK_PERIOD.load(Ordering::Relaxed)
}

/// A release of the real-time task.
#[derive(Clone, Copy)]
pub struct Release {
    /// Releases since start-up, this one included.
    pub sequence: u64,
    /// Programmed expiry, in counter ticks.
    pub expiry: u64,
    /// Counter ticks from the expiry that fired to the IRQ vector's first instruction.
    pub irq_latency: u64,
}

/// The latest release, read consistently (the tick handler may run between two loads).
pub fn latest_release() -> Release {
    loop {
        let sequence = RELEASE_SEQUENCE.load(Ordering::Acquire);
        let expiry = RELEASE_EXPIRY.load(Ordering::Acquire);
        let irq_latency = RELEASE_IRQ_LATENCY.load(Ordering::Acquire);
        if RELEASE_SEQUENCE.load(Ordering::Acquire) == sequence {
            return Release {
                sequence,
                expiry,
                irq_latency,
            };
        }
    }
}

/// `configSETUP_TICK_INTERRUPT()`: arms the first tick one period from now. The GIC side
/// (group, priority, enable) was set up before the scheduler started.
#[no_mangle]
extern "C" fn vConfigureTickInterrupt() {
    timer::start(timer::now() + tick_period());
}

/// The port's C-level IRQ handler, called with the acknowledged ICC_IAR1_EL1 (GICC_IAR)
/// value; the port writes the end of interrupt after it returns. The SRE port reaches it
/// through its own FP-saving `vApplicationIRQHandler`, the GICv2 build's port through
/// `vectors.rs`'s.
#[no_mangle]
extern "C" fn vApplicationFPUSafeIRQHandler(iar: u32) {
    let intid = iar & INTID_MASK;
    if intid == TICK_INTID.load(Ordering::Relaxed) {
        on_tick();
    } else if intid == sgi::INTID {
        bench::on_test_interrupt();
    } else if !ofdm::on_interrupt(intid) {
        ivc::on_interrupt(intid);
    }
}

/// The software interrupt's handler (`vectors::raise_software_interrupt`), run in interrupt
/// context: the benchmarks' interrupt.
pub extern "C" fn on_software_interrupt() {
    bench::on_test_interrupt();
}

/// Re-arms the timer (clearing its level interrupt, and unmasking it: Xen masks the
/// virtual timer when it takes the expiry at EL2 and injects it, as Linux's timer driver
/// expects), publishes the release, runs the kernel's tick and wakes the real-time task. A handler that runs whole periods late
/// publishes the releases it passed over as well (the task counts them as missed); the
/// kernel's tick count advances by one only.
fn on_tick() {
    let entered = vectors::irq_entry_counter();
    let fired = timer::deadline();
    let period = tick_period();
    let passed_over = timer::now().saturating_sub(fired) / period;
    timer::start(fired + (passed_over + 1) * period);
    let sequence = RELEASE_SEQUENCE.load(Ordering::Relaxed) + 1 + passed_over;
    RELEASE_EXPIRY.store(fired + passed_over * period, Ordering::Release);
    RELEASE_IRQ_LATENCY.store(entered.saturating_sub(fired), Ordering::Release);
    RELEASE_SEQUENCE.store(sequence, Ordering::Release);
    freertos::tick_from_isr();
    let task = RELEASE_TASK.load(Ordering::Acquire);
    if !task.is_null() {
        // SAFETY: RELEASE_TASK only ever holds a handle from `Task::into_raw`.
        freertos::notify_from_isr(unsafe { Task::from_raw(task) });
    }
}

/// Idle hook: wait for the next interrupt (under a hypervisor, this hands the CPU back).
#[no_mangle]
extern "C" fn vApplicationIdleHook() {
    aarch64_cpu::asm::wfi();
}

/// `configASSERT` failure: report where and halt.
#[no_mangle]
extern "C" fn vAssertCalled(file: *const c_char, line: c_ulong) {
    let file = if file.is_null() {
        "?"
    } else {
        // SAFETY: the kernel passes __FILE__, a static NUL-terminated string.
        unsafe { CStr::from_ptr(file) }.to_str().unwrap_or("?")
    };
    console::halt(format_args!("FreeRTOS assertion failed at {file}:{line}"))
}
