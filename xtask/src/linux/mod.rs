//! The Linux guest: Debian bookworm's arm64 kernel and an initramfs built
//! from Debian arm64 packages (busybox-static, rt-tests, sysbench, stress-ng
//! and the libraries they need), all downloaded and unpacked under the cache
//! directory, plus the project's automotive suite cross-compiled into
//! /opt/automotive, and the command that boots it natively on QEMU. Nothing here
//! writes outside the cache, and nothing it downloads is meant to be committed.

pub mod apt;
mod automotive;
mod cpio;
mod elf;
mod ivc;
mod kernel;
mod libraries;
mod manifest;
mod ofdm;
mod overlay;
mod qemu;
mod rootfs;

pub use ivc::prepare as prepare_ivc;
pub use ofdm::prepare as prepare_ofdm;
pub use qemu::{bootargs, bootargs_on, job_bootarg, native_command, NativeOptions, MAX_BOOTARGS};

use anyhow::{Context, Result};
use libraries::PackageTree;
use manifest::Manifest;
use std::path::{Path, PathBuf};

/// The guest's /init script (guests/linux/init).
const INIT: &str = include_str!("../../../guests/linux/init");
/// The guest's package list (guests/linux/packages).
const PACKAGES: &str = include_str!("../../../guests/linux/packages");
/// Bump when the way the initramfs is assembled changes, to rebuild caches.
const BUILD_FORMAT: u32 = 1;

/// A prepared Linux guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinuxGuest {
    /// Raw (uncompressed) arm64 Image.
    pub kernel: PathBuf,
    /// Uncompressed newc cpio archive.
    pub initramfs: PathBuf,
    /// (package, version) of the kernel, the listed packages and the
    /// library packages that supplied files, for provenance.
    pub versions: Vec<(String, String)>,
}

/// Writes the project's C sources (`(file name, text)`, embedded in the host tool) into
/// `dir` for the cross compiler.
fn write_sources(dir: &Path, sources: &[(&str, &str)]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, text) in sources {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Downloads, unpacks and assembles the guest under `cache/linux/`, or
/// returns at once when a previous run with the same inputs finished.
pub fn prepare(cache: &Path) -> Result<LinuxGuest> {
    let dir = cache.join("linux");
    let guest = LinuxGuest {
        kernel: dir.join("Image"),
        initramfs: dir.join("initramfs.cpio"),
        versions: Vec::new(),
    };
    let stamp = dir.join("prepared.stamp");
    let versions_file = dir.join("versions.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(stamp_text().as_str())
        && guest.kernel.is_file()
        && guest.initramfs.is_file()
    {
        let versions = read_versions(&versions_file)?;
        return Ok(LinuxGuest { versions, ..guest });
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let _ = std::fs::remove_file(&stamp);
    let versions = assemble(&dir, &guest)?;
    std::fs::write(&versions_file, format_versions(&versions))?;
    std::fs::write(&stamp, stamp_text())?;
    Ok(LinuxGuest { versions, ..guest })
}

fn assemble(dir: &Path, guest: &LinuxGuest) -> Result<Vec<(String, String)>> {
    let manifest = Manifest::parse(PACKAGES, "guests/linux/packages")?;
    let suite = automotive::build(&dir.join("automotive"))?;
    let listed = manifest.package_names();
    apt::ensure_arm64_available(listed.first().map_or("busybox-static", String::as_str))?;
    let kernel_package = apt::kernel_package(&manifest.kernel_selector)?;
    let mut wanted = vec![kernel_package.clone()];
    wanted.extend(listed.iter().cloned());
    for library in apt::library_candidates(&listed)? {
        if !wanted.contains(&library) {
            wanted.push(library);
        }
    }
    let debs = apt::download(&dir.join("debs"), &wanted)?;
    let trees = unpack(&dir.join("pkgs"), &debs)?;
    kernel::install_image(&trees[0].root, &guest.kernel)?;
    // The kernel package's modules (hundreds of MiB) are not used by the guest.
    std::fs::remove_dir_all(&trees[0].root)?;
    let programs: Vec<(String, String)> = manifest
        .packages
        .iter()
        .flat_map(|package| {
            package
                .files
                .iter()
                .map(|file| (package.name.clone(), file.clone()))
        })
        .collect();
    let placement = libraries::place_programs(&trees[1..], &programs)?;
    let mut tree = rootfs::Rootfs::new(INIT);
    tree.add(&placement)?;
    tree.add(&suite)?;
    let size = tree.write_cpio(&guest.initramfs)?;
    println!("linux: {} ({size} bytes)", guest.initramfs.display());
    let mut versions: Vec<(String, String)> = debs
        .iter()
        .filter(|deb| {
            deb.name == kernel_package
                || listed.contains(&deb.name)
                || placement.packages.contains(&deb.name)
        })
        .map(|deb| (deb.name.clone(), deb.version.clone()))
        .collect();
    versions.extend(automotive::toolchain_versions()?);
    Ok(versions)
}

fn unpack(root: &Path, debs: &[apt::Deb]) -> Result<Vec<PackageTree>> {
    if root.exists() {
        std::fs::remove_dir_all(root).with_context(|| format!("removing {}", root.display()))?;
    }
    debs.iter()
        .map(|deb| {
            let tree = PackageTree {
                name: deb.name.clone(),
                root: root.join(&deb.name),
            };
            apt::extract(deb, &tree.root)?;
            Ok(tree)
        })
        .collect()
}

fn stamp_text() -> String {
    format!(
        "format {BUILD_FORMAT}\n--- packages\n{PACKAGES}--- init\n{INIT}{}",
        automotive::sources_text()
    )
}

fn format_versions(versions: &[(String, String)]) -> String {
    versions
        .iter()
        .map(|(name, version)| format!("{name} {version}\n"))
        .collect()
}

fn read_versions(path: &Path) -> Result<Vec<(String, String)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(name, version)| (name.to_owned(), version.to_owned()))
        .collect())
}
