//! The measurement matrix as data (shared/BENCHMARKS.md): which configuration runs which
//! guest and how it boots, which experiments a guest runs in each mode, and which figure
//! of each experiment the summary tables compare. Experiments no configuration runs yet
//! are listed with the reason (`EXPERIMENTS_NOT_RUN`).
//! Nothing here starts QEMU or reads output.

use std::fs;
use std::path::Path;

use partita_core::board::Platform;

use super::parse::{Parser, SysbenchTest};
use crate::paths;

/// `quick` (short loops, minutes) or `full` (BENCHMARKS.md durations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Quick,
    Full,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Quick => "quick",
            Mode::Full => "full",
        }
    }
}

/// The guest a row runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guest {
    Linux,
    FreeRtos,
    /// FreeRTOS and Linux talking over their channel (BENCHMARKS.md 9): Linux runs
    /// `IVC_EXPERIMENTS` with `partita-ivc`, FreeRTOS answers.
    Ivc,
    /// The OFDM experiment (issue 14): FreeRTOS VMs commanding the reconfigurable fabric's
    /// accelerators; Partita's fabric figures and the tasks' lines are its results.
    Fabric,
}

impl Guest {
    pub fn name(self) -> &'static str {
        match self {
            Guest::Linux => "linux",
            Guest::FreeRtos => "freertos",
            Guest::Ivc => "ivc",
            Guest::Fabric => "fabric",
        }
    }
}

/// How a measured row boots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boot {
    /// Debian's kernel and the initramfs directly on QEMU.
    NativeLinux,
    /// The same on this many emulated CPUs (the native counterpart of an SMP VM).
    NativeLinuxSmp(u8),
    /// The FreeRTOS image directly on QEMU (it drops from EL2 to EL1 itself).
    NativeFreeRtos,
    /// Partita with this configuration file (relative to the workspace root).
    Partita(&'static str),
    /// The same for a configuration whose Linux VM has several vCPUs: it runs the
    /// `SMP_EXPERIMENTS`.
    PartitaSmp(&'static str),
    /// Partita with one FreeRTOS VM alone on CPU 0 (`FREERTOS_SOLO`).
    PartitaFreeRtos,
    /// Xen 4.17 with the Linux guest as dom0.
    XenDom0,
    /// Xen 4.17 with the FreeRTOS image as a dom0less domU: alone (`None`, the whole suite,
    /// `freertos_bootargs`), or sharing the one pCPU with the Linux guest as dom0 running
    /// `load` (the latency benchmark, `beside_bootargs`).
    XenDomU(Option<Load>),
    /// Partita with this configuration file's FreeRTOS VM running the latency benchmark
    /// (`beside_bootargs`) and its Linux VM running `load` for the whole measurement.
    Beside { config: &'static str, load: Load },
    /// Partita with this configuration file as it is: its FreeRTOS VM runs the demo (its
    /// greetings and `rt:` line on the console every second) while its Linux VM runs these
    /// experiments (issue 16: what a chatty RTOS costs Linux, `DEMO_EXPERIMENTS`; issue
    /// 12: Linux's throughput in the SPUMONE topology, `SMP_EXPERIMENTS`).
    BesideDemo(&'static str, &'static [&'static str]),
    /// A system of the scale axis (issue 12), `scale_config(vms, cpus)`: its FreeRTOS VM
    /// runs the latency benchmark (`beside_bootargs`) beside Linux's hackbench on every
    /// CPU, so the report can show an injection's and a vCPU switch's cost against the
    /// number of VMs and CPUs.
    Scale { vms: u8, cpus: u8 },
    /// Partita with this configuration file's fabric and its FreeRTOS VMs running the OFDM
    /// experiment (configs/ofdm.toml); the run ends when they power off.
    Fabric(&'static str),
}

impl Boot {
    /// The configuration file a Partita boot uses (relative to the workspace root), if any.
    pub fn config_file(&self) -> Option<&'static str> {
        match self {
            Boot::Partita(file)
            | Boot::PartitaSmp(file)
            | Boot::Beside { config: file, .. }
            | Boot::BesideDemo(file, _)
            | Boot::Fabric(file) => Some(file),
            _ => None,
        }
    }

    /// How many CPUs QEMU emulates for this boot (one when the configuration cannot be
    /// read, which its run reports): under `-icount` QEMU runs them in turn, so the row's
    /// wall time grows with them.
    pub fn emulated_cpus(&self) -> u8 {
        match self {
            Boot::Scale { cpus, .. } | Boot::NativeLinuxSmp(cpus) => *cpus,
            _ => self
                .config_file()
                .and_then(|config| fs::read_to_string(paths::root().join(config)).ok())
                .and_then(|text| partita_config::parse(&text).ok())
                .map_or(1, |system| system.board.cpus),
        }
    }
}

/// The Linux experiments of the `shared-demo` row.
pub const DEMO_EXPERIMENTS: [&str; 1] = ["cyclictest-hackbench"];
/// The Linux experiments of the SMP rows (SPUMONE's figures 12 and 13: hackbench and
/// sysbench threads, on every vCPU).
pub const SMP_EXPERIMENTS: [&str; 2] = ["sysbench-threads-4", "hackbench"];

/// What Linux runs beside the FreeRTOS latency measurement (BENCHMARKS.md's loads, and
/// issue 6's interrupt storm).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    Idle,
    Hackbench,
    Stress,
    /// High-rate hrtimers: `stress-ng --timer` at 100 kHz, so the Linux VM's virtual timer
    /// fires every 10 us and every expiry is a physical interrupt Partita takes at EL2
    /// and injects.
    IrqStorm,
    /// The hackbench loop while FreeRTOS's IVC task streams a sample every 10 ms to a
    /// `partita-ivc recv` in Linux (issue 11: the IVC demo beside a loaded Linux).
    IvcHackbench,
    /// Loads for a Linux with two vCPUs (the mixed rows): hackbench, whose tasks run on
    /// both, and two stress-ng CPU workers.
    SmpHackbench,
    SmpStress,
}

impl Load {
    pub fn name(self) -> &'static str {
        match self {
            Load::Idle => "idle",
            Load::Hackbench => "hackbench",
            Load::Stress => "stress-ng",
            Load::IrqStorm => "irq-storm",
            Load::IvcHackbench => "ivc-hackbench",
            Load::SmpHackbench => "smp-hackbench",
            Load::SmpStress => "smp-stress",
        }
    }

    /// What FreeRTOS's boot arguments gain for this load: the IVC task beside the
    /// benchmark.
    pub fn rtos_bootargs(self) -> &'static str {
        match self {
            Load::IvcHackbench => " ivc=stream ivc.period=10",
            _ => "",
        }
    }

    /// The Linux job: announce the load, then run it until QEMU is stopped.
    pub fn job(self) -> String {
        let command = match self {
            Load::Idle => "sleep 3600",
            Load::Hackbench => "hackbench -g 4 -l 100000 -P >/dev/null",
            Load::Stress => "stress-ng --cpu 1 --vm 1 -t 3600 >/dev/null 2>&1",
            Load::IrqStorm => "stress-ng --timer 1 --timer-freq 100000 -t 3600 >/dev/null 2>&1",
            Load::IvcHackbench => "hackbench -g 4 -l 100000 -P >/dev/null",
            Load::SmpHackbench => "hackbench -g 8 -l 100000 -P >/dev/null",
            Load::SmpStress => "stress-ng --cpu 2 -t 3600 >/dev/null 2>&1",
        };
        let reader = match self {
            Load::IvcHackbench => "partita-ivc recv >/dev/null&",
            _ => "",
        };
        format!(
            "echo \"{LOAD_MARKER}{}\";{reader}while :;do {command};done",
            self.name()
        )
    }
}

/// The line a load job prints when its load starts.
pub const LOAD_MARKER: &str = "partita-bench: load ";

/// One configuration x guest of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// The configuration id (`CONFIGS`).
    pub config: &'static str,
    pub guest: Guest,
    pub boot: Boot,
}

const fn beside(config: &'static str, file: &'static str, load: Load) -> Row {
    Row {
        config,
        guest: Guest::FreeRtos,
        boot: Boot::Beside { config: file, load },
    }
}

const fn xen_beside(config: &'static str, load: Load) -> Row {
    Row {
        config,
        guest: Guest::FreeRtos,
        boot: Boot::XenDomU(Some(load)),
    }
}

const fn scale(config: &'static str, vms: u8, cpus: u8) -> Row {
    Row {
        config,
        guest: Guest::FreeRtos,
        boot: Boot::Scale { vms, cpus },
    }
}

const SHARED: &str = "configs/default.toml";

/// `boot` on `platform`: every row on qemu-virt; on another board only the rows beside a
/// Linux load on the shared CPU, with that board's shipped system
/// (`configs/<board>/default.toml`, which shares the `rt-link` channel as
/// configs/default.toml does).
pub fn on_board(boot: Boot, platform: Platform) -> Option<Boot> {
    if platform == Platform::QemuVirt {
        return Some(boot);
    }
    match boot {
        Boot::Beside { load, .. } if on_board_beyond_virt(boot) => {
            // One small string per run of the bench: Boot keeps `'static` paths.
            let config: &'static str =
                Box::leak(format!("configs/{}/default.toml", platform.name()).into_boxed_str());
            Some(Boot::Beside { config, load })
        }
        _ => None,
    }
}

fn on_board_beyond_virt(boot: Boot) -> bool {
    matches!(boot, Boot::Beside { config: SHARED, .. })
}

/// The configurations `on_board` keeps on a board other than qemu-virt.
pub fn shared_rows() -> Vec<&'static str> {
    ROWS.iter()
        .filter(|row| on_board_beyond_virt(row.boot))
        .map(|row| row.config)
        .collect()
}
const SPLIT: &str = "configs/split.toml";
/// Two FreeRTOS VMs and Linux on one CPU (issue 16): the higher FreeRTOS runs the demo, the
/// lower one (`freertos`) the latency benchmark.
const TWO_RTOS: &str = "configs/tests/two-rtos.toml";
const MIXED: &str = "configs/mixed.toml";
const MIXED_MIGRATE: &str = "configs/tests/mixed-migrate.toml";

pub const ROWS: [Row; 38] = [
    Row {
        config: "native",
        guest: Guest::Linux,
        boot: Boot::NativeLinux,
    },
    Row {
        config: "solo",
        guest: Guest::Linux,
        boot: Boot::Partita("configs/linux.toml"),
    },
    Row {
        config: "xen",
        guest: Guest::Linux,
        boot: Boot::XenDom0,
    },
    Row {
        config: "shared-demo",
        guest: Guest::Linux,
        boot: Boot::BesideDemo(SHARED, &DEMO_EXPERIMENTS),
    },
    Row {
        config: "native-smp",
        guest: Guest::Linux,
        boot: Boot::NativeLinuxSmp(4),
    },
    Row {
        config: "smp",
        guest: Guest::Linux,
        boot: Boot::PartitaSmp("configs/linux-smp.toml"),
    },
    Row {
        config: "mixed",
        guest: Guest::Linux,
        boot: Boot::BesideDemo(MIXED, &SMP_EXPERIMENTS),
    },
    Row {
        config: "mixed-migrate",
        guest: Guest::Linux,
        boot: Boot::BesideDemo(MIXED_MIGRATE, &SMP_EXPERIMENTS),
    },
    Row {
        config: "native",
        guest: Guest::FreeRtos,
        boot: Boot::NativeFreeRtos,
    },
    Row {
        config: "solo",
        guest: Guest::FreeRtos,
        boot: Boot::PartitaFreeRtos,
    },
    Row {
        config: "xen-solo",
        guest: Guest::FreeRtos,
        boot: Boot::XenDomU(None),
    },
    beside("shared-idle", SHARED, Load::Idle),
    beside("shared-hackbench", SHARED, Load::Hackbench),
    beside("shared-stress", SHARED, Load::Stress),
    beside("shared-irqstorm", SHARED, Load::IrqStorm),
    beside("shared-ivc-hackbench", SHARED, Load::IvcHackbench),
    beside("split-idle", SPLIT, Load::Idle),
    beside("split-hackbench", SPLIT, Load::Hackbench),
    beside("split-stress", SPLIT, Load::Stress),
    beside("two-rtos-hackbench", TWO_RTOS, Load::Hackbench),
    beside("mixed-hackbench", MIXED, Load::SmpHackbench),
    beside("mixed-migrate-hackbench", MIXED_MIGRATE, Load::SmpHackbench),
    beside("mixed-stress", MIXED, Load::SmpStress),
    beside("mixed-migrate-stress", MIXED_MIGRATE, Load::SmpStress),
    scale("scale-2vm-1cpu", 2, 1),
    scale("scale-3vm-1cpu", 3, 1),
    scale("scale-4vm-1cpu", 4, 1),
    scale("scale-2vm-2cpu", 2, 2),
    scale("scale-2vm-3cpu", 2, 3),
    scale("scale-2vm-4cpu", 2, 4),
    scale("scale-4vm-4cpu", 4, 4),
    xen_beside("xen-shared-idle", Load::Idle),
    xen_beside("xen-shared-hackbench", Load::Hackbench),
    xen_beside("xen-shared-stress", Load::Stress),
    xen_beside("xen-shared-irqstorm", Load::IrqStorm),
    Row {
        config: "shared-ivc",
        guest: Guest::Ivc,
        boot: Boot::Partita(SHARED),
    },
    Row {
        config: "split-ivc",
        guest: Guest::Ivc,
        boot: Boot::Partita(SPLIT),
    },
    Row {
        config: "ofdm",
        guest: Guest::Fabric,
        boot: Boot::Fabric(OFDM),
    },
];

/// Ker-ONE's OFDM set-up (issue 14): three regions, four accelerators, an RTOS VM with two
/// periodic tasks and a GPOS VM with three.
const OFDM: &str = "configs/ofdm.toml";

/// Experiments of BENCHMARKS.md this suite does not run yet in any configuration:
/// (guest, what, why).
pub const EXPERIMENTS_NOT_RUN: [(&str, &str, &str); 2] = [
    (
        "partita",
        "EL2 time from the QEMU TCG plugin (instructions attributed to Partita's image)",
        "`cargo xtask profile` measures it per system; the bench's EL2 figures come from \
         Partita's own counters (PMCCNTR_EL0)",
    ),
    (
        "linux",
        "the Linux experiments in shared and split",
        "in those configurations Linux runs the load beside FreeRTOS's latency measurement; \
         its own figures are Partita's counters of the Linux VM",
    ),
];

/// The configuration ids in table order, each Xen configuration beside Partita's: `solo`
/// and `xen-solo` one guest alone; `shared-demo` is Linux's experiments beside the FreeRTOS
/// demo on one pCPU; `shared-<load>` is FreeRTOS beside Linux running that load on one pCPU
/// (configs/default.toml), `xen-shared-<load>` the same under Xen (FreeRTOS a dom0less
/// domU, Linux dom0); `split-<load>` on two pCPUs (configs/split.toml); `shared-ivc` and
/// `split-ivc` the same systems exchanging messages over their channel; `xen` Linux as
/// dom0 alone; `native-smp` and `smp` Linux on four CPUs natively and on four vCPUs
/// (configs/linux-smp.toml); `mixed` and `mixed-migrate` Linux's throughput beside the
/// FreeRTOS demo in the SPUMONE topology (configs/mixed.toml) without and with vCPU
/// migration, `mixed-<load>` and `mixed-migrate-<load>` FreeRTOS's latency there;
/// `two-rtos-hackbench` the lower FreeRTOS's latency below a FreeRTOS running the demo,
/// beside Linux's hackbench, all on one pCPU (configs/tests/two-rtos.toml, issue 16);
/// `scale-<n>vm-<m>cpu` the scale axis (`scale_config`); `ofdm` Ker-ONE's OFDM experiment on
/// the reconfigurable fabric (configs/ofdm.toml, issue 14).
pub const CONFIGS: [&str; 36] = [
    "native",
    "solo",
    "xen-solo",
    "shared-demo",
    "shared-idle",
    "xen-shared-idle",
    "shared-hackbench",
    "xen-shared-hackbench",
    "shared-stress",
    "xen-shared-stress",
    "shared-irqstorm",
    "xen-shared-irqstorm",
    "shared-ivc-hackbench",
    "split-idle",
    "split-hackbench",
    "split-stress",
    "two-rtos-hackbench",
    "shared-ivc",
    "split-ivc",
    "xen",
    "native-smp",
    "smp",
    "mixed",
    "mixed-migrate",
    "mixed-hackbench",
    "mixed-migrate-hackbench",
    "mixed-stress",
    "mixed-migrate-stress",
    "scale-2vm-1cpu",
    "scale-3vm-1cpu",
    "scale-4vm-1cpu",
    "scale-2vm-2cpu",
    "scale-2vm-3cpu",
    "scale-2vm-4cpu",
    "scale-4vm-4cpu",
    "ofdm",
];

/// Each Partita FreeRTOS configuration and its Xen counterpart (the same guest alone, or
/// the same Linux load on the one pCPU), whose latency histograms the report overlays.
pub const XEN_PEERS: [(&str, &str); 5] = [
    ("solo", "xen-solo"),
    ("shared-idle", "xen-shared-idle"),
    ("shared-hackbench", "xen-shared-hackbench"),
    ("shared-stress", "xen-shared-stress"),
    ("shared-irqstorm", "xen-shared-irqstorm"),
];

/// One Linux experiment: the command it runs in each mode (None: skipped in that mode).
#[derive(Debug, Clone, Copy)]
pub struct LinuxExperiment {
    pub name: &'static str,
    pub quick: Option<&'static str>,
    pub full: &'static str,
    pub parser: Parser,
}

impl LinuxExperiment {
    pub fn command(&self, mode: Mode) -> Option<&'static str> {
        match mode {
            Mode::Quick => self.quick,
            Mode::Full => Some(self.full),
        }
    }
}

/// cyclictest measuring `$loops` wake-ups in ns (`-N`), as a shell command for `sh -c '…'`:
/// the histogram has 1 ns buckets up to 100 µs (`-h 100000`, larger latencies count as
/// overflows but still set the maximum), written to a file of which only the buckets that
/// hold samples are printed, then the summary lines. The command's status is grep's, 0
/// when the file holds the summary.
macro_rules! cyclictest {
    ($loops:literal) => {
        concat!(
            "cyclictest -m -q -N -p 80 -i 1000 -l ",
            $loops,
            " -h 100000 --histfile=/tmp/h&&grep -v \" 000000$\" /tmp/h"
        )
    };
}

/// BENCHMARKS.md's `hackbench -g 4 -l 200`, run several times in one boot: one run's time
/// moves by a few per cent from run to run on the same system (natively, five runs in one
/// boot on 2026-11-27: 1.911 to 1.951 s, standard deviation 0.86 %), more than what a
/// hypervisor adds to it, so the figure is their mean with its interval (`parse::hackbench`,
/// `formula::overhead_interval`): five runs quick, fifteen full.
const HACKBENCH_QUICK: &str = "sh -c 'for run in 1 2 3 4 5; do hackbench -g 4 -l 200; done'";
const HACKBENCH_FULL: &str =
    "sh -c 'for run in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do hackbench -g 4 -l 200; done'";

/// The automotive suite on its small input, run many times over in one boot: its shortest
/// program (qsort, 6.1 ms) moves by up to 0.4 % from run to run (2026-11-27: 6,132,384 to
/// 6,157,680 ns in one boot), with whether a timer tick's work fell in it, so each program's
/// figure is the mean of its runs with its interval (`parse::automotive`): five rounds quick,
/// 41 full (about 5.4 s). The large input (0.05 to 0.6 s a program) runs once.
const AUTO_SMALL_QUICK: &str = "/opt/automotive/run-all small 5";
const AUTO_SMALL_FULL: &str = "/opt/automotive/run-all small 41";

/// The idle cyclictest of the full mode, five times over in one boot (100,000 wake-ups,
/// the FreeRTOS latency rows' full count), each run started after a pause of its own (0.7
/// to 3.5 ms), pooled (`parse::cyclictest`). Runs in one boot agree to about 10 ns of
/// average (2026-11-27 at 90c48de: native 4,875 to 4,883 ns, solo 4,968 to 4,985); boots
/// need not: the quarter of the wake-ups that meet Linux's 4 ms tick spread over 5,300 to
/// 5,700 ns in one solo boot and sat at 6,000 ns in another (average 5,148 ns at 39fd0f4),
/// so a row's average may move by that between builds (docs/benchmarks.md).
const CYCLICTEST_IDLE_FULL: &str = concat!(
    "sh -c 'for p in 7 14 21 28 35;do usleep ${p}00;",
    cyclictest!(20000),
    "||exit 1;done'"
);

/// Experiments 5, 6, 7 and 8 of BENCHMARKS.md, in the order the job runs them (the idle
/// cyclictest first, on a quiet system).
pub const LINUX_EXPERIMENTS: [LinuxExperiment; 11] = [
    LinuxExperiment {
        name: "cyclictest-idle",
        quick: Some(concat!("sh -c '", cyclictest!(2000), "'")),
        full: CYCLICTEST_IDLE_FULL,
        parser: Parser::Cyclictest,
    },
    LinuxExperiment {
        name: "sysbench-cpu",
        quick: Some("sysbench cpu --cpu-max-prime=2000 --time=0 --events=2000 run"),
        full: "sysbench cpu --cpu-max-prime=2000 --time=0 --events=2000 run",
        parser: Parser::Sysbench(SysbenchTest::Cpu),
    },
    LinuxExperiment {
        name: "sysbench-memory",
        quick: Some("sysbench memory --memory-total-size=256M run"),
        full: "sysbench memory --memory-total-size=256M run",
        parser: Parser::Sysbench(SysbenchTest::Memory),
    },
    LinuxExperiment {
        name: "sysbench-threads",
        quick: Some("sysbench threads --time=0 --events=2000 run"),
        full: "sysbench threads --time=0 --events=2000 run",
        parser: Parser::Sysbench(SysbenchTest::Threads),
    },
    LinuxExperiment {
        name: "sysbench-threads-4",
        quick: Some("sysbench threads --threads=4 --time=0 --events=2000 run"),
        full: "sysbench threads --threads=4 --time=0 --events=20000 run",
        parser: Parser::Sysbench(SysbenchTest::Threads),
    },
    LinuxExperiment {
        name: "sysbench-mutex",
        quick: Some("sysbench mutex run"),
        full: "sysbench mutex run",
        parser: Parser::Sysbench(SysbenchTest::Mutex),
    },
    LinuxExperiment {
        name: "hackbench",
        quick: Some(HACKBENCH_QUICK),
        full: HACKBENCH_FULL,
        parser: Parser::Hackbench,
    },
    LinuxExperiment {
        name: "stress-ng",
        quick: Some("stress-ng --cpu 1 --cpu-ops 200 --metrics-brief"),
        full: "stress-ng --cpu 1 --cpu-ops 2000 --metrics-brief",
        parser: Parser::StressNg,
    },
    LinuxExperiment {
        name: "auto-small",
        quick: Some(AUTO_SMALL_QUICK),
        full: AUTO_SMALL_FULL,
        parser: Parser::Automotive,
    },
    LinuxExperiment {
        name: "auto-large",
        quick: None,
        full: "/opt/automotive/run-all large",
        parser: Parser::Automotive,
    },
    // Last: the hackbench loop it starts in the background is killed after it, but the
    // experiments after it would still run on a system just out of that load.
    LinuxExperiment {
        name: "cyclictest-hackbench",
        quick: Some(CYCLICTEST_HACKBENCH_QUICK),
        full: CYCLICTEST_HACKBENCH_FULL,
        parser: Parser::Cyclictest,
    },
];

/// BENCHMARKS.md experiment 9, in the order the job runs them: round trips started by
/// Linux and by FreeRTOS (8-byte messages), then echo throughput of 64 B and 4 KiB
/// messages (as many in flight as the rings hold).
pub const IVC_EXPERIMENTS: [LinuxExperiment; 4] = [
    LinuxExperiment {
        name: "ivc-rtt-linux",
        quick: Some("partita-ivc ping 200"),
        full: "partita-ivc ping 2000",
        parser: Parser::Ivc,
    },
    LinuxExperiment {
        name: "ivc-rtt-freertos",
        quick: Some("partita-ivc rtos-ping 200"),
        full: "partita-ivc rtos-ping 1000",
        parser: Parser::Ivc,
    },
    LinuxExperiment {
        name: "ivc-throughput-64",
        quick: Some("partita-ivc bench 64 2000"),
        full: "partita-ivc bench 64 20000",
        parser: Parser::Ivc,
    },
    LinuxExperiment {
        name: "ivc-throughput-4k",
        quick: Some("partita-ivc bench 4096 200"),
        full: "partita-ivc bench 4096 2000",
        parser: Parser::Ivc,
    },
];

/// The IVC experiments of `mode`, with their commands.
pub fn ivc_experiments(mode: Mode) -> Vec<(&'static LinuxExperiment, &'static str)> {
    IVC_EXPERIMENTS
        .iter()
        .filter_map(|e| e.command(mode).map(|command| (e, command)))
        .collect()
}

/// The figures of the IVC table.
pub const IVC_HEADLINES: [Headline; 10] = [
    time("ivc-rtt-linux", "min"),
    time("ivc-rtt-linux", "mean"),
    time("ivc-rtt-linux", "p99"),
    time("ivc-rtt-linux", "max"),
    time("ivc-rtt-freertos", "min"),
    time("ivc-rtt-freertos", "mean"),
    time("ivc-rtt-freertos", "p99"),
    time("ivc-rtt-freertos", "max"),
    Headline {
        experiment: "ivc-throughput-*",
        metric: "msgs_per_s",
        sense: Sense::ThroughputLike,
    },
    Headline {
        experiment: "ivc-throughput-*",
        metric: "kib_per_s",
        sense: Sense::ThroughputLike,
    },
];

/// cyclictest under a hackbench loop (BENCHMARKS.md experiment 5): the loop runs in the
/// background from one second before cyclictest until it ends, then the loop and its
/// hackbench are killed.
const CYCLICTEST_HACKBENCH_QUICK: &str = concat!(
    "sh -c 'while :;do hackbench -g 4 -l 100000 -P >/dev/null;done& sleep 1;",
    cyclictest!(2000),
    ";r=$?;kill $!;killall hackbench;exit $r'"
);
const CYCLICTEST_HACKBENCH_FULL: &str = concat!(
    "sh -c 'while :;do hackbench -g 4 -l 100000 -P >/dev/null;done& sleep 1;",
    cyclictest!(20000),
    ";r=$?;kill $!;killall hackbench;exit $r'"
);

/// The Linux experiments of `mode`, with their commands.
pub fn linux_experiments(mode: Mode) -> Vec<(&'static LinuxExperiment, &'static str)> {
    LINUX_EXPERIMENTS
        .iter()
        .filter_map(|e| e.command(mode).map(|command| (e, command)))
        .collect()
}

/// The Linux experiments a Linux row booting `boot` runs in `mode`: all of them, or a
/// `BesideDemo` row's own list, or the SMP rows' `SMP_EXPERIMENTS`.
pub fn linux_experiments_of(
    boot: Boot,
    mode: Mode,
) -> Vec<(&'static LinuxExperiment, &'static str)> {
    let mut experiments = linux_experiments(mode);
    match boot {
        Boot::BesideDemo(_, only) => experiments.retain(|(e, _)| only.contains(&e.name)),
        Boot::NativeLinuxSmp(_) | Boot::PartitaSmp(_) => {
            experiments.retain(|(e, _)| SMP_EXPERIMENTS.contains(&e.name))
        }
        // sysbench threads on four threads needs several CPUs to mean anything.
        _ => experiments.retain(|(e, _)| e.name != "sysbench-threads-4"),
    }
    experiments
}

/// Longest job one boot carries: Xen keeps at most 1023 bytes of dom0's command line,
/// which holds the job hex encoded (2 bytes per character) after the console arguments.
pub const MAX_JOB: usize = 450;

/// The shell function every job starts with: it runs one experiment between the markers
/// `console::BEGIN` / `console::END` (the end marker carries the exit status).
const JOB_PRELUDE: &str =
    "b(){ n=$1;shift;echo \"partita-bench: begin $n\";\"$@\";echo \"partita-bench: end $n $?\";}";

/// The shell jobs that run `experiments` in order, as few as fit `MAX_JOB` each (one boot
/// per job; every configuration gets the same jobs, so the guest's state before each
/// experiment is the same everywhere).
pub fn linux_jobs(experiments: &[(&LinuxExperiment, &str)]) -> Vec<String> {
    let mut jobs: Vec<String> = Vec::new();
    let mut job = String::from(JOB_PRELUDE);
    for (experiment, command) in experiments {
        let step = format!(";b {} {command}", experiment.name);
        if job.len() + step.len() > MAX_JOB && job.len() > JOB_PRELUDE.len() {
            jobs.push(std::mem::replace(&mut job, String::from(JOB_PRELUDE)));
        }
        job.push_str(&step);
    }
    if job.len() > JOB_PRELUDE.len() {
        jobs.push(job);
    }
    jobs
}

/// The FreeRTOS guest's boot arguments: its benchmark suite (guests/freertos/BENCHMARKS.md)
/// in the mode; the full mode's Thread-Metric periods are 10 s instead of 30 s so the full
/// benchmark stays under 90 minutes on 2 cores (scores are per period; R_P is a ratio).
pub fn freertos_bootargs(mode: Mode) -> &'static str {
    match mode {
        Mode::Quick => "bench=all bench.mode=quick",
        Mode::Full => "bench=all bench.mode=full bench.period_ms=10000",
    }
}

/// The FreeRTOS guest's boot arguments beside a Linux load on a system of `cpus` CPUs: the
/// latency experiments only, started 1.5 s after boot (Linux reaches its job after about
/// 0.9 s and starts its load at once). Samples: `latency_samples`.
pub fn beside_bootargs(mode: Mode, cpus: u8) -> String {
    format!(
        "bench=latency bench.mode={} bench.samples={} bench.delay_ms={BESIDE_DELAY_MS}",
        mode.name(),
        latency_samples(mode, cpus)
    )
}

/// Latency samples of a FreeRTOS row beside Linux on a system of `cpus` CPUs (the split,
/// mixed and scale systems): `beside_samples`, but `MULTI_CPU_SAMPLES` in full mode when it
/// has several CPUs. QEMU runs the CPUs in turn under `-icount`, so a FreeRTOS sample there
/// waits for the other CPUs' turns: the latencies are QEMU's (a mean of 1.5 to 12 ms), and
/// each sample costs that much more virtual time. At 7bc5778 (2026-12-01, 20,000 samples),
/// full `split-hackbench` took 78e9 instructions and 16 minutes, `mixed-hackbench` and
/// `mixed-migrate-hackbench` 27 minutes each, and `scale-2vm-3cpu` (5,000 samples) was
/// killed at the one-hour limit of a boot after 132e9: the whole run could not fit its 90
/// minutes. What those rows compare, the minima of the paths, needs few samples.
pub fn latency_samples(mode: Mode, cpus: u8) -> u32 {
    match mode {
        Mode::Full if cpus > 1 => MULTI_CPU_SAMPLES,
        _ => beside_samples(mode),
    }
}

/// Full-mode latency samples of a system of several CPUs (`latency_samples`): BENCHMARKS.md's
/// quick count.
pub const MULTI_CPU_SAMPLES: u32 = 2_000;

/// Latency samples beside a Linux load: 1,000 quick, 20,000 full (BENCHMARKS.md asks
/// 2,000 and 100,000). A busy pCPU costs about 1e9 emulated instructions per virtual
/// second (10-13 s of wall time on the 2-core machine) and even an idle Linux beside
/// FreeRTOS about 3 s; seven rows of 100 s would not fit the full run's 90 minutes, nor
/// seven of 2 s (plus the delay) the quick run's 15.
pub fn beside_samples(mode: Mode) -> u32 {
    match mode {
        Mode::Quick => 1_000,
        Mode::Full => 20_000,
    }
}

pub const BESIDE_DELAY_MS: u32 = 1_500;

/// The VMs of a scale system in configuration order: the measured FreeRTOS, Linux, and
/// the FreeRTOS VMs added to reach the row's number of VMs.
pub const SCALE_VMS: [&str; 4] = ["freertos", "linux", "rtos-3", "rtos-4"];

/// The system of a scale row (issue 12's scale axis), its images at these paths:
/// - `freertos` (priority 200), the measured VM, on CPU 0;
/// - `linux` (priority 100) with one vCPU on each of the `cpus` CPUs, running the load;
/// - `rtos-3`, `rtos-4` (priorities 150, 140) running the FreeRTOS demo, the k-th added
///   VM on CPU k mod `cpus` (CPU 0 on one CPU, CPUs 1 and 2 on four), as many as make
///   `vms` VMs.
pub fn scale_config(vms: u8, cpus: u8, freertos: &Path, linux: &Path, initrd: &Path) -> String {
    let rtos = |name: &str, priority: u8, cpu: u8| {
        format!(
            "[[vm]]\nname = \"{name}\"\nkind = \"rtos\"\npriority = {priority}\n\
             cpus = [{cpu}]\nmemory = [{{ base = 0x4000_0000, size = \"4M\" }}]\n\
             image = {{ path = \"{}\", load = 0x4020_0000 }}\n\n{PL011}\n",
            freertos.display()
        )
    };
    let linux_cpus: Vec<String> = (0..cpus).map(|c| c.to_string()).collect();
    let mut text = format!(
        "# The scale system of {vms} VMs on {cpus} CPUs, written by `cargo xtask bench`.\n\n\
         [board]\nplatform = \"qemu-virt\"\ncpus = {cpus}\nslice_us = 10000\n\n{}\
         [[vm]]\nname = \"linux\"\nkind = \"gpos\"\ncpus = [{}]\n\
         memory = [{{ base = 0x4000_0000, size = \"1G\" }}]\nimage = \"{}\"\n\
         initrd = \"{}\"\nbootargs = \"console=ttyAMA0 nokaslr panic=-1\"\n\n{PL011}\n",
        rtos(SCALE_VMS[0], 200, 0),
        linux_cpus.join(", "),
        linux.display(),
        initrd.display()
    );
    for (k, name) in SCALE_VMS.iter().enumerate().take(usize::from(vms)).skip(2) {
        let added = k as u8 - 1;
        text.push_str(&rtos(name, 160 - 10 * added, added % cpus));
    }
    text
}

/// Every VM's emulated console.
const PL011: &str = "[[vm.device]]\ntype = \"pl011\"\nbase = 0x0900_0000\nirq = 33\n";

/// What Linux runs in a scale system of `cpus` CPUs: hackbench on every vCPU.
pub fn scale_load(cpus: u8) -> Load {
    if cpus == 1 {
        Load::Hackbench
    } else {
        Load::SmpHackbench
    }
}

/// The Partita system of the solo FreeRTOS row: the guest's documented VM (its README),
/// alone on CPU 0; `{image}` and `{bootargs}` are filled in by the runner.
pub const FREERTOS_SOLO: &str = r#"[board]
platform = "qemu-virt"
cpus = 1

[[vm]]
name = "freertos"
kind = "rtos"
cpus = [0]
memory = [{ base = 0x4000_0000, size = "4M" }]
image = { path = "{image}", load = 0x4020_0000 }
bootargs = "{bootargs}"

[[vm.device]]
type = "pl011"
base = 0x0900_0000
irq = 33
"#;

/// Whether a smaller figure is better (a time) or a larger one (a rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sense {
    TimeLike,
    ThroughputLike,
}

/// A figure the summary and overhead tables compare across configurations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headline {
    /// The experiment name, or its prefix when it ends with `*` (e.g. `auto-*`).
    pub experiment: &'static str,
    pub metric: &'static str,
    pub sense: Sense,
}

const fn time(experiment: &'static str, metric: &'static str) -> Headline {
    Headline {
        experiment,
        metric,
        sense: Sense::TimeLike,
    }
}

/// The Linux figures of the overhead table (seL4 VMM paper).
pub const LINUX_HEADLINES: [Headline; 13] = [
    time("cyclictest-idle", "avg"),
    time("cyclictest-idle", "max"),
    time("cyclictest-hackbench", "avg"),
    time("cyclictest-hackbench", "max"),
    time("sysbench-cpu", "total_time"),
    time("sysbench-memory", "total_time"),
    time("sysbench-threads", "total_time"),
    time("sysbench-threads-4", "total_time"),
    time("sysbench-mutex", "total_time"),
    time("hackbench", "time"),
    Headline {
        experiment: "stress-ng",
        metric: "bogo_ops_per_s",
        sense: Sense::ThroughputLike,
    },
    time("auto-*-small", "time"),
    time("auto-*-large", "time"),
];

/// The FreeRTOS figures of the native-vs-virtualized summary (Kim & Choi's Table 1).
pub const RTOS_HEADLINES: [Headline; 11] = [
    time("rhealstone/*", "time"),
    time("dispatch", "mean"),
    time("dispatch", "p99"),
    time("dispatch", "max"),
    time("dispatch", "misses"),
    time("irq-latency", "mean"),
    time("irq-latency", "p99"),
    time("irq-latency", "max"),
    time("rt-latency", "mean"),
    time("rt-latency", "max"),
    time("console/*", "line-64"),
];

impl Headline {
    /// Whether `experiment` is this headline's experiment (or matches its pattern).
    pub fn matches(&self, experiment: &str) -> bool {
        match self.experiment.split_once('*') {
            Some((prefix, suffix)) => {
                experiment.len() >= prefix.len() + suffix.len()
                    && experiment.starts_with(prefix)
                    && experiment.ends_with(suffix)
            }
            None => experiment == self.experiment,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systems_of_several_cpus_take_fewer_full_samples() {
        assert_eq!(latency_samples(Mode::Full, 1), beside_samples(Mode::Full));
        assert_eq!(latency_samples(Mode::Full, 2), MULTI_CPU_SAMPLES);
        assert_eq!(latency_samples(Mode::Full, 3), MULTI_CPU_SAMPLES);
        assert!(MULTI_CPU_SAMPLES < beside_samples(Mode::Full));
        assert_eq!(latency_samples(Mode::Quick, 4), beside_samples(Mode::Quick));
        assert!(beside_bootargs(Mode::Full, 2).contains("bench.samples=2000 "));
        assert!(beside_bootargs(Mode::Full, 1).contains("bench.samples=20000 "));
    }

    #[test]
    fn every_configuration_of_the_matrix_has_its_rows_once() {
        // FreeRTOS only: beside a Linux load, or alone under Xen (`xen` is Linux alone), or
        // on the scale axis.
        let freertos_only = |config: &str| {
            [
                "shared-",
                "split-",
                "xen-",
                "mixed-h",
                "mixed-s",
                "mixed-migrate-",
                "two-rtos-",
                "scale-",
            ]
            .iter()
            .any(|p| config.starts_with(p))
        };
        for config in CONFIGS {
            // One guest only: FreeRTOS beside a load or alone under Xen; Linux beside the
            // demo, or alone under Xen (`xen`). IVC rows measure the exchange.
            let ivc = config.ends_with("-ivc");
            // The OFDM experiment is its own guest's only row.
            let fabric = config == "ofdm";
            assert_eq!(
                ROWS.iter()
                    .filter(|r| r.config == config && r.guest == Guest::Fabric)
                    .count(),
                usize::from(fabric),
                "{config} fabric"
            );
            if fabric {
                continue;
            }
            // Linux only: the SMP rows have no FreeRTOS counterpart.
            let linux_only = ["native-smp", "smp", "mixed", "mixed-migrate"].contains(&config);
            let beside = !ivc && (freertos_only(config) || config == "xen" || linux_only);
            let measured = if linux_only || config == "shared-demo" || config == "xen" {
                Guest::Linux
            } else {
                Guest::FreeRtos
            };
            for guest in [Guest::Linux, Guest::FreeRtos, Guest::Ivc] {
                let rows = ROWS
                    .iter()
                    .filter(|r| r.config == config && r.guest == guest)
                    .count();
                let expected = match guest {
                    Guest::Ivc => usize::from(ivc),
                    _ if ivc => 0,
                    _ => usize::from(!beside || guest == measured),
                };
                assert_eq!(rows, expected, "{config} {}", guest.name());
            }
        }
        assert!(ROWS.iter().all(|r| CONFIGS.contains(&r.config)));
        for (partita, xen) in XEN_PEERS {
            for config in [partita, xen] {
                assert!(
                    ROWS.iter()
                        .any(|r| r.config == config && r.guest == Guest::FreeRtos),
                    "{config}"
                );
            }
        }
    }

    #[test]
    fn a_demo_row_runs_only_its_experiments() {
        for mode in [Mode::Quick, Mode::Full] {
            let names: Vec<&str> =
                linux_experiments_of(Boot::BesideDemo(SHARED, &DEMO_EXPERIMENTS), mode)
                    .iter()
                    .map(|(e, _)| e.name)
                    .collect();
            assert_eq!(names, DEMO_EXPERIMENTS);
            let one_cpu = linux_experiments(mode)
                .iter()
                .filter(|(e, _)| e.name != "sysbench-threads-4")
                .count();
            assert_eq!(
                linux_experiments_of(Boot::Partita("configs/linux.toml"), mode).len(),
                one_cpu
            );
            let smp: Vec<&str> = linux_experiments_of(Boot::NativeLinuxSmp(4), mode)
                .iter()
                .map(|(e, _)| e.name)
                .collect();
            assert_eq!(smp, SMP_EXPERIMENTS);
        }
    }

    #[test]
    fn load_jobs_announce_their_load_and_loop() {
        for load in [
            Load::Idle,
            Load::Hackbench,
            Load::Stress,
            Load::IrqStorm,
            Load::IvcHackbench,
        ] {
            let job = load.job();
            assert!(job.starts_with(&format!("echo \"{LOAD_MARKER}{}\";", load.name())));
            assert!(job.contains("while :;do "), "{job}");
            assert!(job.len() <= MAX_JOB);
        }
        assert_eq!(
            beside_bootargs(Mode::Full, 1),
            "bench=latency bench.mode=full bench.samples=20000 bench.delay_ms=1500"
        );
    }

    #[test]
    fn every_job_fits_on_dom0s_command_line_and_all_experiments_run() {
        for mode in [Mode::Quick, Mode::Full] {
            let experiments = linux_experiments(mode);
            let jobs = linux_jobs(&experiments);
            assert!(jobs.len() >= 2);
            for job in &jobs {
                assert!(job.len() <= MAX_JOB, "{job}");
                let line = crate::xen::dom0_bootargs(Some(job)).unwrap();
                assert!(line.len() <= 1023, "{} bytes", line.len());
            }
            let all = jobs.concat();
            for (experiment, _) in experiments {
                assert_eq!(all.matches(&format!(";b {} ", experiment.name)).count(), 1);
            }
        }
    }

    #[test]
    fn quick_mode_skips_the_large_inputs() {
        let quick: Vec<&str> = linux_experiments(Mode::Quick)
            .iter()
            .map(|(e, _)| e.name)
            .collect();
        assert!(!quick.contains(&"auto-large"));
        assert_eq!(linux_experiments(Mode::Full).len(), LINUX_EXPERIMENTS.len());
        assert!(linux_jobs(&linux_experiments(Mode::Quick))[0]
            .contains(";b cyclictest-idle sh -c 'cyclictest -m -q -N -p 80 -i 1000 -l 2000 -h 100000 --histfile=/tmp/h&&grep -v \" 000000$\" /tmp/h';"));
    }

    #[test]
    fn the_solo_freertos_system_is_a_valid_configuration() {
        let dir = std::env::temp_dir().join(format!("partita-bench-solo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let image = dir.join("freertos.bin");
        std::fs::write(&image, [0u8; 4096]).unwrap();
        let file = dir.join("freertos-solo.toml");
        let text = FREERTOS_SOLO
            .replace("{image}", &image.to_string_lossy())
            .replace("{bootargs}", freertos_bootargs(Mode::Full));
        std::fs::write(&file, text).unwrap();
        let system = crate::config::load(&file).unwrap();
        assert_eq!(system.config.vms.len(), 1);
        assert_eq!(
            system.config.vms[0].bootargs,
            "bench=all bench.mode=full bench.period_ms=10000"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_scale_system_is_a_valid_configuration_of_its_size() {
        let dir = std::env::temp_dir().join(format!("partita-bench-scale-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str| {
            let path = dir.join(name);
            std::fs::write(&path, [0u8; 4096]).unwrap();
            path
        };
        let (rtos, linux, initrd) = (file("freertos.bin"), file("Image"), file("initrd"));
        let mut seen = 0;
        for row in ROWS {
            let Boot::Scale { vms, cpus } = row.boot else {
                continue;
            };
            seen += 1;
            assert_eq!(row.config, format!("scale-{vms}vm-{cpus}cpu"));
            let path = dir.join(format!("{}.toml", row.config));
            std::fs::write(&path, scale_config(vms, cpus, &rtos, &linux, &initrd)).unwrap();
            let system = crate::config::load(&path).unwrap();
            let names: Vec<&str> = system
                .config
                .vms
                .iter()
                .map(|vm| vm.name.as_str())
                .collect();
            assert_eq!(names, SCALE_VMS[..usize::from(vms)]);
            assert_eq!(system.config.board.cpus, cpus);
            let linux = &system.config.vms[1];
            assert_eq!(linux.cpus, (0..cpus).collect::<Vec<u8>>(), "{}", row.config);
            assert_eq!(system.config.vms[0].cpus, [0]);
            assert!(CONFIGS.contains(&row.config));
        }
        assert_eq!(seen, 7);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn patterns_match_prefix_and_suffix() {
        let auto = time("auto-*-small", "time");
        assert!(auto.matches("auto-qsort-small"));
        assert!(!auto.matches("auto-qsort-large"));
        assert!(time("hackbench", "time").matches("hackbench"));
        assert!(!time("hackbench", "time").matches("hackbench2"));
    }
}
