//! The platform the guest runs on, read from the device tree it was booted with.
//!
//! It owns the decoding of the flattened device tree (QEMU's, the one Partita generates for
//! the VM, or the one Xen generates for a dom0less domU) into typed addresses and interrupt
//! numbers: the UART (a PL011, or Xen's emulated SBSA UART), the GIC the image was built
//! for (a GICv3's distributor and redistributor region, or a GICv2's distributor and CPU
//! interface), the generic timer's interrupts and the first memory region.
//! The tree is input from outside: anything missing or malformed is an error value, never
//! a panic.

use crate::gic;
use core::fmt;
use fdt::Fdt;

/// Interrupt-specifier type of a private peripheral interrupt (GIC binding).
const GIC_PPI: u32 = 1;
/// First INTID of the PPIs (GICv3 architecture, 2.2).
const PPI_BASE: u32 = 16;
/// Index of the non-secure physical and virtual timer in the armv8-timer binding.
const TIMER_PHYSICAL: usize = 1;
const TIMER_VIRTUAL: usize = 2;

/// The UART kinds the guest drives: a full PL011, or the SBSA generic UART (the PL011
/// subset without control registers, set up by firmware: Xen's `vpl011` for a domU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UartKind {
    Pl011,
    Sbsa,
}

/// The console UART the device tree names.
#[derive(Clone, Copy, Debug)]
pub struct Uart {
    pub base: usize,
    pub kind: UartKind,
}

impl UartKind {
    /// The name the banner prints.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pl011 => "pl011",
            Self::Sbsa => "sbsa-uart",
        }
    }

    fn compatible(self) -> &'static str {
        match self {
            Self::Pl011 => "arm,pl011",
            Self::Sbsa => "arm,sbsa-uart",
        }
    }
}

/// What the guest found in its device tree.
#[derive(Clone, Copy, Debug)]
pub struct Platform {
    pub uart: Uart,
    pub gic_distributor: usize,
    /// The GIC node's second region: a GICv3's redistributors, a GICv2's CPU interface.
    pub gic_second: usize,
    pub gic_second_size: usize,
    /// INTID of the EL1 virtual timer (CNTV), the tick source.
    pub virtual_timer_intid: u32,
    /// INTID of the EL1 physical timer (CNTP), the alternative tick source.
    pub physical_timer_intid: u32,
    pub memory_base: usize,
    pub memory_size: usize,
}

/// Why the device tree could not describe a usable platform.
#[derive(Clone, Copy, Debug)]
pub enum PlatformError {
    NoUart,
    NoGic,
    NoTimer,
    BadTimerInterrupts,
    NoMemory,
}

impl fmt::Display for PlatformError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reason = match self {
            Self::NoUart => "no arm,pl011 or arm,sbsa-uart node with a reg property",
            Self::NoGic => "no node of the GIC this image was built for with two regs",
            Self::NoTimer => "no arm,armv8-timer node with interrupts",
            Self::BadTimerInterrupts => "armv8-timer interrupts are not GIC PPI triplets",
            Self::NoMemory => "no memory node with a reg property",
        };
        f.write_str(reason)
    }
}

impl Platform {
    /// Finds the UART alone, so that later errors can be reported on it: the first node
    /// compatible with a PL011, else with the SBSA generic UART.
    pub fn console(fdt: &Fdt<'_>) -> Result<Uart, PlatformError> {
        [UartKind::Pl011, UartKind::Sbsa]
            .into_iter()
            .find_map(|kind| {
                let region = fdt.find_compatible(&[kind.compatible()])?.reg()?.next()?;
                Some(Uart {
                    base: region.starting_address as usize,
                    kind,
                })
            })
            .ok_or(PlatformError::NoUart)
    }

    /// Decodes the whole platform.
    pub fn from_fdt(fdt: &Fdt<'_>) -> Result<Self, PlatformError> {
        let uart = Self::console(fdt)?;
        let gic = fdt
            .find_compatible(gic::COMPATIBLE)
            .ok_or(PlatformError::NoGic)?;
        let mut regs = gic.reg().ok_or(PlatformError::NoGic)?;
        let distributor = regs.next().ok_or(PlatformError::NoGic)?;
        let second = regs.next().ok_or(PlatformError::NoGic)?;
        let timer = fdt
            .find_compatible(&["arm,armv8-timer"])
            .and_then(|node| node.property("interrupts"))
            .ok_or(PlatformError::NoTimer)?;
        let (memory_base, memory_size) = first_memory_region(fdt)?;
        Ok(Self {
            uart,
            gic_distributor: distributor.starting_address as usize,
            gic_second: second.starting_address as usize,
            gic_second_size: second.size.unwrap_or(0),
            virtual_timer_intid: timer_intid(timer.value, TIMER_VIRTUAL)?,
            physical_timer_intid: timer_intid(timer.value, TIMER_PHYSICAL)?,
            memory_base,
            memory_size,
        })
    }
}

/// The first region of the first node whose device_type is "memory".
fn first_memory_region(fdt: &Fdt<'_>) -> Result<(usize, usize), PlatformError> {
    fdt.all_nodes()
        .filter(|node| {
            node.property("device_type")
                .and_then(|property| property.as_str())
                == Some("memory")
        })
        .find_map(|node| node.reg()?.next())
        .map(|region| (region.starting_address as usize, region.size.unwrap_or(0)))
        .ok_or(PlatformError::NoMemory)
}

/// INTID of entry `index` of an armv8-timer `interrupts` property (3-cell GIC specifiers);
/// the generic timers are per-CPU, so only a PPI is accepted.
fn timer_intid(interrupts: &[u8], index: usize) -> Result<u32, PlatformError> {
    let cell = |n: usize| -> Result<u32, PlatformError> {
        let start = (index * 3 + n) * 4;
        interrupts
            .get(start..start + 4)
            .and_then(|bytes| bytes.try_into().ok())
            .map(u32::from_be_bytes)
            .ok_or(PlatformError::BadTimerInterrupts)
    };
    let number = cell(1)?;
    match cell(0)? {
        GIC_PPI if number < 16 => Ok(PPI_BASE + number),
        _ => Err(PlatformError::BadTimerInterrupts),
    }
}
