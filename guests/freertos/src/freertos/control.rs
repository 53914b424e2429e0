//! Task control for the benchmarks: yielding, suspending, resuming and deleting tasks,
//! direct-to-task notifications between tasks, critical sections and context-switch
//! requests from interrupt handlers. Part of `freertos`, the only module that calls the
//! kernel; it never keeps state of its own.

use super::{BaseType, RawHandle, Task, UBaseType, DEFAULT_NOTIFY_INDEX};
use core::ptr;

/// eNotifyAction's eIncrement (task.h): `xTaskNotifyGive`.
const NOTIFY_INCREMENT: u32 = 2;

extern "C" {
    fn vTaskSuspend(task: RawHandle);
    fn vTaskResume(task: RawHandle);
    fn xTaskResumeFromISR(task: RawHandle) -> BaseType;
    fn vTaskDelete(task: RawHandle);
    fn xTaskGetCurrentTaskHandle() -> RawHandle;
    fn xTaskGenericNotify(
        task: RawHandle,
        index: UBaseType,
        value: u32,
        action: u32,
        previous: *mut u32,
    ) -> BaseType;
    fn vPortEnterCritical();
    fn vPortExitCritical();
}

/// The calling task.
pub fn current_task() -> Task {
    // SAFETY: reads the kernel's current-task pointer; called from task context.
    Task(unsafe { xTaskGetCurrentTaskHandle() })
}

/// Gives up the CPU to the next ready task of the same priority (`taskYIELD`).
pub fn yield_now() {
    // SAFETY: `svc #0` is the port's `portYIELD`: FreeRTOS_SWI_Handler saves this task's
    // context and switches; called from task context only.
    unsafe { core::arch::asm!("svc #0", options(nostack)) };
}

/// Suspends the calling task until another task (or an interrupt) resumes it.
pub fn suspend_self() {
    // SAFETY: a null handle means the calling task; called from task context only.
    unsafe { vTaskSuspend(ptr::null_mut()) }
}

/// Suspends `task` (not the caller).
pub fn suspend(task: Task) {
    // SAFETY: `task` is a live task handle (tasks are deleted only through `delete`).
    unsafe { vTaskSuspend(task.0) }
}

/// Makes a suspended `task` ready again; it preempts the caller if it outranks it.
pub fn resume(task: Task) {
    // SAFETY: `task` is a live task handle; called from task context.
    unsafe { vTaskResume(task.0) }
}

/// Resumes `task` from an interrupt handler and requests a context switch at the end of
/// the handler when it outranks the interrupted task.
pub fn resume_from_isr(task: Task) {
    // SAFETY: `task` is a live task handle; called from an interrupt allowed to use the
    // FromISR API.
    if unsafe { xTaskResumeFromISR(task.0) } != 0 {
        request_switch_from_isr();
    }
}

/// Deletes `task`, freeing its stack and control block.
///
/// # Safety
/// No copy of the handle may be used afterwards, and `task` must not be the caller.
pub unsafe fn delete(task: Task) {
    vTaskDelete(task.0)
}

/// Gives `task`'s notification from task context (`xTaskNotifyGive`); the task preempts
/// the caller at once if it outranks it.
pub fn notify(task: Task) {
    // SAFETY: `task` is a live task handle; eIncrement takes no value and no out-pointer.
    unsafe {
        xTaskGenericNotify(
            task.0,
            DEFAULT_NOTIFY_INDEX,
            0,
            NOTIFY_INCREMENT,
            ptr::null_mut(),
        )
    };
}

/// Runs `body` with every interrupt that may use the kernel masked (`taskENTER_CRITICAL`).
pub fn critical<R>(body: impl FnOnce() -> R) -> R {
    // SAFETY: the port's critical section raises ICC_PMR_EL1 and counts nesting; it is
    // left below on every path (`body` cannot unwind: panics halt the guest).
    unsafe { vPortEnterCritical() };
    let result = body();
    // SAFETY: pairs with the enter above.
    unsafe { vPortExitCritical() };
    result
}

/// Asks the port to switch tasks when the current interrupt handler returns.
pub fn request_switch_from_isr() {
    // SAFETY: the port reads this flag at the end of the same interrupt handler;
    // interrupts that could race on it are masked while a handler runs.
    unsafe { ptr::addr_of_mut!(super::ullPortYieldRequired).write_volatile(1) };
}
