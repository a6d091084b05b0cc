//! The kubelet as the HTTP servers see it (`server.HostInterface`: [`KubeletHost`], with the
//! `kubelet_pods.go` streaming helpers `GetExec`, `GetAttach`, `GetPortForward`,
//! `RunInContainer`, `GetRunningPods`, `GetKubeletContainerLogs`), and the sync loop health
//! check behind `/healthz`'s `syncloop` (`kubelet.go` `syncLoopMonitor`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kubelet_cri::RuntimeService;
use kubelet_cri::v1::{
    AttachRequest, CheckpointContainerRequest, ExecRequest, PodSandboxFilter, PortForwardRequest,
};
use kubelet_server::{
    HostFuture, HostInterface, LogSink, LogStreamer, PodLogOptions, StreamOptions, StreamingError,
    StreamingErrorKind,
};

use super::Kubelet;
use super::container_logs::{log_options, stream_container_logs, validate_container_log_status};
use super::pod_manager::pod_uid;

/// How long the sync loop may stay silent before `/healthz` fails (upstream: 2× the resync
/// interval, at least 5 minutes).
pub fn sync_loop_timeout(resync: Duration) -> Duration {
    (resync * 2).max(Duration::from_secs(300))
}

/// Records when the sync loop last went round.
#[derive(Debug)]
pub struct SyncLoopMonitor {
    epoch: Instant,
    last_millis: AtomicU64,
    timeout: Duration,
}

impl SyncLoopMonitor {
    /// A monitor failing after `timeout` of silence.
    pub fn new(timeout: Duration) -> Self {
        SyncLoopMonitor {
            epoch: Instant::now(),
            last_millis: AtomicU64::new(0),
            timeout,
        }
    }

    /// The loop is alive now.
    pub fn touch(&self) {
        let ms = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_millis.store(ms, Ordering::Relaxed);
    }

    /// `Err` when the loop has not gone round within the timeout.
    pub fn check(&self) -> Result<(), String> {
        let last = Duration::from_millis(self.last_millis.load(Ordering::Relaxed));
        let silent = self.epoch.elapsed().saturating_sub(last);
        if silent > self.timeout {
            return Err(format!(
                "sync Loop took longer than expected: silent for {silent:?} (limit {:?})",
                self.timeout
            ));
        }
        Ok(())
    }
}

/// The kubelet as its HTTP servers see it: the kubelet plus the CRI runtime service the
/// streaming and log requests go to (upstream's `Kubelet` holds both).
pub struct KubeletHost {
    /// The kubelet.
    pub kubelet: Arc<Kubelet>,
    /// The CRI runtime service (`streamingRuntime`, `runner`, `ReadLogs`' runtime).
    pub runtime_service: Arc<dyn RuntimeService>,
    /// The summary provider (`StatsProvider`); `None` in tests without one.
    pub stats: Option<Arc<kubelet_stats::SummaryProvider>>,
}

/// `kubecontainer.BuildPodFullName`.
fn build_pod_full_name(name: &str, namespace: &str) -> String {
    format!("{name}_{namespace}")
}

/// `kubecontainer.Pod.ToAPIPod`: what `/runningpods/` lists.
pub fn running_pod_to_api(p: &kubelet_container::Pod) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.uid = Some(p.id.clone());
    pod.metadata.name = Some(p.name.clone());
    pod.metadata.namespace = Some(p.namespace.clone());
    pod.spec = Some(PodSpec {
        containers: p
            .containers
            .iter()
            .map(|c| Container {
                name: c.name.clone(),
                image: Some(c.image.clone()),
                ..Container::default()
            })
            .collect(),
        ..PodSpec::default()
    });
    pod
}

/// `streaming.WriteError`'s view of a CRI error.
fn streaming_error(e: &kubelet_cri::CriError) -> StreamingError {
    let kind = if e.is_not_found() {
        StreamingErrorKind::NotFound
    } else if e.is_resource_exhausted() {
        StreamingErrorKind::TooManyInFlight
    } else {
        StreamingErrorKind::Other
    };
    StreamingError {
        kind,
        message: e.to_string(),
    }
}

impl KubeletHost {
    /// A host over `kubelet` and its CRI runtime service.
    pub fn new(kubelet: Arc<Kubelet>, runtime_service: Arc<dyn RuntimeService>) -> Self {
        KubeletHost {
            kubelet,
            runtime_service,
            stats: None,
        }
    }

    /// The host with its summary provider.
    pub fn with_stats(mut self, stats: Arc<kubelet_stats::SummaryProvider>) -> Self {
        self.stats = Some(stats);
        self
    }

    /// `Pods.FindPod` over the runtime's running pods: by full name, else by (translated) UID.
    async fn find_running_pod(
        &self,
        pod_full_name: &str,
        pod_uid: &str,
    ) -> Result<Option<kubelet_container::Pod>, String> {
        let pods = self
            .kubelet
            .runtime
            .get_pods(false)
            .await
            .map_err(|e| e.to_string())?;
        let uid = self.kubelet.pod_manager.translate_pod_uid(pod_uid);
        Ok(pods.into_iter().find(|p| {
            if pod_full_name.is_empty() {
                p.id == uid
            } else {
                build_pod_full_name(&p.name, &p.namespace) == pod_full_name
            }
        }))
    }

    /// `findContainer`: the running container's runtime ID.
    async fn find_container(
        &self,
        pod_full_name: &str,
        pod_uid: &str,
        container: &str,
    ) -> Result<Option<String>, String> {
        Ok(self
            .find_running_pod(pod_full_name, pod_uid)
            .await?
            .and_then(|p| p.find_container_by_name(container).map(|c| c.id.id.clone())))
    }

    /// `getSandboxIDByPodUID`: the pod's sandboxes, newest first.
    async fn sandbox_ids_by_pod_uid(&self, uid: &str) -> Result<Vec<String>, String> {
        let filter = PodSandboxFilter {
            label_selector: [(POD_UID_LABEL.to_string(), uid.to_string())].into(),
            ..PodSandboxFilter::default()
        };
        let mut sandboxes = self
            .runtime_service
            .list_pod_sandbox(Some(&filter))
            .await
            .map_err(|e| e.to_string())?;
        sandboxes.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        Ok(sandboxes.into_iter().map(|s| s.id).collect())
    }
}

/// `getCheckpointsDir`: `<root-dir>/checkpoints` (made at start with the
/// `ContainerCheckpoint` gate, `setupDataDirs`).
pub fn checkpoints_dir(root_dir: &std::path::Path) -> std::path::PathBuf {
    root_dir.join("checkpoints")
}

/// `CheckpointContainer`'s archive: `checkpoint-<pod full name>-<container>-<time>.tar` in
/// the checkpoints directory, the time as Go's `time.RFC3339` writes the local time
/// (`Z` for UTC, else the offset).
fn checkpoint_location(
    root_dir: &std::path::Path,
    pod_full_name: &str,
    container: &str,
    now: &jiff::Zoned,
) -> std::path::PathBuf {
    let offset = now.offset();
    let zone = if offset.seconds() == 0 {
        "Z".to_string()
    } else {
        now.strftime("%:z").to_string()
    };
    let time = format!("{}{zone}", now.strftime("%Y-%m-%dT%H:%M:%S"));
    checkpoints_dir(root_dir).join(format!("checkpoint-{pod_full_name}-{container}-{time}.tar"))
}

/// `types.KubernetesPodUIDLabel`.
const POD_UID_LABEL: &str = "io.kubernetes.pod.uid";

impl HostInterface for KubeletHost {
    /// Upstream `GetPods`: the pod manager's pods, static pods with the status manager's
    /// status (a kubelet without an API server has no other place for it).
    fn get_pods(&self) -> Vec<Pod> {
        let k = &self.kubelet;
        let mut pods: Vec<Pod> = k
            .pod_manager
            .pods()
            .into_iter()
            .map(|p| {
                let mut pod = (*p).clone();
                if let Some(status) = k.status_manager.get_pod_status(pod_uid(&pod)) {
                    pod.status = Some(status);
                }
                pod
            })
            .collect();
        pods.sort_by(|a, b| {
            (&a.metadata.namespace, &a.metadata.name)
                .cmp(&(&b.metadata.namespace, &b.metadata.name))
        });
        pods
    }

    fn stats_provider(&self) -> Option<Arc<kubelet_stats::SummaryProvider>> {
        self.stats.clone()
    }

    fn sync_loop_health(&self) -> Result<(), String> {
        self.kubelet.sync_loop_monitor.check()?;
        self.kubelet.pleg.healthy().map_err(|e| e.to_string())
    }

    fn get_pod_by_name(&self, namespace: &str, name: &str) -> Option<Pod> {
        self.kubelet
            .pod_manager
            .get_pod_by_full_name(&build_pod_full_name(name, namespace))
            .map(|p| (*p).clone())
    }

    fn get_running_pods(&self) -> HostFuture<'_, Result<Vec<Pod>, String>> {
        Box::pin(async move {
            let pods = self
                .kubelet
                .runtime
                .get_pods(false)
                .await
                .map_err(|e| e.to_string())?;
            Ok(pods.iter().map(running_pod_to_api).collect())
        })
    }

    fn run_in_container<'a>(
        &'a self,
        pod_full_name: &'a str,
        pod_uid: &'a str,
        container: &'a str,
        cmd: &'a [String],
    ) -> HostFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async move {
            let id = self
                .find_container(pod_full_name, pod_uid, container)
                .await?
                .ok_or_else(|| format!("container not found ({container:?})"))?;
            let resp = self
                .runtime_service
                .exec_sync(&id, cmd, Duration::ZERO)
                .await
                .map_err(|e| e.to_string())?;
            if resp.exit_code != 0 {
                return Err(format!(
                    "command '{}' exited with {}: {}",
                    cmd.join(" "),
                    resp.exit_code,
                    String::from_utf8_lossy(&resp.stderr)
                ));
            }
            let mut out = resp.stdout;
            out.extend(resp.stderr);
            Ok(out)
        })
    }

    fn get_exec<'a>(
        &'a self,
        pod_full_name: &'a str,
        pod_uid: &'a str,
        container: &'a str,
        cmd: &'a [String],
        opts: StreamOptions,
    ) -> HostFuture<'a, Result<String, StreamingError>> {
        Box::pin(async move {
            let id = self
                .find_container(pod_full_name, pod_uid, container)
                .await
                .map_err(StreamingError::other)?
                .ok_or_else(|| {
                    StreamingError::other(format!("container not found ({container:?})"))
                })?;
            let req = ExecRequest {
                container_id: id,
                cmd: cmd.to_vec(),
                tty: opts.tty,
                stdin: opts.stdin,
                stdout: opts.stdout,
                stderr: opts.stderr,
            };
            let resp = self
                .runtime_service
                .exec(&req)
                .await
                .map_err(|e| streaming_error(&e))?;
            Ok(resp.url)
        })
    }

    fn get_attach<'a>(
        &'a self,
        pod_full_name: &'a str,
        pod_uid: &'a str,
        container: &'a str,
        opts: StreamOptions,
    ) -> HostFuture<'a, Result<String, StreamingError>> {
        Box::pin(async move {
            let not_found = || {
                StreamingError::other(format!(
                    "container {container} not found in pod {pod_full_name}"
                ))
            };
            let id = self
                .find_container(pod_full_name, pod_uid, container)
                .await
                .map_err(StreamingError::other)?
                .ok_or_else(not_found)?;
            // The TTY comes from the container's spec, not from the request.
            let pod = self
                .kubelet
                .pod_manager
                .get_pod_by_full_name(pod_full_name)
                .filter(|p| pod_uid.is_empty() || super::pod_manager::pod_uid(p) == pod_uid)
                .ok_or_else(|| StreamingError::other(format!("pod {pod_full_name} not found")))?;
            let spec = pod.spec.as_ref().ok_or_else(not_found)?;
            let c = spec
                .containers
                .iter()
                .chain(spec.init_containers.iter().flatten())
                .find(|c| c.name == container)
                .map(|c| c.tty.unwrap_or(false))
                .or_else(|| {
                    spec.ephemeral_containers
                        .iter()
                        .flatten()
                        .find(|c| c.name == container)
                        .map(|c| c.tty.unwrap_or(false))
                })
                .ok_or_else(not_found)?;
            let req = AttachRequest {
                container_id: id,
                stdin: opts.stdin,
                tty: c,
                stdout: opts.stdout,
                stderr: opts.stderr,
            };
            let resp = self
                .runtime_service
                .attach(&req)
                .await
                .map_err(|e| streaming_error(&e))?;
            Ok(resp.url)
        })
    }

    fn get_port_forward<'a>(
        &'a self,
        pod_name: &'a str,
        pod_namespace: &'a str,
        pod_uid: &'a str,
        ports: &'a [i32],
    ) -> HostFuture<'a, Result<String, StreamingError>> {
        Box::pin(async move {
            let full_name = build_pod_full_name(pod_name, pod_namespace);
            let pod = self
                .find_running_pod(&full_name, pod_uid)
                .await
                .map_err(StreamingError::other)?
                .ok_or_else(|| StreamingError::other(format!("pod not found ({full_name:?})")))?;
            let desc = format!("{pod_name:?}/{pod_namespace:?}(uid={pod_uid:?})");
            let uid = self.kubelet.pod_manager.translate_pod_uid(pod_uid);
            let uid = if uid.is_empty() { pod.id } else { uid };
            let sandbox = self
                .sandbox_ids_by_pod_uid(&uid)
                .await
                .map_err(|e| {
                    StreamingError::other(format!("failed to find sandboxID for pod {desc}: {e}"))
                })?
                .into_iter()
                .next()
                .ok_or_else(|| {
                    StreamingError::other(format!("failed to find sandboxID for pod {desc}"))
                })?;
            let req = PortForwardRequest {
                pod_sandbox_id: sandbox,
                port: ports.to_vec(),
            };
            let resp = self
                .runtime_service
                .port_forward(&req)
                .await
                .map_err(|e| streaming_error(&e))?;
            Ok(resp.url)
        })
    }

    fn checkpoint_container<'a>(
        &'a self,
        pod_uid: &'a str,
        pod_full_name: &'a str,
        container: &'a str,
        timeout: Option<i64>,
    ) -> HostFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let id = self
                .find_container(pod_full_name, pod_uid, container)
                .await?
                .ok_or_else(|| format!("container {container} not found"))?;
            let location = checkpoint_location(
                &self.kubelet.root_dir,
                pod_full_name,
                container,
                &jiff::Zoned::now(),
            );
            let req = CheckpointContainerRequest {
                container_id: id,
                location: location.to_string_lossy().into_owned(),
                timeout: timeout.unwrap_or(0),
            };
            self.runtime_service
                .checkpoint_container(&req)
                .await
                .map_err(|e| e.upstream_message())?;
            Ok(req.location)
        })
    }

    fn get_kubelet_container_logs<'a>(
        &'a self,
        pod_full_name: &'a str,
        container: &'a str,
        opts: &'a PodLogOptions,
        sink: LogSink,
    ) -> HostFuture<'a, Result<LogStreamer, String>> {
        Box::pin(async move {
            let k = &self.kubelet;
            let pod = k
                .pod_manager
                .get_pod_by_full_name(pod_full_name)
                .ok_or_else(|| {
                    let name = pod_full_name
                        .rsplit_once('_')
                        .map_or(pod_full_name, |(n, _)| n);
                    format!("pod {name:?} cannot be found - no logs available")
                })?;
            // Pod workers write status to the status manager; a pod without one (the
            // kubelet just started) has the status its source gave.
            let status = k
                .status_manager
                .get_pod_status(pod_uid(&pod))
                .or_else(|| pod.status.clone())
                .unwrap_or_default();
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            let id = validate_container_log_status(name, &status, container, opts.previous)?;
            Ok(stream_container_logs(
                self.runtime_service.clone(),
                id,
                log_options(opts, jiff::Timestamp::now()),
                sink,
            ))
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn running_pods_become_api_pods() {
        let running = kubelet_container::Pod {
            id: "uid-1".into(),
            name: "web".into(),
            namespace: "default".into(),
            containers: vec![kubelet_container::Container {
                name: "app".into(),
                image: "busybox:1.36".into(),
                ..kubelet_container::Container::default()
            }],
            ..kubelet_container::Pod::default()
        };
        let api = running_pod_to_api(&running);
        assert_eq!(api.metadata.uid.as_deref(), Some("uid-1"));
        assert_eq!(api.metadata.name.as_deref(), Some("web"));
        assert_eq!(api.metadata.namespace.as_deref(), Some("default"));
        let c = &api.spec.unwrap().containers[0];
        assert_eq!(
            (c.name.as_str(), c.image.as_deref()),
            ("app", Some("busybox:1.36"))
        );
    }

    #[test]
    fn monitor_fails_after_silence() {
        let m = SyncLoopMonitor::new(Duration::from_millis(0));
        m.touch();
        std::thread::sleep(Duration::from_millis(5));
        assert!(m.check().is_err());
        let m = SyncLoopMonitor::new(Duration::from_secs(60));
        m.touch();
        assert!(m.check().is_ok());
        assert_eq!(
            sync_loop_timeout(Duration::from_secs(60)),
            Duration::from_secs(300)
        );
        assert_eq!(
            sync_loop_timeout(Duration::from_secs(600)),
            Duration::from_secs(1200)
        );
    }
}
