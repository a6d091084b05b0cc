//! A standalone kubelet-rs node on the private containerd of `hack/runtime-up.sh`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubelet_cri::RuntimeService;
use kubelet_cri::v1::{ContainerFilter, ContainerState, PodSandboxFilter};

use super::{Proc, free_port, http_get};

/// One kubelet per containerd at a time: a kubelet kills runtime pods it does not know.
static RUNTIME_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub async fn runtime_lock() -> tokio::sync::MutexGuard<'static, ()> {
    RUNTIME_LOCK.lock().await
}

pub struct Node {
    pub dir: tempfile::TempDir,
    pub manifests: PathBuf,
    pub logs: PathBuf,
    pub config: PathBuf,
    pub ro_port: u16,
    pub hz_port: u16,
    /// The secure port (127.0.0.1, self-signed certificate, anonymous + AlwaysAllow).
    pub secure_port: u16,
    pub name: String,
    pub endpoint: String,
    pub busybox: String,
    pub cri: Arc<kubelet_cri::RemoteRuntimeService>,
    pub proc: Option<Proc>,
    /// Extra environment of the kubelet process.
    pub env: Vec<(String, String)>,
}

impl Node {
    pub async fn new(name: &str) -> Node {
        Self::with_config(name, "").await
    }

    /// A node whose KubeletConfiguration has `extra` appended.
    pub async fn with_config(name: &str, extra: &str) -> Node {
        let env = kubelet_e2e::runtime_env::ensure().unwrap_or_else(|e| panic!("{e}"));
        let dir = tempfile::tempdir().unwrap();
        let manifests = dir.path().join("manifests");
        let logs = dir.path().join("pods");
        std::fs::create_dir_all(&manifests).unwrap();
        let (ro_port, hz_port, secure_port) = (free_port(), free_port(), free_port());
        let config = super::write(
            dir.path(),
            "kubelet.yaml",
            &super::standalone_config_with_port(
                &env.endpoint,
                hz_port,
                secure_port,
                &format!(
                    "staticPodPath: {}\npodLogsDir: {}\nreadOnlyPort: {ro_port}\nfileCheckFrequency: 20s\n{extra}",
                    manifests.display(),
                    logs.display()
                ),
            ),
        );
        let cri =
            kubelet_cri::RemoteRuntimeService::connect(&env.endpoint, Duration::from_secs(30))
                .await
                .unwrap();
        Node {
            dir,
            manifests,
            logs,
            config,
            ro_port,
            hz_port,
            secure_port,
            name: name.to_string(),
            endpoint: env.endpoint,
            busybox: env.busybox_image,
            cri: Arc::new(cri),
            proc: None,
            env: Vec::new(),
        }
    }

    pub async fn start(&mut self) {
        let root = self.dir.path().join("root");
        let mut p = Proc::spawn_env(
            self.dir.path(),
            &format!("kubelet-{}", Instant::now().elapsed().as_nanos()),
            &[
                "--config",
                self.config.to_str().unwrap(),
                "--root-dir",
                root.to_str().unwrap(),
                // The self-signed serving certificate under the node's directory, not
                // the default /var/lib/kubelet/pki.
                "--cert-dir",
                root.join("pki").to_str().unwrap(),
                "--hostname-override",
                &self.name,
                "--v=2",
            ],
            &self.env,
        );
        assert!(
            super::wait_healthy(&mut p, self.hz_port, Duration::from_secs(30)).await,
            "kubelet did not become healthy:\n{}",
            p.log()
        );
        self.proc = Some(p);
        self.wait_for_no_leftovers().await;
    }

    /// Containers of this node's pods left running by an earlier, failed test run are
    /// orphans to the new kubelet, which stops them; wait for that so that tests never
    /// mistake a leftover for a container of their own.
    async fn wait_for_no_leftovers(&self) {
        if std::fs::read_dir(&self.manifests).is_ok_and(|mut d| d.next().is_some()) {
            return; // a restarted kubelet with manifests: its containers are not leftovers
        }
        let suffix = format!("-{}", self.name);
        self.wait_for(
            "leftover containers stopped",
            Duration::from_secs(60),
            || async {
                let running = ContainerFilter {
                    state: Some(kubelet_cri::v1::ContainerStateValue {
                        state: ContainerState::ContainerRunning as i32,
                    }),
                    ..Default::default()
                };
                let list = self
                    .cri
                    .list_containers(Some(&running))
                    .await
                    .unwrap_or_else(|e| panic!("ListContainers on the test runtime: {e}"));
                let leftovers = list.iter().any(|c| {
                    c.labels
                        .get("io.kubernetes.pod.name")
                        .is_some_and(|n| n.ends_with(&suffix))
                });
                (!leftovers).then_some(())
            },
        )
        .await;
    }

    pub fn log(&self) -> String {
        self.proc.as_ref().map(|p| p.log()).unwrap_or_default()
    }

    /// Writes a manifest atomically (dot-file, then rename).
    pub fn write_manifest(&self, file: &str, content: &str) {
        let tmp = self.manifests.join(format!(".{file}.tmp"));
        std::fs::write(&tmp, content).unwrap();
        std::fs::rename(&tmp, self.manifests.join(file)).unwrap();
    }

    pub fn write_raw(&self, file: &str, content: &[u8]) {
        std::fs::write(self.manifests.join(file), content).unwrap();
    }

    pub fn remove_manifest(&self, file: &str) {
        std::fs::remove_file(self.manifests.join(file)).unwrap();
    }

    /// `/pods` of the read-only server. Anything but a `200` with a `PodList` fails the
    /// test: an unreachable server is not "no pods".
    pub fn pods(&self) -> Vec<serde_json::Value> {
        let answer = http_get(self.ro_port, "/pods");
        let Some((200, body)) = answer else {
            panic!(
                "GET /pods on the read-only port {}: {answer:?}; kubelet log:\n{}",
                self.ro_port,
                self.log()
            );
        };
        let v: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("/pods is not JSON ({e}): {body}"));
        match v["items"].as_array() {
            Some(items) => items.clone(),
            None => panic!("/pods is not a PodList: {body}"),
        }
    }

    /// The pod named `<name>-<node>` in `/pods`.
    pub fn pod(&self, name: &str) -> Option<serde_json::Value> {
        let full = format!("{name}-{}", self.name);
        self.pods()
            .into_iter()
            .find(|p| p["metadata"]["name"] == full.as_str())
    }

    pub fn phase(&self, name: &str) -> Option<String> {
        self.pod(name)
            .and_then(|p| p["status"]["phase"].as_str().map(str::to_string))
    }

    /// CRI label selector for the static pod `name` of this node.
    fn pod_selector(&self, name: &str) -> std::collections::HashMap<String, String> {
        [(
            "io.kubernetes.pod.name".to_string(),
            format!("{name}-{}", self.name),
        )]
        .into_iter()
        .collect()
    }

    /// CRI containers of the static pod `name` (label io.kubernetes.pod.name).
    pub async fn containers(&self, name: &str) -> Vec<kubelet_cri::v1::Container> {
        let filter = ContainerFilter {
            label_selector: self.pod_selector(name),
            ..Default::default()
        };
        self.cri.list_containers(Some(&filter)).await.unwrap()
    }

    pub async fn running(&self, name: &str) -> Vec<kubelet_cri::v1::Container> {
        self.containers(name)
            .await
            .into_iter()
            .filter(|c| c.state == ContainerState::ContainerRunning as i32)
            .collect()
    }

    pub async fn sandboxes(&self, name: &str) -> Vec<kubelet_cri::v1::PodSandbox> {
        let filter = PodSandboxFilter {
            label_selector: self.pod_selector(name),
            ..Default::default()
        };
        self.cri.list_pod_sandbox(Some(&filter)).await.unwrap()
    }

    /// Polls `f` every 100 ms until it returns `Some`, or panics with the kubelet log.
    pub async fn wait_for<T, F, Fut>(&self, what: &str, timeout: Duration, mut f: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let start = Instant::now();
        loop {
            if let Some(v) = f().await {
                return v;
            }
            if start.elapsed() > timeout {
                panic!("timed out waiting for {what}; kubelet log:\n{}", self.log());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Removes every manifest and waits until the runtime has none of this node's pods.
    pub async fn cleanup(&mut self) {
        for e in std::fs::read_dir(&self.manifests).unwrap().flatten() {
            std::fs::remove_file(e.path()).unwrap();
        }
        if self.proc.is_some() {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(60) {
                if self.pods().is_empty() && self.all_sandboxes().await.is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        if let Some(p) = &self.proc {
            p.signal(nix::sys::signal::Signal::SIGTERM);
        }
        if let Some(mut p) = self.proc.take() {
            p.wait_exit(Duration::from_secs(5)).await;
        }
    }

    /// Sandboxes of this node (any pod name ending in `-<node>`).
    pub async fn all_sandboxes(&self) -> Vec<kubelet_cri::v1::PodSandbox> {
        let suffix = format!("-{}", self.name);
        self.cri
            .list_pod_sandbox(None)
            .await
            .unwrap()
            .into_iter()
            .filter(|s| {
                s.metadata
                    .as_ref()
                    .is_some_and(|m| m.name.ends_with(&suffix))
            })
            .collect()
    }

    /// The host PID of a running container (from the verbose CRI status).
    pub async fn container_pid(&self, id: &str) -> i32 {
        let st = self.cri.container_status(id, true).await.unwrap();
        let info: serde_json::Value = serde_json::from_str(st.info.get("info").unwrap()).unwrap();
        info["pid"].as_i64().unwrap() as i32
    }

    pub fn logs_dir(&self) -> &Path {
        &self.logs
    }
}

/// A busybox pod manifest.
pub fn busybox_pod(name: &str, image: &str, restart: &str, command: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: {restart}
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: {image}
    imagePullPolicy: Never
    command: [\"sh\", \"-c\", {command:?}]
"
    )
}
