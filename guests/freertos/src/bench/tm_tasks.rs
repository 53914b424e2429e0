//! The task bodies and interrupt handlers of the eight Thread-Metric tests, and the
//! `start_*` functions that create each test's tasks and objects (the controller calls
//! them; the tasks run once it sleeps). The two interrupt tests come in two variants, by
//! how they raise their interrupt (`Raise`). Every counter has exactly one writer, a task
//! or the interrupt handler; the controller reads them while no test task runs.

use super::objects::{self, InterruptRole, COUNTERS, QUEUE, SEMAPHORE};
use super::pool::BlockPool;
use crate::freertos::{self, Message, OutOfMemory, Queue, Semaphore, TaskEntry};
use crate::sgi::SgiToSelf;
use crate::vectors;
use core::ffi::c_void;
use core::sync::atomic::{AtomicU64, Ordering};

/// Counter of failed service calls (message, synchronization and memory tests).
pub const ERRORS: usize = objects::MAX_TASKS;
/// Words in the basic-processing array.
const ARRAY_WORDS: usize = 1024;
/// Messages the message-processing queue holds.
const QUEUE_LENGTH: u64 = 10;

static ARRAY: [AtomicU64; ARRAY_WORDS] = [const { AtomicU64::new(0) }; ARRAY_WORDS];
static POOL: BlockPool = BlockPool::new();

/// Adds one to counter `index` (single writer: a plain load and store).
fn bump(index: usize) {
    let counter = &COUNTERS[index];
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// A test task whose set-up failed: it never runs its loop.
fn park() -> ! {
    loop {
        freertos::suspend_self();
    }
}

pub fn start_basic() -> Result<(), OutOfMemory> {
    for word in &ARRAY {
        word.store(0, Ordering::Relaxed);
    }
    objects::spawn(0, basic, c"tm-basic", 10)?;
    Ok(())
}

/// Folds the counter into every word of the array, then counts.
extern "C" fn basic(_: *mut c_void) {
    loop {
        let counter = COUNTERS[0].load(Ordering::Relaxed);
        for word in &ARRAY {
            let value = word.load(Ordering::Relaxed);
            word.store(value.wrapping_add(counter) ^ value, Ordering::Relaxed);
        }
        bump(0);
    }
}

const COOPERATIVE: [TaskEntry; 5] = [
    cooperative::<0>,
    cooperative::<1>,
    cooperative::<2>,
    cooperative::<3>,
    cooperative::<4>,
];

pub fn start_cooperative() -> Result<(), OutOfMemory> {
    for (index, entry) in COOPERATIVE.into_iter().enumerate() {
        objects::spawn(index, entry, c"tm-coop", 3)?;
    }
    Ok(())
}

extern "C" fn cooperative<const I: usize>(_: *mut c_void) {
    loop {
        freertos::yield_now();
        bump(I);
    }
}

const PREEMPTIVE: [TaskEntry; 5] = [
    preemptive::<0>,
    preemptive::<1>,
    preemptive::<2>,
    preemptive::<3>,
    preemptive::<4>,
];

/// Five tasks at priorities 10 (task 0) to 6 (task 4); only task 0 starts ready.
pub fn start_preemptive() -> Result<(), OutOfMemory> {
    for (index, entry) in PREEMPTIVE.into_iter().enumerate() {
        let task = objects::spawn(index, entry, c"tm-preempt", 10 - index as u64)?;
        if index > 0 {
            freertos::suspend(task);
        }
    }
    Ok(())
}

/// Resumes the next higher task (which preempts), counts, suspends itself; the lowest
/// task never suspends (nothing would resume it), the highest resumes nobody.
extern "C" fn preemptive<const I: usize>(_: *mut c_void) {
    loop {
        if let Some(next) = objects::task(I + 1) {
            freertos::resume(next);
        }
        bump(I);
        if I > 0 {
            freertos::suspend_self();
        }
    }
}

/// How an interrupt test raises its interrupt: Thread-Metric's reference ports raise a
/// software interrupt (an SVC taken at EL1); the SGI variants raise a self-SGI through
/// the GIC, which a hypervisor traps and injects.
pub trait Raise {
    fn new() -> Self;
    fn raise(&self);
}

/// The software interrupt (`vectors::raise_software_interrupt`).
pub struct Svc;

impl Raise for Svc {
    fn new() -> Self {
        Svc
    }

    fn raise(&self) {
        vectors::raise_software_interrupt();
    }
}

impl Raise for SgiToSelf {
    fn new() -> Self {
        SgiToSelf::new()
    }

    fn raise(&self) {
        self.send();
    }
}

pub fn start_interrupt<R: Raise>() -> Result<(), OutOfMemory> {
    SEMAPHORE.set(Semaphore::binary()?);
    objects::set_interrupt_role(InterruptRole::GiveSemaphore);
    objects::spawn(0, interrupting::<R>, c"tm-irq", 10)?;
    Ok(())
}

/// Raises the interrupt, takes the semaphore its handler gives, counts.
extern "C" fn interrupting<R: Raise>(_: *mut c_void) {
    let Some(semaphore) = SEMAPHORE.get() else {
        park()
    };
    let interrupt = R::new();
    loop {
        interrupt.raise();
        if semaphore.take() {
            bump(0);
        }
    }
}

/// Interrupt handler of the interrupt-processing test: counts and gives the semaphore.
pub fn on_interrupt() {
    bump(1);
    if let Some(semaphore) = SEMAPHORE.get() {
        semaphore.give_from_isr();
    }
}

pub fn start_interrupt_preemption<R: Raise>() -> Result<(), OutOfMemory> {
    objects::spawn(0, interrupted::<R>, c"tm-irq-low", 10)?;
    let high = objects::spawn(1, preempting, c"tm-irq-high", 9)?;
    freertos::suspend(high);
    objects::set_interrupt_role(InterruptRole::ResumeTask);
    Ok(())
}

/// The low task: raises the interrupt (the high task preempts it), counts.
extern "C" fn interrupted<R: Raise>(_: *mut c_void) {
    let interrupt = R::new();
    loop {
        interrupt.raise();
        bump(0);
    }
}

/// The high task: resumed by the handler, counts and suspends itself.
extern "C" fn preempting(_: *mut c_void) {
    loop {
        bump(1);
        freertos::suspend_self();
    }
}

/// Interrupt handler of the interrupt-preemption test: counts and resumes the high task.
pub fn on_preempting_interrupt() {
    bump(2);
    if let Some(high) = objects::task(1) {
        freertos::resume_from_isr(high);
    }
}

pub fn start_message() -> Result<(), OutOfMemory> {
    QUEUE.set(Queue::new(QUEUE_LENGTH)?);
    objects::spawn(0, messaging, c"tm-message", 10)?;
    Ok(())
}

/// Sends a 4-word message, receives it back, checks and advances its last word.
extern "C" fn messaging(_: *mut c_void) {
    let Some(queue) = QUEUE.get() else { park() };
    let mut message: Message = [0x1111, 0x2222, 0x3333, 0];
    loop {
        let echoed = queue.send(&message).then(|| queue.receive()).flatten();
        if echoed.map(|received| received[3]) != Some(message[3]) {
            bump(ERRORS);
        }
        message[3] = message[3].wrapping_add(1);
        bump(0);
    }
}

pub fn start_synchronization() -> Result<(), OutOfMemory> {
    SEMAPHORE.set(Semaphore::counting(1, 1)?);
    objects::spawn(0, synchronizing, c"tm-sync", 10)?;
    Ok(())
}

/// Takes and gives the semaphore (initial count 1), counts.
extern "C" fn synchronizing(_: *mut c_void) {
    let Some(semaphore) = SEMAPHORE.get() else {
        park()
    };
    loop {
        if !(semaphore.take() && semaphore.give()) {
            bump(ERRORS);
        }
        bump(0);
    }
}

pub fn start_memory() -> Result<(), OutOfMemory> {
    POOL.reset();
    objects::spawn(0, allocating, c"tm-memory", 10)?;
    Ok(())
}

/// Allocates a 128-byte block from the pool and frees it, counts.
extern "C" fn allocating(_: *mut c_void) {
    loop {
        match POOL.allocate() {
            Some(block) => POOL.free(block),
            None => bump(ERRORS),
        }
        bump(0);
    }
}
