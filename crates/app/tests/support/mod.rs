//! [`TestKubelet`]: the kubelet of `kubelet_app::kubelet::run_kubelet`, built from the app's
//! own start-up steps, over the recording fake CRI (`kubelet_cri::fake`, served on a unix
//! socket in a temp dir), a [`FakeHostFs`] (no cgroups) and a temp root directory: the whole
//! pod lifecycle (sources, sync loop, pod workers, `SyncPod`, PLEG, housekeeping) without
//! root and without containerd.
//!
//! Static pods are the input (`write_manifest`, `remove_manifest`); the fake runtime's state
//! and call log, and the kubelet's status manager, are the output. `stop` + `start` gives a
//! new kubelet instance over the same runtime state (restart adoption).
//!
//! Use it from another test file of this crate with `mod support;`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};
use kubelet_app::kubelet::{Kubelet, KubeletDeps, RunningKubelet, run_kubelet};
use kubelet_app::startup;
use kubelet_cm::{CgroupVersion, FakeHostFs};
use kubelet_config::{Command, HostInfo, KubeletServer, RealFs};
use kubelet_cri::fake::{FakeContainer, FakeCriServer, FakePodSandbox, FakeRuntimeService};
use kubelet_cri::v1::{ContainerState, PodSandboxState};
use tokio_util::sync::CancellationToken;

/// The node name the test kubelet runs as (static pods are named `<pod>-<node>`).
pub const NODE: &str = "fake-node";

/// The CRI label holding a pod's UID (set on sandboxes and containers).
pub const POD_UID_LABEL: &str = "io.kubernetes.pod.uid";

/// How long `wait_for` waits before it fails the test with the CRI call log.
pub const WAIT: Duration = Duration::from_secs(30);

/// A kubelet over the fake CRI; see the module doc.
pub struct TestKubelet {
    pub dir: tempfile::TempDir,
    pub manifests: PathBuf,
    pub cri: FakeCriServer,
    pub host_fs: Arc<FakeHostFs>,
    pub server: KubeletServer,
    /// Every event the kubelet recorded.
    pub recorder: Arc<kubelet_container::FakeRecorder>,
    /// API server clients (API server mode); `None`: standalone.
    pub clients: Option<Arc<kubelet_client::KubeletClients>>,
    /// systemd's D-Bus API for the systemd cgroup driver; `None`: as on a host without
    /// systemd.
    pub systemd: Option<Arc<kubelet_systemd::Systemd>>,
    running: Option<Instance>,
}

struct Instance {
    shutdown: CancellationToken,
    fatal: CancellationToken,
    running: RunningKubelet,
}

impl TestKubelet {
    /// A kubelet (not started) whose `KubeletConfiguration` has `extra` appended.
    pub async fn new(extra: &str) -> TestKubelet {
        let dir = tempfile::tempdir().unwrap();
        let manifests = dir.path().join("manifests");
        let logs = dir.path().join("pod-logs");
        let root = dir.path().join("root");
        std::fs::create_dir_all(&manifests).unwrap();
        let cri = kubelet_cri::fake::serve_fake(&dir.path().join("cri.sock"))
            .await
            .unwrap();
        let config = dir.path().join("kubelet.yaml");
        std::fs::write(
            &config,
            format!(
                "apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  webhook:
    enabled: false
  anonymous:
    enabled: true
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: {endpoint}
staticPodPath: {manifests}
podLogsDir: {logs}
fileCheckFrequency: 1s
enableServer: false
readOnlyPort: 0
healthzPort: 0
{extra}",
                endpoint = cri.endpoint(),
                manifests = manifests.display(),
                logs = logs.display(),
            ),
        )
        .unwrap();
        let args: Vec<String> = [
            "--config",
            config.to_str().unwrap(),
            "--root-dir",
            root.to_str().unwrap(),
            "--hostname-override",
            NODE,
        ]
        .map(String::from)
        .to_vec();
        let server = match kubelet_config::load(&args, &RealFs, HostInfo { cgroup_v1: false }) {
            Ok(Command::Run(s)) => *s,
            Ok(other) => panic!("not a run command: {other:?}"),
            Err(e) => panic!("test kubelet configuration is invalid: {e}"),
        };
        TestKubelet {
            dir,
            manifests,
            cri,
            host_fs: Arc::new(fake_host()),
            server,
            recorder: Arc::new(kubelet_container::FakeRecorder::new()),
            clients: None,
            systemd: None,
            running: None,
        }
    }

    /// A started kubelet with the default test configuration.
    pub async fn started() -> TestKubelet {
        let mut k = Self::new("").await;
        k.start().await;
        k
    }

    /// Runs `check_startable` (over the fake host), the CRI pre-init, then `run_kubelet`: a
    /// new kubelet instance over the same fake runtime.
    pub async fn start(&mut self) {
        assert!(
            self.running.is_none(),
            "the test kubelet is already running"
        );
        let s = &self.server;
        let checked = kubelet_app::startable::check_startable(
            s,
            HostInfo { cgroup_v1: false },
            self.host_fs.as_ref(),
        )
        .unwrap();
        let runtime = startup::pre_init_runtime_service(s).await.unwrap();
        let shutdown = CancellationToken::new();
        let fatal = CancellationToken::new();
        let running = run_kubelet(KubeletDeps {
            server: s,
            node_name: checked.node_name,
            machine: checked.machine,
            node_config: checked.node_config,
            node_ips: checked.node_ips,
            cluster_dns: checked.cluster_dns,
            container_log_max_size: checked.container_log_max_size,
            serving_tls: checked.tls,
            cgroup_version: CgroupVersion::V2,
            runtime,
            systemd: self.systemd.clone(),
            configz: startup::init_configz(s),
            clients: self.clients.clone(),
            recorder: self.recorder.clone(),
            host_fs: self.host_fs.clone(),
            rlimits: Arc::new(kubelet_cm::FakeRlimits::default()),
            process_killer: Arc::new(kubelet_cm::FakeProcessKiller::default()),
            shutdown: shutdown.clone(),
            fatal: fatal.clone(),
        })
        .await
        .unwrap();
        self.running = Some(Instance {
            shutdown,
            fatal,
            running,
        });
    }

    /// Shuts the kubelet down (the containers keep running, as upstream) and waits for
    /// every one of its tasks to end.
    pub async fn stop(&mut self) {
        let Some(i) = self.running.take() else {
            panic!("the test kubelet is not running");
        };
        assert!(
            !i.fatal.is_cancelled(),
            "a critical kubelet task stopped before the shutdown"
        );
        i.shutdown.cancel();
        if tokio::time::timeout(WAIT, i.running.wait()).await.is_err() {
            panic!("kubelet tasks did not stop within {WAIT:?} of the shutdown");
        }
    }

    /// `stop` then `start`.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.start().await;
    }

    /// The running kubelet's state.
    pub fn kubelet(&self) -> &Arc<Kubelet> {
        match &self.running {
            Some(i) => &i.running.kubelet,
            None => panic!("the test kubelet is not running"),
        }
    }

    /// The fake runtime service behind the socket.
    pub fn runtime(&self) -> &FakeRuntimeService {
        &self.cri.runtime
    }

    /// Writes a static pod manifest atomically (a dot-file, then a rename).
    pub fn write_manifest(&self, file: &str, content: &str) {
        let tmp = self.manifests.join(format!(".{file}.tmp"));
        std::fs::write(&tmp, content).unwrap();
        std::fs::rename(&tmp, self.manifests.join(file)).unwrap();
    }

    /// Removes a static pod manifest.
    pub fn remove_manifest(&self, file: &str) {
        std::fs::remove_file(self.manifests.join(file)).unwrap();
    }

    /// The API status the kubelet computed for the pod `uid`.
    pub fn pod_status(&self, uid: &str) -> Option<PodStatus> {
        self.kubelet().status_manager.get_pod_status(uid)
    }

    /// The status of container `name` of pod `uid`.
    pub fn container_status(&self, uid: &str, name: &str) -> Option<ContainerStatus> {
        let status = self.pod_status(uid)?;
        status
            .init_container_statuses
            .into_iter()
            .flatten()
            .chain(status.container_statuses.into_iter().flatten())
            .find(|c| c.name == name)
    }

    /// The runtime's sandboxes of pod `uid`.
    pub fn sandboxes(&self, uid: &str) -> Vec<FakePodSandbox> {
        self.runtime()
            .sandboxes()
            .into_iter()
            .filter(|s| s.config.labels.get(POD_UID_LABEL).map(String::as_str) == Some(uid))
            .collect()
    }

    /// The runtime's containers of pod `uid`.
    pub fn containers(&self, uid: &str) -> Vec<FakeContainer> {
        self.runtime()
            .containers()
            .into_iter()
            .filter(|c| c.config.labels.get(POD_UID_LABEL).map(String::as_str) == Some(uid))
            .collect()
    }

    /// The running container `name` of pod `uid`, if there is one.
    pub fn running_container(&self, uid: &str, name: &str) -> Option<FakeContainer> {
        self.containers(uid)
            .into_iter()
            .find(|c| container_name(c) == name && c.is(ContainerState::ContainerRunning))
    }

    /// The pod's only ready sandbox, if there is one.
    pub fn ready_sandbox(&self, uid: &str) -> Option<FakePodSandbox> {
        let ready: Vec<FakePodSandbox> = self
            .sandboxes(uid)
            .into_iter()
            .filter(|s| s.status.state == PodSandboxState::SandboxReady as i32)
            .collect();
        assert!(ready.len() <= 1, "more than one ready sandbox: {ready:?}");
        ready.into_iter().next()
    }

    /// Makes the running container `name` of pod `uid` exit with `exit_code`.
    pub fn exit_container(&self, uid: &str, name: &str, exit_code: i32) {
        let c = self
            .running_container(uid, name)
            .unwrap_or_else(|| panic!("no running container {name} in pod {uid}"));
        self.runtime()
            .exit_container(&c.status.id, exit_code)
            .unwrap();
    }

    /// The CRI runtime calls recorded so far.
    pub fn calls(&self) -> Vec<String> {
        self.runtime().called()
    }

    /// Polls `f` every 50 ms until it returns `Some`, and fails the test with the CRI call
    /// log after [`WAIT`] or as soon as a critical kubelet task has stopped.
    pub async fn wait_for<T, F, Fut>(&self, what: &str, mut f: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let start = Instant::now();
        loop {
            if let Some(v) = f().await {
                return v;
            }
            if let Some(i) = &self.running {
                assert!(
                    !i.fatal.is_cancelled(),
                    "a critical kubelet task stopped while waiting for {what}"
                );
            }
            if start.elapsed() > WAIT {
                panic!(
                    "timed out after {WAIT:?} waiting for {what}; CRI calls (without the \
                     List*/*Status polls): {:?}",
                    self.calls()
                        .into_iter()
                        .filter(|c| !c.starts_with("List") && !c.ends_with("Status"))
                        .collect::<Vec<_>>()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// [`Self::wait_for`] with a synchronous condition.
    pub async fn wait_until<T>(&self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        self.wait_for(what, || std::future::ready(f())).await
    }

    /// Waits until the pod's container `name` runs and the kubelet reports it running.
    pub async fn wait_running(&self, uid: &str, name: &str) -> FakeContainer {
        self.wait_until(&format!("container {name} of {uid} running"), || {
            let c = self.running_container(uid, name)?;
            let reported = self.container_status(uid, name)?;
            let running = reported.state.as_ref()?.running.is_some();
            (running && reported.container_id.as_deref()?.ends_with(&c.status.id)).then_some(c)
        })
        .await
    }
}

impl Drop for TestKubelet {
    fn drop(&mut self) {
        if let Some(i) = &self.running {
            i.shutdown.cancel();
        }
    }
}

/// A host as the machine-info step reads it: 2 CPUs, 4 GiB.
fn fake_host() -> FakeHostFs {
    let fs = FakeHostFs::default();
    fs.add_file("/sys/devices/system/cpu/online", "0-1\n");
    fs.add_file("/proc/meminfo", "MemTotal:        4194304 kB\n");
    fs.add_file("/proc/sys/kernel/osrelease", "6.1.0-test\n");
    // No swap (`failSwapOn` is on by default).
    fs.add_file(
        "/proc/swaps",
        "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
    );
    // The kernel tunables as the kubelet wants them (`setupKernelTunables` reads them all).
    for (flag, value) in kubelet_cm::kernel_tunables::DESIRED_KERNEL_TUNABLES {
        fs.add_file(format!("/proc/sys/{flag}"), format!("{value}\n"));
    }
    fs
}

/// The container's name from its CRI metadata.
pub fn container_name(c: &FakeContainer) -> &str {
    c.status.metadata.as_ref().map_or("", |m| m.name.as_str())
}

/// The container's restart attempt from its CRI metadata.
pub fn attempt(c: &FakeContainer) -> u32 {
    c.status.metadata.as_ref().map_or(0, |m| m.attempt)
}

/// A static pod manifest with a fixed UID, one container `main` running `command`, and
/// `terminationGracePeriodSeconds: 7`; `extra_spec` is appended to the spec (two-space
/// indented YAML keys).
pub fn pod_manifest(name: &str, uid: &str, command: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  uid: {uid}
spec:
  terminationGracePeriodSeconds: 7
  containers:
  - name: main
    image: busybox:1.36
    command: [\"sh\", \"-c\", {command:?}]
{extra_spec}"
    )
}
