//! The node shutdown manager (upstream `nodeshutdown_manager.go`,
//! `nodeshutdown_manager_linux.go`): priority groups from the configuration, the logind
//! inhibitor lock taken at start, `PrepareForShutdown` handled by killing the active pods
//! group by group (lowest priority first), the state file and metrics, the `NodeShutdown`
//! admission rejection and the node's `ShutdownStatus`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ObjectReference, Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubelet_admission::{PodAdmitAttributes, PodAdmitHandler, PodAdmitResult};
use kubelet_container::{Clock, EventRecorder, EventType};
use tokio::sync::oneshot;

use crate::storage::{LOCAL_STORAGE_STATE_FILE, LocalStorage, State, Storage, timestamp};
use crate::systemd::{DbusConnector, DbusError, DbusInhibiter, InhibitLock};

/// `NodeShutdownNotAdmittedReason`.
pub const NODE_SHUTDOWN_NOT_ADMITTED_REASON: &str = "NodeShutdown";
/// `nodeShutdownNotAdmittedMessage`.
pub const NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE: &str =
    "Pod was rejected as the node is shutting down.";
/// `nodeShutdownReason`.
pub const NODE_SHUTDOWN_REASON: &str = "Terminated";
/// `nodeShutdownMessage`.
pub const NODE_SHUTDOWN_MESSAGE: &str = "Pod was terminated in response to imminent node shutdown.";
/// `kubeletevents.NodeShutdown`: the reason of the node's events.
pub const NODE_SHUTDOWN_EVENT: &str = "Shutdown";
/// `dbusReconnectPeriod`.
pub const DBUS_RECONNECT_PERIOD: Duration = Duration::from_secs(1);
/// `scheduling.DefaultPriorityWhenNoDefaultClassExists`.
pub const DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS: i32 = 0;
/// `scheduling.SystemCriticalPriority`.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = kubelet_admission::preemption::SYSTEM_CRITICAL_PRIORITY;
/// `v1.DisruptionTarget`.
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// `v1.PodReasonTerminationByKubelet`.
pub const TERMINATION_BY_KUBELET: &str = "TerminationByKubelet";
/// `ShutdownStatus`'s error while the node shuts down.
pub const NODE_IS_SHUTTING_DOWN: &str = "node is shutting down";

/// `kubeletconfig.ShutdownGracePeriodByPodPriority`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownGracePeriodByPodPriority {
    /// The lowest priority of the band.
    pub priority: i32,
    /// The band's grace period.
    pub shutdown_grace_period_seconds: i64,
}

/// Upstream `Config` (the kubelet's parts are in [`Deps`]); the two gates are read here.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The gate `GracefulNodeShutdown`.
    pub graceful_node_shutdown: bool,
    /// The gate `GracefulNodeShutdownBasedOnPodPriority`.
    pub graceful_node_shutdown_based_on_pod_priority: bool,
    /// `shutdownGracePeriod`.
    pub shutdown_grace_period_requested: Duration,
    /// `shutdownGracePeriodCriticalPods`.
    pub shutdown_grace_period_critical_pods: Duration,
    /// `shutdownGracePeriodByPodPriority`.
    pub shutdown_grace_period_by_pod_priority: Vec<ShutdownGracePeriodByPodPriority>,
    /// `StateDirectory`: the kubelet's root directory.
    pub state_directory: PathBuf,
}

/// `podStatusFunc` of `killPodNow`.
pub type PodStatusFn = Arc<dyn Fn(&mut PodStatus) + Send + Sync>;

/// What the manager needs from the kubelet (upstream `GetPodsFunc`, `KillPodFunc`,
/// `VolumeManager.WaitForAllPodsUnmount`, `SyncNodeStatusFunc`).
#[async_trait]
pub trait PodKiller: Send + Sync {
    /// `GetActivePods`.
    fn active_pods(&self) -> Vec<Arc<Pod>>;
    /// `killPodNow(pod, isEvicted, &gracePeriodOverride, statusFn)`: returns once the pod
    /// is killed (or the kill timed out).
    async fn kill_pod(
        &self,
        pod: Arc<Pod>,
        is_evicted: bool,
        grace_period_override: i64,
        status_fn: PodStatusFn,
    ) -> Result<(), String>;
    /// `WaitForAllPodsUnmount`: returns once no volume of `pods` is mounted (the caller
    /// bounds the wait).
    async fn wait_for_all_pods_unmount(&self, pods: &[Arc<Pod>]) -> Result<(), String>;
    /// `go kl.syncNodeStatus()`: must not block.
    fn sync_node_status(&self);
}

/// The kubelet's parts the manager uses.
pub struct Deps {
    /// Upstream `systemDbus`.
    pub connector: Arc<dyn DbusConnector>,
    /// Pods and node status.
    pub pods: Arc<dyn PodKiller>,
    /// `Recorder`.
    pub recorder: Arc<dyn EventRecorder>,
    /// `NodeRef`.
    pub node_ref: ObjectReference,
    /// The wall clock (state file times, condition transition times).
    pub clock: Arc<dyn Clock>,
}

/// Why the manager did not start (upstream's error texts).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A D-Bus call failed.
    #[error("{0}")]
    Dbus(#[from] DbusError),
    /// Writing the logind drop-in failed.
    #[error("unable to override inhibit delay by shutdown manager: {0}")]
    Override(DbusError),
    /// logind did not take the new delay.
    #[error(
        "node shutdown manager was timed out after {attempt} attempts waiting for logind InhibitDelayMaxSec to update to {requested} (ShutdownGracePeriod), current value is {current}"
    )]
    InhibitDelayTimeout {
        /// Attempts made.
        attempt: u32,
        /// The period requested (Go's duration format).
        requested: kubelet_apimachinery::Duration,
        /// logind's value (Go's duration format).
        current: kubelet_apimachinery::Duration,
    },
    /// Subscribing failed and so did releasing the lock.
    #[error("failed releasing inhibitLock: {release} and failed monitoring shutdown: {monitor}")]
    MonitorAndRelease {
        /// The release error.
        release: DbusError,
        /// The monitor error.
        monitor: DbusError,
    },
    /// Subscribing failed.
    #[error("failed to monitor shutdown: {0}")]
    Monitor(DbusError),
}

/// Upstream `Manager`: an admit handler, `Start` and `ShutdownStatus`.
#[async_trait]
pub trait Manager: PodAdmitHandler {
    /// `Start`: takes the inhibitor lock and watches for shutdown; on failure the kubelet
    /// logs `Failed to start node shutdown manager` and goes on.
    async fn start(&self) -> Result<(), StartError>;
    /// `ShutdownStatus`: `Err("node is shutting down")` while the node shuts down.
    fn shutdown_status(&self) -> Result<(), String>;
}

/// Upstream `managerStub`: the gate is off or no grace period is configured.
#[derive(Debug, Default, Clone, Copy)]
pub struct ManagerStub;

impl PodAdmitHandler for ManagerStub {
    fn admit(&self, _attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult {
        PodAdmitResult::admit()
    }
}

#[async_trait]
impl Manager for ManagerStub {
    async fn start(&self) -> Result<(), StartError> {
        Ok(())
    }

    fn shutdown_status(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Upstream `migrateConfig`: `shutdownGracePeriod` and `shutdownGracePeriodCriticalPods`
/// as two priority bands (the default priority gets the difference, system-critical pods
/// the critical period); `None` when nothing (or something impossible) is configured.
pub fn migrate_config(
    shutdown_grace_period_requested: Duration,
    shutdown_grace_period_critical_pods: Duration,
) -> Vec<ShutdownGracePeriodByPodPriority> {
    if shutdown_grace_period_requested.is_zero() {
        return Vec::new();
    }
    let Some(default_priority) =
        shutdown_grace_period_requested.checked_sub(shutdown_grace_period_critical_pods)
    else {
        return Vec::new();
    };
    let Some(critical_priority) = shutdown_grace_period_requested.checked_sub(default_priority)
    else {
        return Vec::new();
    };
    let secs = |d: Duration| i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
    vec![
        ShutdownGracePeriodByPodPriority {
            priority: DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS,
            shutdown_grace_period_seconds: secs(default_priority),
        },
        ShutdownGracePeriodByPodPriority {
            priority: SYSTEM_CRITICAL_PRIORITY,
            shutdown_grace_period_seconds: secs(critical_priority),
        },
    ]
}

/// Upstream `podShutdownGroup`.
#[derive(Debug, Clone, PartialEq)]
pub struct PodShutdownGroup {
    /// The band.
    pub period: ShutdownGracePeriodByPodPriority,
    /// Its pods.
    pub pods: Vec<Arc<Pod>>,
}

/// Upstream `groupByPriority`: each pod in the highest band whose priority is at most the
/// pod's (lower than the lowest: the lowest band); `periods` sorted from low to high.
pub fn group_by_priority(
    periods: &[ShutdownGracePeriodByPodPriority],
    pods: &[Arc<Pod>],
) -> Vec<PodShutdownGroup> {
    let mut groups: Vec<PodShutdownGroup> = periods
        .iter()
        .map(|p| PodShutdownGroup {
            period: *p,
            pods: Vec::new(),
        })
        .collect();
    if groups.is_empty() {
        return groups;
    }
    for pod in pods {
        let priority = pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
        let mut index = groups.partition_point(|g| g.period.priority < priority);
        if index == groups.len() {
            index = groups.len() - 1;
        } else if index > 0 && groups[index].period.priority > priority {
            index -= 1;
        }
        groups[index].pods.push(pod.clone());
    }
    groups
}

/// The periods the manager uses (upstream `newPodManager`): by priority when the gate
/// `GracefulNodeShutdownBasedOnPodPriority` is on and the list is set, else
/// [`migrate_config`]; sorted by priority, low to high.
pub fn shutdown_grace_periods(config: &Config) -> Vec<ShutdownGracePeriodByPodPriority> {
    let mut periods = if !config.graceful_node_shutdown_based_on_pod_priority
        || config.shutdown_grace_period_by_pod_priority.is_empty()
    {
        migrate_config(
            config.shutdown_grace_period_requested,
            config.shutdown_grace_period_critical_pods,
        )
    } else {
        config.shutdown_grace_period_by_pod_priority.clone()
    };
    periods.sort_by_key(|p| p.priority);
    periods
}

/// Upstream `podutil.UpdatePodCondition`: replaces the condition of the same type (keeping
/// its transition time when the status is unchanged) or appends it.
fn update_pod_condition(status: &mut PodStatus, mut condition: PodCondition, now: Time) {
    condition.last_transition_time = Some(now);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        None => conditions.push(condition),
        Some(old) => {
            if old.status == condition.status {
                condition
                    .last_transition_time
                    .clone_from(&old.last_transition_time);
            }
            *old = condition;
        }
    }
}

/// The status function `killPods` hands to `killPodNow`: phase `Failed` (unless already
/// `Succeeded`), reason `Terminated`, the shutdown message and a `DisruptionTarget`
/// condition (`TerminationByKubelet`).
pub fn node_shutdown_status_fn(pod: &Pod, clock: Arc<dyn Clock>) -> PodStatusFn {
    let generation = pod.metadata.generation;
    Arc::new(move |status: &mut PodStatus| {
        if status.phase.as_deref() != Some("Succeeded") {
            status.phase = Some("Failed".to_string());
        }
        status.message = Some(NODE_SHUTDOWN_MESSAGE.to_string());
        status.reason = Some(NODE_SHUTDOWN_REASON.to_string());
        update_pod_condition(
            status,
            PodCondition {
                type_: DISRUPTION_TARGET.to_string(),
                observed_generation: generation,
                status: "True".to_string(),
                reason: Some(TERMINATION_BY_KUBELET.to_string()),
                message: Some(NODE_SHUTDOWN_MESSAGE.to_string()),
                ..PodCondition::default()
            },
            Time(clock.now()),
        );
    })
}

fn pod_name(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Upstream `podManager`.
struct PodManager {
    periods: Vec<ShutdownGracePeriodByPodPriority>,
}

impl PodManager {
    /// `periodRequested`: the sum of the bands' periods.
    fn period_requested(&self) -> Duration {
        let sum: i64 = self
            .periods
            .iter()
            .map(|p| p.shutdown_grace_period_seconds)
            .sum();
        Duration::from_secs(u64::try_from(sum).unwrap_or(0))
    }

    /// `killPods`: group by group, each pod killed in parallel with the group's period
    /// (the pod's own `terminationGracePeriodSeconds` when shorter); the next group starts
    /// once every kill returned and the group's volumes are unmounted, or after the
    /// group's period.
    async fn kill_pods(&self, deps: &Deps, active_pods: &[Arc<Pod>]) {
        for group in group_by_priority(&self.periods, active_pods) {
            if group.pods.is_empty() {
                continue;
            }
            let group_seconds = group.period.shutdown_grace_period_seconds;
            let mut kills = Vec::with_capacity(group.pods.len());
            for pod in &group.pods {
                let mut grace_period_override = group_seconds;
                if let Some(t) = pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
                    .filter(|t| *t <= grace_period_override)
                {
                    grace_period_override = t;
                }
                let killer = deps.pods.clone();
                let status_fn = node_shutdown_status_fn(pod, deps.clock.clone());
                let pod = pod.clone();
                kills.push(tokio::spawn(async move {
                    let name = pod_name(&pod);
                    tracing::debug!(pod = %name, grace_period = grace_period_override, "Shutdown manager killing pod with gracePeriod");
                    match killer
                        .kill_pod(pod, false, grace_period_override, status_fn)
                        .await
                    {
                        Err(e) => {
                            tracing::debug!(pod = %name, err = %e, "Shutdown manager failed killing pod");
                        }
                        Ok(()) => {
                            tracing::debug!(pod = %name, "Shutdown manager finished killing pod");
                        }
                    }
                }));
            }
            let wait = Duration::from_secs(u64::try_from(group_seconds).unwrap_or(0));
            let pods = group.pods.clone();
            let killer = deps.pods.clone();
            let done = async move {
                for k in kills {
                    let _ = k.await;
                }
                let unmounted =
                    tokio::time::timeout(wait, killer.wait_for_all_pods_unmount(&pods)).await;
                let err = match unmounted {
                    Ok(Ok(())) => return,
                    Ok(Err(e)) => e,
                    Err(_) => "context deadline exceeded".to_string(),
                };
                let ids: Vec<String> = pods.iter().map(|p| pod_name(p)).collect();
                tracing::error!(err = %err, pods = ?ids, "Failed while waiting for all the volumes belonging to Pods in this group to unmount");
            };
            tokio::select! {
                () = done => {
                    tracing::debug!(grace_period = group_seconds, priority = group.period.priority, "Done waiting for all pods in group to terminate");
                }
                () = tokio::time::sleep(wait) => {
                    tracing::debug!(grace_period = group_seconds, priority = group.period.priority, "Shutdown manager pod killing time out");
                }
            }
        }
    }
}

/// The current connection and lock.
#[derive(Default)]
struct Conn {
    dbus_con: Option<Arc<dyn DbusInhibiter>>,
    inhibit_lock: Option<InhibitLock>,
}

struct Inner {
    deps: Deps,
    pod_manager: PodManager,
    enable_metrics: bool,
    storage: Arc<dyn Storage>,
    node_shutting_down_now: Mutex<bool>,
    conn: tokio::sync::Mutex<Conn>,
}

/// Upstream `managerImpl`.
#[derive(Clone)]
pub struct ManagerImpl {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ManagerImpl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerImpl")
            .field("periods", &self.inner.pod_manager.periods)
            .finish_non_exhaustive()
    }
}

/// Upstream `NewManager`: [`ManagerStub`] when the gate `GracefulNodeShutdown` is off or no
/// period is configured, else [`ManagerImpl`].
pub fn new_manager(config: &Config, deps: Deps) -> Arc<dyn Manager> {
    match ManagerImpl::new(config, deps) {
        Some(m) => Arc::new(m),
        None => Arc::new(ManagerStub),
    }
}

impl ManagerImpl {
    /// The manager, `None` where upstream's `NewManager` returns the stub.
    pub fn new(config: &Config, deps: Deps) -> Option<Self> {
        if !config.graceful_node_shutdown {
            return None;
        }
        let periods = shutdown_grace_periods(config);
        if periods.is_empty() {
            return None;
        }
        tracing::info!(
            shutdown_grace_period_requested = ?config.shutdown_grace_period_requested,
            shutdown_grace_period_critical_pods = ?config.shutdown_grace_period_critical_pods,
            shutdown_grace_period_by_pod_priority = ?periods,
            "Creating node shutdown manager"
        );
        let storage = Arc::new(LocalStorage {
            path: config.state_directory.join(LOCAL_STORAGE_STATE_FILE),
        });
        Some(Self {
            inner: Arc::new(Inner {
                deps,
                pod_manager: PodManager { periods },
                enable_metrics: config.graceful_node_shutdown_based_on_pod_priority,
                storage,
                node_shutting_down_now: Mutex::new(false),
                conn: tokio::sync::Mutex::new(Conn::default()),
            }),
        })
    }

    /// The priority bands, sorted.
    pub fn periods(&self) -> &[ShutdownGracePeriodByPodPriority] {
        &self.inner.pod_manager.periods
    }

    /// `setMetrics`: the gauges from the state file.
    fn set_metrics(&self) {
        if !self.inner.enable_metrics {
            return;
        }
        match self.inner.storage.load() {
            Err(e) => tracing::error!(err = %e, "Failed to load graceful shutdown state"),
            Ok(sta) => kubelet_metrics::with_graceful_shutdown(|m| {
                if sta.start_time.is_some() {
                    m.start_time.set(timestamp(sta.start_time));
                }
                if sta.end_time.is_some() {
                    m.end_time.set(timestamp(sta.end_time));
                }
            }),
        }
    }
}

impl PodAdmitHandler for ManagerImpl {
    /// `Admit`: every pod is rejected while the node shuts down.
    fn admit(&self, _attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult {
        if self.shutdown_status().is_err() {
            return PodAdmitResult::reject(
                NODE_SHUTDOWN_NOT_ADMITTED_REASON,
                NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE,
            );
        }
        PodAdmitResult::admit()
    }
}

#[async_trait]
impl Manager for ManagerImpl {
    async fn start(&self) -> Result<(), StartError> {
        let stop = Inner::start(&self.inner).await?;
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let mut stop = Some(stop);
            loop {
                if let Some(s) = stop.take() {
                    let _ = s.await;
                }
                tokio::time::sleep(DBUS_RECONNECT_PERIOD).await;
                tracing::debug!("Restarting watch for node shutdown events");
                match Inner::start(&inner).await {
                    Ok(s) => stop = Some(s),
                    Err(e) => {
                        tracing::error!(err = %e, "Unable to watch the node for shutdown events");
                    }
                }
            }
        });
        self.set_metrics();
        Ok(())
    }

    fn shutdown_status(&self) -> Result<(), String> {
        if *self
            .inner
            .node_shutting_down_now
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
        {
            return Err(NODE_IS_SHUTTING_DOWN.to_string());
        }
        Ok(())
    }
}

/// `wait.Backoff{Duration: 100ms, Factor: 2, Steps: 5}`.
const RELOAD_BACKOFF_INITIAL: Duration = Duration::from_millis(100);
const RELOAD_BACKOFF_STEPS: u32 = 5;

fn go_duration(d: Duration) -> kubelet_apimachinery::Duration {
    kubelet_apimachinery::Duration::from_std(d)
}

impl Inner {
    /// Upstream `start`: connect, make logind's delay at least the requested period, take
    /// the lock, watch `PrepareForShutdown`; the receiver fires when the watch ends.
    async fn start(self: &Arc<Self>) -> Result<oneshot::Receiver<()>, StartError> {
        let dbus_con = self.deps.connector.connect().await?;
        let mut conn = self.conn.lock().await;
        conn.dbus_con = Some(dbus_con.clone());
        let current_inhibit_delay = dbus_con.current_inhibit_delay().await?;
        let period_requested = self.pod_manager.period_requested();
        if period_requested > current_inhibit_delay {
            dbus_con
                .override_inhibit_delay(period_requested)
                .await
                .map_err(StartError::Override)?;
            dbus_con.reload_logind_conf().await?;
            // The reload is asynchronous: poll with exponential back-off.
            let mut delay = RELOAD_BACKOFF_INITIAL;
            let mut attempt = 0;
            let mut updated_inhibit_delay;
            loop {
                attempt += 1;
                updated_inhibit_delay = dbus_con.current_inhibit_delay().await?;
                if period_requested <= updated_inhibit_delay {
                    break;
                }
                if attempt >= RELOAD_BACKOFF_STEPS {
                    return Err(StartError::InhibitDelayTimeout {
                        attempt,
                        requested: go_duration(period_requested),
                        current: go_duration(updated_inhibit_delay),
                    });
                }
                tracing::trace!(attempt, current = ?updated_inhibit_delay, requested = ?period_requested, "InhibitDelayMaxSec still less than requested, retrying");
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
        acquire_inhibit_lock(&mut conn).await?;
        let mut events = match dbus_con.monitor_shutdown().await {
            Ok(e) => e,
            Err(monitor) => {
                if let Some(lock) = conn.inhibit_lock.take()
                    && let Err(release) = dbus_con.release_inhibit_lock(lock)
                {
                    return Err(StartError::MonitorAndRelease { release, monitor });
                }
                return Err(StartError::Monitor(monitor));
            }
        };
        drop(conn);
        let (stop_tx, stop_rx) = oneshot::channel();
        let inner = self.clone();
        tokio::spawn(async move {
            // The logind inhibit delay pattern: the lock is held from the start; on
            // PrepareForShutdown(true) pods are killed and the lock released; on
            // PrepareForShutdown(false) (cancelled) the lock is taken again.
            loop {
                let Some(is_shutting_down) = events.recv().await else {
                    tracing::error!("Ended to watching the node for shutdown events");
                    let _ = stop_tx.send(());
                    return;
                };
                let shutdown_type = if is_shutting_down {
                    "shutdown"
                } else {
                    "cancelled"
                };
                tracing::debug!(
                    event = shutdown_type,
                    "Shutdown manager detected new shutdown event"
                );
                let message = if is_shutting_down {
                    "Shutdown manager detected shutdown event"
                } else {
                    "Shutdown manager detected shutdown cancellation"
                };
                inner.deps.recorder.event(
                    &inner.deps.node_ref,
                    EventType::Normal,
                    NODE_SHUTDOWN_EVENT,
                    message,
                );
                *inner
                    .node_shutting_down_now
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = is_shutting_down;
                if is_shutting_down {
                    // Update node status and the Ready condition.
                    inner.deps.pods.sync_node_status();
                    inner.process_shutdown_event().await;
                } else {
                    let mut conn = inner.conn.lock().await;
                    if let Err(e) = acquire_inhibit_lock(&mut conn).await {
                        tracing::debug!(err = %e, "Shutdown manager failed to take the inhibitor lock again");
                    }
                }
            }
        });
        Ok(stop_rx)
    }

    /// Upstream `processShutdownEvent`: records the start, kills the pods, records the
    /// end, releases the lock.
    async fn process_shutdown_event(&self) {
        tracing::debug!("Shutdown manager processing shutdown event");
        let active_pods = self.deps.pods.active_pods();
        let start_time = self.enable_metrics.then(|| {
            let start_time = self.deps.clock.now();
            if let Err(e) = self.storage.store(&State {
                start_time: Some(start_time),
                end_time: None,
            }) {
                tracing::error!(err = %e, "Failed to store graceful shutdown state");
            }
            kubelet_metrics::with_graceful_shutdown(|m| {
                m.start_time.set(timestamp(Some(start_time)));
                m.end_time.set(0.0);
            });
            start_time
        });
        self.pod_manager.kill_pods(&self.deps, &active_pods).await;
        if let Some(start_time) = start_time {
            let end_time = self.deps.clock.now();
            if let Err(e) = self.storage.store(&State {
                start_time: Some(start_time),
                end_time: Some(end_time),
            }) {
                tracing::error!(err = %e, "Failed to store graceful shutdown state");
            }
            kubelet_metrics::with_graceful_shutdown(|m| {
                m.end_time.set(timestamp(Some(end_time)));
            });
        }
        let mut conn = self.conn.lock().await;
        if let (Some(con), Some(lock)) = (conn.dbus_con.clone(), conn.inhibit_lock.take())
            && let Err(e) = con.release_inhibit_lock(lock)
        {
            tracing::debug!(err = %e, "Shutdown manager failed to release the inhibitor lock");
        }
        tracing::debug!(
            "Shutdown manager completed processing shutdown event, node will shutdown shortly"
        );
    }
}

/// Upstream `acquireInhibitLock`: a new lock, the previous one released.
async fn acquire_inhibit_lock(conn: &mut Conn) -> Result<(), DbusError> {
    let Some(con) = conn.dbus_con.clone() else {
        return Ok(());
    };
    let lock = con.inhibit_shutdown().await?;
    if let Some(old) = conn.inhibit_lock.replace(lock) {
        let _ = con.release_inhibit_lock(old);
    }
    Ok(())
}

/// The admit handler the kubelet adds (upstream appends the manager itself).
#[derive(Clone)]
pub struct ShutdownAdmitHandler(pub Arc<dyn Manager>);

impl PodAdmitHandler for ShutdownAdmitHandler {
    fn admit(&self, attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult {
        self.0.admit(attrs)
    }
}
