//! The quota's pure parts: image sizes, the over-quota decision, image names and the paths a
//! label may name, layer directories, and mountinfo.

use super::*;

#[test]
fn the_image_leaves_ext4_room_for_the_quota_the_margin_and_the_reserve() {
    // 64 MiB of data, 1 MiB of margin, 1 MiB of reserve, 1/15 + 1/8192 of that and 2 MiB more,
    // rounded up to whole 4 KiB blocks.
    let data = 66 * MIB;
    let expected = (data + data / 15 + data / 8192 + 2 * MIB).div_ceil(4096) * 4096;
    assert_eq!(image_bytes(64), expected);
    assert_eq!(image_bytes(64) % 4096, 0);
    assert!(image_bytes(8192) > 8194 * MIB * 16 / 15);
    // No overflow for a quota no filesystem can hold: the image size saturates.
    assert_eq!(image_bytes(u64::MAX), u64::MAX / 4096 * 4096);
}

#[test]
fn usage_is_over_the_quota_only_past_it() {
    assert!(!over_quota(64 * MIB, 64));
    assert!(over_quota(64 * MIB + 1, 64));
    assert!(!over_quota(0, 1));
    assert!(!over_quota(u64::MAX, u64::MAX));
}

#[test]
fn image_names_say_which_process_made_them() {
    let name = image_file_name(4242, 987_654, 3);
    assert_eq!(name, "4242-987654-3.img");
    assert_eq!(image_owner(&name), Some((4242, 987_654)));
    for other in [
        "4242-987654.img",
        "4242-987654-3-1.img",
        "4242-x-3.img",
        "4242-987654-3.img.tmp",
        "probe-4242.img",
        "",
    ] {
        assert_eq!(image_owner(other), None, "{other}");
    }
}

#[test]
fn a_label_names_an_image_to_remove_only_inside_an_aci_disk_directory() {
    assert_eq!(
        checked_image("/var/lib/docker/aci-disk/4242-987654-3.img"),
        Some(PathBuf::from("/var/lib/docker/aci-disk/4242-987654-3.img"))
    );
    for hostile in [
        "/etc/passwd",
        "/var/lib/docker/aci-disk/../../../etc/4242-987654-3.img",
        "/var/lib/docker/other/4242-987654-3.img",
        "aci-disk/4242-987654-3.img",
        "/var/lib/docker/aci-disk/notes.txt",
    ] {
        assert_eq!(checked_image(hostile), None, "{hostile}");
    }
}

#[test]
fn the_layer_directory_is_the_parent_of_sibling_diff_and_work_directories() {
    let base = "/var/lib/docker/overlay2/0123abcd";
    assert_eq!(
        layer_dir(&format!("{base}/diff"), &format!("{base}/work")),
        Some(PathBuf::from(base))
    );
    assert_eq!(
        layer_dir(
            &format!("{base}/diff"),
            "/var/lib/docker/overlay2/other/work"
        ),
        None
    );
    assert_eq!(
        layer_dir(&format!("{base}/upper"), &format!("{base}/work")),
        None
    );
    assert_eq!(layer_dir("diff", "work"), None);
}

const MOUNTINFO: &str = "\
22 1 8:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
46 22 7:0 / /var/lib/docker/fuse-overlayfs/ab\\040c rw,relatime shared:2 - ext4 /dev/loop0 rw
47 46 0:40 / /var/lib/docker/fuse-overlayfs/ab\\040c/merged rw,nodev,noatime shared:3 - fuse.fuse-overlayfs fuse-overlayfs rw,user_id=0
50 22 0:41 / /var/lib/docker/fuse-overlayfs/other/merged rw - fuse.fuse-overlayfs fuse-overlayfs rw
";

#[test]
fn mountinfo_lines_are_read_with_their_escapes_undone() {
    let mounts = parse_mountinfo(MOUNTINFO);
    assert_eq!(mounts.len(), 4);
    assert_eq!(
        mounts[1],
        Mount {
            id: 46,
            parent: 22,
            point: PathBuf::from("/var/lib/docker/fuse-overlayfs/ab c"),
            fs_type: "ext4".to_owned(),
            source: "/dev/loop0".to_owned(),
        }
    );
    assert_eq!(mounts[2].fs_type, "fuse.fuse-overlayfs");
    assert!(parse_mountinfo("not a mountinfo line\n").is_empty());
}

#[test]
fn the_containers_root_must_be_mounted_on_the_quota_filesystem() {
    let mounts = parse_mountinfo(MOUNTINFO);
    assert!(root_is_on_quota(
        &mounts,
        Path::new("/var/lib/docker/fuse-overlayfs/ab c")
    ));
    // A root mounted on the directory beneath (a daemon that did not see the mount), or no
    // quota filesystem at all.
    let beside = MOUNTINFO.replace("47 46 0:40", "47 22 0:40");
    assert!(!root_is_on_quota(
        &parse_mountinfo(&beside),
        Path::new("/var/lib/docker/fuse-overlayfs/ab c")
    ));
    assert!(!root_is_on_quota(
        &mounts,
        Path::new("/var/lib/docker/fuse-overlayfs/other")
    ));
}

#[test]
fn only_the_measured_quota_is_announced() {
    let measured = DiskMode::Measured {
        reason: "aci runs as uid 1000, and mounting a filesystem needs root".to_owned(),
    };
    assert_eq!(
        measured.warning().as_deref(),
        Some(
            "warning: env.disk_mb is only measured, by the daemon's size of each container's \
             writable layer (files deleted while open are not seen, small and sparse files count \
             their length): aci runs as uid 1000, and mounting a filesystem needs root\nhint: run \
             aci as root on the Docker host (overlay2 or fuse-overlayfs, with mkfs.ext4 and loop \
             devices) so that each container writes to a filesystem of the quota's size"
        )
    );
    let enforced = DiskMode::Enforced {
        images: PathBuf::from("/var/lib/docker/aci-disk"),
    };
    assert_eq!(enforced.warning(), None);
}

#[tokio::test]
async fn a_driver_without_layer_directories_falls_back_to_measuring_and_says_why() {
    assert_eq!(
        probe(Some("/var/lib/docker".to_owned()), Some("btrfs".to_owned())).await,
        DiskMode::Measured {
            reason: "the storage driver `btrfs` does not keep a container's writable layer in a \
                     directory aci can mount a filesystem over"
                .to_owned()
        }
    );
}

#[tokio::test]
async fn storage_that_is_not_on_this_machine_falls_back_to_measuring() {
    let mode = probe(
        Some("/nonexistent/docker-root".to_owned()),
        Some("overlay2".to_owned()),
    )
    .await;
    let expected = match effective_uid() {
        Some(0) => "the daemon's storage (/nonexistent/docker-root/overlay2) is not on this \
                    machine (a remote or rootless daemon, or Docker Desktop)"
            .to_owned(),
        Some(uid) => format!("aci runs as uid {uid}, and mounting a filesystem needs root"),
        None => "cannot read this process's uid from /proc/self/status".to_owned(),
    };
    assert_eq!(mode, DiskMode::Measured { reason: expected });
}

#[tokio::test]
async fn a_new_layer_is_copied_whole_onto_the_quota_filesystem() {
    let from = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(from.path().join("work/work")).unwrap();
    std::fs::create_dir_all(from.path().join("diff/testbed")).unwrap();
    std::fs::write(from.path().join("link"), "ZYMLQXUP2BD4BKHJGRPRGSXQIE").unwrap();
    std::fs::set_permissions(
        from.path().join("work/work"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::fs::set_permissions(from.path(), std::fs::Permissions::from_mode(0o710)).unwrap();
    std::os::unix::fs::symlink("../link", from.path().join("diff/up")).unwrap();
    let to = tempfile::tempdir().unwrap();
    std::fs::create_dir(to.path().join("lost+found")).unwrap();
    copy_layer(from.path(), to.path()).await.unwrap();
    assert!(!to.path().join("lost+found").exists());
    assert_eq!(
        std::fs::read_to_string(to.path().join("link")).unwrap(),
        "ZYMLQXUP2BD4BKHJGRPRGSXQIE"
    );
    assert!(to.path().join("diff/testbed").is_dir());
    assert_eq!(
        std::fs::read_link(to.path().join("diff/up")).unwrap(),
        PathBuf::from("../link")
    );
    let mode = |path: &Path| std::fs::metadata(path).unwrap().mode() & 0o7777;
    assert_eq!(mode(&to.path().join("work/work")), 0o700);
    assert_eq!(mode(to.path()), 0o710);
    assert_eq!(
        std::fs::metadata(to.path().join(RESERVE_FILE))
            .unwrap()
            .len(),
        RESERVE
    );
}

#[test]
fn few_watched_containers_are_inspected_every_three_seconds() {
    assert_eq!(daemon_interval(0), Duration::from_secs(3));
    assert_eq!(daemon_interval(1), Duration::from_secs(3));
    assert_eq!(daemon_interval(12), Duration::from_secs(3));
}

#[test]
fn many_watched_containers_share_four_inspections_a_second() {
    assert_eq!(daemon_interval(13), Duration::from_millis(3250));
    assert_eq!(daemon_interval(16), Duration::from_secs(4));
    assert_eq!(daemon_interval(64), Duration::from_secs(16));
    assert_eq!(daemon_interval(128), Duration::from_secs(32));
    // Over any window, `n` watchdogs waiting `daemon_interval(n)` ask for at most four a second.
    for n in [13usize, 50, 64, 200, 1000] {
        let per_second = n as f64 / daemon_interval(n).as_secs_f64();
        assert!(per_second <= 4.0 + 1e-9, "{n}: {per_second}");
    }
    assert!(daemon_interval(usize::MAX) >= Duration::from_secs(3));
}
