//! Board descriptions: where RAM, the console, the GIC and the timers are on a platform.
//!
//! A new board is a new `Board` value, not new code. The host tool uses the description to
//! validate configurations and to start QEMU; the hypervisor uses the same value to find its
//! devices. Addresses are physical.

use serde::{Deserialize, Serialize};

/// A platform Partita knows how to run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Platform {
    /// QEMU's `virt` machine with `virtualization=on,gic-version=3`.
    QemuVirt,
}

impl Platform {
    /// All platforms, for messages that list the accepted names.
    pub const ALL: [Platform; 1] = [Platform::QemuVirt];

    /// The name used in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            Platform::QemuVirt => "qemu-virt",
        }
    }

    /// Looks a platform up by its configuration name.
    pub fn from_name(name: &str) -> Option<Platform> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The description of this platform.
    pub fn board(self) -> &'static Board {
        match self {
            Platform::QemuVirt => &QEMU_VIRT,
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

/// Everything Partita needs to know about a board.
#[derive(Debug)]
pub struct Board {
    pub platform: Platform,
    /// Main memory.
    pub ram: Region,
    /// The start of RAM that Partita keeps for itself: its code, data, heap and the bundle
    /// of guest images. No VM memory may be placed here.
    pub hypervisor: Region,
    /// Where the hypervisor image is loaded and entered.
    pub hypervisor_load: u64,
    /// Largest number of physical CPUs.
    pub max_cpus: u8,
    /// The physical PL011 console and its interrupt (INTID).
    pub uart: Region,
    pub uart_irq: u32,
    /// GICv3 distributor.
    pub gicd: Region,
    /// GICv3 redistributors, one frame pair of `gicr_stride` bytes per CPU.
    pub gicr: Region,
    pub gicr_stride: u64,
    /// Generic timer PPIs (INTIDs).
    pub timer_hyp_irq: u32,
    pub timer_virt_irq: u32,
    pub timer_phys_irq: u32,
    /// GICv3 maintenance interrupt (INTID).
    pub maintenance_irq: u32,
    /// Number of SPIs the distributor implements (INTIDs 32..32+spis).
    pub spis: u32,
}

/// QEMU `virt` as the host tool starts it (`-m 4G`).
pub static QEMU_VIRT: Board = Board {
    platform: Platform::QemuVirt,
    ram: Region::new(0x4000_0000, 0x1_0000_0000),
    hypervisor: Region::new(0x4000_0000, 0x2000_0000),
    hypervisor_load: 0x4020_0000,
    max_cpus: 4,
    uart: Region::new(0x0900_0000, 0x1000),
    uart_irq: 33,
    gicd: Region::new(0x0800_0000, 0x1_0000),
    gicr: Region::new(0x080a_0000, 0x00f6_0000),
    gicr_stride: 0x2_0000,
    timer_hyp_irq: 26,
    timer_virt_irq: 27,
    timer_phys_irq: 30,
    maintenance_irq: 25,
    spis: 256,
};

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
        }
        assert_eq!(Platform::from_name("zcu102"), None);
    }

    #[test]
    fn qemu_virt_reserves_the_start_of_ram() {
        let b = Platform::QemuVirt.board();
        assert!(b.ram.contains(&b.hypervisor));
        assert!(b.hypervisor.contains(&Region::new(b.hypervisor_load, 1)));
    }
}
