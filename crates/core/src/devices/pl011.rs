//! An emulated ARM PrimeCell UART (PL011 r1p5), enough for Linux's `amba-pl011` driver and
//! for bare-metal polling drivers.
//!
//! The model owns the register state, a 32-entry receive FIFO fed by the host (`receive`) and
//! a 32-entry transmit FIFO that the hypervisor drains to the physical console (`take_tx`).
//! The transmit FIFO keeps its 32 entries even with `UARTLCR_H.FEN` clear, so a guest that
//! writes without polling `TXFF` loses nothing between two drains.
//! Transmission is instantaneous from the guest's point of view once the hypervisor drains,
//! so like QEMU the transmit interrupt (TXIS) is raised after every accepted write to
//! `UARTDR`. Line errors, modem lines, DMA and IrDA are not modelled: their registers hold
//! what is written and report no events. It never panics on a guest access, and never grows
//! its buffers: a write to a full transmit FIFO is lost, as on hardware.
//!
//! Register offsets and bit positions: ARM PrimeCell UART (PL011) Technical Reference
//! Manual r1p5 (DDI 0183G), section 3.2 "Summary of registers" and 3.3 "Register
//! descriptions".

use super::{AccessFault, AccessSize, MmioDevice};

/// Depth of both FIFOs in PL011 r1p5.
pub const FIFO_DEPTH: usize = 32;

/// A FIFO of `FIFO_DEPTH` bytes: a ring, every operation a few instructions (a store to the
/// data register and a flag poll are an emulated UART's commonest accesses).
#[derive(Clone, Copy)]
struct Fifo {
    bytes: [u8; FIFO_DEPTH],
    /// Index of the oldest byte.
    head: usize,
    len: usize,
}

impl Fifo {
    const EMPTY: Fifo = Fifo {
        bytes: [0; FIFO_DEPTH],
        head: 0,
        len: 0,
    };

    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn is_full(&self) -> bool {
        self.len >= FIFO_DEPTH
    }

    /// Appends `byte`; false (and nothing kept) when the FIFO is full.
    #[inline]
    fn push(&mut self, byte: u8) -> bool {
        if self.is_full() {
            return false;
        }
        self.bytes[(self.head + self.len) % FIFO_DEPTH] = byte;
        self.len += 1;
        true
    }

    /// Removes the oldest byte.
    #[inline]
    fn pop(&mut self) -> Option<u8> {
        if self.is_empty() {
            return None;
        }
        let byte = self.bytes[self.head % FIFO_DEPTH];
        self.head = (self.head + 1) % FIFO_DEPTH;
        self.len -= 1;
        Some(byte)
    }
}

/// Register offsets in the 4 KiB window (TRM 3.2).
pub mod reg {
    pub const DR: u64 = 0x000;
    pub const RSR_ECR: u64 = 0x004;
    pub const FR: u64 = 0x018;
    pub const ILPR: u64 = 0x020;
    pub const IBRD: u64 = 0x024;
    pub const FBRD: u64 = 0x028;
    pub const LCR_H: u64 = 0x02c;
    pub const CR: u64 = 0x030;
    pub const IFLS: u64 = 0x034;
    pub const IMSC: u64 = 0x038;
    pub const RIS: u64 = 0x03c;
    pub const MIS: u64 = 0x040;
    pub const ICR: u64 = 0x044;
    pub const DMACR: u64 = 0x048;
    /// `UARTPeriphID0`; the peripheral and PrimeCell IDs follow word by word to 0xFFC.
    pub const PERIPH_ID0: u64 = 0xfe0;
}

/// `UARTFR` bits (TRM 3.3.3).
pub mod fr {
    pub const BUSY: u32 = 1 << 3;
    pub const RXFE: u32 = 1 << 4;
    pub const TXFF: u32 = 1 << 5;
    pub const RXFF: u32 = 1 << 6;
    pub const TXFE: u32 = 1 << 7;
}

/// Interrupt bits shared by `UARTIMSC`, `UARTRIS`, `UARTMIS` and `UARTICR` (TRM 3.3.10-14).
pub mod int {
    pub const RX: u32 = 1 << 4;
    pub const TX: u32 = 1 << 5;
    pub const RT: u32 = 1 << 6;
    /// All eleven interrupt bits.
    pub const ALL: u32 = 0x7ff;
}

/// `UARTLCR_H.FEN`: FIFOs enabled; without it each FIFO holds one character.
const LCR_H_FEN: u32 = 1 << 4;
/// Reset values (TRM table 3-1).
const CR_RESET: u32 = 0x0300;
const IFLS_RESET: u32 = 0x12;
/// `UARTPeriphID0..3` then `UARTPCellID0..3`: part 0x011, designer ARM (0x41), revision 3
/// (r1p5), configuration 0.
const ID_REGISTERS: [u8; 8] = [0x11, 0x10, 0x34, 0x00, 0x0d, 0xf0, 0x05, 0xb1];

pub struct Pl011 {
    rx: Fifo,
    tx: Fifo,
    ilpr: u32,
    ibrd: u32,
    fbrd: u32,
    lcr_h: u32,
    cr: u32,
    ifls: u32,
    imsc: u32,
    ris: u32,
    dmacr: u32,
}

impl Default for Pl011 {
    fn default() -> Self {
        Self::new()
    }
}

impl Pl011 {
    /// A UART in its reset state.
    pub fn new() -> Self {
        Pl011 {
            rx: Fifo::EMPTY,
            tx: Fifo::EMPTY,
            ilpr: 0,
            ibrd: 0,
            fbrd: 0,
            lcr_h: 0,
            cr: CR_RESET,
            ifls: IFLS_RESET,
            imsc: 0,
            ris: 0,
            dmacr: 0,
        }
    }

    /// The next byte the guest transmitted, oldest first.
    #[inline]
    pub fn take_tx(&mut self) -> Option<u8> {
        self.tx.pop()
    }

    /// A store of `value` to `UARTDR` (any size but 64-bit) followed by `take_tx`, in one
    /// step: the register and interrupt state end as the two calls leave them and the byte
    /// returned is the one `take_tx` would give. With the transmit FIFO empty (a drained
    /// UART) the byte goes straight through and only TXRIS is raised: an empty ring's
    /// position is not observable.
    #[inline]
    pub fn transmit_and_take(&mut self, value: u64) -> Option<u8> {
        if self.tx.is_empty() {
            self.ris |= int::TX;
            return Some(value as u8);
        }
        self.transmit(value as u8);
        self.take_tx()
    }

    /// Delivers a byte from the host to the guest; `false` when the receive FIFO is full
    /// (the caller keeps the byte and tries again later).
    pub fn receive(&mut self, byte: u8) -> bool {
        if self.rx.len() >= self.fifo_depth() || !self.rx.push(byte) {
            return false;
        }
        if self.rx.len() >= self.rx_trigger() {
            self.ris |= int::RX;
        }
        // The host hands bytes over in bursts; the line is idle after each one, so the
        // receive timeout condition holds until the guest drains the FIFO.
        self.ris |= int::RT;
        true
    }

    /// Whether the UART drives its interrupt line (`UARTINTR`).
    pub fn irq_pending(&self) -> bool {
        self.ris & self.imsc != 0
    }

    fn fifo_enabled(&self) -> bool {
        self.lcr_h & LCR_H_FEN != 0
    }

    fn fifo_depth(&self) -> usize {
        if self.fifo_enabled() {
            FIFO_DEPTH
        } else {
            1
        }
    }

    /// Receive FIFO level that raises RXIS: `UARTIFLS.RXIFLSEL` (TRM 3.3.9) in eighths.
    fn rx_trigger(&self) -> usize {
        if !self.fifo_enabled() {
            return 1;
        }
        let eighths = match (self.ifls >> 3) & 7 {
            0 => 1,
            1 => 2,
            2 => 4,
            3 => 6,
            _ => 7,
        };
        FIFO_DEPTH * eighths / 8
    }

    fn flags(&self) -> u32 {
        let mut flags = 0;
        if self.rx.is_empty() {
            flags |= fr::RXFE;
        }
        if self.rx.len() >= self.fifo_depth() {
            flags |= fr::RXFF;
        }
        if self.tx.is_empty() {
            flags |= fr::TXFE;
        } else {
            flags |= fr::BUSY;
        }
        if self.tx.is_full() {
            flags |= fr::TXFF;
        }
        flags
    }

    /// Pops one received character for a read of `UARTDR` (error bits 11:8 are always 0).
    fn pop_rx(&mut self) -> u32 {
        let byte = self.rx.pop().unwrap_or(0);
        if self.rx.len() < self.rx_trigger() {
            self.ris &= !int::RX;
        }
        if self.rx.is_empty() {
            self.ris &= !int::RT;
        }
        u32::from(byte)
    }

    fn transmit(&mut self, byte: u8) {
        if self.tx.push(byte) {
            self.ris |= int::TX;
        }
    }

    /// The 32-bit register at word offset `word`; `pop` lets a read of `UARTDR` consume a
    /// character.
    fn read_word(&mut self, word: u64, pop: bool) -> u32 {
        match word {
            reg::FR => self.flags(),
            reg::DR if pop => self.pop_rx(),
            reg::DR | reg::RSR_ECR => 0,
            reg::ILPR => self.ilpr,
            reg::IBRD => self.ibrd,
            reg::FBRD => self.fbrd,
            reg::LCR_H => self.lcr_h,
            reg::CR => self.cr,
            reg::IFLS => self.ifls,
            reg::IMSC => self.imsc,
            reg::RIS => self.ris,
            reg::MIS => self.ris & self.imsc,
            reg::DMACR => self.dmacr,
            reg::PERIPH_ID0..=0xffc => {
                let index = ((word - reg::PERIPH_ID0) / 4) as usize;
                ID_REGISTERS.get(index).copied().map_or(0, u32::from)
            }
            _ => 0,
        }
    }

    /// Writes the byte lanes `lanes` of the register at `word` with `bits`.
    fn write_word(&mut self, word: u64, bits: u32, lanes: u32) {
        let merge = |old: u32, writable: u32| (old & !lanes) | (bits & lanes & writable);
        match word {
            reg::DR if lanes & 0xff != 0 => self.transmit(bits as u8),
            reg::ILPR => self.ilpr = merge(self.ilpr, 0xff),
            reg::IBRD => self.ibrd = merge(self.ibrd, 0xffff),
            reg::FBRD => self.fbrd = merge(self.fbrd, 0x3f),
            reg::LCR_H => self.lcr_h = merge(self.lcr_h, 0xff),
            reg::CR => self.cr = merge(self.cr, 0xff87),
            reg::IFLS => self.ifls = merge(self.ifls, 0x3f),
            reg::IMSC => self.imsc = merge(self.imsc, int::ALL),
            reg::ICR => self.ris &= !(bits & lanes),
            reg::DMACR => self.dmacr = merge(self.dmacr, 0x7),
            // UARTRSR/ECR: any write clears the error flags, and none are ever set.
            _ => {}
        }
    }
}

/// Accepts 8-, 16- and 32-bit naturally aligned accesses inside the 4 KiB window.
fn check_access(offset: u64, size: AccessSize) -> Result<(), AccessFault> {
    if size == AccessSize::Double || !offset.is_multiple_of(size.bytes()) || offset >= 0x1000 {
        return Err(AccessFault);
    }
    Ok(())
}

impl MmioDevice for Pl011 {
    #[inline]
    fn read(&mut self, offset: u64, size: AccessSize) -> Result<u64, AccessFault> {
        // A driver's commonest load first, in a few instructions: the flag poll.
        if offset == reg::FR && size != AccessSize::Double {
            return Ok(u64::from(self.flags()) & size.mask());
        }
        check_access(offset, size)?;
        let shift = 8 * (offset & 3);
        let value = self.read_word(offset & !3, shift == 0);
        Ok((u64::from(value) >> shift) & size.mask())
    }

    #[inline]
    fn write(&mut self, offset: u64, size: AccessSize, value: u64) -> Result<(), AccessFault> {
        // The commonest store first, in a few instructions: a character (the data register's
        // low byte lane, whatever the size).
        if offset == reg::DR && size != AccessSize::Double {
            self.transmit(value as u8);
            return Ok(());
        }
        check_access(offset, size)?;
        let shift = 8 * (offset & 3);
        let lanes = (size.mask() << shift) as u32;
        let bits = ((value & size.mask()) << shift) as u32;
        self.write_word(offset & !3, bits, lanes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use AccessSize::*;

    fn fr(u: &mut Pl011) -> u32 {
        u.read(reg::FR, Word).unwrap() as u32
    }

    fn drain(u: &mut Pl011) -> Vec<u8> {
        core::iter::from_fn(|| u.take_tx()).collect()
    }

    fn with_fifos() -> Pl011 {
        let mut u = Pl011::new();
        u.write(reg::LCR_H, Word, 0x70).unwrap();
        u
    }

    #[test]
    fn resets_like_the_trm_says() {
        let mut u = Pl011::new();
        assert_eq!(u.read(reg::CR, Word), Ok(0x300));
        assert_eq!(u.read(reg::IFLS, Word), Ok(0x12));
        assert_eq!(fr(&mut u), fr::RXFE | fr::TXFE);
        assert_eq!(u.read(reg::RIS, Word), Ok(0));
        assert!(!u.irq_pending());
    }

    #[test]
    fn transmitted_bytes_come_out_in_order() {
        let mut u = Pl011::new();
        for &b in b"hi\n" {
            u.write(reg::DR, Word, u64::from(b) | 0xffff_ff00).unwrap();
        }
        assert_eq!(fr(&mut u), fr::RXFE | fr::BUSY);
        assert_eq!(drain(&mut u), b"hi\n");
        assert_eq!(fr(&mut u), fr::RXFE | fr::TXFE);
        u.write(reg::DR, Byte, u64::from(b'x')).unwrap();
        u.write(reg::DR + 1, Byte, u64::from(b'y')).unwrap();
        assert_eq!(drain(&mut u), b"x");
    }

    #[test]
    fn transmit_and_take_is_a_data_store_then_take_tx() {
        let mut rng = crate::test_rng::Rng(16);
        for _ in 0..200 {
            let (mut one, mut two) = (with_fifos(), with_fifos());
            for _ in 0..64 {
                let value = rng.next();
                match rng.below(4) {
                    0 => {
                        assert_eq!(
                            one.transmit_and_take(value),
                            two.write(reg::DR, Word, value)
                                .ok()
                                .and_then(|()| two.take_tx())
                        );
                    }
                    1 => {
                        one.write(reg::DR, Byte, value).unwrap();
                        two.write(reg::DR, Byte, value).unwrap();
                    }
                    2 => {
                        let mask = value & u64::from(int::ALL);
                        one.write(reg::IMSC, Word, mask).unwrap();
                        two.write(reg::IMSC, Word, mask).unwrap();
                        one.write(reg::ICR, Word, value >> 32).unwrap();
                        two.write(reg::ICR, Word, value >> 32).unwrap();
                    }
                    _ => assert_eq!(one.take_tx(), two.take_tx()),
                }
                for offset in [reg::FR, reg::RIS, reg::MIS] {
                    assert_eq!(one.read(offset, Word), two.read(offset, Word));
                }
                assert_eq!(one.irq_pending(), two.irq_pending());
            }
            assert_eq!(drain(&mut one), drain(&mut two));
        }
    }

    #[test]
    fn a_full_transmit_fifo_sets_txff_and_drops_more() {
        let mut u = with_fifos();
        for i in 0..FIFO_DEPTH as u64 + 3 {
            u.write(reg::DR, Byte, i).unwrap();
        }
        assert_eq!(fr(&mut u) & (fr::TXFF | fr::TXFE), fr::TXFF);
        let out = drain(&mut u);
        assert_eq!(out.len(), FIFO_DEPTH);
        assert_eq!(out[FIFO_DEPTH - 1], FIFO_DEPTH as u8 - 1);
    }

    #[test]
    fn receive_fifo_fills_and_drains() {
        let mut u = with_fifos();
        for i in 0..FIFO_DEPTH as u8 {
            assert!(u.receive(i));
        }
        assert!(!u.receive(0xaa));
        assert_eq!(fr(&mut u) & (fr::RXFF | fr::RXFE), fr::RXFF);
        for i in 0..FIFO_DEPTH as u64 {
            assert_eq!(u.read(reg::DR, Word), Ok(i));
        }
        assert_eq!(fr(&mut u) & (fr::RXFF | fr::RXFE), fr::RXFE);
        assert_eq!(u.read(reg::DR, Word), Ok(0));
    }

    #[test]
    fn without_fifos_one_character_fills_the_receiver() {
        let mut u = Pl011::new();
        assert!(u.receive(b'a'));
        assert!(!u.receive(b'b'));
        assert_eq!(fr(&mut u) & fr::RXFF, fr::RXFF);
        assert_eq!(u.read(reg::DR, Byte), Ok(u64::from(b'a')));
    }

    #[test]
    fn reading_another_lane_of_dr_does_not_consume() {
        let mut u = Pl011::new();
        u.receive(b'z');
        assert_eq!(u.read(reg::DR + 1, Byte), Ok(0));
        assert_eq!(u.read(reg::DR + 2, Half), Ok(0));
        assert_eq!(u.read(reg::DR, Half), Ok(u64::from(b'z')));
    }

    #[test]
    fn tx_interrupt_follows_imsc_and_icr() {
        let mut u = Pl011::new();
        u.write(reg::DR, Byte, 0x41).unwrap();
        assert_eq!(u.read(reg::RIS, Word), Ok(u64::from(int::TX)));
        assert!(!u.irq_pending());
        assert_eq!(u.read(reg::MIS, Word), Ok(0));
        u.write(reg::IMSC, Word, u64::from(int::TX)).unwrap();
        assert!(u.irq_pending());
        assert_eq!(u.read(reg::MIS, Word), Ok(u64::from(int::TX)));
        u.write(reg::ICR, Word, u64::from(int::TX)).unwrap();
        assert!(!u.irq_pending());
        assert_eq!(u.read(reg::RIS, Word), Ok(0));
    }

    #[test]
    fn rx_interrupts_follow_the_trigger_level() {
        let mut u = with_fifos();
        u.write(reg::IMSC, Word, u64::from(int::RX | int::RT))
            .unwrap();
        // IFLS reset value: RX trigger at 1/2 full = 16 characters.
        assert!(u.receive(1));
        assert_eq!(u.read(reg::RIS, Word), Ok(u64::from(int::RT)));
        assert!(u.irq_pending());
        for i in 2..=16 {
            assert!(u.receive(i));
        }
        assert_eq!(u.read(reg::MIS, Word), Ok(u64::from(int::RX | int::RT)));
        u.read(reg::DR, Word).unwrap();
        assert_eq!(u.read(reg::MIS, Word), Ok(u64::from(int::RT)));
        u.write(reg::ICR, Word, u64::from(int::ALL)).unwrap();
        assert!(!u.irq_pending());
        u.receive(99);
        while fr(&mut u) & fr::RXFE == 0 {
            u.read(reg::DR, Word).unwrap();
        }
        assert!(!u.irq_pending());
    }

    /// What Linux's amba-pl011 does: startup, interrupt-driven transmit, RX interrupt handler.
    #[test]
    fn linux_driver_sequence() {
        let mut u = Pl011::new();
        u.write(reg::CR, Word, 0).unwrap();
        u.write(reg::ICR, Word, 0x7ff).unwrap();
        u.write(reg::IFLS, Word, 0x12).unwrap();
        u.write(reg::IBRD, Word, 13).unwrap();
        u.write(reg::FBRD, Word, 1).unwrap();
        u.write(reg::LCR_H, Word, 0x70).unwrap();
        u.write(reg::IMSC, Word, u64::from(int::RX | int::RT))
            .unwrap();
        u.write(reg::CR, Word, 0x301).unwrap();
        assert!(!u.irq_pending());
        // start_tx: fill the FIFO, then unmask TX and wait for the interrupt.
        for &b in b"login: " {
            assert_eq!(fr(&mut u) & fr::TXFF, 0);
            u.write(reg::DR, Half, u64::from(b)).unwrap();
        }
        u.write(reg::IMSC, Word, u64::from(int::RX | int::RT | int::TX))
            .unwrap();
        assert!(u.irq_pending());
        assert_eq!(drain(&mut u), b"login: ");
        // Nothing left to send: stop_tx masks TX again.
        u.write(reg::IMSC, Word, u64::from(int::RX | int::RT))
            .unwrap();
        assert!(!u.irq_pending());
        // A key arrives: the handler acknowledges and reads until RXFE.
        assert!(u.receive(b'r'));
        assert!(u.irq_pending());
        let mis = u.read(reg::MIS, Word).unwrap();
        u.write(
            reg::ICR,
            Word,
            mis & !u64::from(int::TX | int::RT | int::RX),
        )
        .unwrap();
        let mut got = Vec::new();
        while fr(&mut u) & fr::RXFE == 0 {
            got.push(u.read(reg::DR, Word).unwrap() as u8);
        }
        assert_eq!(got, b"r");
        assert!(!u.irq_pending());
        // Shutdown.
        u.write(reg::IMSC, Word, 0).unwrap();
        u.write(reg::CR, Word, 0).unwrap();
        u.write(reg::LCR_H, Word, 0).unwrap();
        assert!(!u.irq_pending());
    }

    #[test]
    fn ifls_selects_the_rx_trigger() {
        let mut u = with_fifos();
        u.write(reg::IFLS, Word, 0).unwrap();
        for i in 0..3 {
            u.receive(i);
        }
        assert_eq!(u.read(reg::RIS, Word).unwrap() & u64::from(int::RX), 0);
        u.receive(3);
        assert_eq!(
            u.read(reg::RIS, Word).unwrap() & u64::from(int::RX),
            u64::from(int::RX)
        );
    }

    #[test]
    fn control_registers_keep_their_writable_bits() {
        let mut u = Pl011::new();
        let cases = [
            (reg::ILPR, 0xff),
            (reg::IBRD, 0xffff),
            (reg::FBRD, 0x3f),
            (reg::LCR_H, 0xff),
            (reg::CR, 0xff87),
            (reg::IFLS, 0x3f),
            (reg::IMSC, 0x7ff),
            (reg::DMACR, 0x7),
        ];
        for (offset, writable) in cases {
            u.write(offset, Word, 0xffff_ffff).unwrap();
            assert_eq!(u.read(offset, Word), Ok(writable), "offset {offset:#x}");
        }
        u.write(reg::IBRD + 1, Byte, 0x12).unwrap();
        assert_eq!(u.read(reg::IBRD, Word), Ok(0x12ff));
        assert_eq!(u.read(reg::IBRD + 1, Byte), Ok(0x12));
    }

    #[test]
    fn id_registers_identify_a_pl011_r1p5() {
        let mut u = Pl011::new();
        let ids: Vec<u64> = (0..8)
            .map(|i| u.read(reg::PERIPH_ID0 + 4 * i, Word).unwrap())
            .collect();
        assert_eq!(ids, [0x11, 0x10, 0x34, 0x00, 0x0d, 0xf0, 0x05, 0xb1]);
        assert_eq!(u.read(0xffc, Byte), Ok(0xb1));
        assert_eq!(u.read(0xffd, Byte), Ok(0));
        u.write(reg::PERIPH_ID0, Word, 0).unwrap();
        assert_eq!(u.read(reg::PERIPH_ID0, Word), Ok(0x11));
    }

    #[test]
    fn bad_accesses_fault_and_unknown_offsets_are_raz_wi() {
        let mut u = Pl011::new();
        assert_eq!(u.read(reg::DR, Double), Err(AccessFault));
        assert_eq!(u.write(reg::DR, Double, 0x41), Err(AccessFault));
        assert_eq!(u.read(reg::FR + 1, Half), Err(AccessFault));
        assert_eq!(u.write(reg::CR + 2, Word, 0), Err(AccessFault));
        assert_eq!(u.read(0x1000, Byte), Err(AccessFault));
        assert_eq!(u.read(0x8, Word), Ok(0));
        assert_eq!(u.write(0x8, Word, 0xffff_ffff), Ok(()));
        assert_eq!(u.read(0x800, Word), Ok(0));
        assert_eq!(u.write(reg::RIS, Word, 0xffff_ffff), Ok(()));
        assert_eq!(u.read(reg::RIS, Word), Ok(0));
        assert_eq!(drain(&mut u), b"");
    }

    #[test]
    fn never_panics_on_any_offset_size_or_value() {
        let mut u = with_fifos();
        for offset in (0..0x1010).step_by(1) {
            for size in [Byte, Half, Word, Double] {
                let _ = u.write(offset, size, u64::MAX);
                let _ = u.read(offset, size);
            }
            u.receive(offset as u8);
            u.take_tx();
        }
        let _ = u.read(u64::MAX, Byte);
        let _ = u.write(u64::MAX - 3, Word, 1);
    }
}
