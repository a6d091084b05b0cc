#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container as ApiContainer, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_container::events::FakeRecorder;
use kubelet_container::{ContainerState, FakeClock, SyncErrorKind};
use kubelet_cri::fake::{FakeImageService, FakeRuntimeService};

use crate::cgroup::{CgroupDriver, PodCgroupNamer};
use crate::dns::DnsConfigurer;
use crate::env::{NoEnvObjects, NodeEnvInfo};
use crate::helper::KubeletRuntimeHelper;
use crate::kill::stop_timeout;
use crate::logs::{ContainerLogManager, LogRotatePolicy};
use crate::os::FakeOs;
use crate::volumes::LocalVolumes;
use kubelet_container::NoProbeResults;

#[derive(Default)]
struct PodStates {
    removed: Mutex<HashSet<String>>,
}

impl PodStates {
    fn remove(&self, uid: &str) {
        self.removed.lock().unwrap().insert(uid.to_string());
    }
    fn has(&self, uid: &str) -> bool {
        self.removed.lock().unwrap().contains(uid)
    }
}

impl PodStateProvider for PodStates {
    fn is_pod_termination_requested(&self, uid: &str) -> bool {
        self.has(uid)
    }
    fn should_pod_content_be_removed(&self, uid: &str) -> bool {
        self.has(uid)
    }
    fn should_pod_runtime_be_removed(&self, uid: &str) -> bool {
        self.has(uid)
    }
}

struct Env {
    runtime: Arc<FakeRuntimeService>,
    image: Arc<FakeImageService>,
    os: Arc<FakeOs>,
    clock: FakeClock,
    states: Arc<PodStates>,
    backoff: Backoff,
    recorder: Arc<FakeRecorder>,
}

impl Env {
    fn new() -> Self {
        let image = Arc::new(FakeImageService::new());
        image.set_fake_images(&["busybox:1.36"]);
        let clock = FakeClock::new(Timestamp::now());
        Self {
            runtime: Arc::new(FakeRuntimeService::new()),
            image,
            os: Arc::new(FakeOs::new()),
            backoff: Backoff::new(
                Duration::from_secs(10),
                Duration::from_secs(300),
                Arc::new(clock.clone()),
            ),
            clock,
            states: Arc::new(PodStates::default()),
            recorder: Arc::new(FakeRecorder::new()),
        }
    }

    async fn manager(&self) -> KubeGenericRuntimeManager {
        let os: Arc<dyn OsInterface> = self.os.clone();
        let helper = KubeletRuntimeHelper {
            os: os.clone(),
            root_dir: "/var/lib/kubelet".into(),
            dns: DnsConfigurer::new(os.clone(), None, vec![], "", None),
            cgroups: PodCgroupNamer::new(CgroupDriver::Cgroupfs, "/", true),
            node: NodeEnvInfo::default(),
            env_objects: Arc::new(NoEnvObjects),
            volumes: Arc::new(LocalVolumes::new(os.clone(), "/var/lib/kubelet")),
            node_hosts_file: "/etc/hosts".into(),
            env_files: true,
            hostname_override: true,
        };
        let clock: Arc<dyn Clock> = Arc::new(self.clock.clone());
        let logs = ContainerLogManager::new(
            self.runtime.clone(),
            os.clone(),
            clock.clone(),
            LogRotatePolicy::new(100, 3).unwrap(),
        );
        let deps = RuntimeManagerDeps {
            runtime: self.runtime.clone(),
            image: self.image.clone(),
            helper: Arc::new(helper),
            os,
            probes: Arc::new(NoProbeResults),
            pod_state: self.states.clone(),
            clock,
            recorder: self.recorder.clone(),
        };
        KubeGenericRuntimeManager::new(deps, RuntimeManagerConfig::default(), logs)
            .await
            .unwrap()
    }

    fn calls(&self, method: &str) -> usize {
        self.runtime
            .called()
            .iter()
            .filter(|c| *c == method)
            .count()
    }
}

fn pod(containers: Vec<ApiContainer>, init: Vec<ApiContainer>) -> ApiPod {
    ApiPod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some("uid-1".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers,
            init_containers: (!init.is_empty()).then_some(init),
            restart_policy: Some("Always".into()),
            termination_grace_period_seconds: Some(30),
            ..PodSpec::default()
        }),
        ..ApiPod::default()
    }
}

fn busybox(name: &str) -> ApiContainer {
    ApiContainer {
        name: name.into(),
        image: Some("busybox:1.36".into()),
        command: Some(vec!["sleep".into(), "3600".into()]),
        termination_message_path: Some("/dev/termination-log".into()),
        ..ApiContainer::default()
    }
}

async fn sync(env: &Env, m: &KubeGenericRuntimeManager, p: &ApiPod) -> (PodSyncResult, PodStatus) {
    let status = m.get_pod_status("uid-1", "web", "default").await.unwrap();
    let result = m.sync_pod(p, &status, &[], &env.backoff).await;
    let after = m.get_pod_status("uid-1", "web", "default").await.unwrap();
    (result, after)
}

/// `"<fieldPath> <type> <reason> <message>"` of each event so far (then forgotten).
fn events(env: &Env, seen: &mut usize) -> Vec<String> {
    let all = env.recorder.events();
    let new = all[*seen..]
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {}",
                e.object.field_path.as_deref().unwrap_or("-"),
                e.event_type,
                e.reason,
                e.message
            )
        })
        .collect();
    *seen = all.len();
    new
}

fn running(status: &PodStatus, name: &str) -> kubelet_container::Status {
    let s = status
        .find_container_status_by_name(name)
        .expect("container status")
        .clone();
    assert_eq!(s.state, ContainerState::Running, "{name} should run: {s:?}");
    s
}

#[tokio::test]
async fn syncs_a_new_pod_to_running_and_then_does_nothing() {
    let env = Env::new();
    let m = env.manager().await;
    let p = pod(vec![busybox("app")], vec![]);
    let (result, status) = sync(&env, &m, &p).await;
    assert_eq!(result.error(), None);
    let app = running(&status, "app");
    assert_eq!(app.restart_count, 0);
    let mut seen = 0;
    assert_eq!(
        events(&env, &mut seen),
        [
            "spec.containers{app} Normal Pulled Container image \"busybox:1.36\" already present on machine and can be accessed by the pod",
            "spec.containers{app} Normal Created Container created",
            "spec.containers{app} Normal Started Container started",
        ]
    );
    let e = &env.recorder.events()[0].object;
    assert_eq!(
        (
            e.kind.as_deref(),
            e.name.as_deref(),
            e.namespace.as_deref(),
            e.uid.as_deref()
        ),
        (Some("Pod"), Some("web"), Some("default"), Some("uid-1"))
    );
    assert_eq!(
        status.ips,
        vec![kubelet_cri::fake::FAKE_POD_SANDBOX_IP.to_string()]
    );

    let sandbox = env.runtime.sandboxes().remove(0);
    let cfg = &sandbox.config;
    assert_eq!(cfg.log_directory, "/var/log/pods/default_web_uid-1");
    assert_eq!(cfg.hostname, "web");
    assert_eq!(
        cfg.linux.as_ref().unwrap().cgroup_parent,
        "/kubepods/besteffort/poduid-1"
    );
    let c = env.runtime.container(&app.id.id).unwrap();
    assert_eq!(
        c.status.log_path,
        "/var/log/pods/default_web_uid-1/app/0.log"
    );
    assert_eq!(c.config.command, vec!["sleep", "3600"]);
    assert!(
        c.config
            .mounts
            .iter()
            .any(|m| m.container_path == "/etc/hosts")
    );
    assert!(
        c.config
            .mounts
            .iter()
            .any(|m| m.container_path == "/dev/termination-log")
    );
    assert!(
        env.os
            .exists(Path::new("/var/log/pods/default_web_uid-1/app"))
    );

    env.runtime.clear_calls();
    let (result, _) = sync(&env, &m, &p).await;
    assert_eq!(result.error(), None);
    for method in [
        "RunPodSandbox",
        "CreateContainer",
        "StartContainer",
        "StopContainer",
    ] {
        assert_eq!(env.calls(method), 0, "{method} in steady state");
    }
    assert!(
        events(&env, &mut seen).is_empty(),
        "no events in steady state"
    );
}

/// `SyncPod` records the runtime's steps of the pod startup timeline
/// (`kubelet_container::timeline`), each once, in order: one image step per container (the
/// image already present: no `imagePullStarted`).
#[tokio::test]
async fn sync_pod_records_the_startup_timeline() {
    let env = Env::new();
    let m = env.manager().await;
    let mut p = pod(vec![busybox("app"), busybox("side")], vec![]);
    let uid = "uid-timeline";
    p.metadata.uid = Some(uid.into());
    let timeline = kubelet_container::timeline::global();
    timeline.seen(uid);
    for _ in 0..2 {
        let status = m.get_pod_status(uid, "web", "default").await.unwrap();
        let result = m.sync_pod(&p, &status, &[], &env.backoff).await;
        assert_eq!(result.error(), None);
    }
    let t = timeline.get(uid).unwrap();
    timeline.remove(uid);
    let steps: Vec<String> = t
        .steps
        .iter()
        .map(|s| match &s.subject {
            Some(x) => format!("{}({x})", s.step.name()),
            None => s.step.name().to_string(),
        })
        .collect();
    assert_eq!(
        steps,
        [
            "seen",
            "sandboxCreated",
            "networkReady",
            "imagePulled(app)",
            "containerCreated(app)",
            "containerStarted(app)",
            "imagePulled(side)",
            "containerCreated(side)",
            "containerStarted(side)",
        ]
    );
    assert!(
        t.steps
            .iter()
            .all(|s| s.step != kubelet_container::timeline::Step::ImagePulled || s.already_present)
    );
    assert!(
        t.steps
            .windows(2)
            .all(|w| w[0].since_seen <= w[1].since_seen)
    );
}

#[tokio::test]
async fn restarted_kubelet_adopts_running_containers() {
    let env = Env::new();
    let p = pod(vec![busybox("app")], vec![]);
    let first = env.manager().await;
    sync(&env, &first, &p).await;
    let before = first
        .get_pod_status("uid-1", "web", "default")
        .await
        .unwrap();
    drop(first);

    let second = env.manager().await; // the kubelet restarted: all state comes from CRI
    env.runtime.clear_calls();
    let (result, after) = sync(&env, &second, &p).await;
    assert_eq!(result.error(), None);
    assert_eq!(
        env.calls("CreateContainer") + env.calls("StopContainer") + env.calls("RunPodSandbox"),
        0
    );
    assert_eq!(running(&after, "app").id, running(&before, "app").id);
    let pods = second.get_pods(false).await.unwrap();
    assert_eq!(
        (
            pods.len(),
            pods[0].containers.len(),
            pods[0].sandboxes.len()
        ),
        (1, 1, 1)
    );
    assert_eq!(
        pods[0].containers[0].hash,
        kubelet_container::hash_container(&busybox("app"))
    );
}

#[tokio::test]
async fn crashed_container_restarts_with_back_off() {
    let env = Env::new();
    let m = env.manager().await;
    let p = pod(vec![busybox("app")], vec![]);
    let (_, status) = sync(&env, &m, &p).await;
    env.runtime
        .exit_container(&running(&status, "app").id.id, 1)
        .unwrap();

    let (result, status) = sync(&env, &m, &p).await;
    assert_eq!(result.error(), None);
    let app = running(&status, "app");
    assert_eq!(app.restart_count, 1);
    let c = env.runtime.container(&app.id.id).unwrap();
    assert_eq!(c.config.metadata.as_ref().unwrap().attempt, 1);
    assert_eq!(
        c.status.log_path,
        "/var/log/pods/default_web_uid-1/app/1.log"
    );

    env.runtime.exit_container(&app.id.id, 1).unwrap();
    let mut seen = env.recorder.events().len();
    let (result, status) = sync(&env, &m, &p).await;
    assert_eq!(
        events(&env, &mut seen),
        [
            "spec.containers{app} Warning BackOff Back-off restarting failed container app in pod web_default(uid-1)"
        ]
    );
    let failure = result.failures().next().expect("back-off failure");
    assert_eq!(failure.error, Some(SyncErrorKind::CrashLoopBackOff));
    assert!(
        failure
            .message
            .starts_with("back-off 10s restarting failed container=app"),
        "{}",
        failure.message
    );
    assert!(status.running_container_statuses().next().is_none());

    env.clock.step(Duration::from_secs(11));
    let (result, status) = sync(&env, &m, &p).await;
    assert_eq!(result.error(), None);
    assert_eq!(running(&status, "app").restart_count, 2);
}

#[tokio::test]
async fn changed_spec_restarts_container() {
    let env = Env::new();
    let m = env.manager().await;
    let p = pod(vec![busybox("app")], vec![]);
    let (_, status) = sync(&env, &m, &p).await;
    let old = running(&status, "app").id;
    env.image.set_fake_images(&["busybox:1.37"]);
    let mut changed = busybox("app");
    changed.image = Some("busybox:1.37".into());
    let mut seen = env.recorder.events().len();
    let (result, status) = sync(&env, &m, &pod(vec![changed], vec![])).await;
    assert_eq!(result.error(), None);
    let got = events(&env, &mut seen);
    assert!(
        got[0].starts_with("spec.containers{app} Normal Killing Container app definition changed"),
        "{got:?}"
    );
    assert!(
        !got[0].contains(&old.id),
        "the container ID is replaced by its name"
    );
    let new = running(&status, "app");
    assert_ne!(new.id, old);
    assert_eq!(new.restart_count, 1);
}

#[tokio::test]
async fn init_containers_run_before_app() {
    let env = Env::new();
    let m = env.manager().await;
    let p = pod(vec![busybox("app")], vec![busybox("init")]);
    let (_, status) = sync(&env, &m, &p).await;
    let init = running(&status, "init");
    assert!(status.find_container_status_by_name("app").is_none());
    env.runtime.exit_container(&init.id.id, 0).unwrap();
    let (result, status) = sync(&env, &m, &p).await;
    assert_eq!(result.error(), None);
    running(&status, "app");
}

#[tokio::test]
async fn kill_pod_stops_and_removes_everything_of_a_removed_pod() {
    let env = Env::new();
    let m = env.manager().await;
    let p = pod(vec![busybox("app"), busybox("side")], vec![]);
    sync(&env, &m, &p).await;
    let running_pod = m.get_pods(false).await.unwrap().remove(0);

    env.runtime.clear_calls();
    m.kill_pod(Some(&p), &running_pod, None).await.unwrap();
    assert_eq!(
        (env.calls("StopContainer"), env.calls("StopPodSandbox")),
        (2, 1)
    );
    assert_eq!(
        env.runtime.containers().len(),
        2,
        "a live pod keeps its dead containers for GC"
    );

    env.states.remove("uid-1");
    m.kill_pod(Some(&p), &running_pod, None).await.unwrap();
    assert!(env.runtime.containers().is_empty());
    assert!(env.runtime.sandboxes().is_empty());
    assert!(!env.os.exists(Path::new("/var/log/pods/default_web_uid-1")));
}

#[test]
fn stop_timeout_has_a_floor() {
    assert_eq!(stop_timeout(30, Duration::ZERO), 30);
    assert_eq!(stop_timeout(30, Duration::from_secs(10)), 20);
    assert_eq!(stop_timeout(1, Duration::ZERO), 2);
    assert_eq!(stop_timeout(0, Duration::from_secs(5)), 2);
}

#[tokio::test]
async fn garbage_collection_keeps_one_dead_container_per_name() {
    let env = Env::new();
    let m = env.manager().await;
    let p = pod(vec![busybox("app")], vec![]);
    let mut backoff_free = Duration::from_secs(0);
    for _ in 0..3 {
        let (_, status) = sync(&env, &m, &p).await;
        env.runtime
            .exit_container(&running(&status, "app").id.id, 1)
            .unwrap();
        backoff_free += Duration::from_secs(400);
        env.clock.step(backoff_free);
    }
    assert_eq!(env.runtime.containers().len(), 3);
    m.garbage_collect(&ContainerGcPolicy::default(), true, false)
        .await
        .unwrap();
    let left = env.runtime.containers();
    assert_eq!(left.len(), 1, "one dead container per (pod, name) is kept");
    assert_eq!(
        left[0].config.metadata.as_ref().unwrap().attempt,
        2,
        "the newest is kept"
    );

    // A deleted pod loses everything: containers, sandboxes, log directory.
    let running_pod = m.get_pods(true).await.unwrap().remove(0);
    m.kill_pod(Some(&p), &running_pod, None).await.unwrap();
    env.states.remove("uid-1");
    m.garbage_collect(&ContainerGcPolicy::default(), true, false)
        .await
        .unwrap();
    assert!(env.runtime.containers().is_empty());
    assert!(env.runtime.sandboxes().is_empty());
    assert!(!env.os.exists(Path::new("/var/log/pods/default_web_uid-1")));
}

#[tokio::test]
async fn big_logs_are_rotated_and_old_ones_dropped() {
    let env = Env::new();
    let m = env.manager().await;
    let (_, status) = sync(&env, &m, &pod(vec![busybox("app")], vec![])).await;
    let id = running(&status, "app").id.id;
    let log = Path::new("/var/log/pods/default_web_uid-1/app/0.log");
    for round in 0..4 {
        env.os.write_file(log, &[b'x'; 200]).unwrap();
        m.log_manager().rotate_logs().await.unwrap();
        env.clock.step(Duration::from_secs(1));
        assert!(!env.os.exists(log), "round {round}: live log renamed");
        // The fake runtime does not recreate the file on reopen; the kubelet asks again.
    }
    let reopened = env.runtime.with_state(|s| s.reopened_logs.clone());
    assert!(reopened.iter().filter(|r| **r == id).count() >= 4);
    let dir = Path::new("/var/log/pods/default_web_uid-1/app");
    let files = env.os.read_dir(dir).unwrap();
    let rotated: Vec<_> = files.iter().filter(|f| f.starts_with("0.log.")).collect();
    assert_eq!(
        rotated.len(),
        2,
        "max_files 3 keeps 2 rotated files: {files:?}"
    );
    assert_eq!(
        rotated.iter().filter(|f| f.ends_with(".gz")).count(),
        1,
        "older rotations are compressed: {files:?}"
    );
}

/// Not upstream (which asks every pass): the log rotation asks each running container for
/// its log path once, and again only for a new container.
#[tokio::test]
async fn log_rotation_asks_each_container_for_its_log_path_once() {
    let env = Env::new();
    let m = env.manager().await;
    let p = pod(vec![busybox("app")], vec![]);
    let (_, status) = sync(&env, &m, &p).await;
    let first = running(&status, "app").id.id;
    env.runtime.clear_calls();
    for _ in 0..3 {
        m.log_manager().rotate_logs().await.unwrap();
    }
    assert_eq!(env.calls("ListContainers"), 3, "one listing per pass");
    assert_eq!(
        env.calls("ContainerStatus"),
        1,
        "the log path is asked once"
    );

    // The container exits and is replaced: its path is forgotten, the new one asked once.
    env.runtime.exit_container(&first, 1).unwrap();
    env.runtime.clear_calls();
    m.log_manager().rotate_logs().await.unwrap();
    assert_eq!(
        env.calls("ContainerStatus"),
        0,
        "an exited container is not rotated"
    );
    let (_, status) = sync(&env, &m, &p).await;
    let second = running(&status, "app").id.id;
    assert_ne!(second, first);
    env.runtime.clear_calls();
    m.log_manager().rotate_logs().await.unwrap();
    m.log_manager().rotate_logs().await.unwrap();
    assert_eq!(
        env.calls("ContainerStatus"),
        1,
        "the new container's path, once"
    );
}

#[tokio::test]
async fn termination_message_falls_back_to_logs_on_error() {
    let env = Env::new();
    let m = env.manager().await;
    let mut c = busybox("app");
    c.termination_message_policy = Some("FallbackToLogsOnError".into());
    let (_, status) = sync(&env, &m, &pod(vec![c], vec![])).await;
    let id = running(&status, "app").id.id;
    let log = "2026-01-01T00:00:00.000000000Z stdout F first\n\
               2026-01-01T00:00:00.100000000Z stderr P part-\n\
               2026-01-01T00:00:00.200000000Z stderr F two\n";
    env.os
        .write_file(
            Path::new("/var/log/pods/default_web_uid-1/app/0.log"),
            log.as_bytes(),
        )
        .unwrap();
    env.runtime.exit_container(&id, 3).unwrap();
    let status = m.get_pod_status("uid-1", "web", "default").await.unwrap();
    let app = status.find_container_status_by_name("app").unwrap();
    assert_eq!((app.state, app.exit_code), (ContainerState::Exited, 3));
    assert_eq!(app.message, "first\npart-two\n");
}

#[tokio::test]
async fn sandbox_and_container_failures_are_warning_events() {
    use kubelet_cri::CriError;
    let env = Env::new();
    let m = env.manager().await;
    let p = pod(vec![busybox("app")], vec![]);
    env.runtime.inject_error(
        "RunPodSandbox",
        CriError::status("fake", "RunPodSandbox", tonic::Code::Unknown, "no network"),
    );
    let (result, _) = sync(&env, &m, &p).await;
    assert_eq!(
        result.failures().next().unwrap().error,
        Some(SyncErrorKind::CreatePodSandbox)
    );
    let mut seen = 0;
    let got = events(&env, &mut seen);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("- Warning FailedCreatePodSandBox Failed to create pod sandbox: ")
            && got[0].contains("no network"),
        "{got:?}"
    );

    env.runtime.inject_error(
        "StartContainer",
        CriError::status(
            "fake",
            "StartContainer",
            tonic::Code::Unknown,
            "exec format error",
        ),
    );
    sync(&env, &m, &p).await;
    let got = events(&env, &mut seen);
    assert_eq!(
        got[1],
        "spec.containers{app} Normal Created Container created"
    );
    assert!(
        got[2].starts_with("spec.containers{app} Warning Failed Error: ")
            && got[2].contains("exec format error"),
        "{got:?}"
    );

    // A new sandbox for a pod that had one: SandboxChanged.
    let (_, status) = sync(&env, &m, &p).await;
    let sandbox = status.sandbox_statuses[0].id.clone();
    env.runtime.with_state(|s| {
        s.sandboxes.get_mut(&sandbox).unwrap().status.state =
            kubelet_cri::v1::PodSandboxState::SandboxNotready as i32
    });
    events(&env, &mut seen);
    sync(&env, &m, &p).await;
    let got = events(&env, &mut seen);
    assert!(
        got.contains(
            &"- Normal SandboxChanged Pod sandbox changed, it will be killed and re-created."
                .to_string()
        ),
        "{got:?}"
    );
}

/// A pod with an emptyDir `vol`, container `app` mounting subPath `sub` of it at `/mnt`
/// (`subPathExpr` when `expr`).
fn subpath_pod(sub: &str, expr: bool) -> ApiPod {
    use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, EnvVar, Volume, VolumeMount};
    let mut app = busybox("app");
    app.env = Some(vec![EnvVar {
        name: "POD".into(),
        value: Some("web-0".into()),
        value_from: None,
    }]);
    app.volume_mounts = Some(vec![
        VolumeMount {
            name: "vol".into(),
            mount_path: "/data".into(),
            ..VolumeMount::default()
        },
        VolumeMount {
            name: "vol".into(),
            mount_path: "/mnt".into(),
            sub_path: (!expr).then(|| sub.to_string()),
            sub_path_expr: expr.then(|| sub.to_string()),
            ..VolumeMount::default()
        },
    ]);
    let mut p = pod(vec![app], vec![]);
    p.spec.as_mut().unwrap().volumes = Some(vec![Volume {
        name: "vol".into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    }]);
    p
}

fn created_mounts(env: &Env) -> Vec<(String, String)> {
    env.runtime.with_state(|s| {
        s.containers
            .values()
            .flat_map(|c| c.config.mounts.iter())
            .map(|m| (m.container_path.clone(), m.host_path.clone()))
            .collect()
    })
}

const VOL: &str = "/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~empty-dir/vol";

#[tokio::test]
async fn sub_path_reaches_the_runtime_as_its_bind_target() {
    let env = Env::new();
    let m = env.manager().await;
    let (result, _) = sync(&env, &m, &subpath_pod("logs/$(POD)", true)).await;
    assert!(result.error().is_none(), "{result:?}");
    let mounts = created_mounts(&env);
    assert!(mounts.contains(&("/data".into(), VOL.into())), "{mounts:?}");
    assert!(
        mounts.contains(&(
            "/mnt".into(),
            "/var/lib/kubelet/pods/uid-1/volume-subpaths/vol/app/1".into()
        )),
        "{mounts:?}"
    );
    assert!(
        env.os.is_dir(Path::new(&format!("{VOL}/logs/web-0"))),
        "created inside the volume"
    );
}

#[tokio::test]
async fn sub_path_symlink_out_of_the_volume_is_a_create_container_config_error() {
    let env = Env::new();
    let m = env.manager().await;
    env.os.mkdir_all(Path::new(VOL)).unwrap();
    env.os.mkdir_all(Path::new("/etc")).unwrap();
    env.os
        .symlink(Path::new("/etc"), Path::new(&format!("{VOL}/escape")))
        .unwrap();
    env.os
        .symlink(Path::new("../../.."), Path::new(&format!("{VOL}/up")))
        .unwrap();
    for sub in ["escape", "up/x", "../x", "/etc", "$(MISSING)"] {
        let (result, _) = sync(&env, &m, &subpath_pod(sub, sub.starts_with('$'))).await;
        let failure = result
            .failures()
            .next()
            .expect("the container must not start");
        assert_eq!(
            failure.error,
            Some(SyncErrorKind::CreateContainerConfig),
            "{sub}"
        );
        let want = match sub {
            "escape" => "failed to prepare subPath for volumeMount \"vol\" of container \"app\"",
            "up/x" => {
                "failed to create subPath directory for volumeMount \"vol\" of container \"app\""
            }
            "../x" => "unable to provision SubPath `../x`: must not contain '..'",
            "/etc" => "error SubPath `/etc` must not be an absolute path",
            _ => "missing value for MISSING",
        };
        assert_eq!(failure.message, want, "{sub}");
    }
    assert!(created_mounts(&env).is_empty());
    assert!(!env.os.exists(Path::new("/var/lib/kubelet/pods/x")));
}

/// RuntimeClasses by name, as the API-backed manager's lister would hold them.
struct FakeRuntimeClasses(Vec<(&'static str, &'static str)>);

impl crate::runtimeclass::RuntimeHandlerResolver for FakeRuntimeClasses {
    fn lookup_runtime_handler(
        &self,
        name: Option<&str>,
    ) -> Result<String, crate::runtimeclass::RuntimeClassError> {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return Ok(String::new());
        };
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, h)| (*h).to_string())
            .ok_or_else(|| crate::runtimeclass::RuntimeClassError::NotFound { name: name.into() })
    }
}

fn with_runtime_class(name: &str) -> ApiPod {
    let mut p = pod(vec![busybox("app")], vec![]);
    p.spec.as_mut().unwrap().runtime_class_name = Some(name.into());
    p
}

#[tokio::test]
async fn runtime_class_handler_reaches_run_pod_sandbox() {
    let env = Env::new();
    let m = env
        .manager()
        .await
        .with_runtime_class_manager(Arc::new(FakeRuntimeClasses(vec![("fast", "kata")])));
    let (result, status) = sync(&env, &m, &with_runtime_class("fast")).await;
    assert!(result.error().is_none(), "{result:?}");
    running(&status, "app");
    let handlers: Vec<_> = env
        .runtime
        .sandboxes()
        .iter()
        .map(|s| s.status.runtime_handler.clone())
        .collect();
    assert_eq!(handlers, ["kata"]);
}

#[tokio::test]
async fn missing_runtime_class_fails_the_sandbox_as_upstream() {
    let env = Env::new();
    let m = env
        .manager()
        .await
        .with_runtime_class_manager(Arc::new(FakeRuntimeClasses(vec![])));
    let (result, _) = sync(&env, &m, &with_runtime_class("gone")).await;
    let failure = result.failures().next().unwrap();
    assert_eq!(failure.error, Some(SyncErrorKind::CreatePodSandbox));
    assert_eq!(
        failure.message,
        r#"Failed to create sandbox for pod "web_default(uid-1)": runtimeclass.node.k8s.io "gone" not found"#
    );
    assert!(env.runtime.sandboxes().is_empty());
    let got = events(&env, &mut 0);
    assert_eq!(
        got,
        [
            r#"- Warning FailedCreatePodSandBox Failed to create pod sandbox: runtimeclass.node.k8s.io "gone" not found"#
        ]
    );
}

#[tokio::test]
async fn without_a_runtime_class_manager_every_pod_gets_the_default_handler() {
    let env = Env::new();
    let m = env.manager().await;
    let (result, _) = sync(&env, &m, &with_runtime_class("gvisor")).await;
    assert!(result.error().is_none(), "{result:?}");
    assert_eq!(env.runtime.sandboxes()[0].status.runtime_handler, "");
}

#[tokio::test]
async fn host_users_false_on_a_runtime_without_user_namespaces_fails_the_sandbox() {
    let env = Env::new();
    let m = env.manager().await;
    let mut p = pod(vec![busybox("app")], vec![]);
    p.spec.as_mut().unwrap().host_users = Some(false);
    let (result, _) = sync(&env, &m, &p).await;
    let failure = result.failures().next().unwrap();
    assert_eq!(failure.error, Some(SyncErrorKind::CreatePodSandbox));
    assert_eq!(
        failure.message,
        r#"Failed to generate sandbox config for pod "web_default(uid-1)": can't set `spec.hostUsers: false`, runtime does not support user namespaces"#
    );
    assert!(env.runtime.sandboxes().is_empty());
    assert_eq!(
        events(&env, &mut 0),
        [
            "- Warning FailedCreatePodSandBox Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"
        ]
    );
}

#[tokio::test]
async fn host_users_false_on_a_runtime_with_user_namespaces_gets_pod_mode_mappings() {
    use kubelet_cri::v1::{IdMapping, NamespaceMode, RuntimeHandler, RuntimeHandlerFeatures};
    let env = Env::new();
    env.runtime.with_state(|s| {
        s.runtime_handlers = vec![RuntimeHandler {
            name: String::new(),
            features: Some(RuntimeHandlerFeatures {
                recursive_read_only_mounts: false,
                user_namespaces: true,
            }),
        }];
    });
    let os: Arc<dyn OsInterface> = env.os.clone();
    // the kubelet's range holds exactly one pod: the mapping is known in advance
    let userns = Arc::new(
        crate::userns::UsernsManager::new(
            os,
            std::path::Path::new("/var/lib/kubelet"),
            (131_072, 65536),
            None,
            1,
        )
        .unwrap(),
    );
    let m = env.manager().await.with_userns_manager(userns.clone());
    let mut p = pod(vec![busybox("app")], vec![]);
    p.spec.as_mut().unwrap().host_users = Some(false);
    let (result, _) = sync(&env, &m, &p).await;
    assert!(result.error().is_none(), "{result:?}");
    let ns = first_sandbox_userns(&env).unwrap();
    let want = vec![IdMapping {
        host_id: 131_072,
        container_id: 0,
        length: 65536,
    }];
    assert_eq!(ns.mode, NamespaceMode::Pod as i32);
    assert_eq!(ns.uids, want);
    assert_eq!(ns.gids, want);
    // persisted in the pod directory in upstream's format
    assert_eq!(
        env.os
            .read_to_string(std::path::Path::new("/var/lib/kubelet/pods/uid-1/userns"))
            .unwrap(),
        r#"{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}"#
    );
    assert!(userns.pod_allocated("uid-1"));
    userns.release("uid-1");
    assert!(!userns.pod_allocated("uid-1"));
}

#[tokio::test]
async fn pods_sharing_host_users_run_in_the_node_user_namespace() {
    let env = Env::new();
    let m = env.manager().await;
    let (result, _) = sync(&env, &m, &pod(vec![busybox("app")], vec![])).await;
    assert!(result.error().is_none(), "{result:?}");
    let ns = first_sandbox_userns(&env).map(|u| u.mode);
    assert_eq!(ns, Some(kubelet_cri::v1::NamespaceMode::Node as i32));
}

/// The user namespace options the first sandbox was created with.
fn first_sandbox_userns(env: &Env) -> Option<kubelet_cri::v1::UserNamespace> {
    env.runtime.sandboxes()[0]
        .config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref())
        .and_then(|sc| sc.namespace_options.as_ref())
        .and_then(|ns| ns.userns_options.clone())
}

fn with_resources(mut c: ApiContainer, cpu: &str, memory: &str) -> ApiContainer {
    let list: std::collections::BTreeMap<
        String,
        k8s_openapi::apimachinery::pkg::api::resource::Quantity,
    > = [
        (
            "cpu".to_string(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity(cpu.into()),
        ),
        (
            "memory".to_string(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity(memory.into()),
        ),
    ]
    .into();
    c.resources = Some(k8s_openapi::api::core::v1::ResourceRequirements {
        limits: Some(list.clone()),
        requests: Some(list),
        ..Default::default()
    });
    c
}

/// The one-container `app` pod resized to 200m / 50Mi, which `status` shows in progress.
fn resized_app(
    m: &KubeGenericRuntimeManager,
    status: &PodStatus,
) -> k8s_openapi::api::core::v1::Pod {
    let resized = pod(vec![with_resources(busybox("app"), "200m", "50Mi")], vec![]);
    assert!(crate::resize::is_pod_resize_in_progress(
        &resized,
        status,
        m.actuated_state()
    ));
    resized
}

#[tokio::test]
async fn resized_containers_are_updated_in_place_memory_then_cpu() {
    let env = Env::new();
    let m = env.manager().await;
    let p = pod(
        vec![with_resources(busybox("app"), "100m", "100Mi")],
        vec![],
    );
    let (result, status) = sync(&env, &m, &p).await;
    assert_eq!(result.error(), None);
    let id = running(&status, "app").id;
    // The runtime reports what it applied; the status converts it back.
    let r = running(&status, "app").resources.unwrap();
    assert_eq!(r.cpu_limit.unwrap().0, "100m");
    assert_eq!(r.memory_limit.unwrap().0, "100Mi");
    assert_eq!(r.memory_request.unwrap().0, "100Mi");

    env.runtime.clear_calls();
    let resized = resized_app(&m, &status);
    let (result, after) = sync(&env, &m, &resized).await;
    assert_eq!(result.error(), None);
    assert!(
        result
            .sync_results
            .iter()
            .any(|r| r.action == kubelet_container::SyncAction::ResizePodInPlace)
    );
    // Two updates (memory, then CPU), no restart; the second keeps the new memory.
    assert_eq!(env.calls("UpdateContainerResources"), 2);
    assert_eq!(env.calls("StopContainer") + env.calls("CreateContainer"), 0);
    assert_eq!(running(&after, "app").id, id);
    let linux = env
        .runtime
        .container(&id.id)
        .unwrap()
        .status
        .resources
        .unwrap()
        .linux
        .unwrap();
    assert_eq!(linux.memory_limit_in_bytes, 50 << 20);
    assert_eq!(linux.cpu_quota, 20_000);
    assert_eq!(linux.cpu_shares, 204);
    assert!(!crate::resize::is_pod_resize_in_progress(
        &resized,
        &after,
        m.actuated_state()
    ));
    // Nothing left to do.
    env.runtime.clear_calls();
    let (result, _) = sync(&env, &m, &resized).await;
    assert_eq!(result.error(), None);
    assert_eq!(env.calls("UpdateContainerResources"), 0);
}

/// A pod cgroup in memory that records each write with how many
/// `UpdateContainerResources` calls came before it.
struct RecordingPodCgroup {
    runtime: Arc<FakeRuntimeService>,
    current: std::sync::Mutex<kubelet_cm::ResourceConfig>,
    log: std::sync::Mutex<Vec<String>>,
}

impl crate::resize::PodCgroupConfig for RecordingPodCgroup {
    fn resource_config_for_pod(
        &self,
        pod: &k8s_openapi::api::core::v1::Pod,
    ) -> Option<kubelet_cm::ResourceConfig> {
        Some(crate::resources::resource_config_for_pod(
            pod, true, 100_000, false,
        ))
    }
    fn get_pod_cgroup_config(
        &self,
        _: &k8s_openapi::api::core::v1::Pod,
        _: kubelet_cm::CgroupResource,
    ) -> Result<kubelet_cm::ResourceConfig, String> {
        Ok(self.current.lock().unwrap().clone())
    }
    fn set_pod_cgroup_config(
        &self,
        _: &k8s_openapi::api::core::v1::Pod,
        c: &kubelet_cm::ResourceConfig,
    ) -> Result<(), String> {
        let updates = self
            .runtime
            .called()
            .iter()
            .filter(|m| *m == "UpdateContainerResources")
            .count();
        self.log
            .lock()
            .unwrap()
            .push(format!("{c:?} after {updates} container updates",));
        Ok(())
    }
}

#[tokio::test]
async fn resize_grows_the_pod_cgroup_before_the_containers_and_shrinks_it_after() {
    let env = Env::new();
    let m = env.manager().await;
    let p = pod(
        vec![with_resources(busybox("app"), "100m", "100Mi")],
        vec![],
    );
    let (_, status) = sync(&env, &m, &p).await;
    let pcm = Arc::new(RecordingPodCgroup {
        runtime: env.runtime.clone(),
        current: std::sync::Mutex::new(crate::resources::resource_config_for_pod(
            &p, true, 100_000, false,
        )),
        log: std::sync::Mutex::default(),
    });
    m.set_pod_cgroup_config(pcm.clone());
    env.runtime.clear_calls();
    // Memory shrinks (the pod cgroup after the container), CPU grows (before it).
    let resized = resized_app(&m, &status);
    let (result, _) = sync(&env, &m, &resized).await;
    assert_eq!(result.error(), None);
    let mem = kubelet_cm::ResourceConfig {
        memory: Some(50 << 20),
        ..Default::default()
    };
    let quota = kubelet_cm::ResourceConfig {
        cpu_quota: Some(20_000),
        cpu_period: Some(100_000),
        ..Default::default()
    };
    let shares = kubelet_cm::ResourceConfig {
        cpu_shares: Some(204),
        ..Default::default()
    };
    assert_eq!(
        *pcm.log.lock().unwrap(),
        [
            format!("{mem:?} after 1 container updates"),
            format!("{quota:?} after 1 container updates"),
            format!("{shares:?} after 1 container updates"),
        ]
    );
    assert_eq!(env.calls("UpdateContainerResources"), 2);
    // After each pod cgroup write the runtime is told the pod's resources so far.
    let updates = env
        .runtime
        .with_state(|st| st.sandbox_resource_updates.clone());
    let told: Vec<(i64, i64, i64)> = updates
        .iter()
        .map(|u| {
            let r = u.resources.as_ref().unwrap();
            (r.memory_limit_in_bytes, r.cpu_quota, r.cpu_shares)
        })
        .collect();
    assert_eq!(
        told,
        [
            (50 << 20, 10_000, 102),
            (50 << 20, 20_000, 102),
            (50 << 20, 20_000, 204)
        ]
    );
    let sandbox = &status.sandbox_statuses[0].id;
    assert!(updates.iter().all(|u| &u.pod_sandbox_id == sandbox));
}

/// `spec.hostnameOverride` names the sandbox and the managed `/etc/hosts` entry (no domain,
/// even with a subdomain), as upstream's `GeneratePodHostNameAndDomain`.
#[tokio::test]
async fn hostname_override_names_the_sandbox_and_etc_hosts() {
    let env = Env::new();
    let m = env.manager().await;
    let mut p = pod(vec![busybox("app")], vec![]);
    if let Some(s) = p.spec.as_mut() {
        s.hostname = Some("custom".into());
        s.subdomain = Some("sub".into());
        s.hostname_override = Some("my.override".into());
    }
    let (result, _) = sync(&env, &m, &p).await;
    assert!(result.error().is_none(), "{result:?}");
    assert_eq!(env.runtime.sandboxes()[0].config.hostname, "my.override");
    let hosts = env
        .os
        .read_to_string(Path::new("/var/lib/kubelet/pods/uid-1/etc-hosts"))
        .unwrap();
    let ip = kubelet_cri::fake::FAKE_POD_SANDBOX_IP;
    assert!(
        hosts.ends_with(&format!("fe00::2\tip6-allrouters\n{ip}\tmy.override\n")),
        "{hosts}"
    );
}

/// `fileKeyRef`: the variable comes from the emptyDir's file; a missing key is a
/// `CreateContainerConfigError` with upstream's message, and nothing is created.
#[tokio::test]
async fn file_key_ref_reads_the_empty_dir_or_fails_the_container() {
    use k8s_openapi::api::core::v1::{
        EmptyDirVolumeSource, EnvVar, EnvVarSource, FileKeySelector, Volume,
    };
    let env = Env::new();
    let m = env.manager().await;
    let dir = "/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~empty-dir/config";
    env.os
        .write_file(
            Path::new(&format!("{dir}/app.env")),
            b"# written by init\nGREETING='hello world'\n",
        )
        .unwrap();
    let with_key = |key: &str| {
        let mut c = busybox("app");
        c.env = Some(vec![EnvVar {
            name: "GREETING".into(),
            value_from: Some(EnvVarSource {
                file_key_ref: Some(FileKeySelector {
                    volume_name: "config".into(),
                    path: "app.env".into(),
                    key: key.into(),
                    optional: None,
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }]);
        let mut p = pod(vec![c], vec![]);
        if let Some(s) = p.spec.as_mut() {
            s.volumes = Some(vec![Volume {
                name: "config".into(),
                empty_dir: Some(EmptyDirVolumeSource::default()),
                ..Volume::default()
            }]);
        }
        p
    };
    let (result, _) = sync(&env, &m, &with_key("MISSING")).await;
    let failure = result
        .failures()
        .next()
        .expect("the container must not start");
    assert_eq!(failure.error, Some(SyncErrorKind::CreateContainerConfig));
    assert_eq!(
        failure.message,
        format!("environment variable key \"MISSING\" not found in file \"{dir}/app.env\"")
    );
    assert!(env.runtime.containers().is_empty());

    let (result, status) = sync(&env, &m, &with_key("GREETING")).await;
    assert!(result.error().is_none(), "{result:?}");
    let app = running(&status, "app");
    let c = env.runtime.container(&app.id.id).unwrap();
    let want = kubelet_cri::v1::KeyValue {
        key: "GREETING".into(),
        value: b"hello world".to_vec(),
    };
    assert_eq!(c.config.envs, [want]);
}

/// The CRI `supplemental_groups_policy` of the first sandbox and of its first container.
fn cri_supplemental_groups_policies(env: &Env) -> (i32, i32) {
    let sandbox = env.runtime.sandboxes()[0].config.linux.clone();
    let container = env.runtime.containers()[0].config.linux.clone();
    (
        sandbox
            .and_then(|l| l.security_context)
            .unwrap()
            .supplemental_groups_policy,
        container
            .and_then(|l| l.security_context)
            .unwrap()
            .supplemental_groups_policy,
    )
}

fn with_supplemental_groups_policy(policy: &str) -> ApiPod {
    let mut p = pod(vec![busybox("app")], vec![]);
    p.spec.as_mut().unwrap().security_context =
        Some(k8s_openapi::api::core::v1::PodSecurityContext {
            run_as_user: Some(1000),
            run_as_group: Some(3000),
            supplemental_groups: Some(vec![4000]),
            supplemental_groups_policy: Some(policy.into()),
            ..Default::default()
        });
    p
}

#[tokio::test]
async fn supplemental_groups_policy_reaches_the_runtime_and_the_user_comes_back() {
    use kubelet_cri::v1::SupplementalGroupsPolicy;
    let env = Env::new();
    env.runtime.with_state(|s| {
        s.features = Some(kubelet_cri::v1::RuntimeFeatures {
            supplemental_groups_policy: true,
        });
    });
    let m = env.manager().await;
    let features = kubelet_container::Runtime::status(&m)
        .await
        .unwrap()
        .features;
    assert_eq!(
        features,
        Some(kubelet_container::RuntimeFeatures {
            supplemental_groups_policy: true
        })
    );
    let (result, status) = sync(&env, &m, &with_supplemental_groups_policy("Strict")).await;
    assert!(result.error().is_none(), "{result:?}");
    let strict = SupplementalGroupsPolicy::Strict as i32;
    assert_eq!(cri_supplemental_groups_policies(&env), (strict, strict));
    let user = running(&status, "app").user.and_then(|u| u.linux).unwrap();
    assert_eq!(
        (user.uid, user.gid, user.supplemental_groups),
        (1000, 3000, vec![3000, 4000])
    );
}

#[tokio::test]
async fn without_the_runtime_feature_no_user_is_reported() {
    let env = Env::new();
    let m = env.manager().await;
    assert_eq!(
        kubelet_container::Runtime::status(&m)
            .await
            .unwrap()
            .features,
        None
    );
    let (result, status) = sync(&env, &m, &with_supplemental_groups_policy("Merge")).await;
    assert!(result.error().is_none(), "{result:?}");
    let merge = kubelet_cri::v1::SupplementalGroupsPolicy::Merge as i32;
    assert_eq!(cri_supplemental_groups_policies(&env), (merge, merge));
    assert_eq!(running(&status, "app").user, None);
}

#[tokio::test]
async fn an_unknown_supplemental_groups_policy_fails_the_sandbox_as_upstream() {
    let env = Env::new();
    let m = env.manager().await;
    let (result, _) = sync(&env, &m, &with_supplemental_groups_policy("Loose")).await;
    let failure = result.failures().next().unwrap();
    assert_eq!(failure.error, Some(SyncErrorKind::CreatePodSandbox));
    assert!(
        failure
            .message
            .ends_with("unsupported supplementalGroupsPolicy: Loose"),
        "{}",
        failure.message
    );
    assert!(env.runtime.sandboxes().is_empty());
}

// ---- image volumes (`getImageVolumes`, `toKubeContainerImageVolumes`, CRI image mounts)

/// `app` mounts `present` (busybox, `IfNotPresent`, subPath `etc`) and `remote`
/// (`example.com/data:1`, `Always`); `other` mounts nothing.
fn image_volume_pod(policies: [&str; 2]) -> ApiPod {
    use k8s_openapi::api::core::v1::{ImageVolumeSource, Volume, VolumeMount};
    let mut app = busybox("app");
    app.volume_mounts = Some(vec![
        VolumeMount {
            name: "present".into(),
            mount_path: "/p".into(),
            sub_path: Some("etc".into()),
            read_only: Some(false),
            ..VolumeMount::default()
        },
        VolumeMount {
            name: "remote".into(),
            mount_path: "/r".into(),
            ..VolumeMount::default()
        },
    ]);
    let mut p = pod(vec![app, busybox("other")], vec![]);
    p.metadata.annotations = Some([("a".to_string(), "b".to_string())].into());
    let volume = |name: &str, reference: &str, policy: &str| Volume {
        name: name.into(),
        image: Some(ImageVolumeSource {
            reference: Some(reference.into()),
            pull_policy: Some(policy.into()),
        }),
        ..Volume::default()
    };
    p.spec.as_mut().unwrap().volumes = Some(vec![
        volume("present", "busybox:1.36", policies[0]),
        volume("remote", "example.com/data:1", policies[1]),
    ]);
    p
}

fn created_config(env: &Env, name: &str) -> Option<kubelet_cri::v1::ContainerConfig> {
    env.runtime.with_state(|s| {
        s.containers
            .values()
            .find(|c| c.config.metadata.as_ref().is_some_and(|m| m.name == name))
            .map(|c| c.config.clone())
    })
}

fn pulled_images(env: &Env) -> Vec<String> {
    env.image
        .pulled()
        .into_iter()
        .map(|p| p.image.image)
        .collect()
}

#[tokio::test]
async fn image_volumes_are_pulled_per_policy_and_reach_the_runtime_as_read_only_image_mounts() {
    kubelet_metrics::register_image_volume().unwrap();
    let succeeded = || {
        let mut v = 0.0;
        kubelet_metrics::with_image_volume(|m| v = m.mounted_succeed_total.get());
        v
    };
    let before = succeeded();
    let env = Env::new();
    let m = env.manager().await;
    let mut seen = 0;
    let (result, after) = sync(&env, &m, &image_volume_pod(["IfNotPresent", "Always"])).await;
    assert!(result.error().is_none(), "{result:?}");
    running(&after, "app");
    // `IfNotPresent` with the image present: no pull; `Always`: pulled, once per sync.
    assert_eq!(pulled_images(&env), vec!["example.com/data:1"]);
    let events = events(&env, &mut seen);
    for want in [
        "- Normal Pulled Container image \"busybox:1.36\" already present on machine and can be accessed by the pod",
        "- Normal Pulling Pulling image \"example.com/data:1\"",
    ] {
        assert!(events.iter().any(|e| e == want), "{want}\n{events:#?}");
    }
    let config = created_config(&env, "app").unwrap();
    let by_path = |p: &str| {
        config
            .mounts
            .iter()
            .find(|m| m.container_path == p)
            .cloned()
            .unwrap()
    };
    let present = by_path("/p");
    assert_eq!(present.host_path, "");
    assert!(present.readonly, "image volumes are read-only: {present:?}");
    assert!(!present.selinux_relabel);
    assert_eq!(present.image_sub_path, "etc");
    let image = present.image.unwrap();
    assert_eq!(
        image.image,
        kubelet_cri::fake::fake_image_id("busybox:1.36")
    );
    assert_eq!(image.user_specified_image, "busybox:1.36");
    assert_eq!(image.annotations.get("a").map(String::as_str), Some("b"));
    let remote = by_path("/r");
    assert!(remote.readonly);
    assert_eq!(remote.image_sub_path, "");
    assert_eq!(
        remote.image.unwrap().user_specified_image,
        "example.com/data:1"
    );
    // A container without image mounts gets none.
    let other = created_config(&env, "other").unwrap();
    assert!(other.mounts.iter().all(|m| m.image.is_none()), "{other:?}");
    // `kubelet_image_volume_mounted_succeed_total`: the two mounts of `app` (only this
    // test starts containers with image mounts on a supporting runtime).
    assert_eq!(succeeded() - before, 2.0);
}

#[tokio::test]
async fn a_failed_image_volume_pull_fails_only_the_containers_mounting_it() {
    let env = Env::new();
    let m = env.manager().await;
    let mut seen = 0;
    // `Never` with the image absent.
    let (result, after) = sync(&env, &m, &image_volume_pod(["IfNotPresent", "Never"])).await;
    running(&after, "other");
    assert!(after.find_container_status_by_name("app").is_none());
    let app = result
        .sync_results
        .iter()
        .find(|r| r.target == "app")
        .unwrap();
    assert_eq!(app.error, Some(SyncErrorKind::ImageNeverPull), "{app:?}");
    assert_eq!(
        app.message,
        "Container image \"example.com/data:1\" is not present with pull policy of Never"
    );
    assert!(pulled_images(&env).is_empty());
    let events = events(&env, &mut seen);
    for want in [
        "- Warning ErrImageNeverPull Container image \"example.com/data:1\" is not present with pull policy of Never",
        "spec.containers{app} Warning Failed Error: ErrImageNeverPull",
    ] {
        assert!(events.iter().any(|e| e == want), "{want}\n{events:#?}");
    }
}

#[tokio::test]
async fn a_runtime_without_image_volumes_fails_the_container_instead_of_dropping_the_volume() {
    let env = Env::new();
    env.runtime.with_state(|s| {
        s.version = Some(kubelet_cri::v1::VersionResponse {
            version: "0.1.0".into(),
            runtime_name: "containerd".into(),
            runtime_version: "1.6.20~ds1".into(),
            runtime_api_version: "v1".into(),
        });
    });
    let m = env.manager().await;
    kubelet_metrics::register_image_volume().unwrap();
    let failed = || {
        let mut v = 0.0;
        kubelet_metrics::with_image_volume(|m| v = m.mounted_errors_total.get());
        v
    };
    let before = failed();
    let mut seen = 0;
    let (result, after) = sync(&env, &m, &image_volume_pod(["IfNotPresent", "Always"])).await;
    // `kubelet_image_volume_mounted_errors_total`: both mounts of `app`.
    assert_eq!(failed() - before, 2.0);
    // Pulled as upstream would, then refused before CreateContainer.
    assert_eq!(pulled_images(&env), vec!["example.com/data:1"]);
    running(&after, "other");
    assert!(created_config(&env, "app").is_none());
    let app = result
        .sync_results
        .iter()
        .find(|r| r.target == "app")
        .unwrap();
    assert_eq!(app.error, Some(SyncErrorKind::CreateContainer), "{app:?}");
    let want = "ImageVolumeMountFailed: the container runtime containerd 1.6.20~ds1 cannot mount image volumes (containerd 2.1 or later can): container \"app\" mounts image volume \"present\" (spec.volumes[0].image), \"remote\" (spec.volumes[1].image)";
    assert_eq!(app.message, want);
    let events = events(&env, &mut seen);
    let event = format!("spec.containers{{app}} Warning Failed Error: {want}");
    assert!(events.contains(&event), "{events:#?}");
}

#[tokio::test]
async fn with_the_image_volume_gate_off_nothing_is_pulled_or_mounted_as_an_image() {
    let _gate = kubelet_container::gates::set_image_volume_during_test(false);
    let env = Env::new();
    let m = env.manager().await;
    let (result, after) = sync(&env, &m, &image_volume_pod(["IfNotPresent", "Always"])).await;
    assert!(pulled_images(&env).is_empty());
    running(&after, "other");
    // The volume manager keeps such a pod from syncing (no plugin); were it synced, the
    // volume has no host path.
    let app = result
        .sync_results
        .iter()
        .find(|r| r.target == "app")
        .unwrap();
    assert_eq!(
        app.error,
        Some(SyncErrorKind::CreateContainerConfig),
        "{app:?}"
    );
}

#[tokio::test]
async fn internal_lifecycle_hooks_run_around_create_and_remove() {
    use crate::internal_lifecycle::{LifecycleCall, RecordingLifecycle};
    let env = Env::new();
    let lifecycle = Arc::new(RecordingLifecycle {
        cpuset: Some("1".into()),
        ..RecordingLifecycle::default()
    });
    let m = env
        .manager()
        .await
        .with_internal_lifecycle(lifecycle.clone());
    let p = pod(vec![busybox("app")], vec![]);
    let (result, status) = sync(&env, &m, &p).await;
    assert_eq!(result.error(), None);
    let id = running(&status, "app").id.id;
    // `PreCreateContainer` changed the config CRI `CreateContainer` received.
    let cpusets: Vec<String> = env.runtime.with_state(|s| {
        s.containers
            .values()
            .map(|c| {
                c.config
                    .linux
                    .as_ref()
                    .and_then(|l| l.resources.as_ref())
                    .map(|r| r.cpuset_cpus.clone())
                    .unwrap_or_default()
            })
            .collect()
    });
    assert_eq!(cpusets, vec!["1".to_string()]);
    assert_eq!(
        lifecycle.calls(),
        vec![
            LifecycleCall::PreCreate("web".into(), "app".into()),
            LifecycleCall::PreStart("web".into(), "app".into(), id.clone()),
        ]
    );
    // Removing the pod's containers calls `PostStopContainer` first.
    let running_pod = m.get_pods(false).await.unwrap().remove(0);
    env.states.remove("uid-1");
    m.kill_pod(Some(&p), &running_pod, None).await.unwrap();
    assert_eq!(lifecycle.calls().last(), Some(&LifecycleCall::PostStop(id)));
}

#[tokio::test]
async fn failed_internal_hooks_fail_the_container_as_upstream() {
    use crate::internal_lifecycle::RecordingLifecycle;
    for (hook, kind, reason, message, created) in [
        (
            "pre_create",
            SyncErrorKind::PreCreateHook,
            "spec.containers{app} Warning Failed Internal PreCreateContainer hook failed: pre_create failed",
            "pre_create failed",
            0,
        ),
        (
            "pre_start",
            SyncErrorKind::PreStartHook,
            "spec.containers{app} Warning Failed Internal PreStartContainer hook failed: pre_start failed",
            "pre_start failed",
            1,
        ),
    ] {
        let env = Env::new();
        let lifecycle = Arc::new(RecordingLifecycle {
            fail: vec![hook],
            ..RecordingLifecycle::default()
        });
        let m = env.manager().await.with_internal_lifecycle(lifecycle);
        let p = pod(vec![busybox("app")], vec![]);
        let (result, _) = sync(&env, &m, &p).await;
        let failure = result.failures().next().unwrap();
        assert_eq!(
            (failure.error, failure.message.as_str()),
            (Some(kind), message)
        );
        assert_eq!(env.calls("CreateContainer"), created, "{hook}");
        assert_eq!(env.calls("StartContainer"), 0, "{hook}");
        let mut seen = 0;
        let got = events(&env, &mut seen);
        assert!(got.contains(&reason.to_string()), "{hook}: {got:?}");
    }
}

#[tokio::test]
async fn exclusive_cpus_leave_container_and_sandbox_without_cfs_quota() {
    use crate::internal_lifecycle::FakeExclusiveCpus;
    let quotas = |env: &Env| {
        env.runtime.with_state(|s| {
            let sandbox = s
                .sandboxes
                .values()
                .map(|p| {
                    p.config
                        .linux
                        .as_ref()
                        .and_then(|l| l.resources.as_ref())
                        .map_or(0, |r| r.cpu_quota)
                })
                .collect::<Vec<_>>();
            let containers = s
                .containers
                .values()
                .map(|c| {
                    c.config
                        .linux
                        .as_ref()
                        .and_then(|l| l.resources.as_ref())
                        .map_or(0, |r| r.cpu_quota)
                })
                .collect::<Vec<_>>();
            (sandbox, containers)
        })
    };
    let mut app = busybox("app");
    let limits: std::collections::BTreeMap<
        String,
        k8s_openapi::apimachinery::pkg::api::resource::Quantity,
    > = [(
        "cpu".to_string(),
        k8s_openapi::apimachinery::pkg::api::resource::Quantity("1".into()),
    )]
    .into_iter()
    .collect();
    app.resources = Some(k8s_openapi::api::core::v1::ResourceRequirements {
        limits: Some(limits),
        ..Default::default()
    });
    let p = pod(vec![app], vec![]);

    let env = Env::new();
    let m = env.manager().await;
    sync(&env, &m, &p).await;
    assert_eq!(quotas(&env), (vec![100_000], vec![100_000]));

    let env = Env::new();
    let m = env
        .manager()
        .await
        .with_cpu_allocation_reader(Arc::new(FakeExclusiveCpus(vec![(
            "uid-1".into(),
            "app".into(),
        )])));
    sync(&env, &m, &p).await;
    assert_eq!(quotas(&env), (vec![-1], vec![-1]));
}
