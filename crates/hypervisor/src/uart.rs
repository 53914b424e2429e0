//! The physical console UARTs Partita drives: the Arm PL011 and the Cadence UART (Zynq
//! UltraScale+, UG1085 chapter 21), chosen by the board's `uart.kind`. Only transmit, receive
//! and the receive interrupt are used; the firmware (or QEMU) has set the line up, except
//! that the Cadence UART's transmitter and receiver are enabled here. Only `console.rs`
//! calls this, under its lock.

use partita_core::board::UartKind;

use crate::board::BOARD;

/// The board's console UART, as constants so its kind is chosen at build time.
const KIND: UartKind = BOARD.uart.kind;
const BASE: usize = BOARD.uart.region.base as usize;

/// PL011 registers used (offsets): data, flags, interrupt mask.
const PL011_DR: usize = 0x00;
const PL011_FR: usize = 0x18;
const PL011_IMSC: usize = 0x38;
const PL011_FR_RXFE: u32 = 1 << 4;
const PL011_FR_TXFF: u32 = 1 << 5;
/// UARTIMSC receive and receive-timeout interrupts.
const PL011_IMSC_RX: u32 = (1 << 4) | (1 << 6);

/// Cadence UART registers used (offsets): control, interrupt enable, interrupt status,
/// receive FIFO trigger level, channel status, FIFO.
const CDNS_CR: usize = 0x00;
const CDNS_IER: usize = 0x08;
const CDNS_ISR: usize = 0x14;
const CDNS_RXWM: usize = 0x20;
const CDNS_SR: usize = 0x2c;
const CDNS_FIFO: usize = 0x30;
/// CR: receiver enable, transmitter enable, stop transmitter break.
const CDNS_CR_RX_EN: u32 = 1 << 2;
const CDNS_CR_TX_EN: u32 = 1 << 4;
const CDNS_CR_STOPBRK: u32 = 1 << 8;
/// SR: receive FIFO empty, transmit FIFO full.
const CDNS_SR_RXEMPTY: u32 = 1 << 1;
const CDNS_SR_TXFULL: u32 = 1 << 4;
/// Interrupt bits: receive FIFO trigger, receive timeout.
const CDNS_IXR_RX: u32 = (1 << 0) | (1 << 8);

/// The board's console UART.
pub struct Uart;

impl Uart {
    fn read(&self, offset: usize) -> u32 {
        // SAFETY: `offset` is one of the registers above, inside the board's UART window,
        // which `mmu` maps as Device memory; 32-bit aligned volatile accesses are what both
        // UARTs expect, and the console lock serialises them.
        unsafe { ((BASE + offset) as *const u32).read_volatile() }
    }

    fn write(&self, offset: usize, value: u32) {
        // SAFETY: as in `read`.
        unsafe { ((BASE + offset) as *mut u32).write_volatile(value) }
    }

    /// Enables what the firmware may have left off (the Cadence transmitter and receiver).
    pub fn init(&self) {
        if KIND == UartKind::Cadence {
            self.write(CDNS_CR, CDNS_CR_RX_EN | CDNS_CR_TX_EN | CDNS_CR_STOPBRK);
        }
    }

    /// Sends one byte, waiting while the transmit FIFO is full.
    pub fn put(&self, byte: u8) {
        let (status, full, data) = match KIND {
            UartKind::Pl011 => (PL011_FR, PL011_FR_TXFF, PL011_DR),
            UartKind::Cadence => (CDNS_SR, CDNS_SR_TXFULL, CDNS_FIFO),
        };
        while self.read(status) & full != 0 {}
        self.write(data, u32::from(byte));
    }

    /// One received byte, if any.
    pub fn get(&self) -> Option<u8> {
        let (status, empty, data) = match KIND {
            UartKind::Pl011 => (PL011_FR, PL011_FR_RXFE, PL011_DR),
            UartKind::Cadence => (CDNS_SR, CDNS_SR_RXEMPTY, CDNS_FIFO),
        };
        if self.read(status) & empty != 0 {
            // The Cadence UART's interrupt status is sticky: clear it once the FIFO is
            // drained (a byte arriving meanwhile sets it again).
            if KIND == UartKind::Cadence {
                self.write(CDNS_ISR, CDNS_IXR_RX);
            }
            return None;
        }
        Some(self.read(data) as u8)
    }

    /// Makes the UART raise its interrupt when a character arrives.
    pub fn enable_receive_interrupt(&self) {
        match KIND {
            UartKind::Pl011 => {
                let imsc = self.read(PL011_IMSC);
                self.write(PL011_IMSC, imsc | PL011_IMSC_RX);
            }
            UartKind::Cadence => {
                self.write(CDNS_RXWM, 1);
                self.write(CDNS_ISR, CDNS_IXR_RX);
                self.write(CDNS_IER, CDNS_IXR_RX);
            }
        }
    }
}
