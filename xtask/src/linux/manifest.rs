//! The Linux guest's package list (`guests/linux/packages`): which package
//! names the kernel and which files of which packages go into the initramfs.
//! It only parses text; it never talks to apt.

use anyhow::{bail, Result};

/// One package whose listed files are copied into the initramfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootfsPackage {
    pub name: String,
    /// Paths inside the package (relative, no leading slash).
    pub files: Vec<String>,
}

/// The parsed package list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The package whose dependency names the kernel image package.
    pub kernel_selector: String,
    pub packages: Vec<RootfsPackage>,
}

impl Manifest {
    /// Parses the list; `origin` names it in error messages.
    pub fn parse(text: &str, origin: &str) -> Result<Manifest> {
        let mut kernel_selector = None;
        let mut packages = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let mut words = line.split_whitespace();
            let Some(keyword) = words.next().filter(|word| !word.starts_with('#')) else {
                continue;
            };
            let at = format!("{origin}:{}", index + 1);
            match (keyword, words.next()) {
                ("kernel", Some(name)) if words.next().is_none() => {
                    kernel_selector = Some(name.to_owned())
                }
                ("package", Some(name)) => packages.push(RootfsPackage {
                    name: name.to_owned(),
                    files: words
                        .map(|file| file.trim_start_matches('/').to_owned())
                        .collect(),
                }),
                _ => bail!("{at}: expected `kernel <package>` or `package <package> [<file>...]`"),
            }
        }
        let Some(kernel_selector) = kernel_selector else {
            bail!("{origin}: no `kernel <package>` line");
        };
        Ok(Manifest {
            kernel_selector,
            packages,
        })
    }

    /// Names of every initramfs package, in list order.
    pub fn package_names(&self) -> Vec<String> {
        self.packages
            .iter()
            .map(|package| package.name.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_and_packages() {
        let text = "# comment\n\nkernel linux-image-arm64\npackage rt-tests usr/bin/cyclictest /usr/bin/hackbench\n";
        let manifest = Manifest::parse(text, "packages").unwrap();
        assert_eq!(manifest.kernel_selector, "linux-image-arm64");
        assert_eq!(
            manifest.packages,
            vec![RootfsPackage {
                name: "rt-tests".into(),
                files: vec!["usr/bin/cyclictest".into(), "usr/bin/hackbench".into()],
            }]
        );
    }

    #[test]
    fn unknown_keyword_names_the_line() {
        let error = Manifest::parse("kernel k\nbogus x\n", "packages").unwrap_err();
        assert!(error.to_string().starts_with("packages:2:"));
    }

    #[test]
    fn kernel_line_is_required() {
        assert!(Manifest::parse("package busybox-static bin/busybox\n", "p").is_err());
    }
}
