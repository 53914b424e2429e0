//! Linux's program for the reconfigurable accelerators (`guests/linux/ofdm/`,
//! docs/accelerators.md): `partita-ofdm`, cross-compiled as a static binary to
//! `/usr/bin/partita-ofdm` in a second cpio archive appended to the guest's base initramfs
//! (as the IVC tools are, `ivc.rs`): `cache/linux-ofdm/initramfs.cpio`, the initrd of
//! `configs/tests/ofdm-linux.toml`. It needs no kernel module, so it is built on its own,
//! from the base initramfs, under its own directory and stamp.

use super::libraries::{Content, Placement};
use super::overlay;
use super::rootfs::Rootfs;
use super::LinuxGuest;
use crate::process::run;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the program goes in the initramfs (relative, no leading slash).
const PROGRAM_PATH: &str = "usr/bin/partita-ofdm";

const SOURCE: &str = include_str!("../../../guests/linux/ofdm/partita-ofdm.c");

/// Debian's cross compiler.
const CROSS_COMPILER: &str = "aarch64-linux-gnu-gcc";

/// Builds `cache/linux-ofdm/initramfs.cpio` for `base` unless it is current; returns it.
pub fn prepare(cache: &Path, base: &LinuxGuest) -> Result<PathBuf> {
    let dir = cache.join("linux-ofdm");
    let initramfs = dir.join("initramfs.cpio");
    let stamp = dir.join("prepared.stamp");
    let base_stamp = std::fs::read_to_string(cache.join("linux").join("prepared.stamp"))
        .context("the Linux guest is not prepared")?;
    let text = format!("{base_stamp}--- linux/ofdm/partita-ofdm.c\n{SOURCE}");
    if overlay::current(&stamp, &text, &initramfs) {
        return Ok(initramfs);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let _ = std::fs::remove_file(&stamp);
    let source = dir.join("partita-ofdm.c");
    std::fs::write(&source, SOURCE).with_context(|| format!("writing {}", source.display()))?;
    let program = dir.join("partita-ofdm");
    run(Command::new(CROSS_COMPILER)
        .args(overlay::STATIC_PROGRAM_FLAGS)
        .arg(&program)
        .arg(&source))
    .context(
        "building partita-ofdm (is gcc-aarch64-linux-gnu installed? see `cargo xtask setup`)",
    )?;
    let mut placement = Placement::default();
    placement
        .files
        .insert(PROGRAM_PATH.into(), Content::Copy(program));
    let mut archive = Rootfs::new(super::INIT);
    archive.add(&placement)?;
    overlay::write(&base.initramfs, &archive, &dir, &initramfs)?;
    std::fs::write(&stamp, text)?;
    Ok(initramfs)
}
