//! Probes through the probe's own stage-1 translation and instruction fetches: a stage-1
//! table placed in another VM's memory (the walk itself faults at stage 2), a virtual alias
//! of the test device (Partita must emulate by the faulting guest-physical address, not the
//! virtual one), a virtual page mapped onto another VM's memory, and branches into memory
//! the VM does not own. Translation runs only inside `with_mmu`, on tables in the probe's
//! .bss, and is turned off again before the probe returns.

use core::arch::asm;
use core::ptr::addr_of_mut;

use crate::checks::{expect_eq, Failure, Outcome};
use crate::exceptions::{self, EC_DATA_ABORT_SAME_EL};
use crate::mmio::{Load, UNTOUCHED};
use crate::platform::Platform;

/// ESR_EL1.EC of an instruction abort without a change in exception level.
const EC_INSTRUCTION_ABORT_SAME_EL: u64 = 0x21;
const EXTERNAL_ABORT: u64 = 0x10;
/// The FreeRTOS VM's RAM, physically (configs/tests/hostile.toml).
const FREERTOS_PHYS: u64 = 0x6000_0000;
/// The probe's RAM and the virtual windows the probes use: 0x8000_0000 is walked through a
/// table in FreeRTOS's RAM; 0xc000_0000 aliases the test device, 0xc000_1000 FreeRTOS's RAM.
const OWN_RAM: u64 = 0x4000_0000;
const VA_FOREIGN_TABLE: u64 = 0x8000_0000;
const VA_DEVICE_ALIAS: u64 = 0xc000_0000;
const VA_FOREIGN_PAGE: u64 = 0xc000_1000;
const TESTDEV_ID: u64 = 0x8899_aabb_ccdd_eeff;
/// Descriptor bits: valid block/table/page, AF, AttrIndx 1 (normal memory).
const BLOCK: u64 = 0b01;
const TABLE: u64 = 0b11;
const PAGE: u64 = 0b11;
const AF: u64 = 1 << 10;
const NORMAL: u64 = 1 << 2;
/// MAIR_EL1: attribute 0 Device-nGnRnE, attribute 1 Normal non-cacheable.
const MAIR: u64 = 0x44 << 8;
/// TCR_EL1: T0SZ = 25 (39-bit VAs, walks start at level 1), non-cacheable walks, 4 KiB
/// granule, EPD1 (no TTBR1 walks), IPS = 40 bits.
const TCR: u64 = 25 | (1 << 23) | (2 << 32);
/// Branch targets outside the VM: FreeRTOS's RAM, the test device window, Partita's image.
const FOREIGN_CODE: [u64; 3] = [FREERTOS_PHYS, 0x0a00_0000, 0x4020_0000];

#[repr(C, align(4096))]
struct Table([u64; 512]);

static mut LEVEL1: Table = Table([0; 512]);
static mut OWN_LEVEL2: Table = Table([0; 512]);
static mut ALIAS_LEVEL2: Table = Table([0; 512]);
static mut ALIAS_LEVEL3: Table = Table([0; 512]);

/// Writes entry `index` of `table`.
fn set(table: *mut Table, index: usize, descriptor: u64) {
    // SAFETY: `table` is one of this module's statics, `index` < 512, and the MMU is off while
    // the tables are written, so no walk reads them concurrently.
    unsafe { addr_of_mut!((*table).0[index]).write_volatile(descriptor) };
}

/// Builds the tables: 0..1 GiB device (the UART and test device), the probe's 2 MiB of RAM,
/// and the three probe windows.
fn build_tables() -> u64 {
    let (l1, own, alias2, alias3) = (
        addr_of_mut!(LEVEL1),
        addr_of_mut!(OWN_LEVEL2),
        addr_of_mut!(ALIAS_LEVEL2),
        addr_of_mut!(ALIAS_LEVEL3),
    );
    set(l1, 0, AF | BLOCK);
    set(l1, 1, own as u64 | TABLE);
    set(l1, 2, FREERTOS_PHYS | TABLE);
    set(l1, 3, alias2 as u64 | TABLE);
    set(own, 0, OWN_RAM | AF | NORMAL | BLOCK);
    set(alias2, 0, alias3 as u64 | TABLE);
    set(alias3, 0, 0x0a00_0000 | AF | PAGE);
    set(alias3, 1, FREERTOS_PHYS | AF | NORMAL | PAGE);
    l1 as u64
}

/// Runs `body` with the probe's stage-1 translation on, then turns it off again.
fn with_mmu<T>(body: impl FnOnce() -> T) -> T {
    let root = build_tables();
    // SAFETY: the tables map the probe's code, data, stack and devices at their own
    // addresses, so execution continues unchanged once translation is on.
    unsafe {
        asm!(
            "msr mair_el1, {mair}",
            "msr tcr_el1, {tcr}",
            "msr ttbr0_el1, {root}",
            "isb",
            "tlbi vmalle1",
            "dsb sy",
            "isb",
            "mrs {t}, sctlr_el1",
            "orr {t}, {t}, #1",
            "msr sctlr_el1, {t}",
            "isb",
            mair = in(reg) MAIR,
            tcr = in(reg) TCR,
            root = in(reg) root,
            t = out(reg) _,
            options(nostack)
        )
    };
    let result = body();
    // SAFETY: turns translation off again; addresses stay the same.
    unsafe {
        asm!(
            "mrs {t}, sctlr_el1",
            "bic {t}, {t}, #1",
            "msr sctlr_el1, {t}",
            "isb",
            "tlbi vmalle1",
            "dsb sy",
            "isb",
            t = out(reg) _,
            options(nostack)
        )
    };
    result
}

/// Exactly one exception of class `class`, external-abort status, at `far`.
fn expect_external(what: core::fmt::Arguments, class: u64, far: u64) -> Outcome {
    let Some(t) = exceptions::take_trap() else {
        return Err(Failure::new(format_args!("{what}: no exception")));
    };
    if t.count != 1 || t.class() != class || t.fault_status() != EXTERNAL_ABORT || t.far != far {
        return Err(Failure::new(format_args!(
            "{what}: ESR {:#x} FAR {:#x} ({} taken)",
            t.esr, t.far, t.count
        )));
    }
    Ok(())
}

/// A load through a stage-1 table that lies in FreeRTOS's RAM: the walk faults at stage 2 and
/// Partita injects an abort at the virtual address.
pub fn walk_foreign_table(_: &Platform) -> Outcome {
    let got = with_mmu(|| Load::Double.run(VA_FOREIGN_TABLE));
    expect_external(
        format_args!("ldr x at VA {VA_FOREIGN_TABLE:#x}"),
        EC_DATA_ABORT_SAME_EL,
        VA_FOREIGN_TABLE,
    )?;
    expect_eq(format_args!("register"), got, UNTOUCHED)
}

/// The test device through a virtual alias is emulated by its guest-physical address.
pub fn device_alias(_: &Platform) -> Outcome {
    let got = with_mmu(|| Load::Double.run(VA_DEVICE_ALIAS));
    expect_eq(
        format_args!("ID through VA {VA_DEVICE_ALIAS:#x}"),
        got,
        TESTDEV_ID,
    )
}

/// A virtual page mapped onto FreeRTOS's RAM: stage 2 faults and the abort names the
/// virtual address.
pub fn foreign_page(_: &Platform) -> Outcome {
    let got = with_mmu(|| Load::Double.run(VA_FOREIGN_PAGE));
    expect_external(
        format_args!("ldr x at VA {VA_FOREIGN_PAGE:#x}"),
        EC_DATA_ABORT_SAME_EL,
        VA_FOREIGN_PAGE,
    )?;
    expect_eq(format_args!("register"), got, UNTOUCHED)
}

/// Branches into memory the VM does not own: each fetch is a stage-2 instruction abort,
/// injected as a prefetch abort at the target (the vector returns to the link register).
pub fn exec_foreign(_: &Platform) -> Outcome {
    for target in FOREIGN_CODE {
        // SAFETY: a branch with link to an address the VM cannot fetch from; the prefetch
        // abort is recorded and the vector returns to x30, right after the `blr`. Every
        // register the callee could clobber under the C ABI is declared clobbered.
        unsafe {
            asm!(
                "blr {t}",
                t = in(reg) target,
                clobber_abi("C"),
            )
        };
        expect_external(
            format_args!("blr to {target:#x}"),
            EC_INSTRUCTION_ABORT_SAME_EL,
            target,
        )?;
    }
    Ok(())
}
