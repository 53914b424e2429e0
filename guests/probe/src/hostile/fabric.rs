//! The fabric's hostile probes (`mode=fabric`, configs/tests/hostile-fabric.toml, issue 14):
//! this VM uses the QAM-16, QAM-64 and FFT-512 accelerators beside a FreeRTOS VM of higher
//! priority that uses all four, and attacks the fabric through them: interfaces that are not
//! its own, and DMA outside its memory. What FreeRTOS must still see (every result right,
//! `misses=0`) is the host scenario's to assert.
//!
//! The probe runs with its MMU off: its buffers are Device memory, written and read a 32-bit
//! word at a time. A write to an interface page that is not connected traps and is the
//! request; without INT_CTRL's signal bit (the native model) the write waits until the page is
//! connected, with it (the guest model) it is dropped.

use aarch64_cpu::registers::{Readable, CNTFRQ_EL0, CNTVCT_EL0};
use partita_core::accel::interface::{reg, stat};

use super::memory::{load_aborts, store_aborts};
use super::{probe, Expected, Probe, Run};
use crate::checks::{expect_eq, Failure, Outcome};
use crate::mmio::{Load, Store};
use crate::platform::Platform;

/// This VM's accelerators (guest-physical pages) and the one it was not given.
const QAM16: u64 = 0x0a00_0000;
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

/// Waits until OVER is set, at most `limit_ns`; STAT then.
fn wait_over(page: u64, limit_ns: u64) -> Result<u32, Failure> {
    let until = now_ns() + limit_ns;
    while read(page, reg::OVER) & 0xff == 0 {
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
