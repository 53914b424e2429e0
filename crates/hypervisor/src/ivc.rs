//! Inter-VM channels at run time: their memory cleared once at boot, and the doorbells.
//!
//! A ring (PARTITA_IVC_RING) is judged by `partita_core::ivc::doorbell` on the ringing VM's
//! CPU, with that VM's own table of last rings (no lock). An accepted ring sets the
//! channel's bit in each peer's pending word and flags the peer's CPU; a peer on another
//! CPU is kicked with `DOORBELL_SGI`. Each CPU moves the pending bits of its own VMs into
//! their virtual GICs (`take`), so no CPU touches another's VM, and the only shared state
//! is these atomics. A ring can never reach a VM outside the channel.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use partita_core::config::SystemConfig;
use partita_core::hypercall::Ring;
use partita_core::ivc::doorbell::Doorbells;
use spin::Once;

use crate::arch::aarch64::entry::MAX_CPUS;
use crate::arch::aarch64::{gic, timer};
use crate::memory;

/// The SGI that tells a CPU a doorbell rang for one of its VMs.
pub const DOORBELL_SGI: u32 = 1;

struct Channels {
    doorbells: Doorbells,
    /// Per VM: its CPU.
    cpu_of: Vec<u8>,
    /// Per VM: bit `c` set when channel `c` rang it and its CPU has not delivered it yet.
    pending: Vec<AtomicU64>,
    /// Per CPU: some VM of it has pending doorbells.
    cpu_pending: [AtomicBool; MAX_CPUS],
}

static CHANNELS: Once<Channels> = Once::new();

/// Clears every channel's memory and sets the doorbells up (boot CPU, once, before any VM
/// is built).
pub fn init(config: &SystemConfig) {
    for channel in &config.channels {
        match channel.phys {
            Some(phys) => memory::clear(phys, channel.size),
            None => panic!("channel {}: no physical memory planned", channel.name),
        }
    }
    CHANNELS.call_once(|| Channels {
        doorbells: Doorbells::new(config, timer::frequency()),
        cpu_of: config
            .vms
            .iter()
            .map(|vm| vm.cpus.first().copied().unwrap_or(0))
            .collect(),
        pending: config.vms.iter().map(|_| AtomicU64::new(0)).collect(),
        cpu_pending: [const { AtomicBool::new(false) }; MAX_CPUS],
    });
}

/// How many channels the system has: the length of a VM's last-ring table.
pub fn channel_count() -> usize {
    CHANNELS.get().map_or(0, |c| c.doorbells.channels())
}

/// VM `caller` (on CPU `cpu`) rings `channel`; `last` is its table of last rings. The
/// second value is true when a peer on this same CPU was rung: the caller's scheduler must
/// deliver it now (`take`).
pub fn ring(caller: usize, cpu: u8, channel: u64, last: &mut [Option<u64>]) -> (Ring, bool) {
    let Some(c) = CHANNELS.get() else {
        return (Ring::NotMember, false);
    };
    let peers = match c.doorbells.ring(caller, channel, timer::now(), last) {
        Ok(peers) => peers,
        Err(refused) => return (refused, false),
    };
    let mut local = false;
    for peer in peers.iter() {
        let (Some(word), Some(&peer_cpu)) = (c.pending.get(peer), c.cpu_of.get(peer)) else {
            continue;
        };
        word.fetch_or(1 << channel, Ordering::Release);
        if let Some(flag) = c.cpu_pending.get(usize::from(peer_cpu)) {
            flag.store(true, Ordering::Release);
        }
        if peer_cpu == cpu {
            local = true;
        } else {
            gic::send_sgi(DOORBELL_SGI as u8, peer_cpu);
        }
    }
    (Ring::Rung, local)
}

/// Whether some VM of CPU `cpu` has doorbells waiting; clears the flag.
pub fn cpu_has_pending(cpu: u8) -> bool {
    CHANNELS
        .get()
        .and_then(|c| c.cpu_pending.get(usize::from(cpu)))
        .is_some_and(|flag| flag.swap(false, Ordering::Acquire))
}

/// Takes VM `vm`'s pending doorbells: bit `c` for channel `c`.
pub fn take(vm: usize) -> u64 {
    CHANNELS
        .get()
        .and_then(|c| c.pending.get(vm))
        .map_or(0, |word| word.swap(0, Ordering::Acquire))
}
