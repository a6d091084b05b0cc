//! Node allocatable enforcement on the reserved cgroups against this host's cgroups
//! (upstream `enforceNodeAllocatableCgroups`, `enforceExistingCgroup`): with
//! `enforceNodeAllocatable: [pods, system-reserved, kube-reserved]` the existing
//! `systemReservedCgroup` / `kubeReservedCgroup` get their reservations as limits, and
//! `kubepods`' pids.max is the pid capacity less the `pid` reservations; a reserved cgroup
//! that does not exist stops the kubelet with upstream's message. The test cgroups are
//! made in every mounted hierarchy (the v1 controllers, or the unified one) and removed
//! after. Serialised with the other real-runtime tests (one kubelet per containerd).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::node::{Node, runtime_lock};

const CGROUP_ROOT: &str = "krs-test-reserved";
const SYSTEM: &str = "krs-test-system-reserved.slice";
const KUBE: &str = "krs-test-kube-reserved.slice";

fn unified() -> bool {
    Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
}

/// Every hierarchy a cgroup must exist in for the kubelet (upstream `Validate`).
fn hierarchies() -> Vec<PathBuf> {
    let base = Path::new("/sys/fs/cgroup");
    if unified() {
        return vec![base.to_path_buf()];
    }
    std::fs::read_dir(base)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.ends_with("unified"))
        .collect()
}

/// The directory of `name` in controller `ctrl` (the unified hierarchy on v2).
fn dir(ctrl: &str, name: &str) -> PathBuf {
    if unified() {
        Path::new("/sys/fs/cgroup").join(name)
    } else {
        Path::new("/sys/fs/cgroup").join(ctrl).join(name)
    }
}

fn read(ctrl: &str, name: &str, file: &str, node: &Node) -> String {
    let p = dir(ctrl, name).join(file);
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}; kubelet log:\n{}", p.display(), node.log()))
        .trim()
        .to_string()
}

fn pid_capacity() -> i64 {
    ["/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"]
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .trim()
                .parse::<i64>()
                .unwrap()
        })
        .min()
        .unwrap()
}

fn config(system_cgroup: &str, kube_cgroup: &str) -> String {
    format!(
        "cgroupRoot: /{CGROUP_ROOT}
enforceNodeAllocatable: [pods, system-reserved, kube-reserved]
systemReservedCgroup: /{system_cgroup}
kubeReservedCgroup: /{kube_cgroup}
systemReserved:
  cpu: 500m
  memory: 256Mi
  pid: \"1000\"
kubeReserved:
  cpu: 250m
  memory: 128Mi
  pid: \"500\"
"
    )
}

async fn node_with(name: &str, system_cgroup: &str, kube_cgroup: &str) -> Node {
    let node = Node::new(name).await;
    let text = std::fs::read_to_string(&node.config).unwrap();
    let standalone = "cgroupsPerQOS: false\nenforceNodeAllocatable: [none]\n";
    assert!(text.contains(standalone), "{text}");
    let text = text.replace(
        standalone,
        &format!(
            "cgroupsPerQOS: true\n{}",
            config(system_cgroup, kube_cgroup)
        ),
    );
    std::fs::write(&node.config, text).unwrap();
    node
}

fn remove_test_cgroups() {
    for name in [SYSTEM, KUBE, CGROUP_ROOT] {
        common::remove_cgroup_root(name);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn system_and_kube_reserved_are_enforced_on_existing_cgroups() {
    let _g = runtime_lock().await;
    remove_test_cgroups();
    for h in hierarchies() {
        for name in [SYSTEM, KUBE] {
            std::fs::create_dir_all(h.join(name)).unwrap();
        }
    }
    let mut node = node_with("rt-reserved", SYSTEM, KUBE).await;
    node.start().await;

    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let (shares, memory) = if unified() {
        ("cpu.weight", "memory.max")
    } else {
        ("cpu.shares", "memory.limit_in_bytes")
    };
    let want = |cpu_v1: &str, cpu_v2: &str| if unified() { cpu_v2 } else { cpu_v1 }.to_string();
    // systemReserved: 500m → 512 shares, 256Mi, 1000 pids.
    assert_eq!(
        read("memory", SYSTEM, memory, &node),
        (256u64 << 20).to_string()
    );
    assert_eq!(read("cpu", SYSTEM, shares, &node), want("512", "20"));
    assert_eq!(read("pids", SYSTEM, "pids.max", &node), "1000");
    assert_eq!(read("cpuset", SYSTEM, "cpuset.cpus", &node), online.trim());
    // kubeReserved: 250m → 256 shares, 128Mi, 500 pids.
    assert_eq!(
        read("memory", KUBE, memory, &node),
        (128u64 << 20).to_string()
    );
    assert_eq!(read("cpu", KUBE, shares, &node), want("256", "10"));
    assert_eq!(read("pids", KUBE, "pids.max", &node), "500");
    // kubepods: node allocatable, 2 CPUs less 750m → 1250m, and the pid capacity less
    // both pid reservations.
    let kubepods = format!("{CGROUP_ROOT}/kubepods");
    let cpus = i64::try_from(std::thread::available_parallelism().unwrap().get()).unwrap();
    let milli = cpus * 1000 - 750;
    if !unified() {
        assert_eq!(
            read("cpu", &kubepods, "cpu.shares", &node),
            (milli * 1024 / 1000).to_string()
        );
    }
    assert_eq!(
        read("pids", &kubepods, "pids.max", &node),
        (pid_capacity() - 1500).to_string()
    );
    node.cleanup().await;
    remove_test_cgroups();
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_reserved_cgroup_stops_the_kubelet_with_upstreams_message() {
    let _g = runtime_lock().await;
    remove_test_cgroups();
    for h in hierarchies() {
        std::fs::create_dir_all(h.join(SYSTEM)).unwrap();
    }
    let absent = "krs-test-absent-reserved.slice";
    let node = node_with("rt-reserved-absent", SYSTEM, absent).await;
    let root = node.dir.path().join("root");
    let mut p = common::Proc::spawn(
        node.dir.path(),
        "kubelet",
        &[
            "--config",
            node.config.to_str().unwrap(),
            "--root-dir",
            root.to_str().unwrap(),
            "--cert-dir",
            root.join("pki").to_str().unwrap(),
            "--hostname-override",
            &node.name,
        ],
    );
    let code = p.wait_exit(Duration::from_secs(60)).await;
    // The error is logged as a structured value: its quotes are escaped.
    let log = p.log().replace("\\\"", "\"");
    assert!(matches!(code, Some(c) if c != 0), "exit {code:?}:\n{log}");
    let want = format!(
        "Failed to start ContainerManager: Failed to enforce Kube Reserved Cgroup Limits on \"/{absent}\": "
    );
    assert!(log.contains(&want), "{want}\nnot in:\n{log}");
    let detail = if unified() {
        format!("could not read controllers for cgroup [\"{absent}\"]")
    } else {
        format!(
            "cgroup [\"{absent}\"] has some missing paths: {}",
            dir("cpu", absent).display()
        )
    };
    assert!(log.contains(&detail), "{detail}\nnot in:\n{log}");
    // The system-reserved cgroup, enforced first, has its limits.
    assert_eq!(
        read("pids", SYSTEM, "pids.max", &node),
        "1000",
        "system-reserved is enforced before kube-reserved"
    );
    remove_test_cgroups();
}
