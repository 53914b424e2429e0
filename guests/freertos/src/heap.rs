//! Rust's global allocator on FreeRTOS's heap (heap_4's `pvPortMalloc`/`vPortFree`).
//!
//! The guest links `partita-core` for the IVC ring format, and that crate is built with
//! `alloc`; the guest's own code allocates nothing through it. heap_4 aligns every block
//! to portBYTE_ALIGNMENT (16 bytes on this port): a request for more alignment fails
//! (returns null) instead of getting a misaligned block.

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;

/// portBYTE_ALIGNMENT of the ARM_AARCH64_SRE and ARM_AARCH64 ports.
const HEAP_ALIGNMENT: usize = 16;

extern "C" {
    fn pvPortMalloc(size: usize) -> *mut c_void;
    fn vPortFree(block: *mut c_void);
}

struct FreeRtosHeap;

// SAFETY: heap_4 is thread-safe (it suspends the scheduler around its lists), returns
// blocks of at least the requested size aligned to HEAP_ALIGNMENT, and larger alignments
// are refused with null, as `GlobalAlloc` allows.
unsafe impl GlobalAlloc for FreeRtosHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() > HEAP_ALIGNMENT {
            return core::ptr::null_mut();
        }
        // SAFETY: plain C allocation call.
        unsafe { pvPortMalloc(layout.size()) }.cast()
    }

    unsafe fn dealloc(&self, block: *mut u8, _: Layout) {
        // SAFETY: `block` came from `alloc` above, i.e. from pvPortMalloc.
        unsafe { vPortFree(block.cast()) }
    }
}

#[global_allocator]
static HEAP: FreeRtosHeap = FreeRtosHeap;
