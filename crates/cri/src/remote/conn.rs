//! The gRPC connection shared by the remote runtime and image clients: dialing a unix socket,
//! the 16 MiB message limits and per-call deadlines (`k8s.io/cri-client/pkg/remote_runtime.go`
//! `NewRemoteRuntimeService`, `utils.go` `maxMsgSize`).

use std::future::Future;
use std::time::{Duration, Instant};

use tonic::transport::{Channel, Endpoint};

use crate::error::{CriError, error_chain};
use crate::remote::endpoint::parse_endpoint;

/// Maximum gRPC message size in both directions: 16 MiB, as upstream (gRPC's default is 4 MiB
/// and busy nodes exceed it in ListContainers / ListPodSandbox).
pub const MAX_MSG_SIZE: usize = 16 * 1024 * 1024;

/// A connected channel plus the endpoint name and the default per-call timeout.
#[derive(Clone, Debug)]
pub(crate) struct Conn {
    pub endpoint: String,
    pub channel: Channel,
    pub timeout: Duration,
}

impl Conn {
    /// Dials `endpoint` (unix socket), waiting at most `timeout` for the connection.
    /// `service` names the far side in the error ("container runtime", "image service").
    pub async fn dial(
        service: &'static str,
        endpoint: &str,
        timeout: Duration,
    ) -> Result<Conn, CriError> {
        let path = parse_endpoint(endpoint)?;
        let uri = format!("unix://{}", path.display());
        let connect_err = |reason: String| CriError::Connect {
            service,
            endpoint: endpoint.to_owned(),
            reason,
        };
        let ep = Endpoint::from_shared(uri).map_err(|e| connect_err(error_chain(&e)))?;
        let ep = ep.connect_timeout(timeout);
        let channel = match tokio::time::timeout(timeout, ep.connect()).await {
            Ok(Ok(channel)) => channel,
            Ok(Err(e)) => return Err(connect_err(error_chain(&e))),
            Err(_) => return Err(connect_err(format!("timed out after {timeout:?}"))),
        };
        Ok(Conn {
            endpoint: endpoint.to_owned(),
            channel,
            timeout,
        })
    }

    /// Runs one unary call with an optional deadline (`None`: no deadline, like upstream's
    /// PullImage). The deadline is sent to the server as `grpc-timeout` and enforced locally:
    /// when it passes the call is cancelled and the error has code `DeadlineExceeded`.
    pub async fn unary<Req, Resp, Fut>(
        &self,
        method: &'static str,
        deadline: Option<Duration>,
        msg: Req,
        call: impl FnOnce(tonic::Request<Req>) -> Fut,
    ) -> Result<Resp, CriError>
    where
        Fut: Future<Output = Result<tonic::Response<Resp>, tonic::Status>>,
    {
        let mut req = tonic::Request::new(msg);
        let Some(d) = deadline else {
            return call(req)
                .await
                .map(tonic::Response::into_inner)
                .map_err(|s| CriError::from_tonic(&self.endpoint, method, &s));
        };
        req.set_timeout(d);
        let started = Instant::now();
        let deadline_err = || {
            let msg = format!("context deadline exceeded (timeout {d:?})");
            CriError::status(&self.endpoint, method, tonic::Code::DeadlineExceeded, msg)
        };
        match tokio::time::timeout(d, call(req)).await {
            Err(_) => Err(deadline_err()),
            Ok(Ok(resp)) => Ok(resp.into_inner()),
            // A tonic server enforcing the grpc-timeout we sent answers `Cancelled`
            // ("Timeout expired"); Go servers answer DeadlineExceeded. Report it the Go way.
            Ok(Err(s)) if s.code() == tonic::Code::Cancelled && started.elapsed() >= d => {
                Err(deadline_err())
            }
            Ok(Err(s)) => Err(CriError::from_tonic(&self.endpoint, method, &s)),
        }
    }

    /// Error for a response that lacks required fields.
    pub fn invalid(&self, method: &'static str, reason: impl Into<String>) -> CriError {
        CriError::InvalidResponse {
            endpoint: self.endpoint.clone(),
            method,
            reason: reason.into(),
        }
    }
}
