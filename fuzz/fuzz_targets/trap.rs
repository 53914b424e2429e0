//! ESR_EL2 decoding (`partita_core::trap`): any syndrome, fault address and loaded value a
//! guest can provoke decodes without panicking into fields that match the raw bits.

#![no_main]

use libfuzzer_sys::fuzz_target;
use partita_core::trap::{
    decode, ec, fault_ipa, injected_abort_syndrome, MmioAccess, Register, SysregAccess, TrapCause,
};

fn bit(v: u64, n: u32) -> bool {
    (v >> n) & 1 == 1
}

fn check_register(register: Register, field: u64) {
    match register {
        Register::X(n) => assert!(n < 31 && u64::from(n) == field & 0x1f),
        Register::Zero => assert_eq!(field & 0x1f, 31),
    }
}

fn check_access(access: MmioAccess, iss: u64, raw: u64) {
    let bytes = access.size.bytes();
    assert!(matches!(bytes, 1 | 2 | 4 | 8));
    assert_eq!(bytes, 1 << ((iss >> 22) & 3));
    check_register(access.register, iss >> 16);
    let value = access.load_value(raw);
    let low = raw & access.size.mask();
    if !access.sixty_four {
        assert_eq!(value >> 32, 0, "a W register load sets bits above 31");
    }
    let width_mask = if access.sixty_four {
        u64::MAX
    } else {
        0xffff_ffff
    };
    assert_eq!(value & access.size.mask() & width_mask, low & width_mask);
    if !access.sign_extend {
        assert_eq!(value, low & width_mask);
    }
}

fn check_sysreg(iss: u32) {
    let access = SysregAccess::decode(iss);
    let id = access.id;
    assert!(id.op0 < 4 && id.op1 < 8 && id.op2 < 8 && id.crn < 16 && id.crm < 16);
    check_register(access.register, u64::from(iss >> 5));
    assert_eq!(access.read, iss & 1 == 1);
}

fn check(esr: u64, hpfar: u64, far: u64, raw: u64) {
    let syndrome = decode(esr);
    let class = ((esr >> 26) & 0x3f) as u8;
    let iss = esr & 0x1ff_ffff;
    assert_eq!(syndrome.instruction_len, if bit(esr, 25) { 4 } else { 2 });
    match syndrome.cause {
        TrapCause::WaitForInterrupt { wfe } => {
            assert_eq!(class, ec::WFX);
            assert_eq!(wfe, bit(iss, 0));
        }
        TrapCause::Hvc { imm } => assert!(class == ec::HVC64 && u64::from(imm) == iss & 0xffff),
        TrapCause::Smc { imm } => assert!(class == ec::SMC64 && u64::from(imm) == iss & 0xffff),
        TrapCause::SystemRegister { iss: raw_iss } => {
            assert!(class == ec::SYSREG && u64::from(raw_iss) == iss);
            check_sysreg(raw_iss);
        }
        TrapCause::DataAbort(abort) => {
            assert_eq!(class, ec::DABT_LOWER);
            assert_eq!(abort.write, bit(iss, 6));
            assert_eq!(abort.access.is_some(), bit(iss, 24));
            if let Some(access) = abort.access {
                check_access(access, iss, raw);
            }
        }
        TrapCause::InstructionAbort(_) => assert_eq!(class, ec::IABT_LOWER),
        TrapCause::Other { ec: other } => {
            assert_eq!(other, class);
            let handled = [ec::WFX, ec::HVC64, ec::SMC64, ec::SYSREG];
            assert!(!handled.contains(&other) && other != ec::DABT_LOWER);
            assert_ne!(other, ec::IABT_LOWER);
        }
    }
    let ipa = fault_ipa(hpfar, far);
    assert_eq!(ipa & 0xfff, far & 0xfff);
    assert!(ipa < 1 << 52, "IPA {ipa:#x} wider than 52 bits");
    // What Partita injects back must itself decode as an abort without a valid syndrome.
    let write = bit(raw, 0);
    let injected = decode(injected_abort_syndrome(ec::DABT_LOWER, write));
    match injected.cause {
        TrapCause::DataAbort(abort) => assert!(abort.access.is_none() && abort.write == write),
        other => panic!("injected abort decodes as {other:?}"),
    }
}

fuzz_target!(|input: (u64, u64, u64, u64)| {
    let (esr, hpfar, far, raw) = input;
    check(esr, hpfar, far, raw);
});
