//! A fixed pool of 128-byte memory blocks with an intrusive free list (FreeRTOS has no
//! block pool; Thread-Metric's memory-allocation test needs one). Allocation and release
//! run in a kernel critical section, like an RTOS block-pool service; the pool never
//! grows and never touches the FreeRTOS heap.

use crate::freertos;
use core::cell::UnsafeCell;

/// Size of one block in bytes.
pub const BLOCK_SIZE: usize = 128;
/// Blocks in the pool.
const BLOCKS: usize = 16;
/// End of the free list.
const NONE: usize = usize::MAX;

/// One block; a free block's first word holds the index of the next free block.
#[repr(C, align(16))]
struct Block([usize; BLOCK_SIZE / 8]);

struct State {
    blocks: [Block; BLOCKS],
    free: usize,
}

/// The pool.
pub struct BlockPool(UnsafeCell<State>);

// SAFETY: the state is only touched inside kernel critical sections on this uniprocessor
// guest, which exclude every task and every interrupt that may use the pool.
unsafe impl Sync for BlockPool {}

/// An allocated block, identified by its index; give it back with `BlockPool::free`.
pub struct BlockRef(usize);

impl BlockPool {
    pub const fn new() -> Self {
        Self(UnsafeCell::new(State {
            blocks: [const { Block([0; BLOCK_SIZE / 8]) }; BLOCKS],
            free: NONE,
        }))
    }

    /// Links every block into the free list (blocks still out are forgotten).
    pub fn reset(&self) {
        self.with_state(|state| {
            for index in 0..BLOCKS {
                state.blocks[index].0[0] = if index + 1 < BLOCKS { index + 1 } else { NONE };
            }
            state.free = 0;
        });
    }

    /// Takes a block off the free list; None when the pool is exhausted.
    pub fn allocate(&self) -> Option<BlockRef> {
        self.with_state(|state| {
            let index = state.free;
            let block = state.blocks.get(index)?;
            state.free = block.0[0];
            Some(BlockRef(index))
        })
    }

    /// Puts `block` back at the head of the free list.
    pub fn free(&self, block: BlockRef) {
        self.with_state(|state| {
            if let Some(entry) = state.blocks.get_mut(block.0) {
                entry.0[0] = state.free;
                state.free = block.0;
            }
        });
    }

    fn with_state<R>(&self, body: impl FnOnce(&mut State) -> R) -> R {
        freertos::critical(|| {
            // SAFETY: inside the critical section nothing else runs on this CPU, and
            // `body` cannot reach the pool again, so the reference is exclusive.
            body(unsafe { &mut *self.0.get() })
        })
    }
}
