//! The TLS accept loop: handshake, the client certificate's identity attached to every
//! request of the connection, then HTTP/1.1 or HTTP/2 (ALPN) served by hyper.
//!
//! Limits as upstream's `http.Server` where hyper has them: 1 MiB of headers. The TLS
//! handshake must finish within [`HANDSHAKE_TIMEOUT`] and HTTP/1 headers within hyper's
//! default header-read timeout, so idle half-open connections are not kept forever.

use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::authn::PeerIdentity;

/// How long a client may take to complete the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Upstream `MaxHeaderBytes: 1 << 20`.
const MAX_HEADER_BYTES: usize = 1 << 20;

/// Accepts connections until `cancel` fires, then lets open connections finish gracefully.
pub async fn serve_tls(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    router: Router,
    cancel: CancellationToken,
) {
    let tracker = TaskTracker::new();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let conn = serve_connection(stream, acceptor.clone(), router.clone(), cancel.clone());
                    tracker.spawn(conn);
                }
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(err = %e, "secure server: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    tracker.close();
    tracker.wait().await;
}

async fn serve_connection(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    router: Router,
    cancel: CancellationToken,
) {
    let remote = stream.peer_addr().ok();
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            tracing::debug!(remote = ?remote, err = %e, "TLS handshake error");
            return;
        }
        Err(_) => {
            tracing::debug!(remote = ?remote, "TLS handshake timed out");
            return;
        }
    };
    let peer = PeerIdentity::from_chain(tls.get_ref().1.peer_certificates());
    let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(peer.clone());
        router.clone().oneshot(req)
    });
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .max_buf_size(MAX_HEADER_BYTES);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(MAX_HEADER_BYTES).unwrap_or(u32::MAX));
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        _ = cancel.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(remote = ?remote, err = %e, "secure server: connection error");
    }
}
