//! Physical CPUs: starting the secondaries the configuration uses and each CPU's run loop.
//!
//! A CPU builds every VM whose vCPU 0 is placed on it before it starts any (building a large
//! VM zeroes and cleans its memory, which would otherwise delay the first one), publishes
//! them for the CPUs of their other vCPUs, takes its other vCPUs of VMs built elsewhere, and
//! hands them all to its scheduler. A CPU owns its vCPUs outright; what a VM's vCPUs share
//! is `vm::Shared`. A CPU with nothing (left) to run parks in WFI and only
//! serves the interrupts it still owns (CPU 0 keeps reading console input for the VMs on
//! other CPUs); it must never touch another CPU's VM.

use alloc::vec::Vec;

use partita_core::board::Board;
use partita_core::config::TimerMode;

use crate::arch::aarch64::entry::MAX_CPUS;
use crate::arch::aarch64::{gic, psci, timer};
use crate::board::BOARD;
use crate::println;
use crate::scheduler::{self, CpuScheduler};
use crate::system::{self, System};
use crate::vcpu::PhysicalTimer;
use crate::vm::Vm;

/// MPIDR affinity of CPU `cpu`, as the board describes it.
fn mpidr_of(cpu: usize) -> u64 {
    BOARD.cpus[cpu]
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

/// Runs the vCPUs placed on `cpu` until their VMs have all stopped, then parks.
pub fn run(cpu: usize) -> ! {
    let system = system::get();
    let config = &system.bundle.config;
    // (VM index, vCPU index) of every vCPU placed here.
    let mine: Vec<(usize, usize)> = config
        .vms
        .iter()
        .enumerate()
        .filter_map(|(i, vm)| {
            let vcpu = vm.cpus.iter().position(|&c| usize::from(c) == cpu)?;
            Some((i, vcpu))
        })
        .collect();
    if cpu != 0 {
        println!("CPU {cpu} up");
    }
    let board = config.board.platform.board();
    gic::init_cpu(board, cpu);
    // The fabric CPU times Table 4's parts with the counters' clock too.
    crate::counters::init_cpu();
    crate::vcpu::init_cpu();
    if crate::fabric::is_fabric_cpu(cpu) {
        crate::fabric::run(board);
    }
    scheduler::enable_for_vms(board, cpu);
    let owner = mine
        .iter()
        .map(|&(i, _)| i)
        .find(|&i| config.vms[i].timer == TimerMode::Physical);
    if owner.is_some() {
        timer::physical_owned();
    }
    let timer_of = |index: usize| match owner {
        Some(o) if o == index => PhysicalTimer::Owned,
        Some(_) => PhysicalTimer::Trapped,
        None => PhysicalTimer::Switched { ctl: 0, cval: 0 },
    };
    // First the VMs whose vCPU 0 is here (built here and published), then the other
    // vCPUs, whose VMs another CPU builds.
    let mut vms: Vec<Vm> = Vec::new();
    for &(index, _) in mine.iter().filter(|&&(_, vcpu)| vcpu == 0) {
        let vm = Vm::build(system, index, timer_of(index));
        system.publish(index, vm.shared());
        vms.push(vm);
    }
    for &(index, vcpu) in mine.iter().filter(|&&(_, vcpu)| vcpu != 0) {
        vms.push(Vm::join(system.wait_built(index), vcpu, timer_of(index)));
    }
    if !vms.is_empty() {
        CpuScheduler::new(system, cpu as u8, vms).run();
    }
    park(board, cpu)
}

fn park(board: &Board, cpu: usize) -> ! {
    loop {
        aarch64_cpu::asm::wfi();
        scheduler::handle_idle(board, cpu as u8);
    }
}
