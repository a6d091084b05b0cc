//! Robustness of the pod lifecycle, in-process over the recording fake CRI: a pod stuck in
//! `SyncPod` (a hung image pull, a hung postStart hook) can still be deleted, and the
//! directories of pods that are gone are removed (upstream `cleanupOrphanedPodDirs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use support::{TestKubelet, pod_manifest};

/// Longer than any test: a CRI call that never answers.
const FOREVER: Duration = Duration::from_secs(24 * 3600);

fn manifest(uid: &str, container_extra: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: stuck
  namespace: default
  uid: {uid}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: main
    image: busybox:1.36
    command: [\"sleep\", \"1d\"]
{container_extra}"
    )
}

async fn wait_torn_down(k: &TestKubelet, uid: &str) {
    k.wait_until("the pod's sandbox removed and its worker gone", || {
        (k.sandboxes(uid).is_empty()
            && k.kubelet().pod_manager.get(uid).is_none()
            && !k.kubelet().pod_workers.is_working(uid))
        .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_pod_stuck_in_a_hung_image_pull_can_be_deleted() {
    let k = TestKubelet::started().await;
    k.cri.image.set_delay("PullImage", FOREVER);
    k.write_manifest(
        "stuck.yaml",
        &manifest("uid-pull", "    imagePullPolicy: Always\n"),
    );
    k.wait_until("the pull started", || {
        k.cri
            .image
            .called()
            .contains(&"PullImage".to_string())
            .then_some(())
    })
    .await;
    assert!(k.cri.image.abandoned().is_empty());

    k.remove_manifest("stuck.yaml");
    wait_torn_down(&k, "uid-pull").await;
    assert!(
        k.containers("uid-pull").is_empty(),
        "no container was created"
    );
    assert_eq!(
        k.cri.image.abandoned(),
        ["PullImage"],
        "the hung pull was cancelled with the pod's sync"
    );
}

#[tokio::test]
async fn a_pod_stuck_in_a_hung_post_start_hook_can_be_deleted() {
    let k = TestKubelet::started().await;
    k.runtime().set_delay("ExecSync", FOREVER);
    k.write_manifest(
        "stuck.yaml",
        &manifest(
            "uid-hook",
            "    lifecycle:\n      postStart:\n        exec:\n          command: [\"sh\", \"-c\", \"sleep 1d\"]\n",
        ),
    );
    k.wait_until("the postStart hook started", || {
        k.calls().contains(&"ExecSync".to_string()).then_some(())
    })
    .await;

    k.remove_manifest("stuck.yaml");
    wait_torn_down(&k, "uid-hook").await;
    assert!(
        k.runtime().abandoned().contains(&"ExecSync".to_string()),
        "the hung hook was cancelled with the pod's sync: {:?}",
        k.runtime().abandoned()
    );
    let stopped = k.runtime().with_state(|s| s.stop_timeouts.clone());
    assert_eq!(
        stopped.len(),
        1,
        "the started container was stopped: {stopped:?}"
    );
}

#[tokio::test]
async fn directories_of_pods_that_are_gone_are_removed() {
    let mut k = TestKubelet::new("").await;
    let pods = k.dir.path().join("root/pods");
    // Left by a pod deleted while the kubelet was down.
    let leftover = pods.join("uid-left-over");
    std::fs::create_dir_all(leftover.join("containers/main")).unwrap();
    std::fs::write(leftover.join("containers/main/0a1b2c"), b"bye").unwrap();
    std::fs::write(leftover.join("etc-hosts"), b"").unwrap();
    let empty_dir = leftover.join("volumes/kubernetes.io~empty-dir/cache");
    std::fs::create_dir_all(&empty_dir).unwrap();
    std::fs::write(empty_dir.join("data"), b"x").unwrap();
    k.start().await;

    k.write_manifest("web.yaml", &pod_manifest("web", "uid-web", "sleep 1d", ""));
    k.wait_running("uid-web", "main").await;
    let web = pods.join("uid-web");
    assert!(web.join("etc-hosts").exists(), "{web:?}");
    k.wait_until("the left-over pod directory removed", || {
        (!leftover.exists()).then_some(())
    })
    .await;
    assert!(
        web.join("etc-hosts").exists(),
        "a running pod's directory stays"
    );

    k.remove_manifest("web.yaml");
    k.wait_until("the deleted pod's directory removed", || {
        (!web.exists()).then_some(())
    })
    .await;
    assert!(pods.exists());
}
