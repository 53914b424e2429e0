//! The automotive suite (`guests/automotive/`): the project's own C programs
//! computing what MiBench's automotive benchmarks compute, cross-compiled with
//! Debian's `aarch64-linux-gnu-gcc` as static binaries and placed, with the
//! `run-all` driver, under `/opt/automotive/` in the initramfs. The sources
//! are built into the host tool and written out before compiling, so the
//! initramfs stamp covers exactly what was compiled. It never installs a
//! compiler and writes only inside the directory it is given.

use super::libraries::{Content, Placement};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the programs live in the initramfs (relative, no leading slash).
const INSTALL_DIR: &str = "opt/automotive";

/// Debian's cross compiler (package gcc-aarch64-linux-gnu, with libc6-dev-arm64-cross).
const CROSS_COMPILER: &str = "aarch64-linux-gnu-gcc";

/// Debian packages of the cross compiler and the static C library the
/// binaries are built with, recorded with the guest's package versions.
const TOOLCHAIN: [&str; 2] = ["gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"];

/// One program per MiBench automotive benchmark; each is `<name>.c` + `common.c`.
const PROGRAMS: [&str; 4] = ["basicmath", "bitcount", "qsort", "susan"];

/// The driver script, installed beside the programs.
const DRIVER: &str = "run-all";

/// Every source file, by name in `guests/automotive/`.
const SOURCES: [(&str, &str); 7] = [
    (
        "common.h",
        include_str!("../../../guests/automotive/common.h"),
    ),
    (
        "common.c",
        include_str!("../../../guests/automotive/common.c"),
    ),
    (
        "basicmath.c",
        include_str!("../../../guests/automotive/basicmath.c"),
    ),
    (
        "bitcount.c",
        include_str!("../../../guests/automotive/bitcount.c"),
    ),
    (
        "qsort.c",
        include_str!("../../../guests/automotive/qsort.c"),
    ),
    (
        "susan.c",
        include_str!("../../../guests/automotive/susan.c"),
    ),
    (DRIVER, include_str!("../../../guests/automotive/run-all")),
];

/// Compiler flags of every build, guest and host alike. Floating-point
/// contraction is off so aarch64 (which has fused multiply-add) and the host
/// compute the same values and print the same checksums.
const FLAGS: [&str; 6] = [
    "-std=c11",
    "-O2",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-ffp-contract=off",
];

/// Extra flags of the guest build: no shared libraries, no symbols.
const GUEST_FLAGS: [&str; 2] = ["-static", "-s"];

/// Every source, named, for the initramfs stamp.
pub fn sources_text() -> String {
    SOURCES
        .iter()
        .map(|(name, text)| format!("--- automotive/{name}\n{text}"))
        .collect()
}

/// Cross-compiles the programs under `dir` and returns where they go in the
/// initramfs.
pub fn build(dir: &Path) -> Result<Placement> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let sources = dir.join("src");
    crate::linux::write_sources(&sources, &SOURCES)?;
    let binaries = compile(CROSS_COMPILER, &GUEST_FLAGS, &sources, &dir.join("bin"))
        .context("building the automotive suite (is gcc-aarch64-linux-gnu installed? see `cargo xtask setup`)")?;
    let mut placement = Placement::default();
    for (name, binary) in PROGRAMS.iter().zip(binaries) {
        placement
            .files
            .insert(format!("{INSTALL_DIR}/{name}"), Content::Copy(binary));
    }
    placement.files.insert(
        format!("{INSTALL_DIR}/{DRIVER}"),
        Content::Copy(sources.join(DRIVER)),
    );
    Ok(placement)
}

/// (package, version) of each toolchain package, for provenance.
pub fn toolchain_versions() -> Result<Vec<(String, String)>> {
    let output = Command::new("dpkg-query")
        .args(["-W", "-f", "${Package} ${Version}\\n"])
        .args(TOOLCHAIN)
        .output()
        .context("starting dpkg-query")?;
    if !output.status.success() {
        bail!(
            "dpkg-query -W {} failed: {}",
            TOOLCHAIN.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(name, version)| (name.to_owned(), version.to_owned()))
        .collect())
}

/// Compiles every program from `sources` into `out` with `compiler`, the
/// common flags and `extra`; returns the binaries in `PROGRAMS` order.
fn compile(compiler: &str, extra: &[&str], sources: &Path, out: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    PROGRAMS
        .iter()
        .map(|name| {
            let binary = out.join(name);
            let mut command = Command::new(compiler);
            command
                .args(FLAGS)
                .args(extra)
                .arg("-o")
                .arg(&binary)
                .arg(sources.join(format!("{name}.c")))
                .arg(sources.join("common.c"))
                .arg("-lm");
            let status = command
                .status()
                .with_context(|| format!("starting {compiler}"))?;
            if !status.success() {
                bail!("{command:?} failed ({status})");
            }
            Ok(binary)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// (program line, input) -> checksum, as the guest prints them too.
    const EXPECTED: [(&str, &str, &str); 12] = [
        ("basicmath", "small", "97796de955461c11"),
        ("basicmath", "large", "f71336c1f788f465"),
        ("bitcount", "small", "fe30a02edc75a4a1"),
        ("bitcount", "large", "83bb4ed8553c4f27"),
        ("qsort", "small", "dd663828cecb6713"),
        ("qsort", "large", "507249ffc8ebdf15"),
        ("susan-smooth", "small", "c9583cf9f9244685"),
        ("susan-smooth", "large", "79dc58af9239b89e"),
        ("susan-edges", "small", "a1e4076589d84f4c"),
        ("susan-edges", "large", "28765435db7b5045"),
        ("susan-corners", "small", "5727512cbff822db"),
        ("susan-corners", "large", "95ad668e74df9131"),
    ];

    /// The programs built for the host with the native gcc, in a fresh
    /// directory removed when dropped.
    struct HostBuild {
        dir: PathBuf,
        binaries: Vec<PathBuf>,
    }

    impl HostBuild {
        fn new() -> HostBuild {
            // One directory a build: the tests run side by side.
            static BUILDS: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "partita-automotive-{}-{}",
                std::process::id(),
                BUILDS.fetch_add(1, Ordering::Relaxed)
            ));
            let sources = dir.join("src");
            crate::linux::write_sources(&sources, &SOURCES).unwrap();
            let binaries = compile("gcc", &[], &sources, &dir.join("bin")).unwrap();
            HostBuild { dir, binaries }
        }

        /// Runs `program` on `input`; returns its stdout, asserting success.
        fn run(&self, program: &str, input: &str) -> String {
            let index = PROGRAMS.iter().position(|name| *name == program).unwrap();
            let output = Command::new(&self.binaries[index])
                .arg(input)
                .output()
                .unwrap();
            assert!(output.status.success(), "{program} {input}: {output:?}");
            String::from_utf8(output.stdout).unwrap()
        }
    }

    impl Drop for HostBuild {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// `auto: program=<p> input=<i> ns=<n> checksum=<c>` lines -> (p, i) -> c.
    fn checksums(output: &str) -> BTreeMap<(String, String), String> {
        output
            .lines()
            .filter_map(|line| line.strip_prefix("auto: "))
            .map(|line| {
                let field = |key: &str| {
                    line.split_whitespace()
                        .find_map(|word| word.strip_prefix(key))
                        .unwrap_or_else(|| panic!("no {key} in `{line}`"))
                        .to_owned()
                };
                assert!(field("ns=").parse::<u64>().is_ok(), "`{line}`");
                ((field("program="), field("input=")), field("checksum="))
            })
            .collect()
    }

    fn bitcount_totals(output: &str) -> Vec<u64> {
        output
            .lines()
            .filter_map(|line| line.strip_prefix("bitcount: method="))
            .map(|line| {
                let (_, bits) = line.split_once(" bits=").unwrap();
                bits.parse().unwrap()
            })
            .collect()
    }

    #[test]
    fn host_build_prints_the_recorded_checksums_and_bitcount_methods_agree() {
        let build = HostBuild::new();
        let mut found = BTreeMap::new();
        for input in ["small", "large"] {
            for program in PROGRAMS {
                let output = build.run(program, input);
                if program == "bitcount" {
                    let totals = bitcount_totals(&output);
                    assert_eq!(totals.len(), 7, "{output}");
                    assert!(totals.iter().all(|total| *total == totals[0]), "{output}");
                }
                found.extend(checksums(&output));
            }
        }
        let expected: BTreeMap<(String, String), String> = EXPECTED
            .iter()
            .map(|(program, input, sum)| {
                ((program.to_string(), input.to_string()), sum.to_string())
            })
            .collect();
        assert_eq!(found, expected);
    }

    #[test]
    fn the_driver_runs_every_program() {
        let driver = SOURCES.iter().find(|(name, _)| *name == DRIVER).unwrap().1;
        let line = driver
            .lines()
            .map(str::trim)
            .find(|line| line.starts_with("for program in "))
            .unwrap();
        assert_eq!(line, format!("for program in {}; do", PROGRAMS.join(" ")));
    }

    /// Runs the driver beside the host build's programs with `args`: its exit code,
    /// stdout and stderr.
    fn drive(build: &HostBuild, args: &[&str]) -> (Option<i32>, String, String) {
        let bin = build.binaries[0].parent().unwrap();
        let driver = SOURCES.iter().find(|(name, _)| *name == DRIVER).unwrap().1;
        std::fs::write(bin.join(DRIVER), driver).unwrap();
        let output = Command::new("sh")
            .arg(bin.join(DRIVER))
            .args(args)
            .output()
            .unwrap();
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
        (
            output.status.code(),
            text(output.stdout),
            text(output.stderr),
        )
    }

    #[test]
    fn the_driver_runs_the_suite_as_many_times_as_asked_and_refuses_bad_arguments() {
        let build = HostBuild::new();
        let (code, out, _) = drive(&build, &["small", "2"]);
        assert_eq!(code, Some(0));
        let qsort: Vec<&str> = out
            .lines()
            .filter(|line| line.starts_with("auto: program=qsort input=small "))
            .collect();
        assert_eq!(qsort.len(), 2, "{out}");
        assert_eq!(out.lines().filter(|l| l.starts_with("auto: ")).count(), 12);
        for args in [
            &["small", "0"][..],
            &["small", "two"],
            &["medium"],
            &["small", "-1"],
        ] {
            let (code, out, err) = drive(&build, args);
            assert_eq!(code, Some(2), "{args:?}");
            assert!(out.is_empty(), "{args:?}: {out}");
            assert!(
                err.ends_with("run-all [small|large] [runs]\n"),
                "{args:?}: {err}"
            );
            assert!(err.starts_with("usage: "), "{args:?}: {err}");
        }
    }
}
