//! The physical console: the board's UART (`uart.rs`) behind a spin lock, the `println!` macro for
//! hypervisor lines (`[partita] ...`) and each VM's output stream, shown as the current view
//! says (`partita_core::console`): the focused VM byte for byte, or every VM's whole lines
//! tagged `[<vm name>] `. A hidden VM's lines wait in its history until it is shown; with a
//! log folder, every VM's lines also go to `<folder>/<vm>.log` through semihosting.
//!
//! Only this module touches the physical UART. Locks are taken in one order: a VM's stream,
//! then the UART; a hypervisor line takes the UART alone. A whole line is written under one
//! UART hold, so lines from different CPUs never interleave, and each VM's stream has its
//! own lock, so CPUs contend only when a focus switch replays a VM's history. Input is read
//! only when the UART's receive interrupt says characters are waiting (`read_input`); it
//! must never block on input.
//!
//! A tagged line costs its VM's exit a few hundred instructions of UART writes. While a
//! physical interrupt is pending on the CPU (it may be a higher-priority vCPU's), the line
//! is held in its stream instead (`HELD` bytes at most) and printed at the VM's next output
//! with no interrupt pending, or when the CPU idles (`release_held`): a console line never
//! delays an interrupt. The shown VM's own bytes, a few at a time, are never held.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::lock::Mutex;
use partita_core::config::{ConsoleView, SystemConfig};
use partita_core::console::{Terminal, View, VmOutput, MAX_LINE};
use spin::Once;

use crate::arch::aarch64::{gic, semihosting};
use crate::uart::Uart;

/// The physical UART and where its cursor is.
struct Console {
    uart: Uart,
    /// The last byte sent was a newline (or nothing was sent): the terminal's cursor is at
    /// the start of a line.
    at_line_start: bool,
}

impl Console {
    fn put(&mut self, byte: u8) {
        self.uart.put(byte);
        self.at_line_start = byte == b'\n';
    }

    fn put_all(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.put(b));
    }

    /// Moves the cursor to the start of a line unless it is there.
    fn fresh_line(&mut self) {
        if !self.at_line_start {
            self.put_all(b"\r\n");
        }
    }

    fn get(&mut self) -> Option<u8> {
        self.uart.get()
    }
}

/// Makes the physical UART raise its interrupt when a character arrives.
pub fn enable_input() {
    CONSOLE.lock().uart.enable_receive_interrupt();
}

fn next_input() -> Option<u8> {
    CONSOLE.lock().get()
}

/// Passes every character waiting in the physical UART to `take` (which may print).
pub fn read_input(mut take: impl FnMut(u8)) {
    while let Some(byte) = next_input() {
        take(byte);
    }
}

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.put(b'\r');
            }
            self.put(b);
        }
        Ok(())
    }
}

static CONSOLE: Mutex<Console> = Mutex::new(Console {
    uart: Uart,
    at_line_start: true,
});

/// Sets the physical UART up (boot CPU, once, before the first line).
pub fn init_uart() {
    CONSOLE.lock().uart.init();
}

/// Prints one hypervisor line, `[partita] <args>`, on a line of its own whatever the view.
pub fn print_line(args: fmt::Arguments) {
    let mut uart = CONSOLE.lock();
    uart.fresh_line();
    let _ = writeln!(uart, "[partita] {args}");
}

/// Partita's own lines that can wait (`print_line_unhurried`), kept while an interrupt is
/// pending and printed when the CPU idles (`release_held`).
static PARTITA_HELD: Mutex<heapless::String<PARTITA_HELD_BYTES>> =
    Mutex::new(heapless::String::new());
const PARTITA_HELD_BYTES: usize = 2048;

/// Set after a line is held (Partita's or a stream's), cleared by the `release_held` that
/// prints it: a CPU about to idle with nothing held (the common case, at every wait of a
/// real-time guest) reads one word instead of taking every stream's lock.
static SOMETHING_HELD: AtomicBool = AtomicBool::new(false);

/// Prints a long hypervisor line that no one waits for (a stopped VM's counters) as
/// `print_line` does, unless a physical interrupt is pending: then the line is kept until the
/// CPU idles, so printing it never delays the VM the interrupt is for. A line that does not
/// fit beside the ones kept is printed at once.
pub fn print_line_unhurried(args: fmt::Arguments) {
    if gic::pending() {
        let mut held = PARTITA_HELD.lock();
        let before = held.len();
        if writeln!(held, "[partita] {args}").is_ok() {
            SOMETHING_HELD.store(true, Ordering::Release);
            return;
        }
        held.truncate(before);
    }
    print_line(args);
}

/// Prints a line on the panic path, where the lock may be held by a stuck CPU or by this one.
pub fn print_line_forced(args: fmt::Arguments) {
    for _ in 0..1_000_000 {
        if let Some(mut uart) = CONSOLE.try_lock() {
            uart.fresh_line();
            let _ = writeln!(uart, "[partita] {args}");
            return;
        }
    }
    // SAFETY: the holder has not released the lock in a million attempts: it is stuck or it
    // is this CPU, which panicked while printing. Taking it over can at worst interleave one
    // line, which is better than losing the panic message.
    unsafe { CONSOLE.force_unlock() };
    let mut uart = CONSOLE.lock();
    uart.fresh_line();
    let _ = writeln!(uart, "[partita] {args}");
}

/// `println!` for hypervisor messages; every line starts with `[partita] `.
#[macro_export]
macro_rules! println {
    ($($arg:tt)*) => {
        $crate::console::print_line(format_args!($($arg)*))
    };
}

/// Bytes of tagged lines a stream holds while an interrupt is pending; a line that does not
/// fit is printed (after the held ones) at once.
const HELD: usize = 1024;

/// One VM's output: its stream and where its lines go.
struct Stream {
    name: String,
    output: VmOutput,
    /// The semihosting handle of its log file.
    log: Option<usize>,
    /// Whole tagged lines (`[name] text\r\n`) waiting for no interrupt to be pending;
    /// its room is taken at start-up.
    held: Vec<u8>,
}

impl Stream {
    /// Its output stream and where that goes, borrowed apart.
    fn parts(&mut self) -> (&mut VmOutput, Screen<'_>) {
        let screen = Screen {
            name: &self.name,
            log: self.log,
            held: &mut self.held,
        };
        (&mut self.output, screen)
    }
}

/// Every VM's stream, in configuration order.
static STREAMS: Once<Vec<Mutex<Stream>>> = Once::new();
/// What the terminal shows (`View::encode`).
static VIEW: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Sets up the VMs' streams and their log files; the terminal starts on VM `focus` or on
/// every VM, as the configuration says (boot CPU, once, before any VM runs).
pub fn init(config: &SystemConfig, focus: usize) {
    let view = match config.console.view {
        ConsoleView::Focus => View::Vm(focus),
        ConsoleView::All => View::All,
    };
    VIEW.store(view.encode(), Ordering::Release);
    STREAMS.call_once(|| {
        config
            .vms
            .iter()
            .map(|vm| {
                let log = config.console.log_dir.as_ref().and_then(|dir| {
                    let path = alloc::format!("{dir}/{}.log", vm.name);
                    let handle = semihosting::create(&path);
                    if handle.is_none() {
                        print_line(format_args!("console: cannot create {path}"));
                    }
                    handle
                });
                Mutex::new(Stream {
                    name: vm.name.clone(),
                    output: VmOutput::new(),
                    log,
                    held: Vec::with_capacity(HELD),
                })
            })
            .collect()
    });
}

/// Where a VM's stream sends its bytes: the physical UART and its log.
struct Screen<'a> {
    name: &'a str,
    log: Option<usize>,
    held: &'a mut Vec<u8>,
}

impl Screen<'_> {
    /// Prints the held lines, if any.
    fn release(&mut self, uart: &mut Console) {
        if !self.held.is_empty() {
            uart.fresh_line();
            uart.put_all(self.held);
            self.held.clear();
        }
    }
}

impl Terminal for Screen<'_> {
    fn raw(&mut self, bytes: &[u8]) {
        let mut uart = CONSOLE.lock();
        self.release(&mut uart);
        uart.put_all(bytes);
    }

    fn tagged(&mut self, line: &[u8]) {
        let tagged_len = self.name.len() + 3 + line.len() + 2;
        if gic::pending() && self.held.len() + tagged_len <= HELD {
            self.held.push(b'[');
            self.held.extend_from_slice(self.name.as_bytes());
            self.held.extend_from_slice(b"] ");
            self.held.extend_from_slice(line);
            self.held.extend_from_slice(b"\r\n");
            SOMETHING_HELD.store(true, Ordering::Release);
            return;
        }
        let mut uart = CONSOLE.lock();
        self.release(&mut uart);
        uart.fresh_line();
        let _ = write!(uart, "[{}] ", self.name);
        uart.put_all(line);
        uart.put_all(b"\r\n");
    }

    fn log(&mut self, line: &[u8]) {
        if let Some(handle) = self.log {
            let mut buffer = [0u8; MAX_LINE + 1];
            let len = line.len().min(MAX_LINE);
            buffer[..len].copy_from_slice(&line[..len]);
            buffer[len] = b'\n';
            semihosting::write(handle, &buffer[..=len]);
        }
    }
}

/// Runs `f` on VM `vm`'s stream with how the terminal shows it now.
fn with_stream(vm: usize, f: impl FnOnce(&mut VmOutput, View, &mut Screen)) {
    let Some(stream) = STREAMS.get().and_then(|s| s.get(vm)) else {
        return;
    };
    let mut stream = stream.lock();
    let view = View::decode(VIEW.load(Ordering::Acquire));
    let (output, mut screen) = stream.parts();
    f(output, view, &mut screen);
}

/// Prints every stream's held lines: the CPU is about to idle, so no vCPU waits for it.
/// A line held after the flag is cleared here sets it again, so none is forgotten.
pub fn release_held() {
    if !SOMETHING_HELD.load(Ordering::Relaxed) || !SOMETHING_HELD.swap(false, Ordering::AcqRel) {
        return;
    }
    {
        let mut held = PARTITA_HELD.lock();
        if !held.is_empty() {
            let mut uart = CONSOLE.lock();
            uart.fresh_line();
            let _ = uart.write_str(&held);
            held.clear();
        }
    }
    for stream in STREAMS.get().into_iter().flatten() {
        let mut stream = stream.lock();
        if !stream.held.is_empty() {
            stream.parts().1.release(&mut CONSOLE.lock());
        }
    }
}

/// VM `vm`'s UART transmitted `bytes`.
pub fn vm_output(vm: usize, bytes: &[u8]) {
    with_stream(vm, |output, view, screen| {
        output.write(bytes, view.shows(vm), screen)
    });
}

/// VM `vm`'s boot ended: the line it was writing, if any, is ended, and its held lines
/// are printed.
pub fn finish_vm_line(vm: usize) {
    with_stream(vm, |output, view, screen| {
        output.finish_line(view.shows(vm), screen);
        screen.release(&mut CONSOLE.lock());
    });
}

/// Shows `view` from now on. A VM shown alone first gets what it wrote while hidden: the
/// latest lines, the number of older ones, and the line it is writing.
pub fn show(view: View) {
    let Some(streams) = STREAMS.get() else {
        return;
    };
    let View::Vm(vm) = view else {
        VIEW.store(view.encode(), Ordering::Release);
        print_line(format_args!(
            "console: all VMs (Ctrl-\\ then 1..9 shows one)"
        ));
        return;
    };
    let Some(stream) = streams.get(vm) else {
        return;
    };
    let mut stream = stream.lock();
    VIEW.store(view.encode(), Ordering::Release);
    let (output, mut screen) = stream.parts();
    let mut uart = CONSOLE.lock();
    screen.release(&mut uart);
    uart.fresh_line();
    let name = screen.name;
    let _ = writeln!(
        uart,
        "[partita] console: vm {name} (Ctrl-\\ then 0 shows all VMs)"
    );
    output.replay(|history, partial| {
        if history.dropped() > 0 {
            let kept = if screen.log.is_some() {
                ", all in its log"
            } else {
                ""
            };
            let _ = writeln!(
                uart,
                "[partita] console: vm {name}: {} earlier lines not shown{kept}",
                history.dropped()
            );
        }
        for line in history.lines() {
            uart.put_all(line);
            uart.put_all(b"\r\n");
        }
        uart.put_all(partial);
    });
}
