//! The OFDM experiment's driver (Ker-ONE section 6.1, `docs/accelerators.md`): periodic
//! tasks that each command one accelerator the device tree names (`partita,accelerator`),
//! check every result against the software reference (`partita_core::accel::functions`,
//! the same code) and time both.
//!
//! Both programming models of Ker-ONE: `native` tasks just write the interface (a write to an
//! unconnected page traps and completes once Partita connected it) and poll OVER; `guest`
//! tasks set INT_CTRL to take the manager's signals as the accelerator's interrupt (IPC_WAIT,
//! IPC_READY, IPC_PREEMPT and the end of a job) and block on it.
//!
//! Boot arguments: `ofdm=rtos` (two tasks: QAM-16 native every 20 ms, FFT-512 guest model every
//! 40 ms, above everything but the real-time task) or `ofdm=gpos` (three: QAM-64 native,
//! FFT-1024 and FFT-512 guest model, back to back at the lowest level); `ofdm.jobs=<n>`
//! (default 8) jobs per task, `ofdm.frames=<n>` (default 2) frames of 18,800 bits per job.
//! When every task is done the guest prints one `ofdm:` line per task, then the real-time
//! task's figures, and powers off.

use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use fdt::Fdt;
use partita_core::accel::functions::Function;
use partita_core::accel::interface::{fnv1a, int_ctrl, reg, stat, Signal, FNV_OFFSET};

use crate::freertos::{self, OutOfMemory, Semaphore, Slot};
use crate::gic::Gic;
use crate::{console, port, psci, rt, timer};

const MAX_TASKS: usize = 3;
const MAX_FRAMES: usize = 3;
const IN_BYTES: usize = MAX_FRAMES * 4_700 * 4;
const OUT_BYTES: usize = MAX_FRAMES * 5 * 1024 * 4;
const TASK_STACK_WORDS: usize = 4096;

/// An accelerator as the device tree describes it.
#[derive(Clone, Copy)]
struct Accelerator {
    base: usize,
    irq: u32,
    function: Function,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Model {
    Native,
    Guest,
}

/// One task's set-up.
#[derive(Clone, Copy)]
struct Plan {
    function: Function,
    model: Model,
    period_ms: u64,
    priority: u64,
}

const RTOS: [Plan; 2] = [
    Plan {
        function: Function::Qam16,
        model: Model::Native,
        period_ms: 20,
        priority: 20,
    },
    Plan {
        function: Function::Fft512,
        model: Model::Guest,
        period_ms: 40,
        priority: 19,
    },
];
const GPOS: [Plan; 3] = [
    Plan {
        function: Function::Qam64,
        model: Model::Native,
        period_ms: 0,
        priority: 1,
    },
    Plan {
        function: Function::Fft1024,
        model: Model::Guest,
        period_ms: 0,
        priority: 1,
    },
    Plan {
        function: Function::Fft512,
        model: Model::Guest,
        period_ms: 0,
        priority: 1,
    },
];

/// What the boot arguments ask for.
#[derive(Clone, Copy)]
pub struct Options {
    rtos: bool,
    jobs: u32,
    frames: u32,
}

impl Options {
    pub fn parse(line: &str) -> Option<Options> {
        let mut options = None;
        let mut jobs = 8;
        let mut frames = 2;
        for word in line.split_ascii_whitespace() {
            match word {
                "ofdm=rtos" => options = Some(true),
                "ofdm=gpos" => options = Some(false),
                _ => {}
            }
            if let Some(n) = word.strip_prefix("ofdm.jobs=").and_then(|v| v.parse().ok()) {
                jobs = n;
            }
            if let Some(n) = word
                .strip_prefix("ofdm.frames=")
                .and_then(|v| v.parse::<u32>().ok())
            {
                frames = n.clamp(1, MAX_FRAMES as u32);
            }
        }
        options.map(|rtos| Options { rtos, jobs, frames })
    }
}

/// The accelerators of the device tree (at most one per function).
fn find(fdt: &Fdt<'_>) -> [Option<Accelerator>; 4] {
    let mut found = [None; 4];
    for node in fdt.all_nodes() {
        let compatible = node
            .compatible()
            .is_some_and(|c| c.all().any(|c| c == "partita,accelerator"));
        if !compatible {
            continue;
        }
        let Some(function) = node
            .property("partita,function")
            .and_then(|p| p.as_str())
            .and_then(Function::from_name)
        else {
            continue;
        };
        let Some(region) = node.reg().and_then(|mut r| r.next()) else {
            continue;
        };
        let Some(spi) = node
            .property("interrupts")
            .and_then(|p| p.value.get(4..8))
            .and_then(|b| b.try_into().ok())
            .map(u32::from_be_bytes)
        else {
            continue;
        };
        let at = Function::ALL
            .iter()
            .position(|&f| f == function)
            .unwrap_or(0);
        found[at] = Some(Accelerator {
            base: region.starting_address as usize,
            irq: spi + 32,
            function,
        });
    }
    found
}

/// Per task: its accelerator's interrupt semaphore and INTID.
static SIGNALS: [Slot<Semaphore>; MAX_TASKS] = [Slot::empty(), Slot::empty(), Slot::empty()];
static IRQS: [AtomicU32; MAX_TASKS] = [
    AtomicU32::new(u32::MAX),
    AtomicU32::new(u32::MAX),
    AtomicU32::new(u32::MAX),
];
static DONE: AtomicUsize = AtomicUsize::new(0);
static TASKS: AtomicUsize = AtomicUsize::new(0);

/// Called by the IRQ dispatcher for every interrupt; true when it was an accelerator's.
pub fn on_interrupt(intid: u32) -> bool {
    let mut mine = false;
    for (i, irq) in IRQS.iter().enumerate() {
        if irq.load(Ordering::Relaxed) == intid {
            if let Some(s) = SIGNALS[i].get() {
                s.give_from_isr();
            }
            mine = true;
        }
    }
    mine
}

/// A task's parameter: its index (and plan) and the options, packed in a word.
fn pack(index: usize, options: Options) -> *mut c_void {
    (index
        | usize::from(options.rtos) << 8
        | (options.jobs as usize & 0xff_ffff) << 16
        | (options.frames as usize) << 40) as *mut c_void
}

/// Spawns the tasks `options` asks for, on the accelerators of `fdt`.
pub fn spawn(
    fdt: &Fdt<'_>,
    gic: &Gic,
    ram_base: usize,
    options: Options,
) -> Result<(), OutOfMemory> {
    RAM_BASE.store(ram_base, Ordering::Relaxed);
    let accelerators = find(fdt);
    let plans: &[Plan] = if options.rtos { &RTOS } else { &GPOS };
    for (i, plan) in plans.iter().enumerate() {
        let Some(a) = accelerators
            .iter()
            .flatten()
            .find(|a| a.function == plan.function)
        else {
            console::line(format_args!(
                "ofdm: no {} accelerator in the device tree",
                plan.function.name()
            ));
            continue;
        };
        SIGNALS[i].set(Semaphore::binary()?);
        IRQS[i].store(a.irq, Ordering::Relaxed);
        if let Err(e) = gic.enable_edge_spi(a.irq, port::TICK_PRIORITY) {
            console::line(format_args!("ofdm: interrupt {}: {e}", a.irq));
        }
        TASKS.fetch_add(1, Ordering::Relaxed);
        ACCELERATORS[i].store(a.base, Ordering::Relaxed);
        freertos::spawn_with(
            task,
            c"ofdm",
            TASK_STACK_WORDS,
            plan.priority,
            pack(i, options),
        )?;
    }
    Ok(())
}

/// Per task: its accelerator's page.
static ACCELERATORS: [AtomicUsize; MAX_TASKS] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

/// The task's buffers, in the RAM below the image (Partita and QEMU load the image 2 MiB
/// into RAM, as for an arm64 Linux Image, and nothing else uses that space): 512 KiB per task.
struct Buffers {
    input: &'static mut [u8],
    output: &'static mut [u8],
    reference: &'static mut [u8],
}

const BUFFERS_PER_TASK: usize = 0x8_0000;
const _: () = assert!(MAX_TASKS * BUFFERS_PER_TASK <= 0x20_0000);
const _: () = assert!(IN_BYTES + OUT_BYTES + OUT_BYTES / MAX_FRAMES <= BUFFERS_PER_TASK);

/// The start of RAM (from the device tree).
static RAM_BASE: AtomicUsize = AtomicUsize::new(0);

impl Buffers {
    /// Task `index`'s buffers; each task calls it once for its own.
    fn of(index: usize) -> Buffers {
        let base = RAM_BASE.load(Ordering::Relaxed) + index * BUFFERS_PER_TASK;
        // SAFETY: three disjoint ranges of this task's 512 KiB below the image, RAM that no
        // other code of the guest uses (see the type), each borrowed once.
        unsafe {
            Buffers {
                input: core::slice::from_raw_parts_mut(base as *mut u8, IN_BYTES),
                output: core::slice::from_raw_parts_mut((base + IN_BYTES) as *mut u8, OUT_BYTES),
                reference: core::slice::from_raw_parts_mut(
                    (base + IN_BYTES + OUT_BYTES) as *mut u8,
                    OUT_BYTES / MAX_FRAMES,
                ),
            }
        }
    }
}

struct Page(usize);

impl Page {
    fn read(&self, offset: u64) -> u32 {
        // SAFETY: the device tree names this page as the accelerator's interface; it is
        // always readable.
        unsafe { ptr::read_volatile((self.0 + offset as usize) as *const u32) }
    }
    /// A write: when the page is not connected, it traps and is the request (native
    /// model: it completes once connected; guest model: it is dropped and IPC_READY follows).
    fn write(&self, offset: u64, value: u32) {
        // SAFETY: as `read`; Partita maps the page writable or traps the write.
        unsafe { ptr::write_volatile((self.0 + offset as usize) as *mut u32, value) }
    }
    fn connected(&self) -> bool {
        self.read(reg::STAT) & stat::CONNECTED != 0
    }
}

/// Figures of one task.
#[derive(Default)]
struct Figures {
    jobs: u32,
    frames: u32,
    ok: u32,
    bad: u32,
    hw_ns: u64,
    sw_ns: u64,
    worst_job_ns: u64,
    preempted: u32,
    waits: u32,
}

extern "C" fn task(parameter: *mut c_void) {
    let word = parameter as usize;
    let index = word & 0xf;
    let plan = if (word >> 8) & 1 == 1 {
        RTOS[index % RTOS.len()]
    } else {
        GPOS[index % GPOS.len()]
    };
    let jobs = ((word >> 16) & 0xff_ffff) as u32;
    let frames = (word >> 40) & 0xff;
    let page = Page(ACCELERATORS[index].load(Ordering::Relaxed));
    let function = plan.function;
    let buffers = Buffers::of(index);
    let in_addr = buffers.input.as_ptr() as u32;
    let out_addr = buffers.output.as_mut_ptr() as u32;
    let in_frame = function.input_frame();
    let out_frame = function.output_frame();
    let frequency = timer::frequency();
    let mut figures = Figures::default();
    let mut seed = 0x9e37_79b9u32 ^ (index as u32) << 8 ^ u32::from(plan.model == Model::Guest);
    let mut expected = FNV_OFFSET;
    let mut sw_frames = 0u64;
    for job in 0..jobs {
        let period_start = timer::now();
        // The RTOS's tasks map a new input every period. The GPOS's commands its devices
        // back to back over one input (its regions stay busy, so the RTOS's requests find
        // them taken and preempt): it computes the reference once, while its first job
        // runs, and checks every job against it.
        let fresh = plan.period_ms > 0 || job == 0;
        if fresh {
            for b in buffers.input[..frames * in_frame].iter_mut() {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                *b = seed as u8;
            }
            expected = FNV_OFFSET;
            sw_frames += frames as u64;
        }
        // The reference, frame by frame, in software: Table 6's T_SW. The GPOS computes it
        // while its first job runs on the fabric; the RTOS before it starts the job, so its
        // job time is the accelerator's alone.
        let mut sw_ns = 0;
        let mut reference = || {
            let sw_start = timer::now();
            for f in 0..frames {
                let input = &buffers.input[f * in_frame..(f + 1) * in_frame];
                let out = &mut buffers.reference[..out_frame];
                if function.frame(input, out).is_ok() {
                    expected = fnv1a(expected, out);
                }
            }
            sw_ns += timer::ticks_to_ns(timer::now() - sw_start, frequency);
        };
        let overlap = plan.period_ms == 0;
        if fresh && !overlap {
            reference();
        }
        let start = timer::now();
        let result = run_job(
            &page,
            plan.model,
            index,
            (in_addr, out_addr),
            frames,
            function,
            &mut figures,
            if fresh && overlap {
                Some(&mut reference)
            } else {
                None
            },
        );
        figures.sw_ns += sw_ns;
        let took = timer::ticks_to_ns(timer::now() - start, frequency);
        figures.hw_ns += took;
        figures.worst_job_ns = figures.worst_job_ns.max(took);
        figures.jobs += 1;
        figures.frames += frames as u32;
        if result == Some(expected) {
            figures.ok += 1;
        } else {
            figures.bad += 1;
            console::line(format_args!(
                "ofdm: {} job {} wrong: status {:#x} result {:?} expected {expected:#x}",
                function.name(),
                figures.jobs,
                page.read(reg::STAT),
                result
            ));
        }
        if plan.period_ms > 0 {
            let spent_ms = timer::ticks_to_ns(timer::now() - period_start, frequency) / 1_000_000;
            freertos::delay_ms(plan.period_ms.saturating_sub(spent_ms).max(1));
        }
    }
    let frames_done = u64::from(figures.frames.max(1));
    console::line(format_args!(
        "ofdm: task={} model={} jobs={} frames={} ok={} bad={} hw_ns_per_frame={} sw_ns_per_frame={} worst_job_ns={} preempted={} waits={}",
        function.name(),
        if plan.model == Model::Native { "native" } else { "guest" },
        figures.jobs,
        figures.frames,
        figures.ok,
        figures.bad,
        figures.hw_ns / frames_done,
        figures.sw_ns / sw_frames.max(1),
        figures.worst_job_ns,
        figures.preempted,
        figures.waits
    ));
    if DONE.fetch_add(1, Ordering::AcqRel) + 1 == TASKS.load(Ordering::Acquire) {
        let [samples, max_ns, mean_ns, misses] = rt::published();
        console::line(format_args!(
            "ofdm: done; rt: samples={samples} max_ns={max_ns} mean_ns={mean_ns} misses={misses}"
        ));
        psci::system_off();
    }
    freertos::delay_forever()
}

/// Runs one job of `frames` frames on the accelerator, input and output buffers at the
/// given addresses; `meanwhile` runs once the job has started. Its RESULT, or `None` if
/// refused.
#[allow(clippy::too_many_arguments)]
fn run_job(
    page: &Page,
    model: Model,
    index: usize,
    (in_addr, out_addr): (u32, u32),
    frames: usize,
    function: Function,
    figures: &mut Figures,
    meanwhile: Option<&mut dyn FnMut()>,
) -> Option<u64> {
    let signals = SIGNALS[index].get();
    let in_len = frames * function.input_frame();
    let out_len = frames * function.output_frame();
    loop {
        if model == Model::Guest {
            // The request: INT_CTRL takes the manager's signals; while unconnected this
            // write is stored and answered IPC_WAIT, and IPC_READY follows.
            // A connection lost before it was used (a hold that expired) asks again.
            loop {
                page.write(reg::INT_CTRL, int_ctrl::ON_OVER | int_ctrl::ON_SIGNAL);
                if page.connected() {
                    break;
                }
                figures.waits += 1;
                if let Some(s) = signals {
                    s.take_ms(5);
                }
            }
        }
        page.write(reg::CMD, 0);
        page.write(reg::DATA_ADDR, in_addr);
        page.write(reg::DATA_SIZE, in_len as u32);
        page.write(reg::OUT_ADDR, out_addr);
        page.write(reg::OUT_SIZE, out_len as u32);
        page.write(reg::OVER, 0);
        page.write(reg::START, 1);
        // A write the guest model lost to a disconnection reads back unset: ask again.
        let started = page.read(reg::START) != 0
            || page.read(reg::STAT) & (stat::BUSY | stat::SUSPENDED) != 0
            || page.read(reg::OVER) != 0;
        if started {
            break;
        }
    }
    if let Some(work) = meanwhile {
        work();
    }
    let mut seen = page.read(reg::SIGNAL);
    while page.read(reg::OVER) == 0 {
        match (model, signals) {
            (Model::Guest, Some(s)) => {
                s.take_ms(5);
            }
            _ => freertos::delay_ms(1),
        }
        // Started while connected, but the region went to another VM before the fabric
        // took the job (a hold that expired): START is still set in the page, so asking
        // again is enough; the next connection runs it.
        let status = page.read(reg::STAT);
        let taken = status & (stat::CONNECTED | stat::BUSY | stat::SUSPENDED) != 0;
        if !taken && page.read(reg::OVER) == 0 {
            match model {
                Model::Guest => page.write(reg::INT_CTRL, int_ctrl::ON_OVER | int_ctrl::ON_SIGNAL),
                Model::Native => page.write(reg::START, 1),
            }
        }
        let signal = page.read(reg::SIGNAL);
        if signal != seen {
            seen = signal;
            if Signal::from_word(signal) == Some(Signal::Preempt) {
                figures.preempted += 1;
            }
        }
    }
    let status = page.read(reg::STAT);
    if status & (stat::ERR_DMA | stat::ERR_SIZE | stat::ERR_CONTEXT) != 0 {
        return None;
    }
    Some(u64::from(page.read(reg::RESULT)) | u64::from(page.read(reg::RESULT + 4)) << 32)
}
