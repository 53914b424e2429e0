//! The reconfigurable fabric at run time (`docs/accelerators.md`): Ker-ONE's manager
//! (`partita_core::accel::manager`) behind one lock, the interface pages in the VMs' stage 2,
//! and the emulated programmable logic on the CPU the configuration reserves for it.
//!
//! A VM's write to an unconnected (read-only) interface page traps on the VM's own CPU and
//! is its request (`request`): the manager answers there, in the trap, and its actions are
//! carried out at once (connect = one permission bit set; disconnect = the bit cleared and
//! that page of that VM invalidated). The fabric CPU (`run`) is the hardware: it sees START
//! in a connected page, moves the data by DMA within the VM's RAM (`accel::job`), computes
//! frame by frame, stops at a consistency point when the manager preempts the task, saves its
//! sealed context, and loads bitstreams for as long as the time model says. Between pieces of
//! work it waits in WFI on its EL2 timer, never spinning, and it keeps that timer armed at
//! most a beat ahead (`beat`), so under QEMU's round robin no CPU's turn outlasts a beat;
//! no VM CPU ever computes a frame.
//!
//! A VM that writes an unconnected page in the native model waits like WFI (the trap
//! answers `Requested::Waiting` and its vCPU blocks); the connection wakes it
//! (`take_writer_wake`, then `FABRIC_SGI`) and the write runs again.
//!
//! Signals and completions reach a VM as its accelerator's SPI, raised by the VM's CPU on
//! `FABRIC_SGI` (like a doorbell), and the SIGNAL word in the page. The lock is taken for
//! manager calls and page updates only, never across a frame's computation.

use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::lock::FairMutex;
use partita_core::accel::functions::Function;
use partita_core::accel::interface::{int_ctrl, reg, stat, Context, Signal, SEALED_LEN};
use partita_core::accel::job::{Job, Registers};
use partita_core::accel::manager::{Action, Actions, Answer, Manager};
use partita_core::accel::policy::{idle_then_smallest, Method};
use partita_core::accel::prr::PrrState;
use partita_core::accel::{DevId, PrrId, VmId};
use partita_core::config::SystemConfig;
use partita_core::counters::PathStats;
use partita_core::sched::RunQueue;
use spin::Once;

use crate::arch::aarch64::entry::MAX_CPUS;
use crate::arch::aarch64::stage2::{InterfacePte, Stage2Map};
use crate::arch::aarch64::{gic, timer};
use crate::beat;
use crate::counters;
use crate::memory;
use crate::println;

/// The SGI that tells a CPU an accelerator interrupt is due for one of its VMs.
pub const FABRIC_SGI: u32 = 3;

/// Bytes of the largest output frame (FFT-1024: 5 blocks of 1,024 symbols).
const MAX_OUTPUT_FRAME: usize = 5 * 1024 * 4;

struct Interface {
    /// Physical address of the page.
    page: u64,
    /// The page in the VM's stage 2, once the VM is built (and until it stops).
    pte: Option<InterfacePte>,
    sequence: u32,
}

/// The fabric's view of one region, shared between the lock holders.
#[derive(Default)]
struct Region {
    /// A bitstream is loading until then (ns of virtual time).
    reconfig_until: Option<u64>,
    /// The task the fabric CPU is running here (kept in step by the fabric CPU).
    running: Option<(VmId, DevId)>,
    /// The running task was disconnected (its VM released): the fabric CPU drops it.
    dropped: bool,
    /// A preempted task to resume here, opened from its context.
    resume: Option<(VmId, DevId, Job)>,
    /// The context being saved at a consistency point.
    saving: Option<Context>,
}

/// What the manager's users measure (virtual ns), printed when the last VM stops.
#[derive(Default, Clone, Copy)]
pub struct Stats {
    pub requests: u64,
    /// Per path of Fig. 15: count, total and worst CPU-side time (trap to answer).
    pub paths: [(u64, u64, u64); 4],
    pub preemptions: u64,
    pub reconfigurations: u64,
    pub frames: u64,
    /// Worst frame time, computed and committed (ns).
    pub frame_worst_ns: u64,
    pub jobs: u64,
    pub refused: u64,
    pub signals: [u64; 3],
    /// Worst allocation latency of a highest-priority request (trap to connection), and
    /// the bound of eq. 5 for it.
    pub rtos_alloc_worst_ns: u64,
    /// Ker-ONE's Table 4, measured (`Part`); T_resume is `counters::resume_stats`.
    pub parts: [PathStats; PARTS.len()],
}

/// The atomic costs of Ker-ONE's Table 4 as Partita measures them (counters' clock, ns; each
/// from after the manager's lock is taken, so no wait for it is counted):
/// - `trap`: the data-abort vector to `request` (the world switch out, the short exit's
///   checks, the exit's decoding);
/// - `resume`: the answer to the world switch's entry (`counters::answered`);
/// - `pl_irq`: the fabric CPU taking the manager's lock for an event it saw itself (a load
///   over, a consistency point): Partita has no PL interrupt, its fabric CPU is the monitor;
/// - `search`: `Manager::request` (the policy's search and the solution's actions);
/// - `solution1..3`: carrying the actions out (a permission bit, STAT, a wake-up; the load
///   started; the stop, the disconnection and its TLB invalidation), for a request by the
///   solution the manager chose (`Manager::last_solution`), and for the new client of a
///   consistency point (`stop`);
/// - `irq_pcap`: a load's end (`Manager::reconfigured` and its connection);
/// - `irq_stop`: a consistency point up to the new client's assignment (the manager's
///   handling: `stop`);
/// - `irq_stop_after`: what a consistency point does after the new client is woken, on no
///   path of Fig. 15 (the old client's page invalidated, its context saved, IPC_PREEMPT, the
///   search list served: `stop`).
#[derive(Clone, Copy)]
enum Part {
    Trap,
    Resume,
    PlIrq,
    Search,
    Solution1,
    Solution2,
    Solution3,
    IrqPcap,
    IrqStop,
    IrqStopAfter,
}

const PARTS: [&str; 10] = [
    "trap",
    "resume",
    "pl_irq",
    "search",
    "solution1",
    "solution2",
    "solution3",
    "irq_pcap",
    "irq_stop",
    "irq_stop_after",
];

impl Stats {
    fn part(&mut self, part: Part, ns: u64) {
        self.parts[part as usize].add(ns);
    }
}

struct State {
    manager: Manager,
    /// Per VM, per device.
    interfaces: Vec<Option<Interface>>,
    regions: Vec<Region>,
    stats: Stats,
    /// Per interface: when its outstanding request was made (for the RTOS's latency).
    requested_at: Vec<Option<u64>>,
    /// Per interface: the CPU whose vCPU waits in a trapped write to it (native model) for
    /// the connection.
    native_waiting: Vec<Option<u8>>,
}

pub struct Fabric {
    cpu: u8,
    devs: usize,
    functions: Vec<Function>,
    frame_ns: Vec<u64>,
    irqs: Vec<u32>,
    key: u64,
    top_priority: u8,
    config: &'static SystemConfig,
    state: FairMutex<State>,
    /// Per VM: bit `d` when device `d`'s interrupt is due.
    pending: Vec<AtomicU64>,

    vm_cpu: Vec<u8>,
    /// Bit `c` when CPU `c` is due a `FABRIC_SGI` (`ring`).
    doorbells: AtomicU64,
    /// Bit `c` when CPU `c` runs a VM that shares the fabric and is not of the highest
    /// priority: its guest gets a beat (`guest_beat`); none when `fabric.guest_beat_us` is 0.
    beat_cpus: u64,
    /// The guest beat's period in counter ticks (`fabric.guest_beat_us`).
    beat_ticks: u64,
    cpu_pending: [AtomicBool; MAX_CPUS],
    /// Per CPU: an interface one of its vCPUs waited for in a trapped write is connected.
    writer_wake: [AtomicBool; MAX_CPUS],
}

static FABRIC: Once<Fabric> = Once::new();

/// Virtual time in ns.
fn now_ns() -> u64 {
    let f = timer::frequency().max(1);
    (u128::from(timer::now()) * 1_000_000_000 / u128::from(f)) as u64
}

fn read32(addr: u64) -> u32 {
    // SAFETY: `addr` is inside an interface page, physical memory planned for the fabric
    // and identity-mapped at EL2; guests may write it concurrently, so every access is a
    // single volatile word.
    unsafe { core::ptr::read_volatile(addr as *const u32) }
}

fn write32(addr: u64, value: u32) {
    // SAFETY: as `read32`.
    unsafe { core::ptr::write_volatile(addr as *mut u32, value) }
}

/// Sets up the fabric of the configuration, if it has one (boot CPU, before any VM).
pub fn init(config: &'static SystemConfig, key: u64) {
    let (Some(f), Some(spec)) = (&config.fabric, config.accel_spec()) else {
        return;
    };
    let Some(phys) = f.phys else {
        panic!("fabric: no physical memory planned for the interface pages");
    };
    memory::clear(phys, f.interface_bytes(config.vms.len()));
    let devs = f.accelerators.len();
    let interfaces = (0..config.vms.len() * devs)
        .map(|i| {
            let (vm, dev) = (i / devs, i % devs);
            let uses = f.accelerators[dev]
                .vms
                .iter()
                .any(|v| *v == config.vms[vm].name);
            uses.then(|| Interface {
                page: f.interface_page(vm, dev).unwrap_or(0),
                pte: None,
                sequence: 0,
            })
        })
        .collect();
    let top_priority = config.vms.iter().map(|v| v.priority).max().unwrap_or(0);
    FABRIC.call_once(|| Fabric {
        cpu: f.cpu,
        devs,
        functions: f.accelerators.iter().map(|a| a.function).collect(),
        frame_ns: f
            .accelerators
            .iter()
            .map(|a| u64::from(a.frame_ns))
            .collect(),
        irqs: f.accelerators.iter().map(|a| a.irq).collect(),
        key,
        top_priority,
        config,
        state: FairMutex::new(State {
            manager: Manager::new(spec, idle_then_smallest),
            interfaces,
            regions: (0..f.regions.len()).map(|_| Region::default()).collect(),
            stats: Stats::default(),
            requested_at: vec![None; config.vms.len() * devs],
            native_waiting: vec![None; config.vms.len() * devs],
        }),
        pending: config.vms.iter().map(|_| AtomicU64::new(0)).collect(),
        vm_cpu: config
            .vms
            .iter()
            .map(|vm| vm.cpus.first().copied().unwrap_or(0))
            .collect(),
        doorbells: AtomicU64::new(0),
        beat_cpus: config
            .vms
            .iter()
            .enumerate()
            .filter(|(vm, c)| {
                f.guest_beat_us != 0
                    && c.priority < top_priority
                    && f.accelerators
                        .iter()
                        .any(|a| a.vms.iter().any(|v| *v == config.vms[*vm].name))
            })
            .flat_map(|(_, c)| c.cpus.iter())
            .fold(0, |mask, &cpu| mask | 1 << cpu),
        beat_ticks: (u128::from(f.guest_beat_us) * u128::from(timer::frequency().max(1)))
            .div_ceil(1_000_000) as u64,
        cpu_pending: [const { AtomicBool::new(false) }; MAX_CPUS],
        writer_wake: [const { AtomicBool::new(false) }; MAX_CPUS],
    });
}

/// The fabric, if the configuration has one.
fn get() -> Option<&'static Fabric> {
    FABRIC.get()
}

/// `deadline` (counter ticks), or earlier the guest beat's next exit (`fabric.guest_beat_us`
/// apart, unless 0) when CPU `cpu` runs a VM that shares the fabric below the highest
/// priority. Under QEMU's `-icount` round robin such a guest polling its interface pages,
/// or storming them, without an exit would keep its turn for tens of ms, and every other
/// CPU (the RTOS's, the fabric's) would wait for it (docs/accelerators.md); the beat's exit
/// ends the turn. On hardware it costs that CPU one timer exit per beat, and it may be off.
/// The clock is read only for a beat.
fn guest_beat(cpu: usize, deadline: Option<u64>) -> Option<u64> {
    let Some(f) = get().filter(|f| f.beat_cpus >> cpu.min(63) & 1 != 0) else {
        return deadline;
    };
    let beat = timer::now() + f.beat_ticks;
    Some(deadline.map_or(beat, |d| d.min(beat)))
}

/// Arms CPU `cpu`'s EL2 timer for its run queue's next event (`queue`), or earlier the guest
/// beat's exit (`guest_beat`), before a vCPU is entered.
pub fn arm_next_event(cpu: u8, queue: &RunQueue) {
    arm_event(cpu, queue.next_event(timer::now()));
}

/// `arm_next_event` with the next event a run-queue decision found with it
/// (`HandedOver::next_event`).
#[inline(always)]
pub fn arm_event(cpu: u8, event: Option<u64>) {
    timer::arm_hyp_timer(guest_beat(usize::from(cpu), event));
}

/// Whether `cpu` is the fabric's.
pub fn is_fabric_cpu(cpu: usize) -> bool {
    get().is_some_and(|f| usize::from(f.cpu) == cpu)
}

/// Maps VM `vm`'s interface pages, read-only, in its stage 2 (when it is built).
pub fn map(vm: usize, stage2: &mut Stage2Map) {
    let Some(f) = get() else { return };
    let mut st = f.state.lock();
    for dev in 0..f.devs {
        let base = f
            .config
            .fabric
            .as_ref()
            .map_or(0, |c| c.accelerators[dev].base);
        if let Some(Some(iface)) = st.interfaces.get_mut(vm * f.devs + dev) {
            match stage2.map_interface(base, iface.page) {
                Ok(pte) => iface.pte = Some(pte),
                Err(e) => panic!("vm {vm}: stage-2 map of accelerator {dev} failed: {e:?}"),
            }
        }
    }
}

/// How a VM's write to an interface page was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requested {
    /// The page is writable now: the write is executed again.
    Retry,
    /// Queued (or a job is saved), native model: the vCPU waits as in WFI (its interrupts
    /// still wake it) and the write is executed again when it resumes; the connection wakes
    /// it (`take_writer_wake`).
    Waiting,
    /// Queued, guest model (INT_CTRL takes signals): the write is dropped; IPC_READY comes
    /// when the page is connected.
    Dropped,
}

/// A write of VM `vm`'s vCPU placed on CPU `cpu` to guest-physical `ipa` faulted (of
/// `value`, when the syndrome says):
/// if `ipa` is one of its interface pages, that is its request (Request(vm, dev, prio));
/// `None` when it is not. A 32-bit write of INT_CTRL is stored even unconnected: the
/// fabric only reads it, and it chooses the programming model before the answer.
pub fn request(vm: usize, cpu: u8, ipa: u64, value: Option<u32>) -> Option<Requested> {
    let f = get()?;
    let trapped = counters::since_abort();
    let start = now_ns();
    let cfg = f.config.fabric.as_ref()?;
    let dev = cfg
        .accelerators
        .iter()
        .position(|a| ipa >= a.base && ipa < a.base + 0x1000)?;
    let mut st = f.state.lock();
    let locked = counters::clock_ns();
    let slot = vm * f.devs + dev;
    if !matches!(st.interfaces.get(slot), Some(Some(_))) {
        return None;
    }
    let page = st.interfaces[slot].as_ref().map_or(0, |i| i.page);
    if let (reg::INT_CTRL, Some(value)) = (ipa & 0xfff, value) {
        write32(page + reg::INT_CTRL, value);
    }
    let (vmid, devid) = (vm as VmId, dev as DevId);
    let mut out = Actions::new();
    let answer = st.manager.request(vmid, devid, start, &mut out);
    let searched = counters::clock_ns();
    if answer == Answer::Connected && out.is_empty() {
        // Connected already (the manager did nothing): a stale read-only TLB entry of a
        // page that is writable already.
        if let Some(Some(Interface { pte: Some(pte), .. })) = st.interfaces.get(slot) {
            pte.invalidate();
        }
        return Some(Requested::Retry);
    }
    let fresh = !out.is_empty();
    // Its path of Fig. 15, from the solution the manager chose (an Assign may disconnect a
    // held region's last client too; a queued request has no path yet).
    let path = st
        .manager
        .last_solution()
        .map(|s| match (s.method, s.reconfig) {
            (Method::Assign, false) => 0,
            (Method::Assign, true) => 1,
            (Method::Preempt, false) => 2,
            (Method::Preempt, true) => 3,
        });
    f.perform(&mut st, &out, start);
    if fresh {
        let solved = counters::clock_ns();
        st.stats.part(Part::Trap, trapped);
        st.stats.part(Part::Search, searched - locked);
        st.stats.requests += 1;
        if answer == Answer::Waiting {
            st.requested_at[slot] = Some(start);
        }
        if let Some(path) = path {
            let solution = [
                Part::Solution1,
                Part::Solution2,
                Part::Solution3,
                Part::Solution3,
            ][path];
            st.stats.part(solution, solved - searched);
            let spent = now_ns().saturating_sub(start);
            let p = &mut st.stats.paths[path];
            *p = (p.0 + 1, p.1 + spent, p.2.max(spent));
        }
    }
    let guest_model = read32(page + reg::INT_CTRL) & int_ctrl::ON_SIGNAL != 0;
    let requested = match answer {
        Answer::Connected => Requested::Retry,
        Answer::Waiting | Answer::NoInterface if guest_model => Requested::Dropped,
        Answer::Waiting | Answer::NoInterface => {
            st.native_waiting[slot] = Some(cpu);
            Requested::Waiting
        }
    };
    drop(st);
    f.ring();
    if fresh && requested != Requested::Waiting {
        counters::answered();
    }
    Some(requested)
}

/// VM `vm`'s boot ends: its accelerators are released (disconnected, its requests and
/// running or saved tasks dropped) and its pages cleared for the next boot.
pub fn release(vm: usize) {
    let Some(f) = get() else { return };
    let now = now_ns();
    let mut st = f.state.lock();
    let mut out = Actions::new();
    st.manager.release_vm(vm as VmId, now, &mut out);
    f.perform(&mut st, &out, now);
    f.ring();
    for dev in 0..f.devs {
        st.requested_at[vm * f.devs + dev] = None;
        st.native_waiting[vm * f.devs + dev] = None;
        if let Some(Some(iface)) = st.interfaces.get(vm * f.devs + dev) {
            memory::clear(iface.page, 0x1000);
        }
    }
    f.pending[vm].store(0, Ordering::Release);
}

/// Whether the fabric has stopped every task of VM `vm` (after `release`): only then may its
/// memory be rebuilt, since a running task writes it by DMA.
pub fn quiet(vm: usize) -> bool {
    get().is_none_or(|f| {
        let st = f.state.lock();
        !st.regions
            .iter()
            .any(|r| r.running.is_some_and(|(v, _)| usize::from(v) == vm))
    })
}

/// VM `vm` stopped for good: its stage 2 goes away, so the fabric forgets its pages.
pub fn forget(vm: usize) {
    let Some(f) = get() else { return };
    let mut st = f.state.lock();
    for dev in 0..f.devs {
        if let Some(Some(iface)) = st.interfaces.get_mut(vm * f.devs + dev) {
            iface.pte = None;
        }
    }
}

/// Whether some VM of CPU `cpu` has accelerator interrupts due; clears the flag.
pub fn cpu_has_pending(cpu: u8) -> bool {
    get()
        .and_then(|f| f.cpu_pending.get(usize::from(cpu)))
        .is_some_and(|flag| flag.swap(false, Ordering::Acquire))
}

/// Takes VM `vm`'s due accelerator interrupts, as INTIDs.
pub fn take(vm: usize) -> Vec<u32> {
    let Some(f) = get() else { return Vec::new() };
    let bits = f
        .pending
        .get(vm)
        .map_or(0, |w| w.swap(0, Ordering::Acquire));
    (0..f.devs)
        .filter(|d| bits & (1 << d) != 0)
        .map(|d| f.irqs[d])
        .collect()
}

/// Whether a vCPU of CPU `cpu` waited in a trapped write for an interface that is connected
/// now (the CPU's blocked vCPUs are woken; the write runs again); clears the flag.
pub fn take_writer_wake(cpu: u8) -> bool {
    get()
        .and_then(|f| f.writer_wake.get(usize::from(cpu)))
        .is_some_and(|flag| flag.swap(false, Ordering::Acquire))
}

/// Prints the fabric's figures (when the run ends).
pub fn print_stats() {
    let Some(f) = get() else { return };
    let s = f.state.lock().stats;
    let bound = f.rtos_bound(&s);
    println!(
        "fabric: requests={} jobs={} frames={} preemptions={} reconfigurations={} refused={} signals=wait:{},ready:{},preempt:{}",
        s.requests, s.jobs, s.frames, s.preemptions, s.reconfigurations, s.refused,
        s.signals[0], s.signals[1], s.signals[2]
    );
    for (i, &(n, total, worst)) in s.paths.iter().enumerate() {
        println!(
            "fabric: path{} n={} mean_ns={} max_ns={}",
            i + 1,
            n,
            total.checked_div(n).unwrap_or(0),
            worst
        );
    }
    let mut parts = s.parts;
    parts[Part::Resume as usize].merge(&counters::resume_stats());
    for (name, p) in PARTS.iter().zip(parts.iter()) {
        println!(
            "fabric: part={name} n={} min_ns={} mean_ns={} max_ns={}",
            p.count,
            p.min,
            p.mean(),
            p.max
        );
    }
    println!(
        "fabric: frame_worst_ns={} rtos_alloc_worst_ns={} rtos_alloc_bound_ns={} within={}",
        s.frame_worst_ns,
        s.rtos_alloc_worst_ns,
        bound,
        s.rtos_alloc_worst_ns <= bound
    );
}

impl Fabric {
    /// Eq. 5-8 for the highest-priority VM: the worst CPU-side path plus one consistency
    /// point (the worst frame the fabric actually took, measured, since on the emulator a
    /// frame ends when its computation does) plus the longest reconfiguration.
    fn rtos_bound(&self, s: &Stats) -> u64 {
        let cfg = self.config.fabric.as_ref();
        let rcfg = cfg.map_or(0, |c| {
            c.accelerators
                .iter()
                .flat_map(|a| a.bitstreams.iter())
                .map(|b| partita_core::accel::timing::reconfig_ns(b.size, c.reconfig_bytes_per_us))
                .max()
                .unwrap_or(0)
        });
        let frame = s
            .frame_worst_ns
            .max(self.frame_ns.iter().copied().max().unwrap_or(0));
        let paths = partita_core::accel::timing::PathCosts {
            assign: s.paths[0].2,
            assign_reconfig: s.paths[1].2,
            preempt: s.paths[2].2,
            preempt_reconfig: s.paths[3].2,
        };
        // The fabric CPU notices a finished load or a consistency point within one of its
        // rounds, and the VM's CPU takes the signal within one of its own: a frame's worth
        // of slack covers both.
        partita_core::accel::timing::alloc_wcet(paths, frame, rcfg) + frame
    }

    /// A vCPU of CPU `cpu` waits in a trapped write to a page connected now: the CPU wakes it
    /// (at the next `ring`).
    fn wake_writer(&self, cpu: u8) {
        if let Some(flag) = self.writer_wake.get(usize::from(cpu)) {
            flag.store(true, Ordering::Release);
            self.doorbells.fetch_or(1 << cpu, Ordering::Release);
        }
    }

    /// Device `dev`'s interrupt is due in VM `vm`: its CPU raises it (at the next `ring`).
    fn raise(&self, vm: VmId, dev: DevId) {
        let vm = usize::from(vm);
        if let Some(word) = self.pending.get(vm) {
            word.fetch_or(1 << dev, Ordering::Release);
            let cpu = self.vm_cpu[vm];
            if let Some(flag) = self.cpu_pending.get(usize::from(cpu)) {
                flag.store(true, Ordering::Release);
            }
            self.doorbells.fetch_or(1 << cpu, Ordering::Release);
        }
    }

    /// Sends `FABRIC_SGI` to every CPU a wake-up or an interrupt is due on. Called once the
    /// work that made them due is done (and timed): an SGI to another CPU ends this CPU's
    /// turn under `-icount`, which would count the other CPUs' instructions in the window.
    fn ring(&self) {
        let mut cpus = self.doorbells.swap(0, Ordering::AcqRel);
        while cpus != 0 {
            let cpu = cpus.trailing_zeros();
            cpus &= cpus - 1;
            gic::send_sgi(FABRIC_SGI as u8, cpu as u8);
        }
    }

    fn page(st: &State, devs: usize, vm: VmId, dev: DevId) -> Option<u64> {
        match st.interfaces.get(usize::from(vm) * devs + usize::from(dev)) {
            Some(Some(i)) => Some(i.page),
            _ => None,
        }
    }

    fn translate(&self, vm: VmId) -> impl Fn(u64, u64) -> Option<u64> + '_ {
        let config = self.config.vms.get(usize::from(vm));
        move |ipa, len| config.and_then(|c| c.translate(ipa, len))
    }

    /// Carries out the manager's actions, in order, with the lock held.
    fn perform(&self, st: &mut State, actions: &[Action], now: u64) {
        for &action in actions {
            match action {
                Action::Connect {
                    vm,
                    dev,
                    prr,
                    resume,
                } => {
                    let Some(page) = Self::page(st, self.devs, vm, dev) else {
                        continue;
                    };
                    let mut status = read32(page + reg::STAT) & !(stat::SUSPENDED | stat::BUSY);
                    if resume {
                        let mut sealed = [0u8; SEALED_LEN];
                        for (i, chunk) in sealed.chunks_exact_mut(8).enumerate() {
                            // SAFETY: an aligned double word inside the page's context area
                            // (see `read32`).
                            let word = unsafe {
                                core::ptr::read_volatile(
                                    (page + reg::CONTEXT + 8 * i as u64) as *const u64,
                                )
                            };
                            chunk.copy_from_slice(&word.to_le_bytes());
                        }
                        let function = self.functions[usize::from(dev)];
                        let job = Context::open(&sealed, self.key)
                            .filter(|c| c.dev == dev)
                            .ok_or(stat::ERR_CONTEXT)
                            .and_then(|c| Job::from_context(&c, function, self.translate(vm)));
                        match job {
                            Ok(job) => {
                                st.regions[usize::from(prr)].resume = Some((vm, dev, job));
                                status |= stat::BUSY;
                            }
                            Err(bits) => {
                                status |= bits;
                                write32(page + reg::OVER, 1);
                                st.stats.refused += 1;
                            }
                        }
                    }
                    write32(page + reg::STAT, status | stat::CONNECTED);
                    let slot = usize::from(vm) * self.devs + usize::from(dev);
                    if let Some(at) = st.requested_at[slot].take() {
                        if st.manager.spec().priorities[usize::from(vm)] == self.top_priority {
                            let waited = now.saturating_sub(at);
                            st.stats.rtos_alloc_worst_ns = st.stats.rtos_alloc_worst_ns.max(waited);
                        }
                    }
                    if let Some(Some(Interface { pte: Some(pte), .. })) = st.interfaces.get(slot) {
                        pte.set_writable(true);
                    }
                    if let Some(cpu) = st.native_waiting[slot].take() {
                        self.wake_writer(cpu);
                    }
                }
                Action::Disconnect { vm, dev, prr } => {
                    let slot = usize::from(vm) * self.devs + usize::from(dev);
                    if let Some(Some(iface)) = st.interfaces.get(slot) {
                        if let Some(pte) = &iface.pte {
                            pte.set_writable(false);
                        }
                        let status = read32(iface.page + reg::STAT);
                        write32(iface.page + reg::STAT, status & !stat::CONNECTED);
                    }
                    let region = &mut st.regions[usize::from(prr)];
                    if region.running == Some((vm, dev)) {
                        region.dropped = true;
                    }
                    if region.resume.is_some_and(|(v, d, _)| (v, d) == (vm, dev)) {
                        region.resume = None;
                    }
                }
                Action::Stop { .. } => st.stats.preemptions += 1,
                Action::Save { vm, dev, prr } => {
                    let Some(context) = st.regions[usize::from(prr)].saving.take() else {
                        continue;
                    };
                    let slot = usize::from(vm) * self.devs + usize::from(dev);
                    if let Some(Some(iface)) = st.interfaces.get(slot) {
                        // Read-only first: the VM can never see (or touch) a half-written
                        // context, nor change it before it is resumed.
                        if let Some(pte) = &iface.pte {
                            pte.set_writable(false);
                        }
                        let sealed = context.seal(self.key);
                        for (i, chunk) in sealed.chunks_exact(8).enumerate() {
                            let mut word = [0u8; 8];
                            word.copy_from_slice(chunk);
                            // SAFETY: an aligned double word inside the page's context area
                            // (see `read32`).
                            unsafe {
                                core::ptr::write_volatile(
                                    (iface.page + reg::CONTEXT + 8 * i as u64) as *mut u64,
                                    u64::from_le_bytes(word),
                                )
                            };
                        }
                        let status = read32(iface.page + reg::STAT) & !stat::BUSY;
                        write32(iface.page + reg::STAT, status | stat::SUSPENDED);
                    }
                }
                Action::Reconfigure { prr, ns, .. } => {
                    st.regions[usize::from(prr)].reconfig_until = Some(now + ns);
                    st.stats.reconfigurations += 1;
                }
                Action::Signal { vm, dev, signal } => {
                    let slot = usize::from(vm) * self.devs + usize::from(dev);
                    if let Some(Some(iface)) = st.interfaces.get_mut(slot) {
                        iface.sequence = iface.sequence.wrapping_add(1) & 0x00ff_ffff;
                        write32(iface.page + reg::SIGNAL, signal.word(iface.sequence));
                        if read32(iface.page + reg::INT_CTRL) & int_ctrl::ON_SIGNAL != 0 {
                            self.raise(vm, dev);
                        }
                    }
                    let i = match signal {
                        Signal::Wait => 0,
                        Signal::Ready => 1,
                        Signal::Preempt => 2,
                    };
                    st.stats.signals[i] += 1;
                }
            }
        }
    }
}

/// A frame computed ahead of its time: committed when the time model says it is over.
struct Computed {
    output: Vec<u8>,
    due: u64,
}

/// What the fabric CPU keeps per region: the task it runs and its next frame.
#[derive(Default)]
struct Hardware {
    job: Option<(VmId, DevId, Job)>,
    frame_started: u64,
    computed: Option<Computed>,
}

/// The programmable logic: the fabric CPU's loop, forever.
pub fn run(board: &partita_core::board::Board) -> ! {
    let Some(f) = get() else {
        panic!("fabric: no fabric configured")
    };
    gic::enable(board, board.timer_hyp_irq);
    beat::start();
    let n = f.state.lock().regions.len();
    let mut hw: Vec<Hardware> = (0..n).map(|_| Hardware::default()).collect();
    let mut buffer = vec![0u8; MAX_OUTPUT_FRAME];
    let mut turn = 0usize;
    loop {
        beat::keep();
        let now = now_ns();
        let seen = counters::clock_ns();
        // The earliest time something is due here: a load, a hold's expiry, a frame's end.
        let mut next: Option<u64> = None;
        let mut due = |t: u64| next = Some(next.map_or(t, |n: u64| n.min(t)));
        {
            let mut st = f.state.lock();
            let locked = counters::clock_ns();
            let mut out = Actions::new();
            if st.manager.next_expiry().is_some_and(|t| t <= now) {
                st.manager.expire(now, &mut out);
                f.perform(&mut st, &out, now);
            }
            if let Some(t) = st.manager.next_expiry() {
                due(t);
            }
            for (p, hw) in hw.iter_mut().enumerate() {
                let prr = p as PrrId;
                if st.regions[p].dropped {
                    st.regions[p].dropped = false;
                    st.regions[p].running = None;
                    *hw = Hardware::default();
                }
                if st.regions[p].reconfig_until.is_some_and(|t| t <= now) {
                    let handling = counters::clock_ns();
                    st.regions[p].reconfig_until = None;
                    let mut out = Actions::new();
                    st.manager.reconfigured(prr, now, &mut out);
                    f.perform(&mut st, &out, now);
                    st.stats.part(Part::PlIrq, locked - seen);
                    st.stats
                        .part(Part::IrqPcap, counters::clock_ns() - handling);
                }
                if let Some(t) = st.regions[p].reconfig_until {
                    due(t);
                }
                if let Some((vm, dev, job)) = st.regions[p].resume.take() {
                    if st.manager.started(prr) {
                        st.regions[p].running = Some((vm, dev));
                        *hw = Hardware {
                            job: Some((vm, dev, job)),
                            frame_started: now,
                            computed: None,
                        };
                    }
                }
                if hw.job.is_none() {
                    start_if_asked(f, &mut st, prr, now, hw);
                }
            }
        }
        f.ring();
        // One piece of work of one region per round, the regions in turn: a frame computed,
        // or a computed frame committed at its time.
        let mut worked = false;
        for k in 0..n {
            let p = (turn + k) % n;
            if hw[p].job.is_some() && step(f, p as PrrId, &mut hw[p], &mut buffer) {
                turn = p + 1;
                worked = true;
                break;
            }
        }
        f.ring();
        if !worked {
            for h in &hw {
                if let Some(c) = &h.computed {
                    due(c.due);
                }
            }
            beat::wait(next);
        }
    }
}

/// A connected region's VM set START: the job is decoded and checked, and starts.
fn start_if_asked(f: &Fabric, st: &mut State, prr: PrrId, now: u64, hw: &mut Hardware) {
    let Some(d) = st.manager.prr(prr) else { return };
    // Connected and not running: held for its client, or idle with the client's page
    // still connected (a hold that expired, a job that ended).
    if !matches!(d.state, PrrState::Hold | PrrState::Idle) {
        return;
    }
    let Some((vm, dev)) = d.client else { return };
    let Some(page) = Fabric::page(st, f.devs, vm, dev) else {
        return;
    };
    if read32(page + reg::START) & 0xff == 0 {
        return;
    }
    let registers = Registers {
        cmd: read32(page + reg::CMD),
        data_addr: read32(page + reg::DATA_ADDR),
        data_size: read32(page + reg::DATA_SIZE),
        out_addr: read32(page + reg::OUT_ADDR),
        out_size: read32(page + reg::OUT_SIZE),
    };
    let status = read32(page + reg::STAT)
        & !(stat::ERR_DMA | stat::ERR_SIZE | stat::ERR_CONTEXT | stat::SUSPENDED);
    write32(page + reg::OVER, 0);
    match Job::start(
        dev,
        f.functions[usize::from(dev)],
        registers,
        f.translate(vm),
    ) {
        Ok(job) if st.manager.started(prr) => {
            write32(page + reg::STAT, status | stat::BUSY);
            st.regions[usize::from(prr)].running = Some((vm, dev));
            st.stats.jobs += 1;
            *hw = Hardware {
                job: Some((vm, dev, job)),
                frame_started: now,
                computed: None,
            };
        }
        Ok(_) => write32(page + reg::STAT, status),
        Err(bits) => {
            write32(page + reg::STAT, status | bits);
            write32(page + reg::OVER, 1);
            st.stats.refused += 1;
            if read32(page + reg::INT_CTRL) & int_ctrl::ON_OVER != 0 {
                f.raise(vm, dev);
            }
        }
    }
    // Last: a VM that reads START back as 0 sees BUSY or OVER already.
    write32(page + reg::START, 0);
}

/// A consistency point of preempted region `prr`, whose task stopped with `job` unfinished:
/// the region goes to its new client first, then the rest is done. T_irq_stop is the
/// manager's handling (the region switched, the old client's interface disconnected and its
/// work queued in the model); carrying out the new client's assignment is a T_Solution sample
/// ((1), or (2) when it needs a reconfiguration), which Ker-ONE's eq. 6 adds to path 3; the
/// new client is woken then. The old client's page needs no invalidation before that: the
/// region reads only its client's interface, and every interface is its own VM's page. Then,
/// off the new client's path (`irq_stop_after`): the old client's page made read-only and its
/// TLB entry invalidated, the context sealed into it, the old client told (IPC_PREEMPT), and
/// the search list served, where its unfinished work waits.
#[inline(never)]
fn stop(f: &Fabric, st: &mut State, prr: PrrId, job: Job, now: u64) {
    let handling = counters::clock_ns();
    st.regions[usize::from(prr)].saving = Some(job.context());
    st.regions[usize::from(prr)].running = None;
    let mut save = Actions::new();
    st.manager.consistency_point(prr, &mut save);
    let mut out = Actions::new();
    st.manager.switched(prr, true, now, &mut out);
    // `switched`'s order: the disconnection, the assignment, IPC_PREEMPT.
    let disconnect = |a: &Action| matches!(a, Action::Disconnect { .. });
    let preempt = |a: &Action| {
        matches!(
            a,
            Action::Signal {
                signal: Signal::Preempt,
                ..
            }
        )
    };
    let assignment = |a: &&Action| !disconnect(a) && !preempt(a);
    let stopped = counters::clock_ns();
    for action in out.iter().filter(assignment) {
        f.perform(st, core::slice::from_ref(action), now);
    }
    let assigned = counters::clock_ns();
    let solution = if out.iter().any(|a| matches!(a, Action::Reconfigure { .. })) {
        Part::Solution2
    } else {
        Part::Solution1
    };
    st.stats.part(Part::IrqStop, stopped - handling);
    st.stats.part(solution, assigned - stopped);
    f.ring();
    let after = counters::clock_ns();
    for action in out.iter().filter(|a| disconnect(a)) {
        f.perform(st, core::slice::from_ref(action), now);
    }
    f.perform(st, &save, now);
    for action in out.iter().filter(|a| preempt(a)) {
        f.perform(st, core::slice::from_ref(action), now);
    }
    let mut served = Actions::new();
    st.manager.serve(now, &mut served);
    f.perform(st, &served, now);
    st.stats
        .part(Part::IrqStopAfter, counters::clock_ns() - after);
}

/// Advances region `prr`'s task: computes its next frame, or commits the computed one once
/// the time model says the frame is over (a consistency point). False when there was
/// nothing to do yet (the computed frame is not due).
fn step(f: &Fabric, prr: PrrId, hw: &mut Hardware, buffer: &mut [u8]) -> bool {
    let Some((vm, dev, mut job)) = hw.job else {
        return false;
    };
    let Some(frame) = job.next_frame() else {
        return false;
    };
    let function = f.functions[usize::from(dev)];
    let Some(computed) = hw.computed.take() else {
        // SAFETY: `Job` translated the frame through the VM's memory and checked that it
        // lies in one of its RAM regions, identity-mapped at EL2; the VM may change it
        // meanwhile, which only changes its own result.
        let input =
            unsafe { core::slice::from_raw_parts(frame.input as *const u8, frame.input_len) };
        let output = &mut buffer[..frame.output_len];
        let mut paced = beat::keep;
        if function.frame_paced(input, output, &mut paced).is_err() {
            hw.job = None;
            return true;
        }
        hw.computed = Some(Computed {
            output: output.to_vec(),
            due: hw.frame_started + f.frame_ns[usize::from(dev)],
        });
        return true;
    };
    let now = now_ns();
    if now < computed.due {
        hw.computed = Some(computed);
        return false;
    }
    let seen = counters::clock_ns();
    let mut st = f.state.lock();
    let locked = counters::clock_ns();
    if st.regions[usize::from(prr)].running != Some((vm, dev))
        || st.regions[usize::from(prr)].dropped
    {
        return true;
    }
    // SAFETY: as for the input: the frame's output lies in the VM's RAM (checked by `Job`),
    // and the VM is not being rebuilt while its task runs here (`quiet`).
    unsafe {
        core::ptr::copy_nonoverlapping(
            computed.output.as_ptr(),
            frame.output as *mut u8,
            frame.output_len,
        )
    };
    job.frame_done(&computed.output);
    st.stats.frames += 1;
    st.stats.frame_worst_ns = st.stats.frame_worst_ns.max(now - hw.frame_started);
    let Some(page) = Fabric::page(&st, f.devs, vm, dev) else {
        return true;
    };
    let mut out = Actions::new();
    if job.finished() {
        write32(page + reg::RESULT, job.result as u32);
        write32(page + reg::RESULT + 4, (job.result >> 32) as u32);
        let status = read32(page + reg::STAT) & !stat::BUSY;
        write32(page + reg::STAT, status);
        write32(page + reg::OVER, 1);
        st.regions[usize::from(prr)].running = None;
        *hw = Hardware::default();
        st.manager.job_done(prr, now, &mut out);
        f.perform(&mut st, &out, now);
        if read32(page + reg::INT_CTRL) & int_ctrl::ON_OVER != 0 {
            f.raise(vm, dev);
        }
        return true;
    }
    if st.manager.prr(prr).map(|d| d.state) == Some(PrrState::Preempt) {
        stop(f, &mut st, prr, job, now);
        *hw = Hardware::default();
        st.stats.part(Part::PlIrq, locked - seen);
        return true;
    }
    hw.job = Some((vm, dev, job));
    hw.frame_started = now;
    true
}
