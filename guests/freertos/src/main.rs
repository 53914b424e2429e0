//! Partita's FreeRTOS guest: the real FreeRTOS kernel (FreeRTOS-Kernel V11.2.0 from the
//! `freertos-next` crate, ARM_AARCH64_SRE port at EL1, or ARM_AARCH64 in the `gicv2`
//! build) with a Rust application.
//!
//! The crate owns the port glue (start-up, vectors, GIC, generic-timer tick, PL011) and
//! the demo: a 1 ms real-time task measuring its dispatch latency, two background tasks and,
//! when the device tree names an inter-VM channel, the IVC task serving Linux over it.
//! With `bench=` boot arguments the measurement suite's RTOS experiments (`bench`) run
//! instead of the demo.
//! One image runs natively on QEMU `virt` (entered at EL2, it drops to EL1 itself), as a
//! Partita VM and as a Xen dom0less domU (entered at EL1): it learns the platform from the
//! device tree in x0 and never assumes an address.

#![no_std]
#![no_main]

mod bench;
mod boot;
mod bootargs;
mod console;
mod demo;
mod freertos;
#[cfg_attr(feature = "gicv2", path = "gic_v2.rs")]
mod gic;
mod heap;
mod intid;
mod ivc;
mod ivc_demo;
mod ofdm;
mod partita;
mod pl011;
mod platform;
mod port;
mod psci;
mod rt;
mod sgi;
mod timer;
mod vectors;

use bootargs::BootArgs;
use core::panic::PanicInfo;
use fdt::Fdt;
use gic::Gic;
use platform::Platform;

/// Stack of every task, in 8-byte words (formatting needs a few KiB).
const TASK_STACK_WORDS: usize = 4096;
/// The real-time task outranks everything; the demo tasks share the lowest task level.
const RT_PRIORITY: u64 = freertos::MAX_PRIORITIES - 1;
const DEMO_PRIORITY: u64 = 1;
/// The IVC task runs below the real-time task and above the demo tasks.
const IVC_PRIORITY: u64 = 2;

/// Entered from `boot.rs` at EL1h with interrupts masked, `dtb` as the loader passed it
/// and `entry_el` the exception level the image was entered at.
#[no_mangle]
extern "C" fn rust_main(dtb: usize, entry_el: u64) -> ! {
    if dtb == 0 || !dtb.is_multiple_of(8) {
        halt_silently();
    }
    // SAFETY: the loader (QEMU or Partita) passes a device tree blob's address in x0;
    // `from_ptr` checks its header before trusting its size.
    let Ok(fdt) = (unsafe { Fdt::from_ptr(dtb as *const u8) }) else {
        halt_silently()
    };
    let Ok(uart) = Platform::console(&fdt) else {
        halt_silently()
    };
    // SAFETY: the device tree names this UART as the machine's, and the guest is the only
    // software driving it.
    unsafe { console::init(uart) };
    let platform = match Platform::from_fdt(&fdt) {
        Ok(platform) => platform,
        Err(error) => console::halt(format_args!("device tree at {dtb:#x}: {error}")),
    };
    psci::init(&fdt);
    partita::detect();
    let args = BootArgs::from_fdt(&fdt);
    if let Some(samples) = args.rt_samples {
        rt::limit_samples(samples);
    }
    print_banner(&platform, dtb, entry_el);
    match args.rt_samples {
        _ if args.bench.is_some() => console::line(format_args!(
            "psci: {}; bench: running the selected benchmarks",
            psci::conduit_name()
        )),
        Some(samples) => console::line(format_args!(
            "psci: {}; rt: powering off after {samples} samples",
            psci::conduit_name()
        )),
        None => console::line(format_args!(
            "psci: {}; rt: running until stopped",
            psci::conduit_name()
        )),
    }
    let channel = ivc::ChannelInfo::find(&fdt);
    let ivc_options = ivc_demo::Options::parse(BootArgs::line(&fdt));
    let ofdm = ofdm::Options::parse(BootArgs::line(&fdt)).map(|o| (o, &fdt));
    start(
        &platform,
        args.bench,
        args.tick,
        channel.map(|c| (c, ivc_options)),
        ofdm,
    )
}

/// Sets up the interrupt controller and tick, creates the tasks and starts FreeRTOS.
fn start(
    platform: &Platform,
    bench: Option<bench::Selection>,
    tick: timer::Source,
    channel: Option<(ivc::ChannelInfo, ivc_demo::Options)>,
    ofdm: Option<(ofdm::Options, &Fdt<'_>)>,
) -> ! {
    // SAFETY: the regions come from the device tree's GIC node, and the guest is the only
    // software programming the GIC at EL1.
    let gic = unsafe {
        Gic::init(
            platform.gic_distributor,
            platform.gic_second,
            platform.gic_second_size,
        )
    }
    .unwrap_or_else(|error| console::halt(format_args!("{} set-up failed: {error}", gic::NAME)));
    let tick_intid = match tick {
        timer::Source::Virtual => platform.virtual_timer_intid,
        timer::Source::Physical => platform.physical_timer_intid,
    };
    timer::select(tick);
    vectors::install(tick);
    console::line(format_args!(
        "tick: {} timer, interrupt {tick_intid}",
        match tick {
            timer::Source::Virtual => "virtual",
            timer::Source::Physical => "physical",
        }
    ));
    gic.enable_ppi(tick_intid, port::TICK_PRIORITY)
        .unwrap_or_else(|error| console::halt(format_args!("tick interrupt: {error}")));
    port::configure_tick(tick_intid, timer::frequency());
    console::create_line_lock()
        .unwrap_or_else(|_| console::halt(format_args!("FreeRTOS heap exhausted")));
    let demo = bench.is_none();
    let spawned = match (bench, ofdm) {
        (_, Some((options, fdt))) => spawn_ofdm(fdt, &gic, platform.memory_base, options),
        (Some(selection), None) => {
            gic.enable_sgi(sgi::INTID, sgi::PRIORITY)
                .unwrap_or_else(|error| console::halt(format_args!("bench SGI: {error}")));
            bench::spawn(selection)
        }
        (None, None) => spawn_tasks(),
    };
    spawned.unwrap_or_else(|_| console::halt(format_args!("FreeRTOS heap exhausted")));
    if let Some((info, options)) = channel.filter(|(_, options)| demo || options.requested) {
        let channel = ivc::Channel::open(info, &gic)
            .unwrap_or_else(|error| console::halt(format_args!("ivc: {error}")));
        ivc::publish(channel);
        let spawned = freertos::spawn_with(
            ivc_demo::task,
            c"ivc",
            TASK_STACK_WORDS,
            IVC_PRIORITY,
            options.into_raw(),
        );
        spawned.unwrap_or_else(|_| console::halt(format_args!("FreeRTOS heap exhausted")));
    }
    freertos::start_scheduler();
    console::halt(format_args!("FreeRTOS scheduler returned"))
}

/// The OFDM experiment (`ofdm`): the real-time task and the accelerators' tasks.
fn spawn_ofdm(
    fdt: &Fdt<'_>,
    gic: &Gic,
    ram_base: usize,
    options: ofdm::Options,
) -> Result<(), freertos::OutOfMemory> {
    let rt = freertos::spawn(
        rt::dispatch_latency_task,
        c"rt",
        TASK_STACK_WORDS,
        RT_PRIORITY,
    )?;
    port::set_release_task(rt);
    ofdm::spawn(fdt, gic, ram_base, options)
}

fn spawn_tasks() -> Result<(), freertos::OutOfMemory> {
    let rt = freertos::spawn(
        rt::dispatch_latency_task,
        c"rt",
        TASK_STACK_WORDS,
        RT_PRIORITY,
    )?;
    port::set_release_task(rt);
    freertos::spawn(demo::hello_task, c"hello", TASK_STACK_WORDS, DEMO_PRIORITY)?;
    freertos::spawn(
        demo::goodbye_task,
        c"goodbye",
        TASK_STACK_WORDS,
        DEMO_PRIORITY,
    )?;
    Ok(())
}

fn print_banner(platform: &Platform, dtb: usize, entry_el: u64) {
    console::line(format_args!(
        "Partita FreeRTOS guest: FreeRTOS-Kernel V11.2.0, {} port at EL1 (entered at EL{entry_el})",
        gic::PORT
    ));
    console::line(format_args!(
        "platform (device tree at {dtb:#x}): {} {:#x}, {} distributor {:#x} {} {:#x}, \
         timers: virtual intid {}, physical {}, at {} Hz, memory {:#x}+{:#x}",
        platform.uart.kind.name(),
        platform.uart.base,
        gic::NAME,
        platform.gic_distributor,
        gic::SECOND_FRAME,
        platform.gic_second,
        platform.virtual_timer_intid,
        platform.physical_timer_intid,
        timer::frequency(),
        platform.memory_base,
        platform.memory_size,
    ));
}

/// Nothing to print on: wait forever with interrupts masked.
fn halt_silently() -> ! {
    loop {
        aarch64_cpu::asm::wfi();
    }
}

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    console::halt(format_args!("panic: {info}"))
}
