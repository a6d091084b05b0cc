//! The memory manager's `Static` policy against the real containerd of
//! `hack/runtime-up.sh` (upstream `memorymanager` + `internal_container_lifecycle_linux.go`):
//! on this 1-NUMA-node host, with `reservedMemory` matching the node allocatable
//! reservation (the 100Mi hard eviction threshold of the test configuration), a Guaranteed
//! container's memory is reserved on NUMA node 0 at admission, the container is created
//! with `cpuset.mems` 0, and the assignment is in `memory_manager_state`, which a restarted
//! kubelet restores (and validates against the machine) without touching the container.
//! Serialised with the other real-runtime tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::node::{Node, busybox_pod, runtime_lock};
use kubelet_cri::RuntimeService;
use kubelet_metrics::testing::{parse, value};
use nix::sys::signal::Signal;

const T: Duration = Duration::from_secs(60);

/// The OCI spec containerd made for the container (`linux.resources.cpu`).
async fn spec_cpu(node: &Node, container_id: &str) -> serde_json::Value {
    let st = node.cri.container_status(container_id, true).await.unwrap();
    let info: serde_json::Value = serde_json::from_str(st.info.get("info").unwrap()).unwrap();
    info["runtimeSpec"]["linux"]["resources"]["cpu"].clone()
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn static_policy_pins_a_guaranteed_containers_memory_to_numa_node_0() {
    let nodes = std::fs::read_to_string("/sys/devices/system/node/online").unwrap();
    assert_eq!(
        nodes.trim(),
        "0",
        "written for a host with one NUMA node (the CI VM)"
    );
    let _g = runtime_lock().await;
    let mut node = Node::with_config(
        "rt-memorymanager",
        "memoryManagerPolicy: Static\nreservedMemory:\n- numaNode: 0\n  limits:\n    memory: 100Mi\n",
    )
    .await;
    node.start().await;
    node.write_manifest(
        "shared.yaml",
        &busybox_pod("shared", &node.busybox, "Always", "sleep 3600"),
    );
    let mut pod = busybox_pod("pinned", &node.busybox, "Always", "sleep 3600");
    pod.push_str(
        "    resources:\n      requests: {cpu: \"1\", memory: 32Mi}\n      limits: {cpu: \"1\", memory: 32Mi}\n",
    );
    node.write_manifest("pinned.yaml", &pod);
    let pinned = node
        .wait_for("pinned running", T, || async {
            node.running("pinned").await.pop()
        })
        .await;
    let shared = node
        .wait_for("shared running", T, || async {
            node.running("shared").await.pop()
        })
        .await;
    // Created with its NUMA node as cpuset.mems; the BestEffort container without.
    let cpu = spec_cpu(&node, &pinned.id).await;
    assert_eq!(cpu["mems"], "0", "{cpu}\n{}", node.log());
    let cpu = spec_cpu(&node, &shared.id).await;
    assert!(cpu["mems"].is_null() || cpu["mems"] == "", "{cpu}");

    let uid = node
        .wait_for("pinned in /pods", T, || async {
            node.pod("pinned")
                .and_then(|p| p["metadata"]["uid"].as_str().map(str::to_string))
        })
        .await;
    let state_file = node.dir.path().join("root/memory_manager_state");
    let read_state = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&state_file).unwrap()).unwrap()
    };
    let state = read_state();
    assert_eq!(state["policyName"], "Static", "{state}");
    let blocks = &state["entries"][&uid]["main"];
    assert_eq!(
        blocks,
        &serde_json::json!([{"numaAffinity": [0], "type": "memory", "size": 32 << 20}]),
        "{state}"
    );
    let memory = &state["machineState"]["0"]["memoryMap"]["memory"];
    assert_eq!(memory["reserved"], 32 << 20, "{state}");
    assert_eq!(memory["systemReserved"], 100 << 20, "{state}");
    assert_eq!(
        state["machineState"]["0"]["numberOfAssignments"], 1,
        "{state}"
    );
    assert!(
        state["entries"].get(&uid).is_some() && state["entries"].as_object().unwrap().len() == 1,
        "only the Guaranteed pod has blocks: {state}"
    );
    let (status, text) = common::http_get(node.ro_port, "/metrics").unwrap();
    assert_eq!(status, 200);
    let m = parse(&text).unwrap();
    let counter = |name: &str| value(&m[name], &[]).unwrap_or_else(|| panic!("{name}:\n{text}"));
    assert_eq!(
        counter("kubelet_memory_manager_pinning_requests_total"),
        1.0
    );
    assert_eq!(counter("kubelet_memory_manager_pinning_errors_total"), 0.0);

    // A restarted kubelet restores the checkpoint (`Start` validates it against the
    // machine) and keeps the container.
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
    let state = read_state();
    assert_eq!(&state["entries"][&uid]["main"], blocks, "{state}");
    assert_eq!(
        state["machineState"]["0"]["memoryMap"]["memory"]["reserved"],
        32 << 20,
        "{state}"
    );

    // The pod goes: its memory is given back once the next pod is admitted
    // (`removeStaleState` runs at admission, as upstream's).
    node.remove_manifest("pinned.yaml");
    node.wait_for("pinned gone", T, || async {
        node.running("pinned").await.is_empty().then_some(())
    })
    .await;
    let mut next = busybox_pod("next", &node.busybox, "Always", "sleep 3600");
    next.push_str(
        "    resources:\n      requests: {cpu: \"1\", memory: 16Mi}\n      limits: {cpu: \"1\", memory: 16Mi}\n",
    );
    node.write_manifest("next.yaml", &next);
    node.wait_for("next running", T, || async {
        node.running("next").await.pop()
    })
    .await;
    let state = read_state();
    assert!(state["entries"].get(&uid).is_none(), "{state}");
    assert_eq!(
        state["machineState"]["0"]["memoryMap"]["memory"]["reserved"],
        16 << 20,
        "{state}"
    );
    node.cleanup().await;
}
