//! The kubelet's side of the eviction manager (`kubelet.go` `NewMainKubelet`:
//! `eviction.NewManager`, `killPodNow`; `Kubelet.initializeRuntimeDependentModules`:
//! `evictionManager.Start`). The manager lives in `kubelet-eviction`; this module builds its
//! configuration and answers its questions from the running kubelet.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use kubelet_apimachinery::eviction::{NODE_ALLOCATABLE_ENFORCEMENT_KEY, parse_threshold_config};
use kubelet_container::SyncPodType;
use kubelet_cri::ImageService;
use kubelet_eviction::threshold_notifier::CgroupNotifierFactory;
use kubelet_eviction::{Config, Deps, EvictionStatus, ManagerImpl};
use kubelet_podworkers::{Completion, KillPodOptions, PodStatusFn, UpdatePodOptions};
use kubelet_runtime::image_gc::ImageGcManager;
use kubelet_stats::types::Summary;
use kubelet_status::reasons::{condition, phase};

use super::pod_manager::pod_uid;
use super::{Kubelet, KubeletDeps, RunError};

/// Upstream `ParseThresholdConfig(enforceNodeAllocatable, evictionHard, evictionSoft,
/// evictionSoftGracePeriod, evictionMinimumReclaim)` and the rest of `eviction.Config`;
/// `--experimental-allocatable-ignore-eviction` leaves out the allocatable thresholds.
///
/// `pod_cgroup_root` is upstream's `ContainerManager.GetPodCgroupRoot()`: the node
/// allocatable root (`<cgroupRoot>/kubepods` with `cgroupsPerQOS`) in the cgroup driver's
/// form, where the allocatable memory threshold notifier watches.
pub fn eviction_config(
    server: &kubelet_config::KubeletServer,
    cgroup_driver: kubelet_cm::CgroupDriver,
) -> Result<Config, RunError> {
    let c = &server.config;
    let enforce: Vec<String> = if server
        .flags
        .experimental_node_allocatable_ignore_eviction_threshold
    {
        Vec::new()
    } else {
        c.enforce_node_allocatable.clone().unwrap_or_default()
    };
    let no_thresholds = std::collections::BTreeMap::new();
    let thresholds = parse_threshold_config(
        &enforce,
        c.eviction_hard.as_ref().unwrap_or(&no_thresholds),
        &c.eviction_soft,
        &c.eviction_soft_grace_period,
        &c.eviction_minimum_reclaim,
    )
    .map_err(|e| RunError::Kubelet(format!("failed to create kubelet: {e}")))?;
    debug_assert!(NODE_ALLOCATABLE_ENFORCEMENT_KEY == "pods");
    Ok(Config {
        pressure_transition_period: c
            .eviction_pressure_transition_period
            .as_std()
            .unwrap_or_default(),
        max_pod_grace_period_seconds: i64::from(c.eviction_max_pod_grace_period),
        thresholds,
        kernel_memcg_notification: c.kernel_memcg_notification,
        pod_cgroup_root: kubelet_cm::node_allocatable_root(
            &c.cgroup_root,
            c.cgroups_per_qos.unwrap_or(true),
        )
        .for_driver(cgroup_driver),
        separate_disk_gc: server
            .feature_gates
            .enabled(kubelet_features::gates::KUBELET_SEPARATE_DISK_GC),
        local_storage_capacity_isolation: c.local_storage_capacity_isolation.unwrap_or(true),
        pod_level_resources: server
            .feature_gates
            .enabled(kubelet_features::gates::POD_LEVEL_RESOURCES),
    })
}

/// What the manager needs from the kubelet, bound once the kubelet and its summary
/// provider exist (the manager is built first: its admit handler is part of the kubelet).
#[derive(Default)]
pub struct LateBound {
    kubelet: OnceLock<Weak<Kubelet>>,
    summary: OnceLock<Arc<kubelet_stats::SummaryProvider>>,
    image_gc: OnceLock<Arc<dyn ImageGcManager>>,
}

impl LateBound {
    /// Binds the kubelet, the summary provider and the image garbage collector.
    pub fn bind(
        &self,
        kubelet: &Arc<Kubelet>,
        summary: Arc<kubelet_stats::SummaryProvider>,
        image_gc: Arc<dyn ImageGcManager>,
    ) {
        let _ = self.kubelet.set(Arc::downgrade(kubelet));
        let _ = self.summary.set(summary);
        let _ = self.image_gc.set(image_gc);
    }

    fn kubelet(&self) -> Option<Arc<Kubelet>> {
        self.kubelet.get().and_then(Weak::upgrade)
    }

    /// Upstream `containerGC.DeleteAllUnusedContainers`.
    async fn delete_all_unused_containers(&self) -> Result<(), String> {
        let k = self.kubelet().ok_or("kubelet stopped")?;
        k.container_gc
            .delete_all_unused_containers(k.sources_ready())
            .await
            .map_err(|e| e.to_string())
    }
}

/// Upstream `imageGC.DeleteUnusedImages` for node-level reclaim (the bytes freed are
/// not needed: the manager measures again).
#[async_trait::async_trait]
impl kubelet_eviction::ImageGc for LateBound {
    async fn delete_unused_images(&self) -> Result<(), String> {
        let gc = self
            .image_gc
            .get()
            .ok_or_else(|| "image garbage collector not started".to_string())?;
        gc.delete_unused_images()
            .await
            .map(|_freed| ())
            .map_err(|e| e.to_string())
    }
}

#[async_trait::async_trait]
impl kubelet_eviction::SummaryProvider for LateBound {
    async fn get(&self, _update_stats: bool) -> Result<Summary, String> {
        let provider = self
            .summary
            .get()
            .ok_or_else(|| "summary provider not started".to_string())?;
        provider.get().await.map_err(|e| e.to_string())
    }

    async fn get_without_pods(&self) -> Result<Summary, String> {
        let provider = self
            .summary
            .get()
            .ok_or_else(|| "summary provider not started".to_string())?;
        provider.get_without_pods().await.map_err(|e| e.to_string())
    }
}

/// `HasDedicatedImageFs` (the image filesystem's device differs from the root
/// directory's) and the runtime's `IsContainerFsSeparateFromImageFs`, from CRI
/// `ImageFsInfo`.
pub struct RuntimeFs {
    image: Arc<dyn ImageService>,
    root_dir: std::path::PathBuf,
    gc: Arc<LateBound>,
}

fn device(path: &str) -> Result<u64, String> {
    nix::sys::stat::stat(path)
        .map(|s| s.st_dev)
        .map_err(|e| format!("stat {path}: {e}"))
}

#[async_trait::async_trait]
impl kubelet_eviction::DiskInfoProvider for RuntimeFs {
    async fn has_dedicated_image_fs(&self) -> Result<bool, String> {
        let info = self
            .image
            .image_fs_info()
            .await
            .map_err(|e| e.to_string())?;
        let mountpoint = info
            .image_filesystems
            .first()
            .and_then(|f| f.fs_id.as_ref())
            .map(|id| id.mountpoint.clone())
            .ok_or("no imagefs info")?;
        let root = self.root_dir.to_string_lossy();
        Ok(device(&mountpoint)? != device(&root)?)
    }
}

#[async_trait::async_trait]
impl kubelet_eviction::ContainerGc for RuntimeFs {
    async fn delete_all_unused_containers(&self) -> Result<(), String> {
        self.gc.delete_all_unused_containers().await
    }

    async fn is_container_fs_separate_from_image_fs(&self) -> bool {
        let Ok(info) = self.image.image_fs_info().await else {
            return false;
        };
        let mount = |v: &[kubelet_cri::v1::FilesystemUsage]| {
            v.first()
                .and_then(|f| f.fs_id.as_ref())
                .map(|id| id.mountpoint.clone())
        };
        match (
            mount(&info.container_filesystems),
            mount(&info.image_filesystems),
        ) {
            (Some(c), Some(i)) => c != i,
            _ => false,
        }
    }
}

#[async_trait::async_trait]
impl kubelet_eviction::PodTerminator for LateBound {
    fn active_pods(&self) -> Vec<Arc<Pod>> {
        self.kubelet().map(|k| k.active_pods()).unwrap_or_default()
    }

    async fn kill_pod(
        &self,
        pod: &Pod,
        grace_period_override: i64,
        status: EvictionStatus,
    ) -> Result<(), String> {
        let k = self.kubelet().ok_or("kubelet stopped")?;
        k.kill_pod_now(pod, grace_period_override, status).await
    }

    fn pod_cleaned_up(&self, pod: &Pod) -> bool {
        self.kubelet()
            .is_none_or(|k| k.pod_workers.is_pod_known_terminated(pod_uid(pod)))
    }
}

/// The manager, with its late-bound inputs (bound by [`start`]).
pub struct Eviction {
    /// The manager (its pressure feeds node status, its admit handler admission).
    pub manager: Arc<ManagerImpl>,
    late: Arc<LateBound>,
}

/// Upstream `eviction.NewManager` in `NewMainKubelet`.
pub fn new_manager(deps: &KubeletDeps<'_>) -> Result<Eviction, RunError> {
    let config = eviction_config(deps.server, deps.runtime.cgroup_driver)?;
    let unified = deps.cgroup_version == kubelet_cm::CgroupVersion::V2;
    if config.kernel_memcg_notification && unified {
        tracing::info!(
            "kernelMemcgNotification: memcg threshold notifications need cgroup v1; on cgroup v2 the eviction manager observes memory every 10s (as upstream's)"
        );
    }
    let late = Arc::new(LateBound::default());
    let fs = Arc::new(RuntimeFs {
        image: deps.runtime.image.clone(),
        root_dir: std::path::PathBuf::from(&deps.server.flags.root_directory),
        gc: late.clone(),
    });
    let manager = ManagerImpl::new(
        config,
        Deps {
            summary: late.clone(),
            disk_info: fs.clone(),
            terminator: late.clone(),
            image_gc: Some(late.clone()),
            container_gc: fs,
            recorder: deps.recorder.clone(),
            node_ref: kubelet_container::events::node_ref(&deps.node_name),
            clock: Arc::new(kubelet_eviction::RealClock),
            notifier_factory: Arc::new(CgroupNotifierFactory { unified }),
        },
    );
    Ok(Eviction { manager, late })
}

/// Upstream `evictionManager.Start(…, evictionMonitoringPeriod)`: binds the kubelet, the
/// summary provider and the image garbage collector and runs the loop on its own task.
pub fn start(
    e: &Eviction,
    kubelet: &Arc<Kubelet>,
    summary: Arc<kubelet_stats::SummaryProvider>,
    image_gc: Arc<dyn ImageGcManager>,
    cancel: tokio_util::sync::CancellationToken,
    tasks: &mut tokio::task::JoinSet<()>,
) {
    e.late.bind(kubelet, summary, image_gc);
    let manager = e.manager.clone();
    tasks.spawn(async move {
        tokio::select! {
            () = cancel.cancelled() => {}
            () = manager.run(kubelet_eviction::EVICTION_MONITORING_PERIOD) => {}
        }
    });
}

/// Upstream `killPodNow`'s minimum wait.
const MIN_KILL_TIMEOUT: Duration = Duration::from_secs(10);

impl Kubelet {
    /// Upstream `GetActivePods`: the pod manager's pods, inactive ones left out.
    pub fn active_pods(&self) -> Vec<Arc<Pod>> {
        self.pod_manager
            .pods()
            .into_iter()
            .filter(|p| !self.is_pod_inactive(p))
            .collect()
    }

    /// Upstream `killPodNow` with the eviction manager's status function: the pod worker
    /// kills the pod with the grace period override and records phase `Failed`, reason
    /// and message, and (pressure evictions) a `DisruptionTarget` condition
    /// (`TerminationByKubelet`); see [`Kubelet::kill_pod_with`].
    pub async fn kill_pod_now(
        &self,
        pod: &Pod,
        grace_period_override: i64,
        status: EvictionStatus,
    ) -> Result<(), String> {
        let generation = pod.metadata.generation;
        let status_fn: PodStatusFn = Arc::new(move |s: &mut PodStatus| {
            s.phase = Some(phase::FAILED.to_string());
            s.reason = Some(status.reason.clone());
            s.message = Some(status.message.clone());
            let Some(condition_message) = status.condition_message.clone() else {
                return;
            };
            let conditions = s.conditions.get_or_insert_with(Vec::new);
            conditions.retain(|c| c.type_ != condition::DISRUPTION_TARGET);
            conditions.push(PodCondition {
                type_: condition::DISRUPTION_TARGET.to_string(),
                status: "True".to_string(),
                reason: Some(kubelet_eviction::manager::TERMINATION_BY_KUBELET.to_string()),
                message: Some(condition_message),
                observed_generation: generation,
                ..PodCondition::default()
            });
        });
        self.kill_pod_with(pod, true, grace_period_override, status_fn)
            .await
    }

    /// Upstream `killPodNow(podWorkers, recorder)`: the pod worker kills the pod with the
    /// grace period override (`isEvicted` marks an eviction) and applies `status_fn` to
    /// its final status; waits up to 1.5× the grace period (at least 10 s), then records
    /// `ExceededGracePeriod`. Used by the eviction and node shutdown managers.
    pub async fn kill_pod_with(
        &self,
        pod: &Pod,
        is_evicted: bool,
        grace_period_override: i64,
        status_fn: PodStatusFn,
    ) -> Result<(), String> {
        let (completion, done) = Completion::new();
        let mut opts = UpdatePodOptions::new(SyncPodType::Kill, Arc::new(pod.clone()));
        opts.kill_pod_options = Some(KillPodOptions {
            completed: Some(completion),
            evict: is_evicted,
            pod_status_fn: Some(status_fn),
            grace_period_override: Some(grace_period_override),
        });
        self.pod_workers.update_pod(opts);
        let secs = u64::try_from(grace_period_override + grace_period_override / 2).unwrap_or(0);
        let timeout = Duration::from_secs(secs).max(MIN_KILL_TIMEOUT);
        match tokio::time::timeout(timeout, done).await {
            Ok(_) => Ok(()),
            Err(_) => {
                self.recorder.event(
                    &kubelet_container::events::pod_ref(pod),
                    kubelet_container::EventType::Warning,
                    "ExceededGracePeriod",
                    "Container runtime did not kill the pod within specified grace period.",
                );
                Err("timeout waiting to kill pod".to_string())
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::kubelet::test_config::server;
    use kubelet_apimachinery::eviction::Signal;

    /// `NewMainKubelet`'s `ParseThresholdConfig`: hard and soft thresholds, grace periods,
    /// minimum reclaims, and the allocatable copy of the hard `memory.available` threshold
    /// with `enforceNodeAllocatable: [pods]` (the default).
    #[test]
    fn eviction_config_parses_every_eviction_setting() {
        let s = server(
            "evictionHard:\n  memory.available: 200Mi\nevictionSoft:\n  nodefs.available: 20%\n\
             evictionSoftGracePeriod:\n  nodefs.available: 1m\nevictionMinimumReclaim:\n  memory.available: 50Mi\n\
             evictionMaxPodGracePeriod: 30\nevictionPressureTransitionPeriod: 45s\n",
        );
        let c = eviction_config(&s, kubelet_cm::CgroupDriver::Cgroupfs).unwrap();
        let signals: Vec<(Signal, bool)> = c
            .thresholds
            .iter()
            .map(|t| (t.signal, t.is_hard()))
            .collect();
        assert_eq!(
            signals,
            [
                (Signal::MemoryAvailable, true),
                (Signal::NodeFsAvailable, false),
                (Signal::AllocatableMemoryAvailable, true),
            ]
        );
        assert!(c.thresholds[0].min_reclaim.is_some());
        assert_eq!(c.max_pod_grace_period_seconds, 30);
        assert_eq!(c.pressure_transition_period, Duration::from_secs(45));
    }

    /// `PodCgroupRoot` (where the allocatable memory notifier watches): the node
    /// allocatable cgroup in the driver's form, the cgroup root itself without
    /// `cgroupsPerQOS`.
    #[test]
    fn pod_cgroup_root_follows_driver_and_cgroups_per_qos() {
        use kubelet_cm::CgroupDriver;
        let s = server("");
        assert_eq!(
            eviction_config(&s, CgroupDriver::Cgroupfs)
                .unwrap()
                .pod_cgroup_root,
            "/kubepods"
        );
        assert_eq!(
            eviction_config(&s, CgroupDriver::Systemd)
                .unwrap()
                .pod_cgroup_root,
            "/kubepods.slice"
        );
        let s = server("cgroupsPerQOS: false\nenforceNodeAllocatable: []\ncgroupRoot: /custom\n");
        assert_eq!(
            eviction_config(&s, CgroupDriver::Cgroupfs)
                .unwrap()
                .pod_cgroup_root,
            "/custom"
        );
    }

    /// A soft threshold without its grace period stops the start with upstream's error.
    #[test]
    fn soft_threshold_without_grace_period_is_refused() {
        let s = server("evictionSoft:\n  memory.available: 1Gi\n");
        let err = eviction_config(&s, kubelet_cm::CgroupDriver::Cgroupfs)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "grace period must be specified for the soft eviction threshold memory.available"
            ),
            "{err}"
        );
    }
}
