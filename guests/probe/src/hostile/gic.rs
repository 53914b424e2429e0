//! Probes of interrupts a guest must not be able to raise, route or end outside its own
//! virtual GIC: floods of SGIs to itself and to CPUs it does not have, the Group 0 and
//! alias SGI registers, SPIs of the board it does not own pended, enabled and routed to
//! CPUs that do not exist, EOI and deactivation of interrupts it never acknowledged, and a
//! WFI storm. Interrupts stay masked in PSTATE: they are acknowledged by hand. The GICv3's
//! registers are QEMU `virt`'s; the SGI flood and the WFI storm go through `crate::gic` and
//! run on either GIC, and `gic_v2` has the GICv2 twins of the others.

use core::arch::asm;

use crate::checks::{expect_eq, expect_no_exception, Failure, Outcome};
use crate::gic::{Gic, FALLBACK, GICD_ICENABLER as ICENABLER, GICD_ICPENDR as ICPENDR, SPURIOUS};
use crate::mmio::{Load, Store};
use crate::platform::Platform;

use super::expect_undefined;

const GICD_ISENABLER: u64 = 0x0800_0100;
const GICD_ISPENDR: u64 = 0x0800_0200;
const GICD_ICPENDR: u64 = 0x0800_0280;
const GICD_ICENABLER: u64 = 0x0800_0180;
const GICD_IGROUPR: u64 = 0x0800_0080;
const GICD_IROUTER: u64 = 0x0800_6000;
const GICR_ICENABLER0: u64 = 0x080b_0180;
const GICR_ISPENDR0: u64 = 0x080b_0200;
const GICR_ICPENDR0: u64 = 0x080b_0280;
/// SGIs written in the flood.
const FLOOD: u32 = 20_000;
/// The board's SPIs: 32..288 on QEMU `virt`; the console's and the FreeRTOS UART's SPI 33.
const SPI_WORDS: core::ops::Range<u64> = 1..9;
const FOREIGN_SPI: u64 = 40;
/// WFI executed with an interrupt pending.
const WFI_STORM: u32 = 20_000;
const TIMER_PPI: u64 = 27;

/// Writes ICC_SGI1R_EL1.
fn sgi1r(value: u64) {
    // SAFETY: an SGI request only makes interrupts pending in the VM's virtual GIC.
    unsafe { asm!("msr S3_0_C12_C11_5, {}", in(reg) value, options(nostack)) };
}

/// Acknowledges until spurious; the INTIDs seen must all be `want` (or none at all).
pub(super) fn drain(gic: Gic, want: Option<u64>) -> Outcome {
    for _ in 0..64 {
        match gic.acknowledge() {
            SPURIOUS => return Ok(()),
            intid if Some(intid) == want => {}
            intid => return Err(Failure::new(format_args!("interrupt {intid} delivered"))),
        }
    }
    Err(Failure::new(format_args!("interrupts keep coming")))
}

pub fn sgi_flood_self(p: &Platform) -> Outcome {
    let gic = p.gic;
    gic.enable(0);
    gic.disable(0xffff);
    for i in 0..FLOOD {
        gic.sgi_to_self(u64::from(i % 16));
    }
    expect_eq(
        format_args!("SGIs pending after the flood"),
        gic.pending_private() & 0xffff,
        0xffff,
    )?;
    Store::Word.run(gic.private(ICPENDR), 0xffff);
    expect_eq(
        format_args!("SGIs pending once cleared"),
        gic.pending_private() & 0xffff,
        0,
    )?;
    expect_no_exception(format_args!("SGI flood"))
}

pub fn sgi_foreign_targets(_: &Platform) -> Outcome {
    // The VM's GIC on for Group 1 with every priority unmasked, no interrupt enabled.
    FALLBACK.enable(0);
    Store::Word.run(GICR_ICENABLER0, 0xffff);
    Store::Word.run(GICR_ICPENDR0, 0xffff);
    // IRM = 1 (everyone but me), other Aff0 bits, Aff1 = 1, Aff2 = 0xff, Aff3 = 0xff, RS = 15.
    let requests = [
        (1u64 << 40) | (3 << 24),
        0xfffe | (4 << 24),
        (1 << 16) | 1 | (5 << 24),
        (0xff << 32) | 1 | (6 << 24),
        (0xff << 48) | 1 | (7 << 24),
        (0xf << 44) | 0xffff | (8 << 24),
    ];
    for _ in 0..FLOOD / 8 {
        requests.iter().for_each(|&r| sgi1r(r));
    }
    expect_eq(
        format_args!("GICR_ISPENDR0"),
        Load::Word.run(GICR_ISPENDR0),
        0,
    )?;
    expect_no_exception(format_args!("ICC_SGI1R_EL1 to others"))
}

pub fn other_sgi_registers(_: &Platform) -> Outcome {
    // SAFETY: ICC_SGI0R_EL1 (Group 0) and ICC_ASGI1R_EL1 requests; Partita must refuse them.
    unsafe { asm!("msr S3_0_C12_C11_7, {}", in(reg) (1u64 << 40) | (1 << 24), options(nostack)) };
    expect_undefined(format_args!("ICC_SGI0R_EL1"))?;
    // SAFETY: as above.
    unsafe { asm!("msr S3_0_C12_C11_6, {}", in(reg) (1u64 << 40) | (2 << 24), options(nostack)) };
    expect_undefined(format_args!("ICC_ASGI1R_EL1"))?;
    expect_eq(
        format_args!("GICR_ISPENDR0"),
        Load::Word.run(GICR_ISPENDR0),
        0,
    )
}

/// Every SPI of the board pended and enabled, one routed to a CPU that does not exist: the
/// VM sees only its own virtual GIC and nothing reaches it through a missing CPU.
pub fn spi_foreign_route(p: &Platform) -> Outcome {
    // The VM's GIC on for Group 1 with every priority unmasked, no interrupt enabled.
    FALLBACK.enable(0);
    for word in SPI_WORDS {
        Store::Word.run(GICD_IGROUPR + 4 * word, u64::from(u32::MAX));
        Store::Word.run(GICD_ICENABLER + 4 * word, u64::from(u32::MAX));
        Store::Word.run(GICD_ISPENDR + 4 * word, u64::from(u32::MAX));
    }
    let router = GICD_IROUTER + 8 * FOREIGN_SPI;
    Store::Double.run(router, 0x0000_0001_0000_0005);
    let route = Load::Double.run(router);
    let bit = 1 << (FOREIGN_SPI % 32);
    Store::Word.run(GICD_ISENABLER + 4 * (FOREIGN_SPI / 32), bit);
    let delivered = drain(p.gic, None);
    Store::Word.run(GICD_ICENABLER + 4 * (FOREIGN_SPI / 32), bit);
    for word in SPI_WORDS {
        Store::Word.run(GICD_ICPENDR + 4 * word, u64::from(u32::MAX));
    }
    Store::Double.run(router, 0);
    delivered?;
    expect_eq(format_args!("GICD_IROUTER40"), route, 0x0000_0001_0000_0005)?;
    expect_no_exception(format_args!("SPI registers"))
}

pub fn eoi_dir_unowned(p: &Platform) -> Outcome {
    // The VM's GIC on for Group 1 with every priority unmasked, no interrupt enabled.
    FALLBACK.enable(0);
    for intid in [TIMER_PPI, 33, 40, 1020, 1023, 0xff_ffff] {
        // SAFETY: EOI and deactivation requests on the virtual CPU interface only.
        unsafe {
            asm!(
                "msr S3_0_C12_C12_1, {i}",
                "msr S3_0_C12_C11_1, {i}",
                "isb",
                i = in(reg) intid,
                options(nostack)
            )
        };
    }
    expect_no_exception(format_args!("ICC_EOIR1/ICC_DIR"))?;
    drain(p.gic, None)
}

/// The virtual timer fired and its interrupt stays pending and unacknowledged: every WFI
/// must return at once (each one traps).
pub fn wfi_storm(p: &Platform) -> Outcome {
    use aarch64_cpu::registers::{Writeable, CNTV_CTL_EL0, CNTV_TVAL_EL0};
    let gic = p.gic;
    gic.enable(1 << TIMER_PPI);
    CNTV_TVAL_EL0.set(0);
    CNTV_CTL_EL0.set(1);
    for _ in 0..WFI_STORM {
        aarch64_cpu::asm::wfi();
    }
    CNTV_CTL_EL0.set(0);
    let first = gic.acknowledge();
    Store::Word.run(gic.private(ICENABLER), 1 << TIMER_PPI);
    expect_eq(
        format_args!("interrupt after the WFI storm"),
        first,
        TIMER_PPI,
    )?;
    drain(gic, None)
}
