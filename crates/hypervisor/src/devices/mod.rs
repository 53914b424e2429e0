//! Glue between a VM's guest-physical device windows and the device models of
//! `partita_core::devices`: which model answers an address, and where a UART's output goes.
//!
//! The models stay pure; this module only routes decoded accesses to them and drains what
//! they produce. It must never read guest memory or registers.

use alloc::vec::Vec;

use partita_core::board::Region;
use partita_core::config::DeviceConfig;
use partita_core::devices::pl011::Pl011;
use partita_core::devices::testdev::TestDevice;
use partita_core::devices::{AccessFault, AccessSize, MmioDevice};

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
}

/// Sends what `uart` transmitted (a store to its data register queues one byte) to VM
/// `vm`'s console stream.
fn drain(uart: &mut Pl011, vm: usize) {
    while let Some(byte) = uart.take_tx() {
        console::vm_output(vm, &[byte]);
    }
}

/// All emulated devices of one VM.
pub struct Devices {
    devices: Vec<Device>,
}

impl Devices {
    /// Fresh models for the configured devices of a VM started for the `boots`-th time.
    pub fn new(config: &[DeviceConfig], boots: u64) -> Self {
        let devices = config
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
        Devices { devices }
    }

    fn at(&mut self, ipa: u64) -> Option<(&mut Model, u64)> {
        self.devices
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
        let (model, offset) = self.at(ipa).ok_or(AccessFault)?;
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
        let (model, offset) = self.at(ipa).ok_or(AccessFault)?;
        model.device().write(offset, size, value)?;
        Ok(match model {
            Model::Test(test) => test.take_raise(),
            Model::Uart(uart) => {
                drain(uart, vm);
                None
            }
        })
    }

    /// The interrupt lines of the devices that have one, and whether each is asserted.
    pub fn irq_lines(&self) -> impl Iterator<Item = (u32, bool)> + '_ {
        self.devices.iter().filter_map(|d| {
            let level = match &d.model {
                Model::Uart(uart) => uart.irq_pending(),
                Model::Test(_) => false,
            };
            d.irq.map(|irq| (irq, level))
        })
    }

    /// The VM's console UART (its first PL011), which receives console input.
    pub fn console_uart(&mut self) -> Option<&mut Pl011> {
        self.devices.iter_mut().find_map(|d| match &mut d.model {
            Model::Uart(uart) => Some(uart),
            Model::Test(_) => None,
        })
    }

    /// An access to one of VM `vm`'s UARTs at `ipa` (`write` carries a store's value),
    /// done completely: the model's answer, what it transmitted sent to the console, and
    /// whether its interrupt line changed. `None` when no UART claims `ipa` or the model
    /// refuses the access (which changes nothing: the general path then injects the abort).
    /// The exit fast path's device step: it never scans for anything but the UART.
    pub fn uart_access(
        &mut self,
        vm: usize,
        ipa: u64,
        size: AccessSize,
        write: Option<u64>,
    ) -> Option<UartAccess> {
        let device = self.devices.iter_mut().find(|d| {
            matches!(d.model, Model::Uart(_)) && d.window.contains(&Region::new(ipa, 1))
        })?;
        let offset = ipa - device.window.base;
        let Model::Uart(uart) = &mut device.model else {
            return None;
        };
        let line = uart.irq_pending();
        let value = match write {
            Some(value) => uart.write(offset, size, value).map(|()| 0),
            None => uart.read(offset, size),
        }
        .ok()?;
        drain(uart, vm);
        Some(UartAccess {
            value,
            irq_changed: uart.irq_pending() != line,
        })
    }
}
