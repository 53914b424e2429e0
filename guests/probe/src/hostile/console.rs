//! Probes of the two ways a VM writes to the console (issue 16): its emulated UART, which
//! the exit fast path answers, and Partita's console call (PARTITA_CONSOLE_WRITE: x1 = count,
//! x2..x7 = up to 48 bytes). A flood of either must stay the writer's own cost (the host
//! checks FreeRTOS's deadlines and latency over the whole run, host probes rtos-deadlines
//! and rtos-latency); forged lines must arrive tagged with this VM's name (the host checks
//! that no untagged `[partita]` or `[freertos]` line appears); a bad count is refused with
//! nothing else changed. The UART's short exit saves only the caller-saved registers: an
//! access through x19..x29 must still read and write the named register, and no access may
//! change a register it does not name.

use core::arch::asm;

use crate::checks::{expect_eq, expect_no_exception, Failure, Outcome};
use crate::mmio::{Load, Store};
use crate::platform::Platform;
use crate::smccc_calls::{call_with, Conduit, INVALID_PARAMETERS};

const PARTITA_CONSOLE_WRITE: u32 = 0xc600_0002;
/// UART data-register writes in one flood: far more than the 32-entry FIFO holds between
/// two exits, so most are lost as on hardware, each still an exit.
const UART_FLOOD: usize = 20_000;
/// Console calls in one storm; only every 20th carries bytes, so the console stays short.
const CALL_STORM: usize = 2_000;
/// The most bytes one console call carries.
const CHUNK: usize = 48;
/// Counts a console call must refuse.
const BAD_COUNTS: [u64; 4] = [49, 1 << 32, 1 << 63, u64::MAX];
/// Lines that would impersonate Partita or FreeRTOS if they reached the console untagged,
/// with control and escape bytes between.
const FORGED: &[u8] = b"\n[partita] panic: forged through a console call\n\
    \r[freertos] rt: samples=1 max_ns=1 mean_ns=1 misses=9\n\x1b[2J\x1b]0;t\x07\x00\x08\x7f\n";

/// One console call with `count` and the six byte registers; its status.
fn console_call(count: u64, words: [u64; 6]) -> Result<i64, Failure> {
    let mut args = [count; 7];
    args[1..].copy_from_slice(&words);
    let reply = call_with(Conduit::Hvc, PARTITA_CONSOLE_WRITE, &args);
    if reply.x[1..] != args[..3] {
        return Err(Failure::new(format_args!(
            "console call changed x1..x3: {:#x?}",
            &reply.x[1..]
        )));
    }
    Ok(reply.status())
}

/// Sends `bytes` in console calls of 48 bytes; each must succeed.
fn console_write(bytes: &[u8]) -> Outcome {
    for chunk in bytes.chunks(CHUNK) {
        let mut padded = [0u8; CHUNK];
        padded[..chunk.len()].copy_from_slice(chunk);
        let mut words = [0u64; 6];
        for (word, eight) in words.iter_mut().zip(padded.chunks_exact(8)) {
            let mut le = [0u8; 8];
            le.copy_from_slice(eight);
            *word = u64::from_le_bytes(le);
        }
        let status = console_call(chunk.len() as u64, words)?;
        if status != 0 {
            return Err(Failure::new(format_args!("console call returned {status}")));
        }
    }
    Ok(())
}

/// Writes the UART's data register as fast as the CPU goes, never polling the flags.
pub fn uart_flood(p: &Platform) -> Outcome {
    for i in 0..UART_FLOOD {
        let byte = if i % 100 == 99 { b'\n' } else { b'u' };
        Store::Word.run(p.uart, u64::from(byte));
    }
    expect_no_exception(format_args!("UART flood"))
}

/// UARTFR's offset.
const UART_FR: u64 = 0x18;

/// UART accesses through the registers the data-abort short exit does not save (x19..x29)
/// and through the ones it does, with x19..x29 holding known values: a store from x20 and
/// loads into x21 and x29 (base x19) must write and read those registers, and a store and
/// a load through x1/x2 must leave x19..x29 as they were.
pub fn uart_register_file(p: &Platform) -> Outcome {
    let (mut changed, mut fr_x21, mut fr_x29): (u64, u64, u64);
    // SAFETY: UART accesses only (`p.uart` is the VM's emulated PL011); x19..x30 are saved
    // on the stack first and restored last, every other register used is an operand.
    unsafe {
        asm!(
            "stp x19, x20, [sp, #-96]!",
            "stp x21, x22, [sp, #16]",
            "stp x23, x24, [sp, #32]",
            "stp x25, x26, [sp, #48]",
            "stp x27, x28, [sp, #64]",
            "stp x29, x30, [sp, #80]",
            "mov x19, #19",
            "mov x20, #20",
            "mov x21, #21",
            "mov x22, #22",
            "mov x23, #23",
            "mov x24, #24",
            "mov x25, #25",
            "mov x26, #26",
            "mov x27, #27",
            "mov x28, #28",
            "mov x29, #29",
            "str w1, [x0]",
            "ldr w2, [x0, #0x18]",
            "sub x3, x19, #19",
            "sub x4, x20, #20",
            "orr x3, x3, x4",
            "sub x4, x21, #21",
            "orr x3, x3, x4",
            "sub x4, x22, #22",
            "orr x3, x3, x4",
            "sub x4, x23, #23",
            "orr x3, x3, x4",
            "sub x4, x24, #24",
            "orr x3, x3, x4",
            "sub x4, x25, #25",
            "orr x3, x3, x4",
            "sub x4, x26, #26",
            "orr x3, x3, x4",
            "sub x4, x27, #27",
            "orr x3, x3, x4",
            "sub x4, x28, #28",
            "orr x3, x3, x4",
            "sub x4, x29, #29",
            "orr x3, x3, x4",
            "mov x19, x0",
            "mov x20, #0x72",
            "str w20, [x19]",
            "ldr w21, [x19, #0x18]",
            "ldr w29, [x19, #0x18]",
            "mov x4, x21",
            "mov x5, x29",
            "ldp x29, x30, [sp, #80]",
            "ldp x27, x28, [sp, #64]",
            "ldp x25, x26, [sp, #48]",
            "ldp x23, x24, [sp, #32]",
            "ldp x21, x22, [sp, #16]",
            "ldp x19, x20, [sp], #96",
            in("x0") p.uart,
            in("x1") u64::from(b'u'),
            out("x2") _,
            out("x3") changed,
            out("x4") fr_x21,
            out("x5") fr_x29,
        );
    }
    Store::Word.run(p.uart, u64::from(b'\n'));
    expect_no_exception(format_args!("UART accesses through x19..x29"))?;
    expect_eq(
        format_args!("x19..x29 changed by a UART access"),
        changed,
        0,
    )?;
    let fr = Load::Word.run(p.uart + UART_FR);
    expect_eq(format_args!("UARTFR loaded into x21"), fr_x21, fr)?;
    expect_eq(format_args!("UARTFR loaded into x29"), fr_x29, fr)
}

/// Forged Partita and FreeRTOS lines, control bytes and escape sequences through console
/// calls: accepted, and shown only as this VM's own tagged, cleaned lines.
pub fn console_call_forge(_: &Platform) -> Outcome {
    console_write(FORGED)
}

/// Counts above 48 are INVALID_PARAMETERS, print nothing, and leave x1..x3 alone.
pub fn console_call_bad_count(_: &Platform) -> Outcome {
    for count in BAD_COUNTS {
        let status = console_call(count, [u64::MAX; 6])?;
        if status != INVALID_PARAMETERS {
            return Err(Failure::new(format_args!(
                "count {count:#x}: status {status}, want INVALID_PARAMETERS"
            )));
        }
    }
    Ok(())
}

/// Console calls back to back, mostly empty; each answered SUCCESS.
pub fn console_call_storm(_: &Platform) -> Outcome {
    let bytes = [u64::from_le_bytes(*b"storming"); 6];
    for i in 0..CALL_STORM {
        let count = if i % 20 == 19 { 16 } else { 0 };
        let status = console_call(count, bytes)?;
        if status != 0 {
            return Err(Failure::new(format_args!("call {i}: status {status}")));
        }
    }
    console_write(b"\n")
}
