//! The kernel objects of the test that is running: its tasks, semaphore, queue and mutex
//! (in `Slot`s, so tasks and the SGI handler can reach them), its counters, the role the
//! SGI handler plays, and the teardown that deletes them all between tests. Only the
//! controller creates and deletes; test tasks and handlers only use.

use crate::freertos::{self, Mutex, OutOfMemory, Queue, Semaphore, Slot, Task, TaskEntry};
use core::ffi::CStr;
use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// Most tasks a test uses.
pub const MAX_TASKS: usize = 5;
/// Stack of a test task in 8-byte words (test tasks never format text).
const TEST_STACK_WORDS: usize = 1024;

pub static TASKS: [Slot<Task>; MAX_TASKS] = [const { Slot::empty() }; MAX_TASKS];
pub static SEMAPHORE: Slot<Semaphore> = Slot::empty();
pub static QUEUE: Slot<Queue> = Slot::empty();
pub static MUTEX: Slot<Mutex> = Slot::empty();
/// The controller, notified by Rhealstone tasks when a measurement is complete.
pub static CONTROLLER: Slot<Task> = Slot::empty();
/// Counters of the running test (reset by `teardown`).
pub static COUNTERS: [AtomicU64; MAX_TASKS + 1] = [const { AtomicU64::new(0) }; MAX_TASKS + 1];

/// What the benchmarks' interrupt handler (the SGI's and the software interrupt's) does for
/// the running test.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum InterruptRole {
    Ignore = 0,
    GiveSemaphore = 1,
    ResumeTask = 2,
    Stamp = 3,
}

static INTERRUPT_ROLE: AtomicU8 = AtomicU8::new(InterruptRole::Ignore as u8);

pub fn set_interrupt_role(role: InterruptRole) {
    INTERRUPT_ROLE.store(role as u8, Ordering::Release);
}

pub fn interrupt_role() -> InterruptRole {
    match INTERRUPT_ROLE.load(Ordering::Acquire) {
        1 => InterruptRole::GiveSemaphore,
        2 => InterruptRole::ResumeTask,
        3 => InterruptRole::Stamp,
        _ => InterruptRole::Ignore,
    }
}

/// FreeRTOS priority of Thread-Metric priority `p` (1 = highest, the controller is 0).
pub fn priority(p: u64) -> u64 {
    freertos::MAX_PRIORITIES - 1 - p
}

/// Creates test task `index` at Thread-Metric priority `p` and keeps it in `TASKS`.
pub fn spawn(
    index: usize,
    entry: TaskEntry,
    name: &'static CStr,
    p: u64,
) -> Result<Task, OutOfMemory> {
    let task = freertos::spawn(entry, name, TEST_STACK_WORDS, priority(p))?;
    if let Some(slot) = TASKS.get(index) {
        slot.set(task);
    }
    Ok(task)
}

/// Test task `index`, if it exists.
pub fn task(index: usize) -> Option<Task> {
    TASKS.get(index).and_then(Slot::get)
}

/// Deletes every object of the finished test and zeroes the counters. Called by the
/// controller, which outranks every test task, so none of them runs meanwhile.
pub fn teardown() {
    set_interrupt_role(InterruptRole::Ignore);
    for slot in &TASKS {
        if let Some(task) = slot.take() {
            // SAFETY: the slot held the only handle in use; the controller is not a test task.
            unsafe { freertos::delete(task) };
        }
    }
    if let Some(semaphore) = SEMAPHORE.take() {
        // SAFETY: every task that could block on it was deleted above; the slot held the
        // only handle in use.
        unsafe { semaphore.delete() };
    }
    if let Some(queue) = QUEUE.take() {
        // SAFETY: as for the semaphore.
        unsafe { queue.delete() };
    }
    if let Some(mutex) = MUTEX.take() {
        // SAFETY: as for the semaphore; the tasks that could hold it are deleted too.
        unsafe { mutex.delete() };
    }
    for counter in &COUNTERS {
        counter.store(0, Ordering::Relaxed);
    }
}
