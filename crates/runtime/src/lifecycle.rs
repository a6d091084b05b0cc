//! Container lifecycle hooks: `exec`, `httpGet` and `sleep` handlers for postStart and
//! preStop (upstream `pkg/kubelet/lifecycle/handlers.go` `HandlerRunner.Run`).

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, LifecycleHandler, Pod};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubelet_container::ContainerId;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::manager::KubeGenericRuntimeManager;

/// Longest hook output kept in error messages.
const MAX_HOOK_OUTPUT: usize = 10 * 1024;

fn resolve_port(port: &IntOrString, container: &Container) -> Result<u16, String> {
    match port {
        IntOrString::Int(p) => u16::try_from(*p).map_err(|_| format!("invalid port {p}")),
        IntOrString::String(name) => container
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .and_then(|p| u16::try_from(p.container_port).ok())
            .ok_or_else(|| format!("couldn't find port: {name} in {:?}", container.name)),
    }
}

/// One HTTP/1.1 GET; success is a 2xx/3xx status.
async fn http_get(
    host: &str,
    port: u16,
    path: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<(), String> {
    let work = async {
        let addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let mut stream = tokio::net::TcpStream::connect(&addr)
            .await
            .map_err(|e| e.to_string())?;
        let path = if path.is_empty() { "/" } else { path };
        let mut req = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: kube-lifecycle/1.35\r\nConnection: close\r\n"
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        stream
            .write_all(req.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut buf = vec![0_u8; 1024];
        let n = stream.read(&mut buf).await.map_err(|e| e.to_string())?;
        let head = String::from_utf8_lossy(&buf[..n]);
        let code: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or("malformed HTTP response")?;
        if (200..400).contains(&code) {
            Ok(())
        } else {
            Err(format!("HTTP lifecycle hook returned status {code}"))
        }
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| "HTTP lifecycle hook timed out".to_string())?
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
                out.truncate(MAX_HOOK_OUTPUT);
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
            let host = get
                .host
                .clone()
                .filter(|h| !h.is_empty())
                .or_else(|| pod_ips.first().cloned())
                .unwrap_or_else(|| "127.0.0.1".into());
            let port = resolve_port(&get.port, container)?;
            let headers: Vec<(String, String)> = get
                .http_headers
                .iter()
                .flatten()
                .map(|h| (h.name.clone(), h.value.clone()))
                .collect();
            return http_get(
                &host,
                port,
                get.path.as_deref().unwrap_or("/"),
                &headers,
                timeout.unwrap_or(Duration::from_secs(30)),
            )
            .await;
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
}
