//! Reference run: the upstream kubelet joins the test control plane on the private
//! containerd, its node is Ready, and a busybox pod created with kubectl runs and has logs.
//! Ignored (and counted as ignored by the test runner) only when built with
//! `KRS_SKIP_CLUSTER_TESTS=1`; a control plane that cannot be brought up fails them.

use kubelet_e2e::{cluster, runtime_env};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[cfg_attr(
    any(krs_skip_cluster, krs_skip_runtime),
    ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
)]
#[test]
fn upstream_kubelet_runs_a_busybox_pod() -> TestResult {
    let c = cluster::ensure()?;
    let node = c.start_upstream_kubelet()?;
    let ready = c.kubectl_output([
        "get",
        "node",
        &node.name,
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
    ])?;
    assert_eq!(ready, "True");
    let kubelet_version = c.kubectl_output([
        "get",
        "node",
        &node.name,
        "-o",
        "jsonpath={.status.nodeInfo.kubeletVersion}",
    ])?;
    assert_eq!(kubelet_version, "v1.35.4");

    let busybox = runtime_env::ensure()?.busybox_image;
    let pod = format!("busybox-{}", std::process::id());
    let marker = format!("hello-from-{pod}");
    let manifest = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod, "namespace": "default"},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node.name},
            "terminationGracePeriodSeconds": 5,
            "containers": [{
                "name": "busybox",
                "image": busybox,
                "command": ["sh", "-c",
                    format!("trap 'exit 0' TERM; echo {marker}; while true; do sleep 1; done")],
            }],
        },
    });
    let result = run_pod(&c, &pod, &marker, &manifest.to_string());
    // Clean up whatever happened; the checks' failure comes first, then the clean-up's.
    let deleted = c.kubectl_output(["delete", "pod", &pod, "--wait", "--timeout=60s"]);
    node.stop()?;
    result?;
    deleted?;
    Ok(())
}

fn run_pod(c: &cluster::Cluster, pod: &str, marker: &str, manifest: &str) -> TestResult {
    let dir = std::env::temp_dir().join(format!("krs-{pod}"));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("pod.json");
    std::fs::write(&file, manifest)?;
    c.kubectl_output(["apply", "-f", &file.to_string_lossy()])?;
    c.kubectl_output([
        "wait",
        "pod",
        pod,
        "--for=jsonpath={.status.phase}=Running",
        "--timeout=120s",
    ])?;
    // The container may not have flushed its first line yet when the pod turns Running.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let logs = c.kubectl_output(["logs", pod])?;
        if logs.contains(marker) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "logs of {pod}: {logs:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let hostname = c.kubectl_output(["exec", pod, "--", "hostname"])?;
    assert_eq!(hostname.trim(), pod);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// The locally built agnhost image (images/agnhost) runs under its upstream name.
#[cfg_attr(
    any(krs_skip_cluster, krs_skip_runtime),
    ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
)]
#[test]
fn upstream_kubelet_runs_agnhost() -> TestResult {
    let c = cluster::ensure()?;
    let node = c.start_upstream_kubelet()?;
    let pod = format!("agnhost-{}", std::process::id());
    let result = run_agnhost(&c, &node.name, &pod);
    let deleted = c.kubectl_output(["delete", "pod", &pod, "--wait", "--timeout=60s"]);
    node.stop()?;
    result?;
    deleted?;
    Ok(())
}

fn run_agnhost(c: &cluster::Cluster, node: &str, pod: &str) -> TestResult {
    c.kubectl_output([
        "run",
        pod,
        "--image=registry.k8s.io/e2e-test-images/agnhost:2.59",
        "--image-pull-policy=Never",
        &format!("--overrides={{\"spec\":{{\"nodeName\":\"{node}\"}}}}"),
        "--",
        "netexec",
        "--http-port=8080",
    ])?;
    c.kubectl_output([
        "wait",
        "pod",
        pod,
        "--for=condition=Ready",
        "--timeout=120s",
    ])?;
    // netexec answers on the pod's loopback; the image's user is the one upstream defines.
    // The pod has no readiness probe, so Ready means started, not listening: ask until
    // netexec answers (at most 10 s), or print nothing and fail below.
    let out = c.kubectl_output([
        "exec",
        pod,
        "--",
        "sh",
        "-c",
        "for i in $(seq 100); do wget -qO- http://127.0.0.1:8080/hostname 2>/dev/null && break; \
         sleep 0.1; done; echo; id -G user-defined-in-image",
    ])?;
    assert_eq!(out, format!("{pod}\n1000 50000\n"));
    Ok(())
}
