//! Tests of the safe subPath code on the real filesystem (the mount ones need root, as the
//! kubelet does).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Volume `vol` with directory `vol/dir/file`, and `outside/secret` next to it.
fn layout() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let vol = tmp.path().join("vol");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(vol.join("dir")).unwrap();
    std::fs::write(vol.join("dir/file"), b"inside").unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"host").unwrap();
    (tmp, vol, outside)
}

/// Where an open descriptor points (`/proc/self/fd/N`).
fn fd_path(fd: &OwnedFd) -> PathBuf {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap()
}

#[test]
fn clean_and_within_base_are_lexical_as_upstream() {
    assert_eq!(clean(Path::new("/a/b/../c/./d//")), PathBuf::from("/a/c/d"));
    assert_eq!(clean(Path::new("/../a")), PathBuf::from("/a"));
    assert!(path_within_base(Path::new("/v/x"), Path::new("/v")));
    assert!(path_within_base(Path::new("/v"), Path::new("/v/")));
    assert!(!path_within_base(Path::new("/v/../w"), Path::new("/v")));
    assert!(!path_within_base(Path::new("/vx"), Path::new("/v")));
}

#[test]
fn safe_open_follows_plain_components() {
    let (_tmp, vol, _) = layout();
    let fd = do_safe_open(&vol.join("dir/file"), &vol).unwrap();
    assert_eq!(fd_path(&fd), vol.join("dir/file").canonicalize().unwrap());
    let fd = do_safe_open(&vol, &vol).unwrap();
    assert_eq!(fd_path(&fd), vol.canonicalize().unwrap());
}

#[test]
fn safe_open_refuses_any_symlink_component() {
    let (_tmp, vol, outside) = layout();
    symlink(&outside, vol.join("out")).unwrap();
    symlink("dir", vol.join("in")).unwrap();
    for p in ["out", "out/secret", "in/file"] {
        let err = do_safe_open(&vol.join(p), &vol).unwrap_err().to_string();
        assert!(
            err.contains("unexpected symlink found") || err.contains("cannot open"),
            "{p}: {err}"
        );
    }
    let err = do_safe_open(&outside.join("secret"), &vol).unwrap_err();
    assert!(err.to_string().contains("outside of allowed base"), "{err}");
}

/// Swaps `vol/x` and `vol/swap` (a directory and a symlink out of the volume) with
/// `RENAME_EXCHANGE` until told to stop, sleeping `pause` between swaps; returns the swap
/// count when joined.
fn spawn_swapper(
    vol: &Path,
    pause: Option<std::time::Duration>,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<u64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (vol, flag) = (vol.to_path_buf(), stop.clone());
    let swapper = std::thread::spawn(move || {
        let dir = std::fs::File::open(&vol).unwrap();
        let mut swaps = 0u64;
        while !flag.load(Ordering::Relaxed) {
            nix::fcntl::renameat2(
                &dir,
                "x",
                &dir,
                "swap",
                nix::fcntl::RenameFlags::RENAME_EXCHANGE,
            )
            .unwrap();
            swaps += 1;
            if let Some(p) = pause {
                std::thread::sleep(p);
            }
        }
        swaps
    });
    (stop, swapper)
}

/// CVE-2021-25741: a component swapped between a directory and a symlink to the host while
/// the kubelet opens the path. Whatever the interleaving, the open either fails or yields
/// a descriptor inside the volume.
#[test]
fn safe_open_is_immune_to_a_concurrently_swapped_component() {
    let (_tmp, vol, outside) = layout();
    std::fs::create_dir_all(vol.join("x")).unwrap();
    std::fs::write(vol.join("x/secret"), b"inside").unwrap();
    symlink(&outside, vol.join("swap")).unwrap();
    let (stop, swapper) = spawn_swapper(&vol, None);
    let vol_real = vol.canonicalize().unwrap();
    let (mut opened, mut refused) = (0, 0);
    for i in 0..200_000 {
        if i >= 20_000 && refused > 0 && opened > 0 {
            break;
        }
        match do_safe_open(&vol.join("x/secret"), &vol) {
            Ok(fd) => {
                let p = fd_path(&fd);
                assert!(p.starts_with(&vol_real), "escaped the volume to {p:?}");
                opened += 1;
            }
            Err(_) => refused += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0);
    assert!(
        refused > 0 && opened > 0,
        "{opened} opened, {refused} refused"
    );
}

#[test]
fn safe_make_dir_creates_with_perm_and_refuses_symlinks_out() {
    let (_tmp, vol, outside) = layout();
    safe_make_dir(Path::new("a/b/c"), &vol, 0o2775).unwrap();
    let mode = std::fs::metadata(vol.join("a/b/c"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o2775);
    symlink(&outside, vol.join("out")).unwrap();
    let err = safe_make_dir(Path::new("out/new"), &vol, 0o755).unwrap_err();
    assert!(err.to_string().contains("outside of allowed base"), "{err}");
    assert!(!outside.join("new").exists());
    // A dangling symlink planted where the directory should go is not followed.
    symlink(outside.join("gone"), vol.join("dangling")).unwrap();
    assert!(safe_make_dir(Path::new("dangling"), &vol, 0o755).is_err());
    assert!(!outside.join("gone").exists());
    // Existing directory: nothing to do.
    safe_make_dir(Path::new("dir"), &vol, 0o755).unwrap();
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn subpath(tmp: &Path, vol: &Path, sub: &str, index: usize) -> Subpath {
    Subpath {
        volume_mount_index: index,
        path: vol.join(sub),
        volume_name: "vol".into(),
        volume_path: vol.to_path_buf(),
        pod_dir: tmp.join("pod"),
        container_name: "c".into(),
    }
}

/// Mount tests need CAP_SYS_ADMIN (the kubelet runs as root).
fn require_root() -> bool {
    if is_root() {
        return true;
    }
    assert!(
        std::env::var("KRS_SKIP_RUNTIME_TESTS").as_deref() == Ok("1"),
        "bind-mount tests need root (set KRS_SKIP_RUNTIME_TESTS=1 to skip)"
    );
    false
}

#[test]
fn bind_subpath_mounts_the_opened_file_and_cleanup_unmounts() {
    if !require_root() {
        return;
    }
    let (tmp, vol, outside) = layout();
    let dir = subpath(tmp.path(), &vol, "dir", 0);
    let target = do_bind_subpath(&dir).unwrap();
    assert_eq!(target, tmp.path().join("pod/volume-subpaths/vol/c/0"));
    assert!(!is_not_mount_point(&target).unwrap());
    assert_eq!(std::fs::read(target.join("file")).unwrap(), b"inside");
    // Idempotent: the same file is already mounted.
    assert_eq!(do_bind_subpath(&dir).unwrap(), target);
    let file = subpath(tmp.path(), &vol, "dir/file", 1);
    let file_target = do_bind_subpath(&file).unwrap();
    assert_eq!(std::fs::read(&file_target).unwrap(), b"inside");

    symlink(&outside, vol.join("out")).unwrap();
    let err = do_bind_subpath(&subpath(tmp.path(), &vol, "out", 2)).unwrap_err();
    assert!(err.to_string().contains("not within volume path"), "{err}");
    assert!(!tmp.path().join("pod/volume-subpaths/vol/c/2").exists());

    do_clean_sub_paths(&tmp.path().join("pod"), "vol").unwrap();
    assert!(!tmp.path().join("pod/volume-subpaths").exists());
    assert_eq!(std::fs::read(vol.join("dir/file")).unwrap(), b"inside");
    assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"host");
}

/// The whole PrepareSafeSubpath under a concurrent directory/symlink swap: every mount that
/// succeeds shows the volume's directory, never the host one.
#[test]
fn bind_subpath_never_mounts_outside_under_a_swap_race() {
    if !require_root() {
        return;
    }
    let (tmp, vol, outside) = layout();
    std::fs::create_dir_all(vol.join("x")).unwrap();
    std::fs::write(vol.join("x/marker"), b"inside").unwrap();
    symlink(&outside, vol.join("swap")).unwrap();
    // Leave stable windows too, so that some mounts succeed.
    let (stop, swapper) = spawn_swapper(&vol, Some(std::time::Duration::from_micros(20)));
    let pod_dir = tmp.path().join("pod");
    let (mut mounted, mut refused) = (0, 0);
    // At least 400 mounts, and on until both outcomes were seen (a busy machine may not
    // schedule the swapper for a while).
    for i in 0..20_000 {
        if i >= 400 && mounted > 0 && refused > 0 {
            break;
        }
        match do_bind_subpath(&subpath(tmp.path(), &vol, "x", i)) {
            Ok(target) => {
                assert!(
                    !target.join("secret").exists(),
                    "attempt {i}: the host directory was mounted"
                );
                assert!(target.join("marker").exists(), "attempt {i}");
                mounted += 1;
            }
            Err(_) => refused += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    do_clean_sub_paths(&pod_dir, "vol").unwrap();
    assert!(!pod_dir.join("volume-subpaths").exists());
    assert!(
        refused > 0 && mounted > 0,
        "{mounted} mounted, {refused} refused"
    );
}

#[test]
fn mountinfo_paths_are_unescaped() {
    assert_eq!(unescape_mountinfo("/a\\040b\\011c"), "/a b\tc");
    assert_eq!(unescape_mountinfo("/plain\\"), "/plain\\");
}

/// `securejoin.SecureJoin` and the symlink-free open on the real filesystem (the
/// `fileKeyRef` reader).
#[test]
fn secure_join_and_open_stay_in_the_volume() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside.env");
    std::fs::write(&outside, "K='host'\n").unwrap();
    let vol = dir.path().join("vol");
    std::fs::create_dir_all(vol.join("sub")).unwrap();
    std::fs::write(vol.join("sub/k.env"), "K='inside'\n").unwrap();
    std::os::unix::fs::symlink("sub/k.env", vol.join("inner")).unwrap();
    std::os::unix::fs::symlink(&outside, vol.join("abs")).unwrap();
    std::os::unix::fs::symlink("../outside.env", vol.join("rel")).unwrap();
    std::os::unix::fs::symlink("loop", vol.join("loop")).unwrap();
    let read = |p: &Path| {
        let mut s = String::new();
        open_regular_file_in(p, &vol)
            .map(|mut f| f.read_to_string(&mut s).map(|_| s))
            .and_then(|r| r)
    };

    let inner = secure_join_host(&vol, "inner").unwrap();
    assert_eq!(inner, vol.join("sub/k.env"));
    assert_eq!(read(&inner).unwrap(), "K='inside'\n");
    // Absolute and relative ways out resolve below the volume root.
    assert_eq!(
        secure_join_host(&vol, "abs").unwrap(),
        vol.join(outside.strip_prefix("/").unwrap())
    );
    assert_eq!(
        secure_join_host(&vol, "rel").unwrap(),
        vol.join("outside.env")
    );
    assert_eq!(secure_join_host(&vol, "../../x").unwrap(), vol.join("x"));
    assert!(read(&secure_join_host(&vol, "rel").unwrap()).is_err());
    // A loop ends after 255 links.
    let e = secure_join_host(&vol, "loop").unwrap_err();
    assert!(
        e.to_string().contains("too many levels of symbolic links"),
        "{e}"
    );
    // A path that is (or goes through) a symlink is never opened: e.g. swapped after
    // the join.
    let e = read(&vol.join("abs")).unwrap_err();
    assert!(e.to_string().contains("unexpected symlink"), "{e}");
    // Only regular files: a fifo would block the kubelet.
    nix::unistd::mkfifo(&vol.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let e = read(&vol.join("fifo")).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    let e = read(&vol.join("sub")).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    // Outside the base lexically.
    assert!(read(&outside).is_err());
}
