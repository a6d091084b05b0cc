//! Clients whose client certificate rotates without a restart: upstream
//! `pkg/kubelet/certificate/transport.go` (`UpdateTransport`, `addCertRotation`) and
//! client-go `util/connrotation`.
//!
//! kube-rs builds its rustls configuration once, from the kubeconfig. The clients' shared
//! transport ([`crate::transport`]) is assembled here instead, with two differences:
//!
//! * the rustls client presents whatever the [`CertificateSource`] holds at each handshake
//!   (`tlsConfig.GetClientCertificate = manager.Current()`; none yet: an empty certificate
//!   message, as upstream);
//! * every connection is tracked ([`ConnectionTracker`]); when the source changes, all of
//!   them are closed (`d.CloseAll()`, logged as upstream), so the next request handshakes
//!   again with the new certificate. Upstream polls the manager every 10 s; here the change
//!   is seen at once. TLS session resumption is off (a resumed session keeps the old
//!   identity; client-go configures no session cache either).
//!
//! As upstream (`restclient.AnonymousClientConfig`), the kubeconfig's own credentials
//! (tokens, exec plugins, its client certificate) are dropped: only the cluster (server,
//! CA, TLS server name, insecure) and the headers are kept.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use rustls::client::ResolvesClientCert;
use rustls::sign::CertifiedKey;
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tower::Service;

/// The certificate the clients present: the certificate manager's channel
/// (`kubelet_certificate::Manager::certified_keys`).
pub type CertificateSource = watch::Receiver<Option<Arc<CertifiedKey>>>;

/// `tls.Config.GetClientCertificate` reading the source.
#[derive(Debug)]
pub struct SourceResolver(CertificateSource);

impl SourceResolver {
    /// A resolver presenting the current value of `source`.
    pub fn new(source: CertificateSource) -> Self {
        Self(source)
    }
}

impl ResolvesClientCert for SourceResolver {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        self.0.borrow().clone()
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// `connrotation.Dialer`: the open connections, closed all at once by [`Self::close_all`].
#[derive(Debug, Clone, Default)]
pub struct ConnectionTracker {
    current: Arc<Mutex<CancellationToken>>,
}

impl ConnectionTracker {
    fn token(&self) -> CancellationToken {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `CloseAll`: every connection opened so far fails its next (or pending) read or
    /// write; hyper drops it and dials a new one for the next request.
    pub fn close_all(&self) {
        let old = std::mem::take(&mut *self.current.lock().unwrap_or_else(PoisonError::into_inner));
        old.cancel();
    }

    /// Close all connections each time `source` changes, until its sender is gone.
    pub fn close_on_change(&self, mut source: CertificateSource) {
        let tracker = self.clone();
        tokio::spawn(async move {
            source.borrow_and_update();
            while source.changed().await.is_ok() {
                source.borrow_and_update();
                tracing::info!(
                    "Certificate rotation detected, shutting down client connections to start using new credentials"
                );
                tracker.close_all();
            }
        });
    }
}

/// A connector whose connections the tracker can close.
#[derive(Debug, Clone)]
pub struct TrackedConnector<C> {
    inner: C,
    tracker: ConnectionTracker,
}

impl<C> TrackedConnector<C> {
    /// Track the connections of `inner`.
    pub fn new(inner: C, tracker: ConnectionTracker) -> Self {
        Self { inner, tracker }
    }
}

impl<C> Service<Uri> for TrackedConnector<C>
where
    C: Service<Uri> + Clone + Send + 'static,
    C::Future: Send + 'static,
    C::Response: Send,
{
    type Response = TrackedIo<C::Response>;
    type Error = C::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.inner.call(uri);
        let tracker = self.tracker.clone();
        Box::pin(async move {
            let io = connecting.await?;
            // Registered once dialled: a rotation during the dial does not kill it.
            Ok(TrackedIo {
                inner: io,
                closed: Box::pin(tracker.token().cancelled_owned()),
            })
        })
    }
}

/// A tracked connection.
pub struct TrackedIo<T> {
    inner: T,
    closed: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl<T> std::fmt::Debug for TrackedIo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedIo").finish_non_exhaustive()
    }
}

impl<T> TrackedIo<T> {
    fn check_closed(&mut self, cx: &mut Context<'_>) -> Result<(), std::io::Error> {
        match self.closed.as_mut().poll(cx) {
            Poll::Ready(()) => Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "connection closed: the client certificate was rotated",
            )),
            Poll::Pending => Ok(()),
        }
    }
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for TrackedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        self.check_closed(cx)?;
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for TrackedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.check_closed(cx)?;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.check_closed(cx)?;
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
}

impl<T: Connection> Connection for TrackedIo<T> {
    fn connected(&self) -> Connected {
        self.inner.connected()
    }
}
