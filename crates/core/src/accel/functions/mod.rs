//! The accelerator functions of Ker-ONE's OFDM experiment (section 6.1): QAM-16 and QAM-64
//! mapping of 18,800-bit frames, and FFT-512 / FFT-1024 over the 4,700 symbols a QAM-16
//! frame becomes. Integer-only (EL2 has no floating point), one frame at a time: a frame is
//! the unit of work between two consistency points, where a task may be preempted.
//!
//! The same code is the fabric's accelerator and the guests' software reference (Table 6's
//! T_SW): the tests check it against a floating-point model.

mod fft;
mod qam;

/// Bits in one OFDM frame (Ker-ONE section 6.1).
pub const FRAME_BITS: usize = 18_800;
/// Bytes of one QAM input frame.
pub const QAM_FRAME_BYTES: usize = FRAME_BITS / 8;
/// Symbols in one FFT input frame: a QAM-16 frame's output.
pub const FFT_FRAME_SYMBOLS: usize = FRAME_BITS / 4;
/// Bytes of one symbol: I then Q, 16-bit little-endian each.
pub const SYMBOL_BYTES: usize = 4;

/// An accelerator function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Function {
    Qam16,
    Qam64,
    Fft512,
    Fft1024,
}

impl Function {
    pub const ALL: [Function; 4] = [
        Function::Qam16,
        Function::Qam64,
        Function::Fft512,
        Function::Fft1024,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Function::Qam16 => "qam16",
            Function::Qam64 => "qam64",
            Function::Fft512 => "fft512",
            Function::Fft1024 => "fft1024",
        }
    }

    pub fn from_name(name: &str) -> Option<Function> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Ker-ONE's hardware time per frame (Table 6), in nanoseconds: the default frame time.
    pub fn table6_frame_ns(self) -> u32 {
        match self {
            Function::Qam16 => 47_000,
            Function::Qam64 => 31_000,
            Function::Fft512 => 71_100,
            Function::Fft1024 => 90_600,
        }
    }

    /// Bytes of one input frame.
    pub fn input_frame(self) -> usize {
        match self {
            Function::Qam16 | Function::Qam64 => QAM_FRAME_BYTES,
            Function::Fft512 | Function::Fft1024 => FFT_FRAME_SYMBOLS * SYMBOL_BYTES,
        }
    }

    /// Bytes of one output frame.
    pub fn output_frame(self) -> usize {
        match self {
            Function::Qam16 => qam::symbols(FRAME_BITS, 4) * SYMBOL_BYTES,
            Function::Qam64 => qam::symbols(FRAME_BITS, 6) * SYMBOL_BYTES,
            Function::Fft512 => fft::output_symbols(FFT_FRAME_SYMBOLS, 512) * SYMBOL_BYTES,
            Function::Fft1024 => fft::output_symbols(FFT_FRAME_SYMBOLS, 1024) * SYMBOL_BYTES,
        }
    }

    /// Computes one frame: `input` is `input_frame()` bytes, `output` `output_frame()`
    /// bytes; other lengths are refused (the fabric checks sizes before it starts a job).
    pub fn frame(self, input: &[u8], output: &mut [u8]) -> Result<(), WrongLength> {
        self.frame_paced(input, output, &mut || {})
    }

    /// `frame`, calling `pace` after every few thousand instructions' worth of work (256
    /// symbols mapped, or one stage of one stage of an FFT block): the emulated
    /// fabric yields its CPU there so it never holds it for long (`docs/accelerators.md`).
    pub fn frame_paced(
        self,
        input: &[u8],
        output: &mut [u8],
        pace: &mut dyn FnMut(),
    ) -> Result<(), WrongLength> {
        if input.len() != self.input_frame() || output.len() != self.output_frame() {
            return Err(WrongLength);
        }
        match self {
            Function::Qam16 => qam::map(input, FRAME_BITS, 4, output, pace),
            Function::Qam64 => qam::map(input, FRAME_BITS, 6, output, pace),
            Function::Fft512 => fft::frame::<512>(input, output, pace),
            Function::Fft1024 => fft::frame::<1024>(input, output, pace),
        }
        Ok(())
    }
}

/// A frame buffer of the wrong length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrongLength;

/// Reads symbol `i` of a buffer of symbols.
pub fn symbol(bytes: &[u8], i: usize) -> (i16, i16) {
    let at = i * SYMBOL_BYTES;
    (
        i16::from_le_bytes([bytes[at], bytes[at + 1]]),
        i16::from_le_bytes([bytes[at + 2], bytes[at + 3]]),
    )
}

fn put_symbol(bytes: &mut [u8], i: usize, (re, im): (i16, i16)) {
    let at = i * SYMBOL_BYTES;
    bytes[at..at + 2].copy_from_slice(&re.to_le_bytes());
    bytes[at + 2..at + 4].copy_from_slice(&im.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn frame_sizes_follow_the_paper() {
        assert_eq!(Function::Qam16.input_frame(), 2_350);
        assert_eq!(Function::Qam16.output_frame(), 4_700 * 4);
        assert_eq!(Function::Qam64.output_frame(), 3_134 * 4);
        assert_eq!(Function::Fft512.input_frame(), 18_800);
        assert_eq!(Function::Fft512.output_frame(), 10 * 512 * 4);
        assert_eq!(Function::Fft1024.output_frame(), 5 * 1024 * 4);
    }

    #[test]
    fn wrong_lengths_are_refused() {
        let mut out = vec![0u8; Function::Qam16.output_frame()];
        assert_eq!(Function::Qam16.frame(&[0; 10], &mut out), Err(WrongLength));
        for f in Function::ALL {
            assert_eq!(Function::from_name(f.name()), Some(f));
        }
    }

    #[test]
    fn qam16_output_feeds_the_ffts() {
        let input: alloc::vec::Vec<u8> = (0..2_350u32).map(|i| (i * 37 + 11) as u8).collect();
        let mut symbols = vec![0u8; Function::Qam16.output_frame()];
        Function::Qam16.frame(&input, &mut symbols).unwrap();
        let mut spectrum = vec![0u8; Function::Fft512.output_frame()];
        Function::Fft512.frame(&symbols, &mut spectrum).unwrap();
        assert!(spectrum.iter().any(|&b| b != 0));
    }
}
