//! The arm64 Linux boot protocol as far as placing a kernel goes: the 64-byte Image header
//! (Linux `Documentation/arch/arm64/booting.rst`, "Call the kernel image") with its
//! `text_offset` and `image_size`.
//!
//! The host tool reads the header when it loads a VM's image; the configuration then places
//! the kernel at the 2 MiB-aligned start of the VM's first region plus `text_offset` and
//! keeps `image_size` bytes (the kernel's .bss included) free for it. This module only decodes
//! bytes; it never decides where anything else (initrd, device tree) goes.

use serde::{Deserialize, Serialize};

/// The fields of an arm64 Image header that place a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelHeader {
    /// Offset of the image from a 2 MiB-aligned base of RAM.
    pub text_offset: u64,
    /// Bytes the kernel occupies from its load address, .bss included.
    pub image_size: u64,
}

/// Offset and value of the header magic ("ARM\x64").
const MAGIC_OFFSET: usize = 0x38;
const MAGIC: [u8; 4] = *b"ARM\x64";
const TEXT_OFFSET_AT: usize = 8;
const IMAGE_SIZE_AT: usize = 16;
/// booting.rst: a header with `image_size` 0 is from a kernel older than 3.17, whose
/// `text_offset` is 0x80000 whatever the field says.
const LEGACY_TEXT_OFFSET: u64 = 0x8_0000;

impl KernelHeader {
    /// Alignment of the RAM base the kernel's `text_offset` counts from.
    pub const BASE_ALIGN: u64 = 0x20_0000;

    /// The header at the start of `image`, or `None` when the file is not an arm64 Image.
    pub fn parse(image: &[u8]) -> Option<KernelHeader> {
        if image.get(MAGIC_OFFSET..MAGIC_OFFSET + 4)? != MAGIC {
            return None;
        }
        let field = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(image.get(at..at + 8)?);
            Some(u64::from_le_bytes(b))
        };
        let image_size = field(IMAGE_SIZE_AT)?;
        if image_size == 0 {
            return Some(KernelHeader {
                text_offset: LEGACY_TEXT_OFFSET,
                image_size: image.len() as u64,
            });
        }
        Some(KernelHeader {
            text_offset: field(TEXT_OFFSET_AT)?,
            image_size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn header(text_offset: u64, image_size: u64) -> alloc::vec::Vec<u8> {
        let mut h = vec![0u8; 64];
        h[8..16].copy_from_slice(&text_offset.to_le_bytes());
        h[16..24].copy_from_slice(&image_size.to_le_bytes());
        h[0x38..0x3c].copy_from_slice(b"ARM\x64");
        h
    }

    #[test]
    fn a_kernel_header_is_read() {
        assert_eq!(
            KernelHeader::parse(&header(0, 0x230_0000)),
            Some(KernelHeader {
                text_offset: 0,
                image_size: 0x230_0000
            })
        );
    }

    #[test]
    fn an_old_kernel_gets_the_legacy_offset() {
        let h = header(0x1234, 0);
        assert_eq!(
            KernelHeader::parse(&h),
            Some(KernelHeader {
                text_offset: 0x8_0000,
                image_size: 64
            })
        );
    }

    #[test]
    fn other_files_have_no_header() {
        assert_eq!(KernelHeader::parse(&[0u8; 64]), None);
        assert_eq!(KernelHeader::parse(&header(0, 1)[..0x3a]), None);
        assert_eq!(KernelHeader::parse(b"short"), None);
    }
}
