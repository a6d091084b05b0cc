//! Binding and serving the plain-HTTP ports (healthz, read-only), with errors that name the
//! address.
//!
//! Upstream serves them with Go's `net/http` over HTTP/1.1 only (no h2c): the healthz port with
//! `http.ListenAndServe` (no limits), the read-only port with `ReadTimeout`/`WriteTimeout` 4 h,
//! `IdleTimeout` 90 s and `MaxHeaderBytes` 1 MiB (`pkg/kubelet/server/server.go`). kubelet-rs
//! serves HTTP/1.1 too, with 1 MiB of headers, and is stricter on two points ([`ServeLimits`]):
//! a client must send its request headers within [`HEADER_READ_TIMEOUT`] or the connection is
//! closed, and at most [`MAX_CONNECTIONS`] connections are open at once (further ones are
//! closed as soon as they are accepted), so idle or slow clients cannot pile up connections
//! and file descriptors until the kubelet runs out of them.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// How long a client may take to send a request's headers.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Open connections per plain-HTTP server, at most.
pub const MAX_CONNECTIONS: usize = 1024;
/// Upstream `MaxHeaderBytes: 1 << 20`.
pub(crate) const MAX_HEADER_BYTES: usize = 1 << 20;

/// Connection limits of a plain-HTTP server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeLimits {
    /// A connection that has not sent a request's complete headers within this time is closed.
    pub header_read_timeout: Duration,
    /// Connections beyond this many are closed right after they are accepted.
    pub max_connections: usize,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: HEADER_READ_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

/// Errors of the HTTP servers.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The configured address does not parse.
    #[error("invalid listen address {address:?}: {reason}")]
    BadAddress {
        /// The address as configured.
        address: String,
        /// Why it is invalid.
        reason: String,
    },
    /// Binding failed (port in use, permission…).
    #[error("failed to listen on {address}: {source}")]
    Bind {
        /// The address we tried.
        address: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The secure port's TLS setup failed (certificate, key, client CA, TLS flags).
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// Serving failed.
    #[error("server on {address} failed: {source}")]
    Serve {
        /// The address served.
        address: String,
        /// The error.
        source: std::io::Error,
    },
}

/// Binds `address:port` (`address` may be an IPv4 or IPv6 literal, or empty for all).
pub async fn bind(address: &str, port: u16) -> Result<TcpListener, ServerError> {
    let host = if address.is_empty() {
        "0.0.0.0"
    } else {
        address
    };
    let ip: std::net::IpAddr = host.parse().map_err(|e| ServerError::BadAddress {
        address: host.to_string(),
        reason: format!("{e}"),
    })?;
    let addr = SocketAddr::new(ip, port);
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind {
            address: addr.to_string(),
            source,
        })
}

/// Serves `router` on `listener` until `cancel` fires, with the default [`ServeLimits`].
pub async fn serve(
    listener: TcpListener,
    router: Router,
    cancel: CancellationToken,
) -> Result<(), ServerError> {
    serve_with_limits(listener, router, cancel, ServeLimits::default()).await
}

/// Serves `router` over HTTP/1.1 on `listener` until `cancel` fires, then lets open
/// connections finish their request (graceful shutdown).
pub async fn serve_with_limits(
    listener: TcpListener,
    router: Router,
    cancel: CancellationToken,
    limits: ServeLimits,
) -> Result<(), ServerError> {
    let conn_cancel = cancel.clone();
    accept_loop(listener, &cancel, limits, move |stream| {
        serve_connection(stream, router.clone(), conn_cancel.clone(), limits)
    })
    .await;
    Ok(())
}

/// Accepts connections until `cancel` fires and serves each with `serve` on its own task, at
/// most `limits.max_connections` at once (further ones are closed right away); then waits
/// for the open connections to finish.
pub(crate) async fn accept_loop<F, Fut>(
    listener: TcpListener,
    cancel: &CancellationToken,
    limits: ServeLimits,
    serve: F,
) where
    F: Fn(TcpStream) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let tracker = TaskTracker::new();
    loop {
        tokio::select! {
            () = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, remote)) => {
                    let Ok(permit) = slots.clone().try_acquire_owned() else {
                        tracing::debug!(%remote, max = limits.max_connections, "Too many open connections, closing the new one");
                        continue;
                    };
                    let conn = serve(stream);
                    tracker.spawn(async move {
                        conn.await;
                        drop(permit);
                    });
                }
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(err = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    tracker.close();
    tracker.wait().await;
}

/// Drives a hyper connection until it ends; when `cancel` fires first, asks it to shut down
/// gracefully (`shutdown`, its `graceful_shutdown`) and waits for the request in flight.
pub(crate) async fn serve_until_cancelled<C, E>(
    mut conn: Pin<&mut C>,
    shutdown: fn(Pin<&mut C>),
    cancel: &CancellationToken,
) -> Result<(), E>
where
    C: Future<Output = Result<(), E>>,
{
    tokio::select! {
        r = conn.as_mut() => r,
        () = cancel.cancelled() => {
            shutdown(conn.as_mut());
            conn.await
        }
    }
}

/// The HTTP/1.1 connection builder of every port: 1 MiB of headers, read within the limit.
pub(crate) fn http1_builder(limits: ServeLimits) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(MAX_HEADER_BYTES);
    builder
}

async fn serve_connection(
    stream: TcpStream,
    router: Router,
    cancel: CancellationToken,
    limits: ServeLimits,
) {
    let remote = stream.peer_addr().ok();
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        router.clone().oneshot(req)
    });
    let conn = http1_builder(limits).serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let shutdown = hyper::server::conn::http1::Connection::graceful_shutdown;
    if let Err(e) = serve_until_cancelled(conn, shutdown, &cancel).await {
        tracing::debug!(remote = ?remote, err = %e, "connection error");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bind_errors_name_the_address() {
        let err = bind("not-an-ip", 0).await.unwrap_err();
        assert!(err.to_string().contains("not-an-ip"), "{err}");
        let l = bind("127.0.0.1", 0).await.unwrap();
        let port = l.local_addr().unwrap().port();
        let err = bind("127.0.0.1", port).await.unwrap_err();
        assert!(
            err.to_string().contains(&format!("127.0.0.1:{port}")),
            "{err}"
        );
    }

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn start(limits: ServeLimits) -> (SocketAddr, CancellationToken) {
        let l = bind("127.0.0.1", 0).await.unwrap();
        let addr = l.local_addr().unwrap();
        let cancel = CancellationToken::new();
        tokio::spawn(serve_with_limits(
            l,
            crate::healthz_router(),
            cancel.clone(),
            limits,
        ));
        (addr, cancel)
    }

    /// Reads until the server closes the connection; what it sent.
    async fn read_to_close(c: &mut TcpStream) -> String {
        let mut out = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(20), c.read_to_end(&mut out)).await;
        assert!(read.is_ok(), "the server never closed the connection");
        String::from_utf8_lossy(&out).into_owned()
    }

    async fn get_healthz(addr: SocketAddr) -> String {
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        read_to_close(&mut c).await
    }

    #[tokio::test]
    async fn a_connection_that_sends_nothing_is_closed() {
        let limits = ServeLimits {
            header_read_timeout: Duration::from_millis(300),
            ..ServeLimits::default()
        };
        let (addr, cancel) = start(limits).await;
        let mut silent = TcpStream::connect(addr).await.unwrap();
        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET /healthz HTTP/1.1\r\nHost:")
            .await
            .unwrap();
        let answer = read_to_close(&mut silent).await;
        assert!(!answer.contains("200 OK"), "{answer}");
        let answer = read_to_close(&mut slow).await;
        assert!(
            !answer.contains("200 OK"),
            "half-sent headers time out too: {answer}"
        );
        assert!(
            get_healthz(addr).await.ends_with("ok"),
            "the server still serves"
        );
        cancel.cancel();
    }

    #[tokio::test]
    async fn connections_beyond_the_cap_are_closed() {
        let limits = ServeLimits {
            max_connections: 2,
            ..ServeLimits::default()
        };
        let (addr, cancel) = start(limits).await;
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut c = TcpStream::connect(addr).await.unwrap();
            // A complete request on a kept-alive connection: it is surely accepted and open.
            c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut buf = [0_u8; 512];
            let n = c.read(&mut buf).await.unwrap();
            assert!(String::from_utf8_lossy(&buf[..n]).contains("200 OK"));
            held.push(c);
        }
        let answer = get_healthz(addr).await;
        assert_eq!(answer, "", "the third connection is closed unanswered");

        drop(held);
        let mut answer = String::new();
        for _ in 0..100 {
            answer = get_healthz(addr).await;
            if !answer.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            answer.contains("200 OK"),
            "a freed slot serves again: {answer:?}"
        );
        cancel.cancel();
    }

    #[tokio::test]
    async fn serve_stops_on_cancel() {
        let l = bind("127.0.0.1", 0).await.unwrap();
        let cancel = CancellationToken::new();
        let task = tokio::spawn(serve(l, crate::healthz_router(), cancel.clone()));
        cancel.cancel();
        task.await.unwrap().unwrap();
    }
}
