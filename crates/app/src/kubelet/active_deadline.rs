//! `spec.activeDeadlineSeconds` (upstream `pkg/kubelet/active_deadline.go`) and the two hooks
//! it plugs into (`pkg/kubelet/lifecycle/interfaces.go`): a [`PodSyncLoopHandler`] makes the
//! sync loop resync a pod whose deadline has passed (`getPodsToSync`), and a
//! [`PodSyncHandler`] makes the status generated for it `Failed` with reason
//! `DeadlineExceeded` (`generateAPIPodStatus`), so `SyncPod` sees a terminal pod and the pod
//! workers kill it.
//!
//! The deadline counts from `status.startTime` as the status manager holds it (the pod's own
//! status when the manager has none): `now - startTime >= activeDeadlineSeconds`.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kubelet_container::Clock;
use kubelet_container::events::{EventRecorder, EventType, pod_ref};
use kubelet_status::StatusManager;

use super::pod_manager::pod_uid;

/// Reason of a pod past its active deadline.
pub const REASON: &str = "DeadlineExceeded";
/// Message of a pod past its active deadline.
pub const MESSAGE: &str = "Pod was active on the node longer than the specified deadline";

/// What a [`PodSyncHandler`] answers (upstream `lifecycle.ShouldEvictResponse`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShouldEvictResponse {
    /// The pod must be failed.
    pub evict: bool,
    /// The status reason.
    pub reason: String,
    /// The status message.
    pub message: String,
}

/// Asks the sync loop to sync a pod (upstream `lifecycle.PodSyncLoopHandler`).
pub trait PodSyncLoopHandler: Send + Sync {
    /// The pod needs a sync now.
    fn should_sync(&self, pod: &Pod) -> bool;
}

/// Asks `SyncPod` to fail a pod (upstream `lifecycle.PodSyncHandler`).
pub trait PodSyncHandler: Send + Sync {
    /// Whether the pod must be failed, and with what reason and message.
    fn should_evict(&self, pod: &Pod) -> ShouldEvictResponse;
}

/// The part of `generateAPIPodStatus` that asks the [`PodSyncHandler`]s: the first that
/// evicts makes the status `Failed` with its reason and message.
pub fn apply_pod_sync_handlers(
    handlers: &[Arc<dyn PodSyncHandler>],
    pod: &Pod,
    status: &mut PodStatus,
) {
    for h in handlers {
        let r = h.should_evict(pod);
        if r.evict {
            status.phase = Some("Failed".into());
            status.reason = Some(r.reason);
            status.message = Some(r.message);
            return;
        }
    }
}

/// Enforces `activeDeadlineSeconds` (upstream `activeDeadlineHandler`).
pub struct ActiveDeadlineHandler {
    clock: Arc<dyn Clock>,
    status: Arc<StatusManager>,
    recorder: Arc<dyn EventRecorder>,
}

impl ActiveDeadlineHandler {
    /// `newActiveDeadlineHandler`.
    pub fn new(
        status: Arc<StatusManager>,
        recorder: Arc<dyn EventRecorder>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            clock,
            status,
            recorder,
        }
    }

    /// `pastActiveDeadline`.
    fn past_active_deadline(&self, pod: &Pod) -> bool {
        let Some(deadline) = pod.spec.as_ref().and_then(|s| s.active_deadline_seconds) else {
            return false;
        };
        let start = self
            .status
            .get_pod_status(pod_uid(pod))
            .or_else(|| pod.status.clone())
            .and_then(|s| s.start_time);
        let Some(start) = start else {
            return false;
        };
        let allowed = Duration::from_secs(u64::try_from(deadline).unwrap_or(0));
        self.clock.since(start.0) >= allowed
    }
}

impl PodSyncLoopHandler for ActiveDeadlineHandler {
    fn should_sync(&self, pod: &Pod) -> bool {
        self.past_active_deadline(pod)
    }
}

impl PodSyncHandler for ActiveDeadlineHandler {
    fn should_evict(&self, pod: &Pod) -> ShouldEvictResponse {
        if !self.past_active_deadline(pod) {
            return ShouldEvictResponse::default();
        }
        self.recorder
            .event(&pod_ref(pod), EventType::Normal, REASON, MESSAGE);
        ShouldEvictResponse {
            evict: true,
            reason: REASON.into(),
            message: MESSAGE.into(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use k8s_openapi::jiff::{SignedDuration, Timestamp};
    use kubelet_container::FakeClock;
    use kubelet_container::events::FakeRecorder;

    fn pod(uid: &str, deadline: Option<i64>, start: Option<Timestamp>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(uid.into()),
                namespace: Some("ns".into()),
                uid: Some(uid.into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                active_deadline_seconds: deadline,
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                start_time: start.map(Time),
                ..PodStatus::default()
            }),
        }
    }

    /// Upstream `TestActiveDeadlineHandler`: deadlines past, not yet, none, no start time.
    #[test]
    fn active_deadline_handler_as_upstream() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let clock = FakeClock::new(now);
        let recorder = Arc::new(FakeRecorder::new());
        let status = Arc::new(StatusManager::new(Arc::new(clock.clone())));
        let h = ActiveDeadlineHandler::new(status.clone(), recorder.clone(), Arc::new(clock));
        let started = now - SignedDuration::from_secs(30);
        let cases = [
            (pod("past", Some(30), Some(started)), true),
            (pod("not-yet", Some(60), Some(started)), false),
            (pod("none", None, Some(started)), false),
            (pod("unstarted", Some(1), None), false),
        ];
        for (p, want) in &cases {
            assert_eq!(h.should_sync(p), *want, "{:?}", p.metadata.uid);
            let r = h.should_evict(p);
            assert_eq!(r.evict, *want, "{:?}", p.metadata.uid);
            if *want {
                assert_eq!((r.reason.as_str(), r.message.as_str()), (REASON, MESSAGE));
            }
        }
        assert_eq!(recorder.lines(), vec![format!("Normal {REASON} {MESSAGE}")]);

        // The status manager's start time wins over the pod's.
        let p = pod("managed", Some(30), None);
        status.set_pod_status(
            &p,
            PodStatus {
                start_time: Some(Time(started)),
                ..PodStatus::default()
            },
        );
        assert!(h.should_sync(&p));

        let mut s = PodStatus {
            phase: Some("Running".into()),
            ..PodStatus::default()
        };
        let handlers: Vec<Arc<dyn PodSyncHandler>> = vec![Arc::new(h)];
        apply_pod_sync_handlers(&handlers, &cases[1].0, &mut s);
        assert_eq!(s.phase.as_deref(), Some("Running"));
        apply_pod_sync_handlers(&handlers, &cases[0].0, &mut s);
        assert_eq!(s.phase.as_deref(), Some("Failed"));
        assert_eq!(s.reason.as_deref(), Some(REASON));
        assert_eq!(s.message.as_deref(), Some(MESSAGE));
    }
}
