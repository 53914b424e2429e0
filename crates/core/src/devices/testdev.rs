//! Partita's MMIO test device: a small register bank that probe guests use to check the
//! emulation of every access size, sign extension, partial writes and device-refused accesses.
//!
//! | offset | register | behaviour |
//! | --- | --- | --- |
//! | 0x00 | `ID` | read-only `ID_VALUE`; writes ignored |
//! | 0x08 | `SCRATCH` | read-write, any size, partial writes merge |
//! | 0x10 | `WRITES` | read-only count of accepted writes to `SCRATCH` |
//! | 0x18 | `FAULT` | every access is refused (the guest gets an abort) |
//! | 0x20 | `BOOTS` | read-only: how many times this VM has been started (1 on first boot) |
//! | 0x28 | `RAISE` | write-only (reads as zero): a write of INTID n asks Partita to make physical interrupt n pending, which it does only for an SPI of the VM's destination table (`irqs`) |
//! | other | reserved | reads as zero, writes ignored |
//!
//! Accesses must be naturally aligned; an unaligned one is refused.

use super::{AccessFault, AccessSize, MmioDevice};

pub const ID: u64 = 0x00;
pub const SCRATCH: u64 = 0x08;
pub const WRITES: u64 = 0x10;
pub const FAULT: u64 = 0x18;
pub const BOOTS: u64 = 0x20;
pub const RAISE: u64 = 0x28;
/// The `ID` register's value: every byte differs and the top bit of each is set, so a sign
/// extension mistake at any size shows.
pub const ID_VALUE: u64 = 0x8899_aabb_ccdd_eeff;

pub struct TestDevice {
    scratch: u64,
    writes: u64,
    boots: u64,
    /// The INTID last written to `RAISE`, not yet taken by the hypervisor.
    raise: Option<u32>,
}

impl TestDevice {
    /// A fresh device for a VM started for the `boots`-th time.
    pub fn new(boots: u64) -> Self {
        TestDevice {
            scratch: 0,
            writes: 0,
            boots,
            raise: None,
        }
    }

    /// The interrupt the guest asked to raise through `RAISE` since the last call, if any.
    /// Whether it may be raised is the caller's decision.
    pub fn take_raise(&mut self) -> Option<u32> {
        self.raise.take()
    }
}

/// The `size`-byte slice at byte `shift` of a 64-bit register.
fn extract(reg: u64, shift: u64, size: AccessSize) -> u64 {
    (reg >> (8 * shift)) & size.mask()
}

impl MmioDevice for TestDevice {
    fn read(&mut self, offset: u64, size: AccessSize) -> Result<u64, AccessFault> {
        if !offset.is_multiple_of(size.bytes()) {
            return Err(AccessFault);
        }
        let (reg, shift) = (offset & !7, offset & 7);
        match reg {
            ID => Ok(extract(ID_VALUE, shift, size)),
            SCRATCH => Ok(extract(self.scratch, shift, size)),
            WRITES => Ok(extract(self.writes, shift, size)),
            BOOTS => Ok(extract(self.boots, shift, size)),
            FAULT => Err(AccessFault),
            _ => Ok(0),
        }
    }

    fn write(&mut self, offset: u64, size: AccessSize, value: u64) -> Result<(), AccessFault> {
        if !offset.is_multiple_of(size.bytes()) {
            return Err(AccessFault);
        }
        let (reg, shift) = (offset & !7, offset & 7);
        match reg {
            SCRATCH => {
                let mask = size.mask() << (8 * shift);
                self.scratch = (self.scratch & !mask) | ((value << (8 * shift)) & mask);
                self.writes += 1;
                Ok(())
            }
            RAISE if shift == 0 => {
                self.raise = u32::try_from(value & size.mask()).ok();
                Ok(())
            }
            FAULT => Err(AccessFault),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AccessSize::*;

    #[test]
    fn id_reads_at_every_size_and_offset() {
        let mut d = TestDevice::new(1);
        assert_eq!(d.read(ID, Double), Ok(ID_VALUE));
        assert_eq!(d.read(ID, Word), Ok(0xccdd_eeff));
        assert_eq!(d.read(ID + 4, Word), Ok(0x8899_aabb));
        assert_eq!(d.read(ID + 6, Half), Ok(0x8899));
        assert_eq!(d.read(ID + 7, Byte), Ok(0x88));
        assert_eq!(d.write(ID, Double, 0), Ok(()));
        assert_eq!(d.read(ID, Double), Ok(ID_VALUE));
    }

    #[test]
    fn scratch_merges_partial_writes_and_counts_them() {
        let mut d = TestDevice::new(1);
        d.write(SCRATCH, Double, 0x1111_2222_3333_4444).unwrap();
        d.write(SCRATCH + 2, Half, 0xabcd_ffff).unwrap();
        d.write(SCRATCH + 7, Byte, 0x99).unwrap();
        assert_eq!(d.read(SCRATCH, Double), Ok(0x9911_2222_ffff_4444));
        assert_eq!(d.read(WRITES, Double), Ok(3));
    }

    #[test]
    fn raise_records_the_latest_intid_once_and_reads_as_zero() {
        let mut d = TestDevice::new(1);
        assert_eq!(d.take_raise(), None);
        d.write(RAISE, Word, 40).unwrap();
        d.write(RAISE, Double, 41).unwrap();
        assert_eq!(d.read(RAISE, Double), Ok(0));
        assert_eq!(d.take_raise(), Some(41));
        assert_eq!(d.take_raise(), None);
        d.write(RAISE + 4, Word, 42).unwrap();
        assert_eq!(d.take_raise(), None);
        d.write(RAISE, Double, u64::MAX).unwrap();
        assert_eq!(d.take_raise(), None);
    }

    #[test]
    fn boots_is_read_only() {
        let mut d = TestDevice::new(2);
        d.write(BOOTS, Double, 9).unwrap();
        assert_eq!(d.read(BOOTS, Double), Ok(2));
    }

    #[test]
    fn unaligned_and_fault_register_accesses_are_refused() {
        let mut d = TestDevice::new(1);
        assert_eq!(d.read(SCRATCH + 1, Half), Err(AccessFault));
        assert_eq!(d.write(SCRATCH + 4, Double, 1), Err(AccessFault));
        assert_eq!(d.read(FAULT, Word), Err(AccessFault));
        assert_eq!(d.write(FAULT, Byte, 1), Err(AccessFault));
        assert_eq!(d.read(0x800, Word), Ok(0));
        assert_eq!(d.write(0x800, Word, 5), Ok(()));
    }
}
