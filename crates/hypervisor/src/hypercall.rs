//! Guest hypercalls (HVC #0 or SMC #0): PSCI acting on the calling VM only, SMCCC_VERSION and
//! Partita's vendor-hypervisor calls, as decoded and answered by `partita_core::hypercall`.
//!
//! Results go to x0 (x1 for PARTITA_VERSION's version and PARTITA_COUNTER's value); other registers
//! are left as the guest gave them. PARTITA_CONSOLE_WRITE's bytes join the VM's console
//! stream, as its UART's would. A call never reaches the physical firmware and never
//! affects another VM (PARTITA_COUNTER only reads counters, of any VM).

use partita_core::counters::Counter;
use partita_core::hypercall::{respond, ret, Response, CALL_REGISTERS};

use crate::console;
use crate::counters;
use crate::system::Stop;
use crate::trap::Outcome;
use crate::vcpu::GUEST_MPIDR;
use crate::vm::Vm;

/// Handles the call in the vCPU's x0..x7; `imm` is the HVC/SMC immediate (SMCCC uses 0).
pub fn handle(vm: &mut Vm, imm: u16) -> Outcome {
    let regs = &mut vm.vcpu.regs.x;
    match respond(&regs[..CALL_REGISTERS], imm, GUEST_MPIDR, counters_value) {
        Response::Return { x0, x1 } => {
            regs[0] = x0;
            if let Some(x1) = x1 {
                regs[1] = x1;
            }
            Outcome::Resume
        }
        Response::Print(bytes) => {
            regs[0] = ret::SUCCESS;
            console::vm_output(vm.index(), bytes.as_slice());
            Outcome::Resume
        }
        Response::PowerOff => Outcome::Stop(Stop::Clean),
        Response::Reset => Outcome::Reset,
    }
}

/// PARTITA_COUNTER: counter `counter` of the configuration's VM `index`, if both exist.
fn counters_value(index: u64, counter: u64) -> Option<u64> {
    let vms = crate::system::get().bundle.config.vms.len();
    let index = usize::try_from(index).ok().filter(|&i| i < vms)?;
    counters::read(index, Counter::from_id(counter)?)
}
