//! Container lifecycle hooks: `exec`, `httpGet` and `sleep` handlers for postStart and
//! preStop (upstream `pkg/kubelet/lifecycle/handlers.go` `HandlerRunner.Run`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, HTTPGetAction, LifecycleHandler, Pod};
use kubelet_container::events::{EventType, reasons};
use kubelet_container::{ContainerId, Runtime};

use crate::manager::KubeGenericRuntimeManager;

/// Longest hook output kept in error messages.
const MAX_HOOK_OUTPUT: usize = 10 * 1024;

/// A boxed future of a lifecycle HTTP request.
pub type HttpHookFuture<'a> =
    Pin<Box<dyn Future<Output = Result<HttpHookOutcome, String>> + Send + 'a>>;

/// What a lifecycle hook's GET did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpHookOutcome {
    /// A response came back (any status).
    Sent,
    /// HTTPS got a plain HTTP answer, and the request sent again over HTTP to this
    /// `host:port` got a response (upstream then records a `LifecycleHTTPFallback` event).
    FellBackToHttp(String),
}

/// The client of `httpGet` hooks (upstream `types.HTTPDoer`, the kubelet's
/// `insecureContainerLifecycleHTTPClient`: no certificate verification, no credentials,
/// redirects only to the same host). The kubelet gives the prober's HTTP client.
pub trait LifecycleHttpClient: Send + Sync {
    /// Sends the GET of `action` (`httpprobe.NewRequestForHTTPGetAction(handler.HTTPGet,
    /// container, podIP, "lifecycle")`) and discards the response: any response is a success,
    /// whatever its status code, as upstream's `runHTTPHandler`; an HTTPS request answered
    /// in plain HTTP is retried over HTTP.
    fn get<'a>(
        &'a self,
        action: &'a HTTPGetAction,
        container: &'a Container,
        pod_ip: &'a str,
    ) -> HttpHookFuture<'a>;
}

/// No HTTP client: every `httpGet` hook fails saying so (unit tests without one).
#[derive(Debug, Default)]
pub struct NoLifecycleHttpClient;

impl LifecycleHttpClient for NoLifecycleHttpClient {
    fn get<'a>(&'a self, _: &'a HTTPGetAction, _: &'a Container, _: &'a str) -> HttpHookFuture<'a> {
        Box::pin(async { Err("no HTTP client for lifecycle hooks".to_string()) })
    }
}

impl KubeGenericRuntimeManager {
    /// Runs a lifecycle handler against a running container; `Err` carries the message.
    pub(crate) async fn run_lifecycle_handler(
        &self,
        id: &ContainerId,
        pod: &Pod,
        container: &Container,
        handler: &LifecycleHandler,
        pod_ips: &[String],
        timeout: Option<Duration>,
    ) -> Result<(), String> {
        if let Some(exec) = &handler.exec {
            let cmd = exec.command.clone().unwrap_or_default();
            let resp = self
                .runtime
                .exec_sync(&id.id, &cmd, timeout.unwrap_or(Duration::ZERO))
                .await
                .map_err(|e| e.to_string())?;
            if resp.exit_code != 0 {
                let mut out = String::from_utf8_lossy(&resp.stdout).into_owned();
                out.push_str(&String::from_utf8_lossy(&resp.stderr));
                let mut end = out.len().min(MAX_HOOK_OUTPUT);
                while !out.is_char_boundary(end) {
                    end -= 1;
                }
                out.truncate(end);
                return Err(format!(
                    "Exec lifecycle hook ({cmd:?}) for Container {:?} in Pod {:?} failed - error: command exited with {}, message: {out:?}",
                    container.name,
                    pod.metadata.name.as_deref().unwrap_or_default(),
                    resp.exit_code
                ));
            }
            return Ok(());
        }
        if let Some(get) = &handler.http_get {
            let host = match get.host.as_deref().filter(|h| !h.is_empty()) {
                Some(host) => host.to_string(),
                // Upstream asks the runtime for the pod's IPs when the hook names no host.
                None => match pod_ips.first() {
                    Some(ip) => ip.clone(),
                    None => self.pod_ip(pod).await?,
                },
            };
            let run = self.lifecycle_http.get(get, container, &host);
            let outcome = match timeout {
                Some(t) => tokio::time::timeout(t, run)
                    .await
                    .map_err(|_| "HTTP lifecycle hook timed out".to_string())?,
                None => run.await,
            }?;
            if let HttpHookOutcome::FellBackToHttp(url_host) = outcome {
                self.recorder.pod_event(
                    pod,
                    EventType::Warning,
                    reasons::LIFECYCLE_HTTP_FALLBACK,
                    &format!(
                        "request to HTTPS lifecycle hook {url_host} got HTTP response, retry with HTTP succeeded"
                    ),
                );
            }
            return Ok(());
        }
        if let Some(sleep) = &handler.sleep {
            let d = Duration::from_secs(u64::try_from(sleep.seconds).unwrap_or(0));
            tokio::time::sleep(timeout.map_or(d, |t| d.min(t))).await;
            return Ok(());
        }
        if handler.tcp_socket.is_some() {
            return Err("tcpSocket lifecycle handlers are not supported".to_string());
        }
        Err("invalid lifecycle handler: no action set".to_string())
    }

    /// The pod's first IP from the runtime (`GetPodStatus` in upstream's `runHTTPHandler`).
    async fn pod_ip(&self, pod: &Pod) -> Result<String, String> {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let status = self
            .get_pod_status(uid, name, namespace)
            .await
            .map_err(|e| e.to_string())?;
        status
            .ips
            .first()
            .cloned()
            .ok_or_else(|| format!("failed to find networking container: {status:?}"))
    }
}
