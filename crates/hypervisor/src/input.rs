//! Console input routing: characters typed on the physical console go to the emulated UART
//! of the VM that has focus; Ctrl-\ then a VM number (1..9, configuration order) moves the
//! focus, and the terminal shows that VM; Ctrl-\ then 0 shows every VM while input stays
//! (`partita_core::devices::console_input`, `console::show`). At start the focus is on the
//! first general-purpose VM (`kind = "gpos"`: the one with a shell), else on VM 1.
//!
//! The CPU that takes the physical UART interrupt queues the characters per VM under one
//! lock and kicks the CPU running the focused VM with an SGI; that CPU moves them into the
//! VM's UART model before it next enters the guest. Queues are bounded: typing faster than a
//! guest reads drops characters, as a real UART overrun would. This module must never touch
//! a VM's state directly.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::lock::Mutex;
use heapless::Deque;
use partita_core::config::{ConsoleView, SystemConfig, VmKind};
use partita_core::console::View;
use partita_core::devices::console_input::{FocusKeys, Keystroke};
use spin::Once;

use crate::arch::aarch64::gic;
use crate::{console, println};

/// Characters kept per VM while its guest has not read them.
const QUEUE_DEPTH: usize = 256;
/// The SGI that tells a CPU input arrived for its VM.
pub const KICK_SGI: u32 = 0;

struct Router {
    keys: FocusKeys,
    focus: usize,
    vms: usize,
    cpus: Vec<u8>,
    queues: Vec<Deque<u8, QUEUE_DEPTH>>,
}

static ROUTER: Once<Mutex<Router>> = Once::new();

/// Per VM: characters wait in its queue. Checked without the lock before every guest entry,
/// so CPUs never contend for the router unless input is pending: a CPU spinning on a lock
/// another CPU holds would delay its real-time VM by as long as the holder runs.
static WAITING: Once<Vec<AtomicBool>> = Once::new();

/// Sets the routing up for the configured VMs and enables the physical UART's receive
/// interrupt (boot CPU, once).
pub fn init(config: &SystemConfig) {
    let focus = config
        .vms
        .iter()
        .position(|vm| vm.kind == VmKind::Gpos)
        .unwrap_or(0);
    if config.vms.len() > 1 {
        let shown = match config.console.view {
            ConsoleView::Focus => "the terminal shows it alone",
            ConsoleView::All => "the terminal shows every VM",
        };
        println!(
            "console: input goes to vm {}, {shown} (Ctrl-\\ then 1..9 picks a VM, 0 shows all)",
            config.vms[focus].name
        );
    }
    console::init(config, focus);
    WAITING.call_once(|| config.vms.iter().map(|_| AtomicBool::new(false)).collect());
    ROUTER.call_once(|| {
        Mutex::new(Router {
            keys: FocusKeys::default(),
            focus,
            vms: config.vms.len(),
            cpus: config
                .vms
                .iter()
                .map(|vm| vm.cpus.first().copied().unwrap_or(0))
                .collect(),
            queues: config.vms.iter().map(|_| Deque::new()).collect(),
        })
    });
    console::enable_input();
}

/// Reads the physical UART (on its interrupt) and queues what was typed.
pub fn receive(this_cpu: u8) {
    let Some(router) = ROUTER.get() else {
        return;
    };
    let mut kick = None;
    console::read_input(|byte| {
        let mut r = router.lock();
        let vms = r.vms;
        match r.keys.feed(byte, vms) {
            Keystroke::Byte(b) => {
                let focus = r.focus;
                if let Some(queue) = r.queues.get_mut(focus) {
                    let _ = queue.push_back(b);
                    set_waiting(focus, true);
                }
                kick = r.cpus.get(focus).copied();
            }
            Keystroke::Focus(vm) => {
                r.focus = vm;
                console::show(View::Vm(vm));
            }
            Keystroke::ShowAll => console::show(View::All),
            Keystroke::Swallowed => {}
        }
    });
    if let Some(cpu) = kick.filter(|&cpu| cpu != this_cpu) {
        gic::send_sgi(KICK_SGI as u8, cpu);
    }
}

fn set_waiting(vm: usize, waiting: bool) {
    if let Some(flag) = WAITING.get().and_then(|w| w.get(vm)) {
        flag.store(waiting, Ordering::Release);
    }
}

/// VM `vm`'s flag that says characters wait (`take`), found once when the VM is built
/// (`init` ran before), so that every entry tests it with one load.
pub fn waiting_flag(vm: usize) -> Option<&'static AtomicBool> {
    WAITING.get().and_then(|w| w.get(vm))
}

/// Hands VM `vm`'s queued characters to `deliver` until it refuses one (its FIFO is full);
/// `waiting` is its flag (`waiting_flag`). Every entry of a vCPU asks, and the answer is
/// almost always "nothing waits" (one flag): the rest is apart, so that answer saves and
/// restores no registers.
#[inline]
pub fn take(waiting: Option<&AtomicBool>, vm: usize, deliver: impl FnMut(u8) -> bool) {
    if waiting.is_some_and(|w| w.load(Ordering::Acquire)) {
        take_waiting(vm, deliver);
    }
}

/// `take` once VM `vm`'s flag says characters wait.
#[cold]
#[inline(never)]
fn take_waiting(vm: usize, mut deliver: impl FnMut(u8) -> bool) {
    let Some(router) = ROUTER.get() else {
        return;
    };
    let mut r = router.lock();
    let Some(queue) = r.queues.get_mut(vm) else {
        return;
    };
    while let Some(&byte) = queue.front() {
        if !deliver(byte) {
            break;
        }
        queue.pop_front();
    }
    if queue.is_empty() {
        set_waiting(vm, false);
    }
}
