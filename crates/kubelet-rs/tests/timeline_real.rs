//! Standalone kubelet-rs against the real containerd of `hack/runtime-up.sh`: the pod startup
//! timeline (issue #11, `kubelet_container::timeline`) of a static pod with an init container,
//! fetched over HTTPS from `/debug/pods/{namespace}/{name}/timeline`: every step present, in
//! order; the V(2) log line at the first Ready; the `kubelet_rs_pod_startup_step_duration_seconds`
//! histogram; nothing on the read-only port; the timeline forgotten with the pod. Run under
//! the shared runtime lock (`flock /var/lib/kubelet-rs-test/dev-runtime.lock`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::node::{Node, runtime_lock};
use kubelet_metrics::testing::{parse, value};

const T: Duration = Duration::from_secs(90);

fn manifest(image: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: timed
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: setup
    image: {image}
    imagePullPolicy: Never
    command: [\"true\"]
  containers:
  - name: main
    image: {image}
    imagePullPolicy: Never
    command: [\"sleep\", \"3600\"]
"
    )
}

/// `(step, subject, sinceSeenSeconds)` of each entry, checking each `time` is RFC 3339.
fn steps(body: &serde_json::Value) -> Vec<(String, Option<String>, f64)> {
    body["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps: {body}"))
        .iter()
        .map(|s| {
            let time = s["time"].as_str().unwrap();
            time.parse::<jiff::Timestamp>()
                .unwrap_or_else(|e| panic!("{time}: {e}"));
            let subject = s["container"]
                .as_str()
                .or(s["image"].as_str())
                .map(str::to_string);
            (
                s["step"].as_str().unwrap().to_string(),
                subject,
                s["sinceSeenSeconds"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn a_static_pods_startup_timeline_has_every_step_in_order() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-timeline").await;
    node.start().await;
    node.write_manifest("timed.yaml", &manifest(&node.busybox));
    node.wait_for("timed ready", T, || async {
        let p = node.pod("timed")?;
        p["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
            .then_some(())
    })
    .await;
    let name = format!("timed-{}", node.name);
    let path = format!("/debug/pods/default/{name}/timeline");
    let ca = node.dir.path().join("root/pki/kubelet.crt");

    let (status, body) = common::tls::https_get(node.secure_port, &path, &ca).await;
    assert_eq!(status, 200, "{body}\nkubelet log:\n{}", node.log());
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    let uid = node.pod("timed").unwrap()["metadata"]["uid"].clone();
    assert_eq!(
        (&body["namespace"], &body["name"], &body["uid"]),
        (&"default".into(), &name.as_str().into(), &uid)
    );
    let got = steps(&body);
    let order: Vec<(&str, Option<&str>)> = got
        .iter()
        .map(|(s, subject, _)| (s.as_str(), subject.as_deref()))
        .collect();
    let image = node.busybox.as_str();
    // Every step once, in the order the kubelet takes them: the init container runs to
    // completion before the main container is created; each container's image is its own
    // step (present on the node: no `imagePullStarted`).
    assert_eq!(
        order,
        [
            ("seen", None),
            ("admitted", None),
            ("workerStarted", None),
            ("sandboxCreated", None),
            ("networkReady", None),
            ("imagePulled", Some("setup")),
            ("containerCreated", Some("setup")),
            ("containerStarted", Some("setup")),
            ("imagePulled", Some("main")),
            ("containerCreated", Some("main")),
            ("containerStarted", Some("main")),
            ("ready", None),
        ],
        "{body:#}"
    );
    assert_eq!(got[0].2, 0.0);
    assert!(
        got.windows(2).all(|w| w[0].2 <= w[1].2),
        "offsets from seen never decrease: {body:#}"
    );
    for i in [5, 8] {
        assert_eq!(body["steps"][i]["alreadyPresent"], true, "{body:#}");
        assert_eq!(body["steps"][i]["image"], image, "{body:#}");
    }

    // A pod the kubelet does not have.
    let (status, _) =
        common::tls::https_get(node.secure_port, "/debug/pods/default/nope/timeline", &ca).await;
    assert_eq!(status, 404);
    // Never on the read-only port.
    let (status, _) = common::http_get(node.ro_port, &path).unwrap();
    assert_eq!(status, 404);

    // The V(2) line at the first Ready, every step with its offset from seen.
    let log = node.log();
    let line = log
        .lines()
        .find(|l| l.contains("\"Pod startup timeline\"") && l.contains(&name))
        .unwrap_or_else(|| panic!("no timeline log line:\n{log}"));
    eprintln!("{body:#}\n{line}");
    for part in [
        "seen=0s",
        " admitted=",
        " workerStarted=",
        " sandboxCreated=",
        " networkReady=",
        " imagePulled(setup)=",
        " containerCreated(setup)=",
        " containerStarted(setup)=",
        " imagePulled(main)=",
        " containerCreated(main)=",
        " containerStarted(main)=",
        " ready=",
    ] {
        assert!(line.contains(part), "{part:?} missing from {line}");
    }

    // The histogram: one observation per step for this (only) pod.
    let (status, text) = common::http_get(node.ro_port, "/metrics").unwrap();
    assert_eq!(status, 200);
    let families = parse(&text).unwrap();
    let f = &families["kubelet_rs_pod_startup_step_duration_seconds"];
    for step in [
        "admitted",
        "worker_started",
        "sandbox_created",
        "network_ready",
        "image_pulled",
        "container_created",
        "container_started",
        "ready",
    ] {
        assert_eq!(value(f, &[step]), Some(1.0), "{step}\n{text}");
    }
    // Nothing was pulled.
    assert_eq!(value(f, &["image_pull_started"]), None, "{text}");

    // The pod leaves the kubelet: so does its timeline.
    node.remove_manifest("timed.yaml");
    node.wait_for("timeline forgotten", T, || async {
        let (status, _) = common::tls::https_get(node.secure_port, &path, &ca).await;
        (status == 404).then_some(())
    })
    .await;
    node.cleanup().await;
}
