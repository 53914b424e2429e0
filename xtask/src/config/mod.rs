//! Loading a system configuration file: TOML text to a checked `SystemConfig` plus the guest
//! images it names.
//!
//! The steps run in order and stop at the first mistake: read the file, parse it
//! (`partita_config`: TOML syntax and the schema), read every image and initrd (paths relative
//! to the file's directory; an image's arm64 Image header, if any, places it as a Linux
//! kernel), plan physical memory and run core's validation. Every mistake becomes one `LoadError` line
//! `<file>: <key>: <problem>`; nothing here may panic on what the file says.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use partita_core::boot::KernelHeader;
use partita_core::config::{self, ConfigError, SystemConfig};

/// A configuration with its images, ready to bundle.
pub struct System {
    /// The file as the user named it, for messages.
    pub file: PathBuf,
    pub config: SystemConfig,
    /// `images[i]` is VM `i`'s image.
    pub images: Vec<Vec<u8>>,
    /// `initrds[i]` is VM `i`'s initrd, if it has one.
    pub initrds: Vec<Option<Vec<u8>>>,
}

/// A mistake in a configuration file, printed as one line: `<file>: <key>: <problem>`, or
/// `<file>: <problem>` when the file itself cannot be read.
#[derive(Debug)]
pub struct LoadError {
    pub file: PathBuf,
    pub error: ConfigError,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.error.key.is_empty() {
            write!(f, "{}: {}", self.file.display(), self.error.message)
        } else {
            write!(f, "{}: {}", self.file.display(), self.error)
        }
    }
}

impl std::error::Error for LoadError {}

impl System {
    /// Attaches `error` to this system's file.
    pub fn error(&self, error: ConfigError) -> LoadError {
        LoadError {
            file: self.file.clone(),
            error,
        }
    }
}

/// Reads, parses and validates `file` and reads the images it names.
pub fn load(file: &Path) -> Result<System, LoadError> {
    let at = |error| LoadError {
        file: file.to_path_buf(),
        error,
    };
    let text = fs::read_to_string(file)
        .map_err(|e| at(ConfigError::new("", format!("cannot read: {e}"))))?;
    let mut config = partita_config::parse(&text).map_err(at)?;
    let dir = file.parent().unwrap_or(Path::new("."));
    let images = read_images(&mut config, dir).map_err(at)?;
    let initrds = read_initrds(&mut config, dir).map_err(at)?;
    config::plan_memory(&mut config).map_err(at)?;
    config::validate(&config).map_err(at)?;
    Ok(System {
        file: file.to_path_buf(),
        config,
        images,
        initrds,
    })
}

fn read_images(config: &mut SystemConfig, dir: &Path) -> Result<Vec<Vec<u8>>, ConfigError> {
    config
        .vms
        .iter_mut()
        .enumerate()
        .map(|(i, vm)| {
            let bytes = fs::read(dir.join(&vm.image.path)).map_err(|e| {
                ConfigError::new(
                    format!("vm[{i}].image"),
                    format!("cannot read \"{}\": {e}", vm.image.path),
                )
            })?;
            vm.image.size = bytes.len() as u64;
            vm.image.kernel = KernelHeader::parse(&bytes);
            Ok(bytes)
        })
        .collect()
}

fn read_initrds(
    config: &mut SystemConfig,
    dir: &Path,
) -> Result<Vec<Option<Vec<u8>>>, ConfigError> {
    config
        .vms
        .iter_mut()
        .enumerate()
        .map(|(i, vm)| {
            let Some(initrd) = vm.initrd.as_mut() else {
                return Ok(None);
            };
            let bytes = fs::read(dir.join(&initrd.path)).map_err(|e| {
                ConfigError::new(
                    format!("vm[{i}].initrd"),
                    format!("cannot read \"{}\": {e}", initrd.path),
                )
            })?;
            initrd.size = bytes.len() as u64;
            Ok(Some(bytes))
        })
        .collect()
}
