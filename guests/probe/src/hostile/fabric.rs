//! The fabric's hostile probes (`mode=fabric`, configs/tests/hostile-fabric.toml, issue 14):
//! this VM uses the QAM-16, QAM-64 and FFT-512 accelerators beside a FreeRTOS VM of higher
//! priority that uses all four, and attacks the fabric through them: interfaces that are not
//! its own, DMA outside its memory, a storm of requests and refused jobs, and writes into the
//! context of its own preempted job. What FreeRTOS must still see (every result right,
//! `misses=0`, its allocations within eq. 5's bound) is the host scenario's to assert.
//!
//! The probe runs with its MMU off: its buffers are Device memory, written and read a 32-bit
//! word at a time. A write to an interface page that is not connected traps and is the
//! request; without INT_CTRL's signal bit (the native model) the write waits until the page is
//! connected, with it (the guest model) it is dropped.

use aarch64_cpu::registers::{Readable, CNTFRQ_EL0, CNTVCT_EL0};
use partita_core::accel::functions::Function;
use partita_core::accel::interface::{fnv1a, int_ctrl, reg, stat, FNV_OFFSET};

use super::memory::{load_aborts, store_aborts};
use super::{probe, Expected, Probe, Run};
use crate::checks::{expect_eq, Failure, Outcome};
use crate::mmio::{Load, Store};
use crate::platform::Platform;
use crate::println;

/// This VM's accelerators (guest-physical pages) and the one it was not given.
const QAM16: u64 = 0x0a00_0000;
const QAM64: u64 = 0x0a00_1000;
const FFT512: u64 = 0x0a00_2000;
const NOT_GIVEN: u64 = 0x0a00_3000;
/// The interface pages physically (`cargo xtask check-config` on the configuration): the
/// FreeRTOS VM's four, then this VM's three. As guest-physical addresses they are nothing
/// to this VM.
const FOREIGN_IF_PHYS: [u64; 4] = [0x6060_0000, 0x6060_1000, 0x6060_2000, 0x6060_3000];
const OWN_IF_PHYS: [u64; 3] = [0x6060_4000, 0x6060_5000, 0x6060_6000];
/// This VM's RAM (2 MiB at 0x4000_0000) and, physically, FreeRTOS's.
const RAM_END: u64 = 0x4020_0000;
const FREERTOS_PHYS: u64 = 0x6000_0000;
/// Buffers: input here, output 128 KiB in.
const BUFFERS: u64 = 0x4008_0000;
const OUT_OFFSET: u64 = 0x2_0000;
/// Input bytes of one QAM frame (18,800 bits).
const QAM_FRAME: u64 = 2_350;
/// Output bytes per frame, enough for QAM-16 (4,700 symbols of 4 bytes).
const OUT_FRAME: u64 = 4_700 * 4;

/// Hands the emulated CPU to the next one in QEMU's round robin (a hint: hardware runs on).
/// Under `-icount` QEMU 7.2 ends a CPU's turn only at a timer deadline, and a guest that
/// polls without it can hold its turn until the next one (docs/accelerators.md): the probe
/// attacks the fabric, not QEMU's scheduler, so its polling loops yield.
fn relax() {
    // SAFETY: a hint instruction with no architectural effect.
    unsafe { core::arch::asm!("yield", options(nomem, nostack)) };
}

/// The fabric's probes, numbered on their own (docs/accelerators.md lists them; the main
/// table and docs/security.md do not).
pub const PROBES: &[Probe] = &[
    probe(
        "if-foreign",
        Expected::AbortInjected,
        Run::Any(foreign_interfaces),
    ),
    probe("dma-outside-vm", Expected::Ignored, Run::Any(dma_outside)),
    probe(
        "request-storm",
        Expected::Contained,
        Run::Any(request_storm),
    ),
    probe(
        "context-tamper",
        Expected::Ignored,
        Run::Any(context_tamper),
    ),
];

fn now_ns() -> u64 {
    let f = CNTFRQ_EL0.get().max(1);
    CNTVCT_EL0.get() * 1_000_000_000 / f
}

fn read(page: u64, offset: u64) -> u32 {
    Load::Word.run(page + offset) as u32
}

fn write(page: u64, offset: u64, value: u32) {
    Store::Word.run(page + offset, u64::from(value));
}

/// Waits until OVER is set, at most `limit_ns`; STAT then. A job started while the page was
/// connected but whose region went to another VM before the fabric took it (a hold taken
/// over) still has START set in the page: writing it again is the request that runs it, as
/// FreeRTOS's driver does.
fn wait_over(page: u64, limit_ns: u64) -> Result<u32, Failure> {
    let until = now_ns() + limit_ns;
    while read(page, reg::OVER) & 0xff == 0 {
        let taken = stat::CONNECTED | stat::BUSY | stat::SUSPENDED;
        if read(page, reg::STAT) & taken == 0 && read(page, reg::START) & 0xff != 0 {
            write(page, reg::START, 1);
        }
        relax();
        if now_ns() > until {
            return Err(Failure::new(format_args!(
                "page {page:#x}: no OVER within {limit_ns} ns, STAT {:#x}",
                read(page, reg::STAT)
            )));
        }
    }
    Ok(read(page, reg::STAT))
}

/// Starts a job (native model: the first write waits for the connection).
fn start(page: u64, data: (u64, u64), out: (u64, u64)) {
    write(page, reg::INT_CTRL, 0);
    write(page, reg::OVER, 0);
    write(page, reg::DATA_ADDR, data.0 as u32);
    write(page, reg::DATA_SIZE, data.1 as u32);
    write(page, reg::OUT_ADDR, out.0 as u32);
    write(page, reg::OUT_SIZE, out.1 as u32);
    write(page, reg::START, 1);
}

/// Fills `len` bytes at `addr` with a fixed pattern.
fn fill(addr: u64, len: u64, seed: u32) {
    let mut x = seed | 1;
    for at in (0..len).step_by(4) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        Store::Word.run(addr + at, u64::from(x));
    }
}

/// The interface of the accelerator this VM was not given, and every interface page by its
/// physical address (FreeRTOS's and its own): nothing is mapped there.
pub fn foreign_interfaces(_: &Platform) -> Outcome {
    for addr in [NOT_GIVEN, NOT_GIVEN + reg::START]
        .into_iter()
        .chain(FOREIGN_IF_PHYS)
        .chain(OWN_IF_PHYS)
    {
        load_aborts(addr)?;
        store_aborts(addr)?;
    }
    Ok(())
}

/// Jobs whose input or output lies outside the VM's RAM, or straddles its end, or is its own
/// interface page or UART, are refused with ERR_DMA and never start.
pub fn dma_outside(_: &Platform) -> Outcome {
    let own_in = (BUFFERS, QAM_FRAME);
    let own_out = (BUFFERS + OUT_OFFSET, OUT_FRAME);
    let outside: [u64; 6] = [
        FREERTOS_PHYS,
        0x3fff_f000,
        RAM_END - 100,
        RAM_END,
        QAM16,
        0x0900_0000,
    ];
    for addr in outside {
        for (data, out) in [((addr, QAM_FRAME), own_out), (own_in, (addr, OUT_FRAME))] {
            start(QAM16, data, out);
            let status = wait_over(QAM16, 50_000_000)?;
            if status & stat::ERR_DMA == 0 || status & stat::BUSY != 0 {
                return Err(Failure::new(format_args!(
                    "input {:#x} output {:#x}: STAT {status:#x}, want ERR_DMA",
                    data.0, out.0
                )));
            }
        }
    }
    // And a job inside its RAM still runs.
    fill(own_in.0, own_in.1, 7);
    start(QAM16, own_in, own_out);
    let status = wait_over(QAM16, 200_000_000)?;
    expect_eq(
        format_args!("a job inside the VM: STAT errors"),
        u64::from(status & (stat::ERR_DMA | stat::ERR_SIZE | stat::ERR_CONTEXT)),
        0,
    )
}

/// One of this VM's accelerators with buffers of its own, for a job of `frames` frames.
#[derive(Clone, Copy)]
struct Device {
    page: u64,
    function: Function,
    input: u64,
    output: u64,
    frames: u64,
}

/// Every accelerator of this VM, each with its own buffers (inputs from 512 KiB, outputs
/// from 640 KiB, all below the device tree's last 64 KiB).
const DEVICES: [Device; 3] = [
    Device {
        page: QAM16,
        function: Function::Qam16,
        input: 0x4008_0000,
        output: 0x400a_0000,
        frames: 4,
    },
    Device {
        page: QAM64,
        function: Function::Qam64,
        input: 0x4008_4000,
        output: 0x400c_0000,
        frames: 4,
    },
    Device {
        page: FFT512,
        function: Function::Fft512,
        input: 0x4008_8000,
        output: 0x400e_0000,
        frames: 2,
    },
];

/// The largest input and output frames of `DEVICES` (FFT-512's).
const MAX_IN_FRAME: usize = 4_700 * 4;
const MAX_OUT_FRAME: usize = 10 * 512 * 4;

impl Device {
    fn input_bytes(self) -> u64 {
        self.frames * self.function.input_frame() as u64
    }

    fn output_bytes(self) -> u64 {
        self.frames * self.function.output_frame() as u64
    }

    /// Fills the input with a pattern of `seed`.
    fn fill(self, seed: u32) {
        fill(self.input, self.input_bytes(), seed);
    }

    /// Starts a job over the whole input (native model: a write waits for the connection).
    fn start(self) {
        start(
            self.page,
            (self.input, self.input_bytes()),
            (self.output, self.output_bytes()),
        );
    }

    /// The software reference of the job's RESULT: FNV-1a of the whole output, computed
    /// here frame by frame from the input in memory.
    fn reference(self) -> u64 {
        let mut input = [0u8; MAX_IN_FRAME];
        let mut output = [0u8; MAX_OUT_FRAME];
        let (in_len, out_len) = (self.function.input_frame(), self.function.output_frame());
        let mut result = FNV_OFFSET;
        for frame in 0..self.frames {
            let at = self.input + frame * in_len as u64;
            for (i, b) in input[..in_len].iter_mut().enumerate() {
                *b = Load::Byte.run(at + i as u64) as u8;
            }
            let out = &mut output[..out_len];
            if self.function.frame(&input[..in_len], out).is_ok() {
                result = fnv1a(result, out);
            }
        }
        result
    }

    /// Waits for the job's end and checks it: no error, RESULT the software reference's.
    fn check(self, what: &str, limit_ns: u64) -> Outcome {
        let status = wait_over(self.page, limit_ns)?;
        let errors = stat::ERR_DMA | stat::ERR_SIZE | stat::ERR_CONTEXT;
        if status & errors != 0 {
            return Err(Failure::new(format_args!(
                "{what}: {} job ended with STAT {status:#x}",
                self.function.name()
            )));
        }
        let result = u64::from(read(self.page, reg::RESULT))
            | u64::from(read(self.page, reg::RESULT + 4)) << 32;
        expect_eq(
            format_args!("{what}: {} RESULT", self.function.name()),
            result,
            self.reference(),
        )
    }
}

/// How long the storm lasts (ns of virtual time): a few of FreeRTOS's 20 ms periods.
const STORM_NS: u64 = 60_000_000;

/// A storm: for `STORM_NS` the VM writes its three interface pages in a tight loop without
/// YIELD, in the guest model (a write to an unconnected page is a request, dropped at once,
/// so nothing waits), each round a job whose input is FreeRTOS's RAM (refused wherever the
/// page is connected). FreeRTOS beside it must keep its results, `misses=0` and its
/// allocation bound (the host scenario asserts them); afterwards this VM's own jobs still
/// run and give the reference's results.
pub fn request_storm(_: &Platform) -> Outcome {
    for d in DEVICES {
        write(d.page, reg::INT_CTRL, int_ctrl::ON_SIGNAL);
    }
    let until = now_ns() + STORM_NS;
    let (mut rounds, mut unconnected) = (0u64, 0u64);
    while now_ns() < until {
        for d in DEVICES {
            if read(d.page, reg::STAT) & stat::CONNECTED == 0 {
                unconnected += 1;
            }
            write(d.page, reg::DATA_ADDR, FREERTOS_PHYS as u32);
            write(d.page, reg::DATA_SIZE, d.function.input_frame() as u32);
            write(d.page, reg::OUT_ADDR, d.output as u32);
            write(d.page, reg::OUT_SIZE, d.function.output_frame() as u32);
            write(d.page, reg::START, 1);
        }
        rounds += 1;
    }
    println!("fabric: storm rounds={rounds} unconnected_writes={unconnected}");
    if unconnected == 0 {
        return Err(Failure::new(format_args!(
            "{rounds} rounds and not one write to an unconnected page: no request was made"
        )));
    }
    for (i, d) in DEVICES.into_iter().enumerate() {
        settle(d)?;
        d.fill(21 + i as u32);
        d.start();
        d.check("after the storm", 2_000_000_000)?;
    }
    Ok(())
}

/// Waits until `d`'s page is connected with no START pending, so the storm's last refused
/// job cannot be taken for the next one (in the native model a write to an unconnected page
/// is a request that waits for the connection).
fn settle(d: Device) -> Outcome {
    let until = now_ns() + 1_000_000_000;
    loop {
        write(d.page, reg::INT_CTRL, 0);
        let idle = read(d.page, reg::START) & 0xff == 0;
        if idle && read(d.page, reg::STAT) & stat::CONNECTED != 0 {
            return Ok(());
        }
        if now_ns() > until {
            return Err(Failure::new(format_args!(
                "{}: not connected and idle 1 s after the storm, STAT {:#x}",
                d.function.name(),
                read(d.page, reg::STAT)
            )));
        }
        relax();
    }
}

/// How long the VM waits for one of its jobs to be preempted (ns of virtual time).
const TAMPER_WINDOW_NS: u64 = 400_000_000;

/// Tampering with a saved context: the VM keeps a job running on each of its three devices
/// (so every region is busy and each of FreeRTOS's requests preempts one) until one is
/// suspended, then writes every word of that page's context area, first in the guest model
/// (each write must be dropped: the area reads back as saved while the job stays suspended),
/// then in the native model (the write waits until the job has resumed from its context).
/// The resumed job must give the reference's RESULT.
pub fn context_tamper(_: &Platform) -> Outcome {
    for (i, d) in DEVICES.into_iter().enumerate() {
        write(d.page, reg::INT_CTRL, 0);
        d.fill(31 + i as u32);
    }
    let until = now_ns() + TAMPER_WINDOW_NS;
    let mut running = [false; DEVICES.len()];
    let mut tampered = None;
    while tampered.is_none() {
        if now_ns() > until {
            return Err(Failure::new(format_args!(
                "no job of this VM was suspended within {TAMPER_WINDOW_NS} ns"
            )));
        }
        for (i, d) in DEVICES.into_iter().enumerate() {
            let status = read(d.page, reg::STAT);
            if running[i] && status & stat::SUSPENDED != 0 && status & stat::CONNECTED == 0 {
                if tamper_suspended(d)? {
                    tampered = Some(d);
                    break;
                }
            } else if !running[i] || read(d.page, reg::OVER) & 0xff != 0 {
                d.start();
                running[i] = true;
            }
        }
        relax();
    }
    for (i, d) in DEVICES.into_iter().enumerate() {
        if running[i] {
            d.check(
                "the tampered context's job and its neighbours",
                2_000_000_000,
            )?;
        }
    }
    Ok(())
}

/// Writes the whole context area of `d`'s suspended job. True when the guest-model writes
/// were all made while the job stayed suspended (and none changed the area); false when
/// the job resumed meanwhile (the attempt proves nothing and is repeated).
fn tamper_suspended(d: Device) -> Result<bool, Failure> {
    const WORDS: usize = (reg::CONTEXT_SIZE / 4) as usize;
    let mut saved = [0u32; WORDS];
    for (k, w) in saved.iter_mut().enumerate() {
        *w = read(d.page, reg::CONTEXT + 4 * k as u64);
    }
    // The guest model: this write traps, INT_CTRL is stored and the request (the suspended
    // job's, already waiting) drops it; so are the writes after it.
    write(d.page, reg::INT_CTRL, int_ctrl::ON_SIGNAL);
    for (k, w) in saved.iter().enumerate() {
        write(d.page, reg::CONTEXT + 4 * k as u64, !w);
    }
    let changed = saved
        .iter()
        .enumerate()
        .filter(|&(k, w)| read(d.page, reg::CONTEXT + 4 * k as u64) != *w)
        .count();
    let status = read(d.page, reg::STAT);
    let suspended = status & stat::SUSPENDED != 0 && status & stat::CONNECTED == 0;
    if suspended && changed != 0 {
        return Err(Failure::new(format_args!(
            "{}: {changed} words of the saved context changed while the job was suspended",
            d.function.name()
        )));
    }
    // The native model: this write waits until the page is connected again, the job resumed
    // from its context; then the writes land in an area nothing reads any more.
    write(d.page, reg::INT_CTRL, 0);
    for (k, w) in saved.iter().enumerate() {
        write(d.page, reg::CONTEXT + 4 * k as u64, w ^ 0x5a5a_5a5a);
    }
    if suspended {
        println!(
            "fabric: tampered with the suspended {} job's context, {WORDS} words",
            d.function.name()
        );
    }
    Ok(suspended)
}
