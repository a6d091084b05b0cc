//! The TLS accept loop: handshake, the client certificate's identity attached to every
//! request of the connection, then HTTP/2 when ALPN negotiated `h2` and HTTP/1.1 otherwise
//! (as Go's `http.Server` decides), served by hyper.
//!
//! Limits as upstream's `http.Server` where hyper has them: 1 MiB of headers. Beyond
//! upstream (see [`crate::listen`]): the TLS handshake must finish within
//! [`HANDSHAKE_TIMEOUT`], HTTP/1.1 request headers within the header-read timeout of
//! [`ServeLimits`], and at most [`ServeLimits::max_connections`] connections are open at once,
//! so idle or half-open connections are not kept forever.

use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::authn::PeerIdentity;
use crate::listen::{
    MAX_HEADER_BYTES, ServeLimits, accept_loop, http1_builder, serve_until_cancelled,
};
use crate::proxy::RemoteAddr;

/// How long a client may take to complete the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts connections until `cancel` fires, then lets open connections finish gracefully;
/// with the default [`ServeLimits`].
pub async fn serve_tls(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    router: Router,
    cancel: CancellationToken,
) {
    serve_tls_with_limits(listener, acceptor, router, cancel, ServeLimits::default()).await;
}

/// [`serve_tls`] with the given limits.
pub async fn serve_tls_with_limits(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    router: Router,
    cancel: CancellationToken,
    limits: ServeLimits,
) {
    let conn_cancel = cancel.clone();
    accept_loop(listener, &cancel, limits, move |stream| {
        serve_connection(
            stream,
            acceptor.clone(),
            router.clone(),
            conn_cancel.clone(),
            limits,
        )
    })
    .await;
}

async fn serve_connection(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    router: Router,
    cancel: CancellationToken,
    limits: ServeLimits,
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
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
    let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(peer.clone());
        if let Some(remote) = remote {
            req.extensions_mut().insert(RemoteAddr(remote));
        }
        router.clone().oneshot(req)
    });
    let io = TokioIo::new(tls);
    let result = if h2 {
        let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .max_header_list_size(u32::try_from(MAX_HEADER_BYTES).unwrap_or(u32::MAX));
        let conn = builder.serve_connection(io, service);
        tokio::pin!(conn);
        let shutdown = hyper::server::conn::http2::Connection::graceful_shutdown;
        serve_until_cancelled(conn, shutdown, &cancel).await
    } else {
        let conn = http1_builder(limits)
            .serve_connection(io, service)
            .with_upgrades();
        tokio::pin!(conn);
        let shutdown = hyper::server::conn::http1::UpgradeableConnection::graceful_shutdown;
        serve_until_cancelled(conn, shutdown, &cancel).await
    };
    if let Err(e) = result {
        tracing::debug!(remote = ?remote, err = %e, "secure server: connection error");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::TlsConnector;

    use super::*;
    use crate::tls::{TlsSettings, build_server_config};

    struct Server {
        addr: std::net::SocketAddr,
        client: Arc<rustls::ClientConfig>,
        cancel: CancellationToken,
        _dir: tempfile::TempDir,
    }

    async fn start(limits: ServeLimits) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let settings = TlsSettings {
            cert_dir: dir.path().join("pki"),
            hostname: "node1".into(),
            ..Default::default()
        };
        let tls = build_server_config(&settings, None).unwrap();
        let listener = crate::bind("127.0.0.1", 0).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cancel = CancellationToken::new();
        tokio::spawn(serve_tls_with_limits(
            listener,
            TlsAcceptor::from(tls),
            crate::healthz_router(),
            cancel.clone(),
            limits,
        ));
        let certs: Vec<_> = CertificateDer::pem_file_iter(dir.path().join("pki/kubelet.crt"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(certs.last().unwrap().clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Server {
            addr,
            client: Arc::new(client),
            cancel,
            _dir: dir,
        }
    }

    async fn connect(s: &Server) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(s.addr).await?;
        let name = ServerName::try_from("node1").unwrap();
        TlsConnector::from(s.client.clone())
            .connect(name, tcp)
            .await
    }

    #[tokio::test]
    async fn a_tls_connection_that_sends_no_request_is_closed() {
        let s = start(ServeLimits {
            header_read_timeout: Duration::from_millis(300),
            ..ServeLimits::default()
        })
        .await;
        let mut silent = connect(&s).await.unwrap();
        let mut out = Vec::new();
        let read =
            tokio::time::timeout(Duration::from_secs(20), silent.read_to_end(&mut out)).await;
        assert!(read.is_ok(), "the server never closed the connection");
        assert!(out.is_empty(), "{out:?}");
        s.cancel.cancel();
    }

    #[tokio::test]
    async fn tls_connections_beyond_the_cap_are_closed() {
        let s = start(ServeLimits {
            max_connections: 1,
            ..ServeLimits::default()
        })
        .await;
        let mut held = connect(&s).await.unwrap();
        held.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0_u8; 512];
        let n = held.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).contains("200 OK"));
        assert!(
            connect(&s).await.is_err(),
            "a second connection is closed at accept"
        );
        drop(held);
        let mut ok = false;
        for _ in 0..100 {
            if connect(&s).await.is_ok() {
                ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(ok, "a freed slot accepts again");
        s.cancel.cancel();
    }
}
