//! The probers themselves, independent of the kubelet (upstream `pkg/probe`: `probe.go`,
//! `util.go`, `dialer_others.go` and the `exec`, `http`, `tcp`, `grpc` packages).

pub mod exec;
pub mod grpc;
pub mod http;
pub mod tcp;

use std::net::SocketAddr;
use std::time::Duration;

use k8s_openapi::api::core::v1::Container;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::net::{TcpSocket, TcpStream};

/// The outcome of one probe run (upstream `probe.Result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Passed.
    Success,
    /// Passed, with something to tell (an HTTP redirect that was not followed).
    Warning,
    /// Failed.
    Failure,
    /// Could not tell.
    Unknown,
}

impl Outcome {
    /// Upstream's string (`success`, `warning`, `failure`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Warning => "warning",
            Outcome::Failure => "failure",
            Outcome::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A prober's answer: the outcome and its output (upstream `(probe.Result, string, error)`
/// with a nil error; an error is the `Err` side of [`ProbeOutput`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probed {
    /// The outcome.
    pub outcome: Outcome,
    /// What the probe said (command output, response body, failure message).
    pub output: String,
}

impl Probed {
    /// An outcome with its output.
    pub fn new(outcome: Outcome, output: impl Into<String>) -> Self {
        Self {
            outcome,
            output: output.into(),
        }
    }
}

/// The probe could not run at all (upstream: a non-nil error; the prober retries it).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct ProbeError(pub String);

/// What a prober returns.
pub type ProbeOutput = Result<Probed, ProbeError>;

/// The port a probe targets: a number, a named container port, or a number written as a
/// string (upstream `ResolveContainerPort`).
pub fn resolve_container_port(
    param: &IntOrString,
    container: &Container,
) -> Result<u16, ProbeError> {
    let port: i64 = match param {
        IntOrString::Int(p) => i64::from(*p),
        IntOrString::String(name) => match container
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
        {
            Some(p) => i64::from(p.container_port),
            None => name.parse::<i64>().map_err(|_| {
                ProbeError(format!("strconv.Atoi: parsing {name:?}: invalid syntax"))
            })?,
        },
    };
    u16::try_from(port)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| ProbeError(format!("invalid port number: {port}")))
}

/// `net.JoinHostPort`: brackets around an IPv6 host.
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Go's `dial tcp <addr>: <reason>` text for a connect error.
pub fn dial_error(addr: &str, e: &std::io::Error) -> String {
    let reason = match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
        std::io::ErrorKind::TimedOut => "i/o timeout".to_string(),
        std::io::ErrorKind::HostUnreachable => "connect: no route to host".to_string(),
        std::io::ErrorKind::NetworkUnreachable => "connect: network is unreachable".to_string(),
        _ => e.to_string(),
    };
    format!("dial tcp {addr}: {reason}")
}

/// Connects like upstream's `ProbeDialer`: `SO_LINGER` of 1 s, so the probe's closed sockets do
/// not sit in TIME-WAIT for a minute (issues.k8s.io/89898). `addr` is `host:port`; a host name
/// is resolved first. The caller bounds the time.
pub async fn probe_connect(addr: &str) -> Result<TcpStream, String> {
    let targets: Vec<SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| format!("dial tcp {addr}: lookup: {e}"))?
        .collect();
    let mut last = format!("dial tcp {addr}: no addresses");
    for target in targets {
        let socket = if target.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        }
        .map_err(|e| dial_error(addr, &e))?;
        // Best effort, as upstream ignores the setsockopt error. The close can linger only
        // while unsent data remains; a probe has read its answer (or timed out) by then.
        #[allow(deprecated)]
        let _ = socket.set_linger(Some(Duration::from_secs(1)));
        match socket.connect(target).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = dial_error(addr, &e),
        }
    }
    Err(last)
}

/// [`probe_connect`] within `timeout` (Go's `Dialer.Timeout`).
pub async fn probe_dial(addr: &str, timeout: Duration) -> Result<TcpStream, String> {
    tokio::time::timeout(timeout, probe_connect(addr))
        .await
        .unwrap_or_else(|_| Err(format!("dial tcp {addr}: i/o timeout")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::api::core::v1::ContainerPort;

    fn container() -> Container {
        Container {
            name: "c".into(),
            ports: Some(vec![ContainerPort {
                name: Some("http".into()),
                container_port: 8080,
                ..ContainerPort::default()
            }]),
            ..Container::default()
        }
    }

    #[test]
    fn ports_resolve_by_number_name_or_numeric_string() {
        let c = container();
        assert_eq!(resolve_container_port(&IntOrString::Int(80), &c), Ok(80));
        assert_eq!(
            resolve_container_port(&IntOrString::String("http".into()), &c),
            Ok(8080)
        );
        assert_eq!(
            resolve_container_port(&IntOrString::String("81".into()), &c),
            Ok(81)
        );
        assert_eq!(
            resolve_container_port(&IntOrString::String("web".into()), &c),
            Err(ProbeError(
                "strconv.Atoi: parsing \"web\": invalid syntax".into()
            ))
        );
        assert_eq!(
            resolve_container_port(&IntOrString::Int(70000), &c),
            Err(ProbeError("invalid port number: 70000".into()))
        );
        assert!(resolve_container_port(&IntOrString::Int(0), &c).is_err());
    }

    #[test]
    fn ipv6_hosts_are_bracketed() {
        assert_eq!(join_host_port("10.0.0.1", 80), "10.0.0.1:80");
        assert_eq!(join_host_port("fd00::1", 80), "[fd00::1]:80");
    }
}
