//! Graceful node shutdown on a kubelet-rs node of the real control plane
//! (`hack/cluster-up.sh`, `hack/kubelet-rs-node-up.sh`), with a private `dbus-daemon` as the
//! kubelet's system bus (`DBUS_SYSTEM_BUS_ADDRESS`) where a fake systemd-logind serves.
//! On `PrepareForShutdown(true)`: a `Shutdown` event on the Node, the Node's Ready
//! condition `False`/`KubeletNotReady` with `node is shutting down` (the manager asks for a
//! node status sync), the API pod killed with phase `Failed`, reason `Terminated`,
//! upstream's message and `DisruptionTarget`/`TerminationByKubelet`, a new pod rejected
//! `NodeShutdown`, the inhibitor lock released; on `PrepareForShutdown(false)` the lock is
//! taken again and the node turns Ready.
//!
//! Node `krs-t-shutdown-rs` (198.18.255.82), namespace `t-shutdown`. Built as ignored with
//! `KRS_SKIP_CLUSTER_TESTS=1` or `KRS_SKIP_RUNTIME_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

mod common;

use common::cluster_ns::{
    Cleanup, condition, create, delete_namespace, get_json, ok_stdout, wait_for,
};
use kubelet_e2e::cluster::{self, NodeKubelet, NodeSpec};
use kubelet_nodeshutdown::fake_logind::{FakeLogind, PrivateBus};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const NODE: &str = "krs-t-shutdown-rs";
const NODE_IP: &str = "198.18.255.82";
const NS: &str = "t-shutdown";
const TAINT_KEY: &str = "kubelet-rs.test/shutdown";
const BUSYBOX: &str = "docker.io/library/busybox:1.36";

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": NODE,
            "terminationGracePeriodSeconds": 30,
            "automountServiceAccountToken": false,
            "tolerations": [
                {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
            ],
            "containers": [{
                "name": "main",
                "image": BUSYBOX,
                // Dies as SIGTERM's default action would (128 + 15): a pod whose containers
                // all exit 0 ends `Succeeded` once terminal (upstream `getPhase`).
                "command": ["/bin/sh", "-c",
                    "trap 'exit 143' TERM; while true; do sleep 0.2; done"],
            }],
        },
    })
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[test]
fn prepare_for_shutdown_turns_the_node_not_ready_and_kills_api_pods() -> TestResult {
    let c = cluster::ensure()?;
    let rt = tokio::runtime::Runtime::new()?;
    let bus = PrivateBus::start()?;
    let logind = rt.block_on(FakeLogind::serve(
        &bus.address,
        Duration::from_secs(60),
        None,
    ))?;
    let mut spec = NodeSpec::new(
        NodeKubelet::KubeletRs(PathBuf::from(env!("CARGO_BIN_EXE_kubelet-rs"))),
        NODE,
        NODE_IP,
    );
    spec.taints = vec![format!("{TAINT_KEY}=:NoSchedule")];
    spec.extra_config = vec![
        "shutdownGracePeriod: 20s".into(),
        "shutdownGracePeriodCriticalPods: 5s".into(),
    ];
    spec.env = vec![("DBUS_SYSTEM_BUS_ADDRESS".into(), bus.address.clone())];
    let node = c.start_node(spec)?;
    delete_namespace(&c, NS);
    ok_stdout(&c, &["create", "namespace", NS]);
    let cleanup = Cleanup { c: &c, ns: NS };
    let pod_json = |name: &str| get_json(&c, &["-n", NS, "get", "pod", name, "-o", "json"]);
    let node_json = || get_json(&c, &["get", "node", NODE, "-o", "json"]);

    assert!(
        rt.block_on(logind.wait_inhibits(1, Duration::from_secs(60))),
        "the kubelet took no inhibitor lock"
    );
    create(&c, NS, &pod("victim"));
    wait_for("victim running", Duration::from_secs(120), || {
        (pod_json("victim")["status"]["phase"] == "Running").then_some(())
    });

    rt.block_on(logind.prepare_for_shutdown(true))?;

    let ready = wait_for("node NotReady", Duration::from_secs(60), || {
        let n = node_json();
        let r = condition(&n, "Ready")?.clone();
        (r["status"] == "False").then_some(r)
    });
    assert_eq!(ready["reason"], "KubeletNotReady", "{ready}");
    assert_eq!(ready["message"], "node is shutting down", "{ready}");

    let victim = wait_for("victim Failed", Duration::from_secs(120), || {
        let p = pod_json("victim");
        (p["status"]["phase"] == "Failed").then_some(p)
    });
    let st = &victim["status"];
    assert_eq!(st["reason"], "Terminated", "{st}");
    assert_eq!(
        st["message"], "Pod was terminated in response to imminent node shutdown.",
        "{st}"
    );
    let dt = condition(&victim, "DisruptionTarget").unwrap_or_else(|| panic!("{st}"));
    assert_eq!(dt["status"], "True", "{st}");
    assert_eq!(dt["reason"], "TerminationByKubelet", "{st}");

    assert!(
        rt.block_on(logind.wait_released(0, Duration::from_secs(60))),
        "inhibitor lock not released"
    );

    let events = ok_stdout(
        &c,
        &[
            "get",
            "events",
            "-A",
            "--field-selector",
            &format!("involvedObject.name={NODE},reason=Shutdown"),
            "-o",
            "json",
        ],
    );
    let events: Value = serde_json::from_str(&events)?;
    assert!(
        events["items"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| e["message"] == "Shutdown manager detected shutdown event"),
        "{events}"
    );

    create(&c, NS, &pod("late"));
    let late = wait_for("late rejected", Duration::from_secs(60), || {
        let p = pod_json("late");
        (p["status"]["phase"] == "Failed").then_some(p)
    });
    assert_eq!(
        late["status"]["reason"], "NodeShutdown",
        "{}",
        late["status"]
    );
    assert_eq!(
        late["status"]["message"],
        "Pod was rejected: Pod was rejected as the node is shutting down.",
        "{}",
        late["status"]
    );

    rt.block_on(logind.prepare_for_shutdown(false))?;
    assert!(rt.block_on(logind.wait_inhibits(2, Duration::from_secs(30))));
    wait_for("node Ready again", Duration::from_secs(90), || {
        let n = node_json();
        (condition(&n, "Ready")?["status"] == "True").then_some(())
    });

    drop(cleanup);
    node.stop()?;
    Ok(())
}
