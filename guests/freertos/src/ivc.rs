//! The FreeRTOS side of an inter-VM channel (`docs/ivc.md`): find it in the device tree,
//! reach its memory, ring the peers (PARTITA_IVC_RING) and wait for their doorbell as a
//! binary semaphore given from the doorbell's interrupt handler.
//!
//! The ring format itself is `partita_core::ivc::ring`, the same code the host tests; this
//! module only gives it word access to the channel (`ChannelMemory`). The channel is
//! written by another VM at any time: nothing read from it is trusted here (the ring
//! checks it), and nothing here blocks or prints in interrupt context.

use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};

use fdt::Fdt;
use partita_core::hypercall::{ret, PARTITA_IVC_RING};
use partita_core::ivc::ring::{ring_of, Consumer, Producer, SharedMemory};

use crate::freertos::{OutOfMemory, Semaphore, Slot};
use crate::gic::{Gic, GicError};
use crate::{port, psci};

/// A channel as the device tree describes it (`partita,ivc`).
#[derive(Clone, Copy, Debug)]
pub struct ChannelInfo {
    pub base: usize,
    pub size: usize,
    /// The doorbell's INTID.
    pub irq: u32,
    /// The id PARTITA_IVC_RING takes.
    pub id: u64,
    /// This VM's ring, and how many rings the channel holds.
    pub member: usize,
    pub members: usize,
    pub read_only: bool,
}

impl ChannelInfo {
    /// The first `partita,ivc` node of the tree, if it is complete.
    pub fn find(fdt: &Fdt<'_>) -> Option<ChannelInfo> {
        let node = fdt.find_compatible(&["partita,ivc"])?;
        let region = node.reg()?.next()?;
        let u32_of = |name: &str| {
            let value = node.property(name)?.value;
            Some(u32::from_be_bytes(value.get(..4)?.try_into().ok()?))
        };
        let interrupts = node.property("interrupts")?.value;
        let cell = |i: usize| {
            Some(u32::from_be_bytes(
                interrupts.get(4 * i..4 * i + 4)?.try_into().ok()?,
            ))
        };
        // The GIC binding's first cell: 0 for a shared peripheral interrupt.
        if cell(0)? != 0 {
            return None;
        }
        let spi = cell(1)?;
        Some(ChannelInfo {
            base: region.starting_address as usize,
            size: region.size?,
            irq: spi.checked_add(32)?,
            id: u64::from(u32_of("partita,channel")?),
            member: u32_of("partita,member")? as usize,
            members: u32_of("partita,members")? as usize,
            read_only: node.property("read-only").is_some(),
        })
    }
}

/// Word access to the channel's memory. The guest runs with its MMU off, so the channel
/// is Device-nGnRnE memory to it: only aligned word accesses, which is all the ring
/// format makes.
#[derive(Clone, Copy)]
pub struct ChannelMemory {
    base: usize,
    size: usize,
}

impl ChannelMemory {
    fn at(&self, offset: usize) -> usize {
        self.base + offset
    }
}

fn barrier() {
    aarch64_cpu::asm::barrier::dmb(aarch64_cpu::asm::barrier::ISH);
}

impl SharedMemory for ChannelMemory {
    fn size(&self) -> usize {
        self.size
    }
    fn load_u32(&self, offset: usize) -> u32 {
        // SAFETY: the ring passes aligned offsets inside the channel, which stage 2 maps
        // for this VM; the peer may change the word at any time, hence volatile.
        unsafe { ptr::read_volatile(self.at(offset) as *const u32) }
    }
    fn store_u32(&self, offset: usize, value: u32) {
        // SAFETY: as in `load_u32`; only this VM's own ring and control words are written.
        unsafe { ptr::write_volatile(self.at(offset) as *mut u32, value) }
    }
    fn load_u64(&self, offset: usize) -> u64 {
        // SAFETY: as in `load_u32`, an aligned doubleword (single-copy atomic).
        let value = unsafe { ptr::read_volatile(self.at(offset) as *const u64) };
        barrier();
        value
    }
    fn store_u64(&self, offset: usize, value: u64) {
        barrier();
        // SAFETY: as in `store_u32`, an aligned doubleword (single-copy atomic).
        unsafe { ptr::write_volatile(self.at(offset) as *mut u64, value) }
    }
    fn fence(&self) {
        barrier();
    }
}

/// The doorbell's INTID and the semaphore its handler gives.
static DOORBELL_INTID: AtomicU32 = AtomicU32::new(u32::MAX);
static DOORBELL: Slot<Semaphore> = Slot::empty();

/// Called by the IRQ dispatcher for every interrupt; true when it was the doorbell.
pub fn on_interrupt(intid: u32) -> bool {
    if intid != DOORBELL_INTID.load(Ordering::Relaxed) {
        return false;
    }
    if let Some(doorbell) = DOORBELL.get() {
        doorbell.give_from_isr();
    }
    true
}

/// What became of a ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rang {
    Yes,
    /// Refused by the rate rule: ring again after this many nanoseconds.
    TooSoon(u64),
    /// Partita refused it (not a member) or there is no hypervisor.
    Refused,
}

/// Why a channel could not be opened.
#[derive(Clone, Copy, Debug)]
pub enum OpenError {
    Gic(GicError),
    Heap,
    /// The channel is too small for its rings.
    Layout,
}

impl core::fmt::Display for OpenError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            OpenError::Gic(error) => write!(f, "doorbell interrupt: {error}"),
            OpenError::Heap => f.write_str("FreeRTOS heap exhausted"),
            OpenError::Layout => f.write_str("channel too small for its rings"),
        }
    }
}

/// An open channel.
#[derive(Clone, Copy)]
pub struct Channel {
    pub info: ChannelInfo,
    memory: ChannelMemory,
    doorbell: Semaphore,
}

impl Channel {
    /// Creates the doorbell semaphore and enables the doorbell interrupt; call once,
    /// before the scheduler starts.
    pub fn open(info: ChannelInfo, gic: &Gic) -> Result<Channel, OpenError> {
        ring_of(info.size, info.members, info.member).ok_or(OpenError::Layout)?;
        let doorbell = Semaphore::binary().map_err(|OutOfMemory| OpenError::Heap)?;
        DOORBELL.set(doorbell);
        DOORBELL_INTID.store(info.irq, Ordering::Relaxed);
        gic.enable_edge_spi(info.irq, port::TICK_PRIORITY)
            .map_err(OpenError::Gic)?;
        Ok(Channel {
            info,
            memory: ChannelMemory {
                base: info.base,
                size: info.size,
            },
            doorbell,
        })
    }

    /// This VM's ring, which it alone writes (`None` when read-only).
    pub fn producer(&self) -> Option<Producer<'_, ChannelMemory>> {
        if self.info.read_only {
            return None;
        }
        let (base, size) = ring_of(self.info.size, self.info.members, self.info.member)?;
        Producer::new(&self.memory, base, size).ok()
    }

    /// The ring member `peer` writes.
    pub fn consumer(&self, peer: usize) -> Option<Consumer<'_, ChannelMemory>> {
        let (base, size) = ring_of(self.info.size, self.info.members, peer)?;
        Consumer::new(&self.memory, base, size).ok()
    }

    /// Rings every other member.
    pub fn ring(&self) -> Rang {
        match psci::hypervisor_call(PARTITA_IVC_RING, &[self.info.id]) {
            Some([ret::SUCCESS, _]) => Rang::Yes,
            Some([ret::DENIED, wait_ns]) => Rang::TooSoon(wait_ns),
            _ => Rang::Refused,
        }
    }

    /// Waits at most `ms` milliseconds for a doorbell; true when one came.
    pub fn wait_ms(&self, ms: u64) -> bool {
        self.doorbell.take_ms(ms)
    }
}

/// The channel the demo task serves: written once before the scheduler starts, only read
/// afterwards.
struct ChannelSlot(UnsafeCell<Option<Channel>>);

// SAFETY: `publish` writes the slot once, before the scheduler starts (one thread of
// execution, interrupts masked); afterwards it is only read.
unsafe impl Sync for ChannelSlot {}

static CHANNEL: ChannelSlot = ChannelSlot(UnsafeCell::new(None));

/// Keeps `channel` for the demo task; call before the scheduler starts.
pub fn publish(channel: Channel) {
    // SAFETY: see `ChannelSlot`: this runs before the scheduler, with no reader yet.
    unsafe { *CHANNEL.0.get() = Some(channel) };
}

/// The published channel.
pub fn published() -> Option<Channel> {
    // SAFETY: see `ChannelSlot`: after the scheduler starts the slot is only read.
    unsafe { *CHANNEL.0.get() }
}
