//! `CheckpointContainer` (`kubelet.go`) as `/checkpoint/` calls it, over the recording fake
//! CRI: the archive path the kubelet chooses, the container ID and the timeout sent to the
//! runtime, the runtime's errors (Unimplemented, a deadline) as upstream's text, and the
//! checkpoints directory made at start.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use kubelet_app::kubelet::host::KubeletHost;
use kubelet_server::HostInterface;
use support::{TestKubelet, pod_manifest};

const FULL_NAME: &str = "web-fake-node_default";

async fn started_with_a_pod(extra: &str) -> (TestKubelet, KubeletHost, String) {
    let mut k = TestKubelet::new(extra).await;
    k.start().await;
    k.write_manifest("web.yaml", &pod_manifest("web", "uid-cp", "sleep 1d", ""));
    let c = k.wait_running("uid-cp", "main").await;
    let runtime = kubelet_app::startup::pre_init_runtime_service(&k.server)
        .await
        .unwrap();
    let host = KubeletHost::new(k.kubelet().clone(), runtime.runtime);
    (k, host, c.status.id)
}

#[tokio::test]
async fn checkpoint_goes_to_the_runtime_with_upstream_s_path_and_timeout() {
    let (k, host, id) = started_with_a_pod("runtimeRequestTimeout: 2s\n").await;
    let dir = k.kubelet().root_dir.join("checkpoints");
    assert!(dir.is_dir(), "{} not made at start", dir.display());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );

    let before = jiff::Timestamp::now();
    let location = host
        .checkpoint_container("uid-cp", FULL_NAME, "main", None)
        .await
        .unwrap();
    // checkpoint-<pod>_<namespace>-<container>-<RFC 3339, local time>.tar
    let name = location
        .strip_prefix(&format!("{}/", dir.display()))
        .unwrap();
    let time = name
        .strip_prefix("checkpoint-web-fake-node_default-main-")
        .and_then(|t| t.strip_suffix(".tar"))
        .unwrap_or_else(|| panic!("{name}"));
    let parsed: jiff::Timestamp = time.parse().unwrap();
    assert!(
        parsed >= before.round(jiff::Unit::Second).unwrap() - jiff::SignedDuration::from_secs(1)
    );
    assert_eq!(time.len(), "2026-12-01T04:00:00Z".len(), "{time}");

    // A timeout above the CRI default is sent as is; below it, the default (2 s) is sent.
    host.checkpoint_container("uid-cp", FULL_NAME, "main", Some(30))
        .await
        .unwrap();
    host.checkpoint_container("uid-cp", FULL_NAME, "main", Some(1))
        .await
        .unwrap();
    let sent = k.runtime().with_state(|s| s.checkpoints.clone());
    assert_eq!(sent[0].location, location);
    let sent: Vec<_> = sent
        .into_iter()
        .map(|r| (r.container_id, r.timeout))
        .collect();
    assert_eq!(sent, [(id.clone(), 2), (id.clone(), 30), (id.clone(), 2)]);

    // Unknown containers never reach the runtime.
    let err = host
        .checkpoint_container("uid-cp", FULL_NAME, "other", None)
        .await
        .unwrap_err();
    assert_eq!(err, "container other not found");
    // A negative timeout is refused by the CRI client.
    let err = host
        .checkpoint_container("uid-cp", FULL_NAME, "main", Some(-1))
        .await
        .unwrap_err();
    assert!(
        err.contains("CheckpointContainer requires the timeout value to be > 0"),
        "{err}"
    );
    assert_eq!(k.runtime().with_state(|s| s.checkpoints.len()), 3);
}

#[tokio::test]
async fn runtime_errors_and_deadlines_come_back_as_upstream_s_text() {
    let (k, host, _) = started_with_a_pod("runtimeRequestTimeout: 2s\n").await;
    k.runtime().set_unimplemented("CheckpointContainer");
    let err = host
        .checkpoint_container("uid-cp", FULL_NAME, "main", None)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        "rpc error: code = Unimplemented desc = unknown method CheckpointContainer for service runtime.v1"
    );

    let (k, host, _) = started_with_a_pod("runtimeRequestTimeout: 2s\n").await;
    k.runtime()
        .set_delay("CheckpointContainer", Duration::from_secs(4));
    // The CRI default (2 s) passes first...
    let err = host
        .checkpoint_container("uid-cp", FULL_NAME, "main", None)
        .await
        .unwrap_err();
    assert!(
        err.starts_with("rpc error: code = DeadlineExceeded desc = context deadline exceeded"),
        "{err}"
    );
    // ...a longer requested timeout lets the runtime finish.
    host.checkpoint_container("uid-cp", FULL_NAME, "main", Some(20))
        .await
        .unwrap();
}
