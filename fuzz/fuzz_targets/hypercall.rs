//! Hypercall dispatch (`partita_core::hypercall::respond`): any x0..x7, immediate, table of
//! vCPU power states and caller, counter answer and doorbell outcome give one of the
//! contract's answers, only the calls that may stop or reset the VM do, CPU_ON starts only
//! an existing vCPU that is off, CPU_OFF powers the VM off only from its last vCPU on, only PARTITA_IVC_RING rings a doorbell (with the
//! channel id from x1, every bit of it), and a console write prints exactly the bytes it
//! carries, never more than `CONSOLE_CHUNK`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use partita_core::hypercall::{
    affinity, decode, is_implemented, partita_version, respond, ret, Hypercall, PowerState, Powers,
    Response, Ring, CONSOLE_CHUNK, MAX_AFFINITY_LEVEL, PARTITA_CONSOLE_WRITE, PARTITA_COUNTER,
    PARTITA_IVC_RING, PARTITA_VERSION, PSCI_VERSION_1_1, SMCCC_VERSION_1_1,
};
use partita_core::vgic::Affinity;
use std::cell::Cell;

const SYSTEM_OFF: u32 = 0x8400_0008;
const SYSTEM_RESET: u32 = 0x8400_0009;
const CPU_OFF: u32 = 0x8400_0002;

/// Every value x0 may return (PSCI/SMCCC codes and the two version numbers).
const RETURN_VALUES: [u64; 10] = [
    ret::SUCCESS,
    ret::NOT_SUPPORTED,
    ret::INVALID_PARAMETERS,
    ret::DENIED,
    ret::ALREADY_ON,
    ret::ON_PENDING,
    ret::AFFINITY_OFF,
    ret::AFFINITY_ON_PENDING,
    PSCI_VERSION_1_1,
    SMCCC_VERSION_1_1,
];

/// The doorbell outcome a fuzz input picks.
fn outcome(pick: u8, wait_ns: u64) -> Ring {
    match pick % 3 {
        0 => Ring::Rung,
        1 => Ring::NotMember,
        _ => Ring::TooSoon { wait_ns },
    }
}

fn check(x: [u64; 8], imm: u16, vcpus: Powers, counter: Option<u64>, doorbell: Ring) {
    let function = x[0] as u32;
    let read = |_, _| counter;
    let rang = Cell::new(None);
    let ring = |channel| {
        rang.set(Some(channel));
        doorbell
    };
    let response = respond(&x, imm, vcpus, read, ring);
    let is_ring = imm == 0 && function == PARTITA_IVC_RING;
    assert_eq!(rang.get(), is_ring.then_some(x[1]));
    match response {
        Response::Return { x0, x1 } => {
            assert!(RETURN_VALUES.contains(&x0), "x0 = {x0:#x}");
            let expected = match (imm, function) {
                (0, PARTITA_VERSION) => Some(partita_version()),
                (0, PARTITA_COUNTER) => counter,
                (0, PARTITA_IVC_RING) => match doorbell {
                    Ring::TooSoon { wait_ns } => Some(wait_ns),
                    _ => None,
                },
                _ => None,
            };
            assert_eq!(x1, expected);
            assert_eq!(x0 == ret::DENIED, is_ring && x1.is_some());
        }
        Response::Print(bytes) => {
            assert!(imm == 0 && function == PARTITA_CONSOLE_WRITE);
            let count = usize::try_from(x[1]).expect("a printed count fits");
            assert!(count <= CONSOLE_CHUNK);
            let carried: Vec<u8> = x[2..].iter().flat_map(|w| w.to_le_bytes()).collect();
            assert_eq!(bytes.as_slice(), &carried[..count]);
        }
        Response::PowerOff => {
            assert!(imm == 0 && (function == SYSTEM_OFF || function == CPU_OFF));
            if function == CPU_OFF {
                assert!(others_off(vcpus), "CPU_OFF powered off with a vCPU on");
            }
        }
        Response::CpuOff => {
            assert!(imm == 0 && function == CPU_OFF && !others_off(vcpus));
        }
        Response::CpuOn {
            vcpu,
            entry,
            context,
        } => {
            assert!(matches!(decode(&x), Hypercall::CpuOn { .. }) && imm == 0);
            assert_eq!(vcpus.states.get(vcpu), Some(&PowerState::Off));
            let Hypercall::CpuOn {
                target,
                entry: e,
                context: c,
            } = decode(&x)
            else {
                unreachable!()
            };
            assert_eq!((entry, context), (e, c));
            assert_eq!(Affinity::of_vcpu(vcpu).mpidr(), affinity(target));
        }
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
    assert_eq!(respond(&low, imm, vcpus, read, |_| doorbell), response);
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
    if let Hypercall::CpuOn { target, .. } = call {
        // Naming a vCPU the VM does not have is refused, and a vCPU that is on stays on.
        let named =
            (0..vcpus.states.len()).find(|&i| Affinity::of_vcpu(i).mpidr() == affinity(target));
        if imm == 0 {
            match named.map(|i| vcpus.states[i]) {
                None => assert_eq!(
                    response,
                    Response::Return {
                        x0: ret::INVALID_PARAMETERS,
                        x1: None
                    }
                ),
                Some(PowerState::On) => assert_eq!(
                    response,
                    Response::Return {
                        x0: ret::ALREADY_ON,
                        x1: None
                    }
                ),
                Some(PowerState::OnPending) => assert_eq!(
                    response,
                    Response::Return {
                        x0: ret::ON_PENDING,
                        x1: None
                    }
                ),
                Some(PowerState::Off) => assert!(matches!(response, Response::CpuOn { .. })),
            }
        }
    }
}

/// Whether every vCPU but the caller is off.
fn others_off(vcpus: Powers) -> bool {
    vcpus
        .states
        .iter()
        .enumerate()
        .all(|(i, &s)| i == vcpus.caller || s == PowerState::Off)
}

fn state(bits: u8) -> PowerState {
    match bits % 3 {
        0 => PowerState::Off,
        1 => PowerState::OnPending,
        _ => PowerState::On,
    }
}

fuzz_target!(
    |input: ([u64; 8], u16, Vec<u8>, u8, Option<u64>, u8, u64)| {
        let (x, imm, table, caller, counter, pick, wait_ns) = input;
        // At most 64 vCPUs (the virtual GIC's limit); the caller is on.
        let mut states: Vec<PowerState> = table.iter().take(64).map(|&b| state(b)).collect();
        if states.is_empty() {
            states.push(PowerState::On);
        }
        let caller = usize::from(caller) % states.len();
        states[caller] = PowerState::On;
        let vcpus = Powers {
            caller,
            states: &states,
        };
        check(x, imm, vcpus, counter, outcome(pick, wait_ns));
    }
);
