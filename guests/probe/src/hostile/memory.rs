//! Probes of memory that is not the VM's: other VMs' RAM and Partita's own, named by their
//! physical addresses used as guest-physical ones (configs/tests/hostile.toml and
//! configs/tests/zcu102-hostile.toml pin them alike), and the physical devices of QEMU
//! `virt` that Partita keeps for itself or leaves unassigned (the ZCU102's are `gic_v2`'s).
//! Every access must end in an injected synchronous external abort at the address touched.

use crate::checks::{expect_abort, expect_eq, Outcome};
use crate::gic::Gic;
use crate::mmio::{Load, Store, UNTOUCHED};
use crate::platform::Platform;

/// The FreeRTOS VM's RAM and the wreck VM's, physically (configs/tests/hostile.toml).
const FREERTOS_PHYS: u64 = 0x6000_0000;
const WRECK_PHYS: u64 = 0x6060_0000;
/// This VM's own RAM, physically: only its guest-physical 0x4000_0000 may reach it.
const OWN_PHYS: u64 = 0x6040_0000;
/// Partita's load address and the middle of its heap and bundle: on QEMU `virt` (a GICv3
/// board) in 0x4000_0000..0x6000_0000, on the ZCU102 (GICv2) in 0..0x2000_0000.
const PARTITA_IMAGE_V3: u64 = 0x4020_0000;
const PARTITA_HEAP_V3: u64 = 0x5000_0000;
const PARTITA_IMAGE_V2: u64 = 0x0020_0000;
const PARTITA_HEAP_V2: u64 = 0x1000_0000;
/// The last double word below this VM's RAM; the top of the 39-bit guest-physical space,
/// and the top of the 40-bit space just past it (beyond what stage 2 translates at all).
const BELOW_RAM: u64 = 0x3fff_fff8;
const IPA_TOP: [u64; 2] = [0x7f_ffff_fff8, 0xff_ffff_fff8];
/// QEMU `virt`: GIC ITS, the redistributor of a second CPU, GICv2 CPU interface and its
/// hypervisor/virtual-CPU frames, PL031, fw_cfg, PL061, flash, PCIe MMIO and ECAM, secure RAM.
const GIC_ITS: u64 = 0x0808_0000;
const GICR_CPU1: u64 = 0x080c_0000;
const GICV2_FRAMES: [u64; 3] = [0x0801_0000, 0x0803_0000, 0x0804_0000];
const PLATFORM_DEVICES: [u64; 3] = [0x0901_0000, 0x0902_0000, 0x0903_0000];
const FLASH_PCIE_SECURE: [u64; 4] = [0x0000_0000, 0x1000_0000, 0x3f00_0000, 0x0e00_0000];

/// A 64-bit load from `addr` aborts and leaves its register untouched.
pub(super) fn load_aborts(addr: u64) -> Outcome {
    let got = Load::Double.run(addr);
    expect_abort(format_args!("ldr x at {addr:#x}"), addr)?;
    expect_eq(format_args!("ldr x at {addr:#x}: register"), got, UNTOUCHED)
}

/// A 64-bit store to `addr` aborts.
pub(super) fn store_aborts(addr: u64) -> Outcome {
    Store::Double.run(addr, 0xbad0_bad0_bad0_bad0);
    expect_abort(format_args!("str x at {addr:#x}"), addr)
}

pub(super) fn load_and_store_abort(addr: u64) -> Outcome {
    load_aborts(addr)?;
    store_aborts(addr)
}

pub fn freertos_ram_read(_: &Platform) -> Outcome {
    load_aborts(FREERTOS_PHYS)?;
    load_aborts(FREERTOS_PHYS + 0x20_0000)
}

pub fn freertos_ram_write(_: &Platform) -> Outcome {
    store_aborts(FREERTOS_PHYS)?;
    store_aborts(FREERTOS_PHYS + 0x20_0000)
}

pub fn sibling_ram(_: &Platform) -> Outcome {
    load_and_store_abort(WRECK_PHYS)
}

pub fn own_phys_alias(_: &Platform) -> Outcome {
    load_and_store_abort(OWN_PHYS)
}

pub fn partita_image(p: &Platform) -> Outcome {
    load_and_store_abort(match p.gic {
        Gic::V3 { .. } => PARTITA_IMAGE_V3,
        Gic::V2 { .. } => PARTITA_IMAGE_V2,
    })
}

pub fn partita_heap(p: &Platform) -> Outcome {
    load_and_store_abort(match p.gic {
        Gic::V3 { .. } => PARTITA_HEAP_V3,
        Gic::V2 { .. } => PARTITA_HEAP_V2,
    })
}

pub fn below_own_ram(_: &Platform) -> Outcome {
    load_and_store_abort(BELOW_RAM)
}

pub fn ipa_top(_: &Platform) -> Outcome {
    IPA_TOP.into_iter().try_for_each(load_and_store_abort)
}

pub fn gic_its(_: &Platform) -> Outcome {
    load_and_store_abort(GIC_ITS)
}

pub fn gicr_other_cpu(_: &Platform) -> Outcome {
    load_and_store_abort(GICR_CPU1)?;
    load_and_store_abort(GICR_CPU1 + 0x1_0000)
}

pub fn gicv2_frames(_: &Platform) -> Outcome {
    GICV2_FRAMES.into_iter().try_for_each(load_and_store_abort)
}

pub fn platform_devices(_: &Platform) -> Outcome {
    PLATFORM_DEVICES
        .into_iter()
        .try_for_each(load_and_store_abort)
}

pub fn flash_pcie_secure(_: &Platform) -> Outcome {
    FLASH_PCIE_SECURE
        .into_iter()
        .try_for_each(load_and_store_abort)
}
