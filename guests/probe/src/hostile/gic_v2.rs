//! The probes of a GICv2 board (the ZCU102: GIC-400, Cortex-A53), and the GICv2 twins of the
//! GICv3 probes. What a guest reaches of a GICv2 under Partita:
//! - the distributor, trapped and emulated (Partita's GICv2 front-end of its vGIC model):
//!   read-only and reserved registers, INTIDs beyond its SPIs, GICD_ITARGETSR (banked and
//!   read-only for SGIs and PPIs), GICD_SGIR, GICD_CPENDSGIR/SPENDSGIR, access widths;
//! - the CPU interface, which is the board's GICV mapped into stage 2 at the GICC address:
//!   acknowledge, end and deactivation go to the hardware, which confines them to the list
//!   registers Partita loaded; its control state (GICV_CTLR, PMR, BPR: GICH_VMCR) must be
//!   the vCPU's own across switches;
//! - nothing else: the physical CPU interface, GICH, the physical GICV frames, the
//!   processing system's devices (Partita's Cadence UART, DMA, Ethernet...), OCM, QSPI and
//!   the RAM no VM has are aborts;
//! - the GICv3 system registers do not exist on this CPU: undefined.

use core::arch::asm;

use aarch64_cpu::registers::{Readable, CNTFRQ_EL0, CNTVCT_EL0};

use super::devices::{razwi, word_unchanged};
use super::expect_undefined;
use super::gic::drain;
use super::memory::load_and_store_abort;
use crate::checks::{expect_abort, expect_eq, expect_no_exception, Failure, Outcome};
use crate::gic::{
    Gic, GICC_AHPPIR, GICC_AIAR, GICC_BPR, GICC_CTLR, GICC_DIR, GICC_EOIR, GICC_PMR,
    GICD_CPENDSGIR, GICD_CTLR, GICD_ICENABLER, GICD_ICFGR, GICD_ICPENDR, GICD_ICPIDR2,
    GICD_ISENABLER, GICD_ISPENDR, GICD_ITARGETSR, GICD_SGIR, GICD_SPENDSGIR, GICD_TYPER,
    SGIR_TO_SELF, SPURIOUS,
};
use crate::mmio::{Load, Store, UNTOUCHED};
use crate::platform::Platform;

/// GICD_IIDR.
const GICD_IIDR: u64 = 0x0008;
/// Reserved distributor offsets (IHI 0048B table 4-1).
const GICD_RESERVED: [u64; 3] = [0x0040, 0x0f04, 0x0f80];
/// Registers of INTIDs 992..1023 and 1016..1023, beyond any SPI a VM has: GICD_ISENABLER31,
/// GICD_ISPENDR31, GICD_IPRIORITYR255, GICD_ITARGETSR254, GICD_ICFGR63.
const BEYOND_SPIS: [u64; 5] = [0x017c, 0x027c, 0x07fc, 0x0bf8, 0x0cfc];
/// The ZCU102's GIC-400 frames the VM is not given: the CPU interface's first 4 KiB alias and
/// the pages just below and past the VM's 8 KiB window (0xf902_f000), the hypervisor
/// interface GICH, and the virtual CPU interface GICV at its physical addresses.
const GIC_FRAMES: [u64; 6] = [
    0xf902_0000,
    0xf902_e000,
    0xf903_1000,
    0xf904_0000,
    0xf906_0000,
    0xf906_f000,
];
/// Processing-system devices of the ZCU102 that no VM has: UART 0 (Partita's console), the
/// ZDMA and APU control of the full-power domain, Ethernet, a triple timer counter, SD, the
/// inter-processor interrupt block and the RTC.
const PERIPHERALS: [u64; 8] = [
    0xff00_0000,
    0xfd50_0000,
    0xfd5c_0000,
    0xff0b_0000,
    0xff11_0000,
    0xff16_0000,
    0xff30_0000,
    0xffa6_0000,
];
/// On-chip memory, the QSPI linear window, the top of the low DDR bank and the high DDR bank
/// (RAM no VM of the suite has).
const OTHER_MEMORY: [u64; 4] = [0xfffc_0000, 0xc000_0000, 0x7fff_fff8, 0x8_0000_0000];
/// SGIs written per request kind in the flood.
const FLOOD: u32 = 2_500;
/// The board's SPIs as seen by the VM (32..192 on the ZCU102; the rest reads as zero).
const SPI_WORDS: core::ops::Range<u64> = 1..9;
const FOREIGN_SPI: u64 = 40;
const TIMER_PPI: u64 = 27;
/// GICD_ITARGETSR0..7 (SGIs and PPIs) of vCPU 0: each byte names CPU interface 0.
const OWN_TARGETS: u64 = 0x0101_0101;
/// What the CPU interface is left with while FreeRTOS takes the CPU: every interrupt masked,
/// the largest binary point, EOImode set and both groups off.
const MASKED_PMR: u64 = 0x00;
const LARGEST_BPR: u64 = 7;
const EOI_MODE_ONLY: u64 = 1 << 9;
/// Virtual time the CPU interface stays in that state: three of FreeRTOS's 1 ms ticks.
const KEEP_MS: u64 = 3;

/// The distributor and CPU interface, or a failure on a GICv3 (never the case: `Run`
/// calls these on a GICv2 only).
fn frames(p: &Platform) -> Result<(u64, u64), Failure> {
    match p.gic {
        Gic::V2 { gicd, gicc } => Ok((gicd, gicc)),
        Gic::V3 { .. } => Err(Failure::new(format_args!("not a GICv2"))),
    }
}

pub fn frames_not_mapped(_: &Platform) -> Outcome {
    GIC_FRAMES.into_iter().try_for_each(load_and_store_abort)
}

pub fn peripherals(_: &Platform) -> Outcome {
    PERIPHERALS.into_iter().try_for_each(load_and_store_abort)
}

pub fn other_memory(_: &Platform) -> Outcome {
    OTHER_MEMORY.into_iter().try_for_each(load_and_store_abort)
}

pub fn gicd_readonly(p: &Platform) -> Outcome {
    let (gicd, _) = frames(p)?;
    [GICD_TYPER, GICD_IIDR, GICD_ICPIDR2, GICD_ICFGR]
        .into_iter()
        .try_for_each(|offset| word_unchanged(gicd + offset))
}

pub fn reserved(p: &Platform) -> Outcome {
    let (gicd, _) = frames(p)?;
    GICD_RESERVED
        .into_iter()
        .try_for_each(|offset| razwi(gicd + offset, false))
}

pub fn beyond_spis(p: &Platform) -> Outcome {
    let (gicd, _) = frames(p)?;
    BEYOND_SPIS
        .into_iter()
        .try_for_each(|offset| razwi(gicd + offset, false))
}

/// A 64-bit load of GICD_TYPER, a byte store to GICD_CTLR, a halfword store to GICD_SGIR and
/// a halfword load of GICD_ITARGETSR8 are refused, not half-emulated.
pub fn wrong_width(p: &Platform) -> Outcome {
    let (gicd, _) = frames(p)?;
    let typer = gicd + GICD_TYPER;
    Load::Double.run(typer);
    expect_abort(format_args!("ldr x at {typer:#x}"), typer)?;
    let ctlr = gicd + GICD_CTLR;
    Store::Byte.run(ctlr, 0xff);
    expect_abort(format_args!("strb at {ctlr:#x}"), ctlr)?;
    let sgir = gicd + GICD_SGIR;
    Store::Half.run(sgir, SGIR_TO_SELF >> 16);
    expect_abort(format_args!("strh at {sgir:#x}"), sgir)?;
    let targets = gicd + GICD_ITARGETSR + 32;
    let got = Load::Half.run(targets);
    expect_abort(format_args!("ldrh at {targets:#x}"), targets)?;
    expect_eq(
        format_args!("ldrh at {targets:#x}: register"),
        got,
        UNTOUCHED,
    )?;
    expect_eq(
        format_args!("SGIs pending"),
        p.gic.pending_private() & 0xffff,
        0,
    )
}

/// GICD_SGIR requests for CPU interfaces the VM does not have: a target list without this
/// CPU, "all but me" on a one-vCPU VM, the reserved filter, an empty list, and the
/// reserved bits set. None may pend anything.
pub fn sgi_foreign_targets(p: &Platform) -> Outcome {
    let (gicd, _) = frames(p)?;
    let gic = p.gic;
    gic.enable(0);
    gic.disable(0xffff);
    Store::Word.run(gicd + GICD_ICPENDR, 0xffff);
    let requests = [
        (0xfe << 16) | 3,
        (1 << 24) | 4,
        (3 << 24) | (0xff << 16) | 5,
        6,
        (0x80 << 16) | 7,
        0xf000_8000 | (0xfe << 16) | 8,
    ];
    for _ in 0..FLOOD {
        requests
            .iter()
            .for_each(|&r| Store::Word.run(gicd + GICD_SGIR, r));
    }
    expect_eq(
        format_args!("SGIs pending"),
        gic.pending_private() & 0xffff,
        0,
    )?;
    expect_no_exception(format_args!("GICD_SGIR to others"))
}

/// Every SPI of the board pended, one enabled and targeted at CPU interfaces 1 to 7, which
/// the VM does not have: it reads back as targeting none and nothing is delivered.
pub fn spi_foreign_route(p: &Platform) -> Outcome {
    let (gicd, _) = frames(p)?;
    let gic = p.gic;
    gic.enable(0);
    for word in SPI_WORDS {
        Store::Word.run(gicd + GICD_ICENABLER + 4 * word, u64::from(u32::MAX));
        Store::Word.run(gicd + GICD_ISPENDR + 4 * word, u64::from(u32::MAX));
    }
    let target = gicd + GICD_ITARGETSR + FOREIGN_SPI;
    Store::Byte.run(target, 0xfe);
    let route = Load::Byte.run(target);
    let bank = gicd + 4 * (FOREIGN_SPI / 32);
    let bit = 1 << (FOREIGN_SPI % 32);
    Store::Word.run(bank + GICD_ISENABLER, bit);
    let delivered = drain(gic, None);
    Store::Word.run(bank + GICD_ICENABLER, bit);
    for word in SPI_WORDS {
        Store::Word.run(gicd + GICD_ICPENDR + 4 * word, u64::from(u32::MAX));
    }
    Store::Byte.run(target, 1);
    delivered?;
    expect_eq(format_args!("GICD_ITARGETSR40"), route, 0)?;
    expect_no_exception(format_args!("SPI registers"))
}

/// GICC_EOIR and GICC_DIR (the board's GICV) of interrupts the VM never acknowledged: the
/// timer's (forwarded with the HW bit), SPIs, special INTIDs, an SGI from another CPU and all
/// ones. The hardware finds no active list register and does nothing. The Group 1 aliases
/// GICC_AIAR and GICC_AHPPIR have nothing to give (the VM's interrupts are Group 0): they read
/// as 1023, or as zero on QEMU's GIC-400, which has no Security Extensions, and acknowledge
/// nothing.
pub fn eoi_dir_unowned(p: &Platform) -> Outcome {
    let (_, gicc) = frames(p)?;
    p.gic.enable(0);
    for value in [TIMER_PPI, 33, 40, 1020, 1023, 0x1c01, u64::from(u32::MAX)] {
        Store::Word.run(gicc + GICC_EOIR, value);
        Store::Word.run(gicc + GICC_DIR, value);
    }
    expect_no_exception(format_args!("GICC_EOIR/GICC_DIR"))?;
    drain(p.gic, None)?;
    for offset in [GICC_AHPPIR, GICC_AIAR] {
        let intid = Load::Word.run(gicc + offset) & 0x3ff;
        if intid != 0 && intid != SPURIOUS {
            return Err(Failure::new(format_args!(
                "{:#x} gave INTID {intid}",
                gicc + offset
            )));
        }
    }
    drain(p.gic, None)
}

/// GICD_ITARGETSR0 to 7 (SGIs and PPIs) are read-only and name the accessing CPU.
pub fn private_targets(p: &Platform) -> Outcome {
    let (gicd, _) = frames(p)?;
    (0..8)
        .map(|n| gicd + GICD_ITARGETSR + 4 * n)
        .try_for_each(|addr| {
            word_unchanged(addr)?;
            expect_eq(format_args!("{addr:#x}"), Load::Word.run(addr), OWN_TARGETS)
        })
}

/// GICD_SPENDSGIR and GICD_CPENDSGIR (the SGIs pending per source CPU): all ones written,
/// nothing pends, they read as zero.
pub fn sgi_pending_registers(p: &Platform) -> Outcome {
    let (gicd, _) = frames(p)?;
    let gic = p.gic;
    gic.disable(0xffff);
    Store::Word.run(gicd + GICD_ICPENDR, 0xffff);
    for n in 0..4 {
        Store::Word.run(gicd + GICD_SPENDSGIR + 4 * n, u64::from(u32::MAX));
    }
    expect_no_exception(format_args!("GICD_SPENDSGIR writes"))?;
    for n in 0..4 {
        let addr = gicd + GICD_SPENDSGIR + 4 * n;
        expect_eq(format_args!("{addr:#x}"), Load::Word.run(addr), 0)?;
    }
    expect_eq(
        format_args!("SGIs pending"),
        gic.pending_private() & 0xffff,
        0,
    )?;
    for n in 0..4 {
        Store::Word.run(gicd + GICD_CPENDSGIR + 4 * n, u64::from(u32::MAX));
    }
    expect_no_exception(format_args!("GICD_CPENDSGIR writes"))
}

/// The GICv3 CPU interface's system registers (ICC_SGI1R_EL1, ICC_IAR1_EL1, ICC_SRE_EL1) on a
/// CPU whose GIC is a GICv2: undefined, and no SGI pends.
pub fn icc_registers_absent(p: &Platform) -> Outcome {
    // SAFETY: an SGI request through a register this CPU does not have; the probe's vector
    // records the undefined instruction and skips it.
    unsafe { asm!("msr S3_0_C12_C11_5, {}", in(reg) (1u64 << 40) | (1 << 24), options(nostack)) };
    expect_undefined(format_args!("msr ICC_SGI1R_EL1"))?;
    let mut iar = UNTOUCHED;
    // SAFETY: as above, a read into a Rust variable.
    unsafe { asm!("mrs {}, S3_0_C12_C12_0", inout(reg) iar, options(nostack)) };
    expect_undefined(format_args!("mrs ICC_IAR1_EL1"))?;
    expect_eq(format_args!("ICC_IAR1_EL1 read"), iar, UNTOUCHED)?;
    // SAFETY: as above.
    unsafe { asm!("msr S3_0_C12_C12_5, {}", "isb", in(reg) 7u64, options(nostack)) };
    expect_undefined(format_args!("msr ICC_SRE_EL1"))?;
    expect_eq(
        format_args!("SGIs pending"),
        p.gic.pending_private() & 0xffff,
        0,
    )
}

/// The CPU interface left with every interrupt masked, EOImode set and both groups off
/// while FreeRTOS takes the CPU three times: the state is the vCPU's own (GICH_VMCR, switched
/// by Partita), so it reads back unchanged here, and FreeRTOS's own interface keeps taking
/// its ticks (the host's deadline probe).
pub fn cpu_interface_state_kept(p: &Platform) -> Outcome {
    let (_, gicc) = frames(p)?;
    Store::Word.run(gicc + GICC_PMR, MASKED_PMR);
    Store::Word.run(gicc + GICC_BPR, LARGEST_BPR);
    Store::Word.run(gicc + GICC_CTLR, EOI_MODE_ONLY);
    let ticks = CNTFRQ_EL0.get() * KEEP_MS / 1000;
    let start = CNTVCT_EL0.get();
    while CNTVCT_EL0.get().wrapping_sub(start) < ticks {
        core::hint::spin_loop();
    }
    let kept = [
        (Load::Word.run(gicc + GICC_PMR), MASKED_PMR, "GICC_PMR"),
        (Load::Word.run(gicc + GICC_BPR), LARGEST_BPR, "GICC_BPR"),
        (Load::Word.run(gicc + GICC_CTLR), EOI_MODE_ONLY, "GICC_CTLR"),
    ];
    p.gic.enable(0);
    Store::Word.run(gicc + GICC_BPR, 0);
    for (got, want, name) in kept {
        expect_eq(format_args!("{name} after {KEEP_MS} ms"), got, want)?;
    }
    expect_no_exception(format_args!("CPU interface accesses"))
}
