//! Partita's portable logic.
//!
//! Everything here is plain data and pure functions: the system configuration model and its
//! validation, the board descriptions, the bundle format that carries the configuration and
//! the guest images into the hypervisor, trap decoding and the emulated device models. It is
//! `no_std` so the EL2 hypervisor links it, and it is unit-tested on the host with
//! `cargo test`. It must never touch hardware: registers, memory-mapped I/O and `unsafe` live
//! in the hypervisor crate.
#![no_std]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod accel;
pub mod board;
pub mod boot;
pub mod bundle;
pub mod config;
pub mod console;
pub mod counters;
pub mod devices;
pub mod fdt;
pub mod hypercall;
pub mod ivc;
pub mod sched;
#[cfg(test)]
mod test_rng;
pub mod trap;
pub mod vgic;
