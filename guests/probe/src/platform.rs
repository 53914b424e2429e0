//! What the probe learns from its device tree: the console UART, the test device, the GIC
//! (its version and frames) and the boot arguments, with QEMU `virt` addresses as fallbacks
//! when the tree or a node is missing.
//!
//! The tree is hostile input like any other: its header is read with aborting-safe loads and
//! its size bounded before the `fdt` crate parses it.

use core::slice;

use fdt::Fdt;

use crate::gic::{self, Gic};
use crate::mmio::Load;

/// Where the console UART is when the device tree does not say.
pub const FALLBACK_UART: u64 = 0x0900_0000;
/// Where the test device is when the device tree does not say.
pub const FALLBACK_TESTDEV: u64 = 0x0a00_0000;
/// Partita keeps 64 KiB for a VM's device tree.
const DTB_MAX_SIZE: u32 = 0x1_0000;
const FDT_MAGIC: u32 = 0xd00d_feed;

pub struct Platform {
    /// Whether a device tree was found at the address in x0.
    pub dtb_found: bool,
    /// Console UART base, and whether the tree named it.
    pub uart: u64,
    pub uart_from_dtb: bool,
    /// Test device base, and whether the tree named it.
    pub testdev: u64,
    pub testdev_from_dtb: bool,
    /// The GIC, and whether the tree named it.
    pub gic: Gic,
    pub gic_from_dtb: bool,
    pub bootargs: &'static str,
}

impl Platform {
    /// Reads the device tree at `dtb` (x0 at entry), if there is one.
    pub fn discover(dtb: u64) -> Platform {
        let mut platform = Platform {
            dtb_found: false,
            uart: FALLBACK_UART,
            uart_from_dtb: false,
            testdev: FALLBACK_TESTDEV,
            testdev_from_dtb: false,
            gic: gic::FALLBACK,
            gic_from_dtb: false,
            bootargs: "",
        };
        if let Some(fdt) = open(dtb) {
            platform.dtb_found = true;
            platform.learn(&fdt);
        }
        platform
    }

    fn learn(&mut self, fdt: &Fdt<'static>) {
        if let Some(uart) = first_reg(fdt, "arm,pl011") {
            self.uart = uart;
            self.uart_from_dtb = true;
        }
        if let Some(testdev) = first_reg(fdt, "partita,testdev") {
            self.testdev = testdev;
            self.testdev_from_dtb = true;
        }
        if let Some(gic) = find_gic(fdt) {
            self.gic = gic;
            self.gic_from_dtb = true;
        }
        self.bootargs = fdt
            .find_node("/chosen")
            .and_then(|chosen| chosen.property("bootargs"))
            .and_then(|bootargs| bootargs.as_str())
            .unwrap_or("");
    }
}

/// The base address of the first node compatible with `compatible`.
fn first_reg(fdt: &Fdt<'static>, compatible: &str) -> Option<u64> {
    let node = fdt.find_compatible(&[compatible])?;
    let region = node.reg()?.next()?;
    Some(region.starting_address as u64)
}

/// The GIC node's version and its first two frames (distributor, then the redistributors
/// of a GICv3 or the CPU interface of a GICv2).
fn find_gic(fdt: &Fdt<'static>) -> Option<Gic> {
    let (node, v3) = match fdt.find_compatible(&[Gic::V3_COMPATIBLE]) {
        Some(node) => (node, true),
        None => (fdt.find_compatible(Gic::V2_COMPATIBLE)?, false),
    };
    let mut regions = node.reg()?;
    let gicd = regions.next()?.starting_address as u64;
    let second = regions.next()?.starting_address as u64;
    Some(if v3 {
        Gic::V3 { gicd, gicr: second }
    } else {
        Gic::V2 { gicd, gicc: second }
    })
}

/// The device tree at `dtb` if its header is sane.
fn open(dtb: u64) -> Option<Fdt<'static>> {
    if dtb == 0 || !dtb.is_multiple_of(8) {
        return None;
    }
    let magic = u32::from_be(Load::Word.run(dtb) as u32);
    let size = u32::from_be(Load::Word.run(dtb + 4) as u32);
    if magic != FDT_MAGIC || size > DTB_MAX_SIZE {
        return None;
    }
    // SAFETY: the header just read says a device tree of `size` bytes (at most 64 KiB) starts
    // at `dtb`, where Partita placed it in the VM's memory; the probe never writes there, so
    // the bytes stay valid and unchanged for the rest of the run.
    let bytes = unsafe { slice::from_raw_parts(dtb as *const u8, size as usize) };
    Fdt::new(bytes).ok()
}
