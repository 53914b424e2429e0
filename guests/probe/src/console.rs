//! A polling PL011 driver for the probe's console, and `println!`.
//!
//! It only waits for room in the transmit FIFO (`UARTFR.TXFF`) and writes `UARTDR`; it never
//! reconfigures the UART, so it works on Partita's emulated PL011 and on QEMU's. Every
//! register access is a single 32-bit `ldr`/`str` (see `mmio`). Lines end in a bare `\n`:
//! Partita splits the VM's output into lines and prefixes each with the VM's name.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicU64, Ordering};

use crate::mmio::{Load, Store};

const UARTDR: u64 = 0x000;
const UARTFR: u64 = 0x018;
const FR_TXFF: u64 = 1 << 5;
/// Polls of a full FIFO before a character is written anyway: a broken UART model must not
/// hang the probe silently.
const TXFF_POLLS: u32 = 1_000_000;

/// The console UART's base, set once by `init`.
static UART_BASE: AtomicU64 = AtomicU64::new(crate::platform::FALLBACK_UART);

pub fn init(base: u64) {
    UART_BASE.store(base, Ordering::Relaxed);
}

struct Console {
    base: u64,
}

impl Console {
    fn put(&self, byte: u8) {
        for _ in 0..TXFF_POLLS {
            if Load::Word.run(self.base + UARTFR) & FR_TXFF == 0 {
                break;
            }
        }
        Store::Word.run(self.base + UARTDR, u64::from(byte));
    }
}

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        s.bytes().for_each(|byte| self.put(byte));
        Ok(())
    }
}

/// Writes formatted text to the console; used through `println!`.
pub fn print(args: fmt::Arguments) {
    let mut console = Console {
        base: UART_BASE.load(Ordering::Relaxed),
    };
    // The console never reports an error.
    let _ = console.write_fmt(args);
}

#[macro_export]
macro_rules! println {
    ($($arg:tt)*) => {
        $crate::console::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}
