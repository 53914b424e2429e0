//! The MMIO test device (`partita_core::devices::testdev`) under any sequence of accesses:
//! its documented register table holds at every offset, size and alignment.

#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use partita_core::devices::testdev::{TestDevice, BOOTS, FAULT, ID, ID_VALUE, SCRATCH, WRITES};
use partita_core::devices::{AccessSize, MmioDevice};
use partita_fuzz::Size;

#[derive(Arbitrary, Debug)]
enum Op {
    Read { offset: u64, size: Size },
    Write { offset: u64, size: Size, value: u64 },
}

/// The device as its table describes it.
struct Shadow {
    scratch: u64,
    writes: u64,
    boots: u64,
}

fn slice(reg: u64, offset: u64, size: AccessSize) -> u64 {
    (reg >> (8 * (offset & 7))) & size.mask()
}

fn read(dev: &mut TestDevice, shadow: &Shadow, offset: u64, size: AccessSize) {
    let result = dev.read(offset, size);
    if !offset.is_multiple_of(size.bytes()) || offset & !7 == FAULT {
        assert!(result.is_err(), "read {offset:#x} {size:?} accepted");
        return;
    }
    let expected = match offset & !7 {
        ID => slice(ID_VALUE, offset, size),
        SCRATCH => slice(shadow.scratch, offset, size),
        WRITES => slice(shadow.writes, offset, size),
        BOOTS => slice(shadow.boots, offset, size),
        _ => 0,
    };
    assert_eq!(result, Ok(expected), "read {offset:#x} {size:?}");
}

fn write(dev: &mut TestDevice, shadow: &mut Shadow, offset: u64, size: AccessSize, value: u64) {
    let result = dev.write(offset, size, value);
    if !offset.is_multiple_of(size.bytes()) || offset & !7 == FAULT {
        assert!(result.is_err(), "write {offset:#x} {size:?} accepted");
        return;
    }
    assert!(result.is_ok(), "write {offset:#x} {size:?} refused");
    if offset & !7 == SCRATCH {
        let shift = 8 * (offset & 7);
        let mask = size.mask() << shift;
        shadow.scratch = (shadow.scratch & !mask) | ((value << shift) & mask);
        shadow.writes += 1;
    }
}

fuzz_target!(|input: (u64, Vec<Op>)| {
    let (boots, ops) = input;
    let mut dev = TestDevice::new(boots);
    let mut shadow = Shadow {
        scratch: 0,
        writes: 0,
        boots,
    };
    for op in ops {
        match op {
            Op::Read { offset, size } => read(&mut dev, &shadow, offset, size.access()),
            Op::Write {
                offset,
                size,
                value,
            } => write(&mut dev, &mut shadow, offset, size.access(), value),
        }
    }
});
