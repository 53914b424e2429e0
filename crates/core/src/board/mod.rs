//! Board descriptions: where RAM, the devices, the CPUs, the GIC, the console and the timers
//! are on a platform.
//!
//! A board is data: one file per board (`qemu_virt.rs`, `zcu102.rs`) holds one `Board` value,
//! and `Platform` lists them under the names configurations use. The host tool uses the
//! description to validate configurations, to place VMs and to start QEMU; the hypervisor is
//! built for one board (`PARTITA_PLATFORM`) and finds its devices, its CPUs and the memory it
//! maps in that same value. No code outside these files and the drivers names a board.
//! Addresses are physical. docs/boards.md tells how to add one.

use serde::{Deserialize, Serialize};

mod qemu_virt;
mod zcu102;

pub use qemu_virt::QEMU_VIRT;
pub use zcu102::ZCU102;

/// A platform Partita knows how to run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Platform {
    /// QEMU's `virt` machine with `virtualization=on,gic-version=3`.
    QemuVirt,
    /// QEMU's `xlnx-zcu102` (Zynq UltraScale+ MPSoC) with `virtualization=on`.
    Zcu102,
}

impl Platform {
    /// All platforms, for messages that list the accepted names.
    pub const ALL: [Platform; 2] = [Platform::QemuVirt, Platform::Zcu102];

    /// The name used in configuration files.
    pub fn name(self) -> &'static str {
        self.board().name
    }

    /// Looks a platform up by its configuration name.
    pub fn from_name(name: &str) -> Option<Platform> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The description of this platform.
    pub const fn board(self) -> &'static Board {
        match self {
            Platform::QemuVirt => &QEMU_VIRT,
            Platform::Zcu102 => &ZCU102,
        }
    }
}

/// A physical address range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    pub base: u64,
    pub size: u64,
}

impl Region {
    pub const fn new(base: u64, size: u64) -> Self {
        Region { base, size }
    }

    /// One past the last byte; `None` when the region wraps the address space.
    pub fn end(&self) -> Option<u64> {
        self.base.checked_add(self.size)
    }

    /// Whether the two regions share at least one byte.
    pub fn overlaps(&self, other: &Region) -> bool {
        let (Some(a_end), Some(b_end)) = (self.end(), other.end()) else {
            return true;
        };
        self.size != 0 && other.size != 0 && self.base < b_end && other.base < a_end
    }

    /// Whether `other` lies wholly inside this region.
    pub fn contains(&self, other: &Region) -> bool {
        match (self.end(), other.end()) {
            (Some(a_end), Some(b_end)) => other.base >= self.base && b_end <= a_end,
            _ => false,
        }
    }
}

/// The kind of UART Partita's console drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UartKind {
    /// Arm PrimeCell PL011.
    Pl011,
    /// Cadence UART (Zynq and Zynq UltraScale+).
    Cadence,
}

/// The physical console UART.
#[derive(Clone, Copy, Debug)]
pub struct Uart {
    pub kind: UartKind,
    pub region: Region,
    /// Its interrupt (INTID).
    pub irq: u32,
}

/// A GICv3: distributor, and redistributors of one frame pair of `gicr_stride` bytes per CPU;
/// the CPU interfaces are system registers.
#[derive(Clone, Copy, Debug)]
pub struct GicV3 {
    pub gicd: Region,
    pub gicr: Region,
    pub gicr_stride: u64,
}

/// A GICv2 with the virtualization extensions (GIC-400): distributor, CPU interface, virtual
/// interface control (GICH) and virtual CPU interface (GICV), each frame with its registers
/// contiguous (`gicc` and `gicv` are 8 KiB).
#[derive(Clone, Copy, Debug)]
pub struct GicV2 {
    pub gicd: Region,
    pub gicc: Region,
    pub gich: Region,
    pub gicv: Region,
}

/// The GIC and its register frames.
#[derive(Clone, Copy, Debug)]
pub enum Gic {
    V3(GicV3),
    V2(GicV2),
}

impl Gic {
    /// The distributor.
    pub const fn distributor(&self) -> Region {
        match self {
            Gic::V3(v3) => v3.gicd,
            Gic::V2(v2) => v2.gicd,
        }
    }

    /// The GIC windows a guest with `vcpus` vCPUs sees at the same addresses: the
    /// distributor, and one redistributor per vCPU (GICv3) or the CPU interface (GICv2).
    pub const fn guest_windows(&self, vcpus: usize) -> [Region; 2] {
        match self {
            Gic::V3(v3) => [
                v3.gicd,
                Region::new(v3.gicr.base, v3.gicr_stride * vcpus as u64),
            ],
            Gic::V2(v2) => [v2.gicd, v2.gicc],
        }
    }

    /// Every register frame, for checks.
    pub fn frames(&self) -> alloc::vec::Vec<Region> {
        match self {
            Gic::V3(v3) => alloc::vec![v3.gicd, v3.gicr],
            Gic::V2(v2) => alloc::vec![v2.gicd, v2.gicc, v2.gich, v2.gicv],
        }
    }
}

/// How the host tool starts the board in QEMU.
#[derive(Clone, Copy, Debug)]
pub struct QemuMachine {
    /// `-M` argument.
    pub machine: &'static str,
    /// `-m` argument: the RAM `Board::ram` describes.
    pub memory: &'static str,
    /// Further arguments the machine needs.
    pub extra: &'static [&'static str],
}

/// Everything Partita needs to know about a board.
#[derive(Debug)]
pub struct Board {
    pub platform: Platform,
    /// The name configurations give (`[board] platform`).
    pub name: &'static str,
    pub qemu: QemuMachine,
    /// Main memory, in address order.
    pub ram: &'static [Region],
    /// Device memory Partita's EL2 map covers (as Device-nGnRE, never executable).
    pub devices: &'static [Region],
    /// The part of RAM that Partita keeps for itself: its code, data, heap and the bundle
    /// of guest images. No VM memory may be placed here.
    pub hypervisor: Region,
    /// Where the hypervisor image is loaded and entered (its link address).
    pub hypervisor_load: u64,
    /// The MPIDR affinity fields (Aff3 at 39:32, Aff2..Aff0 at 23:0) of each physical CPU:
    /// CPU `n` of a configuration is the `n`-th entry.
    pub cpus: &'static [u64],
    /// The physical console.
    pub uart: Uart,
    pub gic: Gic,
    /// Generic timer PPIs (INTIDs).
    pub timer_hyp_irq: u32,
    pub timer_virt_irq: u32,
    pub timer_phys_irq: u32,
    /// GIC maintenance interrupt (INTID).
    pub maintenance_irq: u32,
    /// Number of SPIs the distributor implements (INTIDs 32..32+spis).
    pub spis: u32,
}

impl Board {
    /// Largest number of physical CPUs.
    pub fn max_cpus(&self) -> u8 {
        u8::try_from(self.cpus.len()).unwrap_or(u8::MAX)
    }

    /// The RAM bank holding all of `region`, if one does.
    pub fn ram_bank_of(&self, region: &Region) -> Option<Region> {
        self.ram.iter().copied().find(|bank| bank.contains(region))
    }

    /// The RAM banks as text, for messages: `0x0..0x80000000, 0x800000000..0x880000000`.
    pub fn ram_ranges(&self) -> alloc::string::String {
        let ranges: alloc::vec::Vec<_> = self
            .ram
            .iter()
            .map(|r| alloc::format!("{:#x}..{:#x}", r.base, r.base.wrapping_add(r.size)))
            .collect();
        ranges.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_and_containment() {
        let a = Region::new(0x1000, 0x1000);
        assert!(a.overlaps(&Region::new(0x1fff, 1)));
        assert!(!a.overlaps(&Region::new(0x2000, 1)));
        assert!(!a.overlaps(&Region::new(0x0, 0x1000)));
        assert!(a.contains(&Region::new(0x1800, 0x800)));
        assert!(!a.contains(&Region::new(0x1800, 0x801)));
        assert!(Region::new(u64::MAX, 2).end().is_none());
    }

    #[test]
    fn platform_names_round_trip() {
        for p in Platform::ALL {
            assert_eq!(Platform::from_name(p.name()), Some(p));
            assert_eq!(p.board().platform, p);
        }
        assert_eq!(Platform::from_name("rpi4"), None);
    }

    /// What Partita relies on in every description: it lives in RAM and is entered there,
    /// RAM banks are ordered and disjoint, no device overlaps RAM, and no 1 GiB block of
    /// Partita's EL2 map holds both RAM and a device (the map uses 1 GiB blocks).
    #[test]
    fn every_board_is_consistent() {
        const GIB: u64 = 1 << 30;
        for p in Platform::ALL {
            let b = p.board();
            assert!(b.ram_bank_of(&b.hypervisor).is_some(), "{}", b.name);
            assert!(b.hypervisor.contains(&Region::new(b.hypervisor_load, 1)));
            assert!(b.hypervisor_load.is_multiple_of(0x20_0000), "{}", b.name);
            assert!(!b.cpus.is_empty() && b.cpus.len() <= 8, "{}", b.name);
            for pair in b.ram.windows(2) {
                assert!(pair[0].end().unwrap() <= pair[1].base, "{}", b.name);
            }
            let frames = b.gic.frames();
            for d in frames.iter().chain(core::iter::once(&b.uart.region)) {
                assert!(b.devices.iter().any(|r| r.contains(d)), "{}: {d:?}", b.name);
            }
            for d in b.devices {
                for bank in b.ram {
                    assert!(!d.overlaps(bank), "{}: {d:?}", b.name);
                    let block = |a: u64| a / GIB;
                    let (d_first, d_last) = (block(d.base), block(d.end().unwrap() - 1));
                    let (r_first, r_last) = (block(bank.base), block(bank.end().unwrap() - 1));
                    assert!(d_last < r_first || d_first > r_last, "{}: {d:?}", b.name);
                }
            }
        }
    }
}
