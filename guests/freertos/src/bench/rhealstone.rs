//! Rhealstone (Kar & Porter, 1989), the six components: task switch, preemption,
//! interrupt latency, semaphore shuffle, deadlock break and intertask message latency.
//! Each component runs its loop `loops` times twice: once with the operation under test
//! and once with it left out (the loop overhead); the result is the difference per
//! operation in ns of the virtual counter. The task bodies live in `rh_tasks`; this
//! module owns the component table, the two passes and the arithmetic.

use super::{objects, report, rh_tasks, Selection};
use crate::{console, freertos, timer};

const EXPERIMENT: &str = "rhealstone";

/// One component: how to start its tasks and how many operations one loop performs.
struct Component {
    name: &'static str,
    start: fn(bool) -> Result<(), freertos::OutOfMemory>,
    operations_per_loop: u64,
}

const COMPONENTS: [Component; 6] = [
    Component {
        name: "task-switch",
        start: rh_tasks::start_task_switch,
        operations_per_loop: 2,
    },
    Component {
        name: "preemption",
        start: rh_tasks::start_preemption,
        operations_per_loop: 1,
    },
    Component {
        name: "interrupt-latency",
        start: rh_tasks::start_interrupt_latency,
        operations_per_loop: 1,
    },
    Component {
        name: "semaphore-shuffle",
        start: rh_tasks::start_semaphore_shuffle,
        operations_per_loop: 2,
    },
    Component {
        name: "deadlock-break",
        start: rh_tasks::start_deadlock_break,
        operations_per_loop: 1,
    },
    Component {
        name: "message-latency",
        start: rh_tasks::start_message_latency,
        operations_per_loop: 1,
    },
];

/// Measures every selected component and reports time, overhead and loop count.
pub fn run(selection: &Selection) {
    let frequency = timer::frequency();
    for component in COMPONENTS
        .iter()
        .filter(|component| selection.runs(component.name))
    {
        let measured = measure(component, true, selection.loops);
        let overhead = measure(component, false, selection.loops);
        let operations = selection.loops * component.operations_per_loop;
        let per_operation = |ticks: u64| timer::ticks_to_ns(ticks, frequency) / operations.max(1);
        let name = Some(component.name);
        report::result(
            EXPERIMENT,
            name,
            "time",
            per_operation(measured.saturating_sub(overhead)),
            "ns",
        );
        report::result(EXPERIMENT, name, "overhead", per_operation(overhead), "ns");
        report::result(EXPERIMENT, name, "loops", selection.loops, "count");
    }
}

/// One pass: starts the component's tasks, waits until they report, returns the counter
/// ticks they measured.
fn measure(component: &Component, with_operation: bool, loops: u64) -> u64 {
    rh_tasks::prepare(with_operation, loops);
    if (component.start)(with_operation).is_err() {
        console::halt(format_args!(
            "bench: {}: FreeRTOS heap exhausted",
            component.name
        ));
    }
    freertos::wait_notification();
    let ticks = rh_tasks::measured();
    objects::teardown();
    ticks
}
