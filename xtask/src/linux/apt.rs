//! Talks to the host's Debian tools (dpkg, apt-get, apt-cache, dpkg-deb) to
//! make arm64 packages available, resolve names, download and unpack `.deb`
//! files. It only writes inside the directories it is given (apart from
//! `dpkg --add-architecture` / `apt-get update`, which it runs only as root
//! and announces first); it never installs packages on the host.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::process::run;

/// Debian architecture of every guest package.
const ARCH: &str = "arm64";

/// A downloaded package: its name, version and `.deb` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deb {
    pub name: String,
    pub version: String,
    pub path: PathBuf,
}

/// Makes sure apt knows arm64 packages: adds the architecture and updates
/// the package lists when needed (as root), or explains what to run.
pub fn ensure_arm64_available(probe_package: &str) -> Result<()> {
    let foreign = output(Command::new("dpkg").arg("--print-foreign-architectures"))?;
    let has_arch = foreign.lines().any(|line| line.trim() == ARCH);
    if has_arch && has_candidate(probe_package)? {
        return Ok(());
    }
    if output(Command::new("id").arg("-u"))?.trim() != "0" {
        bail!(
            "apt has no {ARCH} package lists; as root run:\n  \
             dpkg --add-architecture {ARCH}\n  apt-get update\nthen retry"
        );
    }
    if !has_arch {
        println!("linux: dpkg --add-architecture {ARCH} (lets apt download {ARCH} packages)");
        run(Command::new("dpkg").args(["--add-architecture", ARCH]))?;
    }
    println!("linux: apt-get update (fetches the {ARCH} package lists)");
    run(Command::new("apt-get").arg("update"))?;
    if !has_candidate(probe_package)? {
        bail!("apt still offers no {probe_package}:{ARCH} after apt-get update");
    }
    Ok(())
}

/// The package that `selector` depends on, e.g. `linux-image-arm64` ->
/// `linux-image-6.1.0-56-arm64` (the newest kernel the archive offers).
pub fn kernel_package(selector: &str) -> Result<String> {
    let text = output(Command::new("apt-cache").args(["depends", &qualified(selector)]))?;
    let suffix = format!(":{ARCH}");
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("Depends: "))
        .map(|name| name.trim_end_matches(suffix.as_str()))
        .find(|name| name.starts_with("linux-image-") && name.ends_with("-arm64"))
        .map(str::to_owned)
        .with_context(|| format!("{selector}:{ARCH} depends on no linux-image-*-arm64 package"))
}

/// Shared-library packages (named `lib*` or `zlib*`, per Debian policy) in
/// the recursive `Depends:` closure of `packages`, sorted.
pub fn library_candidates(packages: &[String]) -> Result<Vec<String>> {
    let mut command = Command::new("apt-cache");
    command.args([
        "depends",
        "--recurse",
        "--no-recommends",
        "--no-suggests",
        "--no-conflicts",
        "--no-breaks",
        "--no-replaces",
        "--no-enhances",
    ]);
    command.args(packages.iter().map(|name| qualified(name)));
    let text = output(&mut command)?;
    let suffix = format!(":{ARCH}");
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|line| line.strip_suffix(suffix.as_str()))
        .filter(|name| name.starts_with("lib") || name.starts_with("zlib"))
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// Downloads the candidate version of each package into `dir` (emptied
/// first) and returns them in the order given.
pub fn download(dir: &Path, packages: &[String]) -> Result<Vec<Deb>> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    println!(
        "linux: apt-get download {} packages into {}",
        packages.len(),
        dir.display()
    );
    let mut command = Command::new("apt-get");
    command.args(["-qq", "download"]).current_dir(dir);
    command.args(packages.iter().map(|name| qualified(name)));
    run(&mut command)?;
    let mut debs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "deb") {
            debs.push(describe(&path)?);
        }
    }
    packages
        .iter()
        .map(|name| {
            debs.iter()
                .find(|deb| &deb.name == name)
                .cloned()
                .with_context(|| format!("apt-get download left no .deb for {name}"))
        })
        .collect()
}

/// Downloads exact packages, each named `name:arch=version`, into `dir` (emptied first)
/// and returns them in the order given. For what is not an arm64 guest package (the host
/// half of a kernel build).
pub fn download_exact(dir: &Path, specs: &[String]) -> Result<Vec<Deb>> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    println!("linux: apt-get download {}", specs.join(" "));
    run(Command::new("apt-get")
        .args(["-qq", "download"])
        .args(specs)
        .current_dir(dir))?;
    let mut debs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "deb") {
            debs.push(describe(&path)?);
        }
    }
    specs
        .iter()
        .map(|spec| {
            let name = spec.split(':').next().unwrap_or(spec);
            debs.iter()
                .find(|deb| deb.name == name)
                .cloned()
                .with_context(|| format!("apt-get download left no .deb for {spec}"))
        })
        .collect()
}

/// The versions apt offers of `package` (qualified `name:arch`), highest first.
pub fn versions(package: &str) -> Result<Vec<String>> {
    let text = output(Command::new("apt-cache").args(["madison", package]))?;
    Ok(madison_versions(&text))
}

/// The version column of `apt-cache madison` output, in its order.
fn madison_versions(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.split('|').nth(1))
        .map(|version| version.trim().to_owned())
        .filter(|version| !version.is_empty())
        .collect()
}

/// Unpacks `deb` into `dir` (emptied first).
pub fn extract(deb: &Deb, dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir)?;
    run(Command::new("dpkg-deb").arg("-x").arg(&deb.path).arg(dir))
}

fn describe(path: &Path) -> Result<Deb> {
    let fields = output(
        Command::new("dpkg-deb")
            .arg("-f")
            .arg(path)
            .args(["Package", "Version"]),
    )?;
    let field = |key: &str| {
        fields
            .lines()
            .find_map(|line| line.strip_prefix(key))
            .map(|value| value.trim().to_owned())
            .with_context(|| format!("{}: no {key} field", path.display()))
    };
    Ok(Deb {
        name: field("Package:")?,
        version: field("Version:")?,
        path: path.to_owned(),
    })
}

fn has_candidate(package: &str) -> Result<bool> {
    let text = output(Command::new("apt-cache").args(["policy", &qualified(package)]))?;
    Ok(text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("Candidate:"))
        .any(|candidate| candidate.trim() != "(none)"))
}

fn qualified(package: &str) -> String {
    format!("{package}:{ARCH}")
}

fn output(command: &mut Command) -> Result<String> {
    let result = command
        .output()
        .with_context(|| format!("starting {command:?}"))?;
    if !result.status.success() {
        bail!(
            "{command:?} failed ({}): {}",
            result.status,
            String::from_utf8_lossy(&result.stderr).trim()
        );
    }
    String::from_utf8(result.stdout).with_context(|| format!("{command:?} printed non-UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::madison_versions;

    #[test]
    fn madison_output_gives_its_versions_in_order() {
        let text = "linux-kbuild-6.1 |  6.1.192-3 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages\n\
                    linux-kbuild-6.1 |  6.1.176-1 | http://deb.debian.org/debian bookworm/main amd64 Packages\n";
        assert_eq!(madison_versions(text), ["6.1.192-3", "6.1.176-1"]);
        assert!(madison_versions("").is_empty());
    }
}
