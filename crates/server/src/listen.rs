//! Binding and serving, with errors that name the address.

use std::net::SocketAddr;

use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

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

/// Serves `router` on `listener` until `cancel` fires.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    cancel: CancellationToken,
) -> Result<(), ServerError> {
    let address = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into());
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { cancel.cancelled().await })
        .await
        .map_err(|source| ServerError::Serve { address, source })
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

    #[tokio::test]
    async fn serve_stops_on_cancel() {
        let l = bind("127.0.0.1", 0).await.unwrap();
        let cancel = CancellationToken::new();
        let task = tokio::spawn(serve(l, crate::healthz_router(), cancel.clone()));
        cancel.cancel();
        task.await.unwrap().unwrap();
    }
}
