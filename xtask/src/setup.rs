//! `cargo xtask setup`: install what building and running Partita needs.
//!
//! It asks dpkg which Debian packages are missing and rustup whether the AArch64 target is
//! installed, then either installs them (apt-get as root, rustup as the user) or, without
//! root, prints the exact commands and fails. Deciding what to do (`plan`) is separate from
//! doing it, so the decision is unit-tested without touching the machine.

use std::fmt;
use std::io::Write;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::paths::{root, TARGETS};
use crate::process::{describe, output, run, step};
use crate::qemu::{Clock, Machine};

/// Debian packages the tool uses: QEMU, the cross compiler for C guests with the C library
/// the automotive programs link statically (only a recommendation of the compiler, and
/// recommendations are not installed), the debugger, the font the benchmark plots'
/// text is drawn with, the host C++ compiler that builds libFuzzer for `xtask fuzz`, and
/// make, which builds the Linux guest's IVC module against Debian's kernel headers.
pub const PACKAGES: [&str; 7] = [
    "qemu-system-arm",
    "gcc-aarch64-linux-gnu",
    "libc6-dev-arm64-cross",
    "gdb-multiarch",
    "fonts-dejavu-core",
    "g++",
    "make",
];

/// What is missing on this machine.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Missing {
    pub packages: Vec<String>,
    /// Rust targets rustup does not have (of `TARGETS`).
    pub rust_targets: Vec<String>,
}

/// One command to run, with the environment it needs.
#[derive(Debug, PartialEq, Eq)]
pub struct Invocation {
    pub env: Option<(&'static str, &'static str)>,
    pub argv: Vec<String>,
}

impl Invocation {
    fn new(env: Option<(&'static str, &'static str)>, argv: &[&str]) -> Self {
        Invocation {
            env,
            argv: argv.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..]).current_dir(root());
        if let Some((k, v)) = self.env {
            cmd.env(k, v);
        }
        cmd
    }
}

impl fmt::Display for Invocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((k, v)) = self.env {
            write!(f, "{k}={v} ")?;
        }
        write!(f, "{}", self.argv.join(" "))
    }
}

/// What setup does: commands it runs itself, and commands only root may run.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub run: Vec<Invocation>,
    /// Commands for the user to run with `sudo` (set when not root and packages are missing).
    pub ask_root: Vec<Invocation>,
}

/// Decides the commands for what is `missing`, given whether we are root.
pub fn plan(missing: &Missing, is_root: bool) -> Plan {
    let mut plan = Plan::default();
    if !missing.rust_targets.is_empty() {
        let mut add = Invocation::new(None, &["rustup", "target", "add"]);
        add.argv.extend(missing.rust_targets.iter().cloned());
        plan.run.push(add);
    }
    if !missing.packages.is_empty() {
        let env = is_root.then_some(("DEBIAN_FRONTEND", "noninteractive"));
        let mut install = Invocation::new(
            env,
            &["apt-get", "install", "-y", "--no-install-recommends"],
        );
        install.argv.extend(missing.packages.iter().cloned());
        let apt = vec![Invocation::new(None, &["apt-get", "update"]), install];
        if is_root {
            plan.run.extend(apt);
        } else {
            plan.ask_root = apt;
        }
    }
    plan
}

/// Debian packages from `PACKAGES` that dpkg does not report as installed.
fn missing_packages() -> Result<Vec<String>> {
    let mut missing = Vec::new();
    for package in PACKAGES {
        let status = Command::new("dpkg-query")
            .args(["-W", "-f=${Status}", package])
            .output();
        let installed = match status {
            Ok(out) => String::from_utf8_lossy(&out.stdout).ends_with(" installed"),
            Err(e) => bail!("cannot run dpkg-query ({e}); setup knows only Debian-based systems: install {} yourself", PACKAGES.join(", ")),
        };
        if !installed {
            missing.push(package.to_string());
        }
    }
    Ok(missing)
}

fn rust_targets_missing() -> Result<Vec<String>> {
    let installed = output(
        Command::new("rustup")
            .args(["target", "list", "--installed"])
            .current_dir(root()),
    )?;
    Ok(TARGETS
        .iter()
        .filter(|&&target| !installed.lines().any(|l| l.trim() == target))
        .map(|target| target.to_string())
        .collect())
}

fn is_root() -> Result<bool> {
    Ok(output(Command::new("id").arg("-u"))?.trim() == "0")
}

/// Checks the machine and installs or asks for what is missing.
pub fn setup() -> Result<()> {
    let missing = Missing {
        packages: missing_packages()?,
        rust_targets: rust_targets_missing()?,
    };
    if missing == Missing::default() {
        step("setup: everything is installed");
        smoke_boot()?;
        return prepare_guests();
    }
    let mut wanted = missing.packages.clone();
    wanted.extend(
        missing
            .rust_targets
            .iter()
            .map(|target| format!("Rust target {target}")),
    );
    step(format!("setup: missing {}", wanted.join(", ")));
    let plan = plan(&missing, is_root()?);
    for invocation in &plan.run {
        step(format!("setup: running {invocation}"));
        run(&mut invocation.command())?;
    }
    if !plan.ask_root.is_empty() {
        println!(
            "setup: missing Debian packages: {}; installing them needs root. Run:",
            missing.packages.join(" ")
        );
        for invocation in &plan.ask_root {
            println!("  sudo {invocation}");
        }
        bail!("setup is incomplete: run the commands above, then try again");
    }
    step("setup: done");
    smoke_boot()?;
    prepare_guests()
}

/// Starts the emulated machine every run uses, halted, and quits it through QEMU's monitor:
/// a missing ROM or firmware is named here, with the package that holds it, instead of
/// failing every run later.
fn smoke_boot() -> Result<()> {
    let mut qemu = Machine::single(Clock::Host).board();
    qemu.args([
        "-S", "-display", "none", "-serial", "none", "-monitor", "stdio",
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut child = qemu
        .spawn()
        .with_context(|| format!("cannot start `{}`", describe(&qemu)))?;
    if let Some(mut stdin) = child.stdin.take() {
        // QEMU may already have exited on a missing file; its error says why.
        let _ = stdin.write_all(b"quit\n");
    }
    let out = child.wait_with_output()?;
    if out.status.success() {
        step("setup: QEMU starts the emulated machine");
        return Ok(());
    }
    let error = String::from_utf8_lossy(&out.stderr);
    bail!(
        "QEMU cannot start the emulated machine (`{}`): {}{}",
        describe(&qemu),
        error.trim(),
        missing_file_hint(&error)
    )
}

/// What to install for a QEMU start-up error that names a missing ROM or firmware file.
fn missing_file_hint(error: &str) -> String {
    let rom = error
        .split('"')
        .nth(1)
        .filter(|_| error.contains("failed to find romfile"));
    match rom {
        Some(name) if name.starts_with("efi-") || name.starts_with("pxe-") => {
            format!("; {name} comes with the Debian package ipxe-qemu: apt-get install ipxe-qemu")
        }
        Some(name) => {
            format!("; find the Debian package that holds {name} with apt-file search {name}")
        }
        None => "; reinstall qemu-system-arm".to_owned(),
    }
}

/// Downloads and assembles the Linux guest (quick when the cache is current).
fn prepare_guests() -> Result<()> {
    let guest = crate::linux::prepare(&crate::paths::cache_dir())?;
    let with_ivc = crate::linux::prepare_ivc(&crate::paths::cache_dir(), &guest)?;
    let with_ofdm = crate::linux::prepare_ofdm(&crate::paths::cache_dir(), &guest)?;
    step(format!(
        "setup: Linux guest ready: {} and {} ({} with the IVC module and command, {} with \
         partita-ofdm)",
        crate::paths::shown(&guest.kernel).display(),
        crate::paths::shown(&guest.initramfs).display(),
        crate::paths::shown(&with_ivc).display(),
        crate::paths::shown(&with_ofdm).display()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(invocations: &[Invocation]) -> Vec<String> {
        invocations.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_missing_rom_names_its_package() {
        assert_eq!(
            missing_file_hint("qemu-system-aarch64: failed to find romfile \"efi-virtio.rom\""),
            "; efi-virtio.rom comes with the Debian package ipxe-qemu: apt-get install ipxe-qemu"
        );
        assert_eq!(
            missing_file_hint("qemu-system-aarch64: failed to find romfile \"vgabios.bin\""),
            "; find the Debian package that holds vgabios.bin with apt-file search vgabios.bin"
        );
        assert_eq!(
            missing_file_hint("qemu-system-aarch64: -M bad: unsupported machine type"),
            "; reinstall qemu-system-arm"
        );
    }

    #[test]
    fn nothing_missing_means_nothing_to_do() {
        assert_eq!(plan(&Missing::default(), false), Plan::default());
        assert_eq!(plan(&Missing::default(), true), Plan::default());
    }

    #[test]
    fn root_installs_missing_packages_without_questions() {
        let missing = Missing {
            packages: vec!["gdb-multiarch".into(), "qemu-system-arm".into()],
            rust_targets: Vec::new(),
        };
        let p = plan(&missing, true);
        assert_eq!(
            lines(&p.run),
            [
                "apt-get update",
                "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gdb-multiarch qemu-system-arm"
            ]
        );
        assert!(p.ask_root.is_empty());
    }

    #[test]
    fn users_are_told_the_root_commands_but_the_target_is_added_for_them() {
        let missing = Missing {
            packages: vec!["gcc-aarch64-linux-gnu".into()],
            rust_targets: vec!["aarch64-unknown-none".into()],
        };
        let p = plan(&missing, false);
        assert_eq!(lines(&p.run), ["rustup target add aarch64-unknown-none"]);
        assert_eq!(
            lines(&p.ask_root),
            [
                "apt-get update",
                "apt-get install -y --no-install-recommends gcc-aarch64-linux-gnu"
            ]
        );
    }
}
