//! Where things are: the workspace, Cargo's output for the AArch64 crates, and `build/`.
//!
//! Every path the host tool writes is derived here, so the layout of `build/` is defined in
//! one place. Nothing here touches the file system.

use std::env;
use std::path::{Path, PathBuf};

use partita_core::board::Platform;

/// The Rust target of the bare-metal guests.
pub const GUEST_TARGET: &str = "aarch64-unknown-none";
/// The Rust target of the hypervisor: its code never touches the FP/SIMD registers, so a
/// guest's stay live while Partita handles an exit and move only with a vCPU switch.
pub const HYPERVISOR_TARGET: &str = "aarch64-unknown-none-softfloat";
/// Every Rust target setup installs.
pub const TARGETS: [&str; 2] = [GUEST_TARGET, HYPERVISOR_TARGET];

/// The workspace root (the parent of the `xtask` crate).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Cargo's target directory, honouring `CARGO_TARGET_DIR`.
fn target_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// Cargo's target directory for the hypervisor built for `platform`: one per board, so
/// building for one never rebuilds another's.
pub fn hypervisor_target_dir(platform: Platform) -> PathBuf {
    target_dir().join("board").join(platform.name())
}

/// Cargo's target directory for the guests built for `platform`'s GIC (a GICv2 board's
/// FreeRTOS image).
pub fn guest_target_dir(platform: Platform) -> PathBuf {
    target_dir().join("guest").join(platform.name())
}

/// The release ELF of binary `bin` built for Rust target `target`.
pub fn release_elf(target: &str, bin: &str) -> PathBuf {
    target_dir().join(target).join("release").join(bin)
}

/// Generated files: boot images, flattened guests, scenario images.
pub fn build_dir() -> PathBuf {
    root().join("build")
}

pub fn boot_image() -> PathBuf {
    build_dir().join("partita.img")
}

pub fn guest_image(name: &str) -> PathBuf {
    build_dir().join("guests").join(format!("{name}.bin"))
}

/// Where an interactive run keeps each VM's whole console output (`<vm>.log`).
pub fn run_logs() -> PathBuf {
    build_dir().join("run")
}

/// Where a Xen boot of `run` or a scenario writes its device trees.
pub fn xen_files() -> PathBuf {
    build_dir().join("xen")
}

pub fn scenario_image(name: &str) -> PathBuf {
    build_dir().join("tests").join(format!("{name}.img"))
}

/// Downloads and what is made from them (Debian packages, the Linux guest); git-ignored.
pub fn cache_dir() -> PathBuf {
    root().join("cache")
}

pub fn default_config() -> PathBuf {
    shown(&root().join("configs").join("default.toml"))
}

/// `path` relative to the current directory when it lies below it, for messages.
pub fn shown(path: &Path) -> PathBuf {
    env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
}
