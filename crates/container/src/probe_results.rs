//! The latest result of each container probe, as the rest of the kubelet reads
//! it (upstream `pkg/kubelet/prober/results/results_manager.go`).
//!
//! Upstream keeps one `results.Manager` per probe type: the liveness and
//! startup managers feed `computePodActions` (kill and restart), the readiness
//! and startup managers feed `UpdatePodStatus` (`started`/`ready`). Here one
//! [`ProbeResults`] trait, keyed by [`ProbeType`], is the read side of all
//! three, so one prober serves both the runtime manager (`kubelet-runtime`)
//! and the status generator (`kubelet-status`).

use crate::types::ContainerId;

/// Which probe a result belongs to (upstream `probeType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProbeType {
    /// `livenessProbe`: failure kills and restarts the container.
    Liveness,
    /// `readinessProbe`: gates the container's `ready` flag.
    Readiness,
    /// `startupProbe`: gates `started`; failure kills and restarts.
    Startup,
}

/// A probe outcome (upstream `results.Result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeResult {
    /// Probe passed.
    Success,
    /// Probe failed.
    Failure,
    /// Not probed yet, or the result is no longer known.
    Unknown,
}

/// Latest probe results by container (upstream `results.Manager.Get`, one
/// manager per [`ProbeType`]).
pub trait ProbeResults: Send + Sync {
    /// The latest `probe` result of container `id`; `None` when it has none
    /// (upstream `Get` returning `ok == false`).
    fn get(&self, probe: ProbeType, id: &ContainerId) -> Option<ProbeResult>;
}

/// No prober: nothing has ever been probed, so only the pod spec decides.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProbeResults;

impl ProbeResults for NoProbeResults {
    fn get(&self, _: ProbeType, _: &ContainerId) -> Option<ProbeResult> {
        None
    }
}

/// Fixed probe results for tests (feature `fake`).
#[cfg(any(test, feature = "fake"))]
#[derive(Clone, Debug, Default)]
pub struct FakeProbeResults {
    results: std::collections::HashMap<(ProbeType, ContainerId), ProbeResult>,
}

#[cfg(any(test, feature = "fake"))]
impl FakeProbeResults {
    /// Records `result` as the latest `probe` result of `id`.
    pub fn set(&mut self, probe: ProbeType, id: ContainerId, result: ProbeResult) {
        self.results.insert((probe, id), result);
    }

    /// A fake holding one result.
    pub fn with(probe: ProbeType, id: ContainerId, result: ProbeResult) -> Self {
        let mut fake = Self::default();
        fake.set(probe, id, result);
        fake
    }
}

#[cfg(any(test, feature = "fake"))]
impl ProbeResults for FakeProbeResults {
    fn get(&self, probe: ProbeType, id: &ContainerId) -> Option<ProbeResult> {
        self.results.get(&(probe, id.clone())).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_kept_per_probe_type_and_container() {
        let a = ContainerId::new("containerd", "a");
        let mut fake = FakeProbeResults::with(ProbeType::Liveness, a.clone(), ProbeResult::Failure);
        fake.set(ProbeType::Startup, a.clone(), ProbeResult::Success);
        assert_eq!(
            fake.get(ProbeType::Liveness, &a),
            Some(ProbeResult::Failure)
        );
        assert_eq!(fake.get(ProbeType::Startup, &a), Some(ProbeResult::Success));
        assert_eq!(fake.get(ProbeType::Readiness, &a), None);
        let b = ContainerId::new("containerd", "b");
        assert_eq!(fake.get(ProbeType::Liveness, &b), None);
        assert_eq!(NoProbeResults.get(ProbeType::Liveness, &a), None);
    }
}
