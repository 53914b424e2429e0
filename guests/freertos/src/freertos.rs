//! The part of the FreeRTOS C API the guest uses, as `extern "C"` declarations of the
//! kernel's real functions (the C API's macros such as `xSemaphoreTake` expand to these),
//! wrapped in small safe functions.
//!
//! It owns the type mapping of portmacro.h (ARM_AARCH64_SRE: BaseType_t = long,
//! UBaseType_t = TickType_t = uint64_t, stack depth in 8-byte words) and must stay the
//! only place that calls into the kernel directly.

use core::ffi::{c_char, c_void, CStr};
use core::ptr;

mod control;
mod objects;

pub use control::*;
pub use objects::*;

type BaseType = i64;
type UBaseType = u64;
type Tick = u64;
type RawHandle = *mut c_void;

/// A task's entry point.
pub type TaskEntry = extern "C" fn(*mut c_void);

const PD_PASS: BaseType = 1;
const PD_TRUE: BaseType = 1;
const PORT_MAX_DELAY: Tick = u64::MAX;
const QUEUE_TYPE_MUTEX: u8 = 1;
const QUEUE_SEND_TO_BACK: BaseType = 0;
const DEFAULT_NOTIFY_INDEX: UBaseType = 0;
/// taskSCHEDULER_NOT_STARTED.
const SCHEDULER_NOT_STARTED: BaseType = 1;
/// configTICK_RATE_HZ in FreeRTOSConfig.h.
pub const TICK_RATE_HZ: u64 = 1000;
/// configMAX_PRIORITIES in FreeRTOSConfig.h.
pub const MAX_PRIORITIES: u64 = 32;

extern "C" {
    fn xTaskCreate(
        entry: TaskEntry,
        name: *const c_char,
        stack_words: usize,
        parameters: *mut c_void,
        priority: UBaseType,
        created: *mut RawHandle,
    ) -> BaseType;
    fn vTaskStartScheduler();
    fn vTaskDelay(ticks: Tick);
    fn xTaskGetSchedulerState() -> BaseType;
    fn ulTaskGenericNotifyTake(index: UBaseType, clear_on_exit: BaseType, ticks: Tick) -> u32;
    fn vTaskGenericNotifyGiveFromISR(task: RawHandle, index: UBaseType, woken: *mut BaseType);
    fn xQueueCreateMutex(queue_type: u8) -> RawHandle;
    fn xQueueSemaphoreTake(queue: RawHandle, ticks: Tick) -> BaseType;
    fn xQueueGenericSend(
        queue: RawHandle,
        item: *const c_void,
        ticks: Tick,
        position: BaseType,
    ) -> BaseType;
    /// The port's tick handler (port.c).
    fn FreeRTOS_Tick_Handler();
    /// Set to request a context switch when the interrupt handler returns (port.c).
    static mut ullPortYieldRequired: u64;
}

/// A created task.
#[derive(Clone, Copy)]
pub struct Task(RawHandle);

// SAFETY: a task handle is an opaque kernel pointer, usable from any task or interrupt.
unsafe impl Send for Task {}

impl Task {
    /// The kernel handle, to keep the task in a static.
    pub fn into_raw(self) -> *mut c_void {
        self.0
    }

    /// Rebuilds a task from `into_raw`'s handle.
    ///
    /// # Safety
    /// `raw` must come from `Task::into_raw` (tasks are never deleted in this guest).
    pub unsafe fn from_raw(raw: *mut c_void) -> Self {
        Self(raw)
    }
}

/// The kernel could not allocate a task or mutex (heap exhausted).
#[derive(Clone, Copy, Debug)]
pub struct OutOfMemory;

/// Creates a task with a stack of `stack_words` 8-byte words.
pub fn spawn(
    entry: TaskEntry,
    name: &'static CStr,
    stack_words: usize,
    priority: u64,
) -> Result<Task, OutOfMemory> {
    spawn_with(entry, name, stack_words, priority, ptr::null_mut())
}

/// Creates a task like `spawn` whose entry receives `parameter` (a value, never a pointer
/// the task would dereference).
pub fn spawn_with(
    entry: TaskEntry,
    name: &'static CStr,
    stack_words: usize,
    priority: u64,
    parameter: *mut c_void,
) -> Result<Task, OutOfMemory> {
    let mut handle = ptr::null_mut();
    // SAFETY: `name` is a static NUL-terminated string, `handle` a valid out-pointer; the
    // entry never returns (every task of this guest loops forever).
    let created = unsafe {
        xTaskCreate(
            entry,
            name.as_ptr(),
            stack_words,
            parameter,
            priority,
            &mut handle,
        )
    };
    if created == PD_PASS {
        Ok(Task(handle))
    } else {
        Err(OutOfMemory)
    }
}

/// Hands the CPU to the kernel; returns only if the idle task could not be created.
pub fn start_scheduler() {
    // SAFETY: called once, from start-up code at EL1 with the GIC and vectors ready.
    unsafe { vTaskStartScheduler() }
}

/// Whether tasks are running (the kernel's locks may be used).
pub fn scheduler_started() -> bool {
    // SAFETY: reads kernel state only.
    unsafe { xTaskGetSchedulerState() != SCHEDULER_NOT_STARTED }
}

/// Blocks the calling task for `ms` milliseconds.
pub fn delay_ms(ms: u64) {
    // SAFETY: called from task context only.
    unsafe { vTaskDelay(ms * TICK_RATE_HZ / 1000) }
}

/// Blocks the calling task for good (a task must never return).
pub fn delay_forever() -> ! {
    loop {
        delay_ms(1000);
    }
}

/// Blocks until the task's notification is given; returns how many gives it consumed.
pub fn wait_notification() -> u32 {
    // SAFETY: called from task context only.
    unsafe { ulTaskGenericNotifyTake(DEFAULT_NOTIFY_INDEX, PD_TRUE, PORT_MAX_DELAY) }
}

/// Runs the port's tick handler: advances the kernel's tick count and unblocks tasks.
/// Call only from the tick interrupt, after the timer's interrupt line has been cleared.
pub fn tick_from_isr() {
    // SAFETY: called from the IRQ handler of the tick (PSTATE.I set, lowest priority),
    // which is what the port's handler requires.
    unsafe { FreeRTOS_Tick_Handler() }
}

/// Gives `task`'s notification from an interrupt handler; requests a context switch at
/// the end of the handler when the task outranks the interrupted one.
pub fn notify_from_isr(task: Task) {
    let mut woken: BaseType = 0;
    // SAFETY: `task` came from `spawn` and tasks are never deleted in this guest; called
    // from an interrupt at a priority allowed to use the FromISR API.
    unsafe { vTaskGenericNotifyGiveFromISR(task.0, DEFAULT_NOTIFY_INDEX, &mut woken) };
    if woken != 0 {
        request_switch_from_isr();
    }
}

/// A FreeRTOS mutex (with priority inheritance).
#[derive(Clone, Copy)]
pub struct Mutex(RawHandle);

// SAFETY: a mutex handle is an opaque kernel pointer, shared by tasks by design.
unsafe impl Send for Mutex {}

impl Mutex {
    pub fn new() -> Result<Self, OutOfMemory> {
        // SAFETY: creates a kernel object; no pointers are passed.
        let handle = unsafe { xQueueCreateMutex(QUEUE_TYPE_MUTEX) };
        if handle.is_null() {
            Err(OutOfMemory)
        } else {
            Ok(Self(handle))
        }
    }

    /// The kernel handle, to keep the mutex in a static.
    pub fn into_raw(self) -> *mut c_void {
        self.0
    }

    /// Rebuilds a mutex from `into_raw`'s handle.
    ///
    /// # Safety
    /// `raw` must come from `Mutex::into_raw` (mutexes are never deleted).
    pub unsafe fn from_raw(raw: *mut c_void) -> Self {
        Self(raw)
    }

    /// Takes the mutex, waiting as long as needed (task context only).
    pub fn lock(&self) {
        // SAFETY: the handle is a live mutex (never deleted).
        unsafe { xQueueSemaphoreTake(self.0, PORT_MAX_DELAY) };
    }

    /// Gives the mutex back (by the task that took it).
    pub fn unlock(&self) {
        // SAFETY: the handle is a live mutex; a mutex give carries no item.
        unsafe { xQueueGenericSend(self.0, ptr::null(), 0, QUEUE_SEND_TO_BACK) };
    }
}
