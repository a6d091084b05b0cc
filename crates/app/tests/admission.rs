//! Pod admission in-process, over the recording fake CRI (`tests/support`): static pods
//! with an unsafe sysctl, with `supplementalGroupsPolicy: Strict` on a runtime that does
//! not report the feature, and with an nfs volume end `Failed` with upstream's
//! reasons (`SysctlForbidden`, `SupplementalGroupsPolicyNotSupported`) and ours
//! (`UnsupportedPodFeature`); not one CRI call is made for them, while the pod beside them
//! runs; each rejection is a `Warning` event. On a runtime reporting the feature, the
//! Strict pod runs with the policy in its CRI security contexts and its `user` reported.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use support::{TestKubelet, pod_manifest};

#[tokio::test]
async fn rejected_pods_end_failed_and_never_reach_the_runtime() {
    let k = TestKubelet::started().await;
    let sysctl =
        "  securityContext:\n    sysctls:\n    - name: kernel.msgmax\n      value: \"1\"\n";
    let strict = "  securityContext:\n    supplementalGroupsPolicy: Strict\n";
    let nfs = "  volumes:\n  - name: data\n    nfs:\n      server: nfs.example\n      path: /\n";
    k.write_manifest(
        "sysctl.yaml",
        &pod_manifest("sysctl", "uid-sysctl", "sleep 1d", sysctl),
    );
    k.write_manifest(
        "strict.yaml",
        &pod_manifest("strict", "uid-strict", "sleep 1d", strict),
    );
    k.write_manifest("nfs.yaml", &pod_manifest("nfs", "uid-nfs", "sleep 1d", nfs));
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
        .wait_until("strict pod Failed", || failed("uid-strict"))
        .await;
    assert_eq!(
        s.reason.as_deref(),
        Some("SupplementalGroupsPolicyNotSupported")
    );
    assert_eq!(
        s.message.as_deref(),
        Some("Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node")
    );
    let s = k.wait_until("nfs pod Failed", || failed("uid-nfs")).await;
    assert_eq!(s.reason.as_deref(), Some("UnsupportedPodFeature"));
    assert_eq!(
        s.message.as_deref(),
        Some("Pod was rejected: kubelet-rs does not support spec.volumes[0].nfs yet")
    );

    // Several sync ticks and housekeeping rounds later, still nothing of them ran.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for uid in ["uid-sysctl", "uid-strict", "uid-nfs"] {
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
    assert!(workers.pod_state("uid-strict").is_none());
    assert!(workers.pod_state("uid-nfs").is_none());
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
    assert_eq!(rejected[0].object.uid.as_deref(), Some("uid-nfs"));
    assert_eq!(rejected[0].object.kind.as_deref(), Some("Pod"));
    assert!(
        lines.contains(
            &"Warning SupplementalGroupsPolicyNotSupported SupplementalGroupsPolicy=Strict is not supported in this node"
                .to_string()
        ),
        "{lines:?}"
    );
}

#[tokio::test]
async fn strict_supplemental_groups_run_where_the_runtime_supports_them() {
    let mut k = TestKubelet::new("").await;
    k.runtime().with_state(|s| {
        s.features = Some(kubelet_cri::v1::RuntimeFeatures {
            supplemental_groups_policy: true,
        });
    });
    k.start().await;
    let sc = "  securityContext:\n    runAsUser: 1000\n    runAsGroup: 3000\n    supplementalGroups: [4000]\n    supplementalGroupsPolicy: Strict\n";
    k.write_manifest(
        "strict.yaml",
        &pod_manifest("strict", "uid-strict", "sleep 1d", sc),
    );
    let c = k.wait_running("uid-strict", "main").await;
    let strict = kubelet_cri::v1::SupplementalGroupsPolicy::Strict as i32;
    let container_sc = c
        .config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref())
        .unwrap();
    assert_eq!(container_sc.supplemental_groups_policy, strict);
    assert_eq!(container_sc.supplemental_groups, [4000]);
    let sandbox = k.ready_sandbox("uid-strict").unwrap();
    let sandbox_sc = sandbox
        .config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref())
        .unwrap();
    assert_eq!(sandbox_sc.supplemental_groups_policy, strict);

    let user = k
        .wait_until("container user reported", || {
            k.container_status("uid-strict", "main")
                .and_then(|s| s.user)
        })
        .await;
    assert_eq!(
        serde_json::to_value(user).unwrap(),
        serde_json::json!({"linux": {"uid": 1000, "gid": 3000, "supplementalGroups": [3000, 4000]}})
    );
}
