//! Physical CPUs: starting the secondaries the configuration uses and each CPU's run loop.
//!
//! Issue 2 runs one VM per physical CPU: a CPU builds the VMs assigned to it and runs them one
//! after the other (validation refuses two VMs on one CPU). A CPU owns its VMs outright, so no
//! VM state is shared between CPUs. A CPU with nothing (left) to run parks in WFI and only
//! serves the interrupts it still owns (CPU 0 keeps reading console input for the VMs on
//! other CPUs); it must never touch another CPU's VM.

use alloc::vec::Vec;

use partita_core::board::Board;

use crate::arch::aarch64::entry::MAX_CPUS;
use crate::arch::aarch64::{gic, psci};
use crate::irq;
use crate::println;
use crate::system::{self, System};
use crate::vm::Vm;

/// MPIDR affinity of CPU `cpu` on QEMU virt (Aff0 = index, one cluster for up to 8 CPUs).
fn mpidr_of(cpu: usize) -> u64 {
    cpu as u64
}

/// Starts every configured CPU other than the boot CPU.
pub fn start_secondaries(system: &System) {
    let cpus = usize::from(system.bundle.config.board.cpus);
    for cpu in 1..cpus.min(MAX_CPUS) {
        if let Err(e) = psci::cpu_on(mpidr_of(cpu), cpu) {
            panic!("PSCI CPU_ON of CPU {cpu} failed: {e:?}");
        }
    }
}

/// Runs the VMs assigned to `cpu`, then parks.
pub fn run(cpu: usize) -> ! {
    let system = system::get();
    let mine: Vec<usize> = system
        .bundle
        .config
        .vms
        .iter()
        .enumerate()
        .filter(|(_, vm)| vm.cpus.first().map(|&c| usize::from(c)) == Some(cpu))
        .map(|(i, _)| i)
        .collect();
    if cpu != 0 {
        println!("CPU {cpu} up");
    }
    let board = system.bundle.config.board.platform.board();
    gic::init_cpu(board);
    irq::enable_for_vms(board, cpu);
    for index in mine {
        let mut vm = Vm::build(system, index);
        let how = vm.run();
        system.vm_stopped(how);
    }
    park(board, cpu)
}

fn park(board: &Board, cpu: usize) -> ! {
    loop {
        aarch64_cpu::asm::wfi();
        irq::handle_idle(board, cpu as u8);
    }
}
