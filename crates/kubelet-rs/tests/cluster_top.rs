//! `kubectl top node`/`kubectl top pod` and `kubectl get --raw
//! /api/v1/nodes/<node>/proxy/stats/summary` through the real control plane
//! (`hack/cluster-up.sh`) and metrics-server (`hack/metrics-server-up.sh`, built from its
//! Go module), on a kubelet-rs node and on the upstream kubelet running the same pod: both
//! nodes report plausible numbers, and the pod's figures agree within a factor (each node
//! runs its own copy of the pod, so only the order of magnitude can be compared).
//!
//! metrics-server and its APIService are cluster-wide: the test takes them down again at the
//! end (a registered but unavailable APIService breaks discovery for every client).
//!
//! Nodes `krs-t-stats-rs` (198.18.255.74) and the harness's upstream reference node
//! (`krs-upstream`), namespace `t-stats-top`. Built as ignored with `KRS_SKIP_CLUSTER_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use kubelet_e2e::cluster::{self, Cluster, NodeKubelet, NodeSpec};
use kubelet_e2e::runtime_env::repo_root;
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const RS_NODE: &str = "krs-t-stats-rs";
const RS_IP: &str = "198.18.255.74";
const NS: &str = "t-stats-top";
const TAINT_KEY: &str = "kubelet-rs.test/stats";
const BUSYBOX: &str = "docker.io/library/busybox:1.36";

fn wait_for<T>(
    what: &str,
    secs: u64,
    mut f: impl FnMut() -> Option<T>,
) -> Result<T, Box<dyn std::error::Error>> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return Ok(v);
        }
        if Instant::now() >= deadline {
            return Err(format!("timed out after {secs}s waiting for {what}").into());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn kubectl(c: &Cluster, args: &[&str]) -> Option<String> {
    let out = c.kubectl().args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A pod that keeps a little CPU busy and holds ~20 MiB of memory (a tmpfs-free `dd` into a
/// shell variable would be too slow; `head -c` into a file under /dev/shm is memory).
fn pod(name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "nodeName": node,
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 1,
            "tolerations": [{"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{
                "name": "busy",
                "image": BUSYBOX,
                "command": ["sh", "-c",
                    "head -c 20971520 /dev/zero > /dev/shm/hold; \
                     while true; do i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; sleep 0.5; done"],
            }],
        },
    })
}

/// `kubectl top pod NAME --no-headers`: (millicores, MiB).
fn top_pod(c: &Cluster, name: &str) -> Option<(f64, f64)> {
    let out = kubectl(c, &["-n", NS, "top", "pod", name, "--no-headers"])?;
    let f: Vec<&str> = out.split_whitespace().collect();
    Some((
        f.get(1)?.strip_suffix('m')?.parse().ok()?,
        f.get(2)?.strip_suffix("Mi")?.parse().ok()?,
    ))
}

/// Every object key path of a JSON value (array elements as `[]`).
fn key_paths(v: &Value) -> std::collections::BTreeSet<String> {
    fn walk(v: &Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    let p = format!("{prefix}.{k}");
                    out.insert(p.clone());
                    walk(v, &p, out);
                }
            }
            Value::Array(a) => {
                for v in a {
                    walk(v, &format!("{prefix}[]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(v, "", &mut out);
    out
}

struct Teardown<'a> {
    c: &'a Cluster,
}

impl Drop for Teardown<'_> {
    fn drop(&mut self) {
        let _ = kubectl(
            self.c,
            &[
                "delete",
                "namespace",
                NS,
                "--ignore-not-found",
                "--wait",
                "--timeout=120s",
            ],
        );
        let down = Command::new(repo_root().join("hack/metrics-server-down.sh")).output();
        if let Ok(out) = down
            && !out.status.success()
        {
            eprintln!(
                "hack/metrics-server-down.sh: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[test]
fn kubectl_top_and_the_summary_through_the_api_server() -> TestResult {
    let c = cluster::ensure()?;
    let taint = vec![format!("{TAINT_KEY}=:NoSchedule")];
    let mut rs = NodeSpec::new(
        NodeKubelet::KubeletRs(PathBuf::from(env!("CARGO_BIN_EXE_kubelet-rs"))),
        RS_NODE,
        RS_IP,
    );
    rs.taints = taint;
    let rs_node = c.start_node(rs)?;
    // The harness's upstream reference node (`krs-upstream`): node pod subnets are few.
    let up_node = c.start_upstream_kubelet()?;
    let up_name = up_node.name.clone();
    let _teardown = Teardown { c: &c };
    let ms = Command::new(repo_root().join("hack/metrics-server-up.sh")).output()?;
    assert!(
        ms.status.success(),
        "hack/metrics-server-up.sh: {}",
        String::from_utf8_lossy(&ms.stderr)
    );
    kubectl(&c, &["create", "namespace", NS]);
    for (name, node) in [("busy-rs", RS_NODE), ("busy-up", up_name.as_str())] {
        let out = c
            .kubectl()
            .args(["apply", "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(pod(name, node).to_string().as_bytes())?;
                child.wait_with_output()
            })?;
        assert!(out.status.success(), "apply {name}");
    }
    for name in ["busy-rs", "busy-up"] {
        wait_for(&format!("{name} Running"), 120, || {
            let phase = kubectl(
                &c,
                &[
                    "-n",
                    NS,
                    "get",
                    "pod",
                    name,
                    "-o",
                    "jsonpath={.status.phase}",
                ],
            )?;
            (phase == "Running").then_some(())
        })?;
    }

    // The summary through the API server's node proxy.
    let raw = kubectl(
        &c,
        &[
            "get",
            "--raw",
            &format!("/api/v1/nodes/{RS_NODE}/proxy/stats/summary"),
        ],
    )
    .ok_or("get --raw stats/summary failed")?;
    let summary: Value = serde_json::from_str(&raw)?;
    assert_eq!(summary["node"]["nodeName"], RS_NODE);
    let pods = summary["pods"].as_array().ok_or("no pods")?;
    let busy = pods
        .iter()
        .find(|p| p["podRef"]["name"] == "busy-rs" && p["podRef"]["namespace"] == NS)
        .ok_or_else(|| format!("busy-rs not in the summary: {summary:#}"))?;
    assert!(
        busy["memory"]["workingSetBytes"].as_u64().unwrap_or(0) > 1 << 20,
        "{busy:#}"
    );
    // The upstream node's summary of its copy of the pod, for the record: the fields one
    // reports and the other does not.
    if let Some(raw) = kubectl(
        &c,
        &[
            "get",
            "--raw",
            &format!("/api/v1/nodes/{up_name}/proxy/stats/summary"),
        ],
    ) {
        let up: Value = serde_json::from_str(&raw)?;
        let up_busy = up["pods"]
            .as_array()
            .and_then(|p| p.iter().find(|p| p["podRef"]["name"] == "busy-up"))
            .cloned()
            .unwrap_or(Value::Null);
        for (what, ours, theirs) in [
            ("node", key_paths(&summary["node"]), key_paths(&up["node"])),
            ("pod", key_paths(busy), key_paths(&up_busy)),
        ] {
            let only_up: Vec<_> = theirs.difference(&ours).collect();
            let only_rs: Vec<_> = ours.difference(&theirs).collect();
            eprintln!("{what} fields only upstream has: {only_up:?}");
            eprintln!("{what} fields only kubelet-rs has: {only_rs:?}");
        }
    }

    // kubectl top: metrics-server needs two scrapes of each node for CPU rates.
    let (rs_cpu, rs_mem) = wait_for("kubectl top pod busy-rs", 180, || top_pod(&c, "busy-rs"))?;
    let (up_cpu, up_mem) = wait_for("kubectl top pod busy-up", 180, || top_pod(&c, "busy-up"))?;
    eprintln!("kubectl top pod: kubelet-rs {rs_cpu}m {rs_mem}Mi, upstream {up_cpu}m {up_mem}Mi");
    // ~20 MiB held in /dev/shm (charged to the pod's memory cgroup) on both.
    assert!(
        (15.0..200.0).contains(&rs_mem),
        "kubelet-rs pod memory {rs_mem}Mi"
    );
    let ratio = rs_mem / up_mem.max(1.0);
    assert!(
        (0.5..2.0).contains(&ratio),
        "memory {rs_mem}Mi vs upstream {up_mem}Mi"
    );
    assert!(rs_cpu > 0.0, "kubelet-rs pod CPU {rs_cpu}m");
    assert!(
        rs_cpu <= (up_cpu * 5.0).max(50.0) && up_cpu <= (rs_cpu * 5.0).max(50.0),
        "CPU {rs_cpu}m vs upstream {up_cpu}m"
    );

    let node_line = wait_for("kubectl top node", 120, || {
        kubectl(&c, &["top", "node", RS_NODE, "--no-headers"])
    })?;
    let f: Vec<&str> = node_line.split_whitespace().collect();
    assert_eq!(f.first().copied(), Some(RS_NODE), "{node_line}");
    let node_cpu: f64 = f[1].trim_end_matches('m').parse()?;
    let node_mem: f64 = f[3].trim_end_matches("Mi").parse()?;
    assert!(node_cpu > 0.0 && node_mem > 0.0, "{node_line}");
    let up_line = kubectl(&c, &["top", "node", &up_name, "--no-headers"]).unwrap_or_default();
    eprintln!("kubectl top node:\n{node_line}{up_line}");

    drop(_teardown);
    up_node.stop()?;
    rs_node.stop()?;
    Ok(())
}
