//! The CPU manager's `static` policy against the real containerd of `hack/runtime-up.sh`
//! (upstream `cpumanager` + `internal_container_lifecycle_linux.go`): on this 2-CPU host,
//! CPU 0 is reserved (`reservedSystemCPUs`), so a Guaranteed container asking 1 CPU gets
//! CPU 1 for itself, without CFS quota (`DisableCPUQuotaWithExclusiveCPUs`); a BestEffort
//! container started before it is moved to CPU 0 by the reconcile loop and back to both
//! CPUs once the Guaranteed pod is gone. The assignment is in `cpu_manager_state` and
//! survives a kubelet restart. With `topologyManagerPolicy: single-numa-node`, the
//! topology manager admits and aligns such a pod and rejects one that cannot be placed.
//! Serialised with the other real-runtime tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::node::{Node, busybox_pod, runtime_lock};
use kubelet_cri::RuntimeService;
use kubelet_metrics::testing::{parse, value};
use nix::sys::signal::Signal;

const T: Duration = Duration::from_secs(60);

/// The CPUs a container's process may run on (`Cpus_allowed_list` of its status), as
/// the kernel applied the container's cpuset, on cgroup v1 and v2 alike.
async fn allowed_cpus(node: &Node, container_id: &str) -> String {
    let pid = node.container_pid(container_id).await;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or_else(|| panic!("no Cpus_allowed_list in /proc/{pid}/status"))
        .trim()
        .to_string()
}

/// The OCI spec containerd made for the container (`linux.resources.cpu`).
async fn spec_cpu(node: &Node, container_id: &str) -> serde_json::Value {
    let st = node.cri.container_status(container_id, true).await.unwrap();
    let info: serde_json::Value = serde_json::from_str(st.info.get("info").unwrap()).unwrap();
    info["runtimeSpec"]["linux"]["resources"]["cpu"].clone()
}

fn guaranteed_pod(name: &str, image: &str) -> String {
    let mut pod = busybox_pod(name, image, "Always", "sleep 3600");
    pod.push_str(
        "    resources:\n      requests: {cpu: \"1\", memory: 32Mi}\n      limits: {cpu: \"1\", memory: 32Mi}\n",
    );
    pod
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn static_policy_pins_a_guaranteed_container_and_moves_the_others() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    assert_eq!(
        online.trim(),
        "0-1",
        "this test is written for a host with CPUs 0-1 online (the CI VM)"
    );
    let _g = runtime_lock().await;
    let mut node = Node::with_config(
        "rt-cpumanager",
        "cpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\ncpuManagerReconcilePeriod: 1s\n",
    )
    .await;
    node.start().await;
    node.write_manifest(
        "shared.yaml",
        &busybox_pod("shared", &node.busybox, "Always", "sleep 3600"),
    );
    let shared = node
        .wait_for("shared running", T, || async {
            node.running("shared").await.pop()
        })
        .await;
    assert_eq!(allowed_cpus(&node, &shared.id).await, "0-1");

    node.write_manifest("pinned.yaml", &guaranteed_pod("pinned", &node.busybox));
    let pinned = node
        .wait_for("pinned running", T, || async {
            node.running("pinned").await.pop()
        })
        .await;
    // Created on its exclusive CPU, without CFS quota.
    assert_eq!(allowed_cpus(&node, &pinned.id).await, "1", "{}", node.log());
    let cpu = spec_cpu(&node, &pinned.id).await;
    assert_eq!(cpu["cpus"], "1", "{cpu}");
    assert_eq!(cpu["quota"], -1, "{cpu}");
    // The reconcile loop takes CPU 1 away from the shared container.
    node.wait_for("shared moved to CPU 0", T, || async {
        (allowed_cpus(&node, &shared.id).await == "0").then_some(())
    })
    .await;
    let uid = node
        .wait_for("pinned in /pods", T, || async {
            node.pod("pinned")
                .and_then(|p| p["metadata"]["uid"].as_str().map(str::to_string))
        })
        .await;
    let state_file = node.dir.path().join("root/cpu_manager_state");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state_file).unwrap()).unwrap();
    assert_eq!(state["policyName"], "static", "{state}");
    assert_eq!(state["defaultCpuSet"], "0", "{state}");
    assert_eq!(state["entries"][&uid]["main"], "1", "{state}");
    // The CPU manager's families on `/metrics` (read-only port).
    let (status, text) = common::http_get(node.ro_port, "/metrics").unwrap();
    assert_eq!(status, 200);
    let m = parse(&text).unwrap();
    let gauge = |name: &str| value(&m[name], &[]).unwrap_or_else(|| panic!("{name}:\n{text}"));
    assert_eq!(
        gauge("kubelet_cpu_manager_exclusive_cpu_allocation_count"),
        1.0
    );
    // The shared pool without the reserved CPU 0 is empty.
    assert_eq!(
        gauge("kubelet_cpu_manager_shared_pool_size_millicores"),
        0.0
    );
    assert_eq!(gauge("kubelet_cpu_manager_pinning_requests_total"), 1.0);
    assert_eq!(gauge("kubelet_cpu_manager_pinning_errors_total"), 0.0);
    assert!(gauge("kubelet_topology_manager_admission_requests_total") >= 2.0);

    // A restarted kubelet keeps the assignment (from the checkpoint) and the containers.
    let mut old = node.proc.take().unwrap();
    old.signal(Signal::SIGKILL);
    old.wait_exit(Duration::from_secs(5)).await;
    node.start().await;
    node.wait_for("pinned Running again in /pods", T, || async {
        (node.phase("pinned").as_deref() == Some("Running")).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = node.running("pinned").await;
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].id, pinned.id, "{}", node.log());
    assert_eq!(allowed_cpus(&node, &pinned.id).await, "1");
    assert_eq!(allowed_cpus(&node, &shared.id).await, "0");

    // The Guaranteed pod goes: its CPU returns to the shared pool.
    node.remove_manifest("pinned.yaml");
    node.wait_for("shared back on CPUs 0-1", T, || async {
        (allowed_cpus(&node, &shared.id).await == "0-1").then_some(())
    })
    .await;
    node.cleanup().await;
}

/// `topologyManagerPolicy: single-numa-node` (pod scope) with the static CPU policy on
/// this 1-NUMA-node host: a Guaranteed 1-CPU pod is admitted, aligned on node 0 and
/// pinned to CPU 1; a Guaranteed 2-CPU pod cannot be placed (only CPU 1 is free), so the
/// topology manager rejects it `TopologyAffinityError` before it reaches the runtime.
/// Upstream's topology manager metrics count both.
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn single_numa_node_policy_admits_and_pins_a_guaranteed_pod() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    assert_eq!(online.trim(), "0-1", "written for the 2-CPU CI VM");
    let _g = runtime_lock().await;
    let mut node = Node::with_config(
        "rt-topologymanager",
        "cpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\ntopologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\n",
    )
    .await;
    node.start().await;
    node.write_manifest("pinned.yaml", &guaranteed_pod("pinned", &node.busybox));
    let pinned = node
        .wait_for("pinned running", T, || async {
            node.running("pinned").await.pop()
        })
        .await;
    assert_eq!(allowed_cpus(&node, &pinned.id).await, "1", "{}", node.log());

    let mut wide = busybox_pod("wide", &node.busybox, "Always", "sleep 3600");
    wide.push_str(
        "    resources:\n      requests: {cpu: \"2\", memory: 32Mi}\n      limits: {cpu: \"2\", memory: 32Mi}\n",
    );
    node.write_manifest("wide.yaml", &wide);
    let status = node
        .wait_for("wide rejected", T, || async {
            node.pod("wide")
                .filter(|p| p["status"]["phase"] == "Failed")
                .map(|p| p["status"].clone())
        })
        .await;
    assert_eq!(status["reason"], "TopologyAffinityError", "{status}");
    assert_eq!(
        status["message"], "Pod was rejected: Resources cannot be allocated with Topology locality",
        "{status}"
    );
    assert!(node.sandboxes("wide").await.is_empty());

    let (code, text) = common::http_get(node.ro_port, "/metrics").unwrap();
    assert_eq!(code, 200);
    let m = parse(&text).unwrap();
    let get = |name: &str, labels: &[&str]| {
        value(&m[name], labels).unwrap_or_else(|| panic!("{name}{labels:?}:\n{text}"))
    };
    assert!(get("kubelet_topology_manager_admission_requests_total", &[]) >= 2.0);
    assert!(get("kubelet_topology_manager_admission_errors_total", &[]) >= 1.0);
    // {boundary="numa_node", scope="pod"} (label values in the exposition's order)
    let pod_numa = ["numa_node", "pod"];
    assert!(
        get(
            "kubelet_container_aligned_compute_resources_count",
            &pod_numa
        ) >= 1.0
    );
    assert!(
        get(
            "kubelet_container_aligned_compute_resources_failure_count",
            &pod_numa
        ) >= 1.0
    );
    node.cleanup().await;
}
