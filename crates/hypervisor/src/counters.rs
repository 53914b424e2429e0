//! Partita's own figures (`partita_core::counters`): per VM, exits by cause, injected
//! interrupts, vCPU switches, time in the guest and at EL2, and the length of four hot
//! paths (hypercall round trip, interrupt injection, vCPU switch, emulated device access,
//! and of that a character written to a UART);
//! read by guests with
//! PARTITA_COUNTER and printed on the console when a VM stops.
//!
//! The clock is the PMU cycle counter PMCCNTR_EL0, counting at every exception level
//! (PMCCFILTR_EL0.NSH): under QEMU TCG it is the virtual clock at 1 GHz, so with
//! `-icount shift=0` one tick is one instruction and one nanosecond (CNTPCT_EL0 would give
//! 16 ns steps, as long as a short path). Guests' PMU accesses trap (MDCR_EL2.TPM/TPMCR,
//! set by `vcpu::init_cpu`) and read as zero, so no guest can reset or stop it.
//!
//! Cheap on the hot paths: each CPU keeps its own words for every VM (a VM with several
//! vCPUs is counted on each of their CPUs) and its own bookkeeping, so every word has one
//! writer and every update is a relaxed load and store, no lock, no read-modify-write; a
//! reader adds up the CPUs' words and sees each word whole. This module must
//! never change what a guest or the scheduler does.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use partita_core::counters::{Counter, PathStats};

use crate::arch::aarch64::entry::{self, MAX_CPUS};
use crate::arch::aarch64::sysreg::{read_sysreg, write_sysreg};

/// VMs with counters (configuration indices below this); others are not counted.
const MAX_VMS: usize = 16;
/// Words per VM: one per counter (`ElapsedNs`'s is unused), paths as count, min, sum, max.
/// The device path's words hold the device accesses other than UART data-register writes
/// (`UartWrite*`'s words), so a short exit folds one sample; `Device*` reads both together.
const WORDS: usize = Counter::ALL.len();

/// Why the last vCPU of a CPU exited, as far as the hot paths care.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    Hypercall,
    Irq,
    Other,
    /// A data abort a device model answered (`device_access`).
    Device,
    /// A kick SGI that brought the loaded vCPU an interrupt from another CPU (`kicked`).
    Kick,
}

/// The exit causes counted (`Counter::Traps*`).
#[derive(Clone, Copy)]
pub enum Trap {
    Hvc,
    Smc,
    DataAbort,
    InstructionAbort,
    Sysreg,
    Wfi,
    Wfe,
    Irq,
    Other,
}

impl Trap {
    fn counter(self) -> Counter {
        match self {
            Trap::Hvc => Counter::TrapsHvc,
            Trap::Smc => Counter::TrapsSmc,
            Trap::DataAbort => Counter::TrapsDataAbort,
            Trap::InstructionAbort => Counter::TrapsInstructionAbort,
            Trap::Sysreg => Counter::TrapsSysreg,
            Trap::Wfi => Counter::TrapsWfi,
            Trap::Wfe => Counter::TrapsWfe,
            Trap::Irq => Counter::TrapsIrq,
            Trap::Other => Counter::TrapsOther,
        }
    }

    fn kind(self) -> ExitKind {
        match self {
            Trap::Hvc | Trap::Smc => ExitKind::Hypercall,
            Trap::Irq => ExitKind::Irq,
            _ => ExitKind::Other,
        }
    }
}

struct VmWords([AtomicU64; WORDS]);

/// Per CPU, per VM: the counters as that CPU counted them.
static VMS: [[VmWords; MAX_VMS]; MAX_CPUS] =
    [const { [const { VmWords([const { AtomicU64::new(0) }; WORDS]) }; MAX_VMS] }; MAX_CPUS];

/// Per CPU, the words the short exits of a VM without counters write and nobody reads
/// (`ShortExits`).
static SPARE: [VmWords; MAX_CPUS] =
    [const { VmWords([const { AtomicU64::new(0) }; WORDS]) }; MAX_CPUS];

/// A CPU's bookkeeping between an exit and the next entry.
struct CpuWords {
    /// Clock at the last transition (exit, entry, idle end).
    mark: AtomicU64,
    /// Who EL2 time since `mark` belongs to: a VM index, `BOOT` or `WOKE`.
    owner: AtomicU64,
    /// `ExitKind` of the last exit (as u64), `NO_PATH` once a path cannot be measured.
    kind: AtomicU64,
    /// 1 + the index of the VM the last exit (or wake-up) injected into; 0: none.
    injected: AtomicU64,
    /// Clock at the data-abort vector of the exit the general path is handling
    /// (`abort_taken`): where the fabric's T_trap starts.
    abort_at: AtomicU64,
    /// Clock when the fabric answered a request on this CPU, until the next entry (0: none):
    /// T_resume ends there.
    answered_at: AtomicU64,
    /// T_resume's samples on this CPU: count, min, sum, max.
    resume: [AtomicU64; 4],
}

/// Owner before the first entry: building VMs is not charged to any.
const BOOT: u64 = u64::MAX;
/// Owner after idle: the wake-up is charged to the VM that enters next.
const WOKE: u64 = u64::MAX - 1;
/// No `ExitKind`: the next entry ends no measured path.
const NO_PATH: u64 = u64::MAX;

static CPUS: [CpuWords; MAX_CPUS] = [const {
    CpuWords {
        mark: AtomicU64::new(0),
        owner: AtomicU64::new(BOOT),
        kind: AtomicU64::new(NO_PATH),
        injected: AtomicU64::new(0),
        abort_at: AtomicU64::new(0),
        answered_at: AtomicU64::new(0),
        resume: [const { AtomicU64::new(0) }; 4],
    }
}; MAX_CPUS];

/// PMCR_EL0: E (enable), C (reset the cycle counter), LC (64-bit cycle counter).
const PMCR_START: u64 = 1 | (1 << 2) | (1 << 6);
/// PMCCFILTR_EL0.NSH: count at EL2 too (EL0/EL1 count by default).
const PMCCFILTR_ALL_ELS: u64 = 1 << 27;
/// PMCNTENSET_EL0.C: the cycle counter runs.
const PMCNTEN_CYCLES: u64 = 1 << 31;

/// Whether the clock is the PMU cycle counter (`has_pmu`, as `init_cpu` found it).
static PMU: AtomicBool = AtomicBool::new(true);

/// Whether the CPU has a PMUv3 (ID_AA64DFR0_EL1.PMUVer neither 0 nor IMPLEMENTATION
/// DEFINED); without one the clock is the generic counter. The world switch reads the clock
/// in its own code, one copy for each (`vectors.rs`: `install` and `enter_guest` choose).
#[inline]
pub fn has_pmu() -> bool {
    let version = (read_sysreg!("id_aa64dfr0_el1") >> 8) & 0xf;
    version != 0 && version != 0xf
}

/// Starts this CPU's clock; call once per CPU before any VM (guests never reach the PMU:
/// `vcpu::init_cpu` sets MDCR_EL2's traps and `trap.rs` makes the registers read as zero).
pub fn init_cpu() {
    if !has_pmu() {
        PMU.store(false, Ordering::Relaxed);
        return;
    }
    write_sysreg!("pmccfiltr_el0", PMCCFILTR_ALL_ELS);
    write_sysreg!("pmcntenset_el0", PMCNTEN_CYCLES);
    write_sysreg!("pmcr_el0", PMCR_START);
}

/// The EL2 clock in nanoseconds of virtual time (CNTPCT_EL0 at QEMU's 62.5 MHz, 16 ns a
/// tick, on a CPU without PMU).
#[inline]
fn clock() -> u64 {
    if PMU.load(Ordering::Relaxed) {
        read_sysreg!("pmccntr_el0")
    } else {
        read_sysreg!("cntpct_el0").wrapping_mul(16)
    }
}

/// This CPU's index (`entry::cpu_index`).
#[inline(always)]
fn cpu_index() -> usize {
    entry::cpu_index()
}

fn cpu() -> &'static CpuWords {
    &CPUS[cpu_index()]
}

/// This CPU's words for VM `vm`.
fn words(vm: usize) -> Option<&'static [AtomicU64; WORDS]> {
    VMS[cpu_index()].get(vm).map(|w| &w.0)
}

/// Every CPU's words for VM `vm`.
fn all_words(vm: usize) -> impl Iterator<Item = &'static [AtomicU64; WORDS]> {
    VMS.iter().filter_map(move |cpu| cpu.get(vm)).map(|w| &w.0)
}

fn add(vm: usize, counter: Counter, amount: u64) {
    if let Some(w) = words(vm) {
        add_words(w, counter, amount);
    }
}

fn add_words(w: &[AtomicU64; WORDS], counter: Counter, amount: u64) {
    let word = &w[counter as usize];
    word.store(
        word.load(Ordering::Relaxed).wrapping_add(amount),
        Ordering::Relaxed,
    );
}

/// Charges EL2 time since the last mark to its owner (or to `entering` after idle), on
/// the CPU at `at` in `CPUS` and `VMS`.
fn charge_el2(at: usize, now: u64, entering: usize) {
    let cpu = &CPUS[at];
    let since = now.wrapping_sub(cpu.mark.load(Ordering::Relaxed));
    let vm = match cpu.owner.load(Ordering::Relaxed) {
        BOOT => return,
        WOKE => entering,
        owner => owner as usize,
    };
    if let Some(w) = VMS[at].get(vm) {
        add_words(&w.0, Counter::El2Ns, since);
    }
}

/// The clock (ns of virtual time under `-icount`, 1 ns steps).
pub fn clock_ns() -> u64 {
    clock()
}

/// A data abort taken at `start` (the vector's clock) goes to the general path (out of the
/// short exits' line: they finish most).
#[cold]
pub fn abort_taken(start: u64) {
    cpu().abort_at.store(start, Ordering::Relaxed);
}

/// Time since the data-abort vector of the exit being handled (T_trap's end).
pub fn since_abort() -> u64 {
    clock().wrapping_sub(cpu().abort_at.load(Ordering::Relaxed))
}

/// The fabric answered a request on this CPU: T_resume runs until the next entry.
pub fn answered() {
    cpu().answered_at.store(clock(), Ordering::Relaxed);
}

/// T_resume over every CPU: from the fabric's answer to the world switch's entry.
pub fn resume_stats() -> PathStats {
    let mut all = PathStats::default();
    for cpu in &CPUS {
        all.merge(&words_at(&cpu.resume, 0));
    }
    all
}

/// VM `vm`'s vCPU is about to enter the world switch. The path that ends with this entry
/// (a switch, an injection, ...) is measured from the last exit's vector (`exited`) to the
/// clock just before the `eret` (`GuestRegs::entered`), so its sample is folded at the
/// vCPU's next exit (`ShortExits`). Returns that path's first word (`None`: no path) and
/// its start. `at`: this CPU's index, read once by the caller (`ShortExits::entering`: every
/// general entry passes here).
#[inline(always)]
fn entering(at: usize, vm: usize, now: u64) -> (Option<Counter>, u64) {
    let cpu = &CPUS[at];
    let answered = cpu.answered_at.load(Ordering::Relaxed);
    if answered != 0 {
        cpu.answered_at.store(0, Ordering::Relaxed);
        fold(&cpu.resume, now.wrapping_sub(answered));
    }
    charge_el2(at, now, vm);
    let owner = cpu.owner.load(Ordering::Relaxed);
    let kind = cpu.kind.load(Ordering::Relaxed);
    let woke = owner == WOKE;
    let mut path = None;
    if (owner < WOKE || woke) && kind != NO_PATH {
        let injected = cpu.injected.load(Ordering::Relaxed) == vm as u64 + 1;
        path = if !woke && owner as usize != vm {
            Some(Counter::SwitchCount)
        } else if kind == ExitKind::Hypercall as u64 && !woke {
            Some(Counter::HypercallCount)
        } else if kind == ExitKind::Irq as u64 && injected {
            Some(Counter::InjectionCount)
        } else if kind == ExitKind::Device as u64 && !woke {
            Some(Counter::DeviceCount)
        } else if kind == ExitKind::Kick as u64 && injected {
            Some(Counter::KickCount)
        } else {
            None
        };
    }
    let start = cpu.mark.load(Ordering::Relaxed);
    cpu.mark.store(now, Ordering::Relaxed);
    (path, start)
}

/// The statistics of the path whose first word (its count) is `first`; the next three
/// words are min, sum (read as the mean) and max. The device path is every device access,
/// its own words and the UART writes' together.
fn path(w: &[AtomicU64; WORDS], first: Counter) -> PathStats {
    let mut stats = words_of(w, first);
    if first == Counter::DeviceCount {
        stats.merge(&words_of(w, Counter::UartWriteCount));
    }
    stats
}

/// The path whose first word is `first`, as its words hold it.
#[inline]
fn words_of(w: &[AtomicU64; WORDS], first: Counter) -> PathStats {
    words_at(w, first as usize)
}

/// The path whose first word is at `at`, as its words hold it: count, the minimum's
/// complement, sum, max (`fold`).
#[inline]
fn words_at(w: &[AtomicU64], at: usize) -> PathStats {
    let count = w[at].load(Ordering::Relaxed);
    PathStats {
        count,
        min: if count == 0 {
            0
        } else {
            !w[at + 1].load(Ordering::Relaxed)
        },
        sum: w[at + 2].load(Ordering::Relaxed),
        max: w[at + 3].load(Ordering::Relaxed),
    }
}

/// Folds one sample into the path whose words are `w`: count, the minimum's complement,
/// sum, max. The minimum is kept as its complement, the largest complement: a path without
/// samples (all words zero) takes its first sample as every later one, without a test of
/// the count. Two loads and two stores of word pairs: every hot path folds the sample of
/// the one before it.
#[inline(always)]
fn fold(w: &PathWords, ns: u64) {
    let words = w.as_ptr();
    // SAFETY: `words` points to the four 8-byte aligned words of `w`, which only this CPU
    // writes (`ShortExits`, `CpuWords`); each 64-bit half of LDP and STP at an aligned
    // address is single-copy atomic, as the relaxed loads and stores of their readers.
    unsafe {
        core::arch::asm!(
            "ldp {count}, {not_min}, [{w}]",
            "ldp {sum}, {max}, [{w}, #16]",
            "add {count}, {count}, #1",
            "cmp {not_min}, {ns_not}",
            "csel {not_min}, {not_min}, {ns_not}, hi",
            "add {sum}, {sum}, {ns}",
            "cmp {max}, {ns}",
            "csel {max}, {max}, {ns}, hi",
            "stp {count}, {not_min}, [{w}]",
            "stp {sum}, {max}, [{w}, #16]",
            w = in(reg) words,
            ns = in(reg) ns,
            ns_not = in(reg) !ns,
            count = out(reg) _,
            not_min = out(reg) _,
            sum = out(reg) _,
            max = out(reg) _,
            options(nostack),
        );
    }
}

/// VM `vm`'s vCPU came back from the world switch, which left the guest at `now` (the
/// clock at the exit's vector, `GuestRegs::exited`).
pub fn exited(vm: usize, now: u64) {
    let at = cpu_index();
    exited_at(&CPUS[at], VMS[at].get(vm).map(|w| &w.0), vm, now);
}

/// `exited` on the CPU whose words are `cpu`, VM `vm`'s there being `words`.
#[inline(always)]
fn exited_at(cpu: &CpuWords, words: Option<&[AtomicU64; WORDS]>, vm: usize, now: u64) {
    if let Some(w) = words {
        add_words(
            w,
            Counter::GuestNs,
            now.wrapping_sub(cpu.mark.load(Ordering::Relaxed)),
        );
    }
    cpu.mark.store(now, Ordering::Relaxed);
    cpu.owner.store(vm as u64, Ordering::Relaxed);
    cpu.kind.store(ExitKind::Other as u64, Ordering::Relaxed);
    cpu.injected.store(0, Ordering::Relaxed);
}

/// The cause of VM `vm`'s last exit.
pub fn trap(vm: usize, trap: Trap) {
    let at = cpu_index();
    trap_at(&CPUS[at], VMS[at].get(vm).map(|w| &w.0), trap);
}

/// `trap` on the CPU whose words are `cpu`, the VM's there being `words`.
#[inline(always)]
fn trap_at(cpu: &CpuWords, words: Option<&[AtomicU64; WORDS]>, trap: Trap) {
    if let Some(w) = words {
        add_words(w, trap.counter(), 1);
    }
    cpu.kind.store(trap.kind() as u64, Ordering::Relaxed);
}

/// The last exit (a data abort) was answered by a device model.
pub fn device_access() {
    cpu().kind.store(ExitKind::Device as u64, Ordering::Relaxed);
}

/// An exit the world switch's short exit finished (`short_exit`).
#[derive(Clone, Copy)]
pub enum ShortPath {
    /// A device access (`uart_write`: a character written to a UART's data register).
    Device { uart_write: bool },
    /// A hypercall (HVC, or SMC when `smc`).
    Hypercall { smc: bool },
    /// A physical interrupt injected into the loaded vCPU.
    Injection,
    /// A trapped ICC_SGI1R_EL1 write (an SGI injected).
    Sgi,
}

/// The counting of one VM's short exits while its vCPU is entered (`short_exit::enter`): each folds
/// its trap, injection and path sample at once (relaxed loads and stores into this CPU's
/// words); their EL2 time is taken off the guest's when the vCPU's exit leaves the short
/// path (`finish`).
///
/// Cheap by construction: the words are found once, when the vCPU is entered; a VM without
/// counters writes into this CPU's `SPARE` words, so no update asks whether it has words;
/// and the short exits' EL2 time is not summed apart: it is what they added to the VM's
/// `El2Ns` word on this CPU, which nothing else writes while the vCPU is entered.
pub struct ShortExits {
    /// This CPU's bookkeeping.
    cpu: &'static CpuWords,
    words: &'static [AtomicU64; WORDS],
    /// On a CPU shared by two vCPUs, the words of the one not entered (`pair`), which a
    /// switch trades for `words`; this CPU's spare words otherwise.
    other: &'static [AtomicU64; WORDS],
    /// A sample waits for the guest's next entry to end it (`settle`) ...
    waiting: bool,
    /// ... with its path's words (none: EL2 time alone, as a sent SGI's) ...
    path: Option<&'static PathWords>,
    /// ... its start (the clock at its exit's vector, or at the wake-up) ...
    start: u64,
    /// ... and where its EL2 time starts: `start` for a short exit's; for the general
    /// path's (`entering`), the entry, whose EL2 time before that `entering` charged.
    el2_from: u64,
    /// The `El2Ns` word when the vCPU was entered (`finish` takes the difference).
    el2_before: u64,
    /// The time the short exits' WFIs waited at EL2 (`idle`).
    idle: u64,
    /// The wake-up of a WFI's short exit that handed its exit over (`interrupted`).
    resumed: Option<u64>,
    /// The fabric's answer to a request the short exit made (`accelerator`): T_resume ends
    /// at the guest's next entry (`settle`).
    answered: Option<u64>,
}

/// A path's four words: count, min, sum, max.
type PathWords = [AtomicU64; 4];

/// The words of the path of `w` whose first word is at `at` (a constant on the hot paths, so
/// the lookup is an address); none past the words.
#[inline(always)]
fn path_words(w: &'static [AtomicU64; WORDS], at: usize) -> Option<&'static PathWords> {
    w.get(at..)?.first_chunk()
}

impl ShortExits {
    /// VM `vm`'s vCPU is about to be entered on this CPU (the general path's entry): the
    /// path that ends with this entry waits for the guest's entry (`entering`), and its
    /// short exits are counted from now on. This CPU's index and words are found once.
    pub fn entering(vm: usize) -> Self {
        let at = cpu_index();
        let (words, first, start, now) = Self::entry(at, vm);
        ShortExits {
            cpu: &CPUS[at],
            words,
            other: &SPARE[at].0,
            waiting: first.is_some(),
            path: first.and_then(|first| path_words(words, first as usize)),
            start,
            el2_from: now,
            el2_before: words[Counter::El2Ns as usize].load(Ordering::Relaxed),
            idle: 0,
            resumed: None,
            answered: None,
        }
    }

    /// An entry of VM `vm`'s vCPU now on the CPU at `at`: its words there, the path that
    /// ends with it and that path's start (`entering`), and the clock.
    #[inline(always)]
    fn entry(at: usize, vm: usize) -> (&'static [AtomicU64; WORDS], Option<Counter>, u64, u64) {
        let now = clock();
        let (first, start) = entering(at, vm, now);
        let words = VMS[at].get(vm).map_or(&SPARE[at].0, |w| &w.0);
        (words, first, start, now)
    }

    /// The guest was entered again at `entered` (`GuestRegs::entered`): the waiting sample,
    /// if any, ends there. Called at every exit of the vCPU, before anything else is counted.
    #[inline(always)]
    pub fn settle(&mut self, entered: u64) {
        if !self.waiting {
            return;
        }
        self.waiting = false;
        add_words(
            self.words,
            Counter::El2Ns,
            entered.wrapping_sub(self.el2_from),
        );
        if let Some(path) = self.path {
            fold(path, entered.wrapping_sub(self.start));
        } else if let Some(answered) = self.answered.take() {
            // Only a fabric request's sample, which has no path, has an answer.
            fold(&self.cpu.resume, entered.wrapping_sub(answered));
        }
    }

    /// A short exit that began at `start` waits for the guest's entry with a sample of the
    /// path whose first word is `first` (none: EL2 time alone) (`settle`).
    #[inline(always)]
    fn wait_entry(&mut self, first: Option<Counter>, start: u64) {
        self.waiting = true;
        self.path = first.and_then(|first| path_words(self.words, first as usize));
        self.start = start;
        self.el2_from = start;
    }

    /// The short exit finished `path`, which began with the exception at `start`: its
    /// traps are counted now, its sample when the guest's next entry ends it (`settle`).
    #[inline]
    pub fn done(&mut self, start: u64, path: ShortPath) {
        let (trap, first, injected) = match path {
            ShortPath::Device { uart_write } => {
                let first = if uart_write {
                    Counter::UartWriteCount
                } else {
                    Counter::DeviceCount
                };
                (Counter::TrapsDataAbort, Some(first), false)
            }
            ShortPath::Hypercall { smc } => {
                let trap = if smc { Trap::Smc } else { Trap::Hvc };
                (trap.counter(), Some(Counter::HypercallCount), false)
            }
            ShortPath::Injection => (Counter::TrapsIrq, Some(Counter::InjectionCount), true),
            ShortPath::Sgi => (Counter::TrapsSysreg, None, true),
        };
        self.wait_entry(first, start);
        add_words(self.words, trap, 1);
        if injected {
            add_words(self.words, Counter::Injected, 1);
        }
    }

    /// The data-abort short exit finished a UART access (`uart_write`: a character written to
    /// the data register) that began with the exception at `start`: `done` for
    /// `ShortPath::Device`, with the path known here.
    #[inline]
    pub fn device(&mut self, start: u64, uart_write: bool) {
        let first = if uart_write {
            Counter::UartWriteCount
        } else {
            Counter::DeviceCount
        };
        self.wait_entry(Some(first), start);
        add_words(self.words, Counter::TrapsDataAbort, 1);
    }

    /// The data-abort short exit made a request to the fabric (a write to an unconnected
    /// accelerator interface) that began with the exception at `start`, answered at once: its
    /// trap and EL2 time are counted, and T_resume, from the fabric's answer
    /// (`answered`) to the guest's next entry (`settle`).
    #[inline]
    pub fn accelerator(&mut self, start: u64) {
        self.wait_entry(None, start);
        let answered = cpu().answered_at.swap(0, Ordering::Relaxed);
        self.answered = (answered != 0).then_some(answered);
        add_words(self.words, Counter::TrapsDataAbort, 1);
    }

    /// The short exit's WFI taken at `start` is finished, or about to wait for an interrupt
    /// at EL2: its trap and EL2 time are counted; returns the clock now.
    #[inline]
    pub fn wfi(&mut self, start: u64) -> u64 {
        let now = clock();
        add_words(self.words, Counter::TrapsWfi, 1);
        add_words(self.words, Counter::El2Ns, now.wrapping_sub(start));
        now
    }

    /// The CPU woke up from waiting since `since` (`wfi`'s clock): that time is neither the
    /// guest's nor EL2's. Returns the clock at the wake-up.
    #[inline]
    pub fn idle(&mut self, since: u64) -> u64 {
        let now = clock();
        self.idle = self.idle.wrapping_add(now.wrapping_sub(since));
        now
    }

    /// The interrupt that woke the CPU at `woke` (`idle`'s clock) was injected into the
    /// waiting vCPU, which goes back in: one injection, its sample from the wake-up to the
    /// guest's entry, as the general path's idle wake-up counts it.
    #[inline]
    pub fn woke(&mut self, woke: u64) {
        self.wait_entry(Some(Counter::InjectionCount), woke);
        add_words(self.words, Counter::Injected, 1);
    }

    /// The vCPU's exit leaves the short path (before `exited`), the guest last entered at
    /// `entered`: the short exits' time is EL2's (or idle), not the guest's.
    ///
    /// Returns when the guest stopped running for this exit: `exited` (its vector's clock,
    /// `GuestRegs::exited`), or the wake-up when a WFI's short exit waited and then handed
    /// the exit over (`interrupted`), whose time until then is already EL2's or idle.
    pub fn finish(&mut self, entered: u64, exited: u64) -> u64 {
        let cpu = self.cpu;
        self.settle(entered);
        let el2 = self.words[Counter::El2Ns as usize]
            .load(Ordering::Relaxed)
            .wrapping_sub(self.el2_before);
        let mark = &cpu.mark;
        mark.store(
            mark.load(Ordering::Relaxed)
                .wrapping_add(el2)
                .wrapping_add(self.idle),
            Ordering::Relaxed,
        );
        self.resumed.unwrap_or(exited)
    }

    /// The entered vCPU shares its CPU with one of VM `vm` (`short_exit::enter_pair`), to
    /// which it may switch (`switch`): that VM's words are found now.
    pub fn pair(&mut self, vm: usize) {
        let at = cpu_index();
        self.other = VMS[at].get(vm).map_or(&SPARE[at].0, |w| &w.0);
    }

    /// A switch inside the world switch (`ShortExit::switch`): the entered vCPU, of VM
    /// `from`, left the CPU for an exit taken at `exited` that a `trap` caused (its light
    /// entry settled the sample its entry ended, `settle`), and VM `to`'s vCPU, the other one
    /// of the pair (`pair`), is entered now (no WFI of the old one handed its exit over:
    /// that ends the entry, `interrupted`). Counts what the general path counts
    /// for that exit (`finish`, `exited`, `trap`), the switch (`switched_in`) and the entry
    /// (`entering`), folded into one step: the old guest's time ends at its exit, the
    /// switch's EL2 time (exit to now) is the old VM's, and the path ending at the new
    /// guest's entry is the switch's when the two vCPUs are of different VMs (none
    /// otherwise, as `entering` finds), measured from the exit. A VM without counters has
    /// this CPU's spare words: counting there is counting nothing, as the general path does
    /// for it.
    #[inline(always)]
    pub fn switch(&mut self, from: usize, exited: u64, trap: Trap, to: usize) {
        let cpu = self.cpu;
        let old = self.words;
        let el2 = old[Counter::El2Ns as usize]
            .load(Ordering::Relaxed)
            .wrapping_sub(self.el2_before);
        let guest_from = cpu
            .mark
            .load(Ordering::Relaxed)
            .wrapping_add(el2)
            .wrapping_add(self.idle);
        add_words(old, Counter::GuestNs, exited.wrapping_sub(guest_from));
        add_words(old, trap.counter(), 1);
        let now = clock();
        add_words(old, Counter::El2Ns, now.wrapping_sub(exited));
        let answered = cpu.answered_at.load(Ordering::Relaxed);
        if answered != 0 {
            cpu.answered_at.store(0, Ordering::Relaxed);
            fold(&cpu.resume, now.wrapping_sub(answered));
        }
        cpu.mark.store(now, Ordering::Relaxed);
        cpu.owner.store(from as u64, Ordering::Relaxed);
        cpu.kind.store(trap.kind() as u64, Ordering::Relaxed);
        cpu.injected.store(0, Ordering::Relaxed);
        let words = core::mem::replace(&mut self.other, old);
        self.words = words;
        self.waiting = from != to;
        self.path = self
            .waiting
            .then(|| path_words(words, Counter::SwitchCount as usize))
            .flatten();
        self.start = exited;
        self.el2_from = now;
        self.el2_before = words[Counter::El2Ns as usize].load(Ordering::Relaxed);
        self.idle = 0;
        self.answered = None;
        add_words(words, Counter::Switches, 1);
    }

    /// A WFI's short exit woke at `woke` (`idle`'s clock) for an interrupt that is not the
    /// vCPU's and hands the exit to the general path (`finish`).
    pub fn interrupted(&mut self, woke: u64) {
        self.resumed = Some(woke);
    }
}

/// An interrupt was put into VM `vm`'s virtual GIC.
pub fn injected(vm: usize) {
    add(vm, Counter::Injected, 1);
    let cpu = cpu();
    let owner = cpu.owner.load(Ordering::Relaxed);
    if owner == vm as u64 || owner == WOKE {
        cpu.injected.store(vm as u64 + 1, Ordering::Relaxed);
    }
}

/// A kick SGI brought VM `vm`'s loaded vCPU an interrupt another vCPU of it made pending
/// on another CPU: the exit to its next entry is a cross-CPU injection.
pub fn kicked(vm: usize) {
    let cpu = cpu();
    let owner = cpu.owner.load(Ordering::Relaxed);
    if owner == vm as u64 || owner == WOKE {
        cpu.kind.store(ExitKind::Kick as u64, Ordering::Relaxed);
        cpu.injected.store(vm as u64 + 1, Ordering::Relaxed);
    }
}

/// VM `vm`'s vCPU was put on this CPU.
pub fn switched_in(vm: usize) {
    add(vm, Counter::Switches, 1);
}

/// The CPU is about to wait for an interrupt at EL2 with nothing to run.
pub fn idle_begin() {
    let now = clock();
    let at = cpu_index();
    let cpu = &CPUS[at];
    charge_el2(at, now, usize::MAX);
    cpu.kind.store(NO_PATH, Ordering::Relaxed);
}

/// The CPU woke up from idle (an interrupt is pending): the wake-up to the next entry is an
/// injection path if the interrupt goes to the VM that enters.
pub fn idle_end() {
    let cpu = cpu();
    cpu.mark.store(clock(), Ordering::Relaxed);
    cpu.owner.store(WOKE, Ordering::Relaxed);
    cpu.kind.store(ExitKind::Irq as u64, Ordering::Relaxed);
    cpu.injected.store(0, Ordering::Relaxed);
}

/// The value of `counter` for VM `vm`; None for a VM without counters.
pub fn read(vm: usize, counter: Counter) -> Option<u64> {
    if counter == Counter::ElapsedNs {
        return Some(clock());
    }
    if vm >= MAX_VMS {
        return None;
    }
    // A path's four words: count, min, sum (read as the mean), max.
    const PATHS: [Counter; 6] = [
        Counter::HypercallCount,
        Counter::InjectionCount,
        Counter::SwitchCount,
        Counter::DeviceCount,
        Counter::UartWriteCount,
        Counter::KickCount,
    ];
    let at = counter as usize;
    if let Some(&first) = PATHS
        .iter()
        .find(|&&first| (first as usize..first as usize + 4).contains(&at))
    {
        let mut stats = PathStats::default();
        for w in all_words(vm) {
            stats.merge(&path(w, first));
        }
        return Some(match at - first as usize {
            0 => stats.count,
            1 => stats.min,
            2 => stats.mean(),
            _ => stats.max,
        });
    }
    Some(
        all_words(vm)
            .map(|w| w[at].load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add),
    )
}

/// Prints VM `vm`'s counters on one console line (`counters vm=<name> <counter>=<value>...`),
/// through the same `read` as the hypercall.
pub fn print(vm: usize, name: &str) {
    struct Values(usize);
    impl core::fmt::Display for Values {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            for counter in Counter::ALL.iter() {
                if let Some(value) = read(self.0, *counter) {
                    write!(f, " {}={value}", counter.name())?;
                }
            }
            Ok(())
        }
    }
    crate::console::print_line_unhurried(format_args!("counters vm={name}{}", Values(vm)));
}
