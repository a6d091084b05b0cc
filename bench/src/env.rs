//! The machine side: bringing up the private containerd (`hack/runtime-up.sh`), free local
//! ports, load average, and other kubelets that would disturb the measurement.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{BenchError, BenchResult};

/// What `hack/runtime-up.sh` printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeInfo {
    /// `CONTAINER_RUNTIME_ENDPOINT` (`unix:///...`).
    pub endpoint: String,
    /// `KRS_BUSYBOX_IMAGE`.
    pub busybox_image: String,
}

/// The repository root this crate was built from (`bench/..`).
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_owned()
}

/// Runs `<repo>/hack/runtime-up.sh` and reads its `KEY=value` lines.
pub fn runtime_up(repo: &Path) -> BenchResult<RuntimeInfo> {
    let script = repo.join("hack/runtime-up.sh");
    let out = Command::new(&script)
        .output()
        .map_err(BenchError::io("run", &script))?;
    if !out.status.success() {
        return Err(BenchError::RuntimeUp(format!(
            "{} ({}):\n{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    parse_runtime_up(&String::from_utf8_lossy(&out.stdout))
}

/// Parses the stdout of `runtime-up.sh`: the endpoint must be on the last line.
pub fn parse_runtime_up(stdout: &str) -> BenchResult<RuntimeInfo> {
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let endpoint = last
        .strip_prefix("CONTAINER_RUNTIME_ENDPOINT=")
        .filter(|e| e.starts_with("unix://"))
        .ok_or_else(|| {
            BenchError::RuntimeUp(format!(
                "last stdout line is {last:?}, not CONTAINER_RUNTIME_ENDPOINT=unix://..."
            ))
        })?;
    let busybox_image = stdout
        .lines()
        .find_map(|l| l.strip_prefix("KRS_BUSYBOX_IMAGE="))
        .unwrap_or("docker.io/library/busybox:1.36");
    Ok(RuntimeInfo {
        endpoint: endpoint.trim().to_owned(),
        busybox_image: busybox_image.trim().to_owned(),
    })
}

/// `--containerd=<socket path>` for `endpoint` (`unix://` removed): the cAdvisor flag both
/// kubelets get in `stats-scrape` and `prober-cost`, so that upstream's cAdvisor finds the
/// containers of the private containerd as on a standard node (kubelet-rs ignores it).
pub fn containerd_flag(endpoint: &str) -> String {
    format!(
        "--containerd={}",
        endpoint.strip_prefix("unix://").unwrap_or(endpoint)
    )
}

/// Runs `main` on a multi-threaded tokio runtime; the exit status is success when it returns
/// `Ok(true)`, and errors are printed after `name: `.
pub fn block_on_main<F>(name: &str, main: F) -> std::process::ExitCode
where
    F: std::future::Future<Output = anyhow::Result<bool>>,
{
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(main));
    match result {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{name}: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// A TCP port free on 127.0.0.1 right now, for a kubelet to listen on.
///
/// Drawn from 20000–32767, below the kernel's usual ephemeral range, never twice in one
/// process: a released ephemeral port may be taken as the source port of any outgoing
/// connection before the kubelet binds it ("Address already in use", seen in CI).
pub fn free_port() -> BenchResult<u16> {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_768;
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(2_654_435_761) % SPAN,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    let mut last = None;
    for _ in 0..SPAN {
        let port = (LOW + NEXT.fetch_add(1, Ordering::SeqCst) % SPAN) as u16;
        match std::net::TcpListener::bind(("127.0.0.1", port)) {
            Ok(_) => return Ok(port),
            Err(e) => last = Some(e),
        }
    }
    Err(BenchError::io("bind", "127.0.0.1:20000-32767")(
        last.unwrap_or_else(|| std::io::Error::other("no port tried")),
    ))
}

/// `/proc/loadavg`, trimmed.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// PIDs and command names of running kubelets (`kubelet`, `kubelet-rs`) other than `except`:
/// they share the containerd, may kill the benchmark's pods as orphans and take CPU.
pub fn other_kubelets(except: &[u32]) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if except.contains(&pid) {
            continue;
        }
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        let comm = comm.trim();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        if is_kubelet_comm(comm) && !is_zombie(&stat) {
            found.push((pid, comm.to_owned()));
        }
    }
    found.sort();
    found
}

/// Whether a process name is a kubelet's.
pub fn is_kubelet_comm(comm: &str) -> bool {
    comm == "kubelet" || comm == "kubelet-rs"
}

/// Whether a `/proc/<pid>/stat` line is a zombie's (state `Z`).
pub fn is_zombie(stat: &str) -> bool {
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        == Some("Z")
}

/// Mount points at or below `dir` in a `/proc/self/mountinfo` text, deepest first (the order
/// to unmount them in). Octal escapes (`\040` for a space) are decoded.
pub fn mounts_under(mountinfo: &str, dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = mountinfo
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .map(|p| PathBuf::from(unescape_octal(p)))
        .filter(|p| p.starts_with(dir))
        .collect();
    found.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    found.dedup();
    found
}

fn unescape_octal(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                let v = d.iter().fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Makes `dir` a shared mount point of its own (bind-mounted onto itself, then `MS_SHARED`),
/// which is what the upstream kubelet's `MakeRShared` does to its `--root-dir` at start. Done
/// before either kubelet starts, upstream skips its own bind mount: that mount races with its
/// pod-resources server, which creates `pod-resources/kubelet.sock` by renaming a temporary
/// file, and the rename fails with EXDEV when the mount lands in between (upstream then exits
/// 1: "Failed to create listener for podResources endpoint"). kubelet-rs mounts nothing
/// there; it gets the same directory, so the runs stay like for like. [`unmount_under`]
/// removes the mount.
pub fn make_shared_mount(dir: &Path) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    mount(
        Some(dir),
        dir,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| format!("bind-mount {} onto itself: {e}", dir.display()))?;
    mount(
        None::<&str>,
        dir,
        None::<&str>,
        MsFlags::MS_SHARED | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| format!("make {} a shared mount: {e}", dir.display()))
}

/// Lazily unmounts everything mounted at or below `dir` (the upstream kubelet bind-mounts its
/// `--root-dir` onto itself and leaves that mount behind when it exits). Returns what could
/// not be unmounted.
pub fn unmount_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut failed = Vec::new();
    for m in mounts_under(&info, dir) {
        if let Err(e) = nix::mount::umount2(&m, nix::mount::MntFlags::MNT_DETACH) {
            failed.push((m, e.to_string()));
        }
    }
    failed
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn parses_runtime_up_output() {
        let out = "KRS_RUNTIME_DIR=/var/lib/x\nKRS_BUSYBOX_IMAGE=docker.io/library/busybox:1.36\n\
                   CONTAINER_RUNTIME_ENDPOINT=unix:///var/lib/x/containerd.sock\n";
        let info = parse_runtime_up(out).unwrap();
        assert_eq!(info.endpoint, "unix:///var/lib/x/containerd.sock");
        assert_eq!(info.busybox_image, "docker.io/library/busybox:1.36");
    }

    #[test]
    fn endpoint_must_be_last() {
        let out = "CONTAINER_RUNTIME_ENDPOINT=unix:///s\nKRS_X=1\n";
        let err = parse_runtime_up(out).unwrap_err().to_string();
        assert!(err.contains("last stdout line is \"KRS_X=1\""), "{err}");
        assert!(parse_runtime_up("CONTAINER_RUNTIME_ENDPOINT=tcp://x\n").is_err());
    }

    /// The root directory the kubelets get is its own shared mount point, as upstream's
    /// `isShared` reads mountinfo (so upstream skips its racy bind mount), and is unmounted
    /// after. Needs root, as the benchmarks do.
    #[test]
    fn root_dir_is_a_shared_mount_until_unmounted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        make_shared_mount(&root).unwrap();
        let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let line = info
            .lines()
            .find(|l| l.split_whitespace().nth(4) == Some(root.to_str().unwrap()))
            .unwrap_or_else(|| panic!("{} is no mount point:\n{info}", root.display()));
        assert!(line.contains(" shared:"), "{line}");
        assert!(unmount_under(dir.path()).is_empty());
        let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(mounts_under(&info, dir.path()).is_empty(), "{info}");
    }

    #[test]
    fn kubelet_names_and_zombies() {
        assert!(is_kubelet_comm("kubelet"));
        assert!(is_kubelet_comm("kubelet-rs"));
        assert!(!is_kubelet_comm("kubelet-bench"));
        assert!(is_zombie("123 (kubelet) Z 1 2 3"));
        assert!(!is_zombie("123 (kube let) S 1 2 3"));
    }

    #[test]
    fn mounts_below_a_directory_deepest_first() {
        let info = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
90 22 254:0 /var/lib/b/r1/root /var/lib/b/r1/root rw shared:1 - ext4 /dev/vda rw
91 90 0:50 / /var/lib/b/r1/root/pods/x/volumes/a\\040b rw - tmpfs tmpfs rw
92 22 254:0 / /var/lib/b/r10 rw - ext4 /dev/vda rw
";
        let got = mounts_under(info, Path::new("/var/lib/b/r1"));
        assert_eq!(
            got,
            vec![
                PathBuf::from("/var/lib/b/r1/root/pods/x/volumes/a b"),
                PathBuf::from("/var/lib/b/r1/root"),
            ]
        );
    }

    #[test]
    fn free_port_is_nonzero() {
        assert_ne!(free_port().unwrap(), 0);
    }
}
