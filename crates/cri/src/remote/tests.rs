//! The remote clients against the fake CRI server over a temporary unix socket.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use futures::StreamExt;

use crate::fake::{FakeCriServer, container_config, sandbox_config, serve_fake};
use crate::v1::{ContainerState, ImageSpec};
use crate::{
    CriError, ImageService, RemoteImageService, RemoteRuntimeService, RuntimeService,
    pre_init_runtime_service,
};

const TIMEOUT: Duration = Duration::from_secs(10);

async fn fake_server(dir: &tempfile::TempDir) -> FakeCriServer {
    serve_fake(&dir.path().join("cri.sock")).await.unwrap()
}

fn spec(image: &str) -> ImageSpec {
    ImageSpec {
        image: image.into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn sandbox_and_container_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_server(&dir).await;
    let (rt, _img, version) = pre_init_runtime_service(&server.endpoint(), "", TIMEOUT)
        .await
        .unwrap();
    assert_eq!(
        (
            version.runtime_name.as_str(),
            version.runtime_api_version.as_str()
        ),
        ("fakeRuntime", "v1")
    );

    let sb_cfg = sandbox_config("web", "default", "uid-1", 0);
    let sb = rt.run_pod_sandbox(&sb_cfg, "").await.unwrap();
    let status = rt
        .pod_sandbox_status(&sb, false)
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(status.network.unwrap().ip, crate::fake::FAKE_POD_SANDBOX_IP);
    let c_cfg = container_config("app", 0, "busybox", &["sleep", "3600"]);
    let c = rt.create_container(&sb, &c_cfg, &sb_cfg).await.unwrap();
    rt.start_container(&c).await.unwrap();
    let listed = rt.list_containers(None).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].id.as_str(), listed[0].state),
        (c.as_str(), ContainerState::ContainerRunning as i32)
    );

    rt.stop_container(&c, 30).await.unwrap();
    let st = rt
        .container_status(&c, false)
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(st.state, ContainerState::ContainerExited as i32);
    rt.remove_container(&c).await.unwrap();
    let gone = rt.container_status(&c, false).await.unwrap_err();
    assert!(gone.is_not_found(), "{gone}");
    assert_eq!(gone.method(), Some("ContainerStatus"));
    assert!(gone.to_string().contains(&server.endpoint()), "{gone}");
    rt.stop_pod_sandbox(&sb).await.unwrap();
    rt.remove_pod_sandbox(&sb).await.unwrap();
    assert!(rt.list_pod_sandbox(None).await.unwrap().is_empty());
    assert_eq!(
        rt.status(false)
            .await
            .unwrap()
            .status
            .unwrap()
            .conditions
            .len(),
        2
    );
    assert_eq!(
        server.runtime.called().first().map(String::as_str),
        Some("Version")
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn image_round_trip_and_pull_error_code() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_server(&dir).await;
    server
        .image
        .set_fake_images(&["registry.k8s.io/pause:3.10"]);
    let img = RemoteImageService::connect(&server.endpoint(), TIMEOUT)
        .await
        .unwrap();
    let image_ref = img
        .pull_image(&spec("busybox:1.36"), None, None)
        .await
        .unwrap();
    let status = img
        .image_status(&spec("busybox:1.36"), false)
        .await
        .unwrap();
    assert_eq!(status.image.unwrap().id, image_ref);
    assert!(
        img.image_status(&spec("nginx"), false)
            .await
            .unwrap()
            .image
            .is_none()
    );
    assert_eq!(img.list_images(None).await.unwrap().len(), 2);
    assert_eq!(
        img.image_fs_info().await.unwrap().image_filesystems.len(),
        1
    );

    let err = CriError::status("x", "PullImage", tonic::Code::Unknown, "no space left");
    server.image.inject_error("PullImage", err);
    let err = img
        .pull_image(&spec("nginx"), None, None)
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.upstream_message()),
        (Some(tonic::Code::Unknown), "no space left".into())
    );
}

#[tokio::test]
async fn deadline_exceeded_names_method_and_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_server(&dir).await;
    server
        .runtime
        .set_delay("ListContainers", Duration::from_secs(5));
    let rt = RemoteRuntimeService::connect(&server.endpoint(), Duration::from_millis(200))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let err = rt.list_containers(None).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(err.is_deadline_exceeded(), "{err}");
    assert_eq!(err.method(), Some("ListContainers"));
    assert!(err.to_string().contains(&server.endpoint()), "{err}");
}

#[tokio::test]
async fn exec_sync_exit_code_and_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_server(&dir).await;
    let rt = RemoteRuntimeService::connect(&server.endpoint(), Duration::from_millis(300))
        .await
        .unwrap();
    let sb_cfg = sandbox_config("p", "ns", "u", 0);
    let sb = rt.run_pod_sandbox(&sb_cfg, "").await.unwrap();
    let c = rt
        .create_container(&sb, &container_config("c", 0, "busybox", &[]), &sb_cfg)
        .await
        .unwrap();
    rt.start_container(&c).await.unwrap();
    server.runtime.set_exec_sync_handler(|_, _| {
        Ok(crate::v1::ExecSyncResponse {
            stdout: b"out".to_vec(),
            stderr: b"err".to_vec(),
            exit_code: 3,
        })
    });
    let cmd = vec!["false".to_owned()];
    let resp = rt
        .exec_sync(&c, &cmd, Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!((resp.exit_code, resp.stdout.as_slice()), (3, &b"out"[..]));
    // Deadline = runtime timeout (300 ms) + exec timeout (1 s); the fake takes 3 s.
    server.runtime.set_delay("ExecSync", Duration::from_secs(3));
    let err = rt
        .exec_sync(&c, &cmd, Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(matches!(err, CriError::CommandTimedOut { .. }), "{err}");
    assert!(err.is_deadline_exceeded());
}

#[tokio::test]
async fn absent_socket_gives_a_connect_error_naming_the_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("unix://{}", dir.path().join("nothing.sock").display());
    let err = pre_init_runtime_service(&endpoint, "", Duration::from_secs(2))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "failed to connect to container runtime at {endpoint}: "
        )),
        "{text}"
    );
    assert!(matches!(err, CriError::Connect { .. }));
}

#[tokio::test]
async fn bare_path_endpoint_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_server(&dir).await;
    let bare = server.handle.path().display().to_string();
    let (rt, img, _) = pre_init_runtime_service(&bare, "", TIMEOUT).await.unwrap();
    assert_eq!(
        (rt.endpoint(), img.endpoint()),
        (bare.as_str(), bare.as_str())
    );
}

/// Gives the fake one container carrying `label_bytes` of label data.
fn big_container(server: &FakeCriServer, label_bytes: usize) {
    let mut c = crate::fake::FakeContainer::default();
    c.status.id = "big".into();
    c.status
        .labels
        .insert("blob".into(), "x".repeat(label_bytes));
    server.runtime.set_fake_containers(vec![c]);
}

#[tokio::test]
async fn messages_up_to_16_mib_pass_and_larger_ones_fail() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_server(&dir).await;
    let rt = RemoteRuntimeService::connect(&server.endpoint(), TIMEOUT)
        .await
        .unwrap();
    big_container(&server, 10 * 1024 * 1024); // over gRPC's 4 MiB default
    let listed = rt.list_containers(None).await.unwrap();
    assert_eq!(listed[0].labels["blob"].len(), 10 * 1024 * 1024);
    big_container(&server, 17 * 1024 * 1024);
    let err = rt.list_containers(None).await.unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::OutOfRange), "{err}");
    assert!(
        err.to_string().contains("the limit is: 16777216 bytes"),
        "{err}"
    );
}

#[tokio::test]
async fn client_refuses_to_decode_more_than_16_mib() {
    use crate::server::RuntimeServiceAdapter;
    use crate::v1::runtime_service_server::RuntimeServiceServer;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loose.sock");
    let fake = std::sync::Arc::new(crate::fake::FakeRuntimeService::new());
    let mut c = crate::fake::FakeContainer::default();
    c.status.id = "big".into();
    c.status
        .labels
        .insert("blob".into(), "x".repeat(17 * 1024 * 1024));
    fake.set_fake_containers(vec![c]);
    // A server without the 16 MiB cap, so only the client's limit can refuse the answer.
    let svc = RuntimeServiceServer::new(RuntimeServiceAdapter::new(fake))
        .max_encoding_message_size(64 * 1024 * 1024);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(svc)
            .serve_with_incoming(incoming),
    );
    let endpoint = format!("unix://{}", path.display());
    let rt = RemoteRuntimeService::connect(&endpoint, TIMEOUT)
        .await
        .unwrap();
    let err = rt.list_containers(None).await.unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::OutOfRange), "{err}");
    assert!(
        err.to_string().contains("decoded message length too large"),
        "{err}"
    );
    server.abort();
}

#[tokio::test]
async fn container_events_stream_over_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_server(&dir).await;
    let rt = RemoteRuntimeService::connect(&server.endpoint(), TIMEOUT)
        .await
        .unwrap();
    let mut events = rt.get_container_events().await.unwrap();
    let sb = rt
        .run_pod_sandbox(&sandbox_config("p", "ns", "u", 0), "")
        .await
        .unwrap();
    let ev = tokio::time::timeout(TIMEOUT, events.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(ev.container_id, sb);
    assert_eq!(ev.pod_sandbox_status.unwrap().id, sb);
}

#[tokio::test]
async fn client_reconnects_after_the_runtime_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cri.sock");
    let server = serve_fake(&path).await.unwrap();
    let rt = RemoteRuntimeService::connect(&server.endpoint(), TIMEOUT)
        .await
        .unwrap();
    rt.version("v1").await.unwrap();
    server.shutdown().await.unwrap();
    assert!(rt.version("v1").await.is_err(), "the runtime is down");

    let restarted = serve_fake(&path).await.unwrap();
    let mut last = None;
    for _ in 0..50 {
        match rt.version("v1").await {
            Ok(_) => {
                last = None;
                break;
            }
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(last.is_none(), "no reconnect: {last:?}");
    assert_eq!(restarted.runtime.called(), ["Version"]);
}

#[tokio::test]
async fn pull_image_has_no_deadline_and_a_dropped_pull_is_cancelled_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_server(&dir).await;
    let img = RemoteImageService::connect(&server.endpoint(), Duration::from_millis(200))
        .await
        .unwrap();
    // Longer than the runtime request timeout: upstream sets no deadline on PullImage.
    server
        .image
        .set_delay("PullImage", Duration::from_millis(600));
    img.pull_image(&spec("busybox:1.36"), None, None)
        .await
        .unwrap();
    assert!(server.image.abandoned().is_empty());

    // A pull that never ends is cancelled when its caller goes away (the pod was killed).
    server
        .image
        .set_delay("PullImage", Duration::from_secs(24 * 3600));
    let pull = tokio::spawn(async move { img.pull_image(&spec("nginx:1"), None, None).await });
    for _ in 0..250 {
        if server.image.called().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        server.image.called().len(),
        2,
        "the second pull reached the server"
    );
    pull.abort();
    for _ in 0..250 {
        if !server.image.abandoned().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        server.image.abandoned(),
        ["PullImage"],
        "the server-side call was cancelled with the client's"
    );
}

/// What the kubelet-key lists keep of a map: the `io.kubernetes.*` entries.
fn kubelet_keys_only(map: &mut std::collections::HashMap<String, String>) {
    map.retain(|k, _| k.starts_with("io.kubernetes."));
}

#[tokio::test]
async fn kubelet_key_lists_keep_every_field_but_only_the_kubelets_labels() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_server(&dir).await;
    let rt = RemoteRuntimeService::connect(&server.endpoint(), TIMEOUT)
        .await
        .unwrap();
    let mut sb_cfg = sandbox_config("web", "default", "uid-1", 0);
    sb_cfg.labels.insert("app".into(), "web".into());
    sb_cfg
        .labels
        .insert("io.kubernetes.pod.uid".into(), "uid-1".into());
    sb_cfg
        .annotations
        .insert("kubernetes.io/config.source".into(), "api".into());
    let sb = rt.run_pod_sandbox(&sb_cfg, "").await.unwrap();
    let mut c_cfg = container_config("app", 0, "busybox", &["sleep", "3600"]);
    c_cfg.labels.insert("team".into(), "a".into());
    c_cfg
        .labels
        .insert("io.kubernetes.container.name".into(), "app".into());
    c_cfg
        .annotations
        .insert("io.kubernetes.container.hash".into(), "1234".into());
    c_cfg.annotations.insert("note".into(), "x".into());
    rt.create_container(&sb, &c_cfg, &sb_cfg).await.unwrap();

    let full = rt.list_containers(None).await.unwrap();
    let lean = rt.list_containers_kubelet_keys(None).await.unwrap();
    assert!(full[0].labels.contains_key("team") && full[0].annotations.contains_key("note"));
    let mut expected = full[0].clone();
    kubelet_keys_only(&mut expected.labels);
    kubelet_keys_only(&mut expected.annotations);
    assert_eq!(lean, vec![expected]);
    assert_eq!(lean[0].labels["io.kubernetes.container.name"], "app");
    assert_eq!(lean[0].annotations["io.kubernetes.container.hash"], "1234");

    let full = rt.list_pod_sandbox(None).await.unwrap();
    let lean = rt.list_pod_sandbox_kubelet_keys(None).await.unwrap();
    assert!(full[0].labels.contains_key("app"));
    let mut expected = full[0].clone();
    kubelet_keys_only(&mut expected.labels);
    kubelet_keys_only(&mut expected.annotations);
    assert_eq!(lean, vec![expected]);
    assert_eq!(lean[0].labels["io.kubernetes.pod.uid"], "uid-1");
}

/// The stats requests' lists over gRPC: every field as the full lists have it, the labels
/// and annotations empty (also in the container stats' attributes).
#[tokio::test]
async fn lists_without_labels_keep_every_other_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = fake_server(&dir).await;
    let rt = RemoteRuntimeService::connect(&server.endpoint(), TIMEOUT)
        .await
        .unwrap();
    let mut sb_cfg = sandbox_config("web", "default", "uid-1", 0);
    sb_cfg.labels.insert("app".into(), "web".into());
    let sb = rt.run_pod_sandbox(&sb_cfg, "").await.unwrap();
    let mut c_cfg = container_config("app", 0, "busybox", &["sleep", "3600"]);
    c_cfg.labels.insert("team".into(), "a".into());
    c_cfg.annotations.insert("note".into(), "x".into());
    let id = rt.create_container(&sb, &c_cfg, &sb_cfg).await.unwrap();
    rt.start_container(&id).await.unwrap();

    let unlabelled =
        |labels: &mut std::collections::HashMap<String, String>,
         annotations: &mut std::collections::HashMap<String, String>| {
            assert!(!labels.is_empty(), "the full list has labels");
            labels.clear();
            annotations.clear();
        };
    let mut full = rt.list_containers(None).await.unwrap();
    let c = &mut full[0];
    unlabelled(&mut c.labels, &mut c.annotations);
    assert_eq!(rt.list_containers_without_labels(None).await.unwrap(), full);
    let mut full = rt.list_pod_sandbox(None).await.unwrap();
    let s = &mut full[0];
    unlabelled(&mut s.labels, &mut s.annotations);
    assert_eq!(
        rt.list_pod_sandbox_without_labels(None).await.unwrap(),
        full
    );
    let mut full = rt.list_container_stats(None).await.unwrap();
    let lean = rt.list_container_stats_without_labels(None).await.unwrap();
    let a = full[0].attributes.as_mut().unwrap();
    unlabelled(&mut a.labels, &mut a.annotations);
    assert_eq!(lean.len(), full.len());
    assert_eq!(lean[0].attributes, full[0].attributes);
    assert!(lean[0].cpu.is_some() || full[0].cpu.is_none());
}
