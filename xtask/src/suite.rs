//! `cargo xtask test`: every check of the project, ending with `<N> passed, <M> failed`.
//!
//! Static checks (rustfmt, clippy for host and AArch64 crates), the host unit tests, a
//! bounded run of every fuzz target (`FUZZ_SECONDS` each), the EL2 profile of the probe
//! (the QEMU plugin of `cargo xtask profile` still loads and counts), then the QEMU scenarios of
//! `scenarios::SCENARIOS`, each on its own boot image under `build/tests/` with a deadline. A
//! failing check never stops the others; only the final count and the exit status summarise
//! them.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::build::{self, ConsoleUse};
use crate::conversation;
use crate::fuzz;
use crate::hostile;
use crate::linux;
use crate::paths::{self, root, GUEST_TARGET, HYPERVISOR_TARGET};
use crate::process::{self, step, Ending};
use crate::profile;
use crate::qemu::Machine;
use crate::scenarios::{console_lines, verdict, Boot, End, RunEnd, Scenario, SCENARIOS};
use crate::xen;

/// Seconds each fuzz target runs in the suite (`make fuzz` runs them longer).
const FUZZ_SECONDS: u64 = 4;

/// Lines of console output shown when a scenario fails.
const TAIL_LINES: usize = 40;

/// A check that is one Cargo command, with these environment variables.
struct CargoCheck {
    name: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
}

/// The crates built for AArch64 only: the hypervisor (`HYPERVISOR_TARGET`) and the
/// bare-metal guests (`GUEST_TARGET`). Their assembly and cross-compiled C do not build for
/// the host.
const BARE_METAL: [&str; 3] = ["partita", "partita-probe", "partita-freertos"];

const CARGO_CHECKS: [CargoCheck; 7] = [
    CargoCheck {
        name: "rustfmt",
        args: &["fmt", "--all", "--", "--check"],
        env: &[],
    },
    CargoCheck {
        name: "rustfmt (fuzz targets)",
        args: &["fmt", "--manifest-path", "fuzz/Cargo.toml", "--", "--check"],
        env: &[],
    },
    CargoCheck {
        name: "clippy (host crates)",
        args: &[
            "clippy",
            "--workspace",
            "--exclude",
            BARE_METAL[0],
            "--exclude",
            BARE_METAL[1],
            "--exclude",
            BARE_METAL[2],
            "--",
            "-D",
            "warnings",
        ],
        env: &[],
    },
    CargoCheck {
        name: "clippy (hypervisor)",
        args: &[
            "clippy",
            "-p",
            BARE_METAL[0],
            "--target",
            HYPERVISOR_TARGET,
            "--",
            "-D",
            "warnings",
        ],
        env: &[],
    },
    CargoCheck {
        name: "clippy (guests)",
        args: &[
            "clippy",
            "-p",
            BARE_METAL[1],
            "-p",
            BARE_METAL[2],
            "--target",
            GUEST_TARGET,
            "--",
            "-D",
            "warnings",
        ],
        env: &[],
    },
    CargoCheck {
        // The FreeRTOS guest built for a GICv2 board (`build::binaries` passes the board's
        // frames; any pair builds for the lint).
        name: "clippy (FreeRTOS guest, gicv2)",
        args: &[
            "clippy",
            "-p",
            BARE_METAL[2],
            "--features",
            "gicv2",
            "--target",
            GUEST_TARGET,
            "--target-dir",
            "target/guest/clippy-gicv2",
            "--",
            "-D",
            "warnings",
        ],
        env: &[
            ("PARTITA_GUEST_GICD", "0x8000000"),
            ("PARTITA_GUEST_GICC", "0x8010000"),
        ],
    },
    CargoCheck {
        name: "unit tests",
        args: &["test", "--workspace"],
        env: &[],
    },
];

#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
}

impl Tally {
    fn record(&mut self, name: &str, problems: &[String], took: Duration) {
        if problems.is_empty() {
            self.passed += 1;
            println!("ok     {name} ({:.1} s)", took.as_secs_f64());
        } else {
            self.failed += 1;
            println!("FAILED {name} ({:.1} s)", took.as_secs_f64());
            for p in problems {
                println!("       {p}");
            }
        }
    }
}

/// Runs every check, or with `only` just the named scenarios, and prints the tally last;
/// returns whether every check passed. An unknown scenario name is an error.
pub fn run(only: &[String]) -> Result<bool> {
    for name in only {
        scenario_named("--only", name)?;
    }
    let mut tally = Tally::default();
    let static_checks: &[CargoCheck] = if only.is_empty() { &CARGO_CHECKS } else { &[] };
    for check in static_checks {
        step(check.name);
        let start = Instant::now();
        let result = process::run(
            Command::new("cargo")
                .args(check.args)
                .envs(check.env.iter().copied())
                .current_dir(root()),
        );
        let problems: Vec<String> = result.err().map(|e| format!("{e:#}")).into_iter().collect();
        tally.record(check.name, &problems, start.elapsed());
    }
    if only.is_empty() {
        step("fuzz targets");
        let start = Instant::now();
        let result = fuzz::run_targets(&[], FUZZ_SECONDS);
        let problems: Vec<String> = result.err().map(|e| format!("{e:#}")).into_iter().collect();
        let name = format!(
            "fuzz ({} targets, {FUZZ_SECONDS} s each)",
            fuzz::TARGETS.len()
        );
        tally.record(&name, &problems, start.elapsed());
    }
    let start = Instant::now();
    let built = build::binaries();
    let build_problems: Vec<String> = built
        .as_ref()
        .err()
        .map(|e| format!("{e:#}"))
        .into_iter()
        .collect();
    tally.record("build", &build_problems, start.elapsed());
    if only.is_empty() {
        step("profile of the probe (QEMU plugin)");
        let start = Instant::now();
        let problems: Vec<String> = if built.is_ok() {
            profile::check_probe()
                .err()
                .map(|e| format!("{e:#}"))
                .into_iter()
                .collect()
        } else {
            vec!["not run: the build failed".to_string()]
        };
        tally.record("profile (QEMU plugin)", &problems, start.elapsed());
    }
    let chosen = SCENARIOS
        .iter()
        .filter(|s| only.is_empty() || only.iter().any(|name| name == s.name));
    for scenario in chosen {
        step(format!("scenario {}", scenario.name));
        let start = Instant::now();
        let problems = if built.is_ok() {
            run_scenario(scenario).unwrap_or_else(|e| vec![format!("{e:#}")])
        } else {
            vec!["not run: the build failed".to_string()]
        };
        tally.record(scenario.name, &problems, start.elapsed());
    }
    println!("{} passed, {} failed", tally.passed, tally.failed);
    Ok(tally.failed == 0)
}

/// The scenario called `name`; an error naming the known ones (after `what: `) otherwise.
fn scenario_named(what: &str, name: &str) -> Result<&'static Scenario> {
    match SCENARIOS.iter().find(|s| s.name == name) {
        Some(scenario) => Ok(scenario),
        None => {
            let known: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
            anyhow::bail!(
                "{what}: no scenario named \"{name}\"; known: {}",
                known.join(", ")
            )
        }
    }
}

/// `cargo xtask scenario NAME`: builds, boots that one scenario, keeps its console output in
/// `build/tests/NAME.log` and reports it; for the hostile suite, probe by probe and the
/// `hostile: probes=<n> breaches=<b>` line last.
/// Returns whether it passed. An unknown name is an error before anything is built.
pub fn run_one(name: &str) -> Result<bool> {
    let scenario = scenario_named("scenario", name)?;
    build::binaries()?;
    step(format!("scenario {}", scenario.name));
    let start = Instant::now();
    let run = boot(scenario)?;
    let took = start.elapsed().as_secs_f64();
    let log = paths::scenario_image(scenario.name).with_extension("log");
    // A native or Xen scenario wrote no image there.
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&log, &run.output).with_context(|| format!("cannot write {}", log.display()))?;
    step(format!(
        "console output in {}",
        paths::shown(&log).display()
    ));
    for problem in &run.problems {
        println!("       {problem}");
    }
    let passed = run.problems.is_empty();
    let verdict = if passed { "ok    " } else { "FAILED" };
    println!("{verdict} {} ({took:.1} s)", scenario.name);
    if hostile::judges(scenario.name) {
        hostile::report(&run.output)
            .lines()
            .iter()
            .for_each(|line| println!("{line}"));
    }
    Ok(passed)
}

/// A scenario's run: everything QEMU printed and what went wrong (empty when it passed).
struct ScenarioRun {
    output: String,
    problems: Vec<String>,
}

/// Boots one scenario and returns what went wrong (empty when it passed), with the command
/// and the console's last lines when something did.
fn run_scenario(scenario: &Scenario) -> Result<Vec<String>> {
    Ok(boot(scenario)?.problems)
}

/// Boots one scenario and judges its run.
fn boot(scenario: &Scenario) -> Result<ScenarioRun> {
    let mut cmd = scenario_command(scenario)?;
    let deadline = Duration::from_secs(scenario.timeout_secs);
    let (run, mut problems) = match scenario.boot {
        Boot::Typed(_, script) => {
            conversation::converse(&mut cmd, script, &typed_logs(scenario), deadline)?
        }
        _ => {
            let stop = |output: &str| match scenario.end {
                End::StopWhen(condition) => condition.met(console_lines(output)),
                End::Exit(_) => false,
            };
            (process::capture(&mut cmd, deadline, stop)?, Vec::new())
        }
    };
    let output = run.output;
    problems.extend(match (run.ending, run.stopped) {
        (Ending::Exited(status), _) => verdict(scenario, RunEnd::Exited(status), &output),
        (Ending::TimedOut, true) => verdict(scenario, RunEnd::Stopped, &output),
        (Ending::TimedOut, false) => vec![format!(
            "QEMU did not end within {} s (stopped)",
            scenario.timeout_secs
        )],
    });
    if hostile::judges(scenario.name) {
        problems.extend(hostile::report(&output).problems());
    }
    if !problems.is_empty() {
        problems.push(format!("command: {}", process::describe(&cmd)));
        problems.push(format!("last {TAIL_LINES} console lines:"));
        let lines: Vec<&str> = output.lines().collect();
        let tail = &lines[lines.len().saturating_sub(TAIL_LINES)..];
        problems.extend(
            tail.iter()
                .map(|l| format!("| {}", l.trim_end_matches('\r'))),
        );
    }
    Ok(ScenarioRun { output, problems })
}

/// Where a typed scenario's VMs write their logs.
fn typed_logs(scenario: &Scenario) -> PathBuf {
    paths::scenario_image(scenario.name).with_extension("logs")
}

/// The QEMU command of a scenario: Partita's boot image for its configuration, or Linux
/// directly on the same machine.
fn scenario_command(scenario: &Scenario) -> Result<Command> {
    match scenario.boot {
        Boot::Partita(config) | Boot::Typed(config, _) => {
            let image = paths::scenario_image(scenario.name);
            let config = paths::shown(&root().join(config));
            let console = match scenario.boot {
                Boot::Typed(..) => {
                    // Last run's logs must not answer for this one.
                    let logs = typed_logs(scenario);
                    match std::fs::remove_dir_all(&logs) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                            return Err(e)
                                .with_context(|| format!("cannot remove {}", logs.display()))
                        }
                        _ => {}
                    }
                    ConsoleUse::AsConfigured {
                        log_dir: Some(logs),
                    }
                }
                _ => ConsoleUse::AllTagged,
            };
            let system = build::boot_image(&config, &image, scenario.job, &console)?;
            let machine = Machine {
                board: system.config.board.platform.board(),
                cpu: scenario.cpu,
                cpus: system.config.board.cpus,
                clock: scenario.clock(),
                gdb: false,
            };
            Ok(machine.command(&image))
        }
        Boot::NativeFreertos(bootargs) => {
            let image = paths::guest_image("freertos");
            let machine = Machine {
                cpu: scenario.cpu,
                ..Machine::single(scenario.clock())
            };
            let mut cmd = machine.command(&image);
            cmd.args(["-append", bootargs]);
            Ok(cmd)
        }
        Boot::XenFreertos(bootargs) => {
            let domains = xen::Domains {
                dom0: scenario.job.map(Some),
                freertos: Some(bootargs),
            };
            let options = xen::XenOptions {
                clock: scenario.clock(),
            };
            Ok(xen::boot(&paths::cache_dir(), &paths::xen_files(), &domains, &options)?.command)
        }
        Boot::NativeLinux => {
            let guest = linux::prepare(&paths::cache_dir())?;
            let bootargs = linux::bootargs(scenario.job, &[])?;
            let options = linux::NativeOptions {
                clock: scenario.clock(),
                no_reboot: false,
                cpus: 1,
            };
            Ok(linux::native_command(&guest, &bootargs, &options))
        }
    }
}
