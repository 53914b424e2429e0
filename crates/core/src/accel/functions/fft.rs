//! Fixed-point radix-2 FFT (decimation in time), the arithmetic of a hardware FFT core:
//! Q15 twiddles, every stage halves its outputs with rounding (block scaling), so bin k of
//! a block holds X[k] / N and nothing overflows. A frame of symbols is cut into blocks of N;
//! the last block is padded with zeros.

use super::{put_symbol, symbol};

/// The largest transform: its twiddles serve every smaller power of two by stride.
const MAX_N: usize = 1024;

/// Output symbols of a frame of `symbols` symbols in blocks of `n`.
pub const fn output_symbols(symbols: usize, n: usize) -> usize {
    symbols.div_ceil(n) * n
}

/// cos and sin of x (|x| <= pi) by their Taylor series, at compile time.
const fn cos_sin(x: f64) -> (f64, f64) {
    let mut cos = 0.0;
    let mut sin = 0.0;
    let mut term = 1.0; // x^k / k!
    let mut k = 0;
    while k < 40 {
        match k % 4 {
            0 => cos += term,
            1 => sin += term,
            2 => cos -= term,
            _ => sin -= term,
        }
        k += 1;
        term = term * x / k as f64;
    }
    (cos, sin)
}

const fn q15(v: f64) -> i32 {
    let scaled = v * 32768.0;
    let rounded = if scaled < 0.0 {
        scaled - 0.5
    } else {
        scaled + 0.5
    };
    let r = rounded as i32;
    if r > 32767 {
        32767
    } else {
        r
    }
}

/// W_1024^k = e^(-2 pi i k / 1024) for k < 512, as Q15 (re, im).
static TWIDDLES: [(i32, i32); MAX_N / 2] = twiddles();

const fn twiddles() -> [(i32, i32); MAX_N / 2] {
    let mut t = [(0, 0); MAX_N / 2];
    let mut k = 0;
    while k < MAX_N / 2 {
        let x = core::f64::consts::PI * 2.0 * k as f64 / MAX_N as f64;
        let (c, s) = cos_sin(x);
        t[k] = (q15(c), q15(-s));
        k += 1;
    }
    t
}

/// Transforms every block of N of `input` (symbols) into `output`.
pub fn frame<const N: usize>(input: &[u8], output: &mut [u8], pace: &mut dyn FnMut()) {
    let symbols = input.len() / super::SYMBOL_BYTES;
    let mut block = [(0i32, 0i32); N];
    for b in 0..symbols.div_ceil(N) {
        for (k, slot) in block.iter_mut().enumerate() {
            let i = b * N + k;
            *slot = if i < symbols {
                let (re, im) = symbol(input, i);
                (i32::from(re), i32::from(im))
            } else {
                (0, 0)
            };
        }
        transform(&mut block, pace);
        for (k, &(re, im)) in block.iter().enumerate() {
            put_symbol(output, b * N + k, (re as i16, im as i16));
        }
    }
}

/// In-place scaled FFT of a power-of-two block of at most 1,024 points.
fn transform(x: &mut [(i32, i32)], pace: &mut dyn FnMut()) {
    let n = x.len();
    let bits = n.trailing_zeros();
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - bits);
        if j > i {
            x.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= n {
        let stride = MAX_N / len;
        for start in (0..n).step_by(len) {
            for k in 0..len / 2 {
                let (wr, wi) = TWIDDLES[k * stride];
                let (a, b) = (x[start + k], x[start + k + len / 2]);
                let tr = (b.0 * wr - b.1 * wi + (1 << 14)) >> 15;
                let ti = (b.0 * wi + b.1 * wr + (1 << 14)) >> 15;
                x[start + k] = ((a.0 + tr + 1) >> 1, (a.1 + ti + 1) >> 1);
                x[start + k + len / 2] = ((a.0 - tr + 1) >> 1, (a.1 - ti + 1) >> 1);
            }
        }
        len *= 2;
        pace();
    }
}

#[cfg(test)]
mod tests {
    use super::super::{symbol, Function, FFT_FRAME_SYMBOLS};
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    /// The DFT in floating point, divided by N: what the fixed-point FFT approximates.
    fn dft(block: &[(f64, f64)]) -> Vec<(f64, f64)> {
        let n = block.len() as f64;
        (0..block.len())
            .map(|k| {
                block
                    .iter()
                    .enumerate()
                    .fold((0.0, 0.0), |(re, im), (t, &(xr, xi))| {
                        let a = -2.0 * std::f64::consts::PI * (k * t) as f64 / n;
                        let (c, s) = (a.cos(), a.sin());
                        (re + xr * c - xi * s, im + xr * s + xi * c)
                    })
            })
            .map(|(re, im)| (re / n, im / n))
            .collect()
    }

    fn check(f: Function, n: usize) {
        let input: Vec<u8> = (0..f.input_frame() as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        let mut out = vec![0u8; f.output_frame()];
        f.frame(&input, &mut out).unwrap();
        // Two blocks: the first and the zero-padded last.
        for b in [0, FFT_FRAME_SYMBOLS.div_ceil(n) - 1] {
            let block: Vec<(f64, f64)> = (0..n)
                .map(|k| {
                    let i = b * n + k;
                    if i < FFT_FRAME_SYMBOLS {
                        let (re, im) = symbol(&input, i);
                        (f64::from(re), f64::from(im))
                    } else {
                        (0.0, 0.0)
                    }
                })
                .collect();
            let want = dft(&block);
            let worst = want
                .iter()
                .enumerate()
                .map(|(k, &(re, im))| {
                    let (gr, gi) = symbol(&out, b * n + k);
                    (f64::from(gr) - re).abs().max((f64::from(gi) - im).abs())
                })
                .fold(0.0, f64::max);
            // One rounding per stage, each at most half an LSB, plus the twiddles' error.
            assert!(
                worst <= 1.5 * n.trailing_zeros() as f64,
                "{f:?} block {b}: {worst}"
            );
        }
    }

    #[test]
    fn fft512_matches_the_dft() {
        check(Function::Fft512, 512);
    }

    #[test]
    fn fft1024_matches_the_dft() {
        check(Function::Fft1024, 1024);
    }

    #[test]
    fn twiddles_are_on_the_unit_circle() {
        assert_eq!(TWIDDLES[0], (32767, 0));
        assert_eq!(TWIDDLES[256], (0, -32768));
        for &(c, s) in TWIDDLES.iter() {
            let r = f64::from(c).hypot(f64::from(s));
            assert!((r - 32768.0).abs() < 2.0, "{c} {s}");
        }
    }
}
