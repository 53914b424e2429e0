//! The EL1 system-register context of a vCPU and raw access to registers the `aarch64-cpu`
//! crate does not name.
//!
//! `El1Context::save`/`restore` move a vCPU's EL1 state between memory and the CPU when the
//! vCPU leaves or takes a physical CPU; while it runs, the live registers are the truth (abort
//! injection edits them in place). This module must never decide when to switch.

/// Reads a system register by name.
macro_rules! read_sysreg {
    ($reg:literal) => {{
        let value: u64;
        // SAFETY: reading a system register has no side effect on memory.
        unsafe {
            core::arch::asm!(concat!("mrs {}, ", $reg), out(reg) value, options(nomem, nostack));
        }
        value
    }};
}

/// Writes a system register by name. Only EL1/EL0 context registers and EL2 configuration
/// registers are written through this; each caller states why the value is safe.
macro_rules! write_sysreg {
    ($reg:literal, $value:expr) => {{
        let value: u64 = $value;
        // SAFETY: the registers written through this macro are guest EL1/EL0 context or EL2
        // trap configuration; none of them changes Partita's own translation or stack.
        unsafe {
            core::arch::asm!(concat!("msr ", $reg, ", {}"), in(reg) value, options(nostack));
        }
    }};
}

pub(crate) use {read_sysreg, write_sysreg};

macro_rules! el1_context {
    ($(#[$doc:meta])* $name:ident { $($a:ident = $ra:literal, $b:ident = $rb:literal;)* }) => {
        $(#[$doc])*
        #[derive(Clone, Default)]
        pub struct $name {
            $(pub $a: u64, pub $b: u64,)*
        }

        impl $name {
            /// Copies the live registers into `self`, two at a time: both read in one
            /// block, so that their fields, side by side, take one store pair.
            #[inline(always)]
            pub fn save(&mut self) {
                $(
                    let (a, b): (u64, u64);
                    // SAFETY: reading system registers has no side effect on memory.
                    unsafe {
                        core::arch::asm!(
                            concat!("mrs {}, ", $ra, "\n", "mrs {}, ", $rb),
                            out(reg) a,
                            out(reg) b,
                            options(nomem, nostack),
                        );
                    }
                    self.$a = a;
                    self.$b = b;
                )*
            }

            /// Loads `self` into the CPU, two at a time (one load pair each); call with the
            /// vCPU's stage 2 already selected.
            #[inline(always)]
            pub fn restore(&self) {
                $(
                    // SAFETY: these are the EL1/EL0 context registers of the vCPU being
                    // loaded (as `write_sysreg!`); none changes Partita's own translation or
                    // stack.
                    unsafe {
                        core::arch::asm!(
                            concat!("msr ", $ra, ", {}\n", "msr ", $rb, ", {}"),
                            in(reg) self.$a,
                            in(reg) self.$b,
                            options(nostack),
                        );
                    }
                )*
                aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
            }
        }
    };
}

el1_context!(
    /// EL1 and EL0 system registers of one vCPU, listed in pairs (`save`, `restore`).
    El1Context {
        sctlr = "sctlr_el1", ttbr0 = "ttbr0_el1";
        ttbr1 = "ttbr1_el1", tcr = "tcr_el1";
        mair = "mair_el1", amair = "amair_el1";
        vbar = "vbar_el1", contextidr = "contextidr_el1";
        cpacr = "cpacr_el1", csselr = "csselr_el1";
        cntkctl = "cntkctl_el1", cntv_ctl = "cntv_ctl_el0";
        cntv_cval = "cntv_cval_el0", tpidr_el0 = "tpidr_el0";
        tpidrro_el0 = "tpidrro_el0", tpidr_el1 = "tpidr_el1";
        sp_el0 = "sp_el0", sp_el1 = "sp_el1";
        elr_el1 = "elr_el1", spsr_el1 = "spsr_el1";
        esr_el1 = "esr_el1", far_el1 = "far_el1";
        afsr0 = "afsr0_el1", afsr1 = "afsr1_el1";
        par = "par_el1", mdscr = "mdscr_el1";
    }
);

el1_context!(
    /// The pointer-authentication keys of one vCPU (APIAKey, APIBKey, APDAKey, APDBKey,
    /// APGAKey, low and high halves), by encoding so no assembler feature is needed. They
    /// exist only on CPUs with pointer authentication; a VM's keys must never reach another.
    PauthKeys {
        apia_lo = "S3_0_C2_C1_0", apia_hi = "S3_0_C2_C1_1";
        apib_lo = "S3_0_C2_C1_2", apib_hi = "S3_0_C2_C1_3";
        apda_lo = "S3_0_C2_C2_0", apda_hi = "S3_0_C2_C2_1";
        apdb_lo = "S3_0_C2_C2_2", apdb_hi = "S3_0_C2_C2_3";
        apga_lo = "S3_0_C2_C3_0", apga_hi = "S3_0_C2_C3_1";
    }
);

/// SCTLR_EL1 after reset: MMU and caches off, RES1 bits set (ARM ARM D23.2.118).
const SCTLR_EL1_RESET: u64 = 0x30d0_0800;

impl El1Context {
    /// The context of a vCPU that has just been powered on.
    pub fn reset() -> Self {
        El1Context {
            sctlr: SCTLR_EL1_RESET,
            ..El1Context::default()
        }
    }
}

/// Translates a guest EL1 virtual address with the guest's live stage-1 tables (AT S1E1R):
/// the intermediate physical address, or `None` if the guest has not mapped it. The guest's
/// PAR_EL1 is preserved.
pub fn translate_el1_read(va: u64) -> Option<u64> {
    let saved = read_sysreg!("par_el1");
    // SAFETY: address translation only writes PAR_EL1, restored below; the guest's EL1
    // context is loaded, so the walk uses its tables under its own stage 2.
    unsafe { core::arch::asm!("at s1e1r, {}", "isb", in(reg) va, options(nostack)) };
    let par = read_sysreg!("par_el1");
    write_sysreg!("par_el1", saved);
    (par & 1 == 0).then_some((par & 0x000f_ffff_ffff_f000) | (va & 0xfff))
}
