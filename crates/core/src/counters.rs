//! Partita's own figures (the measurement suite's "hypervisor-internal figures"): the
//! numbering, names and units of the per-VM counters the hypervisor keeps, the statistics of
//! one hot path, and the PARTITA_COUNTER hypercall's arguments.
//!
//! The numbering is a guest-visible contract (docs/benchmarks.md): a counter keeps its id
//! for ever, new ones are appended. This module only names and folds numbers; keeping them
//! (per CPU, on the hot paths) is the hypervisor's `counters` module. It must never panic
//! on a guest-given id.

/// Instructions of one UART character's exit and re-entry outside its `UartWrite*` sample,
/// which runs from the clock read in the exception vector to the one just before the `eret`
/// into the guest: the vector's first 5 (before its clock read: the push, ESR_EL2's class
/// and its test) and the last 3 (the stamp's store, x0/x1's load, `eret`). Counted in the
/// disassembly of the qemu-virt build at the commit that set it (docs/design.md); the
/// report adds it to the counted minimum for the exit-to-re-entry figure.
pub const UART_WRITE_UNCOUNTED: u64 = 8;

/// One per-VM counter. Times are nanoseconds of virtual time (the EL2 clock runs at 1 GHz).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Counter {
    /// Exits by cause: HVC, SMC, data abort (MMIO), instruction abort, trapped system
    /// register, WFI, WFE, physical interrupt, anything else.
    TrapsHvc,
    TrapsSmc,
    TrapsDataAbort,
    TrapsInstructionAbort,
    TrapsSysreg,
    TrapsWfi,
    TrapsWfe,
    TrapsIrq,
    TrapsOther,
    /// Interrupts put into the VM's virtual GIC: forwarded physical ones and its own SGIs.
    Injected,
    /// Times the VM's vCPU was put on a CPU.
    Switches,
    /// Time the vCPU ran (from entering the world switch to coming back from it).
    GuestNs,
    /// Time at EL2 on the VM's behalf: from its exit to the next entry of any vCPU of
    /// that CPU (idle time excluded; the wake-up from idle is charged to the VM it wakes).
    El2Ns,
    /// Hypercall round trip at EL2: exit by HVC/SMC to the next entry of the same vCPU.
    HypercallCount,
    HypercallMin,
    HypercallMean,
    HypercallMax,
    /// Interrupt injection: an IRQ exit, or the CPU's wake-up from idle, that injected into
    /// the VM, to the VM's next entry.
    InjectionCount,
    InjectionMin,
    InjectionMean,
    InjectionMax,
    /// vCPU switch: another vCPU's exit to this VM's entry, with no idle in between.
    SwitchCount,
    SwitchMin,
    SwitchMean,
    SwitchMax,
    /// The EL2 clock now: virtual nanoseconds since the CPU started counting.
    ElapsedNs,
    /// Emulated device access: a data-abort exit that a device model answered, to the next
    /// entry of the same vCPU (the cost of, say, one character written to a UART).
    DeviceCount,
    DeviceMin,
    DeviceMean,
    DeviceMax,
    /// One character through an emulated UART: a store to a UART's data register finished
    /// by the data-abort short exit, from the vector's clock read to the one before the
    /// `eret` (the world switch included but for its fixed first and last instructions,
    /// `UART_WRITE_UNCOUNTED`); each is also a `Device` sample.
    UartWriteCount,
    UartWriteMin,
    UartWriteMean,
    UartWriteMax,
    /// Cross-CPU injection, the receiving end: an exit for the kick SGI by which another
    /// vCPU of the VM, on another physical CPU, gave this (loaded) vCPU an interrupt, to
    /// the vCPU's next entry.
    KickCount,
    KickMin,
    KickMean,
    KickMax,
}

impl Counter {
    /// Every counter, in id order.
    pub const ALL: [Counter; 38] = [
        Counter::TrapsHvc,
        Counter::TrapsSmc,
        Counter::TrapsDataAbort,
        Counter::TrapsInstructionAbort,
        Counter::TrapsSysreg,
        Counter::TrapsWfi,
        Counter::TrapsWfe,
        Counter::TrapsIrq,
        Counter::TrapsOther,
        Counter::Injected,
        Counter::Switches,
        Counter::GuestNs,
        Counter::El2Ns,
        Counter::HypercallCount,
        Counter::HypercallMin,
        Counter::HypercallMean,
        Counter::HypercallMax,
        Counter::InjectionCount,
        Counter::InjectionMin,
        Counter::InjectionMean,
        Counter::InjectionMax,
        Counter::SwitchCount,
        Counter::SwitchMin,
        Counter::SwitchMean,
        Counter::SwitchMax,
        Counter::ElapsedNs,
        Counter::DeviceCount,
        Counter::DeviceMin,
        Counter::DeviceMean,
        Counter::DeviceMax,
        Counter::UartWriteCount,
        Counter::UartWriteMin,
        Counter::UartWriteMean,
        Counter::UartWriteMax,
        Counter::KickCount,
        Counter::KickMin,
        Counter::KickMean,
        Counter::KickMax,
    ];

    /// The counter a guest names with `id`, if any.
    pub fn from_id(id: u64) -> Option<Counter> {
        Counter::ALL.get(usize::try_from(id).ok()?).copied()
    }

    pub fn id(self) -> u64 {
        self as u64
    }

    /// The name in console lines, `results.json` and the docs.
    pub fn name(self) -> &'static str {
        match self {
            Counter::TrapsHvc => "traps-hvc",
            Counter::TrapsSmc => "traps-smc",
            Counter::TrapsDataAbort => "traps-data-abort",
            Counter::TrapsInstructionAbort => "traps-instruction-abort",
            Counter::TrapsSysreg => "traps-sysreg",
            Counter::TrapsWfi => "traps-wfi",
            Counter::TrapsWfe => "traps-wfe",
            Counter::TrapsIrq => "traps-irq",
            Counter::TrapsOther => "traps-other",
            Counter::Injected => "injected",
            Counter::Switches => "switches",
            Counter::GuestNs => "guest-time",
            Counter::El2Ns => "el2-time",
            Counter::HypercallCount => "hypercall-count",
            Counter::HypercallMin => "hypercall-min",
            Counter::HypercallMean => "hypercall-mean",
            Counter::HypercallMax => "hypercall-max",
            Counter::InjectionCount => "injection-count",
            Counter::InjectionMin => "injection-min",
            Counter::InjectionMean => "injection-mean",
            Counter::InjectionMax => "injection-max",
            Counter::SwitchCount => "switch-count",
            Counter::SwitchMin => "switch-min",
            Counter::SwitchMean => "switch-mean",
            Counter::SwitchMax => "switch-max",
            Counter::ElapsedNs => "elapsed",
            Counter::DeviceCount => "device-count",
            Counter::DeviceMin => "device-min",
            Counter::DeviceMean => "device-mean",
            Counter::DeviceMax => "device-max",
            Counter::UartWriteCount => "uart-write-count",
            Counter::UartWriteMin => "uart-write-min",
            Counter::UartWriteMean => "uart-write-mean",
            Counter::UartWriteMax => "uart-write-max",
            Counter::KickCount => "kick-count",
            Counter::KickMin => "kick-min",
            Counter::KickMean => "kick-mean",
            Counter::KickMax => "kick-max",
        }
    }

    /// The counter named `name`, if any.
    pub fn from_name(name: &str) -> Option<Counter> {
        Counter::ALL.into_iter().find(|c| c.name() == name)
    }

    /// `count` or `ns`.
    pub fn unit(self) -> &'static str {
        match self {
            Counter::GuestNs
            | Counter::El2Ns
            | Counter::HypercallMin
            | Counter::HypercallMean
            | Counter::HypercallMax
            | Counter::InjectionMin
            | Counter::InjectionMean
            | Counter::InjectionMax
            | Counter::SwitchMin
            | Counter::SwitchMean
            | Counter::SwitchMax
            | Counter::ElapsedNs
            | Counter::DeviceMin
            | Counter::DeviceMean
            | Counter::DeviceMax
            | Counter::UartWriteMin
            | Counter::UartWriteMean
            | Counter::UartWriteMax
            | Counter::KickMin
            | Counter::KickMean
            | Counter::KickMax => "ns",
            _ => "count",
        }
    }
}

// Ids are a guest-visible contract: these never move.
const _: () = assert!(
    Counter::ElapsedNs as u64 == 25
        && Counter::DeviceMax as u64 == 29
        && Counter::UartWriteMax as u64 == 33
        && Counter::KickMax as u64 == 37
);

/// Statistics of one hot path: every sample's length folded in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathStats {
    pub count: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
}

impl PathStats {
    /// Folds in one sample of `ns`.
    pub fn add(&mut self, ns: u64) {
        self.min = if self.count == 0 {
            ns
        } else {
            self.min.min(ns)
        };
        self.max = self.max.max(ns);
        self.sum = self.sum.wrapping_add(ns);
        self.count += 1;
    }

    /// Folds in the samples of `other` (the same path measured on another CPU).
    pub fn merge(&mut self, other: &PathStats) {
        if other.count == 0 {
            return;
        }
        self.min = if self.count == 0 {
            other.min
        } else {
            self.min.min(other.min)
        };
        self.max = self.max.max(other.max);
        self.sum = self.sum.wrapping_add(other.sum);
        self.count += other.count;
    }

    /// The mean (0 without samples).
    pub fn mean(&self) -> u64 {
        self.sum.checked_div(self.count).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_paths_are_the_paths_of_all_samples() {
        let mut a = PathStats::default();
        let mut b = PathStats::default();
        let mut all = PathStats::default();
        for (i, ns) in [500, 120, 900, 333, 77, 610].into_iter().enumerate() {
            if i % 3 == 0 {
                a.add(ns)
            } else {
                b.add(ns)
            }
            all.add(ns);
        }
        let mut merged = PathStats::default();
        merged.merge(&a);
        merged.merge(&PathStats::default());
        merged.merge(&b);
        assert_eq!(merged, all);
    }

    #[test]
    fn ids_names_and_units_round_trip() {
        for (i, c) in Counter::ALL.iter().enumerate() {
            assert_eq!(c.id(), i as u64);
            assert_eq!(Counter::from_id(i as u64), Some(*c));
            assert_eq!(Counter::from_name(c.name()), Some(*c));
        }
        assert_eq!(Counter::from_id(25), Some(Counter::ElapsedNs));
        assert_eq!(Counter::from_id(29), Some(Counter::DeviceMax));
        assert_eq!(Counter::from_id(33), Some(Counter::UartWriteMax));
        assert_eq!(Counter::from_id(37), Some(Counter::KickMax));
        assert_eq!(Counter::from_id(38), None);
        assert_eq!(Counter::from_id(u64::MAX), None);
        assert_eq!(Counter::from_name("elapsed"), Some(Counter::ElapsedNs));
        assert_eq!(Counter::HypercallMax.unit(), "ns");
        assert_eq!(Counter::TrapsHvc.unit(), "count");
    }

    #[test]
    fn path_statistics_fold_samples() {
        let mut stats = PathStats::default();
        assert_eq!(stats.mean(), 0);
        for ns in [300, 100, 200] {
            stats.add(ns);
        }
        assert_eq!(
            (stats.count, stats.min, stats.max, stats.mean()),
            (3, 100, 300, 200)
        );
    }
}
