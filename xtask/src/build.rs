//! Building Partita: the hypervisor and guest crates with Cargo, the flattened guest images,
//! and the boot image that joins the hypervisor with a configuration's bundle.
//!
//! Guests built from this workspace are listed in `GUESTS`; a configuration names their
//! flattened images (`build/guests/<name>.bin`) or any other file. Cargo output is shown as
//! is; this module never edits sources or configurations.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use partita_core::board::{Gic, Platform};
use partita_core::config::ConsoleView;

use crate::config::{self, System};
use crate::elf::Executable;
use crate::image::{self, BootImage};
use crate::linux;
use crate::paths::{self, root, GUEST_TARGET, HYPERVISOR_TARGET};
use crate::process::{run, step};

/// A bare-metal guest crate of this workspace.
pub struct Guest {
    /// Image name: `build/guests/<name>.bin`.
    pub name: &'static str,
    pub package: &'static str,
    pub bin: &'static str,
}

/// The FreeRTOS guest's package and binary (also its image name).
const FREERTOS: &str = "freertos";
const FREERTOS_PACKAGE: &str = "partita-freertos";

pub const GUESTS: [Guest; 2] = [
    Guest {
        name: "probe",
        package: "partita-probe",
        bin: "probe",
    },
    Guest {
        name: FREERTOS,
        package: FREERTOS_PACKAGE,
        bin: FREERTOS,
    },
];

/// The hypervisor package and its binary.
const HYPERVISOR_PACKAGE: &str = "partita";
const HYPERVISOR_BIN: &str = "partita";

fn cargo_build_release(package: &str, target: &str) -> Result<()> {
    run(Command::new("cargo")
        .args(["build", "--release", "--target", target, "-p", package])
        .current_dir(root()))
}

/// Builds the hypervisor for `platform` (linked at its board's address, describing that
/// board), each platform in its own Cargo target directory so none rebuilds another's.
pub fn hypervisor(platform: Platform) -> Result<()> {
    step(format!("building hypervisor for {}", platform.name()));
    run(Command::new("cargo")
        .args(["build", "--release", "--target", HYPERVISOR_TARGET])
        .args(["-p", HYPERVISOR_PACKAGE])
        .arg("--target-dir")
        .arg(paths::hypervisor_target_dir(platform))
        .env("PARTITA_PLATFORM", platform.name())
        .current_dir(root()))
}

/// Builds every guest and flattens it (the hypervisor is built with each boot image, for
/// its configuration's board). The FreeRTOS guest is built once more for each GICv2 board
/// (`freertos_gicv2`).
pub fn binaries() -> Result<()> {
    for guest in &GUESTS {
        step(format!("building guest {}", guest.name));
        cargo_build_release(guest.package, GUEST_TARGET)?;
        flatten(&paths::release_elf(GUEST_TARGET, guest.bin), guest.name)?;
    }
    for platform in Platform::ALL {
        if matches!(platform.board().gic, Gic::V2(_)) {
            freertos_gicv2(platform)?;
        }
    }
    Ok(())
}

/// The FreeRTOS guest for a GICv2 board, `build/guests/freertos-<board>.bin`: the
/// ARM_AARCH64 port, compiled for the distributor and CPU interface the board's guests see,
/// in a Cargo target directory of its own (its features and addresses differ).
fn freertos_gicv2(platform: Platform) -> Result<()> {
    let name = format!("{FREERTOS}-{}", platform.name());
    step(format!("building guest {name}"));
    let target_dir = paths::guest_target_dir(platform);
    let [distributor, cpu_interface] = platform.board().gic.guest_windows(1);
    run(Command::new("cargo")
        .args(["build", "--release", "--target", GUEST_TARGET])
        .args(["-p", FREERTOS_PACKAGE, "--features", "gicv2"])
        .arg("--target-dir")
        .arg(&target_dir)
        .env("PARTITA_GUEST_GICD", format!("{:#x}", distributor.base))
        .env("PARTITA_GUEST_GICC", format!("{:#x}", cpu_interface.base))
        .current_dir(root()))?;
    let elf = target_dir.join(GUEST_TARGET).join("release").join(FREERTOS);
    flatten(&elf, &name)
}

/// Flattens the guest ELF at `elf_path` into `build/guests/<name>.bin`.
fn flatten(elf_path: &Path, name: &str) -> Result<()> {
    let elf = fs::read(elf_path).with_context(|| format!("cannot read {}", elf_path.display()))?;
    let flat = Executable::parse(&elf)
        .and_then(|e| e.flatten_guest())
        .with_context(|| format!("cannot flatten {}", elf_path.display()))?;
    write(&paths::guest_image(name), &flat)
}

/// The path of the hypervisor ELF built for `platform`.
pub fn hypervisor_elf(platform: Platform) -> std::path::PathBuf {
    paths::hypervisor_target_dir(platform)
        .join(HYPERVISOR_TARGET)
        .join("release")
        .join(HYPERVISOR_BIN)
}

/// Loads `config_file` and writes its boot image to `out`. With a `job`, every Linux VM runs
/// it instead of its shell (the job goes on its kernel command line).
pub fn boot_image(
    config_file: &Path,
    out: &Path,
    job: Option<&str>,
    console: &ConsoleUse,
) -> Result<System> {
    boot_image_with(config_file, out, job, None, console)
}

/// How the console of a boot image is used.
#[derive(Clone, Debug)]
pub enum ConsoleUse {
    /// By a person: the configuration's `[console] view`; with a folder, Partita also writes
    /// each VM's whole output there as `<vm>.log` (through semihosting: QEMU only).
    AsConfigured { log_dir: Option<PathBuf> },
    /// Read line by line by a test or the bench: every VM's lines tagged, from the start.
    AllTagged,
}

/// `boot_image`, with the boot arguments of VM `bootargs.0` replaced by `bootargs.1` (the
/// bench's FreeRTOS VM beside a Linux load).
pub fn boot_image_with(
    config_file: &Path,
    out: &Path,
    job: Option<&str>,
    bootargs: Option<(&str, &str)>,
    console: &ConsoleUse,
) -> Result<System> {
    step(format!("checking configuration {}", config_file.display()));
    let mut system = config::load(config_file)?;
    match console {
        ConsoleUse::AllTagged => system.config.console.view = ConsoleView::All,
        ConsoleUse::AsConfigured { log_dir: Some(dir) } => {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
            let dir = dir
                .canonicalize()
                .with_context(|| format!("cannot resolve {}", dir.display()))?;
            system.config.console.log_dir = Some(dir.to_string_lossy().into_owned());
        }
        ConsoleUse::AsConfigured { log_dir: None } => {}
    }
    if let Some(job) = job {
        give_linux_job(&mut system, job)?;
    }
    if let Some((name, args)) = bootargs {
        let Some(vm) = system.config.vms.iter_mut().find(|vm| vm.name == name) else {
            bail!("{} has no vm \"{name}\"", system.file.display());
        };
        vm.bootargs = args.to_owned();
    }
    let platform = system.config.board.platform;
    hypervisor(platform)?;
    let elf_path = hypervisor_elf(platform);
    let elf = fs::read(&elf_path).with_context(|| format!("cannot read {}", elf_path.display()))?;
    let BootImage {
        bytes,
        hypervisor_len,
        bundle_len,
    } = image::assemble(&system, &elf)?;
    step(format!(
        "writing {} ({} bytes: hypervisor {hypervisor_len}, bundle {bundle_len})",
        paths::shown(out).display(),
        bytes.len()
    ));
    write(out, &bytes)?;
    Ok(system)
}

/// Appends `partita.job=<hex>` to the bootargs of every VM that boots an arm64 Linux Image.
fn give_linux_job(system: &mut System, job: &str) -> Result<()> {
    let arg = linux::job_bootarg(job);
    let mut linux_vms = 0;
    for vm in system
        .config
        .vms
        .iter_mut()
        .filter(|vm| vm.image.kernel.is_some())
    {
        vm.bootargs = format!("{} {arg}", vm.bootargs).trim_start().to_owned();
        if vm.bootargs.len() > linux::MAX_BOOTARGS {
            bail!(
                "--linux-cmd: vm \"{}\": the kernel command line would be {} bytes, more than {} (the job is hex encoded: 2 bytes per character)",
                vm.name,
                vm.bootargs.len(),
                linux::MAX_BOOTARGS
            );
        }
        linux_vms += 1;
    }
    if linux_vms == 0 {
        bail!(
            "--linux-cmd: {} has no Linux VM (no VM image is an arm64 Linux Image)",
            system.file.display()
        );
    }
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}
