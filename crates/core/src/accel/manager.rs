//! The allocator of reconfigurable regions to VMs (Ker-ONE's Virtual Device Manager and PRR
//! Monitor, section 4.4): it turns requests (a VM's write to an unconnected interface) and
//! fabric events (a job started or done, a consistency point reached, a bitstream loaded,
//! a hold expired) into actions the hypervisor carries out: connect or disconnect an
//! interface (stage 2), stop a task at its next consistency point, save its context, load a
//! bitstream, signal a VM.
//!
//! Invariants (`check`, fuzzed): a region hosts one task at most and an interface is
//! connected to one region at most, each naming the other; every outstanding request is
//! either queued once in the search list or carried out by exactly one region; nothing
//! stays queued that the policy could solve now. The manager never sees guest memory: a
//! guest reaches it only through `request`, which a storm of writes cannot make do more
//! than once per outstanding request.

use alloc::vec::Vec;

use super::interface::Signal;
use super::policy::{Candidate, Method, Policy, Request, Solution};
use super::prr::{PrrDescriptor, PrrEvent, PrrState};
use super::{DevId, PrrId, VmId};

/// Most regions a fabric has: bounds the actions one event can produce.
pub const MAX_REGIONS: usize = 8;
/// Most accelerators a fabric has.
pub const MAX_ACCELERATORS: usize = 16;

/// A bitstream of the HW Task Index: a device as one region can host it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bitstream {
    pub prr: PrrId,
    pub id: u16,
    pub size: u64,
    /// Its reconfiguration time (`timing::reconfig_ns`).
    pub reconfig_ns: u64,
}

/// What the manager allocates: regions, the HW Task Index, the VMs' priorities and
/// interfaces, and how long a hold lasts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// Per region: its size in bytes of bitstream.
    pub regions: Vec<u64>,
    /// Per device: its bitstreams, one per compatible region.
    pub index: Vec<Vec<Bitstream>>,
    /// Per VM: its priority (its tasks inherit it).
    pub priorities: Vec<u8>,
    /// Per VM: whether it has an interface for device `d` (bit d).
    pub interfaces: Vec<u32>,
    pub hold_ns: u64,
}

/// What the hypervisor must do, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Map the interface read-write; `resume` when a saved task continues in it.
    Connect {
        vm: VmId,
        dev: DevId,
        prr: PrrId,
        resume: bool,
    },
    /// Map the interface read-only (and drop the VM's TLB entries for it).
    Disconnect { vm: VmId, dev: DevId, prr: PrrId },
    /// Stop the region's job at its next consistency point, then report it
    /// (`consistency_point`, or `job_done` if it finished).
    Stop { prr: PrrId },
    /// Save the stopped task's context into its interface, then report `switched`.
    Save { vm: VmId, dev: DevId, prr: PrrId },
    /// Load `dev`'s bitstream into the region (abandoning any load in progress), then
    /// report `reconfigured` after `ns`.
    Reconfigure {
        prr: PrrId,
        dev: DevId,
        bitstream: u16,
        ns: u64,
    },
    Signal {
        vm: VmId,
        dev: DevId,
        signal: Signal,
    },
}

/// Room for every action one event produces: at most four per region solved, plus the
/// event's own.
pub type Actions = heapless::Vec<Action, { 4 * MAX_REGIONS + 8 }>;

/// How a request was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The interface is connected: the VM retries its write.
    Connected,
    /// The request is outstanding (IPC_WAIT was signalled when it was made).
    Waiting,
    /// The VM has no interface for this device.
    NoInterface,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Interface {
    connected: Option<PrrId>,
    /// A request is outstanding.
    waiting: bool,
    /// A preempted job is saved in the interface's context area.
    suspended: bool,
}

pub struct Manager {
    spec: Spec,
    policy: Policy,
    prrs: Vec<PrrDescriptor>,
    /// Per region: the request it is being given to (Preempt, Switch, Reconfig).
    next: Vec<Option<Request>>,
    /// Per region: the device whose bitstream is loading (Reconfig).
    loading: Vec<Option<DevId>>,
    /// Per VM, per device.
    interfaces: Vec<Interface>,
    /// Unsolved requests, highest priority first, first come first within a priority.
    search: Vec<Request>,
    /// Per device: bit `p % 64` when region `p` has a bitstream for it.
    compatible: Vec<u64>,
    /// Bit `p % 64` when region `p` changed what the policy sees of it (its candidate)
    /// since the search list was last served, or a request was queued untried that it may
    /// serve: only queued requests compatible with such a region can have a solution now.
    changed: u64,
    /// The solution the last `request` got at once (`last_solution`).
    last: Option<Solution>,
}

fn bit(prr: PrrId) -> u64 {
    1 << (u32::from(prr) % 64)
}

fn push(out: &mut Actions, action: Action) {
    if out.push(action).is_err() {
        panic!("accelerator manager: more actions than MAX_REGIONS allows");
    }
}

impl Manager {
    pub fn new(spec: Spec, policy: Policy) -> Manager {
        let prrs = spec
            .regions
            .iter()
            .map(|&size| PrrDescriptor {
                state: PrrState::Idle,
                client: None,
                priority: 0,
                loaded: None,
                size,
                hold_until: 0,
            })
            .collect();
        let n = spec.regions.len();
        let slots = spec.priorities.len() * spec.index.len();
        let interfaces = alloc::vec![Interface::default(); slots];
        let compatible = spec
            .index
            .iter()
            .map(|bs| bs.iter().fold(0, |mask, b| mask | bit(b.prr)))
            .collect();
        Manager {
            policy,
            prrs,
            next: alloc::vec![None; n],
            loading: alloc::vec![None; n],
            interfaces,
            // At most one request per interface waits: the list never allocates again.
            search: Vec::with_capacity(slots),
            spec,
            compatible,
            changed: 0,
            last: None,
        }
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The descriptor of region `prr`.
    pub fn prr(&self, prr: PrrId) -> Option<&PrrDescriptor> {
        self.prrs.get(usize::from(prr))
    }

    /// The region interface (vm, dev) is connected to.
    pub fn connected(&self, vm: VmId, dev: DevId) -> Option<PrrId> {
        self.slot(vm, dev)
            .and_then(|i| self.interfaces[i].connected)
    }

    /// Whether interface (vm, dev) holds a saved task.
    pub fn suspended(&self, vm: VmId, dev: DevId) -> bool {
        self.slot(vm, dev)
            .is_some_and(|i| self.interfaces[i].suspended)
    }

    /// The request region `prr` is being handed over to (Preempt, Switch, Reconfig).
    pub fn next_of(&self, prr: PrrId) -> Option<Request> {
        self.next.get(usize::from(prr)).copied().flatten()
    }

    /// The solution the last `request` was given at once, which tells its path of Fig. 15
    /// (Assign or Preempt, with or without reconfiguration); `None` when it was queued
    /// (Unavailable) or needed none (connected or waiting already).
    pub fn last_solution(&self) -> Option<Solution> {
        self.last
    }

    /// The queued requests, in the order they will be considered.
    pub fn search_list(&self) -> &[Request] {
        &self.search
    }

    fn slot(&self, vm: VmId, dev: DevId) -> Option<usize> {
        let has =
            self.spec.interfaces.get(usize::from(vm))? & (1u32.checked_shl(u32::from(dev))?) != 0;
        (has && usize::from(dev) < self.spec.index.len())
            .then(|| usize::from(vm) * self.spec.index.len() + usize::from(dev))
    }

    /// The interface of a request or client: `request` checked it exists (`slot`), so only
    /// its place is computed here.
    fn iface(&mut self, vm: VmId, dev: DevId) -> &mut Interface {
        let i = usize::from(vm) * self.spec.index.len() + usize::from(dev);
        &mut self.interfaces[i]
    }

    #[inline(always)]
    fn step(&mut self, prr: PrrId, event: PrrEvent) {
        self.changed |= bit(prr);
        let d = &mut self.prrs[usize::from(prr)];
        match d.state.next(event) {
            Some(s) => d.state = s,
            None => panic!(
                "accelerator manager: PRR {prr} in {:?} got {event:?}",
                d.state
            ),
        }
    }

    /// VM `vm` wrote to its unconnected interface for `dev` at time `now` (ns).
    pub fn request(&mut self, vm: VmId, dev: DevId, now: u64, out: &mut Actions) -> Answer {
        self.last = None;
        let Some(i) = self.slot(vm, dev) else {
            return Answer::NoInterface;
        };
        let iface = self.interfaces[i];
        if iface.connected.is_some() {
            return Answer::Connected;
        }
        if iface.waiting {
            return Answer::Waiting;
        }
        self.interfaces[i].waiting = true;
        let request = Request {
            vm,
            dev,
            prio: self.spec.priorities[usize::from(vm)],
        };
        if !self.solve(request, now, false, out) {
            self.enqueue(request);
            push(out, signal(request, Signal::Wait));
        }
        if self.interfaces[i].connected.is_some() {
            Answer::Connected
        } else {
            Answer::Waiting
        }
    }

    /// The regions `request` could use, as the policy sees them, put in `cands` (empty): the
    /// caller's own list, so it is built in place and never copied.
    #[inline(always)]
    fn candidates(&self, request: &Request, cands: &mut heapless::Vec<Candidate, MAX_REGIONS>) {
        for b in &self.spec.index[usize::from(request.dev)] {
            let p = usize::from(b.prr);
            let d = &self.prrs[p];
            let (loaded, priority) = match d.state {
                PrrState::Reconfig => (
                    self.loading[p] == Some(request.dev),
                    self.next[p].map(|r| r.prio),
                ),
                PrrState::Preempt | PrrState::Switch => {
                    (d.loaded == Some(request.dev), self.next[p].map(|r| r.prio))
                }
                _ => (d.loaded == Some(request.dev), d.client.map(|_| d.priority)),
            };
            let _ = cands.push(Candidate {
                prr: b.prr,
                state: d.state,
                size: d.size,
                loaded,
                priority,
            });
        }
    }

    /// Asks the policy for a solution and starts it; false when there is none (Unavailable).
    /// `queued` when the request already got IPC_WAIT.
    fn solve(&mut self, request: Request, now: u64, queued: bool, out: &mut Actions) -> bool {
        let mut cands = heapless::Vec::new();
        self.candidates(&request, &mut cands);
        let Some(solution) = (self.policy)(&request, &cands) else {
            return false;
        };
        let Some(c) = cands.iter().find(|c| c.prr == solution.prr) else {
            return false;
        };
        let allowed = match solution.method {
            Method::Assign => c.state == PrrState::Idle,
            Method::Preempt => {
                matches!(
                    c.state,
                    PrrState::Busy | PrrState::Hold | PrrState::Preempt | PrrState::Reconfig
                ) && c.priority.is_some_and(|p| p < request.prio)
            }
        };
        if !allowed {
            return false;
        }
        if !queued {
            self.last = Some(solution);
        }
        self.carry_out(request, solution, now, queued, out);
        true
    }

    fn carry_out(
        &mut self,
        request: Request,
        solution: Solution,
        now: u64,
        queued: bool,
        out: &mut Actions,
    ) {
        let prr = solution.prr;
        let p = usize::from(prr);
        match self.prrs[p].state {
            PrrState::Idle | PrrState::Hold => {
                let held = self.prrs[p].state == PrrState::Hold;
                if let Some((vm, dev)) = self.prrs[p].client.take() {
                    self.iface(vm, dev).connected = None;
                    push(out, Action::Disconnect { vm, dev, prr });
                    if held {
                        push(out, preempted(vm, dev));
                    }
                }
                self.give(prr, request, solution.reconfig, now, queued, out);
            }
            PrrState::Busy => {
                self.step(prr, PrrEvent::PreemptRequest);
                self.next[p] = Some(request);
                push(out, Action::Stop { prr });
                if !queued {
                    push(out, signal(request, Signal::Wait));
                }
            }
            PrrState::Preempt | PrrState::Reconfig => {
                self.changed |= bit(prr);
                if let Some(displaced) = self.next[p].replace(request) {
                    // Back in the queue, where another region may serve it now.
                    self.enqueue_untried(displaced);
                    self.serve(now, out);
                }
                if self.prrs[p].state == PrrState::Reconfig && self.loading[p] != Some(request.dev)
                {
                    self.reconfigure(prr, request.dev, out);
                }
                if !queued {
                    push(out, signal(request, Signal::Wait));
                }
            }
            PrrState::Switch => panic!("accelerator manager: PRR {prr} chosen while switching"),
        }
    }

    /// Gives an Idle or Hold region (no client now) to `request`.
    fn give(
        &mut self,
        prr: PrrId,
        request: Request,
        reconfig: bool,
        now: u64,
        announce: bool,
        out: &mut Actions,
    ) {
        if reconfig {
            self.step(prr, PrrEvent::AssignReconfig);
            self.next[usize::from(prr)] = Some(request);
            self.reconfigure(prr, request.dev, out);
            if !announce {
                push(out, signal(request, Signal::Wait));
            }
        } else {
            self.step(prr, PrrEvent::Assign);
            self.connect(prr, request, now, announce, out);
        }
    }

    fn reconfigure(&mut self, prr: PrrId, dev: DevId, out: &mut Actions) {
        self.changed |= bit(prr);
        let p = usize::from(prr);
        self.prrs[p].loaded = None;
        self.loading[p] = Some(dev);
        let Some(b) = self.spec.index[usize::from(dev)]
            .iter()
            .find(|b| b.prr == prr)
        else {
            panic!("accelerator manager: device {dev} has no bitstream for PRR {prr}");
        };
        push(
            out,
            Action::Reconfigure {
                prr,
                dev,
                bitstream: b.id,
                ns: b.reconfig_ns,
            },
        );
    }

    /// Connects `request`'s interface to `prr` (already in Hold).
    #[inline(always)]
    fn connect(
        &mut self,
        prr: PrrId,
        request: Request,
        now: u64,
        announce: bool,
        out: &mut Actions,
    ) {
        self.changed |= bit(prr);
        let d = &mut self.prrs[usize::from(prr)];
        d.client = Some((request.vm, request.dev));
        d.priority = request.prio;
        d.loaded = Some(request.dev);
        d.hold_until = now.saturating_add(self.spec.hold_ns);
        let iface = self.iface(request.vm, request.dev);
        let resume = iface.suspended;
        *iface = Interface {
            connected: Some(prr),
            waiting: false,
            suspended: false,
        };
        push(
            out,
            Action::Connect {
                vm: request.vm,
                dev: request.dev,
                prr,
                resume,
            },
        );
        if announce {
            push(out, signal(request, Signal::Ready));
        }
    }

    fn enqueue(&mut self, request: Request) {
        let at = self
            .search
            .iter()
            .position(|r| r.prio < request.prio)
            .unwrap_or(self.search.len());
        self.search.insert(at, request);
    }

    /// Queues `request` without having asked the policy: `serve` will.
    fn enqueue_untried(&mut self, request: Request) {
        self.changed |= self.compatible[usize::from(request.dev)];
        self.enqueue(request);
    }

    /// Solves what the search list can now, in its order (after `switched`; every other
    /// event serves it itself). A queued request whose regions
    /// all kept their candidate since it was last found unsolvable is still unsolvable (the
    /// policy sees nothing else), so only those compatible with a changed region are asked
    /// again: the same solutions, in the same order, as asking every one.
    pub fn serve(&mut self, now: u64, out: &mut Actions) {
        let mut i = 0;
        while i < self.search.len() {
            let request = self.search[i];
            if self.compatible[usize::from(request.dev)] & self.changed == 0 {
                i += 1;
                continue;
            }
            self.search.remove(i);
            if !self.solve(request, now, true, out) {
                self.search.insert(i, request);
                i += 1;
            } else {
                i = 0;
            }
        }
        self.changed = 0;
    }

    /// The client of `prr` started a job (the fabric saw START, or resumed a saved one).
    /// False, changing nothing, when the region cannot start one now.
    pub fn started(&mut self, prr: PrrId) -> bool {
        let Some(d) = self.prrs.get(usize::from(prr)) else {
            return false;
        };
        if d.client.is_none() || d.state.next(PrrEvent::Start).is_none() {
            return false;
        }
        self.step(prr, PrrEvent::Start);
        true
    }

    /// The job on `prr` finished (its last frame is done).
    pub fn job_done(&mut self, prr: PrrId, now: u64, out: &mut Actions) {
        match self.prr(prr).map(|d| d.state) {
            Some(PrrState::Busy) => self.step(prr, PrrEvent::JobDone),
            Some(PrrState::Preempt) => {
                self.step(prr, PrrEvent::ConsistencyPoint);
                self.switched(prr, false, now, out);
            }
            _ => return,
        }
        self.serve(now, out);
    }

    /// The job on a preempted `prr` stopped at a consistency point with work left: its
    /// context must be saved (`Save`), then `switched` reported.
    pub fn consistency_point(&mut self, prr: PrrId, out: &mut Actions) {
        if self.prr(prr).map(|d| d.state) != Some(PrrState::Preempt) {
            return;
        }
        self.step(prr, PrrEvent::ConsistencyPoint);
        if let Some((vm, dev)) = self.prrs[usize::from(prr)].client {
            push(out, Action::Save { vm, dev, prr });
        }
    }

    /// The stopped task's context is saved (`saved`) or there was nothing left to save: the
    /// old client is disconnected, the region goes to its new client, and the old client is
    /// told and its unfinished work queued, the actions in that order (`Disconnect`, then
    /// `Connect` and IPC_READY or `Reconfigure`, then IPC_PREEMPT), so the hypervisor can
    /// connect the new client before it does the rest. The search list is not served here:
    /// the caller calls `serve` once it carried the actions out (`job_done` does it itself).
    pub fn switched(&mut self, prr: PrrId, saved: bool, now: u64, out: &mut Actions) {
        let p = usize::from(prr);
        if self.prrs.get(p).map(|d| d.state) != Some(PrrState::Switch) {
            return;
        }
        let old_client = self.prrs[p].client.take();
        if let Some((vm, dev)) = old_client {
            push(out, Action::Disconnect { vm, dev, prr });
            let iface = self.iface(vm, dev);
            iface.connected = None;
            if saved {
                iface.suspended = true;
                iface.waiting = true;
                let prio = self.spec.priorities[usize::from(vm)];
                self.enqueue_untried(Request { vm, dev, prio });
            }
        }
        match self.next[p].take() {
            Some(request) => {
                let reconfig = self.prrs[p].loaded != Some(request.dev);
                self.step(prr, PrrEvent::Switched { reconfig });
                if reconfig {
                    self.next[p] = Some(request);
                    self.reconfigure(prr, request.dev, out);
                } else {
                    self.connect(prr, request, now, true, out);
                }
            }
            None => panic!("accelerator manager: PRR {prr} switched for no one"),
        }
        if let Some((vm, dev)) = old_client {
            push(out, preempted(vm, dev));
        }
    }

    /// The bitstream of `prr` is loaded.
    pub fn reconfigured(&mut self, prr: PrrId, now: u64, out: &mut Actions) {
        let p = usize::from(prr);
        if self.prrs.get(p).map(|d| d.state) != Some(PrrState::Reconfig) {
            return;
        }
        self.prrs[p].loaded = self.loading[p].take();
        match self.next[p].take() {
            Some(request) => {
                self.step(prr, PrrEvent::Reconfigured);
                self.connect(prr, request, now, true, out);
            }
            None => self.step(prr, PrrEvent::ReconfiguredUnclaimed),
        }
        self.serve(now, out);
    }

    /// Holds that ran out by `now` end (their clients stay connected until reassigned).
    pub fn expire(&mut self, now: u64, out: &mut Actions) {
        for p in 0..self.prrs.len() {
            let d = &self.prrs[p];
            if d.state == PrrState::Hold && d.hold_until <= now {
                self.step(p as PrrId, PrrEvent::Expire);
            }
        }
        self.serve(now, out);
    }

    /// The earliest hold expiry, if a region is held.
    pub fn next_expiry(&self) -> Option<u64> {
        self.prrs
            .iter()
            .filter(|d| d.state == PrrState::Hold)
            .map(|d| d.hold_until)
            .min()
    }

    /// VM `vm` stops or restarts: its interfaces are disconnected and forgotten, its
    /// requests dropped, the regions it used freed (a job is abandoned; a region being
    /// given to it goes to no one, or back to its running task).
    pub fn release_vm(&mut self, vm: VmId, now: u64, out: &mut Actions) {
        self.search.retain(|r| r.vm != vm);
        for p in 0..self.prrs.len() {
            let prr = p as PrrId;
            let for_vm = self.next[p].is_some_and(|r| r.vm == vm);
            if for_vm || self.prrs[p].client.is_some_and(|(cvm, _)| cvm == vm) {
                self.changed |= bit(prr);
            }
            if for_vm {
                self.next[p] = None;
                if self.prrs[p].state == PrrState::Preempt {
                    self.step(prr, PrrEvent::Cancel);
                }
            }
            let Some((cvm, dev)) = self.prrs[p].client else {
                continue;
            };
            if cvm != vm {
                continue;
            }
            push(out, Action::Disconnect { vm, dev, prr });
            match self.prrs[p].state {
                PrrState::Preempt => {
                    self.prrs[p].client = None;
                    self.step(prr, PrrEvent::ConsistencyPoint);
                    self.switched(prr, false, now, out);
                }
                PrrState::Busy | PrrState::Hold => {
                    self.prrs[p].client = None;
                    self.step(prr, PrrEvent::Release);
                }
                _ => self.prrs[p].client = None,
            }
        }
        for dev in 0..self.spec.index.len() as DevId {
            if let Some(i) = self.slot(vm, dev) {
                self.interfaces[i] = Interface::default();
            }
        }
        self.serve(now, out);
    }

    /// Checks the invariants; the first broken one, described.
    pub fn check(&self) -> Result<(), &'static str> {
        for (p, d) in self.prrs.iter().enumerate() {
            let hosts = matches!(d.state, PrrState::Busy | PrrState::Preempt | PrrState::Hold);
            if hosts && d.client.is_none() {
                return Err("a running or held region has no client");
            }
            if d.state == PrrState::Reconfig && d.client.is_some() {
                return Err("a region being reconfigured has a client");
            }
            let giving = matches!(d.state, PrrState::Preempt | PrrState::Switch);
            if giving && self.next[p].is_none() {
                return Err("a region is preempted for no one");
            }
            if !matches!(
                d.state,
                PrrState::Preempt | PrrState::Switch | PrrState::Reconfig
            ) && self.next[p].is_some()
            {
                return Err("a region not being handed over has a next client");
            }
            if let Some((vm, dev)) = d.client {
                let i = self.slot(vm, dev).ok_or("a client without an interface")?;
                if self.interfaces[i].connected != Some(p as PrrId) {
                    return Err("a region's client is not connected to it");
                }
            }
        }
        for (i, iface) in self.interfaces.iter().enumerate() {
            let n = self.spec.index.len();
            let (vm, dev) = ((i / n) as VmId, (i % n) as DevId);
            if let Some(p) = iface.connected {
                if self.prrs[usize::from(p)].client != Some((vm, dev)) {
                    return Err("an interface is connected to a region that hosts another task");
                }
                if iface.waiting {
                    return Err("a connected interface is still waiting");
                }
            }
            let queued = self
                .search
                .iter()
                .filter(|r| (r.vm, r.dev) == (vm, dev))
                .count();
            let carried = self
                .next
                .iter()
                .filter(|r| r.is_some_and(|r| (r.vm, r.dev) == (vm, dev)))
                .count();
            if iface.waiting != (queued + carried == 1) || queued + carried > 1 {
                return Err("an outstanding request is not queued or carried exactly once");
            }
        }
        if self.search.windows(2).any(|w| w[0].prio < w[1].prio) {
            return Err("the search list is out of priority order");
        }
        for r in &self.search {
            let mut cands = heapless::Vec::new();
            self.candidates(r, &mut cands);
            if (self.policy)(r, &cands).is_some() {
                return Err("a queued request has a solution");
            }
        }
        Ok(())
    }
}

fn signal(request: Request, signal: Signal) -> Action {
    Action::Signal {
        vm: request.vm,
        dev: request.dev,
        signal,
    }
}

/// IPC_PREEMPT to interface (vm, dev): its region was taken.
fn preempted(vm: VmId, dev: DevId) -> Action {
    Action::Signal {
        vm,
        dev,
        signal: Signal::Preempt,
    }
}

#[cfg(test)]
mod tests;
