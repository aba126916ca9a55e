//! The disk quota of a task container (`env.disk_mb`).
//!
//! Where aci runs as root beside the daemon, each container's writable layer gets an ext4
//! filesystem of its own before the container starts: a sparse image file, loop-mounted over
//! the layer's directory ([`DiskMode::Enforced`]). The kernel then counts every block the
//! container's files take (a small file takes a whole block, a file deleted while a process holds
//! it open keeps its blocks, a sparse file's holes take none) and refuses writes once the
//! filesystem is full, and the watchdog ([`watch`]) reads its usage every second and stops the
//! task's processes once it is over the quota. Elsewhere the watchdog reads the daemon's size of
//! the writable layer and a file-size limit bounds each file ([`DiskMode::Measured`]), which
//! [`DiskMode::warning`] says once.

use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::query_parameters::{
    InspectContainerOptionsBuilder, RestartContainerOptionsBuilder, StopContainerOptionsBuilder,
};
use tokio::sync::watch;

use super::super::liveness::{Reap, read_process, reap_verdict};
use super::{DockerRuntime, LABEL_DISK, unix_now};

const MIB: u64 = 1024 * 1024;
/// Room the filesystem gives past the quota, so that its usage can be seen over it.
const MARGIN: u64 = MIB;
/// A file of aci's in the layer's directory, beside what the container sees, deleted before
/// the watchdog restarts a full container: the daemon needs a block to mount its root again.
const RESERVE_FILE: &str = "aci-disk-reserve";
/// The reserve's size.
const RESERVE: u64 = MIB;
/// How often the watchdog reads the quota filesystem's usage (one `statfs`).
const FILESYSTEM_INTERVAL: Duration = Duration::from_secs(1);
/// How often it asks the daemon for the writable layer's size (the daemon walks the layer),
/// while few containers are watched ([`daemon_interval`]).
const DAEMON_INTERVAL: Duration = Duration::from_secs(3);
/// How many size inspections the watchdogs of one daemon connection ask for per second, at
/// most, however many containers they watch: each makes the daemon walk a writable layer.
pub const SIZE_INSPECTIONS_PER_SECOND: u32 = 4;
/// Storage drivers that keep a container's writable layer in one directory of their own,
/// holding its `diff` and `work` directories.
const LAYER_DRIVERS: [&str; 2] = ["overlay2", "fuse-overlayfs"];
/// The image files' directory, in the daemon's root directory: the filesystem the writable
/// layers would have been written to.
pub const IMAGES_DIR: &str = "aci-disk";
/// How long one of `mkfs.ext4`, `mount`, `cp` or `umount` may take.
const TOOL_LIMIT: Duration = Duration::from_secs(120);

/// How the quota is kept, decided once per daemon connection ([`probe`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskMode {
    /// Each container's writable layer is on a filesystem of the quota's size, whose image
    /// file is in `images`.
    Enforced {
        /// Where the image files are.
        images: PathBuf,
    },
    /// The daemon's size of each writable layer is watched, for `reason`.
    Measured {
        /// Why the quota cannot be enforced here.
        reason: String,
    },
}

impl DiskMode {
    /// The line (and its hint) that says the quota is only measured, once per process.
    pub fn warning(&self) -> Option<String> {
        match self {
            DiskMode::Enforced { .. } => None,
            DiskMode::Measured { reason } => Some(format!(
                "warning: env.disk_mb is only measured, by the daemon's size of each container's \
                 writable layer (files deleted while open are not seen, small and sparse files \
                 count their length): {reason}\nhint: run aci as root on the Docker host \
                 (overlay2 or fuse-overlayfs, with mkfs.ext4 and loop devices) so that each \
                 container writes to a filesystem of the quota's size"
            )),
        }
    }
}

/// The size of the image file of a quota of `disk_mb` MiB: what the container may write, the
/// margin and the reserve, plus ext4's own blocks (one 256-byte inode per 4 KiB block is 1/16
/// of the image; bitmaps, group descriptors and the superblock's copies stay under 1/8192 of it
/// and 2 MiB). Writes then fail 3 to 7 MiB past a quota of 1 MiB to 100 GiB. The image is
/// sparse: only the blocks written take room on the host.
pub fn image_bytes(disk_mb: u64) -> u64 {
    let data = disk_mb.saturating_mul(MIB).saturating_add(MARGIN + RESERVE);
    let size = data
        .saturating_add(data / 15)
        .saturating_add(data / 8192)
        .saturating_add(2 * MIB);
    size.checked_next_multiple_of(4096)
        .unwrap_or(size / 4096 * 4096)
}

/// How long a watchdog that asks the daemon waits between two size inspections, while
/// `watched` containers of the same connection are watched that way: [`DAEMON_INTERVAL`], or
/// longer once their inspections together would exceed [`SIZE_INSPECTIONS_PER_SECOND`].
pub fn daemon_interval(watched: usize) -> Duration {
    let watched = u32::try_from(watched).unwrap_or(u32::MAX);
    let spread = Duration::from_secs(1).saturating_mul(watched) / SIZE_INSPECTIONS_PER_SECOND;
    spread.max(DAEMON_INTERVAL)
}

/// The size inspections of one daemon connection's watchdogs: how many containers they watch
/// (for [`daemon_interval`]), one inspection in flight at a time, and how many were made.
#[derive(Debug)]
pub struct SizeMeter {
    watched: AtomicUsize,
    one_at_a_time: tokio::sync::Semaphore,
    made: AtomicU64,
}

impl Default for SizeMeter {
    fn default() -> Self {
        Self {
            watched: AtomicUsize::new(0),
            one_at_a_time: tokio::sync::Semaphore::new(1),
            made: AtomicU64::new(0),
        }
    }
}

impl SizeMeter {
    /// How many size inspections were made through this connection.
    pub fn made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }
}

/// One container counted in [`SizeMeter::watched`] while it lives.
struct Watched<'a>(&'a SizeMeter);

impl<'a> Watched<'a> {
    fn new(meter: &'a SizeMeter) -> Self {
        meter.watched.fetch_add(1, Ordering::Relaxed);
        Self(meter)
    }
}

impl Drop for Watched<'_> {
    fn drop(&mut self) {
        self.0.watched.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether `used` bytes are over a quota of `disk_mb` MiB.
pub fn over_quota(used: u64, disk_mb: u64) -> bool {
    used > disk_mb.saturating_mul(MIB)
}

/// `mkfs.ext4`'s arguments for `image`: 4 KiB blocks and as many inodes, so that blocks run out
/// before inodes do whatever the files' sizes; no journal (the filesystem lives as long as its
/// task), no blocks reserved for root, no room to grow, and inode tables left for the sparse
/// file to read as zeros (the mount's `noinit_itable` keeps the kernel from writing them).
fn mkfs_args(image: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "-q",
        "-F",
        "-t",
        "ext4",
        "-b",
        "4096",
        "-I",
        "256",
        "-i",
        "4096",
        "-m",
        "0",
        "-O",
        "^has_journal,^resize_inode",
        "-E",
        "lazy_itable_init=1,nodiscard,root_owner=0:0",
    ]
    .map(OsString::from)
    .to_vec();
    args.push(image.as_os_str().to_owned());
    args
}

/// The name of the `n`th image file of the process `pid` started at `start` (clock ticks):
/// `<pid>-<start>-<n>.img`, so the reaper can tell whose it is.
fn image_file_name(pid: u32, start: u64, n: u64) -> String {
    format!("{pid}-{start}-{n}.img")
}

/// The process (pid, start time) that made the image file `name`; `None` for any other name.
pub fn image_owner(name: &str) -> Option<(u32, u64)> {
    let stem = name.strip_suffix(".img")?;
    let mut parts = stem.split('-');
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    parts.next().is_none().then_some((pid, start))
}

/// A fresh image path in `images` for this process.
pub fn next_image(images: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    images.join(image_file_name(
        std::process::id(),
        super::super::liveness::own_start_time(),
        n,
    ))
}

/// `path` when it is an image file aci makes (`<...>/aci-disk/<pid>-<start>-<n>.img`): a
/// container label is input, and only such a path is ever unmounted or deleted.
pub fn checked_image(path: &str) -> Option<PathBuf> {
    let path = PathBuf::from(path);
    let name = path.file_name()?.to_str()?;
    image_owner(name)?;
    let parent = path.parent()?;
    (path.is_absolute() && parent.file_name()? == IMAGES_DIR).then_some(path)
}

/// The directory holding a container's `diff` and `work` directories, from the storage
/// driver's `UpperDir` and `WorkDir`; `None` when they are not siblings.
pub fn layer_dir(upper: &str, work: &str) -> Option<PathBuf> {
    let upper = Path::new(upper);
    let work = Path::new(work);
    let parent = upper.parent()?;
    (upper.is_absolute()
        && upper.file_name()? == "diff"
        && work.file_name()? == "work"
        && work.parent()? == parent)
        .then(|| parent.to_path_buf())
}

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The mount's id.
    pub id: u64,
    /// Its parent's id.
    pub parent: u64,
    /// Where it is mounted.
    pub point: PathBuf,
    /// The filesystem type (`ext4`, `fuse.fuse-overlayfs`, `overlay`).
    pub fs_type: String,
    /// What is mounted (`/dev/loop3`, `overlay`).
    pub source: String,
}

/// The mounts `/proc/self/mountinfo` lists, in its order (a later mount at a point is on top).
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let fields: Vec<&str> = left.split(' ').collect();
            let after: Vec<&str> = right.split(' ').collect();
            Some(Mount {
                id: fields.first()?.parse().ok()?,
                parent: fields.get(1)?.parse().ok()?,
                point: PathBuf::from(unescape_octal(fields.get(4)?)),
                fs_type: (*after.first()?).to_owned(),
                source: unescape_octal(after.get(1)?),
            })
        })
        .collect()
}

/// mountinfo's escapes (`\040` for a space, `\011`, `\012`, `\134`) undone.
fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let code = bytes
            .get(i + 1..i + 4)
            .filter(|digits| bytes[i] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .and_then(|digits| u8::from_str_radix(std::str::from_utf8(digits).ok()?, 8).ok());
        match code {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The topmost mount at `point`.
fn mount_at<'a>(mounts: &'a [Mount], point: &Path) -> Option<&'a Mount> {
    mounts.iter().rev().find(|mount| mount.point == point)
}

/// Whether the container's root (`<layer_dir>/merged`, mounted by the daemon) sits on the
/// quota filesystem mounted at `layer_dir`: the daemon saw the quota filesystem, rather than
/// the directory under it (a daemon in a mount namespace of its own would not).
pub fn root_is_on_quota(mounts: &[Mount], layer_dir: &Path) -> bool {
    let Some(quota) = mount_at(mounts, layer_dir) else {
        return false;
    };
    mount_at(mounts, &layer_dir.join("merged")).is_some_and(|root| root.parent == quota.id)
}

/// The size in blocks and the used bytes of the filesystem holding `dir`.
fn used_bytes(dir: &Path) -> std::io::Result<(u64, u64)> {
    let stats = rustix::fs::statvfs(dir)?;
    let used = stats
        .f_blocks
        .saturating_sub(stats.f_bfree)
        .saturating_mul(stats.f_frsize);
    Ok((stats.f_blocks, used))
}

/// The effective uid of this process, from `/proc/self/status`.
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The path of the program `name`: on `PATH`, or in the sbin directories a non-root `PATH`
/// leaves out.
fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Runs `name` with `args`; its stderr is the error.
async fn run_tool(name: &str, args: &[OsString]) -> Result<(), String> {
    let program = find_tool(name).ok_or_else(|| format!("{name} is not installed"))?;
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(TOOL_LIMIT, command.output())
        .await
        .map_err(|_| format!("{name} did not finish within {} s", TOOL_LIMIT.as_secs()))?
        .map_err(|error| format!("cannot run {name}: {error}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(format!(
        "{name} failed ({}): {}",
        output.status,
        stderr.trim()
    ))
}

/// Decides how the quota is kept for a daemon whose root directory and storage driver
/// `docker info` gave: enforced when the driver keeps layers in directories, the daemon's
/// storage is on this machine, aci is root, and a trial filesystem can be made and mounted.
pub async fn probe(root_dir: Option<String>, driver: Option<String>) -> DiskMode {
    match try_probe(root_dir, driver).await {
        Ok(images) => DiskMode::Enforced { images },
        Err(reason) => DiskMode::Measured { reason },
    }
}

async fn try_probe(root_dir: Option<String>, driver: Option<String>) -> Result<PathBuf, String> {
    let driver = driver.unwrap_or_default();
    if !LAYER_DRIVERS.contains(&driver.as_str()) {
        return Err(format!(
            "the storage driver `{driver}` does not keep a container's writable layer in a \
             directory aci can mount a filesystem over"
        ));
    }
    match effective_uid() {
        Some(0) => {}
        Some(uid) => {
            return Err(format!(
                "aci runs as uid {uid}, and mounting a filesystem needs root"
            ));
        }
        None => return Err("cannot read this process's uid from /proc/self/status".to_owned()),
    }
    let root = PathBuf::from(root_dir.unwrap_or_default());
    let layers = root.join(&driver);
    if !root.is_absolute() || !layers.is_dir() {
        return Err(format!(
            "the daemon's storage ({}) is not on this machine (a remote or rootless daemon, or \
             Docker Desktop)",
            layers.display()
        ));
    }
    let images = root.join(IMAGES_DIR);
    std::fs::create_dir_all(&images)
        .and_then(|()| std::fs::set_permissions(&images, std::fs::Permissions::from_mode(0o700)))
        .map_err(|error| format!("cannot create {}: {error}", images.display()))?;
    // A trial, so that a machine without loop devices or ext4 falls back at once instead of
    // failing every task.
    static TRIALS: AtomicU64 = AtomicU64::new(0);
    let trial = images.join(format!(
        "probe-{}-{}",
        std::process::id(),
        TRIALS.fetch_add(1, Ordering::Relaxed)
    ));
    let image = trial.with_extension("img");
    let result = trial_mount(&image, &trial).await;
    let _ = std::fs::remove_dir(&trial);
    let _ = std::fs::remove_file(&image);
    result.map(|()| images)
}

async fn trial_mount(image: &Path, point: &Path) -> Result<(), String> {
    std::fs::File::create(image)
        .and_then(|file| file.set_len(image_bytes(1)))
        .map_err(|error| format!("cannot create {}: {error}", image.display()))?;
    run_tool("mkfs.ext4", &mkfs_args(image)).await?;
    std::fs::create_dir_all(point)
        .map_err(|error| format!("cannot create {}: {error}", point.display()))?;
    mount(image, point).await?;
    let stats = used_bytes(point);
    run_tool("umount", &[point.as_os_str().to_owned()]).await?;
    stats
        .map(|_| ())
        .map_err(|error| format!("cannot read the trial filesystem's usage: {error}"))
}

async fn mount(image: &Path, point: &Path) -> Result<(), String> {
    let args: Vec<OsString> = vec![
        "-t".into(),
        "ext4".into(),
        "-o".into(),
        "loop,noinit_itable".into(),
        image.as_os_str().to_owned(),
        point.as_os_str().to_owned(),
    ];
    run_tool("mount", &args).await
}

/// Copies the layer directory's entries (a new layer holds a few files and directories, and
/// the driver's whiteouts: device nodes and extended attributes, which `cp -a` keeps) onto the
/// quota filesystem mounted at `staging`, drops ext4's `lost+found`, writes the reserve, and
/// gives the filesystem's root the layer directory's mode and owner.
async fn copy_layer(layer_dir: &Path, staging: &Path) -> Result<(), String> {
    std::fs::remove_dir(staging.join("lost+found"))
        .map_err(|error| format!("cannot remove lost+found: {error}"))?;
    let mut from = layer_dir.as_os_str().to_owned();
    from.push("/.");
    run_tool("cp", &["-a".into(), from, staging.as_os_str().to_owned()]).await?;
    let meta = std::fs::metadata(layer_dir)
        .map_err(|error| format!("cannot read {}: {error}", layer_dir.display()))?;
    let reserve = usize::try_from(RESERVE).unwrap_or(usize::MAX);
    std::fs::write(staging.join(RESERVE_FILE), vec![0u8; reserve])
        .and_then(|()| std::os::unix::fs::chown(staging, Some(meta.uid()), Some(meta.gid())))
        .and_then(|()| {
            std::fs::set_permissions(
                staging,
                std::fs::Permissions::from_mode(meta.mode() & 0o7777),
            )
        })
        .map_err(|error| format!("cannot prepare the filesystem's root: {error}"))
}

/// A container's writable layer on its quota filesystem.
#[derive(Debug)]
pub struct LayerDisk {
    /// The layer's directory, where the filesystem is mounted.
    layer_dir: PathBuf,
    /// The filesystem's size in blocks, which tells it from the one beneath once unmounted.
    blocks: u64,
    /// What the filesystem used before the container wrote anything.
    baseline: u64,
}

impl LayerDisk {
    /// Makes the image file `image` for a quota of `disk_mb` MiB, copies `layer_dir`'s entries
    /// in (mounted beside it, at `<image>.mnt`), and mounts it over `layer_dir`. On failure
    /// nothing is left mounted and the image is gone.
    ///
    /// # Errors
    /// What failed: making the filesystem, mounting it, copying.
    pub async fn attach(layer_dir: &Path, image: &Path, disk_mb: u64) -> Result<Self, String> {
        let staging = image.with_extension("mnt");
        let attached = Self::attach_via(layer_dir, image, &staging, disk_mb).await;
        let _ = std::fs::remove_dir(&staging);
        if attached.is_err() {
            let _ = std::fs::remove_file(image);
        }
        attached
    }

    async fn attach_via(
        layer_dir: &Path,
        image: &Path,
        staging: &Path,
        disk_mb: u64,
    ) -> Result<Self, String> {
        std::fs::File::create_new(image)
            .and_then(|file| file.set_len(image_bytes(disk_mb)))
            .map_err(|error| format!("cannot create {}: {error}", image.display()))?;
        run_tool("mkfs.ext4", &mkfs_args(image)).await?;
        std::fs::create_dir(staging)
            .map_err(|error| format!("cannot create {}: {error}", staging.display()))?;
        mount(image, staging).await?;
        let copied = copy_layer(layer_dir, staging).await;
        unmount(staging).await;
        copied?;
        mount(image, layer_dir).await?;
        match used_bytes(layer_dir) {
            Ok((blocks, baseline)) => Ok(Self {
                layer_dir: layer_dir.to_path_buf(),
                blocks,
                baseline,
            }),
            Err(error) => {
                unmount(layer_dir).await;
                Err(format!("cannot read the filesystem's usage: {error}"))
            }
        }
    }

    /// The bytes the container's files take on the filesystem.
    ///
    /// # Errors
    /// `statfs` failed, or the filesystem is no longer mounted (the container is being
    /// removed).
    pub fn usage(&self) -> std::io::Result<u64> {
        let (blocks, used) = used_bytes(&self.layer_dir)?;
        if blocks != self.blocks {
            return Err(std::io::Error::other("the quota filesystem is unmounted"));
        }
        Ok(used.saturating_sub(self.baseline))
    }

    /// Whether the daemon mounted the container's root on this filesystem.
    pub fn seen_by_daemon(&self) -> bool {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        root_is_on_quota(&parse_mountinfo(&mounts), &self.layer_dir)
    }

    fn free_reserve(&self) {
        let _ = std::fs::remove_file(self.layer_dir.join(RESERVE_FILE));
    }
}

/// The file behind the loop device `source` (`/dev/loop3`), as the kernel reports it.
fn loop_backing_file(source: &str) -> Option<PathBuf> {
    let name = source.strip_prefix("/dev/")?;
    if !name.starts_with("loop") || name.contains('/') {
        return None;
    }
    let text = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    let text = text.trim_end_matches('\n');
    Some(PathBuf::from(
        text.strip_suffix(" (deleted)").unwrap_or(text),
    ))
}

/// Unmounts what is mounted at `point` (waiting out a busy filesystem for up to 5 s, then
/// detaching it, so it goes once its last user does).
async fn unmount(point: &Path) {
    let arg = [point.as_os_str().to_owned()];
    for _ in 0..50 {
        if run_tool("umount", &arg).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = run_tool("umount", &["-l".into(), point.as_os_str().to_owned()]).await;
}

/// Unmounts the quota filesystem at `layer_dir` when it is the one of `image`.
async fn unmount_quota(layer_dir: &Path, image: &Path) {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mounts = parse_mountinfo(&mounts);
    let Some(mount) = mount_at(&mounts, layer_dir) else {
        return;
    };
    if loop_backing_file(&mount.source).as_deref() == Some(image) {
        unmount(layer_dir).await;
    }
}

/// Removes image files in `images` whose process is gone and that no loop device uses.
/// Returns how many.
pub fn reap_images(images: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(images) else {
        return 0;
    };
    let in_use: Vec<PathBuf> = std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| loop_backing_file(&format!("/dev/{}", entry.file_name().to_str()?)))
        .collect();
    let mut reaped = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some((pid, start)) = entry.file_name().to_str().and_then(image_owner) else {
            continue;
        };
        // Where the owner's liveness cannot be read, its image stays, as its containers do.
        let gone = reap_verdict(Some(start), read_process(pid)) == Reap::Remove;
        if gone && !in_use.contains(&path) && std::fs::remove_file(&path).is_ok() {
            reaped += 1;
        }
    }
    reaped
}

/// What the watchdog reads.
pub enum Meter {
    /// The quota filesystem's usage.
    Filesystem(Arc<LayerDisk>),
    /// The daemon's size of the writable layer.
    Daemon,
}

/// Where the watchdog is: it stops a task over its quota by restarting its container, and the
/// transport reports that once ([`QuotaState::Reported`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaState {
    /// Under the quota so far.
    Watching,
    /// Over it; the container is being restarted.
    Stopping,
    /// The task's processes were stopped; not reported yet.
    Stopped,
    /// Reported to the task (its sandbox may go on, for the autosubmission).
    Reported,
}

/// Every [`FILESYSTEM_INTERVAL`], or [`daemon_interval`] when it asks the daemon, reads what the container's files take;
/// once that is over `disk_mb` MiB, restarts the container, which kills every process of the
/// task (those holding deleted files too) and keeps its files, and sets `state`. Returns then,
/// or when the container is gone; the transport aborts it at teardown.
pub async fn watch(
    runtime: DockerRuntime,
    container_id: String,
    disk_mb: u64,
    meter: Meter,
    state: Arc<watch::Sender<QuotaState>>,
    restarted_at: Arc<Mutex<f64>>,
) {
    let sizes = Arc::clone(&runtime.sizes);
    let _watched = matches!(meter, Meter::Daemon).then(|| Watched::new(&sizes));
    loop {
        let interval = match meter {
            Meter::Filesystem(_) => FILESYSTEM_INTERVAL,
            Meter::Daemon => daemon_interval(sizes.watched.load(Ordering::Relaxed)),
        };
        tokio::time::sleep(interval).await;
        let used = match &meter {
            Meter::Filesystem(disk) => match disk.usage() {
                Ok(used) => used,
                Err(_) => return,
            },
            Meter::Daemon => {
                let Ok(_turn) = sizes.one_at_a_time.acquire().await else {
                    return;
                };
                sizes.made.fetch_add(1, Ordering::Relaxed);
                let options = InspectContainerOptionsBuilder::default().size(true).build();
                match runtime
                    .docker
                    .inspect_container(&container_id, Some(options))
                    .await
                {
                    Ok(container) => container
                        .size_rw
                        .and_then(|bytes| u64::try_from(bytes).ok())
                        .unwrap_or(0),
                    Err(_) => return,
                }
            }
        };
        if over_quota(used, disk_mb) {
            state.send_replace(QuotaState::Stopping);
            if let Meter::Filesystem(disk) = &meter {
                disk.free_reserve();
            }
            let options = RestartContainerOptionsBuilder::default().t(0).build();
            let _ = runtime
                .docker
                .restart_container(&container_id, Some(options))
                .await;
            // The restart's kill is aci's own, not a stop from outside.
            *restarted_at
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = unix_now();
            state.send_replace(QuotaState::Stopped);
            return;
        }
    }
}

impl DockerRuntime {
    /// How many times the disk watchdogs of this connection asked the daemon for a writable
    /// layer's size (where the quota is only measured).
    pub fn size_inspections(&self) -> u64 {
        self.sizes.made()
    }

    /// How the quota is kept with this daemon: decided at the first call ([`probe`]), which
    /// prints [`DiskMode::warning`] when it is only measured.
    pub(super) async fn disk_mode(&self) -> DiskMode {
        self.disk
            .get_or_init(|| async {
                let mode = match &self.remote {
                    Some(url) => DiskMode::Measured {
                        reason: format!(
                            "the daemon is reached at {url}, so its storage is not on this machine"
                        ),
                    },
                    None => {
                        let info = self.docker.info().await.unwrap_or_default();
                        probe(info.docker_root_dir, info.driver).await
                    }
                };
                if let Some(warning) = mode.warning() {
                    eprintln!("{warning}");
                }
                mode
            })
            .await
            .clone()
    }

    /// Deletes the quota image files that aci processes which are gone left behind (their
    /// containers reaped first): [`reap_images`] in the daemon's root directory.
    pub(super) async fn reap_disk_images(&self) {
        // Only root can have made them, or can delete them; a remote daemon's are not here.
        if effective_uid() != Some(0) || self.remote.is_some() {
            return;
        }
        if let Ok(Some(root)) = self.docker_root_dir().await {
            let images = Path::new(&root).join(IMAGES_DIR);
            let _ = tokio::task::spawn_blocking(move || reap_images(&images)).await;
        }
    }

    /// The directory of `container_id`'s writable layer, as its storage driver reports it.
    pub(super) async fn layer_dir(&self, container_id: &str) -> Option<PathBuf> {
        let container = self
            .docker
            .inspect_container(container_id, None)
            .await
            .ok()?;
        let data = container.graph_driver?.data;
        layer_dir(data.get("UpperDir")?, data.get("WorkDir")?)
    }

    /// Puts `container_id`'s writable layer (not started yet) on a filesystem of `disk_mb` MiB
    /// whose image is `image`.
    pub(super) async fn attach_disk(
        &self,
        container_id: &str,
        image: &Path,
        disk_mb: u64,
    ) -> Result<LayerDisk, String> {
        let layer_dir = self.layer_dir(container_id).await.ok_or_else(|| {
            "the storage driver reports no writable layer directory for the container".to_owned()
        })?;
        LayerDisk::attach(&layer_dir, image, disk_mb).await
    }

    /// Before `container_id` is removed: when it has a quota filesystem (its `aci.disk_image`
    /// label), stops it so the daemon unmounts its root, and unmounts the filesystem. Returns
    /// the image file, to delete once the container is gone.
    pub(super) async fn release_disk(&self, container_id: &str) -> Option<PathBuf> {
        let container = self
            .docker
            .inspect_container(container_id, None)
            .await
            .ok()?;
        let label = container.config?.labels?.remove(LABEL_DISK)?;
        let image = checked_image(&label)?;
        let options = StopContainerOptionsBuilder::default().t(0).build();
        let _ = self
            .docker
            .stop_container(container_id, Some(options))
            .await;
        let layer = container.graph_driver.and_then(|driver| {
            layer_dir(driver.data.get("UpperDir")?, driver.data.get("WorkDir")?)
        });
        if let Some(layer) = layer {
            unmount_quota(&layer, &image).await;
        }
        Some(image)
    }
}

#[cfg(test)]
mod tests;
