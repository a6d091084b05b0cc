//! The eviction manager on a kubelet-rs node of the real control plane
//! (`hack/cluster-up.sh`, `hack/kubelet-rs-node-up.sh`): a hard `memory.available`
//! threshold set a few hundred MiB below what this machine has available when the test
//! starts, a Guaranteed pod and a BestEffort pod that then takes 900 MiB of anonymous
//! memory (busybox `dd` with a 900 MiB block, blocked on a pipe nobody reads). The node
//! reports `MemoryPressure`, the BestEffort pod is evicted with upstream's status (phase
//! `Failed`, reason `Evicted`, "The node was low on resource: memory. …", the
//! `DisruptionTarget` condition `TerminationByKubelet`) and a `Warning Evicted` event, the
//! Guaranteed pod keeps running, and `kubelet_evictions{eviction_signal="memory.available"}`
//! counts it.
//!
//! API server pods, not static ones: static pods are critical (upstream `IsCriticalPod`)
//! and never evicted, so a standalone node evicts nothing.
//!
//! `memory.available` is computed as the kubelet computes it (cAdvisor's root cgroup: machine
//! memory − (usage − inactive file)); the threshold is that minus 400 MiB, so nothing is
//! under pressure before the hog starts, and at most ~900 MiB is ever allocated.
//!
//! Node `krs-t-eviction-rs` (198.18.255.79), namespace `t-eviction`. Built as ignored with
//! `KRS_SKIP_CLUSTER_TESTS=1` or `KRS_SKIP_RUNTIME_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use kubelet_e2e::cluster::{self, Cluster, NodeKubelet, NodeSpec};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const NODE: &str = "krs-t-eviction-rs";
const NODE_IP: &str = "198.18.255.79";
const NS: &str = "t-eviction";
const TAINT_KEY: &str = "kubelet-rs.test/eviction";
const BUSYBOX: &str = "docker.io/library/busybox:1.36";
const MI: u64 = 1 << 20;

fn ok_stdout(c: &Cluster, args: &[&str]) -> String {
    c.kubectl_output(args).unwrap()
}

fn create(c: &Cluster, object: &Value) {
    let mut child = c
        .kubectl()
        .args(["-n", NS, "create", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(object.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn delete_namespace(c: &Cluster) {
    let args = ["delete", "namespace", NS, "--ignore-not-found", "--wait"];
    let _ = c.kubectl().args(args).arg("--timeout=120s").output();
}

struct Cleanup<'a>(&'a Cluster);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        delete_namespace(self.0);
    }
}

/// A value of a flat-keyed cgroup v1 stat file.
fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// `memory.available` as the kubelet observes it: MemTotal − root working set.
fn memory_available() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let total_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let v1 = Path::new("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    let working_set = if v1.exists() {
        let usage: u64 = std::fs::read_to_string(v1)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let stat = std::fs::read_to_string("/sys/fs/cgroup/memory/memory.stat").unwrap();
        usage.saturating_sub(stat_value(&stat, "total_inactive_file").unwrap_or(0))
    } else {
        // cgroup v2: the root's usage as cAdvisor reads it (MemTotal − MemFree) minus
        // inactive file pages.
        let kib = |k: &str| -> u64 {
            meminfo
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap()
        };
        let usage = (kib("MemTotal:") - kib("MemFree:")) * 1024;
        usage.saturating_sub(kib("Inactive(file):") * 1024)
    };
    (total_kib * 1024).saturating_sub(working_set)
}

fn pod(name: &str, resources: Value, script: &str) -> Value {
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
                "command": ["/bin/sh", "-c", script],
                "resources": resources,
            }],
        },
    })
}

fn get_json(c: &Cluster, args: &[&str]) -> Value {
    serde_json::from_str(&ok_stdout(c, args)).unwrap()
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[test]
fn best_effort_memory_hog_is_evicted_guaranteed_pod_keeps_running() -> TestResult {
    let c = cluster::ensure()?;
    let available = memory_available();
    let threshold_mi = (available / MI).saturating_sub(400);
    assert!(
        threshold_mi > 1024,
        "this machine has too little memory available ({} MiB) for the test",
        available / MI
    );
    eprintln!(
        "memory.available {} MiB, threshold {threshold_mi}Mi",
        available / MI
    );
    let mut spec = NodeSpec::new(
        NodeKubelet::KubeletRs(PathBuf::from(env!("CARGO_BIN_EXE_kubelet-rs"))),
        NODE,
        NODE_IP,
    );
    spec.taints = vec![format!("{TAINT_KEY}=:NoSchedule")];
    spec.memory_available = Some(format!("{threshold_mi}Mi"));
    // No allocatable threshold: `enforceNodeAllocatable: [pods]` would copy the hard
    // `memory.available` threshold to `allocatableMemory.available` (upstream
    // `addAllocatableThresholds`), and the pods cgroup, limited to capacity minus that
    // threshold, would be under it from the start.
    spec.extra_config = vec![
        "evictionPressureTransitionPeriod: 60s".into(),
        "enforceNodeAllocatable: [none]".into(),
    ];
    let node = c.start_node(spec)?;
    delete_namespace(&c);
    ok_stdout(&c, &["create", "namespace", NS]);
    let cleanup = Cleanup(&c);

    let node_json = || get_json(&c, &["get", "node", NODE, "-o", "json"]);
    let memory_pressure = |n: &Value| {
        condition(n, "MemoryPressure")
            .map(|c| c["status"].as_str().unwrap_or_default().to_string())
            .unwrap_or_default()
    };
    assert_eq!(
        memory_pressure(&node_json()),
        "False",
        "under pressure before the test started"
    );

    let limits = json!({"cpu": "100m", "memory": "64Mi"});
    create(
        &c,
        &pod(
            "guaranteed",
            json!({"requests": limits, "limits": limits}),
            "sleep 3600",
        ),
    );
    let pod_json = |name: &str| get_json(&c, &["-n", NS, "get", "pod", name, "-o", "json"]);
    wait_for("guaranteed running", Duration::from_secs(120), || {
        (pod_json("guaranteed")["status"]["phase"] == "Running").then_some(())
    });

    // 900 MiB of anonymous memory, held: dd's buffer, blocked writing to a pipe `sleep`
    // never reads.
    create(
        &c,
        &pod(
            "hog",
            json!({}),
            "dd if=/dev/zero bs=900M count=1 2>/dev/null | sleep 3600",
        ),
    );
    let hog = wait_for("hog evicted", Duration::from_secs(180), || {
        let p = pod_json("hog");
        (p["status"]["phase"] == "Failed").then_some(p)
    });
    let st = &hog["status"];
    assert_eq!(st["reason"], "Evicted", "{st}");
    let message = st["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "The node was low on resource: memory. Threshold quantity: {threshold_mi}Mi, available: "
        )),
        "{message}"
    );
    assert!(
        message.contains(". Container hog was using ")
            && message.ends_with(", request is 0, has larger consumption of memory. "),
        "{message}"
    );
    let dt = condition(&hog, "DisruptionTarget").expect("DisruptionTarget condition");
    assert_eq!(dt["status"], "True");
    assert_eq!(dt["reason"], "TerminationByKubelet");
    assert_eq!(dt["message"].as_str(), Some(message));

    // The node reports MemoryPressure (held for the 60 s transition period).
    wait_for("MemoryPressure", Duration::from_secs(60), || {
        let n = node_json();
        (memory_pressure(&n) == "True").then_some(())
    });
    let n = node_json();
    let mp = condition(&n, "MemoryPressure").unwrap();
    assert_eq!(mp["reason"], "KubeletHasInsufficientMemory");

    // The Warning Evicted event, with the same message.
    let events = wait_for("Evicted event", Duration::from_secs(60), || {
        let e = ok_stdout(
            &c,
            &[
                "-n",
                NS,
                "get",
                "events",
                "--field-selector",
                "involvedObject.name=hog,reason=Evicted",
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

    // The Guaranteed pod is untouched, also after the next rounds.
    std::thread::sleep(Duration::from_secs(25));
    let g = pod_json("guaranteed");
    assert_eq!(g["status"]["phase"], "Running", "{}", g["status"]);
    assert_eq!(
        g["status"]["containerStatuses"][0]["restartCount"], 0,
        "{}",
        g["status"]
    );

    // kubelet_evictions counts the eviction.
    let metrics = ok_stdout(
        &c,
        &["get", "--raw", &format!("/api/v1/nodes/{NODE}/proxy/metrics")],
    );
    assert!(
        metrics.contains("kubelet_evictions{eviction_signal=\"memory.available\"} 1"),
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
