//! Guest hypercalls (HVC #0 or SMC #0): PSCI acting on the calling VM only, SMCCC_VERSION and
//! Partita's vendor-hypervisor calls, as decoded by `partita_core::hypercall`.
//!
//! Results go to x0 (x1 for PARTITA_VERSION's version and PARTITA_COUNTER's value); other registers
//! are left as the guest gave them. A call never reaches the physical firmware and never
//! affects another VM (PARTITA_COUNTER only reads counters, of any VM).

use partita_core::counters::Counter;
use partita_core::hypercall::{
    decode, is_implemented, partita_version, ret, Hypercall, MAX_AFFINITY_LEVEL, PSCI_VERSION_1_1,
    SMCCC_VERSION_1_1,
};

use crate::counters;
use crate::system::Stop;
use crate::trap::Outcome;
use crate::vcpu::Vcpu;
use crate::vm::Vm;

/// Handles the call in the vCPU's x0..x3; `imm` is the HVC/SMC immediate (SMCCC uses 0).
pub fn handle(vm: &mut Vm, imm: u16) -> Outcome {
    let x = &vm.vcpu.regs.x;
    let call = if imm == 0 {
        decode([x[0], x[1], x[2], x[3]])
    } else {
        Hypercall::Unsupported {
            function: x[0] as u32,
        }
    };
    let result = match call {
        Hypercall::PsciVersion => PSCI_VERSION_1_1,
        Hypercall::PsciFeatures { function } if is_implemented(function) => ret::SUCCESS,
        Hypercall::PsciFeatures { .. } => ret::NOT_SUPPORTED,
        Hypercall::CpuOn { target, .. } if Vcpu::is_self(target) => ret::ALREADY_ON,
        Hypercall::CpuOn { .. } => ret::INVALID_PARAMETERS,
        Hypercall::AffinityInfo { target, level }
            if level <= MAX_AFFINITY_LEVEL && Vcpu::is_self(target) =>
        {
            ret::AFFINITY_ON
        }
        Hypercall::AffinityInfo { .. } => ret::INVALID_PARAMETERS,
        // The only vCPU turning itself off powers the VM off.
        Hypercall::CpuOff | Hypercall::SystemOff => return Outcome::Stop(Stop::Clean),
        Hypercall::SystemReset => return Outcome::Reset,
        Hypercall::SmcccVersion => SMCCC_VERSION_1_1,
        Hypercall::PartitaVersion => {
            vm.vcpu.regs.x[1] = partita_version();
            ret::SUCCESS
        }
        Hypercall::PartitaCounter { vm: index, counter } => match counters_value(index, counter) {
            Some(value) => {
                vm.vcpu.regs.x[1] = value;
                ret::SUCCESS
            }
            None => ret::INVALID_PARAMETERS,
        },
        Hypercall::Unsupported { .. } => ret::NOT_SUPPORTED,
    };
    vm.vcpu.regs.x[0] = result;
    Outcome::Resume
}

/// PARTITA_COUNTER: counter `counter` of the configuration's VM `index`, if both exist.
fn counters_value(index: u64, counter: u64) -> Option<u64> {
    let vms = crate::system::get().bundle.config.vms.len();
    let index = usize::try_from(index).ok().filter(|&i| i < vms)?;
    counters::read(index, Counter::from_id(counter)?)
}
