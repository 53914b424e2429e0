//! Inter-VM channels: a region of physical memory shared by two or more named VMs, each
//! seeing it at its own guest-physical address with its own access (read-write or
//! read-only) and its own doorbell interrupt, and the rate at which one VM may ring the
//! others.
//!
//! The model and its rules live here: a channel's memory overlaps no VM's RAM and no other
//! channel, its size is a page multiple, its members are configured VMs named once, and each
//! member's window and doorbell fit beside the VM's RAM, devices, interrupts and other
//! channels. Stage 2, the doorbell hypercall and the device tree act on the validated
//! channels; this module never accepts a channel two VMs could see differently from what
//! the file says.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

use super::{
    check_physical, range, validate_name, ConfigError, SystemConfig, VmConfig, IPA_LIMIT, PAGE_SIZE,
};
use crate::board::{Board, Region};

/// Most VMs one channel joins: the doorbell hypercall rings every other member.
pub const MAX_MEMBERS: usize = 8;
/// Most channels a system has: a VM's pending doorbells are one bit per channel.
pub const MAX_CHANNELS: usize = 64;
/// The range of `ring_interval_us`: the shortest time between two rings of one VM on one
/// channel. One microsecond is about the cost of taking the interrupt; one second is the
/// slowest useful doorbell.
pub const MIN_RING_INTERVAL_US: u32 = 1;
pub const MAX_RING_INTERVAL_US: u32 = 1_000_000;
/// `ring_interval_us` when the file names none.
pub const DEFAULT_RING_INTERVAL_US: u32 = 10;

/// What a member VM may do with the channel's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Access {
    ReadWrite,
    ReadOnly,
}

impl Access {
    pub const ALL: [Access; 2] = [Access::ReadWrite, Access::ReadOnly];

    pub fn name(self) -> &'static str {
        match self {
            Access::ReadWrite => "rw",
            Access::ReadOnly => "ro",
        }
    }

    pub fn from_name(name: &str) -> Option<Access> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// One VM's view of a channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelMember {
    /// The VM's name.
    pub vm: String,
    /// Guest-physical address of the channel in that VM.
    pub base: u64,
    pub access: Access,
    /// The SPI INTID the VM's doorbell raises in its virtual GIC.
    pub irq: u32,
}

/// A region of memory shared by the VMs it names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelConfig {
    pub name: String,
    pub size: u64,
    /// Physical address backing the channel; `None` until `plan_memory` chooses it.
    pub phys: Option<u64>,
    /// The shortest time, in microseconds, between two rings of one member.
    pub ring_interval_us: u32,
    pub members: Vec<ChannelMember>,
}

impl ChannelConfig {
    pub fn physical(&self) -> Option<Region> {
        self.phys.map(|p| Region::new(p, self.size))
    }

    /// The member's guest-physical window.
    pub fn window(&self, member: &ChannelMember) -> Region {
        Region::new(member.base, self.size)
    }
}

/// A channel as one VM sees it: what stage 2 maps, the device tree describes and the
/// doorbell checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmChannel<'a> {
    /// The channel's index in the configuration: the id the doorbell hypercall takes.
    pub id: usize,
    /// The VM's position among the channel's members (the ring layout of `docs/ivc.md`).
    pub member: usize,
    /// How many VMs the channel joins.
    pub members: usize,
    pub name: &'a str,
    pub window: Region,
    pub phys: Option<u64>,
    pub access: Access,
    pub irq: u32,
}

impl SystemConfig {
    /// The channels VM `name` is a member of, in configuration order.
    pub fn channels_of<'a>(&'a self, name: &str) -> Vec<VmChannel<'a>> {
        let mut found = Vec::new();
        for (id, c) in self.channels.iter().enumerate() {
            for (member, m) in c.members.iter().enumerate().filter(|(_, m)| m.vm == name) {
                found.push(VmChannel {
                    id,
                    member,
                    members: c.members.len(),
                    name: &c.name,
                    window: c.window(m),
                    phys: c.phys,
                    access: m.access,
                    irq: m.irq,
                });
            }
        }
        found
    }
}

pub(super) fn validate(cfg: &SystemConfig, board: &Board) -> Result<(), ConfigError> {
    if cfg.channels.len() > MAX_CHANNELS {
        return Err(ConfigError::new(
            format!("channel[{MAX_CHANNELS}]"),
            format!("more than {MAX_CHANNELS} channels: a VM's pending doorbells are one bit per channel"),
        ));
    }
    for (c, channel) in cfg.channels.iter().enumerate() {
        shape(cfg, c, channel)?;
        physical(cfg, board, c, channel)?;
        for (j, member) in channel.members.iter().enumerate() {
            window(cfg, board, c, j, member)?;
            doorbell(cfg, board, c, j, member)?;
        }
    }
    Ok(())
}

/// Name, size, interval and the member list itself.
fn shape(cfg: &SystemConfig, c: usize, channel: &ChannelConfig) -> Result<(), ConfigError> {
    let key = |k: &str| format!("channel[{c}].{k}");
    validate_name(&channel.name).map_err(|m| ConfigError::new(key("name"), m))?;
    if let Some(k) = cfg.channels[..c]
        .iter()
        .position(|o| o.name == channel.name)
    {
        return Err(ConfigError::new(
            key("name"),
            format!("\"{}\" is already the name of channel[{k}]", channel.name),
        ));
    }
    if channel.size == 0 || !channel.size.is_multiple_of(PAGE_SIZE) {
        return Err(ConfigError::new(
            key("size"),
            format!("{:#x} is not a multiple of 4 KiB", channel.size),
        ));
    }
    let interval = channel.ring_interval_us;
    if !(MIN_RING_INTERVAL_US..=MAX_RING_INTERVAL_US).contains(&interval) {
        return Err(ConfigError::new(
            key("ring_interval_us"),
            format!(
                "{interval} is out of range: {MIN_RING_INTERVAL_US} to {MAX_RING_INTERVAL_US} microseconds"
            ),
        ));
    }
    let members = channel.members.len();
    if !(2..=MAX_MEMBERS).contains(&members) {
        return Err(ConfigError::new(
            key("vm"),
            format!("{members} VM(s): a channel joins 2 to {MAX_MEMBERS} VMs"),
        ));
    }
    for (j, m) in channel.members.iter().enumerate() {
        let name_key = format!("channel[{c}].vm[{j}].name");
        if !cfg.vms.iter().any(|vm| vm.name == m.vm) {
            return Err(ConfigError::new(
                name_key,
                format!("no VM is named \"{}\"", m.vm),
            ));
        }
        if let Some(k) = channel.members[..j].iter().position(|o| o.vm == m.vm) {
            return Err(ConfigError::new(
                name_key,
                format!(
                    "\"{}\" is already channel[{c}].vm[{k}]: a VM joins a channel once",
                    m.vm
                ),
            ));
        }
    }
    if channel.members.iter().all(|m| m.access == Access::ReadOnly) {
        return Err(ConfigError::new(
            key("vm"),
            "every member is \"ro\": no VM could write the channel",
        ));
    }
    Ok(())
}

/// The backing memory: planned, aligned, in RAM, clear of Partita, every VM and every
/// earlier channel.
fn physical(
    cfg: &SystemConfig,
    board: &Board,
    c: usize,
    channel: &ChannelConfig,
) -> Result<(), ConfigError> {
    let key = format!("channel[{c}].phys");
    let Some(phys) = channel.physical() else {
        return Err(ConfigError::new(key, "no physical memory was planned"));
    };
    check_physical(board, &phys, || key.clone())?;
    for (i, vm) in cfg.vms.iter().enumerate() {
        for (j, m) in vm.memory.iter().enumerate() {
            if m.physical().is_some_and(|r| r.overlaps(&phys)) {
                return Err(ConfigError::new(
                    key,
                    format!(
                        "physical range {} overlaps vm[{i}].memory[{j}]: a channel is never a VM's RAM",
                        range(&phys)
                    ),
                ));
            }
        }
    }
    if let Some(k) = cfg.channels[..c]
        .iter()
        .position(|o| o.physical().is_some_and(|r| r.overlaps(&phys)))
    {
        return Err(ConfigError::new(
            key,
            format!("physical range {} overlaps channel[{k}]", range(&phys)),
        ));
    }
    Ok(())
}

/// The member's guest-physical window: aligned, in the 39-bit space, clear of the VM's RAM,
/// devices, virtual GIC and earlier channels.
fn window(
    cfg: &SystemConfig,
    board: &Board,
    c: usize,
    j: usize,
    member: &ChannelMember,
) -> Result<(), ConfigError> {
    let key = format!("channel[{c}].vm[{j}].base");
    let channel = &cfg.channels[c];
    let w = channel.window(member);
    if !w.base.is_multiple_of(PAGE_SIZE) {
        return Err(ConfigError::new(
            key,
            format!("{:#x} is not aligned to 4 KiB", w.base),
        ));
    }
    if !Region::new(0, IPA_LIMIT).contains(&w) {
        return Err(ConfigError::new(
            key,
            format!(
                "guest range {} is beyond the 39-bit guest-physical space",
                range(&w)
            ),
        ));
    }
    let Some((i, vm)) = member_vm(cfg, member) else {
        return Ok(());
    };
    let clash = |what: String| {
        ConfigError::new(
            key.clone(),
            format!("channel window {} overlaps {what}", range(&w)),
        )
    };
    if let Some(k) = vm.memory.iter().position(|m| m.guest().overlaps(&w)) {
        return Err(clash(format!("vm[{i}].memory[{k}]")));
    }
    if let Some(k) = vm.devices.iter().position(|d| d.window().overlaps(&w)) {
        return Err(clash(format!("vm[{i}].device[{k}]")));
    }
    if board
        .gic
        .guest_windows(vm.cpus.len().max(1))
        .iter()
        .any(|g| g.overlaps(&w))
    {
        return Err(clash(String::from("the virtual GIC")));
    }
    if let Some(other) = cfg
        .channels_of(&vm.name)
        .into_iter()
        .take_while(|o| o.id < c)
        .find(|o| o.window.overlaps(&w))
    {
        return Err(clash(format!(
            "channel[{}] in vm[{i}] ({})",
            other.id,
            range(&other.window)
        )));
    }
    Ok(())
}

/// The VM a member names, with its index; `None` for an unknown name (refused elsewhere).
fn member_vm<'a>(cfg: &'a SystemConfig, member: &ChannelMember) -> Option<(usize, &'a VmConfig)> {
    cfg.vms
        .iter()
        .enumerate()
        .find(|(_, vm)| vm.name == member.vm)
}

/// The member's doorbell: an SPI the VM uses for nothing else.
fn doorbell(
    cfg: &SystemConfig,
    board: &Board,
    c: usize,
    j: usize,
    member: &ChannelMember,
) -> Result<(), ConfigError> {
    let key = format!("channel[{c}].vm[{j}].irq");
    let irq = member.irq;
    let last = 32 + board.spis - 1;
    if !(32..=last).contains(&irq) {
        return Err(ConfigError::new(
            key,
            format!(
                "{irq} is not a shared peripheral interrupt of {} (32 to {last})",
                board.platform.name()
            ),
        ));
    }
    let Some((i, vm)) = member_vm(cfg, member) else {
        return Ok(());
    };
    let used = |what: String| {
        ConfigError::new(
            key.clone(),
            format!("interrupt {irq} is already used by {what}"),
        )
    };
    if let Some(k) = vm.devices.iter().position(|d| d.irq() == Some(irq)) {
        return Err(used(format!("vm[{i}].device[{k}]")));
    }
    if let Some(k) = vm.irqs.iter().position(|&o| o == irq) {
        return Err(used(format!("vm[{i}].irqs[{k}]")));
    }
    if let Some(other) = cfg
        .channels_of(&vm.name)
        .into_iter()
        .take_while(|o| o.id < c)
        .find(|o| o.irq == irq)
    {
        return Err(used(format!(
            "the doorbell of channel[{}] in vm[{i}]",
            other.id
        )));
    }
    Ok(())
}

/// Chooses physical memory for every channel that names none: first fit above everything
/// already taken, page aligned (a channel is mapped with pages, never shared blocks).
pub(super) fn plan(
    channels: &mut [ChannelConfig],
    board: &Board,
    taken: &mut Vec<Region>,
) -> Result<(), ConfigError> {
    for (c, channel) in channels.iter_mut().enumerate() {
        if channel.phys.is_some() || channel.size == 0 {
            continue;
        }
        let phys =
            super::first_fit(board.ram, taken, channel.size, PAGE_SIZE).ok_or_else(|| {
                ConfigError::new(
                    format!("channel[{c}].size"),
                    format!(
                        "no free physical memory for {:#x} bytes (RAM is {})",
                        channel.size,
                        board.ram_ranges()
                    ),
                )
            })?;
        channel.phys = Some(phys);
        taken.push(Region::new(phys, channel.size));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{two_vms_on_cpu0, validated};
    use super::*;
    use alloc::vec;

    fn with_channel(explicit_phys: Option<u64>) -> SystemConfig {
        let mut cfg = two_vms_on_cpu0();
        let member = |vm: &str, access| ChannelMember {
            vm: vm.into(),
            base: 0x3000_0000,
            access,
            irq: 64,
        };
        cfg.channels = vec![ChannelConfig {
            name: "link".into(),
            size: 0x1_0000,
            phys: explicit_phys,
            ring_interval_us: DEFAULT_RING_INTERVAL_US,
            members: vec![
                member("a", Access::ReadWrite),
                member("b", Access::ReadOnly),
            ],
        }];
        cfg
    }

    #[test]
    fn a_channel_gets_memory_of_its_own_and_each_member_its_view() {
        let cfg = validated(with_channel(None)).unwrap();
        let phys = cfg.channels[0].physical().unwrap();
        assert!(phys.base.is_multiple_of(PAGE_SIZE));
        for vm in &cfg.vms {
            assert!(!vm
                .memory
                .iter()
                .any(|m| m.physical().unwrap().overlaps(&phys)));
        }
        let a = cfg.channels_of("a");
        let b = cfg.channels_of("b");
        assert_eq!((a.len(), b.len()), (1, 1));
        assert_eq!((a[0].member, b[0].member, b[0].members), (0, 1, 2));
        assert_eq!(
            (a[0].access, b[0].access),
            (Access::ReadWrite, Access::ReadOnly)
        );
        assert_eq!(a[0].phys, b[0].phys);
        assert_eq!(a[0].window, Region::new(0x3000_0000, 0x1_0000));
        assert!(cfg.channels_of("c").is_empty());
    }

    #[test]
    fn vm_memory_is_planned_around_an_explicit_channel() {
        let first_vm = validated(two_vms_on_cpu0()).unwrap().vms[0].memory[0]
            .phys
            .unwrap();
        let cfg = validated(with_channel(Some(first_vm))).unwrap();
        assert_eq!(cfg.channels[0].phys, Some(first_vm));
        assert_ne!(cfg.vms[0].memory[0].phys, Some(first_vm));
    }
}
