//! The virtual CPU interface control at EL2: for a GICv3 the ICH_* system registers (IHI 0069
//! 12.4: list registers, ICH_HCR_EL2, ICH_VMCR_EL2, the active-priority registers and
//! ICH_VTR_EL2), for a GICv2 their GICH_* twins in memory (`gic_hyp_v2.rs`), chosen by the
//! board. List registers are always given and taken in ICH_LR<n>_EL2's form; the GICv2 path
//! translates them, and GICH_HCR's bits sit where ICH_HCR_EL2's do.
//!
//! Register names go by their encodings (`S3_4_C12_...`) so no assembler feature is needed.
//! This module only moves values; what goes into a list register is `partita_core::vgic`'s
//! decision. It must never touch the physical CPU interface (`gic.rs` does).

use partita_core::board::Gic;
use partita_core::vgic::{from_v2, to_v2, MAX_LIST_REGISTERS};

use super::gic_hyp_v2;
use super::sysreg::{read_sysreg, write_sysreg};
use crate::board::BOARD;

/// The board's GIC, as a constant so the version is chosen at build time.
const GIC: Gic = BOARD.gic;

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
    let count = match &GIC {
        Gic::V3(_) => (read_sysreg!("s3_4_c12_c11_1") & 0x1f) as usize + 1,
        Gic::V2(gic) => gic_hyp_v2::list_register_count(gic),
    };
    count.min(MAX_LIST_REGISTERS)
}

/// Reads ICH_LR<n>_EL2 (`n` below 16).
pub fn read_list_register(n: usize) -> u64 {
    if let Gic::V2(gic) = &GIC {
        return from_v2(gic_hyp_v2::read_list_register(gic, n));
    }
    macro_rules! read {
        ($reg:literal) => {
            read_sysreg!($reg)
        };
    }
    for_lr!(n, read)
}

/// Writes `value` to ICH_LR<n>_EL2 (`n` below 16).
#[inline]
pub fn write_list_register(n: usize, value: u64) {
    // ICH_LR0_EL2 is the one a lone injection takes (`Vgic::inject_loaded`): written
    // without the others' jump table.
    if matches!(GIC, Gic::V3(_)) && n == 0 {
        write_sysreg!("s3_4_c12_c12_0", value);
    } else {
        write_any_list_register(n, value);
    }
}

/// `write_list_register` for any list register.
#[inline(never)]
fn write_any_list_register(n: usize, value: u64) {
    if let Gic::V2(gic) = &GIC {
        return gic_hyp_v2::write_list_register(gic, n, to_v2(value));
    }
    macro_rules! write {
        ($reg:literal) => {
            write_sysreg!($reg, value)
        };
    }
    for_lr!(n, write);
}

/// Invokes `$one!(n, "register")` for each of ICH_LR0_EL2 to ICH_LR15_EL2, in order (the
/// straight runs of `write_list_registers` and `visit_list_registers`).
macro_rules! each_list_register {
    ($one:ident) => {
        $one!(0, "s3_4_c12_c12_0");
        $one!(1, "s3_4_c12_c12_1");
        $one!(2, "s3_4_c12_c12_2");
        $one!(3, "s3_4_c12_c12_3");
        $one!(4, "s3_4_c12_c12_4");
        $one!(5, "s3_4_c12_c12_5");
        $one!(6, "s3_4_c12_c12_6");
        $one!(7, "s3_4_c12_c12_7");
        $one!(8, "s3_4_c12_c13_0");
        $one!(9, "s3_4_c12_c13_1");
        $one!(10, "s3_4_c12_c13_2");
        $one!(11, "s3_4_c12_c13_3");
        $one!(12, "s3_4_c12_c13_4");
        $one!(13, "s3_4_c12_c13_5");
        $one!(14, "s3_4_c12_c13_6");
        $one!(15, "s3_4_c12_c13_7");
    };
}

/// Writes `values` to ICH_LR0_EL2 onwards (at most `MAX_LIST_REGISTERS`), skipping each
/// one that holds 0 and stays 0 (bit n of `loaded` clear: ICH_LR<n>_EL2 holds 0 now), and
/// returns the list registers that hold a value now (bit n: `values[n]` is not 0). On a
/// GICv3 one straight run of tests and writes, each register named in its instruction:
/// no jump table per register, no call, so the caller saves no registers for it.
#[inline]
pub fn write_list_registers(values: &[u64], loaded: u16) -> u16 {
    let mut now = 0;
    if let Gic::V2(_) = &GIC {
        for (n, &value) in values.iter().enumerate().take(MAX_LIST_REGISTERS) {
            if value != 0 || loaded & (1 << n) != 0 {
                write_list_register(n, value);
            }
            if value != 0 {
                now |= 1 << n;
            }
        }
        return now;
    }
    macro_rules! one {
        ($n:literal, $reg:literal) => {
            let Some(&value) = values.get($n) else {
                return now;
            };
            if value != 0 || loaded & (1 << $n) != 0 {
                write_sysreg!($reg, value);
            }
            if value != 0 {
                now |= 1 << $n;
            }
        };
    }
    each_list_register!(one);
    now
}

/// What `visit_list_registers` does with each list register it visits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// Its value is read into the slice.
    Read,
    /// Its value is read into the slice and the register is emptied (written 0).
    ReadAndEmpty,
    /// The register is emptied and its place in the slice set to 0.
    Empty,
}

/// Does `visit` to each list register of `mask` (bit n: ICH_LR<n>_EL2, its value at
/// `lrs[n]`). On a GICv3 one straight run of bit tests, each register named in its
/// instruction, that stops after the highest bit of `mask`: no jump table per register
/// and no call. Inlined: each caller's `visit` is a constant, so only its own work stays.
#[inline(always)]
pub fn visit_list_registers(mask: u16, lrs: &mut [u64; MAX_LIST_REGISTERS], visit: Visit) {
    if let Gic::V2(_) = &GIC {
        for (n, lr) in lrs.iter_mut().enumerate() {
            if mask & (1 << n) == 0 {
                continue;
            }
            if visit != Visit::Empty {
                *lr = read_list_register(n);
            } else {
                *lr = 0;
            }
            if visit != Visit::Read {
                write_list_register(n, 0);
            }
        }
        return;
    }
    macro_rules! one {
        ($n:literal, $reg:literal) => {
            if mask >> $n == 0 {
                return;
            }
            if mask & (1 << $n) != 0 {
                if visit != Visit::Empty {
                    lrs[$n] = read_sysreg!($reg);
                } else {
                    lrs[$n] = 0;
                }
                if visit != Visit::Read {
                    write_sysreg!($reg, 0);
                }
            }
        };
    }
    each_list_register!(one);
}

/// The free list registers, bit n for ICH_LR<n>_EL2 (ICH_ELRSR_EL2; GICH_ELRSR0 on a GICv2):
/// invalid, and not waiting to signal an EOI maintenance interrupt.
pub fn empty_list_registers() -> u16 {
    let bits = match &GIC {
        Gic::V3(_) => read_sysreg!("s3_4_c12_c11_5"),
        Gic::V2(gic) => u64::from(gic_hyp_v2::empty_list_registers(gic)),
    };
    bits as u16
}

/// Writes ICH_HCR_EL2 (En and the maintenance-interrupt enables).
pub fn set_hcr(value: u64) {
    match &GIC {
        Gic::V3(_) => write_sysreg!("s3_4_c12_c11_0", value),
        Gic::V2(gic) => gic_hyp_v2::set_hcr(gic, value as u32),
    }
}

/// The guest's view of its CPU interface that is not in the list registers: ICH_VMCR_EL2
/// (priority mask, group enables, EOI mode) and the active priorities of groups 0 and 1; on
/// a GICv2, GICH_VMCR and GICH_APR (kept as `vmcr` and `ap0r0`).
#[derive(Clone, Copy, Default)]
pub struct VirtualCpuInterface {
    vmcr: u64,
    ap0r0: u64,
    ap1r0: u64,
}

impl VirtualCpuInterface {
    /// Copies the live registers into `self`.
    pub fn save(&mut self) {
        if let Gic::V2(gic) = &GIC {
            self.vmcr = u64::from(gic_hyp_v2::vmcr(gic));
            self.ap0r0 = u64::from(gic_hyp_v2::apr(gic));
            return;
        }
        self.vmcr = read_sysreg!("s3_4_c12_c11_7");
        self.ap0r0 = read_sysreg!("s3_4_c12_c8_0");
        self.ap1r0 = read_sysreg!("s3_4_c12_c9_0");
    }

    /// Loads `self` into the CPU.
    pub fn restore(&self) {
        if let Gic::V2(gic) = &GIC {
            gic_hyp_v2::set_vmcr(gic, self.vmcr as u32);
            gic_hyp_v2::set_apr(gic, self.ap0r0 as u32);
            return;
        }
        write_sysreg!("s3_4_c12_c11_7", self.vmcr);
        write_sysreg!("s3_4_c12_c8_0", self.ap0r0);
        write_sysreg!("s3_4_c12_c9_0", self.ap1r0);
    }
}
