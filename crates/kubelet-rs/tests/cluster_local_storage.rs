//! Local storage eviction (upstream `localStorageEviction`) on a kubelet-rs node of the
//! real control plane (`hack/cluster-up.sh`, `hack/kubelet-rs-node-up.sh`): a pod whose
//! container writes 30 MiB into an emptyDir with `sizeLimit: 10Mi` is evicted (phase
//! `Failed`, reason `Evicted`, upstream's message `Usage of EmptyDir volume "scratch"
//! exceeds the limit "10Mi". `, no `DisruptionTarget` condition, a `Warning Evicted`
//! event, `kubelet_evictions{eviction_signal="emptydirfs.limit"}`), while a pod writing
//! 5 MiB into an emptyDir of `sizeLimit: 100Mi` keeps running. Containers with an
//! `ephemeral-storage` limit of 10Mi (admitted against the node's allocatable ephemeral
//! storage) write 30 MiB into their own filesystem: alone in its pod, the pod-level check
//! comes first (upstream's order) and the pod is evicted with `Pod ephemeral local storage
//! usage exceeds the total limit of containers 10Mi. `; next to an idle container limited
//! to 100Mi (the pod's limit is 110Mi), with `Container writer exceeded its local ephemeral
//! storage limit "10Mi". ` (`kubelet_evictions{eviction_signal="ephemeralpodfs.limit"}`,
//! `{eviction_signal="ephemeralcontainerfs.limit"}`).
//! `volumeStatsAggPeriod: 5s` so the volumes are measured soon (the default is 1 m).
//!
//! API server pods, not static ones: static pods are critical (upstream `IsCriticalPod`)
//! and never evicted.
//!
//! Node `krs-t-localstorage-rs` (198.18.255.80), namespace `t-localstorage`. Built as
//! ignored with `KRS_SKIP_CLUSTER_TESTS=1` or `KRS_SKIP_RUNTIME_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

mod common;

use common::cluster_ns::{
    Cleanup, condition, create, delete_namespace, get_json, ok_stdout, wait_for,
};
use kubelet_e2e::cluster::{self, NodeKubelet, NodeSpec};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const NODE: &str = "krs-t-localstorage-rs";
const NODE_IP: &str = "198.18.255.80";
const NS: &str = "t-localstorage";
const TAINT_KEY: &str = "kubelet-rs.test/localstorage";
const BUSYBOX: &str = "docker.io/library/busybox:1.36";

/// A pod writing `mib` MiB into its emptyDir `scratch` of `sizeLimit`, then sleeping.
fn pod(name: &str, size_limit: &str, mib: u32) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": NODE,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "automountServiceAccountToken": false,
            "tolerations": [
                {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
            ],
            "containers": [{
                "name": name,
                "image": BUSYBOX,
                "command": ["/bin/sh", "-c",
                    format!("dd if=/dev/zero of=/scratch/data bs=1M count={mib} && sync && sleep 3600")],
                "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
            }],
            "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": size_limit}}],
        },
    })
}

/// A pod whose container `writer` (limit `ephemeral-storage: 10Mi`) writes 30 MiB into
/// its writable layer; with `idle`, a second container limited to 100Mi that writes
/// nothing.
fn writer_pod(name: &str, idle: bool) -> Value {
    let mut containers = vec![json!({
        "name": "writer",
        "image": BUSYBOX,
        "command": ["/bin/sh", "-c",
            "dd if=/dev/zero of=/data bs=1M count=30 && sync && sleep 3600"],
        "resources": {"limits": {"ephemeral-storage": "10Mi"}},
    })];
    if idle {
        containers.push(json!({
            "name": "idle",
            "image": BUSYBOX,
            "command": ["sleep", "3600"],
            "resources": {"limits": {"ephemeral-storage": "100Mi"}},
        }));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": NODE,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "automountServiceAccountToken": false,
            "tolerations": [
                {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
            ],
            "containers": containers,
        },
    })
}

/// The pod over its emptyDir `sizeLimit` and the pod over its container's
/// `ephemeral-storage` limit are evicted with upstream's status, event and metric; the pod
/// under its limit keeps running.
#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[test]
fn empty_dir_over_size_limit_is_evicted_other_pod_keeps_running() -> TestResult {
    let c = cluster::ensure()?;
    let mut spec = NodeSpec::new(
        NodeKubelet::KubeletRs(PathBuf::from(env!("CARGO_BIN_EXE_kubelet-rs"))),
        NODE,
        NODE_IP,
    );
    spec.taints = vec![format!("{TAINT_KEY}=:NoSchedule")];
    spec.extra_config = vec!["volumeStatsAggPeriod: 5s".into()];
    let node = c.start_node(spec)?;
    delete_namespace(&c, NS);
    ok_stdout(&c, &["create", "namespace", NS]);
    let cleanup = Cleanup { c: &c, ns: NS };
    let pod_json = |name: &str| get_json(&c, &["-n", NS, "get", "pod", name, "-o", "json"]);

    create(&c, NS, &pod("within", "100Mi", 5));
    wait_for("within running", Duration::from_secs(120), || {
        (pod_json("within")["status"]["phase"] == "Running").then_some(())
    });
    create(&c, NS, &pod("over", "10Mi", 30));
    create(&c, NS, &writer_pod("alone", false));
    create(&c, NS, &writer_pod("pair", true));

    let over = wait_for("over evicted", Duration::from_secs(120), || {
        let p = pod_json("over");
        (p["status"]["phase"] == "Failed").then_some(p)
    });
    let st = &over["status"];
    assert_eq!(st["reason"], "Evicted", "{st}");
    let message = "Usage of EmptyDir volume \"scratch\" exceeds the limit \"10Mi\". ";
    assert_eq!(st["message"].as_str(), Some(message), "{st}");
    assert!(
        condition(&over, "DisruptionTarget").is_none(),
        "upstream sets no DisruptionTarget for local storage evictions: {st}"
    );

    let events = wait_for("Evicted event", Duration::from_secs(60), || {
        let e = ok_stdout(
            &c,
            &[
                "-n",
                NS,
                "get",
                "events",
                "--field-selector",
                "involvedObject.name=over,reason=Evicted",
                "-o",
                "json",
            ],
        );
        let v: Value = serde_json::from_str(&e).ok()?;
        let items = v["items"].as_array()?.clone();
        (!items.is_empty()).then_some(items)
    });
    assert_eq!(events[0]["type"], "Warning");
    assert_eq!(events[0]["message"].as_str(), Some(message));

    for (name, message) in [
        (
            "alone",
            "Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. ",
        ),
        (
            "pair",
            "Container writer exceeded its local ephemeral storage limit \"10Mi\". ",
        ),
    ] {
        let p = wait_for(&format!("{name} evicted"), Duration::from_secs(120), || {
            let p = pod_json(name);
            (p["status"]["phase"] == "Failed").then_some(p)
        });
        let st = &p["status"];
        assert_eq!(st["reason"], "Evicted", "{name}: {st}");
        assert_eq!(st["message"].as_str(), Some(message), "{name}: {st}");
    }

    // The pod within its limit is untouched, also after further rounds (and volume
    // measures).
    std::thread::sleep(Duration::from_secs(15));
    let w = pod_json("within");
    assert_eq!(w["status"]["phase"], "Running", "{}", w["status"]);
    assert_eq!(
        w["status"]["containerStatuses"][0]["restartCount"], 0,
        "{}",
        w["status"]
    );

    let metrics = ok_stdout(
        &c,
        &[
            "get",
            "--raw",
            &format!("/api/v1/nodes/{NODE}/proxy/metrics"),
        ],
    );
    assert!(
        metrics.contains("kubelet_evictions{eviction_signal=\"emptydirfs.limit\"} 1")
            && metrics.contains("kubelet_evictions{eviction_signal=\"ephemeralpodfs.limit\"} 1")
            && metrics
                .contains("kubelet_evictions{eviction_signal=\"ephemeralcontainerfs.limit\"} 1"),
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("evict"))
            .collect::<Vec<_>>()
            .join("\n")
    );

    drop(cleanup);
    node.stop()?;
    Ok(())
}
