//! The pod workers as the runtime's `PodStateProvider` (which pods' containers and
//! sandboxes garbage collection may remove). The runtime is built before the pod workers
//! (they need the runtime), so the workers are set once they exist.

use std::sync::OnceLock;

use kubelet_container::PodStateProvider;
use kubelet_podworkers::PodWorkers;

/// Answers from the pod workers once set; before that, nothing may be removed.
#[derive(Default)]
pub struct PodWorkersState {
    workers: OnceLock<PodWorkers>,
}

impl PodWorkersState {
    /// Sets the pod workers (first call wins).
    pub fn set(&self, workers: PodWorkers) {
        let _ = self.workers.set(workers);
    }
}

impl PodStateProvider for PodWorkersState {
    fn is_pod_termination_requested(&self, uid: &str) -> bool {
        self.workers
            .get()
            .is_some_and(|w| w.is_pod_termination_requested(uid))
    }

    fn should_pod_content_be_removed(&self, uid: &str) -> bool {
        self.workers
            .get()
            .is_some_and(|w| w.should_pod_content_be_removed(uid))
    }

    fn should_pod_runtime_be_removed(&self, uid: &str) -> bool {
        self.workers
            .get()
            .is_some_and(|w| w.should_pod_runtime_be_removed(uid))
    }
}
