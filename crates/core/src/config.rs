//! The system configuration: the same types on the host (parsed from TOML by the host tool)
//! and in the hypervisor (decoded from the bundle).
//!
//! `validate` checks every rule that does not need the file system, and `plan_memory` places
//! the VM memory regions that name no physical address. Both report a `ConfigError` that
//! names the key (`vm[1].memory[0].size`) and the problem; the host tool adds the file name.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use serde::{Deserialize, Serialize};

use crate::board::{Board, Platform, Region};
use crate::boot::KernelHeader;

mod channel;
mod fabric;
mod placement;

pub use channel::{
    Access, ChannelConfig, ChannelMember, VmChannel, DEFAULT_RING_INTERVAL_US, MAX_CHANNELS,
    MAX_MEMBERS, MAX_RING_INTERVAL_US, MIN_RING_INTERVAL_US,
};
pub use fabric::{
    AcceleratorConfig, BitstreamConfig, FabricConfig, RegionConfig, DEFAULT_GUEST_BEAT_US,
    DEFAULT_HOLD_US, DEFAULT_RECONFIG_BYTES_PER_US, MAX_HOLD_US,
};
pub use placement::{
    default_timer_advance_ns, MAX_SLICE_US, MAX_TIMER_ADVANCE_NS, MIN_SLICE_US,
    RTOS_TIMER_ADVANCE_NS,
};

/// Largest guest-physical address + 1: Partita gives every VM a 39-bit IPA space (a stage-2
/// walk from level 1 without concatenated tables, which every ARMv8-A CPU with 40-bit
/// physical addresses, Cortex-A53 included, can take).
pub const IPA_LIMIT: u64 = 1 << 39;
/// Granule of every memory region and device window.
pub const PAGE_SIZE: u64 = 0x1000;
/// Longest VM name (it tags every console line).
pub const MAX_NAME_LEN: usize = 16;
/// Room kept at the end of a VM's first memory region for its generated device tree.
pub const DTB_SIZE: u64 = 0x1_0000;
/// The longest `bootargs`, in bytes: Linux's arm64 command line holds 2,048 bytes with its
/// terminating NUL, and the generated device tree must stay within `DTB_SIZE`.
pub const MAX_BOOTARGS: usize = 2047;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemConfig {
    pub board: BoardConfig,
    pub vms: Vec<VmConfig>,
    pub console: ConsoleConfig,
    /// Memory shared between named VMs, with their doorbells.
    pub channels: Vec<ChannelConfig>,
    /// The reconfigurable fabric and its accelerators (`docs/accelerators.md`).
    pub fabric: Option<FabricConfig>,
}

/// How the physical console starts (`crate::console`), and where the host keeps each VM's
/// whole output.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleConfig {
    /// What the terminal shows at start.
    pub view: ConsoleView,
    /// The host folder where Partita writes each VM's output as `<name>.log` through
    /// semihosting. The host tool sets it for the runs it starts on QEMU; it is not a key of
    /// the configuration file.
    pub log_dir: Option<String>,
}

/// What the terminal shows at start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConsoleView {
    /// The VM that gets console input, byte for byte; the others' lines wait in their
    /// history until they are shown.
    #[default]
    Focus,
    /// Every VM's lines, tagged with its name.
    All,
}

impl ConsoleView {
    pub const ALL: [ConsoleView; 2] = [ConsoleView::Focus, ConsoleView::All];

    pub fn name(self) -> &'static str {
        match self {
            ConsoleView::Focus => "focus",
            ConsoleView::All => "all",
        }
    }

    pub fn from_name(name: &str) -> Option<ConsoleView> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardConfig {
    pub platform: Platform,
    /// Number of physical CPUs Partita brings up, CPU 0 included.
    pub cpus: u8,
    /// The round-robin slice of VMs that share a CPU at one priority, in microseconds.
    pub slice_us: u32,
}

/// What a VM is for; it decides defaults such as scheduling priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum VmKind {
    /// A real-time OS: runs first, keeps its timing.
    Rtos,
    /// A general-purpose OS: runs in the background.
    Gpos,
}

impl VmKind {
    pub const ALL: [VmKind; 2] = [VmKind::Rtos, VmKind::Gpos];

    pub fn name(self) -> &'static str {
        match self {
            VmKind::Rtos => "rtos",
            VmKind::Gpos => "gpos",
        }
    }

    pub fn from_name(name: &str) -> Option<VmKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmConfig {
    pub name: String,
    pub kind: VmKind,
    /// Higher runs first.
    pub priority: u8,
    /// Physical CPUs the VM's vCPUs run on, one vCPU each.
    pub cpus: Vec<u8>,
    pub memory: Vec<MemoryRegion>,
    pub image: ImageConfig,
    /// An initial RAM disk for a Linux kernel, placed below the device tree.
    pub initrd: Option<InitrdConfig>,
    pub bootargs: String,
    pub devices: Vec<DeviceConfig>,
    /// What a PSCI SYSTEM_RESET from the VM does.
    pub on_reset: ResetAction,
    /// What Partita does when the VM faults in a way it cannot reflect back into it.
    pub on_fault: EndAction,
    /// What a PSCI SYSTEM_OFF (or CPU_OFF of its only vCPU) from the VM does.
    pub on_poweroff: EndAction,
    /// Which EL1 timer the VM keeps time with.
    pub timer: TimerMode,
    /// The VM's lines of the interrupt destination table: physical SPIs it owns, forwarded
    /// to the same INTID in its virtual GIC.
    pub irqs: Vec<u32>,
    /// A vCPU preempted at EL1 by a higher-priority VM on its CPU moves to the CPU of
    /// another of its VM's vCPUs until its own CPU idles (docs/smp.md).
    pub migrate: bool,
    /// How long before its virtual timer's deadline a blocked vCPU of the VM takes its CPU
    /// back from a lower-priority VM (0: at the deadline), so that the deadline finds it
    /// loaded and waiting at EL2 (`timer_advance_ns`, docs/configuration.md).
    pub timer_advance_ns: u32,
}

/// Which EL1 timer a VM keeps time with, and how Partita treats it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimerMode {
    /// The virtual timer (CNTV), switched with the vCPU; while the vCPU is descheduled its
    /// deadline is kept on Partita's EL2 timer.
    Virtual,
    /// The EL1 physical timer (CNTP) exclusively (Ker-ONE's timer pass-through): never
    /// switched, its interrupt (PPI 30) forwarded straight to the VM. One VM per CPU, an RTOS.
    Physical,
}

impl TimerMode {
    pub const ALL: [TimerMode; 2] = [TimerMode::Virtual, TimerMode::Physical];

    pub fn name(self) -> &'static str {
        match self {
            TimerMode::Virtual => "virtual",
            TimerMode::Physical => "physical",
        }
    }

    pub fn from_name(name: &str) -> Option<TimerMode> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What Partita does when a VM asks for SYSTEM_RESET.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResetAction {
    /// Rebuild the VM from its images and start it again.
    Restart,
    /// Stop the VM as faulted: a Linux booted with `panic=-1` resets on a kernel panic, so
    /// this makes a panic end the run with a failure status.
    Fault,
}

impl ResetAction {
    pub const ALL: [ResetAction; 2] = [ResetAction::Restart, ResetAction::Fault];

    pub fn name(self) -> &'static str {
        match self {
            ResetAction::Restart => "restart",
            ResetAction::Fault => "fault",
        }
    }

    pub fn from_name(name: &str) -> Option<ResetAction> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// What Partita does when a boot of a VM ends, by a fault or by the guest's own power-off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EndAction {
    /// The VM stops for good (as faulted after a fault, cleanly after a power-off); the
    /// other VMs keep running.
    Stop,
    /// Rebuild the VM from its images and start it again, exactly as after SYSTEM_RESET.
    Restart,
}

impl EndAction {
    pub const ALL: [EndAction; 2] = [EndAction::Stop, EndAction::Restart];

    pub fn name(self) -> &'static str {
        match self {
            EndAction::Stop => "stop",
            EndAction::Restart => "restart",
        }
    }

    pub fn from_name(name: &str) -> Option<EndAction> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// An initial RAM disk: the host file and its size, filled in by the host tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitrdConfig {
    /// Host path as written in the configuration (for messages only).
    pub path: String,
    pub size: u64,
}

/// A piece of guest RAM: `size` bytes at guest-physical `base`, backed by physical `phys`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryRegion {
    pub base: u64,
    pub size: u64,
    /// `None` until `plan_memory` chooses it.
    pub phys: Option<u64>,
}

impl MemoryRegion {
    pub fn guest(&self) -> Region {
        Region::new(self.base, self.size)
    }

    pub fn physical(&self) -> Option<Region> {
        self.phys.map(|p| Region::new(p, self.size))
    }
}

impl VmConfig {
    /// The physical address of `len` bytes at guest-physical `ipa`, when they all lie in
    /// one of the VM's memory regions (a DMA on the VM's behalf, `accel::job`).
    pub fn translate(&self, ipa: u64, len: u64) -> Option<u64> {
        self.memory.iter().find_map(|m| {
            let inside = ipa >= m.base && len <= m.size && ipa - m.base <= m.size - len;
            inside.then_some(m.phys? + (ipa - m.base))
        })
    }
}

/// The program a VM boots: copied to `load` (guest-physical) and entered there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageConfig {
    /// Host path as written in the configuration (for messages only).
    pub path: String,
    /// Guest-physical load and entry address; `None` means the base of the first memory region.
    pub load: Option<u64>,
    /// Size in bytes, filled in by the host tool from the file.
    pub size: u64,
    /// The arm64 Image header, when the file has one (filled in by the host tool).
    pub kernel: Option<KernelHeader>,
}

/// A device a VM sees at guest-physical `base`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeviceConfig {
    /// An emulated PL011 UART multiplexed onto the physical console; `irq` is the SPI INTID
    /// the VM sees.
    Pl011 { base: u64, irq: u32 },
    /// Partita's MMIO test device for probe guests.
    TestDev { base: u64 },
}

impl DeviceConfig {
    /// Names used for the `type` key.
    pub const TYPES: [&'static str; 2] = ["pl011", "testdev"];

    pub fn window(&self) -> Region {
        match *self {
            DeviceConfig::Pl011 { base, .. } | DeviceConfig::TestDev { base } => {
                Region::new(base, PAGE_SIZE)
            }
        }
    }

    pub fn irq(&self) -> Option<u32> {
        match *self {
            DeviceConfig::Pl011 { irq, .. } => Some(irq),
            DeviceConfig::TestDev { .. } => None,
        }
    }
}

impl VmConfig {
    /// Where the image is loaded and entered: `image.load`, else for an arm64 Linux Image
    /// the 2 MiB-aligned start of the first region plus the header's `text_offset`, else the
    /// base of the first region.
    pub fn load_address(&self) -> Option<u64> {
        if let Some(load) = self.image.load {
            return Some(load);
        }
        let base = self.memory.first()?.base;
        match self.image.kernel {
            Some(k) => base
                .checked_next_multiple_of(KernelHeader::BASE_ALIGN)?
                .checked_add(k.text_offset),
            None => Some(base),
        }
    }

    /// Guest-physical address of the device tree: the last `DTB_SIZE` bytes of the first region.
    pub fn dtb_address(&self) -> Option<u64> {
        let first = self.memory.first()?;
        (first.base + first.size).checked_sub(DTB_SIZE)
    }

    /// Bytes the image occupies once running: the file, or the kernel's `image_size` (which
    /// includes its .bss) when that is larger.
    pub fn image_footprint(&self) -> u64 {
        let kernel = self.image.kernel.map_or(0, |k| k.image_size);
        self.image.size.max(kernel)
    }

    /// Where the initrd goes: page aligned, right below the device tree.
    pub fn initrd_region(&self) -> Option<Region> {
        let size = self.initrd.as_ref()?.size;
        let base = self.dtb_address()?.checked_sub(size)? / PAGE_SIZE * PAGE_SIZE;
        Some(Region::new(base, size))
    }
}

/// A configuration mistake: which key, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl ConfigError {
    /// A mistake at `key`. Both may quote what the user wrote (a key name, a string value),
    /// so control characters are escaped (a newline becomes `\n`): the error stays one line.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            key: one_line(key.into()),
            message: one_line(message.into()),
        }
    }
}

/// `text` with every control character escaped.
fn one_line(text: String) -> String {
    if !text.chars().any(char::is_control) {
        return text;
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().collect()
            } else {
                String::from(c)
            }
        })
        .collect()
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

fn range(r: &Region) -> String {
    format!("{:#x}..{:#x}", r.base, r.base.wrapping_add(r.size))
}

/// Checks every rule that concerns the configuration alone. Call after `plan_memory`.
pub fn validate(cfg: &SystemConfig) -> Result<(), ConfigError> {
    let board = cfg.board.platform.board();
    if cfg.board.cpus == 0 || cfg.board.cpus > board.max_cpus() {
        return Err(ConfigError::new(
            "board.cpus",
            format!(
                "{} physical CPUs requested, but {} has 1 to {}",
                cfg.board.cpus,
                board.platform.name(),
                board.max_cpus()
            ),
        ));
    }
    if cfg.vms.is_empty() {
        return Err(ConfigError::new(
            "vm",
            "no VM is configured: add a [[vm]] table",
        ));
    }
    for (i, vm) in cfg.vms.iter().enumerate() {
        validate_vm(cfg, board, i, vm)?;
    }
    validate_across_vms(cfg)?;
    placement::validate(cfg, board)?;
    channel::validate(cfg, board)?;
    fabric::validate(cfg, board)?;
    for (i, vm) in cfg.vms.iter().enumerate() {
        validate_device_tree(cfg, board, vm)
            .map_err(|m| ConfigError::new(format!("vm[{i}].device"), m))?;
    }
    Ok(())
}

fn validate_vm(
    cfg: &SystemConfig,
    board: &Board,
    i: usize,
    vm: &VmConfig,
) -> Result<(), ConfigError> {
    let key = |k: &str| format!("vm[{i}].{k}");
    validate_name(&vm.name).map_err(|m| ConfigError::new(key("name"), m))?;
    if vm.cpus.is_empty() {
        return Err(ConfigError::new(key("cpus"), "a VM needs one physical CPU"));
    }
    for (j, &cpu) in vm.cpus.iter().enumerate() {
        if cpu >= cfg.board.cpus {
            return Err(ConfigError::new(
                format!("vm[{i}].cpus[{j}]"),
                format!(
                    "CPU {cpu} is out of range: board.cpus is {}, so CPUs are 0 to {}",
                    cfg.board.cpus,
                    cfg.board.cpus - 1
                ),
            ));
        }
        if let Some(k) = vm.cpus[..j].iter().position(|&o| o == cpu) {
            return Err(ConfigError::new(
                format!("vm[{i}].cpus[{j}]"),
                format!(
                    "CPU {cpu} already runs vCPU {k} of this VM: each vCPU needs its own physical CPU"
                ),
            ));
        }
    }
    if vm.memory.is_empty() {
        return Err(ConfigError::new(
            key("memory"),
            "a VM needs at least one memory region",
        ));
    }
    for (j, m) in vm.memory.iter().enumerate() {
        validate_region(board, i, j, m)?;
        for (k, other) in vm.memory.iter().enumerate().take(j) {
            if m.guest().overlaps(&other.guest()) {
                return Err(ConfigError::new(
                    format!("vm[{i}].memory[{j}].base"),
                    format!(
                        "guest range {} overlaps vm[{i}].memory[{k}] ({})",
                        range(&m.guest()),
                        range(&other.guest())
                    ),
                ));
            }
        }
    }
    validate_bootargs(&vm.bootargs).map_err(|m| ConfigError::new(key("bootargs"), m))?;
    validate_devices(board, vm, i)?;
    validate_image(vm, i)
}

/// The device tree Partita generates for the VM must fit the `DTB_SIZE` bytes reserved for
/// it (many devices could overflow it): `guest_fdt` says so.
fn validate_device_tree(cfg: &SystemConfig, board: &Board, vm: &VmConfig) -> Result<(), String> {
    crate::fdt::guest_fdt(
        vm,
        &cfg.channels_of(&vm.name),
        &cfg.accelerators_of(&vm.name)
            .into_iter()
            .map(|(_, a)| a)
            .collect::<Vec<_>>(),
        board,
        &[0; 32],
    )
    .map(drop)
    .map_err(|e| format!("{e}"))
}

fn validate_bootargs(bootargs: &str) -> Result<(), String> {
    if bootargs.len() > MAX_BOOTARGS {
        return Err(format!(
            "{} bytes, more than {MAX_BOOTARGS} (the kernel command line limit)",
            bootargs.len()
        ));
    }
    if bootargs.contains('\0') {
        return Err("contains a NUL character, which would cut the device tree string".into());
    }
    Ok(())
}

fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the name is empty".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "\"{name}\" is longer than {MAX_NAME_LEN} characters"
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    {
        return Err(format!("\"{name}\" may use only a-z, 0-9, '-' and '_'"));
    }
    Ok(())
}

fn validate_region(board: &Board, i: usize, j: usize, m: &MemoryRegion) -> Result<(), ConfigError> {
    let key = |k: &str| format!("vm[{i}].memory[{j}].{k}");
    if m.size == 0 || !m.size.is_multiple_of(PAGE_SIZE) {
        return Err(ConfigError::new(
            key("size"),
            format!(
                "{:#x} is not a multiple of 4 KiB (the first region must also exceed 64 KiB, for the device tree)",
                m.size
            ),
        ));
    }
    if !m.base.is_multiple_of(PAGE_SIZE) {
        return Err(ConfigError::new(
            key("base"),
            format!("{:#x} is not aligned to 4 KiB", m.base),
        ));
    }
    if !Region::new(0, IPA_LIMIT).contains(&m.guest()) {
        return Err(ConfigError::new(
            key("base"),
            format!(
                "guest range {} is beyond the 39-bit guest-physical space",
                range(&m.guest())
            ),
        ));
    }
    let Some(phys) = m.physical() else {
        return Err(ConfigError::new(
            key("phys"),
            "no physical memory was planned",
        ));
    };
    check_physical(board, &phys, || key("phys"))
}

/// A planned physical range (a VM's memory or a channel's): page aligned, inside the
/// board's RAM, outside Partita's own memory; `key` names it in the error.
pub(crate) fn check_physical(
    board: &Board,
    phys: &Region,
    key: impl Fn() -> String,
) -> Result<(), ConfigError> {
    if !phys.base.is_multiple_of(PAGE_SIZE) {
        return Err(ConfigError::new(
            key(),
            format!("{:#x} is not aligned to 4 KiB", phys.base),
        ));
    }
    if board.ram_bank_of(phys).is_none() {
        return Err(ConfigError::new(
            key(),
            format!(
                "physical range {} is outside the RAM banks of {} ({})",
                range(phys),
                board.name,
                board.ram_ranges()
            ),
        ));
    }
    if phys.overlaps(&board.hypervisor) {
        return Err(ConfigError::new(
            key(),
            format!(
                "physical range {} overlaps Partita's own memory ({})",
                range(phys),
                range(&board.hypervisor)
            ),
        ));
    }
    Ok(())
}

fn validate_devices(board: &Board, vm: &VmConfig, i: usize) -> Result<(), ConfigError> {
    for (j, d) in vm.devices.iter().enumerate() {
        let key = |k: &str| format!("vm[{i}].device[{j}].{k}");
        let w = d.window();
        if w.base % PAGE_SIZE != 0 {
            return Err(ConfigError::new(
                key("base"),
                format!("{:#x} is not aligned to 4 KiB", w.base),
            ));
        }
        if !Region::new(0, IPA_LIMIT).contains(&w) {
            return Err(ConfigError::new(
                key("base"),
                format!("{:#x} is beyond the 39-bit guest-physical space", w.base),
            ));
        }
        if let Some((k, m)) = vm
            .memory
            .iter()
            .enumerate()
            .find(|(_, m)| m.guest().overlaps(&w))
        {
            return Err(ConfigError::new(
                key("base"),
                format!(
                    "device window {} overlaps vm[{i}].memory[{k}] ({})",
                    range(&w),
                    range(&m.guest())
                ),
            ));
        }
        // The virtual GIC answers its windows first; a device there would never be reached
        // by the general exit path, yet the UART fast path would take it.
        if let Some(gic) = board
            .gic
            .guest_windows(vm.cpus.len().max(1))
            .into_iter()
            .find(|g| g.overlaps(&w))
        {
            return Err(ConfigError::new(
                key("base"),
                format!(
                    "device window {} overlaps the GIC's window ({})",
                    range(&w),
                    range(&gic)
                ),
            ));
        }
        if let Some((k, _)) = vm
            .devices
            .iter()
            .enumerate()
            .take(j)
            .find(|(_, o)| o.window().overlaps(&w))
        {
            return Err(ConfigError::new(
                key("base"),
                format!("device window {} overlaps vm[{i}].device[{k}]", range(&w)),
            ));
        }
        if let Some(irq) = d.irq() {
            let last = 32 + board.spis - 1;
            if !(32..=last).contains(&irq) {
                return Err(ConfigError::new(
                    key("irq"),
                    format!(
                        "{irq} is not a shared peripheral interrupt of {} (32 to {last})",
                        board.platform.name()
                    ),
                ));
            }
            if let Some((k, _)) = vm
                .devices
                .iter()
                .enumerate()
                .take(j)
                .find(|(_, o)| o.irq() == Some(irq))
            {
                return Err(ConfigError::new(
                    key("irq"),
                    format!("interrupt {irq} is already used by vm[{i}].device[{k}]"),
                ));
            }
        }
    }
    Ok(())
}

fn validate_image(vm: &VmConfig, i: usize) -> Result<(), ConfigError> {
    let load = vm.load_address().unwrap_or(0);
    let key = if vm.image.load.is_some() {
        "image.load"
    } else {
        "image"
    };
    let Some((_, region)) = vm
        .memory
        .iter()
        .map(|m| m.guest())
        .enumerate()
        .find(|(_, m)| m.contains(&Region::new(load, 1)))
    else {
        return Err(ConfigError::new(
            format!("vm[{i}].{key}"),
            format!("load address {load:#x} is not inside any of the VM's memory regions"),
        ));
    };
    let mut room = region.base + region.size - load;
    if vm.memory.first().map(|m| m.guest()) == Some(region) {
        room = room.saturating_sub(DTB_SIZE);
    }
    if vm.image.size == 0 {
        return Err(ConfigError::new(
            format!("vm[{i}].image"),
            format!("\"{}\" is empty", vm.image.path),
        ));
    }
    let needed = vm.image_footprint();
    if needed > room {
        let what = if needed > vm.image.size {
            format!("needs {needed} bytes once running (image_size in its arm64 Image header)")
        } else {
            format!("is {needed} bytes")
        };
        return Err(ConfigError::new(
            format!("vm[{i}].image"),
            format!(
                "\"{}\" {what}, but only {room} bytes of VM memory follow its load address {load:#x} (the last 64 KiB of the first region hold the device tree)",
                vm.image.path
            ),
        ));
    }
    validate_initrd(vm, i, Region::new(load, needed))
}

/// The initrd must sit in the first region, below the device tree, clear of the image.
fn validate_initrd(vm: &VmConfig, i: usize, image: Region) -> Result<(), ConfigError> {
    let Some(initrd) = &vm.initrd else {
        return Ok(());
    };
    let key = format!("vm[{i}].initrd");
    if initrd.size == 0 {
        return Err(ConfigError::new(
            key,
            format!("\"{}\" is empty", initrd.path),
        ));
    }
    let first = vm.memory[0].guest();
    let placed = vm
        .initrd_region()
        .filter(|r| r.base >= first.base && !r.overlaps(&image));
    if placed.is_none() {
        return Err(ConfigError::new(
            key,
            format!(
                "\"{}\" is {} bytes, but it must fit in the first memory region ({}) below the device tree without overlapping the image ({})",
                initrd.path,
                initrd.size,
                range(&first),
                range(&image)
            ),
        ));
    }
    Ok(())
}

fn validate_across_vms(cfg: &SystemConfig) -> Result<(), ConfigError> {
    for (i, vm) in cfg.vms.iter().enumerate() {
        for (k, other) in cfg.vms.iter().enumerate().take(i) {
            if vm.name == other.name {
                return Err(ConfigError::new(
                    format!("vm[{i}].name"),
                    format!("\"{}\" is already the name of vm[{k}]", vm.name),
                ));
            }
            for (j, m) in vm.memory.iter().enumerate() {
                for (l, o) in other.memory.iter().enumerate() {
                    let (Some(a), Some(b)) = (m.physical(), o.physical()) else {
                        continue;
                    };
                    if a.overlaps(&b) {
                        return Err(ConfigError::new(
                            format!("vm[{i}].memory[{j}].phys"),
                            format!(
                                "physical range {} overlaps vm[{k}].memory[{l}] ({}): VMs never share memory",
                                range(&a),
                                range(&b)
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Chooses physical memory for every region that names none.
///
/// Regions are placed first-fit above Partita's own memory, aligned like their guest address
/// up to 1 GiB so stage 2 can map them with the largest blocks (a 2 MiB-aligned guest region
/// gets a 2 MiB-aligned physical one). Explicit `phys` regions are left alone and avoided.
pub fn plan_memory(cfg: &mut SystemConfig) -> Result<(), ConfigError> {
    let board = cfg.board.platform.board();
    let mut taken: Vec<Region> = cfg
        .vms
        .iter()
        .flat_map(|vm| vm.memory.iter().filter_map(|m| m.physical()))
        .collect();
    taken.push(board.hypervisor);
    taken.extend(cfg.channels.iter().filter_map(ChannelConfig::physical));
    for (i, vm) in cfg.vms.iter_mut().enumerate() {
        for (j, m) in vm.memory.iter_mut().enumerate() {
            if m.phys.is_some() || m.size == 0 {
                continue;
            }
            let align = block_alignment(m.base, m.size);
            let phys = first_fit(board.ram, &taken, m.size, align).ok_or_else(|| {
                ConfigError::new(
                    format!("vm[{i}].memory[{j}].size"),
                    format!(
                        "no free physical memory for {:#x} bytes (RAM is {}, Partita keeps {})",
                        m.size,
                        board.ram_ranges(),
                        range(&board.hypervisor)
                    ),
                )
            })?;
            m.phys = Some(phys);
            taken.push(Region::new(phys, m.size));
        }
    }
    channel::plan(&mut cfg.channels, board, &mut taken)?;
    fabric::plan(cfg, board, &mut taken)
}

/// The largest stage-2 block size (4 KiB, 2 MiB, 1 GiB) both `base` and `size` allow.
fn block_alignment(base: u64, size: u64) -> u64 {
    [1 << 30, 1 << 21]
        .into_iter()
        .find(|&b| base.is_multiple_of(b) && size >= b)
        .unwrap_or(PAGE_SIZE)
}

/// The lowest `align`-aligned address of `size` free bytes in one of the `ram` banks.
pub(crate) fn first_fit(ram: &[Region], taken: &[Region], size: u64, align: u64) -> Option<u64> {
    ram.iter()
        .find_map(|bank| first_fit_in(*bank, taken, size, align))
}

fn first_fit_in(ram: Region, taken: &[Region], size: u64, align: u64) -> Option<u64> {
    let ram_end = ram.end()?;
    let mut candidate = ram.base.next_multiple_of(align);
    loop {
        let want = Region::new(candidate, size);
        if want.end()? > ram_end {
            return None;
        }
        match taken
            .iter()
            .filter(|t| t.overlaps(&want))
            .filter_map(|t| t.end())
            .max()
        {
            Some(end) => candidate = end.next_multiple_of(align),
            None => return Some(candidate),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn errors_quoting_user_text_stay_one_line() {
        // Found by fuzzing: a multi-line TOML string echoed into a message split it.
        let e = ConfigError::new("vm[0].a\nb", "unknown kind \"rtos\ncpus = [5]\u{1b}[2J\"");
        assert_eq!(
            e.to_string(),
            "vm[0].a\\nb: unknown kind \"rtos\\ncpus = [5]\\u{1b}[2J\""
        );
        let plain = ConfigError::new("vm[0].kind", "unknown kind \"x\"; expected \"rtos\"");
        assert_eq!(plain.message, "unknown kind \"x\"; expected \"rtos\"");
    }

    fn vm(name: &str, phys: Option<u64>) -> VmConfig {
        VmConfig {
            name: name.into(),
            kind: VmKind::Rtos,
            priority: 1,
            cpus: vec![0],
            memory: vec![MemoryRegion {
                base: 0x4000_0000,
                size: 0x20_0000,
                phys,
            }],
            image: ImageConfig {
                path: "probe.bin".into(),
                load: None,
                size: 0x1000,
                kernel: None,
            },
            initrd: None,
            bootargs: String::new(),
            devices: vec![
                DeviceConfig::Pl011 {
                    base: 0x0900_0000,
                    irq: 33,
                },
                DeviceConfig::TestDev { base: 0x0a00_0000 },
            ],
            on_reset: ResetAction::Restart,
            on_fault: EndAction::Stop,
            on_poweroff: EndAction::Stop,
            timer: TimerMode::Virtual,
            irqs: vec![],
            migrate: false,
            timer_advance_ns: 0,
        }
    }

    fn system(vms: Vec<VmConfig>) -> SystemConfig {
        SystemConfig {
            board: BoardConfig {
                platform: Platform::QemuVirt,
                cpus: 1,
                slice_us: crate::sched::DEFAULT_SLICE_US,
            },
            vms,
            channels: vec![],
            fabric: None,
            console: ConsoleConfig::default(),
        }
    }

    fn planned(mut cfg: SystemConfig) -> Result<SystemConfig, ConfigError> {
        plan_memory(&mut cfg)?;
        validate(&cfg)?;
        Ok(cfg)
    }

    pub(crate) fn two_vms_on_cpu0() -> SystemConfig {
        system(vec![vm("a", None), vm("b", None)])
    }

    pub(super) fn validated(cfg: SystemConfig) -> Result<SystemConfig, ConfigError> {
        planned(cfg)
    }

    fn two_cpus(mut cfg: SystemConfig) -> SystemConfig {
        cfg.board.cpus = 2;
        cfg.vms[1].cpus = vec![1];
        cfg
    }

    #[test]
    fn a_good_system_validates_and_is_placed_after_the_hypervisor() {
        let cfg = planned(two_cpus(system(vec![vm("a", None), vm("b", None)]))).unwrap();
        assert_eq!(cfg.vms[0].memory[0].phys, Some(0x6000_0000));
        assert_eq!(cfg.vms[1].memory[0].phys, Some(0x6020_0000));
    }

    #[test]
    fn planning_avoids_explicit_regions_and_keeps_block_alignment() {
        let mut a = vm("a", Some(0x6000_0000));
        a.memory[0].size = 0x2_0000;
        let cfg = planned(two_cpus(system(vec![a, vm("b", None)]))).unwrap();
        assert_eq!(cfg.vms[1].memory[0].phys, Some(0x6020_0000));
    }

    #[test]
    fn gigabyte_regions_get_gigabyte_alignment() {
        assert_eq!(block_alignment(0x4000_0000, 0x4000_0000), 1 << 30);
        assert_eq!(block_alignment(0x4000_0000, 0x20_0000), 1 << 21);
        assert_eq!(block_alignment(0x4000_1000, 0x20_0000), PAGE_SIZE);
    }

    #[test]
    fn planning_reports_exhausted_ram() {
        let mut a = vm("a", None);
        a.memory[0].size = 0x1_0000_0000;
        let err = planned(system(vec![a])).unwrap_err();
        assert_eq!(err.key, "vm[0].memory[0].size");
        assert!(err.message.starts_with("no free physical memory"), "{err}");
    }

    fn error_of(cfg: SystemConfig) -> String {
        planned(cfg).unwrap_err().to_string()
    }

    #[test]
    fn overlapping_physical_memory_is_refused() {
        let e = error_of(two_cpus(system(vec![
            vm("a", Some(0x6000_0000)),
            vm("b", Some(0x6010_0000)),
        ])));
        assert_eq!(
            e,
            "vm[1].memory[0].phys: physical range 0x60100000..0x60300000 overlaps vm[0].memory[0] (0x60000000..0x60200000): VMs never share memory"
        );
    }

    #[test]
    fn hypervisor_memory_is_refused() {
        let e = error_of(system(vec![vm("a", Some(0x4000_0000))]));
        assert_eq!(
            e,
            "vm[0].memory[0].phys: physical range 0x40000000..0x40200000 overlaps Partita's own memory (0x40000000..0x60000000)"
        );
    }

    #[test]
    fn cpu_out_of_range_and_duplicate_names() {
        let mut a = vm("a", None);
        a.cpus = vec![3];
        assert_eq!(
            error_of(system(vec![a])),
            "vm[0].cpus[0]: CPU 3 is out of range: board.cpus is 1, so CPUs are 0 to 0"
        );
        assert_eq!(
            error_of(two_cpus(system(vec![vm("a", None), vm("a", None)]))),
            "vm[1].name: \"a\" is already the name of vm[0]"
        );
        assert!(planned(system(vec![vm("a", None), vm("b", None)])).is_ok());
    }

    #[test]
    fn image_too_large_and_load_outside_memory() {
        let mut a = vm("a", None);
        a.image.size = 0x1f_0001;
        assert_eq!(
            error_of(system(vec![a])),
            "vm[0].image: \"probe.bin\" is 2031617 bytes, but only 2031616 bytes of VM memory follow its load address 0x40000000 (the last 64 KiB of the first region hold the device tree)"
        );
        let mut b = vm("b", None);
        b.image.load = Some(0x1000);
        assert_eq!(
            error_of(system(vec![b])),
            "vm[0].image.load: load address 0x1000 is not inside any of the VM's memory regions"
        );
    }

    #[test]
    fn devices_must_not_overlap_memory_or_each_other() {
        let mut a = vm("a", None);
        a.devices.push(DeviceConfig::TestDev { base: 0x4000_0000 });
        assert_eq!(
            error_of(system(vec![a])),
            "vm[0].device[2].base: device window 0x40000000..0x40001000 overlaps vm[0].memory[0] (0x40000000..0x40200000)"
        );
        let mut b = vm("b", None);
        b.devices.push(DeviceConfig::Pl011 {
            base: 0x0b00_0000,
            irq: 33,
        });
        assert_eq!(
            error_of(system(vec![b])),
            "vm[0].device[2].irq: interrupt 33 is already used by vm[0].device[0]"
        );
    }

    fn linux(image_size: u64, initrd: u64) -> VmConfig {
        let mut a = vm("linux", None);
        a.memory[0].base = 0x4010_0000;
        a.memory[0].size = 0x100_0000;
        a.image.size = 0x8_0000;
        a.image.kernel = Some(KernelHeader {
            text_offset: 0x1000,
            image_size,
        });
        a.initrd = Some(InitrdConfig {
            path: "initrd".into(),
            size: initrd,
        });
        a
    }

    #[test]
    fn a_kernel_sits_at_the_aligned_base_plus_text_offset() {
        let a = linux(0x10_0000, 0x1000);
        assert_eq!(a.load_address(), Some(0x4020_1000));
        assert_eq!(a.image_footprint(), 0x10_0000);
        assert_eq!(a.dtb_address(), Some(0x410f_0000));
        assert_eq!(a.initrd_region(), Some(Region::new(0x410e_f000, 0x1000)));
        assert!(planned(system(vec![a])).is_ok());
    }

    #[test]
    fn kernel_and_initrd_must_fit() {
        assert_eq!(
            error_of(system(vec![linux(0xf0_0000, 0x1000)])),
            "vm[0].image: \"probe.bin\" needs 15728640 bytes once running (image_size in its arm64 Image header), but only 15659008 bytes of VM memory follow its load address 0x40201000 (the last 64 KiB of the first region hold the device tree)"
        );
        assert_eq!(
            error_of(system(vec![linux(0x10_0000, 0xe0_0000)])),
            "vm[0].initrd: \"initrd\" is 14680064 bytes, but it must fit in the first memory region (0x40100000..0x41100000) below the device tree without overlapping the image (0x40201000..0x40301000)"
        );
        assert_eq!(
            error_of(system(vec![linux(0x10_0000, 0)])),
            "vm[0].initrd: \"initrd\" is empty"
        );
        assert_eq!(
            error_of(system(vec![linux(0x10_0000, 0x100_0000)])),
            "vm[0].initrd: \"initrd\" is 16777216 bytes, but it must fit in the first memory region (0x40100000..0x41100000) below the device tree without overlapping the image (0x40201000..0x40301000)"
        );
    }

    #[test]
    fn reset_actions_have_names() {
        for a in ResetAction::ALL {
            assert_eq!(ResetAction::from_name(a.name()), Some(a));
        }
        assert_eq!(ResetAction::from_name("reboot"), None);
    }

    #[test]
    fn end_actions_have_names() {
        for a in EndAction::ALL {
            assert_eq!(EndAction::from_name(a.name()), Some(a));
        }
        assert_eq!(EndAction::from_name("fault"), None);
    }

    #[test]
    fn names_are_checked() {
        assert!(validate_name("linux-1_a").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name("Linux").is_err());
        assert!(validate_name("a-very-long-vm-name").is_err());
    }
}
