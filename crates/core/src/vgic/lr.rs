//! The list-register value type: encoding and decoding of ICH_LR<n>_EL2 (IHI 0069 chapter 12,
//! "ICH_LR<n>_EL2, Interrupt Controller List Registers") and the ICH_HCR_EL2 maintenance request
//! bits (same chapter; their use is in chapter 6). It owns the bit layout only; which interrupt
//! goes into which list register is decided in `cpuif`, and the registers themselves are written by
//! the hypervisor.

/// Most list registers an implementation can have (ICH_VTR_EL2.ListRegs is 4 bits).
pub const MAX_LIST_REGISTERS: usize = 16;

/// ICH_HCR_EL2.UIE: maintenance interrupt while at most one list register is valid.
pub const ICH_HCR_UIE: u64 = 1 << 1;
/// ICH_HCR_EL2.NPIE: maintenance interrupt while no list register is pending.
pub const ICH_HCR_NPIE: u64 = 1 << 3;

const VINTID_MASK: u64 = 0xffff_ffff;
const PINTID_SHIFT: u32 = 32;
const PINTID_MASK: u64 = 0x1fff;
/// With HW = 0, bit 41 (inside pINTID) requests a maintenance interrupt on EOI.
const EOI_BIT: u64 = 1 << 41;
const PRIORITY_SHIFT: u32 = 48;
const GROUP_BIT: u64 = 1 << 60;
const HW_BIT: u64 = 1 << 61;
const STATE_SHIFT: u32 = 62;

/// ICH_LR<n>_EL2.State.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LrState {
    Invalid,
    Pending,
    Active,
    PendingActive,
}

impl LrState {
    fn from_bits(bits: u64) -> Self {
        match bits & 3 {
            0 => LrState::Invalid,
            1 => LrState::Pending,
            2 => LrState::Active,
            _ => LrState::PendingActive,
        }
    }

    fn bits(self) -> u64 {
        match self {
            LrState::Invalid => 0,
            LrState::Pending => 1,
            LrState::Active => 2,
            LrState::PendingActive => 3,
        }
    }

    /// The state of an interrupt that is `pending` and/or `active`.
    pub fn from_flags(pending: bool, active: bool) -> Self {
        match (pending, active) {
            (false, false) => LrState::Invalid,
            (true, false) => LrState::Pending,
            (false, true) => LrState::Active,
            (true, true) => LrState::PendingActive,
        }
    }

    pub fn is_pending(self) -> bool {
        matches!(self, LrState::Pending | LrState::PendingActive)
    }

    pub fn is_active(self) -> bool {
        matches!(self, LrState::Active | LrState::PendingActive)
    }
}

/// What a list register links the virtual interrupt to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LrLink {
    /// A purely virtual interrupt; `eoi_maintenance` asks for a maintenance interrupt when
    /// the guest deactivates it (so a level line can be sampled again).
    Virtual { eoi_maintenance: bool },
    /// HW = 1: the guest's deactivation also deactivates this physical INTID.
    Hardware { pintid: u32 },
}

/// One decoded ICH_LR<n>_EL2 value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListRegister {
    pub vintid: u32,
    pub state: LrState,
    pub priority: u8,
    pub group1: bool,
    pub link: LrLink,
}

impl ListRegister {
    /// The empty list register (all zero).
    pub const EMPTY: ListRegister = ListRegister {
        vintid: 0,
        state: LrState::Invalid,
        priority: 0,
        group1: false,
        link: LrLink::Virtual {
            eoi_maintenance: false,
        },
    };

    /// Decodes a raw ICH_LR<n>_EL2 value; every value decodes (RES0 bits are dropped).
    pub fn decode(raw: u64) -> Self {
        let link = if raw & HW_BIT != 0 {
            LrLink::Hardware {
                pintid: ((raw >> PINTID_SHIFT) & PINTID_MASK) as u32,
            }
        } else {
            LrLink::Virtual {
                eoi_maintenance: raw & EOI_BIT != 0,
            }
        };
        ListRegister {
            vintid: (raw & VINTID_MASK) as u32,
            state: LrState::from_bits(raw >> STATE_SHIFT),
            priority: (raw >> PRIORITY_SHIFT) as u8,
            group1: raw & GROUP_BIT != 0,
            link,
        }
    }

    /// The raw ICH_LR<n>_EL2 value. A pINTID wider than the 13-bit field is truncated.
    pub fn encode(&self) -> u64 {
        let link = match self.link {
            LrLink::Virtual { eoi_maintenance } => {
                if eoi_maintenance {
                    EOI_BIT
                } else {
                    0
                }
            }
            LrLink::Hardware { pintid } => {
                HW_BIT | ((u64::from(pintid) & PINTID_MASK) << PINTID_SHIFT)
            }
        };
        let group = if self.group1 { GROUP_BIT } else { 0 };
        (self.state.bits() << STATE_SHIFT)
            | group
            | link
            | (u64::from(self.priority) << PRIORITY_SHIFT)
            | u64::from(self.vintid)
    }

    /// Whether the hardware would report this list register free in ICH_ELRSR_EL2:
    /// invalid, and not waiting to signal an EOI maintenance interrupt.
    pub fn is_free(&self) -> bool {
        self.state == LrState::Invalid
            && !matches!(
                self.link,
                LrLink::Virtual {
                    eoi_maintenance: true
                }
            )
    }
}
