//! vCPU affinities and software-generated interrupts: decoding of ICC_SGI1R_EL1 (IHI 0069 chapter
//! 12, "ICC_SGI1R_EL1, Interrupt Controller Software Generated Interrupt Group 1 Register") and of
//! the affinity in GICD_IROUTER<n> and GICR_TYPER (same chapter). vCPU `i` has affinity 0.0.(i /
//! 16).(i % 16), so a TargetList (16 bits of Aff0) reaches a whole Aff1 cluster, as with QEMU's
//! GICv3. It owns decoding only; the pending state belongs to `Vgic`.

/// GICD_IROUTER<n>.Interrupt_Routing_Mode: 1 = any participating PE.
pub(crate) const IROUTER_IRM: u64 = 1 << 31;
/// The bits of GICD_IROUTER<n> that are not RES0: Aff0..Aff2, IRM, Aff3.
pub(crate) const IROUTER_MASK: u64 = 0xff_8000_0000 | 0xff_ffff;

/// An MPIDR-style affinity: Aff3.Aff2.Aff1.Aff0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Affinity {
    pub aff3: u8,
    pub aff2: u8,
    pub aff1: u8,
    pub aff0: u8,
}

impl Affinity {
    /// The affinity the model gives vCPU `index` (use it for VMPIDR_EL2).
    pub fn of_vcpu(index: usize) -> Self {
        Affinity {
            aff3: 0,
            aff2: 0,
            aff1: (index / 16) as u8,
            aff0: (index % 16) as u8,
        }
    }

    /// The affinity fields in MPIDR_EL1 layout (bit 31, RES1 in MPIDR_EL1, is not set).
    pub fn mpidr(&self) -> u64 {
        (u64::from(self.aff3) << 32)
            | (u64::from(self.aff2) << 16)
            | (u64::from(self.aff1) << 8)
            | u64::from(self.aff0)
    }

    /// The affinity fields as GICR_TYPER.Affinity_Value and ICC_SGI1R_EL1 pack them:
    /// Aff3.Aff2.Aff1.Aff0 as one 32-bit value.
    pub fn packed(&self) -> u32 {
        u32::from_be_bytes([self.aff3, self.aff2, self.aff1, self.aff0])
    }

    /// The affinity a GICD_IROUTER<n> value names.
    pub fn from_irouter(route: u64) -> Self {
        Affinity {
            aff3: (route >> 32) as u8,
            aff2: (route >> 16) as u8,
            aff1: (route >> 8) as u8,
            aff0: route as u8,
        }
    }

    /// The index of the vCPU with this affinity among `count` vCPUs.
    pub fn vcpu_index(&self, count: usize) -> Option<usize> {
        if self.aff3 != 0 || self.aff2 != 0 || self.aff0 >= 16 {
            return None;
        }
        let index = usize::from(self.aff1) * 16 + usize::from(self.aff0);
        (index < count).then_some(index)
    }
}

/// Who an SGI goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SgiTargetSpec {
    /// IRM = 1: every PE but the sender.
    AllButSelf,
    /// IRM = 0: the PEs Aff3.Aff2.Aff1.<RS * 16 + n> for each bit n set in `target_list`.
    List {
        aff3: u8,
        aff2: u8,
        aff1: u8,
        range_selector: u8,
        target_list: u16,
    },
}

/// A decoded ICC_SGI1R_EL1 write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgiRequest {
    /// The SGI, 0 to 15.
    pub intid: u8,
    pub targets: SgiTargetSpec,
}

impl SgiRequest {
    /// Decodes any 64-bit value (RES0 bits are ignored).
    pub fn decode(icc_sgi1r: u64) -> Self {
        let field = |shift: u32, mask: u64| ((icc_sgi1r >> shift) & mask) as u8;
        let targets = if icc_sgi1r & (1 << 40) != 0 {
            SgiTargetSpec::AllButSelf
        } else {
            SgiTargetSpec::List {
                aff3: field(48, 0xff),
                aff2: field(32, 0xff),
                aff1: field(16, 0xff),
                range_selector: field(44, 0xf),
                target_list: icc_sgi1r as u16,
            }
        };
        SgiRequest {
            intid: field(24, 0xf),
            targets,
        }
    }

    /// The vCPUs among `count` that this request from vCPU `source` reaches.
    pub fn targets(&self, source: usize, count: usize) -> SgiTargets {
        let mut set = SgiTargets::default();
        match self.targets {
            SgiTargetSpec::AllButSelf => {
                for vcpu in (0..count).filter(|&v| v != source) {
                    set.insert(vcpu);
                }
            }
            SgiTargetSpec::List {
                aff3,
                aff2,
                aff1,
                range_selector,
                target_list,
            } => {
                // The set bits only: a self-SGI names one.
                let mut bits = target_list;
                while bits != 0 {
                    let bit = bits.trailing_zeros() as u8;
                    bits &= bits - 1;
                    let aff0 = range_selector
                        .checked_mul(16)
                        .and_then(|r| r.checked_add(bit));
                    let target = aff0.and_then(|aff0| {
                        Affinity {
                            aff3,
                            aff2,
                            aff1,
                            aff0,
                        }
                        .vcpu_index(count)
                    });
                    if let Some(vcpu) = target {
                        set.insert(vcpu);
                    }
                }
            }
        }
        set
    }
}

/// The ICC_SGI1R_EL1 bits that `SgiRequest::decode` reads to find the targets: TargetList,
/// Aff1, Aff2, IRM, RS and Aff3 (all but INTID and the RES0 bits).
const SGI1R_TARGET_BITS: u64 = 0x00ff_f1ff_00ff_ffff;

/// The ICC_SGI1R_EL1 values by which one vCPU sends an SGI to itself alone, recognised in
/// one compare: the value a port computes from its own MPIDR_EL1 (the vCPU's affinity, its
/// bit in TargetList, RS 0, IRM 0), whatever the SGI and the RES0 bits. Every value it
/// recognises reaches that vCPU alone (`SgiRequest::targets`); other values that do (a
/// TargetList with bits of vCPUs the VM lacks) are left to the general path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelfSgi {
    targets: u64,
}

impl SelfSgi {
    /// For vCPU `vcpu` (below `MAX_VCPUS`), whose affinity is `Affinity::of_vcpu`.
    pub fn new(vcpu: usize) -> Self {
        let affinity = Affinity::of_vcpu(vcpu);
        SelfSgi {
            targets: (u64::from(affinity.aff3) << 48)
                | (u64::from(affinity.aff2) << 32)
                | (u64::from(affinity.aff1) << 16)
                | (1 << affinity.aff0),
        }
    }

    /// The SGI (0 to 15) of an ICC_SGI1R_EL1 `value` that sends it to this vCPU alone in the
    /// port's way; `None` for any other value.
    #[inline(always)]
    pub fn intid(&self, value: u64) -> Option<u32> {
        (value & SGI1R_TARGET_BITS == self.targets).then_some(((value >> 24) & 0xf) as u32)
    }
}

/// A set of vCPU indexes below `MAX_VCPUS`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SgiTargets(u64);

impl SgiTargets {
    pub(crate) fn insert(&mut self, vcpu: usize) {
        if vcpu < 64 {
            self.0 |= 1 << vcpu;
        }
    }

    pub fn contains(&self, vcpu: usize) -> bool {
        vcpu < 64 && self.0 & (1 << vcpu) != 0
    }

    /// Whether the set is `vcpu` alone.
    pub fn is_only(&self, vcpu: usize) -> bool {
        1u64.checked_shl(vcpu as u32) == Some(self.0)
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// The vCPU indexes, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..64).filter(|&v| self.contains(v))
    }
}
