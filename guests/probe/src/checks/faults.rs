//! Checks of accesses Partita must refuse with an injected synchronous external abort
//! (instructions without syndrome, a device that refuses, unmapped guest-physical memory),
//! and of the emulated PL011's identity.

use super::{expect_abort, expect_eq, Outcome};
use crate::mmio::{self, Load, Store, UNTOUCHED};
use crate::platform::Platform;

const TESTDEV_FAULT: u64 = 0x18;
const UNMAPPED_HIGH: u64 = 0x1_0000_0000;
/// PL011 `UARTPeriphID0..3` and `UARTPCellID0..3` (PL011 TRM 3.3.16-17); the revision in
/// PeriphID2 bits 7:4 is not checked.
const PL011_ID_BASE: u64 = 0xfe0;
const PL011_IDS: [(u64, u64); 7] = [
    (0x0, 0x11),
    (0x4, 0x10),
    (0xc, 0x00),
    (0x10, 0x0d),
    (0x14, 0xf0),
    (0x18, 0x05),
    (0x1c, 0xb1),
];

pub fn load_pair(p: &Platform) -> Outcome {
    let addr = p.testdev;
    let (first, second) = mmio::load_pair(addr);
    expect_abort(format_args!("ldp at {addr:#x}"), addr)?;
    expect_eq(format_args!("ldp first register"), first, UNTOUCHED)?;
    expect_eq(format_args!("ldp second register"), second, UNTOUCHED)
}

/// A load and a store of `addr` must each abort with FAR = `addr`.
fn load_and_store_abort(addr: u64) -> Outcome {
    let got = Load::Double.run(addr);
    expect_abort(format_args!("ldr x at {addr:#x}"), addr)?;
    expect_eq(format_args!("ldr x at {addr:#x}: register"), got, UNTOUCHED)?;
    Load::Byte.run(addr);
    expect_abort(format_args!("ldrb w at {addr:#x}"), addr)?;
    Store::Word.run(addr, 0x1234_5678);
    expect_abort(format_args!("str w at {addr:#x}"), addr)
}

pub fn fault_register(p: &Platform) -> Outcome {
    load_and_store_abort(p.testdev + TESTDEV_FAULT)
}

pub fn unmapped_low(_: &Platform) -> Outcome {
    load_and_store_abort(crate::UNMAPPED)
}

pub fn unmapped_high(_: &Platform) -> Outcome {
    load_and_store_abort(UNMAPPED_HIGH)
}

pub fn pl011_ids(p: &Platform) -> Outcome {
    for (offset, want) in PL011_IDS {
        let addr = p.uart + PL011_ID_BASE + offset;
        expect_eq(
            format_args!("ldr w at {addr:#x}"),
            Load::Word.run(addr),
            want,
        )?;
    }
    let addr = p.uart + PL011_ID_BASE;
    Load::Double.run(addr);
    expect_abort(format_args!("ldr x at {addr:#x}"), addr)
}
