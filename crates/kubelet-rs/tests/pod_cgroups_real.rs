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

/// A static busybox pod with `resources` (YAML lines under `resources:`).
fn pod_with_resources(name: &str, image: &str, resources: &str) -> String {
    let mut pod = busybox_pod(name, image, "Always", "sleep 3600");
    pod.push_str("    resources:\n");
    for line in resources.lines() {
        pod.push_str(&format!("      {line}\n"));
    }
    pod
}

/// The trimmed content of `<controller>/<cgroup>/<file>` (v1) or `<cgroup>/<file>` (v2).
fn cgroup_file(controller: &str, cgroup: &str, file: &str) -> String {
    let v1 = Path::new("/sys/fs/cgroup").join(controller);
    let base = if v1.is_dir() {
        v1
    } else {
        PathBuf::from("/sys/fs/cgroup")
    };
    let path = base.join(cgroup).join(file);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn pod_and_qos_cgroups_hold_upstream_values_per_qos_class() {
    // The files checked are cgroup v1's (this development host); on v2 they differ.
    if !Path::new("/sys/fs/cgroup/cpu").is_dir() {
        if std::env::var_os("KRS_SKIP_RUNTIME_TESTS").is_some() {
            return;
        }
        panic!("this test checks cgroup v1 files; the host runs cgroup v2");
    }
    const ROOT: &str = "krs-test-pod-values";
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-cgvalues").await;
    let config = std::fs::read_to_string(&node.config).unwrap();
    let config = config.replace(
        "cgroupsPerQOS: false\n",
        &format!("cgroupsPerQOS: true\ncgroupRoot: /{ROOT}\n"),
    );
    std::fs::write(&node.config, config).unwrap();
    node.start().await;
    let pods = [
        (
            "guaranteed",
            "limits: {cpu: 200m, memory: 64Mi}\nrequests: {cpu: 200m, memory: 64Mi}",
        ),
        (
            "burstable",
            "requests: {cpu: 300m, memory: 32Mi}\nlimits: {memory: 64Mi}",
        ),
        ("burstable-small", "requests: {cpu: 100m}"),
        ("besteffort", "{}"),
    ];
    for (name, resources) in pods {
        node.write_manifest(
            &format!("{name}.yaml"),
            &pod_with_resources(name, &node.busybox, resources),
        );
    }
    let mut cgroup = std::collections::BTreeMap::new();
    let mut container_ids = std::collections::BTreeMap::new();
    for (name, _) in pods {
        let running = node
            .wait_for(&format!("{name} running"), T, || async {
                node.running(name).await.pop()
            })
            .await;
        container_ids.insert(name, running.id);
        let uid = node
            .wait_for(&format!("{name} in /pods"), T, || async {
                node.pod(name)
                    .and_then(|p| p["metadata"]["uid"].as_str().map(str::to_string))
            })
            .await;
        let qos = match name {
            "guaranteed" => String::new(),
            "besteffort" => "besteffort/".to_string(),
            _ => "burstable/".to_string(),
        };
        cgroup.insert(name, format!("{ROOT}/kubepods/{qos}pod{uid}"));
    }
    let unlimited = cgroup_file("memory", ROOT, "memory.limit_in_bytes");
    let values = |name: &str| {
        let c = &cgroup[name];
        [
            cgroup_file("cpu", c, "cpu.shares"),
            cgroup_file("cpu", c, "cpu.cfs_quota_us"),
            cgroup_file("cpu", c, "cpu.cfs_period_us"),
            cgroup_file("memory", c, "memory.limit_in_bytes"),
        ]
    };
    let log = node.log();
    // Guaranteed: shares from the request, quota from the limit, the memory limit.
    assert_eq!(
        values("guaranteed"),
        ["204", "20000", "100000", "67108864"],
        "{log}"
    );
    // Burstable without a CPU limit: shares, no quota; every container has a memory
    // limit, so the pod cgroup has it.
    assert_eq!(
        values("burstable"),
        ["307", "-1", "100000", "67108864"],
        "{log}"
    );
    // Swap (upstream `configureContainerSwapResources`, NoSwap): with swap accounting on
    // this host, a container's memory+swap limit equals its memory limit (no swap beyond
    // it); without a memory limit both stay unlimited. containerd 1.6 itself sets the
    // memory+swap limit to the memory limit when the request leaves it 0, so this checks
    // the end result only; the CRI request the kubelet sends is checked by
    // `crates/runtime/src/swap_tests.rs`.
    if Path::new("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes").exists() {
        let container_mem = |name: &str, file: &str| {
            cgroup_file(
                "memory",
                &format!("{}/{}", cgroup[name], container_ids[name]),
                file,
            )
        };
        for name in ["guaranteed", "burstable"] {
            assert_eq!(
                container_mem(name, "memory.memsw.limit_in_bytes"),
                "67108864",
                "{name}: {log}"
            );
            assert_eq!(container_mem(name, "memory.limit_in_bytes"), "67108864");
        }
        assert_eq!(
            container_mem("besteffort", "memory.memsw.limit_in_bytes"),
            container_mem("besteffort", "memory.limit_in_bytes")
        );
    }
    assert_eq!(values("burstable-small")[..2], ["102", "-1"], "{log}");
    assert_eq!(values("burstable-small")[3], unlimited, "{log}");
    // BestEffort: the minimum shares, no limits.
    assert_eq!(
        values("besteffort"),
        ["2", "-1", "100000", unlimited.as_str()],
        "{log}"
    );
    // The QoS cgroups: Burstable shares = the Burstable pods' requests (400m).
    let qos_shares = |q: &str| cgroup_file("cpu", &format!("{ROOT}/kubepods/{q}"), "cpu.shares");
    node.wait_for("burstable QoS shares 409", T, || async {
        (qos_shares("burstable") == "409").then_some(())
    })
    .await;
    assert_eq!(qos_shares("besteffort"), "2");

    // A Burstable pod goes: its requests leave the Burstable QoS cgroup's shares.
    node.remove_manifest("burstable-small.yaml");
    node.wait_for("burstable QoS shares 307", T, || async {
        (qos_shares("burstable") == "307").then_some(())
    })
    .await;
    node.wait_for("burstable-small pod cgroup removed", T, || async {
        hierarchies()
            .iter()
            .all(|h| !h.join(&cgroup["burstable-small"]).exists())
            .then_some(())
    })
    .await;
    node.cleanup().await;
    for h in hierarchies() {
        remove_tree(&h.join(ROOT));
    }
}
