//! Standalone kubelet-rs against the real containerd of `hack/runtime-up.sh`:
//! `ContainerRestartRules` (beta, on by default in 1.35) — a container-level `restartPolicy`
//! and `restartPolicyRules` decide the container's restarts and the pod phase as upstream's
//! `ContainerShouldRestart` and `getPhase` do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::node::{Node, runtime_lock};
use serde_json::Value;

const T: Duration = Duration::from_secs(90);

fn container_status<'a>(pod: &'a Value, name: &str) -> &'a Value {
    pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == name))
        .unwrap_or(&Value::Null)
}

fn restart_count(pod: &Value, name: &str) -> u64 {
    container_status(pod, name)["restartCount"]
        .as_u64()
        .unwrap_or(0)
}

/// The exit code of the container's current or last termination.
fn exit_code(pod: &Value, name: &str) -> Option<i64> {
    let s = container_status(pod, name);
    s["state"]["terminated"]["exitCode"]
        .as_i64()
        .or_else(|| s["lastState"]["terminated"]["exitCode"].as_i64())
}

/// Pod `restartPolicy: Never`; a container with its own `restartPolicy: Always` whose
/// process exits 1 is restarted (its restart count rises) while the other one, under the
/// pod's `Never`, stays terminated; the pod is `Running` (a container is restarting).
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn container_restart_policy_overrides_the_pods() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-restartpol").await;
    node.start().await;
    let manifest = format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: rpol
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: always
    image: {image}
    imagePullPolicy: Never
    restartPolicy: Always
    command: [\"sh\", \"-c\", \"exit 1\"]
  - name: never
    image: {image}
    imagePullPolicy: Never
    command: [\"sh\", \"-c\", \"exit 3\"]
",
        image = node.busybox
    );
    node.write_manifest("rpol.yaml", &manifest);
    let pod = node
        .wait_for("container `always` restarted", T, || async {
            node.pod("rpol")
                .filter(|p| restart_count(p, "always") >= 1 && exit_code(p, "never") == Some(3))
        })
        .await;
    assert_eq!(restart_count(&pod, "never"), 0, "{pod}");
    assert_eq!(pod["status"]["phase"], "Running", "{pod}");
    // The runtime saw the restart: two or more instances of `always`, one of `never`.
    let attempts = |name: &str, cs: &[kubelet_cri::v1::Container]| {
        cs.iter()
            .filter(|c| c.metadata.as_ref().is_some_and(|m| m.name == name))
            .count()
    };
    let cs = node.containers("rpol").await;
    assert!(attempts("always", &cs) >= 2, "{cs:?}");
    assert_eq!(attempts("never", &cs), 1, "{cs:?}");
    node.cleanup().await;
}

/// Pod `restartPolicy: Always`; both containers say `restartPolicy: Never` with a rule
/// restarting them on exit code 42. `flip` exits 42 first (restarted once), then 1;
/// `other` exits 1 (never restarted). Nothing is restartable any more and a container
/// failed: upstream's `getPhase` gives `Failed` although the pod's policy is `Always`.
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn restart_rules_restart_by_exit_code_and_decide_the_phase() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-restartrules").await;
    node.start().await;
    let rules = "    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes:
        operator: In
        values: [42]
";
    let manifest = format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: rrules
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 1
  containers:
  - name: flip
    image: {image}
    imagePullPolicy: Never
{rules}    command: [\"sh\", \"-c\", \"if [ -e /d/ran ]; then exit 1; fi; touch /d/ran; exit 42\"]
    volumeMounts:
    - {{name: d, mountPath: /d}}
  - name: other
    image: {image}
    imagePullPolicy: Never
{rules}    command: [\"sh\", \"-c\", \"exit 1\"]
  volumes:
  - name: d
    emptyDir: {{}}
",
        image = node.busybox
    );
    node.write_manifest("rrules.yaml", &manifest);
    let pod = node
        .wait_for("rrules Failed", T, || async {
            node.pod("rrules")
                .filter(|p| p["status"]["phase"] == "Failed")
        })
        .await;
    assert_eq!(restart_count(&pod, "flip"), 1, "{pod}");
    assert_eq!(exit_code(&pod, "flip"), Some(1), "{pod}");
    assert_eq!(restart_count(&pod, "other"), 0, "{pod}");
    assert_eq!(exit_code(&pod, "other"), Some(1), "{pod}");
    // Terminal: nothing is started again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(node.running("rrules").await.is_empty());
    let pod = node.pod("rrules").unwrap();
    assert_eq!(pod["status"]["phase"], "Failed", "{pod}");
    assert_eq!(restart_count(&pod, "flip"), 1, "{pod}");
    node.cleanup().await;
}
