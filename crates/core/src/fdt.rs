//! Guest device trees generated from the configuration.
//!
//! `guest_fdt` describes what one VM sees: its memory, its vCPUs booted with PSCI over HVC,
//! a GICv3 with one redistributor frame per vCPU, the generic timer, its configured
//! devices and the inter-VM channels it is a member of (`partita,ivc` nodes), with `/chosen` carrying the boot arguments, the console and a random seed. The
//! layout follows QEMU's `virt` machine so unmodified Linux and FreeRTOS ports find their
//! devices. The blob is written with `vm-fdt`; this module never places it in guest memory
//! (the hypervisor copies it to `VmConfig::dtb_address()`), and never describes a device the
//! hypervisor does not emulate.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use vm_fdt::FdtWriter;

use crate::board::{Board, Gic};
use crate::config::{AcceleratorConfig, Access, DeviceConfig, VmChannel, VmConfig, DTB_SIZE};
use crate::vgic::Affinity;

/// Why no device tree could be made for a VM.
#[derive(Debug, PartialEq)]
pub enum FdtError {
    /// The writer refused a node or property (for instance bootargs containing NUL).
    Writer(vm_fdt::Error),
    /// The blob is larger than the room kept for it in guest memory.
    TooLarge { size: usize },
    /// A device interrupt is not a shared peripheral interrupt (INTID 32 or more).
    NotAnSpi { irq: u32 },
    /// The seed's bytes could not be told apart in the written tree (`GuestFdt`).
    SeedNotFound,
}

impl fmt::Display for FdtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FdtError::Writer(e) => write!(f, "device tree: {e}"),
            FdtError::TooLarge { size } => write!(
                f,
                "device tree is {size} bytes, more than the {DTB_SIZE} bytes kept for it"
            ),
            FdtError::NotAnSpi { irq } => {
                write!(f, "interrupt {irq} is not a shared peripheral interrupt")
            }
            FdtError::SeedNotFound => write!(f, "device tree: rng-seed not found"),
        }
    }
}

impl From<vm_fdt::Error> for FdtError {
    fn from(e: vm_fdt::Error) -> Self {
        FdtError::Writer(e)
    }
}

type Result<T> = core::result::Result<T, FdtError>;

/// Interrupt specifier cells of the GIC binding (`arm,gic-v3.yaml`).
const GIC_SPI: u32 = 0;
const GIC_PPI: u32 = 1;
const IRQ_TYPE_EDGE_RISING: u32 = 1;
const IRQ_TYPE_LEVEL_HIGH: u32 = 4;
/// Generic timer interrupts as INTIDs (ARM ARM D11.2; the same numbers as QEMU `virt`).
const TIMER_SECURE_PHYS_IRQ: u32 = 29;
/// Frequency of the fixed clock that feeds the PL011s, as on QEMU `virt`.
const APB_PCLK_HZ: u32 = 24_000_000;

const GIC_PHANDLE: u32 = 1;
const CLOCK_PHANDLE: u32 = 2;

/// A VM's device tree made once, ready to be stamped with each boot's `/chosen/rng-seed`.
///
/// Writing a tree costs tens of thousands of instructions (about 80 us of emulated time);
/// a VM restarting after SYSTEM_RESET would hold its CPU that long, delaying a real-time VM
/// that shares it. The seed is the only part that changes between boots and has a fixed
/// length, so the tree is written once and each boot copies it with the new seed in place.
pub struct GuestFdt {
    blob: Vec<u8>,
    /// Offset of the 32 bytes of `/chosen/rng-seed`'s value in `blob`.
    seed_at: usize,
}

impl GuestFdt {
    /// Writes `vm`'s device tree on `board` and finds where its seed lies: the only bytes
    /// that differ between trees written with two seeds that differ in every byte.
    pub fn new(
        vm: &VmConfig,
        channels: &[VmChannel],
        accelerators: &[&AcceleratorConfig],
        board: &Board,
    ) -> Result<GuestFdt> {
        let zeros = guest_fdt(vm, channels, accelerators, board, &[0; 32])?;
        let ones = guest_fdt(vm, channels, accelerators, board, &[0xff; 32])?;
        let seed_at = zeros
            .iter()
            .zip(&ones)
            .position(|(a, b)| a != b)
            .filter(|&at| {
                zeros.len() == ones.len()
                    && ones.get(at..at + 32) == Some(&[0xff; 32][..])
                    && zeros[at + 32..] == ones[at + 32..]
            })
            .ok_or(FdtError::SeedNotFound)?;
        Ok(GuestFdt {
            blob: zeros,
            seed_at,
        })
    }

    /// The tree with `rng_seed` as `/chosen/rng-seed`: the same bytes `guest_fdt` writes.
    pub fn with_seed(&self, rng_seed: &[u8; 32]) -> Vec<u8> {
        let mut blob = self.blob.clone();
        blob[self.seed_at..self.seed_at + 32].copy_from_slice(rng_seed);
        blob
    }
}

/// Builds the flattened device tree of `vm` on `board`, with the `channels` it is a member
/// of (`SystemConfig::channels_of`) and the `accelerators` it may use
/// (`SystemConfig::accelerators_of`).
pub fn guest_fdt(
    vm: &VmConfig,
    channels: &[VmChannel],
    accelerators: &[&AcceleratorConfig],
    board: &Board,
    rng_seed: &[u8; 32],
) -> Result<Vec<u8>> {
    let mut fdt = FdtWriter::new()?;
    let root = fdt.begin_node("")?;
    fdt.property_u32("#address-cells", 2)?;
    fdt.property_u32("#size-cells", 2)?;
    fdt.property_string("compatible", "linux,dummy-virt")?;
    fdt.property_string("model", &format!("Partita VM {}", vm.name))?;
    fdt.property_u32("interrupt-parent", GIC_PHANDLE)?;
    memory_nodes(&mut fdt, vm)?;
    cpu_nodes(&mut fdt, vm.cpus.len())?;
    psci_node(&mut fdt)?;
    gic_node(&mut fdt, board, vm.cpus.len())?;
    timer_node(&mut fdt, board)?;
    clock_node(&mut fdt)?;
    for device in &vm.devices {
        device_node(&mut fdt, device)?;
    }
    for channel in channels {
        channel_node(&mut fdt, channel)?;
    }
    for accelerator in accelerators {
        accelerator_node(&mut fdt, accelerator)?;
    }
    chosen_and_aliases(&mut fdt, vm, rng_seed)?;
    fdt.end_node(root)?;
    let blob = fdt.finish()?;
    if blob.len() as u64 > DTB_SIZE {
        return Err(FdtError::TooLarge { size: blob.len() });
    }
    Ok(blob)
}

fn memory_nodes(fdt: &mut FdtWriter, vm: &VmConfig) -> Result<()> {
    for m in &vm.memory {
        let node = fdt.begin_node(&format!("memory@{:x}", m.base))?;
        fdt.property_string("device_type", "memory")?;
        fdt.property_array_u64("reg", &[m.base, m.size])?;
        fdt.end_node(node)?;
    }
    Ok(())
}

/// One node per vCPU, named and numbered by the MPIDR affinity the VM gives it
/// (`Affinity::of_vcpu`), started with PSCI.
fn cpu_nodes(fdt: &mut FdtWriter, vcpus: usize) -> Result<()> {
    let cpus = fdt.begin_node("cpus")?;
    fdt.property_u32("#address-cells", 1)?;
    fdt.property_u32("#size-cells", 0)?;
    for i in 0..vcpus {
        let mpidr = Affinity::of_vcpu(i).mpidr() as u32;
        let cpu = fdt.begin_node(&format!("cpu@{mpidr:x}"))?;
        fdt.property_string("device_type", "cpu")?;
        fdt.property_string("compatible", "arm,armv8")?;
        fdt.property_u32("reg", mpidr)?;
        fdt.property_string("enable-method", "psci")?;
        fdt.end_node(cpu)?;
    }
    fdt.end_node(cpus)?;
    Ok(())
}

fn psci_node(fdt: &mut FdtWriter) -> Result<()> {
    let psci = fdt.begin_node("psci")?;
    fdt.property_string_list("compatible", strings(&["arm,psci-1.0", "arm,psci-0.2"]))?;
    fdt.property_string("method", "hvc")?;
    fdt.end_node(psci)?;
    Ok(())
}

/// The distributor and one redistributor frame pair (RD + SGI, `gicr_stride` bytes) per
/// vCPU, in vCPU order.
fn gic_node(fdt: &mut FdtWriter, board: &Board, vcpus: usize) -> Result<()> {
    let [distributor, cpu_side] = board.gic.guest_windows(vcpus);
    let gic = fdt.begin_node(&format!("intc@{:x}", distributor.base))?;
    let compatible = match board.gic {
        Gic::V3(_) => "arm,gic-v3",
        Gic::V2(_) => "arm,gic-400",
    };
    fdt.property_string("compatible", compatible)?;
    fdt.property_u32("#interrupt-cells", 3)?;
    // No child nodes (no ITS); dtc wants the cell count of every interrupt provider.
    fdt.property_u32("#address-cells", 0)?;
    fdt.property_null("interrupt-controller")?;
    fdt.property_array_u64(
        "reg",
        &[
            distributor.base,
            distributor.size,
            cpu_side.base,
            cpu_side.size,
        ],
    )?;
    fdt.property_array_u32(
        "interrupts",
        &ppi(board, board.maintenance_irq, IRQ_TYPE_LEVEL_HIGH),
    )?;
    fdt.property_phandle(GIC_PHANDLE)?;
    fdt.end_node(gic)?;
    Ok(())
}

/// The GIC specifier of PPI `intid`; the GICv3 binding has no CPU mask, so the flags are
/// only the trigger type.
fn ppi(board: &Board, intid: u32, flags: u32) -> [u32; 3] {
    // The GICv2 binding names the VM's CPUs in bits 15:8.
    let cpus = match board.gic {
        Gic::V3(_) => 0,
        Gic::V2(_) => 1 << 8,
    };
    [GIC_PPI, intid.saturating_sub(16), flags | cpus]
}

/// Timer PPIs in the binding's order: secure physical, non-secure physical, virtual,
/// hypervisor. Level-high as QEMU `virt` describes them with a GICv3 (Linux ignores the
/// polarity of PPIs; only "level" matters).
fn timer_node(fdt: &mut FdtWriter, board: &Board) -> Result<()> {
    let timer = fdt.begin_node("timer")?;
    fdt.property_string("compatible", "arm,armv8-timer")?;
    let cells: Vec<u32> = [
        TIMER_SECURE_PHYS_IRQ,
        board.timer_phys_irq,
        board.timer_virt_irq,
        board.timer_hyp_irq,
    ]
    .into_iter()
    .flat_map(|irq| ppi(board, irq, IRQ_TYPE_LEVEL_HIGH))
    .collect();
    fdt.property_array_u32("interrupts", &cells)?;
    fdt.property_null("always-on")?;
    fdt.end_node(timer)?;
    Ok(())
}

fn clock_node(fdt: &mut FdtWriter) -> Result<()> {
    let clock = fdt.begin_node("apb-pclk")?;
    fdt.property_string("compatible", "fixed-clock")?;
    fdt.property_u32("#clock-cells", 0)?;
    fdt.property_u32("clock-frequency", APB_PCLK_HZ)?;
    fdt.property_string("clock-output-names", "clk24mhz")?;
    fdt.property_phandle(CLOCK_PHANDLE)?;
    fdt.end_node(clock)?;
    Ok(())
}

/// The node path of a device, also used by `/chosen` and `/aliases`.
fn device_path(device: &DeviceConfig) -> String {
    match *device {
        DeviceConfig::Pl011 { base, .. } => format!("/pl011@{base:x}"),
        DeviceConfig::TestDev { base } => format!("/testdev@{base:x}"),
    }
}

fn device_node(fdt: &mut FdtWriter, device: &DeviceConfig) -> Result<()> {
    let window = device.window();
    let node = fdt.begin_node(&device_path(device)[1..])?;
    match *device {
        DeviceConfig::Pl011 { irq, .. } => {
            let spi = irq.checked_sub(32).ok_or(FdtError::NotAnSpi { irq })?;
            fdt.property_string_list("compatible", strings(&["arm,pl011", "arm,primecell"]))?;
            fdt.property_array_u32("interrupts", &[GIC_SPI, spi, IRQ_TYPE_LEVEL_HIGH])?;
            fdt.property_array_u32("clocks", &[CLOCK_PHANDLE, CLOCK_PHANDLE])?;
            fdt.property_string_list("clock-names", strings(&["uartclk", "apb_pclk"]))?;
        }
        DeviceConfig::TestDev { .. } => {
            fdt.property_string("compatible", "partita,testdev")?;
        }
    }
    fdt.property_array_u64("reg", &[window.base, window.size])?;
    fdt.end_node(node)?;
    Ok(())
}

/// An inter-VM channel (`docs/ivc.md`): its window, its doorbell as an edge-triggered SPI,
/// the channel id the doorbell hypercall takes, this VM's member index (which ring of the
/// channel it writes), the number of members (how many rings) and `read-only` when the VM
/// may only read it.
fn channel_node(fdt: &mut FdtWriter, channel: &VmChannel) -> Result<()> {
    let irq = channel.irq;
    let spi = irq.checked_sub(32).ok_or(FdtError::NotAnSpi { irq })?;
    let node = fdt.begin_node(&format!("ivc@{:x}", channel.window.base))?;
    fdt.property_string("compatible", "partita,ivc")?;
    fdt.property_array_u64("reg", &[channel.window.base, channel.window.size])?;
    fdt.property_array_u32("interrupts", &[GIC_SPI, spi, IRQ_TYPE_EDGE_RISING])?;
    fdt.property_string("label", channel.name)?;
    fdt.property_u32("partita,channel", channel.id as u32)?;
    fdt.property_u32("partita,member", channel.member as u32)?;
    fdt.property_u32("partita,members", channel.members as u32)?;
    if channel.access == Access::ReadOnly {
        fdt.property_null("read-only")?;
    }
    fdt.end_node(node)?;
    Ok(())
}

/// An accelerator's interface page (`docs/accelerators.md`): its page, its interrupt as an
/// edge-triggered SPI, and its function by name.
fn accelerator_node(fdt: &mut FdtWriter, accelerator: &AcceleratorConfig) -> Result<()> {
    let irq = accelerator.irq;
    let spi = irq.checked_sub(32).ok_or(FdtError::NotAnSpi { irq })?;
    let node = fdt.begin_node(&format!("accelerator@{:x}", accelerator.base))?;
    fdt.property_string("compatible", "partita,accelerator")?;
    fdt.property_array_u64("reg", &[accelerator.base, 0x1000])?;
    fdt.property_array_u32("interrupts", &[GIC_SPI, spi, IRQ_TYPE_EDGE_RISING])?;
    fdt.property_string("label", &accelerator.name)?;
    fdt.property_string("partita,function", accelerator.function.name())?;
    fdt.end_node(node)?;
    Ok(())
}

fn chosen_and_aliases(fdt: &mut FdtWriter, vm: &VmConfig, rng_seed: &[u8; 32]) -> Result<()> {
    let uarts: Vec<String> = vm
        .devices
        .iter()
        .filter(|d| matches!(d, DeviceConfig::Pl011 { .. }))
        .map(device_path)
        .collect();
    let chosen = fdt.begin_node("chosen")?;
    fdt.property_string("bootargs", &vm.bootargs)?;
    if let Some(console) = uarts.first() {
        fdt.property_string("stdout-path", console)?;
    }
    fdt.property("rng-seed", rng_seed)?;
    if let Some(initrd) = vm.initrd_region() {
        fdt.property_u64("linux,initrd-start", initrd.base)?;
        fdt.property_u64("linux,initrd-end", initrd.base + initrd.size)?;
    }
    fdt.end_node(chosen)?;
    let aliases = fdt.begin_node("aliases")?;
    for (i, path) in uarts.iter().enumerate() {
        fdt.property_string(&format!("serial{i}"), path)?;
    }
    fdt.end_node(aliases)?;
    Ok(())
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::QEMU_VIRT;
    use crate::config::{EndAction, ImageConfig, InitrdConfig, MemoryRegion, ResetAction, VmKind};
    use alloc::vec;
    use fdt::Fdt;

    fn probe_vm() -> VmConfig {
        VmConfig {
            name: "probe".into(),
            kind: VmKind::Rtos,
            priority: 1,
            cpus: vec![0],
            memory: vec![
                MemoryRegion {
                    base: 0x4000_0000,
                    size: 0x20_0000,
                    phys: Some(0x6000_0000),
                },
                MemoryRegion {
                    base: 0x1_0000_0000,
                    size: 0x10_0000,
                    phys: Some(0x6020_0000),
                },
            ],
            image: ImageConfig {
                path: "probe.bin".into(),
                load: None,
                size: 0x1000,
                kernel: None,
            },
            initrd: None,
            bootargs: "mode=crash".into(),
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
            timer: crate::config::TimerMode::Virtual,
            irqs: vec![],
            migrate: false,
            timer_advance_ns: 0,
        }
    }

    const SEED: [u8; 32] = [7; 32];

    fn blob(vm: &VmConfig) -> Vec<u8> {
        guest_fdt(vm, &[], &[], &QEMU_VIRT, &SEED).unwrap()
    }

    fn cells(fdt: &Fdt, path: &str, name: &str) -> Vec<u32> {
        let prop = fdt.find_node(path).unwrap().property(name).unwrap();
        prop.value
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    fn strings_of<'a>(fdt: &'a Fdt, path: &str, name: &str) -> Vec<&'a str> {
        let prop = fdt.find_node(path).unwrap().property(name).unwrap();
        prop.value
            .split(|&b| b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| core::str::from_utf8(s).unwrap())
            .collect()
    }

    #[test]
    fn channels_are_described_with_their_doorbell_and_access() {
        let channels = [
            VmChannel {
                id: 3,
                member: 1,
                members: 2,
                name: "telemetry",
                window: crate::board::Region::new(0x5000_0000, 0x1_0000),
                phys: Some(0x7000_0000),
                access: Access::ReadOnly,
                irq: 64,
            },
            VmChannel {
                id: 4,
                member: 0,
                members: 3,
                name: "cmd",
                window: crate::board::Region::new(0x5001_0000, 0x1000),
                phys: Some(0x7001_0000),
                access: Access::ReadWrite,
                irq: 65,
            },
        ];
        let b = guest_fdt(&probe_vm(), &channels, &[], &QEMU_VIRT, &SEED).unwrap();
        let fdt = Fdt::new(&b).unwrap();
        let ro = "/ivc@50000000";
        assert_eq!(strings_of(&fdt, ro, "compatible"), ["partita,ivc"]);
        assert_eq!(cells(&fdt, ro, "reg"), [0, 0x5000_0000, 0, 0x1_0000]);
        assert_eq!(cells(&fdt, ro, "interrupts"), [0, 32, 1]);
        assert_eq!(cells(&fdt, ro, "partita,channel"), [3]);
        assert_eq!(cells(&fdt, ro, "partita,member"), [1]);
        assert_eq!(cells(&fdt, ro, "partita,members"), [2]);
        assert_eq!(strings_of(&fdt, ro, "label"), ["telemetry"]);
        assert!(fdt.find_node(ro).unwrap().property("read-only").is_some());
        let rw = fdt.find_node("/ivc@50010000").unwrap();
        assert!(rw.property("read-only").is_none());
        assert_eq!(cells(&fdt, "/ivc@50010000", "interrupts"), [0, 33, 1]);
        assert!(blob(&probe_vm()).len() < b.len());
    }

    #[test]
    fn root_memory_and_cpu() {
        let b = blob(&probe_vm());
        let fdt = Fdt::new(&b).unwrap();
        assert_eq!(cells(&fdt, "/", "#address-cells"), [2]);
        assert_eq!(cells(&fdt, "/", "#size-cells"), [2]);
        assert_eq!(strings_of(&fdt, "/", "compatible"), ["linux,dummy-virt"]);
        assert_eq!(strings_of(&fdt, "/", "model"), ["Partita VM probe"]);
        let regions: Vec<(u64, u64)> = fdt
            .all_nodes()
            .filter(|n| n.name.starts_with("memory@"))
            .flat_map(|n| n.reg().unwrap())
            .map(|r| (r.starting_address as u64, r.size.unwrap() as u64))
            .collect();
        assert_eq!(
            regions,
            [(0x4000_0000, 0x20_0000), (0x1_0000_0000, 0x10_0000)]
        );
        let cpus: Vec<_> = fdt.cpus().collect();
        assert_eq!(cpus.len(), 1);
        assert_eq!(cpus[0].ids().first(), 0);
        assert_eq!(strings_of(&fdt, "/cpus/cpu@0", "enable-method"), ["psci"]);
        assert_eq!(strings_of(&fdt, "/cpus/cpu@0", "device_type"), ["cpu"]);
    }

    #[test]
    fn psci_gic_and_timer() {
        let b = blob(&probe_vm());
        let fdt = Fdt::new(&b).unwrap();
        assert_eq!(
            strings_of(&fdt, "/psci", "compatible"),
            ["arm,psci-1.0", "arm,psci-0.2"]
        );
        assert_eq!(strings_of(&fdt, "/psci", "method"), ["hvc"]);
        let gic = "/intc@8000000";
        assert_eq!(strings_of(&fdt, gic, "compatible"), ["arm,gic-v3"]);
        assert_eq!(cells(&fdt, gic, "#interrupt-cells"), [3]);
        assert_eq!(cells(&fdt, gic, "#address-cells"), [0]);
        assert!(fdt
            .find_node(gic)
            .unwrap()
            .property("interrupt-controller")
            .is_some());
        assert_eq!(
            cells(&fdt, gic, "reg"),
            [0, 0x0800_0000, 0, 0x1_0000, 0, 0x080a_0000, 0, 0x2_0000]
        );
        assert_eq!(cells(&fdt, gic, "interrupts"), [1, 9, 4]);
        assert_eq!(cells(&fdt, gic, "phandle"), [GIC_PHANDLE]);
        assert_eq!(cells(&fdt, "/", "interrupt-parent"), [GIC_PHANDLE]);
        assert_eq!(
            cells(&fdt, "/timer", "interrupts"),
            [1, 13, 4, 1, 14, 4, 1, 11, 4, 1, 10, 4]
        );
        assert!(fdt
            .find_node("/timer")
            .unwrap()
            .property("always-on")
            .is_some());
    }

    #[test]
    fn devices_chosen_and_aliases() {
        let b = blob(&probe_vm());
        let fdt = Fdt::new(&b).unwrap();
        let uart = "/pl011@9000000";
        assert_eq!(
            strings_of(&fdt, uart, "compatible"),
            ["arm,pl011", "arm,primecell"]
        );
        assert_eq!(cells(&fdt, uart, "reg"), [0, 0x0900_0000, 0, 0x1000]);
        assert_eq!(cells(&fdt, uart, "interrupts"), [0, 1, 4]);
        assert_eq!(cells(&fdt, uart, "clocks"), [CLOCK_PHANDLE, CLOCK_PHANDLE]);
        assert_eq!(
            strings_of(&fdt, uart, "clock-names"),
            ["uartclk", "apb_pclk"]
        );
        assert_eq!(cells(&fdt, "/apb-pclk", "clock-frequency"), [24_000_000]);
        assert_eq!(cells(&fdt, "/apb-pclk", "phandle"), [CLOCK_PHANDLE]);
        let testdev = fdt.find_compatible(&["partita,testdev"]).unwrap();
        assert_eq!(
            testdev.reg().unwrap().next().unwrap().starting_address as u64,
            0x0a00_0000
        );
        let chosen = fdt.chosen();
        assert_eq!(chosen.bootargs(), Some("mode=crash"));
        assert_eq!(chosen.stdout().unwrap().name, "pl011@9000000");
        let seed = fdt
            .find_node("/chosen")
            .unwrap()
            .property("rng-seed")
            .unwrap();
        assert_eq!(seed.value, SEED);
        assert_eq!(strings_of(&fdt, "/aliases", "serial0"), [uart]);
    }

    #[test]
    fn a_stamped_tree_is_the_tree_written_with_that_seed() {
        let vm = probe_vm();
        let template = GuestFdt::new(&vm, &[], &[], &QEMU_VIRT).unwrap();
        assert_eq!(template.with_seed(&SEED), blob(&vm));
        let other: [u8; 32] = core::array::from_fn(|i| i as u8);
        assert_eq!(
            template.with_seed(&other),
            guest_fdt(&vm, &[], &[], &QEMU_VIRT, &other).unwrap()
        );
    }

    #[test]
    fn an_initrd_is_announced_below_the_device_tree() {
        let mut vm = probe_vm();
        vm.initrd = Some(InitrdConfig {
            path: "initrd".into(),
            size: 0x1_0001,
        });
        let b = blob(&vm);
        let fdt = Fdt::new(&b).unwrap();
        assert_eq!(
            cells(&fdt, "/chosen", "linux,initrd-start"),
            [0, 0x401d_f000]
        );
        assert_eq!(cells(&fdt, "/chosen", "linux,initrd-end"), [0, 0x401e_f001]);
        assert!(fdt
            .find_node("/chosen")
            .unwrap()
            .property("linux,initrd-start")
            .is_some());
        let plain = blob(&probe_vm());
        let fdt = Fdt::new(&plain).unwrap();
        assert!(fdt
            .find_node("/chosen")
            .unwrap()
            .property("linux,initrd-start")
            .is_none());
    }

    #[test]
    fn a_vm_without_devices_has_no_console() {
        let mut vm = probe_vm();
        vm.devices.clear();
        vm.bootargs.clear();
        let b = blob(&vm);
        let fdt = Fdt::new(&b).unwrap();
        assert!(fdt.chosen().stdout().is_none());
        assert!(fdt.find_compatible(&["arm,pl011"]).is_none());
        assert_eq!(fdt.chosen().bootargs(), Some(""));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let mut vm = probe_vm();
        vm.bootargs = "a\0b".into();
        assert!(matches!(
            guest_fdt(&vm, &[], &[], &QEMU_VIRT, &SEED),
            Err(FdtError::Writer(_))
        ));
        let mut vm = probe_vm();
        vm.bootargs = "x".repeat(DTB_SIZE as usize);
        assert!(matches!(
            guest_fdt(&vm, &[], &[], &QEMU_VIRT, &SEED),
            Err(FdtError::TooLarge { .. })
        ));
        let mut vm = probe_vm();
        vm.devices[0] = DeviceConfig::Pl011 {
            base: 0x0900_0000,
            irq: 5,
        };
        assert_eq!(
            guest_fdt(&vm, &[], &[], &QEMU_VIRT, &SEED),
            Err(FdtError::NotAnSpi { irq: 5 })
        );
    }
}
