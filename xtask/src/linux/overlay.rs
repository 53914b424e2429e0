//! What the initramfs variants built on the Linux guest's own (`cache/linux-ivc`,
//! `cache/linux-ofdm`) share: the flags of their static C programs, the stamp that says a
//! variant is current, and the archive itself, the guest's initramfs followed by an overlay.

use super::rootfs::Rootfs;
use anyhow::{Context, Result};
use std::path::Path;

/// Flags of a static C program cross-compiled for the guest (the output path follows `-o`).
pub const STATIC_PROGRAM_FLAGS: [&str; 8] = [
    "-std=gnu11",
    "-O2",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-static",
    "-s",
    "-o",
];

/// Whether `initramfs` exists and `stamp` holds `text`, the inputs it was built from.
pub fn current(stamp: &Path, text: &str, initramfs: &Path) -> bool {
    std::fs::read_to_string(stamp).ok().as_deref() == Some(text) && initramfs.is_file()
}

/// Writes `initramfs`: the guest's `base` archive, padded to 4 bytes, then `overlay`
/// (written to `dir/overlay.cpio` first). The file appears whole or not at all.
pub fn write(base: &Path, overlay: &Rootfs, dir: &Path, initramfs: &Path) -> Result<()> {
    let overlay_path = dir.join("overlay.cpio");
    overlay.write_cpio(&overlay_path)?;
    let mut bytes = std::fs::read(base).with_context(|| format!("reading {}", base.display()))?;
    bytes.resize(bytes.len().next_multiple_of(4), 0);
    bytes.extend(
        std::fs::read(&overlay_path)
            .with_context(|| format!("reading {}", overlay_path.display()))?,
    );
    let partial = initramfs.with_extension("partial");
    std::fs::write(&partial, &bytes).with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, initramfs)
        .with_context(|| format!("writing {}", initramfs.display()))?;
    println!("linux: {} ({} bytes)", initramfs.display(), bytes.len());
    Ok(())
}
