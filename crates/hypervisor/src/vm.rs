//! A virtual machine: its memory regions, stage-2 map, emulated devices, console and single
//! vCPU, and its lifecycle: build from the configuration and bundled image, switch its vCPU
//! on and off the CPU, and end a boot (SYSTEM_RESET, power-off or fault) by stopping for good
//! or restarting with clean memory, fresh devices, a fresh virtual GIC and vCPU, as its
//! configured policy (`on_reset`, `on_poweroff`, `on_fault`) says. A restart allocates what
//! it frees, nothing more: the heap in use is printed each time the VM starts so tests can
//! check it. When it runs is the CPU scheduler's decision, not the VM's.
//!
//! A `Vm` is owned by the physical CPU that runs it. It must never touch memory outside its
//! own regions; everything it maps comes from the validated configuration.

use alloc::string::String;
use alloc::vec::Vec;

use aarch64_cpu::registers::{Readable, ESR_EL2, FAR_EL2, HPFAR_EL2};

use partita_core::board::Board;
use partita_core::bundle::VmImages;
use partita_core::config::{Access, EndAction, ResetAction, TimerMode, VmConfig};
use partita_core::fdt::GuestFdt;
use partita_core::trap::{device_access, fault_ipa};

use crate::arch::aarch64::gic;
use crate::arch::aarch64::stage2::Stage2Map;
use crate::arch::aarch64::sysreg::read_sysreg;
use crate::arch::aarch64::timer;
use crate::arch::aarch64::vectors::Exit;
use crate::console;
use crate::counters;
use crate::devices::Devices;
use crate::heap;
use crate::input;
use crate::ivc;
use crate::memory::{self, GuestMemory};
use crate::println;
use crate::seed;
use crate::system::{Stop, System};
use crate::trap::{self, Outcome};
use crate::vcpu::{PhysicalTimer, Vcpu};
use crate::vgic::VirtualGic;

pub struct Vm {
    name: String,
    /// Index in the configuration.
    index: usize,
    config: &'static VmConfig,
    board: &'static Board,
    images: VmImages<'static>,
    memory: Vec<GuestMemory>,
    stage2: Stage2Map,
    pub devices: Devices,
    pub vgic: VirtualGic,
    boots: u64,
    /// CNTVOFF_EL2: the physical count when the VM was first built, so its virtual counter
    /// starts near 0 and keeps counting across restarts.
    counter_offset: u64,
    /// What the vCPU may do with the EL1 physical timer, from the configuration.
    physical_timer: PhysicalTimer,
    /// Physical interrupts the VM owns besides its virtual timer (a passed-through timer's
    /// PPI, its destination-table SPIs), forwarded with the list register's HW bit.
    forwarded: Vec<u32>,
    /// The physical virtual-timer PPI was active (forwarded, not yet deactivated by the
    /// guest) when the vCPU left the CPU; it is made active again when it comes back.
    timer_ppi_active: bool,
    pub vcpu: Vcpu,
    /// The rebuild in progress, if the VM is being (re)built.
    rebuild: Option<Rebuild>,
    /// The VM's device tree, written once; each boot stamps its own seed into a copy.
    fdt: GuestFdt,
    /// Per channel it is a member of: the channel id and the doorbell INTID it receives.
    doorbells: Vec<(usize, u32)>,
    /// Its last accepted doorbell ring per channel id (the rate rule), kept across boots.
    last_rings: Vec<Option<u64>>,
}

/// How a boot of a VM ended; each has its own policy in the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootEnd {
    /// PSCI SYSTEM_RESET (`on_reset`).
    Reset,
    /// PSCI SYSTEM_OFF or CPU_OFF of its only vCPU (`on_poweroff`).
    PowerOff,
    /// A fault Partita cannot reflect back into the guest (`on_fault`), already reported.
    Fault,
}

/// Bytes of guest memory rebuilt at a time: about 5 us of emulated time (zeroing with
/// DC ZVA and cleaning by line), the most a restarting VM delays a higher-priority one.
const REBUILD_PIECE: u64 = 0x1_0000;
/// Bytes rebuilt at a time where an image, initrd or device tree is copied in: copying costs
/// about half an instruction a byte against DC ZVA's few per cache block, so a 64 KiB piece
/// of image took about 40 us; 8 KiB keeps such a piece near the same 5 us.
const COPY_PIECE: u64 = 0x2000;

/// Where a VM's rebuild stands, and its freshly generated device tree.
struct Rebuild {
    fdt: Vec<u8>,
    region: usize,
    offset: u64,
}

impl Rebuild {
    /// What goes into the VM's memory: the initrd (empty without one), the image and the
    /// device tree, each at its guest-physical address.
    fn blobs<'a>(&'a self, config: &VmConfig, images: &VmImages<'a>) -> [(u64, &'a [u8]); 3] {
        let initrd = match (config.initrd_region(), images.initrd) {
            (Some(region), Some(bytes)) => (region.base, bytes),
            _ => (0, &[][..]),
        };
        [
            initrd,
            (config.load_address().unwrap_or(0), images.image),
            (config.dtb_address().unwrap_or(0), &self.fdt[..]),
        ]
    }
}

impl Vm {
    /// Builds VM `index` of the bundled configuration, loads it for its first boot and
    /// enables the physical interrupts it owns on this CPU. `physical_timer` says what it
    /// may do with this CPU's EL1 physical timer.
    pub fn build(system: &'static System, index: usize, physical_timer: PhysicalTimer) -> Vm {
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
        let channels = system.bundle.config.channels_of(&config.name);
        for c in &channels {
            let Some(phys) = c.phys else {
                panic!(
                    "vm {}: channel {} has no physical memory",
                    config.name, c.name
                );
            };
            let read_only = c.access == Access::ReadOnly;
            if let Err(e) = stage2.map_channel(c.window.base, phys, c.window.size, read_only) {
                panic!(
                    "vm {}: stage-2 map of channel {} failed: {e:?}",
                    config.name, c.name
                );
            }
        }
        let board = system.bundle.config.board.platform.board();
        VirtualGic::map_cpu_interface(board, &mut stage2);
        let mut forwarded = config.irqs.clone();
        if config.timer == TimerMode::Physical {
            forwarded.push(board.timer_phys_irq);
        }
        let mut vm = Vm {
            name: config.name.clone(),
            index,
            config,
            board,
            images,
            memory,
            stage2,
            devices: Devices::new(&config.devices, 1),
            vgic: VirtualGic::new(board, &forwarded),
            boots: 1,
            counter_offset: read_sysreg!("cntpct_el0"),
            physical_timer,
            forwarded,
            timer_ppi_active: false,
            vcpu: Vcpu::new(0, 0, physical_timer),
            rebuild: None,
            fdt: GuestFdt::new(config, &channels, board)
                .unwrap_or_else(|e| panic!("vm {}: device tree: {e}", config.name)),
            doorbells: channels.iter().map(|c| (c.id, c.irq)).collect(),
            last_rings: alloc::vec![None; ivc::channel_count()],
        };
        vm.load();
        for &intid in &vm.forwarded {
            gic::enable(board, intid);
        }
        vm
    }

    /// Builds the VM's memory for a boot in one go (before any VM of the CPU runs).
    fn load(&mut self) {
        self.begin_load();
        while !self.rebuild_step() {}
    }

    /// Starts rebuilding the VM for a boot: its memory is cleared and the image, initrd and
    /// device tree copied in a piece at a time by `rebuild_step`.
    fn begin_load(&mut self) {
        let seed = seed::for_vm(self.index, self.boots);
        let rebuild = Rebuild {
            fdt: self.fdt.with_seed(&seed),
            region: 0,
            offset: 0,
        };
        let fits = rebuild
            .blobs(self.config, &self.images)
            .iter()
            .all(|&(at, bytes)| bytes.is_empty() || self.is_ram(at, bytes.len() as u64));
        if !fits {
            panic!(
                "vm {}: image, initrd or device tree outside its memory",
                self.name
            );
        }
        self.rebuild = Some(rebuild);
    }

    /// Whether the VM's memory is being rebuilt (it cannot run yet).
    pub fn rebuilding(&self) -> bool {
        self.rebuild.is_some()
    }

    /// Rebuilds the next piece of the VM's memory; true when the VM is ready to start (its
    /// devices, virtual GIC and vCPU are then fresh too).
    pub fn rebuild_step(&mut self) -> bool {
        let Some(rebuild) = self.rebuild.as_mut() else {
            return true;
        };
        if let Some(m) = self.memory.get_mut(rebuild.region) {
            let blobs = rebuild.blobs(self.config, &self.images);
            let at = m.guest.base + rebuild.offset;
            let copies = blobs.iter().any(|&(blob, bytes)| {
                !bytes.is_empty() && blob < at + REBUILD_PIECE && at < blob + bytes.len() as u64
            });
            let piece = if copies { COPY_PIECE } else { REBUILD_PIECE };
            m.rebuild(at, piece, &blobs);
            rebuild.offset += piece;
            if rebuild.offset >= m.guest.size {
                rebuild.region += 1;
                rebuild.offset = 0;
            }
            return false;
        }
        self.rebuild = None;
        memory::sync_instruction_cache();
        self.devices = Devices::new(&self.config.devices, self.boots);
        self.vgic = VirtualGic::new(self.board, &self.forwarded);
        self.release_interrupts();
        self.timer_ppi_active = false;
        self.stage2.forget_translations();
        let load = self.config.load_address().unwrap_or(0);
        let dtb = self.config.dtb_address().unwrap_or(0);
        self.vcpu = Vcpu::new(load, dtb, self.physical_timer);
        if self.boots > 1 {
            self.announce_start();
        }
        true
    }

    /// Ends what the previous boot left behind on the physical interrupts the VM owns: an
    /// interrupt it never deactivated, a passed-through timer still counting down.
    fn release_interrupts(&self) {
        for &intid in &self.forwarded {
            gic::clear_active(self.board, intid);
        }
        if self.physical_timer == PhysicalTimer::Owned {
            timer::stop_physical();
        }
    }

    /// The VM's index in the configuration.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its scheduling priority (higher runs first).
    pub fn priority(&self) -> u8 {
        self.config.priority
    }

    /// Raises physical SPI `intid`, which the guest asked its test device for, if it is in
    /// the VM's destination table; any other request is dropped.
    pub fn raise_owned_spi(&self, intid: u32) {
        if intid >= gic::PRIVATE_IRQS && self.config.irqs.contains(&intid) {
            gic::set_spi_pending(self.board, intid);
        }
    }

    /// The VM rings `channel` (PARTITA_IVC_RING): the outcome, and whether a peer on this
    /// CPU must be given its doorbell now.
    pub fn ring(&mut self, channel: u64) -> (partita_core::hypercall::Ring, bool) {
        let cpu = self.config.cpus.first().copied().unwrap_or(0);
        ivc::ring(self.index, cpu, channel, &mut self.last_rings)
    }

    /// Raises the doorbells rung for the VM (bit `c`: channel `c`) in its virtual GIC; true
    /// when one was raised.
    pub fn receive_doorbells(&mut self, rung: u64) -> bool {
        let mut raised = false;
        for &(channel, irq) in &self.doorbells {
            if rung & (1 << channel) != 0 {
                self.vgic.inject(irq);
                counters::injected(self.index);
                raised = true;
            }
        }
        raised
    }

    /// The physical interrupts forwarded to it besides its virtual timer.
    pub fn forwarded(&self) -> &[u32] {
        &self.forwarded
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

    /// Whether `len` bytes at guest-physical `ipa` are inside the VM's RAM.
    pub fn is_ram(&self, ipa: u64, len: u64) -> bool {
        self.memory.iter().any(|m| m.contains(ipa, len))
    }

    /// The VM starts a boot: with the heap in use then, which is the same at the start of
    /// every boot when restarts leak nothing.
    pub fn announce_start(&self) {
        println!(
            "vm {}: starting (boot {}, heap {} B)",
            self.name,
            self.boots,
            heap::in_use()
        );
    }

    /// Puts the vCPU on this CPU: stage 2, EL1 context, virtual CPU interface. A virtual timer
    /// that expired while it was away is injected at once, its physical PPI made active as
    /// if it had been forwarded, so the guest takes it on entry without another exit.
    pub fn switch_in(&mut self) {
        self.stage2.activate();
        self.vcpu.load(self.counter_offset);
        let ppi = self.board.timer_virt_irq;
        if self.timer_ppi_active {
            gic::set_active_ppi(self.board, ppi);
        } else if timer::virtual_firing() {
            self.vgic.inject(ppi);
            counters::injected(self.index);
            gic::set_active_ppi(self.board, ppi);
        }
    }

    /// Takes the vCPU off this CPU, keeping its list registers in the model, and lends the
    /// physical virtual-timer PPI to the next vCPU (its active state is kept here).
    pub fn switch_out(&mut self) {
        self.vgic.unload();
        self.vcpu.unload();
        let ppi = self.board.timer_virt_irq;
        self.timer_ppi_active = gic::ppi_active(self.board, ppi);
        if self.timer_ppi_active {
            gic::clear_active(self.board, ppi);
        }
    }

    /// Enters the loaded vCPU until an exit the scheduler must see: an access to one of
    /// its UARTs (a console character, a flag poll) is finished here and the vCPU goes
    /// straight back (`uart_fast_path`).
    pub fn enter(&mut self) -> Exit {
        self.update_interrupt_lines();
        self.vgic.before_entry();
        counters::entering(self.index);
        loop {
            let exit = self.vcpu.run();
            counters::exited(self.index);
            if exit != Exit::Synchronous || !self.uart_fast_path() {
                return exit;
            }
            counters::device_reentry(self.index);
        }
    }

    /// The common exit, short: a load or store the syndrome describes, to a UART of this
    /// VM, that the model accepts. It does what the general path (`trap::handle`) would do
    /// for it and skips what it can prove unneeded: no other device or the virtual GIC
    /// claims a UART's window, and unless the UART's interrupt line changed, nothing the
    /// scheduler or the virtual GIC decides depends on it. A physical interrupt that
    /// arrived meanwhile is taken as soon as the guest runs again. False (nothing done)
    /// for any other exit.
    fn uart_fast_path(&mut self) -> bool {
        let Some(access) = device_access(ESR_EL2.get()) else {
            return false;
        };
        let ipa = fault_ipa(HPFAR_EL2.get(), FAR_EL2.get());
        let mmio = access.access;
        let store = access
            .write
            .then(|| self.vcpu.reg(mmio.register) & mmio.size.mask());
        let Some(done) = self.devices.uart_access(self.index, ipa, mmio.size, store) else {
            return false;
        };
        if !access.write {
            self.vcpu
                .set_reg(mmio.register, mmio.load_value(done.value));
        }
        self.vcpu.regs.elr = self.vcpu.regs.elr.wrapping_add(access.instruction_len);
        if done.irq_changed {
            self.update_interrupt_lines();
            self.vgic.before_entry();
        }
        true
    }

    /// Handles one exit of the loaded vCPU.
    pub fn handle(&mut self, exit: Exit) -> Outcome {
        trap::handle(self, exit)
    }

    /// The loaded vCPU's virtual-timer deadline in physical ticks, if its timer is armed.
    pub fn timer_deadline(&self) -> Option<u64> {
        timer::virtual_deadline(self.counter_offset)
    }

    /// The switched-out VM's boot ended as `end`: its rebuild begins (the scheduler runs it
    /// piece by piece and it restarts with the boot count one higher; `None`), or it stops
    /// for good, as its policy for that ending says.
    pub fn end_boot(&mut self, end: BootEnd) -> Option<Stop> {
        console::finish_vm_line(self.index);
        match end {
            BootEnd::Reset if self.config.on_reset == ResetAction::Fault => {
                println!(
                    "vm {}: reset requested; stopped (on_reset = \"fault\")",
                    self.name
                );
                return Some(Stop::Fault);
            }
            BootEnd::Reset => println!("vm {}: reset (boot {})", self.name, self.boots + 1),
            BootEnd::PowerOff if self.config.on_poweroff == EndAction::Stop => {
                return Some(Stop::Clean)
            }
            BootEnd::PowerOff => println!(
                "vm {}: powered off; restarting (boot {})",
                self.name,
                self.boots + 1
            ),
            BootEnd::Fault if self.config.on_fault == EndAction::Stop => return Some(Stop::Fault),
            BootEnd::Fault => {}
        }
        self.boots += 1;
        self.begin_load();
        None
    }

    /// The switched-out VM stops for good: its last output is printed and the physical
    /// interrupts it owned are disabled.
    pub fn stop(&mut self, how: Stop) {
        console::finish_vm_line(self.index);
        counters::print(self.index, &self.name);
        if how == Stop::Clean {
            println!("vm {}: powered off", self.name);
        }
        for &intid in &self.forwarded {
            gic::disable(self.board, intid);
        }
        self.release_interrupts();
    }

    /// Ends the VM's boot because of a guest fault Partita cannot reflect back into it; the
    /// console line says what `on_fault` makes of it.
    pub fn fault(&self, reason: core::fmt::Arguments) -> Outcome {
        match self.config.on_fault {
            EndAction::Stop => println!("vm {}: fault: {reason}; stopped", self.name),
            EndAction::Restart => println!(
                "vm {}: fault: {reason}; restarting (boot {})",
                self.name,
                self.boots + 1
            ),
        }
        Outcome::Stop(Stop::Fault)
    }
}
