//! Standalone kubelet-rs against the real containerd of `hack/runtime-up.sh`: liveness,
//! readiness and startup probes (`crates/prober`) on static pods. Run under the shared
//! runtime lock (`flock /var/lib/kubelet-rs-test/dev-runtime.lock`), one kubelet at a time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::node::{Node, busybox_pod, runtime_lock};
use serde_json::Value;

const T: Duration = Duration::from_secs(90);

/// `busybox_pod` with `extra` appended to its `main` container.
fn probed_pod(name: &str, image: &str, command: &str, extra: &str) -> String {
    busybox_pod(name, image, "Always", command) + extra
}

fn main_status(pod: &Value) -> &Value {
    let statuses = pod["status"]["containerStatuses"].as_array();
    statuses
        .and_then(|s| s.iter().find(|c| c["name"] == "main"))
        .unwrap_or(&Value::Null)
}

fn pod_ready(pod: &Value) -> Option<bool> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
        .map(|c| c["status"] == "True")
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn failing_liveness_probe_restarts_the_container() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-liveness").await;
    node.start().await;
    let probe = "    livenessProbe:
      exec:
        command: [\"cat\", \"/tmp/healthy\"]
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 1
";
    node.write_manifest(
        "live.yaml",
        &probed_pod("live", &node.busybox, "sleep 3600", probe),
    );
    let first = node
        .wait_for("live running", T, || async {
            node.running("live").await.pop()
        })
        .await;
    // The probe fails twice, the container is killed and started again.
    let second = node
        .wait_for("live restarted", T, || async {
            node.running("live")
                .await
                .into_iter()
                .find(|c| c.id != first.id)
        })
        .await;
    assert_eq!(second.metadata.as_ref().unwrap().attempt, 1);
    node.wait_for("restartCount 2", T, || async {
        let p = node.pod("live")?;
        (main_status(&p)["restartCount"].as_i64()? >= 2).then_some(())
    })
    .await;
    let p = node.pod("live").unwrap();
    let last = &main_status(&p)["lastState"]["terminated"];
    // Killed by the kubelet with the probe's 1 s grace period: SIGTERM ends `sleep` (PID 1
    // ignores it, so SIGKILL after the grace), exit 137.
    assert_eq!(last["exitCode"], 137, "{p}");
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn readiness_probe_flips_ready_both_ways() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-readiness").await;
    node.start().await;
    let probe = "    readinessProbe:
      exec:
        command: [\"test\", \"-f\", \"/tmp/ready\"]
      periodSeconds: 1
      failureThreshold: 1
";
    // Ready for 6 s, not ready for 6 s, and so on.
    let command = "while true; do touch /tmp/ready; sleep 6; rm -f /tmp/ready; sleep 6; done";
    node.write_manifest(
        "ready.yaml",
        &probed_pod("ready", &node.busybox, command, probe),
    );
    let ready = |want: bool| {
        let node = &node;
        async move {
            let p = node.pod("ready")?;
            let c = main_status(&p);
            (c["ready"] == want && c["started"] == true && pod_ready(&p) == Some(want))
                .then_some(())
        }
    };
    node.wait_for("Ready", T, || ready(true)).await;
    node.wait_for("not Ready", T, || ready(false)).await;
    node.wait_for("Ready again", T, || ready(true)).await;
    let p = node.pod("ready").unwrap();
    assert_eq!(
        main_status(&p)["restartCount"],
        0,
        "readiness never restarts"
    );
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn sidecar_startup_probe_gates_the_main_container() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-startup").await;
    node.start().await;
    let manifest = format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: gated
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: side
    image: {image}
    imagePullPolicy: Never
    restartPolicy: Always
    command: [\"sh\", \"-c\", \"sleep 6; touch /tmp/started; sleep 3600\"]
    startupProbe:
      exec:
        command: [\"test\", \"-f\", \"/tmp/started\"]
      periodSeconds: 1
      failureThreshold: 60
  containers:
  - name: main
    image: {image}
    imagePullPolicy: Never
    command: [\"sleep\", \"3600\"]
",
        image = node.busybox
    );
    node.write_manifest("gated.yaml", &manifest);
    let named = |cs: Vec<kubelet_cri::v1::Container>, name: &str| {
        cs.into_iter()
            .find(|c| c.metadata.as_ref().is_some_and(|m| m.name == name))
    };
    node.wait_for("sidecar running", T, || async {
        named(node.running("gated").await, "side")
    })
    .await;
    // While the sidecar has not started (its startup probe fails), main is not created.
    for _ in 0..30 {
        let p = node.pod("gated");
        let side_started = p.as_ref().and_then(|p| {
            p["status"]["initContainerStatuses"]
                .as_array()?
                .iter()
                .find(|c| c["name"] == "side")
                .map(|c| c["started"] == true)
        });
        if side_started == Some(true) {
            break;
        }
        assert!(
            named(node.containers("gated").await, "main").is_none(),
            "main was created before the sidecar started"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    node.wait_for("main running after the sidecar started", T, || async {
        named(node.running("gated").await, "main")
    })
    .await;
    let p = node.pod("gated").unwrap();
    let side = &p["status"]["initContainerStatuses"][0];
    assert_eq!(side["started"], true, "{p}");
    assert_eq!(side["ready"], true, "{p}");
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn http_and_tcp_probes_against_busybox_httpd() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-httpget").await;
    node.start().await;
    let serve = "mkdir -p /www && echo ok > /www/healthz && exec httpd -f -p 8080 -h /www";
    let good = "    ports:
    - name: http
      containerPort: 8080
    readinessProbe:
      httpGet:
        path: /healthz
        port: http
        httpHeaders:
        - name: X-Probe
          value: kubelet-rs
      periodSeconds: 1
    livenessProbe:
      tcpSocket:
        port: 8080
      periodSeconds: 1
      failureThreshold: 1
";
    let bad = "    livenessProbe:
      httpGet:
        path: /missing
        port: 8080
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 1
";
    node.write_manifest("web.yaml", &probed_pod("web", &node.busybox, serve, good));
    node.write_manifest("bad.yaml", &probed_pod("bad", &node.busybox, serve, bad));
    node.wait_for("web Ready through httpGet", T, || async {
        let p = node.pod("web")?;
        (main_status(&p)["ready"] == true && pod_ready(&p) == Some(true)).then_some(())
    })
    .await;
    node.wait_for("bad restarted (404 from httpd)", T, || async {
        let p = node.pod("bad")?;
        (main_status(&p)["restartCount"].as_i64()? >= 1).then_some(())
    })
    .await;
    // The tcpSocket liveness probe of web keeps passing.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let p = node.pod("web").unwrap();
    assert_eq!(main_status(&p)["restartCount"], 0, "{p}");
    assert_eq!(main_status(&p)["ready"], true, "{p}");
    node.cleanup().await;
}

/// Upstream's `runHTTPHandler` ignores the status code of an `httpGet` hook's response: a
/// postStart hook answered 404 succeeds, and the container keeps running.
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn http_lifecycle_hook_answered_404_succeeds_as_upstream() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-httphook").await;
    node.start().await;
    // The hook's server: a host-network pod, reachable from the kubelet at 127.0.0.1.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let serve = format!("mkdir -p /www && exec httpd -f -p 127.0.0.1:{port} -h /www");
    let server = busybox_pod("hookserver", &node.busybox, "Always", &serve)
        .replace("spec:\n", "spec:\n  hostNetwork: true\n");
    node.write_manifest("server.yaml", &server);
    node.wait_for("hook server listening", T, || async {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    })
    .await;
    let hook = format!(
        "    lifecycle:
      postStart:
        httpGet:
          host: 127.0.0.1
          path: /missing
          port: {port}
"
    );
    node.write_manifest(
        "hooked.yaml",
        &probed_pod("hooked", &node.busybox, "sleep 3600", &hook),
    );
    node.wait_for("hooked running", T, || async {
        let p = node.pod("hooked")?;
        (main_status(&p)["state"]["running"].is_object()).then_some(())
    })
    .await;
    // A failed hook would kill the container and start it again.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let p = node.pod("hooked").unwrap();
    assert_eq!(main_status(&p)["restartCount"], 0, "{p}");
    assert!(main_status(&p)["state"]["running"].is_object(), "{p}");
    assert!(!node.log().contains("PostStartHook"), "{}", node.log());
    node.cleanup().await;
}
