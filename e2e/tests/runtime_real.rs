//! kubelet-runtime's `KubeGenericRuntimeManager` against the real private containerd of
//! `hack/runtime-up.sh`: a busybox pod is synced to Running, its CRI log lands at
//! `<podLogsDir>/<ns>_<name>_<uid>/<container>/<restartCount>.log`, a container killed from
//! outside is restarted by the next sync with restart count 1, and `kill_pod` of a removed
//! pod leaves nothing behind. A `subPath` that is, or is swapped into, a symlink out of its
//! volume is never mounted (CVE-2017-1002101, CVE-2021-25741).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_container::runtime::PodStateProvider;
use kubelet_container::{Backoff, ContainerState, PodStatus, RealClock, Runtime};
use kubelet_cri::v1::{ContainerFilter, PodSandboxFilter};
use kubelet_cri::{RuntimeService, pre_init_runtime_service};
use kubelet_e2e::runtime_env::{self, RuntimeEnv};
use kubelet_runtime::actions::NoProbes;
use kubelet_runtime::cgroup::{CgroupDriver, PodCgroupNamer};
use kubelet_runtime::dns::DnsConfigurer;
use kubelet_runtime::env::{NoEnvObjects, NodeEnvInfo};
use kubelet_runtime::helper::KubeletRuntimeHelper;
use kubelet_runtime::logs::{ContainerLogManager, LogRotatePolicy};
use kubelet_runtime::manager::{
    KubeGenericRuntimeManager, RuntimeManagerConfig, RuntimeManagerDeps,
};
use kubelet_runtime::os::{OsInterface, RealOs};
use kubelet_runtime::volumes::LocalVolumes;

const TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Default)]
struct Removed(Mutex<HashSet<String>>);

impl PodStateProvider for Removed {
    fn is_pod_termination_requested(&self, uid: &str) -> bool {
        self.0.lock().unwrap().contains(uid)
    }
    fn should_pod_content_be_removed(&self, uid: &str) -> bool {
        self.is_pod_termination_requested(uid)
    }
    fn should_pod_runtime_be_removed(&self, uid: &str) -> bool {
        self.is_pod_termination_requested(uid)
    }
}

struct Harness {
    _dir: tempfile::TempDir,
    root: PathBuf,
    pod_logs: PathBuf,
    runtime: Arc<dyn RuntimeService>,
    manager: KubeGenericRuntimeManager,
    removed: Arc<Removed>,
    recorder: Arc<kubelet_container::events::FakeRecorder>,
}

async fn harness(env: &RuntimeEnv) -> Harness {
    let (rt, img, _) = pre_init_runtime_service(&env.endpoint, "", TIMEOUT)
        .await
        .unwrap_or_else(|e| panic!("pre-init against {}: {e}", env.endpoint));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("kubelet");
    let dir_root = root.clone();
    let pod_logs = dir.path().join("pods");
    let os: Arc<dyn OsInterface> = Arc::new(RealOs);
    let runtime: Arc<dyn RuntimeService> = Arc::new(rt);
    let helper = KubeletRuntimeHelper {
        os: os.clone(),
        root_dir: root.clone(),
        dns: DnsConfigurer::new(os.clone(), None, vec![], "", None),
        cgroups: PodCgroupNamer::new(CgroupDriver::Cgroupfs, "/krs-e2e-runtime", true),
        node: NodeEnvInfo::default(),
        env_objects: Arc::new(NoEnvObjects),
        volumes: Arc::new(LocalVolumes::new(os.clone(), root.clone())),
        node_hosts_file: "/etc/hosts".into(),
        env_files: true,
        hostname_override: true,
    };
    let removed = Arc::new(Removed::default());
    let logs = ContainerLogManager::new(
        runtime.clone(),
        os.clone(),
        Arc::new(RealClock),
        LogRotatePolicy::new(10 << 20, 5).unwrap(),
    );
    let config = RuntimeManagerConfig {
        root_dir: root,
        pod_logs_dir: pod_logs.clone(),
        legacy_container_logs_dir: dir.path().join("containers"),
        ..RuntimeManagerConfig::default()
    };
    let recorder = Arc::new(kubelet_container::events::FakeRecorder::new());
    let deps = RuntimeManagerDeps {
        runtime: runtime.clone(),
        image: Arc::new(img),
        helper: Arc::new(helper),
        os,
        probes: Arc::new(NoProbes),
        pod_state: removed.clone(),
        clock: Arc::new(RealClock),
        recorder: recorder.clone(),
    };
    let manager = KubeGenericRuntimeManager::new(deps, config, logs)
        .await
        .unwrap();
    Harness {
        _dir: dir,
        root: dir_root,
        pod_logs,
        runtime,
        manager,
        removed,
        recorder,
    }
}

fn busybox_pod(env: &RuntimeEnv, uid: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("krs-runtime-e2e".into()),
            namespace: Some("default".into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some(env.busybox_image.clone()),
                image_pull_policy: Some("Never".into()),
                command: Some(vec![
                    "sh".into(),
                    "-c".into(),
                    "echo hello-from-$(POD_NAME); sleep 3600".into(),
                ]),
                env: Some(vec![k8s_openapi::api::core::v1::EnvVar {
                    name: "POD_NAME".into(),
                    value: Some("krs".into()),
                    value_from: None,
                }]),
                termination_message_path: Some("/dev/termination-log".into()),
                ..Container::default()
            }],
            restart_policy: Some("Always".into()),
            termination_grace_period_seconds: Some(1),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

async fn status(h: &Harness, uid: &str) -> PodStatus {
    h.manager
        .get_pod_status(uid, "krs-runtime-e2e", "default")
        .await
        .unwrap()
}

/// Marks pod `uid` removed (so its content may go) and returns it as the runtime runs it.
async fn mark_removed(h: &Harness, uid: &str) -> kubelet_container::Pod {
    h.removed.0.lock().unwrap().insert(uid.to_string());
    h.manager
        .get_pods(false)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.id == uid)
        .expect("running pod")
}

async fn wait_for_file_containing(path: &Path, needle: &str) -> String {
    for _ in 0..100 {
        if let Ok(s) = std::fs::read_to_string(path)
            && s.contains(needle)
        {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{} never contained {needle:?}", path.display());
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test]
async fn busybox_pod_runs_restarts_and_is_removed() {
    let env = runtime_env::ensure().unwrap_or_else(|e| panic!("{e}"));
    let h = harness(&env).await;
    let uid = format!("krs-e2e-{}", std::process::id());
    let pod = busybox_pod(&env, &uid);
    let backoff = Backoff::container_default();

    // 1. Sync a new pod to Running.
    let result = h
        .manager
        .sync_pod(&pod, &status(&h, &uid).await, &[], &backoff)
        .await;
    assert_eq!(result.error(), None, "{result:?}");
    let st = status(&h, &uid).await;
    let app = st
        .find_container_status_by_name("app")
        .expect("app status")
        .clone();
    assert_eq!(app.state, ContainerState::Running, "{st:?}");
    assert_eq!(app.restart_count, 0);
    assert!(
        !st.ips.is_empty(),
        "the CNI bridge gave the pod an IP: {st:?}"
    );
    assert!(
        st.ips[0].starts_with("198.18."),
        "pod IP {} outside the test subnet",
        st.ips[0]
    );

    // 2. The CRI log is at <podLogsDir>/<ns>_<name>_<uid>/<container>/<restartCount>.log.
    let log_dir = h.pod_logs.join(format!("default_krs-runtime-e2e_{uid}"));
    let log = wait_for_file_containing(&log_dir.join("app/0.log"), "hello-from-krs").await;
    assert!(log.contains(" stdout "), "CRI log format: {log:?}");

    // 3. Kill the container from outside the kubelet; the next sync restarts it.
    let killed = env
        .ctr()
        .args(["tasks", "kill", "--signal", "SIGKILL", &app.id.id])
        .output()
        .unwrap();
    assert!(
        killed.status.success(),
        "ctr tasks kill: {}",
        String::from_utf8_lossy(&killed.stderr)
    );
    let mut exited = None;
    for _ in 0..100 {
        let st = status(&h, &uid).await;
        if st
            .find_container_status_by_name("app")
            .is_some_and(|s| s.state == ContainerState::Exited)
        {
            exited = Some(st);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let exited = exited.expect("container never exited after SIGKILL");
    let result = h.manager.sync_pod(&pod, &exited, &[], &backoff).await;
    assert_eq!(result.error(), None, "{result:?}");
    let st = status(&h, &uid).await;
    let app2 = st.find_container_status_by_name("app").unwrap().clone();
    assert_eq!(
        (app2.state, app2.restart_count),
        (ContainerState::Running, 1),
        "{st:?}"
    );
    assert_ne!(app2.id, app.id);
    wait_for_file_containing(&log_dir.join("app/1.log"), "hello-from-krs").await;

    // 4. A steady-state sync changes nothing.
    let result = h.manager.sync_pod(&pod, &st, &[], &backoff).await;
    assert!(
        result
            .sync_results
            .iter()
            .all(|r| r.action != kubelet_container::SyncAction::StartContainer),
        "{result:?}"
    );

    // 5. kill_pod of a removed pod stops and removes containers, sandbox and logs.
    let running = mark_removed(&h, &uid).await;
    let started = std::time::Instant::now();
    h.manager
        .kill_pod(Some(&pod), &running, None)
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "graceful stop took {:?}",
        started.elapsed()
    );
    let selector = [("io.kubernetes.pod.uid".to_string(), uid.clone())].into();
    let sandboxes = h
        .runtime
        .list_pod_sandbox(Some(&PodSandboxFilter {
            label_selector: selector,
            ..Default::default()
        }))
        .await
        .unwrap();
    assert!(sandboxes.is_empty(), "sandboxes left: {sandboxes:?}");
    let selector = [("io.kubernetes.pod.uid".to_string(), uid.clone())].into();
    let containers = h
        .runtime
        .list_containers(Some(&ContainerFilter {
            label_selector: selector,
            ..Default::default()
        }))
        .await
        .unwrap();
    assert!(containers.is_empty(), "containers left: {containers:?}");
    assert!(
        !log_dir.exists(),
        "pod log directory left: {}",
        log_dir.display()
    );
    // 6. Upstream's events, in order, about container `app`.
    let image = &env.busybox_image;
    let present = format!(
        "Normal Pulled Container image {image:?} already present on machine and can be accessed by the pod"
    );
    let started = [
        present.as_str(),
        "Normal Created Container created",
        "Normal Started Container started",
    ];
    let expected: Vec<&str> = started
        .iter()
        .chain(started.iter())
        .copied()
        .chain(["Normal Killing Stopping container app"])
        .collect();
    assert_eq!(h.recorder.lines(), expected);
    assert!(
        h.recorder
            .events()
            .iter()
            .all(|e| e.object.field_path.as_deref() == Some("spec.containers{app}"))
    );
}

/// The pod of the subPath race: container `swapper` keeps turning `/vol/x` of emptyDir `vol`
/// into a symlink to `outside` (a host directory) and back into a directory; `victim`
/// mounts subPath `x` at `/mnt` and says whether it sees the host's file; `static` mounts
/// subPath `static-link`, a symlink to `outside` planted before the pod starts.
fn subpath_race_pod(env: &RuntimeEnv, uid: &str, outside: &Path) -> Pod {
    use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, Volume, VolumeMount};
    let mount = |path: &str, sub: Option<&str>| VolumeMount {
        name: "vol".into(),
        mount_path: path.into(),
        sub_path: sub.map(Into::into),
        ..VolumeMount::default()
    };
    let container = |name: &str, script: String, mounts: Vec<VolumeMount>| Container {
        name: name.into(),
        image: Some(env.busybox_image.clone()),
        image_pull_policy: Some("Never".into()),
        command: Some(vec!["sh".into(), "-c".into(), script]),
        volume_mounts: Some(mounts),
        ..Container::default()
    };
    let o = outside.display();
    let swap = format!(
        "while true; do mkdir -p /vol/d; rm -rf /vol/x; ln -s {o} /vol/x; rm -rf /vol/x; mv /vol/d /vol/x; mv /vol/x /vol/d; done"
    );
    let look = "if [ -e /mnt/host-secret ]; then echo ESCAPED; else echo INSIDE; fi".to_string();
    let mut pod = busybox_pod(env, uid);
    let spec = pod.spec.as_mut().unwrap();
    spec.containers = vec![
        container("swapper", swap, vec![mount("/vol", None)]),
        container("victim", look.clone(), vec![mount("/mnt", Some("x"))]),
        container("static", look, vec![mount("/mnt", Some("static-link"))]),
    ];
    spec.volumes = Some(vec![Volume {
        name: "vol".into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    }]);
    pod
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test]
async fn sub_path_symlinks_out_of_the_volume_are_refused_even_when_swapped_in() {
    let env = runtime_env::ensure().unwrap_or_else(|e| panic!("{e}"));
    let h = harness(&env).await;
    let uid = format!("krs-e2e-subpath-{}", std::process::id());
    let outside = h.root.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("host-secret"), b"host").unwrap();
    let volume = h
        .root
        .join("pods")
        .join(&uid)
        .join("volumes/kubernetes.io~empty-dir/vol");
    std::fs::create_dir_all(&volume).unwrap();
    std::os::unix::fs::symlink(&outside, volume.join("static-link")).unwrap();
    let pod = subpath_race_pod(&env, &uid, &outside);

    let (mut refused, mut started, mut vanished) = (0, 0, 0);
    for round in 0..40 {
        // A fresh back-off each round: every exited victim is recreated at once, so each
        // round is one more subPath mount under the swap.
        let backoff = Backoff::container_default();
        let result = h
            .manager
            .sync_pod(&pod, &status(&h, &uid).await, &[], &backoff)
            .await;
        for r in result.failures() {
            let msg = format!("{r:?}");
            if r.target == "victim"
                && r.error == Some(kubelet_container::SyncErrorKind::RunContainer)
            {
                // The directory that was mounted was deleted by the swapper before the
                // runtime started the container: refused by the kernel, as upstream.
                assert!(
                    r.message.contains("no such file or directory"),
                    "round {round}: {msg}"
                );
                vanished += 1;
                continue;
            }
            assert_eq!(
                r.error,
                Some(kubelet_container::SyncErrorKind::CreateContainerConfig),
                "round {round}: {msg}"
            );
            if r.target == "victim" {
                assert!(
                    r.message
                        == "failed to prepare subPath for volumeMount \"vol\" of container \"victim\""
                        || r.message
                            == "failed to create subPath directory for volumeMount \"vol\" of container \"victim\"",
                    "round {round}: {msg}"
                );
                refused += 1;
            } else {
                assert_eq!(r.target, "static", "round {round}: {msg}");
                assert_eq!(
                    r.message,
                    "failed to prepare subPath for volumeMount \"vol\" of container \"static\"",
                    "round {round}"
                );
            }
        }
        if result.sync_results.iter().any(|r| {
            r.target == "victim"
                && r.error.is_none()
                && r.action == kubelet_container::SyncAction::StartContainer
        }) {
            started += 1;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let st = status(&h, &uid).await;
    assert!(
        st.find_container_status_by_name("static").is_none(),
        "the static symlink was never mounted: {st:?}"
    );
    // Every victim that ran saw the volume, never the host directory.
    let log_dir = h
        .pod_logs
        .join(format!("default_krs-runtime-e2e_{uid}"))
        .join("victim");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut inside = 0;
    for entry in std::fs::read_dir(&log_dir).unwrap() {
        let log = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!log.contains("ESCAPED"), "a victim saw the host: {log}");
        inside += log.matches("INSIDE").count();
    }
    eprintln!(
        "subPath race: {started} victims started ({inside} logged INSIDE), {refused} refused, {vanished} lost their directory"
    );
    assert!(started > 0 && inside > 0, "no victim ever ran");
    assert!(refused > 0, "the symlink was never caught");

    let running = mark_removed(&h, &uid).await;
    h.manager
        .kill_pod(Some(&pod), &running, Some(1))
        .await
        .unwrap();
    let pod_dir = h.root.join("pods").join(&uid);
    let errors = kubelet_runtime::volumes::tear_down_local_mounts(&RealOs, &pod_dir);
    assert!(errors.is_empty(), "{errors:?}");
    assert!(!pod_dir.join("volume-subpaths").exists());
    assert_eq!(std::fs::read(outside.join("host-secret")).unwrap(), b"host");
}

/// RuntimeClasses as the API-backed manager's lister would hold them.
struct Classes;

impl kubelet_runtime::runtimeclass::RuntimeHandlerResolver for Classes {
    fn lookup_runtime_handler(
        &self,
        name: Option<&str>,
    ) -> Result<String, kubelet_runtime::runtimeclass::RuntimeClassError> {
        Ok(match name {
            Some("std") => "runc".into(),
            Some("unconfigured") => "krs-no-such-handler".into(),
            _ => String::new(),
        })
    }
}

async fn sandboxes_of(h: &Harness, uid: &str) -> Vec<kubelet_cri::v1::PodSandbox> {
    let selector = [("io.kubernetes.pod.uid".to_string(), uid.to_string())].into();
    h.runtime
        .list_pod_sandbox(Some(&PodSandboxFilter {
            label_selector: selector,
            ..Default::default()
        }))
        .await
        .unwrap()
}

/// The real containerd (1.6: its `Status` lists no runtime handlers) with a RuntimeClass
/// handler it has (`runc`), one it lacks, and a `hostUsers: false` pod, which it cannot
/// run: upstream's errors, and no sandbox for the failed pods.
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test]
async fn runtime_class_handlers_and_host_users_on_the_real_runtime() {
    let env = runtime_env::ensure().unwrap_or_else(|e| panic!("{e}"));
    let mut h = harness(&env).await;
    h.manager = h.manager.with_runtime_class_manager(Arc::new(Classes));
    let backoff = Backoff::container_default();
    let base = format!("krs-e2e-rc-{}", std::process::id());

    // A handler the runtime has: the sandbox runs with it.
    let uid = format!("{base}-std");
    let mut pod = busybox_pod(&env, &uid);
    pod.spec.as_mut().unwrap().runtime_class_name = Some("std".into());
    let result = h
        .manager
        .sync_pod(&pod, &status(&h, &uid).await, &[], &backoff)
        .await;
    assert_eq!(result.error(), None, "{result:?}");
    let sandboxes = sandboxes_of(&h, &uid).await;
    assert_eq!(sandboxes.len(), 1, "{sandboxes:?}");
    assert_eq!(sandboxes[0].runtime_handler, "runc");
    let running = mark_removed(&h, &uid).await;
    h.manager
        .kill_pod(Some(&pod), &running, None)
        .await
        .unwrap();

    // A handler the runtime lacks, then `hostUsers: false`: no sandbox, upstream's events.
    let support = h.runtime.status(false).await.unwrap();
    assert!(
        support.runtime_handlers.is_empty(),
        "this containerd lists runtime handlers now: {:?}",
        support.runtime_handlers
    );
    for (suffix, class, host_users, want) in [
        ("bad", Some("unconfigured"), None, "krs-no-such-handler"),
        (
            "userns",
            None,
            Some(false),
            "can't set `spec.hostUsers: false`, runtime does not support user namespaces",
        ),
    ] {
        let uid = format!("{base}-{suffix}");
        let mut pod = busybox_pod(&env, &uid);
        let spec = pod.spec.as_mut().unwrap();
        spec.runtime_class_name = class.map(Into::into);
        spec.host_users = host_users;
        let before = h.recorder.events().len();
        let result = h
            .manager
            .sync_pod(&pod, &status(&h, &uid).await, &[], &backoff)
            .await;
        assert!(result.error().is_some(), "{suffix}: {result:?}");
        let events = h.recorder.events();
        let failed: Vec<_> = events[before..]
            .iter()
            .filter(|e| e.reason == "FailedCreatePodSandBox")
            .collect();
        assert_eq!(failed.len(), 1, "{suffix}: {events:?}");
        assert!(
            failed[0]
                .message
                .starts_with("Failed to create pod sandbox: ")
                && failed[0].message.contains(want),
            "{suffix}: {}",
            failed[0].message
        );
        assert!(sandboxes_of(&h, &uid).await.is_empty(), "{suffix}");
    }
}
