//! Reads what an AArch64 ELF file needs at run time: its `DT_NEEDED` shared
//! libraries and its program interpreter. It only reads files; it never
//! decides where a library comes from (see `libraries`).

use anyhow::{Context, Result};
use object::read::elf::{ElfFile64, ProgramHeader};
use object::{Endianness, Object};
use std::path::Path;

/// The run-time needs of one dynamically or statically linked ELF file.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RuntimeNeeds {
    /// Sonames from `DT_NEEDED`, in file order.
    pub libraries: Vec<String>,
    /// Absolute path from `PT_INTERP`, if the file has one.
    pub interpreter: Option<String>,
}

/// Parses `path` as a 64-bit ELF file and returns what it needs to run.
pub fn runtime_needs(path: &Path) -> Result<RuntimeNeeds> {
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&data).with_context(|| format!("parsing ELF file {}", path.display()))
}

fn parse(data: &[u8]) -> Result<RuntimeNeeds> {
    let file = ElfFile64::<Endianness>::parse(data)?;
    let mut libraries = Vec::new();
    for library in file.import_libraries()? {
        libraries.push(text(library?.name())?);
    }
    let endian = file.endian();
    let mut interpreter = None;
    for header in file.elf_program_headers() {
        if let Some(path) = header.interpreter(endian, data)? {
            interpreter = Some(text(path)?);
        }
    }
    Ok(RuntimeNeeds {
        libraries,
        interpreter,
    })
}

fn text(bytes: &[u8]) -> Result<String> {
    Ok(std::str::from_utf8(bytes)
        .context("name is not UTF-8")?
        .to_owned())
}
