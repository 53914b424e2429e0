//! The PL011 model (`partita_core::devices::pl011`) under any sequence of guest accesses and
//! host input: it never panics, refuses exactly the accesses a PL011 cannot take, keeps its
//! FIFOs bounded and reports flags and interrupts that match what went in and out. A twin
//! model takes the same sequence with each `transmit_and_take` (the short exit's character)
//! done as a data-register store then `take_tx`: both must always agree.

#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use partita_core::devices::pl011::{fr, int, reg, Pl011, FIFO_DEPTH};
use partita_core::devices::{AccessSize, MmioDevice};
use partita_fuzz::Size;

#[derive(Arbitrary, Clone, Copy, Debug)]
enum Op {
    Read {
        offset: u16,
        size: Size,
    },
    Write {
        offset: u16,
        size: Size,
        value: u64,
    },
    /// An access anywhere in a 64-bit offset space (past the 4 KiB frame).
    Far {
        offset: u64,
        size: Size,
        write: bool,
    },
    Receive(u8),
    TakeTx,
    /// A character as the short exit writes it: stored to UARTDR, then drained.
    TransmitAndTake(u64),
}

/// What the guest and the host have put in and taken out: the FIFO fill levels.
#[derive(Default)]
struct Shadow {
    rx: usize,
    tx: usize,
}

const ID_BYTES: [u64; 8] = [0x11, 0x10, 0x34, 0x00, 0x0d, 0xf0, 0x05, 0xb1];

/// The PL011 refuses 64-bit, misaligned and out-of-frame accesses only.
fn allowed(offset: u64, size: AccessSize) -> bool {
    size != AccessSize::Double && offset.is_multiple_of(size.bytes()) && offset < 0x1000
}

fn read(uart: &mut Pl011, shadow: &mut Shadow, offset: u64, size: AccessSize) {
    let result = uart.read(offset, size);
    assert_eq!(
        result.is_ok(),
        allowed(offset, size),
        "read {offset:#x} {size:?}"
    );
    let Ok(value) = result else { return };
    assert_eq!(value & !size.mask(), 0);
    if offset == reg::DR {
        shadow.rx = shadow.rx.saturating_sub(1);
    }
    let word = offset & !3;
    let known = [
        reg::DR,
        reg::RSR_ECR,
        reg::FR,
        reg::ILPR,
        reg::IBRD,
        reg::FBRD,
        reg::LCR_H,
        reg::CR,
        reg::IFLS,
        reg::IMSC,
        reg::RIS,
        reg::MIS,
        reg::ICR,
        reg::DMACR,
    ];
    if word >= reg::PERIPH_ID0 {
        let index = ((word - reg::PERIPH_ID0) / 4) as usize;
        let id = ID_BYTES.get(index).copied().unwrap_or(0);
        assert_eq!(value, (id >> (8 * (offset & 3))) & size.mask());
    } else if !known.contains(&word) {
        assert_eq!(value, 0, "reserved offset {offset:#x} reads non-zero");
    }
}

fn write(uart: &mut Pl011, shadow: &mut Shadow, offset: u64, size: AccessSize, value: u64) {
    let result = uart.write(offset, size, value);
    assert_eq!(
        result.is_ok(),
        allowed(offset, size),
        "write {offset:#x} {size:?}"
    );
    if result.is_ok() && offset == reg::DR {
        shadow.tx = (shadow.tx + 1).min(FIFO_DEPTH);
    }
}

/// `op` on the model, checked against the shadow; what it transmitted, if anything.
fn apply(uart: &mut Pl011, shadow: &mut Shadow, op: Op) -> Option<u8> {
    match op {
        Op::Read { offset, size } => read(uart, shadow, u64::from(offset), size.access()),
        Op::Write {
            offset,
            size,
            value,
        } => write(uart, shadow, u64::from(offset), size.access(), value),
        Op::Far {
            offset,
            size,
            write: true,
        } => write(uart, shadow, offset, size.access(), offset),
        Op::Far { offset, size, .. } => read(uart, shadow, offset, size.access()),
        Op::Receive(byte) => {
            if uart.receive(byte) {
                shadow.rx += 1;
            }
            assert!(shadow.rx <= FIFO_DEPTH);
        }
        Op::TakeTx => {
            let taken = uart.take_tx();
            assert_eq!(taken.is_some(), shadow.tx > 0);
            shadow.tx = shadow.tx.saturating_sub(1);
            return taken;
        }
        Op::TransmitAndTake(value) => {
            let taken = uart.transmit_and_take(value);
            assert!(taken.is_some());
            shadow.tx = (shadow.tx + 1).min(FIFO_DEPTH) - 1;
            return taken;
        }
    }
    None
}

/// `op` on the twin, a character being a data-register store then `take_tx`; what the twin
/// transmitted, if anything.
fn replay(twin: &mut Pl011, op: Op) -> Option<u8> {
    match op {
        Op::Read { offset, size } => {
            let _ = twin.read(u64::from(offset), size.access());
        }
        Op::Write {
            offset,
            size,
            value,
        } => {
            let _ = twin.write(u64::from(offset), size.access(), value);
        }
        Op::Far {
            offset,
            size,
            write: true,
        } => {
            let _ = twin.write(offset, size.access(), offset);
        }
        Op::Far { offset, size, .. } => {
            let _ = twin.read(offset, size.access());
        }
        Op::Receive(byte) => {
            twin.receive(byte);
        }
        Op::TakeTx => return twin.take_tx(),
        Op::TransmitAndTake(value) => {
            twin.write(reg::DR, AccessSize::Word, value).unwrap();
            return twin.take_tx();
        }
    }
    None
}

/// The model and its twin show the same registers and interrupt line.
fn check_twin(uart: &mut Pl011, twin: &mut Pl011) {
    for offset in [reg::FR, reg::RIS, reg::MIS, reg::IMSC] {
        assert_eq!(
            uart.read(offset, AccessSize::Word),
            twin.read(offset, AccessSize::Word)
        );
    }
    assert_eq!(uart.irq_pending(), twin.irq_pending());
}

/// Flags and interrupt status agree with the FIFO levels and the mask.
fn check_status(uart: &mut Pl011, shadow: &Shadow) {
    let word = |uart: &mut Pl011, offset| uart.read(offset, AccessSize::Word).unwrap() as u32;
    let flags = word(uart, reg::FR);
    assert_eq!(flags & fr::RXFE != 0, shadow.rx == 0);
    assert_eq!(flags & fr::TXFE != 0, shadow.tx == 0);
    assert_eq!(flags & fr::TXFF != 0, shadow.tx == FIFO_DEPTH);
    let ris = word(uart, reg::RIS);
    let mis = word(uart, reg::MIS);
    let imsc = word(uart, reg::IMSC);
    assert_eq!(ris & !int::ALL, 0);
    assert_eq!(mis, ris & imsc);
    assert_eq!(uart.irq_pending(), mis != 0);
}

fuzz_target!(|ops: Vec<Op>| {
    let mut uart = Pl011::new();
    let mut twin = Pl011::new();
    let mut shadow = Shadow::default();
    for op in ops {
        let taken = apply(&mut uart, &mut shadow, op);
        assert_eq!(taken, replay(&mut twin, op));
        check_status(&mut uart, &shadow);
        check_twin(&mut uart, &mut twin);
    }
});
