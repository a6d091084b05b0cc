#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{EnvVar, ExecAction, HTTPGetAction, PodSpec, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubelet_container::FakeRecorder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::probe::exec::RunInContainerError;

/// Errors every time; records the commands it was asked to run.
#[derive(Default)]
struct BrokenRunner {
    calls: AtomicUsize,
    cmds: Mutex<Vec<Vec<String>>>,
}

#[async_trait]
impl CommandRunner for BrokenRunner {
    async fn run_in_container(
        &self,
        _: &ContainerId,
        cmd: &[String],
        _: Duration,
    ) -> Result<Vec<u8>, crate::probe::exec::RunInContainerError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.cmds.lock().unwrap().push(cmd.to_vec());
        Err(RunInContainerError::Runtime("container not found".into()))
    }
}

fn pod(c: &Container) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            namespace: Some("ns".into()),
            uid: Some("u".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![c.clone()],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn prober() -> (Prober, Arc<BrokenRunner>, Arc<FakeRecorder>) {
    let runner = Arc::new(BrokenRunner::default());
    let recorder = Arc::new(FakeRecorder::new());
    let p = Prober::new(runner.clone(), HttpProber::new().unwrap(), recorder.clone());
    (p, runner, recorder)
}

fn status() -> ApiPodStatus {
    ApiPodStatus {
        pod_ip: Some("127.0.0.1".into()),
        ..ApiPodStatus::default()
    }
}

#[tokio::test]
async fn an_erroring_probe_is_retried_three_times_then_reported() {
    let (p, runner, recorder) = prober();
    let c = Container {
        name: "c".into(),
        env: Some(vec![EnvVar {
            name: "FILE".into(),
            value: Some("/tmp/x".into()),
            ..EnvVar::default()
        }]),
        liveness_probe: Some(Probe {
            exec: Some(ExecAction {
                command: Some(vec!["cat".into(), "$(FILE)".into(), "$(NOPE)".into()]),
            }),
            ..Probe::default()
        }),
        ..Container::default()
    };
    let id = ContainerId::new("containerd", "a");
    let err = p
        .probe(ProbeType::Liveness, &pod(&c), &status(), &c, &id)
        .await
        .unwrap_err();
    assert_eq!(err, ProbeError("container not found".into()));
    assert_eq!(runner.calls.load(Ordering::Relaxed), 3);
    assert_eq!(
        runner.cmds.lock().unwrap()[0],
        vec!["cat", "/tmp/x", "$(NOPE)"],
        "static env expansion only"
    );
    let events = recorder.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason, "Unhealthy");
    assert_eq!(
        events[0].message,
        "Liveness probe errored and resulted in unknown state: container not found"
    );
}

#[tokio::test]
async fn a_redirect_to_another_host_is_success_with_a_probe_warning() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0_u8; 1024];
        let _ = s.read(&mut buf).await.unwrap();
        let resp =
            "HTTP/1.1 302 Found\r\nLocation: http://10.255.255.1/\r\nContent-Length: 0\r\n\r\n";
        s.write_all(resp.as_bytes()).await.unwrap();
    });
    let (p, _, recorder) = prober();
    let c = Container {
        name: "c".into(),
        readiness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                port: IntOrString::Int(i32::from(port)),
                ..HTTPGetAction::default()
            }),
            ..Probe::default()
        }),
        ..Container::default()
    };
    let id = ContainerId::new("containerd", "a");
    let result = p
        .probe(ProbeType::Readiness, &pod(&c), &status(), &c, &id)
        .await
        .unwrap();
    assert_eq!(result, ProbeResult::Success);
    let events = recorder.events();
    assert_eq!(events[0].reason, "ProbeWarning");
    assert_eq!(
        events[0].message,
        "Readiness probe warning: Probe terminated redirects, Response body: "
    );
}

#[tokio::test]
async fn a_failing_tcp_probe_is_a_failure_with_an_unhealthy_event() {
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let (p, _, recorder) = prober();
    let c = Container {
        name: "c".into(),
        startup_probe: Some(Probe {
            tcp_socket: Some(TCPSocketAction {
                port: IntOrString::Int(i32::from(port)),
                ..TCPSocketAction::default()
            }),
            ..Probe::default()
        }),
        ..Container::default()
    };
    let id = ContainerId::new("containerd", "a");
    let result = p
        .probe(ProbeType::Startup, &pod(&c), &status(), &c, &id)
        .await
        .unwrap();
    assert_eq!(result, ProbeResult::Failure);
    assert_eq!(
        recorder.events()[0].message,
        format!("Startup probe failed: dial tcp 127.0.0.1:{port}: connect: connection refused")
    );
    // No probe of that type in the spec: success without running anything.
    assert_eq!(
        p.probe(ProbeType::Liveness, &pod(&c), &status(), &c, &id)
            .await
            .unwrap(),
        ProbeResult::Success
    );
}
