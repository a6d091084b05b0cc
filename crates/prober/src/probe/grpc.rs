//! gRPC probe: `grpc.health.v1.Health/Check` over plaintext HTTP/2 (upstream
//! `pkg/probe/grpc/grpc.go`). `SERVING` is success; anything else, an error status or no
//! answer within the timeout is a failure.

use std::time::Duration;

use hyper_util::rt::TokioIo;
use kubelet_cri::error_chain;
use tokio::time::Instant;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Endpoint;

use super::{Outcome, ProbeOutput, Probed, join_host_port, probe_connect};

/// `grpc.health.v1.HealthCheckRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckRequest {
    /// The service asked about; empty for the server as a whole.
    #[prost(string, tag = "1")]
    pub service: String,
}

/// `grpc.health.v1.HealthCheckResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckResponse {
    /// A [`ServingStatus`].
    #[prost(enumeration = "ServingStatus", tag = "1")]
    pub status: i32,
}

/// `grpc.health.v1.HealthCheckResponse.ServingStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ServingStatus {
    /// `UNKNOWN`.
    Unknown = 0,
    /// `SERVING`.
    Serving = 1,
    /// `NOT_SERVING`.
    NotServing = 2,
    /// `SERVICE_UNKNOWN`.
    ServiceUnknown = 3,
}

impl ServingStatus {
    /// The proto enum name, as Go's `String()` prints it.
    pub fn proto_name(self) -> &'static str {
        match self {
            ServingStatus::Unknown => "UNKNOWN",
            ServingStatus::Serving => "SERVING",
            ServingStatus::NotServing => "NOT_SERVING",
            ServingStatus::ServiceUnknown => "SERVICE_UNKNOWN",
        }
    }
}

const CHECK: &str = "/grpc.health.v1.Health/Check";

/// Upstream `grpcProber.Probe(host, service, port, timeout)`.
pub async fn probe(host: &str, service: &str, port: u16, timeout: Duration) -> ProbeOutput {
    let addr = join_host_port(host, port);
    let deadline = Instant::now() + timeout;
    let connect_failed = |e: String| {
        Ok(Probed::new(
            Outcome::Failure,
            format!("error: failed to connect service at {addr:?}: {e}"),
        ))
    };
    let endpoint = match Endpoint::from_shared(format!("http://{addr}"))
        .and_then(|e| e.user_agent("kube-probe/1.35"))
    {
        Ok(e) => e,
        Err(e) => return connect_failed(e.to_string()),
    };
    let dial_addr = addr.clone();
    let connector = tower::service_fn(move |_: tonic::transport::Uri| {
        let addr = dial_addr.clone();
        async move {
            probe_connect(&addr)
                .await
                .map(TokioIo::new)
                .map_err(std::io::Error::other)
        }
    });
    let channel = match tokio::time::timeout_at(
        deadline,
        endpoint.connect_with_connector(connector),
    )
    .await
    {
        Ok(Ok(channel)) => channel,
        Ok(Err(e)) => return connect_failed(error_chain(&e)),
        Err(_) => {
            return Ok(Probed::new(
                Outcome::Failure,
                format!(
                    "timeout: failed to connect service {addr:?} within {timeout:?}: context deadline exceeded"
                ),
            ));
        }
    };
    let mut client = tonic::client::Grpc::new(channel);
    let call = async {
        client
            .ready()
            .await
            .map_err(|e| tonic::Status::unavailable(error_chain(&e)))?;
        let mut request = tonic::Request::new(HealthCheckRequest {
            service: service.to_string(),
        });
        request.set_timeout(deadline.saturating_duration_since(Instant::now()));
        let codec = tonic_prost::ProstCodec::<HealthCheckRequest, HealthCheckResponse>::default();
        client
            .unary(request, PathAndQuery::from_static(CHECK), codec)
            .await
    };
    let timed_out = || {
        Ok(Probed::new(
            Outcome::Failure,
            format!("timeout: health rpc did not complete within {timeout:?}"),
        ))
    };
    let response = match tokio::time::timeout_at(deadline, call).await {
        Err(_) => return timed_out(),
        Ok(Err(status)) => {
            return match status.code() {
                tonic::Code::Unimplemented => Ok(Probed::new(
                    Outcome::Failure,
                    format!(
                        "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): {}",
                        status.message()
                    ),
                )),
                tonic::Code::DeadlineExceeded => timed_out(),
                _ => Ok(Probed::new(
                    Outcome::Failure,
                    format!(
                        "error: health rpc probe failed: rpc error: code = {:?} desc = {}",
                        status.code(),
                        status.message()
                    ),
                )),
            };
        }
        Ok(Ok(response)) => response.into_inner(),
    };
    let status = ServingStatus::try_from(response.status).unwrap_or(ServingStatus::Unknown);
    if status == ServingStatus::Serving {
        Ok(Probed::new(Outcome::Success, "service healthy"))
    } else {
        Ok(Probed::new(
            Outcome::Failure,
            format!(
                "service unhealthy (responded with {:?})",
                status.proto_name()
            ),
        ))
    }
}

#[cfg(test)]
#[path = "grpc_tests.rs"]
mod tests;
