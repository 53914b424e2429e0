//! Writes a deterministic "newc" cpio archive (the format the Linux kernel
//! unpacks as an initramfs). Every entry is owned by root with mtime 0 and
//! sequential inode numbers, so the same tree always gives the same bytes. It
//! never reads the host's ownership, times or device numbers.

use std::io::{self, Write};

/// File type bits of `st_mode`.
const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;
const S_IFLNK: u32 = 0o120_000;
const S_IFCHR: u32 = 0o020_000;

const TRAILER: &str = "TRAILER!!!";

/// What one archive member is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Directory { mode: u32 },
    File { mode: u32, data: Vec<u8> },
    Symlink { target: String },
    CharDevice { mode: u32, major: u32, minor: u32 },
}

/// A newc archive being written; entries must come parents first.
pub struct Writer<W: Write> {
    out: W,
    next_inode: u32,
    written: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Self {
        Writer {
            out,
            next_inode: 1,
            written: 0,
        }
    }

    /// Appends `node` under `path` (relative, no leading slash).
    pub fn append(&mut self, path: &str, node: &Node) -> io::Result<()> {
        let inode = self.next_inode;
        self.next_inode += 1;
        let (mode, nlink, data, rdev): (u32, u32, &[u8], (u32, u32)) = match node {
            Node::Directory { mode } => (S_IFDIR | mode, 2, &[], (0, 0)),
            Node::File { mode, data } => (S_IFREG | mode, 1, data, (0, 0)),
            Node::Symlink { target } => (S_IFLNK | 0o777, 1, target.as_bytes(), (0, 0)),
            Node::CharDevice { mode, major, minor } => (S_IFCHR | mode, 1, &[], (*major, *minor)),
        };
        self.entry(path, inode, mode, nlink, data, rdev)
    }

    /// Writes the trailer and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.entry(TRAILER, 0, 0, 1, &[], (0, 0))?;
        Ok(self.out)
    }

    fn entry(
        &mut self,
        path: &str,
        inode: u32,
        mode: u32,
        nlink: u32,
        data: &[u8],
        rdev: (u32, u32),
    ) -> io::Result<()> {
        let size = u32::try_from(data.len())
            .map_err(|_| io::Error::other(format!("{path}: larger than 4 GiB")))?;
        let name_size = path.len() as u32 + 1;
        let fields = [
            inode, mode, 0, 0, nlink, 0, size, 0, 0, rdev.0, rdev.1, name_size, 0,
        ];
        let mut header = String::from("070701");
        for field in fields {
            header.push_str(&format!("{field:08x}"));
        }
        self.write(header.as_bytes())?;
        self.write(path.as_bytes())?;
        self.write(&[0])?;
        self.pad()?;
        self.write(data)?;
        self.pad()
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let padding = (4 - self.written % 4) % 4;
        self.write(&[0; 3][..padding as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(entries: &[(&str, Node)]) -> Vec<u8> {
        let mut writer = Writer::new(Vec::new());
        for (path, node) in entries {
            writer.append(path, node).unwrap();
        }
        writer.finish().unwrap()
    }

    #[test]
    fn file_entry_has_newc_header_and_padding() {
        let bytes = archive(&[(
            "init",
            Node::File {
                mode: 0o755,
                data: b"abcde".to_vec(),
            },
        )]);
        let header = std::str::from_utf8(&bytes[..110]).unwrap();
        assert!(header.starts_with("070701"));
        assert_eq!(&header[14..22], "000081ed");
        assert_eq!(&header[54..62], "00000005");
        assert_eq!(&header[94..102], "00000005");
        assert_eq!(&bytes[110..115], b"init\0");
        assert_eq!(&bytes[116..121], b"abcde");
        assert_eq!(bytes.len() % 4, 0);
    }

    #[test]
    fn ends_with_trailer() {
        let bytes = archive(&[("dev", Node::Directory { mode: 0o755 })]);
        let trailer = b"TRAILER!!!\0";
        let at = bytes
            .windows(trailer.len())
            .position(|window| window == trailer)
            .unwrap();
        assert!(bytes[at + trailer.len()..].iter().all(|byte| *byte == 0));
        assert_eq!(bytes.len() % 4, 0);
    }

    #[test]
    fn char_device_carries_its_numbers() {
        let bytes = archive(&[(
            "dev/console",
            Node::CharDevice {
                mode: 0o600,
                major: 5,
                minor: 1,
            },
        )]);
        let header = std::str::from_utf8(&bytes[..110]).unwrap();
        assert_eq!(&header[14..22], "00002180");
        assert_eq!(&header[78..86], "00000005");
        assert_eq!(&header[86..94], "00000001");
    }
}
