#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use futures::StreamExt;

use super::*;
use crate::services::{ImageService, RuntimeService};
use crate::v1::{
    ContainerEventType, ContainerFilter, ContainerState, ContainerStateValue, ImageSpec,
    PodSandboxFilter, PodSandboxState,
};

async fn running_container(rt: &FakeRuntimeService) -> (String, String) {
    let sb_cfg = sandbox_config("web", "default", "uid-1", 0);
    let sb = rt.run_pod_sandbox(&sb_cfg, "").await.unwrap();
    let c_cfg = container_config("app", 0, "busybox", &["sleep", "3600"]);
    let c = rt.create_container(&sb, &c_cfg, &sb_cfg).await.unwrap();
    rt.start_container(&c).await.unwrap();
    (sb, c)
}

async fn container_ids(rt: &FakeRuntimeService, f: &ContainerFilter) -> Vec<String> {
    let found = rt.list_containers(Some(f)).await.unwrap();
    found.into_iter().map(|c| c.id).collect()
}

fn state_of(rt: &FakeRuntimeService, id: &str) -> i32 {
    rt.container(id).unwrap().status.state
}

#[tokio::test]
async fn container_lifecycle_created_running_exited() {
    let rt = FakeRuntimeService::new();
    let sb_cfg = sandbox_config("web", "default", "uid-1", 0);
    let sb = rt.run_pod_sandbox(&sb_cfg, "runc").await.unwrap();
    assert_eq!(sb, "web_default_uid-1_0");
    let c_cfg = container_config("app", 0, "busybox", &["sleep", "3600"]);
    let c = rt.create_container(&sb, &c_cfg, &sb_cfg).await.unwrap();
    assert_eq!(c, "web_default_uid-1_0_app_0");
    assert_eq!(state_of(&rt, &c), ContainerState::ContainerCreated as i32);

    rt.start_container(&c).await.unwrap();
    assert_eq!(state_of(&rt, &c), ContainerState::ContainerRunning as i32);
    let again = rt.start_container(&c).await.unwrap_err();
    assert_eq!(again.code(), Some(tonic::Code::FailedPrecondition));

    rt.exit_container(&c, 3).unwrap();
    let status = rt
        .container_status(&c, false)
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(status.state, ContainerState::ContainerExited as i32);
    assert_eq!(status.exit_code, 3);
    assert_eq!(status.reason, "Error");
    assert!(status.finished_at > status.started_at && status.started_at > status.created_at);

    rt.remove_container(&c).await.unwrap();
    assert!(
        rt.container_status(&c, false)
            .await
            .unwrap_err()
            .is_not_found()
    );
    rt.remove_container(&c).await.unwrap(); // idempotent
    assert_eq!(
        rt.called(),
        [
            "RunPodSandbox",
            "CreateContainer",
            "StartContainer",
            "StartContainer",
            "ContainerStatus",
            "RemoveContainer",
            "ContainerStatus",
            "RemoveContainer"
        ]
    );
}

#[tokio::test]
async fn stop_sandbox_kills_containers_and_remove_deletes_them() {
    let rt = FakeRuntimeService::new();
    let (sb, c) = running_container(&rt).await;
    rt.stop_pod_sandbox(&sb).await.unwrap();
    let sandbox = rt.sandbox(&sb).unwrap();
    assert_eq!(
        sandbox.status.state,
        PodSandboxState::SandboxNotready as i32
    );
    let killed = rt.container(&c).unwrap().status;
    assert_eq!(
        (killed.state, killed.exit_code),
        (ContainerState::ContainerExited as i32, 137)
    );

    let cfg = container_config("late", 0, "busybox", &[]);
    let err = rt
        .create_container(&sb, &cfg, &sandbox.config)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::FailedPrecondition));

    rt.remove_pod_sandbox(&sb).await.unwrap();
    assert!(rt.sandboxes().is_empty() && rt.containers().is_empty());
    assert!(rt.stop_pod_sandbox(&sb).await.unwrap_err().is_not_found());
    rt.remove_pod_sandbox(&sb).await.unwrap();
}

#[tokio::test]
async fn injected_errors_are_queued_per_method() {
    let rt = FakeRuntimeService::new();
    let e = |m| crate::CriError::status(FAKE_ENDPOINT, m, tonic::Code::Unavailable, "x");
    rt.inject_error("ListContainers", e("ListContainers"));
    rt.inject_error("ListContainers", e("ListContainers"));
    assert!(rt.list_containers(None).await.is_err());
    assert!(rt.list_containers(None).await.is_err());
    assert!(rt.list_containers(None).await.unwrap().is_empty());
    assert!(rt.list_pod_sandbox(None).await.is_ok());
    rt.set_unimplemented("RuntimeConfig");
    assert!(rt.runtime_config().await.unwrap_err().is_unimplemented());
    assert!(rt.runtime_config().await.unwrap_err().is_unimplemented());
}

#[tokio::test]
async fn filters_select_by_state_sandbox_and_labels() {
    let rt = FakeRuntimeService::new();
    let (sb, running) = running_container(&rt).await;
    let sb_cfg = rt.sandbox(&sb).unwrap().config;
    let mut cfg = container_config("side", 0, "busybox", &[]);
    cfg.labels.insert("role".into(), "side".into());
    let created = rt.create_container(&sb, &cfg, &sb_cfg).await.unwrap();

    let f = ContainerFilter {
        state: Some(ContainerStateValue {
            state: ContainerState::ContainerRunning as i32,
        }),
        ..Default::default()
    };
    let ids = container_ids(&rt, &f).await;
    assert_eq!(ids, [running]);
    let mut f = ContainerFilter::default();
    f.label_selector.insert("role".into(), "side".into());
    let ids = container_ids(&rt, &f).await;
    assert_eq!(ids, [created]);
    let f = PodSandboxFilter {
        id: "nope".into(),
        ..Default::default()
    };
    assert!(rt.list_pod_sandbox(Some(&f)).await.unwrap().is_empty());
}

#[tokio::test]
async fn events_follow_state_transitions() {
    let rt = Arc::new(FakeRuntimeService::new());
    let mut events = rt.get_container_events().await.unwrap();
    let (_sb, c) = running_container(&rt).await;
    rt.exit_container(&c, 0).unwrap();
    let mut kinds = Vec::new();
    for _ in 0..5 {
        let ev = events.next().await.unwrap().unwrap();
        kinds.push((ev.container_id == c, ev.container_event_type));
    }
    use ContainerEventType as E;
    assert_eq!(
        kinds,
        [
            (false, E::ContainerCreatedEvent as i32),
            (false, E::ContainerStartedEvent as i32),
            (true, E::ContainerCreatedEvent as i32),
            (true, E::ContainerStartedEvent as i32),
            (true, E::ContainerStoppedEvent as i32),
        ]
    );
}

#[tokio::test]
async fn exec_sync_needs_a_running_container_and_uses_the_handler() {
    let rt = FakeRuntimeService::new();
    let (_sb, c) = running_container(&rt).await;
    rt.set_exec_sync_handler(|_, cmd| {
        Ok(crate::v1::ExecSyncResponse {
            stdout: cmd.join(" ").into_bytes(),
            stderr: Vec::new(),
            exit_code: 7,
        })
    });
    let cmd = vec!["echo".to_owned(), "hi".to_owned()];
    let resp = rt
        .exec_sync(&c, &cmd, std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(
        (resp.stdout.as_slice(), resp.exit_code),
        (&b"echo hi"[..], 7)
    );
    rt.exit_container(&c, 0).unwrap();
    let err = rt
        .exec_sync(&c, &cmd, std::time::Duration::ZERO)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::FailedPrecondition));
}

#[tokio::test]
async fn images_pull_status_remove() {
    let img = FakeImageService::new();
    img.set_fake_images(&["registry.k8s.io/pause:3.10"]);
    let spec = |s: &str| ImageSpec {
        image: s.into(),
        ..Default::default()
    };
    assert!(
        img.image_status(&spec("busybox"), false)
            .await
            .unwrap()
            .image
            .is_none()
    );
    let id = img.pull_image(&spec("busybox"), None, None).await.unwrap();
    assert_eq!(id, fake_image_id("docker.io/library/busybox:latest"));
    let found = img
        .image_status(&spec("busybox:latest"), false)
        .await
        .unwrap()
        .image
        .unwrap();
    assert_eq!(found.id, id);
    assert_eq!(img.list_images(None).await.unwrap().len(), 2);
    img.remove_image(&spec(&id)).await.unwrap();
    assert_eq!(img.list_images(None).await.unwrap().len(), 1);
    assert_eq!(img.pulled().len(), 1);
    assert_eq!(
        img.called(),
        [
            "ImageStatus",
            "PullImage",
            "ImageStatus",
            "ListImages",
            "RemoveImage",
            "ListImages"
        ]
    );
}
