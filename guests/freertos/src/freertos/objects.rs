//! Kernel objects for the benchmarks: binary and counting semaphores, queues of 4-word
//! messages, and `Slot`, a static home for a handle that tasks and interrupt handlers
//! share. Part of `freertos`, the only module that calls the kernel.

use super::{BaseType, Mutex, OutOfMemory, RawHandle, Task, Tick, UBaseType, PORT_MAX_DELAY};
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

const PD_TRUE: BaseType = 1;
const QUEUE_TYPE_BASE: u8 = 0;
const QUEUE_TYPE_BINARY_SEMAPHORE: u8 = 3;
const QUEUE_SEND_TO_BACK: BaseType = 0;

// xQueueSemaphoreTake and xQueueGenericSend are declared once, in the parent module.
use super::{xQueueGenericSend, xQueueSemaphoreTake};

extern "C" {
    fn xQueueGenericCreate(length: UBaseType, item_size: UBaseType, kind: u8) -> RawHandle;
    fn xQueueCreateCountingSemaphore(max: UBaseType, initial: UBaseType) -> RawHandle;
    fn xQueueReceive(queue: RawHandle, item: *mut c_void, ticks: Tick) -> BaseType;
    fn xQueueGiveFromISR(queue: RawHandle, woken: *mut BaseType) -> BaseType;
    fn vQueueDelete(queue: RawHandle);
}

/// A message of the message-passing benchmarks: four machine words (`unsigned long[4]`).
pub type Message = [u64; 4];

/// A kernel handle that can live in a `Slot`.
pub trait Handle: Copy {
    fn raw(self) -> RawHandle;
    /// # Safety
    /// `raw` must be a live handle of this kind, from `raw`.
    unsafe fn from_raw(raw: RawHandle) -> Self;
}

impl Handle for Task {
    fn raw(self) -> RawHandle {
        self.0
    }
    unsafe fn from_raw(raw: RawHandle) -> Self {
        Self(raw)
    }
}

impl Handle for Mutex {
    fn raw(self) -> RawHandle {
        self.0
    }
    unsafe fn from_raw(raw: RawHandle) -> Self {
        Self(raw)
    }
}

impl Mutex {
    /// Deletes the mutex.
    ///
    /// # Safety
    /// No task may hold it or be blocked on it, and no copy of the handle may be used
    /// afterwards.
    pub unsafe fn delete(self) {
        vQueueDelete(self.0)
    }
}

/// A binary or counting semaphore (a FreeRTOS queue without items).
#[derive(Clone, Copy)]
pub struct Semaphore(RawHandle);

impl Handle for Semaphore {
    fn raw(self) -> RawHandle {
        self.0
    }
    unsafe fn from_raw(raw: RawHandle) -> Self {
        Self(raw)
    }
}

fn created(handle: RawHandle) -> Result<RawHandle, OutOfMemory> {
    if handle.is_null() {
        Err(OutOfMemory)
    } else {
        Ok(handle)
    }
}

impl Semaphore {
    /// A binary semaphore, created empty (`xSemaphoreCreateBinary`).
    pub fn binary() -> Result<Self, OutOfMemory> {
        // SAFETY: creates a kernel object; no pointers are passed.
        created(unsafe { xQueueGenericCreate(1, 0, QUEUE_TYPE_BINARY_SEMAPHORE) }).map(Self)
    }

    /// A counting semaphore holding `initial` of at most `max` (`xSemaphoreCreateCounting`).
    pub fn counting(max: u64, initial: u64) -> Result<Self, OutOfMemory> {
        // SAFETY: creates a kernel object; no pointers are passed.
        created(unsafe { xQueueCreateCountingSemaphore(max, initial) }).map(Self)
    }

    /// Takes the semaphore, waiting as long as needed (task context); false on a timeout.
    pub fn take(self) -> bool {
        // SAFETY: the handle is a live semaphore.
        unsafe { xQueueSemaphoreTake(self.0, PORT_MAX_DELAY) == PD_TRUE }
    }

    /// Takes the semaphore, waiting at most `ms` milliseconds (task context); false on a
    /// timeout.
    pub fn take_ms(self, ms: u64) -> bool {
        let ticks = (ms * super::TICK_RATE_HZ / 1000).max(1);
        // SAFETY: the handle is a live semaphore.
        unsafe { xQueueSemaphoreTake(self.0, ticks) == PD_TRUE }
    }

    /// Gives the semaphore (task context); false if it was already full.
    pub fn give(self) -> bool {
        // SAFETY: the handle is a live semaphore; a give carries no item.
        unsafe { xQueueGenericSend(self.0, ptr::null(), 0, QUEUE_SEND_TO_BACK) == PD_TRUE }
    }

    /// Gives the semaphore from an interrupt handler, requesting a context switch at the
    /// end of the handler if a higher-priority task was waiting for it.
    pub fn give_from_isr(self) -> bool {
        let mut woken: BaseType = 0;
        // SAFETY: the handle is a live semaphore; `woken` is a valid out-pointer.
        let given = unsafe { xQueueGiveFromISR(self.0, &mut woken) } == PD_TRUE;
        if woken != 0 {
            super::request_switch_from_isr();
        }
        given
    }

    /// Deletes the semaphore.
    ///
    /// # Safety
    /// No task may be blocked on it and no copy of the handle may be used afterwards.
    pub unsafe fn delete(self) {
        vQueueDelete(self.0)
    }
}

/// A queue of `Message`s.
#[derive(Clone, Copy)]
pub struct Queue(RawHandle);

impl Handle for Queue {
    fn raw(self) -> RawHandle {
        self.0
    }
    unsafe fn from_raw(raw: RawHandle) -> Self {
        Self(raw)
    }
}

impl Queue {
    /// A queue with room for `length` messages.
    pub fn new(length: u64) -> Result<Self, OutOfMemory> {
        let size = core::mem::size_of::<Message>() as u64;
        // SAFETY: creates a kernel object; no pointers are passed.
        created(unsafe { xQueueGenericCreate(length, size, QUEUE_TYPE_BASE) }).map(Self)
    }

    /// Sends a copy of `message`, waiting for room as long as needed (task context).
    pub fn send(self, message: &Message) -> bool {
        let item = (message as *const Message).cast();
        // SAFETY: the queue's items are `Message`s, and `item` points at one.
        unsafe { xQueueGenericSend(self.0, item, PORT_MAX_DELAY, QUEUE_SEND_TO_BACK) == PD_TRUE }
    }

    /// Receives the oldest message, waiting as long as needed (task context).
    pub fn receive(self) -> Option<Message> {
        let mut message: Message = [0; 4];
        let item = (&mut message as *mut Message).cast();
        // SAFETY: the queue's items are `Message`s, and `item` has room for one.
        let received = unsafe { xQueueReceive(self.0, item, PORT_MAX_DELAY) } == PD_TRUE;
        received.then_some(message)
    }

    /// Deletes the queue.
    ///
    /// # Safety
    /// No task may be blocked on it and no copy of the handle may be used afterwards.
    pub unsafe fn delete(self) {
        vQueueDelete(self.0)
    }
}

/// A handle shared through a static: set before the tasks and handlers that use it run,
/// taken back before the object is deleted.
pub struct Slot<T> {
    raw: AtomicPtr<c_void>,
    kind: PhantomData<fn() -> T>,
}

impl<T: Handle> Slot<T> {
    pub const fn empty() -> Self {
        Self {
            raw: AtomicPtr::new(ptr::null_mut()),
            kind: PhantomData,
        }
    }

    pub fn set(&self, handle: T) {
        self.raw.store(handle.raw(), Ordering::Release);
    }

    pub fn get(&self) -> Option<T> {
        let raw = self.raw.load(Ordering::Acquire);
        // SAFETY: only `set` stores a non-null pointer, a live handle of kind T; objects
        // are deleted only after `take` emptied their slot.
        (!raw.is_null()).then(|| unsafe { T::from_raw(raw) })
    }

    /// Empties the slot, returning the handle it held.
    pub fn take(&self) -> Option<T> {
        let raw = self.raw.swap(ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: as in `get`.
        (!raw.is_null()).then(|| unsafe { T::from_raw(raw) })
    }
}
