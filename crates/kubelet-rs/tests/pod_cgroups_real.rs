//! Pod-level cgroups against the real containerd of `hack/runtime-up.sh`: with
//! `cgroupsPerQOS` a static pod runs in `<qos cgroup>/pod<uid>`, whose `pids.max` is
//! `podPidsLimit`, and the cgroup goes away once the pod is removed (upstream
//! `pod_container_manager_linux.go`, `cleanupOrphanedPodCgroups`). Serialised with the
//! other real-runtime tests (one kubelet per containerd).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::node::{Node, busybox_pod, runtime_lock};

const T: Duration = Duration::from_secs(60);
/// A cgroup root of its own, so the test never touches another kubelet's `kubepods`.
const CGROUP_ROOT: &str = "krs-test-pod-pids";

/// Every cgroup hierarchy mounted on the host (v1 controllers, or the unified one).
fn hierarchies() -> Vec<PathBuf> {
    let base = Path::new("/sys/fs/cgroup");
    if base.join("cgroup.controllers").exists() {
        return vec![base.to_path_buf()];
    }
    std::fs::read_dir(base)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect()
}

/// The `pids` hierarchy: the v1 controller, or the unified hierarchy on v2.
fn pids_hierarchy() -> PathBuf {
    let v1 = Path::new("/sys/fs/cgroup/pids");
    if v1.is_dir() {
        v1.to_path_buf()
    } else {
        PathBuf::from("/sys/fs/cgroup")
    }
}

/// Removes the test's cgroup root (QoS cgroups) in every hierarchy, deepest first.
fn remove_tree(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&e.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn static_pod_runs_in_pod_cgroup_with_pids_limit_removed_with_the_pod() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-pidslimit").await;
    let config = std::fs::read_to_string(&node.config).unwrap();
    let config = config.replace(
        "cgroupsPerQOS: false\n",
        &format!("cgroupsPerQOS: true\ncgroupRoot: /{CGROUP_ROOT}\npodPidsLimit: 123\n"),
    );
    std::fs::write(&node.config, config).unwrap();
    node.start().await;
    node.write_manifest(
        "limited.yaml",
        &busybox_pod("limited", &node.busybox, "Always", "sleep 3600"),
    );
    let ctr = node
        .wait_for("limited running", T, || async {
            node.running("limited").await.pop()
        })
        .await;
    let uid = node
        .wait_for("limited in /pods", T, || async {
            node.pod("limited")
                .and_then(|p| p["metadata"]["uid"].as_str().map(str::to_string))
        })
        .await;
    let rel = format!("{CGROUP_ROOT}/kubepods/besteffort/pod{uid}");
    let pids_max = pids_hierarchy().join(&rel).join("pids.max");
    assert_eq!(
        std::fs::read_to_string(&pids_max)
            .unwrap_or_else(|e| panic!("{}: {e}; kubelet log:\n{}", pids_max.display(), node.log()))
            .trim(),
        "123"
    );
    // The container's process is inside the pod cgroup.
    let pid = node.container_pid(&ctr.id).await;
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    assert!(
        cgroups.lines().any(|l| l.contains(&format!("/{rel}/"))),
        "container process {pid} not under {rel}:\n{cgroups}"
    );

    node.remove_manifest("limited.yaml");
    node.wait_for("pod cgroup removed in every hierarchy", T, || async {
        hierarchies()
            .iter()
            .all(|h| !h.join(&rel).exists())
            .then_some(())
    })
    .await;
    node.cleanup().await;
    for h in hierarchies() {
        remove_tree(&h.join(CGROUP_ROOT));
    }
}
