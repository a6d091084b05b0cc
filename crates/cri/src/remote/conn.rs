//! The gRPC connection shared by the remote runtime and image clients: dialing a unix socket,
//! the 16 MiB message limits and per-call deadlines (`k8s.io/cri-client/pkg/remote_runtime.go`
//! `NewRemoteRuntimeService`, `utils.go` `maxMsgSize`).

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

use tonic::transport::{Channel, Endpoint};

use crate::error::{CriError, error_chain};
use crate::remote::endpoint::parse_endpoint;
use crate::v1::image_service_client::ImageServiceClient;
use crate::v1::runtime_service_client::RuntimeServiceClient;

/// Maximum gRPC message size in both directions: 16 MiB, as upstream (gRPC's default is 4 MiB
/// and busy nodes exceed it in ListContainers / ListPodSandbox).
pub const MAX_MSG_SIZE: usize = 16 * 1024 * 1024;

/// A generated gRPC client the remote services build per call over a [`Conn`]'s channel.
pub(crate) trait GrpcClient {
    /// Names the far side in logs and errors ("container runtime", "image service").
    const SERVICE: &'static str;

    /// The client over `channel`, with the [`MAX_MSG_SIZE`] limits in both directions.
    fn with_channel(channel: Channel) -> Self;
}

/// Implements [`GrpcClient`] for a generated tonic client (they share no trait of their own).
macro_rules! grpc_client {
    ($client:ident, $service:literal) => {
        impl GrpcClient for $client<Channel> {
            const SERVICE: &'static str = $service;

            fn with_channel(channel: Channel) -> Self {
                $client::new(channel)
                    .max_decoding_message_size(MAX_MSG_SIZE)
                    .max_encoding_message_size(MAX_MSG_SIZE)
            }
        }
    };
}

grpc_client!(RuntimeServiceClient, "container runtime");
grpc_client!(ImageServiceClient, "image service");

/// A connected channel plus the endpoint name and the default per-call timeout; `C` is the
/// generated client each call runs on.
pub(crate) struct Conn<C> {
    pub endpoint: String,
    pub channel: Channel,
    pub timeout: Duration,
    client: PhantomData<fn() -> C>,
}

impl<C> Clone for Conn<C> {
    fn clone(&self) -> Self {
        Conn {
            endpoint: self.endpoint.clone(),
            channel: self.channel.clone(),
            timeout: self.timeout,
            client: PhantomData,
        }
    }
}

impl<C> fmt::Debug for Conn<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conn")
            .field("endpoint", &self.endpoint)
            .field("channel", &self.channel)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl<C: GrpcClient> Conn<C> {
    /// Dials `endpoint` (unix socket), waiting at most `timeout` for the connection.
    pub async fn dial(endpoint: &str, timeout: Duration) -> Result<Conn<C>, CriError> {
        let service = C::SERVICE;
        tracing::debug!(endpoint, ?timeout, service, "Connecting to CRI service");
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
            client: PhantomData,
        })
    }

    /// Runs one unary call on a fresh client (see [`Conn::unary`]), logging a failure.
    pub async fn call<Req, Resp, Fut>(
        &self,
        method: &'static str,
        deadline: Option<Duration>,
        msg: Req,
        f: impl FnOnce(C, tonic::Request<Req>) -> Fut,
    ) -> Result<Resp, CriError>
    where
        Fut: Future<Output = Result<tonic::Response<Resp>, tonic::Status>>,
    {
        let client = C::with_channel(self.channel.clone());
        let result = self.unary(method, deadline, msg, |r| f(client, r)).await;
        if let Err(err) = &result {
            tracing::debug!(%err, service = C::SERVICE, "CRI call failed");
        }
        result
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
}

impl<C> Conn<C> {
    /// Error for a response that lacks required fields.
    pub fn invalid(&self, method: &'static str, reason: impl Into<String>) -> CriError {
        CriError::InvalidResponse {
            endpoint: self.endpoint.clone(),
            method,
            reason: reason.into(),
        }
    }
}
