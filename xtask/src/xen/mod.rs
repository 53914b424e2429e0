//! The peer-hypervisor configuration of the measurement suite: Xen 4.17 from
//! Debian bookworm's `xen-hypervisor-4.17-arm64` package, with the Linux
//! guest (the same kernel, initramfs and job protocol as the native boot) as
//! dom0 and the FreeRTOS image (the same as native and under Partita) as a
//! dom0less domU, alone or beside dom0. It downloads and unpacks the package
//! under `cache/xen/` and builds the QEMU command; for a domU it runs QEMU
//! once to dump the machine's device tree and writes the tree with the domU
//! into `build/xen/`. It never installs anything on the host and never runs
//! the guests itself.

mod dom0less;
mod qemu;

pub use qemu::{dom0_bootargs, XenOptions, DOMU_SCHEDULER};

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::linux::{self, apt};
use crate::{paths, process};

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

/// What runs under Xen: Linux as dom0 running `job` (its shell without one), and the
/// FreeRTOS image as a dom0less domU with these boot arguments. At least one of them.
pub struct Domains<'a> {
    pub dom0: Option<Option<&'a str>>,
    pub freertos: Option<&'a str>,
}

/// The domain id and text of a line a domU wrote to its emulated SBSA UART (`vpl011`),
/// as Xen's serial console shows it: `(XEN) DOM<id>: <text>`, with Xen's
/// `console_timestamps` stamp (`[    2.825079] `) after `(XEN) ` once it stamps lines.
/// The FreeRTOS domU is domain 1, with or without dom0.
pub fn domu_text(line: &str) -> Option<(u32, &str)> {
    let rest = line.strip_prefix("(XEN) ")?;
    let rest = match rest.strip_prefix('[') {
        Some(stamped) => stamped.split_once("] ")?.1,
        None => rest,
    };
    let (id, text) = rest.strip_prefix("DOM")?.split_once(": ")?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((id.parse().ok()?, text))
}

/// The RAM of the FreeRTOS domU, at Xen's guest RAM base 0x4000_0000 (Partita gives the VM
/// 4 MiB there, but with 4 MiB Xen 4.17 finds no room for the domU's device tree beside an
/// image loaded at 0x4020_0000 and panics: "Unable to find suitable location for
/// dtb+initrd").
const FREERTOS_MEMORY_KIB: u64 = 16 * 1024;

/// A ready Xen boot: the QEMU command, and the package version for provenance lines.
pub struct Boot {
    pub command: Command,
    pub version: String,
}

/// Prepares Xen (and Linux when dom0 runs), places the modules and, with a domU, writes
/// the machine's device tree (`host.dtb`) and the same with the domU (`dom0less.dtb`) into
/// `files` (`build/xen/`, or a bench row's folder); returns the QEMU command of the boot.
pub fn boot(
    cache: &Path,
    files: &Path,
    domains: &Domains<'_>,
    options: &XenOptions,
) -> Result<Boot> {
    if domains.dom0.is_none() && domains.freertos.is_none() {
        bail!("a Xen boot needs dom0, a domU or both");
    }
    let hypervisor = prepare(cache)?;
    let guest = domains.dom0.map(|_| linux::prepare(cache)).transpose()?;
    let dom0_bootargs = domains.dom0.map(dom0_bootargs).transpose()?;
    let mut sizes = Vec::new();
    if let Some(guest) = &guest {
        sizes.push(file_size(&guest.kernel)?);
        sizes.push(file_size(&guest.initramfs)?);
    }
    let image = paths::guest_image("freertos");
    if domains.freertos.is_some() {
        sizes.push(file_size(&image)?);
    }
    let layout = qemu::ModuleLayout::place(&sizes);
    let dom0 = guest
        .as_ref()
        .zip(dom0_bootargs.as_deref())
        .map(|(guest, bootargs)| qemu::Dom0 {
            guest,
            bootargs,
            kernel: layout.addresses[0],
            initrd: layout.addresses[1],
        });
    let Some(bootargs) = domains.freertos else {
        let command = qemu::command(&hypervisor.binary, dom0.as_ref(), None, options);
        return Ok(Boot {
            command,
            version: hypervisor.version,
        });
    };
    let domu = qemu::DomUImage {
        image: &image,
        addr: *layout.addresses.last().expect("the domU was placed"),
    };
    std::fs::create_dir_all(files).with_context(|| format!("creating {}", files.display()))?;
    let host = files.join("host.dtb");
    process::output(&mut qemu::dump_command(
        &hypervisor.binary,
        dom0.as_ref(),
        &host,
        options,
    ))?;
    let host_tree = std::fs::read(&host).with_context(|| format!("reading {}", host.display()))?;
    let tree = dom0less::with_domus(
        &host_tree,
        &[dom0less::DomU {
            name: "domU1".to_owned(),
            kernel: domu.addr,
            kernel_size: file_size(&image)?,
            bootargs: bootargs.to_owned(),
            memory_kib: FREERTOS_MEMORY_KIB,
            vcpus: 1,
        }],
    )?;
    let dtb = files.join("dom0less.dtb");
    std::fs::write(&dtb, tree).with_context(|| format!("writing {}", dtb.display()))?;
    let command = qemu::command(
        &hypervisor.binary,
        dom0.as_ref(),
        Some((&domu, &dtb)),
        options,
    );
    Ok(Boot {
        command,
        version: hypervisor.version,
    })
}

fn file_size(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_without_any_domain_is_refused_before_any_download() {
        let domains = Domains {
            dom0: None,
            freertos: None,
        };
        let options = XenOptions {
            clock: crate::qemu::Clock::Host,
        };
        let error = boot(
            Path::new("/nonexistent"),
            Path::new("/nonexistent/files"),
            &domains,
            &options,
        )
        .err()
        .unwrap();
        assert_eq!(error.to_string(), "a Xen boot needs dom0, a domU or both");
    }

    #[test]
    fn domu_lines_are_told_from_xens_own() {
        assert_eq!(domu_text("(XEN) DOM1: rt: x"), Some((1, "rt: x")));
        assert_eq!(
            domu_text("(XEN) [    2.825079] DOM12: bench: done"),
            Some((12, "bench: done"))
        );
        for line in [
            "(XEN) Xen version 4.17",
            "(XEN) DOM: y",
            "(XEN) DOMx: y",
            "(XEN) [    1.0 DOM1: y",
            "DOM1: y",
            "[freertos] DOM1: y",
        ] {
            assert_eq!(domu_text(line), None, "{line}");
        }
    }
}
