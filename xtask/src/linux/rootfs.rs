//! The initramfs tree: a fixed skeleton (directories, console device node,
//! minimal /etc, `/init`, `/bin/sh`) plus the placed programs and libraries,
//! written as a deterministic newc cpio archive. It never runs guest code and
//! never depends on the host's file ownership or times.

use super::cpio::{Node, Writer};
use super::libraries::{Content, Placement};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::Path;

const DIR_MODE: u32 = 0o755;
const EXEC_MODE: u32 = 0o755;
const DATA_MODE: u32 = 0o644;

/// Directories busybox installs its applet links into, and mount points.
const SKELETON_DIRS: [(&str, u32); 11] = [
    ("bin", DIR_MODE),
    ("sbin", DIR_MODE),
    ("usr/bin", DIR_MODE),
    ("usr/sbin", DIR_MODE),
    ("dev", DIR_MODE),
    ("proc", 0o555),
    ("sys", 0o555),
    ("tmp", 0o1777),
    ("run", DIR_MODE),
    ("root", 0o700),
    ("etc", DIR_MODE),
];

const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\n";
const GROUP: &str = "root:x:0:\n";

/// Paths (relative, no leading slash) -> archive members, kept sorted so
/// parents precede children.
pub struct Rootfs {
    nodes: BTreeMap<String, Node>,
}

impl Rootfs {
    /// The skeleton with `init` as `/init`.
    pub fn new(init: &str) -> Rootfs {
        let mut rootfs = Rootfs {
            nodes: BTreeMap::new(),
        };
        for (path, mode) in SKELETON_DIRS {
            rootfs.insert(path, Node::Directory { mode });
        }
        // The kernel opens /dev/console for PID 1 before /init can mount devtmpfs.
        rootfs.insert(
            "dev/console",
            Node::CharDevice {
                mode: 0o600,
                major: 5,
                minor: 1,
            },
        );
        rootfs.insert(
            "dev/null",
            Node::CharDevice {
                mode: 0o666,
                major: 1,
                minor: 3,
            },
        );
        rootfs.insert("etc/passwd", data_file(PASSWD, DATA_MODE));
        rootfs.insert("etc/group", data_file(GROUP, DATA_MODE));
        rootfs.insert("init", data_file(init, EXEC_MODE));
        rootfs.insert(
            "bin/sh",
            Node::Symlink {
                target: "busybox".into(),
            },
        );
        rootfs
    }

    /// Adds every placed file (read from the host now) and link.
    pub fn add(&mut self, placement: &Placement) -> Result<()> {
        for (path, content) in &placement.files {
            let node = match content {
                Content::Copy(source) => Node::File {
                    mode: EXEC_MODE,
                    data: std::fs::read(source)
                        .with_context(|| format!("reading {}", source.display()))?,
                },
                Content::Link(target) => Node::Symlink {
                    target: target.clone(),
                },
            };
            self.insert(path, node);
        }
        Ok(())
    }

    /// Writes the archive to `path` (through a temporary file) and returns its size.
    pub fn write_cpio(&self, path: &Path) -> Result<u64> {
        let partial = path.with_extension("partial");
        let file = std::fs::File::create(&partial)
            .with_context(|| format!("creating {}", partial.display()))?;
        let mut writer = Writer::new(BufWriter::new(file));
        for (name, node) in &self.nodes {
            writer.append(name, node)?;
        }
        let file = writer
            .finish()?
            .into_inner()
            .map_err(|error| error.into_error())?;
        file.sync_all()?;
        std::fs::rename(&partial, path)
            .with_context(|| format!("renaming {} to {}", partial.display(), path.display()))?;
        Ok(std::fs::metadata(path)?.len())
    }

    fn insert(&mut self, path: &str, node: Node) {
        let mut parent = Path::new(path).parent();
        while let Some(dir) = parent.filter(|dir| !dir.as_os_str().is_empty()) {
            self.nodes
                .entry(dir.to_string_lossy().into_owned())
                .or_insert(Node::Directory { mode: DIR_MODE });
            parent = dir.parent();
        }
        self.nodes.insert(path.to_owned(), node);
    }
}

fn data_file(text: &str, mode: u32) -> Node {
    Node::File {
        mode,
        data: text.as_bytes().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserting_a_file_creates_its_parents_first() {
        let mut rootfs = Rootfs::new("#!/bin/sh\n");
        rootfs.insert(
            "usr/lib/aarch64-linux-gnu/libz.so.1",
            data_file("x", EXEC_MODE),
        );
        let paths: Vec<&String> = rootfs.nodes.keys().collect();
        let lib = paths
            .iter()
            .position(|p| *p == "usr/lib/aarch64-linux-gnu/libz.so.1")
            .unwrap();
        let dir = paths
            .iter()
            .position(|p| *p == "usr/lib/aarch64-linux-gnu")
            .unwrap();
        let usr = paths.iter().position(|p| *p == "usr").unwrap();
        assert!(usr < dir && dir < lib);
    }
}
