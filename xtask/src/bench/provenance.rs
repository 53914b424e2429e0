//! Where a set of results came from: QEMU's version and flags, the project commit and
//! whether the tree was dirty, the date, the configuration files, the kernel, package and
//! Xen versions, and every QEMU command line. It reads files and asks git and QEMU; it
//! never changes anything.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use partita_core::board::Platform;

use crate::paths::root;
use crate::qemu::Cpu;

/// A file the results depend on, with its contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileContents {
    pub path: String,
    pub contents: String,
}

/// One QEMU run of the benchmark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCommand {
    pub config: String,
    pub guest: String,
    pub command: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub mode: String,
    pub date: String,
    pub commit: String,
    pub dirty: bool,
    pub qemu_version: String,
    /// The machine options every configuration shares.
    pub qemu_flags: String,
    pub config_files: Vec<FileContents>,
    /// `cache/linux/versions.txt`: kernel, packages, cross toolchain.
    pub linux_versions: Vec<String>,
    /// `cache/xen/version.txt`.
    pub xen_version: String,
    pub runs: Vec<RunCommand>,
}

/// What a row measured in an earlier sitting of a run must share with this one to join its
/// report (`cargo xtask bench --resume`): everything of the provenance that decides a
/// figure. The configuration files are the commit's, as the tree must be clean.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub mode: String,
    pub commit: String,
    pub dirty: bool,
    pub qemu_version: String,
    pub qemu_flags: String,
    pub linux_versions: Vec<String>,
    pub xen_version: String,
}

impl Provenance {
    pub fn stamp(&self) -> Stamp {
        Stamp {
            mode: self.mode.clone(),
            commit: self.commit.clone(),
            dirty: self.dirty,
            qemu_version: self.qemu_version.clone(),
            qemu_flags: self.qemu_flags.clone(),
            linux_versions: self.linux_versions.clone(),
            xen_version: self.xen_version.clone(),
        }
    }
}

/// Options of every run: the board's machine, memory and further arguments, the CPU and
/// deterministic time.
pub fn qemu_flags(platform: Platform, cpu: Cpu) -> String {
    let machine = &platform.board().qemu;
    let mut flags = format!(
        "-M {} -cpu {} -m {}",
        machine.machine,
        cpu.qemu_name(),
        machine.memory
    );
    for arg in machine.extra {
        flags.push(' ');
        flags.push_str(arg);
    }
    flags.push_str(
        " -nographic -icount shift=0,align=off,sleep=off -seed 1 \
         -rtc base=2020-01-01T00:00:00,clock=vm",
    );
    flags
}

/// Collects everything but the run commands (added as runs start).
pub fn collect(mode: &str, qemu_flags: String, config_files: &[&str], cache: &Path) -> Provenance {
    let (commit, dirty) = commit();
    Provenance {
        mode: mode.to_owned(),
        date: utc_date_time(SystemTime::now()),
        commit,
        dirty,
        qemu_version: first_line(&command_output(
            Command::new("qemu-system-aarch64").arg("--version"),
        )),
        qemu_flags,
        config_files: config_files
            .iter()
            .map(|path| FileContents {
                path: (*path).to_owned(),
                contents: fs::read_to_string(root().join(path)).unwrap_or_default(),
            })
            .collect(),
        linux_versions: fs::read_to_string(cache.join("linux").join("versions.txt"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect(),
        xen_version: fs::read_to_string(cache.join("xen").join("version.txt"))
            .unwrap_or_default()
            .trim()
            .to_owned(),
        runs: Vec::new(),
    }
}

/// The short commit id (empty outside git) and whether tracked files differ from it.
pub fn commit() -> (String, bool) {
    let id = command_output(
        Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .current_dir(root()),
    );
    let status = command_output(
        Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=no"])
            .current_dir(root()),
    );
    (id.trim().to_owned(), !status.trim().is_empty())
}

fn command_output(cmd: &mut Command) -> String {
    cmd.output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default()
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().trim().to_owned()
}

/// `YYYY-MM-DDTHH:MM:SSZ` of `time` (UTC).
pub fn utc_date_time(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (year, month, day) = civil_date(secs / 86_400);
    let rest = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The Gregorian (year, month, day) of a count of days since 1970-01-01.
fn civil_date(days: u64) -> (u64, u64, u64) {
    // Eras of 400 years (146,097 days) starting on 0000-03-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_are_gregorian_utc() {
        let at = |secs| utc_date_time(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_795_301_501), "2026-11-21T22:51:41Z");
    }
}
