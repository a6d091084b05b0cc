//! Graceful node shutdown on the real runtime: a standalone kubelet-rs with
//! `shutdownGracePeriodByPodPriority` on a private `dbus-daemon` (as its system bus,
//! `DBUS_SYSTEM_BUS_ADDRESS`) where a fake systemd-logind serves; static pods of three
//! priorities run on the containerd of `hack/runtime-up.sh`. The fake announces the
//! shutdown (`PrepareForShutdown(true)`): the pods are killed band by band, lowest
//! priority first, each within its band's period; the inhibitor lock's descriptor is
//! closed at the end; `/pods` reports them `Failed`/`Terminated` with `DisruptionTarget`;
//! a new pod is rejected `NodeShutdown`; the state file and the gauges hold the times.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::node::{Node, runtime_lock};
use kubelet_cri::RuntimeService;
use kubelet_nodeshutdown::fake_logind::{FakeLogind, PrivateBus};
use serde_json::Value;

const T: Duration = Duration::from_secs(90);

/// A pod whose container takes 2 s to stop on SIGTERM (so a band's kills take time and
/// the order of the bands shows in the containers' finish times).
fn pod(name: &str, image: &str, priority: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
{priority}  terminationGracePeriodSeconds: 30
  containers:
  - name: main
    image: {image}
    imagePullPolicy: Never
    command: [\"sh\", \"-c\", \"trap 'sleep 2; exit 0' TERM; while true; do sleep 0.2; done\"]
"
    )
}

/// The finish time (ns) of the pod's container, from CRI.
async fn finished_at(node: &Node, name: &str) -> Option<i64> {
    let cs = node.containers(name).await;
    let c = cs.first()?;
    let st = node.cri.container_status(&c.id, false).await.ok()?;
    let status = st.status?;
    (status.finished_at > 0).then_some(status.finished_at)
}

fn condition<'a>(pod: &'a Value, type_: &str) -> Option<&'a Value> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn pods_are_killed_by_priority_band_on_prepare_for_shutdown() {
    let _g = runtime_lock().await;
    let bus = PrivateBus::start().expect("dbus-daemon");
    // logind allows 60 s of delay: more than the 30 s requested, no override needed.
    let logind = FakeLogind::serve(&bus.address, Duration::from_secs(60), None)
        .await
        .expect("fake logind");
    let mut node = Node::with_config(
        "rt-shutdown",
        "shutdownGracePeriodByPodPriority:
- priority: 0
  shutdownGracePeriodSeconds: 10
- priority: 100000
  shutdownGracePeriodSeconds: 10
- priority: 2000000000
  shutdownGracePeriodSeconds: 10
",
    )
    .await;
    node.env = vec![("DBUS_SYSTEM_BUS_ADDRESS".into(), bus.address.clone())];
    node.start().await;
    assert!(
        logind.wait_inhibits(1, Duration::from_secs(30)).await,
        "no inhibitor lock taken; kubelet log:\n{}",
        node.log()
    );
    let inhibit = &logind.inhibits()[0];
    assert_eq!(
        (
            inhibit.what.as_str(),
            inhibit.who.as_str(),
            inhibit.why.as_str(),
            inhibit.mode.as_str()
        ),
        (
            "shutdown",
            "kubelet",
            "Kubelet needs time to handle node shutdown",
            "delay"
        )
    );
    assert!(!inhibit.released);

    let image = node.busybox.clone();
    node.write_manifest("low.yaml", &pod("low", &image, ""));
    node.write_manifest("mid.yaml", &pod("mid", &image, "  priority: 100000\n"));
    node.write_manifest(
        "crit.yaml",
        &pod(
            "crit",
            &image,
            "  priorityClassName: system-node-critical\n  priority: 2000001000\n",
        ),
    );
    for name in ["low", "mid", "crit"] {
        node.wait_for(&format!("{name} running"), T, || async {
            (!node.running(name).await.is_empty()).then_some(())
        })
        .await;
    }

    logind.prepare_for_shutdown(true).await.unwrap();
    // The lock is released once every band is done.
    assert!(
        logind.wait_released(0, Duration::from_secs(60)).await,
        "inhibitor lock not released; kubelet log:\n{}",
        node.log()
    );
    let mut done = Vec::new();
    for name in ["low", "mid", "crit"] {
        let t = node
            .wait_for(&format!("{name} finished"), T, || finished_at(&node, name))
            .await;
        done.push(t);
    }
    // Band after band: each container stops ~2 s after the previous band's (parallel
    // kills would finish together).
    let gap = |a: i64, b: i64| Duration::from_nanos(u64::try_from(b - a).unwrap_or(0));
    eprintln!(
        "finish gaps: low→mid {:?}, mid→crit {:?}",
        gap(done[0], done[1]),
        gap(done[1], done[2])
    );
    assert!(
        gap(done[0], done[1]) >= Duration::from_millis(1500)
            && gap(done[1], done[2]) >= Duration::from_millis(1500),
        "finish times not band after band: {done:?}; kubelet log:\n{}",
        node.log()
    );

    for name in ["low", "mid", "crit"] {
        let p = node
            .wait_for(&format!("{name} Failed in /pods"), T, || async {
                node.pod(name).filter(|p| p["status"]["phase"] == "Failed")
            })
            .await;
        assert_eq!(p["status"]["reason"], "Terminated", "{p}");
        assert_eq!(
            p["status"]["message"], "Pod was terminated in response to imminent node shutdown.",
            "{p}"
        );
        let c = condition(&p, "DisruptionTarget").unwrap_or_else(|| panic!("{p}"));
        assert_eq!(c["status"], "True", "{p}");
        assert_eq!(c["reason"], "TerminationByKubelet", "{p}");
        // Not restarted.
        assert!(node.running(name).await.is_empty());
    }

    // While shutting down, new pods are rejected.
    node.write_manifest("late.yaml", &pod("late", &image, ""));
    let late = node
        .wait_for("late rejected", T, || async {
            node.pod("late")
                .filter(|p| p["status"]["phase"] == "Failed")
        })
        .await;
    assert_eq!(late["status"]["reason"], "NodeShutdown", "{late}");
    assert!(node.containers("late").await.is_empty());

    // The state file and the gauges.
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(
            node.dir
                .path()
                .join("root")
                .join("graceful_node_shutdown_state"),
        )
        .unwrap(),
    )
    .unwrap();
    let start: jiff::Timestamp = state["startTime"].as_str().unwrap().parse().unwrap();
    let end: jiff::Timestamp = state["endTime"].as_str().unwrap().parse().unwrap();
    assert!(end > start, "{state}");
    let (code, metrics) = common::http_get(node.ro_port, "/metrics").unwrap();
    assert_eq!(code, 200);
    let gauge = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    assert!(
        (gauge("kubelet_graceful_shutdown_start_time_seconds") - start.as_second() as f64).abs()
            < 1.0
    );
    assert!(
        (gauge("kubelet_graceful_shutdown_end_time_seconds") - end.as_second() as f64).abs() < 1.0
    );

    // Cancelled: the lock is taken again and pods are admitted.
    logind.prepare_for_shutdown(false).await.unwrap();
    assert!(logind.wait_inhibits(2, Duration::from_secs(30)).await);
    node.cleanup().await;
}

/// No system bus (as on a host whose PID 1 is not systemd): the manager's start fails,
/// the kubelet logs `Failed to start node shutdown manager` with the error and runs on
/// (upstream: "The shutdown manager is not critical for kubelet"); pods are admitted.
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn without_a_system_bus_the_kubelet_logs_and_runs_on() {
    let _g = runtime_lock().await;
    let mut node = Node::with_config(
        "rt-shutdown-nobus",
        "shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n",
    )
    .await;
    let missing = node.dir.path().join("no-bus");
    node.env = vec![(
        "DBUS_SYSTEM_BUS_ADDRESS".into(),
        format!("unix:path={}", missing.display()),
    )];
    node.start().await;
    let image = node.busybox.clone();
    node.write_manifest("ok.yaml", &pod("ok", &image, ""));
    node.wait_for("ok running", T, || async {
        (!node.running("ok").await.is_empty()).then_some(())
    })
    .await;
    let log = node.log();
    let line = log
        .lines()
        .find(|l| l.contains("Failed to start node shutdown manager"))
        .unwrap_or_else(|| panic!("no start failure logged:\n{log}"));
    assert!(line.contains("No such file or directory"), "{line}");
    assert!(log.contains("Creating node shutdown manager"), "{log}");
    node.cleanup().await;
}
