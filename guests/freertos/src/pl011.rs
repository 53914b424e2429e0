//! A transmit-only PL011 UART driver (ARM PrimeCell UART, DDI 0183).
//!
//! It owns the UART's registers at the base address the device tree gave; it polls the
//! transmit FIFO and never uses interrupts, DMA or the receive path. It does not program
//! the baud rate: QEMU's model and Partita's emulated UART ignore it, and on a board the
//! firmware has set it.

use core::arch::asm;
use core::fmt;

/// Data register.
const UARTDR: usize = 0x000;
/// Flag register.
const UARTFR: usize = 0x018;
/// Line control register.
const UARTLCR_H: usize = 0x02c;
/// Control register.
const UARTCR: usize = 0x030;
/// UARTFR.TXFF: the transmit FIFO is full.
const FR_TXFF: u32 = 1 << 5;
/// UARTLCR_H: 8-bit words (WLEN = 0b11), FIFOs enabled (FEN).
const LCR_H_8BIT_FIFO: u32 = (0b11 << 5) | (1 << 4);
/// UARTCR: UART, transmitter and receiver enabled.
const CR_ENABLE: u32 = (1 << 0) | (1 << 8) | (1 << 9);

/// One PL011 at a fixed physical address (the MMU is off, so virtual = physical).
#[derive(Clone, Copy)]
pub struct Pl011 {
    base: usize,
}

impl Pl011 {
    /// Takes the UART at `base`.
    ///
    /// # Safety
    /// `base` must be the address of a PL011 register block that nothing else drives.
    pub const unsafe fn new(base: usize) -> Self {
        Self { base }
    }

    /// Enables the UART for 8-bit transmission with FIFOs.
    pub fn init(&self) {
        self.write_register(UARTCR, 0);
        self.write_register(UARTLCR_H, LCR_H_8BIT_FIFO);
        self.write_register(UARTCR, CR_ENABLE);
    }

    /// Sends one byte, waiting while the transmit FIFO is full.
    pub fn write_byte(&self, byte: u8) {
        while self.read_register(UARTFR) & FR_TXFF != 0 {}
        self.write_register(UARTDR, u32::from(byte));
    }

    /// Stores one byte in the data register without polling the flags first: only for the
    /// console benchmark's cost of one data-register write, on UARTs that transmit at once
    /// (QEMU's, Partita's emulated one); a board's FIFO could overflow.
    pub fn write_byte_unpolled(&self, byte: u8) {
        self.write_register(UARTDR, u32::from(byte));
    }

    // Plain `ldr`/`str` without writeback: an emulated UART (Partita's) needs the syndrome
    // those carry (ESR_EL2.ISV = 1); `read_volatile` may compile to post-indexed forms.
    fn read_register(&self, offset: usize) -> u32 {
        let value: u32;
        // SAFETY: `new`'s contract makes base + offset a PL011 register of this driver.
        unsafe {
            asm!("ldr {v:w}, [{a}]", a = in(reg) self.base + offset, v = out(reg) value, options(nostack));
        }
        value
    }

    fn write_register(&self, offset: usize, value: u32) {
        // SAFETY: `new`'s contract makes base + offset a PL011 register of this driver.
        unsafe {
            asm!("str {v:w}, [{a}]", a = in(reg) self.base + offset, v = in(reg) value, options(nostack));
        }
    }
}

impl fmt::Write for Pl011 {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        for byte in text.bytes() {
            if byte == b'\n' {
                self.write_byte(b'\r');
            }
            self.write_byte(byte);
        }
        Ok(())
    }
}

/// A PL011 written without flag polls (`Pl011::write_byte_unpolled`), for the console
/// benchmark only.
pub struct Unpolled(pub Pl011);

impl fmt::Write for Unpolled {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        for byte in text.bytes() {
            if byte == b'\n' {
                self.0.write_byte_unpolled(b'\r');
            }
            self.0.write_byte_unpolled(byte);
        }
        Ok(())
    }
}
