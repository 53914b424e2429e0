//! A virtual machine: its memory regions, stage-2 map, emulated devices, console and single
//! vCPU, and its lifecycle: build from the configuration and bundled image, run, stop (clean
//! or fault) and restart after SYSTEM_RESET with clean memory and fresh devices.
//!
//! A `Vm` is owned by the physical CPU that runs it. It must never touch memory outside its
//! own regions; everything it maps comes from the validated configuration.

use alloc::string::String;
use alloc::vec::Vec;

use partita_core::board::Board;
use partita_core::bundle::VmImages;
use partita_core::config::{ResetAction, VmConfig, DTB_SIZE};
use partita_core::fdt::guest_fdt;

use crate::arch::aarch64::gic;
use crate::arch::aarch64::stage2::Stage2Map;
use crate::arch::aarch64::sysreg::read_sysreg;
use crate::console::VmConsole;
use crate::devices::Devices;
use crate::input;
use crate::memory::GuestMemory;
use crate::println;
use crate::seed;
use crate::system::{Stop, System};
use crate::trap::{self, Outcome};
use crate::vcpu::Vcpu;
use crate::vgic::VirtualGic;

/// Why the vCPU stopped running: the events that end `run_until_event`.
enum Ending {
    Reset,
    Stop(Stop),
}

pub struct Vm {
    name: String,
    /// Index in the configuration, and the physical CPU that runs the VM.
    index: usize,
    cpu: u8,
    config: &'static VmConfig,
    board: &'static Board,
    images: VmImages<'static>,
    memory: Vec<GuestMemory>,
    stage2: Stage2Map,
    pub devices: Devices,
    pub vgic: VirtualGic,
    console: VmConsole,
    boots: u64,
    /// CNTVOFF_EL2: the physical count when the VM was first built, so its virtual counter
    /// starts near 0 and keeps counting across restarts.
    counter_offset: u64,
    pub vcpu: Vcpu,
}

impl Vm {
    /// Builds VM `index` of the bundled configuration and loads it for its first boot.
    pub fn build(system: &'static System, index: usize) -> Vm {
        let config = &system.bundle.config.vms[index];
        let Some(images) = system.bundle.images(index) else {
            panic!("the bundle has no image for vm {}", config.name);
        };
        let memory: Vec<GuestMemory> = config
            .memory
            .iter()
            .map(|m| match GuestMemory::from_config(m) {
                Some(m) => m,
                None => panic!("vm {}: memory without a physical region", config.name),
            })
            .collect();
        let vmid = u8::try_from(index + 1).unwrap_or_else(|_| panic!("too many VMs for VMIDs"));
        let mut stage2 = Stage2Map::new(vmid);
        for m in &memory {
            if let Err(e) = stage2.map_ram(m.guest.base, m.phys, m.guest.size) {
                panic!("vm {}: stage-2 map failed: {e:?}", config.name);
            }
        }
        let board = system.bundle.config.board.platform.board();
        let mut vm = Vm {
            name: config.name.clone(),
            index,
            cpu: config.cpus.first().copied().unwrap_or(0),
            config,
            board,
            images,
            memory,
            stage2,
            devices: Devices::new(&config.devices, 1),
            vgic: VirtualGic::new(board),
            console: VmConsole::new(&config.name),
            boots: 1,
            counter_offset: read_sysreg!("cntpct_el0"),
            vcpu: Vcpu::new(0, 0),
        };
        vm.load();
        vm
    }

    /// Clears memory, copies the image and device tree in, and resets devices and the vCPU.
    fn load(&mut self) {
        let load = self.config.load_address().unwrap_or(0);
        let seed = seed::for_vm(self.index, self.boots);
        let fdt = match guest_fdt(self.config, self.board, &seed) {
            Ok(fdt) if fdt.len() as u64 <= DTB_SIZE => fdt,
            Ok(fdt) => panic!("vm {}: device tree of {} bytes", self.name, fdt.len()),
            Err(e) => panic!("vm {}: device tree: {e}", self.name),
        };
        let dtb = self.config.dtb_address().unwrap_or(0);
        for m in &mut self.memory {
            m.clear();
        }
        let initrd = match (self.config.initrd_region(), self.images.initrd) {
            (Some(region), Some(bytes)) => self.copy_in(region.base, bytes),
            (None, None) => true,
            _ => false,
        };
        if !initrd || !self.copy_in(load, self.images.image) || !self.copy_in(dtb, &fdt) {
            panic!(
                "vm {}: image, initrd or device tree outside its memory",
                self.name
            );
        }
        for m in &self.memory {
            m.clean_to_poc();
        }
        self.devices = Devices::new(&self.config.devices, self.boots);
        self.vgic = VirtualGic::new(self.board);
        // A forwarded timer interrupt the previous boot never deactivated would stay active.
        gic::clear_active_ppi(self.board, self.board.timer_virt_irq);
        self.vcpu = Vcpu::new(load, dtb);
    }

    pub fn board(&self) -> &'static Board {
        self.board
    }

    /// The physical CPU that runs this VM.
    pub fn cpu(&self) -> u8 {
        self.cpu
    }

    /// Moves console input into the VM's UART and drives the devices' interrupt lines.
    pub fn update_interrupt_lines(&mut self) {
        if let Some(uart) = self.devices.console_uart() {
            input::take(self.index, |byte| uart.receive(byte));
        }
        for (irq, level) in self.devices.irq_lines() {
            // Validation keeps device interrupts among the board's SPIs.
            let _ = self.vgic.set_level(irq, level);
        }
    }

    fn copy_in(&mut self, ipa: u64, bytes: &[u8]) -> bool {
        self.memory
            .iter_mut()
            .any(|m| m.contains(ipa, bytes.len() as u64) && m.copy_in(ipa, bytes))
    }

    /// Whether `len` bytes at guest-physical `ipa` are inside the VM's RAM.
    pub fn is_ram(&self, ipa: u64, len: u64) -> bool {
        self.memory.iter().any(|m| m.contains(ipa, len))
    }

    /// Runs the VM on this CPU until it stops for good.
    pub fn run(&mut self) -> Stop {
        println!("vm {}: starting (boot {})", self.name, self.boots);
        loop {
            self.stage2.activate();
            self.vcpu.load(self.counter_offset);
            let ending = self.run_until_event();
            self.vgic.unload();
            self.vcpu.unload();
            self.console.flush_partial();
            match ending {
                Ending::Reset if self.config.on_reset == ResetAction::Fault => {
                    println!(
                        "vm {}: reset requested; stopped (on_reset = \"fault\")",
                        self.name
                    );
                    return Stop::Fault;
                }
                Ending::Reset => self.restart(),
                Ending::Stop(Stop::Clean) => {
                    println!("vm {}: powered off", self.name);
                    return Stop::Clean;
                }
                Ending::Stop(Stop::Fault) => return Stop::Fault,
            }
        }
    }

    fn run_until_event(&mut self) -> Ending {
        loop {
            self.update_interrupt_lines();
            self.vgic.before_entry();
            let exit = self.vcpu.run();
            let outcome = trap::handle(self, exit);
            self.devices.drain_uarts(&mut self.console);
            match outcome {
                Outcome::Resume => {}
                Outcome::Reset => return Ending::Reset,
                Outcome::Stop(how) => return Ending::Stop(how),
            }
        }
    }

    /// SYSTEM_RESET: the same VM from scratch, with the boot count one higher.
    fn restart(&mut self) {
        self.boots += 1;
        println!("vm {}: reset (boot {})", self.name, self.boots);
        self.load();
    }

    /// Stops the VM because of a guest fault Partita cannot reflect back into it.
    pub fn fault(&self, reason: core::fmt::Arguments) -> Outcome {
        println!("vm {}: fault: {reason}; stopped", self.name);
        Outcome::Stop(Stop::Fault)
    }
}
