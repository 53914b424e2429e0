//! The physical console: Partita's PL011 driver behind a spin lock, the `println!` macro for
//! hypervisor lines (`[partita] ...`) and the per-VM line buffer that prints each VM's UART
//! output as whole lines tagged `[<vm name>] `.
//!
//! Only this module touches the physical UART. A whole line is written under one lock hold, so
//! lines from different CPUs never interleave. Input is read only when the UART's receive
//! interrupt says characters are waiting (`read_input`); it must never block on input.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use partita_core::board::QEMU_VIRT;
use spin::Mutex;

/// PL011 registers used (offsets): data, flags, interrupt mask.
const UARTDR: usize = 0x00;
const UARTFR: usize = 0x18;
const UARTIMSC: usize = 0x38;
const FR_RXFE: u32 = 1 << 4;
const FR_TXFF: u32 = 1 << 5;
/// UARTIMSC receive and receive-timeout interrupts.
const IMSC_RX: u32 = (1 << 4) | (1 << 6);

/// The longest VM line kept before it is printed anyway.
const MAX_LINE: usize = 200;

struct Pl011 {
    base: usize,
}

impl Pl011 {
    fn register(&self, offset: usize) -> *mut u32 {
        (self.base + offset) as *mut u32
    }

    fn put(&mut self, byte: u8) {
        // SAFETY: UARTFR and UARTDR are registers of the board's PL011, mapped as Device
        // memory by `mmu`; 32-bit aligned volatile accesses are what the device expects, and
        // the `CONSOLE` lock serialises them.
        unsafe {
            while self.register(UARTFR).read_volatile() & FR_TXFF != 0 {}
            self.register(UARTDR).write_volatile(u32::from(byte));
        }
    }
}

impl Pl011 {
    fn get(&mut self) -> Option<u8> {
        // SAFETY: as in `put`; reading UARTDR pops one received character.
        unsafe {
            if self.register(UARTFR).read_volatile() & FR_RXFE != 0 {
                return None;
            }
            Some(self.register(UARTDR).read_volatile() as u8)
        }
    }

    fn enable_receive_interrupt(&mut self) {
        // SAFETY: as in `put`; only the receive interrupts are unmasked.
        unsafe {
            let imsc = self.register(UARTIMSC).read_volatile();
            self.register(UARTIMSC).write_volatile(imsc | IMSC_RX);
        }
    }
}

/// Makes the physical UART raise its interrupt when a character arrives.
pub fn enable_input() {
    CONSOLE.lock().enable_receive_interrupt();
}

fn next_input() -> Option<u8> {
    CONSOLE.lock().get()
}

/// Passes every character waiting in the physical UART to `take` (which may print).
pub fn read_input(mut take: impl FnMut(u8)) {
    while let Some(byte) = next_input() {
        take(byte);
    }
}

impl Write for Pl011 {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.put(b'\r');
            }
            self.put(b);
        }
        Ok(())
    }
}

static CONSOLE: Mutex<Pl011> = Mutex::new(Pl011 {
    base: QEMU_VIRT.uart.base as usize,
});

/// Prints one hypervisor line: `[partita] <args>`.
pub fn print_line(args: fmt::Arguments) {
    let mut uart = CONSOLE.lock();
    let _ = writeln!(uart, "[partita] {args}");
}

/// Prints a line on the panic path, where the lock may be held by a stuck CPU or by this one.
pub fn print_line_forced(args: fmt::Arguments) {
    for _ in 0..1_000_000 {
        if let Some(mut uart) = CONSOLE.try_lock() {
            let _ = writeln!(uart, "[partita] {args}");
            return;
        }
    }
    // SAFETY: the holder has not released the lock in a million attempts: it is stuck or it
    // is this CPU, which panicked while printing. Taking it over can at worst interleave one
    // line, which is better than losing the panic message.
    unsafe { CONSOLE.force_unlock() };
    let _ = writeln!(CONSOLE.lock(), "[partita] {args}");
}

/// `println!` for hypervisor messages; every line starts with `[partita] `.
#[macro_export]
macro_rules! println {
    ($($arg:tt)*) => {
        $crate::console::print_line(format_args!($($arg)*))
    };
}

/// Collects one VM's UART output and prints it line by line, tagged with the VM's name.
pub struct VmConsole {
    name: String,
    line: Vec<u8>,
}

impl VmConsole {
    pub fn new(name: &str) -> Self {
        VmConsole {
            name: name.into(),
            line: Vec::with_capacity(MAX_LINE),
        }
    }

    /// Adds a byte the guest transmitted.
    pub fn push(&mut self, byte: u8) {
        match byte {
            b'\n' => self.flush(),
            b'\r' => {}
            _ => {
                self.line.push(byte);
                if self.line.len() >= MAX_LINE {
                    self.flush();
                }
            }
        }
    }

    /// Prints the pending partial line, if any.
    pub fn flush_partial(&mut self) {
        if !self.line.is_empty() {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let mut uart = CONSOLE.lock();
        let _ = write!(uart, "[{}] ", self.name);
        for &b in &self.line {
            let control = b < 0x20 && b != b'\t' && b != 0x1b;
            uart.put(if control { b'?' } else { b });
        }
        let _ = uart.write_str("\n");
        self.line.clear();
    }
}
