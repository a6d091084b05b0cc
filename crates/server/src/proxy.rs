//! The kubelet's streaming proxy (`pkg/kubelet/server/server.go` `proxyStream`: apimachinery
//! `proxy.NewUpgradeAwareHandler(url, nil, false, true /*upgradeRequired*/, responder)`).
//!
//! The client's upgrade request (SPDY from the API server, or a WebSocket) is sent as is —
//! method, headers with `Connection`/`Upgrade` and the stream-protocol headers,
//! `X-Forwarded-For` appended — to the runtime's streaming URL; the runtime's answer decides:
//! * 101: the answer goes back to the client and both upgraded connections are spliced
//!   until either direction ends (then both are closed);
//! * 4xx/5xx: the answer goes back to the client as is, and the connection is closed;
//! * anything else: 500 `invalid upgrade response: status code N` (a redirect is never
//!   followed nor passed on, CVE-2020-8559);
//! * a request without `Connection: Upgrade`: 500 `Upgrade request required` (the kubelet's
//!   responder answers every proxy error with 500).

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// The client's address, put on each request by the accept loop (for `X-Forwarded-For`).
#[derive(Debug, Clone, Copy)]
pub struct RemoteAddr(pub SocketAddr);

/// `httpstream.IsUpgradeRequest`: a `Connection` header naming `upgrade`.
pub fn is_upgrade_request(headers: &HeaderMap) -> bool {
    headers.get_all(header::CONNECTION).iter().any(|v| {
        v.to_str().is_ok_and(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
        })
    })
}

/// The kubelet's `responder.Error`: 500 with the error text (`http.Error`).
fn proxy_error(msg: impl std::fmt::Display) -> Response {
    tracing::error!(err = %msg, "Error while proxying request");
    crate::respond::text(StatusCode::INTERNAL_SERVER_ERROR, format!("{msg}\n"))
}

/// Where to dial and what to ask for, from the runtime's URL.
pub(crate) fn backend(location: &str) -> Result<(String, String), String> {
    let uri: Uri = location
        .parse()
        .map_err(|e| format!("invalid streaming URL {location:?}: {e}"))?;
    match uri.scheme_str() {
        Some("http") => {}
        other => {
            return Err(format!(
                "error dialing backend: unsupported streaming URL scheme {other:?} (kubelet-rs proxies to http:// runtime streaming servers)"
            ));
        }
    }
    let authority = uri
        .authority()
        .ok_or_else(|| format!("invalid streaming URL {location:?}: no host"))?;
    let addr = if authority.port().is_some() {
        authority.to_string()
    } else {
        format!("{}:80", authority.host())
    };
    let path = uri
        .path_and_query()
        .map_or_else(|| "/".to_string(), ToString::to_string);
    Ok((addr, path))
}

/// Proxies the upgrade request `req` to `location` (`UpgradeAwareHandler.ServeHTTP` with
/// `UpgradeRequired`).
pub async fn proxy_stream(mut req: Request, location: &str) -> Response {
    if !is_upgrade_request(req.headers()) {
        return proxy_error("Upgrade request required");
    }
    let (addr, path) = match backend(location) {
        Ok(b) => b,
        Err(e) => return proxy_error(e),
    };
    let tcp = match TcpStream::connect(&addr).await {
        Ok(t) => t,
        Err(e) => return proxy_error(format!("error dialing backend: {e}")),
    };
    let (mut sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await {
        Ok(h) => h,
        Err(e) => return proxy_error(format!("error dialing backend: {e}")),
    };
    tokio::spawn(async move {
        if let Err(e) = conn.with_upgrades().await {
            tracing::debug!(err = %e, "streaming backend connection ended");
        }
    });
    let client_upgrade = hyper::upgrade::on(&mut req);
    let mut out = hyper::Request::builder()
        .method(req.method().clone())
        .uri(path);
    if let Some(h) = out.headers_mut() {
        *h = req.headers().clone();
        if let Some(RemoteAddr(remote)) = req.extensions().get::<RemoteAddr>() {
            append_forwarded_for(h, remote);
        }
    }
    let out = match out.body(http_body_util::Empty::<hyper::body::Bytes>::new()) {
        Ok(r) => r,
        Err(e) => return proxy_error(e),
    };
    let mut resp = match sender.send_request(out).await {
        Ok(r) => r,
        Err(e) => return proxy_error(e),
    };
    let status = resp.status();
    if status != StatusCode::SWITCHING_PROTOCOLS && status.as_u16() < 400 {
        return proxy_error(format!(
            "invalid upgrade response: status code {}",
            status.as_u16()
        ));
    }
    if status != StatusCode::SWITCHING_PROTOCOLS {
        // The runtime's error goes back as is; the connection is not reused.
        let (mut parts, body) = resp.into_parts();
        parts
            .headers
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return Response::from_parts(parts, Body::new(body));
    }
    let backend_upgrade = hyper::upgrade::on(&mut resp);
    tokio::spawn(async move {
        let (client, backend) = match tokio::join!(client_upgrade, backend_upgrade) {
            (Ok(c), Ok(b)) => (c, b),
            (c, b) => {
                tracing::error!(client = ?c.err(), backend = ?b.err(), "Proxy upgrade error");
                return;
            }
        };
        splice(TokioIo::new(client), TokioIo::new(backend)).await;
    });
    let mut answer = Response::builder().status(StatusCode::SWITCHING_PROTOCOLS);
    if let Some(h) = answer.headers_mut() {
        *h = resp.headers().clone();
    }
    answer
        .body(Body::empty())
        .unwrap_or_else(|e| proxy_error(e).into_response())
}

/// `utilnet.AppendForwardedForHeader`.
fn append_forwarded_for(headers: &mut HeaderMap, remote: &SocketAddr) {
    let ip = remote.ip().to_string();
    let value = match headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()) {
        Some(prior) => format!("{prior}, {ip}"),
        None => ip,
    };
    if let Ok(v) = HeaderValue::from_str(&value) {
        headers.insert("x-forwarded-for", v);
    }
}

/// Copies both ways until either direction ends, then closes both connections.
async fn splice<A, B>(client: A, backend: B)
where
    A: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    B: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut client_r, mut client_w) = tokio::io::split(client);
    let (mut backend_r, mut backend_w) = tokio::io::split(backend);
    let to_backend = tokio::io::copy(&mut client_r, &mut backend_w);
    let to_client = tokio::io::copy(&mut backend_r, &mut client_w);
    tokio::select! {
        r = to_backend => if let Err(e) = r {
            tracing::debug!(err = %e, "Error proxying data from client to backend");
        },
        r = to_client => if let Err(e) = r {
            tracing::debug!(err = %e, "Error proxying data from backend to client");
        },
    }
    let _ = client_w.shutdown().await;
    let _ = backend_w.shutdown().await;
}
