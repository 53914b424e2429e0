//! Turns the kernel package's `boot/vmlinuz-*` into the raw arm64 `Image`
//! that QEMU's `-kernel` and Partita load (gunzipping it if the package ships
//! it compressed) and checks its boot header. It never modifies the package.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Offset and value of the arm64 Image header magic ("ARM\x64").
const IMAGE_MAGIC_OFFSET: usize = 0x38;
const IMAGE_MAGIC: &[u8; 4] = b"ARM\x64";
const GZIP_MAGIC: &[u8; 2] = &[0x1f, 0x8b];

/// Writes the raw Image from the unpacked kernel package at `package` to `dest`.
pub fn install_image(package: &Path, dest: &Path) -> Result<()> {
    let vmlinuz = find_vmlinuz(&package.join("boot"))?;
    let mut image =
        std::fs::read(&vmlinuz).with_context(|| format!("reading {}", vmlinuz.display()))?;
    if image.starts_with(GZIP_MAGIC) {
        image = gunzip(&vmlinuz)?;
    }
    if image.get(IMAGE_MAGIC_OFFSET..IMAGE_MAGIC_OFFSET + 4) != Some(IMAGE_MAGIC.as_slice()) {
        bail!(
            "{} is not an arm64 Image (no ARM\\x64 magic at 0x38)",
            vmlinuz.display()
        );
    }
    std::fs::write(dest, image).with_context(|| format!("writing {}", dest.display()))
}

fn find_vmlinuz(boot: &Path) -> Result<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(boot).with_context(|| format!("reading {}", boot.display()))? {
        let path = entry?.path();
        if path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("vmlinuz-"))
        {
            found.push(path);
        }
    }
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => bail!(
            "expected one vmlinuz-* in {}, found {}",
            boot.display(),
            found.len()
        ),
    }
}

fn gunzip(path: &Path) -> Result<Vec<u8>> {
    let output = Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
        .context("starting gzip")?;
    if !output.status.success() {
        bail!("gzip -dc {} failed ({})", path.display(), output.status);
    }
    Ok(output.stdout)
}
