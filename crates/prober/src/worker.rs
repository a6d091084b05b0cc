//! One probe of one container, probed periodically on its own task (upstream
//! `pkg/kubelet/prober/worker.go`).
//!
//! The task sleeps a random jitter up to the period (only while the kubelet is younger than a
//! period, so probes of pods found at start spread out), then probes on a ticker of
//! `periodSeconds`, or at once when the manager triggers it, until it is stopped or the pod is
//! terminal. Results are keyed by container ID: a new container starts from the probe type's
//! initial value, and after a liveness failure (or any startup result) the worker is on hold
//! until the container ID changes.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodSpec, Probe};
use kubelet_container::{ContainerId, ProbeResult, ProbeType, container_should_restart, gates};
use tokio::sync::Notify;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use crate::manager::{ProbeKey, Shared};
use crate::prober::{probe_spec, probe_type_name};

/// Upstream `kubeletRestartGracePeriod`: containers started more than this before the kubelet
/// are treated as running across a kubelet restart.
const KUBELET_RESTART_GRACE: Duration = Duration::from_secs(10);

/// A worker's state (upstream `worker`).
pub(crate) struct Worker {
    pub(crate) key: ProbeKey,
    pub(crate) id: u64,
    pub(crate) pod: Arc<Pod>,
    pub(crate) container: Container,
    pub(crate) spec: Probe,
    pub(crate) shared: Arc<Shared>,
    pub(crate) stop: CancellationToken,
    pub(crate) trigger: Arc<Notify>,
    container_id: Option<ContainerId>,
    last_result: Option<ProbeResult>,
    result_run: i32,
    on_hold: bool,
}

fn initial_value(t: ProbeType) -> ProbeResult {
    match t {
        ProbeType::Readiness => ProbeResult::Failure,
        ProbeType::Liveness => ProbeResult::Success,
        ProbeType::Startup => ProbeResult::Unknown,
    }
}

fn seconds(v: Option<i32>, default: i32) -> i32 {
    v.filter(|v| *v > 0).unwrap_or(default)
}

impl Worker {
    /// Upstream `newWorker`; `None` when the container has no such probe.
    pub(crate) fn new(
        shared: Arc<Shared>,
        key: ProbeKey,
        id: u64,
        pod: Arc<Pod>,
        container: Container,
    ) -> Option<Self> {
        let spec = probe_spec(&container, key.probe_type)?.clone();
        Some(Self {
            key,
            id,
            pod,
            container,
            spec,
            shared,
            stop: CancellationToken::new(),
            trigger: Arc::new(Notify::new()),
            container_id: None,
            last_result: None,
            result_run: 0,
            on_hold: false,
        })
    }

    fn period(&self) -> Duration {
        Duration::from_secs(u64::try_from(seconds(self.spec.period_seconds, 10)).unwrap_or(10))
    }

    fn results(&self) -> &crate::results::ResultsManager {
        self.shared.results.manager(self.key.probe_type)
    }

    fn is_init_container(&self) -> bool {
        self.pod
            .spec
            .iter()
            .flat_map(|s| s.init_containers.iter().flatten())
            .any(|c| c.name == self.container.name)
    }

    /// Upstream `run`: jitter, then probe on every tick or trigger until stopped.
    pub(crate) async fn run(mut self) {
        let period = self.period();
        if period > self.shared.start.elapsed() {
            let jitter = period.mul_f64(fastrand::f64());
            tokio::select! {
                () = self.stop.cancelled() => return self.finish(),
                () = tokio::time::sleep(jitter) => {}
            }
        }
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        while self.do_probe().await {
            tokio::select! {
                () = self.stop.cancelled() => break,
                _ = ticker.tick() => {}
                () = self.trigger.notified() => ticker.reset(),
            }
        }
        self.finish();
    }

    /// Upstream's deferred cleanup of `run`.
    fn finish(&self) {
        if let Some(id) = &self.container_id {
            self.results().remove(id);
        }
        self.shared.remove_worker(&self.key, self.id);
        // The worker's series go with it (upstream deletes its label sets).
        let (total_labels, duration_labels) = self.metric_labels();
        kubelet_metrics::with_prober(|m| {
            for result in ["successful", "failed", "unknown"] {
                let mut labels = total_labels.clone();
                labels.insert(1, result);
                let _ = m.probe_total.remove_label_values(&labels);
            }
            let _ = m.probe_duration.remove_label_values(&duration_labels);
        });
    }

    /// The `prober_probe_total` labels without `result` (inserted at index 1) and the
    /// `prober_probe_duration_seconds` labels, in declaration order.
    fn metric_labels(&self) -> (Vec<&str>, Vec<&str>) {
        let probe_type = probe_type_name(self.key.probe_type);
        let name = self.pod.metadata.name.as_deref().unwrap_or_default();
        let namespace = self.pod.metadata.namespace.as_deref().unwrap_or_default();
        let container = self.container.name.as_str();
        (
            vec![
                probe_type,
                container,
                name,
                namespace,
                self.key.pod_uid.as_str(),
            ],
            vec![probe_type, container, name, namespace],
        )
    }

    /// `ProberResults` and `ProberDuration` for one probe result (a failure's duration
    /// is not observed, as upstream).
    fn record_probe(&self, result: ProbeResult, start: std::time::Instant) {
        let (mut total_labels, duration_labels) = self.metric_labels();
        let label = match result {
            ProbeResult::Success => "successful",
            ProbeResult::Failure => "failed",
            ProbeResult::Unknown => "unknown",
        };
        total_labels.insert(1, label);
        let secs = start.elapsed().as_secs_f64();
        kubelet_metrics::with_prober(|m| {
            m.probe_total.with_label_values(&total_labels).inc();
            if result != ProbeResult::Failure {
                m.probe_duration
                    .with_label_values(&duration_labels)
                    .observe(secs);
            }
        });
    }

    /// One probe round; false when the worker should stop (upstream `doProbe`).
    pub(crate) async fn do_probe(&mut self) -> bool {
        let start = std::time::Instant::now();
        let uid = self.key.pod_uid.as_str();
        let Some(status) = self.shared.status.get_pod_status(uid) else {
            tracing::trace!(pod = uid, "No status for pod");
            return true;
        };
        if matches!(status.phase.as_deref(), Some("Failed" | "Succeeded")) {
            tracing::debug!(pod = uid, phase = ?status.phase, "Pod is terminated, exiting probe worker");
            return false;
        }
        let find = |list: Option<&Vec<ContainerStatus>>| {
            list.into_iter()
                .flatten()
                .find(|c| {
                    c.name == self.container.name
                        && c.container_id.as_deref().is_some_and(|id| !id.is_empty())
                })
                .cloned()
        };
        let Some(c) = find(status.container_statuses.as_ref())
            .or_else(|| find(status.init_container_statuses.as_ref()))
        else {
            tracing::trace!(pod = uid, container = %self.container.name, "Probe target container not found");
            return true;
        };
        let probe_type = self.key.probe_type;
        let restartable_init =
            self.is_init_container() && self.container.restart_policy.as_deref() == Some("Always");
        let running = c.state.as_ref().and_then(|s| s.running.as_ref());
        let started_at = running.and_then(|r| r.started_at.as_ref()).map(|t| t.0);

        let current: Option<ContainerId> = c.container_id.as_deref().and_then(|s| s.parse().ok());
        if current != self.container_id {
            if let Some(old) = &self.container_id {
                self.results().remove(old);
            }
            self.container_id = current;
            if let Some(id) = &self.container_id {
                if self.shared.change_container_status_on_kubelet_restart {
                    self.results().set(id, initial_value(probe_type), uid);
                } else {
                    let restart_grace = self
                        .shared
                        .start_wall
                        .checked_sub(KUBELET_RESTART_GRACE)
                        .unwrap_or(self.shared.start_wall);
                    // A container that ran before the kubelet started keeps its state.
                    let is_restart = started_at.is_some_and(|t| t < restart_grace);
                    if restartable_init
                        && probe_type == ProbeType::Startup
                        && c.started == Some(true)
                    {
                        self.results().set(id, ProbeResult::Success, uid);
                    }
                    if !is_restart {
                        self.results().set(id, initial_value(probe_type), uid);
                    }
                }
            }
            self.on_hold = false;
        }
        if self.on_hold {
            return true;
        }
        let Some(id) = self.container_id.clone() else {
            return true;
        };

        if running.is_none() {
            tracing::trace!(pod = uid, container = %self.container.name, "Non-running container probed");
            self.results().set(&id, ProbeResult::Failure, uid);
            // Keep probing while the container will be restarted.
            let Some(terminated) = c.state.as_ref().and_then(|s| s.terminated.as_ref()) else {
                return true;
            };
            return self.container_should_restart(terminated.exit_code, restartable_init);
        }

        if self.pod.metadata.deletion_timestamp.is_some()
            && matches!(probe_type, ProbeType::Liveness | ProbeType::Startup)
        {
            tracing::debug!(pod = uid, container = %self.container.name, probe = probe_type_name(probe_type), "Pod deletion requested, setting probe result to success");
            self.results().set(&id, ProbeResult::Success, uid);
            return false;
        }

        let initial_delay =
            u64::try_from(self.spec.initial_delay_seconds.unwrap_or(0)).unwrap_or(0);
        let since_start = started_at.map_or(Duration::ZERO, |t| {
            kubelet_container::clock::duration_between(t, self.shared.clock.now())
        });
        if since_start.as_secs() < initial_delay {
            return true;
        }

        // Startup probes run until the container has started; the others only after.
        let started = c.started == Some(true);
        if started == (probe_type == ProbeType::Startup) {
            return true;
        }

        let result = match self
            .shared
            .prober
            .probe(probe_type, &self.pod, &status, &self.container, &id)
            .await
        {
            Ok(result) => result,
            // Errors are not counted (upstream: "Prober error, throw away the result").
            Err(_) => return true,
        };
        self.record_probe(result, start);

        if self.last_result == Some(result) {
            self.result_run += 1;
        } else {
            self.last_result = Some(result);
            self.result_run = 1;
        }
        let failure_threshold = seconds(self.spec.failure_threshold, 3);
        let success_threshold = seconds(self.spec.success_threshold, 1);
        if (result == ProbeResult::Failure && self.result_run < failure_threshold)
            || (result == ProbeResult::Success && self.result_run < success_threshold)
        {
            // Success or failure is below the threshold: leave the result alone.
            return true;
        }
        self.results().set(&id, result, uid);

        if (probe_type == ProbeType::Liveness && result == ProbeResult::Failure)
            || probe_type == ProbeType::Startup
        {
            // The container will be restarted (or has started): stop probing until a new
            // container ID shows up.
            self.on_hold = true;
            self.result_run = 0;
        }
        true
    }

    /// Whether the exited container will be restarted (upstream `doProbe`): with `ContainerRestartRules` (on by default) the container's rules and policy, then
    /// the pod's; with the gate off, a pod policy other than `Never` or a sidecar.
    fn container_should_restart(&self, exit_code: i32, restartable_init: bool) -> bool {
        let default_spec = PodSpec::default();
        let spec = self.pod.spec.as_ref().unwrap_or(&default_spec);
        if gates::container_restart_rules() {
            return container_should_restart(&self.container, spec, exit_code);
        }
        spec.restart_policy.as_deref() != Some("Never") || restartable_init
    }
}
