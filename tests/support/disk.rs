//! The quota filesystem of a container as the host sees it: its image file, the mount over
//! its writable layer, the loop device behind it, and that all three are gone after removal.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// The container's quota image file (its `aci.disk_image` label) and its writable layer's
/// directory, as the daemon reports them.
pub fn disk_of(container_id: &str) -> (PathBuf, PathBuf) {
    let out = std::process::Command::new("docker")
        .args([
            "inspect",
            "--format",
            "{{index .Config.Labels \"aci.disk_image\"}}|{{.GraphDriver.Data.UpperDir}}",
            container_id,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let (image, upper) = text.trim().split_once('|').unwrap();
    (
        PathBuf::from(image),
        Path::new(upper).parent().unwrap().to_path_buf(),
    )
}

/// Where this process sees something mounted at `point`: the mount's source (`/dev/loop3`).
pub fn mounted_at(point: &Path) -> Option<String> {
    let escaped = point.display().to_string().replace(' ', "\\040");
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .rev()
        .find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            (left.split(' ').nth(4)? == escaped)
                .then(|| right.split(' ').nth(1).unwrap().to_owned())
        })
}

/// The files the loop devices are backed by.
pub fn loop_backing_files() -> Vec<PathBuf> {
    std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            std::fs::read_to_string(entry.path().join("loop/backing_file"))
                .ok()
                .map(|text| PathBuf::from(text.trim_end().trim_end_matches(" (deleted)")))
        })
        .collect()
}

/// Asserts the quota filesystem of a removed container is gone: unmounted, its loop device
/// released, its image deleted.
pub fn assert_released(image: &Path, layer_dir: &Path) {
    assert!(!image.exists(), "{} is left", image.display());
    assert_eq!(mounted_at(layer_dir), None, "{}", layer_dir.display());
    assert!(
        !loop_backing_files().contains(&image.to_path_buf()),
        "a loop device still holds {}",
        image.display()
    );
}

/// The daemon's `aci-disk` directory, where the image files are.
pub fn images_dir() -> PathBuf {
    let root = std::process::Command::new("docker")
        .args(["info", "--format", "{{.DockerRootDir}}"])
        .output()
        .unwrap();
    Path::new(String::from_utf8(root.stdout).unwrap().trim()).join("aci-disk")
}
