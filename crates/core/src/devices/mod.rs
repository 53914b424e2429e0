//! Emulated device models.
//!
//! A model sees decoded accesses (offset in its window, size, value) and never raw guest
//! memory or registers. It must accept any access a guest can make: what a real device would
//! ignore is ignored, and what it would reject returns `Err(AccessFault)` so the hypervisor
//! injects an abort. A model never panics on guest input.

pub mod console_input;
pub mod pl011;
pub mod testdev;

/// Width of one MMIO access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum AccessSize {
    /// The discriminants are log2 of the width in bytes (the syndrome's SAS field).
    Byte = 0,
    Half = 1,
    Word = 2,
    Double = 3,
}

impl AccessSize {
    #[inline]
    pub fn bytes(self) -> u64 {
        1 << self as u32
    }

    /// Mask of the value bits an access of this size carries.
    #[inline]
    pub fn mask(self) -> u64 {
        u64::MAX >> (64 - 8 * self.bytes())
    }
}

/// The device refuses the access: the guest gets a synchronous external abort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessFault;

/// A memory-mapped device model.
pub trait MmioDevice {
    /// Reads `size` bytes at `offset`; the result is zero-extended to 64 bits.
    fn read(&mut self, offset: u64, size: AccessSize) -> Result<u64, AccessFault>;
    /// Writes the low `size` bytes of `value` at `offset`.
    fn write(&mut self, offset: u64, size: AccessSize, value: u64) -> Result<(), AccessFault>;
}

#[cfg(test)]
mod tests {
    use super::AccessSize::*;

    #[test]
    fn sizes_give_their_width_and_mask() {
        let sizes = [(Byte, 1, 0xff), (Half, 2, 0xffff), (Word, 4, 0xffff_ffff)];
        for (size, bytes, mask) in sizes {
            assert_eq!((size.bytes(), size.mask()), (bytes, mask), "{size:?}");
        }
        assert_eq!((Double.bytes(), Double.mask()), (8, u64::MAX));
    }
}
