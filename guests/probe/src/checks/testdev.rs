//! Checks of MMIO emulation against Partita's test device: every load and store form, sign
//! and zero extension, partial writes, and register 31 as the zero register.
//!
//! Register offsets and values are the test device's contract
//! (`crates/core/src/devices/testdev.rs`); expected results are written out literally.

use super::{expect_eq, expect_no_exception, Outcome};
use crate::mmio::{self, Load, Store};
use crate::platform::Platform;

const ID: u64 = 0x00;
const SCRATCH: u64 = 0x08;
const WRITES: u64 = 0x10;
const BOOTS: u64 = 0x20;
const ID_VALUE: u64 = 0x8899_aabb_ccdd_eeff;

/// (load, offset in the ID register, whole destination register afterwards).
const ID_LOADS: &[(Load, u64, u64)] = &[
    (Load::Byte, 0, 0xff),
    (Load::Byte, 1, 0xee),
    (Load::Byte, 5, 0xaa),
    (Load::Byte, 7, 0x88),
    (Load::Half, 0, 0xeeff),
    (Load::Half, 2, 0xccdd),
    (Load::Half, 6, 0x8899),
    (Load::Word, 0, 0xccdd_eeff),
    (Load::Word, 4, 0x8899_aabb),
    (Load::Double, 0, ID_VALUE),
];

/// Sign-extending loads: an X destination is extended to 64 bits, a W destination to 32 bits
/// with the upper half of the X register cleared.
const SIGNED_LOADS: &[(Load, u64, u64)] = &[
    (Load::SignedByteX, 0, 0xffff_ffff_ffff_ffff),
    (Load::SignedByteW, 0, 0x0000_0000_ffff_ffff),
    (Load::SignedByteX, 7, 0xffff_ffff_ffff_ff88),
    (Load::SignedByteW, 7, 0x0000_0000_ffff_ff88),
    (Load::SignedHalfX, 2, 0xffff_ffff_ffff_ccdd),
    (Load::SignedHalfW, 2, 0x0000_0000_ffff_ccdd),
    (Load::SignedHalfW, 6, 0x0000_0000_ffff_8899),
    (Load::SignedWordX, 4, 0xffff_ffff_8899_aabb),
    (Load::SignedWordX, 0, 0xffff_ffff_ccdd_eeff),
];

/// Stores applied in order to SCRATCH: (store, offset, value with junk above the stored size).
const SCRATCH_STORES: &[(Store, u64, u64)] = &[
    (Store::Double, 0, 0x1111_2222_3333_4444),
    (Store::Word, 4, 0xdead_0000_5555_6666),
    (Store::Half, 2, 0xffff_abcd),
    (Store::Byte, 7, 0x1299),
    (Store::Byte, 0, 0x123),
];
const SCRATCH_AFTER: u64 = 0x9955_6666_abcd_4423;
/// Loads of SCRATCH afterwards: (load, offset, expected).
const SCRATCH_READS: &[(Load, u64, u64)] = &[
    (Load::Double, 0, SCRATCH_AFTER),
    (Load::Word, 4, 0x9955_6666),
    (Load::Half, 2, 0xabcd),
    (Load::Byte, 7, 0x99),
    (Load::Byte, 0, 0x23),
];

fn run_loads(base: u64, loads: &[(Load, u64, u64)]) -> Outcome {
    for &(load, offset, want) in loads {
        let got = load.run(base + offset);
        expect_eq(format_args!("{load} at +{offset:#x}"), got, want)?;
    }
    Ok(())
}

pub fn id_loads(p: &Platform) -> Outcome {
    run_loads(p.testdev + ID, ID_LOADS)
}

pub fn signed_loads(p: &Platform) -> Outcome {
    run_loads(p.testdev + ID, SIGNED_LOADS)
}

pub fn scratch_stores(p: &Platform) -> Outcome {
    let scratch = p.testdev + SCRATCH;
    for &(store, offset, value) in SCRATCH_STORES {
        store.run(scratch + offset, value);
        expect_no_exception(format_args!("{store} at +{offset:#x}"))?;
    }
    run_loads(scratch, SCRATCH_READS)
}

pub fn writes_count(p: &Platform) -> Outcome {
    let before = Load::Double.run(p.testdev + WRITES);
    Store::Byte.run(p.testdev + SCRATCH, 1);
    Store::Half.run(p.testdev + SCRATCH, 2);
    Store::Word.run(p.testdev + SCRATCH, 3);
    Store::Double.run(p.testdev + SCRATCH, 4);
    // Writes to read-only registers are ignored and not counted.
    Store::Double.run(p.testdev + WRITES, 0);
    Store::Double.run(p.testdev + ID, 0);
    let after = Load::Double.run(p.testdev + WRITES);
    expect_eq(
        format_args!("WRITES after 4 stores to SCRATCH"),
        after.wrapping_sub(before),
        4,
    )
}

pub fn zero_register_loads(p: &Platform) -> Outcome {
    let (sp_before, sp_after) = mmio::load_into_zero_registers(p.testdev + ID);
    expect_no_exception(format_args!("ldr xzr/wzr"))?;
    expect_eq(format_args!("SP after ldr xzr/wzr"), sp_after, sp_before)
}

pub fn zero_register_stores(p: &Platform) -> Outcome {
    let scratch = p.testdev + SCRATCH;
    Store::Double.run(scratch, u64::MAX);
    mmio::store_wzr(scratch + 4);
    let got = Load::Double.run(scratch);
    expect_eq(
        format_args!("SCRATCH after str wzr at +4"),
        got,
        0x0000_0000_ffff_ffff,
    )?;
    mmio::store_xzr(scratch);
    let got = Load::Double.run(scratch);
    expect_eq(format_args!("SCRATCH after str xzr"), got, 0)
}

/// The BOOTS register: 1 on first start, +1 after each SYSTEM_RESET.
pub fn boot_count(p: &Platform) -> u64 {
    Load::Double.run(p.testdev + BOOTS)
}

pub fn first_boot(p: &Platform) -> Outcome {
    expect_eq(format_args!("BOOTS"), boot_count(p), 1)
}
