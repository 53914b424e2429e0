//! The boot image `build/partita.img`: the flattened hypervisor followed by the bundle.
//!
//! The hypervisor ELF is flattened from its load address to `__bundle_start`, the bundle
//! (core's format: configuration + guest images) is appended, and the arm64 Image header's
//! `image_size` field is patched to the final length so a boot loader reserves all of it.
//! The whole image must fit inside the memory the board keeps for Partita.

use anyhow::{ensure, Context, Result};
use partita_core::board::Board;
use partita_core::bundle::{self, VmImages};
use partita_core::config::ConfigError;

use crate::config::System;
use crate::elf::Executable;

/// Offset of `image_size` in the arm64 Linux Image header.
const IMAGE_SIZE_OFFSET: usize = 16;
/// Offset and value of the arm64 Image header magic.
const MAGIC_OFFSET: usize = 0x38;
const MAGIC: &[u8; 4] = b"ARM\x64";

pub struct BootImage {
    pub bytes: Vec<u8>,
    pub hypervisor_len: usize,
    pub bundle_len: usize,
}

/// Builds the boot image of `system` around the hypervisor ELF `hypervisor`.
pub fn assemble(system: &System, hypervisor: &[u8]) -> Result<BootImage> {
    let board = system.config.board.platform.board();
    let mut bytes = Executable::parse(hypervisor)
        .and_then(|e| e.flatten_hypervisor(board.hypervisor_load))
        .context("cannot flatten the hypervisor ELF")?;
    ensure!(
        bytes.get(MAGIC_OFFSET..MAGIC_OFFSET + 4) == Some(MAGIC),
        "the hypervisor has no arm64 Image header (magic \"ARM\\x64\" at {MAGIC_OFFSET:#x})"
    );
    let blob = bundle(system);
    let hypervisor_len = bytes.len();
    check_fits(board, hypervisor_len, blob.len()).map_err(|e| system.error(e))?;
    bytes.extend_from_slice(&blob);
    let total = bytes.len() as u64;
    bytes[IMAGE_SIZE_OFFSET..IMAGE_SIZE_OFFSET + 8].copy_from_slice(&total.to_le_bytes());
    Ok(BootImage {
        bytes,
        hypervisor_len,
        bundle_len: blob.len(),
    })
}

/// The bundle of `system`: its configuration and every VM's image and initrd.
pub fn bundle(system: &System) -> Vec<u8> {
    let images: Vec<VmImages> = system
        .images
        .iter()
        .zip(&system.initrds)
        .map(|(image, initrd)| VmImages {
            image,
            initrd: initrd.as_deref(),
        })
        .collect();
    bundle::encode(&system.config, &images)
}

/// The hypervisor image and the bundle must end inside `board.hypervisor`.
pub fn check_fits(
    board: &Board,
    hypervisor_len: usize,
    bundle_len: usize,
) -> Result<(), ConfigError> {
    let room = board
        .hypervisor
        .end()
        .map_or(0, |end| end.saturating_sub(board.hypervisor_load));
    let needed = (hypervisor_len + bundle_len) as u64;
    if needed <= room {
        return Ok(());
    }
    Err(ConfigError::new(
        "vm",
        format!(
            "the boot image is {needed} bytes (hypervisor {hypervisor_len}, bundle of configuration and images {bundle_len}), but only {room} bytes fit between {:#x} and the end of Partita's memory at {:#x}",
            board.hypervisor_load,
            board.hypervisor.base + board.hypervisor.size
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use partita_core::board::QEMU_VIRT;

    #[test]
    fn the_image_must_end_inside_partitas_memory() {
        let room = 0x6000_0000 - 0x4020_0000;
        assert!(check_fits(&QEMU_VIRT, 0x10_0000, room - 0x10_0000).is_ok());
        let err = check_fits(&QEMU_VIRT, 0x10_0000, room - 0x10_0000 + 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "vm: the boot image is 534773761 bytes (hypervisor 1048576, bundle of configuration and images 533725185), but only 534773760 bytes fit between 0x40200000 and the end of Partita's memory at 0x60000000"
        );
    }
}
