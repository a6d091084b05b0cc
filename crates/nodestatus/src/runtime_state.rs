//! The runtime's health as the Ready condition reports it: `pkg/kubelet/runtime.go`
//! (`runtimeState`: `runtimeErrors`, `networkErrors`) fed by `kubelet.go`
//! `updateRuntimeUp` (the CRI `Status` every 5 s).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use kubelet_container::{RuntimeCondition, RuntimeFeatures, RuntimeStatus};
use tokio::time::Instant;

/// `maxWaitForContainerRuntime`: the runtime is "down" when its status was last good
/// longer ago than this.
pub const MAX_WAIT_FOR_CONTAINER_RUNTIME: Duration = Duration::from_secs(30);

/// `ErrNetworkUnknown`: the network error before the first status check.
pub const ERR_NETWORK_UNKNOWN: &str = "network state unknown";

/// A named health check (`runtimeState.addHealthCheck`): `PLEG`, `EventedPLEG`; the error
/// is the check's message.
pub type HealthCheck = (String, Result<(), String>);

#[derive(Debug)]
struct Inner {
    last_base_runtime_sync: Option<Instant>,
    network_error: Option<String>,
    runtime_error: Option<String>,
    runtime_features: Option<RuntimeFeatures>,
}

/// Upstream `runtimeState` (the parts node status reads).
#[derive(Debug)]
pub struct RuntimeState {
    base_runtime_sync_threshold: Duration,
    inner: Mutex<Inner>,
}

impl Default for RuntimeState {
    fn default() -> Self {
        Self::new(MAX_WAIT_FOR_CONTAINER_RUNTIME)
    }
}

/// Go's `%v` of a `*RuntimeCondition`: `Type=bool reason:R message:M`, or `<nil>`.
fn condition_string(c: Option<&RuntimeCondition>) -> String {
    match c {
        Some(c) => format!(
            "{}={} reason:{} message:{}",
            c.type_, c.status, c.reason, c.message
        ),
        None => "<nil>".to_string(),
    }
}

impl RuntimeState {
    /// `newRuntimeState(threshold)`: no sync yet, network state unknown.
    pub fn new(base_runtime_sync_threshold: Duration) -> Self {
        RuntimeState {
            base_runtime_sync_threshold,
            inner: Mutex::new(Inner {
                last_base_runtime_sync: None,
                network_error: Some(ERR_NETWORK_UNKNOWN.to_string()),
                runtime_error: None,
                runtime_features: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `updateRuntimeUp` after the CRI `Status` call: records the network and runtime
    /// readiness and, when the runtime is ready, the time of this good sync. `loud` is
    /// upstream's `containerRuntimeReadyExpected` (errors logged at V(4) before).
    pub fn update_runtime_up(&self, status: Result<RuntimeStatus, String>, loud: bool) {
        let s = match status {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(err = %e, "Container runtime sanity check failed");
                return;
            }
        };
        tracing::trace!(status = ?s, "Container runtime status");
        let log = |msg: &str, field: &str, value: &str| {
            if loud {
                tracing::error!(field, value, "{msg}");
            } else {
                tracing::trace!(field, value, "{msg}");
            }
        };
        let mut inner = self.lock();
        let network = s.condition(RuntimeStatus::NETWORK_READY);
        if network.is_some_and(|c| c.status) {
            inner.network_error = None;
        } else {
            let v = condition_string(network);
            log("Container runtime network not ready", "networkReady", &v);
            inner.network_error = Some(format!("container runtime network not ready: {v}"));
        }
        let runtime = s.condition(RuntimeStatus::RUNTIME_READY);
        if !runtime.is_some_and(|c| c.status) {
            let v = condition_string(runtime);
            log("Container runtime not ready", "runtimeReady", &v);
            inner.runtime_error = Some(format!("container runtime not ready: {v}"));
            return;
        }
        inner.runtime_error = None;
        inner.runtime_features = s.features;
        inner.last_base_runtime_sync = Some(Instant::now());
    }

    /// `runtimeFeatures`: what the runtime reported in its last ready status.
    pub fn runtime_features(&self) -> Option<RuntimeFeatures> {
        self.lock().runtime_features
    }

    /// `runtimeErrors`, given the results of the health checks.
    pub fn runtime_errors(&self, health_checks: &[HealthCheck]) -> Vec<String> {
        let inner = self.lock();
        let mut errs = Vec::new();
        match inner.last_base_runtime_sync {
            None => errs.push("container runtime status check may not have completed yet".into()),
            Some(t) if t + self.base_runtime_sync_threshold <= Instant::now() => {
                errs.push("container runtime is down".into());
            }
            Some(_) => {}
        }
        for (name, res) in health_checks {
            if let Err(e) = res {
                errs.push(format!("{name} is not healthy: {e}"));
            }
        }
        if let Some(e) = &inner.runtime_error {
            errs.push(e.clone());
        }
        errs
    }

    /// `networkErrors`.
    pub fn network_errors(&self) -> Vec<String> {
        self.lock().network_error.iter().cloned().collect()
    }
}

/// `utilerrors.NewAggregate(errs).Error()` over already flattened messages: one message
/// as is, several deduplicated, joined by `, ` inside brackets; `None` when there are none.
pub fn aggregate(messages: &[String]) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for m in messages {
        if !seen.contains(&m.as_str()) {
            seen.push(m);
        }
    }
    match seen.len() {
        0 => None,
        1 => Some(seen[0].to_string()),
        _ => Some(format!("[{}]", seen.join(", "))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn cond(t: &str, ok: bool) -> RuntimeCondition {
        RuntimeCondition {
            type_: t.into(),
            status: ok,
            reason: if ok { "" } else { "NetworkPluginNotReady" }.into(),
            message: if ok { "" } else { "cni plugin not initialized" }.into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn errors_follow_the_runtime_status() {
        let s = RuntimeState::default();
        assert_eq!(
            s.runtime_errors(&[]),
            ["container runtime status check may not have completed yet"]
        );
        assert_eq!(s.network_errors(), ["network state unknown"]);

        s.update_runtime_up(
            Ok(RuntimeStatus {
                conditions: vec![cond("RuntimeReady", true), cond("NetworkReady", false)],
                features: None,
            }),
            true,
        );
        assert!(s.runtime_errors(&[]).is_empty());
        assert_eq!(
            s.network_errors(),
            [
                "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"
            ]
        );
        let pleg = (
            "PLEG".to_string(),
            Err("pleg was last seen active 3m1s ago; threshold is 3m0s".to_string()),
        );
        assert_eq!(
            s.runtime_errors(&[pleg]),
            ["PLEG is not healthy: pleg was last seen active 3m1s ago; threshold is 3m0s"]
        );

        s.update_runtime_up(Ok(RuntimeStatus::default()), true);
        assert_eq!(
            s.network_errors(),
            ["container runtime network not ready: <nil>"]
        );
        assert_eq!(
            s.runtime_errors(&[]),
            ["container runtime not ready: <nil>"]
        );

        tokio::time::advance(MAX_WAIT_FOR_CONTAINER_RUNTIME).await;
        assert_eq!(
            s.runtime_errors(&[]),
            [
                "container runtime is down",
                "container runtime not ready: <nil>"
            ]
        );
    }

    #[test]
    fn aggregate_as_utilerrors() {
        assert_eq!(aggregate(&[]), None);
        assert_eq!(aggregate(&["a".into()]).unwrap(), "a");
        assert_eq!(
            aggregate(&["a".into(), "b".into(), "a".into()]).unwrap(),
            "[a, b]"
        );
    }
}
