//! Register layouts shared by the distributor (GICD_*) and the redistributors' SGI_base frame
//! (GICR_*): one bit per INTID (IGROUPR, ISENABLER/ICENABLER, ISPENDR/ICPENDR,
//! ISACTIVER/ICACTIVER), one byte per INTID (IPRIORITYR) and two bits per INTID (ICFGR), and the
//! access-size rules of IHI 0069 chapter 12 ("GIC memory-mapped register access": 32-bit accesses
//! everywhere, byte accesses to IPRIORITYR, ITARGETSR, CPENDSGIR and SPENDSGIR, 64-bit registers
//! also as two 32-bit halves). It applies a decoded access to a bank of interrupts; it never
//! decides which frame or which interrupts a guest may reach.

use super::state::{IrqState, Trigger};
use crate::devices::{AccessFault, AccessSize};

/// Which access sizes a register accepts (always naturally aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Width {
    Word,
    ByteOrWord,
    /// A 64-bit register: one 64-bit access or a 32-bit access to either half.
    Double,
}

/// Refuses a misaligned access, or one of a size the register (`None`: a reserved offset,
/// which takes any size) does not accept.
pub(crate) fn check(
    offset: u64,
    size: AccessSize,
    width: Option<Width>,
) -> Result<(), AccessFault> {
    let allowed = match width {
        None => true,
        Some(Width::Word) => size == AccessSize::Word,
        Some(Width::ByteOrWord) => matches!(size, AccessSize::Byte | AccessSize::Word),
        Some(Width::Double) => matches!(size, AccessSize::Word | AccessSize::Double),
    };
    if allowed && offset.is_multiple_of(size.bytes()) {
        Ok(())
    } else {
        Err(AccessFault)
    }
}

/// The part of a 64-bit register an access at `offset` of `size` reads.
pub(crate) fn read_part(reg: u64, offset: u64, size: AccessSize) -> u64 {
    (reg >> (8 * (offset & 7))) & size.mask()
}

/// A 64-bit register after an access at `offset` of `size` wrote `value`.
pub(crate) fn write_part(reg: u64, offset: u64, size: AccessSize, value: u64) -> u64 {
    let shift = 8 * (offset & 7);
    let mask = size.mask() << shift;
    (reg & !mask) | ((value << shift) & mask)
}

/// The one-bit-per-INTID registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BitReg {
    Group,
    SetEnable,
    ClearEnable,
    SetPending,
    ClearPending,
    SetActive,
    ClearActive,
}

impl BitReg {
    /// The register at `index` (of 0x80 bytes each) from IGROUPR onwards: 0x080 IGROUPR,
    /// 0x100 ISENABLER, 0x180 ICENABLER, ... 0x380 ICACTIVER.
    pub(crate) fn from_block(index: u64) -> Option<Self> {
        Some(match index {
            1 => BitReg::Group,
            2 => BitReg::SetEnable,
            3 => BitReg::ClearEnable,
            4 => BitReg::SetPending,
            5 => BitReg::ClearPending,
            6 => BitReg::SetActive,
            7 => BitReg::ClearActive,
            _ => return None,
        })
    }

    fn get(self, irq: &IrqState) -> bool {
        match self {
            BitReg::Group => irq.group1,
            BitReg::SetEnable | BitReg::ClearEnable => irq.enabled,
            BitReg::SetPending | BitReg::ClearPending => irq.pending(),
            BitReg::SetActive | BitReg::ClearActive => irq.active,
        }
    }

    fn apply(self, irq: &mut IrqState, bit: bool) {
        match (self, bit) {
            (BitReg::Group, group1) => irq.group1 = group1,
            (_, false) => {}
            (BitReg::SetEnable, true) => irq.enabled = true,
            (BitReg::ClearEnable, true) => irq.enabled = false,
            (BitReg::SetPending, true) => irq.set_pending(),
            (BitReg::ClearPending, true) => irq.clear_pending(),
            (BitReg::SetActive, true) => irq.active = true,
            (BitReg::ClearActive, true) => irq.active = false,
        }
    }
}

/// A register of a bank, with the INTID of its first field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BankReg {
    Bits(BitReg, u32),
    Priority(u32),
    Config(u32),
}

impl BankReg {
    pub(crate) fn width(self) -> Width {
        match self {
            BankReg::Priority(_) => Width::ByteOrWord,
            BankReg::Bits(..) | BankReg::Config(_) => Width::Word,
        }
    }

    /// The INTIDs an access of `size` (already checked) to this register covers.
    pub(crate) fn intids(self, size: AccessSize) -> core::ops::Range<u32> {
        let (first, count) = match self {
            BankReg::Bits(_, first) => (first, 32),
            BankReg::Priority(first) => (first, size.bytes() as u32),
            BankReg::Config(first) => (first, 16),
        };
        first..first.saturating_add(count)
    }
}

/// Consecutive interrupts starting at INTID `first`; INTIDs outside are RAZ/WI.
pub(crate) struct Bank<'a> {
    pub(crate) irqs: &'a mut [IrqState],
    pub(crate) first: u32,
}

impl Bank<'_> {
    fn get(&self, intid: u32) -> Option<&IrqState> {
        self.irqs.get(intid.checked_sub(self.first)? as usize)
    }

    fn get_mut(&mut self, intid: u32) -> Option<&mut IrqState> {
        self.irqs.get_mut(intid.checked_sub(self.first)? as usize)
    }

    /// The value of `reg` read with `size` (already checked).
    pub(crate) fn read(&self, reg: BankReg, size: AccessSize) -> u64 {
        let mut value = 0u64;
        match reg {
            BankReg::Bits(kind, first) => {
                for i in 0..32 {
                    if self.get(first + i).is_some_and(|irq| kind.get(irq)) {
                        value |= 1 << i;
                    }
                }
            }
            BankReg::Priority(first) => {
                for i in 0..size.bytes() as u32 {
                    let priority = self.get(first + i).map_or(0, |irq| irq.priority);
                    value |= u64::from(priority) << (8 * i);
                }
            }
            BankReg::Config(first) => {
                for i in 0..16 {
                    if self
                        .get(first + i)
                        .is_some_and(|irq| irq.trigger == Trigger::Edge)
                    {
                        value |= 2 << (2 * i);
                    }
                }
            }
        }
        value
    }

    /// Applies a write of `value` to `reg` with `size` (already checked).
    pub(crate) fn write(&mut self, reg: BankReg, size: AccessSize, value: u64) {
        match reg {
            BankReg::Bits(kind, first) => {
                for i in 0..32 {
                    if let Some(irq) = self.get_mut(first + i) {
                        kind.apply(irq, value & (1 << i) != 0);
                    }
                }
            }
            BankReg::Priority(first) => {
                for i in 0..size.bytes() as u32 {
                    if let Some(irq) = self.get_mut(first + i) {
                        irq.priority = (value >> (8 * i)) as u8;
                    }
                }
            }
            BankReg::Config(first) => {
                for i in 0..16 {
                    if let Some(irq) = self.get_mut(first + i) {
                        irq.trigger = if value & (2 << (2 * i)) != 0 {
                            Trigger::Edge
                        } else {
                            Trigger::Level
                        };
                    }
                }
            }
        }
    }
}
