//! The Linux guest's end of Partita's inter-VM channels (`guests/linux/ivc/`): the
//! `partita_ivc` kernel module, built at set-up time against Debian's headers for exactly
//! the guest's kernel, and the `partita-ivc` command with its C library, cross-compiled
//! as a static binary. They go to `/lib/partita/partita_ivc.ko` and `/usr/bin/partita-ivc`
//! in a second cpio archive appended to the guest's initramfs (Linux unpacks concatenated
//! archives in order, later files replacing earlier ones), whose `/init` is the guest's
//! with one line that loads the module: `cache/linux-ivc/initramfs.cpio`, the initrd of
//! the configurations with channels. The base initramfs in `cache/linux/` is left as it
//! is, so systems without channels boot exactly what they did.
//!
//! Debian's arm64 headers package runs its build through `linux-kbuild-6.1`, whose tools
//! (fixdep, modpost) are host programs: on this amd64 host the amd64 build of that package,
//! of the same upstream version, is unpacked beside the arm64 headers. Its Debian revision
//! may differ: Debian's security archive rebuilds the architectures separately, and on
//! 2026-11-28 it had arm64 headers 6.1.192-2 beside amd64 kbuild 6.1.192-3 only.
//! Everything is downloaded and built under the directory given (inside the git-ignored
//! cache); no built module is ever committed, and nothing is installed on the host.

use super::apt::{self, Deb};
use super::libraries::{Content, Placement};
use super::overlay;
use super::rootfs::Rootfs;
use super::LinuxGuest;
use crate::process::run;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the files go in the initramfs (relative, no leading slash).
const MODULE_PATH: &str = "lib/partita/partita_ivc.ko";
const COMMAND_PATH: &str = "usr/bin/partita-ivc";

/// Debian's cross compiler (the headers' Makefile calls `$(CROSS_COMPILE)gcc-12`).
const CROSS_COMPILE: &str = "aarch64-linux-gnu-";

/// Every source file, by name in `guests/linux/ivc/`.
const SOURCES: [(&str, &str); 6] = [
    ("Kbuild", include_str!("../../../guests/linux/ivc/Kbuild")),
    (
        "partita_ivc.c",
        include_str!("../../../guests/linux/ivc/partita_ivc.c"),
    ),
    (
        "partita_ivc_uapi.h",
        include_str!("../../../guests/linux/ivc/partita_ivc_uapi.h"),
    ),
    (
        "libpartita_ivc.h",
        include_str!("../../../guests/linux/ivc/libpartita_ivc.h"),
    ),
    (
        "libpartita_ivc.c",
        include_str!("../../../guests/linux/ivc/libpartita_ivc.c"),
    ),
    (
        "partita-ivc.c",
        include_str!("../../../guests/linux/ivc/partita-ivc.c"),
    ),
];

/// The line the overlay's /init gains, after the mounts, and where it goes.
const LOAD_MODULE: &str =
    "# Partita's inter-VM channels (docs/ivc.md): binds the device tree's partita,ivc nodes.\ninsmod /lib/partita/partita_ivc.ko\n";
const AFTER: &str = "mount -t tmpfs -o mode=0755 tmpfs /run\n";

/// Every source, named, for the initramfs stamp.
pub fn sources_text() -> String {
    SOURCES
        .iter()
        .map(|(name, text)| format!("--- linux/ivc/{name}\n{text}"))
        .collect()
}

/// Builds `cache/linux-ivc/initramfs.cpio` for `base` unless it is current; returns it.
pub fn prepare(cache: &Path, base: &LinuxGuest) -> Result<PathBuf> {
    let dir = cache.join("linux-ivc");
    let initramfs = dir.join("initramfs.cpio");
    let stamp = dir.join("prepared.stamp");
    let base_stamp = std::fs::read_to_string(cache.join("linux").join("prepared.stamp"))
        .context("the Linux guest is not prepared")?;
    let text = format!("{base_stamp}{}", sources_text());
    if overlay::current(&stamp, &text, &initramfs) {
        return Ok(initramfs);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let _ = std::fs::remove_file(&stamp);
    let (name, version) = base
        .versions
        .iter()
        .find(|(name, _)| name.starts_with("linux-image-"))
        .context("the Linux guest's versions name no linux-image package")?;
    let (placement, _) = build(&dir, name, version)?;
    let mut archive = Rootfs::new(&init_with_module(super::INIT)?);
    archive.add(&placement)?;
    overlay::write(&base.initramfs, &archive, &dir, &initramfs)?;
    std::fs::write(&stamp, text)?;
    Ok(initramfs)
}

/// The guest's /init with the module loaded right after the file systems are mounted.
fn init_with_module(init: &str) -> Result<String> {
    if !init.contains(AFTER) {
        bail!(
            "guests/linux/init no longer mounts /run as `{}`",
            AFTER.trim_end()
        );
    }
    Ok(init.replacen(AFTER, &format!("{AFTER}\n{LOAD_MODULE}"), 1))
}

/// The headers and host build tools for kernel package `name` (`linux-image-*-arm64`)
/// of `version`; `kbuild` gives the versions of the amd64 `linux-kbuild-*` package that
/// apt offers, as `apt::versions` lists them.
fn build_packages(
    name: &str,
    version: &str,
    kbuild: impl Fn(&str) -> Result<Vec<String>>,
) -> Result<Vec<String>> {
    let release = name
        .strip_prefix("linux-image-")
        .context("the kernel package is not named linux-image-*")?;
    let abi = release
        .strip_suffix("-arm64")
        .context("the kernel package is not an -arm64 flavour")?;
    let series = abi.split('.').take(2).collect::<Vec<_>>().join(".");
    let tools = format!("linux-kbuild-{series}:amd64");
    let v = version;
    let tools_version = same_upstream(version, &kbuild(&tools)?)
        .with_context(|| format!("apt offers no {tools} of the kernel's upstream version {v}"))?;
    Ok(vec![
        format!("linux-headers-{release}:arm64={v}"),
        format!("linux-headers-{abi}-common:all={v}"),
        format!("{tools}={tools_version}"),
    ])
}

/// Of `available` (highest first), `wanted` itself, or else the highest of the same
/// upstream version (what precedes the last `-`, the Debian revision).
fn same_upstream(wanted: &str, available: &[String]) -> Option<String> {
    let upstream = |v: &str| v.rsplit_once('-').map_or(v, |(up, _)| up).to_owned();
    available
        .iter()
        .find(|v| *v == wanted)
        .or_else(|| available.iter().find(|v| upstream(v) == upstream(wanted)))
        .cloned()
}

/// Builds the module and the command under `dir` for kernel package `name` of `version`;
/// returns where they go and the (package, version) of what they were built with.
fn build(dir: &Path, name: &str, version: &str) -> Result<(Placement, Vec<(String, String)>)> {
    if dir.join("src").exists() {
        std::fs::remove_dir_all(dir.join("src"))?;
    }
    let sources = dir.join("src");
    crate::linux::write_sources(&sources, &SOURCES)?;
    let debs = apt::download_exact(
        &dir.join("debs"),
        &build_packages(name, version, apt::versions)?,
    )?;
    let root = dir.join("kbuild");
    if root.exists() {
        std::fs::remove_dir_all(&root)?;
    }
    for deb in &debs {
        unpack_into(deb, &root)?;
    }
    let headers = headers_dir(&root, &debs[0])?;
    let module = build_module(&headers, &sources).context(
        "building the partita_ivc module (are make and gcc-aarch64-linux-gnu installed? see `cargo xtask setup`)",
    )?;
    let command = sources.join("partita-ivc");
    run(Command::new(format!("{CROSS_COMPILE}gcc"))
        .args(overlay::STATIC_PROGRAM_FLAGS)
        .arg(&command)
        .arg(sources.join("partita-ivc.c"))
        .arg(sources.join("libpartita_ivc.c")))?;
    let mut placement = Placement::default();
    placement
        .files
        .insert(MODULE_PATH.into(), Content::Copy(module));
    placement
        .files
        .insert(COMMAND_PATH.into(), Content::Copy(command));
    let versions = debs
        .iter()
        .map(|d| (d.name.clone(), d.version.clone()))
        .collect();
    Ok((placement, versions))
}

/// Unpacks `deb` into `root`, merging with what is there (the packages' trees overlap).
fn unpack_into(deb: &Deb, root: &Path) -> Result<()> {
    std::fs::create_dir_all(root)?;
    run(Command::new("dpkg-deb").arg("-x").arg(&deb.path).arg(root))
}

/// The arm64 headers' directory, its Makefile pointed at the unpacked common headers: the
/// package includes them by their installed path, `/usr/src/...`.
fn headers_dir(root: &Path, headers: &Deb) -> Result<PathBuf> {
    let release = headers.name.trim_start_matches("linux-headers-");
    let dir = root
        .join("usr/src")
        .join(format!("linux-headers-{release}"));
    let makefile = dir.join("Makefile");
    let text = std::fs::read_to_string(&makefile)
        .with_context(|| format!("reading {}", makefile.display()))?;
    let src = root.join("usr/src");
    let patched = text.replace("/usr/src/", &format!("{}/", src.display()));
    if patched == text {
        bail!(
            "{}: no /usr/src/ include to redirect; the headers package changed layout",
            makefile.display()
        );
    }
    std::fs::write(&makefile, patched)?;
    Ok(dir)
}

fn build_module(headers: &Path, sources: &Path) -> Result<PathBuf> {
    run(Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(headers)
        .arg(format!("M={}", sources.display()))
        .arg("ARCH=arm64")
        .arg(format!("CROSS_COMPILE={CROSS_COMPILE}"))
        .arg("modules"))?;
    let module = sources.join("partita_ivc.ko");
    if !module.is_file() {
        bail!("make left no {}", module.display());
    }
    Ok(module)
}

#[cfg(test)]
mod tests {
    use super::*;
    use partita_core::ivc::memory::WordMemory as Image;
    use partita_core::ivc::ring::{Consumer, Producer, RingError};

    /// Message `seq` of ring-interop.c: tag seq, seq * 37 % 200 bytes of (seq + 7 i).
    fn message(seq: u32) -> Vec<u8> {
        (0..(seq * 37 % 200) as usize)
            .map(|i| (seq as usize + 7 * i) as u8)
            .collect()
    }

    const CHANNEL: usize = 8192;
    const RING: usize = CHANNEL / 2;

    /// Builds guests/linux/ivc/ring-interop.c with libpartita_ivc for the host.
    fn interop(dir: &Path) -> PathBuf {
        crate::linux::write_sources(dir, &SOURCES).unwrap();
        let test = dir.join("ring-interop.c");
        std::fs::write(
            &test,
            include_str!("../../../guests/linux/ivc/ring-interop.c"),
        )
        .unwrap();
        let binary = dir.join("ring-interop");
        run(Command::new("gcc")
            .args(["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(&binary)
            .arg(&test)
            .arg(dir.join("libpartita_ivc.c")))
        .unwrap();
        binary
    }

    #[test]
    fn the_c_library_and_the_rust_ring_are_one_format() {
        let dir = std::env::temp_dir().join(format!("partita-ivc-interop-{}", std::process::id()));
        let binary = interop(&dir);
        // C writes through five laps of the ring, Rust reads what it left.
        let image = dir.join("c.img");
        let out = Command::new(&binary)
            .arg("write")
            .arg(&image)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let field = |key: &str| -> u32 {
            text.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .unwrap()
                .parse()
                .unwrap()
        };
        let (first, last) = (field("first="), field("last="));
        assert!(first > 100 && last > first, "{text}");
        let memory = Image::from_bytes(&std::fs::read(&image).unwrap());
        let consumer = Consumer::new(&memory, 0, RING).unwrap();
        let mut buf = [0u8; 256];
        for seq in first..=last {
            let m = consumer.pop(&mut buf).unwrap().expect("a message");
            assert_eq!((m.tag, &buf[..m.len]), (seq, &message(seq)[..]));
        }
        assert_eq!(consumer.pop(&mut buf), Ok(None));
        // Rust writes the same way, C reads.
        let memory = Image::from_bytes(&[0; CHANNEL]);
        let producer = Producer::new(&memory, 0, RING).unwrap();
        let consumer = Consumer::new(&memory, 0, RING).unwrap();
        let (mut seq, mut unread) = (0u32, 0u32);
        while (seq as usize) * 60 < 5 * (RING - 0x80) {
            match producer.push(seq, &message(seq)) {
                Ok(_) => seq += 1,
                Err(RingError::Full) => {
                    while seq - unread > 3 {
                        consumer.pop(&mut buf).unwrap().unwrap();
                        unread += 1;
                    }
                }
                Err(e) => panic!("{e:?}"),
            }
        }
        let image = dir.join("rust.img");
        std::fs::write(&image, memory.to_bytes()).unwrap();
        let status = Command::new(&binary)
            .arg("read")
            .arg(&image)
            .arg(unread.to_string())
            .arg((seq - 1).to_string())
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_build_packages_match_the_kernel_and_its_upstream_version() {
        let offered = |versions: &'static [&'static str]| {
            move |package: &str| {
                assert_eq!(package, "linux-kbuild-6.1:amd64");
                Ok(versions.iter().map(|v| v.to_string()).collect())
            }
        };
        assert_eq!(
            build_packages(
                "linux-image-6.1.0-56-arm64",
                "6.1.192-2",
                offered(&["6.1.192-3", "6.1.192-2", "6.1.176-1"])
            )
            .unwrap(),
            [
                "linux-headers-6.1.0-56-arm64:arm64=6.1.192-2",
                "linux-headers-6.1.0-56-common:all=6.1.192-2",
                "linux-kbuild-6.1:amd64=6.1.192-2",
            ]
        );
        let skewed = build_packages(
            "linux-image-6.1.0-56-arm64",
            "6.1.192-2",
            offered(&["6.1.192-3", "6.1.176-1"]),
        )
        .unwrap();
        assert_eq!(skewed[2], "linux-kbuild-6.1:amd64=6.1.192-3");
        let missing = build_packages(
            "linux-image-6.1.0-56-arm64",
            "6.1.192-2",
            offered(&["6.1.176-1"]),
        )
        .unwrap_err();
        assert_eq!(
            missing.to_string(),
            "apt offers no linux-kbuild-6.1:amd64 of the kernel's upstream version 6.1.192-2"
        );
        assert!(build_packages("linux-image-6.1.0-56-cloud-amd64", "1", offered(&[])).is_err());
    }

    #[test]
    fn the_overlay_init_loads_the_module_after_the_mounts() {
        let init = init_with_module(super::super::INIT).unwrap();
        let mounted = init.find(AFTER).unwrap();
        let loaded = init.find("insmod /lib/partita/partita_ivc.ko").unwrap();
        let job = init.find("hex=$(job_hex)").unwrap();
        assert!(mounted < loaded && loaded < job);
        assert!(init_with_module("#!/bin/sh\n").is_err());
    }
}
