//! Upstream `pkg/kubelet/eviction/eviction_manager.go`: `managerImpl`, its `synchronize`
//! loop, node-level reclaim, `evictPod`, and the eviction admit handler (`Admit`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, Taint};
use kubelet_admission::{PodAdmitAttributes, PodAdmitHandler, PodAdmitResult};
use kubelet_apimachinery::eviction::{Signal, Threshold};
use kubelet_apimachinery::{Format, Quantity};
use kubelet_container::events::Annotations;
use kubelet_container::{EventRecorder, EventType, QosClass};
use kubelet_stats::types::{PodStats, Summary};

use crate::helpers::{
    NodeConditionType, NodeConditionsObservedAt, NodeReclaimFunc, RankFunc,
    SIGNAL_EMPTY_DIR_FS_LIMIT, SIGNAL_EPHEMERAL_CONTAINER_FS_LIMIT, SIGNAL_EPHEMERAL_POD_FS_LIMIT,
    SignalObservations, StatsFunc, ThresholdsObservedAt, build_signal_to_node_reclaim_funcs,
    build_signal_to_rank_func, container_ephemeral_storage_limit,
    container_ephemeral_storage_message, disk_usage, empty_dir_message, eviction_message,
    format_conditions, make_signal_observations, merge_thresholds, node_conditions,
    node_conditions_last_observed_at, node_conditions_observed_since, pod_ephemeral_storage_limit,
    pod_ephemeral_storage_message, signal_to_resource, sort_by_eviction_priority,
    thresholds_first_observed_at, thresholds_met, thresholds_met_grace_period,
    thresholds_updated_stats, update_container_fs_thresholds,
};
use crate::threshold_notifier::{
    MemoryThresholdNotifier, NOTIFIER_REFRESH_INTERVAL, NotifierFactory,
};

/// The reason of an evicted pod's status, its event and an eviction admission rejection
/// (upstream `Reason`).
pub const REASON: &str = "Evicted";
/// Event reason when a threshold is met (upstream `EvictionThresholdMet`).
pub const EVICTION_THRESHOLD_MET: &str = "EvictionThresholdMet";
/// Grace period of a pod evicted for a hard threshold (upstream
/// `immediateEvictionGracePeriodSeconds`).
pub const IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS: i64 = 1;
/// How often the manager synchronizes (upstream `evictionMonitoringPeriod`).
pub const EVICTION_MONITORING_PERIOD: Duration = Duration::from_secs(10);
/// How long it waits for an evicted pod to be cleaned up (upstream `podCleanupTimeout`).
pub const POD_CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How often it checks (upstream `podCleanupPollFreq`).
pub const POD_CLEANUP_POLL_FREQ: Duration = Duration::from_secs(1);
/// `v1.DisruptionTarget`.
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// `v1.PodReasonTerminationByKubelet`.
pub const TERMINATION_BY_KUBELET: &str = "TerminationByKubelet";
/// `v1.TaintNodeMemoryPressure`.
pub const TAINT_NODE_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";

/// The manager's configuration (upstream `eviction.Config`).
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// `evictionPressureTransitionPeriod`.
    pub pressure_transition_period: Duration,
    /// `evictionMaxPodGracePeriod`.
    pub max_pod_grace_period_seconds: i64,
    /// The parsed `evictionHard`/`evictionSoft` thresholds (`ParseThresholdConfig`).
    pub thresholds: Vec<Threshold>,
    /// `kernelMemcgNotification`: memory thresholds get a memcg threshold notifier
    /// ([`crate::threshold_notifier`]) that triggers a round when crossed.
    pub kernel_memcg_notification: bool,
    /// The pod cgroup root in the driver's form (`/kubepods`, `/kubepods.slice`), where the
    /// allocatable memory notifier watches (upstream `PodCgroupRoot`).
    pub pod_cgroup_root: String,
    /// The `KubeletSeparateDiskGC` feature gate.
    pub separate_disk_gc: bool,
    /// `localStorageCapacityIsolation` (upstream `NewManager`'s
    /// `localStorageCapacityIsolation`): evict pods past their emptyDir `sizeLimit` or
    /// `ephemeral-storage` limits (`localStorageEviction`).
    pub local_storage_capacity_isolation: bool,
    /// The `PodLevelResources` feature gate: memory eviction messages and annotations also
    /// name a pod past its pod-level memory request.
    pub pod_level_resources: bool,
}

/// Where the manager reads stats (upstream `stats.SummaryProvider`).
#[async_trait::async_trait]
pub trait SummaryProvider: Send + Sync {
    /// `Get(ctx, updateStats)`.
    async fn get(&self, update_stats: bool) -> Result<Summary, String>;
    /// The summary without `pods` (node, system containers, filesystems, rlimit): what the
    /// signals are made of. By default the full summary.
    async fn get_without_pods(&self) -> Result<Summary, String> {
        self.get(true).await
    }
}

/// Whether `pod` has a limit [`ManagerImpl::local_storage_eviction`] checks: an emptyDir
/// with a `sizeLimit`, or a container with an `ephemeral-storage` limit.
fn has_local_storage_limits(pod: &Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return false;
    };
    let empty_dir_limit = spec
        .volumes
        .iter()
        .flatten()
        .any(|v| v.empty_dir.as_ref().is_some_and(|e| e.size_limit.is_some()));
    let container_limit = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .any(|c| {
            c.resources
                .as_ref()
                .and_then(|r| r.limits.as_ref())
                .is_some_and(|l| l.contains_key("ephemeral-storage"))
        });
    empty_dir_limit || container_limit
}

/// Upstream `DiskInfoProvider`.
#[async_trait::async_trait]
pub trait DiskInfoProvider: Send + Sync {
    /// Whether images are on another filesystem than the kubelet's root.
    async fn has_dedicated_image_fs(&self) -> Result<bool, String>;
}

/// Upstream `ImageGC`.
#[async_trait::async_trait]
pub trait ImageGc: Send + Sync {
    /// Deletes every unused image.
    async fn delete_unused_images(&self) -> Result<(), String>;
}

/// Upstream `ContainerGC`.
#[async_trait::async_trait]
pub trait ContainerGc: Send + Sync {
    /// Deletes every dead container and sandbox of any pod.
    async fn delete_all_unused_containers(&self) -> Result<(), String>;
    /// Whether the writable layers are on another filesystem than the images.
    async fn is_container_fs_separate_from_image_fs(&self) -> bool;
}

/// What an evicted pod's status becomes (the `statusFn` upstream gives `killPodFunc`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvictionStatus {
    /// `Evicted`.
    pub reason: String,
    /// The eviction message.
    pub message: String,
    /// The `DisruptionTarget` condition's message (`TerminationByKubelet`); `None` for
    /// the local storage evictions, which upstream makes without the condition.
    pub condition_message: Option<String>,
}

/// The pods the manager may evict, and how (upstream `ActivePodsFunc`, `KillPodFunc`
/// through `killPodNow`, `PodCleanedUpFunc`).
#[async_trait::async_trait]
pub trait PodTerminator: Send + Sync {
    /// The admitted pods that are not terminated (`GetActivePods`).
    fn active_pods(&self) -> Vec<Arc<Pod>>;
    /// Kills the pod with the grace period override and records `status` (phase
    /// `Failed`); returns once its containers are stopped or the kill timed out.
    async fn kill_pod(
        &self,
        pod: &Pod,
        grace_period_override: i64,
        status: EvictionStatus,
    ) -> Result<(), String>;
    /// Whether the pod's resources are reclaimed (`podResourcesAreReclaimed`).
    fn pod_cleaned_up(&self, pod: &Pod) -> bool;
}

/// A monotonic clock (upstream `clock.WithTicker`), fake in tests.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Instant;
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

#[derive(Default)]
struct State {
    thresholds: Vec<Threshold>,
    node_conditions: Vec<NodeConditionType>,
    node_conditions_last_observed_at: NodeConditionsObservedAt,
    thresholds_first_observed_at: ThresholdsObservedAt,
    thresholds_met: Vec<Threshold>,
    last_observations: SignalObservations,
    dedicated_image_fs: Option<bool>,
    split_container_image_fs: Option<bool>,
    signal_to_rank_func: BTreeMap<Signal, RankFunc>,
    signal_to_node_reclaim_funcs: BTreeMap<Signal, Vec<NodeReclaimFunc>>,
    threshold_notifiers: Vec<Arc<MemoryThresholdNotifier>>,
    thresholds_last_updated: Option<Instant>,
}

/// Everything the manager talks to.
pub struct Deps {
    /// Stats.
    pub summary: Arc<dyn SummaryProvider>,
    /// Whether images have their own filesystem.
    pub disk_info: Arc<dyn DiskInfoProvider>,
    /// Kills pods.
    pub terminator: Arc<dyn PodTerminator>,
    /// Image GC (the kubelet's image garbage collector); `None` skips the image step of
    /// node-level reclaim, logged as failed.
    pub image_gc: Option<Arc<dyn ImageGc>>,
    /// Container GC.
    pub container_gc: Arc<dyn ContainerGc>,
    /// Events.
    pub recorder: Arc<dyn EventRecorder>,
    /// The node the events are about.
    pub node_ref: k8s_openapi::api::core::v1::ObjectReference,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Makes the memcg threshold notifiers (with `kernel_memcg_notification`).
    pub notifier_factory: Arc<dyn NotifierFactory>,
}

/// The eviction manager (upstream `managerImpl`).
pub struct ManagerImpl {
    config: Config,
    deps: Deps,
    state: Mutex<State>,
    wake: tokio::sync::Notify,
}

impl std::fmt::Debug for ManagerImpl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerImpl")
            .field("thresholds", &self.config.thresholds.len())
            .finish_non_exhaustive()
    }
}

fn is_critical_pod(pod: &Pod) -> bool {
    kubelet_admission::preemption::is_critical_pod(pod)
}

fn pod_name(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

impl ManagerImpl {
    /// Upstream `NewManager`; the admit handler is [`EvictionAdmitHandler`] over the same
    /// manager.
    pub fn new(config: Config, deps: Deps) -> Arc<Self> {
        let state = State {
            thresholds: config.thresholds.clone(),
            ..State::default()
        };
        Arc::new(ManagerImpl {
            config,
            deps,
            state: Mutex::new(state),
            wake: tokio::sync::Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The node conditions now reported (in the order they were observed).
    pub fn node_conditions(&self) -> Vec<NodeConditionType> {
        self.lock().node_conditions.clone()
    }

    fn has_condition(&self, c: NodeConditionType) -> bool {
        self.lock().node_conditions.contains(&c)
    }

    /// Upstream `IsUnderMemoryPressure`.
    pub fn is_under_memory_pressure(&self) -> bool {
        self.has_condition(NodeConditionType::MemoryPressure)
    }

    /// Upstream `IsUnderDiskPressure`.
    pub fn is_under_disk_pressure(&self) -> bool {
        self.has_condition(NodeConditionType::DiskPressure)
    }

    /// Upstream `IsUnderPIDPressure`.
    pub fn is_under_pid_pressure(&self) -> bool {
        self.has_condition(NodeConditionType::PidPressure)
    }

    /// The thresholds the manager enforces (after `UpdateContainerFsThresholds` once the
    /// filesystems are known).
    pub fn thresholds(&self) -> Vec<Threshold> {
        self.lock().thresholds.clone()
    }

    /// Upstream `Admit`: with no pressure every pod is admitted; critical pods always are;
    /// under memory pressure alone only BestEffort pods that do not tolerate the
    /// memory-pressure taint are rejected; under any other pressure every pod is.
    pub fn admit(&self, attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult {
        let conditions = self.node_conditions();
        if conditions.is_empty() || is_critical_pod(attrs.pod) {
            return PodAdmitResult::admit();
        }
        if conditions == [NodeConditionType::MemoryPressure] {
            if kubelet_container::get_pod_qos(attrs.pod) != QosClass::BestEffort {
                return PodAdmitResult::admit();
            }
            let taint = Taint {
                key: TAINT_NODE_MEMORY_PRESSURE.to_string(),
                effect: "NoSchedule".to_string(),
                ..Taint::default()
            };
            let tolerations = attrs
                .pod
                .spec
                .as_ref()
                .and_then(|s| s.tolerations.as_deref())
                .unwrap_or_default();
            if kubelet_admission::taints::tolerations_tolerate_taint(tolerations, &taint, false) {
                return PodAdmitResult::admit();
            }
        }
        let formatted = format_conditions(&conditions);
        tracing::info!(pod = %pod_name(attrs.pod), node_condition = %formatted, "Failed to admit pod to node");
        PodAdmitResult::reject(REASON, format!("The node had condition: {formatted}. "))
    }

    /// Asks the loop for a round now (what upstream's memcg threshold notifier does).
    pub fn trigger(&self) {
        self.wake.notify_one();
    }

    /// Upstream `Start`: with `kernel_memcg_notification`, a memory threshold notifier per
    /// memory threshold (each triggers a round when crossed; one that cannot be created is
    /// logged and left out), then the loop: a round every `monitoring_interval`, and after
    /// an eviction a wait for the pod to be cleaned up instead. Never returns; drop it to
    /// stop.
    pub async fn run(&self, monitoring_interval: Duration) {
        tracing::info!("Eviction manager: starting control loop");
        let notifiers = self.start_threshold_notifiers();
        let _stop_notifiers = StopNotifiersOnDrop(self);
        let watch = async {
            futures::future::join_all(notifiers.iter().map(|n| {
                n.start(|message| {
                    tracing::info!("{message}");
                    self.trigger();
                })
            }))
            .await;
            std::future::pending::<()>().await;
        };
        tokio::select! {
            () = watch => {}
            () = self.control_loop(monitoring_interval) => {}
        }
    }

    /// The threshold notifiers `Start` creates (upstream `NewMemoryThresholdNotifier` for
    /// `memory.available` and `allocatableMemory.available`).
    fn start_threshold_notifiers(&self) -> Vec<Arc<MemoryThresholdNotifier>> {
        if !self.config.kernel_memcg_notification {
            return Vec::new();
        }
        let mut notifiers = Vec::new();
        for threshold in &self.config.thresholds {
            if !matches!(
                threshold.signal,
                Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable
            ) {
                continue;
            }
            match MemoryThresholdNotifier::new(
                *threshold,
                &self.config.pod_cgroup_root,
                self.deps.notifier_factory.clone(),
            ) {
                Ok(n) => notifiers.push(Arc::new(n)),
                Err(e) => {
                    tracing::info!(err = %e, "Eviction manager: failed to create memory threshold notifier");
                }
            }
        }
        self.lock().threshold_notifiers.clone_from(&notifiers);
        notifiers
    }

    /// The notifiers' watched cgroups (for tests and diagnostics).
    pub fn threshold_notifier_paths(&self) -> Vec<std::path::PathBuf> {
        self.lock()
            .threshold_notifiers
            .iter()
            .map(|n| n.cgroup_path().to_path_buf())
            .collect()
    }

    /// Upstream `synchronize`'s notifier refresh: at most every
    /// `notifierRefreshInterval`, every notifier re-armed from the summary.
    fn update_threshold_notifiers(&self, summary: &Summary) {
        let now = self.deps.clock.now();
        let notifiers = {
            let mut st = self.lock();
            if st
                .thresholds_last_updated
                .is_some_and(|t| now.saturating_duration_since(t) <= NOTIFIER_REFRESH_INTERVAL)
            {
                return;
            }
            st.thresholds_last_updated = Some(now);
            st.threshold_notifiers.clone()
        };
        for n in notifiers {
            if let Err(e) = n.update_threshold(summary) {
                tracing::info!(notifier = %n.description(), err = %e, "Eviction manager: failed to update notifier");
            }
        }
    }

    async fn control_loop(&self, monitoring_interval: Duration) {
        loop {
            match self.synchronize().await {
                Ok(pods) if !pods.is_empty() => {
                    let names: Vec<String> = pods.iter().map(|p| pod_name(p)).collect();
                    tracing::info!(pods = ?names, "Eviction manager: pods evicted, waiting for pod to be cleaned up");
                    self.wait_for_pods_cleanup(&pods).await;
                }
                other => {
                    if let Err(e) = other {
                        tracing::error!(err = %e, "Eviction manager: failed to synchronize");
                    }
                    tokio::select! {
                        () = tokio::time::sleep(monitoring_interval) => {}
                        () = self.wake.notified() => {}
                    }
                }
            }
        }
    }

    /// Upstream `waitForPodsCleanup`.
    async fn wait_for_pods_cleanup(&self, pods: &[Arc<Pod>]) {
        let names: Vec<String> = pods.iter().map(|p| pod_name(p)).collect();
        let deadline = tokio::time::Instant::now() + POD_CLEANUP_TIMEOUT;
        loop {
            tokio::time::sleep(POD_CLEANUP_POLL_FREQ).await;
            if pods.iter().all(|p| self.deps.terminator.pod_cleaned_up(p)) {
                tracing::info!(pods = ?names, "Eviction manager: pods successfully cleaned up");
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::info!(pods = ?names, "Eviction manager: timed out waiting for pods to be cleaned up");
                return;
            }
        }
    }

    /// Upstream `synchronize`: one round. Returns the evicted pods.
    pub async fn synchronize(&self) -> Result<Vec<Arc<Pod>>, String> {
        if self.config.thresholds.is_empty() && !self.config.local_storage_capacity_isolation {
            return Ok(Vec::new());
        }
        tracing::trace!("Eviction manager: synchronize housekeeping");
        let needs_fs = self.lock().dedicated_image_fs.is_none();
        if needs_fs {
            let has_image_fs = self
                .deps
                .disk_info
                .has_dedicated_image_fs()
                .await
                .map_err(|e| {
                    tracing::error!(err = %e, "Eviction manager: failed to get HasDedicatedImageFs");
                    format!("eviction manager: failed to get HasDedicatedImageFs: {e}")
                })?;
            let split = self
                .deps
                .container_gc
                .is_container_fs_separate_from_image_fs()
                .await;
            if !self.config.separate_disk_gc && split {
                return Err(
                    "KubeletSeparateDiskGC is turned off but we still have a split filesystem"
                        .into(),
                );
            }
            let (thresholds, warnings) =
                update_container_fs_thresholds(&self.config.thresholds, has_image_fs, split);
            for w in warnings {
                tracing::error!(err = %w, "eviction manager: found conflicting containerfs eviction. Ignoring.");
            }
            let mut st = self.lock();
            st.thresholds = thresholds;
            st.dedicated_image_fs = Some(has_image_fs);
            st.split_container_image_fs = Some(split);
            st.signal_to_rank_func = build_signal_to_rank_func(has_image_fs, split);
            st.signal_to_node_reclaim_funcs =
                build_signal_to_node_reclaim_funcs(has_image_fs, split);
        }
        let mut active_pods = self.deps.terminator.active_pods();
        // Beyond upstream (which reads every pod's stats each round): the pods' stats only
        // when a pod has a local storage limit to check; ranking fetches them below.
        let with_pods = self.config.local_storage_capacity_isolation
            && active_pods.iter().any(|p| has_local_storage_limits(p));
        let summary = if with_pods {
            self.deps.summary.get(true).await
        } else {
            self.deps.summary.get_without_pods().await
        };
        let summary = match summary {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(err = %e, "Eviction manager: failed to get summary stats");
                return Ok(Vec::new());
            }
        };
        self.update_threshold_notifiers(&summary);
        let observations = make_signal_observations(&summary);
        let stats = StatsFunc::new(&summary.pods);
        let now = self.deps.clock.now();

        let (thresholds, observations) = {
            let mut st = self.lock();
            let mut thresholds = thresholds_met(&st.thresholds, &observations, false);
            if !st.thresholds_met.is_empty() {
                let not_yet_resolved = thresholds_met(&st.thresholds_met, &observations, true);
                thresholds = merge_thresholds(thresholds, &not_yet_resolved);
            }
            let first_observed_at =
                thresholds_first_observed_at(&thresholds, &st.thresholds_first_observed_at, now);
            let observed = node_conditions(&thresholds);
            if !observed.is_empty() {
                tracing::debug!(node_condition = %format_conditions(&observed), "Eviction manager: node conditions - observed");
            }
            let last_observed_at = node_conditions_last_observed_at(
                &observed,
                &st.node_conditions_last_observed_at,
                now,
            );
            let conditions = node_conditions_observed_since(
                &last_observed_at,
                self.config.pressure_transition_period,
                now,
            );
            if conditions != st.node_conditions {
                tracing::info!(node_condition = %format_conditions(&conditions), "Eviction manager: node conditions changed");
            }
            let thresholds = thresholds_met_grace_period(&first_observed_at, now);
            st.node_conditions = conditions;
            st.thresholds_first_observed_at = first_observed_at;
            st.node_conditions_last_observed_at = last_observed_at;
            st.thresholds_met.clone_from(&thresholds);
            let thresholds =
                thresholds_updated_stats(&thresholds, &observations, &st.last_observations);
            st.last_observations = observations.clone();
            (thresholds, observations)
        };

        // Evict pods past their local storage limits; if any was, skip the rest.
        if self.config.local_storage_capacity_isolation {
            let evicted = self.local_storage_eviction(&active_pods, &stats).await;
            if !evicted.is_empty() {
                return Ok(evicted);
            }
        }

        if thresholds.is_empty() {
            tracing::trace!("Eviction manager: no resources are starved");
            return Ok(Vec::new());
        }
        let mut thresholds = thresholds;
        sort_by_eviction_priority(&mut thresholds);
        let Some(threshold_to_reclaim) = thresholds.first().copied() else {
            return Ok(Vec::new());
        };
        let resource = signal_to_resource(threshold_to_reclaim.signal);
        tracing::info!(
            resource_name = resource.as_str(),
            "Eviction manager: attempting to reclaim"
        );
        self.deps.recorder.event(
            &self.deps.node_ref,
            EventType::Warning,
            EVICTION_THRESHOLD_MET,
            &format!("Attempting to reclaim {}", resource.as_str()),
        );
        if self
            .reclaim_node_level_resources(threshold_to_reclaim.signal)
            .await
        {
            tracing::info!(
                resource_name = resource.as_str(),
                "Eviction manager: able to reduce resource pressure without evicting pods."
            );
            return Ok(Vec::new());
        }
        tracing::info!(
            resource_name = resource.as_str(),
            "Eviction manager: must evict pod(s) to reclaim"
        );
        let Some(rank) = self
            .lock()
            .signal_to_rank_func
            .get(&threshold_to_reclaim.signal)
            .cloned()
        else {
            tracing::error!(threshold = %threshold_to_reclaim.signal, "Eviction manager: no ranking function for signal");
            return Ok(Vec::new());
        };
        if active_pods.is_empty() {
            tracing::error!(
                "Eviction manager: eviction thresholds have been met, but no pods are active to evict"
            );
            return Ok(Vec::new());
        }
        let stats = if with_pods {
            stats
        } else {
            match self.deps.summary.get(true).await {
                Ok(s) => StatsFunc::new(&s.pods),
                Err(e) => {
                    tracing::error!(err = %e, "Eviction manager: failed to get summary stats");
                    return Ok(Vec::new());
                }
            }
        };
        rank.rank(&mut active_pods, &stats);
        let ranked: Vec<String> = active_pods.iter().map(|p| pod_name(p)).collect();
        tracing::info!(pods = ?ranked, "Eviction manager: pods ranked for eviction");

        if let Some(m) = kubelet_metrics::kubelet() {
            let now_ts = jiff::Timestamp::now();
            for t in &thresholds {
                if let Some(time) = observations.get(&t.signal).and_then(|o| o.time) {
                    let age = now_ts.duration_since(time.0).as_secs_f64();
                    m.eviction_stats_age
                        .with_label_values(&[t.signal.as_str()])
                        .observe(age);
                }
            }
        }

        for pod in &active_pods {
            let grace = if threshold_to_reclaim.is_hard() {
                IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS
            } else {
                // `AllowOverwriteTerminationGracePeriodSeconds` is locked off in 1.35: the
                // pod's own grace period caps the override.
                let max = self.config.max_pod_grace_period_seconds;
                match pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
                {
                    Some(own) => max.min(own),
                    None => max,
                }
            };
            let (message, annotations) = eviction_message(
                resource,
                pod,
                &stats,
                (&thresholds, &observations),
                self.config.pod_level_resources,
            );
            if self
                .evict_pod(pod, grace, &message, &annotations, true)
                .await
            {
                if let Some(m) = kubelet_metrics::kubelet() {
                    m.evictions
                        .with_label_values(&[threshold_to_reclaim.signal.as_str()])
                        .inc();
                }
                return Ok(vec![pod.clone()]);
            }
        }
        tracing::info!("Eviction manager: unable to evict any pods from the node");
        Ok(Vec::new())
    }

    /// Upstream `localStorageEviction`: each active pod with stats is checked against its
    /// emptyDir `sizeLimit`s, then its pod-level `ephemeral-storage` limit, then its
    /// containers' limits; the pods evicted (grace period
    /// `immediateEvictionGracePeriodSeconds`, no `DisruptionTarget` condition).
    async fn local_storage_eviction(&self, pods: &[Arc<Pod>], stats: &StatsFunc) -> Vec<Arc<Pod>> {
        let mut evicted = Vec::new();
        for pod in pods {
            let Some(pod_stats) = stats.get(pod) else {
                continue;
            };
            if self.empty_dir_limit_eviction(pod_stats, pod).await
                || self
                    .pod_ephemeral_storage_limit_eviction(pod_stats, pod)
                    .await
                || self
                    .container_ephemeral_storage_limit_eviction(pod_stats, pod)
                    .await
            {
                evicted.push(pod.clone());
            }
        }
        evicted
    }

    async fn evict_for_local_storage(&self, pod: &Pod, message: &str, signal: &str) -> bool {
        if self
            .evict_pod(
                pod,
                IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS,
                message,
                &Annotations::new(),
                false,
            )
            .await
        {
            if let Some(m) = kubelet_metrics::kubelet() {
                m.evictions.with_label_values(&[signal]).inc();
            }
            return true;
        }
        false
    }

    /// Upstream `emptyDirLimitEviction`: the first emptyDir volume (in spec order) with a
    /// positive `sizeLimit` whose usage (the pod's volume stats) is above it.
    async fn empty_dir_limit_eviction(&self, pod_stats: &PodStats, pod: &Pod) -> bool {
        let used: BTreeMap<&str, u64> = pod_stats
            .volume_stats
            .iter()
            .filter_map(|v| v.fs.used_bytes.map(|u| (v.name.as_str(), u)))
            .collect();
        let volumes = pod
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_deref())
            .unwrap_or_default();
        for v in volumes {
            let Some(size) = v
                .empty_dir
                .as_ref()
                .and_then(|e| e.size_limit.as_ref())
                .and_then(|q| Quantity::parse(&q.0).ok())
            else {
                continue;
            };
            let Some(&used) = used.get(v.name.as_str()) else {
                continue;
            };
            let used =
                Quantity::from_int(i64::try_from(used).unwrap_or(i64::MAX), Format::BinarySI);
            if size.sign() == 1 && used.cmp_value(&size) == std::cmp::Ordering::Greater {
                return self
                    .evict_for_local_storage(
                        pod,
                        &empty_dir_message(&v.name, &size),
                        SIGNAL_EMPTY_DIR_FS_LIMIT,
                    )
                    .await;
            }
        }
        false
    }

    /// Upstream `podEphemeralStorageLimitEviction`: the pod's `ephemeral-storage` usage
    /// (containers, emptyDirs, logs) above its containers' limits together.
    async fn pod_ephemeral_storage_limit_eviction(&self, pod_stats: &PodStats, pod: &Pod) -> bool {
        let Some(limit) = pod_ephemeral_storage_limit(pod) else {
            return false;
        };
        let usage = disk_usage(pod_stats.ephemeral_storage.as_ref());
        if usage.cmp_value(&limit) == std::cmp::Ordering::Greater {
            return self
                .evict_for_local_storage(
                    pod,
                    &pod_ephemeral_storage_message(&limit),
                    SIGNAL_EPHEMERAL_POD_FS_LIMIT,
                )
                .await;
        }
        false
    }

    /// Upstream `containerEphemeralStorageLimitEviction`: the first container (in stats
    /// order) whose logs, plus its writable layer unless images have their own
    /// filesystem, are above its `ephemeral-storage` limit.
    async fn container_ephemeral_storage_limit_eviction(
        &self,
        pod_stats: &PodStats,
        pod: &Pod,
    ) -> bool {
        let limits: BTreeMap<&str, Quantity> = pod
            .spec
            .iter()
            .flat_map(|s| s.containers.iter())
            .filter_map(|c| container_ephemeral_storage_limit(c).map(|l| (c.name.as_str(), l)))
            .collect();
        let dedicated_image_fs = self.lock().dedicated_image_fs.unwrap_or(false);
        for c in &pod_stats.containers {
            let mut used = disk_usage(c.logs.as_ref());
            if !dedicated_image_fs {
                used = used.add(&disk_usage(c.rootfs.as_ref()));
            }
            if let Some(limit) = limits.get(c.name.as_str())
                && limit.cmp_value(&used) == std::cmp::Ordering::Less
            {
                return self
                    .evict_for_local_storage(
                        pod,
                        &container_ephemeral_storage_message(&c.name, limit),
                        SIGNAL_EPHEMERAL_CONTAINER_FS_LIMIT,
                    )
                    .await;
            }
        }
        false
    }

    /// Upstream `reclaimNodeLevelResources`: runs the signal's reclaim steps, then
    /// re-measures; true when every threshold (with its minimum reclaim) is resolved.
    async fn reclaim_node_level_resources(&self, signal: Signal) -> bool {
        let funcs = self
            .lock()
            .signal_to_node_reclaim_funcs
            .get(&signal)
            .cloned()
            .unwrap_or_default();
        let resource = signal_to_resource(signal).as_str();
        for f in &funcs {
            let r = match f {
                NodeReclaimFunc::DeleteAllUnusedContainers => {
                    self.deps.container_gc.delete_all_unused_containers().await
                }
                NodeReclaimFunc::DeleteUnusedImages => match &self.deps.image_gc {
                    Some(gc) => gc.delete_unused_images().await,
                    None => Err("no image garbage collector".to_string()),
                },
            };
            if let Err(e) = r {
                tracing::info!(resource_name = resource, err = %e, "Eviction manager: unexpected error when attempting to reduce resource pressure");
            }
        }
        if funcs.is_empty() {
            return false;
        }
        let summary = match self.deps.summary.get(true).await {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(err = %e, "Eviction manager: failed to get summary stats after resource reclaim");
                return false;
            }
        };
        let observations = make_signal_observations(&summary);
        let thresholds = self.lock().thresholds.clone();
        thresholds_met(&thresholds, &observations, true).is_empty()
    }

    /// Upstream `evictPod`: never a critical pod; a `Warning` `Evicted` event, then the
    /// kill (with the `DisruptionTarget` condition when `condition`: the pressure
    /// evictions). True when the pod was asked to stop (even if the kill failed).
    async fn evict_pod(
        &self,
        pod: &Pod,
        grace: i64,
        message: &str,
        annotations: &Annotations,
        condition: bool,
    ) -> bool {
        if is_critical_pod(pod) {
            tracing::error!(pod = %pod_name(pod), "Eviction manager: cannot evict a critical pod");
            return false;
        }
        self.deps.recorder.annotated_event(
            &kubelet_container::events::pod_ref(pod),
            annotations,
            EventType::Warning,
            REASON,
            message,
        );
        tracing::debug!(pod = %pod_name(pod), evict_msg = message, "Evicting pod");
        let status = EvictionStatus {
            reason: REASON.to_string(),
            message: message.to_string(),
            condition_message: condition.then(|| message.to_string()),
        };
        match self.deps.terminator.kill_pod(pod, grace, status).await {
            Err(e) => {
                tracing::error!(err = %e, pod = %pod_name(pod), "Eviction manager: pod failed to evict");
            }
            Ok(()) => {
                tracing::info!(pod = %pod_name(pod), "Eviction manager: pod is evicted successfully");
            }
        }
        true
    }
}

/// Drops the manager's threshold notifiers (stopping their kernel notifiers and threads)
/// when `run` is dropped.
struct StopNotifiersOnDrop<'a>(&'a ManagerImpl);

impl Drop for StopNotifiersOnDrop<'_> {
    fn drop(&mut self) {
        let notifiers = std::mem::take(&mut self.0.lock().threshold_notifiers);
        drop(notifiers);
    }
}

/// The admit handler `NewManager` returns with the manager.
#[derive(Debug, Clone)]
pub struct EvictionAdmitHandler(pub Arc<ManagerImpl>);

impl PodAdmitHandler for EvictionAdmitHandler {
    fn admit(&self, attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult {
        self.0.admit(attrs)
    }
}
