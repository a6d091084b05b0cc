//! The kubelet as the HTTP servers see it (`server.HostInterface`), and the sync loop
//! health check behind `/healthz`'s `syncloop` (`kubelet.go` `syncLoopMonitor`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kubelet_server::HostInterface;

use super::Kubelet;
use super::pod_manager::pod_uid;

/// How long the sync loop may stay silent before `/healthz` fails (upstream: 2× the resync
/// interval, at least 5 minutes).
pub fn sync_loop_timeout(resync: Duration) -> Duration {
    (resync * 2).max(Duration::from_secs(300))
}

/// Records when the sync loop last went round.
#[derive(Debug)]
pub struct SyncLoopMonitor {
    epoch: Instant,
    last_millis: AtomicU64,
    timeout: Duration,
}

impl SyncLoopMonitor {
    /// A monitor failing after `timeout` of silence.
    pub fn new(timeout: Duration) -> Self {
        SyncLoopMonitor {
            epoch: Instant::now(),
            last_millis: AtomicU64::new(0),
            timeout,
        }
    }

    /// The loop is alive now.
    pub fn touch(&self) {
        let ms = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_millis.store(ms, Ordering::Relaxed);
    }

    /// `Err` when the loop has not gone round within the timeout.
    pub fn check(&self) -> Result<(), String> {
        let last = Duration::from_millis(self.last_millis.load(Ordering::Relaxed));
        let silent = self.epoch.elapsed().saturating_sub(last);
        if silent > self.timeout {
            return Err(format!(
                "sync Loop took longer than expected: silent for {silent:?} (limit {:?})",
                self.timeout
            ));
        }
        Ok(())
    }
}

impl HostInterface for Kubelet {
    /// Upstream `GetPods`: the pod manager's pods, static pods with the status manager's
    /// status (a kubelet without an API server has no other place for it).
    fn get_pods(&self) -> Vec<Pod> {
        let mut pods: Vec<Pod> = self
            .pod_manager
            .pods()
            .into_iter()
            .map(|p| {
                let mut pod = (*p).clone();
                if let Some(status) = self.status_manager.get_pod_status(pod_uid(&pod)) {
                    pod.status = Some(status);
                }
                pod
            })
            .collect();
        pods.sort_by(|a, b| {
            (&a.metadata.namespace, &a.metadata.name)
                .cmp(&(&b.metadata.namespace, &b.metadata.name))
        });
        pods
    }

    fn sync_loop_health(&self) -> Result<(), String> {
        self.sync_loop_monitor.check()?;
        self.pleg.healthy().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitor_fails_after_silence() {
        let m = SyncLoopMonitor::new(Duration::from_millis(0));
        m.touch();
        std::thread::sleep(Duration::from_millis(5));
        assert!(m.check().is_err());
        let m = SyncLoopMonitor::new(Duration::from_secs(60));
        m.touch();
        assert!(m.check().is_ok());
        assert_eq!(
            sync_loop_timeout(Duration::from_secs(60)),
            Duration::from_secs(300)
        );
        assert_eq!(
            sync_loop_timeout(Duration::from_secs(600)),
            Duration::from_secs(1200)
        );
    }
}
