//! Inter-VM communication: channels of shared memory with doorbells (`docs/ivc.md`).
//!
//! `ring` is the message format both sides of a channel share; `doorbell` decides whom a
//! ring reaches and when a ring comes too soon; `memory` is a channel image in ordinary
//! memory for the host's tools and tests. Plain data and pure functions, host-tested
//! and fuzzed; the hypervisor maps the memory and injects the interrupts.

pub mod doorbell;
pub mod memory;
pub mod messages;
pub mod ring;
