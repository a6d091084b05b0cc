//! Kill a pod and wait for it (upstream `killPodNow` in `pod_workers.go`),
//! used by eviction and preemption.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod as ApiPod;
use kubelet_container::SyncPodType;
use kubelet_container::kubetypes::pod_full_name;

use crate::types::{Completion, KillPodOptions, PodStatusFn, UpdatePodOptions};
use crate::workers::PodWorkers;

/// The pod was not terminated in time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("timeout waiting to kill pod {pod} after {waited:?}")]
pub struct KillPodTimeout {
    /// `name_namespace`.
    pub pod: String,
    /// How long we waited.
    pub waited: Duration,
}

/// How long to wait for a kill: 1.5 × grace period, at least 10 s.
pub fn kill_timeout(pod: &ApiPod, grace_period_override: Option<i64>) -> Duration {
    let grace = grace_period_override
        .or_else(|| {
            pod.spec
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
        })
        .unwrap_or(0)
        .max(0);
    let secs = (grace + grace / 2).max(10);
    Duration::from_secs(u64::try_from(secs).unwrap_or(10))
}

impl PodWorkers {
    /// Requests termination of `pod` and waits until its containers are
    /// stopped or the [`kill_timeout`] passes. `evict` marks an eviction;
    /// `pod_status_fn` overrides the reported status (e.g. phase Failed,
    /// reason Evicted).
    pub async fn kill_pod_now(
        &self,
        pod: Arc<ApiPod>,
        evict: bool,
        grace_period_override: Option<i64>,
        pod_status_fn: Option<PodStatusFn>,
    ) -> Result<(), KillPodTimeout> {
        let waited = kill_timeout(&pod, grace_period_override);
        let (completed, rx) = Completion::new();
        let name = pod_full_name(&pod);
        self.update_pod(UpdatePodOptions {
            kill_pod_options: Some(KillPodOptions {
                completed: Some(completed),
                evict,
                pod_status_fn,
                grace_period_override,
            }),
            ..UpdatePodOptions::new(SyncPodType::Kill, pod)
        });
        match tokio::time::timeout(waited, rx).await {
            // A dropped sender means the worker forgot the pod: it is not running either.
            Ok(_) => Ok(()),
            Err(_) => Err(KillPodTimeout { pod: name, waited }),
        }
    }
}
