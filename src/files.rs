//! Atomic file writes: readers see the old file or the new one, never a part.
//!
//! A temporary file in the same directory is written (and synced), then renamed over the target,
//! and the directory is synced. Every file aci writes for later reading — trajectories,
//! predictions, reports, manifests — goes through [`write_atomic`] or
//! [`write_atomic_unsynced`].

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Makes temporary names unique between writers in this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` so that readers see the old file or the new one, never a part,
/// creating the parent directory: a temporary file in the same directory is written and synced,
/// then renamed over `path`, and the directory is synced, so the file survives a power loss too.
///
/// # Errors
///
/// Any I/O error from creating the directory, writing, syncing or renaming; the temporary file
/// is removed first.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_renamed(path, bytes, true)
}

/// [`write_atomic`] without the syncs: still all-or-nothing for readers and for a process that
/// is killed (the rename is atomic and the kernel keeps the written data), but a power loss may
/// lose it. This is the per-turn trajectory save: a sync costs ~10 ms on a common disk, more
/// than the rest of a turn's harness work, and the final save of an instance is synced.
///
/// # Errors
///
/// Any I/O error from creating the directory, writing or renaming; the temporary file is
/// removed first.
pub fn write_atomic_unsynced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_renamed(path, bytes, false)
}

fn write_renamed(path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
    let file_name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("path {} has no file name", path.display()),
        )
    })?;
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    fs::create_dir_all(directory)?;
    let temp = directory.join(format!(
        ".{}.{}.{}.tmp",
        file_name.to_string_lossy(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = write_new(&temp, bytes, sync).and_then(|()| fs::rename(&temp, path));
    if written.is_err() {
        // Best effort: the error that matters is the one being returned.
        let _ = fs::remove_file(&temp);
    }
    written?;
    // Persist the rename itself. Some file systems cannot sync a directory; the file is complete
    // either way, so that failure is not an error.
    if sync && let Ok(dir) = File::open(directory) {
        let _ = dir.sync_all();
    }
    Ok(())
}

fn write_new(path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    if sync {
        file.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_atomic_write_creates_the_directory_and_leaves_only_the_target_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x/y.json");
        write_atomic(&path, b"{}").unwrap();
        write_atomic_unsynced(&path, b"[1]").unwrap();
        assert_eq!(
            (names(&dir.path().join("x")), fs::read(&path).unwrap()),
            (vec!["y.json".to_owned()], b"[1]".to_vec())
        );
    }

    #[test]
    fn a_failed_atomic_write_leaves_the_old_file_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x.json");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("keep"), "kept").unwrap();
        let result = write_atomic(&target, b"{}");
        assert_eq!(
            (
                result.is_err(),
                names(dir.path()),
                fs::read_to_string(target.join("keep")).unwrap()
            ),
            (true, vec!["x.json".to_owned()], "kept".to_owned())
        );
    }
}
