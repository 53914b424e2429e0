//! A channel's memory in ordinary memory: 32-bit words behind cells, little endian, as both
//! guests see the window. For the host tools, the tests and the fuzz targets, which have no
//! mapped window; the guests and Partita supply their own `SharedMemory`.
//!
//! Accesses must be aligned to their size, as `ring` promises: a misaligned one is a bug of
//! the ring code and panics.

use alloc::vec::Vec;
use core::cell::Cell;

use super::ring::SharedMemory;

pub struct WordMemory(Vec<Cell<u32>>);

impl WordMemory {
    /// `bytes` bytes of zeros (rounded down to whole words).
    pub fn new(bytes: usize) -> Self {
        WordMemory((0..bytes / 4).map(|_| Cell::new(0)).collect())
    }

    /// A copy of a channel image (whole words; a trailing partial word is dropped).
    pub fn from_bytes(bytes: &[u8]) -> Self {
        WordMemory(
            bytes
                .chunks_exact(4)
                .map(|w| Cell::new(u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
                .collect(),
        )
    }

    /// The image as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|w| w.get().to_le_bytes()).collect()
    }
}

impl SharedMemory for WordMemory {
    fn size(&self) -> usize {
        self.0.len() * 4
    }
    fn load_u32(&self, offset: usize) -> u32 {
        assert_eq!(offset % 4, 0, "misaligned 32-bit load at {offset:#x}");
        self.0[offset / 4].get()
    }
    fn store_u32(&self, offset: usize, value: u32) {
        assert_eq!(offset % 4, 0, "misaligned 32-bit store at {offset:#x}");
        self.0[offset / 4].set(value)
    }
    fn load_u64(&self, offset: usize) -> u64 {
        assert_eq!(offset % 8, 0, "misaligned 64-bit load at {offset:#x}");
        u64::from(self.load_u32(offset)) | (u64::from(self.load_u32(offset + 4)) << 32)
    }
    fn store_u64(&self, offset: usize, value: u64) {
        assert_eq!(offset % 8, 0, "misaligned 64-bit store at {offset:#x}");
        self.store_u32(offset, value as u32);
        self.store_u32(offset + 4, (value >> 32) as u32);
    }
    fn fence(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_round_trip_little_endian() {
        let mem = WordMemory::from_bytes(&[1, 0, 0, 0, 2, 0, 0, 0, 9]);
        assert_eq!(mem.size(), 8);
        assert_eq!(mem.load_u64(0), 0x2_0000_0001);
        mem.store_u32(4, 0xaabb_ccdd);
        assert_eq!(mem.to_bytes(), [1, 0, 0, 0, 0xdd, 0xcc, 0xbb, 0xaa]);
        assert_eq!(WordMemory::new(10).size(), 8);
    }
}
