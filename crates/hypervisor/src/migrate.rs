//! vCPU migration between physical CPUs (a VM's `migrate` option, docs/smp.md): a CPU hands
//! a whole vCPU (`Vm`, the per-CPU half) to another CPU through that CPU's inbox and kicks it
//! with `VCPU_KICK_SGI`. The handover moves ownership: at any time exactly one CPU holds a
//! vCPU, so the rule that a CPU touches only the vCPUs it holds is kept. This module decides
//! nothing: the schedulers choose when a vCPU leaves and when it comes back.

use alloc::vec::Vec;

use crate::lock::Mutex;

use crate::arch::aarch64::entry::MAX_CPUS;
use crate::arch::aarch64::gic;
use crate::vm::{Vm, VCPU_KICK_SGI};

/// Per CPU: the vCPUs handed to it and not yet taken.
static INBOX: [Mutex<Vec<Vm>>; MAX_CPUS] = [const { Mutex::new(Vec::new()) }; MAX_CPUS];

/// Hands `vm` (a vCPU switched out and removed from this CPU's run queue) to CPU `cpu`.
pub fn send(vm: Vm, cpu: u8) {
    let Some(inbox) = INBOX.get(usize::from(cpu)) else {
        panic!("migration to CPU {cpu}, which does not exist");
    };
    vm.moved_to(cpu);
    vm.mark_kicked();
    inbox.lock().push(vm);
    gic::send_sgi(VCPU_KICK_SGI as u8, cpu);
}

/// The vCPUs handed to CPU `cpu` since it last looked.
pub fn receive(cpu: u8) -> Vec<Vm> {
    INBOX
        .get(usize::from(cpu))
        .map(|inbox| core::mem::take(&mut *inbox.lock()))
        .unwrap_or_default()
}
