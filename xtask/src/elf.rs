//! Flattening ELF executables into raw memory images, as `objcopy -O binary` does.
//!
//! A guest image starts at its lowest loadable physical address and ends with its last file
//! byte. The hypervisor image starts at its load address and ends at the linker symbol
//! `__bundle_start`, where the host tool appends the bundle. Gaps are zero. This module only
//! reads ELF files; it never guesses an address the file does not state.

use anyhow::{bail, ensure, Context, Result};
use object::elf::{EM_AARCH64, PT_LOAD};
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
use object::{Endianness, Object, ObjectSection, ObjectSymbol, SymbolKind};

use rustc_demangle::demangle;

/// The symbol that marks the end of the hypervisor image and the start of the bundle.
pub const BUNDLE_START: &str = "__bundle_start";

/// File bytes of one PT_LOAD segment placed at its physical address.
#[derive(Debug)]
pub struct Segment<'a> {
    pub paddr: u64,
    pub bytes: &'a [u8],
}

/// A parsed AArch64 executable.
pub struct Executable<'a> {
    file: ElfFile64<'a, Endianness>,
    pub segments: Vec<Segment<'a>>,
}

impl<'a> Executable<'a> {
    pub fn parse(data: &'a [u8]) -> Result<Self> {
        let file = ElfFile64::<Endianness>::parse(data).context("not a 64-bit ELF file")?;
        let endian = file.endian();
        let header = file.elf_header();
        ensure!(
            header.e_machine(endian) == EM_AARCH64,
            "not an AArch64 executable (e_machine {})",
            header.e_machine(endian)
        );
        let mut segments = Vec::new();
        for ph in file.elf_program_headers() {
            if ph.p_type(endian) != PT_LOAD || ph.p_memsz(endian) == 0 {
                continue;
            }
            let bytes = ph
                .data(endian, data)
                .map_err(|()| anyhow::anyhow!("a PT_LOAD segment lies outside the file"))?;
            segments.push(Segment {
                paddr: ph.p_paddr(endian),
                bytes,
            });
        }
        ensure!(!segments.is_empty(), "the ELF file has no loadable segment");
        Ok(Executable { file, segments })
    }

    /// The address of a symbol, if the file defines it.
    pub fn symbol(&self, name: &str) -> Option<u64> {
        self.file.symbol_by_name(name).map(|s| s.address())
    }

    /// Every symbol in `.text`: (address, size, demangled name without hash), sorted by
    /// address. A symbol without a size (assembly labels such as the vectors and the world
    /// switch) reaches to the next symbol.
    pub fn functions(&self) -> Vec<(u64, u64, String)> {
        let (lo, hi) = self.text().unwrap_or((0, 0));
        let mut functions: Vec<(u64, u64, String)> = self
            .file
            .symbols()
            .filter(|s| s.kind() != SymbolKind::Section && (lo..hi).contains(&s.address()))
            .filter_map(|s| {
                // `$x`/`$d` are the AArch64 ELF mapping symbols (code/data), not functions.
                let name = s.name().ok().filter(|n| !n.starts_with('$'))?;
                Some((s.address(), s.size(), format!("{:#}", demangle(name))))
            })
            .collect();
        // Of several names at one address, the sized one (a function, not a label) stays.
        functions.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        functions.dedup_by_key(|f| f.0);
        let starts: Vec<u64> = functions.iter().map(|f| f.0).collect();
        for (i, function) in functions.iter_mut().enumerate() {
            if function.1 == 0 {
                function.1 = starts.get(i + 1).map_or(0, |next| next - function.0);
            }
        }
        functions
    }

    /// The address range of the `.text` section.
    pub fn text(&self) -> Option<(u64, u64)> {
        let text = self.file.section_by_name(".text")?;
        Some((text.address(), text.address() + text.size()))
    }

    /// The guest image: from the lowest segment address to the last file byte.
    pub fn flatten_guest(&self) -> Result<Vec<u8>> {
        let loaded = || self.segments.iter().filter(|s| !s.bytes.is_empty());
        let start = loaded().map(|s| s.paddr).min().unwrap_or(0);
        let end = loaded()
            .map(|s| s.paddr + s.bytes.len() as u64)
            .max()
            .unwrap_or(start);
        flatten(&self.segments, start, end)
    }

    /// The hypervisor image: from `load` up to `__bundle_start`.
    pub fn flatten_hypervisor(&self, load: u64) -> Result<Vec<u8>> {
        let end = self
            .symbol(BUNDLE_START)
            .with_context(|| format!("the hypervisor ELF defines no symbol `{BUNDLE_START}`"))?;
        ensure!(
            end > load,
            "`{BUNDLE_START}` ({end:#x}) is not above the load address {load:#x}"
        );
        flatten(&self.segments, load, end)
    }
}

/// Copies every segment's file bytes into a zeroed buffer covering `start..end`.
pub fn flatten(segments: &[Segment], start: u64, end: u64) -> Result<Vec<u8>> {
    let len = usize::try_from(end - start).context("image too large")?;
    let mut out = vec![0u8; len];
    for s in segments.iter().filter(|s| !s.bytes.is_empty()) {
        let s_end = s.paddr + s.bytes.len() as u64;
        if s.paddr < start || s_end > end {
            bail!(
                "segment {:#x}..{s_end:#x} lies outside the image range {start:#x}..{end:#x}",
                s.paddr
            );
        }
        let at = (s.paddr - start) as usize;
        out[at..at + s.bytes.len()].copy_from_slice(s.bytes);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal little-endian AArch64 ELF64 executable with the given (paddr, bytes, memsz)
    /// PT_LOAD segments and no sections.
    fn synthetic_elf(segments: &[(u64, &[u8], u64)]) -> Vec<u8> {
        let phoff = 64u64;
        let mut data_off = phoff + 56 * segments.len() as u64;
        let mut out = Vec::new();
        out.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
        out.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        out.extend_from_slice(&EM_AARCH64.0.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&segments[0].0.to_le_bytes()); // e_entry
        out.extend_from_slice(&phoff.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
        out.extend_from_slice(&0u32.to_le_bytes()); // e_flags
        for half in [64u16, 56, segments.len() as u16, 64, 0, 0] {
            out.extend_from_slice(&half.to_le_bytes());
        }
        for &(paddr, bytes, memsz) in segments {
            out.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
            out.extend_from_slice(&5u32.to_le_bytes()); // R+X
            for word in [data_off, paddr, paddr, bytes.len() as u64, memsz, 0x1000] {
                out.extend_from_slice(&word.to_le_bytes());
            }
            data_off += bytes.len() as u64;
        }
        for &(_, bytes, _) in segments {
            out.extend_from_slice(bytes);
        }
        out
    }

    #[test]
    fn guests_are_flattened_from_their_lowest_segment_with_zeroed_gaps() {
        let elf = synthetic_elf(&[(0x4000_0010, b"data", 4), (0x4000_0000, b"code", 0x100)]);
        let exe = Executable::parse(&elf).unwrap();
        let flat = exe.flatten_guest().unwrap();
        assert_eq!(flat.len(), 0x14);
        assert_eq!(&flat[..4], b"code");
        assert_eq!(&flat[4..0x10], &[0; 12]);
        assert_eq!(&flat[0x10..], b"data");
    }

    #[test]
    fn bss_only_segments_add_nothing() {
        let elf = synthetic_elf(&[(0x1000, b"ab", 2), (0x2000, b"", 0x1000)]);
        let flat = Executable::parse(&elf).unwrap().flatten_guest().unwrap();
        assert_eq!(flat, b"ab");
    }

    #[test]
    fn the_hypervisor_needs_its_bundle_symbol() {
        let elf = synthetic_elf(&[(0x4020_0000, b"code", 4)]);
        let err = Executable::parse(&elf)
            .unwrap()
            .flatten_hypervisor(0x4020_0000)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the hypervisor ELF defines no symbol `__bundle_start`"
        );
    }

    #[test]
    fn flatten_pads_to_the_end_and_refuses_segments_outside() {
        let seg = [Segment {
            paddr: 0x100,
            bytes: b"xy",
        }];
        assert_eq!(flatten(&seg, 0x100, 0x104).unwrap(), b"xy\0\0");
        assert!(flatten(&seg, 0x100, 0x101).is_err());
        assert!(flatten(&seg, 0x101, 0x200).is_err());
    }

    #[test]
    fn other_architectures_and_garbage_are_refused() {
        let mut elf = synthetic_elf(&[(0, b"x", 1)]);
        elf[18] = 62; // EM_X86_64
        assert!(Executable::parse(&elf).is_err());
        assert!(Executable::parse(b"not an elf").is_err());
    }
}
