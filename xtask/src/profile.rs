//! `cargo xtask profile`: where Partita's time at EL2 goes, measured, not guessed (issue 13).
//!
//! It runs a system under `-icount` (1 instruction = 1 ns) with a QEMU TCG plugin
//! (`xtask/profile/partita_profile.c`, built with the host C compiler) that counts every
//! executed instruction and, inside Partita's image, each instruction address. This module
//! attributes those counts to the functions of the hypervisor's ELF and prints the top ones
//! and EL2's share of all instructions. The plugin counts inline, so the guests see the same
//! virtual time as without it.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use partita_core::board::Platform;

use crate::build::{self, ConsoleUse};
use crate::elf::Executable;
use crate::paths::{self, root};
use crate::process::{self, step};
use crate::qemu::{Clock, Cpu, Machine};

/// The plugin's C source, relative to the workspace root.
const PLUGIN_SOURCE: &str = "xtask/profile/partita_profile.c";

/// What `cargo xtask profile` was asked for.
pub struct Options {
    pub config: PathBuf,
    pub job: Option<String>,
    pub cpu: Cpu,
    /// Wall-clock seconds before QEMU is stopped (systems with an RTOS never power off).
    pub seconds: u64,
    /// How many functions to print.
    pub top: usize,
}

/// The counts the plugin wrote.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: u64,
    pub el2: u64,
    /// Executions per instruction address inside Partita's image.
    pub by_address: Vec<(u64, u64)>,
}

/// Reads the plugin's output: `total <n>`, `el2 <n>`, then `<address hex> <count>` lines.
pub fn parse_counts(text: &str) -> Result<Counts> {
    let mut counts = Counts::default();
    for (n, line) in text.lines().enumerate() {
        let (key, value) = line
            .split_once(' ')
            .with_context(|| format!("profile line {}: {line:?}", n + 1))?;
        let number = |v: &str| -> Result<u64> {
            v.parse()
                .with_context(|| format!("profile line {}: {line:?}", n + 1))
        };
        match key {
            "total" => counts.total = number(value)?,
            "el2" => counts.el2 = number(value)?,
            address => {
                let address = u64::from_str_radix(address, 16)
                    .with_context(|| format!("profile line {}: {line:?}", n + 1))?;
                counts.by_address.push((address, number(value)?));
            }
        }
    }
    Ok(counts)
}

/// One function's share of a profile.
#[derive(Debug, PartialEq, Eq)]
pub struct FunctionCount {
    pub name: String,
    /// Instructions executed inside it (its own code and what was inlined into it).
    pub instructions: u64,
    /// How often its first instruction ran: its calls, for a function that never branches
    /// back to its entry.
    pub calls: u64,
}

impl FunctionCount {
    /// Instructions per call (none for a function never entered at its start).
    pub fn per_call(&self) -> Option<f64> {
        (self.calls > 0).then(|| self.instructions as f64 / self.calls as f64)
    }
}

/// Instructions and calls per function, most instructions first; `functions` are (address,
/// size, name) sorted by address, and an address in none of them counts as `?` (never
/// called).
pub fn by_function(counts: &Counts, functions: &[(u64, u64, String)]) -> Vec<FunctionCount> {
    let mut totals: HashMap<&str, (u64, u64)> = HashMap::new();
    for &(address, count) in &counts.by_address {
        let at = functions.partition_point(|(start, _, _)| *start <= address);
        let function = at
            .checked_sub(1)
            .map(|i| &functions[i])
            .filter(|(start, size, _)| address < start + size);
        let (name, entered) = function.map_or(("?", false), |(start, _, name)| {
            (name.as_str(), address == *start)
        });
        let total = totals.entry(name).or_default();
        total.0 += count;
        if entered {
            total.1 += count;
        }
    }
    let mut sorted: Vec<FunctionCount> = totals
        .into_iter()
        .map(|(name, (instructions, calls))| FunctionCount {
            name: name.to_owned(),
            instructions,
            calls,
        })
        .collect();
    sorted.sort_by(|a, b| {
        b.instructions
            .cmp(&a.instructions)
            .then_with(|| a.name.cmp(&b.name))
    });
    sorted
}

/// Builds the plugin with the host C compiler into `dir`.
pub fn build_plugin(dir: &Path) -> Result<PathBuf> {
    let plugin = dir.join("libpartita_profile.so");
    step(format!(
        "building the QEMU plugin {}",
        paths::shown(&plugin).display()
    ));
    process::run(
        Command::new("cc")
            .args([
                "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
            ])
            .arg(&plugin)
            .arg(root().join(PLUGIN_SOURCE)),
    )?;
    Ok(plugin)
}

/// A finished profile: the counts and the instructions per function, most first.
pub struct Profile {
    pub counts: Counts,
    pub functions: Vec<FunctionCount>,
}

/// Runs the profile and prints it.
pub fn run(options: &Options) -> Result<()> {
    let profile = measure(options)?;
    let counts = &profile.counts;
    println!(
        "EL2 (Partita): {} of {} instructions ({:.2} %)",
        counts.el2,
        counts.total,
        counts.el2 as f64 * 100.0 / counts.total as f64
    );
    println!(
        "{:>14} {:>7} {:>11} {:>9}  function",
        "instructions", "of EL2", "calls", "per call"
    );
    for function in profile.functions.iter().take(options.top) {
        let count = function.instructions;
        let share = count as f64 * 100.0 / counts.el2.max(1) as f64;
        let calls = function.calls;
        let per_call = function
            .per_call()
            .map_or_else(|| "-".to_owned(), |n| format!("{n:.1}"));
        println!(
            "{count:>14} {share:>6.2}% {calls:>11} {per_call:>9}  {}",
            function.name
        );
    }
    Ok(())
}

/// The world switch's guest entry on a CPU with a PMU (`vectors.rs`, `load_guest_pmu`).
const WORLD_SWITCH: &str = "load_guest_pmu";

/// The profile of the probe guest alone, as `make test` checks it: the plugin loads, counts
/// instructions, and finds Partita's world switch among its functions.
pub fn check_probe() -> Result<()> {
    let profile = measure(&Options {
        config: root().join("configs/probe.toml"),
        job: None,
        cpu: Cpu::CortexA72,
        seconds: 60,
        top: 0,
    })?;
    let el2 = profile.counts.el2;
    if el2 == 0 || el2 > profile.counts.total {
        bail!("EL2 counted {el2} of {} instructions", profile.counts.total);
    }
    // The world switch's entry: assembly, so never inlined away (Cortex-A72 has a PMU:
    // the `pmu` copy runs).
    if !profile
        .functions
        .iter()
        .any(|f| f.name == WORLD_SWITCH && f.instructions > 0)
    {
        bail!("{WORLD_SWITCH} is not in the profile");
    }
    Ok(())
}

/// Adds the plugin, built at `plugin`, to `cmd`, which runs Partita built for `platform`:
/// at exit it writes its counts to `out` (a stale file there is removed first).
pub fn attach(cmd: &mut Command, plugin: &Path, platform: Platform, out: &Path) -> Result<()> {
    let elf_path = build::hypervisor_elf(platform);
    let elf = fs::read(&elf_path).with_context(|| format!("cannot read {}", elf_path.display()))?;
    let executable = Executable::parse(&elf)?;
    let (lo, hi) = executable
        .text()
        .context("the hypervisor ELF has no .text section")?;
    let entry = executable
        .symbol("_start")
        .context("the hypervisor ELF defines no _start")?;
    let _ = fs::remove_file(out);
    cmd.arg("-plugin").arg(format!(
        "{},lo={lo:x},hi={hi:x},entry={entry:x},out={}",
        plugin.display(),
        out.display()
    ));
    Ok(())
}

/// The counts the plugin wrote to `out` when QEMU exited.
pub fn read_counts(out: &Path) -> Result<Counts> {
    let text = fs::read_to_string(out)
        .with_context(|| format!("the plugin wrote no profile to {}", out.display()))?;
    let counts = parse_counts(&text)?;
    if counts.total == 0 {
        bail!("the profile in {} counted no instruction", out.display());
    }
    Ok(counts)
}

/// Builds everything, runs the system with the plugin and attributes its counts.
fn measure(options: &Options) -> Result<Profile> {
    build::binaries()?;
    let dir = paths::build_dir().join("profile");
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let plugin = build_plugin(&dir)?;
    let image = dir.join("partita.img");
    let system = build::boot_image(
        &options.config,
        &image,
        options.job.as_deref(),
        &ConsoleUse::AllTagged,
    )?;
    let out = dir.join("profile.txt");
    let mut cmd = Machine {
        board: system.config.board.platform.board(),
        cpu: options.cpu,
        cpus: system.config.board.cpus,
        clock: Clock::Counted,
        gdb: false,
    }
    .command(&image);
    let platform = system.config.board.platform;
    attach(&mut cmd, &plugin, platform, &out)?;
    step(format!("running {}", process::describe(&cmd)));
    let run = process::capture(&mut cmd, Duration::from_secs(options.seconds), |_| false)?;
    let log = dir.join("console.log");
    fs::write(&log, &run.output).with_context(|| format!("cannot write {}", log.display()))?;
    step(format!(
        "console output in {}",
        paths::shown(&log).display()
    ));
    let counts = read_counts(&out)
        .with_context(|| format!("QEMU's console is in {}", paths::shown(&log).display()))?;
    let elf_path = build::hypervisor_elf(platform);
    let elf = fs::read(&elf_path).with_context(|| format!("cannot read {}", elf_path.display()))?;
    let functions = by_function(&counts, &Executable::parse(&elf)?.functions());
    Ok(Profile { counts, functions })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_read_and_attributed_to_functions() {
        let counts = parse_counts("total 1000\nel2 40\n100 10\n104 10\n200 15\n300 5\n").unwrap();
        assert_eq!((counts.total, counts.el2), (1000, 40));
        let functions = vec![
            (0x100, 8, "partita::vm::Vm::enter".to_owned()),
            (0x200, 4, "partita::trap::handle".to_owned()),
        ];
        let functions = by_function(&counts, &functions);
        let row = |name: &str, instructions, calls| FunctionCount {
            name: name.to_owned(),
            instructions,
            calls,
        };
        assert_eq!(
            functions,
            [
                row("partita::vm::Vm::enter", 20, 10),
                row("partita::trap::handle", 15, 15),
                row("?", 5, 0)
            ]
        );
        assert_eq!(functions[0].per_call(), Some(2.0));
        assert_eq!(functions[2].per_call(), None);
    }

    #[test]
    fn a_damaged_profile_is_an_error() {
        assert!(parse_counts("total x\n").is_err());
        assert!(parse_counts("zz 1\n").is_err());
        assert!(parse_counts("nonsense\n").is_err());
    }
}
