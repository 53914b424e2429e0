//! The GICv3 virtual CPU interface control registers at EL2 (IHI 0069 12.4 "ICH_* registers"):
//! list registers, ICH_HCR_EL2, ICH_VMCR_EL2, the active-priority registers and ICH_VTR_EL2.
//!
//! Register names go by their encodings (`S3_4_C12_...`) so no assembler feature is needed.
//! This module only moves values; what goes into a list register is `partita_core::vgic`'s
//! decision. It must never touch the physical CPU interface (`gic.rs` does).

use partita_core::vgic::MAX_LIST_REGISTERS;

use super::sysreg::{read_sysreg, write_sysreg};

/// ICH_HCR_EL2.En: the virtual CPU interface signals virtual interrupts.
pub const ICH_HCR_EN: u64 = 1;

/// Expands `$m!("<encoding of ICH_LR<n>_EL2>")` for list register `$n` (0 to 15): the
/// register is named in the instruction, so each one needs its own arm.
macro_rules! for_lr {
    ($n:expr, $m:ident) => {
        match $n {
            0 => $m!("s3_4_c12_c12_0"),
            1 => $m!("s3_4_c12_c12_1"),
            2 => $m!("s3_4_c12_c12_2"),
            3 => $m!("s3_4_c12_c12_3"),
            4 => $m!("s3_4_c12_c12_4"),
            5 => $m!("s3_4_c12_c12_5"),
            6 => $m!("s3_4_c12_c12_6"),
            7 => $m!("s3_4_c12_c12_7"),
            8 => $m!("s3_4_c12_c13_0"),
            9 => $m!("s3_4_c12_c13_1"),
            10 => $m!("s3_4_c12_c13_2"),
            11 => $m!("s3_4_c12_c13_3"),
            12 => $m!("s3_4_c12_c13_4"),
            13 => $m!("s3_4_c12_c13_5"),
            14 => $m!("s3_4_c12_c13_6"),
            _ => $m!("s3_4_c12_c13_7"),
        }
    };
}

/// Number of list registers this CPU implements (ICH_VTR_EL2.ListRegs + 1).
pub fn list_register_count() -> usize {
    let vtr = read_sysreg!("s3_4_c12_c11_1");
    ((vtr & 0x1f) as usize + 1).min(MAX_LIST_REGISTERS)
}

/// Reads ICH_LR<n>_EL2 (`n` below 16).
pub fn read_list_register(n: usize) -> u64 {
    macro_rules! read {
        ($reg:literal) => {
            read_sysreg!($reg)
        };
    }
    for_lr!(n, read)
}

/// Writes `value` to ICH_LR<n>_EL2 (`n` below 16).
pub fn write_list_register(n: usize, value: u64) {
    macro_rules! write {
        ($reg:literal) => {
            write_sysreg!($reg, value)
        };
    }
    for_lr!(n, write);
}

/// Writes ICH_HCR_EL2 (En and the maintenance-interrupt enables).
pub fn set_hcr(value: u64) {
    write_sysreg!("s3_4_c12_c11_0", value);
}

/// The guest's view of its CPU interface that is not in the list registers: ICH_VMCR_EL2
/// (priority mask, group enables, EOI mode) and the active priorities of groups 0 and 1.
#[derive(Clone, Copy, Default)]
pub struct VirtualCpuInterface {
    vmcr: u64,
    ap0r0: u64,
    ap1r0: u64,
}

impl VirtualCpuInterface {
    /// Copies the live registers into `self`.
    pub fn save(&mut self) {
        self.vmcr = read_sysreg!("s3_4_c12_c11_7");
        self.ap0r0 = read_sysreg!("s3_4_c12_c8_0");
        self.ap1r0 = read_sysreg!("s3_4_c12_c9_0");
    }

    /// Loads `self` into the CPU.
    pub fn restore(&self) {
        write_sysreg!("s3_4_c12_c11_7", self.vmcr);
        write_sysreg!("s3_4_c12_c8_0", self.ap0r0);
        write_sysreg!("s3_4_c12_c9_0", self.ap1r0);
    }
}
