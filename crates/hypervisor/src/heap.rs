//! Partita's heap: a buddy allocator over the `.heap` area the linker script reserves.
//!
//! VM structures, stage-2 tables and generated device trees come from here. Allocation failure
//! is a Partita sizing bug and panics; it must never be reachable from a guest action. The
//! bytes in use are reported at every VM boot, so a test can show restarts leak nothing.

use buddy_system_allocator::LockedHeap;

#[global_allocator]
static HEAP: LockedHeap<32> = LockedHeap::empty();

extern "C" {
    static mut __heap_start: u8;
    static mut __heap_end: u8;
}

/// Hands the linker-reserved heap area to the allocator (boot CPU, once).
pub fn init() {
    let start = core::ptr::addr_of_mut!(__heap_start) as usize;
    let end = core::ptr::addr_of_mut!(__heap_end) as usize;
    // SAFETY: [start, end) is the `.heap` section: identity-mapped RAM that nothing else uses,
    // handed over exactly once.
    unsafe { HEAP.lock().init(start, end - start) };
}

/// Bytes of heap allocated right now, as the allocator rounds them (power-of-two blocks).
pub fn in_use() -> usize {
    HEAP.lock().stats_alloc_actual()
}
