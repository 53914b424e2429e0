//! A virtual CPU: the FP/SIMD registers (`FpState`) and the EL1 system registers
//! (`El1Context`), both moved when the vCPU takes or leaves a physical CPU, plus the EL2
//! controls that confine it. Its general registers and ELR/SPSR (`GuestRegs`) are its VM's
//! (`Vm`), apart, because the world switch moves them while the rest of the vCPU is worked on.
//!
//! This module sets up and switches vCPU state; it must never decide what a trap means.

use partita_core::trap::Register;
use partita_core::vgic::Affinity;

use crate::arch::aarch64::fp::FpState;
use crate::arch::aarch64::gic_hyp::VirtualCpuInterface;
use crate::arch::aarch64::sysreg::{read_sysreg, write_sysreg, El1Context, PauthKeys};
use crate::arch::aarch64::vectors::GuestRegs;

/// SPSR for the first entry: EL1h with D, A, I and F masked.
const SPSR_EL1H_MASKED: u64 = 0x3c5;

/// HCR_EL2 for guests: VM (stage 2), SWIO, FMO/IMO/AMO (physical interrupts and SErrors to
/// EL2), TWI/TWE (trap WFI/WFE), TSC (trap SMC), RW (EL1 is AArch64).
const HCR_GUEST: u64 =
    1 | (1 << 1) | (1 << 3) | (1 << 4) | (1 << 5) | (1 << 13) | (1 << 14) | (1 << 19) | (1 << 31);
/// HCR_EL2.TWE: WFE traps.
const HCR_TWE: u64 = 1 << 14;
/// HCR_EL2 while no vCPU is loaded: stage 2 off, EL1 AArch64.
const HCR_NO_GUEST: u64 = 1 << 31;
/// HCR_EL2.APK and API: the guest's pointer-authentication keys and instructions do not trap.
const HCR_PAUTH: u64 = (1 << 40) | (1 << 41);

/// CNTHCTL_EL2 (E2H = 0) bits: EL1PCTEN (the physical counter) and EL1PCEN (the EL1
/// physical timer) without traps.
const CNTHCTL_EL1PCTEN: u64 = 1;
const CNTHCTL_EL1PCEN: u64 = 1 << 1;

/// MDCR_EL2 bits: TPMCR and TPM (PMU registers), TDA, TDOSA and TDRA (debug registers, the
/// OS lock, the debug ROM address). The breakpoints, watchpoints and counters belong to the
/// physical CPU and are not switched with the vCPU, so guests must not reach them.
const MDCR_TRAP_DEBUG_PMU: u64 = (1 << 5) | (1 << 6) | (1 << 9) | (1 << 10) | (1 << 11);
/// MDCR_EL2.HPMN: kept as the CPU set it (the number of event counters).
const MDCR_HPMN: u64 = 0x1f;

/// What a vCPU may do with the EL1 physical timer (CNTP) of its physical CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhysicalTimer {
    /// Its registers move with the vCPU; its interrupt (PPI 30) is not delivered: guests keep
    /// time with the virtual timer.
    Switched { ctl: u64, cval: u64 },
    /// The VM owns it (timer pass-through): it is never switched and PPI 30 is forwarded.
    Owned,
    /// Another VM of this CPU owns it: every access traps (and is undefined).
    Trapped,
}

impl PhysicalTimer {
    fn cnthctl(self) -> u64 {
        match self {
            PhysicalTimer::Trapped => CNTHCTL_EL1PCTEN,
            _ => CNTHCTL_EL1PCTEN | CNTHCTL_EL1PCEN,
        }
    }
}

/// MPIDR_EL1 bit 31, RES1.
const MPIDR_RES1: u64 = 1 << 31;

pub struct Vcpu {
    /// The MPIDR the guest reads: bit 31 and the affinity its VM gives it.
    mpidr: u64,
    /// HCR_EL2 while it runs.
    hcr: u64,
    /// CNTHCTL_EL2 while it runs (`PhysicalTimer::cnthctl`).
    cnthctl: u64,
    pub el1: El1Context,
    fp: FpState,
    /// Its pointer-authentication keys, moved with it when the CPU has them (`None`
    /// otherwise); a fresh vCPU starts with zero keys.
    pauth_keys: Option<PauthKeys>,
    cpu_interface: VirtualCpuInterface,
    physical_timer: PhysicalTimer,
}

impl Vcpu {
    /// vCPU `index` of a VM with `vcpus` vCPUs, fresh (its registers: `GuestRegs::at_entry`).
    /// A VM with several vCPUs keeps WFE untrapped: its vCPUs wait there for each other's
    /// SEV (a spinning lock), and any physical interrupt still ends the wait and reaches EL2.
    pub fn new(index: usize, vcpus: usize, physical_timer: PhysicalTimer) -> Self {
        Vcpu {
            mpidr: MPIDR_RES1 | Affinity::of_vcpu(index).mpidr(),
            hcr: if vcpus > 1 { hcr() & !HCR_TWE } else { hcr() },
            cnthctl: physical_timer.cnthctl(),
            el1: El1Context::reset(),
            fp: FpState::default(),
            pauth_keys: has_pauth().then(PauthKeys::default),
            cpu_interface: VirtualCpuInterface::default(),
            physical_timer,
        }
    }

    /// Loads this vCPU's EL1 state, virtual CPU interface and EL2 controls onto the current
    /// CPU (`init_cpu` set the controls every vCPU shares); the VM's virtual counter is the
    /// physical one minus `counter_offset`.
    #[inline(always)]
    pub fn load(&self, counter_offset: u64) {
        write_sysreg!("hcr_el2", self.hcr);
        write_sysreg!("vmpidr_el2", self.mpidr);
        write_sysreg!("cnthctl_el2", self.cnthctl);
        write_sysreg!("cntvoff_el2", counter_offset);
        if let PhysicalTimer::Switched { ctl, cval } = self.physical_timer {
            write_sysreg!("cntp_cval_el0", cval);
            write_sysreg!("cntp_ctl_el0", ctl);
        }
        self.cpu_interface.restore();
        if let Some(keys) = &self.pauth_keys {
            keys.restore();
        }
        self.el1.restore();
        self.fp.restore();
    }

    /// Saves the EL1 state and virtual CPU interface when the vCPU leaves the CPU, and stops
    /// its virtual timer so it cannot fire for a vCPU that is not there.
    pub fn unload(&mut self) {
        self.save();
        write_sysreg!("cntv_ctl_el0", 0);
        write_sysreg!("hcr_el2", HCR_NO_GUEST);
    }

    /// `unload` when another vCPU is loaded right after, with the CPU's interrupts masked
    /// (a switch inside the world switch): its `load` sets the virtual timer and HCR_EL2, so
    /// they are left as they are. Until then the old timer may still assert its PPI; the
    /// PPI is level-sensitive, so the GIC's pending state follows the timer the `load`
    /// restores, and nothing takes the PPI meanwhile.
    #[inline(always)]
    pub fn save(&mut self) {
        self.el1.save();
        self.fp.save();
        if let Some(keys) = &mut self.pauth_keys {
            keys.save();
        }
        if let PhysicalTimer::Switched { ctl, cval } = &mut self.physical_timer {
            *ctl = read_sysreg!("cntp_ctl_el0");
            *cval = read_sysreg!("cntp_cval_el0");
        }
        self.cpu_interface.save();
    }
}

/// Sets the EL2 controls that are the same for every vCPU of this CPU, once, before its
/// first vCPU is loaded (nothing at EL2 changes them after): the debug and PMU traps
/// (MDCR_EL2) and the MIDR the guests read (VPIDR_EL2: the CPU's own).
pub fn init_cpu() {
    write_sysreg!(
        "mdcr_el2",
        (read_sysreg!("mdcr_el2") & MDCR_HPMN) | MDCR_TRAP_DEBUG_PMU
    );
    write_sysreg!("vpidr_el2", read_sysreg!("midr_el1"));
}

/// Whether this CPU implements pointer authentication.
fn has_pauth() -> bool {
    // ID_AA64ISAR1_EL1 APA [7:4], API [11:8], GPA [27:24], GPI [31:28]; ID_AA64ISAR2_EL1
    // GPA3 [11:8], APA3 [15:12] (ARM ARM D23.2.75, D23.2.76).
    read_sysreg!("id_aa64isar1_el1") & 0xff00_0ff0 != 0
        || read_sysreg!("id_aa64isar2_el1") & 0xff00 != 0
}

/// HCR_EL2 for guests on this CPU: pointer authentication is passed through when present
/// (its keys move with the vCPU).
fn hcr() -> u64 {
    if has_pauth() {
        HCR_GUEST | HCR_PAUTH
    } else {
        HCR_GUEST
    }
}

impl GuestRegs {
    /// A vCPU's registers before its first instruction: at `entry` in EL1h with D, A, I
    /// and F masked, MMU off, `x0` (the device tree, or CPU_ON's context id) and x1..x30 =
    /// 0.
    pub fn at_entry(entry: u64, x0: u64) -> Self {
        let mut regs = GuestRegs {
            elr: entry,
            spsr: SPSR_EL1H_MASKED,
            ..GuestRegs::default()
        };
        regs.x[0] = x0;
        regs
    }

    /// The value of a register named by an instruction (XZR reads as zero).
    #[inline]
    pub fn get(&self, r: Register) -> u64 {
        match r {
            Register::X(n) => self.x.get(usize::from(n)).copied().unwrap_or(0),
            Register::Zero => 0,
        }
    }

    /// x0..x18: the registers a short exit always has saved (`vectors::CallerSaved`).
    #[inline]
    pub fn caller_saved_mut(&mut self) -> &mut [u64] {
        &mut self.x[..19]
    }

    /// Writes a register named by an instruction (writes to XZR are discarded).
    #[inline]
    pub fn set(&mut self, r: Register, value: u64) {
        if let Register::X(n) = r {
            if let Some(x) = self.x.get_mut(usize::from(n)) {
                *x = value;
            }
        }
    }
}
