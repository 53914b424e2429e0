//! Hypercall dispatch (`partita_core::hypercall::respond`): any x0..x7, immediate, MPIDR and
//! counter answer give one of the contract's answers, and only the calls that may stop or
//! reset the VM do; a console write prints exactly the bytes it carries, never more than
//! `CONSOLE_CHUNK`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use partita_core::hypercall::{
    affinity, decode, is_implemented, partita_version, respond, ret, Hypercall, Response,
    CONSOLE_CHUNK, MAX_AFFINITY_LEVEL, PARTITA_CONSOLE_WRITE, PARTITA_COUNTER, PARTITA_VERSION,
    PSCI_VERSION_1_1, SMCCC_VERSION_1_1,
};

const SYSTEM_OFF: u32 = 0x8400_0008;
const SYSTEM_RESET: u32 = 0x8400_0009;
const CPU_OFF: u32 = 0x8400_0002;

/// Every value x0 may return (PSCI/SMCCC codes and the two version numbers).
const RETURN_VALUES: [u64; 6] = [
    ret::SUCCESS,
    ret::NOT_SUPPORTED,
    ret::INVALID_PARAMETERS,
    ret::ALREADY_ON,
    PSCI_VERSION_1_1,
    SMCCC_VERSION_1_1,
];

fn check(x: [u64; 8], imm: u16, own_mpidr: u64, counter: Option<u64>) {
    let function = x[0] as u32;
    let read = |_, _| counter;
    let response = respond(&x, imm, own_mpidr, read);
    match response {
        Response::Return { x0, x1 } => {
            assert!(RETURN_VALUES.contains(&x0), "x0 = {x0:#x}");
            let expected = match (imm, function) {
                (0, PARTITA_VERSION) => Some(partita_version()),
                (0, PARTITA_COUNTER) => counter,
                _ => None,
            };
            assert_eq!(x1, expected);
        }
        Response::Print(bytes) => {
            assert!(imm == 0 && function == PARTITA_CONSOLE_WRITE);
            let count = usize::try_from(x[1]).expect("a printed count fits");
            assert!(count <= CONSOLE_CHUNK);
            let carried: Vec<u8> = x[2..].iter().flat_map(|w| w.to_le_bytes()).collect();
            assert_eq!(bytes.as_slice(), &carried[..count]);
        }
        Response::PowerOff => assert!(imm == 0 && (function == SYSTEM_OFF || function == CPU_OFF)),
        Response::Reset => assert!(imm == 0 && function == SYSTEM_RESET),
    }
    if imm != 0 {
        let unsupported = Response::Return {
            x0: ret::NOT_SUPPORTED,
            x1: None,
        };
        assert_eq!(response, unsupported);
    }
    // SMCCC: the function ID is w0, so the upper half of x0 never matters.
    let mut low = x;
    low[0] &= 0xffff_ffff;
    assert_eq!(respond(&low, imm, own_mpidr, read), response);
    if imm == 0 && function == PARTITA_CONSOLE_WRITE && x[1] > CONSOLE_CHUNK as u64 {
        let invalid = Response::Return {
            x0: ret::INVALID_PARAMETERS,
            x1: None,
        };
        assert_eq!(response, invalid);
    }
    if imm == 0 && function == PARTITA_COUNTER {
        let answer = match counter {
            Some(value) => Response::Return {
                x0: ret::SUCCESS,
                x1: Some(value),
            },
            None => Response::Return {
                x0: ret::INVALID_PARAMETERS,
                x1: None,
            },
        };
        assert_eq!(response, answer);
    }
    let call = decode(&x);
    assert_eq!(
        is_implemented(function),
        !matches!(call, Hypercall::Unsupported { .. })
    );
    if let Hypercall::AffinityInfo { level, .. } = call {
        if imm == 0 && level > MAX_AFFINITY_LEVEL {
            let invalid = Response::Return {
                x0: ret::INVALID_PARAMETERS,
                x1: None,
            };
            assert_eq!(response, invalid, "AFFINITY_INFO level {level}");
        }
    }
    let reaches_aff3 = function & (1 << 30) != 0 || affinity(own_mpidr) >> 32 == 0;
    if matches!(call, Hypercall::CpuOn { .. }) && reaches_aff3 {
        // Naming the caller's own MPIDR always answers ALREADY_ON.
        let mut own_target = x;
        own_target[1] = own_mpidr;
        let own = respond(&own_target, 0, own_mpidr, read);
        let already_on = Response::Return {
            x0: ret::ALREADY_ON,
            x1: None,
        };
        assert_eq!(own, already_on);
    }
}

fuzz_target!(|input: ([u64; 8], u16, u64, Option<u64>)| {
    let (x, imm, own_mpidr, counter) = input;
    check(x, imm, own_mpidr, counter);
});
