//! Standalone kubelet-rs against the real containerd of `hack/runtime-up.sh`: static pods
//! through their whole lifecycle. Tests take a lock so only one kubelet uses the runtime
//! at a time (a kubelet stops runtime pods it does not know, as upstream does).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::node::{Node, busybox_pod, runtime_lock};
use nix::sys::signal::Signal;

const T: Duration = Duration::from_secs(60);

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn static_pod_reaches_running_and_logs_are_written() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-running").await;
    node.start().await;
    node.write_manifest(
        "hello.yaml",
        &busybox_pod(
            "hello",
            &node.busybox,
            "Always",
            "echo hello from kubelet-rs; sleep 3600",
        ),
    );
    node.wait_for("hello Running", T, || async {
        (node.phase("hello").as_deref() == Some("Running")).then_some(())
    })
    .await;
    let pod = node.pod("hello").unwrap();
    assert_eq!(pod["status"]["containerStatuses"][0]["ready"], true);
    assert_eq!(pod["status"]["containerStatuses"][0]["restartCount"], 0);
    assert!(
        pod["status"]["podIP"]
            .as_str()
            .unwrap_or("")
            .starts_with("198.18."),
        "{pod}"
    );
    assert_eq!(node.running("hello").await.len(), 1);
    let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
    let log = node
        .logs_dir()
        .join(format!("default_hello-rt-running_{uid}"))
        .join("main")
        .join("0.log");
    let content = node
        .wait_for("log file", T, || async {
            std::fs::read_to_string(&log)
                .ok()
                .filter(|s| s.contains("hello from kubelet-rs"))
        })
        .await;
    // CRI log format: <RFC3339Nano> stdout F <line>
    assert!(
        content
            .lines()
            .next()
            .unwrap()
            .contains(" stdout F hello from kubelet-rs"),
        "{content}"
    );
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn killed_container_is_restarted_with_backoff_and_restart_count() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-restart").await;
    node.start().await;
    node.write_manifest(
        "victim.yaml",
        &busybox_pod("victim", &node.busybox, "Always", "sleep 3600"),
    );
    let first = node
        .wait_for("victim running", T, || async {
            node.running("victim").await.pop()
        })
        .await;
    let pid = node.container_pid(&first.id).await;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL).unwrap();
    let second = node
        .wait_for("victim restarted", T, || async {
            node.running("victim")
                .await
                .into_iter()
                .find(|c| c.id != first.id)
        })
        .await;
    assert_eq!(second.metadata.as_ref().unwrap().attempt, 1);
    node.wait_for("restartCount 1", T, || async {
        let p = node.pod("victim")?;
        (p["status"]["containerStatuses"][0]["restartCount"] == 1).then_some(())
    })
    .await;
    // Kill it again: now it waits out a back-off, reported as CrashLoopBackOff.
    let pid = node.container_pid(&second.id).await;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL).unwrap();
    node.wait_for("CrashLoopBackOff", T, || async {
        let p = node.pod("victim")?;
        (p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff")
            .then_some(())
    })
    .await;
    node.wait_for("second restart", T, || async {
        let p = node.pod("victim")?;
        (p["status"]["containerStatuses"][0]["restartCount"] == 2
            && !node.running("victim").await.is_empty())
        .then_some(())
    })
    .await;
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn removed_manifest_stops_containers_and_removes_sandbox() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-remove").await;
    node.start().await;
    node.write_manifest(
        "gone.yaml",
        &busybox_pod(
            "gone",
            &node.busybox,
            "Always",
            "trap 'exit 0' TERM; sleep 3600 & wait",
        ),
    );
    node.wait_for("gone running", T, || async {
        node.running("gone").await.pop()
    })
    .await;
    let uid = node.pod("gone").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let pod_dir = node.dir.path().join("root/pods").join(&uid);
    assert!(pod_dir.join("etc-hosts").exists(), "{pod_dir:?}");
    node.remove_manifest("gone.yaml");
    node.wait_for("containers stopped", T, || async {
        node.running("gone").await.is_empty().then_some(())
    })
    .await;
    node.wait_for("sandbox removed", T, || async {
        node.sandboxes("gone").await.is_empty().then_some(())
    })
    .await;
    node.wait_for("pod gone from /pods", T, || async {
        node.pod("gone").is_none().then_some(())
    })
    .await;
    node.wait_for("orphaned pod directory removed", T, || async {
        (!pod_dir.exists()).then_some(())
    })
    .await;
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn changed_manifest_recreates_the_pod() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-change").await;
    node.start().await;
    node.write_manifest(
        "web.yaml",
        &busybox_pod("web", &node.busybox, "Always", "echo v1; sleep 3600"),
    );
    let v1 = node
        .wait_for("v1 running", T, || async {
            node.running("web").await.pop()
        })
        .await;
    node.write_manifest(
        "web.yaml",
        &busybox_pod("web", &node.busybox, "Always", "echo v2; sleep 3600"),
    );
    let v2 = node
        .wait_for("v2 running", T, || async {
            node.running("web")
                .await
                .into_iter()
                .find(|c| c.id != v1.id)
        })
        .await;
    assert_ne!(
        v1.pod_sandbox_id, v2.pod_sandbox_id,
        "a new pod (new UID) gets a new sandbox"
    );
    node.wait_for("old sandbox removed", T, || async {
        node.sandboxes("web")
            .await
            .iter()
            .all(|s| s.id != v1.pod_sandbox_id)
            .then_some(())
    })
    .await;
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn malformed_manifests_never_stop_the_valid_pods() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-malformed").await;
    node.start().await;
    node.write_raw("garbage.yaml", b"{{{{ this is not yaml");
    node.write_raw("binary.yaml", &[0u8, 159, 146, 150, 255, 0, 1]);
    node.write_raw("empty.yaml", b"");
    node.write_raw(
        "wrongkind.yaml",
        b"apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n",
    );
    node.write_raw(
        "invalid.yaml",
        b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers: []\n",
    );
    std::os::unix::fs::symlink(
        node.manifests.join("loop-b.yaml"),
        node.manifests.join("loop-a.yaml"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        node.manifests.join("loop-a.yaml"),
        node.manifests.join("loop-b.yaml"),
    )
    .unwrap();
    node.write_raw("huge.yaml", &vec![b'#'; 11 << 20]);
    for name in ["good-a", "good-b"] {
        node.write_manifest(
            &format!("{name}.yaml"),
            &busybox_pod(name, &node.busybox, "Always", "sleep 3600"),
        );
    }
    for name in ["good-a", "good-b"] {
        node.wait_for(name, T, || async {
            (node.phase(name).as_deref() == Some("Running")).then_some(())
        })
        .await;
    }
    assert_eq!(node.pods().len(), 2, "only the valid pods exist");
    let proc = node.proc.as_mut().unwrap();
    assert!(
        proc.child.try_wait().unwrap().is_none(),
        "kubelet still running"
    );
    let log = node.log();
    assert!(
        log.contains("garbage.yaml"),
        "bad files are logged with their path:\n{log}"
    );
    // clean up the symlink loop before cleanup() removes files
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn restarted_kubelet_adopts_running_containers() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-adopt").await;
    node.start().await;
    node.write_manifest(
        "keep.yaml",
        &busybox_pod("keep", &node.busybox, "Always", "sleep 3600"),
    );
    let before = node
        .wait_for("keep running", T, || async {
            node.running("keep").await.pop()
        })
        .await;
    let mut old = node.proc.take().unwrap();
    old.signal(Signal::SIGKILL);
    old.wait_exit(Duration::from_secs(5)).await;
    node.start().await;
    node.wait_for("keep Running again in /pods", T, || async {
        (node.phase("keep").as_deref() == Some("Running")).then_some(())
    })
    .await;
    // Give the new kubelet a few sync rounds to (wrongly) restart anything.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = node.running("keep").await;
    assert_eq!(after.len(), 1);
    assert_eq!(
        after[0].id,
        before.id,
        "the running container is adopted, not restarted; kubelet log:\n{}",
        node.log()
    );
    assert_eq!(
        node.pod("keep").unwrap()["status"]["containerStatuses"][0]["restartCount"],
        0
    );
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn failing_init_container_with_restart_never_fails_the_pod() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-init").await;
    node.start().await;
    let manifest = format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: initfail
spec:
  restartPolicy: Never
  initContainers:
  - name: init
    image: {b}
    imagePullPolicy: Never
    command: [\"sh\", \"-c\", \"echo failing; exit 3\"]
  containers:
  - name: main
    image: {b}
    imagePullPolicy: Never
    command: [\"sleep\", \"3600\"]
",
        b = node.busybox
    );
    node.write_manifest("initfail.yaml", &manifest);
    node.wait_for("pod Failed", T, || async {
        (node.phase("initfail").as_deref() == Some("Failed")).then_some(())
    })
    .await;
    let pod = node.pod("initfail").unwrap();
    let init = &pod["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["exitCode"], 3, "{pod}");
    assert!(
        node.containers("initfail")
            .await
            .iter()
            .all(|c| c.metadata.as_ref().unwrap().name != "main"),
        "main never starts"
    );
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn job_like_pod_succeeds() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-job").await;
    node.start().await;
    node.write_manifest(
        "job.yaml",
        &busybox_pod("job", &node.busybox, "OnFailure", "echo done"),
    );
    node.wait_for("pod Succeeded", T, || async {
        (node.phase("job").as_deref() == Some("Succeeded")).then_some(())
    })
    .await;
    let pod = node.pod("job").unwrap();
    assert_eq!(
        pod["status"]["containerStatuses"][0]["state"]["terminated"]["reason"],
        "Completed"
    );
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn container_logs_are_rotated_by_size() {
    let _g = runtime_lock().await;
    let mut node = Node::with_config(
        "rt-logrotate",
        "containerLogMaxSize: 2Ki\ncontainerLogMaxFiles: 3\ncontainerLogMonitorInterval: 3s\n",
    )
    .await;
    node.start().await;
    node.write_manifest(
        "chatty.yaml",
        &busybox_pod(
            "chatty",
            &node.busybox,
            "Always",
            "while true; do echo 0123456789012345678901234567890123456789; sleep 0.01; done",
        ),
    );
    node.wait_for("chatty Running", T, || async {
        (node.phase("chatty").as_deref() == Some("Running")).then_some(())
    })
    .await;
    let uid = node.pod("chatty").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = node
        .logs_dir()
        .join(format!("default_chatty-rt-logrotate_{uid}"))
        .join("main");
    let files = |d: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(d)
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    node.wait_for("two rotations", T, || async {
        let f = files(&dir);
        (f.iter().filter(|n| n.starts_with("0.log.")).count() >= 2).then_some(())
    })
    .await;
    // Keep watching a few rounds: never more than containerLogMaxFiles files.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let f = files(&dir);
        assert!(f.len() <= 3, "at most containerLogMaxFiles files: {f:?}");
        assert!(f.contains(&"0.log".to_string()), "{f:?}");
    }
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn pods_from_static_pod_url_run() {
    let _g = runtime_lock().await;
    let env = kubelet_e2e::runtime_env::ensure().unwrap();
    let body = busybox_pod("urlpod", &env.busybox_image, "Always", "sleep 3600");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let mut buf = [0u8; 4096];
            let n = sock.read(&mut buf).await.unwrap_or(0);
            let req = String::from_utf8_lossy(&buf[..n]).to_string();
            assert!(
                req.contains("x-test: yes") || req.contains("X-Test: yes"),
                "header sent: {req}"
            );
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
        }
    });
    let mut node = Node::with_config(
        "rt-url",
        &format!("staticPodURL: http://127.0.0.1:{port}/pods\nhttpCheckFrequency: 2s\nstaticPodURLHeader:\n  X-Test: [\"yes\"]\n"),
    )
    .await;
    node.start().await;
    node.wait_for("urlpod Running", T, || async {
        (node.phase("urlpod").as_deref() == Some("Running")).then_some(())
    })
    .await;
    let pod = node.pod("urlpod").unwrap();
    assert_eq!(
        pod["metadata"]["annotations"]["kubernetes.io/config.source"],
        "http"
    );
    server.abort();
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn missing_image_with_pull_policy_never_reports_err_image_never_pull() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-neverpull").await;
    node.start().await;
    node.write_manifest(
        "absent.yaml",
        &busybox_pod(
            "absent",
            "docker.io/library/not-imported:0.0",
            "Always",
            "true",
        ),
    );
    node.wait_for("ErrImageNeverPull", T, || async {
        let p = node.pod("absent")?;
        (p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ErrImageNeverPull")
            .then_some(())
    })
    .await;
    assert_eq!(node.phase("absent").as_deref(), Some("Pending"));
    node.cleanup().await;
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn dead_containers_are_garbage_collected() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-gc").await;
    node.start().await;
    node.write_manifest(
        "crashy.yaml",
        &busybox_pod("crashy", &node.busybox, "Always", "exit 1"),
    );
    // Crash-loop: restarts after 10 s, then 20 s; each attempt leaves a dead container.
    node.wait_for("three attempts", Duration::from_secs(90), || async {
        (node.containers("crashy").await.len() >= 3).then_some(())
    })
    .await;
    // Container GC (every minute, upstream's period) keeps one dead container per
    // (pod, container name) besides the newest attempt.
    node.wait_for(
        "dead containers collected",
        Duration::from_secs(120),
        || async { (node.containers("crashy").await.len() <= 2).then_some(()) },
    )
    .await;
    let p = node.pod("crashy").unwrap();
    assert!(
        p["status"]["containerStatuses"][0]["restartCount"]
            .as_i64()
            .unwrap()
            >= 2,
        "{p}"
    );
    node.cleanup().await;
}
