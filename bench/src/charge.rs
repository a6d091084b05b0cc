//! Charging CPU and memory to a kubelet and to the runtime.
//!
//! * Each kubelet the benchmark starts is moved, right after `spawn`, into its own cgroup
//!   `krsbench/<name>` in the cgroup v1 `cpuacct` and `memory` hierarchies (this host runs
//!   cgroup v1 hybrid), so whatever it forks (mount, iptables, nsenter …) is charged to it:
//!   `cpuacct.usage` (CPU-ns) and `memory.max_usage_in_bytes` (peak, page cache included).
//!   Without a v1 `cpuacct` hierarchy (cgroup v2 only, or no permission) the group is not
//!   created and the figures fall back to the process's own `utime + stime` (children not
//!   counted); [`KubeletCgroup::create`] says so on stderr.
//! * The runtime's share: the CPU of the `containerd` process serving the benchmark's socket
//!   plus every `containerd-shim*` process started for that socket (each shim's
//!   `cutime + cstime` holds the `runc` invocations it waited for). Sampled before and after a
//!   phase; shims that exit inside the phase lose their share, so the figure is taken over
//!   start-up (rename → all RUNNING), when the batch's shims are alive.
//!
//! Pure parsers are unit-tested; the rest reads `/proc` and `/sys/fs/cgroup`.

use std::path::{Path, PathBuf};

/// Root of the cgroup v1 hierarchies.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// Parent group of the benchmark's kubelets.
const PARENT: &str = "krsbench";
/// USER_HZ of `/proc/<pid>/stat`.
const CLOCK_TICKS: f64 = 100.0;

/// A kubelet's own cgroup (v1 `cpuacct` and `memory`).
#[derive(Debug)]
pub struct KubeletCgroup {
    cpuacct: PathBuf,
    memory: Option<PathBuf>,
    pid: u32,
}

impl KubeletCgroup {
    /// Creates `krsbench/<name>` in `cpuacct` (required) and `memory` (optional) and moves
    /// `pid` into both. `None` (with a message on stderr) when that is impossible.
    pub fn create(name: &str, pid: u32) -> Option<Self> {
        let root = Path::new(CGROUP_ROOT);
        let cpuacct = root.join("cpuacct").join(PARENT).join(name);
        if let Err(e) = join(&cpuacct, pid) {
            eprintln!(
                "[bench] WARNING: no cgroup v1 cpuacct group for the kubelet ({e}): its CPU is its own utime+stime, children not counted"
            );
            return None;
        }
        let memory = root.join("memory").join(PARENT).join(name);
        let memory = match join(&memory, pid) {
            Ok(()) => Some(memory),
            Err(e) => {
                eprintln!(
                    "[bench] WARNING: no cgroup v1 memory group for the kubelet ({e}): no peak memory"
                );
                None
            }
        };
        Some(Self {
            cpuacct,
            memory,
            pid,
        })
    }

    /// CPU-seconds charged to the group so far (`cpuacct.usage`).
    pub fn cpu_seconds(&self) -> Option<f64> {
        let text = std::fs::read_to_string(self.cpuacct.join("cpuacct.usage")).ok()?;
        let ns: f64 = text.trim().parse().ok()?;
        Some(ns / 1e9)
    }

    /// Peak memory of the group in MiB (`memory.max_usage_in_bytes`).
    pub fn memory_peak_mib(&self) -> Option<f64> {
        let dir = self.memory.as_ref()?;
        let text = std::fs::read_to_string(dir.join("memory.max_usage_in_bytes")).ok()?;
        let bytes: f64 = text.trim().parse().ok()?;
        Some(bytes / (1024.0 * 1024.0))
    }

    /// The process it was created for.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Removes the groups (best effort: only once every process in them has exited).
    pub fn remove(&self) {
        let _ = std::fs::remove_dir(&self.cpuacct);
        if let Some(m) = &self.memory {
            let _ = std::fs::remove_dir(m);
        }
    }
}

fn join(dir: &Path, pid: u32) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("cgroup.procs"), pid.to_string())
}

/// `utime + stime` (own) and `cutime + cstime` (waited-for children) of `/proc/<pid>/stat`, in
/// CPU-seconds.
pub fn proc_cpu_seconds(pid: u32) -> Option<(f64, f64)> {
    parse_stat_cpu(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Parses the CPU fields of a `/proc/<pid>/stat` line: (own, children) CPU-seconds.
pub fn parse_stat_cpu(stat: &str) -> Option<(f64, f64)> {
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| -> Option<f64> { Some(f.get(i)?.parse::<f64>().ok()? / CLOCK_TICKS) };
    // After the comm: state is field 3, so utime (14) is index 11.
    Some((tick(11)? + tick(12)?, tick(13)? + tick(14)?))
}

/// Whether a NUL-separated command line is the containerd (or one of its shims) serving the
/// socket `socket_path`.
pub fn is_runtime_process(cmdline: &[u8], socket_path: &str, config_dir: &str) -> bool {
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let Some(prog) = args.first() else {
        return false;
    };
    let base = prog.rsplit('/').next().unwrap_or(prog);
    if base.starts_with("containerd-shim") {
        return args.iter().any(|a| a == socket_path);
    }
    base == "containerd" && args.iter().any(|a| a.starts_with(config_dir))
}

/// The socket path of a `unix://` endpoint.
pub fn socket_path(endpoint: &str) -> &str {
    endpoint.strip_prefix("unix://").unwrap_or(endpoint)
}

/// CPU-seconds so far of the containerd serving `endpoint` and of its shims (own + waited-for
/// children); `None` if no containerd for it was found.
pub fn runtime_cpu_seconds(endpoint: &str) -> Option<f64> {
    let socket = socket_path(endpoint);
    let config_dir = Path::new(socket)
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let mut total = 0.0;
    let mut found_containerd = false;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if !is_runtime_process(&cmdline, socket, &config_dir) {
            continue;
        }
        if let Some((own, children)) = proc_cpu_seconds(pid) {
            total += own + children;
            found_containerd |= cmdline.starts_with(b"containerd\0")
                || cmdline
                    .split(|b| *b == 0)
                    .next()
                    .is_some_and(|p| p.ends_with(b"/containerd"));
        }
    }
    found_containerd.then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_cpu_fields() {
        let stat =
            "1234 (kube let) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 12 0 99 0 0";
        assert_eq!(parse_stat_cpu(stat), Some((3.0, 0.1)));
        assert_eq!(parse_stat_cpu("garbage"), None);
    }

    #[test]
    fn runtime_processes_of_the_socket_only() {
        let sock = "/var/lib/kubelet-rs-test/runtime/containerd.sock";
        let dir = "/var/lib/kubelet-rs-test/runtime";
        let shim = format!(
            "/usr/bin/containerd-shim-runc-v2\0-namespace\0k8s.io\0-id\0abc\0-address\0{sock}\0"
        );
        assert!(is_runtime_process(shim.as_bytes(), sock, dir));
        let other_shim = b"/usr/bin/containerd-shim-runc-v2\0-address\0/run/other.sock\0";
        assert!(!is_runtime_process(other_shim, sock, dir));
        let ctrd = format!("containerd\0--config\0{dir}/config.toml\0");
        assert!(is_runtime_process(ctrd.as_bytes(), sock, dir));
        let other = b"containerd\0--config\0/var/lib/other/config.toml\0";
        assert!(!is_runtime_process(other, sock, dir));
        assert!(!is_runtime_process(b"", sock, dir));
        assert_eq!(socket_path("unix:///a/b.sock"), "/a/b.sock");
    }
}
