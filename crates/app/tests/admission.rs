//! Pod admission in-process, over the recording fake CRI (`tests/support`): a static pod
//! with an unsafe sysctl and one with a liveness probe end `Failed` with upstream's
//! reason (`SysctlForbidden`) and ours (`UnsupportedPodFeature`); not one CRI call is made
//! for them, while the pod beside them runs; each rejection is a `Warning` event.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use support::{TestKubelet, pod_manifest};

#[tokio::test]
async fn rejected_pods_end_failed_and_never_reach_the_runtime() {
    let k = TestKubelet::started().await;
    let sysctl =
        "  securityContext:\n    sysctls:\n    - name: kernel.msgmax\n      value: \"1\"\n";
    let userns = "  securityContext:\n    supplementalGroupsPolicy: Strict\n";
    k.write_manifest(
        "sysctl.yaml",
        &pod_manifest("sysctl", "uid-sysctl", "sleep 1d", sysctl),
    );
    k.write_manifest(
        "userns.yaml",
        &pod_manifest("userns", "uid-userns", "sleep 1d", userns),
    );
    k.write_manifest("ok.yaml", &pod_manifest("ok", "uid-ok", "sleep 1d", ""));

    k.wait_running("uid-ok", "main").await;
    let failed = |uid: &str| {
        k.pod_status(uid)
            .filter(|s| s.phase.as_deref() == Some("Failed"))
    };
    let s = k
        .wait_until("sysctl pod Failed", || failed("uid-sysctl"))
        .await;
    assert_eq!(s.reason.as_deref(), Some("SysctlForbidden"));
    assert_eq!(
        s.message.as_deref(),
        Some("Pod was rejected: forbidden sysctl: \"kernel.msgmax\" not allowlisted")
    );
    let s = k
        .wait_until("userns pod Failed", || failed("uid-userns"))
        .await;
    assert_eq!(s.reason.as_deref(), Some("UnsupportedPodFeature"));
    assert_eq!(
        s.message.as_deref(),
        Some(
            "Pod was rejected: kubelet-rs does not support spec.securityContext.supplementalGroupsPolicy yet"
        )
    );

    // Several sync ticks and housekeeping rounds later, still nothing of them ran.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for uid in ["uid-sysctl", "uid-userns"] {
        assert!(k.sandboxes(uid).is_empty(), "{uid} reached the runtime");
        assert!(k.containers(uid).is_empty(), "{uid} reached the runtime");
        assert_eq!(
            k.pod_status(uid).and_then(|s| s.phase).as_deref(),
            Some("Failed")
        );
    }
    let calls = k.calls();
    let runs = calls.iter().filter(|c| *c == "RunPodSandbox").count();
    assert_eq!(runs, 1, "only the admitted pod gets a sandbox: {calls:?}");
    // A rejected pod never gets a pod worker.
    let workers = &k.kubelet().pod_workers;
    assert!(workers.pod_state("uid-ok").is_some());
    assert!(workers.pod_state("uid-sysctl").is_none());
    assert!(workers.pod_state("uid-userns").is_none());
    // Each rejection is a Warning event on the pod with the reason and the bare message
    // (upstream `rejectPod`).
    let lines = k.recorder.lines();
    assert!(
        lines.contains(
            &"Warning SysctlForbidden forbidden sysctl: \"kernel.msgmax\" not allowlisted"
                .to_string()
        ),
        "{lines:?}"
    );
    let rejected: Vec<_> = k
        .recorder
        .events()
        .into_iter()
        .filter(|e| e.reason == "UnsupportedPodFeature")
        .collect();
    assert_eq!(rejected.len(), 1, "{lines:?}");
    assert_eq!(rejected[0].object.uid.as_deref(), Some("uid-userns"));
    assert_eq!(rejected[0].object.kind.as_deref(), Some("Pod"));
}
