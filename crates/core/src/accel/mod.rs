//! Reconfigurable accelerators shared by VMs of different priorities: Ker-ONE's manager
//! (Xia et al., sections 4 and 6) on Arm's stage 2 (`docs/accelerators.md`).
//!
//! `interface` is the register page a VM sees for each accelerator it may use (Table 1) and
//! the context a preempted task leaves in it; `prr` the state machine of a reconfigurable
//! region (Fig. 7); `policy` the replaceable choice of a solution for a request; `manager`
//! the allocator that turns requests and fabric events into actions (connect, disconnect,
//! save, reconfigure, signal); `functions` the accelerator functions of the OFDM experiment
//! (QAM-16/64 mapping, FFT-512/1024), integer-only so EL2 can run them; `timing` the time
//! model (reconfiguration and frame times, the WCET bound of eq. 5-8). Plain data and pure
//! functions, host-tested and fuzzed; the hypervisor maps pages and runs the fabric.

pub mod functions;
pub mod interface;
pub mod job;
pub mod manager;
pub mod policy;
pub mod prr;
pub mod timing;

/// A VM, by its index in the configuration.
pub type VmId = u8;
/// An accelerator ("virtual device"), by its index in the configuration.
pub type DevId = u8;
/// A partially reconfigurable region, by its index in the configuration.
pub type PrrId = u8;
