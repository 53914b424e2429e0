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

/// Ker-ONE's atomic costs of an allocation (Table 4), in ns: the hypervisor's (T_trap,
/// T_resume, T_PL_irq) and the manager's (T_Search, T_Solution(1..3), T_irq_pcap,
/// T_irq_stop).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parts {
    pub trap: u64,
    pub resume: u64,
    pub pl_irq: u64,
    pub search: u64,
    /// Solutions: (1) direct assignment, (2) assignment with reconfiguration, (3) preemption.
    pub solution: [u64; 3],
    pub irq_pcap: u64,
    pub irq_stop: u64,
}

impl Parts {
    /// The CPU-side part of each path of Fig. 15 (eq. 6 without T_RCFG and T_preempt):
    /// 1. trap, search, assign, resume;
    /// 2. trap, search, assign with reconfiguration, resume; then the load's end: PL IRQ,
    ///    its handling, resume;
    /// 3. trap, search, preempt, resume; then the consistency point: PL IRQ, stop, assign,
    ///    resume;
    /// 4. path 3's first half; then PL IRQ, stop, assign with reconfiguration, resume; then
    ///    the load's end: PL IRQ, its handling, assign, resume.
    pub fn paths(&self) -> PathCosts {
        let [assign, reconfig, preempt] = self.solution;
        let request = self.trap + self.search + self.resume;
        let loaded = self.pl_irq + self.irq_pcap + self.resume;
        let stopped = self.pl_irq + self.irq_stop + self.resume;
        PathCosts {
            assign: request + assign,
            assign_reconfig: request + reconfig + loaded,
            preempt: request + preempt + stopped + assign,
            preempt_reconfig: request + preempt + stopped + reconfig + loaded + assign,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_4_composes_into_ker_ones_eq_6() {
        // Ker-ONE's Table 4 (us, here ns) gives its eq. 6: 3.03, 6.76, 5.10 and 9.96 us.
        let ker_one = Parts {
            trap: 760,
            resume: 640,
            pl_irq: 810,
            search: 500,
            solution: [1_130, 2_770, 340],
            irq_pcap: 640,
            irq_stop: 280,
        };
        let p = ker_one.paths();
        assert_eq!(
            [p.assign, p.assign_reconfig, p.preempt, p.preempt_reconfig],
            [3_030, 6_760, 5_100, 9_960]
        );
    }

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
