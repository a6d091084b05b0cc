//! Standalone kubelet-rs against the real containerd of `hack/runtime-up.sh`: pod features
//! of the pod spec that the kubelet itself implements (`activeDeadlineSeconds`, `emptyDir`
//! `medium: Memory` with `sizeLimit`, `fsGroup` on emptyDir, `hostPath` types).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::node::{Node, busybox_pod, runtime_lock};

const T: Duration = Duration::from_secs(60);

/// Upstream `active_deadline.go`: a pod active longer than `activeDeadlineSeconds` is
/// `Failed` with reason `DeadlineExceeded` and its containers are stopped.
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn pod_past_its_active_deadline_fails_with_deadline_exceeded() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-deadline").await;
    node.start().await;
    let manifest = busybox_pod("deadline", &node.busybox, "Always", "sleep 3600")
        .replace("spec:\n", "spec:\n  activeDeadlineSeconds: 5\n");
    node.write_manifest("deadline.yaml", &manifest);
    node.wait_for("deadline Running", T, || async {
        (node.phase("deadline").as_deref() == Some("Running")).then_some(())
    })
    .await;
    let pod = node
        .wait_for("deadline Failed", T, || async {
            node.pod("deadline")
                .filter(|p| p["status"]["phase"] == "Failed")
        })
        .await;
    assert_eq!(pod["status"]["reason"], "DeadlineExceeded", "{pod}");
    assert_eq!(
        pod["status"]["message"],
        "Pod was active on the node longer than the specified deadline"
    );
    node.wait_for("no running container", T, || async {
        node.running("deadline").await.is_empty().then_some(())
    })
    .await;
    // Terminal: never restarted although restartPolicy is Always.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(node.running("deadline").await.is_empty());
    assert_eq!(node.phase("deadline").as_deref(), Some("Failed"));
    node.cleanup().await;
}

/// `emptyDir` with `medium: Memory` is a tmpfs of `sizeLimit`, owned by the pod's
/// `fsGroup` with the setgid bit (a disk emptyDir too), a `DirectoryOrCreate` hostPath is
/// created, and the tmpfs is unmounted once the pod is gone.
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn memory_empty_dir_is_a_sized_tmpfs_owned_by_the_fs_group() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-volumes").await;
    node.start().await;
    let host_dir = node.dir.path().join("host-created");
    let script = "grep ' /m ' /proc/mounts; stat -c 'mem %a %g' /m; stat -c 'disk %a %g' /d; \
                  touch /m/f /d/f; stat -c 'file %g' /m/f /d/f; echo done; sleep 3600";
    let manifest = format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: vols
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    fsGroup: 4321
  containers:
  - name: main
    image: {image}
    imagePullPolicy: Never
    command: [\"sh\", \"-c\", {script:?}]
    volumeMounts:
    - {{name: mem, mountPath: /m}}
    - {{name: disk, mountPath: /d}}
    - {{name: host, mountPath: /h}}
  volumes:
  - name: mem
    emptyDir: {{medium: Memory, sizeLimit: 8Mi}}
  - name: disk
    emptyDir: {{}}
  - name: host
    hostPath: {{path: {host}, type: DirectoryOrCreate}}
",
        image = node.busybox,
        host = host_dir.display(),
    );
    node.write_manifest("vols.yaml", &manifest);
    let pod = node
        .wait_for("vols Running", T, || async {
            node.pod("vols")
                .filter(|p| p["status"]["phase"] == "Running")
        })
        .await;
    let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
    let log = node
        .logs_dir()
        .join(format!("default_vols-rt-volumes_{uid}"))
        .join("main/0.log");
    let content = node
        .wait_for("the container's report", T, || async {
            std::fs::read_to_string(&log)
                .ok()
                .filter(|s| s.contains("done"))
        })
        .await;
    let tmpfs = content
        .lines()
        .find(|l| l.contains(" /m "))
        .unwrap_or_else(|| panic!("no tmpfs at /m: {content}"));
    assert!(tmpfs.contains("tmpfs /m tmpfs"), "{tmpfs}");
    assert!(tmpfs.contains("size=8192k"), "{tmpfs}");
    // The tmpfs root keeps its sticky bit (mode 1777), as upstream.
    assert!(content.contains("mem 3777 4321"), "{content}");
    assert!(content.contains("disk 2777 4321"), "{content}");
    assert_eq!(content.matches("file 4321").count(), 2, "{content}");
    assert!(host_dir.is_dir(), "DirectoryOrCreate made the directory");

    let volume = format!("{uid}/volumes/kubernetes.io~empty-dir/mem");
    let mounted = || {
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .contains(&volume)
    };
    assert!(mounted());
    node.remove_manifest("vols.yaml");
    node.wait_for("the tmpfs unmounted", T, || async {
        (!mounted()).then_some(())
    })
    .await;
    node.cleanup().await;
}

/// `hostPath` `type` is checked as upstream: a file where a directory is required keeps
/// the container from being created, with upstream's message.
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn host_path_of_the_wrong_kind_is_refused() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-hostpath").await;
    node.start().await;
    let file = node.dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let manifest = format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: hp
spec:
  containers:
  - name: main
    image: {image}
    imagePullPolicy: Never
    command: [\"sleep\", \"3600\"]
    volumeMounts:
    - {{name: host, mountPath: /h}}
  volumes:
  - name: host
    hostPath: {{path: {file}, type: Directory}}
",
        image = node.busybox,
        file = file.display(),
    );
    node.write_manifest("hp.yaml", &manifest);
    let waiting = node
        .wait_for("CreateContainerConfigError", T, || async {
            let p = node.pod("hp")?;
            let w = p["status"]["containerStatuses"][0]["state"]["waiting"].clone();
            (w["reason"] == "CreateContainerConfigError").then_some(w)
        })
        .await;
    assert_eq!(
        waiting["message"],
        format!(
            "hostPath type check failed: {} is not a directory",
            file.display()
        )
    );
    assert!(node.running("hp").await.is_empty());
    node.cleanup().await;
}
