//! `cargo xtask setup`: install what building and running Partita needs.
//!
//! It asks dpkg which Debian packages are missing and rustup whether the AArch64 target is
//! installed, then either installs them (apt-get as root, rustup as the user) or, without
//! root, prints the exact commands and fails. Deciding what to do (`plan`) is separate from
//! doing it, so the decision is unit-tested without touching the machine.

use std::fmt;
use std::process::Command;

use anyhow::{bail, Result};

use crate::paths::{root, TARGET};
use crate::process::{output, run, step};

/// Debian packages the tool uses: QEMU, the cross compiler for C guests with the C library
/// the automotive programs link statically (only a recommendation of the compiler, and
/// recommendations are not installed), the debugger, the font the benchmark plots'
/// text is drawn with, and the host C++ compiler that builds libFuzzer for `xtask fuzz`.
pub const PACKAGES: [&str; 6] = [
    "qemu-system-arm",
    "gcc-aarch64-linux-gnu",
    "libc6-dev-arm64-cross",
    "gdb-multiarch",
    "fonts-dejavu-core",
    "g++",
];

/// What is missing on this machine.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Missing {
    pub packages: Vec<String>,
    pub rust_target: bool,
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
    if missing.rust_target {
        plan.run
            .push(Invocation::new(None, &["rustup", "target", "add", TARGET]));
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

fn rust_target_missing() -> Result<bool> {
    let installed = output(
        Command::new("rustup")
            .args(["target", "list", "--installed"])
            .current_dir(root()),
    )?;
    Ok(!installed.lines().any(|l| l.trim() == TARGET))
}

fn is_root() -> Result<bool> {
    Ok(output(Command::new("id").arg("-u"))?.trim() == "0")
}

/// Checks the machine and installs or asks for what is missing.
pub fn setup() -> Result<()> {
    let missing = Missing {
        packages: missing_packages()?,
        rust_target: rust_target_missing()?,
    };
    if missing == Missing::default() {
        step("setup: everything is installed");
        return prepare_guests();
    }
    let mut wanted = missing.packages.clone();
    if missing.rust_target {
        wanted.push(format!("Rust target {TARGET}"));
    }
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
    prepare_guests()
}

/// Downloads and assembles the Linux guest (quick when the cache is current).
fn prepare_guests() -> Result<()> {
    let guest = crate::linux::prepare(&crate::paths::cache_dir())?;
    step(format!(
        "setup: Linux guest ready: {} and {}",
        crate::paths::shown(&guest.kernel).display(),
        crate::paths::shown(&guest.initramfs).display()
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
    fn nothing_missing_means_nothing_to_do() {
        assert_eq!(plan(&Missing::default(), false), Plan::default());
        assert_eq!(plan(&Missing::default(), true), Plan::default());
    }

    #[test]
    fn root_installs_missing_packages_without_questions() {
        let missing = Missing {
            packages: vec!["gdb-multiarch".into(), "qemu-system-arm".into()],
            rust_target: false,
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
            rust_target: true,
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
