//! Registration and the node status loop: `pkg/kubelet/kubelet_node_status.go`
//! (`registerWithAPIServer`, `tryRegisterWithAPIServer`, the `reconcile*` helpers,
//! `initialNode`, `syncNodeStatus`, `updateNodeStatus`, `tryUpdateNodeStatus`, `updateNode`,
//! `nodeStatusHasChanged`) and the `kubelet.go` goroutines that drive them
//! (`updateRuntimeUp` every 5 s, `syncNodeStatus` every `nodeStatusUpdateFrequency`,
//! `fastStatusUpdateOnce` / `fastNodeStatusUpdate` every 100 ms until the node is Ready).
//!
//! The first try of a status update and the fast status update read the Node from the
//! kubelet's node informer when one is given ([`NodeStatusManager::with_node_lister`]);
//! without one, the first try reads it with `resourceVersion=0` (the apiserver's cache)
//! and the fast update uses the Node as last created, read or patched. Differences:
//! extended resources are never reset on re-registration (no device manager: upstream's
//! `ShouldResetExtendedResourceCapacity` is about device plugin checkpoints).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_apimachinery::goruntime::{GOOS, go_arch};
use kubelet_cm::capacity::is_huge_page_resource_name;
use kubelet_container::clock::{Clock, duration_between};
use serde_json::Value;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::api::{ApiError, NodeApi};
use crate::config::NodeStatusConfig;
use crate::patch::{normalized, prepare_patch_for_node_status};
use crate::runtime_state::RuntimeState;
use crate::setters::{SetterContext, SetterInputs, set_node_status};
use crate::source::{HostNetwork, NodeStatusSource};

/// `nodeStatusUpdateRetry`.
pub const NODE_STATUS_UPDATE_RETRY: usize = 5;

/// `nodeReadyGracePeriod`: how long `fastStatusUpdateOnce` tries.
pub const NODE_READY_GRACE_PERIOD: Duration = Duration::from_secs(120);

/// The period of `fastStatusUpdateOnce`.
pub const FAST_STATUS_UPDATE_PERIOD: Duration = Duration::from_millis(100);

/// How often `updateRuntimeUp` asks the runtime for its status.
pub const RUNTIME_UP_PERIOD: Duration = Duration::from_secs(5);

/// The registration back-off: the first retry after 100 ms, doubling, at most 7 s.
pub const REGISTRATION_BACKOFF: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(7));

/// `v1.LabelHostname`.
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// `v1.LabelOSStable`.
pub const LABEL_OS_STABLE: &str = "kubernetes.io/os";
/// `v1.LabelArchStable`.
pub const LABEL_ARCH_STABLE: &str = "kubernetes.io/arch";
/// `kubeletapis.LabelOS`.
pub const LABEL_OS: &str = "beta.kubernetes.io/os";
/// `kubeletapis.LabelArch`.
pub const LABEL_ARCH: &str = "beta.kubernetes.io/arch";
/// `volutil.ControllerManagedAttachAnnotation`.
pub const CONTROLLER_MANAGED_ATTACH_ANNOTATION: &str =
    "volumes.kubernetes.io/controller-managed-attach-detach";
/// `cloudproviderapi.TaintExternalCloudProvider`.
pub const TAINT_EXTERNAL_CLOUD_PROVIDER: &str = "node.cloudprovider.kubernetes.io/uninitialized";

/// The labels `updateDefaultLabels` keeps in line with the initial node.
const DEFAULT_LABELS: &[&str] = &[
    LABEL_HOSTNAME,
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    LABEL_OS_STABLE,
    LABEL_ARCH_STABLE,
    "node.kubernetes.io/windows-build",
    LABEL_OS,
    LABEL_ARCH,
];

/// The kubelet's own-Node informer (`nodeLister.Get`): the Node as last seen, if any.
pub type NodeListerFn = Arc<dyn Fn() -> Option<Node> + Send + Sync>;

/// Why a node status update failed.
#[derive(Debug, thiserror::Error)]
pub enum NodeStatusError {
    /// `updateNodeStatus` after `nodeStatusUpdateRetry` failed tries.
    #[error("update node status exceeds retry count")]
    RetriesExceeded,
}

#[derive(Debug)]
struct State {
    registration_completed: bool,
    last_status_report_time: Option<Timestamp>,
    /// `delayAfterNodeStatusChange`, in seconds (may be negative).
    delay_after_node_status_change: f64,
    reboot_event_recorded: bool,
    /// The Node as last created, read or patched (what upstream reads from its node
    /// lister in `fastNodeStatusUpdate`).
    last_node: Option<Node>,
}

/// After a failed heartbeat (a status update or a lease renewal: the API server was away),
/// the first try of each update
/// reads the Node from the API server for this long instead of from the node informer.
/// The informer's watch may take a while to come back after an outage (its reflector backs
/// off), and meanwhile kube-controller-manager may have set `Ready=Unknown` on the Node:
/// upstream compares its new status with the stale cached Ready and sends nothing until the
/// informer catches up (up to a minute here); kubelet-rs reads the Node itself and reports
/// Ready again at its next update. Two minutes cover the node monitor's 50 s grace period.
pub const FRESH_READS_AFTER_FAILURE: Duration = Duration::from_secs(120);

/// Registration and node status (the `Kubelet` fields and methods of
/// `kubelet_node_status.go`).
pub struct NodeStatusManager {
    cfg: NodeStatusConfig,
    /// The main client's calls (registration).
    api: Arc<dyn NodeApi>,
    /// The heartbeat client's calls (status).
    heartbeat: Arc<dyn NodeApi>,
    source: Arc<dyn NodeStatusSource>,
    host: Arc<dyn HostNetwork>,
    clock: Arc<dyn Clock>,
    runtime_state: RuntimeState,
    random: fn() -> f64,
    state: Mutex<State>,
    /// `syncNodeStatusMux`: one status sync (regular or fast) at a time.
    sync_lock: Mutex<()>,
    /// The kubelet's node informer (`nodeLister.Get`), when it has one.
    node_lister: Option<NodeListerFn>,
    /// See [`NodeStatusManager::note_heartbeat_failure`].
    fresh_reads_until: std::sync::Mutex<Option<Timestamp>>,
    /// `containerRuntimeReadyExpected`: set once the fast status update is over; runtime
    /// readiness errors are logged at V(4) before.
    runtime_ready_expected: AtomicBool,
}

impl std::fmt::Debug for NodeStatusManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeStatusManager")
            .field("node", &self.cfg.node_name)
            .finish_non_exhaustive()
    }
}

/// A uniform random number in `[0, 1)` (`rand.Float64`), from a randomly keyed hasher.
pub fn random_f64() -> f64 {
    use std::hash::{BuildHasher, RandomState};
    let bits = RandomState::new().hash_one(0u8) >> 11;
    #[allow(clippy::cast_precision_loss)]
    let r = bits as f64 / (1u64 << 53) as f64;
    r
}

/// `wait.Jitter(d, factor)`: `d` plus up to `factor × d`.
pub fn jitter(d: Duration, factor: f64) -> Duration {
    d.mul_f64(1.0 + factor * random_f64())
}

fn error_string(e: &ApiError) -> String {
    e.to_string()
}

impl NodeStatusManager {
    /// A manager for `cfg`; `api` uses the main client, `heartbeat` the heartbeat client.
    pub fn new(
        cfg: NodeStatusConfig,
        api: Arc<dyn NodeApi>,
        heartbeat: Arc<dyn NodeApi>,
        source: Arc<dyn NodeStatusSource>,
        host: Arc<dyn HostNetwork>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        NodeStatusManager {
            cfg,
            api,
            heartbeat,
            source,
            host,
            clock,
            runtime_state: RuntimeState::default(),
            random: random_f64,
            state: Mutex::new(State {
                registration_completed: false,
                last_status_report_time: None,
                delay_after_node_status_change: 0.0,
                reboot_event_recorded: false,
                last_node: None,
            }),
            sync_lock: Mutex::new(()),
            node_lister: None,
            fresh_reads_until: std::sync::Mutex::new(None),
            runtime_ready_expected: AtomicBool::new(false),
        }
    }

    /// Reads the Node from the kubelet's node informer where upstream does (the first try
    /// of a status update, the fast status update) instead of the API server.
    pub fn with_node_lister(mut self, lister: NodeListerFn) -> Self {
        self.node_lister = Some(lister);
        self
    }

    /// Replaces the random source of `calculateDelay` (tests).
    pub fn with_random(mut self, random: fn() -> f64) -> Self {
        self.random = random;
        self
    }

    /// The runtime health the Ready condition reports.
    pub fn runtime_state(&self) -> &RuntimeState {
        &self.runtime_state
    }

    /// Whether registration succeeded.
    pub async fn registration_completed(&self) -> bool {
        self.state.lock().await.registration_completed
    }

    /// `updateRuntimeUp`: one CRI `Status` call into the runtime state.
    pub async fn update_runtime_up(&self) {
        let status = self.source.runtime_status().await;
        let loud = self.runtime_ready_expected.load(Ordering::Relaxed);
        self.runtime_state.update_runtime_up(status, loud);
    }

    /// What the setters read, now.
    pub async fn gather_inputs(&self) -> SetterInputs {
        let pressure = self.source.pressure();
        SetterInputs {
            now: self.clock.now(),
            machine: self.source.machine(),
            root_fs_capacity: self.source.root_fs_capacity(),
            runtime_type: self.source.runtime_type(),
            runtime_version: self.source.runtime_version().await,
            images: self.source.images().await,
            runtime_errors: self
                .runtime_state
                .runtime_errors(&self.source.health_checks()),
            network_errors: self.runtime_state.network_errors(),
            runtime_features: self.runtime_state.runtime_features(),
            node_shutdown_error: self.source.shutdown_status().err(),
            memory_pressure: pressure.memory,
            disk_pressure: pressure.disk,
            pid_pressure: pressure.pid,
        }
    }

    fn set_node_status(&self, node: &mut Node, inputs: &SetterInputs, state: &mut State) {
        let mut ctx = SetterContext {
            cfg: &self.cfg,
            inputs,
            host: self.host.as_ref(),
            events: Vec::new(),
            reboot_event_recorded: &mut state.reboot_event_recorded,
        };
        set_node_status(node, &mut ctx);
        for e in ctx.events {
            self.source.record_event(e);
        }
    }

    /// `initialNode`: labels, taints, annotations, provider ID and the first status.
    pub async fn initial_node(&self) -> Node {
        let inputs = self.gather_inputs().await;
        let mut state = self.state.lock().await;
        self.initial_node_with(&inputs, &mut state)
    }

    fn initial_node_with(&self, inputs: &SetterInputs, state: &mut State) -> Node {
        let cfg = &self.cfg;
        let mut labels = BTreeMap::from([
            (LABEL_HOSTNAME.to_string(), cfg.hostname.clone()),
            (LABEL_OS_STABLE.to_string(), GOOS.to_string()),
            (LABEL_ARCH_STABLE.to_string(), go_arch().to_string()),
            (LABEL_OS.to_string(), GOOS.to_string()),
            (LABEL_ARCH.to_string(), go_arch().to_string()),
        ]);
        let mut taints = cfg.register_with_taints.clone();
        if cfg.external_cloud_provider {
            taints.push(k8s_openapi::api::core::v1::Taint {
                key: TAINT_EXTERNAL_CLOUD_PROVIDER.into(),
                value: Some("true".into()),
                effect: "NoSchedule".into(),
                time_added: None,
            });
        }
        let mut annotations = BTreeMap::new();
        if cfg.enable_controller_attach_detach {
            tracing::debug!("Setting node annotation to enable volume controller attach/detach");
            annotations.insert(
                CONTROLLER_MANAGED_ATTACH_ANNOTATION.to_string(),
                "true".into(),
            );
        } else {
            tracing::debug!(
                "Controller attach/detach is disabled for this node; Kubelet will attach and detach volumes"
            );
        }
        for (k, v) in &cfg.node_labels {
            if let Some(cv) = labels.get(k) {
                tracing::info!(labelKey = %k, labelValue = %v, default = %cv, "the node label will overwrite default setting");
            }
            labels.insert(k.clone(), v.clone());
        }
        let spec = NodeSpec {
            taints: (!taints.is_empty()).then_some(taints),
            provider_id: (!cfg.provider_id.is_empty()).then(|| cfg.provider_id.clone()),
            ..NodeSpec::default()
        };
        let mut node = Node {
            metadata: ObjectMeta {
                name: Some(cfg.node_name.clone()),
                labels: Some(labels),
                annotations: (!annotations.is_empty()).then_some(annotations),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
            status: Some(NodeStatus::default()),
        };
        self.set_node_status(&mut node, inputs, state);
        node
    }

    /// `registerWithAPIServer`: builds the initial node and tries to register it until it
    /// works, sleeping 100 ms doubling to 7 s before each retry. Returns false when cancelled.
    ///
    /// Upstream also sleeps 100 ms before the first try; here the first try is immediate,
    /// which takes 100 ms off every node start (ARCHITECTURE.md, deliberate differences).
    pub async fn register_with_api_server(&self, cancel: &CancellationToken) -> bool {
        if self.state.lock().await.registration_completed {
            return true;
        }
        let (mut step, max) = REGISTRATION_BACKOFF;
        let mut first = true;
        loop {
            if !first {
                tokio::select! {
                    () = cancel.cancelled() => return false,
                    () = tokio::time::sleep(step) => {}
                }
                step = (step * 2).min(max);
            }
            first = false;
            let inputs = self.gather_inputs().await;
            let node = {
                let mut state = self.state.lock().await;
                self.initial_node_with(&inputs, &mut state)
            };
            tracing::info!(node = %self.cfg.node_name, "Attempting to register node");
            if self.try_register_with_api_server(&node).await {
                tracing::info!(node = %self.cfg.node_name, "Successfully registered node");
                self.state.lock().await.registration_completed = true;
                return true;
            }
        }
    }

    /// `tryRegisterWithAPIServer`: create; when it exists (or creating is forbidden), get
    /// it and reconcile the attach-detach annotation, default labels and resources.
    pub async fn try_register_with_api_server(&self, node: &Node) -> bool {
        let name = &self.cfg.node_name;
        let err = match self.api.create_node(node).await {
            Ok(created) => {
                self.state.lock().await.last_node = Some(created);
                return true;
            }
            Err(e) => e,
        };
        if err.is_already_exists() {
        } else if err.is_forbidden() {
            if self.cfg.registration_get_on_exists_only {
                tracing::error!(err = %err, node = %name, "Unable to register node with API server, reason is forbidden");
                return false;
            }
        } else {
            tracing::error!(err = %err, node = %name, "Unable to register node with API server");
            return false;
        }
        let mut existing = match self.api.get_node(name, false).await {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(err = %error_string(&e), node = %name, "Unable to register node with API server, error getting existing node");
                return false;
            }
        };
        let original = existing.clone();
        tracing::info!(node = %name, "Node was previously registered");
        let mut requires_update = reconcile_cmad_annotation_with_existing_node(node, &mut existing);
        requires_update = update_default_labels(node, &mut existing) || requires_update;
        requires_update = reconcile_extended_resource(node, &mut existing) || requires_update;
        requires_update = reconcile_huge_page_resource(node, &mut existing) || requires_update;
        if requires_update {
            let result = match prepare_patch_for_node_status(name, &original, &existing) {
                Ok(patch) => self
                    .api
                    .patch_node_status(name, &patch)
                    .await
                    .map_err(|e| patch_error(&patch, name, &e)),
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = result {
                tracing::error!(err = %e, node = %name, "Unable to reconcile node with API server,error updating node");
                return false;
            }
        }
        true
    }

    /// `syncNodeStatus`: registers first (`registerNode`), then `updateNodeStatus`.
    /// Returns false when cancelled during registration.
    pub async fn sync_node_status(&self, cancel: &CancellationToken) -> bool {
        let _sync = self.sync_lock.lock().await;
        if self.cfg.register_node && !self.register_with_api_server(cancel).await {
            return false;
        }
        if let Err(e) = self.update_node_status().await {
            tracing::error!(err = %e, "Unable to update node status");
        }
        true
    }

    /// A heartbeat failed (the lease could not be renewed, or a status update failed): for
    /// [`FRESH_READS_AFTER_FAILURE`] the first try of each status update reads the Node from
    /// the API server instead of the node informer.
    pub fn note_heartbeat_failure(&self) {
        let until = self.clock.now().checked_add(FRESH_READS_AFTER_FAILURE).ok();
        *self
            .fresh_reads_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = until;
    }

    /// `updateNodeStatus`: up to [`NODE_STATUS_UPDATE_RETRY`] tries.
    pub async fn update_node_status(&self) -> Result<(), NodeStatusError> {
        tracing::trace!("Updating node status");
        for i in 0..NODE_STATUS_UPDATE_RETRY {
            match self.try_update_node_status(i).await {
                Ok(()) => return Ok(()),
                Err(e) => {
                    tracing::error!(err = %e, "Error updating node status, will retry");
                    // A Node the informer has not seen yet (just registered) is no sign of
                    // an unreachable API server: the retry reads it from the API server.
                    if !matches!(e, TryUpdateError::NotInLister(_)) {
                        self.note_heartbeat_failure();
                    }
                }
            }
        }
        Err(NodeStatusError::RetriesExceeded)
    }

    /// `tryUpdateNodeStatus`: reads the node (the first try from the apiserver's cache),
    /// computes the status and patches it when it changed or `nodeStatusReportFrequency`
    /// (± the random delay after a change) has passed since the last report.
    pub async fn try_update_node_status(&self, try_number: usize) -> Result<(), TryUpdateError> {
        let name = &self.cfg.node_name;
        let fresh = self
            .fresh_reads_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some_and(|until| self.clock.now() < until);
        let original = match (&self.node_lister, try_number) {
            (Some(lister), 0) if !fresh => lister().ok_or_else(|| {
                TryUpdateError::NotInLister(format!(
                    "error getting node \"{name}\": node \"{name}\" not found"
                ))
            })?,
            _ => self
                .heartbeat
                .get_node(name, try_number == 0 && !fresh)
                .await
                .map_err(|e| {
                    TryUpdateError::Other(format!("error getting node \"{name}\": {e}"))
                })?,
        };
        self.state.lock().await.last_node = Some(original.clone());
        let inputs = self.gather_inputs().await;
        let mut state = self.state.lock().await;
        let (node, changed) = self.update_node(&original, &inputs, &mut state);
        if !(changed || self.is_update_status_period_expired(&state)) {
            return Ok(());
        }
        state.delay_after_node_status_change = if changed || state.last_status_report_time.is_none()
        {
            self.calculate_delay()
        } else {
            0.0
        };
        drop(state);
        self.patch_node_status(&original, &node)
            .await
            .map_err(TryUpdateError::Other)
    }

    /// `patchNodeStatus`: the patch from `original` to `node`; on success the report time
    /// and the last known Node are updated.
    async fn patch_node_status(&self, original: &Node, node: &Node) -> Result<(), String> {
        let name = &self.cfg.node_name;
        let patch =
            prepare_patch_for_node_status(name, original, node).map_err(|e| e.to_string())?;
        let updated = self
            .heartbeat
            .patch_node_status(name, &patch)
            .await
            .map_err(|e| patch_error(&patch, name, &e))?;
        let mut state = self.state.lock().await;
        state.last_status_report_time = Some(self.clock.now());
        state.last_node = Some(updated);
        Ok(())
    }

    /// `fastStatusUpdateOnce`: every 100 ms, until the node was reported Ready or
    /// `nodeReadyGracePeriod` passed, checks whether the kubelet and the runtime would make
    /// the node Ready and patches that at once.
    pub async fn fast_status_update_once(self: Arc<Self>, cancel: CancellationToken) {
        let start = tokio::time::Instant::now();
        loop {
            if self
                .fast_node_status_update(start.elapsed() >= NODE_READY_GRACE_PERIOD)
                .await
            {
                self.runtime_ready_expected.store(true, Ordering::Relaxed);
                return;
            }
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(FAST_STATUS_UPDATE_PERIOD) => {}
            }
        }
    }

    /// `fastNodeStatusUpdate`: whether the fast updates are over.
    async fn fast_node_status_update(&self, timeout: bool) -> bool {
        let _sync = self.sync_lock.lock().await;
        if timeout {
            tracing::error!("Node not becoming ready in time after startup");
            return true;
        }
        let from_lister = self.node_lister.as_ref().and_then(|l| l());
        let Some(original) = from_lister.or(self.state.lock().await.last_node.clone()) else {
            // Not registered yet.
            return false;
        };
        let is_ready = |n: &Node| {
            n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| {
                    c.iter()
                        .find(|c| c.type_ == crate::setters::condition::READY)
                })
                .map(|c| c.status == "True")
        };
        match is_ready(&original) {
            None => {
                tracing::error!(node = %self.cfg.node_name, "Node does not have NodeReady condition");
                return false;
            }
            Some(true) => return true,
            Some(false) => {}
        }
        self.update_runtime_up().await;
        let inputs = self.gather_inputs().await;
        let (node, changed) = {
            let mut state = self.state.lock().await;
            self.update_node(&original, &inputs, &mut state)
        };
        if !changed || is_ready(&node) != Some(true) {
            return false;
        }
        tracing::info!("Fast updating node status as it just became ready");
        if let Err(e) = self.patch_node_status(&original, &node).await {
            tracing::error!(err = %e, "Error updating node status, will retry with syncNodeStatus");
            if let Err(e) = self.update_node_status().await {
                tracing::error!(err = %e, "Unable to update node status");
            }
        }
        true
    }

    fn is_update_status_period_expired(&self, state: &State) -> bool {
        let Some(last) = state.last_status_report_time else {
            return true;
        };
        let since = duration_between(last, self.clock.now()).as_secs_f64();
        since
            >= self.cfg.node_status_report_frequency.as_secs_f64()
                + state.delay_after_node_status_change
    }

    /// `calculateDelay`: uniform in ±½ `nodeStatusReportFrequency`.
    fn calculate_delay(&self) -> f64 {
        self.cfg.node_status_report_frequency.as_secs_f64() * (-0.5 + (self.random)())
    }

    /// `updateNode`: a copy of `original` with the OS/arch labels and the status set, and
    /// whether anything but heartbeat times changed.
    fn update_node(
        &self,
        original: &Node,
        inputs: &SetterInputs,
        state: &mut State,
    ) -> (Node, bool) {
        let mut node = original.clone();
        let labels = node.metadata.labels.get_or_insert_with(BTreeMap::new);
        let mut required_labels_missing = false;
        for (k, v) in [(LABEL_OS_STABLE, GOOS), (LABEL_ARCH_STABLE, go_arch())] {
            if labels.get(k).map(String::as_str) != Some(v) {
                labels.insert(k.to_string(), v.to_string());
                required_labels_missing = true;
            }
        }
        self.set_node_status(&mut node, inputs, state);
        let changed = node_status_has_changed(original.status.as_ref(), node.status.as_ref())
            || required_labels_missing;
        (node, changed)
    }

    /// The status loop (`kubelet.go` `Run`): `updateRuntimeUp` once, then `syncNodeStatus`
    /// every `nodeStatusUpdateFrequency` (4 % jitter, sliding) until cancelled.
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) {
        self.update_runtime_up().await;
        loop {
            if !self.sync_node_status(&cancel).await {
                return;
            }
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(jitter(self.cfg.node_status_update_frequency, 0.04)) => {}
            }
        }
    }

    /// `go wait.Until(kl.updateRuntimeUp, 5*time.Second)`.
    pub async fn run_runtime_up(self: Arc<Self>, cancel: CancellationToken) {
        loop {
            self.update_runtime_up().await;
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(RUNTIME_UP_PERIOD) => {}
            }
        }
    }
}

/// Why one try of `tryUpdateNodeStatus` failed.
#[derive(Debug, thiserror::Error)]
pub enum TryUpdateError {
    /// The node informer does not have the Node (yet).
    #[error("{0}")]
    NotInLister(String),
    /// Reading or patching the Node failed.
    #[error("{0}")]
    Other(String),
}

fn patch_error(patch: &Value, name: &str, e: &ApiError) -> String {
    format!(
        "failed to patch status {:?} for node {name:?}: {e}",
        patch.to_string()
    )
}

/// `nodeStatusHasChanged`: conditions compared without heartbeat times (sorted by type),
/// the rest semantically.
pub fn node_status_has_changed(original: Option<&NodeStatus>, status: Option<&NodeStatus>) -> bool {
    let (o, s) = match (original, status) {
        (None, None) => return false,
        (Some(o), Some(s)) => (o, s),
        _ => return true,
    };
    let strip = |st: &NodeStatus| -> (Value, Vec<Value>) {
        let mut conditions: Vec<_> = st.conditions.clone().unwrap_or_default();
        conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
        let conditions = conditions
            .into_iter()
            .map(|mut c| {
                c.last_heartbeat_time = None;
                serde_json::to_value(c).unwrap_or_default()
            })
            .collect();
        let mut rest = st.clone();
        rest.conditions = None;
        let rest = normalized(serde_json::json!({ "status": rest }));
        (rest, conditions)
    };
    strip(o) != strip(s)
}

/// `reconcileCMADAnnotationWithExistingNode`.
pub fn reconcile_cmad_annotation_with_existing_node(node: &Node, existing: &mut Node) -> bool {
    let get = |n: &Node| {
        n.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(CONTROLLER_MANAGED_ATTACH_ANNOTATION))
            .cloned()
    };
    let new = get(node);
    if new.as_deref().unwrap_or_default() == get(existing).as_deref().unwrap_or_default() {
        return false;
    }
    match new {
        None => {
            tracing::info!(
                "Controller attach-detach setting changed to false; updating existing Node"
            );
            if let Some(a) = existing.metadata.annotations.as_mut() {
                a.remove(CONTROLLER_MANAGED_ATTACH_ANNOTATION);
            }
        }
        Some(v) => {
            tracing::info!(
                "Controller attach-detach setting changed to true; updating existing Node"
            );
            existing
                .metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(CONTROLLER_MANAGED_ATTACH_ANNOTATION.into(), v);
        }
    }
    true
}

/// `updateDefaultLabels`: the default labels of the initial node win; empty ones are
/// removed.
pub fn update_default_labels(initial: &Node, existing: &mut Node) -> bool {
    let empty = BTreeMap::new();
    let initial_labels = initial.metadata.labels.as_ref().unwrap_or(&empty);
    let labels = existing.metadata.labels.get_or_insert_with(BTreeMap::new);
    let mut needs_update = false;
    for label in DEFAULT_LABELS {
        let Some(value) = initial_labels.get(*label) else {
            continue;
        };
        if labels.get(*label) != Some(value) {
            labels.insert((*label).to_string(), value.clone());
            needs_update = true;
        }
        if labels.get(*label).is_some_and(String::is_empty) {
            labels.remove(*label);
        }
    }
    needs_update
}

/// `updateDefaultResources`: an existing node without capacity/allocatable takes the
/// initial node's.
fn update_default_resources(initial: &Node, existing: &mut Node) -> bool {
    let init = initial.status.clone().unwrap_or_default();
    let st = existing.status.get_or_insert_with(NodeStatus::default);
    let mut requires_update = false;
    if st.capacity.is_none() {
        requires_update |= init.capacity.is_some();
        st.capacity = Some(init.capacity.unwrap_or_default());
    }
    if st.allocatable.is_none() {
        requires_update |= init.allocatable.is_some();
        st.allocatable = Some(init.allocatable.unwrap_or_default());
    }
    requires_update
}

/// `reconcileExtendedResource` without a device manager: only the default resources.
pub fn reconcile_extended_resource(initial: &Node, existing: &mut Node) -> bool {
    update_default_resources(initial, existing)
}

/// `reconcileHugePageResource`: huge page capacity and allocatable as the initial node
/// has them; sizes no longer supported are removed.
pub fn reconcile_huge_page_resource(initial: &Node, existing: &mut Node) -> bool {
    let mut requires_update = update_default_resources(initial, existing);
    let init = initial.status.clone().unwrap_or_default();
    let init_cap = init.capacity.unwrap_or_default();
    let init_alloc = init.allocatable.unwrap_or_default();
    let st = existing.status.get_or_insert_with(NodeStatus::default);
    let cap = st.capacity.get_or_insert_with(BTreeMap::new);
    let alloc = st.allocatable.get_or_insert_with(BTreeMap::new);
    let same =
        |a: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
         b: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
            let parse = |q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
                q.and_then(|q| kubelet_apimachinery::Quantity::parse(&q.0).ok())
                    .unwrap_or_default()
            };
            parse(a).cmp_value(&parse(b)).is_eq()
        };
    for (name, initial_capacity) in init_cap
        .iter()
        .filter(|(k, _)| is_huge_page_resource_name(k))
    {
        let supported = cap.contains_key(name);
        if !supported || !same(cap.get(name), Some(initial_capacity)) {
            cap.insert(name.clone(), initial_capacity.clone());
            requires_update = true;
        }
        if !supported || !same(alloc.get(name), init_alloc.get(name)) {
            alloc.insert(
                name.clone(),
                init_alloc.get(name).cloned().unwrap_or_default(),
            );
            requires_update = true;
        }
    }
    let stale: Vec<String> = cap
        .keys()
        .filter(|k| is_huge_page_resource_name(k) && !init_cap.contains_key(*k))
        .cloned()
        .collect();
    for name in stale {
        cap.remove(&name);
        alloc.remove(&name);
        tracing::info!(resourceName = %name, "Removing huge page resource which is no longer supported");
        requires_update = true;
    }
    requires_update
}
