//! `KubeGenericRuntimeManager`: the kubelet's [`Runtime`] on top of CRI (upstream
//! `kuberuntime_manager.go`). Sync, kill and GC live in `sync.rs`, `kill.rs` and `gc.rs`;
//! this file holds construction, listing (`GetPods`) and status (`GetPodStatus`).
//!
//! All state is read back from the runtime: which pod a container belongs to from labels,
//! its spec hash and restart count from annotations. A restarted kubelet therefore adopts
//! running containers instead of restarting them.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Pod as ApiPod, Secret};
use kubelet_container::runtime::PodStateProvider;
use kubelet_container::{
    Backoff, Clock, Container, ContainerGcPolicy, ContainerId, ContainerState, Pod, PodStatus,
    PodSyncResult, Runtime, RuntimeCondition, RuntimeError, RuntimeStatus, RuntimeVersion,
    SandboxState, SandboxStatus,
};
use kubelet_cri::v1::{
    ContainerFilter, ContainerStateValue, NamespaceMode, PodSandboxFilter, PodSandboxState,
    PodSandboxStateValue, PodSandboxStatus,
};
use kubelet_cri::{CriError, ImageService, RuntimeService};

use crate::actions::ProbeResults;
use crate::container::{
    pod_uid_selector, sort_newest_first, to_kube_container_state, to_kube_container_status,
};
use crate::helper::RuntimeHelper;
use crate::image::{ImageManager, PullConcurrency};
use crate::labels::{container_info_from_annotations, container_info_from_labels};
use crate::logs::ContainerLogManager;
use crate::os::OsInterface;
use crate::resources::ResourceSettings;

/// CRI API version the kubelet speaks.
pub const KUBE_RUNTIME_API_VERSION: &str = "0.1.0";

/// Settings from `KubeletConfiguration` the runtime manager needs.
#[derive(Clone, Debug)]
pub struct RuntimeManagerConfig {
    /// `--root-dir` (`/var/lib/kubelet`); pod directories and seccomp profiles live here.
    pub root_dir: PathBuf,
    /// `podLogsDir` (`/var/log/pods`).
    pub pod_logs_dir: PathBuf,
    /// Directory of the legacy `/var/log/containers` symlinks.
    pub legacy_container_logs_dir: PathBuf,
    /// Resource translation settings (`cpuCFSQuota`, `cpuCFSQuotaPeriod`, cgroup version, ...).
    pub resources: ResourceSettings,
    /// `seccompDefault`.
    pub seccomp_default: bool,
    /// `serializeImagePulls` / `maxParallelImagePulls`.
    pub pull_concurrency: PullConcurrency,
}

impl Default for RuntimeManagerConfig {
    fn default() -> Self {
        Self {
            root_dir: PathBuf::from("/var/lib/kubelet"),
            pod_logs_dir: PathBuf::from("/var/log/pods"),
            legacy_container_logs_dir: PathBuf::from("/var/log/containers"),
            resources: ResourceSettings::default(),
            seccomp_default: false,
            pull_concurrency: PullConcurrency::Serial,
        }
    }
}

/// The collaborators of the runtime manager.
pub struct RuntimeManagerDeps {
    /// CRI runtime service.
    pub runtime: Arc<dyn RuntimeService>,
    /// CRI image service.
    pub image: Arc<dyn ImageService>,
    /// Kubelet-side helper (env, mounts, DNS, cgroups).
    pub helper: Arc<dyn RuntimeHelper>,
    /// Filesystem.
    pub os: Arc<dyn OsInterface>,
    /// Liveness/startup probe results.
    pub probes: Arc<dyn ProbeResults>,
    /// Whether pods are terminated/deleted (GC and removal decisions).
    pub pod_state: Arc<dyn PodStateProvider>,
    /// Clock for back-offs and log rotation.
    pub clock: Arc<dyn Clock>,
}

/// The kubelet's CRI-backed [`Runtime`] (upstream `kubeGenericRuntimeManager`).
pub struct KubeGenericRuntimeManager {
    pub(crate) runtime_name: String,
    pub(crate) runtime: Arc<dyn RuntimeService>,
    pub(crate) images: ImageManager,
    pub(crate) helper: Arc<dyn RuntimeHelper>,
    pub(crate) os: Arc<dyn OsInterface>,
    pub(crate) probes: Arc<dyn ProbeResults>,
    pub(crate) pod_state: Arc<dyn PodStateProvider>,
    pub(crate) logs: ContainerLogManager,
    pub(crate) config: RuntimeManagerConfig,
}

/// Maps a CRI error to the runtime-neutral one.
pub(crate) fn cri_err(e: CriError) -> RuntimeError {
    match &e {
        CriError::Connect { .. } => RuntimeError::Unavailable(e.to_string()),
        _ if e.is_not_found() => RuntimeError::NotFound {
            kind: "object",
            id: e.to_string(),
        },
        CriError::Status {
            method, message, ..
        } => RuntimeError::Call {
            method: (*method).to_string(),
            message: message.clone(),
        },
        _ => RuntimeError::Call {
            method: "CRI".to_string(),
            message: e.to_string(),
        },
    }
}

impl KubeGenericRuntimeManager {
    /// `NewKubeGenericRuntimeManager`: asks the runtime for its name and checks the API version.
    pub async fn new(
        deps: RuntimeManagerDeps,
        config: RuntimeManagerConfig,
        logs: ContainerLogManager,
    ) -> Result<Self, RuntimeError> {
        let version = deps
            .runtime
            .version(KUBE_RUNTIME_API_VERSION)
            .await
            .map_err(cri_err)?;
        if version.version != KUBE_RUNTIME_API_VERSION {
            return Err(RuntimeError::Invalid(format!(
                "runtime api version {:?} is not supported (want {KUBE_RUNTIME_API_VERSION})",
                version.version
            )));
        }
        tracing::info!(
            container_runtime = %version.runtime_name,
            version = %version.runtime_version,
            api_version = %version.runtime_api_version,
            "Container runtime initialized"
        );
        Ok(Self {
            runtime_name: version.runtime_name,
            images: ImageManager::new(deps.image, config.pull_concurrency, deps.clock),
            runtime: deps.runtime,
            helper: deps.helper,
            os: deps.os,
            probes: deps.probes,
            pod_state: deps.pod_state,
            logs,
            config,
        })
    }

    /// The CRI runtime service (for callers needing raw CRI access, e.g. PLEG or streaming).
    pub fn runtime_service(&self) -> &Arc<dyn RuntimeService> {
        &self.runtime
    }

    /// The image manager.
    pub fn image_manager(&self) -> &ImageManager {
        &self.images
    }

    /// The container log manager (run [`ContainerLogManager::rotate_logs`] periodically).
    pub fn log_manager(&self) -> &ContainerLogManager {
        &self.logs
    }

    pub(crate) fn id(&self, id: &str) -> ContainerId {
        ContainerId::new(self.runtime_name.clone(), id)
    }

    /// `getKubeletSandboxes`: ready sandboxes, or all with `all`.
    pub(crate) async fn list_sandboxes(
        &self,
        all: bool,
    ) -> Result<Vec<kubelet_cri::v1::PodSandbox>, RuntimeError> {
        let filter = (!all).then(|| PodSandboxFilter {
            state: Some(PodSandboxStateValue {
                state: PodSandboxState::SandboxReady as i32,
            }),
            ..PodSandboxFilter::default()
        });
        self.runtime
            .list_pod_sandbox(filter.as_ref())
            .await
            .map_err(cri_err)
    }

    /// `getKubeletContainers`: running containers, or all with `all`.
    pub(crate) async fn list_containers(
        &self,
        all: bool,
    ) -> Result<Vec<kubelet_cri::v1::Container>, RuntimeError> {
        let filter = (!all).then(|| ContainerFilter {
            state: Some(ContainerStateValue {
                state: kubelet_cri::v1::ContainerState::ContainerRunning as i32,
            }),
            ..ContainerFilter::default()
        });
        self.runtime
            .list_containers(filter.as_ref())
            .await
            .map_err(cri_err)
    }

    fn to_kube_container(&self, c: &kubelet_cri::v1::Container) -> Container {
        let labeled = container_info_from_labels(&c.labels);
        let annotated = container_info_from_annotations(&c.annotations);
        let image = c.image.as_ref();
        Container {
            id: self.id(&c.id),
            name: labeled.container_name,
            image: image.map(|i| i.image.clone()).unwrap_or_default(),
            image_id: if c.image_id.is_empty() {
                c.image_ref.clone()
            } else {
                c.image_id.clone()
            },
            image_ref: c.image_ref.clone(),
            image_runtime_handler: image.map(|i| i.runtime_handler.clone()).unwrap_or_default(),
            hash: annotated.hash,
            state: to_kube_container_state(c.state),
        }
    }

    /// `GetPods`.
    pub async fn get_pods_impl(&self, all: bool) -> Result<Vec<Pod>, RuntimeError> {
        let mut pods: Vec<Pod> = Vec::new();
        fn entry<'a>(pods: &'a mut Vec<Pod>, uid: &str, name: &str, ns: &str) -> &'a mut Pod {
            match pods.iter().position(|p| p.id == uid) {
                Some(i) => &mut pods[i],
                None => {
                    pods.push(Pod {
                        id: uid.into(),
                        name: name.into(),
                        namespace: ns.into(),
                        ..Pod::default()
                    });
                    let last = pods.len() - 1;
                    &mut pods[last]
                }
            }
        }
        for s in self.list_sandboxes(all).await? {
            let Some(m) = s.metadata.as_ref() else {
                continue;
            };
            let pod = entry(&mut pods, &m.uid, &m.name, &m.namespace);
            let state = if s.state == PodSandboxState::SandboxReady as i32 {
                ContainerState::Running
            } else {
                ContainerState::Exited
            };
            pod.sandboxes.push(Container {
                id: self.id(&s.id),
                state,
                ..Container::default()
            });
            pod.created_at = u64::try_from(s.created_at).unwrap_or(0);
        }
        for c in self.list_containers(all).await? {
            if c.metadata.is_none() {
                continue;
            }
            let l = container_info_from_labels(&c.labels);
            let converted = self.to_kube_container(&c);
            entry(&mut pods, &l.pod_uid, &l.pod_name, &l.pod_namespace)
                .containers
                .push(converted);
        }
        pods.sort_by_key(|p| std::cmp::Reverse(p.created_at));
        Ok(pods)
    }

    /// `getSandboxIDByPodUID`: sandbox IDs of a pod, newest first.
    pub(crate) async fn sandbox_ids_by_pod_uid(
        &self,
        uid: &str,
    ) -> Result<Vec<String>, RuntimeError> {
        let filter = PodSandboxFilter {
            label_selector: pod_uid_selector(uid),
            ..PodSandboxFilter::default()
        };
        let mut sandboxes = self
            .runtime
            .list_pod_sandbox(Some(&filter))
            .await
            .map_err(cri_err)?;
        sandboxes.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        Ok(sandboxes.into_iter().map(|s| s.id).collect())
    }

    /// `GetPodStatus`.
    pub async fn get_pod_status_impl(
        &self,
        uid: &str,
        name: &str,
        namespace: &str,
    ) -> Result<PodStatus, RuntimeError> {
        let mut status = PodStatus::empty(uid, name, namespace);
        for (idx, id) in self.sandbox_ids_by_pod_uid(uid).await?.iter().enumerate() {
            let resp = match self.runtime.pod_sandbox_status(id, false).await {
                Err(e) if e.is_not_found() => continue,
                r => r.map_err(cri_err)?,
            };
            let Some(s) = resp.status else {
                return Err(RuntimeError::Invalid("pod sandbox status is nil".into()));
            };
            let converted = to_sandbox_status(&s);
            if idx == 0 && converted.state == SandboxState::Ready {
                status.ips = std::iter::once(converted.ip.clone())
                    .filter(|ip| !ip.is_empty())
                    .chain(converted.additional_ips.iter().cloned())
                    .collect();
            }
            status.sandbox_statuses.push(converted);
        }
        status.container_statuses = self.pod_container_statuses(uid).await?;
        status.timestamp = Some(jiff::Timestamp::now());
        Ok(status)
    }

    /// `getPodContainerStatuses`, newest first.
    pub(crate) async fn pod_container_statuses(
        &self,
        uid: &str,
    ) -> Result<Vec<kubelet_container::Status>, RuntimeError> {
        let filter = ContainerFilter {
            label_selector: pod_uid_selector(uid),
            ..ContainerFilter::default()
        };
        let containers = self
            .runtime
            .list_containers(Some(&filter))
            .await
            .map_err(cri_err)?;
        let mut statuses = Vec::with_capacity(containers.len());
        for c in containers {
            let resp = match self.runtime.container_status(&c.id, false).await {
                Err(e) if e.is_not_found() => continue,
                r => r.map_err(cri_err)?,
            };
            let Some(s) = resp.status else {
                return Err(RuntimeError::Invalid("container status is nil".into()));
            };
            statuses.push(to_kube_container_status(
                self.os.as_ref(),
                &self.runtime_name,
                &s,
            ));
        }
        sort_newest_first(&mut statuses);
        Ok(statuses)
    }
}

/// CRI sandbox status → runtime-neutral.
pub fn to_sandbox_status(s: &PodSandboxStatus) -> SandboxStatus {
    let m = s.metadata.clone().unwrap_or_default();
    let network = s.network.clone().unwrap_or_default();
    let host_network = s
        .linux
        .as_ref()
        .and_then(|l| l.namespaces.as_ref())
        .and_then(|n| n.options.as_ref())
        .is_some_and(|o| o.network == NamespaceMode::Node as i32);
    SandboxStatus {
        id: s.id.clone(),
        name: m.name,
        uid: m.uid,
        namespace: m.namespace,
        attempt: m.attempt,
        state: if s.state == PodSandboxState::SandboxReady as i32 {
            SandboxState::Ready
        } else {
            SandboxState::NotReady
        },
        created_at: (s.created_at != 0)
            .then(|| jiff::Timestamp::from_nanosecond(i128::from(s.created_at)).ok())
            .flatten(),
        ip: network.ip,
        additional_ips: network.additional_ips.into_iter().map(|i| i.ip).collect(),
        host_network,
    }
}

#[async_trait]
impl Runtime for KubeGenericRuntimeManager {
    fn type_name(&self) -> &str {
        &self.runtime_name
    }

    async fn version(&self) -> Result<RuntimeVersion, RuntimeError> {
        let v = self
            .runtime
            .version(KUBE_RUNTIME_API_VERSION)
            .await
            .map_err(cri_err)?;
        Ok(RuntimeVersion {
            runtime_name: v.runtime_name,
            runtime_version: v.runtime_version,
            runtime_api_version: v.runtime_api_version,
        })
    }

    async fn status(&self) -> Result<RuntimeStatus, RuntimeError> {
        let resp = self.runtime.status(false).await.map_err(cri_err)?;
        let status = resp
            .status
            .ok_or_else(|| RuntimeError::Invalid("runtime status is nil".into()))?;
        Ok(RuntimeStatus {
            conditions: status
                .conditions
                .into_iter()
                .map(|c| RuntimeCondition {
                    type_: c.r#type,
                    status: c.status,
                    reason: c.reason,
                    message: c.message,
                })
                .collect(),
        })
    }

    async fn get_pods(&self, all: bool) -> Result<Vec<Pod>, RuntimeError> {
        self.get_pods_impl(all).await
    }

    async fn get_pod_status(
        &self,
        uid: &str,
        name: &str,
        namespace: &str,
    ) -> Result<PodStatus, RuntimeError> {
        self.get_pod_status_impl(uid, name, namespace).await
    }

    async fn sync_pod(
        &self,
        pod: &ApiPod,
        pod_status: &PodStatus,
        pull_secrets: &[Secret],
        backoff: &Backoff,
    ) -> PodSyncResult {
        self.sync_pod_impl(pod, pod_status, pull_secrets, backoff)
            .await
    }

    async fn kill_pod(
        &self,
        pod: Option<&ApiPod>,
        running_pod: &Pod,
        grace_period_override: Option<i64>,
    ) -> Result<(), RuntimeError> {
        let result = self
            .kill_pod_with_sync_result(pod, running_pod, grace_period_override)
            .await;
        if let Some(message) = result.error() {
            return Err(RuntimeError::KillPod {
                pod: running_pod.full_name(),
                message,
            });
        }
        if self
            .pod_state
            .should_pod_runtime_be_removed(&running_pod.id)
        {
            self.remove_pod(&running_pod.id).await?;
        }
        Ok(())
    }

    async fn garbage_collect(
        &self,
        policy: &ContainerGcPolicy,
        all_sources_ready: bool,
        evict_non_deleted_pods: bool,
    ) -> Result<(), RuntimeError> {
        self.garbage_collect_impl(policy, all_sources_ready, evict_non_deleted_pods)
            .await
    }

    async fn delete_container(&self, id: &ContainerId) -> Result<(), RuntimeError> {
        self.remove_container(&id.id).await
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
