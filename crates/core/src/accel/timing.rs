//! The time model: a region's reconfiguration time is its bitstream's size over the
//! configuration port's throughput (Ker-ONE: PCAP, T_RCFG of Table 5), a frame takes its
//! accelerator's configured time (Table 6), and an RTOS task's worst-case allocation
//! latency follows eq. 5-8 from the CPU-side path costs.

/// Nanoseconds to load `bytes` of bitstream at `bytes_per_us`, rounded up.
pub fn reconfig_ns(bytes: u64, bytes_per_us: u32) -> u64 {
    (bytes.saturating_mul(1000)).div_ceil(u64::from(bytes_per_us.max(1)))
}

/// The CPU-side costs of the four allocation paths of Fig. 15, in ns (eq. 6 without the
/// reconfiguration and preemption waits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathCosts {
    /// Path 1: Assign without reconfiguration.
    pub assign: u64,
    /// Path 2: Assign with reconfiguration.
    pub assign_reconfig: u64,
    /// Path 3: Preempt without reconfiguration.
    pub preempt: u64,
    /// Path 4: Preempt with reconfiguration.
    pub preempt_reconfig: u64,
}

/// L_alloc(WCET) of eq. 5: the worst of the four paths, with T_preempt(WCET) (eq. 7: the
/// longest frame of any device that can occupy a region the device is compatible with,
/// since a task stops only at the end of a frame) and T_RCFG(WCET) (eq. 8: the longest
/// reconfiguration among its compatible regions).
pub fn alloc_wcet(paths: PathCosts, preempt_wcet: u64, rcfg_wcet: u64) -> u64 {
    [
        paths.assign,
        paths.assign_reconfig + rcfg_wcet,
        paths.preempt + preempt_wcet,
        paths.preempt_reconfig + preempt_wcet + rcfg_wcet,
    ]
    .into_iter()
    .max()
    .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconfiguration_time_is_size_over_throughput() {
        assert_eq!(reconfig_ns(92_400, 400), 231_000);
        assert_eq!(reconfig_ns(1, 400), 3);
        assert_eq!(reconfig_ns(u64::MAX, 0), u64::MAX);
    }

    #[test]
    fn the_worst_path_wins() {
        let p = PathCosts {
            assign: 700,
            assign_reconfig: 1_500,
            preempt: 1_200,
            preempt_reconfig: 2_000,
        };
        assert_eq!(alloc_wcet(p, 47_000, 810_000), 2_000 + 47_000 + 810_000);
        assert_eq!(alloc_wcet(p, 0, 0), 2_000);
    }
}
