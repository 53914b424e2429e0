//! `cargo xtask bench [--quick] [--out DIR] [--jobs N]`: the measurement suite of
//! shared/BENCHMARKS.md.
//! It boots every measured row of the matrix (`matrix::ROWS`) under deterministic QEMU
//! time, one boot per row carrying all of its experiments, parses the consoles into
//! records, and writes `results.json`, `report.md` and the plots (SVG and PNG) into the
//! output folder. It never edits sources or configurations; everything it writes goes to
//! the output folder and `build/bench/`.

mod accel;
mod console;
mod formula;
mod matrix;
mod parse;
mod plot;
mod provenance;
mod record;
mod report;
mod runner;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use partita_core::board::Platform;
use serde::{Deserialize, Serialize};

use crate::process::{step, Ending};
use crate::qemu::Cpu;
use crate::{build, linux, paths, profile, xen};
use matrix::{Boot, Guest, Mode, Row, ROWS};
use provenance::{RunCommand, Stamp};
use record::{Measure, NotMeasured, Record, Results};
use runner::Progress;

/// What `cargo xtask bench` was asked for.
pub struct Options {
    pub quick: bool,
    pub out: Option<PathBuf>,
    /// Keep the rows `out` already holds from an earlier sitting (`saved_rows`).
    pub resume: bool,
    /// Only these configurations (all when empty).
    pub only: Vec<String>,
    /// The board of the Partita rows: on another than qemu-virt only the shared rows run
    /// (`matrix::on_board`).
    pub board: Platform,
    /// The CPU model QEMU emulates for every row.
    pub cpu: Cpu,
    /// How many rows run at once (each QEMU takes one host core).
    pub jobs: usize,
}

/// The board `--board` names.
pub fn board_named(name: &str) -> Result<Platform> {
    Platform::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Platform::ALL.iter().map(|p| p.name()).collect();
        anyhow!(
            "--board: no board named \"{name}\"; known: {}",
            known.join(", ")
        )
    })
}

/// The host's cores (`--jobs`'s default), 1 when the host does not say.
pub fn host_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Wall-clock limit of one boot before QEMU is killed.
fn deadline(mode: Mode, guest: Guest) -> Duration {
    Duration::from_secs(match (mode, guest) {
        (Mode::Quick, Guest::Linux | Guest::Ivc) => 1_200,
        (Mode::Quick, Guest::FreeRtos | Guest::Fabric) => 900,
        (Mode::Full, _) => 3_600,
    })
}

/// The names of a Partita boot's VMs in configuration order (for the guest's counter
/// lines, which name VMs by index); empty without Partita. A FreeRTOS row beside a load
/// reads them from its configuration (the two-RTOS system has three VMs).
fn vm_names(boot: &Boot) -> Vec<String> {
    let names: &[&str] = match boot {
        Boot::PartitaFreeRtos => &["freertos"],
        Boot::Partita(_) | Boot::PartitaSmp(_) => &["linux"],
        Boot::BesideDemo(..) => &[runner::BESIDE_RTOS_VM, "linux"],
        Boot::Beside { config, .. } | Boot::Fabric(config) => return configured_vm_names(config),
        Boot::Scale { vms, .. } => &matrix::SCALE_VMS[..usize::from(*vms)],
        _ => &[],
    };
    names.iter().map(|name| (*name).to_owned()).collect()
}

/// The VM names of the configuration file `config` (relative to the workspace root);
/// empty when it cannot be read, which the run that booted it has reported already.
fn configured_vm_names(config: &str) -> Vec<String> {
    fs::read_to_string(paths::root().join(config))
        .ok()
        .and_then(|text| partita_config::parse(&text).ok())
        .map(|system| system.vms.into_iter().map(|vm| vm.name).collect())
        .unwrap_or_default()
}

/// Runs the benchmark and returns the output folder.
pub fn run(options: &Options) -> Result<PathBuf> {
    let mode = if options.quick {
        Mode::Quick
    } else {
        Mode::Full
    };
    if let (true, Some(out)) = (options.resume, &options.out) {
        check_resumable(out, provenance::commit().1)?;
    }
    let cache = paths::cache_dir();
    let measured: Vec<(&Row, Boot)> = ROWS
        .iter()
        .filter_map(|row| Some((row, matrix::on_board(row.boot, options.board)?)))
        .filter(|(row, _)| options.only.is_empty() || options.only.iter().any(|c| c == row.config))
        .collect();
    check_only(&options.only)?;
    if measured.is_empty() {
        bail!(
            "--board {}: runs the shared rows only ({})",
            options.board.name(),
            matrix::shared_rows().join(", ")
        );
    }
    prepare(&measured, &cache)?;
    let mut config_files: Vec<&str> = measured
        .iter()
        .filter_map(|(_, boot)| boot.config_file())
        .collect();
    config_files.dedup();
    let flags = provenance::qemu_flags(options.board, options.cpu);
    let mut provenance = provenance::collect(mode.name(), flags, &config_files, &cache);
    let out = options
        .out
        .clone()
        .unwrap_or_else(|| default_out(mode, options.board, &provenance.date, &provenance.commit));
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let stamp = provenance.stamp();
    let mut saved = if options.resume {
        saved_rows(&out, &stamp)?
    } else {
        Vec::new()
    };
    saved.retain(|s| measured.iter().any(|(row, _)| s.is_of(row)));
    let to_run: Vec<(&Row, Boot)> = measured
        .iter()
        .copied()
        .filter(|(row, _)| !saved.iter().any(|s| s.is_of(row)))
        .collect();
    let ivc_experiments = matrix::ivc_experiments(mode);
    let total = to_run
        .iter()
        .map(|(row, boot)| match row.guest {
            Guest::Linux => matrix::linux_experiments_of(*boot, mode).len(),
            Guest::Ivc => ivc_experiments.len(),
            Guest::FreeRtos | Guest::Fabric => 1,
        })
        .sum();
    let bench = Bench {
        mode,
        cpu: options.cpu,
        cache,
        out: out.clone(),
        plugin: profile::build_plugin(&out)?,
        ivc_jobs: matrix::linux_jobs(&ivc_experiments),
        progress: Mutex::new(Progress::new(total)),
        stamp,
    };
    if !saved.is_empty() {
        step(format!(
            "resuming: {} of the {} rows were measured before, {} to run",
            measured.len() - to_run.len(),
            measured.len(),
            to_run.len()
        ));
    }
    let mut outcomes: Vec<RowOutcome> = saved.into_iter().map(|s| s.outcome).collect();
    outcomes.extend(bench.rows(&to_run, options.jobs)?);
    let mut records = Vec::new();
    let mut not_measured = Vec::new();
    for outcome in outcomes {
        provenance.runs.extend(outcome.runs);
        records.extend(outcome.records);
        not_measured.extend(outcome.not_measured);
    }
    let elapsed = lock(&bench.progress).elapsed();
    not_measured.extend(unmeasured_rows());
    let results = Results {
        provenance,
        records,
        not_measured,
    };
    write_outputs(&out, &results)?;
    step(format!(
        "benchmark ({} mode) done in {}: {} records in {}",
        mode.name(),
        runner::minutes_seconds(elapsed),
        results.records.len(),
        paths::shown(&out).display()
    ));
    Ok(out)
}

/// What every row of one benchmark run shares.
struct Bench {
    mode: Mode,
    cpu: Cpu,
    cache: PathBuf,
    out: PathBuf,
    /// The EL2 profile's QEMU plugin, attached to every Partita boot.
    plugin: PathBuf,
    ivc_jobs: Vec<String>,
    progress: Mutex<Progress>,
    /// What a finished row is saved with (`save_row`).
    stamp: Stamp,
}

/// What one row's boots gave: their commands, records and what they did not measure.
#[derive(Debug, Default, Serialize, Deserialize)]
struct RowOutcome {
    runs: Vec<RunCommand>,
    records: Vec<Record>,
    not_measured: Vec<NotMeasured>,
}

/// The lock's value, even when a thread panicked holding it (the progress line and the
/// outcomes stay usable: each is written whole).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Bench {
    /// Runs the measured rows, `jobs` at a time (each QEMU is one host thread under
    /// `-icount`, and its figures are the same whatever else the host runs), and returns
    /// their outcomes in the matrix's order (the longest rows start first,
    /// `emulated_cpus`). After a row fails no other row starts; the first failure is
    /// returned once the running rows are over.
    fn rows(&self, measured: &[(&Row, Boot)], jobs: usize) -> Result<Vec<RowOutcome>> {
        // The rows with the most emulated CPUs, the longest, start first, so that none of
        // them is left to run alone at the end.
        let mut order: Vec<usize> = (0..measured.len()).collect();
        order.sort_by_key(|&index| std::cmp::Reverse(measured[index].1.emulated_cpus()));
        let next = AtomicUsize::new(0);
        let outcomes: Vec<Mutex<Option<Result<RowOutcome>>>> =
            measured.iter().map(|_| Mutex::new(None)).collect();
        let failed = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for _ in 0..jobs.clamp(1, measured.len().max(1)) {
                scope.spawn(|| {
                    while !failed.load(Ordering::Relaxed) {
                        let Some(&index) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        let (row, boot) = measured[index];
                        let outcome = self
                            .row(row, boot)
                            .and_then(|outcome| self.save_row(row, outcome));
                        if outcome.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        *lock(&outcomes[index]) = Some(outcome);
                    }
                });
            }
        });
        let mut done = Vec::new();
        for outcome in outcomes {
            match outcome.into_inner().unwrap_or_else(PoisonError::into_inner) {
                Some(Ok(outcome)) => done.push(outcome),
                Some(Err(error)) => return Err(error),
                // Not started: a failure stopped the run, and it is returned above.
                None => {}
            }
        }
        Ok(done)
    }

    /// Boots `row` (once, or once per Linux job) and reads its records. Its files (boot
    /// image, generated configuration, device trees) are in a folder of its own under
    /// `build/bench/`, so rows may run side by side.
    fn row(&self, row: &Row, boot: Boot) -> Result<RowOutcome> {
        let (mode, out) = (self.mode, &self.out);
        let files =
            paths::build_dir()
                .join("bench")
                .join(format!("{}-{}", row.config, row.guest.name()));
        fs::create_dir_all(&files).with_context(|| format!("creating {}", files.display()))?;
        let jobs = matrix::linux_jobs(&matrix::linux_experiments_of(boot, mode));
        let boots: Vec<&str> = match row.guest {
            Guest::Linux => jobs.iter().map(String::as_str).collect(),
            Guest::Ivc => self.ivc_jobs.iter().map(String::as_str).collect(),
            Guest::FreeRtos | Guest::Fabric => vec![""],
        };
        let mut outcome = RowOutcome::default();
        let mut console = String::new();
        let mut worst = None;
        let mut profiled = Profiled::default();
        for (index, job) in boots.iter().enumerate() {
            let started = runner::command(boot, job, mode, &self.cache, &files, self.cpu)?;
            let mut cmd = started.cmd;
            let name = format!("{}-{}-{}", row.config, row.guest.name(), index + 1);
            let profile_file = out.join(format!("profile-{name}.txt"));
            if let Some(platform) = started.partita {
                profile::attach(&mut cmd, &self.plugin, platform, &profile_file)?;
            }
            outcome.runs.push(RunCommand {
                config: row.config.to_owned(),
                guest: row.guest.name().to_owned(),
                command: crate::process::describe(&cmd),
            });
            let next = |experiment: &str| {
                lock(&self.progress).next(row.config, row.guest.name(), experiment);
            };
            match row.guest {
                Guest::FreeRtos => next("rtos-suite"),
                Guest::Fabric => next("ofdm"),
                Guest::Linux | Guest::Ivc => {}
            }
            // FreeRTOS never stops in an IVC row: the run ends with Linux's job.
            let stop_after: Option<fn(&str) -> bool> = match row.guest {
                Guest::Ivc => Some(|line| line.starts_with(runner::DEMO_END)),
                _ => runner::stop_line(boot),
            };
            let captured = runner::execute(&mut cmd, deadline(mode, row.guest), stop_after, next)?;
            let log = out.join(format!("console-{name}.txt"));
            fs::write(&log, &captured.output)
                .with_context(|| format!("writing {}", log.display()))?;
            console.push_str(&captured.output);
            if !captured.stopped {
                worst = worst.or_else(|| describe_ending(&captured.ending));
            }
            if let Some(reason) = unfinished(stop_after.is_some(), &captured) {
                outcome.not_measured.push(NotMeasured {
                    config: row.config.to_owned(),
                    guest: row.guest.name().to_owned(),
                    what: format!(
                        "the end of boot {} (what the VMs print as they stop)",
                        index + 1
                    ),
                    reason,
                });
            }
            if started.partita.is_some() {
                profiled.add(profile::read_counts(&profile_file));
            }
        }
        let (found, lost) = records_of(row, boot, mode, &console, worst.as_deref());
        outcome.records.extend(found);
        outcome.not_measured.extend(lost);
        match profiled {
            Profiled::Counted { total, el2 } => outcome.records.extend(
                profiled_records(row.guest.name(), total, el2)
                    .into_iter()
                    .map(|m| m.label(row.config)),
            ),
            Profiled::Lost(why) => outcome.not_measured.push(NotMeasured {
                config: row.config.to_owned(),
                guest: row.guest.name().to_owned(),
                what: "EL2 profile".to_owned(),
                reason: why,
            }),
            Profiled::None => {}
        }
        Ok(outcome)
    }
}

/// Refuses an `--only` that names no configuration.
fn check_only(only: &[String]) -> Result<()> {
    match only.iter().find(|c| !matrix::CONFIGS.contains(&c.as_str())) {
        Some(unknown) => anyhow::bail!(
            "--only: no configuration named \"{unknown}\"; known: {}",
            matrix::CONFIGS.join(", ")
        ),
        None => Ok(()),
    }
}

/// Downloads and builds what the measured rows boot.
fn prepare(measured: &[(&Row, Boot)], cache: &Path) -> Result<()> {
    let boots: Vec<Boot> = measured.iter().map(|(_, boot)| *boot).collect();
    if boots.iter().any(|b| {
        matches!(
            b,
            Boot::Partita(_)
                | Boot::PartitaSmp(_)
                | Boot::PartitaFreeRtos
                | Boot::NativeFreeRtos
                | Boot::Beside { .. }
                | Boot::XenDomU(_)
                | Boot::BesideDemo(..)
                | Boot::Scale { .. }
                | Boot::Fabric(_)
        )
    }) {
        build::binaries()?;
    }
    let beside = boots.iter().any(|b| {
        matches!(
            b,
            Boot::Beside { .. }
                | Boot::BesideDemo(..)
                | Boot::XenDomU(Some(_))
                | Boot::Scale { .. }
        )
    });
    let linux = measured
        .iter()
        .any(|(row, _)| matches!(row.guest, Guest::Linux | Guest::Ivc));
    if beside || linux {
        let guest = linux::prepare(cache)?;
        // configs/default.toml and split.toml boot the initramfs with the IVC tools.
        linux::prepare_ivc(cache, &guest)?;
    }
    if boots
        .iter()
        .any(|b| matches!(b, Boot::XenDom0 | Boot::XenDomU(_)))
    {
        xen::prepare(cache)?;
    }
    Ok(())
}

/// `bench/out/<YYYY-MM-DD>-<short commit>/` (`-quick` appended in quick mode).
fn default_out(mode: Mode, board: Platform, date: &str, commit: &str) -> PathBuf {
    let day = date.get(..10).unwrap_or(date);
    let commit = if commit.is_empty() { "nogit" } else { commit };
    let mode = match mode {
        Mode::Quick => "-quick",
        Mode::Full => "",
    };
    let suffix = match board {
        Platform::QemuVirt => mode.to_owned(),
        other => format!("{mode}-{}", other.name()),
    };
    paths::root()
        .join("bench")
        .join("out")
        .join(format!("{day}-{commit}{suffix}"))
}

/// A finished row as `cargo xtask bench` keeps it in `<out>/rows/`, so that a run stopped
/// before its end can go on in another sitting (`--resume`) without measuring it again.
#[derive(Debug, Serialize, Deserialize)]
struct SavedRow {
    config: String,
    guest: String,
    stamp: Stamp,
    outcome: RowOutcome,
}

impl SavedRow {
    /// Whether this is the kept outcome of the matrix's `row`.
    fn is_of(&self, row: &Row) -> bool {
        self.config == row.config && self.guest == row.guest.name()
    }
}

/// The folder of a run's finished rows.
fn rows_dir(out: &Path) -> PathBuf {
    out.join("rows")
}

impl Bench {
    /// Keeps `row`'s outcome in the output folder's `rows/` and hands it back.
    fn save_row(&self, row: &Row, outcome: RowOutcome) -> Result<RowOutcome> {
        let saved = SavedRow {
            config: row.config.to_owned(),
            guest: row.guest.name().to_owned(),
            stamp: self.stamp.clone(),
            outcome,
        };
        write_row(&self.out, &saved)?;
        Ok(saved.outcome)
    }
}

/// Whether the run in `out` can go on (`--resume`), checked before anything is built: it
/// has finished rows, and the checkout (`dirty`: with uncommitted changes) is clean.
fn check_resumable(out: &Path, dirty: bool) -> Result<()> {
    if !rows_dir(out).is_dir() {
        let shown = paths::shown(out);
        bail!(
            "--resume: {} holds no finished rows ({}/rows/ is missing)",
            shown.display(),
            shown.display()
        );
    }
    if dirty {
        bail!(
            "--resume: the checkout has uncommitted changes; a run goes on only at the clean \
             commit its rows were measured at"
        );
    }
    Ok(())
}

/// Writes `saved` as `<out>/rows/<config>-<guest>.json`, whole or not at all: a run killed
/// mid-write leaves only a `.json.partial` file, which `--resume` does not read, so that
/// row is measured again.
fn write_row(out: &Path, saved: &SavedRow) -> Result<()> {
    let dir = rows_dir(out);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let file = dir.join(format!("{}-{}.json", saved.config, saved.guest));
    let partial = file.with_extension("json.partial");
    let json = serde_json::to_string(saved).context("encoding a finished row")?;
    fs::write(&partial, json).with_context(|| format!("writing {}", partial.display()))?;
    fs::rename(&partial, &file).with_context(|| format!("writing {}", file.display()))
}

/// The rows an earlier sitting of this run finished (`--resume`), each measured with
/// `stamp`: the same clean commit, mode, QEMU, machine and guest packages.
fn saved_rows(out: &Path, stamp: &Stamp) -> Result<Vec<SavedRow>> {
    check_resumable(out, stamp.dirty)?;
    let entries = fs::read_dir(rows_dir(out))
        .with_context(|| format!("reading {}", rows_dir(out).display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    let mut saved = Vec::new();
    for file in files {
        let name = paths::shown(&file).display().to_string();
        let text = fs::read_to_string(&file).with_context(|| format!("reading {name}"))?;
        let row: SavedRow = serde_json::from_str(&text)
            .with_context(|| format!("--resume: {name} is not a finished row"))?;
        if row.stamp != *stamp {
            bail!(
                "--resume: {name} was measured at commit {} ({} mode) with another set-up than \
                 this run at commit {} ({} mode): go on with the same commit, mode, QEMU, \
                 machine and guest packages, or choose another --out",
                row.stamp.commit,
                row.stamp.mode,
                stamp.commit,
                stamp.mode
            );
        }
        saved.push(row);
    }
    Ok(saved)
}

/// Why a boot that should have been stopped at its end line (`has_end`) was not: the line
/// never came, and QEMU ran to its deadline or exited. Its figures may all be there (a
/// FreeRTOS benchmark prints them before its VM stops), but not what is printed as a VM
/// stops (Partita's counters of it), and a run that hangs there is a fault to see, not a
/// long row. `None` for a boot stopped there, or without an end line.
fn unfinished(has_end: bool, captured: &runner::Console) -> Option<String> {
    if !has_end || captured.stopped {
        return None;
    }
    let ending = describe_ending(&captured.ending).unwrap_or_else(|| "QEMU exited 0".to_owned());
    Some(format!("its end line never came: {ending}"))
}

/// Why a run's figures may be missing, or None when QEMU exited 0.
fn describe_ending(ending: &Ending) -> Option<String> {
    match ending {
        Ending::Exited(0) => None,
        Ending::Exited(code) => Some(format!("QEMU exited with status {code}")),
        Ending::TimedOut => Some("QEMU was killed at the run's deadline".to_owned()),
    }
}

/// The records a row's console holds, and what it should have held but does not.
/// The EL2 profile of a row's boots (`cargo xtask profile`'s plugin, attached to every
/// Partita boot): instructions executed in all and by Partita, summed over the boots, or
/// why a boot has none.
#[derive(Default)]
enum Profiled {
    #[default]
    None,
    Counted {
        total: u64,
        el2: u64,
    },
    Lost(String),
}

impl Profiled {
    fn add(&mut self, counts: Result<profile::Counts>) {
        *self = match (std::mem::take(self), counts) {
            (Profiled::Lost(why), _) => Profiled::Lost(why),
            (_, Err(error)) => Profiled::Lost(format!("{error:#}")),
            (Profiled::None, Ok(c)) => Profiled::Counted {
                total: c.total,
                el2: c.el2,
            },
            (Profiled::Counted { total, el2 }, Ok(c)) => Profiled::Counted {
                total: total + c.total,
                el2: el2 + c.el2,
            },
        }
    }
}

/// Experiment `profile/<guest>` (a configuration has a Linux and a FreeRTOS row): the
/// instructions QEMU executed over the row's boots, Partita's among them, and their share
/// (%, two decimals).
fn profiled_records(guest: &str, total: u64, el2: u64) -> Vec<Measure> {
    let experiment = format!("profile/{guest}");
    let share = (el2 as f64 * 1e4 / total.max(1) as f64).round() / 1e2;
    vec![
        Measure::new(&experiment, "instructions", total as f64, "count"),
        Measure::new(&experiment, "el2-instructions", el2 as f64, "count"),
        Measure::new(&experiment, "el2-share", share, "%"),
    ]
}

fn records_of(
    row: &Row,
    boot: Boot,
    mode: Mode,
    console: &str,
    ending: Option<&str>,
) -> (Vec<Record>, Vec<NotMeasured>) {
    let lost = |what: &str, reason: String| NotMeasured {
        config: row.config.to_owned(),
        guest: row.guest.name().to_owned(),
        what: what.to_owned(),
        reason,
    };
    let names = vm_names(&boot);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut records: Vec<Record> = parse::parse_partita(console, &names)
        .into_iter()
        .map(|m| m.label(row.config))
        .collect();
    let mut missing = Vec::new();
    if records.is_empty() && !names.is_empty() {
        let why = ending.unwrap_or("Partita printed no counters");
        missing.push(lost("hypervisor figures", why.to_owned()));
    }
    match row.guest {
        Guest::FreeRtos => {
            let found = parse::parse_rtos(console, runner::BESIDE_RTOS_VM);
            if found.is_empty() {
                let why = ending.unwrap_or("the guest printed no result lines");
                missing.push(lost("every experiment", why.to_owned()));
            }
            records.extend(found.into_iter().map(|m| m.label(row.config)));
        }
        Guest::Fabric => {
            let found = parse::parse_fabric(console);
            if found.is_empty() {
                let why = ending.unwrap_or("Partita printed no fabric figures");
                missing.push(lost("the OFDM experiment", why.to_owned()));
            }
            records.extend(found.into_iter().map(|m| m.label(row.config)));
        }
        Guest::Linux | Guest::Ivc => {
            let sections = console::sections(console);
            let experiments = match row.guest {
                Guest::Ivc => matrix::ivc_experiments(mode),
                _ => matrix::linux_experiments_of(boot, mode),
            };
            for (experiment, _) in experiments {
                let section = sections.iter().find(|s| s.name == experiment.name);
                let parsed = match section {
                    None => Err(ending.unwrap_or("its output is missing").to_owned()),
                    Some(s) if s.status != Some(0) => Err(match s.status {
                        Some(code) => format!("the command exited with status {code}"),
                        None => ending.unwrap_or("the run ended inside it").to_owned(),
                    }),
                    Some(s) => parse::parse(experiment.parser, experiment.name, &s.lines)
                        .map_err(|e| format!("unreadable output: {e:#}")),
                };
                match parsed {
                    Ok(found) => records.extend(found.into_iter().map(|m| m.label(row.config))),
                    Err(reason) => missing.push(lost(experiment.name, reason)),
                }
            }
        }
    }
    (records, missing)
}

/// The experiments no row runs yet.
fn unmeasured_rows() -> Vec<NotMeasured> {
    matrix::EXPERIMENTS_NOT_RUN
        .iter()
        .map(|(guest, what, reason)| NotMeasured {
            config: "every configuration".to_owned(),
            guest: (*guest).to_owned(),
            what: (*what).to_owned(),
            reason: (*reason).to_owned(),
        })
        .collect()
}

/// `results.json`, the plots and `report.md` in `dir`.
fn write_outputs(dir: &Path, results: &Results) -> Result<()> {
    let json = serde_json::to_string_pretty(results).context("encoding results.json")?;
    fs::write(dir.join("results.json"), json + "\n").context("writing results.json")?;
    let plots = plot::render_all(dir, results)?;
    fs::write(dir.join("report.md"), report::render(results, &plots)).context("writing report.md")
}

#[cfg(test)]
mod tests {
    use super::parse::fixtures::{
        FREERTOS, NATIVE, RTOS_NATIVE, RTOS_SHARED, RTOS_SOLO, RTOS_XEN_SHARED, RTOS_XEN_SOLO,
        SOLO, XEN,
    };
    use super::*;

    fn row(config: &str, guest: Guest) -> &'static Row {
        ROWS.iter()
            .find(|r| r.config == config && r.guest == guest)
            .unwrap()
    }

    fn stamp(commit: &str) -> Stamp {
        Stamp {
            mode: "full".to_owned(),
            commit: commit.to_owned(),
            dirty: false,
            qemu_version: "QEMU emulator version 7.2.22".to_owned(),
            qemu_flags: "-M virt".to_owned(),
            linux_versions: vec!["linux-image-6.1.0".to_owned()],
            xen_version: "4.17".to_owned(),
        }
    }

    /// A fresh output folder under the target directory.
    fn out_dir(name: &str) -> PathBuf {
        let dir = paths::root().join("target").join("bench-tests").join(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn saved_row(commit: &str) -> SavedRow {
        SavedRow {
            config: "solo".to_owned(),
            guest: "freertos".to_owned(),
            stamp: stamp(commit),
            outcome: RowOutcome {
                runs: vec![RunCommand {
                    config: "solo".to_owned(),
                    guest: "freertos".to_owned(),
                    command: "qemu-system-aarch64".to_owned(),
                }],
                records: Vec::new(),
                not_measured: vec![NotMeasured {
                    config: "solo".to_owned(),
                    guest: "freertos".to_owned(),
                    what: "x".to_owned(),
                    reason: "y".to_owned(),
                }],
            },
        }
    }

    #[test]
    fn a_resumed_run_keeps_the_rows_measured_with_its_stamp() {
        let out = out_dir("resume-kept");
        write_row(&out, &saved_row("abc1234")).unwrap();
        let rows = saved_rows(&out, &stamp("abc1234")).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].config.as_str(), rows[0].guest.as_str()),
            ("solo", "freertos")
        );
        assert_eq!(rows[0].outcome.runs.len(), 1);
        assert_eq!(rows[0].outcome.not_measured[0].reason, "y");
        assert!(!rows_dir(&out).join("solo-freertos.json.partial").exists());
    }

    #[test]
    fn a_row_cut_off_mid_write_is_measured_again() {
        let out = out_dir("resume-partial");
        write_row(&out, &saved_row("abc1234")).unwrap();
        fs::write(
            rows_dir(&out).join("solo-linux.json.partial"),
            "{\"config\":",
        )
        .unwrap();
        let rows = saved_rows(&out, &stamp("abc1234")).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].guest, "freertos");
    }

    #[test]
    fn a_resumed_run_refuses_rows_of_another_setup_a_dirty_tree_or_no_rows() {
        let out = out_dir("resume-refused");
        let shown = paths::shown(&out).display().to_string();
        let error = |stamp: &Stamp| format!("{:#}", saved_rows(&out, stamp).unwrap_err());
        assert_eq!(
            error(&stamp("abc1234")),
            format!("--resume: {shown} holds no finished rows ({shown}/rows/ is missing)")
        );
        write_row(&out, &saved_row("abc1234")).unwrap();
        assert_eq!(
            error(&stamp("def5678")),
            format!(
                "--resume: {shown}/rows/solo-freertos.json was measured at commit abc1234 \
                 (full mode) with another set-up than this run at commit def5678 (full mode): \
                 go on with the same commit, mode, QEMU, machine and guest packages, or \
                 choose another --out"
            )
        );
        let mut other_qemu = stamp("abc1234");
        other_qemu.qemu_version = "QEMU emulator version 10.0.2".to_owned();
        assert!(error(&other_qemu).contains("with another set-up"));
        let mut dirty = stamp("abc1234");
        dirty.dirty = true;
        assert_eq!(
            error(&dirty),
            "--resume: the checkout has uncommitted changes; a run goes on only at the clean \
             commit its rows were measured at"
        );
        fs::write(rows_dir(&out).join("broken.json"), "{").unwrap();
        assert!(error(&stamp("abc1234")).starts_with(&format!(
            "--resume: {shown}/rows/broken.json is not a finished row"
        )));
    }

    #[test]
    fn a_boot_that_never_reached_its_end_line_is_reported() {
        let console = |ending, stopped| runner::Console {
            ending,
            output: String::new(),
            stopped,
        };
        assert_eq!(
            unfinished(true, &console(Ending::TimedOut, false)).as_deref(),
            Some("its end line never came: QEMU was killed at the run's deadline")
        );
        assert_eq!(
            unfinished(true, &console(Ending::Exited(0), false)).as_deref(),
            Some("its end line never came: QEMU exited 0")
        );
        assert_eq!(unfinished(true, &console(Ending::Exited(0), true)), None);
        assert_eq!(
            unfinished(false, &console(Ending::Exited(0), false)),
            None,
            "a run without an end line ends as QEMU does"
        );
    }

    #[test]
    fn rows_know_how_many_cpus_qemu_emulates_for_them() {
        let cpus = |config, guest| row(config, guest).boot.emulated_cpus();
        assert_eq!(cpus("scale-4vm-4cpu", Guest::FreeRtos), 4);
        assert_eq!(cpus("scale-2vm-3cpu", Guest::FreeRtos), 3);
        assert_eq!(cpus("mixed-hackbench", Guest::FreeRtos), 2);
        assert_eq!(cpus("split-idle", Guest::FreeRtos), 2);
        assert_eq!(cpus("shared-hackbench", Guest::FreeRtos), 1);
        assert_eq!(cpus("solo", Guest::FreeRtos), 1);
        assert_eq!(cpus("xen-solo", Guest::FreeRtos), 1);
        assert!(cpus("native-smp", Guest::Linux) > 1);
        assert!(cpus("smp", Guest::Linux) > 1);
    }

    fn boot_of(config: &str, guest: Guest) -> Boot {
        row(config, guest).boot
    }

    fn fixture_results() -> Results {
        let mut records = Vec::new();
        let mut not_measured = unmeasured_rows();
        for (config, guest, console) in [
            ("native", Guest::Linux, NATIVE),
            ("solo", Guest::Linux, SOLO),
            ("xen", Guest::Linux, XEN),
            ("native", Guest::FreeRtos, RTOS_NATIVE),
            ("solo", Guest::FreeRtos, RTOS_SOLO),
            ("shared-hackbench", Guest::FreeRtos, RTOS_SHARED),
            ("xen-solo", Guest::FreeRtos, RTOS_XEN_SOLO),
            ("xen-shared-hackbench", Guest::FreeRtos, RTOS_XEN_SHARED),
        ] {
            let (found, lost) = records_of(
                row(config, guest),
                boot_of(config, guest),
                Mode::Quick,
                console,
                None,
            );
            records.extend(found);
            not_measured.extend(lost);
        }
        // The demo's `rt:` line (a guest without the suite), read as another configuration.
        let (found, _) = records_of(
            row("native", Guest::FreeRtos),
            Boot::NativeFreeRtos,
            Mode::Quick,
            FREERTOS,
            None,
        );
        records.extend(found.into_iter().map(|mut r| {
            r.config = "xen".to_owned();
            r
        }));
        Results {
            provenance: provenance::collect(
                "quick",
                provenance::qemu_flags(Platform::QemuVirt, Cpu::CortexA72),
                &["configs/linux.toml"],
                &paths::cache_dir(),
            ),
            records,
            not_measured,
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("partita-bench-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn every_quick_linux_experiment_gives_its_records_in_every_configuration() {
        let results = fixture_results();
        let expected: [(&str, &[(&str, &str)]); 9] = [
            (
                "cyclictest-hackbench",
                &[
                    ("samples", "count"),
                    ("min", "ns"),
                    ("avg", "ns"),
                    ("max", "ns"),
                ],
            ),
            (
                "cyclictest-idle",
                &[
                    ("samples", "count"),
                    ("min", "ns"),
                    ("avg", "ns"),
                    ("max", "ns"),
                    ("overflows", "count"),
                ],
            ),
            (
                "sysbench-cpu",
                &[
                    ("total_time", "s"),
                    ("events", "count"),
                    ("events_per_s", "events/s"),
                ],
            ),
            (
                "sysbench-memory",
                &[
                    ("total_time", "s"),
                    ("events", "count"),
                    ("throughput", "MiB/s"),
                ],
            ),
            (
                "sysbench-threads",
                &[("total_time", "s"), ("events", "count")],
            ),
            (
                "sysbench-mutex",
                &[("total_time", "s"), ("events", "count")],
            ),
            ("hackbench", &[("time", "s")]),
            (
                "stress-ng",
                &[
                    ("bogo_ops", "count"),
                    ("real_time", "s"),
                    ("bogo_ops_per_s", "ops/s"),
                ],
            ),
            ("auto-qsort-small", &[("time", "ns")]),
        ];
        for config in ["native", "solo", "xen"] {
            for (experiment, metrics) in expected {
                for (metric, unit) in metrics {
                    let record = results
                        .value(config, experiment, metric)
                        .unwrap_or_else(|| panic!("{config} {experiment} {metric}"));
                    assert_eq!(record.unit, *unit, "{config} {experiment} {metric}");
                }
            }
        }
        let lost: Vec<&NotMeasured> = results
            .not_measured
            .iter()
            .filter(|n| n.config != "every configuration" && n.what != "every experiment")
            .collect();
        assert!(lost.is_empty(), "{lost:?}");
        assert_eq!(
            results.value("xen", "rt-latency", "max").unwrap().unit,
            "ns"
        );
        for config in ["native", "solo", "xen-solo"] {
            for (experiment, metric, unit) in [
                ("thread-metric/basic", "score", "count"),
                ("thread-metric/cooperative", "check", "bool"),
                ("rhealstone/deadlock-break", "time", "ns"),
                ("dispatch", "p99.9", "ns"),
                ("irq-latency", "max", "ns"),
            ] {
                let record = results.value(config, experiment, metric).unwrap();
                assert_eq!(record.unit, unit, "{config} {experiment} {metric}");
            }
        }
    }

    #[test]
    fn xen_domu_rows_give_the_guests_figures_and_no_hypervisor_figures() {
        let results = fixture_results();
        for config in ["xen-solo", "xen-shared-hackbench"] {
            for metric in ["samples", "misses", "mean", "max", "p99.9"] {
                assert!(
                    results.value(config, "dispatch", metric).is_some(),
                    "{config} {metric}"
                );
            }
            assert!(results.value(config, "irq-latency", "max").is_some());
            assert!(!results
                .records
                .iter()
                .any(|r| r.config == config && r.experiment.starts_with("partita/")));
            assert!(!results.not_measured.iter().any(|n| n.config == config));
        }
        assert_eq!(
            results
                .value("xen-shared-hackbench", "dispatch", "samples")
                .unwrap()
                .value,
            f64::from(matrix::beside_samples(Mode::Quick))
        );
        assert_eq!(
            results
                .value("xen-solo", "thread-metric/interrupt", "check")
                .unwrap()
                .value,
            1.0
        );
    }

    #[test]
    fn a_xen_run_stops_at_the_domus_last_line() {
        let stop = runner::stop_line(row("xen-shared-hackbench", Guest::FreeRtos).boot).unwrap();
        let last = RTOS_XEN_SHARED.lines().last().unwrap();
        assert!(stop(last), "{last}");
        assert!(RTOS_XEN_SHARED.lines().filter(|l| stop(l)).count() == 1);
        assert!(!stop("bench: done"));
        assert!(runner::stop_line(row("xen", Guest::Linux).boot).is_none());
    }

    #[test]
    fn partita_rows_give_the_hypervisor_figures_of_every_vm() {
        let results = fixture_results();
        assert!(results.value("native", "partita/linux", "traps").is_none());
        assert!(results
            .value("native", "partita/freertos", "traps")
            .is_none());
        for (config, vm) in [
            ("solo", "linux"),
            ("solo", "freertos"),
            ("shared-hackbench", "freertos"),
            ("shared-hackbench", "linux"),
        ] {
            let experiment = format!("partita/{vm}");
            for (metric, unit) in [
                ("traps-irq", "count"),
                ("traps-data-abort", "count"),
                ("injected", "count"),
                ("switches", "count"),
                ("el2-time", "ns"),
                ("el2-share", "%"),
                ("traps-per-s", "1/s"),
                ("hypercall-max", "ns"),
                ("injection-mean", "ns"),
                ("switch-min", "ns"),
            ] {
                let record = results
                    .value(config, &experiment, metric)
                    .unwrap_or_else(|| panic!("{config} {experiment} {metric}"));
                assert_eq!(record.unit, unit, "{config} {experiment} {metric}");
            }
        }
        // Beside a busy Linux on one pCPU, every FreeRTOS tick is a vCPU switch.
        let switches = results.value("shared-hackbench", "partita/freertos", "switch-count");
        assert!(switches.unwrap().value >= 2000.0);
        for metric in ["samples", "misses", "max", "p99.9"] {
            assert!(results
                .value("shared-hackbench", "dispatch", metric)
                .is_some());
        }
    }

    #[test]
    fn the_pipeline_writes_results_report_and_plots() {
        let dir = temp_dir("pipeline");
        let results = fixture_results();
        write_outputs(&dir, &results).unwrap();
        let json = fs::read_to_string(dir.join("results.json")).unwrap();
        let decoded: Results = serde_json::from_str(&json).unwrap();
        assert_eq!(decoded.records, results.records);
        let report = fs::read_to_string(dir.join("report.md")).unwrap();
        for heading in [
            "## Native vs virtualized",
            "## Overhead of the Linux experiments",
            "## Thread-Metric",
            "## Not measured",
            "## Hypervisor figures",
            "Scheduler: `sched=credit2 sched_ratelimit_us=0`",
            "| figure | unit | native | solo | xen-solo | shared-hackbench | xen-shared-hackbench | xen |",
            "| basic | 121955 | 121813 | 99.9 % | 121780 | 99.9 % |",
            "| solo | linux |",
            "| hackbench | time | s |",
            "| basic | 121955 | 121813 | 99.9 % |",
            "| rhealstone/task-switch time | ns | 160 | 161 | 160 | — | — | — |",
            "Every Thread-Metric check passed.",
        ] {
            assert!(
                report.contains(heading),
                "report lacks {heading}:\n{report}"
            );
        }
        for stem in [
            "hist-cyclictest-idle-native",
            "hist-cyclictest-idle-solo",
            "hist-cyclictest-idle-xen",
            "hist-dispatch-native",
            "hist-dispatch-solo",
            "hist-dispatch-shared-hackbench",
            "hist-cyclictest-hackbench-solo",
            "hist-irq-latency-solo",
            "hist-dispatch-xen-solo",
            "hist-dispatch-xen-shared-hackbench",
            "hist-dispatch-solo-vs-xen",
            "hist-irq-latency-shared-hackbench-vs-xen",
            "overhead-solo",
            "overhead-xen",
            "rp-solo",
            "rp-xen-solo",
            "rp-solo-vs-xen",
        ] {
            assert!(dir.join(format!("{stem}.svg")).is_file(), "{stem}.svg");
            assert_eq!(
                plot::png_size(&dir.join(format!("{stem}.png"))).unwrap(),
                (900, 540)
            );
            assert!(
                report.contains(&format!("({stem}.svg)")),
                "report links {stem}"
            );
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_or_missing_experiment_is_reported_not_guessed() {
        let console =
            "partita-bench: begin cyclictest-idle\nboom\npartita-bench: end cyclictest-idle 1\n";
        let (records, lost) = records_of(
            row("native", Guest::Linux),
            Boot::NativeLinux,
            Mode::Quick,
            console,
            Some("QEMU was killed at the run's deadline"),
        );
        assert!(records.is_empty());
        assert_eq!(
            lost.len(),
            matrix::linux_experiments_of(Boot::NativeLinux, Mode::Quick).len()
        );
        assert_eq!(lost[0].reason, "the command exited with status 1");
        assert_eq!(lost[1].reason, "QEMU was killed at the run's deadline");
    }

    #[test]
    fn a_rows_profile_sums_its_boots_and_a_lost_boot_loses_it() {
        let counts = |total, el2| {
            Ok(profile::Counts {
                total,
                el2,
                by_address: Vec::new(),
            })
        };
        let mut profiled = Profiled::default();
        profiled.add(counts(3_000, 100));
        profiled.add(counts(1_000, 100));
        let Profiled::Counted { total, el2 } = profiled else {
            panic!("not counted")
        };
        assert_eq!((total, el2), (4_000, 200));
        let records = profiled_records("linux", total, el2);
        let share = records.iter().find(|m| m.metric == "el2-share").unwrap();
        assert_eq!(
            (share.experiment.as_str(), share.value),
            ("profile/linux", 5.0)
        );
        profiled.add(Err(anyhow!("the plugin wrote no profile to x")));
        profiled.add(counts(1, 1));
        assert!(matches!(profiled, Profiled::Lost(ref why) if why.contains("no profile")));
    }

    #[test]
    fn output_folders_are_named_by_day_and_commit() {
        let dir = default_out(
            Mode::Full,
            Platform::QemuVirt,
            "2026-11-21T23:00:00Z",
            "fd7ceec",
        );
        assert!(dir.ends_with("bench/out/2026-11-21-fd7ceec"));
        let quick = default_out(
            Mode::Quick,
            Platform::QemuVirt,
            "2026-11-21T23:00:00Z",
            "fd7ceec",
        );
        assert!(quick.ends_with("bench/out/2026-11-21-fd7ceec-quick"));
    }
}
