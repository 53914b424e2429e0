//! The GICv2 list-register layout (GICH_LRn, Arm IHI 0048B 5.3.14) as a second encoding of
//! `ListRegister`: the model chooses list registers in one form and the GICv2 virtual
//! interface control moves them as 32-bit values. GICH_HCR's enable and maintenance bits sit
//! where ICH_HCR_EL2's do, so `LrFlush::hcr` needs no translation.
//!
//! A GICv2 list register holds five priority bits (7:3) and, for a virtual SGI, the source
//! CPU (bits 12:10); the model keeps no SGI source (one pending state per SGI and vCPU, as
//! for a GICv3), so it is always CPU 0, whichever vCPU sent it (docs/boards.md).

use super::lr::{ListRegister, LrLink, LrState};

const VIRTUAL_ID_MASK: u32 = 0x3ff;
const PHYSICAL_ID_SHIFT: u32 = 10;
const EOI_BIT: u32 = 1 << 19;
const PRIORITY_SHIFT: u32 = 23;
const PRIORITY_MASK: u32 = 0x1f;
const STATE_SHIFT: u32 = 28;
const GROUP1_BIT: u32 = 1 << 30;
const HW_BIT: u32 = 1 << 31;

impl ListRegister {
    /// Decodes a raw GICH_LRn value; every value decodes.
    pub fn decode_v2(raw: u32) -> Self {
        let link = if raw & HW_BIT != 0 {
            LrLink::Hardware {
                pintid: (raw >> PHYSICAL_ID_SHIFT) & VIRTUAL_ID_MASK,
            }
        } else {
            LrLink::Virtual {
                eoi_maintenance: raw & EOI_BIT != 0,
            }
        };
        let state = match (raw >> STATE_SHIFT) & 3 {
            0 => LrState::Invalid,
            1 => LrState::Pending,
            2 => LrState::Active,
            _ => LrState::PendingActive,
        };
        ListRegister {
            vintid: raw & VIRTUAL_ID_MASK,
            state,
            priority: (((raw >> PRIORITY_SHIFT) & PRIORITY_MASK) << 3) as u8,
            group1: raw & GROUP1_BIT != 0,
            link,
        }
    }

    /// The raw GICH_LRn value: INTIDs and physical IDs keep 10 bits, the priority its top
    /// five.
    pub fn encode_v2(&self) -> u32 {
        let link = match self.link {
            LrLink::Virtual {
                eoi_maintenance: true,
            } => EOI_BIT,
            LrLink::Virtual {
                eoi_maintenance: false,
            } => 0,
            LrLink::Hardware { pintid } => {
                HW_BIT | ((pintid & VIRTUAL_ID_MASK) << PHYSICAL_ID_SHIFT)
            }
        };
        let state = match self.state {
            LrState::Invalid => 0,
            LrState::Pending => 1,
            LrState::Active => 2,
            LrState::PendingActive => 3,
        };
        let group = if self.group1 { GROUP1_BIT } else { 0 };
        (state << STATE_SHIFT)
            | group
            | link
            | ((u32::from(self.priority) >> 3) << PRIORITY_SHIFT)
            | (self.vintid & VIRTUAL_ID_MASK)
    }
}

/// The GICv2 form of an ICH_LR<n>_EL2-format value the model chose.
pub fn to_v2(lr: u64) -> u32 {
    ListRegister::decode(lr).encode_v2()
}

/// The ICH_LR<n>_EL2-format value the model reads for a GICv2 list register.
pub fn from_v2(lr: u32) -> u64 {
    ListRegister::decode_v2(lr).encode()
}
