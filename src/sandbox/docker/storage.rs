//! Storage drivers that lose a deletion: on fuse-overlayfs, a file of the image that was
//! replaced by a rename (`sed -i`, an editor's safe save) comes back from the image when it is
//! then deleted, so `rm` leaves it in place and `git checkout FILE` fails with `unable to create
//! file …: File exists` (exit 255). Moving the work tree into the container's own layer does not
//! cure it (a directory renamed into place lets the image's files show through after `rm -rf`,
//! which breaks unpacking a tree over it), so aci says so once at connection instead.

use bollard::models::SystemInfo;

/// Whether the daemon's storage may bring back a deleted file that was renamed over: Docker's
/// `fuse-overlayfs` driver, or Podman's `overlay` without the kernel's diff (its
/// `mount_program`, fuse-overlayfs).
pub(super) fn loses_deletions(info: &SystemInfo) -> bool {
    let status = |key: &str| {
        info.driver_status
            .iter()
            .flatten()
            .find(|pair| pair.first().map(String::as_str) == Some(key))
            .and_then(|pair| pair.get(1).cloned())
    };
    match info.driver.as_deref() {
        Some("fuse-overlayfs") => true,
        Some("overlay") => status("Native Overlay Diff").as_deref() == Some("false"),
        _ => false,
    }
}

/// The warning aci prints once when the daemon's storage loses deletions.
pub(super) const WARNING: &str = "warning: the daemon's storage driver is fuse-overlayfs, which \
    brings back a file of the image that was renamed over and then deleted (`sed -i FILE` then \
    `git checkout FILE` fails with `File exists`); prefer overlay2 (docs/runtimes.md, \
    \"Storage drivers\")";

#[cfg(test)]
mod tests {
    use super::*;

    fn info(driver: &str, status: &[(&str, &str)]) -> SystemInfo {
        SystemInfo {
            driver: Some(driver.to_owned()),
            driver_status: Some(
                status
                    .iter()
                    .map(|(k, v)| vec![(*k).to_owned(), (*v).to_owned()])
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn fuse_overlayfs_loses_deletions_and_the_kernels_overlay_does_not() {
        assert!(loses_deletions(&info("fuse-overlayfs", &[])));
        assert!(!loses_deletions(&info("overlay2", &[])));
        // Podman's overlay, with and without `mount_program = fuse-overlayfs`, as it reports.
        let podman = |native| {
            info(
                "overlay",
                &[
                    ("Backing Filesystem", "extfs"),
                    ("Native Overlay Diff", native),
                ],
            )
        };
        assert!(!loses_deletions(&podman("true")));
        assert!(loses_deletions(&podman("false")));
        assert!(!loses_deletions(&info("vfs", &[])));
    }
}
