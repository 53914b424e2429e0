//! Glue between a VM's guest-physical device windows and the device models of
//! `partita_core::devices`: which model answers an address, and where a UART's output goes.
//!
//! What a VM's UARTs transmit is drained into its `Output` and handed to its console
//! stream when a line ends or the buffer fills, or when its vCPU's exit leaves the short
//! path or it is entered (`flush_output`): a character costs its exit a store into the
//! buffer, not a console call. A line is handed over only when it fits (`line_fits`): no
//! physical interrupt pending and the CPU's next event (the EL2 timer: a real-time VM's
//! deadline on a shared CPU; or the EL1 physical timer of a VM that owns it) at least
//! `LINE_ROOM_MICROS` away, since cleaning, tagging and printing a line takes its exit up
//! to about 5,000 instructions with the CPU's interrupts masked, and begun just before the
//! real-time VM's tick it would delay it. Lines held back together go one at a time, each
//! when it fits. Otherwise the bytes wait in the buffer for the VM's next line end, exit or
//! entry, or for its CPU to idle or enter a vCPU of its lowest priority (`take_held`); only
//! a full buffer goes at once.
//!
//! The models stay pure; this module only routes decoded accesses to them and drains what
//! they produce. It must never read guest memory or registers.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use partita_core::board::Region;
use partita_core::config::DeviceConfig;
use partita_core::devices::pl011::{self, Pl011};
use partita_core::devices::testdev::TestDevice;
use partita_core::devices::{AccessFault, AccessSize, MmioDevice};
use partita_core::sched::{earliest, has_room, ticks_from_micros, LINE_ROOM_MICROS};

use crate::arch::aarch64::entry::{cpu_index, MAX_CPUS};
use crate::arch::aarch64::{gic, timer};
use crate::console;

/// One emulated device of a VM.
pub enum Model {
    Uart(Pl011),
    Test(TestDevice),
}

impl Model {
    fn device(&mut self) -> &mut dyn MmioDevice {
        match self {
            Model::Uart(uart) => uart,
            Model::Test(test) => test,
        }
    }
}

/// A device model at its guest-physical window.
pub struct Device {
    window: Region,
    /// The SPI the device drives, if any.
    irq: Option<u32>,
    model: Model,
}

/// What `Devices::uart_access` did.
pub struct UartAccess {
    /// A load's value (0 for a store).
    pub value: u64,
    /// The UART's interrupt line changed: the virtual GIC must hear of it before entry.
    pub irq_changed: bool,
    /// The access was to the data register (a store there writes one character).
    pub data: bool,
}

/// Bytes a VM's UARTs transmitted that its console stream has not been given yet: a few
/// lines, so that a line held for room (`line_fits`) and those after it rarely fill it.
const OUTPUT: usize = 512;

/// Per CPU: a VM's output was held back for room on it, so its idle or its next entry of
/// a lowest-priority vCPU hands it over (`take_held`).
static HELD: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];

/// Whether a VM's console line may be handed over now without delaying a vCPU: no physical
/// interrupt pending, and the CPU's next event at least `LINE_ROOM_MICROS` away
/// (`partita_core::sched::has_room`): its next scheduling event, or the tick of a VM that
/// owns its EL1 physical timer, whichever comes first. When not, this CPU's `HELD` flag is
/// set.
fn line_fits() -> bool {
    let room = ticks_from_micros(LINE_ROOM_MICROS, timer::frequency());
    let next = earliest(timer::hyp_deadline(), timer::owned_physical_deadline());
    let fits = !gic::pending() && has_room(timer::now(), next, room);
    if !fits {
        HELD[cpu_index()].store(true, Ordering::Relaxed);
    }
    fits
}

/// Whether a VM's output was held back on this CPU since the last call: the CPU, about to
/// idle or to enter a lowest-priority vCPU, hands its VMs' output over
/// (`Devices::flush_output`).
pub fn take_held() -> bool {
    let held = &HELD[cpu_index()];
    held.load(Ordering::Relaxed) && held.swap(false, Ordering::Relaxed)
}

/// What a VM's UARTs transmitted, on its way to the VM's console stream.
struct Output {
    bytes: [u8; OUTPUT],
    len: usize,
}

impl Output {
    /// Moves what `uart` transmitted into the buffer; a line end or a full buffer hands it
    /// to VM `vm`'s console stream.
    fn drain(&mut self, uart: &mut Pl011, vm: usize) {
        while self.drain_one(uart, vm) {}
    }

    /// Moves the oldest byte `uart` transmitted, if any, into the buffer (a line end or a
    /// full buffer hands it to VM `vm`'s console stream); false when there was none. Every
    /// access drains the UART, and a store queues at most one byte, so after one store this
    /// empties it.
    #[inline]
    fn drain_one(&mut self, uart: &mut Pl011, vm: usize) -> bool {
        let Some(byte) = uart.take_tx() else {
            return false;
        };
        self.push(byte, vm);
        true
    }

    /// Buffers one transmitted byte; a full buffer goes to VM `vm`'s console stream at
    /// once, and a line end hands over the buffered lines that fit (`flush_lines`).
    #[inline]
    fn push(&mut self, byte: u8, vm: usize) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
        if self.len >= OUTPUT {
            self.flush(vm);
        } else if byte == b'\n' {
            self.flush_lines(vm);
        }
    }

    /// Hands the buffered bytes, if any, to VM `vm`'s console stream as far as they fit now
    /// (`flush_lines`).
    #[inline]
    fn flush_if_fits(&mut self, vm: usize) {
        if self.len > 0 {
            self.flush_lines(vm);
        }
    }

    /// Hands the buffered bytes to VM `vm`'s console stream one line at a time, each only
    /// if it fits when its turn comes (`line_fits`): the room is measured for one line's
    /// printing, so lines held back together never go under one look. The last piece goes
    /// too, a line end or not.
    #[inline(never)]
    fn flush_lines(&mut self, vm: usize) {
        while self.len > 0 && line_fits() {
            let Some(bytes) = self.bytes.get(..self.len) else {
                self.len = 0;
                return;
            };
            let end = bytes
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |at| at + 1);
            if let Some(line) = bytes.get(..end) {
                console::vm_output(vm, line);
            }
            self.bytes.copy_within(end..self.len, 0);
            self.len -= end;
        }
    }

    /// Hands the buffered bytes to VM `vm`'s console stream.
    #[inline(never)]
    fn flush(&mut self, vm: usize) {
        if let Some(bytes) = self.bytes.get(..self.len) {
            if !bytes.is_empty() {
                console::vm_output(vm, bytes);
            }
        }
        self.len = 0;
    }
}

/// All emulated devices of one VM.
pub struct Devices {
    devices: Vec<Device>,
    output: Output,
    /// A device's interrupt line may differ from what the virtual GIC last heard
    /// (`take_lines`): set by every access and every received byte, and at the start.
    lines_stale: bool,
    /// Where the console UART (the first PL011) is among `devices`.
    console: Option<usize>,
}

impl Devices {
    /// Fresh models for the configured devices of a VM started for the `boots`-th time.
    pub fn new(config: &[DeviceConfig], boots: u64) -> Self {
        let devices: Vec<Device> = config
            .iter()
            .map(|d| Device {
                window: d.window(),
                irq: d.irq(),
                model: match d {
                    DeviceConfig::Pl011 { .. } => Model::Uart(Pl011::new()),
                    DeviceConfig::TestDev { .. } => Model::Test(TestDevice::new(boots)),
                },
            })
            .collect();
        let console = devices
            .iter()
            .position(|d| matches!(d.model, Model::Uart(_)));
        Devices {
            devices,
            console,
            output: Output {
                bytes: [0; OUTPUT],
                len: 0,
            },
            lines_stale: true,
        }
    }

    /// Hands what VM `vm`'s UARTs transmitted and its console stream has not had yet to it
    /// when it fits now (`line_fits`): at every exit that leaves the short path, every store
    /// the general path makes, every entry and the idle of a CPU that held output back.
    #[inline]
    pub fn flush_output(&mut self, vm: usize) {
        self.output.flush_if_fits(vm);
    }

    /// `flush_output` whatever the room: the VM's boot ends, and its devices with it.
    pub fn flush_output_now(&mut self, vm: usize) {
        if self.output.len > 0 {
            self.output.flush(vm);
        }
    }

    fn at(devices: &mut [Device], ipa: u64) -> Option<(&mut Model, u64)> {
        devices
            .iter_mut()
            .find(|d| d.window.contains(&Region::new(ipa, 1)))
            .map(|d| (&mut d.model, ipa - d.window.base))
    }

    /// Whether a device window contains `ipa`.
    pub fn claims(&self, ipa: u64) -> bool {
        self.devices
            .iter()
            .any(|d| d.window.contains(&Region::new(ipa, 1)))
    }

    /// A guest load of `size` at `ipa`.
    pub fn read(&mut self, ipa: u64, size: AccessSize) -> Result<u64, AccessFault> {
        self.lines_stale = true;
        let (model, offset) = Self::at(&mut self.devices, ipa).ok_or(AccessFault)?;
        model.device().read(offset, size)
    }

    /// A store of `size` at `ipa` by VM `vm`'s guest; the interrupt it asked a test device
    /// to raise (`RAISE`), if it did. What a UART transmitted goes to the VM's console.
    pub fn write(
        &mut self,
        vm: usize,
        ipa: u64,
        size: AccessSize,
        value: u64,
    ) -> Result<Option<u32>, AccessFault> {
        self.lines_stale = true;
        let (model, offset) = Self::at(&mut self.devices, ipa).ok_or(AccessFault)?;
        model.device().write(offset, size, value)?;
        Ok(match model {
            Model::Test(test) => test.take_raise(),
            Model::Uart(uart) => {
                self.output.drain(uart, vm);
                self.output.flush_if_fits(vm);
                None
            }
        })
    }

    /// Whether a device's interrupt line may have changed since the last `take_lines` (an
    /// access or a received byte since): the entry's device-line update costs one test when
    /// nothing happened.
    #[inline]
    pub fn lines_stale(&self) -> bool {
        self.lines_stale
    }

    /// Nothing left to do for a vCPU about to wait: no line may have changed since the last
    /// visit, and no transmitted byte waits for its console (`ShortExit::quiet`).
    #[inline(always)]
    pub fn quiet(&self) -> bool {
        !self.lines_stale && self.output.len == 0
    }

    /// The interrupt lines of the devices that have one, and whether each is asserted; the
    /// lines are no longer stale.
    pub fn take_lines(&mut self) -> impl Iterator<Item = (u32, bool)> + '_ {
        self.lines_stale = false;
        self.devices.iter().filter_map(|d| {
            let level = match &d.model {
                Model::Uart(uart) => uart.irq_pending(),
                Model::Test(_) => false,
            };
            d.irq.map(|irq| (irq, level))
        })
    }

    /// Whether the VM has a console UART (its first PL011), which receives console input.
    #[inline]
    pub fn has_console(&self) -> bool {
        self.console.is_some()
    }

    /// Console input `byte` for the VM's console UART; false when it has no room (or the VM
    /// no console UART).
    pub fn receive(&mut self, byte: u8) -> bool {
        self.lines_stale = true;
        let slot = self.console.and_then(|slot| self.devices.get_mut(slot));
        match slot.map(|d| &mut d.model) {
            Some(Model::Uart(uart)) => uart.receive(byte),
            _ => false,
        }
    }

    /// Where the VM's console UART (its first PL011) is among its devices: found once per
    /// entry of a vCPU for `uart_access`.
    #[inline]
    pub fn console_slot(&self) -> Option<usize> {
        self.console
    }

    /// An access by VM `vm`'s guest at `ipa` (`write` carries a store's value) to the UART
    /// at `slot` (`console_slot`), done completely: the model's answer, what it transmitted
    /// buffered for the console, and whether its interrupt line changed. `None` when `ipa`
    /// is outside that UART's window or the model refuses the access (which changes nothing:
    /// the general path then injects the abort). The short exit's device step: no scan.
    #[inline(always)]
    pub fn uart_access(
        &mut self,
        slot: usize,
        vm: usize,
        ipa: u64,
        size: AccessSize,
        write: Option<u64>,
    ) -> Option<UartAccess> {
        let device = self.devices.get_mut(slot)?;
        let offset = ipa.wrapping_sub(device.window.base);
        let Model::Uart(uart) = &mut device.model else {
            return None;
        };
        if offset >= device.window.size {
            return None;
        }
        let line = uart.irq_pending();
        // The commonest access first: a character, stored and drained in one step.
        if offset == pl011::reg::DR && size != AccessSize::Double {
            if let Some(value) = write {
                if let Some(byte) = uart.transmit_and_take(value) {
                    self.output.push(byte, vm);
                }
                let irq_changed = uart.irq_pending() != line;
                self.lines_stale |= irq_changed;
                return Some(UartAccess {
                    value: 0,
                    irq_changed,
                    data: true,
                });
            }
        }
        let value = match write {
            Some(value) => uart.write(offset, size, value).map(|()| 0),
            None => uart.read(offset, size),
        }
        .ok()?;
        self.output.drain_one(uart, vm);
        let irq_changed = uart.irq_pending() != line;
        self.lines_stale |= irq_changed;
        Some(UartAccess {
            value,
            irq_changed,
            data: offset & !3 == pl011::reg::DR,
        })
    }
}
