//! The repository's work tree carried from the sandbox where a reinstall ran the patch's code
//! to the fresh sandbox where the tests run. What arrives is a tar that code the patch
//! controlled may have written, so it is read as data and rebuilt: only regular files,
//! directories, symbolic links and hard links to files of the same tar, at relative paths
//! without `..`; nothing under the top-level `.git` (the test sandbox keeps its own); no entry
//! below a symbolic link (which could point anywhere); permission bits only (no set-id bits).

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// A work tree as a tar, rebuilt by [`carry`]: safe to unpack over an empty repository
/// directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkTree {
    /// The tar's bytes.
    pub tar: Vec<u8>,
    /// Entries kept.
    pub entries: usize,
    /// Entries left out, with why (`path: why`), for `run_instance.log`.
    pub dropped: Vec<String>,
}

/// Why a tar cannot be carried at all.
#[derive(Debug, thiserror::Error)]
#[error("the work tree could not be read as a tar: {0}")]
pub struct CarryError(#[from] std::io::Error);

/// The path of an entry relative to the tree, normalised (`./a/b` → `a/b`), or `None` when it
/// leaves the tree or is the tree itself.
fn relative(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Rebuilds `tar` (made with `tar -C <repo> -cf - .`) as a [`WorkTree`].
///
/// # Errors
/// The bytes are not a tar.
pub fn carry(tar: &[u8]) -> Result<WorkTree, CarryError> {
    carry_where(tar, |_| true)
}

/// Whether a site-packages entry (its first path component) is one of the project's own
/// modules `names`, as a non-editable install leaves them: the package directory, a module
/// file or extension (`name.py`, `name.cpython-39-x86_64-linux-gnu.so`), an egg directory
/// (`Name-1.0-py3.9.egg`); never metadata (`*.dist-info`, `*.egg-info`, an egg's `EGG-INFO`),
/// whose entry points would load plugins, nor a `.pth` file.
pub fn is_own_module(path: &Path, names: &[String]) -> bool {
    let metadata = path.components().any(|component| {
        let part = component.as_os_str().to_string_lossy();
        part.ends_with(".dist-info") || part.ends_with(".egg-info") || part == "EGG-INFO"
    });
    let Some(Component::Normal(first)) = path.components().next() else {
        return false;
    };
    let first = first.to_string_lossy().to_ascii_lowercase();
    let named = names.iter().any(|name| {
        let name = name.to_ascii_lowercase();
        first == name
            || first
                .strip_prefix(&name)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('-'))
    });
    named && !metadata && !first.ends_with(".pth") && !first.ends_with(".egg-link")
}

/// [`carry`], keeping only the entries `keep` accepts (by their path relative to the tar).
///
/// # Errors
/// The bytes are not a tar.
pub fn carry_where(tar: &[u8], keep: impl Fn(&Path) -> bool) -> Result<WorkTree, CarryError> {
    // First pass: every symbolic link's path, so that no entry below one is unpacked.
    let mut links = BTreeSet::new();
    for entry in tar::Archive::new(tar).entries()? {
        let entry = entry?;
        if entry.header().entry_type() == tar::EntryType::Symlink
            && let Some(path) = relative(&entry.path()?)
        {
            links.insert(path);
        }
    }
    let mut builder = tar::Builder::new(Vec::new());
    builder.follow_symlinks(false);
    let mut files = BTreeSet::new();
    let mut dropped = Vec::new();
    let mut entries = 0;
    for entry in tar::Archive::new(tar).entries()? {
        let mut entry = entry?;
        let raw = entry.path()?.into_owned();
        let shown = raw.display().to_string();
        let Some(path) = relative(&raw) else {
            if raw
                .components()
                .any(|c| matches!(c, Component::ParentDir | Component::RootDir))
            {
                dropped.push(format!("{shown}: outside the work tree"));
            }
            continue;
        };
        if path.components().next() == Some(Component::Normal(".git".as_ref())) || !keep(&path) {
            continue;
        }
        if path.ancestors().skip(1).any(|dir| links.contains(dir)) {
            dropped.push(format!("{shown}: below a symbolic link"));
            continue;
        }
        let kind = entry.header().entry_type();
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        let mut header = tar::Header::new_gnu();
        header.set_mode(mode);
        header.set_mtime(entry.header().mtime().unwrap_or(0));
        header.set_entry_type(kind);
        match kind {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let mut data = Vec::new();
                entry.read_to_end(&mut data)?;
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(data.len() as u64);
                builder.append_data(&mut header, &path, data.as_slice())?;
                files.insert(path);
            }
            tar::EntryType::Directory => {
                header.set_size(0);
                builder.append_data(&mut header, &path, std::io::empty())?;
            }
            tar::EntryType::Symlink => {
                let Some(target) = entry.link_name()? else {
                    dropped.push(format!("{shown}: a symbolic link without a target"));
                    continue;
                };
                header.set_size(0);
                builder.append_link(&mut header, &path, target)?;
            }
            tar::EntryType::Link => {
                let target = entry.link_name()?.and_then(|target| relative(&target));
                match target {
                    Some(target) if files.contains(&target) => {
                        header.set_size(0);
                        builder.append_link(&mut header, &path, &target)?;
                    }
                    _ => {
                        dropped.push(format!("{shown}: a hard link to a file outside the tar"));
                        continue;
                    }
                }
            }
            other => {
                dropped.push(format!(
                    "{shown}: not a file, directory or link ({other:?})"
                ));
                continue;
            }
        }
        entries += 1;
    }
    Ok(WorkTree {
        tar: builder.into_inner()?,
        entries,
        dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(builder: &mut tar::Builder<Vec<u8>>, path: &str, kind: tar::EntryType, data: &[u8]) {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_mode(0o4755);
        header.set_size(data.len() as u64);
        // Paths are written raw, as a hostile tar would have them.
        let name = path.as_bytes();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }

    fn link(builder: &mut tar::Builder<Vec<u8>>, path: &str, kind: tar::EntryType, target: &str) {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_size(0);
        header.set_link_name(target).unwrap();
        let name = path.as_bytes();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_cksum();
        builder.append(&header, std::io::empty()).unwrap();
    }

    fn listing(tree: &WorkTree) -> Vec<(String, tar::EntryType, u32)> {
        tar::Archive::new(tree.tar.as_slice())
            .entries()
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                (
                    entry.path().unwrap().display().to_string(),
                    entry.header().entry_type(),
                    entry.header().mode().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn only_the_projects_own_modules_come_from_site_packages() {
        let names = ["django".to_owned(), "six".to_owned()];
        for (path, own) in [
            ("django/__init__.py", true),
            ("Django-2.2-py3.6.egg/django/db.py", true),
            ("six.py", true),
            ("six.cpython-39-x86_64-linux-gnu.so", true),
            ("Django-2.2.dist-info/entry_points.txt", false),
            ("Django-2.2-py3.6.egg/EGG-INFO/entry_points.txt", false),
            ("django.pth", false),
            ("djangorestframework/__init__.py", false),
            ("_pytest/runner.py", false),
            ("sitecustomize.py", false),
        ] {
            assert_eq!(is_own_module(Path::new(path), &names), own, "{path}");
        }
    }

    #[test]
    fn a_hostile_tar_comes_out_as_files_inside_the_tree_with_plain_modes() {
        let mut builder = tar::Builder::new(Vec::new());
        use tar::EntryType::{Block, Directory, Link, Regular, Symlink};
        entry(&mut builder, "./", Directory, b"");
        entry(&mut builder, "./pkg/mod.py", Regular, b"x = 1\n");
        entry(&mut builder, "./.git/config", Regular, b"[core]\n");
        entry(&mut builder, "../escape.py", Regular, b"evil");
        entry(&mut builder, "/etc/evil", Regular, b"evil");
        link(
            &mut builder,
            "./site",
            Symlink,
            "/usr/lib/python3/dist-packages",
        );
        entry(&mut builder, "./site/_pytest/runner.py", Regular, b"evil");
        link(&mut builder, "./pkg/same.py", Link, "./pkg/mod.py");
        link(&mut builder, "./pkg/shadow", Link, "/etc/shadow");
        entry(&mut builder, "./dev", Block, b"");
        let tree = carry(&builder.into_inner().unwrap()).unwrap();
        let kinds: Vec<(String, tar::EntryType)> = listing(&tree)
            .into_iter()
            .map(|(path, kind, _)| (path, kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("pkg/mod.py".to_owned(), Regular),
                ("site".to_owned(), Symlink),
                ("pkg/same.py".to_owned(), Link),
            ]
        );
        // The set-user-id bit is gone, the permission bits stay.
        assert_eq!(listing(&tree)[0].2, 0o755);
        assert_eq!(
            tree.dropped,
            [
                "../escape.py: outside the work tree",
                "/etc/evil: outside the work tree",
                "./site/_pytest/runner.py: below a symbolic link",
                "./pkg/shadow: a hard link to a file outside the tar",
                "./dev: not a file, directory or link (Block)",
            ]
        );
        assert_eq!(tree.entries, 3);
    }
}
