//! The pod startup SLI (`pkg/kubelet/util/pod_startup_latency_tracker.go`): for a pod the
//! kubelet first sees on the API watch before it started, the time from its creation to
//! the watch showing every container running, minus the time spent pulling images, goes to
//! `kubelet_pod_start_sli_duration_seconds`; without subtracting the pulls to
//! `kubelet_pod_start_total_duration_seconds`; the first such pod with a pod network also
//! sets `kubelet_first_network_pod_start_sli_duration_seconds`.
//!
//! Fed by the pod config (`ObservedPodOnWatch`, API pods only), the image manager (pull
//! start and end) and the status manager (`RecordStatusUpdated` after a status reached the
//! API server, `DeletePodStartupState` when it forgets a pod). One tracker per process,
//! like the metrics it writes ([`global`]).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::core::v1::Pod;

#[derive(Debug, Default)]
struct PerPodState {
    first_started_pulling: Option<Instant>,
    last_finished_pulling: Option<Instant>,
    observed_running: bool,
    metric_recorded: bool,
}

/// `basicPodStartupLatencyTracker`.
#[derive(Debug, Default)]
pub struct PodStartupLatencyTracker {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    pods: HashMap<String, PerPodState>,
    first_network_pod_seen: bool,
}

static GLOBAL: LazyLock<PodStartupLatencyTracker> =
    LazyLock::new(PodStartupLatencyTracker::default);

/// The kubelet's tracker.
pub fn global() -> &'static PodStartupLatencyTracker {
    &GLOBAL
}

fn uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

/// `hasPodStartedSLO`: every container has been running (with a start time).
fn has_pod_started_slo(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .all(|cs| {
            cs.state
                .as_ref()
                .and_then(|s| s.running.as_ref())
                .is_some_and(|r| r.started_at.is_some())
        })
}

impl PodStartupLatencyTracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `ObservedPodOnWatch`: the pod as the watch delivered it at `when`. Returns the
    /// (SLI, total) seconds when this observation recorded them.
    pub fn observed_pod_on_watch(&self, pod: &Pod, when: SystemTime) -> Option<(f64, f64)> {
        let mut inner = self.lock();
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Failed" | "Succeeded")) {
            inner.pods.remove(uid(pod));
            return None;
        }
        let Some(state) = inner.pods.get_mut(uid(pod)) else {
            // Only pods not yet acknowledged by this kubelet (scheduled after it started).
            if pod
                .status
                .as_ref()
                .and_then(|s| s.start_time.as_ref())
                .is_none()
            {
                inner
                    .pods
                    .insert(uid(pod).to_string(), PerPodState::default());
            }
            return None;
        };
        if !state.observed_running || state.metric_recorded || !has_pod_started_slo(pod) {
            return None;
        }
        let created = pod.metadata.creation_timestamp.as_ref()?.0;
        let created = SystemTime::UNIX_EPOCH
            + Duration::from_nanos(u64::try_from(created.as_nanosecond()).ok()?);
        let starting = when
            .duration_since(created)
            .unwrap_or_default()
            .as_secs_f64();
        let pulling = match (state.first_started_pulling, state.last_finished_pulling) {
            (Some(first), Some(last)) => last.saturating_duration_since(first).as_secs_f64(),
            _ => 0.0,
        };
        let sli = starting - pulling;
        state.metric_recorded = true;
        let host_network = pod
            .spec
            .as_ref()
            .and_then(|s| s.host_network)
            .unwrap_or(false);
        let first_network = !host_network && !inner.first_network_pod_seen;
        if first_network {
            inner.first_network_pod_seen = true;
        }
        tracing::info!(pod = %uid(pod), pod_start_slo_duration = sli, pod_start_e2e_duration = starting, "Observed pod startup duration");
        kubelet_metrics::with(|m| {
            m.pod_start_sli_duration
                .with_label_values::<&str>(&[])
                .observe(sli);
            m.pod_start_total_duration
                .with_label_values::<&str>(&[])
                .observe(starting);
            if first_network {
                m.first_network_pod_start_sli_duration.set(sli);
            }
        });
        Some((sli, starting))
    }

    /// `RecordImageStartedPulling`.
    pub fn record_image_started_pulling(&self, pod_uid: &str) {
        if let Some(s) = self.lock().pods.get_mut(pod_uid) {
            s.first_started_pulling.get_or_insert_with(Instant::now);
        }
    }

    /// `RecordImageFinishedPulling`.
    pub fn record_image_finished_pulling(&self, pod_uid: &str) {
        if let Some(s) = self.lock().pods.get_mut(pod_uid)
            && s.first_started_pulling.is_some()
        {
            s.last_finished_pulling = Some(Instant::now());
        }
    }

    /// `RecordStatusUpdated`: the status the API server now has for `pod`.
    pub fn record_status_updated(&self, pod: &Pod) {
        if let Some(s) = self.lock().pods.get_mut(uid(pod))
            && !s.metric_recorded
            && !s.observed_running
            && has_pod_started_slo(pod)
        {
            s.observed_running = true;
        }
    }

    /// `DeletePodStartupState`.
    pub fn delete_pod_startup_state(&self, pod_uid: &str) {
        self.lock().pods.remove(pod_uid);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStatus, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn pod(running: bool, start_time: bool) -> Pod {
        let mut p = Pod::default();
        p.metadata.uid = Some("sli-uid".into());
        let created: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        p.metadata.creation_timestamp = Some(Time(created));
        let state = running.then(|| ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(Time(created)),
            }),
            ..ContainerState::default()
        });
        p.status = Some(PodStatus {
            phase: Some(if running { "Running" } else { "Pending" }.into()),
            start_time: start_time.then_some(Time(created)),
            container_statuses: Some(vec![ContainerStatus {
                name: "c".into(),
                state,
                ..ContainerStatus::default()
            }]),
            ..PodStatus::default()
        });
        p
    }

    #[test]
    fn the_sli_is_recorded_once_when_the_watch_shows_the_pod_running() {
        let t = PodStartupLatencyTracker::default();
        let at = |secs: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600 + secs);
        // First seen on the watch, not started: tracked.
        assert_eq!(t.observed_pod_on_watch(&pod(false, false), at(1)), None);
        t.record_image_started_pulling("sli-uid");
        t.record_image_finished_pulling("sli-uid");
        // Running in the watch, but the status was not written yet: nothing.
        assert_eq!(t.observed_pod_on_watch(&pod(true, true), at(5)), None);
        t.record_status_updated(&pod(true, true));
        let (sli, total) = t.observed_pod_on_watch(&pod(true, true), at(10)).unwrap();
        assert_eq!(total, 10.0);
        assert!(sli <= 10.0 && sli > 9.0, "{sli}");
        // Recorded once.
        assert_eq!(t.observed_pod_on_watch(&pod(true, true), at(20)), None);
        // A pod the kubelet had started before (a start time) is not tracked.
        t.delete_pod_startup_state("sli-uid");
        assert_eq!(t.observed_pod_on_watch(&pod(true, true), at(30)), None);
        t.record_status_updated(&pod(true, true));
        assert_eq!(t.observed_pod_on_watch(&pod(true, true), at(31)), None);
    }
}
