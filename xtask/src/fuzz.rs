//! `cargo xtask fuzz`: build the libFuzzer targets of `fuzz/` with coverage instrumentation
//! on the pinned stable toolchain and run each for a bounded time from its seed corpus.
//!
//! The instrumented build goes to `target/fuzz/` so it never invalidates the normal one. Each
//! run reads the committed seeds in `fuzz/corpus/<target>/` and keeps what it learns in
//! `target/fuzz/corpus/<target>/` (the committed corpus is never written). A crash, a panic
//! or a failed invariant stops the run with the input saved under
//! `target/fuzz/artifacts/<target>/` and the command fails; nothing here interprets inputs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::paths::root;
use crate::process::{describe, output, run, step};

/// One fuzz target: a binary of the `partita-fuzz` package.
pub struct FuzzTarget {
    pub name: &'static str,
    /// What it feeds with hostile input.
    pub covers: &'static str,
}

pub const TARGETS: [FuzzTarget; 11] = [
    FuzzTarget {
        name: "trap",
        covers: "ESR_EL2 syndromes, MMIO access decoding and loads, sysreg ISS, fault IPA",
    },
    FuzzTarget {
        name: "hypercall",
        covers: "SMCCC/PSCI/Partita hypercall decoding and dispatch",
    },
    FuzzTarget {
        name: "vgic",
        covers: "vGIC distributor, redistributors, SGI requests, list-register flush/sync",
    },
    FuzzTarget {
        name: "vgic_v2",
        covers: "vGICv2 distributor (banked, ITARGETSR, GICD_SGIR), GICH_LR round trips",
    },
    FuzzTarget {
        name: "pl011",
        covers: "the PL011 UART model's registers and FIFOs",
    },
    FuzzTarget {
        name: "console",
        covers: "a VM's console output: line splitting, cleaning, history and replay",
    },
    FuzzTarget {
        name: "testdev",
        covers: "the MMIO test device's register table",
    },
    FuzzTarget {
        name: "config",
        covers: "configuration TOML parsing, memory planning, validation, bundle round trip",
    },
    FuzzTarget {
        name: "ivc",
        covers: "inter-VM rings written by a hostile peer, doorbell routing and rate rule",
    },
    FuzzTarget {
        name: "bundle",
        covers: "the bundle parser the hypervisor runs at boot",
    },
    FuzzTarget {
        name: "accel",
        covers: "the accelerator manager: requests, storms and fabric events on random fabrics",
    },
];

/// What cargo-fuzz passes to rustc with `--sanitizer none`: SanitizerCoverage counters, PC
/// table and comparison tracing for libFuzzer, and `cfg(fuzzing)`. All of it is stable.
const RUSTFLAGS: &str = "-Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares \
    --cfg fuzzing";

/// The targets named by `--target` (all when none is), in `TARGETS` order; an unknown name
/// is an error that lists the known ones.
pub fn select(names: &[String]) -> Result<Vec<&'static FuzzTarget>> {
    if let Some(unknown) = names
        .iter()
        .find(|n| !TARGETS.iter().any(|t| t.name == n.as_str()))
    {
        let known: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
        bail!(
            "--target: no fuzz target named \"{unknown}\"; known: {}",
            known.join(", ")
        );
    }
    Ok(TARGETS
        .iter()
        .filter(|t| names.is_empty() || names.iter().any(|n| n == t.name))
        .collect())
}

fn fuzz_dir() -> PathBuf {
    root().join("target").join("fuzz")
}

/// The host's target triple: the instrumentation flags must not reach build scripts and
/// proc macros, which Cargo guarantees only with an explicit `--target`.
fn host_triple() -> Result<String> {
    let info = output(Command::new("rustc").arg("-vV").current_dir(root()))?;
    info.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_string)
        .context("`rustc -vV` names no host")
}

/// Builds the instrumented binaries and returns the folder that holds them.
fn build(targets: &[&FuzzTarget]) -> Result<PathBuf> {
    let host = host_triple()?;
    let mut cmd = Command::new("cargo");
    cmd.args(["build", "--release", "--manifest-path", "fuzz/Cargo.toml"])
        .args(["--target", &host])
        .args(targets.iter().flat_map(|t| ["--bin", t.name]))
        .current_dir(root())
        .env("CARGO_TARGET_DIR", fuzz_dir())
        .env("RUSTFLAGS", RUSTFLAGS)
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    step(format!("building fuzz targets: {}", describe(&cmd)));
    run(&mut cmd)?;
    Ok(fuzz_dir().join(host).join("release"))
}

/// What libFuzzer reported at the end of a run (`-print_final_stats=1`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub executions: u64,
    pub corpus: u64,
}

pub fn parse_stats(log: &str) -> Stats {
    let stat = |key: &str| {
        log.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    Stats {
        executions: stat("stat::number_of_executed_units:"),
        corpus: stat("stat::new_units_added:"),
    }
}

/// Runs one target for `seconds`; fails with the crashing input's path and the end of
/// libFuzzer's report.
fn fuzz_one(bin_dir: &Path, target: &FuzzTarget, seconds: u64) -> Result<Stats> {
    let seeds = root().join("fuzz").join("corpus").join(target.name);
    let learned = fuzz_dir().join("corpus").join(target.name);
    let artifacts = fuzz_dir().join("artifacts").join(target.name);
    for dir in [&learned, &artifacts] {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut cmd = Command::new(bin_dir.join(target.name));
    cmd.arg(format!("-max_total_time={seconds}"))
        .arg("-print_final_stats=1")
        // A unit slower than this is a hang; the margin absorbs a host shared with builds.
        .arg("-timeout=30")
        .arg("-rss_limit_mb=2048")
        .arg(format!("-artifact_prefix={}/", artifacts.display()));
    let dict = root()
        .join("fuzz")
        .join("dict")
        .join(format!("{}.dict", target.name));
    if dict.exists() {
        cmd.arg(format!("-dict={}", dict.display()));
    }
    cmd.arg(&learned).arg(&seeds).current_dir(root());
    step(format!(
        "fuzz {} for {seconds} s ({})",
        target.name, target.covers
    ));
    let out = cmd
        .output()
        .with_context(|| format!("cannot start `{}`", describe(&cmd)))?;
    let log = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "fuzz target {} failed ({}); input saved under {}\n{}",
            target.name,
            out.status,
            artifacts.display(),
            tail.join("\n")
        );
    }
    Ok(parse_stats(&log))
}

/// Builds and runs the named targets (all when `names` is empty) for `seconds` each.
pub fn run_targets(names: &[String], seconds: u64) -> Result<()> {
    let targets = select(names)?;
    if seconds == 0 {
        bail!("--seconds: a run needs at least 1 second");
    }
    let bin_dir = build(&targets)?;
    let mut total = 0;
    for target in &targets {
        let start = Instant::now();
        let stats = fuzz_one(&bin_dir, target, seconds)?;
        total += stats.executions;
        println!(
            "fuzz {}: {} executions in {:.1} s, {} new inputs, no crash",
            target.name,
            stats.executions,
            start.elapsed().as_secs_f64(),
            stats.corpus
        );
    }
    println!(
        "fuzz: {} targets, {total} executions, no crash",
        targets.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_has_a_source_and_seeds() {
        for t in &TARGETS {
            let source = root()
                .join("fuzz/fuzz_targets")
                .join(format!("{}.rs", t.name));
            assert!(source.is_file(), "{}", source.display());
            let seeds = root().join("fuzz/corpus").join(t.name);
            let count = fs::read_dir(&seeds).map_or(0, |d| d.count());
            assert!(count > 0, "no seeds in {}", seeds.display());
        }
    }

    #[test]
    fn unknown_names_are_refused() {
        assert_eq!(select(&[]).unwrap().len(), TARGETS.len());
        let one = select(&["vgic".to_string()]).unwrap();
        assert_eq!(one.len(), 1);
        assert!(select(&["nope".to_string()]).is_err());
    }

    #[test]
    fn final_stats_are_read() {
        let log = "#123 DONE\nstat::number_of_executed_units: 4567\nstat::new_units_added: 12\n";
        assert_eq!(
            parse_stats(log),
            Stats {
                executions: 4567,
                corpus: 12
            }
        );
    }
}
