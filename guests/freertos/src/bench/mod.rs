//! The measurement suite's RTOS experiments (the project's BENCHMARKS.md, RTOS
//! experiments 1-4): Thread-Metric, Rhealstone, dispatch latency and interrupt latency, and
//! the cost of a console line (issue 16),
//! selected by boot arguments (`args`), printed as `bench:` lines (`report`) and ended
//! with `bench: done` and PSCI SYSTEM_OFF.
//!
//! A controller task at the highest priority runs the selected experiments one after the
//! other; each test creates its tasks and kernel objects and deletes them when it ends
//! (`objects`). This module owns the run order and the SGI handler's dispatch; it never
//! runs when the boot arguments select no benchmark (the demo runs instead).

mod args;
mod console_line;
mod latency;
mod objects;
mod partita;
mod pool;
mod report;
mod rh_tasks;
mod rhealstone;
mod stats;
mod thread_metric;
mod tm_tasks;

pub use args::Selection;

use crate::{console, freertos, psci};
use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::sync::atomic::{AtomicU8, Ordering};
use objects::InterruptRole;

/// Stack of the controller in 8-byte words (it formats the result lines).
const CONTROLLER_STACK_WORDS: usize = 4096;

/// Creates the controller that runs `selection`; call before the scheduler starts.
pub fn spawn(selection: Selection) -> Result<(), freertos::OutOfMemory> {
    SELECTION.publish(selection);
    let controller = freertos::spawn(
        controller_task,
        c"bench",
        CONTROLLER_STACK_WORDS,
        freertos::MAX_PRIORITIES - 1,
    )?;
    objects::CONTROLLER.set(controller);
    Ok(())
}

/// The handler of the benchmarks' interrupt, raised as an SGI or as the software interrupt
/// (interrupt context): plays the running test's role.
pub fn on_test_interrupt() {
    match objects::interrupt_role() {
        InterruptRole::GiveSemaphore => tm_tasks::on_interrupt(),
        InterruptRole::ResumeTask => tm_tasks::on_preempting_interrupt(),
        InterruptRole::Stamp => rh_tasks::on_interrupt(),
        InterruptRole::Ignore => {}
    }
}

extern "C" fn controller_task(_: *mut c_void) {
    let Some(selection) = SELECTION.get() else {
        console::halt(format_args!("bench: no selection published"))
    };
    console::line(format_args!(
        "bench: config mode={} period_ms={} samples={} loops={}",
        selection.mode.name(),
        selection.period_ms,
        selection.samples,
        selection.loops
    ));
    if selection.delay_ms > 0 {
        freertos::delay_ms(selection.delay_ms);
    }
    if selection.thread_metric {
        thread_metric::run(selection);
    }
    if selection.rhealstone {
        rhealstone::run(selection);
    }
    if selection.latency {
        latency::run(selection);
    }
    if selection.console {
        console_line::run(selection);
    }
    partita::report_counters();
    console::line(format_args!("bench: done"));
    psci::system_off()
}

/// The selection, written once before the scheduler starts and read by the controller.
struct Published {
    state: AtomicU8,
    value: UnsafeCell<Option<Selection>>,
}

const EMPTY: u8 = 0;
const WRITING: u8 = 1;
const READY: u8 = 2;

// SAFETY: `value` is written only by the one `publish` call that wins the EMPTY ->
// WRITING transition and read only after READY was stored, never written again.
unsafe impl Sync for Published {}

static SELECTION: Published = Published {
    state: AtomicU8::new(EMPTY),
    value: UnsafeCell::new(None),
};

impl Published {
    fn publish(&self, selection: Selection) {
        if self
            .state
            .compare_exchange(EMPTY, WRITING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // SAFETY: this call won the transition, so no other writer or reader exists.
            unsafe { *self.value.get() = Some(selection) };
            self.state.store(READY, Ordering::Release);
        }
    }

    fn get(&self) -> Option<&Selection> {
        if self.state.load(Ordering::Acquire) != READY {
            return None;
        }
        // SAFETY: READY means the value was written and will never change again.
        unsafe { (*self.value.get()).as_ref() }
    }
}
