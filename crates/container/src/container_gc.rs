//! Container garbage collection on its own loop (upstream `pkg/kubelet/container/container_gc.go`
//! `realContainerGC`, run by `Kubelet.StartGarbageCollection` every `ContainerGCPeriod`).
//!
//! Upstream runs `GarbageCollect` in its own goroutine (`wait.Until(…, ContainerGCPeriod)`), never
//! on the sync loop: a slow runtime during GC must not delay pod updates or housekeeping.
//! [`ContainerGc::run`] is that loop. Beyond upstream, housekeeping may [`ContainerGc::trigger`]
//! an extra round when a pod worker finished, so a deleted pod's dead containers and sandboxes
//! go at once rather than up to a minute later; the round still runs on the GC task.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::runtime::{ContainerGcPolicy, Runtime};

/// Period of container GC (upstream `ContainerGCPeriod`).
pub const CONTAINER_GC_PERIOD: Duration = Duration::from_secs(60);

/// Removes dead containers and sandboxes per a policy (upstream `realContainerGC`).
pub struct ContainerGc {
    runtime: Arc<dyn Runtime>,
    policy: ContainerGcPolicy,
    wake: Notify,
    triggered: AtomicBool,
}

impl std::fmt::Debug for ContainerGc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerGc")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl ContainerGc {
    /// A collector for `runtime` with `policy` (upstream `NewContainerGC`).
    pub fn new(runtime: Arc<dyn Runtime>, policy: ContainerGcPolicy) -> Self {
        Self {
            runtime,
            policy,
            wake: Notify::new(),
            triggered: AtomicBool::new(false),
        }
    }

    /// The policy rounds apply.
    pub fn policy(&self) -> &ContainerGcPolicy {
        &self.policy
    }

    /// One round (upstream `GarbageCollect`): containers of unknown pods are kept until every
    /// source has been seen (`sources_ready`). Failures are logged; the next round retries.
    pub async fn garbage_collect(&self, sources_ready: bool) {
        let started = Instant::now();
        let ready = sources_ready;
        match self
            .runtime
            .garbage_collect(&self.policy, ready, false)
            .await
        {
            Ok(()) => {
                tracing::debug!(took = ?started.elapsed(), "Container garbage collection succeeded")
            }
            Err(e) => tracing::error!(err = %e, "Container garbage collection failed"),
        }
    }

    /// Upstream `DeleteAllUnusedContainers` (node-level reclaim under disk pressure): a round
    /// that also removes the dead containers and sandboxes of pods that still exist.
    pub async fn delete_all_unused_containers(
        &self,
        sources_ready: bool,
    ) -> Result<(), crate::runtime::RuntimeError> {
        tracing::info!("Attempting to delete unused containers");
        self.runtime
            .garbage_collect(&self.policy, sources_ready, true)
            .await
    }

    /// Asks the loop for an extra round as soon as the current one (if any) is done; several
    /// triggers before it runs make one round.
    pub fn trigger(&self) {
        if !self.triggered.swap(true, Ordering::AcqRel) {
            self.wake.notify_one();
        }
    }

    /// Runs a round every `period`, the first one a period after the start (so a restarted
    /// kubelet has seen its sources and adopted its pods first), and one more after each
    /// [`trigger`](Self::trigger). `sources_ready` tells whether every pod source has been
    /// seen (upstream `config.SourcesReady`). Never returns; drop the future to stop it.
    pub async fn run(&self, period: Duration, sources_ready: impl Fn() -> bool) {
        let start = tokio::time::Instant::now() + period;
        let mut ticker = tokio::time::interval_at(start, period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                () = self.wake.notified() => {}
            }
            self.triggered.store(false, Ordering::Release);
            self.garbage_collect(sources_ready()).await;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::fake::FakeRuntime;

    fn gc_calls(rt: &FakeRuntime) -> usize {
        rt.calls().iter().filter(|c| *c == "GarbageCollect").count()
    }

    #[tokio::test(start_paused = true)]
    async fn runs_every_period_and_when_triggered_on_its_own_task() {
        let rt = Arc::new(FakeRuntime::new());
        let gc = Arc::new(ContainerGc::new(rt.clone(), ContainerGcPolicy::default()));
        let task = tokio::spawn({
            let gc = gc.clone();
            async move { gc.run(CONTAINER_GC_PERIOD, || true).await }
        });
        tokio::time::sleep(Duration::from_secs(59)).await;
        assert_eq!(
            gc_calls(&rt),
            0,
            "the first round comes one period after the start"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(gc_calls(&rt), 1);

        gc.trigger();
        gc.trigger();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            gc_calls(&rt),
            2,
            "two triggers before the round make one round"
        );

        tokio::time::sleep(CONTAINER_GC_PERIOD).await;
        assert_eq!(gc_calls(&rt), 3, "and the period goes on");
        task.abort();
    }

    #[tokio::test]
    async fn delete_all_unused_containers_evicts_non_deleted_pods() {
        let rt = Arc::new(FakeRuntime::new());
        let gc = ContainerGc::new(rt.clone(), ContainerGcPolicy::default());
        gc.delete_all_unused_containers(true).await.unwrap();
        assert_eq!(rt.calls(), ["GarbageCollect(evictNonDeletedPods)"]);
    }
}
