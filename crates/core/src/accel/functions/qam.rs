//! QAM mapping (Gray-coded square constellations, IEEE 802.11a's bit order): each symbol
//! takes `bits` bits, most significant first; the first half picks I, the second half Q.
//! A frame whose length is not a multiple of `bits` ends with a symbol padded with zeros.

use super::put_symbol;

/// Symbols a frame of `frame_bits` makes at `bits` per symbol.
pub const fn symbols(frame_bits: usize, bits: usize) -> usize {
    frame_bits.div_ceil(bits)
}

/// Amplitude of one level step: the outermost point of either constellation stays below
/// 2^15 with headroom for the FFT's rounding.
const fn step(bits: usize) -> i32 {
    if bits == 4 {
        8192
    } else {
        4096
    }
}

/// Gray-coded level of `half` bits `g` (`half` = 2: -3, -1, 1, 3; 3: -7 .. 7).
fn level(g: u32, half: usize) -> i32 {
    // Gray to binary, then binary to an odd level from the most negative up.
    let mut b = g;
    let mut shift = 1;
    while shift < half as u32 {
        b ^= b >> shift;
        shift <<= 1;
    }
    let points = 1i32 << half;
    2 * b as i32 - (points - 1)
}

/// Maps `frame_bits` bits of `input` to symbols of `bits` bits each in `output`.
pub fn map(
    input: &[u8],
    frame_bits: usize,
    bits: usize,
    output: &mut [u8],
    pace: &mut dyn FnMut(),
) {
    let half = bits / 2;
    let mask = (1u32 << half) - 1;
    let mut acc = 0u32;
    let mut held = 0usize;
    let mut consumed = 0usize;
    let mut bytes = input.iter();
    for s in 0..symbols(frame_bits, bits) {
        while held < bits {
            let next = if consumed < frame_bits {
                bytes.next().copied().unwrap_or(0)
            } else {
                0
            };
            acc = (acc << 8) | u32::from(next);
            held += 8;
            consumed += 8;
        }
        let word = (acc >> (held - bits)) & ((1 << bits) - 1);
        held -= bits;
        acc &= (1u32 << held).wrapping_sub(1);
        let i = level(word >> half, half) * step(bits);
        let q = level(word & mask, half) * step(bits);
        put_symbol(output, s, (i as i16, q as i16));
        if s % 256 == 255 {
            pace();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{symbol, Function};
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    /// The 802.11a tables (17.3.5.7), written out.
    const QAM16_LEVELS: [i32; 4] = [-3, -1, 3, 1]; // 00, 01, 10, 11
    const QAM64_LEVELS: [i32; 8] = [-7, -5, -1, -3, 7, 5, 1, 3]; // 000 .. 111

    fn bit(input: &[u8], n: usize) -> u32 {
        input
            .get(n / 8)
            .map_or(0, |b| u32::from(b >> (7 - n % 8)) & 1)
    }

    /// A bit-by-bit model of the mapper, from the tables.
    fn reference(input: &[u8], bits: usize) -> Vec<(i16, i16)> {
        let half = bits / 2;
        (0..symbols(18_800, bits))
            .map(|s| {
                let word = |from: usize| {
                    (0..half).fold(0, |w, k| {
                        let n = s * bits + from + k;
                        (w << 1) | if n < 18_800 { bit(input, n) } else { 0 }
                    })
                };
                let (i, q) = (word(0) as usize, word(half) as usize);
                let (li, lq, step) = if bits == 4 {
                    (QAM16_LEVELS[i], QAM16_LEVELS[q], 8192)
                } else {
                    (QAM64_LEVELS[i], QAM64_LEVELS[q], 4096)
                };
                ((li * step) as i16, (lq * step) as i16)
            })
            .collect()
    }

    fn check(f: Function, bits: usize, seed: u32) {
        let input: Vec<u8> = (0..f.input_frame() as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8)
            .collect();
        let mut out = vec![0u8; f.output_frame()];
        f.frame(&input, &mut out).unwrap();
        let want = reference(&input, bits);
        for (s, w) in want.iter().enumerate() {
            assert_eq!(symbol(&out, s), *w, "{f:?} symbol {s}");
        }
    }

    #[test]
    fn qam16_matches_the_standard_table() {
        for seed in 0..4 {
            check(Function::Qam16, 4, seed);
        }
    }

    #[test]
    fn qam64_matches_the_standard_table_and_pads_the_last_symbol() {
        for seed in 0..4 {
            check(Function::Qam64, 6, seed);
        }
        // 18,800 = 6 * 3,133 + 2: the last symbol holds two real bits and four zeros.
        assert_eq!(symbols(18_800, 6), 3_134);
    }

    #[test]
    fn gray_neighbours_differ_by_one_bit() {
        for half in [2usize, 3] {
            let mut by_level: Vec<(i32, u32)> =
                (0..1u32 << half).map(|g| (level(g, half), g)).collect();
            by_level.sort();
            for w in by_level.windows(2) {
                assert_eq!((w[0].1 ^ w[1].1).count_ones(), 1);
                assert_eq!(w[1].0 - w[0].0, 2);
            }
        }
    }
}
