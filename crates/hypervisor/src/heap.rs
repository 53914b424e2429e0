//! Partita's heap: a buddy allocator over the `.heap` area the linker script reserves.
//!
//! VM structures, stage-2 tables and generated device trees come from here. Allocation failure
//! is a Partita sizing bug and panics; it must never be reachable from a guest action. The
//! bytes in use are reported at every VM boot, so a test can show restarts leak nothing.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;

use buddy_system_allocator::Heap;

use crate::lock::Mutex;

/// The buddy heap behind Partita's lock (a waiter yields: `lock`), not the crate's own
/// `LockedHeap`, whose waiter spins and could keep QEMU's turn from the CPU holding it.
struct Locked(Mutex<Heap<32>>);

// SAFETY: every call goes to the buddy allocator under the lock, which hands out disjoint
// blocks of the heap area and takes back only what it handed out.
unsafe impl GlobalAlloc for Locked {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.0
            .lock()
            .alloc(layout)
            .map_or(core::ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(ptr) = NonNull::new(ptr) {
            self.0.lock().dealloc(ptr, layout);
        }
    }
}

#[global_allocator]
static HEAP: Locked = Locked(Mutex::new(Heap::empty()));

extern "C" {
    /// The addresses of `__heap_start` and `__heap_end`, as words (`linker.ld`: the heap may
    /// lie beyond the tiny code model's reach).
    static __heap_start_address: usize;
    static __heap_end_address: usize;
}

/// Hands the linker-reserved heap area to the allocator (boot CPU, once).
pub fn init() {
    // SAFETY: the linker script writes these words into .rodata, which nothing writes.
    let (start, end) = unsafe { (__heap_start_address, __heap_end_address) };
    // SAFETY: [start, end) is the `.heap` section: identity-mapped RAM that nothing else uses,
    // handed over exactly once.
    unsafe { HEAP.0.lock().init(start, end - start) };
}

/// Bytes of heap allocated right now, as the allocator rounds them (power-of-two blocks).
pub fn in_use() -> usize {
    HEAP.0.lock().stats_alloc_actual()
}
