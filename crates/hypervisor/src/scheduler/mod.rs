//! The scheduler of one physical CPU: it owns the VMs placed on this CPU and their
//! `partita_core::sched::RunQueue` (fixed priority, preemptive, round robin in a level), and
//! drives the queue exactly as that module's documentation asks: `block` on a WFI with
//! nothing pending (the virtual-timer deadline goes along), `wake` when an interrupt is
//! forwarded to a vCPU, `pick` on every event, the next event programmed into the EL2 timer
//! (CNTHP) before entering a guest or waiting.
//!
//! A vCPU stays loaded on the CPU until another one must run (lazy switching): a VM alone on
//! its CPU never pays for a switch, and a blocked VM left loaded while the CPU idles wakes
//! through its own timer PPI. Physical interrupts reach EL2 whatever the guest's PSTATE.I,
//! so a higher-priority VM takes the CPU at the first exit after its interrupt arrives. This
//! module must never touch a vCPU of another CPU: events for those arrive as SGIs there.
//!
//! A vCPU that is off (PSCI: not yet started, CPU_OFF, or parked while its VM's boot ends)
//! stays blocked until a kick finds it on-pending. When a VM's boot ends, each CPU parks its
//! vCPU of it; the CPU of vCPU 0 then restarts or stops the VM, and the others drop their
//! vCPUs of a VM that stopped for good.

mod interrupts;

pub use interrupts::{enable_for_vms, handle_idle};

use alloc::sync::Arc;
use alloc::vec::Vec;

use partita_core::board::Board;
use partita_core::sched::{
    earliest, ticks_from_micros, IdIndex, LongWork, OwnerTable, RunQueue, VcpuId, VcpuState,
    MAX_VCPUS, STOP_ROOM_MICROS, STOP_WAIT_MICROS,
};

use crate::arch::aarch64::vectors::Exit;
use crate::arch::aarch64::{gic, timer};
use crate::console;
use crate::counters;
use crate::fabric;
use crate::migrate;
use crate::short_exit;
use crate::system::{Stop, System};
use crate::trap::Outcome;
use crate::vm::{BootEnd, Shared, Vm};

pub struct CpuScheduler {
    cpu: u8,
    board: &'static Board,
    system: &'static System,
    vms: Vec<Vm>,
    /// The position in `vms` of each run-queue name (`reindex`).
    positions: IdIndex,
    queue: RunQueue,
    /// The run-queue name of the vCPU on the CPU.
    loaded: Option<VcpuId>,
    /// Its position in `vms`.
    loaded_at: Option<usize>,
    /// This CPU's vCPUs migrated to another CPU (`migrate`), and whether their return was
    /// requested.
    lent: Vec<(Arc<Shared>, usize, bool)>,
    /// The position in `vms` of the owner of each forwarded physical interrupt (the virtual
    /// timer's PPI excepted: it goes to whichever vCPU is loaded); `reindex` rebuilds it.
    owners: OwnerTable,
    /// VMs that stopped for good (their vCPU 0 here, and how) whose stop waits for room
    /// before the CPU's next event (`stop_waiting`).
    stopping: Vec<(VcpuId, Stop)>,
    /// Since when they wait, and for what room (`None` while none waits).
    stop_wait: Option<LongWork>,
    /// The lowest priority among `vms`: entering a vCPU of it hands over what any VM's
    /// output held back for room (`hand_over_held_output`).
    lowest_priority: u8,
}

/// What an exit of the running vCPU for a physical interrupt or a WFI leads to
/// (`interrupted`, `wait`).
enum Next {
    /// It runs on.
    Resume,
    /// The CPU went to the vCPU at this position in `vms`, which runs on.
    Switched(usize),
    /// The scheduler decides again.
    Decide,
}

/// The run-queue name of a vCPU.
fn vcpu_of(vm: &Vm) -> VcpuId {
    VcpuId::new(vm.index() as u16, vm.vcpu_index() as u16)
}

impl CpuScheduler {
    /// The scheduler of CPU `cpu` for `vms`, every one ready.
    pub fn new(system: &'static System, cpu: u8, vms: Vec<Vm>) -> Self {
        let board = system.bundle.config.board.platform.board();
        let slice = ticks_from_micros(system.bundle.config.board.slice_us, timer::frequency());
        let mut queue = RunQueue::new(slice);
        for vm in &vms {
            if let Err(e) = queue.add(vcpu_of(vm), vm.priority()) {
                panic!("CPU {cpu}: run queue: {e:?}");
            }
            if !vm.is_on() {
                let _ = queue.block(vcpu_of(vm), None);
            }
        }
        let mut scheduler = CpuScheduler {
            cpu,
            board,
            system,
            vms,
            positions: IdIndex::default(),
            queue,
            loaded: None,
            loaded_at: None,
            lent: Vec::new(),
            owners: OwnerTable::default(),
            stopping: Vec::new(),
            stop_wait: None,
            lowest_priority: 0,
        };
        scheduler.reindex();
        scheduler
    }

    /// Rebuilds the names, the loaded position and the owner table after `vms` changed.
    fn reindex(&mut self) {
        self.positions.clear();
        for (at, vm) in self.vms.iter().enumerate() {
            if !self.positions.insert(vcpu_of(vm), at) {
                panic!("CPU {}: more than {MAX_VCPUS} vCPUs", self.cpu);
            }
        }
        self.loaded_at = self.loaded.and_then(|id| self.position(id));
        self.owners.clear();
        for (at, vm) in self.vms.iter().enumerate() {
            for &intid in vm.forwarded() {
                self.owners.claim(intid, at);
            }
        }
        self.lowest_priority = self.vms.iter().map(|vm| vm.priority()).min().unwrap_or(0);
    }

    /// Runs this CPU's VMs until every one has stopped.
    pub fn run(mut self) {
        for vm in self.vms.iter().filter(|vm| vm.vcpu_index() == 0) {
            vm.announce_start();
        }
        while !self.vms.is_empty() {
            self.stop_waiting();
            let decision = self.queue.pick(timer::now());
            match decision.run.and_then(|id| self.position(id)) {
                Some(at) => self.run_vcpu(at),
                None => self.idle(),
            }
        }
        timer::arm_hyp_timer(None);
    }

    fn position(&self, id: VcpuId) -> Option<usize> {
        self.positions.get(id)
    }

    fn loaded_position(&self) -> Option<usize> {
        self.loaded_at
    }

    /// Nothing is runnable: wait in WFI at EL2 for the next interrupt or event.
    fn idle(&mut self) {
        console::release_held();
        // The CPU idles: its vCPUs migrated away come back.
        for (shared, vcpu, requested) in &mut self.lent {
            if !*requested {
                shared.request_return(*vcpu);
                *requested = true;
            }
        }
        timer::arm_hyp_timer(self.queue.next_event(timer::now()));
        // The EL2 timer armed for what the room is measured against.
        self.hand_over_held_output();
        counters::idle_begin();
        aarch64_cpu::asm::wfi();
        counters::idle_end();
        self.handle_interrupts();
    }

    /// Output its VMs held back for room (`devices::take_held`) goes now if it fits, else at
    /// a later call: when the CPU idles, and before a vCPU of the lowest priority here is
    /// entered, whose time it takes. Without the second, a VM that waits forever after its
    /// last line, on a CPU that never idles (another VM never yields), would keep that line.
    fn hand_over_held_output(&mut self) {
        if crate::devices::take_held() {
            for vm in &mut self.vms {
                vm.flush_output();
            }
        }
    }

    /// Puts vCPU `id` on the CPU, taking the loaded one off first; a loaded vCPU that this
    /// one preempts may migrate (`migrate_preempted`). Returns its position then.
    /// `at` is its position now.
    fn switch_to(&mut self, id: VcpuId, at: usize) -> Option<usize> {
        if self.loaded == Some(id) {
            return self.loaded_at;
        }
        let mut at = Some(at);
        if let Some(old) = self.switch_out() {
            if self.migrate_preempted(old, id) {
                at = self.position(id);
            }
        }
        let at = at?;
        self.put_on(id, at);
        Some(at)
    }

    /// Puts vCPU `id`, `vms[at]`, on the CPU (none is loaded).
    fn put_on(&mut self, id: VcpuId, at: usize) {
        self.vms[at].switch_in(self.cpu);
        counters::switched_in(self.vms[at].index());
        self.loaded = Some(id);
        self.loaded_at = Some(at);
    }

    /// `vms[old]`, preempted by vCPU `by` of another VM and switched out, moves to the CPU
    /// its VM's policy names (`Vm::migration_target`), if any, until this CPU idles. True
    /// when it went (the positions in `vms` changed).
    ///
    /// The decision is inline, the move out of line (`migrate`): a switch whose preempted
    /// vCPU stays (every switch of a VM without `migrate`) saves no registers for it.
    #[inline]
    fn migrate_preempted(&mut self, old: usize, by: VcpuId) -> bool {
        let vm = &self.vms[old];
        // The VM's policy first: most VMs never migrate, and it is one load.
        if !vm.migrates() || vcpu_of(vm).vm == by.vm || vm.home() != self.cpu {
            return false;
        }
        match vm.migration_target() {
            Some(target) => {
                self.migrate(old, target);
                true
            }
            None => false,
        }
    }

    /// `vms[old]` moves to CPU `target` until this CPU idles (`migrate_preempted`).
    #[inline(never)]
    fn migrate(&mut self, old: usize, target: u8) {
        let vm = self.vms.remove(old);
        self.reindex();
        let _ = self.queue.remove(vcpu_of(&vm));
        self.lent.push((vm.shared(), vm.vcpu_index(), false));
        migrate::send(vm, target);
    }

    /// Takes the vCPUs handed to this CPU: migrated ones arriving, or this CPU's own coming
    /// back (then no longer lent). Each is ready and looked at as if kicked.
    fn receive_migrants(&mut self) -> bool {
        let arrived = migrate::receive(self.cpu);
        let any = !arrived.is_empty();
        for vm in arrived {
            let id = vcpu_of(&vm);
            self.lent.retain(|(shared, vcpu, _)| {
                !(Arc::ptr_eq(shared, &vm.shared()) && *vcpu == vm.vcpu_index())
            });
            if let Err(e) = self.queue.add(id, vm.priority()) {
                panic!("CPU {}: run queue: {e:?}", self.cpu);
            }
            if !vm.is_on() {
                let _ = self.queue.block(id, None);
            }
            self.vms.push(vm);
        }
        if any {
            self.reindex();
        }
        any
    }

    /// Sends back the migrated vCPUs held here whose home CPU asked for them.
    fn return_migrants(&mut self) -> bool {
        let mut any = false;
        let mut at = 0;
        while at < self.vms.len() {
            let vm = &self.vms[at];
            if vm.home() == self.cpu || !vm.take_return_request() {
                at += 1;
                continue;
            }
            if self.loaded == Some(vcpu_of(vm)) {
                self.switch_out();
            }
            let vm = self.vms.remove(at);
            self.reindex();
            let _ = self.queue.remove(vcpu_of(&vm));
            let home = vm.home();
            migrate::send(vm, home);
            any = true;
        }
        any
    }

    /// Takes the loaded vCPU off the CPU. A blocked one hands its virtual-timer deadline to
    /// the run queue now: while it stayed loaded, its own timer PPI was its wake-up. Returns
    /// its position when it was preempted (ready, not blocked).
    fn switch_out(&mut self) -> Option<usize> {
        let old = self.loaded_position()?;
        self.loaded = None;
        self.loaded_at = None;
        let vm = &mut self.vms[old];
        let state = self.queue.leave(vcpu_of(vm), || vm.timer_deadline());
        vm.switch_out();
        (state == Some(VcpuState::Ready)).then_some(old)
    }

    /// Runs `vms[at]` until the scheduler has to decide again; it may hand the CPU to
    /// another vCPU on the way (`switch_at_deadline`) and runs that one on.
    fn run_vcpu(&mut self, at: usize) {
        if self.vms[at].rebuilding() {
            return self.rebuild(at);
        }
        let id = vcpu_of(&self.vms[at]);
        if !self.vms[at].is_on() {
            let _ = self.queue.block(id, None);
            return;
        }
        let Some(mut at) = self.switch_to(id, at) else {
            return;
        };
        self.arm_next_event();
        if self.vms[at].priority() == self.lowest_priority {
            self.hand_over_held_output();
        }
        loop {
            let exit = self.enter(&mut at);
            let vm = &mut self.vms[at];
            match vm.handle(exit) {
                Outcome::Resume => {}
                Outcome::Interrupt => match self.interrupted(at) {
                    Next::Resume => {}
                    Next::Switched(next) => at = next,
                    Next::Decide => return,
                },
                Outcome::Wait => match self.wait(at) {
                    Next::Resume => {}
                    Next::Switched(next) => at = next,
                    Next::Decide => return,
                },
                Outcome::Off => return self.power_off(at),
                Outcome::Reset => return self.end_boot(at, BootEnd::Reset),
                Outcome::Stop(Stop::Clean) => return self.end_boot(at, BootEnd::PowerOff),
                Outcome::Stop(Stop::Fault) => return self.end_boot(at, BootEnd::Fault),
            }
        }
    }

    /// Enters the loaded vCPU, `vms[at]`, until an exit the scheduler must see. Its CPU's
    /// only vCPU may wait for an interrupt inside its WFI's exit: nothing else could run
    /// meanwhile, and whatever this CPU must do wakes it. On a CPU shared by two vCPUs the
    /// world switch may hand the CPU from one to the other on the way (`enter_pair`):
    /// `at` is then the other's position, and it is the loaded one.
    fn enter(&mut self, at: &mut usize) -> Exit {
        if !self.lent.is_empty() || self.vms.len() != 2 {
            let alone = self.vms.len() == 1 && self.lent.is_empty();
            return short_exit::enter(&mut self.vms[*at], alone);
        }
        let (exit, now) = short_exit::enter_pair(&mut self.vms, *at, &mut self.queue, self.cpu);
        if now != *at {
            *at = now;
            self.loaded = Some(vcpu_of(&self.vms[now]));
            self.loaded_at = Some(now);
        }
        exit
    }

    /// Programs the EL2 timer for the run queue's next event (and the fabric's guest beat)
    /// before entering the running vCPU.
    fn arm_next_event(&self) {
        fabric::arm_next_event(self.cpu, &self.queue);
    }

    /// A physical interrupt made the running `vms[at]` exit (or it rang a doorbell of this
    /// CPU). The EL2 timer's own exit is handled here first: when it fired for the deadline
    /// of a blocked vCPU that outranks the running one and nothing else is pending, the CPU
    /// goes to that vCPU at once (`switch_at_deadline`); everything else goes through
    /// `handle_interrupts`.
    fn interrupted(&mut self, at: usize) -> Next {
        let hyp_timer = self.board.timer_hyp_irq;
        if !self.vms[at].acknowledged(hyp_timer) {
            return if self.handle_interrupts() {
                Next::Decide
            } else {
                Next::Resume
            };
        }
        let _ = self.vms[at].take_acknowledged();
        gic::end_of_interrupt(hyp_timer);
        timer::arm_hyp_timer(None);
        gic::deactivate(hyp_timer);
        // Another pending interrupt (a doorbell, a kick, console input, an interrupt of a
        // VM) may change the decision: the general path looks at it and decides. Not the
        // running vCPU's own virtual timer PPI: injecting it into the running vCPU changes
        // no decision (waking a running vCPU does nothing), and once the vCPU leaves, its
        // timer stops with it (`Vcpu::unload`) and the PPI's line drops; its expired timer
        // is injected when it comes back (`Vm::switch_in`).
        let timer_ppi = self.board.timer_virt_irq;
        if gic::highest_pending().is_none_or(|intid| intid == timer_ppi) {
            if let Some(next) = self.switch_at_deadline() {
                return Next::Switched(next);
            }
        }
        self.handle_interrupts();
        Next::Decide
    }

    /// The EL2 timer fired while a vCPU ran, nothing else pending: when the run queue
    /// hands the CPU to the vCPU whose deadline came (`RunQueue::preempt_at_deadline`, what
    /// `pick` would decide, without its search), it is switched in here without a return
    /// to the scheduler's loop; its position is returned. `None`: the scheduler decides
    /// (the queue is then either unchanged or as `pick` would leave it).
    fn switch_at_deadline(&mut self) -> Option<usize> {
        let id = self.queue.preempt_at_deadline(timer::now())?.run;
        let next = self.position(id)?;
        let vm = &self.vms[next];
        if vm.rebuilding() || !vm.is_on() {
            return None;
        }
        // The vCPU that leaves was preempted (ready): no run-queue lookup for it.
        let old = self.loaded_at.take()?;
        self.loaded = None;
        self.vms[old].switch_out();
        let next = if self.migrate_preempted(old, id) {
            self.position(id)?
        } else {
            next
        };
        self.put_on(id, next);
        self.arm_next_event();
        Some(next)
    }

    /// Rebuilds `vms[at]` (restarting after SYSTEM_RESET) a piece at a time, handling the
    /// physical interrupts that arrive in between: a higher-priority VM waits for one piece
    /// at most, never for the whole of a large VM's memory.
    fn rebuild(&mut self, at: usize) {
        timer::arm_hyp_timer(self.queue.next_event(timer::now()));
        while !self.vms[at].rebuild_step() {
            if gic::pending() && self.handle_interrupts() {
                return;
            }
        }
    }

    /// WFI of the running `vms[at]`: it goes on at once if an interrupt is pending for it
    /// (its virtual timer expired counts, `Vm::has_deliverable_at_wfi`), else it blocks until
    /// one is. On a CPU shared by two vCPUs (the real-time VM beside a GPOS), when the other
    /// one is ready to take over (`RunQueue::block_and_hand_over`: what `block` and `pick`
    /// would decide, without their search), it is switched in here without a return to the
    /// scheduler's loop, the blocked one taking its timer's deadline along.
    /// Otherwise the blocked vCPU stays loaded, so its virtual timer keeps running and its
    /// PPI wakes it; the deadline joins the run queue (and so the EL2 timer) only when it is
    /// switched out.
    fn wait(&mut self, at: usize) -> Next {
        let (alone, pair) = (self.vms.len() == 1, self.vms.len() == 2);
        let vm = &mut self.vms[at];
        if vm.has_deliverable_at_wfi() {
            return Next::Resume;
        }
        if pair {
            let deadline = vm.timer_deadline();
            if let Some(decision) = self.queue.block_and_hand_over(timer::now(), deadline) {
                return self
                    .hand_over(decision.run)
                    .map_or(Next::Decide, Next::Switched);
            }
        }
        // The CPU's only vCPU keeps it while it waits: its list registers are chosen now, so
        // that the interrupt that wakes it takes the short injection.
        if alone {
            vm.load_for_wake();
        }
        // It stays loaded, and its own timer PPI wakes it; with an advance, the CPU wakes
        // for it that much earlier (`Vm::early_deadline`), as for a vCPU switched out.
        let _ = self.queue.block(vcpu_of(vm), vm.early_deadline());
        Next::Decide
    }

    /// The loaded vCPU blocked and the run queue gave the CPU to `id`, the blocked one's
    /// deadline already taken (`wait`): it is taken off without a run-queue lookup and `id`
    /// is put on. Its position then; `None`: the scheduler decides, the blocked vCPU still
    /// loaded (`id` is being rebuilt or is off, which `run_vcpu` handles).
    fn hand_over(&mut self, id: VcpuId) -> Option<usize> {
        let next = self.position(id)?;
        let vm = &self.vms[next];
        if vm.rebuilding() || !vm.is_on() {
            return None;
        }
        let old = self.loaded_at.take()?;
        self.loaded = None;
        self.vms[old].switch_out();
        self.put_on(id, next);
        self.arm_next_event();
        Some(next)
    }

    /// Wakes a blocked vCPU that has something to take (after an interrupt was forwarded).
    fn wake(&mut self, at: usize) {
        let id = vcpu_of(&self.vms[at]);
        if self.vms[at].is_on() && self.queue.state(id) == Some(VcpuState::Blocked) {
            let _ = self.queue.wake(id);
        }
    }

    /// PSCI CPU_OFF of the running `vms[at]` (another vCPU of its VM is on): it is taken
    /// off the CPU and waits for a CPU_ON.
    fn power_off(&mut self, at: usize) {
        self.switch_out();
        self.vms[at].cpu_off();
        let _ = self.queue.block(vcpu_of(&self.vms[at]), None);
    }

    /// The boot of the running `vms[at]` ended (reset, power-off or fault): it is parked
    /// and its VM's other vCPUs are told to park too; the CPU of vCPU 0 then restarts the
    /// VM or stops it, as its policy says.
    fn end_boot(&mut self, at: usize, end: BootEnd) {
        self.switch_out();
        self.vms[at].park(Some(end));
        let _ = self.queue.block(vcpu_of(&self.vms[at]), None);
        self.settle_endings();
    }

    /// Parks this CPU's vCPUs of VMs whose boot is ending, drops those of VMs that stopped
    /// for good, and lets vCPU 0 of a VM whose vCPUs are all parked end its boot.
    fn settle_endings(&mut self) {
        let mut at = 0;
        while at < self.vms.len() {
            let vm = &self.vms[at];
            if vm.retired() {
                self.drop_vcpu(at);
                continue;
            }
            if vm.ending() && vm.is_on() {
                if self.loaded == Some(vcpu_of(vm)) {
                    self.switch_out();
                }
                self.vms[at].park(None);
                let _ = self.queue.block(vcpu_of(&self.vms[at]), None);
            }
            if self
                .stopping
                .iter()
                .any(|&(id, _)| id == vcpu_of(&self.vms[at]))
            {
                at += 1;
                continue;
            }
            match self.vms[at].settle_end() {
                Some(Some(how)) => {
                    self.stopping.push((vcpu_of(&self.vms[at]), how));
                    self.stop_waiting();
                    if self.stopping.is_empty() {
                        // Stopped: positions moved, so the scan starts again.
                        at = 0;
                        continue;
                    }
                }
                Some(None) => {
                    let vm = &self.vms[at];
                    let id = vcpu_of(vm);
                    let _ = self.queue.remove(id);
                    if let Err(e) = self.queue.add(id, vm.priority()) {
                        panic!("CPU {}: run queue: {e:?}", self.cpu);
                    }
                }
                None => {}
            }
            at += 1;
        }
    }

    /// Stops the VMs in `stopping` once the work fits (`LongWork::fits`): every vCPU that
    /// outranks the lowest-priority one of them is blocked, its deadline and the tick of a VM
    /// that owns the EL1 physical timer `STOP_ROOM_MICROS` away or more
    /// (`RunQueue::next_event_above`), or they have waited `STOP_WAIT_MICROS`. Until then
    /// their parked vCPU 0 stays here, blocked, and the CPU's other vCPUs run on: a
    /// real-time VM's tick never waits behind another VM's stop (docs/design.md, "Long EL2
    /// work beside a real-time VM"). A vCPU below the stopping VM does not count: it waits for
    /// the stop as it waited for the VM, and a busy one that never leaves its short paths
    /// would otherwise hold the stop back for good. Tried at each turn of the scheduler's
    /// loop, so at the latest after the higher-priority VM's next WFI (its short paths leave a
    /// CPU with a stopping VM to this one: the other vCPU may not run).
    fn stop_waiting(&mut self) {
        if self.stopping.is_empty() {
            return;
        }
        let now = timer::now();
        let frequency = timer::frequency();
        let work = *self.stop_wait.get_or_insert_with(|| {
            LongWork::new(
                now,
                ticks_from_micros(STOP_ROOM_MICROS, frequency),
                ticks_from_micros(STOP_WAIT_MICROS, frequency),
            )
        });
        let priority = self
            .stopping
            .iter()
            .filter_map(|&(id, _)| self.position(id))
            .map(|at| self.vms[at].priority())
            .min()
            .unwrap_or(u8::MAX);
        let next = earliest(
            self.queue.next_event_above(priority, now),
            timer::owned_physical_deadline(),
        );
        if !work.fits(now, next) {
            return;
        }
        self.stop_wait = None;
        for (id, how) in core::mem::take(&mut self.stopping) {
            if let Some(at) = self.position(id) {
                self.stop(at, how);
            }
        }
    }

    /// Drops `vms[at]`, a vCPU (not vCPU 0) of a VM that stopped for good.
    fn drop_vcpu(&mut self, at: usize) {
        if self.loaded == Some(vcpu_of(&self.vms[at])) {
            self.switch_out();
        }
        let vm = self.vms.remove(at);
        self.reindex();
        let _ = self.queue.remove(vcpu_of(&vm));
    }

    /// `vms[at]`, vCPU 0 of its VM, stops for good with its VM; the others keep running.
    /// The last VM of the machine ends the run.
    fn stop(&mut self, at: usize, how: Stop) {
        if self.loaded == Some(vcpu_of(&self.vms[at])) {
            self.switch_out();
        }
        let mut vm = self.vms.remove(at);
        self.reindex();
        let _ = self.queue.remove(vcpu_of(&vm));
        vm.stop(how);
        drop(vm);
        self.system.vm_stopped(how);
    }
}
