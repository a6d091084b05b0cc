//! Runs one probe of a container and turns its outcome into a result and events (upstream
//! `pkg/kubelet/prober/prober.go`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod, PodStatus as ApiPodStatus, Probe};
use kubelet_container::events::{EventRecorder, EventType, container_ref, reasons};
use kubelet_container::{ContainerId, ProbeResult, ProbeType};

use crate::probe::exec::CommandRunner;
use crate::probe::http::HttpProber;
use crate::probe::{
    Outcome, ProbeError, ProbeOutput, exec, grpc, http, resolve_container_port, tcp,
};

/// Upstream `maxProbeRetries`: a probe that errors is run this many times.
const MAX_PROBE_RETRIES: usize = 3;

/// Upstream `probeType.String()`.
pub fn probe_type_name(t: ProbeType) -> &'static str {
    match t {
        ProbeType::Liveness => "Liveness",
        ProbeType::Readiness => "Readiness",
        ProbeType::Startup => "Startup",
    }
}

/// The probe of `t` in the container's spec.
pub fn probe_spec(container: &Container, t: ProbeType) -> Option<&Probe> {
    match t {
        ProbeType::Liveness => container.liveness_probe.as_ref(),
        ProbeType::Readiness => container.readiness_probe.as_ref(),
        ProbeType::Startup => container.startup_probe.as_ref(),
    }
}

/// The probers and what they need (upstream `prober`).
pub struct Prober {
    runner: Arc<dyn CommandRunner>,
    http: HttpProber,
    recorder: Arc<dyn EventRecorder>,
}

impl std::fmt::Debug for Prober {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prober").finish_non_exhaustive()
    }
}

impl Prober {
    /// Upstream `newProber`.
    pub fn new(
        runner: Arc<dyn CommandRunner>,
        http: HttpProber,
        recorder: Arc<dyn EventRecorder>,
    ) -> Self {
        Self {
            runner,
            http,
            recorder,
        }
    }

    fn event(&self, pod: &Pod, container: &Container, reason: &str, message: &str) {
        self.recorder.event(
            &container_ref(pod, &container.name),
            EventType::Warning,
            reason,
            message,
        );
    }

    /// Probes the container and returns the result; `Err` when the probe errored (after
    /// retries), which the worker ignores (upstream `probe`).
    pub async fn probe(
        &self,
        probe_type: ProbeType,
        pod: &Pod,
        status: &ApiPodStatus,
        container: &Container,
        container_id: &ContainerId,
    ) -> Result<ProbeResult, ProbeError> {
        let Some(spec) = probe_spec(container, probe_type) else {
            return Ok(ProbeResult::Success);
        };
        let name = probe_type_name(probe_type);
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        let mut last = Err(ProbeError(String::new()));
        for _ in 0..MAX_PROBE_RETRIES {
            last = self
                .run_probe(spec, pod, status, container, container_id)
                .await;
            if last.is_ok() {
                break;
            }
        }
        let probed = match last {
            Ok(probed) => probed,
            Err(e) => {
                tracing::debug!(probe = name, pod = pod_name, container = %container.name, err = %e, "Probe errored");
                self.event(
                    pod,
                    container,
                    reasons::CONTAINER_UNHEALTHY,
                    &format!(
                        "{name} probe errored and resulted in {} state: {e}",
                        Outcome::Unknown
                    ),
                );
                return Err(e);
            }
        };
        Ok(match probed.outcome {
            Outcome::Success => {
                tracing::trace!(probe = name, pod = pod_name, container = %container.name, "Probe succeeded");
                ProbeResult::Success
            }
            Outcome::Warning => {
                self.event(
                    pod,
                    container,
                    reasons::CONTAINER_PROBE_WARNING,
                    &format!("{name} probe warning: {}", probed.output),
                );
                ProbeResult::Success
            }
            Outcome::Failure => {
                tracing::debug!(probe = name, pod = pod_name, container = %container.name, output = %probed.output, "Probe failed");
                self.event(
                    pod,
                    container,
                    reasons::CONTAINER_UNHEALTHY,
                    &format!("{name} probe failed: {}", probed.output),
                );
                ProbeResult::Failure
            }
            Outcome::Unknown => ProbeResult::Failure,
        })
    }

    /// Upstream `runProbe`: the handler of the probe, with `timeoutSeconds`.
    async fn run_probe(
        &self,
        spec: &Probe,
        pod: &Pod,
        status: &ApiPodStatus,
        container: &Container,
        container_id: &ContainerId,
    ) -> ProbeOutput {
        let timeout =
            Duration::from_secs(u64::try_from(spec.timeout_seconds.unwrap_or(1)).unwrap_or(1));
        let pod_ip = status.pod_ip.as_deref().unwrap_or_default();
        if let Some(action) = &spec.exec {
            let command = expand_command_only_static(
                action.command.as_deref().unwrap_or_default(),
                container,
            );
            return exec::probe(self.runner.as_ref(), container_id, &command, timeout).await;
        }
        if let Some(get) = &spec.http_get {
            let req = http::new_request_for_http_get_action(get, container, pod_ip, "probe")?;
            return self.http.probe(&req, timeout).await;
        }
        if let Some(socket) = &spec.tcp_socket {
            let port = resolve_container_port(&socket.port, container)?;
            let host = socket
                .host
                .as_deref()
                .filter(|h| !h.is_empty())
                .unwrap_or(pod_ip);
            return tcp::probe(host, port, timeout).await;
        }
        if let Some(g) = &spec.grpc {
            let port = u16::try_from(g.port)
                .map_err(|_| ProbeError(format!("invalid port number: {}", g.port)))?;
            let service = g.service.as_deref().unwrap_or_default();
            return grpc::probe(pod_ip, service, port, timeout).await;
        }
        Err(ProbeError(format!(
            "missing probe handler for {}_{}({}):{}",
            pod.metadata.name.as_deref().unwrap_or_default(),
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.uid.as_deref().unwrap_or_default(),
            container.name
        )))
    }
}

/// `$(VAR)` in the probe command from the container's literal `env` values only (upstream
/// `ExpandContainerCommandOnlyStatic`).
pub fn expand_command_only_static(command: &[String], container: &Container) -> Vec<String> {
    let envs: Vec<(String, String)> = container
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect();
    kubelet_runtime::expansion::expand_command_and_args(command, &[], &envs).0
}

#[cfg(test)]
#[path = "prober_tests.rs"]
mod tests;
