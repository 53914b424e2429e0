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
pub enum AccessSize {
    Byte,
    Half,
    Word,
    Double,
}

impl AccessSize {
    pub fn bytes(self) -> u64 {
        match self {
            AccessSize::Byte => 1,
            AccessSize::Half => 2,
            AccessSize::Word => 4,
            AccessSize::Double => 8,
        }
    }

    /// Mask of the value bits an access of this size carries.
    pub fn mask(self) -> u64 {
        match self {
            AccessSize::Double => u64::MAX,
            s => (1u64 << (8 * s.bytes())) - 1,
        }
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
