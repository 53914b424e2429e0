//! Partita, the EL2 hypervisor binary.
//!
//! Boot order on CPU 0: the assembly entry (`arch::aarch64::entry`) clears the FP traps,
//! zeroes .bss and sets the stack; `primary_main` then turns on Partita's own MMU, installs
//! the exception vectors, starts the heap, reads the bundle the host tool appended to the
//! image, starts the other CPUs the configuration uses and runs CPU 0's VMs. Every CPU runs
//! the VMs assigned to it (`cpu::run`). This crate is the thin hardware shell over
//! `partita-core`: policy and decoding live there.
#![no_std]
#![no_main]

extern crate alloc;

mod arch;
mod beat;
mod board;
mod console;
mod counters;
mod cpu;
mod devices;
mod fabric;
mod heap;
mod hypercall;
mod inject;
mod input;
mod ivc;
mod lock;
mod memory;
mod migrate;
mod panic;
mod scheduler;
mod seed;
mod short_exit;
mod system;
mod trap;
mod uart;
mod uart_exit;
mod vcpu;
mod vgic;
mod vm;

/// Rust entry of the boot CPU, called once by `entry.rs` with a stack and a zeroed .bss;
/// `dtb` is the firmware's device tree (x0 at entry).
#[no_mangle]
extern "C" fn primary_main(dtb: u64) -> ! {
    arch::aarch64::entry::set_cpu_index();
    let board = board::BOARD;
    arch::aarch64::mmu::build_and_enable();
    arch::aarch64::vectors::install();
    seed::init(dtb, board.ram);
    heap::init();
    console::init_uart();
    println!("Partita {} starting", env!("CARGO_PKG_VERSION"));
    let system = system::init();
    let configured = system.bundle.config.board.platform;
    if configured != board.platform {
        panic!(
            "the configuration is for board {}, but this Partita is built for {}",
            configured.name(),
            board.name
        );
    }
    arch::aarch64::gic::init_distributor(board);
    input::init(&system.bundle.config);
    ivc::init(&system.bundle.config);
    fabric::init(&system.bundle.config, seed::fabric_key());
    cpu::start_secondaries(system);
    cpu::run(0)
}

/// Rust entry of a secondary CPU started with PSCI CPU_ON; `cpu` is its index.
#[no_mangle]
extern "C" fn secondary_main(cpu: usize) -> ! {
    arch::aarch64::entry::set_cpu_index();
    arch::aarch64::mmu::enable();
    arch::aarch64::vectors::install();
    cpu::run(cpu)
}
