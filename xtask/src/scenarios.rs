//! The QEMU scenarios of `cargo xtask test`, as data: what boots (a Partita configuration, or
//! Linux directly on QEMU for comparison) on which CPU, the Linux job it runs, the exit status
//! QEMU must end with and what the console must (not) show.
//!
//! Console expectations are line patterns where `*` stands for any text. A scenario ends when
//! QEMU exits with a status, or, for systems that run forever (FreeRTOS never powers off),
//! when a console condition is met (`End::StopWhen`): the runner then stops QEMU and that
//! is the success. Adding a scenario is adding a row to `SCENARIOS`; running them is
//! `suite`'s job.

use crate::conversation::Step;
use crate::qemu::{Clock, Cpu};

/// A line pattern the console must show, must not show, or show an exact number of times.
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    Line(&'static str),
    NoLine(&'static str),
    Count(&'static str, usize),
    /// At least this many lines match.
    CountAtLeast(&'static str, usize),
    /// Every line that matches the first pattern also matches the second (and one does).
    Every(&'static str, &'static str),
    /// At least two lines match the pattern and all show the same word after the key (the
    /// heap in use at every boot of a restarting VM: `Steady(pattern, "heap ")`).
    Steady(&'static str, &'static str),
    /// At least one line matches the pattern, and on every one the number after the key is
    /// at most the limit (a latency bound in virtual time: `AtMost(rt, "max_ns=", 10_000)`).
    AtMost(&'static str, &'static str, u64),
}

/// How a scenario's run must end.
#[derive(Clone, Copy, Debug)]
pub enum End {
    /// QEMU exits by itself with this status.
    Exit(i32),
    /// The runner stops QEMU once the console meets this condition; QEMU exiting first is
    /// a failure.
    StopWhen(StopWhen),
}

/// A console condition that ends a run: `count` lines matching `pattern`, counted after
/// the first line matching `after` (from the start when `None`).
#[derive(Clone, Copy, Debug)]
pub struct StopWhen {
    pub after: Option<&'static str>,
    pub pattern: &'static str,
    pub count: usize,
}

impl StopWhen {
    /// Whether `lines` (the console so far) meet the condition.
    pub fn met<'a>(&self, lines: impl Iterator<Item = &'a str>) -> bool {
        let mut armed = self.after.is_none();
        let mut seen = 0;
        for line in lines {
            if armed && matches(self.pattern, line) {
                seen += 1;
                if seen >= self.count {
                    return true;
                }
            }
            if !armed && self.after.is_some_and(|a| matches(a, line)) {
                armed = true;
            }
        }
        false
    }
}

/// What a scenario boots.
pub enum Boot {
    /// Partita with this configuration file, relative to the workspace root.
    Partita(&'static str),
    /// Debian's kernel and the project's initramfs directly on QEMU (no hypervisor).
    NativeLinux,
    /// The FreeRTOS guest image directly on QEMU, with these boot arguments.
    NativeFreertos(&'static str),
    /// The FreeRTOS guest image as a Xen 4.17 dom0less domU with these boot arguments;
    /// with a `job`, beside the Linux guest as dom0 running it on the same pCPU, else alone.
    XenFreertos(&'static str),
    /// Partita with this configuration as `make run` boots it (its console view, each VM's
    /// output logged, idle time on the wall clock), with a person typing this script.
    Typed(&'static str, &'static [Step]),
}

pub struct Scenario {
    pub name: &'static str,
    pub boot: Boot,
    /// The command every Linux VM (or native Linux) runs instead of its shell.
    pub job: Option<&'static str>,
    pub cpu: Cpu,
    /// Deterministic virtual time (`-icount shift=0,align=off,sleep=off`): every scenario
    /// that asserts on timing the guests report runs with it.
    pub icount: bool,
    pub end: End,
    pub timeout_secs: u64,
    pub expect: &'static [Expect],
}

impl Scenario {
    /// The clock QEMU runs the scenario with: a typed scenario's is `make run`'s.
    pub fn clock(&self) -> Clock {
        let interactive = matches!(self.boot, Boot::Typed(..));
        Clock::for_run(self.icount, interactive)
    }
}

/// A person at `make run`'s console (configs/default.toml: VM 1 is FreeRTOS, VM 2 Linux,
/// which has the console at start): the Linux shell works with its escape sequences intact
/// while FreeRTOS's lines stay off the terminal; Ctrl-\ 1 shows FreeRTOS with what it wrote
/// meanwhile; Ctrl-\ 2 returns to the shell's prompt; Linux powers off and FreeRTOS goes
/// on (Ctrl-\ 0 shows its tagged lines); Ctrl-A x quits QEMU; the logs hold both VMs'
/// lines.
const CONSOLE_SCRIPT: &[Step] = &[
    Step::Shows("[partita] console: input goes to vm linux, the terminal shows it alone"),
    Step::Mark,
    Step::Shows("Booting Linux on physical CPU"),
    Step::Shows("/ # "),
    Step::NotShown("rt: samples="),
    Step::NotShown("hello from FreeRTOS"),
    Step::Shows("\x1b[6n"),
    Step::Type("echo hello-$((6*7))\r"),
    Step::Shows("hello-42\r\n/ # "),
    Step::Type("\x1c1"),
    Step::Shows("[partita] console: vm freertos (Ctrl-\\ then 0 shows all VMs)\r\n"),
    Step::Shows("rt: samples="),
    Step::Type("\x1c2"),
    Step::Shows("[partita] console: vm linux (Ctrl-\\ then 0 shows all VMs)\r\n/ # "),
    Step::Mark,
    Step::Type("sleep 3; echo slept-$((1+1))\r"),
    Step::Shows("slept-2"),
    Step::NotShown("rt: samples="),
    Step::NotShown("[freertos]"),
    Step::Type("poweroff\r"),
    Step::Shows("[partita] vm linux: powered off"),
    Step::Type("\x1c0"),
    Step::Shows("[partita] console: all VMs"),
    Step::Shows("[freertos] rt: samples="),
    Step::Shows("[freertos] rt: samples="),
    Step::Type("\x01x"),
    Step::Logged("linux", "hello-42"),
    Step::Logged("linux", "slept-2"),
    Step::Logged("freertos", "rt: samples="),
];

const PROBE_PASSED: &str = "[probe] probe: all * checks passed";
const PROBE_FAILED: &str = "[probe] FAIL *";
const PANIC: &str = "[partita] panic: *";
const PROBE_FAULT: &str = "[partita] vm probe: fault: *";
const PROBE_BOOT: &str = "[probe] probe: started*";
const PROBE_REBOOTED: &str = "[probe] probe: reset worked, boot 2";

const CLEAN_PROBE: &[Expect] = &[
    Expect::Line(PROBE_PASSED),
    Expect::NoLine(PROBE_FAILED),
    Expect::NoLine(PANIC),
    Expect::NoLine(PROBE_FAULT),
];

const LINUX_JOB_START: &str = "[linux] partita: job start";
const LINUX_FAULT: &str = "[partita] vm linux: fault: *";
const LINUX_CONFIG: &str = "configs/tests/linux.toml";

/// Counts the arch timer's interrupts a second apart: the timer keeps ticking in the guest.
const TIMER_JOB: &str = "a=$(awk '/arch_timer/{print $2}' /proc/interrupts); sleep 1; \
    b=$(awk '/arch_timer/{print $2}' /proc/interrupts); echo \"timer interrupts $a then $b\"; \
    [ \"$b\" -gt \"$a\" ]";

/// What the timer job prints when the timer kept ticking, and the clean power-off after it.
const TIMER_TICKED: &[Expect] = &[
    Expect::Line(LINUX_JOB_START),
    Expect::Line("[linux] timer interrupts * then *"),
    Expect::Line("[linux] partita: job exit 0"),
    Expect::Line("[partita] vm linux: powered off"),
    Expect::NoLine(PANIC),
    Expect::NoLine(LINUX_FAULT),
];

/// The native FreeRTOS guest's boot arguments in `freertos-thread-metric-native`, as
/// configs/tests/freertos-thread-metric.toml gives them under Partita.
const THREAD_METRIC_BOOTARGS: &str = "bench=thread-metric bench.period_ms=50";

/// FreeRTOS's Thread-Metric tests (lines prefixed with `$tag`), natively and under Partita:
/// every test scores above 0 and passes its check, the interrupt tests in both variants,
/// raising a self-SGI (trapped and injected by a hypervisor) and a software interrupt
/// (an SVC, which stays at EL1).
macro_rules! thread_metric {
    ($tag:literal) => {
        &[
            Expect::Line(concat!($tag, "bench: experiment=thread-metric test=interrupt metric=score value=* unit=count")),
            Expect::Line(concat!($tag, "bench: experiment=thread-metric test=interrupt metric=check value=pass unit=bool")),
            Expect::Line(concat!($tag, "bench: experiment=thread-metric test=interrupt-preemption metric=check value=pass unit=bool")),
            Expect::Line(concat!($tag, "bench: experiment=thread-metric test=interrupt-svc metric=score value=* unit=count")),
            Expect::Line(concat!($tag, "bench: experiment=thread-metric test=interrupt-svc metric=check value=pass unit=bool")),
            Expect::Line(concat!($tag, "bench: experiment=thread-metric test=interrupt-preemption-svc metric=score value=* unit=count")),
            Expect::Line(concat!($tag, "bench: experiment=thread-metric test=interrupt-preemption-svc metric=check value=pass unit=bool")),
            Expect::Line(concat!($tag, "bench: experiment=thread-metric test=memory metric=check value=pass unit=bool")),
            Expect::Line(concat!($tag, "bench: done")),
            Expect::NoLine(concat!($tag, "bench: experiment=thread-metric test=* metric=score value=0 unit=count")),
            Expect::NoLine(concat!($tag, "bench: experiment=thread-metric test=* metric=check value=fail unit=bool")),
            Expect::NoLine(PANIC),
            Expect::NoLine(FREERTOS_FAULT),
        ]
    };
}

/// The workloads Linux must complete under Partita and natively (issue 3).
const WORKLOAD_JOB: &str = "set -e; cat /proc/version; \
    cyclictest -m -q -p 80 -i 1000 -l 1000; hackbench -g 2 -l 50; \
    sysbench cpu --time=0 --events=200 run";

/// What the workload job prints, with or without the `[linux] ` tag of Partita's console.
const WORKLOAD_DONE: &[Expect] = &[
    Expect::Line("*Linux version 6.1.0-* (debian-kernel@lists.debian.org) *"),
    Expect::Line("*T: 0 (*) P:80 I:1000 C:   1000 Min:*Avg:*Max:*"),
    Expect::Line("*Time: *"),
    Expect::Line("*total number of events:*200"),
    Expect::Line("*partita: job exit 0"),
    Expect::NoLine(PANIC),
    Expect::NoLine(LINUX_FAULT),
];

const FREERTOS_RT: &str = "[freertos] rt: samples=*";
const FREERTOS_NO_MISS: &str = "[freertos] rt: samples=* misses=0";
const FREERTOS_FAULT: &str = "[partita] vm freertos: fault: *";
const XEN_PANIC: &str = "(XEN) *Panic on CPU *";
const LINUX_POWERED_OFF: &str = "[partita] vm linux: powered off";
const FREERTOS_POWERED_OFF: &str = "[partita] vm freertos: powered off";
/// The load Linux runs beside FreeRTOS on the shared CPU (issue 4).
const LOAD_JOB: &str = "hackbench -g 4 -l 2000 && stress-ng --cpu 1 --timeout 5s";
/// Console lines without a pause, until QEMU is stopped (`console-latency`).
const CONSOLE_JOB: &str = "i=0; while :; do echo \"a console line, number $i\"; i=$((i+1)); done";
/// A lighter load, for the split system (whose two emulated CPUs take twice the host time)
/// and for the variants of the shared one.
const SPLIT_LOAD_JOB: &str = "hackbench -g 4 -l 200 && stress-ng --cpu 1 --timeout 2s";
/// What every run of FreeRTOS beside a Linux job checks (FreeRTOS and the job ran, Linux
/// powered off, nothing faulted or panicked), with the given expectations on FreeRTOS.
macro_rules! beside_linux {
    ($($freertos:expr),+) => {
        &[
            Expect::Line("[freertos] hello from FreeRTOS task 1"),
            Expect::Line("*Time: *"),
            Expect::Line("[linux] stress-ng: info: * successful run completed in *"),
            Expect::Line("[linux] partita: job exit 0"),
            Expect::Line(LINUX_POWERED_OFF),
            $($freertos,)+
            Expect::NoLine(PANIC),
            Expect::NoLine(LINUX_FAULT),
            Expect::NoLine(FREERTOS_FAULT),
        ]
    };
}
/// FreeRTOS's latency benchmark (quick: 2,000 samples) beside a Linux printing console lines
/// without a pause on one CPU (`CONSOLE_JOB`), booted from `config`: no deadline missed, the
/// worst dispatch latency at most `max_ns`, and FreeRTOS then stops for good while Linux
/// keeps the CPU busy (a stop that waited for room before Linux's events, which a busy Linux
/// never leaves, never came: the bench's rows beside hackbench ran to their deadline).
macro_rules! console_latency {
    ($name:expr, $config:expr, $max_ns:expr) => {
        Scenario {
            name: $name,
            boot: Boot::Partita($config),
            job: Some(CONSOLE_JOB),
            cpu: Cpu::CortexA72,
            icount: true,
            end: End::StopWhen(StopWhen {
                after: None,
                pattern: FREERTOS_POWERED_OFF,
                count: 1,
            }),
            // About 30 s on an idle host.
            timeout_secs: 300,
            expect: &[
                Expect::Line(
                    "[freertos] bench: experiment=dispatch metric=samples value=2000 unit=count",
                ),
                Expect::Line("[freertos] bench: done"),
                Expect::Line("[partita] counters vm=freertos *"),
                Expect::Line(FREERTOS_POWERED_OFF),
                Expect::Line(
                    "[freertos] bench: experiment=dispatch metric=misses value=0 unit=count",
                ),
                Expect::AtMost(
                    "[freertos] bench: experiment=dispatch metric=max *",
                    "value=",
                    $max_ns,
                ),
                Expect::CountAtLeast("[linux] a console line, number *", 1_000),
                Expect::NoLine(PANIC),
            ],
        }
    };
}
/// The split system: both VMs run and FreeRTOS outlives Linux. Its deadline misses are not
/// asserted: under -icount QEMU 7.2 runs the two CPUs in turn on one host thread and CPU 0
/// waits for the end of CPU 1's turn (docs/design.md, "Time on QEMU with more than one
/// CPU", has the measurements).
const SPLIT_BESIDE_LINUX: &[Expect] = beside_linux!(Expect::CountAtLeast(FREERTOS_RT, 4));
/// FreeRTOS ticking on the passed-through EL1 physical timer beside a Linux job: every one
/// of its lines reports no deadline miss.
const PHYSICAL_TICK_BESIDE_LINUX: &[Expect] = beside_linux!(
    Expect::Line("[freertos] tick: physical timer, interrupt 30"),
    Expect::Every(FREERTOS_RT, FREERTOS_NO_MISS)
);
/// Three more FreeRTOS lines once Linux has powered off.
const AFTER_LINUX_OFF: End = End::StopWhen(StopWhen {
    after: Some(LINUX_POWERED_OFF),
    pattern: FREERTOS_RT,
    count: 3,
});

/// Linux on four vCPUs (configs/linux-smp.toml): it counts its CPUs, takes CPU 3 offline
/// and back (PSCI CPU_OFF, then CPU_ON), and runs hackbench and sysbench's threads test on
/// all of them. Without `-icount` the guest's clock is the host's, so sysbench is bounded by
/// its events only (`--time=0`), never by its default 10 seconds, which a busy host cut
/// short (713 of 2,000 events once).
const SMP_JOB: &str = "nproc; echo 0 > /sys/devices/system/cpu/cpu3/online; \
    cat /sys/devices/system/cpu/online; echo 1 > /sys/devices/system/cpu/cpu3/online; \
    cat /sys/devices/system/cpu/online; nproc; hackbench -g 4 -l 200 && \
    sysbench threads --threads=4 --time=0 --events=2000 run | grep 'total number of events'";
const LINUX_SMP: &[Expect] = &[
    Expect::Line("[partita] 1 VM(s) on 4 CPU(s)"),
    Expect::Line("[linux] *smp: Brought up 1 node, 4 CPUs"),
    Expect::Count("[linux] 4", 2),
    Expect::Line("[linux] 0-2"),
    Expect::Line("[linux] 0-3"),
    Expect::Line("[linux] *psci: CPU3 killed*"),
    Expect::Line("*Time: *"),
    Expect::Line("[linux] *total number of events: *2000"),
    Expect::Line("[linux] partita: job exit 0"),
    Expect::Line(LINUX_POWERED_OFF),
    Expect::NoLine(PANIC),
    Expect::NoLine(LINUX_FAULT),
];
/// A load on both of Linux's vCPUs in the SPUMONE topology (configs/mixed.toml).
const MIXED_LOAD_JOB: &str = "hackbench -g 4 -l 200 && stress-ng --cpu 2 --timeout 2s";
/// The same with vCPU migration on (configs/tests/mixed-migrate.toml): Linux's vCPU 0 moved
/// to CPU 1 while FreeRTOS ran, and both vCPUs finished their work.
const MIXED_MIGRATE_BESIDE_LINUX: &[Expect] = beside_linux!(
    Expect::Line("[linux] *smp: Brought up 1 node, 2 CPUs"),
    Expect::Line("[linux] stress-ng: info: * dispatching hogs: 2 cpu"),
    Expect::Line("[partita] vm linux: * vCPU migrations"),
    Expect::CountAtLeast(FREERTOS_RT, 4)
);
/// The mixed system under that load: FreeRTOS runs throughout and both of Linux's vCPUs run
/// (stress-ng's two workers finish). FreeRTOS's deadline misses while Linux's vCPU 1 is
/// busy on the other CPU are QEMU 7.2's turn-taking under -icount, not asserted, as in `SPLIT_BESIDE_LINUX` (docs/smp.md has the measurements).
const MIXED_BESIDE_LINUX: &[Expect] = beside_linux!(
    Expect::Line("[linux] *smp: Brought up 1 node, 2 CPUs"),
    Expect::Line("[linux] stress-ng: info: * dispatching hogs: 2 cpu"),
    Expect::CountAtLeast(FREERTOS_RT, 4)
);

/// Restart lines of a VM (each with the heap in use as it starts) and its power-off restarts.
const LINUX_STARTS: &str = "[partita] vm linux: starting (boot *, heap * B)";
const LINUX_RESTARTED: &str = "[partita] vm linux: powered off; restarting (boot *)";
const PROBE_STARTS: &str = "[partita] vm probe: starting (boot *, heap * B)";
const PROBE_RESTARTED: &str = "[partita] vm probe: fault: *; restarting (boot *)";
const HEAP: &str = "heap ";

const HOSTILE_CONFIG: &str = "configs/tests/hostile.toml";
/// Three FreeRTOS reports after the probe VM's last line.
const AFTER_HOSTILE_DONE: End = End::StopWhen(StopWhen {
    after: Some("[hostile] hostile: done, *"),
    pattern: FREERTOS_RT,
    count: 3,
});
const HOSTILE_OUTLINE: &[Expect] = &[
    Expect::Line("[hostile] hostile: done, * probes, 0 breaches"),
    Expect::NoLine("[hostile] hostile: probe * BREACH *"),
    Expect::Line("[partita] vm wreck: fault: *"),
    Expect::Line("[spin] hostile: spin: *"),
    Expect::Line("[partita] vm hostile: powered off"),
    // The IVC probes broke the ring FreeRTOS reads: it says so once and goes on.
    Expect::Line("[freertos] ivc: the peer's ring is broken (Corrupt); emptied"),
    Expect::Every(FREERTOS_RT, FREERTOS_NO_MISS),
    Expect::NoLine(FREERTOS_FAULT),
    Expect::NoLine(PANIC),
];

/// FreeRTOS and Linux exchange 10,000 checksummed messages each way over the default
/// system's channel, on the shared CPU (configs/tests/ivc-exchange.toml).
const IVC_EXCHANGE: &[Expect] = &[
    Expect::Line("[freertos] ivc: channel 0 at 0x30000000 (65536 bytes, doorbell 40), ring 0 of 2, mode Exchange"),
    Expect::Line("[linux] *partita-ivc 30000000.ivc: /dev/partita-ivc0: 65536 bytes at *, ring 1 of 2"),
    Expect::Line("[freertos] ivc: exchange sent=10000 received=10000 bad=0"),
    Expect::Line("[linux] partita-ivc: exchange sent=10000 received=10000 bad=0"),
    Expect::Line("[linux] partita: job exit 0"),
    Expect::Line(LINUX_POWERED_OFF),
    Expect::CountAtLeast(FREERTOS_RT, 3),
    Expect::Every(FREERTOS_RT, FREERTOS_NO_MISS),
    Expect::NoLine(PANIC),
    Expect::NoLine(LINUX_FAULT),
    Expect::NoLine(FREERTOS_FAULT),
];
/// The same across CPUs: every doorbell is an SGI to the other CPU. FreeRTOS's misses are
/// not asserted, as for every split run under -icount (`SPLIT_BESIDE_LINUX`).
const IVC_EXCHANGE_SPLIT: &[Expect] = &[
    Expect::Line("[freertos] ivc: exchange sent=10000 received=10000 bad=0"),
    Expect::Line("[linux] partita-ivc: exchange sent=10000 received=10000 bad=0"),
    Expect::Line("[linux] partita: job exit 0"),
    Expect::Line(LINUX_POWERED_OFF),
    Expect::CountAtLeast(FREERTOS_RT, 3),
    Expect::NoLine(PANIC),
    Expect::NoLine(LINUX_FAULT),
    Expect::NoLine(FREERTOS_FAULT),
];
/// The demo of docs/ivc.md on the default system: Linux changes FreeRTOS's sample period,
/// reads samples at the new period, sends a text and times round trips.
const IVC_DEMO_JOB: &str = "set -e; partita-ivc period 20; partita-ivc recv 3; \
    partita-ivc send hello; partita-ivc ping 100";
const IVC_DEMO: &[Expect] = &[
    Expect::Line("[freertos] ivc: sample period 20 ms"),
    Expect::Count(
        "[linux] partita-ivc: sample samples=* misses=0 period_ms=20",
        3,
    ),
    Expect::Line("[freertos] ivc: text \"hello\""),
    Expect::Line("[linux] partita-ivc: ping n=100 min_ns=* mean_ns=* p99_ns=* max_ns=*"),
    Expect::Line("[linux] partita: job exit 0"),
    Expect::Every(FREERTOS_RT, FREERTOS_NO_MISS),
    Expect::NoLine(PANIC),
    Expect::NoLine(LINUX_FAULT),
    Expect::NoLine(FREERTOS_FAULT),
];

/// Linux panicked in its job and, with `on_reset = "fault"`, was stopped.
const LINUX_PANIC: &[Expect] = &[
    Expect::Line(LINUX_JOB_START),
    Expect::Line("[linux] *Kernel panic - not syncing: sysrq triggered crash"),
    Expect::Line("[partita] vm linux: reset requested; stopped (on_reset = \"fault\")"),
    Expect::NoLine("[linux] partita: job exit *"),
    Expect::NoLine(PANIC),
];

/// Linux's `reboot -f` twice (boot 3 started) while FreeRTOS keeps its deadlines.
const LINUX_REBOOTED_TWICE: End = End::StopWhen(StopWhen {
    after: Some("[partita] vm linux: reset (boot 3)"),
    pattern: FREERTOS_RT,
    count: 1,
});
const LINUX_REBOOTS_BESIDE_FREERTOS: &[Expect] = &[
    Expect::CountAtLeast(LINUX_JOB_START, 2),
    Expect::Line("[partita] vm linux: reset (boot 2)"),
    Expect::CountAtLeast(FREERTOS_RT, 2),
    Expect::Line("[freertos] hello from FreeRTOS task 1"),
    Expect::Every(FREERTOS_RT, FREERTOS_NO_MISS),
    Expect::NoLine(FREERTOS_FAULT),
    Expect::NoLine("[partita] vm freertos: reset*"),
    Expect::NoLine(PANIC),
];

/// A probe crashing at every boot, rebuilt 20 times beside FreeRTOS with the same heap.
const PROBE_RESTARTED_20_TIMES: End = End::StopWhen(StopWhen {
    after: Some("[partita] vm probe: starting (boot 21, *"),
    pattern: "[freertos] hello from FreeRTOS task 1",
    count: 2,
});
const PROBE_RESTARTS_BESIDE_FREERTOS: &[Expect] = &[
    Expect::CountAtLeast(PROBE_RESTARTED, 20),
    Expect::CountAtLeast("[probe] probe: crashing on purpose", 20),
    Expect::Steady(PROBE_STARTS, HEAP),
    Expect::Count("[partita] vm freertos: starting (boot *", 1),
    Expect::NoLine("[partita] vm probe: fault: *; stopped"),
    Expect::NoLine(FREERTOS_FAULT),
    Expect::NoLine(PANIC),
];

/// The probe's smp mode passed and both vCPUs' VM powered off.
const PROBE_SMP: &[Expect] = &[
    Expect::Line("[probe] probe: smp: all 5 checks passed"),
    Expect::NoLine("[probe] FAIL *"),
    Expect::Line("[partita] all VMs powered off"),
];

/// The `spi` probe VM got its own SPI ten times and not the one it does not own.
const PROBE_SPI: &[Expect] = &[
    Expect::Line("[spi] probe: spi 40: 10 of 10 delivered; spi 41 (not owned): not delivered"),
    Expect::Line("[probe] probe: all * checks passed"),
    Expect::Line("[partita] vm spi: powered off"),
    Expect::NoLine(PANIC),
    Expect::NoLine("[partita] vm spi: fault: *"),
];

/// Ker-ONE's OFDM experiment (configs/ofdm.toml, docs/accelerators.md): every job of the RTOS
/// VM's two tasks and the GPOS VM's three gives the software reference's result, the
/// fabric preempted and reconfigured at least once and saved a preempted task's context at a
/// consistency point (a T_irq_stop sample, which paths 3 and 4 need), refused nothing, the
/// RTOS's worst
/// allocation latency is within eq. 5's bound, and neither FreeRTOS missed a release.
const OFDM: &[Expect] = &[
    Expect::Line("[rtos] ofdm: task=qam16 model=native jobs=8 frames=8 ok=8 bad=0 *"),
    Expect::Line("[rtos] ofdm: task=fft512 model=guest jobs=8 frames=8 ok=8 bad=0 *"),
    Expect::Line("[gpos] ofdm: task=qam64 model=native jobs=24 frames=72 ok=24 bad=0 *"),
    Expect::Line("[gpos] ofdm: task=fft1024 model=guest jobs=24 frames=72 ok=24 bad=0 *"),
    Expect::Line("[gpos] ofdm: task=fft512 model=guest jobs=24 frames=72 ok=24 bad=0 *"),
    Expect::Line("[rtos] ofdm: done; rt: samples=* misses=0"),
    Expect::Line("[gpos] ofdm: done; rt: samples=* misses=0"),
    Expect::Line("[partita] fabric: requests=* preemptions=* reconfigurations=* refused=0 *"),
    Expect::NoLine("[partita] fabric: * preemptions=0 *"),
    Expect::NoLine("[partita] fabric: * reconfigurations=0 *"),
    Expect::NoLine("[partita] fabric: part=irq_stop n=0 *"),
    Expect::Line("[partita] fabric: frame_worst_ns=* rtos_alloc_worst_ns=* within=true"),
    Expect::Line("[partita] all VMs powered off"),
    Expect::NoLine("[partita] vm *: fault*"),
    Expect::NoLine(PANIC),
];

/// Linux's user-space program on the fabric beside the RTOS's OFDM tasks
/// (configs/tests/ofdm-linux.toml): `partita-ofdm` maps its interface pages and buffers from
/// /dev/mem and runs jobs of all four functions (QAM-16, QAM-64, FFT-512, FFT-1024) in the
/// native model, each checked against its software reference; FreeRTOS keeps every result right and `misses=0`.
const OFDM_LINUX_JOB: &str = "set -e; partita-ofdm 0x0a000000 0x50000000 qam16 6 2; \
    partita-ofdm 0x0a001000 0x50400000 qam64 6 2; \
    partita-ofdm 0x0a002000 0x50800000 fft512 4 2; \
    partita-ofdm 0x0a003000 0x50c00000 fft1024 4 2";
const OFDM_LINUX: &[Expect] = &[
    Expect::Line("[linux] partita-ofdm: function=qam16 jobs=6 frames=12 ok=6 bad=0 *"),
    Expect::Line("[linux] partita-ofdm: function=qam64 jobs=6 frames=12 ok=6 bad=0 *"),
    Expect::Line("[linux] partita-ofdm: function=fft512 jobs=4 frames=8 ok=4 bad=0 *"),
    Expect::Line("[linux] partita-ofdm: function=fft1024 jobs=4 frames=8 ok=4 bad=0 *"),
    Expect::Line("[linux] partita: job exit 0"),
    Expect::Line("[rtos] ofdm: task=qam16 model=native jobs=12 frames=12 ok=12 bad=0 *"),
    Expect::Line("[rtos] ofdm: task=fft512 model=guest jobs=12 frames=12 ok=12 bad=0 *"),
    Expect::Line("[rtos] ofdm: done; rt: samples=* misses=0"),
    Expect::Line("[partita] fabric: requests=* refused=0 *"),
    Expect::Line("[partita] fabric: frame_worst_ns=* rtos_alloc_worst_ns=* within=true"),
    Expect::Line("[partita] all VMs powered off"),
    Expect::NoLine("[partita] vm *: fault*"),
    Expect::NoLine(PANIC),
];

/// The fabric's hostile probes beside the RTOS's OFDM tasks (configs/tests/hostile-fabric.toml):
/// every probe held (interfaces not its own abort, DMA outside the VM is refused, a request
/// storm is contained, writes into a suspended job's saved context are dropped and the job
/// resumes right), and FreeRTOS got every result right without a miss.
const HOSTILE_FABRIC: &[Expect] = &[
    Expect::Line("[prober] hostile: done, 4 probes, 0 breaches"),
    Expect::Line("[prober] fabric: storm rounds=* unconnected_writes=*"),
    Expect::Line("[prober] hostile: probe 03 request-storm: contained ok"),
    Expect::Line("[prober] fabric: tampered with the suspended * job's context, 256 words"),
    Expect::Line("[prober] hostile: probe 04 context-tamper: ignored ok"),
    Expect::NoLine("[prober] hostile: probe * BREACH *"),
    Expect::Line("[rtos] ofdm: task=qam16 model=native jobs=12 frames=12 ok=12 bad=0 *"),
    Expect::Line("[rtos] ofdm: task=fft512 model=guest jobs=12 frames=12 ok=12 bad=0 *"),
    Expect::Line("[rtos] ofdm: done; rt: samples=* misses=0"),
    Expect::NoLine("[partita] fabric: * refused=0 *"),
    Expect::Line("[partita] fabric: frame_worst_ns=* rtos_alloc_worst_ns=* within=true"),
    Expect::Line("[partita] all VMs powered off"),
    Expect::NoLine("[partita] vm *: fault*"),
    Expect::NoLine(PANIC),
];

pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "probe-cortex-a72",
        boot: Boot::Partita("configs/probe.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 60,
        expect: CLEAN_PROBE,
    },
    Scenario {
        name: "probe-max",
        boot: Boot::Partita("configs/probe.toml"),
        job: None,
        cpu: Cpu::Max,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 60,
        expect: CLEAN_PROBE,
    },
    Scenario {
        name: "probe-cortex-a53",
        boot: Boot::Partita("configs/probe.toml"),
        job: None,
        cpu: Cpu::CortexA53,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 60,
        expect: CLEAN_PROBE,
    },
    Scenario {
        // The probe on the GICv2 board: the same checks through the emulated GICv2
        // distributor and the board's GICV as the CPU interface.
        name: "probe-zcu102",
        boot: Boot::Partita("configs/zcu102/probe.toml"),
        job: None,
        cpu: Cpu::CortexA53,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 60,
        expect: CLEAN_PROBE,
    },
    Scenario {
        name: "probe-smp",
        boot: Boot::Partita("configs/tests/probe-smp.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        end: End::Exit(0),
        timeout_secs: 120,
        expect: PROBE_SMP,
    },
    Scenario {
        // The smp mode on a GICv2 board: GICD_SGIR and GICD_ITARGETSR with two vCPUs.
        name: "zcu102-probe-smp",
        boot: Boot::Partita("configs/tests/zcu102-probe-smp.toml"),
        job: None,
        cpu: Cpu::CortexA53,
        icount: true,
        end: End::Exit(0),
        timeout_secs: 120,
        expect: PROBE_SMP,
    },
    Scenario {
        name: "probe-crash",
        boot: Boot::Partita("configs/tests/probe-crash.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: false,
        end: End::Exit(1),
        timeout_secs: 60,
        expect: &[
            Expect::Line("[probe] probe: crashing on purpose"),
            Expect::Line(PROBE_FAULT),
            Expect::NoLine(PANIC),
        ],
    },
    Scenario {
        name: "probe-reset",
        boot: Boot::Partita("configs/tests/probe-reset.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 60,
        expect: &[
            Expect::Count(PROBE_BOOT, 2),
            Expect::Line(PROBE_REBOOTED),
            Expect::NoLine(PROBE_FAILED),
            Expect::NoLine(PANIC),
            Expect::NoLine(PROBE_FAULT),
        ],
    },
    Scenario {
        name: "probe-spi",
        boot: Boot::Partita("configs/tests/probe-spi.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 60,
        expect: PROBE_SPI,
    },
    Scenario {
        // probe-spi on the ZCU102: the SPI raised in the GIC-400 and forwarded with the HW
        // bit of a GICv2 list register.
        name: "zcu102-probe-spi",
        boot: Boot::Partita("configs/tests/zcu102-probe-spi.toml"),
        job: None,
        cpu: Cpu::CortexA53,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 60,
        expect: PROBE_SPI,
    },
    Scenario {
        name: "linux-timer",
        boot: Boot::Partita(LINUX_CONFIG),
        job: Some(TIMER_JOB),
        cpu: Cpu::CortexA72,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 180,
        expect: TIMER_TICKED,
    },
    Scenario {
        name: "linux-timer-max",
        boot: Boot::Partita(LINUX_CONFIG),
        job: Some(TIMER_JOB),
        cpu: Cpu::Max,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 180,
        expect: TIMER_TICKED,
    },
    Scenario {
        name: "linux-timer-a53",
        boot: Boot::Partita(LINUX_CONFIG),
        job: Some(TIMER_JOB),
        cpu: Cpu::CortexA53,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 180,
        expect: TIMER_TICKED,
    },
    Scenario {
        // The shipped system on the embedded boards' core: FreeRTOS keeps its deadlines
        // beside Linux running a job on the same Cortex-A53.
        name: "default-linux-a53",
        boot: Boot::Partita("configs/default.toml"),
        job: Some("hackbench -g 2 -l 100"),
        cpu: Cpu::CortexA53,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: &[
            Expect::Line("[linux] partita: job exit 0"),
            Expect::Line(LINUX_POWERED_OFF),
            Expect::CountAtLeast(FREERTOS_RT, 3),
            Expect::Every(FREERTOS_RT, FREERTOS_NO_MISS),
            Expect::NoLine(FREERTOS_FAULT),
            Expect::NoLine(PANIC),
        ],
    },
    Scenario {
        // The second board: Debian's kernel on QEMU's ZCU102 (Cortex-A53, GIC-400) finds the
        // generated GICv2, takes its timer through the GICv2 list registers, sleeps (an idle
        // guest woken by its virtual timer) and powers off.
        name: "zcu102-linux",
        boot: Boot::Partita("configs/zcu102/linux.toml"),
        job: Some("sleep 1 && cat /proc/interrupts"),
        cpu: Cpu::CortexA53,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 240,
        expect: &[
            Expect::Line("[linux] [    0.000000] Root IRQ handler: gic_handle_irq"),
            Expect::Line("[linux]  *: * GIC-0  27 Level     arch_timer"),
            Expect::Line("[linux] partita: job exit 0"),
            Expect::Line(LINUX_POWERED_OFF),
            Expect::Line("[partita] all VMs powered off"),
            Expect::NoLine(PANIC),
            Expect::NoLine(LINUX_FAULT),
        ],
    },
    Scenario {
        // The shipped system on the ZCU102 (configs/zcu102/default.toml): FreeRTOS, built
        // for the GICv2 (ARM_AARCH64 port), keeps its deadlines beside Linux running a load
        // on the same Cortex-A53, and outlives Linux's power-off.
        name: "zcu102-default",
        boot: Boot::Partita("configs/zcu102/default.toml"),
        job: Some(SPLIT_LOAD_JOB),
        cpu: Cpu::CortexA53,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: &[
            Expect::Line(
                "[freertos] Partita FreeRTOS guest: FreeRTOS-Kernel V11.2.0, ARM_AARCH64 port at EL1 (entered at EL1)",
            ),
            Expect::Line("[freertos] platform *gicv2 distributor 0xf9010000 cpu interface 0xf902f000*"),
            Expect::Line("[freertos] hello from FreeRTOS task 1"),
            Expect::Line("*Time: *"),
            Expect::Line("[linux] stress-ng: info: * successful run completed in *"),
            Expect::Line("[linux] partita: job exit 0"),
            Expect::Line(LINUX_POWERED_OFF),
            Expect::CountAtLeast(FREERTOS_RT, 3),
            Expect::Every(FREERTOS_RT, FREERTOS_NO_MISS),
            Expect::NoLine(PANIC),
            Expect::NoLine(LINUX_FAULT),
            Expect::NoLine(FREERTOS_FAULT),
        ],
    },
    Scenario {
        // Each VM on its own Cortex-A53 of the ZCU102 (configs/zcu102/split.toml): Partita
        // starts CPU 1 with QEMU's built-in PSCI (CPU_ON through SMC).
        name: "zcu102-split",
        boot: Boot::Partita("configs/zcu102/split.toml"),
        job: Some(SPLIT_LOAD_JOB),
        cpu: Cpu::CortexA53,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 300,
        expect: SPLIT_BESIDE_LINUX,
    },
    Scenario {
        name: "linux-beside-probe",
        boot: Boot::Partita("configs/tests/linux-beside-probe.toml"),
        job: Some(TIMER_JOB),
        cpu: Cpu::CortexA72,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 180,
        expect: &[
            Expect::Line(PROBE_PASSED),
            Expect::NoLine(PROBE_FAILED),
            Expect::Line("[linux] timer interrupts * then *"),
            Expect::Line("[linux] partita: job exit 0"),
            Expect::Line("[partita] all VMs powered off"),
            Expect::NoLine(PANIC),
            Expect::NoLine(LINUX_FAULT),
        ],
    },
    Scenario {
        name: "linux-panic",
        boot: Boot::Partita(LINUX_CONFIG),
        job: Some("echo c > /proc/sysrq-trigger"),
        cpu: Cpu::CortexA72,
        icount: false,
        end: End::Exit(1),
        timeout_secs: 180,
        expect: LINUX_PANIC,
    },
    Scenario {
        // A Linux panic on the ZCU102 (configs/zcu102/linux.toml, `on_reset = "fault"`).
        name: "zcu102-linux-panic",
        boot: Boot::Partita("configs/zcu102/linux.toml"),
        job: Some("echo c > /proc/sysrq-trigger"),
        cpu: Cpu::CortexA53,
        icount: false,
        end: End::Exit(1),
        timeout_secs: 240,
        expect: LINUX_PANIC,
    },
    Scenario {
        name: "linux-workloads",
        boot: Boot::Partita(LINUX_CONFIG),
        job: Some(WORKLOAD_JOB),
        cpu: Cpu::CortexA72,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 300,
        expect: WORKLOAD_DONE,
    },
    Scenario {
        // The workloads under Partita on the ZCU102's Cortex-A53 (configs/zcu102/linux.toml).
        name: "zcu102-linux-workloads",
        boot: Boot::Partita("configs/zcu102/linux.toml"),
        job: Some(WORKLOAD_JOB),
        cpu: Cpu::CortexA53,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 300,
        expect: WORKLOAD_DONE,
    },
    Scenario {
        name: "linux-workloads-native",
        boot: Boot::NativeLinux,
        job: Some(WORKLOAD_JOB),
        cpu: Cpu::CortexA72,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 300,
        expect: WORKLOAD_DONE,
    },
    Scenario {
        name: "freertos-native",
        boot: Boot::NativeFreertos("rt.samples=2000"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        end: End::Exit(0),
        timeout_secs: 60,
        expect: &[
            Expect::Line("Partita FreeRTOS guest: *"),
            Expect::Line("hello from FreeRTOS task 1"),
            Expect::Line("goodbye from FreeRTOS task 2"),
            Expect::Line("rt: samples=2000 * misses=0"),
        ],
    },
    Scenario {
        name: "freertos-partita",
        boot: Boot::Partita("configs/tests/freertos.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        end: End::Exit(0),
        timeout_secs: 60,
        expect: &[
            Expect::Line("[freertos] Partita FreeRTOS guest: *"),
            Expect::Line("[freertos] hello from FreeRTOS task 1"),
            Expect::Line("[freertos] goodbye from FreeRTOS task 2"),
            Expect::Line("[freertos] rt: samples=2000 * misses=0"),
            Expect::Line("[partita] all VMs powered off"),
            Expect::NoLine(PANIC),
            Expect::NoLine(FREERTOS_FAULT),
        ],
    },
    Scenario {
        name: "freertos-thread-metric-native",
        boot: Boot::NativeFreertos(THREAD_METRIC_BOOTARGS),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        end: End::Exit(0),
        timeout_secs: 120,
        expect: thread_metric!(""),
    },
    Scenario {
        name: "freertos-thread-metric-partita",
        boot: Boot::Partita("configs/tests/freertos-thread-metric.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        end: End::Exit(0),
        timeout_secs: 120,
        expect: thread_metric!("[freertos] "),
    },
    Scenario {
        name: "freertos-xen",
        boot: Boot::XenFreertos("rt.samples=2000"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        // Xen never halts the machine when its only domU powers off.
        end: End::StopWhen(StopWhen {
            after: None,
            pattern: "(XEN) DOM1: rt: samples=2000 *",
            count: 1,
        }),
        timeout_secs: 300,
        expect: &[
            Expect::Line("(XEN) Using scheduler: SMP Credit Scheduler rev2 (credit2)"),
            Expect::Line("(XEN) *** LOADING DOMU cpus=1 memory=4000KB ***"),
            Expect::NoLine("(XEN) *** LOADING DOMAIN 0 ***"),
            Expect::Line("(XEN) DOM1: Partita FreeRTOS guest: * (entered at EL1)"),
            Expect::Line("(XEN) DOM1: platform (device tree at *): sbsa-uart 0x22000000, *"),
            Expect::Line("(XEN) DOM1: psci: hvc; rt: powering off after 2000 samples"),
            Expect::Line("(XEN) DOM1: hello from FreeRTOS task 1"),
            Expect::Line("(XEN) DOM1: goodbye from FreeRTOS task 2"),
            Expect::Count("(XEN) DOM1: rt: samples=*", 2),
            Expect::Every("(XEN) DOM1: rt: samples=*", "* misses=0"),
            Expect::NoLine("(XEN) DOM1: halted: *"),
            Expect::NoLine(XEN_PANIC),
        ],
    },
    Scenario {
        name: "freertos-xen-linux-load",
        boot: Boot::XenFreertos("rt.samples=100000"),
        job: Some(SPLIT_LOAD_JOB),
        cpu: Cpu::CortexA72,
        icount: true,
        // dom0's power-off halts the machine.
        end: End::Exit(0),
        timeout_secs: 600,
        expect: &[
            Expect::Line("(XEN) *Using scheduler: SMP Credit Scheduler rev2 (credit2)"),
            Expect::Line("(XEN) *DOM1: hello from FreeRTOS task 1"),
            Expect::Line("*Time: *"),
            Expect::Line("stress-ng: info: * successful run completed in *"),
            Expect::Line("partita: job exit 0"),
            Expect::Line("(XEN) *Hardware Dom0 halted: halting machine"),
            Expect::CountAtLeast("(XEN) *DOM1: rt: samples=*", 3),
            Expect::NoLine("(XEN) *DOM1: halted: *"),
            Expect::NoLine(XEN_PANIC),
        ],
    },
    Scenario {
        // The shipped system under load. FreeRTOS's timer advance (`timer_advance_ns`, 2 us
        // by default) brings it back onto the CPU before each tick, so its worst dispatch
        // latency in virtual time stays near its solo one (722 ns mean, 1,408 max at
        // 2026-11-27), where a tick that preempts Linux at the deadline costs a whole vCPU
        // switch (the same run with `timer_advance_ns = 0`: 1,534 mean, 2,688 max). EL2 work
        // of Linux's still running when the advance fires lands on the tick: design.md, "Long
        // EL2 work beside a real-time VM" (2,080 max in CI before a9289b7, 848 after).
        name: "default-linux-load",
        boot: Boot::Partita("configs/default.toml"),
        job: Some(LOAD_JOB),
        cpu: Cpu::CortexA72,
        icount: true,
        end: AFTER_LINUX_OFF,
        // About 25 s of virtual time: 4 minutes on an idle host, more on a busy one.
        timeout_secs: 900,
        // FreeRTOS and the job ran, every one of FreeRTOS's lines reports no deadline miss
        // and the bound above, and it kept printing after Linux stopped.
        expect: beside_linux!(
            Expect::Every(FREERTOS_RT, FREERTOS_NO_MISS),
            Expect::AtMost(FREERTOS_RT, "max_ns=", 2_000)
        ),
    },
    // Linux printing console lines without a pause beside FreeRTOS's latency benchmark on
    // one CPU. A line costs its exit up to about 5,000 instructions at EL2; begun just
    // before FreeRTOS's tick it delayed it: 217 of 20,000 dispatch samples late, up to
    // 1,520 ns, where the same job writing to /dev/null left all 20,000 at 720 ns
    // (2026-11-28, 6cf0c2b). Lines are held back while the CPU's next event is near
    // (`devices::line_fits`): all 20,000 at 720 ns after it. The bound leaves the
    // constant 720 room for a layout's movement, not for a late tick.
    console_latency!("console-latency", "configs/tests/console-latency.toml", 1_000),
    // The same with FreeRTOS ticking on the EL1 physical timer it owns: its deadline is
    // in that timer, not in the EL2 timer, and the room before a line must see it. No
    // timer advance serves that tick (the run queue does not know it), so every sample
    // takes the switch at the tick's interrupt: about 2,500 ns, and 3,696 with lines
    // landing on ticks before the room looked at the physical timer (docs/console.md).
    console_latency!(
        "console-latency-physical",
        "configs/tests/console-latency-physical.toml",
        3_000
    ),
    Scenario {
        name: "ivc-exchange",
        boot: Boot::Partita("configs/tests/ivc-exchange.toml"),
        job: Some("partita-ivc exchange 10000"),
        cpu: Cpu::CortexA72,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: IVC_EXCHANGE,
    },
    Scenario {
        name: "ivc-exchange-split",
        boot: Boot::Partita("configs/tests/ivc-exchange-split.toml"),
        job: Some("partita-ivc exchange 10000"),
        cpu: Cpu::CortexA72,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: IVC_EXCHANGE_SPLIT,
    },
    Scenario {
        // The exchange on the ZCU102: doorbells through the virtual GICv2, FreeRTOS's GICv2
        // build on the same Cortex-A53 as Linux.
        name: "zcu102-ivc-exchange",
        boot: Boot::Partita("configs/tests/zcu102-ivc-exchange.toml"),
        job: Some("partita-ivc exchange 10000"),
        cpu: Cpu::CortexA53,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: IVC_EXCHANGE,
    },
    Scenario {
        // Across the ZCU102's CPUs: every doorbell a physical SGI through the GIC-400.
        name: "zcu102-ivc-exchange-split",
        boot: Boot::Partita("configs/tests/zcu102-ivc-exchange-split.toml"),
        job: Some("partita-ivc exchange 10000"),
        cpu: Cpu::CortexA53,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: IVC_EXCHANGE_SPLIT,
    },
    Scenario {
        name: "ivc-demo",
        boot: Boot::Partita("configs/default.toml"),
        job: Some(IVC_DEMO_JOB),
        cpu: Cpu::CortexA72,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: IVC_DEMO,
    },
    Scenario {
        // The demo on the ZCU102's shipped system (configs/zcu102/default.toml).
        name: "zcu102-ivc-demo",
        boot: Boot::Partita("configs/zcu102/default.toml"),
        job: Some(IVC_DEMO_JOB),
        cpu: Cpu::CortexA53,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: IVC_DEMO,
    },
    Scenario {
        name: "physical-timer-linux-load",
        boot: Boot::Partita("configs/tests/physical-timer.toml"),
        job: Some(SPLIT_LOAD_JOB),
        cpu: Cpu::CortexA72,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: PHYSICAL_TICK_BESIDE_LINUX,
    },
    Scenario {
        // FreeRTOS's GICv2 build on the EL1 physical timer it owns (PPI 30 through a GICv2
        // list register with the HW bit), beside Linux on the ZCU102.
        name: "zcu102-physical-timer-linux-load",
        boot: Boot::Partita("configs/tests/zcu102-physical-timer.toml"),
        job: Some(SPLIT_LOAD_JOB),
        cpu: Cpu::CortexA53,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: PHYSICAL_TICK_BESIDE_LINUX,
    },
    Scenario {
        name: "default-linux-reboot",
        boot: Boot::Partita("configs/default.toml"),
        job: Some("reboot -f"),
        cpu: Cpu::CortexA72,
        icount: true,
        end: LINUX_REBOOTED_TWICE,
        timeout_secs: 120,
        expect: LINUX_REBOOTS_BESIDE_FREERTOS,
    },
    Scenario {
        // Linux rebooting beside FreeRTOS on the ZCU102: each reset rebuilds the VM and its
        // virtual GICv2.
        name: "zcu102-default-linux-reboot",
        boot: Boot::Partita("configs/zcu102/default.toml"),
        job: Some("reboot -f"),
        cpu: Cpu::CortexA53,
        icount: true,
        end: LINUX_REBOOTED_TWICE,
        timeout_secs: 120,
        expect: LINUX_REBOOTS_BESIDE_FREERTOS,
    },
    Scenario {
        name: "split-linux-load",
        boot: Boot::Partita("configs/split.toml"),
        job: Some(SPLIT_LOAD_JOB),
        cpu: Cpu::CortexA72,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 300,
        expect: SPLIT_BESIDE_LINUX,
    },
    Scenario {
        name: "linux-smp",
        boot: Boot::Partita("configs/linux-smp.toml"),
        job: Some(SMP_JOB),
        cpu: Cpu::CortexA72,
        // Functional: one host thread per CPU, no timing asserted.
        icount: false,
        end: End::Exit(0),
        timeout_secs: 300,
        expect: LINUX_SMP,
    },
    Scenario {
        // Linux on four vCPUs of the ZCU102: IPIs through GICD_SGIR of the virtual GICv2.
        name: "zcu102-linux-smp",
        boot: Boot::Partita("configs/zcu102/linux-smp.toml"),
        job: Some(SMP_JOB),
        cpu: Cpu::CortexA53,
        icount: false,
        end: End::Exit(0),
        timeout_secs: 300,
        expect: LINUX_SMP,
    },
    Scenario {
        name: "mixed-linux-load",
        boot: Boot::Partita("configs/mixed.toml"),
        job: Some(MIXED_LOAD_JOB),
        cpu: Cpu::CortexA72,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: MIXED_BESIDE_LINUX,
    },
    Scenario {
        name: "mixed-migrate-linux-load",
        boot: Boot::Partita("configs/tests/mixed-migrate.toml"),
        job: Some(MIXED_LOAD_JOB),
        cpu: Cpu::CortexA72,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: MIXED_MIGRATE_BESIDE_LINUX,
    },
    Scenario {
        // The SPUMONE topology on the ZCU102 (configs/zcu102/mixed.toml).
        name: "zcu102-mixed-linux-load",
        boot: Boot::Partita("configs/zcu102/mixed.toml"),
        job: Some(MIXED_LOAD_JOB),
        cpu: Cpu::CortexA53,
        icount: true,
        end: AFTER_LINUX_OFF,
        timeout_secs: 600,
        expect: MIXED_BESIDE_LINUX,
    },
    Scenario {
        name: "probe-crash-beside-linux",
        boot: Boot::Partita("configs/tests/probe-crash-beside-linux.toml"),
        job: Some(TIMER_JOB),
        cpu: Cpu::CortexA72,
        icount: false,
        end: End::Exit(1),
        timeout_secs: 180,
        expect: &[
            Expect::Line("[probe] probe: crashing on purpose"),
            Expect::Line(PROBE_FAULT),
            Expect::Line("[linux] timer interrupts * then *"),
            Expect::Line("[linux] partita: job exit 0"),
            Expect::Line(LINUX_POWERED_OFF),
            Expect::Line("[partita] all VMs stopped, at least one faulted"),
            Expect::NoLine(PANIC),
        ],
    },
    Scenario {
        // Fault containment: Linux powers off as soon as its job starts and
        // `on_poweroff = "restart"` rebuilds it, 20 times, while FreeRTOS keeps its deadlines
        // on the same CPU; the heap in use is the same at every boot (nothing leaks).
        name: "linux-restart-loop",
        boot: Boot::Partita("configs/tests/linux-restarts.toml"),
        job: Some("poweroff -f"),
        cpu: Cpu::CortexA72,
        icount: true,
        end: End::StopWhen(StopWhen {
            after: Some("[partita] vm linux: starting (boot 21, *"),
            pattern: FREERTOS_RT,
            count: 1,
        }),
        // 3 to 9 s per restart (rebuild and boot) depending on the host's load: 60 to 180 s.
        timeout_secs: 600,
        expect: &[
            Expect::CountAtLeast(LINUX_RESTARTED, 20),
            Expect::CountAtLeast(LINUX_JOB_START, 20),
            Expect::Steady(LINUX_STARTS, HEAP),
            Expect::CountAtLeast(FREERTOS_RT, 5),
            Expect::Every(FREERTOS_RT, FREERTOS_NO_MISS),
            Expect::Count("[partita] vm freertos: starting (boot *", 1),
            Expect::NoLine(FREERTOS_FAULT),
            Expect::NoLine(LINUX_FAULT),
            Expect::NoLine("[partita] vm linux: reset*"),
            Expect::NoLine(PANIC),
        ],
    },
    Scenario {
        // Fault containment: the probe faults at every boot and `on_fault = "restart"`
        // rebuilds it each time; FreeRTOS on the same CPU keeps running (its greetings go on
        // after the 20th restart, which ends the run) and the heap stays the same. Without
        // -icount: under it each restart costs QEMU far more host time (retranslating the
        // rebuilt guest) than the guest time it takes, so a greeting would be minutes away.
        name: "probe-crash-restart",
        boot: Boot::Partita("configs/tests/probe-crash-restart.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: false,
        end: PROBE_RESTARTED_20_TIMES,
        timeout_secs: 60,
        expect: PROBE_RESTARTS_BESIDE_FREERTOS,
    },
    Scenario {
        // The same under -icount, a hundred restarts: each end of the probe's boot (its
        // fault line, its rebuild) is EL2 work on FreeRTOS's CPU, and none of it may delay
        // FreeRTOS's ticks more than the hostile suites' budget allows.
        name: "probe-crash-restart-latency",
        boot: Boot::Partita("configs/tests/probe-crash-restart.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        end: End::StopWhen(StopWhen {
            after: Some("[partita] vm probe: starting (boot 101, *"),
            pattern: FREERTOS_RT,
            count: 1,
        }),
        timeout_secs: 300,
        expect: &[
            Expect::CountAtLeast(PROBE_RESTARTED, 100),
            Expect::Every(FREERTOS_RT, FREERTOS_NO_MISS),
            Expect::AtMost(FREERTOS_RT, "max_ns=", 25_000),
            Expect::NoLine(FREERTOS_FAULT),
            Expect::NoLine(PANIC),
        ],
    },
    Scenario {
        // The same on the ZCU102: each rebuild makes a fresh virtual GICv2.
        name: "zcu102-probe-crash-restart",
        boot: Boot::Partita("configs/tests/zcu102-probe-crash-restart.toml"),
        job: None,
        cpu: Cpu::CortexA53,
        icount: false,
        end: PROBE_RESTARTED_20_TIMES,
        timeout_secs: 60,
        expect: PROBE_RESTARTS_BESIDE_FREERTOS,
    },
    // The hostile probe suite (issue 6), on both CPU models, with FreeRTOS owning the EL1
    // physical timer, and on the ZCU102: `hostile::report` judges each probe; these lines are the outline.
    // It runs until FreeRTOS has reported three more seconds after the last probe (the
    // spinning VM never stops).
    Scenario {
        name: crate::hostile::SCENARIO,
        boot: Boot::Partita(HOSTILE_CONFIG),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        end: AFTER_HOSTILE_DONE,
        timeout_secs: 300,
        expect: HOSTILE_OUTLINE,
    },
    Scenario {
        name: crate::hostile::SCENARIO_MAX,
        boot: Boot::Partita(HOSTILE_CONFIG),
        job: None,
        cpu: Cpu::Max,
        icount: true,
        end: AFTER_HOSTILE_DONE,
        timeout_secs: 300,
        expect: HOSTILE_OUTLINE,
    },
    Scenario {
        name: crate::hostile::SCENARIO_PHYSICAL_TIMER,
        boot: Boot::Partita("configs/tests/hostile-physical-timer.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        end: AFTER_HOSTILE_DONE,
        timeout_secs: 300,
        expect: HOSTILE_OUTLINE,
    },
    Scenario {
        // The probe VM's attacks on a CPU it shares with FreeRTOS alone, where every switch
        // between the two is made inside the world switch: its own probes, FreeRTOS's
        // deadlines and latency budget, Partita intact. The suite's host probes of the
        // wreck, spinning and resetting VMs do not apply.
        name: "hostile-pair",
        boot: Boot::Partita("configs/tests/hostile-pair.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        end: AFTER_HOSTILE_DONE,
        timeout_secs: 300,
        expect: &[
            Expect::Line("[hostile] hostile: done, * probes, 0 breaches"),
            Expect::NoLine("[hostile] hostile: probe * BREACH *"),
            Expect::Line("[partita] vm hostile: powered off"),
            Expect::Line("[freertos] ivc: the peer's ring is broken (Corrupt); emptied"),
            Expect::Every(FREERTOS_RT, FREERTOS_NO_MISS),
            Expect::AtMost(FREERTOS_RT, "max_ns=", 25_000),
            Expect::NoLine(FREERTOS_FAULT),
            Expect::NoLine("[partita] vm hostile: fault*"),
            Expect::NoLine(PANIC),
        ],
    },
    Scenario {
        // The suite on the GICv2 board (configs/tests/zcu102-hostile.toml): the GICv2
        // probes replace the GICv3 ones, FreeRTOS is the GICv2 build.
        name: crate::hostile::SCENARIO_ZCU102,
        boot: Boot::Partita("configs/tests/zcu102-hostile.toml"),
        job: None,
        cpu: Cpu::CortexA53,
        icount: true,
        end: AFTER_HOSTILE_DONE,
        timeout_secs: 300,
        expect: HOSTILE_OUTLINE,
    },
    Scenario {
        // Two FreeRTOS VMs (rtos-high at priority 200, freertos at 150) beside a loaded
        // Linux on one CPU: the higher one's console lines must not cost the lower one more
        // than 10 us.
        name: "two-rtos-linux-load",
        boot: Boot::Partita("configs/tests/two-rtos.toml"),
        job: Some(SPLIT_LOAD_JOB),
        cpu: Cpu::CortexA72,
        icount: true,
        end: End::StopWhen(StopWhen {
            after: Some(LINUX_POWERED_OFF),
            pattern: "[freertos] rt: samples=*",
            count: 2,
        }),
        timeout_secs: 600,
        expect: &[
            Expect::Line("[linux] partita: job exit 0"),
            Expect::CountAtLeast("[rtos-high] rt: samples=*", 3),
            Expect::Every(
                "[rtos-high] rt: samples=*",
                "[rtos-high] rt: samples=* misses=0",
            ),
            Expect::Every(
                "[freertos] rt: samples=*",
                "[freertos] rt: samples=* misses=0",
            ),
            Expect::AtMost("[freertos] rt: samples=*", "max_ns=", 10_000),
            Expect::NoLine("[partita] vm rtos-high: fault*"),
            Expect::NoLine("[partita] vm freertos: fault*"),
            Expect::NoLine(PANIC),
        ],
    },
    Scenario {
        // The console on the ZCU102: typed input arrives through the Cadence UART.
        name: "zcu102-console",
        boot: Boot::Typed("configs/zcu102/default.toml", CONSOLE_SCRIPT),
        job: None,
        cpu: Cpu::CortexA53,
        icount: true,
        end: End::Exit(0),
        timeout_secs: 60,
        expect: &[Expect::NoLine(PANIC)],
    },
    Scenario {
        name: "ofdm",
        boot: Boot::Partita("configs/ofdm.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        end: End::Exit(0),
        timeout_secs: 300,
        expect: OFDM,
    },
    Scenario {
        name: "ofdm-linux",
        boot: Boot::Partita("configs/tests/ofdm-linux.toml"),
        job: Some(OFDM_LINUX_JOB),
        cpu: Cpu::CortexA72,
        icount: true,
        end: End::Exit(0),
        timeout_secs: 600,
        expect: OFDM_LINUX,
    },
    Scenario {
        name: "hostile-fabric",
        boot: Boot::Partita("configs/tests/hostile-fabric.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        end: End::Exit(0),
        timeout_secs: 300,
        expect: HOSTILE_FABRIC,
    },
    Scenario {
        name: "console",
        boot: Boot::Typed("configs/default.toml", CONSOLE_SCRIPT),
        job: None,
        cpu: Cpu::CortexA72,
        icount: true,
        // Ctrl-A x ends QEMU with status 0.
        end: End::Exit(0),
        timeout_secs: 30,
        expect: &[Expect::NoLine(PANIC)],
    },
];

/// The word after `key` in `line`, if the key is there.
fn word_after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let (_, rest) = line.split_once(key)?;
    rest.split_whitespace().next()
}

/// What is wrong with the lines matching `pattern` not all showing the same word after `key`.
fn steady(output: &str, pattern: &str, key: &str) -> Option<String> {
    let all: Vec<&str> = console_lines(output)
        .filter(|l| matches(pattern, l))
        .collect();
    let [first, rest @ ..] = all.as_slice() else {
        return Some(format!("no line matches \"{pattern}\""));
    };
    if rest.is_empty() {
        return Some(format!("only one line matches \"{pattern}\""));
    }
    let want = word_after(first, key);
    rest.iter()
        .find(|l| word_after(l, key) != want)
        .map(|l| format!("line \"{l}\" changed \"{key}\" from \"{first}\""))
}

/// What is wrong with the lines matching `pattern`: none, or one whose number after `key`
/// is missing or above `limit`.
fn at_most(output: &str, pattern: &str, key: &str, limit: u64) -> Option<String> {
    let all: Vec<&str> = console_lines(output)
        .filter(|l| matches(pattern, l))
        .collect();
    if all.is_empty() {
        return Some(format!("no line matches \"{pattern}\""));
    }
    all.iter()
        .find(|l| {
            word_after(l, key)
                .and_then(|w| w.parse::<u64>().ok())
                .is_none_or(|v| v > limit)
        })
        .map(|l| format!("line \"{l}\" has {key} above {limit}"))
}

/// Whether `line` matches `pattern`, where each `*` matches any text.
pub fn matches(pattern: &str, line: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Console lines without the carriage returns of a serial console.
pub fn console_lines(output: &str) -> impl Iterator<Item = &str> {
    output.lines().map(|l| l.trim_end_matches('\r'))
}

/// How a run ended, as the runner saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    Exited(i32),
    /// The runner stopped QEMU because the scenario's stop condition was met.
    Stopped,
}

/// What is wrong with a run's ending and output; empty when it passed.
pub fn verdict(scenario: &Scenario, ended: RunEnd, output: &str) -> Vec<String> {
    let mut problems = Vec::new();
    match (scenario.end, ended) {
        (End::Exit(want), RunEnd::Exited(status)) if status != want => {
            problems.push(format!("QEMU exited with status {status}, expected {want}"))
        }
        (End::StopWhen(_), RunEnd::Exited(status)) => problems.push(format!(
            "QEMU exited with status {status} before the stop condition was met"
        )),
        (End::Exit(_), RunEnd::Stopped) => {
            problems.push("stopped without a stop condition".to_string())
        }
        _ => {}
    }
    let count = |p: &str| console_lines(output).filter(|l| matches(p, l)).count();
    for e in scenario.expect {
        match *e {
            Expect::Line(p) if count(p) == 0 => problems.push(format!("no line matches \"{p}\"")),
            Expect::NoLine(p) if count(p) > 0 => {
                problems.push(format!("unexpected line matching \"{p}\""))
            }
            Expect::Count(p, n) if count(p) != n => {
                problems.push(format!("{} line(s) match \"{p}\", expected {n}", count(p)))
            }
            Expect::CountAtLeast(p, n) if count(p) < n => problems.push(format!(
                "{} line(s) match \"{p}\", expected at least {n}",
                count(p)
            )),
            Expect::Steady(p, key) => problems.extend(steady(output, p, key)),
            Expect::AtMost(p, key, limit) => problems.extend(at_most(output, p, key, limit)),
            Expect::Every(p, q) => {
                let all: Vec<&str> = console_lines(output).filter(|l| matches(p, l)).collect();
                if let Some(bad) = all.iter().find(|l| !matches(q, l)) {
                    problems.push(format!("line \"{bad}\" does not match \"{q}\""));
                } else if all.is_empty() {
                    problems.push(format!("no line matches \"{p}\""));
                }
            }
            _ => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_lines_with_wildcards() {
        assert!(matches(PROBE_PASSED, "[probe] probe: all 12 checks passed"));
        assert!(!matches(
            PROBE_PASSED,
            "[probe] probe: all 12 checks passed!"
        ));
        assert!(!matches(
            PROBE_PASSED,
            "x[probe] probe: all 12 checks passed"
        ));
        assert!(matches("a*b*c", "abc"));
        assert!(matches("a*b*c", "a-b-b-c"));
        assert!(!matches("a*a", "a"));
        assert!(matches("exact", "exact"));
        assert!(!matches("exact", "exactly"));
    }

    #[test]
    fn verdicts_check_status_and_console() {
        let clean = &SCENARIOS[0];
        let good = "[partita] Partita\r\n[probe] ok 1 psci version\r\n[probe] probe: all 1 checks passed\r\n";
        assert!(verdict(clean, RunEnd::Exited(0), good).is_empty());
        assert_eq!(
            verdict(clean, RunEnd::Exited(1), "[probe] FAIL 1 psci version\n"),
            [
                "QEMU exited with status 1, expected 0",
                "no line matches \"[probe] probe: all * checks passed\"",
                "unexpected line matching \"[probe] FAIL *\"",
            ]
        );
        let reset = SCENARIOS.iter().find(|s| s.name == "probe-reset").unwrap();
        assert_eq!(
            verdict(
                reset,
                RunEnd::Exited(0),
                "[probe] probe: started, bootargs \"reset\"\n"
            ),
            [
                "1 line(s) match \"[probe] probe: started*\", expected 2",
                "no line matches \"[probe] probe: reset worked, boot 2\""
            ]
        );
    }

    #[test]
    fn runs_stop_on_a_count_after_an_anchor() {
        let lines = ["rt 1", "off", "rt 2", "x", "rt 3"];
        let after_off = |count| StopWhen {
            after: Some("off"),
            pattern: "rt *",
            count,
        };
        assert!(after_off(2).met(lines.into_iter()));
        assert!(!after_off(3).met(lines.into_iter()));
        let anywhere = StopWhen {
            after: None,
            pattern: "rt *",
            count: 3,
        };
        assert!(anywhere.met(lines.into_iter()));
        assert!(!after_off(1).met(["rt 1"].into_iter()));
    }

    #[test]
    fn stopped_runs_and_counts() {
        let beside = SCENARIOS
            .iter()
            .find(|s| s.name == "default-linux-load")
            .unwrap();
        let problems = verdict(
            beside,
            RunEnd::Exited(0),
            "[freertos] rt: samples=1 max_ns=1 mean_ns=1 misses=2\n",
        );
        assert!(problems
            .contains(&"QEMU exited with status 0 before the stop condition was met".to_string()));
        assert!(problems.contains(&"line \"[freertos] rt: samples=1 max_ns=1 mean_ns=1 misses=2\" does not match \"[freertos] rt: samples=* misses=0\"".to_string()));
        let at_least = Scenario {
            name: "count",
            boot: Boot::NativeFreertos(""),
            job: None,
            cpu: Cpu::CortexA72,
            icount: false,
            end: End::Exit(0),
            timeout_secs: 1,
            expect: &[Expect::CountAtLeast("a", 2)],
        };
        assert_eq!(
            verdict(&at_least, RunEnd::Exited(0), "a\nb\n"),
            ["1 line(s) match \"a\", expected at least 2"]
        );
        assert!(verdict(&at_least, RunEnd::Exited(0), "a\na\n").is_empty());
        assert_eq!(
            verdict(&at_least, RunEnd::Stopped, "a\na\n"),
            ["stopped without a stop condition"]
        );
    }

    #[test]
    fn bounds_hold_on_every_matching_line() {
        let p = "[low] rt: *";
        let fine = "[low] rt: samples=1 max_ns=900 x\n[low] rt: samples=2 max_ns=1000\n";
        assert_eq!(at_most(fine, p, "max_ns=", 1000), None);
        assert_eq!(
            at_most(fine, p, "max_ns=", 999).as_deref(),
            Some("line \"[low] rt: samples=2 max_ns=1000\" has max_ns= above 999")
        );
        assert_eq!(
            at_most("[low] rt: samples=1\n", p, "max_ns=", 5).as_deref(),
            Some("line \"[low] rt: samples=1\" has max_ns= above 5")
        );
        assert_eq!(
            at_most("", p, "max_ns=", 5).as_deref(),
            Some("no line matches \"[low] rt: *\"")
        );
    }

    #[test]
    fn steady_values_stay_the_same() {
        let p = "vm x: starting (boot *, heap * B)";
        let same = "vm x: starting (boot 1, heap 40 B)\nvm x: starting (boot 2, heap 40 B)\n";
        assert_eq!(steady(same, p, "heap "), None);
        let grew = "vm x: starting (boot 1, heap 40 B)\nvm x: starting (boot 2, heap 48 B)\n";
        assert_eq!(
            steady(grew, p, "heap ").as_deref(),
            Some("line \"vm x: starting (boot 2, heap 48 B)\" changed \"heap \" from \"vm x: starting (boot 1, heap 40 B)\"")
        );
        assert_eq!(
            steady("vm x: starting (boot 1, heap 40 B)\n", p, "heap ").as_deref(),
            Some("only one line matches \"vm x: starting (boot *, heap * B)\"")
        );
        assert!(steady("", p, "heap ").is_some());
    }

    #[test]
    fn every_scenario_config_exists() {
        for s in SCENARIOS {
            if let Boot::Partita(config) | Boot::Typed(config, _) = s.boot {
                assert!(
                    crate::paths::root().join(config).is_file(),
                    "scenario {} names a missing configuration {}",
                    s.name,
                    config
                );
            }
        }
    }
}
