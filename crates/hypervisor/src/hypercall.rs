//! Guest hypercalls (HVC #0 or SMC #0): PSCI acting on the calling VM's own vCPUs only
//! (CPU_ON starts one on its CPU by a kick), SMCCC_VERSION and
//! Partita's vendor-hypervisor calls, as decoded and answered by `partita_core::hypercall`.
//!
//! Results go to x0 (x1 for PARTITA_VERSION's version, PARTITA_COUNTER's value and a refused
//! ring's wait); other registers are left as the guest gave them. PARTITA_CONSOLE_WRITE's
//! bytes join the VM's console stream, as its UART's would. A call never reaches the
//! physical firmware and affects another VM only by PARTITA_IVC_RING, which raises the
//! doorbells of the caller's peers on a channel it is a member of (PARTITA_COUNTER only
//! reads counters, of any VM).

use partita_core::counters::Counter;
use partita_core::hypercall::{respond, ret, PowerState, Powers, Response, CALL_REGISTERS};

use crate::arch::aarch64::entry::MAX_CPUS;
use crate::console;
use crate::counters;
use crate::system::Stop;
use crate::trap::Outcome;
use crate::vm::Vm;

/// Handles the call in the vCPU's x0..x7; `imm` is the HVC/SMC immediate (SMCCC uses 0).
pub fn handle(vm: &mut Vm, imm: u16) -> Outcome {
    // The call's registers, copied so that a ring may borrow the VM.
    let mut args = [0u64; CALL_REGISTERS];
    args.copy_from_slice(&vm.regs.x[..CALL_REGISTERS]);
    let mut local_ring = false;
    let mut states = [PowerState::Off; MAX_CPUS];
    let count = vm.powers(&mut states);
    let vcpus = Powers {
        caller: vm.vcpu_index(),
        states: &states[..count],
    };
    let response = respond(&args, imm, vcpus, counters_value, |channel| {
        let (ring, local) = vm.ring(channel);
        local_ring = local;
        ring
    });
    match response {
        Response::Return { x0, x1 } => {
            let regs = &mut vm.regs.x;
            regs[0] = x0;
            if let Some(x1) = x1 {
                regs[1] = x1;
            }
            // A peer on this CPU was rung: the scheduler delivers it (and preempts for it).
            if local_ring {
                Outcome::Interrupt
            } else {
                Outcome::Resume
            }
        }
        Response::Print(bytes) => {
            vm.regs.x[0] = ret::SUCCESS;
            console::vm_output(vm.index(), bytes.as_slice());
            Outcome::Resume
        }
        Response::CpuOn {
            vcpu,
            entry,
            context,
        } => {
            vm.regs.x[0] = vm.cpu_on(vcpu, entry, context);
            Outcome::Resume
        }
        Response::CpuOff => Outcome::Off,
        Response::PowerOff => Outcome::Stop(Stop::Clean),
        Response::Reset => Outcome::Reset,
    }
}

/// PARTITA_COUNTER: counter `counter` of the configuration's VM `index`, if both exist.
pub fn counters_value(index: u64, counter: u64) -> Option<u64> {
    let vms = crate::system::get().bundle.config.vms.len();
    let index = usize::try_from(index).ok().filter(|&i| i < vms)?;
    counters::read(index, Counter::from_id(counter)?)
}
