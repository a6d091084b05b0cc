//! The latest result of each probe, by container (upstream
//! `pkg/kubelet/prober/results/results_manager.go`).
//!
//! One [`ResultsManager`] per probe type, as upstream: the workers write them, the runtime
//! manager (`computePodActions`) and the status generator (`UpdatePodStatus`) read them through
//! [`ProberResults`], which implements [`kubelet_container::ProbeResults`]. A change of a result
//! is sent as an [`Update`] on one channel the sync loop reads (upstream's three `Updates()`
//! channels, merged: the update names its probe type).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use kubelet_container::{ContainerId, ProbeResult, ProbeResults, ProbeType};
use tokio::sync::mpsc;

/// A changed result (upstream `results.Update`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    /// Which results manager changed.
    pub probe_type: ProbeType,
    /// The container the result is for.
    pub container_id: ContainerId,
    /// The new result.
    pub result: ProbeResult,
    /// The pod the container belongs to.
    pub pod_uid: String,
}

/// Results of one probe type (upstream `results.Manager`).
#[derive(Debug)]
pub struct ResultsManager {
    probe_type: ProbeType,
    cache: RwLock<HashMap<ContainerId, ProbeResult>>,
    updates: mpsc::UnboundedSender<Update>,
}

impl ResultsManager {
    fn new(probe_type: ProbeType, updates: mpsc::UnboundedSender<Update>) -> Self {
        Self {
            probe_type,
            cache: RwLock::new(HashMap::new()),
            updates,
        }
    }

    /// The cached result of `id` (upstream `Get`).
    pub fn get(&self, id: &ContainerId) -> Option<ProbeResult> {
        self.cache
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .copied()
    }

    /// Caches `result` for `id` and sends an update when it changed (upstream `Set`).
    pub fn set(&self, id: &ContainerId, result: ProbeResult, pod_uid: &str) {
        let previous = self
            .cache
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), result);
        if previous != Some(result) {
            // The receiver is gone only while the kubelet shuts down.
            let _ = self.updates.send(Update {
                probe_type: self.probe_type,
                container_id: id.clone(),
                result,
                pod_uid: pod_uid.to_string(),
            });
        }
    }

    /// Forgets the result of `id` (upstream `Remove`).
    pub fn remove(&self, id: &ContainerId) {
        self.cache
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

/// The three results managers (upstream `Kubelet.livenessManager`, `readinessManager`,
/// `startupManager`).
#[derive(Debug)]
pub struct ProberResults {
    liveness: ResultsManager,
    readiness: ResultsManager,
    startup: ResultsManager,
}

impl ProberResults {
    /// New, empty managers and the receiver of their updates.
    pub fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<Update>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let results = Self {
            liveness: ResultsManager::new(ProbeType::Liveness, tx.clone()),
            readiness: ResultsManager::new(ProbeType::Readiness, tx.clone()),
            startup: ResultsManager::new(ProbeType::Startup, tx),
        };
        (Arc::new(results), rx)
    }

    /// The manager of `probe_type`.
    pub fn manager(&self, probe_type: ProbeType) -> &ResultsManager {
        match probe_type {
            ProbeType::Liveness => &self.liveness,
            ProbeType::Readiness => &self.readiness,
            ProbeType::Startup => &self.startup,
        }
    }
}

impl ProbeResults for ProberResults {
    fn get(&self, probe: ProbeType, id: &ContainerId) -> Option<ProbeResult> {
        self.manager(probe).get(id)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn set_caches_and_sends_an_update_only_on_change() {
        let (results, mut rx) = ProberResults::new();
        let id = ContainerId::new("containerd", "abc");
        let m = results.manager(ProbeType::Readiness);
        assert_eq!(m.get(&id), None);
        m.set(&id, ProbeResult::Failure, "uid1");
        m.set(&id, ProbeResult::Failure, "uid1");
        m.set(&id, ProbeResult::Success, "uid1");
        assert_eq!(
            results.get(ProbeType::Readiness, &id),
            Some(ProbeResult::Success)
        );
        assert_eq!(results.get(ProbeType::Liveness, &id), None);
        let first = rx.try_recv().unwrap();
        assert_eq!(first.result, ProbeResult::Failure);
        assert_eq!(first.probe_type, ProbeType::Readiness);
        assert_eq!(first.pod_uid, "uid1");
        assert_eq!(rx.try_recv().unwrap().result, ProbeResult::Success);
        assert!(rx.try_recv().is_err(), "an unchanged result sends nothing");
        m.remove(&id);
        assert_eq!(m.get(&id), None);
        // After a removal the same result is a change again.
        m.set(&id, ProbeResult::Success, "uid1");
        assert!(rx.try_recv().is_ok());
    }
}
