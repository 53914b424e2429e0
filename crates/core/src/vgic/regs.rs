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

    /// Whether the register writes the pending or active state (ISPENDR to ICACTIVER), not
    /// the configuration (IGROUPR, ISENABLER, ICENABLER).
    fn changes_state(self) -> bool {
        !matches!(
            self,
            BitReg::Group | BitReg::SetEnable | BitReg::ClearEnable
        )
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

    /// The INTID of the register's first field.
    pub(crate) fn first(self) -> u32 {
        match self {
            BankReg::Bits(_, first) | BankReg::Priority(first) | BankReg::Config(first) => first,
        }
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

    /// The interrupts the bank has among the `count` fields of a register whose first field
    /// is INTID `first`, each with its field's index.
    fn fields_mut(&mut self, first: u32, count: u32) -> impl Iterator<Item = (u32, &mut IrqState)> {
        let skip = self.first.saturating_sub(first).min(count);
        let start = first.saturating_add(skip).saturating_sub(self.first) as usize;
        (skip..count).zip(self.irqs.get_mut(start..).unwrap_or_default())
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

    /// Applies a write of `value` to `reg` with `size` (already checked) and says what it
    /// did to which interrupts.
    pub(crate) fn write(&mut self, reg: BankReg, size: AccessSize, value: u64) -> Written {
        let mut written = Written {
            first: reg.first(),
            ..Written::default()
        };
        match reg {
            BankReg::Bits(kind, first) => {
                let fields = self.fields_mut(first, 32);
                let value = value as u32;
                // IGROUPR writes every bit as it is; the others write what a 1 bit means and
                // ignore 0 bits. ISPENDR sets the latch for both triggers; ICPENDR clears it,
                // and a level line still asserted keeps the interrupt pending
                // (`IrqState::pending`).
                let (present, changed) = match kind {
                    BitReg::Group => write_flag(fields, value, None, |irq| &mut irq.group1),
                    BitReg::SetEnable => {
                        write_flag(fields, value, Some(true), |irq| &mut irq.enabled)
                    }
                    BitReg::ClearEnable => {
                        write_flag(fields, value, Some(false), |irq| &mut irq.enabled)
                    }
                    BitReg::SetPending => {
                        write_flag(fields, value, Some(true), |irq| &mut irq.pending_latch)
                    }
                    BitReg::ClearPending => {
                        write_flag(fields, value, Some(false), |irq| &mut irq.pending_latch)
                    }
                    BitReg::SetActive => {
                        write_flag(fields, value, Some(true), |irq| &mut irq.active)
                    }
                    BitReg::ClearActive => {
                        write_flag(fields, value, Some(false), |irq| &mut irq.active)
                    }
                };
                if kind.changes_state() {
                    written.state = changed;
                } else {
                    written.config = changed;
                }
                if matches!(kind, BitReg::SetPending | BitReg::ClearPending) {
                    written.pending = present;
                }
            }
            BankReg::Priority(first) => {
                for (i, irq) in self.fields_mut(first, size.bytes() as u32) {
                    let priority = (value >> (8 * i)) as u8;
                    let before = core::mem::replace(&mut irq.priority, priority);
                    written.config |= u32::from(before != priority) << i;
                }
            }
            BankReg::Config(first) => {
                for (i, irq) in self.fields_mut(first, 16) {
                    let trigger = if value & (2 << (2 * i)) != 0 {
                        Trigger::Edge
                    } else {
                        Trigger::Level
                    };
                    let before = core::mem::replace(&mut irq.trigger, trigger);
                    written.state |= u32::from(before != trigger) << i;
                }
            }
        }
        written
    }
}

/// Writes one flag of each interrupt from the bits of `value`: each bit as it is (`one` is
/// None), or `one` where a bit is 1. Returns the interrupts written and those that changed,
/// one bit each.
fn write_flag<'a>(
    fields: impl Iterator<Item = (u32, &'a mut IrqState)>,
    value: u32,
    one: Option<bool>,
    flag: impl Fn(&mut IrqState) -> &mut bool,
) -> (u32, u32) {
    let (mut written, mut changed) = (0u32, 0u32);
    for (i, irq) in fields {
        let bit = value & (1 << i) != 0;
        let new = match one {
            None => bit,
            Some(one) if bit => one,
            Some(_) => continue,
        };
        let field = flag(irq);
        written |= 1 << i;
        changed |= u32::from(*field != new) << i;
        *field = new;
    }
    (written, changed)
}

/// What a bank write did (`Bank::write`), one bit per interrupt of the register: bit i is
/// INTID `first + i`. `Vgic::refresh_written` brings the model up to date from it, for
/// these interrupts only, not every one the register covers (Linux's ICENABLER write of
/// one bit would otherwise refresh 32, about 3,500 instructions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Written {
    /// The INTID of bit 0.
    pub(crate) first: u32,
    /// The interrupts whose latch, active state or trigger the write changed: what their
    /// pending and active sets hold.
    pub(crate) state: u32,
    /// The interrupts whose group, enable or priority the write changed: what their vCPU
    /// may put in its list registers, not its sets.
    pub(crate) config: u32,
    /// The interrupts whose pending state the write set or cleared (an ISPENDR or ICPENDR
    /// bit of 1), changed in the model or not: a list register may hold the state the write
    /// replaces.
    pub(crate) pending: u32,
}
