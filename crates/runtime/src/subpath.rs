//! Safe `subPath` mounts (upstream `pkg/volume/util/subpath/subpath_linux.go`).
//!
//! A `subPath` names a path inside a volume that a container may have written itself, so
//! any component may be a symlink planted to escape the volume (CVE-2017-1002101), or be
//! swapped for one while the kubelet looks at it (CVE-2021-25741). As upstream, the path is
//! never handed to the runtime: [`do_bind_subpath`] opens it component by component with
//! `openat(O_NOFOLLOW|O_PATH)` from the volume root (refusing any symlink and anything that
//! leaves the volume), then bind-mounts the opened descriptor (`/proc/<pid>/fd/<fd>`, which
//! the container cannot redirect) onto
//! `<pod-dir>/volume-subpaths/<volume>/<container>/<mount index>`, and that target is what
//! the runtime receives. [`do_clean_sub_paths`] unmounts and removes those targets when the
//! pod's volumes go (upstream `CleanSubPaths`). [`do_safe_make_dir`] creates a missing
//! `subPath` directory the same way (`SafeMakeDir`).
//!
//! The runtime manager reaches these through [`crate::os::OsInterface`] (`RealOs` calls
//! them; `FakeOs` simulates them).

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

pub use kubelet_config::fs::clean;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, open, openat};
use nix::sys::stat::{Mode, SFlag, fchmod, fstat, fstatat, mkdirat};

/// Directory of a pod holding the subPath bind mounts (`containerSubPathDirectoryName`).
pub const CONTAINER_SUBPATH_DIRECTORY_NAME: &str = "volume-subpaths";

/// One `subPath` of one container's volume mount (upstream `subpath.Subpath`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subpath {
    /// Index of the mount in the container's `volumeMounts`.
    pub volume_mount_index: usize,
    /// Full path of the subPath on the host (volume path joined with the subPath).
    pub path: PathBuf,
    /// Name of the volume in the pod spec.
    pub volume_name: String,
    /// Host path of the volume.
    pub volume_path: PathBuf,
    /// `<root-dir>/pods/<uid>`.
    pub pod_dir: PathBuf,
    /// Name of the container.
    pub container_name: String,
}

/// `getSubpathBindTarget`: `<pod-dir>/volume-subpaths/<volume>/<container>/<index>`.
pub fn subpath_bind_target(subpath: &Subpath) -> PathBuf {
    subpath
        .pod_dir
        .join(CONTAINER_SUBPATH_DIRECTORY_NAME)
        .join(&subpath.volume_name)
        .join(&subpath.container_name)
        .join(subpath.volume_mount_index.to_string())
}

/// `mount.PathWithinBase`: `full` is `base` or below it, lexically.
pub fn path_within_base(full: &Path, base: &Path) -> bool {
    clean(full).starts_with(clean(base))
}

/// The components of `pathname` below `base` (`["."]` for `base` itself), or `None` when it
/// is not within `base`.
fn relative_segments(pathname: &Path, base: &Path) -> Option<Vec<OsString>> {
    let rel = clean(pathname)
        .strip_prefix(clean(base))
        .ok()?
        .to_path_buf();
    let segments: Vec<OsString> = rel.iter().map(|s| s.to_os_string()).collect();
    if segments.is_empty() {
        return Some(vec![OsString::from(".")]);
    }
    Some(segments)
}

fn other(msg: String) -> io::Error {
    io::Error::other(msg)
}

fn from_errno(e: Errno, msg: String) -> io::Error {
    io::Error::new(io::Error::from(e).kind(), msg)
}

/// `syscall.Openat` flags used to traverse directories not following symlinks.
fn nofollow_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

/// Flags for getting a file descriptor without following a symlink.
fn open_fd_flags() -> OFlag {
    OFlag::O_NOFOLLOW | OFlag::O_PATH | OFlag::O_CLOEXEC
}

/// `doSafeOpen`: opens `pathname` (symlinks already resolved by the caller) walking each
/// component from `base` with `openat(O_NOFOLLOW|O_PATH)`; a symlink anywhere, or a
/// component leaving `base`, is an error. The returned descriptor pins the file: swapping a
/// component afterwards changes nothing it points at.
pub fn do_safe_open(pathname: &Path, base: &Path) -> io::Result<OwnedFd> {
    let pathname = clean(pathname);
    let base = clean(base);
    let segments = relative_segments(&pathname, &base).ok_or_else(|| {
        other(format!(
            "path {} is outside of allowed base {}",
            pathname.display(),
            base.display()
        ))
    })?;
    // The base is the only directory we have under control; it may not be a symlink.
    let mut parent = open(&base, nofollow_flags(), Mode::empty())
        .map_err(|e| from_errno(e, format!("cannot open directory {}: {e}", base.display())))?;
    let mut current = base.clone();
    for seg in segments {
        current = clean(&current.join(&seg));
        if !path_within_base(&current, &base) {
            return Err(other(format!(
                "path {} is outside of allowed base {}",
                current.display(),
                base.display()
            )));
        }
        // Trigger an automount if it is an auto-mounted directory (the trailing slash is
        // mandatory); errors (not a directory) do not matter.
        let mut with_slash = seg.clone();
        with_slash.push("/");
        let _ = fstatat(
            &parent,
            with_slash.as_os_str(),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        );
        let child = openat(&parent, seg.as_os_str(), open_fd_flags(), Mode::empty())
            .map_err(|e| from_errno(e, format!("cannot open {}: {e}", current.display())))?;
        let st = fstat(&child).map_err(|e| {
            from_errno(
                e,
                format!("error running fstat on {} with {e}", current.display()),
            )
        })?;
        if st.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFLNK.bits() {
            return Err(other(format!(
                "unexpected symlink found {}",
                current.display()
            )));
        }
        parent = child;
    }
    Ok(parent)
}

/// `findExistingPrefix`: the longest existing prefix of `pathname` below `base` and the
/// components that do not exist yet.
fn find_existing_prefix(base: &Path, pathname: &Path) -> io::Result<(PathBuf, Vec<OsString>)> {
    let dirs = relative_segments(pathname, base).ok_or_else(|| {
        other(format!(
            "path {} is outside of allowed base {}",
            pathname.display(),
            base.display()
        ))
    })?;
    let mut fd = open(base, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty())
        .map_err(|e| from_errno(e, format!("error opening {}: {e}", base.display())))?;
    let mut current = base.to_path_buf();
    for (i, dir) in dirs.iter().enumerate() {
        // O_PATH: no hang when the user replaced the directory with a fifo.
        match openat(
            &fd,
            dir.as_os_str(),
            OFlag::O_PATH | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            Ok(child) => {
                fd = child;
                current = current.join(dir);
            }
            Err(Errno::ENOENT) => return Ok((current, dirs[i..].to_vec())),
            Err(e) => return Err(io::Error::from(e)),
        }
    }
    Ok((pathname.to_path_buf(), Vec::new()))
}

/// `doSafeMakeDir`: creates directory `pathname` (and missing parents) only within `base`,
/// never following a symlink out of it; every created directory gets `perm` (permission
/// and setuid/setgid/sticky bits).
pub fn do_safe_make_dir(pathname: &Path, base: &Path, perm: u32) -> io::Result<()> {
    if !path_within_base(pathname, base) {
        return Err(other(format!(
            "path {} is outside of allowed base {}",
            pathname.display(),
            base.display()
        )));
    }
    match std::fs::metadata(pathname) {
        // It can be outside of the parent, but there is no race-proof check.
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => {
            return Err(from_errno(
                Errno::ENOTDIR,
                format!("mkdir {}: not a directory", pathname.display()),
            ));
        }
        Err(_) => {}
    }
    let (existing, to_create) = find_existing_prefix(base, pathname).map_err(|e| {
        other(format!(
            "error opening directory {}: {e}",
            pathname.display()
        ))
    })?;
    let full_existing = std::fs::canonicalize(&existing).map_err(|e| {
        other(format!(
            "error opening directory {}: {e}",
            existing.display()
        ))
    })?;
    if !path_within_base(&full_existing, base) {
        return Err(other(format!(
            "path {} is outside of allowed base {}",
            full_existing.display(),
            base.display()
        )));
    }
    let mut parent = do_safe_open(&full_existing, base)
        .map_err(|e| other(format!("cannot open directory {}: {e}", existing.display())))?;
    let mode = Mode::from_bits_truncate(perm & 0o7777);
    let mut current = full_existing;
    for dir in to_create {
        current = current.join(&dir);
        mkdirat(&parent, dir.as_os_str(), mode).map_err(|e| {
            from_errno(
                e,
                format!("cannot create directory {}: {e}", current.display()),
            )
        })?;
        // Created by us, but it may have been replaced since: O_NOFOLLOW refuses a symlink;
        // any other kind either fails the next mkdirat or is mounted, which the user could
        // already access.
        parent = openat(&parent, dir.as_os_str(), nofollow_flags(), Mode::empty())
            .map_err(|e| from_errno(e, format!("cannot open {}: {e}", current.display())))?;
        // mkdirat honoured the umask; set the exact bits.
        fchmod(&parent, mode)
            .map_err(|e| from_errno(e, format!("chmod {:?} failed: {e}", current)))?;
    }
    Ok(())
}

/// `SafeMakeDir`: `subdir` below `base`, with the symlinks of `base` itself resolved first.
pub fn safe_make_dir(subdir: &Path, base: &Path, perm: u32) -> io::Result<()> {
    let real_base = std::fs::canonicalize(base).map_err(|e| {
        other(format!(
            "error resolving symlinks in {}: {e}",
            base.display()
        ))
    })?;
    do_safe_make_dir(&real_base.join(subdir), &real_base, perm)
}

/// `securejoin.MaxSymlinkLimit`: symlinks [`secure_join`] follows before giving up.
pub const MAX_SYMLINK_LIMIT: usize = 255;

/// `securejoin.SecureJoinVFS` (github.com/cyphar/filepath-securejoin): `unsafe_path` joined
/// to `root` as if `root` were the filesystem root. Each component is applied lexically
/// (`..` stops at `root`); a symlink met on the way is expanded in place, an absolute
/// target restarting from `root`, so the result never leaves `root`. `symlink_target`
/// returns a path's target when it is a symlink, `None` when it is something else or does
/// not exist (the rest of the path then joins lexically). `root` itself is not resolved.
pub fn secure_join(
    root: &Path,
    unsafe_path: &str,
    symlink_target: &dyn Fn(&Path) -> io::Result<Option<PathBuf>>,
) -> io::Result<PathBuf> {
    if format!("/{}/", root.to_string_lossy()).contains("/../") {
        return Err(other(
            "root path provided to SecureJoin contains '..' components".to_string(),
        ));
    }
    let mut current: Vec<OsString> = Vec::new();
    let mut remaining = unsafe_path.to_string();
    let mut links_walked = 0;
    while !remaining.is_empty() {
        let (part, rest) = match remaining.split_once('/') {
            Some((part, rest)) => (part.to_string(), rest.to_string()),
            None => (std::mem::take(&mut remaining), String::new()),
        };
        remaining = rest;
        match part.as_str() {
            "" | "." => continue,
            ".." => {
                current.pop();
                continue;
            }
            _ => {}
        }
        current.push(OsString::from(&part));
        let full: PathBuf = std::iter::once(root.as_os_str().to_os_string())
            .chain(current.iter().cloned())
            .collect();
        let Some(target) = symlink_target(&full)? else {
            continue;
        };
        // A symlink: its target replaces it in the yet-unparsed path.
        current.pop();
        links_walked += 1;
        if links_walked > MAX_SYMLINK_LIMIT {
            return Err(other(format!(
                "SecureJoin {}/{unsafe_path}: too many levels of symbolic links",
                root.display()
            )));
        }
        let target = target.to_string_lossy().into_owned();
        if target.starts_with('/') {
            current.clear();
        }
        remaining = format!("{target}/{remaining}");
    }
    Ok(current.iter().fold(root.to_path_buf(), |p, c| p.join(c)))
}

/// [`secure_join`] on the host filesystem (`os.Lstat`/`os.Readlink`).
pub fn secure_join_host(root: &Path, unsafe_path: &str) -> io::Result<PathBuf> {
    secure_join(root, unsafe_path, &|p| match std::fs::symlink_metadata(p) {
        Ok(m) if m.file_type().is_symlink() => std::fs::read_link(p)
            .map(Some)
            .map_err(|e| other(format!("readlink {}: {e}", p.display()))),
        Ok(_) => Ok(None),
        // `securejoin.IsNotExist`: ENOENT and ENOTDIR.
        Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(20) => Ok(None),
        Err(e) => Err(other(format!("lstat {}: {e}", p.display()))),
    })
}

/// Opens regular file `pathname` below `base` for reading, never through a symlink (each
/// component opened with [`do_safe_open`]): a component swapped for a symlink after
/// [`secure_join`] resolved the path is an error, not a way out of `base`. Anything but a
/// regular file is refused (a fifo would block the reader forever).
pub fn open_regular_file_in(pathname: &Path, base: &Path) -> io::Result<std::fs::File> {
    let fd = do_safe_open(pathname, base)?;
    let st = fstat(&fd).map_err(|e| from_errno(e, format!("fstat {}: {e}", pathname.display())))?;
    if st.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFREG.bits() {
        return Err(other(format!(
            "{} is not a regular file",
            pathname.display()
        )));
    }
    // Re-open the pinned file (an O_PATH descriptor cannot be read).
    std::fs::File::open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Decodes the octal escapes (`\040` ...) of a `/proc/self/mountinfo` path.
fn unescape_mountinfo(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `mount.IsNotMountPoint` (with the mount table check, so bind mounts of the same
/// filesystem are seen): false when `path` is a mount point. A missing path is an error.
pub fn is_not_mount_point(path: &Path) -> io::Result<bool> {
    std::fs::symlink_metadata(path)?;
    let resolved = std::fs::canonicalize(path)?;
    let table = std::fs::read_to_string("/proc/self/mountinfo")?;
    let mounted = table
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|mp| Path::new(&unescape_mountinfo(mp)) == resolved);
    Ok(!mounted)
}

/// `checkSubPathFileEqual`: the bind target shows the same file as the subPath.
fn check_sub_path_file_equal(subpath: &Subpath, target: &Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let s = std::fs::symlink_metadata(&subpath.path)
        .map_err(|e| other(format!("stat {} failed: {e}", subpath.path.display())))?;
    let t = std::fs::symlink_metadata(target)
        .map_err(|e| other(format!("lstat {} failed: {e}", target.display())))?;
    Ok(s.dev() == t.dev() && s.ino() == t.ino())
}

/// `prepareSubpathTarget`: creates the bind target (a directory for a directory, an empty
/// file for anything else); `true` when the right thing is already mounted there.
fn prepare_subpath_target(subpath: &Subpath) -> io::Result<(bool, PathBuf)> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let target = subpath_bind_target(subpath);
    let not_mnt = match is_not_mount_point(&target) {
        Ok(v) => v,
        Err(e) if e.kind() == io::ErrorKind::NotFound => true,
        Err(e) => {
            return Err(other(format!(
                "error checking path {} for mount: {e}",
                target.display()
            )));
        }
    };
    if !not_mnt {
        let same = check_sub_path_file_equal(subpath, &target).map_err(|e| {
            other(format!(
                "error checking subpath mount info for {}: {e}",
                target.display()
            ))
        })?;
        if same {
            tracing::debug!(target = %target.display(), "Skipping bind-mounting subpath: already mounted");
            return Ok((true, target));
        }
        nix::mount::umount(&target)
            .map_err(|e| other(format!("error ummounting {}: {e}", target.display())))?;
    }
    if let Some(parent) = target.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o750)
            .create(parent)
            .map_err(|e| {
                other(format!(
                    "error creating directory {}: {e}",
                    parent.display()
                ))
            })?;
    }
    let t = std::fs::symlink_metadata(&subpath.path)
        .map_err(|e| other(format!("lstat {} failed: {e}", subpath.path.display())))?;
    if t.is_dir() {
        match std::fs::DirBuilder::new().mode(0o750).create(&target) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(other(format!(
                    "error creating directory {}: {e}",
                    target.display()
                )));
            }
        }
    } else {
        // A file is enough for every other kind: bind-mounting onto it changes its type.
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o640)
            .open(&target)
            .map_err(|e| other(format!("error creating file {}: {e}", target.display())))?;
    }
    Ok((false, target))
}

/// `doBindSubPath` (`PrepareSafeSubpath`): the bind target of `subpath`, mounted.
pub fn do_bind_subpath(subpath: &Subpath) -> io::Result<PathBuf> {
    // Evaluate all symlinks once here for everything that follows.
    let volume_path = std::fs::canonicalize(&subpath.volume_path).map_err(|e| {
        other(format!(
            "error resolving symlinks in {:?}: {e}",
            subpath.volume_path
        ))
    })?;
    let path = std::fs::canonicalize(&subpath.path).map_err(|e| {
        other(format!(
            "error resolving symlinks in {:?}: {e}",
            subpath.path
        ))
    })?;
    let subpath = Subpath {
        volume_path,
        path,
        ..subpath.clone()
    };
    if !path_within_base(&subpath.path, &subpath.volume_path) {
        return Err(other(format!(
            "subpath {:?} not within volume path {:?}",
            subpath.path, subpath.volume_path
        )));
    }
    let fd = do_safe_open(&subpath.path, &subpath.volume_path).map_err(|e| {
        other(format!(
            "error opening subpath {}: {e}",
            subpath.path.display()
        ))
    })?;
    let (already_mounted, target) = prepare_subpath_target(&subpath)?;
    if already_mounted {
        return Ok(target);
    }
    // The container cannot make /proc/<kubelet pid>/fd/<fd> point anywhere else.
    let source = format!("/proc/{}/fd/{}", std::process::id(), fd.as_raw_fd());
    let mounted = nix::mount::mount(
        Some(source.as_str()),
        &target,
        None::<&str>,
        nix::mount::MsFlags::MS_BIND,
        None::<&str>,
    );
    drop(fd);
    if let Err(e) = mounted {
        if let Err(clean_err) = clean_sub_path(&subpath) {
            tracing::error!(target = %target.display(), error = %clean_err, "Failed to clean subpath");
        }
        return Err(other(format!(
            "error mounting {}: {e}",
            subpath.path.display()
        )));
    }
    tracing::info!(subpath = %subpath.path.display(), target = %target.display(), "Bound SubPath");
    Ok(target)
}

/// `mount.CleanupMountPoint` with the mount-table check: unmounts `path` if it is a mount
/// point, then removes it.
fn cleanup_mount_point(path: &Path) -> io::Result<()> {
    let not_mnt = match is_not_mount_point(path) {
        Ok(v) => v,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !not_mnt {
        nix::mount::umount(path).map_err(io::Error::from)?;
        if !is_not_mount_point(path)? {
            return Err(other(format!("failed to unmount path {}", path.display())));
        }
    }
    match std::fs::remove_dir(path) {
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => std::fs::remove_file(path),
        r => r,
    }
}

/// `doCleanSubPath`: unmounts and removes `<container dir>/<index>`.
fn do_clean_sub_path(container_dir: &Path, index: &str) -> io::Result<()> {
    let full = container_dir.join(index);
    cleanup_mount_point(&full).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("error cleaning subpath mount {}: {e}", full.display()),
        )
    })
}

/// `removeEmptyDirs`: removes `end_dir` and its parents up to (not including) `base_dir`
/// while they are empty.
fn remove_empty_dirs(base_dir: &Path, end_dir: &Path) -> io::Result<()> {
    if !path_within_base(end_dir, base_dir) {
        return Err(other(format!(
            "endDir {:?} is not within baseDir {:?}",
            end_dir, base_dir
        )));
    }
    let base = clean(base_dir);
    let mut cur = clean(end_dir);
    while cur != base {
        match std::fs::metadata(&cur) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(other(format!("error stat {:?}: {e}", cur))),
            Ok(m) if !m.is_dir() => return Err(other(format!("path {:?} not a directory", cur))),
            Ok(_) => match std::fs::remove_dir(&cur) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => break,
                Err(e) => {
                    return Err(other(format!("error removing directory {:?}: {e}", cur)));
                }
            },
        }
        match cur.parent() {
            Some(p) => cur = p.to_path_buf(),
            None => break,
        }
    }
    Ok(())
}

/// `cleanSubPath`: tears down one subPath bind mount and the directories left empty.
fn clean_sub_path(subpath: &Subpath) -> io::Result<()> {
    let container_dir = subpath
        .pod_dir
        .join(CONTAINER_SUBPATH_DIRECTORY_NAME)
        .join(&subpath.volume_name)
        .join(&subpath.container_name);
    match do_clean_sub_path(&container_dir, &subpath.volume_mount_index.to_string()) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    remove_empty_dirs(&subpath.pod_dir, &container_dir)
}

/// `doCleanSubPaths` (`CleanSubPaths`): unmounts and removes every subPath bind mount of
/// `volume_name` under `pod_dir`, then the directories holding them.
pub fn do_clean_sub_paths(pod_dir: &Path, volume_name: &str) -> io::Result<()> {
    let sub_path_dir = pod_dir
        .join(CONTAINER_SUBPATH_DIRECTORY_NAME)
        .join(volume_name);
    let container_dirs = match std::fs::read_dir(&sub_path_dir) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(other(format!(
                "error reading {}: {e}",
                sub_path_dir.display()
            )));
        }
    };
    for container_dir in container_dirs {
        let container_dir = container_dir?;
        if !container_dir.file_type()?.is_dir() {
            tracing::debug!(name = ?container_dir.file_name(), "Container file is not a directory");
            continue;
        }
        let full_container_dir = container_dir.path();
        // Only the first level: the mounts; never descend into a mounted volume.
        for entry in std::fs::read_dir(&full_container_dir)? {
            let name = entry?.file_name();
            do_clean_sub_path(&full_container_dir, &name.to_string_lossy()).map_err(|e| {
                other(format!(
                    "error processing {}: {e}",
                    full_container_dir.display()
                ))
            })?;
        }
        std::fs::remove_dir(&full_container_dir).map_err(|e| {
            other(format!(
                "error deleting {}: {e}",
                full_container_dir.display()
            ))
        })?;
    }
    std::fs::remove_dir(&sub_path_dir)
        .map_err(|e| other(format!("error deleting {}: {e}", sub_path_dir.display())))?;
    // The whole subpath directory goes when it was the last volume.
    let pod_sub_path_dir = pod_dir.join(CONTAINER_SUBPATH_DIRECTORY_NAME);
    match std::fs::remove_dir(&pod_sub_path_dir) {
        Err(e) if e.kind() != io::ErrorKind::DirectoryNotEmpty => Err(other(format!(
            "error deleting {}: {e}",
            pod_sub_path_dir.display()
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "subpath_tests.rs"]
mod tests;
