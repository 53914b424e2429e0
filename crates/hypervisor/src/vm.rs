//! A virtual machine: what all its vCPUs share (`Shared`: memory map, stage 2, emulated
//! devices and virtual GIC under one lock, the vCPUs' PSCI power states) and, per physical
//! CPU, the one vCPU of it placed there (`Vm`): registers, list registers, timer state.
//!
//! Its lifecycle: build from the configuration and bundled image, switch a vCPU on and off
//! its CPU, start and stop further vCPUs by PSCI, and end a boot (SYSTEM_RESET, power-off or
//! fault) by stopping for good or restarting with clean memory, fresh devices, a fresh
//! virtual GIC and vCPUs, as its configured policy (`on_reset`, `on_poweroff`, `on_fault`)
//! says. The CPU of vCPU 0 builds and rebuilds the VM; every other vCPU is parked (off)
//! first. A restart allocates what it frees, nothing more: the heap in use is printed each
//! time the VM starts so tests can check it. When a vCPU runs is its CPU scheduler's
//! decision, not the VM's.
//!
//! The lock (`Shared::hw`) is the VM's own: only this VM's vCPUs take it, never across guest
//! execution, so no other VM (the RTOS) ever waits for it. A change one vCPU makes for
//! another is published in atomics and the other's CPU is kicked with `VCPU_KICK_SGI`; a CPU
//! touches only the vCPUs placed on it. A VM must never touch memory outside its own
//! regions; everything it maps comes from the validated configuration.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

use crate::lock::Mutex;

use partita_core::board::{Board, Region};
use partita_core::bundle::VmImages;
use partita_core::config::{Access, EndAction, ResetAction, TimerMode, VmConfig};
use partita_core::fdt::GuestFdt;
use partita_core::hypercall::{ret, PowerState};
use partita_core::sched::ticks_from_nanos;
use partita_core::trap::MmioAccess;
use partita_core::vgic::{IntidSet, Vgic};

use crate::arch::aarch64::entry::MAX_CPUS;
use crate::arch::aarch64::gic;
use crate::arch::aarch64::stage2::Stage2Map;
use crate::arch::aarch64::sysreg::read_sysreg;
use crate::arch::aarch64::timer;
use crate::arch::aarch64::vectors::{Exit, GuestRegs};
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
use crate::vgic::{self, VirtualGic};

/// The SGI that tells a CPU that one of its vCPUs has news: interrupts from another vCPU,
/// a CPU_ON, or the end of its VM's boot.
pub const VCPU_KICK_SGI: u32 = 2;

/// How a boot of a VM ended; each has its own policy in the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootEnd {
    /// PSCI SYSTEM_RESET (`on_reset`).
    Reset,
    /// PSCI SYSTEM_OFF or CPU_OFF of its last vCPU on (`on_poweroff`).
    PowerOff,
    /// A fault Partita cannot reflect back into the guest (`on_fault`), already reported.
    Fault,
}

impl BootEnd {
    const NONE: u8 = 0;

    fn code(self) -> u8 {
        match self {
            BootEnd::Reset => 1,
            BootEnd::PowerOff => 2,
            BootEnd::Fault => 3,
        }
    }

    fn from_code(code: u8) -> Option<BootEnd> {
        match code {
            1 => Some(BootEnd::Reset),
            2 => Some(BootEnd::PowerOff),
            3 => Some(BootEnd::Fault),
            _ => None,
        }
    }
}

/// The devices and virtual GIC of a VM: what its vCPUs emulate, under its lock.
pub struct Hardware {
    pub devices: Devices,
    pub vgic: Vgic,
    /// Its last accepted doorbell ring per channel id (the rate rule), kept across boots.
    last_rings: Vec<Option<u64>>,
}

/// One vCPU as the whole VM sees it.
struct VcpuControl {
    /// The physical CPU it is placed on (`cpus[i]` of the configuration).
    home: u8,
    /// The physical CPU that holds it now: its home, or another CPU of its VM while it is
    /// migrated away (`migrate`).
    cpu: AtomicU8,
    /// Its home CPU idles: a migrated vCPU goes back.
    return_home: AtomicBool,
    /// Its `PowerState` (as `power_code`).
    power: AtomicU8,
    /// CPU_ON's entry point and context id, valid once `power` is OnPending.
    entry: AtomicU64,
    context: AtomicU64,
    /// Its CPU has news to look at (`Vm::take_kick`).
    kicked: AtomicBool,
}

/// `PowerState` in an atomic; `CLAIMED` is a CPU_ON writing the entry point.
const OFF: u8 = 0;
const ON_PENDING: u8 = 1;
const ON: u8 = 2;
const CLAIMED: u8 = 3;

fn power_state(code: u8) -> PowerState {
    match code {
        ON => PowerState::On,
        ON_PENDING | CLAIMED => PowerState::OnPending,
        _ => PowerState::Off,
    }
}

/// What all vCPUs of a VM share.
pub struct Shared {
    name: String,
    /// Index in the configuration.
    index: usize,
    config: &'static VmConfig,
    board: &'static Board,
    /// Its RAM, guest-physical.
    ram: Vec<Region>,
    stage2: Stage2Map,
    /// CNTVOFF_EL2: the physical count when the VM was first built, so its virtual counter
    /// starts near 0 and keeps counting across restarts.
    counter_offset: u64,
    /// Its `timer_advance_ns` in counter ticks: how long before its virtual timer's deadline
    /// a blocked vCPU of it takes its CPU back (0: at the deadline).
    timer_advance: u64,
    /// Physical interrupts the VM owns besides its virtual timer (a passed-through timer's
    /// PPI, its destination-table SPIs), forwarded with the list register's HW bit.
    forwarded: Vec<u32>,
    /// The same as a set, for the short exit's one-lookup test (`owns`).
    owned: IntidSet,
    /// Per channel it is a member of: the channel id and the doorbell INTID it receives.
    doorbells: Vec<(usize, u32)>,
    boots: AtomicU64,
    /// Per vCPU; each `VmState` holds its own as well (`VmState::control`).
    vcpus: Vec<Arc<VcpuControl>>,
    /// `BootEnd::code` of the boot end in progress, or `BootEnd::NONE`.
    ending: AtomicU8,
    /// The VM stopped for good: the CPUs of its other vCPUs drop them.
    retired: AtomicBool,
    /// Per physical CPU: the vCPU of this VM that last ran there (`NONE_RAN` before any).
    last_ran: [AtomicU8; MAX_CPUS],
    /// vCPU moves to another CPU (`migrate`), printed when the VM stops.
    migrations: AtomicU64,
    /// Its flag that says console input waits (`input::waiting_flag`).
    input_waiting: Option<&'static AtomicBool>,
    hw: Mutex<Hardware>,
}

/// `Shared::last_ran` of a CPU where no vCPU of the VM has run.
const NONE_RAN: u8 = u8::MAX;

impl Shared {
    /// Its index in the configuration.
    pub fn index(&self) -> usize {
        self.index
    }

    pub fn board(&self) -> &'static Board {
        self.board
    }

    /// Its timer advance in counter ticks (`timer_advance_ns`; 0: none).
    #[inline]
    pub fn timer_advance(&self) -> u64 {
        self.timer_advance
    }

    /// Whether physical interrupt `intid` is forwarded to the VM (its virtual timer's PPI
    /// aside): one bit lookup.
    #[inline]
    pub fn owns(&self, intid: u32) -> bool {
        self.owned.contains(intid)
    }

    /// Its devices and virtual GIC, locked.
    pub fn hardware(&self) -> crate::lock::MutexGuard<'_, Hardware> {
        self.hw.lock()
    }

    /// Its devices and virtual GIC, locked if the lock is free at once.
    #[inline(always)]
    pub fn try_hardware(&self) -> Option<crate::lock::MutexGuard<'_, Hardware>> {
        self.hw.try_lock()
    }

    /// Tells vCPU `vcpu`'s CPU to look at it.
    fn kick(&self, vcpu: usize) {
        if let Some(v) = self.vcpus.get(vcpu) {
            v.kicked.store(true, Ordering::Release);
            gic::send_sgi(VCPU_KICK_SGI as u8, v.cpu.load(Ordering::Acquire));
        }
    }

    /// Kicks the vCPUs other than `me` whose interrupts the model changed. Inlined: the
    /// common case (none) is a load, a store and a test on every injection's path.
    #[inline]
    pub fn kick_touched(&self, model: &mut Vgic, me: usize) {
        let touched = model.take_touched() & !(1 << me);
        if touched != 0 {
            self.kick_each(touched);
        }
    }

    /// Kicks the vCPUs of `touched` (bit n: vCPU n). Only the set bits are visited, so the
    /// cost follows the vCPUs kicked, not the number of vCPUs.
    #[inline(never)]
    fn kick_each(&self, mut touched: u64) {
        while touched != 0 {
            self.kick(touched.trailing_zeros() as usize);
            touched &= touched - 1;
        }
    }

    /// vCPU `vcpu`, migrated away, is to come back to its home CPU (which idles).
    pub fn request_return(&self, vcpu: usize) {
        if let Some(v) = self.vcpus.get(vcpu) {
            v.return_home.store(true, Ordering::Release);
        }
        self.kick(vcpu);
    }

    fn power(&self, vcpu: usize) -> PowerState {
        self.vcpus.get(vcpu).map_or(PowerState::Off, |v| {
            power_state(v.power.load(Ordering::Acquire))
        })
    }

    fn set_power(&self, vcpu: usize, code: u8) {
        if let Some(v) = self.vcpus.get(vcpu) {
            v.power.store(code, Ordering::Release);
        }
    }

    fn ending(&self) -> Option<BootEnd> {
        BootEnd::from_code(self.ending.load(Ordering::Acquire))
    }
}

/// What the CPU of vCPU 0 keeps to rebuild the VM.
struct Builder {
    images: VmImages<'static>,
    memory: Vec<GuestMemory>,
    /// The VM's device tree, written once; each boot stamps its own seed into a copy.
    fdt: GuestFdt,
    /// The rebuild in progress, if the VM is being (re)built.
    rebuild: Option<Rebuild>,
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

/// One vCPU of a VM, as the physical CPU it is placed on holds it: its register file, which
/// the world switch moves, and the rest (`VmState`), apart, so that the short exit works on
/// the rest while the world switch holds the registers (`split`). Everything but the
/// registers is `VmState`'s, reached through `Deref`.
pub struct Vm {
    /// Its general registers and ELR/SPSR.
    pub regs: GuestRegs,
    state: VmState,
}

impl core::ops::Deref for Vm {
    type Target = VmState;
    fn deref(&self) -> &VmState {
        &self.state
    }
}

impl core::ops::DerefMut for Vm {
    fn deref_mut(&mut self) -> &mut VmState {
        &mut self.state
    }
}

/// A vCPU of this CPU but for its register file (`Vm`).
pub struct VmState {
    pub(crate) shared: Arc<Shared>,
    /// Its index among the VM's vCPUs.
    pub(crate) vcpu_index: usize,
    /// Its entry of `Shared::vcpus`, at hand: the paths that look at its power state or
    /// kick (a WFI's hand-over among them) load it with no index and no bounds check.
    control: Arc<VcpuControl>,
    /// What the vCPU may do with the EL1 physical timer, from the configuration.
    physical_timer: PhysicalTimer,
    /// The physical virtual-timer PPI was active (forwarded, not yet deactivated by the
    /// guest) when the vCPU left the CPU; it is made active again when it comes back.
    timer_ppi_active: bool,
    vcpu: Vcpu,
    pub(crate) vgic: VirtualGic,
    /// A physical interrupt the short exit acknowledged at the last exit and did not handle
    /// (`take_acknowledged`).
    acknowledged: Option<u32>,
    /// vCPU 0's CPU only: what it needs to rebuild the VM.
    builder: Option<Builder>,
}

impl Vm {
    /// Builds VM `index` of the bundled configuration and its vCPU 0 (on this CPU), loads it
    /// for its first boot and enables the physical interrupts it owns on this CPU.
    /// `physical_timer` says what it may do with this CPU's EL1 physical timer.
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
        crate::fabric::map(index, &mut stage2);
        let board = system.bundle.config.board.platform.board();
        VirtualGic::map_cpu_interface(board, &mut stage2);
        let mut forwarded = config.irqs.clone();
        if config.timer == TimerMode::Physical {
            forwarded.push(board.timer_phys_irq);
        }
        let vcpus = config.cpus.len();
        let shared = Arc::new(Shared {
            name: config.name.clone(),
            index,
            config,
            board,
            ram: memory.iter().map(|m| m.guest).collect(),
            stage2,
            counter_offset: read_sysreg!("cntpct_el0"),
            timer_advance: ticks_from_nanos(config.timer_advance_ns, timer::frequency()),
            doorbells: channels.iter().map(|c| (c.id, c.irq)).collect(),
            boots: AtomicU64::new(1),
            vcpus: config
                .cpus
                .iter()
                .enumerate()
                .map(|(i, &cpu)| {
                    Arc::new(VcpuControl {
                        home: cpu,
                        cpu: AtomicU8::new(cpu),
                        return_home: AtomicBool::new(false),
                        power: AtomicU8::new(if i == 0 { ON } else { OFF }),
                        entry: AtomicU64::new(0),
                        context: AtomicU64::new(0),
                        kicked: AtomicBool::new(false),
                    })
                })
                .collect(),
            ending: AtomicU8::new(BootEnd::NONE),
            retired: AtomicBool::new(false),
            last_ran: [const { AtomicU8::new(NONE_RAN) }; MAX_CPUS],
            migrations: AtomicU64::new(0),
            input_waiting: input::waiting_flag(index),
            hw: Mutex::new(Hardware {
                devices: Devices::new(&config.devices, 1),
                vgic: vgic::model(board, vcpus, &forwarded),
                last_rings: alloc::vec![None; ivc::channel_count()],
            }),
            owned: {
                let mut owned = IntidSet::default();
                for &intid in &forwarded {
                    owned.set(intid, true);
                }
                owned
            },
            forwarded,
        });
        let builder = Builder {
            images,
            memory,
            fdt: GuestFdt::new(
                config,
                &channels,
                &system
                    .bundle
                    .config
                    .accelerators_of(&config.name)
                    .into_iter()
                    .map(|(_, a)| a)
                    .collect::<Vec<_>>(),
                board,
            )
            .unwrap_or_else(|e| panic!("vm {}: device tree: {e}", config.name)),
            rebuild: None,
        };
        let mut vm = Vm::join(shared, 0, physical_timer);
        vm.builder = Some(builder);
        vm.load();
        for &intid in &vm.shared.forwarded {
            gic::enable(board, intid);
        }
        vm
    }

    /// vCPU `vcpu` of the VM `shared` on this CPU; it starts off (only vCPU 0 starts on).
    /// `vcpu` is one of the VM's (its configuration places each vCPU on one CPU).
    pub fn join(shared: Arc<Shared>, vcpu: usize, physical_timer: PhysicalTimer) -> Vm {
        let board = shared.board;
        let vcpus = shared.vcpus.len();
        let control = Arc::clone(&shared.vcpus[vcpu]);
        Vm {
            regs: GuestRegs::at_entry(0, 0),
            state: VmState {
                shared,
                vcpu_index: vcpu,
                control,
                physical_timer,
                timer_ppi_active: false,
                vcpu: Vcpu::new(vcpu, vcpus, physical_timer),
                vgic: VirtualGic::new(board, vcpu, vcpus),
                acknowledged: None,
                builder: None,
            },
        }
    }

    /// Builds the VM's memory for a boot in one go (before any VM of the CPU runs).
    fn load(&mut self) {
        self.begin_load();
        while !self.rebuild_step() {}
    }

    /// Rebuilds the next piece of the VM's memory; true when the VM is ready to start (its
    /// devices, virtual GIC and vCPU 0 are then fresh too, its other vCPUs off).
    pub fn rebuild_step(&mut self) -> bool {
        let shared = self.state.shared.clone();
        let Some(builder) = self.state.builder.as_mut() else {
            return true;
        };
        let Some(rebuild) = builder.rebuild.as_mut() else {
            return true;
        };
        if !crate::fabric::quiet(shared.index) {
            return false;
        }
        if let Some(m) = builder.memory.get_mut(rebuild.region) {
            let blobs = rebuild.blobs(shared.config, &builder.images);
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
            // Under QEMU's -icount round robin a CPU keeps its turn until it exits, yields
            // or arms a timer: building a large VM at EL2 (a Linux of 288 MiB: about 66 ms)
            // would hold every other CPU, an RTOS's too (docs/accelerators.md). A hint, with
            // no effect on hardware.
            crate::lock::yield_cpu();
            return false;
        }
        builder.rebuild = None;
        memory::sync_instruction_cache();
        let boots = shared.boots.load(Ordering::Relaxed);
        {
            let mut hw = shared.hw.lock();
            hw.devices = Devices::new(&shared.config.devices, boots);
            hw.vgic = vgic::model(shared.board, shared.vcpus.len(), &shared.forwarded);
        }
        self.state.release_interrupts();
        self.state.timer_ppi_active = false;
        shared.stage2.forget_translations();
        let load = shared.config.load_address().unwrap_or(0);
        let dtb = shared.config.dtb_address().unwrap_or(0);
        self.state.vcpu = Vcpu::new(0, shared.vcpus.len(), self.state.physical_timer);
        self.regs = GuestRegs::at_entry(load, dtb);
        for vcpu in 1..shared.vcpus.len() {
            shared.set_power(vcpu, OFF);
        }
        shared.set_power(0, ON);
        shared.ending.store(BootEnd::NONE, Ordering::Release);
        if boots > 1 {
            self.state.announce_start();
        }
        true
    }

    /// Where this vCPU goes when a higher-priority VM preempts it on its home CPU: the home
    /// CPU of the next vCPU of its VM, if the VM migrates (`migrate = true`), the vCPU is on
    /// and was running at EL1 (SPSR_EL2.M: the guest's kernel, which may hold a lock its
    /// other vCPUs wait for), and no boot end is in progress. `None`: it stays.
    pub fn migration_target(&self) -> Option<u8> {
        if !self.migrates() {
            return None;
        }
        let at_el1 = self.regs.spsr & 0b1_1100 == 0b0_0100;
        if !at_el1 || !self.is_on() || self.ending() || self.rebuilding() {
            return None;
        }
        let next = (self.vcpu_index + 1) % self.shared.vcpus.len();
        self.shared
            .vcpus
            .get(next)
            .map(|v| v.home)
            .filter(|&cpu| cpu != self.home())
    }

    /// A CPU_ON for this vCPU was accepted: it starts afresh at the entry point with x0 =
    /// the context id; true when it did.
    pub fn start_if_pending(&mut self) -> bool {
        let control = &self.state.control;
        if control.power.load(Ordering::Acquire) != ON_PENDING
            || self.state.shared.ending().is_some()
        {
            return false;
        }
        let entry = control.entry.load(Ordering::Relaxed);
        let context = control.context.load(Ordering::Relaxed);
        let vcpus = self.state.shared.vcpus.len();
        self.state.vcpu = Vcpu::new(self.state.vcpu_index, vcpus, self.state.physical_timer);
        self.regs = GuestRegs::at_entry(entry, context);
        control.power.store(ON, Ordering::Release);
        true
    }

    /// Performs a trapped load or store at `ipa` on the device model or virtual GIC window
    /// that claims it; false when none does or the model refuses it.
    pub fn mmio(&mut self, ipa: u64, access: MmioAccess, write: bool) -> bool {
        let mut guard = self.state.shared.hw.lock();
        let hw = &mut *guard;
        let gic = self.state.vgic.claims(ipa);
        if !gic && !hw.devices.claims(ipa) {
            return false;
        }
        let index = self.state.shared.index;
        let done = if write {
            let value = self.regs.get(access.register) & access.size.mask();
            if gic {
                self.state
                    .vgic
                    .write(&mut hw.vgic, ipa, access.size, value)
                    .is_ok()
            } else {
                match hw.devices.write(index, ipa, access.size, value) {
                    Ok(raise) => {
                        if let Some(intid) = raise {
                            self.state.raise_owned_spi(intid);
                        }
                        counters::device_access();
                        true
                    }
                    Err(_) => false,
                }
            }
        } else {
            let read = if gic {
                self.state.vgic.read(&mut hw.vgic, ipa, access.size)
            } else {
                hw.devices.read(ipa, access.size)
            };
            match read {
                Ok(raw) => {
                    self.regs.set(access.register, access.load_value(raw));
                    if !gic {
                        counters::device_access();
                    }
                    true
                }
                Err(_) => false,
            }
        };
        self.state
            .shared
            .kick_touched(&mut hw.vgic, self.state.vcpu_index);
        done
    }

    /// The vCPU's register file and the rest of it, apart: the world switch holds the
    /// registers while the short exit works on the rest.
    #[inline]
    pub fn split(&mut self) -> (&mut GuestRegs, &mut VmState) {
        (&mut self.regs, &mut self.state)
    }

    /// Handles one exit of the loaded vCPU.
    pub fn handle(&mut self, exit: Exit) -> Outcome {
        trap::handle(self, exit)
    }
}

impl VmState {
    /// The VM all its vCPUs share (for the CPUs of its other vCPUs).
    pub fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// Starts rebuilding the VM for a boot: its memory is cleared and the image, initrd and
    /// device tree copied in a piece at a time by `rebuild_step`.
    fn begin_load(&mut self) {
        let boots = self.shared.boots.load(Ordering::Relaxed);
        let seed = seed::for_vm(self.shared.index, boots);
        let shared = &self.shared;
        let Some(builder) = self.builder.as_mut() else {
            return;
        };
        let rebuild = Rebuild {
            fdt: builder.fdt.with_seed(&seed),
            region: 0,
            offset: 0,
        };
        let fits = rebuild
            .blobs(shared.config, &builder.images)
            .iter()
            .all(|&(at, bytes)| {
                bytes.is_empty()
                    || shared
                        .ram
                        .iter()
                        .any(|r| r.contains(&Region::new(at, bytes.len() as u64)))
            });
        if !fits {
            panic!(
                "vm {}: image, initrd or device tree outside its memory",
                shared.name
            );
        }
        builder.rebuild = Some(rebuild);
    }

    /// Whether the VM's memory is being rebuilt by this vCPU's CPU (it cannot run yet).
    pub fn rebuilding(&self) -> bool {
        self.builder.as_ref().is_some_and(|b| b.rebuild.is_some())
    }

    /// Ends what the previous boot left behind on the physical interrupts the VM owns: an
    /// interrupt it never deactivated, a passed-through timer still counting down.
    fn release_interrupts(&self) {
        for &intid in &self.shared.forwarded {
            gic::clear_active(self.shared.board, intid);
        }
        if self.physical_timer == PhysicalTimer::Owned {
            timer::stop_physical();
        }
    }

    /// The VM's index in the configuration.
    pub fn index(&self) -> usize {
        self.shared.index
    }

    /// This vCPU's index in its VM.
    pub fn vcpu_index(&self) -> usize {
        self.vcpu_index
    }

    /// The physical CPU this vCPU is placed on by the configuration.
    pub fn home(&self) -> u8 {
        self.control.home
    }

    /// Whether its VM's vCPUs migrate when preempted (`migrate = true`).
    #[inline]
    pub fn migrates(&self) -> bool {
        self.shared.config.migrate
    }

    /// This vCPU is handed to physical CPU `cpu` (its new holder).
    pub fn moved_to(&self, cpu: u8) {
        self.control.cpu.store(cpu, Ordering::Release);
        if cpu != self.control.home {
            self.shared.migrations.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes a request that this migrated vCPU go back to its home CPU.
    pub fn take_return_request(&self) -> bool {
        self.control.return_home.swap(false, Ordering::Acquire)
    }

    /// Marks this vCPU kicked, so its new CPU looks at it (a kick sent to the CPU it left
    /// would be lost otherwise).
    pub fn mark_kicked(&self) {
        self.control.kicked.store(true, Ordering::Release);
    }

    /// Its scheduling priority (higher runs first).
    pub fn priority(&self) -> u8 {
        self.shared.config.priority
    }

    /// Whether this vCPU is on (PSCI): only then may it run.
    #[inline(always)]
    pub fn is_on(&self) -> bool {
        self.control.power.load(Ordering::Acquire) == ON
    }

    /// Takes this vCPU's kick, if it was kicked.
    pub fn take_kick(&self) -> bool {
        self.control.kicked.swap(false, Ordering::Acquire)
    }

    /// PSCI CPU_ON of this VM's vCPU `vcpu` (off: `respond` checked it) at `entry` with
    /// `context`: the PSCI return value. The vCPU's CPU is kicked to start it.
    pub fn cpu_on(&self, vcpu: usize, entry: u64, context: u64) -> u64 {
        if !self.is_ram(entry, 4) {
            return ret::INVALID_ADDRESS;
        }
        if self.shared.ending().is_some() {
            return ret::DENIED;
        }
        let Some(control) = self.shared.vcpus.get(vcpu) else {
            return ret::INVALID_PARAMETERS;
        };
        if let Err(now) =
            control
                .power
                .compare_exchange(OFF, CLAIMED, Ordering::Acquire, Ordering::Acquire)
        {
            return match power_state(now) {
                PowerState::On => ret::ALREADY_ON,
                _ => ret::ON_PENDING,
            };
        }
        control.entry.store(entry, Ordering::Relaxed);
        control.context.store(context, Ordering::Relaxed);
        control.power.store(ON_PENDING, Ordering::Release);
        self.shared.kick(vcpu);
        ret::SUCCESS
    }

    /// PSCI CPU_OFF of this vCPU while another one of the VM is on.
    pub fn cpu_off(&mut self) {
        self.shared.set_power(self.vcpu_index, OFF);
    }

    /// The power states of the VM's vCPUs, for PSCI (one vCPU per CPU, so at most
    /// `MAX_CPUS`).
    pub fn powers(&self, states: &mut [PowerState; MAX_CPUS]) -> usize {
        let n = self.shared.vcpus.len().min(states.len());
        for (vcpu, state) in states[..n].iter_mut().enumerate() {
            *state = self.shared.power(vcpu);
        }
        n
    }

    /// Raises physical SPI `intid`, which the guest asked its test device for, if it is in
    /// the VM's destination table; any other request is dropped.
    pub fn raise_owned_spi(&self, intid: u32) {
        if intid >= gic::PRIVATE_IRQS && self.shared.config.irqs.contains(&intid) {
            gic::set_spi_pending(self.shared.board, intid);
        }
    }

    /// The VM rings `channel` (PARTITA_IVC_RING): the outcome, and whether a peer on this
    /// CPU must be given its doorbell now.
    pub fn ring(&mut self, channel: u64) -> (partita_core::hypercall::Ring, bool) {
        let cpu = self.shared.config.cpus.first().copied().unwrap_or(0);
        let mut hw = self.shared.hw.lock();
        ivc::ring(self.shared.index, cpu, channel, &mut hw.last_rings)
    }

    /// Raises the doorbells rung for the VM (bit `c`: channel `c`) in its virtual GIC; true
    /// when one was raised.
    pub fn receive_doorbells(&mut self, rung: u64) -> bool {
        let mut raised = false;
        let mut hw = self.shared.hw.lock();
        for &(channel, irq) in &self.shared.doorbells {
            if rung & (1 << channel) != 0 {
                self.vgic.inject(&mut hw.vgic, irq);
                counters::injected(self.shared.index);
                raised = true;
            }
        }
        self.shared.kick_touched(&mut hw.vgic, self.vcpu_index);
        raised
    }

    /// The physical interrupts forwarded to it besides its virtual timer.
    pub fn forwarded(&self) -> &[u32] {
        &self.shared.forwarded
    }

    /// A physical occurrence of an interrupt forwarded to this vCPU.
    pub fn inject(&mut self, intid: u32) {
        let mut hw = self.shared.hw.lock();
        self.vgic.inject(&mut hw.vgic, intid);
        self.shared.kick_touched(&mut hw.vgic, self.vcpu_index);
    }

    /// Whether this vCPU has an interrupt to take (wakes it from WFI).
    pub fn has_deliverable(&mut self) -> bool {
        let mut hw = self.shared.hw.lock();
        self.vgic.has_deliverable(&mut hw.vgic)
    }

    /// The loaded vCPU, its CPU's only one, blocks in WFI: its list registers are chosen
    /// again now, off the wake-up's path, so that the interrupt that wakes it takes the
    /// short injection and its entry finds them loaded (no fold or choice on the wake).
    /// Not on a CPU with other vCPUs: one of them may take the CPU, and this one's list
    /// registers would only be read back and emptied again.
    pub fn load_for_wake(&mut self) {
        let mut hw = self.shared.hw.lock();
        self.vgic.before_entry(&mut hw.vgic);
    }

    /// The maintenance interrupt fired for this (loaded) vCPU.
    pub fn maintenance(&mut self) {
        let mut hw = self.shared.hw.lock();
        self.vgic.maintenance(&mut hw.vgic);
    }

    /// This vCPU was kicked because another vCPU changed its interrupts: its list registers
    /// are chosen again before it next runs; true when it now has one to take.
    pub fn refresh_interrupts(&mut self) -> bool {
        let mut hw = self.shared.hw.lock();
        self.vgic.refresh(&mut hw.vgic);
        self.vgic.has_deliverable(&mut hw.vgic)
    }

    /// A trapped ICC_SGI1R_EL1 write: the SGI is made pending on its targets among the
    /// VM's vCPUs, and those on other CPUs are kicked.
    pub fn send_sgi(&mut self, value: u64) {
        let mut hw = self.shared.hw.lock();
        self.vgic.send_sgi(&mut hw.vgic, value);
        self.shared.kick_touched(&mut hw.vgic, self.vcpu_index);
    }

    /// Moves console input into the VM's UART and drives the devices' interrupt lines.
    pub fn update_interrupt_lines(&mut self) {
        let mut hw = self.shared.hw.lock();
        update_lines(&self.shared, &mut self.vgic, self.vcpu_index, &mut hw);
    }

    /// Whether `len` bytes at guest-physical `ipa` are inside the VM's RAM.
    pub fn is_ram(&self, ipa: u64, len: u64) -> bool {
        self.shared
            .ram
            .iter()
            .any(|r| r.contains(&Region::new(ipa, len)))
    }

    /// The VM starts a boot: with the heap in use then, which is the same at the start of
    /// every boot when restarts leak nothing.
    pub fn announce_start(&self) {
        println!(
            "vm {}: starting (boot {}, heap {} B)",
            self.shared.name,
            self.shared.boots.load(Ordering::Relaxed),
            heap::in_use()
        );
    }

    /// The physical interrupt the short exit acknowledged at the last exit and left to the
    /// scheduler, if any.
    pub fn take_acknowledged(&mut self) -> Option<u32> {
        self.acknowledged.take()
    }

    /// Whether the short exit acknowledged `intid` at the last exit and left it to the
    /// scheduler (it stays there for `take_acknowledged`).
    pub fn acknowledged(&self, intid: u32) -> bool {
        self.acknowledged == Some(intid)
    }

    /// This (switched-out) vCPU's boot of the VM ended as `end`, or another vCPU's did:
    /// the VM's end is recorded (the first one wins), this vCPU is parked (off), and every
    /// other vCPU's CPU is kicked to park its own. The CPU of vCPU 0 then ends the boot
    /// (`settle_end`).
    pub fn park(&mut self, end: Option<BootEnd>) {
        if let Some(end) = end {
            let _ = self.shared.ending.compare_exchange(
                BootEnd::NONE,
                end.code(),
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
        self.shared.set_power(self.vcpu_index, OFF);
        for vcpu in 0..self.shared.vcpus.len() {
            if vcpu != self.vcpu_index {
                self.shared.kick(vcpu);
            }
        }
    }

    /// The VM's boot is ending (some vCPU parked it).
    pub fn ending(&self) -> bool {
        self.shared.ending().is_some()
    }

    /// The VM stopped for good on the CPU of its vCPU 0: this vCPU goes too.
    pub fn retired(&self) -> bool {
        self.shared.retired.load(Ordering::Acquire)
    }

    /// vCPU 0's CPU, once every vCPU is parked: the VM's boot ends as the first end
    /// recorded says. Its rebuild begins (the scheduler runs it piece by piece and it
    /// restarts with the boot count one higher; `Some(None)`), or it stops for good
    /// (`Some(Some(how))`). `None` while another vCPU still runs, or on another vCPU.
    pub fn settle_end(&mut self) -> Option<Option<Stop>> {
        if self.builder.is_none() || self.rebuilding() {
            return None;
        }
        let end = self.shared.ending()?;
        if (0..self.shared.vcpus.len()).any(|v| self.shared.power(v) != PowerState::Off) {
            return None;
        }
        Some(self.end_boot(end))
    }

    /// The boot ended (every vCPU parked): its output goes out, and a passed-through
    /// physical timer stops at once, so that its deadline no longer holds back long work
    /// that waits for room (the VM's own stop, `timer::owned_physical_deadline`).
    fn end_boot(&mut self, end: BootEnd) -> Option<Stop> {
        if self.physical_timer == PhysicalTimer::Owned {
            timer::stop_physical();
        }
        self.flush_output_now();
        console::finish_vm_line(self.shared.index);
        crate::fabric::release(self.shared.index);
        let name = &self.shared.name;
        let boots = self.shared.boots.load(Ordering::Relaxed);
        let config = self.shared.config;
        match end {
            BootEnd::Reset if config.on_reset == ResetAction::Fault => {
                println!("vm {name}: reset requested; stopped (on_reset = \"fault\")");
                return Some(Stop::Fault);
            }
            BootEnd::Reset => println!("vm {name}: reset (boot {})", boots + 1),
            BootEnd::PowerOff if config.on_poweroff == EndAction::Stop => return Some(Stop::Clean),
            BootEnd::PowerOff => {
                println!("vm {name}: powered off; restarting (boot {})", boots + 1)
            }
            BootEnd::Fault if config.on_fault == EndAction::Stop => return Some(Stop::Fault),
            BootEnd::Fault => {}
        }
        self.shared.boots.store(boots + 1, Ordering::Relaxed);
        self.begin_load();
        None
    }

    /// The switched-out VM stops for good (on vCPU 0's CPU): its last output is printed,
    /// the physical interrupts it owned are disabled, and its other vCPUs are dropped.
    pub fn stop(&mut self, how: Stop) {
        self.flush_output_now();
        console::finish_vm_line(self.shared.index);
        counters::print(self.shared.index, &self.shared.name);
        let migrations = self.shared.migrations.load(Ordering::Relaxed);
        if migrations > 0 {
            println!("vm {}: {migrations} vCPU migrations", self.shared.name);
        }
        if how == Stop::Clean {
            println!("vm {}: powered off", self.shared.name);
        }
        for &intid in &self.shared.forwarded {
            gic::disable(self.shared.board, intid);
        }
        crate::fabric::release(self.shared.index);
        crate::fabric::forget(self.shared.index);
        self.release_interrupts();
        self.shared.retired.store(true, Ordering::Release);
        for vcpu in 1..self.shared.vcpus.len() {
            self.shared.kick(vcpu);
        }
    }

    /// Ends the VM's boot because of a guest fault Partita cannot reflect back into it; the
    /// console line says what `on_fault` makes of it.
    pub fn fault(&self, reason: core::fmt::Arguments) -> Outcome {
        let name = &self.shared.name;
        match self.shared.config.on_fault {
            EndAction::Stop => println!("vm {name}: fault: {reason}; stopped"),
            EndAction::Restart => println!(
                "vm {name}: fault: {reason}; restarting (boot {})",
                self.shared.boots.load(Ordering::Relaxed) + 1
            ),
        }
        Outcome::Stop(Stop::Fault)
    }
}

impl VmState {
    /// Puts the vCPU on this CPU: stage 2, EL1 context, virtual CPU interface. A virtual timer
    /// that expired while it was away is injected at once, its physical PPI made active as
    /// if it had been forwarded, so the guest takes it on entry without another exit.
    #[inline(always)]
    pub fn switch_in(&mut self, cpu: u8) {
        let shared = &*self.shared;
        shared.stage2.activate();
        // Another vCPU of the VM ran here last (a migrated one, or this one's host): the
        // TLBs of this CPU may hold its stage-1 entries under the same VMID and ASIDs. A VM
        // of one vCPU has no other.
        let last = (shared.vcpus.len() > 1)
            .then(|| shared.last_ran.get(usize::from(cpu)))
            .flatten();
        if let Some(last) = last {
            let me = self.vcpu_index as u8;
            // Only this CPU writes its own entry: no atomic swap needed.
            if last.load(Ordering::Relaxed) != me {
                last.store(me, Ordering::Relaxed);
                shared.stage2.forget_local_translations();
            }
        }
        self.vcpu.load(shared.counter_offset);
        let ppi = shared.board.timer_virt_irq;
        if self.timer_ppi_active {
            gic::set_active_ppi(shared.board, ppi);
        } else if timer::virtual_firing() {
            // Its virtual timer expired while it was away: injected now, the PPI made active
            // as if forwarded. No look at the PPI's active state first (as at a WFI,
            // `has_deliverable_at_wfi`): the vCPU that left the CPU took it with it
            // (`switch_out`), and nothing acknowledges the PPI while no vCPU is loaded.
            {
                let mut hw = shared.hw.lock();
                self.vgic.inject_switched_in(&mut hw.vgic, ppi);
                shared.kick_touched(&mut hw.vgic, self.vcpu_index);
            }
            counters::injected(shared.index);
            gic::set_active_ppi(shared.board, ppi);
        }
    }

    /// WFI of the loaded vCPU: its device lines and console input are brought up to date,
    /// its expired virtual timer is injected if its physical PPI was not forwarded (not
    /// active; the PPI is then made active as if it had been, so it is not taken again
    /// before the guest deactivates it: the GIC may not have signalled it yet, and QEMU's
    /// GIC-400 does not re-signal a pending PPI that a guest's deactivation through a HW list
    /// register made inactive, so a guest idling then would wait for it forever). True when
    /// it has an interrupt to take (it goes on). One hold of the VM's lock for all three.
    #[inline]
    pub fn has_deliverable_at_wfi(&mut self) -> bool {
        let shared = &*self.shared;
        let mut hw = shared.hw.lock();
        at_wfi(shared, &mut self.vgic, self.vcpu_index, &mut hw) == AtWfi::Deliverable
    }

    /// `has_deliverable_at_wfi` for a vCPU that leaves its CPU when it has nothing to take
    /// (the hand-over inside the world switch, `ShortExit::hand_over`), in one hold of the
    /// VM's lock: with an interrupt to take, its list registers are chosen again (the
    /// answer folded them), for the guest goes on; otherwise what its UARTs transmitted is
    /// sent to its console (`flush_output`, which its exit would do).
    #[inline(always)]
    pub fn at_hand_over(&mut self) -> AtWfi {
        let shared = &*self.shared;
        let mut hw = shared.hw.lock();
        let found = at_wfi(shared, &mut self.vgic, self.vcpu_index, &mut hw);
        if found == AtWfi::Deliverable {
            self.vgic.before_entry(&mut hw.vgic);
        } else {
            hw.devices.flush_output(shared.index);
        }
        found
    }

    /// At a WFI of the loaded vCPU whose short exits kept it quiet (`ShortExit::quiet`: since
    /// a hold of the VM's lock found its lines and output clean and its model as its list
    /// register 0's interrupt left it, nothing on this CPU touched them): whether nothing
    /// can have come since, so that `at_hand_over` would answer `AtWfi::Settled` and change
    /// nothing, without a look under the lock. Its virtual timer does not fire, no console
    /// input waits, the guest finished list register 0 (`VirtualGic::settled_again_here`),
    /// and no other CPU kicked it: a change another CPU makes to its interrupts kicks it,
    /// and a kick that comes after this look wakes it as one after the lock's would.
    #[inline(always)]
    pub fn quiet_at_wfi(&self) -> bool {
        let shared = &*self.shared;
        !timer::virtual_firing()
            && !shared
                .input_waiting
                .is_some_and(|w| w.load(Ordering::Acquire))
            && self.vgic.settled_again_here()
            && !self.control.kicked.load(Ordering::Acquire)
    }

    /// Takes the vCPU off this CPU, keeping its list registers in the model, and lends the
    /// physical virtual-timer PPI to the next vCPU (its active state is kept here).
    #[inline]
    pub fn switch_out(&mut self) {
        self.vgic.unload();
        self.vcpu.unload();
        self.lend_timer_ppi();
    }

    /// `switch_out` when the other vCPU of the CPU is switched in right after, the CPU's
    /// interrupts masked meanwhile (`ShortExit::switch`): its load sets what `Vcpu::unload`
    /// would stop (`Vcpu::save`).
    ///
    /// `settled`: the vCPU leaves at a WFI that found nothing pending or active for it
    /// (`AtWfi::Settled`), so its virtual timer's physical PPI is not active (the guest
    /// deactivated it through its list register, and only EL2 activates it, its interrupts
    /// masked since): nothing is read to lend it.
    #[inline(always)]
    pub fn switch_over(&mut self, settled: bool) {
        self.vgic.unload();
        self.vcpu.save();
        if settled {
            self.timer_ppi_active = false;
        } else {
            self.lend_timer_ppi();
        }
    }

    /// The physical virtual-timer PPI's active state kept here and the PPI lent to the next
    /// vCPU (`switch_out`).
    #[inline(always)]
    fn lend_timer_ppi(&mut self) {
        let board = self.shared.board;
        let ppi = board.timer_virt_irq;
        self.timer_ppi_active = gic::ppi_active(board, ppi);
        if self.timer_ppi_active {
            gic::clear_active(board, ppi);
        }
    }

    /// When the run queue wakes the loaded vCPU, blocked, by its timer: its virtual-timer
    /// deadline in physical ticks less the VM's advance (`timer_advance_ns`), if its timer
    /// is armed and the vCPU on. Woken that early, it takes the CPU back from a lower
    /// priority and waits for the deadline itself at EL2, loaded (`ShortExit::wait`).
    #[inline]
    pub fn timer_deadline(&self) -> Option<u64> {
        let shared = &*self.shared;
        if !self.is_on() {
            return None;
        }
        timer::virtual_deadline(shared.counter_offset)
            .map(|deadline| deadline.saturating_sub(shared.timer_advance))
    }

    /// `timer_deadline` for a vCPU that blocks and stays loaded, when its VM has an advance:
    /// the CPU then wakes for it ahead of its timer, as for one switched out. `None` without
    /// an advance: its own timer PPI wakes it, at the deadline.
    pub fn early_deadline(&self) -> Option<u64> {
        if self.shared.timer_advance == 0 {
            return None;
        }
        self.timer_deadline()
    }

    /// Before the vCPU is entered: its console input and device lines brought to its virtual
    /// GIC, its list registers chosen, and what its UARTs transmitted and was held back
    /// sent to its console (`Devices::flush_output`). Returns the position of its console
    /// UART among its devices (the short exit's UART path).
    #[inline(always)]
    pub fn prepare_entry(&mut self) -> Option<usize> {
        let shared = &*self.shared;
        let mut hw = shared.hw.lock();
        update_lines(shared, &mut self.vgic, self.vcpu_index, &mut hw);
        self.vgic.before_entry(&mut hw.vgic);
        hw.devices.flush_output(shared.index);
        hw.devices.console_slot()
    }

    /// The vCPU's entry ended, with an exit for the general path or a switch inside the
    /// world switch: the physical interrupt its short exit acknowledged and left to the
    /// scheduler (`held`), and, unless one was, what its UARTs transmitted sent to its
    /// console (`flush_output`). With an interrupt waiting, the output waits for the VM's
    /// next entry.
    #[inline]
    pub fn finish_entry(&mut self, held: Option<u32>) {
        self.acknowledged = held;
        if held.is_none() {
            self.flush_output();
        }
    }

    /// The vCPU leaves the CPU inside the world switch (`ShortExit::switch`): nothing
    /// acknowledged is left to the scheduler. Its output was sent already when it handed the
    /// CPU over at a WFI (`at_hand_over`); when a real-time VM's deadline
    /// took the CPU, it waits for its next entry, off the real-time VM's path.
    #[inline]
    pub fn finish_entry_in_switch(&mut self) {
        self.acknowledged = None;
    }

    /// What its UARTs transmitted sent to its console, when it fits (`Devices::flush_output`).
    pub fn flush_output(&mut self) {
        let index = self.shared.index;
        self.shared.hw.lock().devices.flush_output(index);
    }

    /// `flush_output` whatever the room: its boot ends.
    fn flush_output_now(&mut self) {
        let index = self.shared.index;
        self.shared.hw.lock().devices.flush_output_now(index);
    }
}

/// What a WFI of the loaded vCPU finds (`VmState::at_hand_over`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum AtWfi {
    /// An interrupt to take: the guest goes on.
    Deliverable,
    /// Nothing pending or active (`VirtualGic::settled_at_wfi`): every interrupt forwarded
    /// to the vCPU, its virtual timer's PPI among them, was deactivated.
    Settled,
    /// Nothing to take, but an interrupt may be active.
    Waiting,
}

/// What `VmState::has_deliverable_at_wfi` finds for vCPU `vcpu` (`vgic`) with the VM's lock
/// held (`hw`).
#[inline(always)]
fn at_wfi(shared: &Shared, vgic: &mut VirtualGic, vcpu: usize, hw: &mut Hardware) -> AtWfi {
    update_lines(shared, vgic, vcpu, hw);
    inject_expired_timer(shared, vgic, vcpu, hw);
    if vgic.settled_at_wfi(&mut hw.vgic) {
        AtWfi::Settled
    } else if vgic.has_deliverable(&mut hw.vgic) {
        AtWfi::Deliverable
    } else {
        AtWfi::Waiting
    }
}

/// At a WFI of vCPU `vcpu` (`vgic`), loaded on this CPU, with the VM's lock held (`hw`): its
/// expired virtual timer is injected if its physical PPI was not forwarded
/// (`Vm::has_deliverable_at_wfi`; the WFI's short exit calls it too).
///
/// The test is inline and the injection out of line: a wait whose timer has not expired
/// (the real-time VM's, which armed its next tick) saves no registers for it.
#[inline]
pub fn inject_expired_timer(
    shared: &Shared,
    vgic: &mut VirtualGic,
    vcpu: usize,
    hw: &mut Hardware,
) {
    if timer::virtual_firing() {
        inject_fired_timer(shared, vgic, vcpu, hw);
    }
}

/// `inject_expired_timer` once the timer fired: injected unless its PPI was forwarded.
#[inline(never)]
fn inject_fired_timer(shared: &Shared, vgic: &mut VirtualGic, vcpu: usize, hw: &mut Hardware) {
    let ppi = shared.board.timer_virt_irq;
    if !gic::ppi_active(shared.board, ppi) {
        vgic.inject(&mut hw.vgic, ppi);
        shared.kick_touched(&mut hw.vgic, vcpu);
        counters::injected(shared.index);
        gic::set_active_ppi(shared.board, ppi);
    }
}

/// Moves console input into the VM's console UART and drives the devices' interrupt lines
/// in the virtual GIC, from vCPU `vcpu` (`vgic`), with the VM's lock held (`hw`).
/// The lines are visited only when a device may have changed one (an access or received
/// input since the last visit): the model keeps each line's level, so a visit that finds
/// them unchanged does nothing. The visit is out of line, so the common case saves no
/// registers.
#[inline(always)]
pub fn update_lines(shared: &Shared, vgic: &mut VirtualGic, vcpu: usize, hw: &mut Hardware) {
    if hw.devices.has_console() {
        input::take(shared.input_waiting, shared.index, |byte| {
            hw.devices.receive(byte)
        });
    }
    if hw.devices.lines_stale() {
        set_lines(vgic, hw);
    }
    // Also the vCPUs whose interrupts an earlier fold of list registers changed (`sync`).
    shared.kick_touched(&mut hw.vgic, vcpu);
}

/// Tells the virtual GIC the level of every device line (`update_lines`).
#[cold]
#[inline(never)]
fn set_lines(vgic: &mut VirtualGic, hw: &mut Hardware) {
    let Hardware {
        devices,
        vgic: model,
        ..
    } = hw;
    for (irq, level) in devices.take_lines() {
        // Validation keeps device interrupts among the board's SPIs.
        let _ = vgic.set_level(model, irq, level);
    }
}
