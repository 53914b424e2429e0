//! Finds, in unpacked Debian packages, every file a set of programs needs at
//! run time: the programs themselves, their program interpreter and the
//! transitive closure of their `DT_NEEDED` libraries, following symbolic
//! links inside a package. It places nothing a program does not need, and it
//! fails (naming the soname and who needs it) rather than leave a library out.

use super::elf::runtime_needs;
use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// Directories the arm64 Debian dynamic loader searches by default, in order.
const SEARCH_DIRS: [&str; 4] = [
    "lib/aarch64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "lib",
    "usr/lib",
];

/// Longest chain of symbolic links followed before giving up.
const MAX_LINKS: usize = 16;

/// One unpacked package.
#[derive(Debug, Clone)]
pub struct PackageTree {
    pub name: String,
    pub root: PathBuf,
}

/// What a path in the initramfs holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// The bytes of this host file.
    Copy(PathBuf),
    /// A symbolic link with this target.
    Link(String),
}

/// Initramfs paths (relative) -> content, plus the packages that supplied them.
#[derive(Debug, Default)]
pub struct Placement {
    pub files: BTreeMap<String, Content>,
    pub packages: BTreeSet<String>,
}

/// Places `programs` (package name, path in package) and everything they need.
pub fn place_programs(trees: &[PackageTree], programs: &[(String, String)]) -> Result<Placement> {
    let mut placement = Placement::default();
    let mut pending: Vec<(String, PathBuf)> = Vec::new();
    for (package, path) in programs {
        let tree = trees
            .iter()
            .find(|tree| &tree.name == package)
            .with_context(|| format!("package {package} was not unpacked"))?;
        let source = place(&mut placement, tree, path)
            .with_context(|| format!("package {package} has no file /{path}"))?;
        pending.push((path.clone(), source));
    }
    let mut seen = BTreeSet::new();
    while let Some((requester, source)) = pending.pop() {
        let needs = runtime_needs(&source)?;
        if let Some(interpreter) = needs.interpreter {
            let rel = interpreter.trim_start_matches('/').to_owned();
            if seen.insert(rel.clone()) {
                let source = place_anywhere(&mut placement, trees, &rel)
                    .with_context(|| format!("/{requester} needs interpreter {interpreter}"))?;
                pending.push((rel, source));
            }
        }
        for soname in needs.libraries {
            if seen.insert(soname.clone()) {
                let (rel, source) = place_library(&mut placement, trees, &soname)
                    .with_context(|| format!("/{requester} needs {soname}"))?;
                pending.push((rel, source));
            }
        }
    }
    Ok(placement)
}

fn place_library(
    placement: &mut Placement,
    trees: &[PackageTree],
    soname: &str,
) -> Result<(String, PathBuf)> {
    for dir in SEARCH_DIRS {
        let rel = format!("{dir}/{soname}");
        if let Some(tree) = trees.iter().find(|tree| exists(&tree.root.join(&rel))) {
            let source = place(placement, tree, &rel)?;
            return Ok((rel, source));
        }
    }
    bail!("no downloaded package provides {soname} in {SEARCH_DIRS:?}")
}

fn place_anywhere(placement: &mut Placement, trees: &[PackageTree], rel: &str) -> Result<PathBuf> {
    match trees.iter().find(|tree| exists(&tree.root.join(rel))) {
        Some(tree) => place(placement, tree, rel),
        None => bail!("no downloaded package has /{rel}"),
    }
}

/// Places `rel` from `tree`, and the targets of any links on the way; returns
/// the host path of the final regular file.
fn place(placement: &mut Placement, tree: &PackageTree, rel: &str) -> Result<PathBuf> {
    let mut current = PathBuf::from(rel);
    for _ in 0..MAX_LINKS {
        let host = tree.root.join(&current);
        let key = current.to_string_lossy().into_owned();
        let metadata =
            std::fs::symlink_metadata(&host).with_context(|| format!("{}: /{key}", tree.name))?;
        placement.packages.insert(tree.name.clone());
        if !metadata.file_type().is_symlink() {
            placement.files.insert(key, Content::Copy(host.clone()));
            return Ok(host);
        }
        let target = std::fs::read_link(&host)?;
        placement
            .files
            .insert(key, Content::Link(target.to_string_lossy().into_owned()));
        current = follow(&current, &target)?;
    }
    bail!(
        "{}: /{rel}: more than {MAX_LINKS} symbolic links",
        tree.name
    )
}

/// The package-relative path a link at `link` with `target` points to.
fn follow(link: &Path, target: &Path) -> Result<PathBuf> {
    let joined = match target.strip_prefix("/") {
        Ok(absolute) => absolute.to_path_buf(),
        Err(_) => link.parent().unwrap_or(Path::new("")).join(target),
    };
    let mut normal = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::Normal(part) => normal.push(part),
            Component::ParentDir if normal.pop() => {}
            Component::CurDir => {}
            _ => bail!(
                "link {} -> {} leaves the package",
                link.display(),
                target.display()
            ),
        }
    }
    Ok(normal)
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_relative_links() {
        let path = follow(
            Path::new("lib/ld-linux-aarch64.so.1"),
            Path::new("aarch64-linux-gnu/ld.so"),
        )
        .unwrap();
        assert_eq!(path, Path::new("lib/aarch64-linux-gnu/ld.so"));
    }

    #[test]
    fn follows_absolute_links_inside_the_package() {
        let path = follow(
            Path::new("usr/lib/x/libz.so.1"),
            Path::new("/lib/x/libz.so.1.2"),
        )
        .unwrap();
        assert_eq!(path, Path::new("lib/x/libz.so.1.2"));
    }

    #[test]
    fn refuses_links_out_of_the_package() {
        assert!(follow(Path::new("a.so"), Path::new("../../etc/passwd")).is_err());
    }
}
