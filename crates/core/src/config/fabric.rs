//! The reconfigurable fabric (`docs/accelerators.md`): the CPU reserved to emulate it, its
//! configuration port's throughput, how long a region stays held, its partially
//! reconfigurable regions, and the accelerators with their interface address and interrupt
//! (the same in every VM that may use them), their frame time, the VMs that may use them and
//! their bitstreams (the HW Task Index).
//!
//! The rules live here: the fabric's CPU runs no VM; every bitstream names a region of the
//! fabric once and fits it; every accelerator has one; every user is a configured VM, and in
//! it the accelerator's page clashes with nothing else the VM sees and its interrupt with no
//! other line of the VM. The interface pages' physical memory is planned like a channel's.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

use super::{range, validate_name, ConfigError, SystemConfig, IPA_LIMIT, PAGE_SIZE};
use crate::accel::functions::Function;
use crate::accel::manager::{Bitstream, Spec, MAX_ACCELERATORS, MAX_REGIONS};
use crate::accel::timing::reconfig_ns;
use crate::board::{Board, Region};

/// `reconfig_bytes_per_us` when the file names none: with it, regions of 92,400, 324,000
/// and 482,400 bytes of bitstream take Ker-ONE's 231, 810 and 1,206 us (Table 5).
pub const DEFAULT_RECONFIG_BYTES_PER_US: u32 = 400;
/// `hold_us` when the file names none.
pub const DEFAULT_HOLD_US: u32 = 1_000;
pub const MAX_HOLD_US: u32 = 1_000_000;
/// `guest_beat_us` when the file names none: what QEMU's `-icount` needs (docs/accelerators.md).
pub const DEFAULT_GUEST_BEAT_US: u32 = 20;
/// `guest_beat_us`: 0 (off) or from `MIN_GUEST_BEAT_US` to `MAX_GUEST_BEAT_US`.
pub const MIN_GUEST_BEAT_US: u32 = 10;
pub const MAX_GUEST_BEAT_US: u32 = 100_000;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FabricConfig {
    /// The physical CPU that emulates the programmable logic; it runs no VM.
    pub cpu: u8,
    pub reconfig_bytes_per_us: u32,
    pub hold_us: u32,
    /// How far apart (us) the EL2 timer exits of CPUs running a VM that shares the fabric
    /// below the highest priority are (the guest beat); 0 for none.
    pub guest_beat_us: u32,
    pub regions: Vec<RegionConfig>,
    pub accelerators: Vec<AcceleratorConfig>,
    /// Physical memory of the interface pages; `None` until `plan_memory` chooses it.
    pub phys: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionConfig {
    pub name: String,
    /// Bytes of the region's bitstreams: its area.
    pub size: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcceleratorConfig {
    pub name: String,
    pub function: Function,
    /// Guest-physical address of its interface page in every VM that may use it.
    pub base: u64,
    /// The SPI INTID of its interface in those VMs.
    pub irq: u32,
    /// Time per frame in ns.
    pub frame_ns: u32,
    /// Names of the VMs that may use it.
    pub vms: Vec<String>,
    pub bitstreams: Vec<BitstreamConfig>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BitstreamConfig {
    pub region: String,
    pub size: u64,
}

impl FabricConfig {
    /// Bytes of interface pages: one per VM and accelerator.
    pub fn interface_bytes(&self, vms: usize) -> u64 {
        (vms * self.accelerators.len()) as u64 * PAGE_SIZE
    }

    /// Physical address of the interface page of VM `vm` for accelerator `dev`.
    pub fn interface_page(&self, vm: usize, dev: usize) -> Option<u64> {
        Some(self.phys? + ((vm * self.accelerators.len() + dev) as u64) * PAGE_SIZE)
    }
}

impl SystemConfig {
    /// The accelerators VM `vm` may use, by index.
    pub fn accelerators_of(&self, vm: &str) -> Vec<(usize, &AcceleratorConfig)> {
        self.fabric
            .iter()
            .flat_map(|f| f.accelerators.iter().enumerate())
            .filter(|(_, a)| a.vms.iter().any(|v| v == vm))
            .collect()
    }

    /// What the accelerator manager allocates, from a validated configuration.
    pub fn accel_spec(&self) -> Option<Spec> {
        let f = self.fabric.as_ref()?;
        let region = |name: &str| f.regions.iter().position(|r| r.name == name);
        Some(Spec {
            regions: f.regions.iter().map(|r| r.size).collect(),
            index: f
                .accelerators
                .iter()
                .map(|a| {
                    a.bitstreams
                        .iter()
                        .enumerate()
                        .filter_map(|(k, b)| {
                            Some(Bitstream {
                                prr: region(&b.region)? as u8,
                                id: k as u16,
                                size: b.size,
                                reconfig_ns: reconfig_ns(b.size, f.reconfig_bytes_per_us),
                            })
                        })
                        .collect()
                })
                .collect(),
            priorities: self.vms.iter().map(|vm| vm.priority).collect(),
            interfaces: self
                .vms
                .iter()
                .map(|vm| {
                    self.accelerators_of(&vm.name)
                        .iter()
                        .fold(0, |m, (d, _)| m | 1 << d)
                })
                .collect(),
            hold_ns: u64::from(f.hold_us) * 1000,
        })
    }
}

pub(super) fn validate(cfg: &SystemConfig, board: &Board) -> Result<(), ConfigError> {
    let Some(f) = &cfg.fabric else {
        return Ok(());
    };
    if f.cpu >= cfg.board.cpus {
        return Err(ConfigError::new(
            "fabric.cpu",
            format!(
                "CPU {} is out of range: board.cpus is {}, so CPUs are 0 to {}",
                f.cpu,
                cfg.board.cpus,
                cfg.board.cpus - 1
            ),
        ));
    }
    if let Some(i) = cfg.vms.iter().position(|vm| vm.cpus.contains(&f.cpu)) {
        return Err(ConfigError::new(
            "fabric.cpu",
            format!(
                "CPU {} runs vm[{i}] (\"{}\"): the fabric's CPU runs no VM",
                f.cpu, cfg.vms[i].name
            ),
        ));
    }
    if f.reconfig_bytes_per_us == 0 {
        return Err(ConfigError::new(
            "fabric.reconfig_bytes_per_us",
            "must be at least 1",
        ));
    }
    if !(1..=MAX_HOLD_US).contains(&f.hold_us) {
        return Err(ConfigError::new(
            "fabric.hold_us",
            format!(
                "{} is out of range: 1 to {MAX_HOLD_US} microseconds",
                f.hold_us
            ),
        ));
    }
    if f.guest_beat_us != 0 && !(MIN_GUEST_BEAT_US..=MAX_GUEST_BEAT_US).contains(&f.guest_beat_us) {
        return Err(ConfigError::new(
            "fabric.guest_beat_us",
            format!(
                "{} is out of range: 0 (off) or {MIN_GUEST_BEAT_US} to {MAX_GUEST_BEAT_US} microseconds",
                f.guest_beat_us
            ),
        ));
    }
    regions(f)?;
    if !(1..=MAX_ACCELERATORS).contains(&f.accelerators.len()) {
        return Err(ConfigError::new(
            "fabric.accelerator",
            format!(
                "{} accelerators: a fabric has 1 to {MAX_ACCELERATORS}",
                f.accelerators.len()
            ),
        ));
    }
    for (d, a) in f.accelerators.iter().enumerate() {
        accelerator(cfg, board, f, d, a)?;
    }
    Ok(())
}

fn regions(f: &FabricConfig) -> Result<(), ConfigError> {
    if !(1..=MAX_REGIONS).contains(&f.regions.len()) {
        return Err(ConfigError::new(
            "fabric.region",
            format!(
                "{} regions: a fabric has 1 to {MAX_REGIONS}",
                f.regions.len()
            ),
        ));
    }
    for (r, region) in f.regions.iter().enumerate() {
        let key = |k: &str| format!("fabric.region[{r}].{k}");
        validate_name(&region.name).map_err(|m| ConfigError::new(key("name"), m))?;
        if let Some(k) = f.regions[..r].iter().position(|o| o.name == region.name) {
            return Err(ConfigError::new(
                key("name"),
                format!(
                    "\"{}\" is already the name of fabric.region[{k}]",
                    region.name
                ),
            ));
        }
        if region.size == 0 {
            return Err(ConfigError::new(
                key("size"),
                "a region holds at least one byte of bitstream",
            ));
        }
    }
    Ok(())
}

fn accelerator(
    cfg: &SystemConfig,
    board: &Board,
    f: &FabricConfig,
    d: usize,
    a: &AcceleratorConfig,
) -> Result<(), ConfigError> {
    let key = |k: &str| format!("fabric.accelerator[{d}].{k}");
    validate_name(&a.name).map_err(|m| ConfigError::new(key("name"), m))?;
    if let Some(k) = f.accelerators[..d].iter().position(|o| o.name == a.name) {
        return Err(ConfigError::new(
            key("name"),
            format!(
                "\"{}\" is already the name of fabric.accelerator[{k}]",
                a.name
            ),
        ));
    }
    if a.frame_ns == 0 {
        return Err(ConfigError::new(
            key("frame_ns"),
            "a frame takes at least 1 ns",
        ));
    }
    if a.bitstreams.is_empty() {
        return Err(ConfigError::new(
            key("bitstream"),
            "no bitstream: the accelerator fits no region (list one per compatible region)",
        ));
    }
    for (b, bits) in a.bitstreams.iter().enumerate() {
        let bkey = |k: &str| format!("fabric.accelerator[{d}].bitstream[{b}].{k}");
        let Some(region) = f.regions.iter().find(|r| r.name == bits.region) else {
            return Err(ConfigError::new(
                bkey("region"),
                format!("no region is named \"{}\"", bits.region),
            ));
        };
        if let Some(k) = a.bitstreams[..b]
            .iter()
            .position(|o| o.region == bits.region)
        {
            return Err(ConfigError::new(
                bkey("region"),
                format!(
                    "\"{}\" already has bitstream[{k}]: one bitstream per compatible region",
                    bits.region
                ),
            ));
        }
        if bits.size == 0 || bits.size > region.size {
            return Err(ConfigError::new(
                bkey("size"),
                format!(
                    "{} bytes of bitstream do not fit region \"{}\" ({} bytes): it is incompatible",
                    bits.size, region.name, region.size
                ),
            ));
        }
    }
    let page = Region::new(a.base, PAGE_SIZE);
    if !a.base.is_multiple_of(PAGE_SIZE) || !Region::new(0, IPA_LIMIT).contains(&page) {
        return Err(ConfigError::new(
            key("base"),
            format!(
                "{:#x} is not a 4 KiB-aligned guest-physical address below 2^39",
                a.base
            ),
        ));
    }
    let last = 32 + board.spis - 1;
    if !(32..=last).contains(&a.irq) {
        return Err(ConfigError::new(
            key("irq"),
            format!(
                "{} is not a shared peripheral interrupt of {} (32 to {last})",
                a.irq,
                board.platform.name()
            ),
        ));
    }
    if a.vms.is_empty() {
        return Err(ConfigError::new(
            key("vms"),
            "no VM may use the accelerator",
        ));
    }
    for (j, name) in a.vms.iter().enumerate() {
        let vkey = format!("fabric.accelerator[{d}].vms[{j}]");
        let Some(i) = cfg.vms.iter().position(|vm| &vm.name == name) else {
            return Err(ConfigError::new(vkey, format!("no VM is named \"{name}\"")));
        };
        if a.vms[..j].contains(name) {
            return Err(ConfigError::new(
                vkey,
                format!("\"{name}\" is listed twice"),
            ));
        }
        in_vm(cfg, board, f, d, a, i)?;
    }
    Ok(())
}

/// The interface page and interrupt of accelerator `d` in vm[i] clash with nothing else.
fn in_vm(
    cfg: &SystemConfig,
    board: &Board,
    f: &FabricConfig,
    d: usize,
    a: &AcceleratorConfig,
    i: usize,
) -> Result<(), ConfigError> {
    let vm = &cfg.vms[i];
    let page = Region::new(a.base, PAGE_SIZE);
    let clash = |what: String| {
        ConfigError::new(
            format!("fabric.accelerator[{d}].base"),
            format!("interface page {} overlaps {what} in vm[{i}]", range(&page)),
        )
    };
    if let Some(k) = vm.memory.iter().position(|m| m.guest().overlaps(&page)) {
        return Err(clash(format!("vm[{i}].memory[{k}]")));
    }
    if let Some(k) = vm
        .devices
        .iter()
        .position(|dev| dev.window().overlaps(&page))
    {
        return Err(clash(format!("vm[{i}].device[{k}]")));
    }
    if board
        .gic
        .guest_windows(vm.cpus.len().max(1))
        .iter()
        .any(|g| g.overlaps(&page))
    {
        return Err(clash(String::from("the virtual GIC")));
    }
    if let Some(c) = cfg
        .channels_of(&vm.name)
        .into_iter()
        .find(|c| c.window.overlaps(&page))
    {
        return Err(clash(format!("channel[{}]", c.id)));
    }
    let earlier = f.accelerators[..d]
        .iter()
        .enumerate()
        .filter(|(_, o)| o.vms.contains(&vm.name));
    for (k, other) in earlier {
        if Region::new(other.base, PAGE_SIZE).overlaps(&page) {
            return Err(clash(format!("the interface of fabric.accelerator[{k}]")));
        }
        if other.irq == a.irq {
            return Err(irq_used(
                d,
                a.irq,
                format!("fabric.accelerator[{k}] in vm[{i}]"),
            ));
        }
    }
    if let Some(k) = vm.devices.iter().position(|dev| dev.irq() == Some(a.irq)) {
        return Err(irq_used(d, a.irq, format!("vm[{i}].device[{k}]")));
    }
    if let Some(k) = vm.irqs.iter().position(|&o| o == a.irq) {
        return Err(irq_used(d, a.irq, format!("vm[{i}].irqs[{k}]")));
    }
    if let Some(c) = cfg
        .channels_of(&vm.name)
        .into_iter()
        .find(|c| c.irq == a.irq)
    {
        return Err(irq_used(
            d,
            a.irq,
            format!("the doorbell of channel[{}] in vm[{i}]", c.id),
        ));
    }
    Ok(())
}

fn irq_used(d: usize, irq: u32, what: String) -> ConfigError {
    ConfigError::new(
        format!("fabric.accelerator[{d}].irq"),
        format!("interrupt {irq} is already used by {what}"),
    )
}

/// Chooses physical memory for the interface pages, first fit above what is taken.
pub(super) fn plan(
    cfg: &mut SystemConfig,
    board: &Board,
    taken: &mut Vec<Region>,
) -> Result<(), ConfigError> {
    let vms = cfg.vms.len();
    let Some(f) = cfg.fabric.as_mut() else {
        return Ok(());
    };
    let size = f.interface_bytes(vms);
    if f.phys.is_some() || size == 0 {
        return Ok(());
    }
    let phys = super::first_fit(board.ram, taken, size, PAGE_SIZE).ok_or_else(|| {
        ConfigError::new(
            "fabric.accelerator",
            format!(
                "no free physical memory for {size:#x} bytes of interface pages (RAM is {})",
                board.ram_ranges()
            ),
        )
    })?;
    f.phys = Some(phys);
    taken.push(Region::new(phys, size));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{two_vms_on_cpu0, validated};
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    /// The OFDM fabric of Ker-ONE's section 6.1 beside VMs "a" (CPU 0) and "b" (CPU 0).
    fn ofdm() -> SystemConfig {
        let mut cfg = two_vms_on_cpu0();
        cfg.board.cpus = 2;
        cfg.vms[0].priority = 10;
        let region = |name: &str, size| RegionConfig {
            name: name.into(),
            size,
        };
        let bits = |region: &str, size| BitstreamConfig {
            region: region.into(),
            size,
        };
        let accel = |n: usize, f: Function, b: Vec<BitstreamConfig>| AcceleratorConfig {
            name: f.name().into(),
            function: f,
            base: 0x0b00_0000 + n as u64 * PAGE_SIZE,
            irq: 80 + n as u32,
            frame_ns: f.table6_frame_ns(),
            vms: vec!["a".into(), "b".into()],
            bitstreams: b,
        };
        cfg.fabric = Some(FabricConfig {
            cpu: 1,
            reconfig_bytes_per_us: DEFAULT_RECONFIG_BYTES_PER_US,
            hold_us: DEFAULT_HOLD_US,
            guest_beat_us: DEFAULT_GUEST_BEAT_US,
            regions: vec![
                region("prr1", 92_400),
                region("prr2", 324_000),
                region("prr3", 482_400),
            ],
            accelerators: vec![
                accel(
                    0,
                    Function::Qam16,
                    vec![bits("prr1", 92_400), bits("prr2", 324_000)],
                ),
                accel(
                    1,
                    Function::Qam64,
                    vec![bits("prr1", 92_400), bits("prr2", 324_000)],
                ),
                accel(
                    2,
                    Function::Fft512,
                    vec![bits("prr2", 324_000), bits("prr3", 482_400)],
                ),
                accel(3, Function::Fft1024, vec![bits("prr3", 482_400)]),
            ],
            phys: None,
        });
        cfg
    }

    fn error(cfg: SystemConfig) -> String {
        validated(cfg).unwrap_err().to_string()
    }

    #[test]
    fn the_ofdm_fabric_validates_plans_and_gives_the_manager_table5() {
        let cfg = validated(ofdm()).unwrap();
        let f = cfg.fabric.as_ref().unwrap();
        assert_eq!(
            f.interface_page(1, 2),
            Some(f.phys.unwrap() + 6 * PAGE_SIZE)
        );
        let spec = cfg.accel_spec().unwrap();
        let t: Vec<Vec<u64>> = spec
            .index
            .iter()
            .map(|b| b.iter().map(|b| b.reconfig_ns).collect())
            .collect();
        assert_eq!(
            t,
            [
                vec![231_000, 810_000],
                vec![231_000, 810_000],
                vec![810_000, 1_206_000],
                vec![1_206_000]
            ]
        );
        assert_eq!(spec.priorities, [10, 1]);
        assert_eq!(spec.interfaces, [0b1111, 0b1111]);
        assert_eq!(spec.hold_ns, 1_000_000);
    }

    #[test]
    fn mistakes_name_the_key() {
        let mut c = ofdm();
        c.fabric.as_mut().unwrap().cpu = 0;
        assert_eq!(
            error(c),
            "fabric.cpu: CPU 0 runs vm[0] (\"a\"): the fabric's CPU runs no VM"
        );
        let mut c = ofdm();
        c.fabric.as_mut().unwrap().accelerators[3].bitstreams[0].size = 500_000;
        assert_eq!(
            error(c),
            "fabric.accelerator[3].bitstream[0].size: 500000 bytes of bitstream do not fit region \"prr3\" (482400 bytes): it is incompatible"
        );
        let mut c = ofdm();
        c.fabric.as_mut().unwrap().accelerators[1].base = 0x0b00_0000;
        assert_eq!(
            error(c),
            "fabric.accelerator[1].base: interface page 0xb000000..0xb001000 overlaps the interface of fabric.accelerator[0] in vm[0]"
        );
        let mut c = ofdm();
        c.fabric.as_mut().unwrap().accelerators[0].vms[1] = "c".into();
        assert_eq!(
            error(c),
            "fabric.accelerator[0].vms[1]: no VM is named \"c\""
        );
        let mut c = ofdm();
        c.fabric.as_mut().unwrap().accelerators[2].irq = 33;
        assert_eq!(
            error(c),
            "fabric.accelerator[2].irq: interrupt 33 is already used by vm[0].device[0]"
        );
    }
}
