//! The rules about what each VM owns besides memory: a share of its physical CPU (the
//! round-robin slice, the most VMs one CPU's run queue holds), the EL1 physical timer when it
//! is passed through (one VM per CPU, an RTOS), and its lines of the interrupt destination
//! table (every physical SPI goes to at most one VM; Partita keeps the console's).
//!
//! Plain checks over the configuration; the scheduler and the interrupt routing that act on
//! these keys live in the hypervisor. It must never accept a configuration two VMs could
//! fight over.

use alloc::format;

use super::{ConfigError, SystemConfig, TimerMode, VmConfig, VmKind};
use crate::board::{Board, Gic};
use crate::sched::MAX_VCPUS;

/// Shortest round-robin slice: below it a switch (some microseconds) would eat the slice.
pub const MIN_SLICE_US: u32 = 100;
/// Longest round-robin slice: one second.
pub const MAX_SLICE_US: u32 = 1_000_000;
/// Longest timer advance (`timer_advance_ns`): 100 us, a tenth of a 1 kHz RTOS tick. A
/// longer one would hand most of a shared CPU to a VM that only waits.
pub const MAX_TIMER_ADVANCE_NS: u32 = 100_000;
/// The timer advance of a real-time VM on the virtual timer that names none: 2 us covers
/// the switch from a GPOS (about 1.1 us) and a GPOS exit that delays it (up to 1.35 us
/// beside Linux's interrupt storm, docs/design.md "The timer advance").
pub const RTOS_TIMER_ADVANCE_NS: u32 = 2_000;

/// The `timer_advance_ns` of a VM of `kind` on `timer` that names none: a real-time VM on
/// the virtual timer takes its CPU back `RTOS_TIMER_ADVANCE_NS` ahead of its deadline; a
/// GPOS, or a VM woken by its own passed-through timer, at the deadline.
pub fn default_timer_advance_ns(kind: VmKind, timer: TimerMode) -> u32 {
    match (kind, timer) {
        (VmKind::Rtos, TimerMode::Virtual) => RTOS_TIMER_ADVANCE_NS,
        _ => 0,
    }
}

pub(super) fn validate(cfg: &SystemConfig, board: &Board) -> Result<(), ConfigError> {
    let slice = cfg.board.slice_us;
    if !(MIN_SLICE_US..=MAX_SLICE_US).contains(&slice) {
        return Err(ConfigError::new(
            "board.slice_us",
            format!(
                "{slice} is out of range: a slice is {MIN_SLICE_US} to {MAX_SLICE_US} microseconds"
            ),
        ));
    }
    for (i, vm) in cfg.vms.iter().enumerate() {
        cpu_share(cfg, i, vm)?;
        uniprocessor_only(i, vm)?;
        no_migration_on_gicv2(board, i, vm)?;
        timer(cfg, i, vm)?;
        irqs(cfg, board, i, vm)?;
    }
    Ok(())
}

/// The CPU of VM `i`, if validation of `cpus` has passed.
fn cpu_of(vm: &VmConfig) -> Option<u8> {
    vm.cpus.first().copied()
}

/// The VMs before `i` that run on the same CPU as VM `i`.
fn earlier_on_same_cpu<'a>(
    cfg: &'a SystemConfig,
    i: usize,
) -> impl Iterator<Item = (usize, &'a VmConfig)> + 'a {
    let cpu = cpu_of(&cfg.vms[i]);
    cfg.vms
        .iter()
        .enumerate()
        .take(i)
        .filter(move |(_, o)| cpu_of(o) == cpu)
}

fn cpu_share(cfg: &SystemConfig, i: usize, vm: &VmConfig) -> Result<(), ConfigError> {
    for (j, &cpu) in vm.cpus.iter().enumerate() {
        let before = cfg.vms[..i]
            .iter()
            .filter(|o| o.cpus.contains(&cpu))
            .count();
        if before >= MAX_VCPUS {
            return Err(ConfigError::new(
                format!("vm[{i}].cpus[{j}]"),
                format!("CPU {cpu} already runs {MAX_VCPUS} VMs, the most one CPU can share"),
            ));
        }
    }
    Ok(())
}

/// Physical interrupts (a passed-through timer, a destination table) go to a VM with one
/// vCPU only: their list registers live on the CPU that takes them.
fn uniprocessor_only(i: usize, vm: &VmConfig) -> Result<(), ConfigError> {
    if vm.cpus.len() < 2 {
        if vm.migrate {
            return Err(ConfigError::new(
                format!("vm[{i}].migrate"),
                "a vCPU migrates to the CPU of another vCPU of its VM: give the VM at least two CPUs",
            ));
        }
        return Ok(());
    }
    let what = if vm.timer == TimerMode::Physical {
        Some(("timer", "the physical timer"))
    } else if !vm.irqs.is_empty() {
        Some(("irqs", "physical interrupts"))
    } else {
        None
    };
    match what {
        Some((key, thing)) => Err(ConfigError::new(
            format!("vm[{i}].{key}"),
            format!(
                "{thing} can be passed through only to a VM with one vCPU; this one has {}",
                vm.cpus.len()
            ),
        )),
        None => Ok(()),
    }
}

/// On a GICv2 board a VM's vCPUs stay on their CPUs: a Linux vCPU migrated on QEMU's
/// GIC-400 (configs/zcu102/mixed.toml with `migrate = true`) stopped making progress, and
/// Partita does not migrate there until that is understood (docs/boards.md).
fn no_migration_on_gicv2(board: &Board, i: usize, vm: &VmConfig) -> Result<(), ConfigError> {
    if !vm.migrate || !matches!(board.gic, Gic::V2(_)) {
        return Ok(());
    }
    Err(ConfigError::new(
        format!("vm[{i}].migrate"),
        format!(
            "{} has a GICv2, on which Partita does not migrate vCPUs; set migrate = false",
            board.name
        ),
    ))
}

fn timer(cfg: &SystemConfig, i: usize, vm: &VmConfig) -> Result<(), ConfigError> {
    timer_advance(i, vm)?;
    if vm.timer != TimerMode::Physical {
        return Ok(());
    }
    let key = format!("vm[{i}].timer");
    if vm.kind != VmKind::Rtos {
        return Err(ConfigError::new(
            key,
            "the physical timer is passed through only to a real-time VM (kind = \"rtos\")",
        ));
    }
    if let Some((k, other)) =
        earlier_on_same_cpu(cfg, i).find(|(_, o)| o.timer == TimerMode::Physical)
    {
        return Err(ConfigError::new(
            key,
            format!(
                "CPU {} already gives its physical timer to vm[{k}] (\"{}\"); only one VM per CPU can own it",
                cpu_of(vm).unwrap_or(0),
                other.name
            ),
        ));
    }
    Ok(())
}

/// The timer advance is bounded, and it acts on the virtual timer, whose deadline Partita
/// keeps while the VM is switched out: a passed-through physical timer wakes its VM by its
/// own interrupt only.
fn timer_advance(i: usize, vm: &VmConfig) -> Result<(), ConfigError> {
    let advance = vm.timer_advance_ns;
    let key = || format!("vm[{i}].timer_advance_ns");
    if advance > MAX_TIMER_ADVANCE_NS {
        return Err(ConfigError::new(
            key(),
            format!("{advance} is out of range: an advance is 0 to {MAX_TIMER_ADVANCE_NS} ns"),
        ));
    }
    if advance > 0 && vm.timer == TimerMode::Physical {
        return Err(ConfigError::new(
            key(),
            "the advance acts on the virtual timer; a VM with timer = \"physical\" is woken by its own timer's interrupt: set timer_advance_ns = 0",
        ));
    }
    Ok(())
}

fn irqs(cfg: &SystemConfig, board: &Board, i: usize, vm: &VmConfig) -> Result<(), ConfigError> {
    let last = 32 + board.spis - 1;
    for (j, &irq) in vm.irqs.iter().enumerate() {
        let key = format!("vm[{i}].irqs[{j}]");
        if !(32..=last).contains(&irq) {
            return Err(ConfigError::new(
                key,
                format!(
                    "{irq} is not a shared peripheral interrupt of {} (32 to {last})",
                    board.platform.name()
                ),
            ));
        }
        if irq == board.uart.irq {
            return Err(ConfigError::new(
                key,
                format!("{irq} is the physical console's interrupt, which Partita keeps"),
            ));
        }
        if let Some(k) = vm.irqs[..j].iter().position(|&o| o == irq) {
            return Err(ConfigError::new(
                key,
                format!("interrupt {irq} is already listed as vm[{i}].irqs[{k}]"),
            ));
        }
        if let Some(k) = vm.devices.iter().position(|d| d.irq() == Some(irq)) {
            return Err(ConfigError::new(
                key,
                format!("interrupt {irq} is already used by vm[{i}].device[{k}]"),
            ));
        }
        if let Some((k, other)) = cfg
            .vms
            .iter()
            .enumerate()
            .take(i)
            .find(|(_, o)| o.irqs.contains(&irq))
        {
            return Err(ConfigError::new(
                key,
                format!(
                    "interrupt {irq} is already owned by vm[{k}] (\"{}\"): a physical interrupt goes to one VM",
                    other.name
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{two_vms_on_cpu0, validated};
    use super::*;
    use alloc::string::{String, ToString};
    use alloc::vec;

    fn error(cfg: SystemConfig) -> String {
        validated(cfg).unwrap_err().to_string()
    }

    #[test]
    fn two_vms_share_a_cpu_with_a_slice_in_range() {
        let mut cfg = two_vms_on_cpu0();
        cfg.board.slice_us = MIN_SLICE_US;
        assert!(validated(cfg.clone()).is_ok());
        cfg.board.slice_us = MAX_SLICE_US + 1;
        assert_eq!(
            error(cfg),
            "board.slice_us: 1000001 is out of range: a slice is 100 to 1000000 microseconds"
        );
    }

    #[test]
    fn a_timer_advance_is_bounded_and_needs_the_virtual_timer() {
        let mut cfg = two_vms_on_cpu0();
        cfg.vms[0].timer_advance_ns = MAX_TIMER_ADVANCE_NS;
        assert!(validated(cfg.clone()).is_ok());
        cfg.vms[0].timer_advance_ns = MAX_TIMER_ADVANCE_NS + 1;
        assert_eq!(
            error(cfg.clone()),
            "vm[0].timer_advance_ns: 100001 is out of range: an advance is 0 to 100000 ns"
        );
        cfg.vms[0].timer_advance_ns = 2000;
        cfg.vms[0].timer = TimerMode::Physical;
        assert_eq!(
            error(cfg.clone()),
            "vm[0].timer_advance_ns: the advance acts on the virtual timer; a VM with timer = \"physical\" is woken by its own timer's interrupt: set timer_advance_ns = 0"
        );
        cfg.vms[0].timer_advance_ns = 0;
        assert!(validated(cfg).is_ok());
    }

    #[test]
    fn the_physical_timer_goes_to_one_rtos_per_cpu() {
        let mut cfg = two_vms_on_cpu0();
        cfg.vms[0].timer = TimerMode::Physical;
        assert!(validated(cfg.clone()).is_ok());
        cfg.vms[1].timer = TimerMode::Physical;
        assert_eq!(
            error(cfg.clone()),
            "vm[1].timer: CPU 0 already gives its physical timer to vm[0] (\"a\"); only one VM per CPU can own it"
        );
        cfg.vms[1].kind = VmKind::Gpos;
        assert_eq!(
            error(cfg),
            "vm[1].timer: the physical timer is passed through only to a real-time VM (kind = \"rtos\")"
        );
        assert_eq!(TimerMode::from_name("physical"), Some(TimerMode::Physical));
        assert_eq!(TimerMode::from_name("hyp"), None);
    }

    #[test]
    fn each_spi_has_one_owner() {
        let mut cfg = two_vms_on_cpu0();
        cfg.vms[0].irqs = vec![40, 41];
        cfg.vms[1].irqs = vec![42];
        assert!(validated(cfg.clone()).is_ok());
        let cases = [
            (vec![41], "vm[1].irqs[0]: interrupt 41 is already owned by vm[0] (\"a\"): a physical interrupt goes to one VM"),
            (vec![42, 42], "vm[1].irqs[1]: interrupt 42 is already listed as vm[1].irqs[0]"),
            (vec![33], "vm[1].irqs[0]: 33 is the physical console's interrupt, which Partita keeps"),
            (vec![30], "vm[1].irqs[0]: 30 is not a shared peripheral interrupt of qemu-virt (32 to 287)"),
            (vec![288], "vm[1].irqs[0]: 288 is not a shared peripheral interrupt of qemu-virt (32 to 287)"),
        ];
        for (irqs, message) in cases {
            let mut c = cfg.clone();
            c.vms[1].irqs = irqs;
            assert_eq!(error(c), message);
        }
    }

    #[test]
    fn a_passed_through_spi_must_not_be_an_emulated_device_line() {
        let mut cfg = two_vms_on_cpu0();
        cfg.board.cpus = 2;
        cfg.vms[1].cpus = vec![1];
        cfg.vms[0].devices.push(crate::config::DeviceConfig::Pl011 {
            base: 0x0b00_0000,
            irq: 50,
        });
        cfg.vms[0].irqs = vec![50];
        assert_eq!(
            error(cfg),
            "vm[0].irqs[0]: interrupt 50 is already used by vm[0].device[2]"
        );
    }

    #[test]
    fn a_cpu_holds_at_most_max_vcpus_vms() {
        let mut cfg = two_vms_on_cpu0();
        let template = cfg.vms[0].clone();
        cfg.vms = (0..=MAX_VCPUS)
            .map(|n| {
                let mut vm = template.clone();
                vm.name = format!("vm{n}");
                vm.devices.clear();
                vm
            })
            .collect();
        assert_eq!(
            error(cfg),
            "vm[16].cpus[0]: CPU 0 already runs 16 VMs, the most one CPU can share"
        );
    }
}
