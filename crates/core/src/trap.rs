//! Decoding of ESR_EL2 trap syndromes into typed trap causes.
//!
//! The hypervisor reads ESR_EL2 (and FAR_EL2/HPFAR_EL2 for aborts) on every exit from a guest
//! and hands the raw values here; what comes back is a `TrapCause` that names the event and
//! carries only fields that are valid for it. Field positions follow the ARM ARM (DDI 0487,
//! D23.2.41 "ESR_EL2" and the ISS encodings for each exception class). This module must never
//! touch registers and never panic: every bit pattern a guest can provoke decodes to some value.

use crate::devices::AccessSize;

/// Exception classes (ESR_ELx.EC) Partita handles.
pub mod ec {
    pub const UNKNOWN: u8 = 0x00;
    pub const WFX: u8 = 0x01;
    pub const HVC64: u8 = 0x16;
    pub const SMC64: u8 = 0x17;
    pub const SYSREG: u8 = 0x18;
    pub const IABT_LOWER: u8 = 0x20;
    pub const IABT_CURRENT: u8 = 0x21;
    pub const DABT_LOWER: u8 = 0x24;
    pub const DABT_CURRENT: u8 = 0x25;
}

/// A general-purpose register named by an instruction: `X(n)` for x0..x30, or the zero
/// register (register number 31 in a load/store transfer register field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Register {
    X(u8),
    Zero,
}

impl Register {
    /// Decodes a 5-bit register field where 31 means XZR.
    pub fn from_field(n: u64) -> Register {
        match (n & 0x1f) as u8 {
            31 => Register::Zero,
            r => Register::X(r),
        }
    }
}

/// The load or store a data abort describes when the syndrome is valid (ISV = 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmioAccess {
    pub size: AccessSize,
    /// SSE: a load sign-extends the value to the register width.
    pub sign_extend: bool,
    /// SRT: the transfer register.
    pub register: Register,
    /// SF: the register is 64 bits wide (otherwise a W register, upper half zeroed).
    pub sixty_four: bool,
    /// AR: acquire/release semantics.
    pub acquire_release: bool,
}

impl MmioAccess {
    /// The register value a load of `raw` (zero-extended from the device) produces.
    pub fn load_value(&self, raw: u64) -> u64 {
        let bits = 8 * self.size.bytes() as u32;
        let raw = raw & self.size.mask();
        let value = if self.sign_extend && bits < 64 {
            (((raw << (64 - bits)) as i64) >> (64 - bits)) as u64
        } else {
            raw
        };
        if self.sixty_four {
            value
        } else {
            value & 0xffff_ffff
        }
    }
}

/// Fault status code groups (DFSC/IFSC) that change what Partita does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultStatus {
    Translation,
    AccessFlag,
    Permission,
    Other(u8),
}

impl FaultStatus {
    fn from_code(code: u8) -> FaultStatus {
        match code & 0x3c {
            0x04 => FaultStatus::Translation,
            0x08 => FaultStatus::AccessFlag,
            0x0c => FaultStatus::Permission,
            _ => FaultStatus::Other(code & 0x3f),
        }
    }
}

/// A stage-2 data abort from the guest (EC 0x24).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataAbort {
    /// The decoded access, `None` when the syndrome is not valid (ISV = 0), e.g. for
    /// load/store pair or post-indexed accesses: those cannot be emulated.
    pub access: Option<MmioAccess>,
    /// WnR: the access was a write.
    pub write: bool,
    /// S1PTW: the fault happened on the guest's own stage-1 table walk.
    pub stage1_walk: bool,
    /// FnV: FAR_EL2 does not hold the faulting address.
    pub far_invalid: bool,
    pub status: FaultStatus,
}

/// A stage-2 instruction abort from the guest (EC 0x20).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstructionAbort {
    pub stage1_walk: bool,
    pub status: FaultStatus,
}

/// Why the guest trapped to EL2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrapCause {
    /// WFI or WFE (`wfe` tells which).
    WaitForInterrupt {
        wfe: bool,
    },
    /// HVC with its 16-bit immediate.
    Hvc {
        imm: u16,
    },
    /// SMC with its 16-bit immediate; the guest PC still points at the SMC.
    Smc {
        imm: u16,
    },
    /// A trapped MSR/MRS or system instruction (ISS kept raw).
    SystemRegister {
        iss: u32,
    },
    DataAbort(DataAbort),
    InstructionAbort(InstructionAbort),
    /// Any other exception class, including EC 0 (unknown reason).
    Other {
        ec: u8,
    },
}

/// A decoded ESR_EL2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syndrome {
    pub cause: TrapCause,
    /// Length of the trapped instruction in bytes (IL: 4 for A64, 2 for a 16-bit T32 one).
    pub instruction_len: u64,
}

fn bit(v: u64, n: u32) -> bool {
    (v >> n) & 1 == 1
}

#[inline(always)]
fn decode_data_abort(iss: u64) -> DataAbort {
    let access = bit(iss, 24).then(|| MmioAccess {
        size: match (iss >> 22) & 3 {
            0 => AccessSize::Byte,
            1 => AccessSize::Half,
            2 => AccessSize::Word,
            _ => AccessSize::Double,
        },
        sign_extend: bit(iss, 21),
        register: Register::from_field(iss >> 16),
        sixty_four: bit(iss, 15),
        acquire_release: bit(iss, 14),
    });
    DataAbort {
        access,
        write: bit(iss, 6),
        stage1_walk: bit(iss, 7),
        far_invalid: bit(iss, 10),
        status: FaultStatus::from_code((iss & 0x3f) as u8),
    }
}

/// A system register named by its encoding (op0, op1, CRn, CRm, op2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysregId {
    pub op0: u8,
    pub op1: u8,
    pub crn: u8,
    pub crm: u8,
    pub op2: u8,
}

/// ICC_SGI1R_EL1: a guest's SGI request, trapped while HCR_EL2.IMO is set (IHI 0069 12.2).
pub const ICC_SGI1R_EL1: SysregId = SysregId {
    op0: 3,
    op1: 0,
    crn: 12,
    crm: 11,
    op2: 5,
};

impl SysregId {
    /// Whether this names a debug register (op0 = 2: breakpoints, watchpoints, the OS lock,
    /// MDSCR_EL1, the debug communication channel) or a PMU register (PMCR_EL0 and the
    /// other CRn = 9, CRm = 12..14 registers, PMINTENSET/CLR_EL1, the event counters and
    /// types at CRn = 14, CRm = 8..15). These are per-CPU hardware that Partita does not
    /// switch between VMs, so MDCR_EL2 traps them and guests see them read as zero with
    /// writes ignored: no VM can plant a breakpoint, lock debug or count events in another.
    pub fn is_debug_or_pmu(&self) -> bool {
        let pmu_control = self.op0 == 3 && self.crn == 9 && (12..=14).contains(&self.crm);
        let pmu_events = self.op0 == 3 && self.op1 == 3 && self.crn == 14 && self.crm >= 8;
        self.op0 == 2 || pmu_control || pmu_events
    }
}

/// A trapped MSR or MRS (EC 0x18; ARM ARM D23.2.41, ISS encoding for an exception from MSR,
/// MRS or a system instruction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysregAccess {
    pub id: SysregId,
    /// Rt: the transfer register (31 is XZR).
    pub register: Register,
    /// Direction: MRS (a read) rather than MSR.
    pub read: bool,
}

/// The ISS bits of an EC 0x18 syndrome that `SysregAccess::decode` reads, but Rt: the
/// register's encoding and the direction.
pub const SYSREG_NAME_BITS: u32 = 0x3f_ffff & !(0x1f << 5);

impl SysregId {
    /// The ISS of an MSR (a write) to this register with Rt 0: `iss & SYSREG_NAME_BITS ==
    /// id.write_iss()` says in one compare that `iss` decodes to a write of it, whatever Rt
    /// (the short exit's test for a sent SGI).
    pub const fn write_iss(&self) -> u32 {
        ((self.op0 as u32 & 3) << 20)
            | ((self.op2 as u32 & 7) << 17)
            | ((self.op1 as u32 & 7) << 14)
            | ((self.crn as u32 & 0xf) << 10)
            | ((self.crm as u32 & 0xf) << 1)
    }
}

impl SysregAccess {
    /// Decodes the ISS of an EC 0x18 syndrome; every value decodes.
    pub fn decode(iss: u32) -> SysregAccess {
        let field = |shift: u32, mask: u32| ((iss >> shift) & mask) as u8;
        SysregAccess {
            id: SysregId {
                op0: field(20, 3),
                op2: field(17, 7),
                op1: field(14, 7),
                crn: field(10, 0xf),
                crm: field(1, 0xf),
            },
            register: Register::from_field(u64::from(iss >> 5)),
            read: iss & 1 == 1,
        }
    }
}

/// A load or store the guest made to an address Partita may emulate: a stage-2 data abort
/// with a valid syndrome, not on the guest's own table walk, with FAR_EL2 valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceAccess {
    pub access: MmioAccess,
    pub write: bool,
    pub instruction_len: u64,
}

/// The emulable access `esr` describes, if it is one: the common MMIO exit, which the exit
/// fast path takes. Every other syndrome is `None` and goes through `decode`.
#[inline]
pub fn device_access(esr: u64) -> Option<DeviceAccess> {
    // EC, ISV, S1PTW and FnV in one test: every other exit pays only this. The fields are
    // then read as `decode_data_abort` reads them (a test holds the two together).
    const MASK: u64 = (0x3f << 26) | (1 << 24) | (1 << 10) | (1 << 7);
    const WANT: u64 = ((ec::DABT_LOWER as u64) << 26) | (1 << 24);
    if esr & MASK != WANT {
        return None;
    }
    let access = decode_data_abort(esr & 0x1ff_ffff).access?;
    Some(DeviceAccess {
        access,
        write: bit(esr, 6),
        instruction_len: if bit(esr, 25) { 4 } else { 2 },
    })
}

/// `decode` of a trapped WFI or WFE alone (`None`: another class), inline for the exit the
/// real-time VM takes at every wait (each switch to the GPOS); `decode` answers with it.
#[inline(always)]
pub fn decode_wait(esr: u64) -> Option<Syndrome> {
    (((esr >> 26) & 0x3f) as u8 == ec::WFX).then_some(Syndrome {
        cause: TrapCause::WaitForInterrupt { wfe: bit(esr, 0) },
        instruction_len: if bit(esr, 25) { 4 } else { 2 },
    })
}

/// Decodes an ESR_EL2 value taken from a lower exception level.
pub fn decode(esr: u64) -> Syndrome {
    if let Some(wait) = decode_wait(esr) {
        return wait;
    }
    let ec = ((esr >> 26) & 0x3f) as u8;
    let iss = esr & 0x1ff_ffff;
    let cause = match ec {
        ec::HVC64 => TrapCause::Hvc { imm: iss as u16 },
        ec::SMC64 => TrapCause::Smc { imm: iss as u16 },
        ec::SYSREG => TrapCause::SystemRegister { iss: iss as u32 },
        ec::DABT_LOWER => TrapCause::DataAbort(decode_data_abort(iss)),
        ec::IABT_LOWER => TrapCause::InstructionAbort(InstructionAbort {
            stage1_walk: bit(iss, 7),
            status: FaultStatus::from_code((iss & 0x3f) as u8),
        }),
        ec => TrapCause::Other { ec },
    };
    Syndrome {
        cause,
        instruction_len: if bit(esr, 25) { 4 } else { 2 },
    }
}

/// The faulting intermediate physical address of a stage-2 abort: HPFAR_EL2.FIPA gives the
/// page (bits [43:4] hold IPA[51:12]) and FAR_EL2 the offset in it.
pub fn fault_ipa(hpfar: u64, far: u64) -> u64 {
    ((hpfar & 0x0fff_ffff_fff0) << 8) | (far & 0xfff)
}

/// The syndrome Partita writes to ESR_EL1 when it injects an abort into the guest: a
/// synchronous external abort (FSC 0x10) of class `ec`, 32-bit instruction.
pub fn injected_abort_syndrome(ec: u8, write: bool) -> u64 {
    ((ec as u64) << 26) | (1 << 25) | ((write as u64) << 6) | 0x10
}

/// ESR_EL1 for an injected undefined-instruction exception (EC 0, IL set).
pub const UNDEFINED_SYNDROME: u64 = 1 << 25;

#[cfg(test)]
mod tests {
    use super::*;

    const IL: u64 = 1 << 25;

    #[test]
    fn device_accesses_are_exactly_the_emulable_data_aborts() {
        // A word store from w3: EC 0x24, ISV, SAS = 2, SRT = 3, WnR.
        let store = (0x24 << 26) | IL | (1 << 24) | (2 << 22) | (3 << 16) | (1 << 6);
        let fast = device_access(store).unwrap();
        assert!(fast.write);
        assert_eq!(fast.instruction_len, 4);
        assert_eq!(fast.access.register, Register::X(3));
        assert_eq!(fast.access.size, AccessSize::Word);
        assert_eq!(device_access(store & !(1 << 24)), None, "no syndrome");
        assert_eq!(device_access(store | (1 << 7)), None, "stage-1 walk");
        assert_eq!(device_access(store | (1 << 10)), None, "FAR not valid");
        assert_eq!(
            device_access((0x25 << 26) | (store & 0x3ff_ffff)),
            None,
            "from EL2"
        );
        let mut rng = crate::test_rng::Rng(11);
        for n in 0..20_000 {
            // Half the draws are data aborts with a syndrome, so both sides get exercised.
            let mut esr = rng.next() & 0xffff_ffff;
            if n % 2 == 0 {
                esr = (esr & 0x3ff_ffff) | (0x24 << 26) | (1 << 24);
            }
            let syndrome = decode(esr);
            let general = match syndrome.cause {
                TrapCause::DataAbort(a) if !a.stage1_walk && !a.far_invalid => {
                    a.access.map(|access| DeviceAccess {
                        access,
                        write: a.write,
                        instruction_len: syndrome.instruction_len,
                    })
                }
                _ => None,
            };
            assert_eq!(device_access(esr), general, "{esr:#x}");
        }
    }

    #[test]
    fn an_sgi_write_decodes_to_its_register() {
        let iss = (3 << 20) | (5 << 17) | (12 << 10) | (3 << 5) | (11 << 1);
        assert_eq!(
            SysregAccess::decode(iss),
            SysregAccess {
                id: ICC_SGI1R_EL1,
                register: Register::X(3),
                read: false
            }
        );
        let read_xzr = SysregAccess::decode(iss | (31 << 5) | 1);
        assert_eq!(read_xzr.register, Register::Zero);
        assert!(read_xzr.read);
        assert_eq!(
            decode((0x18 << 26) | IL | u64::from(iss)).cause,
            TrapCause::SystemRegister { iss }
        );
    }

    #[test]
    fn one_compare_finds_a_write_of_a_register_whatever_its_rt() {
        let want = ICC_SGI1R_EL1.write_iss();
        let mut rng = crate::test_rng::Rng(0x5a17);
        for n in 0..200_000u32 {
            // A quarter of the draws are ICC_SGI1R_EL1 accesses with random Rt, direction and
            // RES0 bits, so both answers get exercised.
            let mut iss = rng.next() as u32 & 0x1ff_ffff;
            if n % 4 == 0 {
                iss = (iss & (0x1f << 5 | 1 | 0x7 << 22)) | want;
            }
            let access = SysregAccess::decode(iss);
            let general = access.id == ICC_SGI1R_EL1 && !access.read;
            assert_eq!(iss & SYSREG_NAME_BITS == want, general, "{iss:#x}");
        }
        let msr_x21 = (3 << 20) | (5 << 17) | (12 << 10) | (21 << 5) | (11 << 1);
        assert_eq!(msr_x21 & SYSREG_NAME_BITS, want);
    }

    #[test]
    fn debug_and_pmu_registers_are_recognised() {
        let id = |op0, op1, crn, crm, op2| SysregId {
            op0,
            op1,
            crn,
            crm,
            op2,
        };
        // DBGBVR0_EL1, MDSCR_EL1, OSLAR_EL1, MDCCSR_EL0.
        assert!(id(2, 0, 0, 0, 4).is_debug_or_pmu());
        assert!(id(2, 0, 0, 2, 2).is_debug_or_pmu());
        assert!(id(2, 0, 1, 0, 4).is_debug_or_pmu());
        assert!(id(2, 3, 0, 1, 0).is_debug_or_pmu());
        // PMCR_EL0, PMCCNTR_EL0, PMUSERENR_EL0, PMINTENSET_EL1, PMEVCNTR0_EL0, PMCCFILTR_EL0.
        assert!(id(3, 3, 9, 12, 0).is_debug_or_pmu());
        assert!(id(3, 3, 9, 13, 0).is_debug_or_pmu());
        assert!(id(3, 3, 9, 14, 0).is_debug_or_pmu());
        assert!(id(3, 0, 9, 14, 1).is_debug_or_pmu());
        assert!(id(3, 3, 14, 8, 0).is_debug_or_pmu());
        assert!(id(3, 3, 14, 15, 7).is_debug_or_pmu());
        // ICC_SGI1R_EL1, CNTV_CTL_EL0, SCTLR_EL1, CNTP_CTL_EL0.
        assert!(!ICC_SGI1R_EL1.is_debug_or_pmu());
        assert!(!id(3, 3, 14, 3, 1).is_debug_or_pmu());
        assert!(!id(3, 0, 1, 0, 0).is_debug_or_pmu());
        assert!(!id(3, 3, 14, 2, 1).is_debug_or_pmu());
    }

    fn dabt(iss: u64) -> DataAbort {
        match decode((0x24 << 26) | IL | iss).cause {
            TrapCause::DataAbort(d) => d,
            other => panic!("not a data abort: {other:?}"),
        }
    }

    #[test]
    fn hvc_smc_wfx_decode_with_immediates() {
        assert_eq!(
            decode((0x16 << 26) | IL | 0x1234).cause,
            TrapCause::Hvc { imm: 0x1234 }
        );
        assert_eq!(decode((0x17 << 26) | IL).cause, TrapCause::Smc { imm: 0 });
        assert_eq!(
            decode((0x01 << 26) | IL | 1).cause,
            TrapCause::WaitForInterrupt { wfe: true }
        );
        assert_eq!(decode((0x01 << 26) | IL).instruction_len, 4);
        assert_eq!(decode(0x01 << 26).instruction_len, 2);
    }

    #[test]
    fn the_wait_decoder_answers_a_wfx_as_decode_and_nothing_else() {
        for esr in [
            0x01 << 26,
            (0x01 << 26) | IL,
            (0x01 << 26) | IL | 1,
            (0x01 << 26) | 3,
        ] {
            assert_eq!(decode_wait(esr), Some(decode(esr)));
        }
        for ec in (0..0x40u64).filter(|&ec| ec != 0x01) {
            assert_eq!(decode_wait((ec << 26) | IL | 1), None);
        }
    }

    #[test]
    fn unknown_classes_are_kept() {
        assert_eq!(decode(0).cause, TrapCause::Other { ec: 0 });
        assert_eq!(decode(0x3f << 26).cause, TrapCause::Other { ec: 0x3f });
    }

    #[test]
    fn data_abort_word_load_into_x3() {
        // ISV, SAS=2, SRT=3, SF=1, DFSC translation level 3.
        let d = dabt((1 << 24) | (2 << 22) | (3 << 16) | (1 << 15) | 0x07);
        let a = d.access.unwrap();
        assert_eq!(a.size, AccessSize::Word);
        assert_eq!(a.register, Register::X(3));
        assert!(a.sixty_four && !a.sign_extend && !d.write);
        assert_eq!(d.status, FaultStatus::Translation);
    }

    #[test]
    fn data_abort_store_from_xzr() {
        let d = dabt((1 << 24) | (3 << 22) | (31 << 16) | (1 << 15) | (1 << 6) | 0x06);
        let a = d.access.unwrap();
        assert_eq!(a.register, Register::Zero);
        assert_eq!(a.size, AccessSize::Double);
        assert!(d.write);
    }

    #[test]
    fn data_abort_without_syndrome_has_no_access() {
        let d = dabt((1 << 6) | (1 << 7) | (1 << 10) | 0x0f);
        assert_eq!(d.access, None);
        assert!(d.write && d.stage1_walk && d.far_invalid);
        assert_eq!(d.status, FaultStatus::Permission);
        assert_eq!(dabt(0x10).status, FaultStatus::Other(0x10));
    }

    #[test]
    fn load_values_sign_and_zero_extend() {
        let access = |size, sign_extend, sixty_four| MmioAccess {
            size,
            sign_extend,
            register: Register::X(0),
            sixty_four,
            acquire_release: false,
        };
        use AccessSize::*;
        assert_eq!(
            access(Byte, true, true).load_value(0x80),
            0xffff_ffff_ffff_ff80
        );
        assert_eq!(access(Byte, true, false).load_value(0x80), 0xffff_ff80);
        assert_eq!(access(Byte, false, true).load_value(0x1ff), 0xff);
        assert_eq!(access(Half, true, true).load_value(0x7fff), 0x7fff);
        assert_eq!(
            access(Half, true, true).load_value(0x8001),
            0xffff_ffff_ffff_8001
        );
        assert_eq!(
            access(Word, true, true).load_value(0x8000_0000),
            0xffff_ffff_8000_0000
        );
        assert_eq!(
            access(Word, false, false).load_value(0x1_8000_0000),
            0x8000_0000
        );
        assert_eq!(access(Double, true, true).load_value(u64::MAX), u64::MAX);
    }

    #[test]
    fn instruction_abort_and_fault_ipa() {
        assert_eq!(
            decode((0x20 << 26) | IL | (1 << 7) | 0x05).cause,
            TrapCause::InstructionAbort(InstructionAbort {
                stage1_walk: true,
                status: FaultStatus::Translation
            })
        );
        assert_eq!(fault_ipa(0x0a00_0000 >> 8, 0xffff_0123), 0x0a00_0123);
        assert_eq!(fault_ipa(u64::MAX, 0), 0xf_ffff_ffff_f000);
    }

    #[test]
    fn injected_syndromes() {
        assert_eq!(injected_abort_syndrome(0x25, false), 0x9600_0010);
        assert_eq!(injected_abort_syndrome(0x24, true), 0x9200_0050);
        assert_eq!(UNDEFINED_SYNDROME, 0x0200_0000);
    }
}
