//! `cargo xtask`: Partita's host tool. Every task a user or CI runs goes through here:
//! setting up the machine, building, checking configurations, running and debugging on QEMU,
//! and the full test suite.
//!
//! This file only defines the command line and dispatches; each task lives in its module.
//! Errors end the program with status 1 and one message, never a panic.

mod bench;
mod build;
mod config;
mod conversation;
mod elf;
mod fuzz;
mod hostile;
mod image;
mod layout;
mod linux;
mod paths;
mod process;
mod profile;
mod qemu;
mod scenarios;
mod setup;
mod suite;
mod xen;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{ArgGroup, Args, Parser, Subcommand};

use crate::process::{step, Ending};
use crate::qemu::{Clock, Cpu, Machine, GDB_PORT};

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Partita's host tool",
    version
)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Install the Debian packages and the Rust target Partita needs.
    Setup,
    /// Build the hypervisor, the guests and the boot image build/partita.img.
    Build(ConfigArg),
    /// Build, then run the system on QEMU with the console on this terminal.
    #[command(group(ArgGroup::new("linux_boot").args(["native", "xen"])))]
    Run {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        cpu: CpuArg,
        /// Deterministic virtual time: 1 instruction = 1 ns, idle time skipped, fixed seed
        /// and clock, so two runs print the same.
        #[arg(long)]
        icount: bool,
        /// Stop QEMU after this many seconds (exit status 124).
        #[arg(long, value_name = "SECS")]
        timeout: Option<u64>,
        /// Boot this guest directly on QEMU, without Partita, for comparison.
        #[arg(long, value_enum, value_name = "GUEST", conflicts_with = "config")]
        native: Option<NativeGuest>,
        /// Boot the Linux guest as dom0 of Xen 4.17 (the peer hypervisor), without Partita.
        #[arg(long, conflicts_with_all = ["config", "cpu"])]
        xen: bool,
        /// Run CMD as the Linux guest's job instead of its shell, then power off.
        #[arg(long, value_name = "CMD")]
        linux_cmd: Option<String>,
        /// Boot arguments for the native FreeRTOS guest (QEMU -append, /chosen/bootargs).
        #[arg(long, value_name = "ARGS", requires = "native")]
        append: Option<String>,
        /// With --xen: also boot the FreeRTOS image as a dom0less domU with these boot
        /// arguments, sharing the one pCPU with dom0.
        #[arg(long, value_name = "ARGS", requires = "xen")]
        freertos_domu: Option<String>,
        /// With --freertos-domu: no dom0, the domU alone (Xen's dom0less mode).
        #[arg(long, requires = "freertos_domu", conflicts_with = "linux_cmd")]
        no_dom0: bool,
    },
    /// Build, then start QEMU halted with a gdb server on port 1234.
    Debug {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        cpu: CpuArg,
    },
    /// Run every check: rustfmt, clippy, unit tests, QEMU scenarios.
    Test {
        /// Run only the QEMU scenarios with these names (after the build), no other check.
        #[arg(long, value_name = "SCENARIO")]
        only: Vec<String>,
    },
    /// Fuzz the guest- and user-facing decoders with libFuzzer (coverage-guided), each target
    /// for a bounded time from its seed corpus in fuzz/corpus/; a crash fails.
    Fuzz {
        /// Fuzz only these targets (default: all).
        #[arg(long = "target", value_name = "NAME")]
        targets: Vec<String>,
        /// Seconds per target.
        #[arg(long, value_name = "N", default_value_t = 10)]
        seconds: u64,
    },
    /// Build and run one QEMU scenario of the test suite by name and report it (`hostile`:
    /// the hostile probe suite, one line per probe, then `hostile: probes=<n> breaches=<b>`).
    Scenario {
        /// The scenario's name (as `test --only` takes it).
        name: String,
    },
    /// Run the measurement suite and write results.json, report.md and plots.
    Bench {
        /// Short loops and sample counts (minutes) instead of the full durations.
        #[arg(long)]
        quick: bool,
        /// Output folder (default bench/out/<date>-<commit>[-quick]/).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Go on with an earlier run into --out DIR: the rows it finished (DIR/rows/) are
        /// kept, the others run; the checkout must be the clean commit they were measured at.
        #[arg(long, requires = "out")]
        resume: bool,
        /// Run only this configuration (e.g. shared-hackbench); repeatable.
        #[arg(long, value_name = "CONFIG")]
        only: Vec<String>,
        /// Run the shared rows on this board (configs/<board>/default.toml) instead of the
        /// whole matrix on qemu-virt.
        #[arg(long, value_name = "PLATFORM", default_value = "qemu-virt")]
        board: String,
        /// Run this many rows at once, each QEMU on a host core of its own (their figures
        /// do not change: every run keeps its own virtual time under -icount); default: the
        /// host's cores.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
        jobs: Option<u16>,
        #[command(flatten)]
        cpu: CpuArg,
    },
    /// Run a system under -icount with a QEMU plugin that counts the instructions executed
    /// in each of Partita's functions; print the top ones and EL2's share of all.
    Profile {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        cpu: CpuArg,
        /// Run CMD as the Linux guest's job instead of its shell, then power off.
        #[arg(long, value_name = "CMD")]
        linux_cmd: Option<String>,
        /// Stop QEMU after this many seconds of wall-clock time, if it has not ended.
        #[arg(long, value_name = "SECS", default_value_t = 60)]
        seconds: u64,
        /// How many functions to list.
        #[arg(long, value_name = "N", default_value_t = 25)]
        top: usize,
    },
    /// Remove Cargo's target directory and build/.
    Clean,
    /// Parse and validate a configuration and print its memory layout.
    CheckConfig {
        /// The configuration file.
        file: PathBuf,
    },
}

#[derive(Args)]
struct ConfigArg {
    /// System configuration file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

impl ConfigArg {
    fn file(&self) -> PathBuf {
        self.config.clone().unwrap_or_else(paths::default_config)
    }
}

/// Guests that boot without the hypervisor.
#[derive(Clone, Copy, clap::ValueEnum)]
enum NativeGuest {
    Linux,
    #[value(name = "freertos")]
    FreeRtos,
}

#[derive(Args)]
struct CpuArg {
    /// CPU model QEMU emulates (max = max,pauth-impdef=on).
    #[arg(long, value_enum, default_value = "cortex-a72")]
    cpu: Cpu,
}

fn main() -> ExitCode {
    match dispatch(Cli::parse().task) {
        Ok(code) => code,
        Err(e) if e.is::<config::LoadError>() => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn dispatch(task: Task) -> Result<ExitCode> {
    match task {
        Task::Setup => setup::setup()?,
        Task::Build(config) => {
            build::binaries()?;
            let console = build::ConsoleUse::AsConfigured { log_dir: None };
            build::boot_image(&config.file(), &paths::boot_image(), None, &console)?;
        }
        Task::Run {
            xen: true,
            icount,
            timeout,
            linux_cmd,
            freertos_domu,
            no_dom0,
            ..
        } => {
            let domains = xen::Domains {
                dom0: (!no_dom0).then_some(linux_cmd.as_deref()),
                freertos: freertos_domu.as_deref(),
            };
            return run_xen(&domains, icount, timeout);
        }
        Task::Run {
            native: Some(NativeGuest::Linux),
            append: Some(_),
            ..
        } => bail!("--append: only for --native freertos; the Linux guest's command line comes from --linux-cmd and the initramfs"),
        Task::Run {
            native: Some(NativeGuest::Linux),
            icount,
            timeout,
            linux_cmd,
            ..
        } => return run_native_linux(linux_cmd.as_deref(), icount, timeout),
        Task::Run {
            native: Some(NativeGuest::FreeRtos),
            linux_cmd: Some(_),
            ..
        } => bail!("--linux-cmd: the FreeRTOS guest has no shell; use it with --native linux, --xen or a configuration with a Linux VM"),
        Task::Run {
            native: Some(NativeGuest::FreeRtos),
            cpu,
            icount,
            timeout,
            append,
            ..
        } => return run_native_freertos(cpu.cpu, icount, timeout, append.as_deref()),
        Task::Run {
            config,
            cpu,
            icount,
            timeout,
            linux_cmd,
            ..
        } => {
            let options = RunOptions {
                cpu: cpu.cpu,
                icount,
                timeout,
            };
            return run(&config.file(), linux_cmd.as_deref(), &options);
        }
        Task::Debug { config, cpu } => return debug(&config.file(), cpu.cpu),
        Task::Test { only } => {
            if !suite::run(&only)? {
                return Ok(ExitCode::FAILURE);
            }
        }
        Task::Fuzz { targets, seconds } => fuzz::run_targets(&targets, seconds)?,
        Task::Scenario { name } => {
            if !suite::run_one(&name)? {
                return Ok(ExitCode::FAILURE);
            }
        }
        Task::Bench {
            quick,
            out,
            resume,
            only,
            board,
            jobs,
            cpu,
        } => {
            bench::run(&bench::Options {
                quick,
                out,
                resume,
                only,
                board: bench::board_named(&board)?,
                cpu: cpu.cpu,
                jobs: jobs.map_or_else(bench::host_cores, usize::from),
            })?;
        }
        Task::Profile {
            config,
            cpu,
            linux_cmd,
            seconds,
            top,
        } => profile::run(&profile::Options {
            config: config.file(),
            job: linux_cmd,
            cpu: cpu.cpu,
            seconds,
            top,
        })?,
        Task::Clean => clean()?,
        Task::CheckConfig { file } => check_config(&file)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// QEMU's exit status as ours (statuses beyond 255 cannot be passed on).
fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// How `run` starts QEMU.
struct RunOptions {
    cpu: Cpu,
    icount: bool,
    timeout: Option<u64>,
}

fn run(config: &Path, job: Option<&str>, options: &RunOptions) -> Result<ExitCode> {
    build::binaries()?;
    let image = paths::boot_image();
    let console = match job {
        Some(_) => build::ConsoleUse::AllTagged,
        None => build::ConsoleUse::AsConfigured {
            log_dir: Some(paths::run_logs()),
        },
    };
    let system = build::boot_image(config, &image, job, &console)?;
    if job.is_none() {
        step(format!(
            "each VM's whole output goes to {}/<vm>.log",
            paths::shown(&paths::run_logs()).display()
        ));
    }
    let machine = Machine {
        board: system.config.board.platform.board(),
        cpu: options.cpu,
        cpus: system.config.board.cpus,
        clock: Clock::for_run(options.icount, job.is_none()),
        gdb: false,
    };
    run_qemu(machine.command(&image), options.timeout)
}

/// Boots Debian's kernel and the project's initramfs directly on QEMU.
fn run_native_linux(job: Option<&str>, icount: bool, timeout: Option<u64>) -> Result<ExitCode> {
    let guest = linux::prepare(&paths::cache_dir())?;
    let bootargs = linux::bootargs(job, &[])?;
    let options = linux::NativeOptions {
        clock: Clock::for_run(icount, job.is_none()),
        no_reboot: false,
        cpus: 1,
    };
    run_qemu(linux::native_command(&guest, &bootargs, &options), timeout)
}

/// Boots Xen 4.17 with Debian's kernel and the project's initramfs as dom0, the FreeRTOS
/// image as a dom0less domU, or both.
fn run_xen(domains: &xen::Domains<'_>, icount: bool, timeout: Option<u64>) -> Result<ExitCode> {
    if domains.freertos.is_some() {
        build::binaries()?;
    }
    let options = xen::XenOptions {
        clock: Clock::for_run(icount, domains.dom0 == Some(None)),
    };
    let boot = xen::boot(&paths::cache_dir(), &paths::xen_files(), domains, &options)?;
    step(format!(
        "Xen {} with {}",
        boot.version,
        [
            domains.dom0.map(|_| "Linux as dom0"),
            domains.freertos.map(|_| "FreeRTOS as a dom0less domU"),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" and ")
    ));
    run_qemu(boot.command, timeout)
}

/// Boots the FreeRTOS guest image directly on QEMU: it drops from EL2 to EL1 itself.
fn run_native_freertos(
    cpu: Cpu,
    icount: bool,
    timeout: Option<u64>,
    append: Option<&str>,
) -> Result<ExitCode> {
    build::binaries()?;
    let image = paths::guest_image("freertos");
    let machine = Machine {
        cpu,
        ..Machine::single(Clock::for_run(icount, append.is_none()))
    };
    let mut cmd = machine.command(&image);
    if let Some(bootargs) = append {
        cmd.args(["-append", bootargs]);
    }
    run_qemu(cmd, timeout)
}

/// Runs QEMU on this terminal and returns its exit status as ours.
fn run_qemu(mut cmd: Command, timeout: Option<u64>) -> Result<ExitCode> {
    step(format!(
        "running {} (quit with Ctrl-A x)",
        process::describe(&cmd)
    ));
    let mut child = cmd.spawn().context("cannot start qemu-system-aarch64")?;
    match process::wait_until(&mut child, timeout.map(Duration::from_secs))? {
        Ending::Exited(code) => {
            step(format!("QEMU exited with status {code}"));
            Ok(exit_code(code))
        }
        Ending::TimedOut => {
            step(format!("stopped QEMU after {} s", timeout.unwrap_or(0)));
            Ok(ExitCode::from(124))
        }
    }
}

fn debug(config: &Path, cpu: Cpu) -> Result<ExitCode> {
    build::binaries()?;
    let image = paths::boot_image();
    let console = build::ConsoleUse::AsConfigured {
        log_dir: Some(paths::run_logs()),
    };
    let system = build::boot_image(config, &image, None, &console)?;
    let platform = system.config.board.platform;
    let machine = Machine {
        board: platform.board(),
        cpu,
        cpus: system.config.board.cpus,
        clock: Clock::Host,
        gdb: true,
    };
    let mut gdb = Command::new("gdb-multiarch");
    gdb.arg(build::hypervisor_elf(platform))
        .args(["-ex", &format!("target remote :{GDB_PORT}")]);
    step(format!(
        "QEMU waits for gdb on port {GDB_PORT}; in another terminal run:\n    {}",
        process::describe(&gdb)
    ));
    let mut cmd = machine.command(&image);
    step(format!("running {}", process::describe(&cmd)));
    let status = cmd.status().context("cannot start qemu-system-aarch64")?;
    Ok(exit_code(process::exit_code(status)))
}

fn clean() -> Result<()> {
    step("cargo clean");
    process::run(
        Command::new("cargo")
            .arg("clean")
            .current_dir(paths::root()),
    )?;
    let build = paths::build_dir();
    step(format!("removing {}", paths::shown(&build).display()));
    match fs::remove_dir_all(&build) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", build.display()))
        }
        _ => Ok(()),
    }
}

/// Validates `file`, checks that its boot image fits (with the hypervisor when it is built)
/// and prints the layout.
fn check_config(file: &Path) -> Result<()> {
    let system = config::load(file)?;
    let size = match fs::read(build::hypervisor_elf(system.config.board.platform)) {
        Ok(elf) => {
            let image = image::assemble(&system, &elf)?;
            format!(
                "boot image: {} bytes (hypervisor {}, bundle {})",
                image.bytes.len(),
                image.hypervisor_len,
                image.bundle_len
            )
        }
        Err(_) => {
            let bundle_len = image::bundle(&system).len();
            let board = system.config.board.platform.board();
            image::check_fits(board, 0, bundle_len).map_err(|e| system.error(e))?;
            format!("bundle: {bundle_len} bytes (the hypervisor is not built: boot image size not checked)")
        }
    };
    println!("{}: valid", file.display());
    print!("{}", layout::describe(&system));
    println!("{size}");
    Ok(())
}
