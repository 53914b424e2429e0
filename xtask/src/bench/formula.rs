//! The suite's formulas (shared/BENCHMARKS.md, "Method"): the overhead of a virtualized
//! figure against native (seL4 VMM paper, eq. 1; inverted for throughputs so a positive
//! number is always a loss) and Ker-ONE's performance ratio of a score (eq. 2). Pure
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
    fn performance_ratio_of_scores() {
        assert_eq!(performance_ratio(200.0, 150.0), Some(75.0));
        assert_eq!(performance_ratio(0.0, 150.0), None);
    }
}
