//! Doorbell routing: which VMs a ring reaches and the rate rule that keeps a VM ringing in
//! a loop from becoming an interrupt storm on its peers.
//!
//! `Doorbells` is built once from the validated configuration. A ring names a channel id
//! (guest input: any 64-bit value); it is accepted only from a member of that channel, at
//! most once per `ring_interval_us` per member, and then reaches every other member. The
//! time of a member's last accepted ring is kept by the caller (the ringing VM's CPU owns
//! it), so nothing here is shared between CPUs. Nothing here panics on what a guest passes.

use alloc::vec::Vec;

use crate::config::{SystemConfig, MAX_MEMBERS};
use crate::hypercall::Ring;

/// One channel's members (configuration indices of VMs) and its interval in counter ticks.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Route {
    members: Vec<usize>,
    interval: u64,
}

/// The doorbell routes of a system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Doorbells {
    routes: Vec<Route>,
    /// Counter ticks per second, for the rate rule and the wait reported in nanoseconds.
    frequency: u64,
}

/// The VMs (configuration indices) a ring reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peers {
    vms: [usize; MAX_MEMBERS],
    count: usize,
}

impl Peers {
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.vms[..self.count].iter().copied()
    }
}

impl Doorbells {
    /// The routes of `cfg`'s channels, timed by a counter of `frequency` Hz. A channel
    /// member naming no VM (impossible after validation) is left out.
    pub fn new(cfg: &SystemConfig, frequency: u64) -> Self {
        let routes = cfg
            .channels
            .iter()
            .map(|c| Route {
                members: c
                    .members
                    .iter()
                    .filter_map(|m| cfg.vms.iter().position(|vm| vm.name == m.vm))
                    .take(MAX_MEMBERS)
                    .collect(),
                interval: u64::from(c.ring_interval_us).saturating_mul(frequency) / 1_000_000,
            })
            .collect();
        Doorbells { routes, frequency }
    }

    /// How many channels there are: the length of a VM's last-ring table.
    pub fn channels(&self) -> usize {
        self.routes.len()
    }

    /// VM `caller` rings `channel` at counter value `now`; `last` is the caller's table of
    /// last accepted rings, one entry per channel (`channels()` long). On success the
    /// caller's entry is updated and the peers to interrupt are returned.
    pub fn ring(
        &self,
        caller: usize,
        channel: u64,
        now: u64,
        last: &mut [Option<u64>],
    ) -> Result<Peers, Ring> {
        let id = usize::try_from(channel).map_err(|_| Ring::NotMember)?;
        let route = self.routes.get(id).ok_or(Ring::NotMember)?;
        if !route.members.contains(&caller) {
            return Err(Ring::NotMember);
        }
        let slot = last.get_mut(id).ok_or(Ring::NotMember)?;
        if let Some(at) = *slot {
            let since = now.wrapping_sub(at);
            if since < route.interval {
                let ticks = route.interval - since;
                let wait_ns =
                    (u128::from(ticks) * 1_000_000_000).div_ceil(u128::from(self.frequency.max(1)));
                return Err(Ring::TooSoon {
                    wait_ns: u64::try_from(wait_ns).unwrap_or(u64::MAX),
                });
            }
        }
        *slot = Some(now);
        let mut peers = Peers {
            vms: [0; MAX_MEMBERS],
            count: 0,
        };
        for &vm in route.members.iter().filter(|&&vm| vm != caller) {
            peers.vms[peers.count] = vm;
            peers.count += 1;
        }
        Ok(peers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::two_vms_on_cpu0;
    use crate::config::{Access, ChannelConfig, ChannelMember};
    use alloc::string::String;
    use alloc::vec;

    fn system() -> SystemConfig {
        let mut cfg = two_vms_on_cpu0();
        let member = |vm: &str| ChannelMember {
            vm: vm.into(),
            base: 0x5000_0000,
            access: Access::ReadWrite,
            irq: 64,
        };
        let names: Vec<String> = cfg.vms.iter().map(|vm| vm.name.clone()).collect();
        cfg.channels = vec![ChannelConfig {
            name: "c".into(),
            size: 0x1000,
            phys: None,
            ring_interval_us: 10,
            members: vec![member(&names[0]), member(&names[1])],
        }];
        cfg
    }

    #[test]
    fn a_member_rings_the_others_once_per_interval() {
        // 62.5 MHz: 10 us is 625 ticks.
        let doorbells = Doorbells::new(&system(), 62_500_000);
        let mut last = vec![None; doorbells.channels()];
        let peers = doorbells.ring(0, 0, 1000, &mut last).unwrap();
        assert_eq!(peers.iter().collect::<Vec<_>>(), [1]);
        assert_eq!(last, [Some(1000)]);
        assert_eq!(
            doorbells.ring(0, 0, 1100, &mut last),
            Err(Ring::TooSoon { wait_ns: 8400 })
        );
        assert_eq!(last, [Some(1000)]);
        assert!(doorbells.ring(0, 0, 1625, &mut last).is_ok());
        let mut other = vec![None; 1];
        assert_eq!(
            doorbells
                .ring(1, 0, 1625, &mut other)
                .unwrap()
                .iter()
                .collect::<Vec<_>>(),
            [0]
        );
    }

    #[test]
    fn strangers_and_unknown_channels_are_refused() {
        let doorbells = Doorbells::new(&system(), 62_500_000);
        let mut last = vec![None; 1];
        assert_eq!(doorbells.ring(2, 0, 0, &mut last), Err(Ring::NotMember));
        assert_eq!(doorbells.ring(0, 1, 0, &mut last), Err(Ring::NotMember));
        assert_eq!(
            doorbells.ring(0, u64::MAX, 0, &mut last),
            Err(Ring::NotMember)
        );
        assert_eq!(doorbells.ring(0, 0, 0, &mut []), Err(Ring::NotMember));
        assert_eq!(last, [None]);
    }
}
