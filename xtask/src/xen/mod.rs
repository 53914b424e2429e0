//! The peer-hypervisor configuration of the measurement suite: Xen 4.17 from
//! Debian bookworm's `xen-hypervisor-4.17-arm64` package, with the Linux
//! guest (the same kernel, initramfs and job protocol as the native boot) as
//! dom0. It downloads and unpacks the package under `cache/xen/` and builds
//! the QEMU command; it never writes outside the cache, never installs
//! anything on the host and never runs QEMU itself.

mod qemu;

pub use qemu::{command, dom0_bootargs, Dom0Layout, XenOptions};

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

use crate::linux::apt;

/// The Debian package that ships the hypervisor.
const PACKAGE: &str = "xen-hypervisor-4.17-arm64";
/// The hypervisor binary inside the package: an arm64 Image (and PE/EFI)
/// that QEMU's `-kernel` loads and enters at EL2.
const BINARY: &str = "boot/xen-4.17-arm64";
/// Offset and value of the arm64 Image header magic ("ARM\x64").
const IMAGE_MAGIC_OFFSET: usize = 0x38;
const IMAGE_MAGIC: &[u8; 4] = b"ARM\x64";

/// A prepared Xen hypervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xen {
    /// The hypervisor binary, given to QEMU as `-kernel`.
    pub binary: PathBuf,
    /// The package's version, for provenance.
    pub version: String,
}

/// Downloads and unpacks the hypervisor under `cache/xen/`, or returns at
/// once when a previous run left the binary and its version there.
pub fn prepare(cache: &Path) -> Result<Xen> {
    let dir = cache.join("xen");
    let binary = dir.join("xen-4.17-arm64");
    let version_file = dir.join("version.txt");
    if binary.is_file() {
        if let Ok(version) = std::fs::read_to_string(&version_file) {
            return Ok(Xen {
                binary,
                version: version.trim().to_owned(),
            });
        }
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    apt::ensure_arm64_available(PACKAGE)?;
    let debs = apt::download(&dir.join("debs"), &[PACKAGE.to_owned()])?;
    let unpacked = dir.join("pkg");
    apt::extract(&debs[0], &unpacked)?;
    install_binary(&unpacked.join(BINARY), &binary)?;
    std::fs::remove_dir_all(&unpacked)
        .with_context(|| format!("removing {}", unpacked.display()))?;
    std::fs::write(&version_file, format!("{}\n", debs[0].version))?;
    println!("xen: {} ({PACKAGE} {})", binary.display(), debs[0].version);
    Ok(Xen {
        binary,
        version: debs[0].version.clone(),
    })
}

/// Copies the hypervisor to `dest` after checking its arm64 Image header.
fn install_binary(source: &Path, dest: &Path) -> Result<()> {
    let image = std::fs::read(source).with_context(|| format!("reading {}", source.display()))?;
    if image.get(IMAGE_MAGIC_OFFSET..IMAGE_MAGIC_OFFSET + 4) != Some(IMAGE_MAGIC.as_slice()) {
        bail!(
            "{} is not an arm64 Image (no ARM\\x64 magic at 0x38)",
            source.display()
        );
    }
    std::fs::write(dest, image).with_context(|| format!("writing {}", dest.display()))
}
