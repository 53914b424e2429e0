//! Decoding of guest hypercalls (SMCCC function IDs and arguments) and the values Partita
//! returns for them.
//!
//! A guest makes a call with HVC #0 or SMC #0, the function ID in w0 and arguments in x1..x3
//! (SMC Calling Convention, ARM DEN 0028; PSCI, ARM DEN 0022). `decode` turns those registers
//! into a `Hypercall`; the hypervisor acts on it and puts the result in x0. The IDs come from
//! the `smccc` crate's PSCI constants so Partita and its guests agree on one table. This
//! module must never touch registers and never panic: any register contents decode.

use smccc::psci;

use crate::vgic::Affinity;

/// SMCCC_VERSION (SMCCC 1.1+).
pub const SMCCC_VERSION: u32 = 0x8000_0000;
/// Partita's vendor-specific hypervisor service range (owner 6, fast call, SMC64).
pub const PARTITA_VERSION: u32 = 0xc600_0000;
/// Partita's counter read: x1 = VM index (configuration order), x2 = counter id
/// (`counters::Counter`) -> x0 = SUCCESS and x1 = the value, or x0 = INVALID_PARAMETERS.
pub const PARTITA_COUNTER: u32 = 0xc600_0001;
/// Partita's console write, the paravirtual console: x1 = how many bytes (0 to
/// `CONSOLE_CHUNK`), x2..x7 = the bytes, little endian (x2's lowest byte first) -> x0 =
/// SUCCESS, or INVALID_PARAMETERS for a larger count. The bytes join the VM's console
/// output exactly as if its UART had sent them; one call costs one exit, where the UART
/// costs one or two a byte (docs/console.md).
pub const PARTITA_CONSOLE_WRITE: u32 = 0xc600_0002;
/// The most bytes one PARTITA_CONSOLE_WRITE carries: six registers' worth.
pub const CONSOLE_CHUNK: usize = 48;
/// The registers a call reads: x0..x7.
pub const CALL_REGISTERS: usize = 8;
/// Partita's doorbell: x1 = channel id (configuration order, the device tree's
/// `partita,channel`) -> x0 = SUCCESS when every other member of the channel was rung;
/// INVALID_PARAMETERS when the caller is not a member (or there is no such channel);
/// DENIED with x1 = nanoseconds to wait when the caller rang sooner than the channel's
/// `ring_interval_us` after its last accepted ring (nothing is queued: ring again then).
pub const PARTITA_IVC_RING: u32 = 0xc600_0003;

/// PSCI 1.1, as returned by PSCI_VERSION.
pub const PSCI_VERSION_1_1: u64 = 0x0001_0001;
/// SMCCC 1.1, as returned by SMCCC_VERSION.
pub const SMCCC_VERSION_1_1: u64 = 0x0001_0001;

/// PSCI and SMCCC return codes, as the 64-bit value written to x0.
pub mod ret {
    pub const SUCCESS: u64 = 0;
    pub const NOT_SUPPORTED: u64 = -1i64 as u64;
    pub const INVALID_PARAMETERS: u64 = -2i64 as u64;
    pub const DENIED: u64 = -3i64 as u64;
    pub const ALREADY_ON: u64 = -4i64 as u64;
    pub const ON_PENDING: u64 = -5i64 as u64;
    pub const INVALID_ADDRESS: u64 = -9i64 as u64;
    /// AFFINITY_INFO: the node is on.
    pub const AFFINITY_ON: u64 = 0;
    /// AFFINITY_INFO: the node is off.
    pub const AFFINITY_OFF: u64 = 1;
    /// AFFINITY_INFO: the node is being turned on.
    pub const AFFINITY_ON_PENDING: u64 = 2;
}

/// The highest affinity level an MPIDR has (Aff3): AFFINITY_INFO with a higher lowest
/// affinity level is INVALID_PARAMETERS (PSCI, ARM DEN 0022, AFFINITY_INFO).
pub const MAX_AFFINITY_LEVEL: u64 = 3;

/// Partita's version for PARTITA_VERSION: `(major << 16) | minor` of this crate, a constant.
pub const fn partita_version() -> u64 {
    (decimal(env!("CARGO_PKG_VERSION_MAJOR")) << 16) | decimal(env!("CARGO_PKG_VERSION_MINOR"))
}

/// The decimal number `s` (its digits; 0 when it has none or another character), at most 16
/// bits of it.
const fn decimal(s: &str) -> u64 {
    let bytes = s.as_bytes();
    let mut value = 0u64;
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            return 0;
        }
        value = value
            .wrapping_mul(10)
            .wrapping_add((bytes[i] - b'0') as u64);
        i += 1;
    }
    value & 0xffff
}

/// A decoded guest call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hypercall {
    PsciVersion,
    PsciFeatures {
        function: u32,
    },
    CpuOn {
        target: u64,
        entry: u64,
        context: u64,
    },
    CpuOff,
    AffinityInfo {
        target: u64,
        level: u64,
    },
    SystemOff,
    SystemReset,
    SmcccVersion,
    PartitaVersion,
    PartitaCounter {
        vm: u64,
        counter: u64,
    },
    /// PARTITA_CONSOLE_WRITE with its bytes; `None` when the count is too large.
    PartitaConsoleWrite(Option<ConsoleBytes>),
    IvcRing {
        channel: u64,
    },
    /// Any function ID Partita does not implement: the guest gets NOT_SUPPORTED.
    Unsupported {
        function: u32,
    },
}

/// The bytes of one PARTITA_CONSOLE_WRITE. Aligned as the registers they come from, so that
/// moving a `Hypercall` or `Response` that holds them copies words, not bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct ConsoleBytes {
    bytes: [u8; CONSOLE_CHUNK],
    len: u8,
}

impl ConsoleBytes {
    /// The first `count` bytes of `words` (each register little endian, in order); `None`
    /// when `count` exceeds `CONSOLE_CHUNK`. Registers past `words` read as zero.
    pub fn from_registers(count: u64, words: &[u64]) -> Option<ConsoleBytes> {
        let len = usize::try_from(count)
            .ok()
            .filter(|&n| n <= CONSOLE_CHUNK)?;
        let mut bytes = [0u8; CONSOLE_CHUNK];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        Some(ConsoleBytes {
            bytes,
            len: len as u8,
        })
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Whether a call with 32-bit convention (function ID bit 30 clear) passes its arguments in
/// w registers: the upper halves must then be ignored.
#[inline]
fn argument(function: u32, x: u64) -> u64 {
    if function & (1 << 30) == 0 {
        x & 0xffff_ffff
    } else {
        x
    }
}

/// Decodes a call from the guest's x0..x7 (registers past the end of `x` read as zero).
#[inline(always)]
pub fn decode(x: &[u64]) -> Hypercall {
    let reg = |i: usize| x.get(i).copied().unwrap_or(0);
    let function = reg(0) as u32;
    let arg = |i: usize| argument(function, reg(i));
    match function {
        psci::PSCI_VERSION => Hypercall::PsciVersion,
        psci::PSCI_FEATURES => Hypercall::PsciFeatures {
            function: reg(1) as u32,
        },
        psci::PSCI_CPU_ON_32 | psci::PSCI_CPU_ON_64 => Hypercall::CpuOn {
            target: arg(1),
            entry: arg(2),
            context: arg(3),
        },
        psci::PSCI_CPU_OFF => Hypercall::CpuOff,
        psci::PSCI_AFFINITY_INFO_32 | psci::PSCI_AFFINITY_INFO_64 => Hypercall::AffinityInfo {
            target: arg(1),
            level: arg(2),
        },
        psci::PSCI_SYSTEM_OFF => Hypercall::SystemOff,
        psci::PSCI_SYSTEM_RESET => Hypercall::SystemReset,
        SMCCC_VERSION => Hypercall::SmcccVersion,
        PARTITA_VERSION => Hypercall::PartitaVersion,
        PARTITA_COUNTER => Hypercall::PartitaCounter {
            vm: reg(1),
            counter: reg(2),
        },
        PARTITA_CONSOLE_WRITE => Hypercall::PartitaConsoleWrite(ConsoleBytes::from_registers(
            reg(1),
            x.get(2..).unwrap_or(&[]),
        )),
        PARTITA_IVC_RING => Hypercall::IvcRing { channel: reg(1) },
        function => Hypercall::Unsupported { function },
    }
}

/// What became of a doorbell ring, as the hypervisor decided it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ring {
    /// Every other member of the channel was rung.
    Rung,
    /// The caller is not a member of that channel, or there is no such channel.
    NotMember,
    /// Too soon after the caller's last ring on the channel: `wait_ns` are left.
    TooSoon { wait_ns: u64 },
}

/// Whether PSCI_FEATURES reports `function` as implemented.
pub fn is_implemented(function: u32) -> bool {
    !matches!(
        decode(&[u64::from(function)]),
        Hypercall::Unsupported { .. }
    )
}

/// MPIDR affinity fields (Aff3, Aff2, Aff1, Aff0): what CPU_ON and AFFINITY_INFO compare.
pub fn affinity(mpidr: u64) -> u64 {
    mpidr & 0xff_00ff_ffff
}

/// What Partita does for a guest's call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response {
    /// The call returns to the guest: `x0` is written, and `x1` too when it is `Some`.
    Return { x0: u64, x1: Option<u64> },
    /// The calling VM powers off cleanly (SYSTEM_OFF, or CPU_OFF of its last vCPU on).
    PowerOff,
    /// CPU_ON of the VM's vCPU `vcpu`, which is off: it is to start at `entry` with x0 =
    /// `context` (the caller gets SUCCESS once the hypervisor has marked it on-pending).
    CpuOn {
        vcpu: usize,
        entry: u64,
        context: u64,
    },
    /// CPU_OFF of the calling vCPU while another vCPU of the VM is on: it stops until a
    /// CPU_ON names it again.
    CpuOff,
    /// The calling VM restarts (SYSTEM_RESET).
    Reset,
    /// These bytes join the calling VM's console output; x0 = SUCCESS.
    Print(ConsoleBytes),
}

impl Response {
    fn value(x0: u64) -> Response {
        Response::Return { x0, x1: None }
    }
}

/// A vCPU's PSCI power state (PSCI, ARM DEN 0022, AFFINITY_INFO and CPU_ON).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerState {
    Off,
    /// CPU_ON was accepted; the vCPU has not run yet.
    OnPending,
    On,
}

/// The calling VM's vCPUs as PSCI sees them: vCPU `i` has the MPIDR affinity
/// `Affinity::of_vcpu(i)` and the power state `states[i]`; the call comes from `caller`.
#[derive(Clone, Copy, Debug)]
pub struct Powers<'a> {
    pub caller: usize,
    pub states: &'a [PowerState],
}

impl Powers<'_> {
    fn count(&self) -> usize {
        self.states.len()
    }

    fn state(&self, vcpu: usize) -> PowerState {
        self.states.get(vcpu).copied().unwrap_or(PowerState::Off)
    }
}

/// The vCPU of the calling VM whose affinity is `mpidr`'s, if it has one.
fn vcpu_of(vcpus: &Powers, mpidr: u64) -> Option<usize> {
    (0..vcpus.count()).find(|&i| Affinity::of_vcpu(i).mpidr() == affinity(mpidr))
}

/// AFFINITY_INFO of the node `target` names at `level` (0: one vCPU; 1 to 3: every vCPU
/// whose affinity agrees with `target` above that level): ON when any of them is on,
/// ON_PENDING when none is on but one is pending, OFF when all are off; INVALID_PARAMETERS
/// when the VM has no such node.
fn affinity_info(vcpus: &Powers, target: u64, level: u64) -> u64 {
    if level > MAX_AFFINITY_LEVEL {
        return ret::INVALID_PARAMETERS;
    }
    // The affinity fields at and above `level`: Aff0 [7:0], Aff1 [15:8], Aff2 [23:16],
    // Aff3 [39:32].
    let mask = match level {
        0 => 0xff_00ff_ffff,
        1 => 0xff_00ff_ff00,
        2 => 0xff_00ff_0000,
        _ => 0xff_0000_0000,
    };
    let states = (0..vcpus.count())
        .filter(|&i| Affinity::of_vcpu(i).mpidr() & mask == target & mask)
        .map(|i| vcpus.state(i));
    let mut any = false;
    let mut pending = false;
    for state in states {
        any = true;
        match state {
            PowerState::On => return ret::AFFINITY_ON,
            PowerState::OnPending => pending = true,
            PowerState::Off => {}
        }
    }
    match (any, pending) {
        (false, _) => ret::INVALID_PARAMETERS,
        (true, true) => ret::AFFINITY_ON_PENDING,
        (true, false) => ret::AFFINITY_OFF,
    }
}

/// The call in the guest's x0..x7 made with HVC/SMC `#imm`: SMCCC calls use immediate 0,
/// any other is unsupported.
#[inline(always)]
fn decode_call(x: &[u64], imm: u16) -> Hypercall {
    if imm == 0 {
        decode(x)
    } else {
        Hypercall::Unsupported {
            function: x.first().copied().unwrap_or(0) as u32,
        }
    }
}

/// Whether a call reads or changes the power states of the VM's vCPUs, its boot, or its
/// channels: only `respond`, given those, answers it.
#[inline]
fn acts_on_vm(call: &Hypercall) -> bool {
    matches!(
        call,
        Hypercall::CpuOn { .. }
            | Hypercall::AffinityInfo { .. }
            | Hypercall::CpuOff
            | Hypercall::SystemOff
            | Hypercall::SystemReset
            | Hypercall::IvcRing { .. }
    )
}

/// The response to HVC/SMC `#imm` with the guest's x0..x7 when it depends on those
/// registers and the counters alone (versions, features, PARTITA_COUNTER, console writes,
/// unsupported calls): the hypervisor's short exit answers these without looking at the
/// VM. `None` for a call that acts on the VM (`respond` answers it).
#[inline(always)]
pub fn respond_local(
    x: &[u64],
    imm: u16,
    read_counter: impl FnOnce(u64, u64) -> Option<u64>,
) -> Option<Response> {
    let call = decode_call(x, imm);
    (!acts_on_vm(&call)).then(|| answer_local(call, read_counter))
}

/// The answer to a call that does not act on the VM (`acts_on_vm` is false).
#[inline(always)]
fn answer_local(call: Hypercall, read_counter: impl FnOnce(u64, u64) -> Option<u64>) -> Response {
    match call {
        Hypercall::PsciVersion => Response::value(PSCI_VERSION_1_1),
        Hypercall::PsciFeatures { function } if is_implemented(function) => {
            Response::value(ret::SUCCESS)
        }
        Hypercall::SmcccVersion => Response::value(SMCCC_VERSION_1_1),
        Hypercall::PartitaVersion => Response::Return {
            x0: ret::SUCCESS,
            x1: Some(const { partita_version() }),
        },
        Hypercall::PartitaCounter { vm, counter } => match read_counter(vm, counter) {
            Some(value) => Response::Return {
                x0: ret::SUCCESS,
                x1: Some(value),
            },
            None => Response::value(ret::INVALID_PARAMETERS),
        },
        Hypercall::PartitaConsoleWrite(Some(bytes)) => Response::Print(bytes),
        Hypercall::PartitaConsoleWrite(None) => Response::value(ret::INVALID_PARAMETERS),
        // Unsupported and unimplemented features; the calls that act on the VM never come
        // here (`respond` answers them first).
        _ => Response::value(ret::NOT_SUPPORTED),
    }
}

/// The response to HVC/SMC `#imm` with the guest's x0..x7 from a vCPU of a VM with the
/// vCPUs `vcpus`. SMCCC calls use immediate 0: any other is NOT_SUPPORTED. PSCI acts on the
/// VM's own vCPUs only: another VM's MPIDR is as unknown as a nonexistent one.
/// `read_counter(vm, counter)` answers PARTITA_COUNTER: the value, or `None` when that VM
/// or counter does not exist; `ring(channel)` rings a doorbell for PARTITA_IVC_RING.
pub fn respond(
    x: &[u64],
    imm: u16,
    vcpus: Powers,
    read_counter: impl FnOnce(u64, u64) -> Option<u64>,
    ring: impl FnOnce(u64) -> Ring,
) -> Response {
    match decode_call(x, imm) {
        Hypercall::CpuOn {
            target,
            entry,
            context,
        } => match vcpu_of(&vcpus, target).map(|v| (v, vcpus.state(v))) {
            None => Response::value(ret::INVALID_PARAMETERS),
            Some((_, PowerState::On)) => Response::value(ret::ALREADY_ON),
            Some((_, PowerState::OnPending)) => Response::value(ret::ON_PENDING),
            Some((vcpu, PowerState::Off)) => Response::CpuOn {
                vcpu,
                entry,
                context,
            },
        },
        Hypercall::AffinityInfo { target, level } => {
            Response::value(affinity_info(&vcpus, target, level))
        }
        Hypercall::CpuOff => {
            let others_on =
                (0..vcpus.count()).any(|i| i != vcpus.caller && vcpus.state(i) != PowerState::Off);
            if others_on {
                Response::CpuOff
            } else {
                // The last vCPU turning itself off powers the VM off.
                Response::PowerOff
            }
        }
        Hypercall::SystemOff => Response::PowerOff,
        Hypercall::SystemReset => Response::Reset,
        Hypercall::IvcRing { channel } => match ring(channel) {
            Ring::Rung => Response::value(ret::SUCCESS),
            Ring::NotMember => Response::value(ret::INVALID_PARAMETERS),
            Ring::TooSoon { wait_ns } => Response::Return {
                x0: ret::DENIED,
                x1: Some(wait_ns),
            },
        },
        call => answer_local(call, read_counter),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    const UP: Powers = Powers {
        caller: 0,
        states: &[PowerState::On],
    };

    #[test]
    fn psci_acts_on_the_vms_own_vcpus_by_mpidr() {
        use PowerState::{Off, On, OnPending};
        let states = [On, Off, OnPending, Off];
        let vm = Powers {
            caller: 0,
            states: &states,
        };
        let call = |x: [u64; 4]| respond(&x, 0, vm, |_, _| None, |_| Ring::NotMember);
        let value = |x0| Response::Return { x0, x1: None };
        assert_eq!(call([0xc400_0003, 0, 0, 0]), value(ret::ALREADY_ON));
        assert_eq!(
            call([0xc400_0003, 1, 0x4008_0000, 7]),
            Response::CpuOn {
                vcpu: 1,
                entry: 0x4008_0000,
                context: 7
            }
        );
        assert_eq!(call([0xc400_0003, 2, 0, 0]), value(ret::ON_PENDING));
        // MPIDR bit 31 and the MT/U bits are not affinity.
        assert_eq!(
            call([0xc400_0003, 0x8000_0003, 1, 2]),
            Response::CpuOn {
                vcpu: 3,
                entry: 1,
                context: 2
            }
        );
        for foreign in [4, 0x100, 0x1_0000, 0x1_0000_0000] {
            assert_eq!(
                call([0xc400_0003, foreign, 0, 0]),
                value(ret::INVALID_PARAMETERS)
            );
            assert_eq!(
                call([0xc400_0004, foreign, 0, 0]),
                value(ret::INVALID_PARAMETERS)
            );
        }
        assert_eq!(call([0xc400_0004, 0, 0, 0]), value(ret::AFFINITY_ON));
        assert_eq!(call([0xc400_0004, 1, 0, 0]), value(ret::AFFINITY_OFF));
        assert_eq!(
            call([0xc400_0004, 2, 0, 0]),
            value(ret::AFFINITY_ON_PENDING)
        );
        // Level 1: the whole cluster 0, which has a vCPU on.
        assert_eq!(call([0xc400_0004, 1, 1, 0]), value(ret::AFFINITY_ON));
        assert_eq!(
            call([0xc400_0004, 0x100, 1, 0]),
            value(ret::INVALID_PARAMETERS)
        );
        // CPU_OFF with another vCPU on or pending turns the caller off alone.
        assert_eq!(call([0x8400_0002, 0, 0, 0]), Response::CpuOff);
        let last = [On, Off];
        let vm = Powers {
            caller: 0,
            states: &last,
        };
        assert_eq!(
            respond(&[0x8400_0002], 0, vm, |_, _| None, |_| Ring::NotMember),
            Response::PowerOff
        );
    }

    #[test]
    fn psci_ids_decode() {
        assert_eq!(decode(&[0x8400_0000, 0, 0, 0]), Hypercall::PsciVersion);
        assert_eq!(decode(&[0x8400_0008, 0, 0, 0]), Hypercall::SystemOff);
        assert_eq!(decode(&[0x8400_0009, 0, 0, 0]), Hypercall::SystemReset);
        assert_eq!(decode(&[0x8400_0002, 0, 0, 0]), Hypercall::CpuOff);
        assert_eq!(
            decode(&[0x8400_000a, 0x8400_0008, 0, 0]),
            Hypercall::PsciFeatures {
                function: 0x8400_0008
            }
        );
    }

    #[test]
    fn upper_half_of_x0_is_ignored() {
        assert_eq!(
            decode(&[0xdead_beef_8000_0000, 0, 0, 0]),
            Hypercall::SmcccVersion
        );
        assert_eq!(decode(&[0x1_c600_0000, 0, 0, 0]), Hypercall::PartitaVersion);
    }

    #[test]
    fn counter_reads_carry_every_argument_bit() {
        assert_eq!(
            decode(&[0xc600_0001, u64::MAX, 1 << 40, 7]),
            Hypercall::PartitaCounter {
                vm: u64::MAX,
                counter: 1 << 40
            }
        );
        assert!(is_implemented(PARTITA_COUNTER));
    }

    #[test]
    fn console_writes_carry_up_to_forty_eight_bytes() {
        let words: Vec<u64> = b"hello, world! Partita's console call carries 48B"
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let mut x = vec![0xc600_0002, 48];
        x.extend(&words);
        let Hypercall::PartitaConsoleWrite(Some(bytes)) = decode(&x) else {
            panic!("not a console write");
        };
        assert_eq!(
            bytes.as_slice(),
            b"hello, world! Partita's console call carries 48B"
        );
        assert_eq!(
            respond(&x, 0, UP, |_, _| None, |_| Ring::NotMember),
            Response::Print(bytes)
        );
        x[1] = 13;
        assert_eq!(
            decode(&x),
            Hypercall::PartitaConsoleWrite(ConsoleBytes::from_registers(13, &words))
        );
        let short = ConsoleBytes::from_registers(13, &words).unwrap();
        assert_eq!(short.as_slice(), b"hello, world!");
        assert_eq!(
            ConsoleBytes::from_registers(0, &words).unwrap().as_slice(),
            b""
        );
        // Registers the caller did not pass read as zero.
        assert_eq!(
            ConsoleBytes::from_registers(9, &words[..1])
                .unwrap()
                .as_slice(),
            b"hello, w\0"
        );
        for count in [49, 1 << 32, u64::MAX] {
            x[1] = count;
            assert_eq!(
                respond(&x, 0, UP, |_, _| None, |_| Ring::NotMember),
                Response::value(ret::INVALID_PARAMETERS)
            );
        }
        assert!(is_implemented(PARTITA_CONSOLE_WRITE));
    }

    #[test]
    fn cpu_on_32_truncates_arguments_and_64_does_not() {
        assert_eq!(
            decode(&[0x8400_0003, 0x1_0000_0001, 0x2_4000_0000, u64::MAX]),
            Hypercall::CpuOn {
                target: 1,
                entry: 0x4000_0000,
                context: 0xffff_ffff
            }
        );
        assert_eq!(
            decode(&[0xc400_0003, 0x1_0000_0001, 0x2_4000_0000, 7]),
            Hypercall::CpuOn {
                target: 0x1_0000_0001,
                entry: 0x2_4000_0000,
                context: 7
            }
        );
        assert_eq!(
            decode(&[0xc400_0004, 1, 0, 0]),
            Hypercall::AffinityInfo {
                target: 1,
                level: 0
            }
        );
    }

    #[test]
    fn unknown_ids_are_unsupported() {
        for id in [0x8400_0001u64, 0x8400_0012, 0xc600_0004, 0x8000_0001, 0] {
            assert_eq!(
                decode(&[id, 0, 0, 0]),
                Hypercall::Unsupported {
                    function: id as u32
                }
            );
            assert!(!is_implemented(id as u32));
        }
    }

    #[test]
    fn features_cover_every_implemented_call() {
        for id in [
            0x8400_0000,
            0x8400_000a,
            0x8400_0003,
            0xc400_0003,
            0x8400_0002,
            0x8400_0004,
            0xc400_0004,
            0x8400_0008,
            0x8400_0009,
            0x8000_0000,
            0xc600_0000,
            0xc600_0002,
            0xc600_0003,
        ] {
            assert!(is_implemented(id), "{id:#x}");
        }
    }

    #[test]
    fn responses_follow_the_contract() {
        let me = 0x8000_0000;
        let up = Powers {
            caller: 0,
            states: &[PowerState::On],
        };
        let ring = |channel| match channel {
            0 => Ring::Rung,
            1 => Ring::TooSoon { wait_ns: 1500 },
            _ => Ring::NotMember,
        };
        let respond0 =
            |x: [u64; 4]| respond(&x, 0, up, |vm, c| (vm == 1 && c == 2).then_some(7), ring);
        let value = |x0| Response::Return { x0, x1: None };
        assert_eq!(respond0([0x8400_0000, 0, 0, 0]), value(PSCI_VERSION_1_1));
        assert_eq!(
            respond0([0x8400_000a, 0x8400_0009, 0, 0]),
            value(ret::SUCCESS)
        );
        assert_eq!(
            respond0([0x8400_000a, 0x8400_0001, 0, 0]),
            value(ret::NOT_SUPPORTED)
        );
        assert_eq!(respond0([0xc400_0003, me, 0, 0]), value(ret::ALREADY_ON));
        assert_eq!(
            respond0([0xc400_0003, 1, 0, 0]),
            value(ret::INVALID_PARAMETERS)
        );
        assert_eq!(respond0([0xc400_0004, me, 0, 0]), value(ret::AFFINITY_ON));
        assert_eq!(
            respond0([0xc400_0004, me, MAX_AFFINITY_LEVEL + 1, 0]),
            value(ret::INVALID_PARAMETERS)
        );
        assert_eq!(
            respond0([0xc400_0004, 1, 0, 0]),
            value(ret::INVALID_PARAMETERS)
        );
        assert_eq!(respond0([0x8400_0002, 0, 0, 0]), Response::PowerOff);
        assert_eq!(respond0([0x8400_0008, 0, 0, 0]), Response::PowerOff);
        assert_eq!(respond0([0x8400_0009, 0, 0, 0]), Response::Reset);
        assert_eq!(respond0([0x8000_0000, 0, 0, 0]), value(SMCCC_VERSION_1_1));
        assert_eq!(
            respond0([0xc600_0000, 0, 0, 0]),
            Response::Return {
                x0: ret::SUCCESS,
                x1: Some(partita_version())
            }
        );
        assert_eq!(
            respond0([0xc600_0001, 1, 2, 0]),
            Response::Return {
                x0: ret::SUCCESS,
                x1: Some(7)
            }
        );
        assert_eq!(
            respond0([0xc600_0001, 1, 3, 0]),
            value(ret::INVALID_PARAMETERS)
        );
        assert_eq!(respond0([0x1234, 0, 0, 0]), value(ret::NOT_SUPPORTED));
        assert_eq!(
            respond(&[0x8400_0008, 0, 0, 0], 1, up, |_, _| None, ring),
            value(ret::NOT_SUPPORTED)
        );
        assert_eq!(respond0([0xc600_0003, 0, 0, 0]), value(ret::SUCCESS));
        assert_eq!(
            respond0([0xc600_0003, 1, 0, 0]),
            Response::Return {
                x0: ret::DENIED,
                x1: Some(1500)
            }
        );
        assert_eq!(
            respond0([0xc600_0003, 1 << 40, 0, 0]),
            value(ret::INVALID_PARAMETERS)
        );
    }

    #[test]
    fn return_codes_and_version() {
        assert_eq!(ret::NOT_SUPPORTED, 0xffff_ffff_ffff_ffff);
        assert_eq!(ret::INVALID_PARAMETERS, 0xffff_ffff_ffff_fffe);
        assert_eq!(ret::ALREADY_ON, 0xffff_ffff_ffff_fffc);
        assert_eq!(partita_version(), 1);
        assert_eq!(affinity(0x8000_0001), 1);
    }

    #[test]
    fn the_short_exit_answers_exactly_the_calls_that_do_not_act_on_the_vm() {
        let counter = |vm, id| (vm == 1 && id == 2).then_some(42);
        let cases: [([u64; 4], u16); 12] = [
            ([0x8400_0000, 0, 0, 0], 0),
            ([0x8400_000a, 0xc400_0003, 0, 0], 0),
            ([0x8400_000a, 0x1234, 0, 0], 0),
            ([0x8000_0000, 0, 0, 0], 0),
            ([0xc600_0001, 1, 2, 0], 0),
            ([0xc600_0001, 9, 2, 0], 0),
            ([0x8400_0000, 0, 0, 0], 7),
            ([0xdead_beef, 0, 0, 0], 0),
            ([0xc400_0003, 0, 0, 0], 0),
            ([0x8400_0002, 0, 0, 0], 0),
            ([0x8400_0008, 0, 0, 0], 0),
            ([0x8400_0009, 0, 0, 0], 0),
        ];
        for (x, imm) in cases {
            let full = respond(&x, imm, UP, counter, |_| Ring::NotMember);
            match respond_local(&x, imm, counter) {
                Some(local) => assert_eq!(local, full, "{x:x?} #{imm}"),
                None => assert!(acts_on_vm(&decode(&x)), "{x:x?} must be answered locally"),
            }
        }
        for x in [
            [0xc400_0003, 0, 0, 0],
            [0x8400_0002, 0, 0, 0],
            [0x8400_0008, 0, 0, 0],
            [0x8400_0009, 0, 0, 0],
        ] {
            assert_eq!(respond_local(&x, 0, counter), None, "{x:x?} acts on the VM");
        }
    }
}
