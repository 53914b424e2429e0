//! The guest's console: whole lines on the UART the device tree named (a PL011, or an SBSA
//! generic UART, which is driven the same way without being configured), or, under
//! Partita, through Partita's console call (`partita::console_write`, 48 bytes per exit
//! instead of one or two exits per byte), which lands in the same console stream.
//!
//! Before the scheduler starts, lines go straight to the UART. Once tasks run, a FreeRTOS
//! mutex keeps each line whole; it is never held across anything but formatting and
//! writing one line, and interrupt handlers never print (except `halt`, which stops the
//! guest and so cannot deadlock anything that matters).

use crate::freertos::{self, Mutex};
use crate::partita;
use crate::pl011::{Pl011, Unpolled};
use crate::platform::{Uart, UartKind};
use crate::timer;
use core::ffi::c_void;
use core::fmt::{self, Write};
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// Base address of the UART; 0 until `init`.
static UART_BASE: AtomicUsize = AtomicUsize::new(0);
/// The line lock, created before the scheduler starts; null until then.
static LINE_LOCK: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());

/// Takes `uart` as the console. A PL011 is configured first; an SBSA UART has no control
/// registers (its firmware or hypervisor sets it up, and Xen's emulation refuses writes
/// to them with an abort).
///
/// # Safety
/// `uart` must be a UART that nothing else drives.
pub unsafe fn init(uart: Uart) {
    if uart.kind == UartKind::Pl011 {
        Pl011::new(uart.base).init();
    }
    UART_BASE.store(uart.base, Ordering::Release);
}

/// Creates the lock that keeps lines whole once several tasks print.
pub fn create_line_lock() -> Result<(), freertos::OutOfMemory> {
    let lock = Mutex::new()?;
    LINE_LOCK.store(lock.into_raw(), Ordering::Release);
    Ok(())
}

/// Prints one line.
pub fn line(args: fmt::Arguments<'_>) {
    let raw = LINE_LOCK.load(Ordering::Acquire);
    if raw.is_null() || !freertos::scheduler_started() {
        write_line(args);
        return;
    }
    // SAFETY: LINE_LOCK only ever holds a handle from `Mutex::into_raw`.
    let lock = unsafe { Mutex::from_raw(raw) };
    lock.lock();
    write_line(args);
    lock.unlock();
}

/// Masks interrupts, stops the tick, prints `args` as a last line and stops the guest.
/// The tick is stopped so that no interrupt stays pending: a pending (even masked)
/// interrupt ends every WFI at once, and the halt loop would spin.
pub fn halt(args: fmt::Arguments<'_>) -> ! {
    // SAFETY: masking interrupts at the CPU only stops this guest's own interrupt handling.
    unsafe { core::arch::asm!("msr daifset, #0xf", options(nomem, nostack)) };
    timer::stop();
    write_line(format_args!("halted: {args}"));
    loop {
        aarch64_cpu::asm::wfi();
    }
}

/// How a line reaches the console.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// The PL011 driver, byte by byte: a flag poll and a data-register write each.
    Uart,
    /// The data-register writes alone, without flag polls (the benchmark's cost of one
    /// emulated character).
    UartWrite,
    /// Partita's console call, 48 bytes at a time.
    Call,
}

impl Path {
    pub fn name(self) -> &'static str {
        match self {
            Path::Uart => "uart",
            Path::UartWrite => "uart-write",
            Path::Call => "call",
        }
    }
}

fn write_line(args: fmt::Arguments<'_>) {
    let path = if partita::present() {
        Path::Call
    } else {
        Path::Uart
    };
    line_through(path, args);
}

/// Writes one line through `path`, without the line lock (the benchmark controller alone
/// prints while it measures; everything else goes through `line`).
pub fn line_through(path: Path, args: fmt::Arguments<'_>) {
    let base = UART_BASE.load(Ordering::Acquire);
    if base == 0 {
        return;
    }
    if path == Path::Call {
        let mut calls = ConsoleCalls::default();
        let _ = calls.write_fmt(args);
        let _ = calls.write_str("\r\n");
        calls.flush();
        return;
    }
    // SAFETY: `base` was given to `init`, whose contract makes it this guest's UART; data
    // and flag registers are the same on a PL011 and an SBSA UART.
    let mut uart = unsafe { Pl011::new(base) };
    // The PL011 writers cannot fail.
    if path == Path::UartWrite {
        let mut uart = Unpolled(uart);
        let _ = uart.write_fmt(args);
        let _ = uart.write_str("\n");
        return;
    }
    let _ = uart.write_fmt(args);
    let _ = uart.write_str("\n");
}

/// Text gathered into console calls of `partita::CONSOLE_CHUNK` bytes.
struct ConsoleCalls {
    chunk: [u8; partita::CONSOLE_CHUNK],
    len: usize,
}

impl Default for ConsoleCalls {
    fn default() -> Self {
        ConsoleCalls {
            chunk: [0; partita::CONSOLE_CHUNK],
            len: 0,
        }
    }
}

impl ConsoleCalls {
    fn flush(&mut self) {
        if self.len > 0 {
            partita::console_write(&self.chunk[..self.len]);
            self.len = 0;
        }
    }
}

impl Write for ConsoleCalls {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        for &byte in text.as_bytes() {
            if self.len == self.chunk.len() {
                self.flush();
            }
            self.chunk[self.len] = byte;
            self.len += 1;
        }
        Ok(())
    }
}
