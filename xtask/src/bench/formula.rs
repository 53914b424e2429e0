//! The suite's formulas (shared/BENCHMARKS.md, "Method"): the overhead of a virtualized
//! figure against native (seL4 VMM paper, eq. 1; inverted for throughputs so a positive
//! number is always a loss), its 95 % interval when both figures are means of several runs
//! (Welch's t interval), and Ker-ONE's performance ratio of a score (eq. 2). Pure
//! arithmetic; None where the native figure gives no ratio.

use super::matrix::Sense;

/// Overhead in % of `virt` against `native`: `(P_virt - P_native) / P_native * 100` for a
/// time, the same on the reciprocals (`(P_native - P_virt) / P_virt * 100`) for a rate.
pub fn overhead(sense: Sense, native: f64, virt: f64) -> Option<f64> {
    let (base, other) = match sense {
        Sense::TimeLike => (native, virt),
        Sense::ThroughputLike => (virt, native),
    };
    (base != 0.0).then(|| (other - base) / base * 100.0)
}

/// A figure measured over `runs` runs: their mean and standard deviation (`sd` 0 for one
/// run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub mean: f64,
    pub sd: f64,
    pub runs: f64,
}

/// The overhead in % of `virt`'s mean against `native`'s (`overhead`) and the half width
/// of its 95 % interval: Welch's t interval of the difference of the two means, relative
/// to the native mean (for a rate, to the virtualized one, as `overhead`'s base). Figures of
/// one run each give a half width of 0.
pub fn overhead_interval(sense: Sense, native: Sample, virt: Sample) -> Option<(f64, f64)> {
    let value = overhead(sense, native.mean, virt.mean)?;
    let (n, v) = (
        native.sd * native.sd / native.runs,
        virt.sd * virt.sd / virt.runs,
    );
    let spread = n + v;
    if spread == 0.0 {
        return Some((value, 0.0));
    }
    // Welch–Satterthwaite degrees of freedom; a one-run side adds none.
    let part = |var: f64, runs: f64| {
        if runs > 1.0 {
            var * var / (runs - 1.0)
        } else {
            0.0
        }
    };
    let freedom = spread * spread / (part(n, native.runs) + part(v, virt.runs));
    let base = match sense {
        Sense::TimeLike => native.mean,
        Sense::ThroughputLike => virt.mean,
    };
    Some((value, t_975(freedom) * spread.sqrt() / base * 100.0))
}

/// Student's t at 97.5 % for `freedom` degrees of freedom (rounded down), as tabulated;
/// above 30, the normal's 1.96, a narrower interval than t's.
fn t_975(freedom: f64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    let index = freedom.floor().max(1.0) as usize - 1;
    TABLE.get(index).copied().unwrap_or(1.96)
}

/// Performance ratio in %: `R_P = S_vm / S_native * 100`.
pub fn performance_ratio(native: f64, vm: f64) -> Option<f64> {
    (native != 0.0).then(|| vm / native * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_overhead_is_the_relative_increase() {
        assert_eq!(overhead(Sense::TimeLike, 2.0, 2.5), Some(25.0));
        assert_eq!(overhead(Sense::TimeLike, 4.0, 3.0), Some(-25.0));
        assert_eq!(overhead(Sense::TimeLike, 0.0, 3.0), None);
    }

    #[test]
    fn throughput_overhead_is_positive_for_a_loss() {
        // Half the rate takes twice the time: 100 % overhead.
        assert_eq!(overhead(Sense::ThroughputLike, 40.0, 20.0), Some(100.0));
        assert_eq!(overhead(Sense::ThroughputLike, 40.0, 50.0), Some(-20.0));
        assert_eq!(overhead(Sense::ThroughputLike, 40.0, 0.0), None);
    }

    #[test]
    fn overhead_interval_of_two_means() {
        let sample = |mean, sd, runs| Sample { mean, sd, runs };
        // Native and solo hackbench at 7922e3e (2026-11-27), five runs each.
        let native = sample(1.9246, 0.016_591, 5.0);
        let solo = sample(1.9248, 0.006_458, 5.0);
        let (value, half) = overhead_interval(Sense::TimeLike, native, solo).unwrap();
        assert!((value - 0.010_39).abs() < 1e-4, "{value}");
        // Welch: 5.17 degrees of freedom, t = 2.571; sqrt(0.0000551 + 0.0000083) = 0.007 96.
        assert!((half - 1.0636).abs() < 1e-3, "{half}");
        // One run each: no interval.
        let one = |mean| sample(mean, 0.0, 1.0);
        assert_eq!(
            overhead_interval(Sense::TimeLike, one(2.0), one(2.5)),
            Some((25.0, 0.0))
        );
        // Many runs: the normal's quantile.
        let wide = overhead_interval(
            Sense::TimeLike,
            sample(100.0, 1.0, 100.0),
            sample(100.0, 1.0, 100.0),
        )
        .unwrap();
        assert!((wide.1 - 1.96 * 0.02_f64.sqrt()).abs() < 1e-9, "{wide:?}");
        assert_eq!(overhead_interval(Sense::TimeLike, one(0.0), one(1.0)), None);
    }

    #[test]
    fn performance_ratio_of_scores() {
        assert_eq!(performance_ratio(200.0, 150.0), Some(75.0));
        assert_eq!(performance_ratio(0.0, 150.0), None);
    }
}
