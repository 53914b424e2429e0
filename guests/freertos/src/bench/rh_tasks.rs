//! The task bodies of the six Rhealstone components and the `start_*` functions that
//! create them. Every component measures in counter ticks into `MEASURED`: either the
//! elapsed time of the whole run (from the first task's start to the last task's end) or
//! the sum of per-loop one-way delays. With the operation left out, the same loops
//! measure their own overhead. One-way delays are shorter than a few ticks of the 62.5 MHz
//! counter, so each loop first spins a loop-dependent number of steps (outside the timed
//! interval): the start then falls on every phase of a counter tick, and the average is
//! not biased by the quantization. The last task to finish notifies the controller and every
//! task then parks until the controller deletes it.

use super::objects::{self, InterruptRole, CONTROLLER, MUTEX, QUEUE, SEMAPHORE};
use crate::freertos::{self, Mutex, OutOfMemory, Queue, Semaphore};
use crate::sgi::SgiToSelf;
use crate::{timer, vectors};
use core::ffi::c_void;
use core::hint::black_box;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static WITH_OPERATION: AtomicBool = AtomicBool::new(true);
static LOOPS: AtomicU64 = AtomicU64::new(0);
/// Counter value when the first task started (0: not yet).
static STARTED: AtomicU64 = AtomicU64::new(0);
/// Tasks finished in this pass.
static FINISHED: AtomicU64 = AtomicU64::new(0);
/// The pass's result in counter ticks.
static MEASURED: AtomicU64 = AtomicU64::new(0);
/// Counter value when the sender made the receiver ready (preemption).
static SENT: AtomicU64 = AtomicU64::new(0);
/// Counter value at the IRQ vector of the latest SGI (interrupt latency).
static SGI_ENTRY: AtomicU64 = AtomicU64::new(0);

/// Sets up a pass; call before starting its tasks.
pub fn prepare(with_operation: bool, loops: u64) {
    WITH_OPERATION.store(with_operation, Ordering::Relaxed);
    LOOPS.store(loops, Ordering::Relaxed);
    for value in [&STARTED, &FINISHED, &MEASURED, &SENT, &SGI_ENTRY] {
        value.store(0, Ordering::Relaxed);
    }
}

/// The pass's result in counter ticks.
pub fn measured() -> u64 {
    MEASURED.load(Ordering::Acquire)
}

fn settings() -> (bool, u64) {
    (
        WITH_OPERATION.load(Ordering::Relaxed),
        LOOPS.load(Ordering::Relaxed),
    )
}

/// Marks the start of an elapsed-time measurement (the first caller wins).
fn begin() {
    let _ = STARTED.compare_exchange(0, timer::now(), Ordering::AcqRel, Ordering::Acquire);
}

/// Ends this task's part; the last of `parties` tasks ends an elapsed-time measurement
/// (`elapsed`) and notifies the controller. Parks the task.
fn finish(parties: u64, elapsed: bool) -> ! {
    let ended = timer::now();
    if FINISHED.fetch_add(1, Ordering::AcqRel) + 1 == parties {
        if elapsed {
            let started = STARTED.load(Ordering::Acquire);
            MEASURED.store(ended.saturating_sub(started), Ordering::Release);
        }
        if let Some(controller) = CONTROLLER.get() {
            freertos::notify(controller);
        }
    }
    loop {
        freertos::suspend_self();
    }
}

/// Counter ticks per dither cycle (16 ns at 62.5 MHz and 1 ns per instruction).
const DITHER_STEPS: u64 = 16;

/// Spins `index % DITHER_STEPS` steps, so that consecutive loops start at other phases.
fn dither(index: u64) {
    for step in 0..index % DITHER_STEPS {
        black_box(step);
    }
}

/// Stores a one-way delay sum as the result.
fn record(sum: u64) {
    MEASURED.store(sum, Ordering::Release);
}

pub fn start_task_switch(_: bool) -> Result<(), OutOfMemory> {
    objects::spawn(0, switching, c"rh-switch", 10)?;
    objects::spawn(1, switching, c"rh-switch", 10)?;
    Ok(())
}

/// Two equal-priority tasks yielding to each other.
extern "C" fn switching(_: *mut c_void) {
    let (with_operation, loops) = settings();
    begin();
    for _ in 0..loops {
        if with_operation {
            freertos::yield_now();
        } else {
            black_box(());
        }
    }
    finish(2, true)
}

pub fn start_preemption(with_operation: bool) -> Result<(), OutOfMemory> {
    objects::spawn(0, preempted, c"rh-low", 10)?;
    if with_operation {
        objects::spawn(1, preempting, c"rh-high", 9)?;
    }
    Ok(())
}

/// The low task: notifies the high one, which preempts it at once.
extern "C" fn preempted(_: *mut c_void) {
    let (with_operation, loops) = settings();
    let high = objects::task(1);
    let mut sum = 0;
    for index in 0..loops {
        dither(index);
        let sent = timer::now();
        match high.filter(|_| with_operation) {
            Some(high) => {
                SENT.store(sent, Ordering::Relaxed);
                freertos::notify(high);
            }
            None => sum += timer::now() - sent,
        }
    }
    if !with_operation {
        record(sum);
    }
    finish(if with_operation { 2 } else { 1 }, false)
}

/// The high task: blocked on its notification, it measures how long the switch took.
extern "C" fn preempting(_: *mut c_void) {
    let (_, loops) = settings();
    let mut sum = 0;
    for _ in 0..loops {
        freertos::wait_notification();
        sum += timer::now().saturating_sub(SENT.load(Ordering::Relaxed));
    }
    record(sum);
    finish(2, false)
}

pub fn start_interrupt_latency(_: bool) -> Result<(), OutOfMemory> {
    objects::set_interrupt_role(InterruptRole::Stamp);
    objects::spawn(0, interrupting, c"rh-irq", 10)?;
    Ok(())
}

/// Raises the SGI and measures until its vector's first instruction.
extern "C" fn interrupting(_: *mut c_void) {
    let (with_operation, loops) = settings();
    let sgi = SgiToSelf::new();
    let mut sum = 0;
    for index in 0..loops {
        dither(index);
        let raised = timer::now();
        if with_operation {
            sgi.send();
            sum += SGI_ENTRY.load(Ordering::Relaxed).saturating_sub(raised);
        } else {
            sum += timer::now() - raised;
        }
    }
    record(sum);
    finish(1, false)
}

/// SGI handler of the interrupt-latency component: keeps the vector's counter stamp.
pub fn on_interrupt() {
    SGI_ENTRY.store(vectors::irq_entry_counter(), Ordering::Relaxed);
}

pub fn start_semaphore_shuffle(_: bool) -> Result<(), OutOfMemory> {
    SEMAPHORE.set(Semaphore::counting(1, 1)?);
    objects::spawn(0, shuffling, c"rh-shuffle", 10)?;
    objects::spawn(1, shuffling, c"rh-shuffle", 10)?;
    Ok(())
}

/// Two equal-priority tasks passing a semaphore between them, yielding in between.
extern "C" fn shuffling(_: *mut c_void) {
    let (with_operation, loops) = settings();
    let semaphore = SEMAPHORE.get().filter(|_| with_operation);
    begin();
    for _ in 0..loops {
        if let Some(semaphore) = semaphore {
            semaphore.take();
        }
        freertos::yield_now();
        if let Some(semaphore) = semaphore {
            semaphore.give();
        }
        freertos::yield_now();
    }
    finish(2, true)
}

pub fn start_deadlock_break(_: bool) -> Result<(), OutOfMemory> {
    MUTEX.set(Mutex::new()?);
    objects::spawn(0, deadlock_low, c"rh-dl-low", 10)?;
    let medium = objects::spawn(1, deadlock_medium, c"rh-dl-medium", 9)?;
    let high = objects::spawn(2, deadlock_high, c"rh-dl-high", 8)?;
    freertos::suspend(medium);
    freertos::suspend(high);
    Ok(())
}

/// The low task: holds the mutex while it resumes the high task; priority inheritance
/// lets it release the mutex although the medium task is ready.
extern "C" fn deadlock_low(_: *mut c_void) {
    let (with_operation, loops) = settings();
    let mutex = MUTEX.get().filter(|_| with_operation);
    let high = objects::task(2);
    begin();
    for _ in 0..loops {
        if let Some(mutex) = mutex {
            mutex.lock();
        }
        if let Some(high) = high {
            freertos::resume(high);
        }
        if let Some(mutex) = mutex {
            mutex.unlock();
        }
    }
    finish(1, true)
}

/// The medium task: made ready by the high task, it only suspends itself again.
extern "C" fn deadlock_medium(_: *mut c_void) {
    loop {
        freertos::suspend_self();
    }
}

/// The high task: readies the medium task, then needs the mutex the low task holds.
extern "C" fn deadlock_high(_: *mut c_void) {
    let (with_operation, _) = settings();
    let mutex = MUTEX.get().filter(|_| with_operation);
    let medium = objects::task(1);
    loop {
        if let Some(medium) = medium {
            freertos::resume(medium);
        }
        if let Some(mutex) = mutex {
            mutex.lock();
            mutex.unlock();
        }
        freertos::suspend_self();
    }
}

pub fn start_message_latency(with_operation: bool) -> Result<(), OutOfMemory> {
    QUEUE.set(Queue::new(1)?);
    objects::spawn(0, sending, c"rh-send", 10)?;
    if with_operation {
        objects::spawn(1, receiving, c"rh-receive", 9)?;
    }
    Ok(())
}

/// The sender: a 4-word message carrying its send time through the 1-slot queue.
extern "C" fn sending(_: *mut c_void) {
    let (with_operation, loops) = settings();
    let queue = QUEUE.get().filter(|_| with_operation);
    let mut sum = 0;
    for index in 0..loops {
        dither(index);
        let sent = timer::now();
        match queue {
            Some(queue) => {
                queue.send(&[sent, index, 0, 0]);
            }
            None => sum += timer::now() - sent,
        }
    }
    if !with_operation {
        record(sum);
    }
    finish(if with_operation { 2 } else { 1 }, false)
}

/// The receiver (higher priority): measures each message's delay.
extern "C" fn receiving(_: *mut c_void) {
    let (_, loops) = settings();
    let Some(queue) = QUEUE.get() else {
        finish(2, false)
    };
    let mut sum = 0;
    for _ in 0..loops {
        if let Some(message) = queue.receive() {
            sum += timer::now().saturating_sub(message[0]);
        }
    }
    record(sum);
    finish(2, false)
}
