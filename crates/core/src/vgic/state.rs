//! The state of one virtual interrupt as the GICv3 architecture defines it (IHI 0069 chapter 4,
//! "Physical interrupt handling and prioritization": interrupt types, the lifecycle inactive,
//! pending, active, active and pending, edge-triggered and level-sensitive behaviour, priorities).
//! It owns only plain per-INTID data and the rules that combine it (what "pending" means for an
//! edge latch and a level line); it never decides where an interrupt goes or how a register looks.

/// How an interrupt becomes pending (GICD_ICFGR<n>.Int_config).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Pending while the input line is asserted (or software set it pending).
    Level,
    /// Pending from an assertion until the guest acknowledges it.
    Edge,
}

/// One virtual interrupt: an SGI or PPI of one vCPU, or an SPI of the VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrqState {
    pub enabled: bool,
    /// Edge assertions, ISPENDR writes and HW injections latch here until acknowledged.
    pub pending_latch: bool,
    /// The level of the input line, for level-sensitive interrupts.
    pub line_level: bool,
    pub active: bool,
    /// 0 is the highest priority.
    pub priority: u8,
    /// GICD_IGROUPR bit: false = Group 0, true = Group 1.
    pub group1: bool,
    pub trigger: Trigger,
    /// The physical INTID this interrupt mirrors: the guest's deactivation deactivates it.
    pub hw: Option<u32>,
}

impl IrqState {
    /// The model's reset state of an interrupt (the architecture leaves most of it UNKNOWN):
    /// disabled, inactive, priority 0, Group 0, with the given trigger.
    pub const fn new(trigger: Trigger) -> Self {
        IrqState {
            enabled: false,
            pending_latch: false,
            line_level: false,
            active: false,
            priority: 0,
            group1: false,
            trigger,
            hw: None,
        }
    }

    /// Whether the interrupt is pending (IHI 0069 chapter 4): an edge interrupt by its latch, a
    /// level interrupt by its line or a software-set latch. An interrupt backed by a physical
    /// one is pending only when the hypervisor injected it: the line belongs to the physical
    /// distributor.
    pub fn pending(&self) -> bool {
        match (self.trigger, self.hw) {
            (Trigger::Level, None) => self.pending_latch || self.line_level,
            _ => self.pending_latch,
        }
    }
}
