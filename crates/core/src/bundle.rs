//! The bundle: the validated configuration and every guest image in one blob that the host
//! tool appends to the hypervisor image, so one file boots the whole system (as Bao does).
//!
//! Layout (little endian): a 32-byte header (`MAGIC`, version, configuration length, total
//! length), the configuration encoded with postcard, then each VM's images in VM order (its
//! program, then its initrd when it has one), each starting on a 4 KiB boundary. Image sizes
//! come from the configuration.

use alloc::vec::Vec;

use crate::config::{SystemConfig, PAGE_SIZE};

pub const MAGIC: [u8; 8] = *b"PARTITA\0";
pub const VERSION: u32 = 4;
pub const HEADER_LEN: usize = 32;

#[derive(Debug, PartialEq, Eq)]
pub enum BundleError {
    /// No bundle header: the hypervisor image was not built by the host tool.
    BadMagic,
    /// Built by another version of the host tool.
    Version(u32),
    /// The lengths in the header or the configuration do not fit the blob.
    Truncated,
    /// The configuration does not decode.
    Config,
}

/// The files one VM boots, borrowed from the blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmImages<'a> {
    pub image: &'a [u8],
    pub initrd: Option<&'a [u8]>,
}

/// A parsed bundle; images borrow from the blob.
pub struct Bundle<'a> {
    pub config: SystemConfig,
    images: Vec<VmImages<'a>>,
}

impl<'a> Bundle<'a> {
    /// The program and initrd of VM `vm`.
    pub fn images(&self, vm: usize) -> Option<VmImages<'a>> {
        self.images.get(vm).copied()
    }

    /// Parses a bundle that starts at `blob[0]`; `blob` may extend past its end.
    pub fn parse(blob: &'a [u8]) -> Result<Bundle<'a>, BundleError> {
        let total = total_len(blob)?;
        let blob = blob.get(..total).ok_or(BundleError::Truncated)?;
        let config_len = read_u64(blob, 16) as usize;
        let config_end = HEADER_LEN
            .checked_add(config_len)
            .ok_or(BundleError::Truncated)?;
        let config_bytes = blob
            .get(HEADER_LEN..config_end)
            .ok_or(BundleError::Truncated)?;
        let config: SystemConfig =
            postcard::from_bytes(config_bytes).map_err(|_| BundleError::Config)?;
        let mut images = Vec::with_capacity(config.vms.len());
        let mut offset = config_end;
        for vm in &config.vms {
            let image = next_image(blob, &mut offset, vm.image.size)?;
            let initrd = match &vm.initrd {
                Some(initrd) => Some(next_image(blob, &mut offset, initrd.size)?),
                None => None,
            };
            images.push(VmImages { image, initrd });
        }
        Ok(Bundle { config, images })
    }
}

/// The `size` bytes at the next page boundary from `offset`; advances `offset` past them.
fn next_image<'a>(blob: &'a [u8], offset: &mut usize, size: u64) -> Result<&'a [u8], BundleError> {
    let start = align_page(*offset).ok_or(BundleError::Truncated)?;
    let size = usize::try_from(size).map_err(|_| BundleError::Truncated)?;
    let end = start.checked_add(size).ok_or(BundleError::Truncated)?;
    let bytes = blob.get(start..end).ok_or(BundleError::Truncated)?;
    *offset = end;
    Ok(bytes)
}

/// Total bundle length from its header, so the reader knows how much memory to look at.
pub fn total_len(header: &[u8]) -> Result<usize, BundleError> {
    if header.len() < HEADER_LEN || header[..8] != MAGIC {
        return Err(BundleError::BadMagic);
    }
    let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if version != VERSION {
        return Err(BundleError::Version(version));
    }
    // A total shorter than the header itself cannot hold the lengths read next.
    match usize::try_from(read_u64(header, 24)) {
        Ok(total) if total >= HEADER_LEN => Ok(total),
        _ => Err(BundleError::Truncated),
    }
}

fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

fn align_page(n: usize) -> Option<usize> {
    n.checked_next_multiple_of(PAGE_SIZE as usize)
}

/// Builds a bundle. `images[i]` holds VM `i`'s files, which must match its configured sizes.
pub fn encode(config: &SystemConfig, images: &[VmImages]) -> Vec<u8> {
    assert_eq!(config.vms.len(), images.len(), "one image per VM");
    let config_bytes = postcard::to_allocvec(config).expect("a configuration always encodes");
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(config_bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&config_bytes);
    for (vm, files) in config.vms.iter().zip(images) {
        let initrd_size = vm.initrd.as_ref().map(|i| i.size);
        assert_eq!(
            (vm.image.size, initrd_size),
            (
                files.image.len() as u64,
                files.initrd.map(|i| i.len() as u64)
            ),
            "image sizes match the configuration"
        );
        for bytes in core::iter::once(files.image).chain(files.initrd) {
            out.resize(align_page(out.len()).expect("bundle fits in memory"), 0);
            out.extend_from_slice(bytes);
        }
    }
    let total = out.len() as u64;
    out[24..32].copy_from_slice(&total.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::Platform;
    use crate::config::{
        BoardConfig, ConsoleConfig, EndAction, ImageConfig, InitrdConfig, MemoryRegion,
        ResetAction, VmConfig, VmKind,
    };
    use alloc::vec;

    fn config(sizes: &[u64]) -> SystemConfig {
        SystemConfig {
            board: BoardConfig {
                platform: Platform::QemuVirt,
                cpus: 1,
                slice_us: crate::sched::DEFAULT_SLICE_US,
            },
            vms: sizes
                .iter()
                .enumerate()
                .map(|(i, &size)| VmConfig {
                    name: alloc::format!("vm{i}"),
                    kind: VmKind::Gpos,
                    priority: 0,
                    cpus: vec![0],
                    memory: vec![MemoryRegion {
                        base: 0,
                        size: 0x1000,
                        phys: Some(0x6000_0000),
                    }],
                    image: ImageConfig {
                        path: "x".into(),
                        load: None,
                        size,
                        kernel: None,
                    },
                    initrd: None,
                    bootargs: "console=ttyAMA0".into(),
                    devices: vec![],
                    on_reset: ResetAction::Restart,
                    on_fault: EndAction::Stop,
                    on_poweroff: EndAction::Stop,
                    timer: crate::config::TimerMode::Virtual,
                    irqs: vec![],
                    migrate: false,
                    timer_advance_ns: 0,
                })
                .collect(),
            channels: vec![],
            fabric: None,
            console: ConsoleConfig::default(),
        }
    }

    fn only(image: &[u8]) -> VmImages<'_> {
        VmImages {
            image,
            initrd: None,
        }
    }

    #[test]
    fn round_trip_keeps_config_and_images() {
        let mut cfg = config(&[3, 5000]);
        cfg.vms[0].initrd = Some(InitrdConfig {
            path: "initrd".into(),
            size: 2,
        });
        let a = [1u8, 2, 3];
        let rd = [9u8, 8];
        let b = vec![7u8; 5000];
        let files = [
            VmImages {
                image: &a,
                initrd: Some(&rd),
            },
            only(&b),
        ];
        let mut blob = encode(&cfg, &files);
        assert_eq!(total_len(&blob), Ok(blob.len()));
        blob.extend_from_slice(&[0xff; 100]);
        let parsed = Bundle::parse(&blob).unwrap();
        assert_eq!(parsed.config, cfg);
        assert_eq!(parsed.images(0), Some(files[0]));
        assert_eq!(parsed.images(1), Some(files[1]));
        assert_eq!(parsed.images(2), None);
    }

    #[test]
    fn damaged_bundles_are_refused() {
        let cfg = config(&[3]);
        let blob = encode(&cfg, &[only(&[1, 2, 3])]);
        assert_eq!(
            Bundle::parse(&blob[..10]).err(),
            Some(BundleError::BadMagic)
        );
        assert_eq!(
            Bundle::parse(&blob[..blob.len() - 1]).err(),
            Some(BundleError::Truncated)
        );
        let mut wrong_version = blob.clone();
        wrong_version[8] = 9;
        assert_eq!(
            Bundle::parse(&wrong_version).err(),
            Some(BundleError::Version(9))
        );
        let mut short_total = blob.clone();
        short_total[24..32].copy_from_slice(&16u64.to_le_bytes());
        assert_eq!(
            Bundle::parse(&short_total).err(),
            Some(BundleError::Truncated)
        );
        let mut bad_config = blob.clone();
        bad_config[HEADER_LEN] = 0xff;
        bad_config[HEADER_LEN + 1] = 0xff;
        assert!(Bundle::parse(&bad_config).is_err());
    }
}
