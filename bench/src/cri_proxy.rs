//! A CRI call-counting proxy (B6, B10): a unix socket the kubelet is given as its
//! `containerRuntimeEndpoint`, forwarding every HTTP/2 request to containerd's socket and
//! counting the requests by gRPC method (the request's `:path`, e.g.
//! `/runtime.v1.RuntimeService/ListContainers`).
//!
//! Each connection of the kubelet gets its own HTTP/2 connection to containerd; request and
//! response bodies (and the gRPC trailers) are streamed through unchanged, so unary and
//! streaming calls (`GetContainerEvents`) both work; a streaming call counts once, when it
//! starts. The proxy runs in the benchmark's process: its CPU is not charged to the kubelet's
//! cgroup. It adds one local hop to every call of both kubelets alike.
//!
//! [`CallCounts`] and its arithmetic are pure and unit-tested.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hyper::body::Incoming;
use hyper::client::conn::http2 as client_h2;
use hyper::server::conn::http2 as server_h2;
use hyper::{Request, Uri};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::Serialize;
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinSet;

use crate::error::{BenchError, BenchResult};

/// Calls per gRPC method (`/package.Service/Method`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CallCounts(pub BTreeMap<String, u64>);

impl CallCounts {
    /// Calls in total.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    /// `self − earlier` per method (a method absent earlier counts from 0; counts never go
    /// down, a smaller one gives 0). Methods with no call in between are left out.
    pub fn since(&self, earlier: &CallCounts) -> CallCounts {
        CallCounts(
            self.0
                .iter()
                .filter_map(|(m, &n)| {
                    let d = n.saturating_sub(earlier.0.get(m).copied().unwrap_or(0));
                    (d > 0).then(|| (m.clone(), d))
                })
                .collect(),
        )
    }

    /// Per minute over `seconds`, keyed by [`short_method`]; empty for a zero window.
    pub fn per_minute(&self, seconds: f64) -> BTreeMap<String, f64> {
        if seconds <= 0.0 || !seconds.is_finite() {
            return BTreeMap::new();
        }
        self.0
            .iter()
            .map(|(m, &n)| (short_method(m).to_owned(), n as f64 * 60.0 / seconds))
            .collect()
    }
}

/// `/runtime.v1.RuntimeService/ListContainers` → `RuntimeService/ListContainers`: the path
/// without its leading `/` and package (other paths are returned unchanged, minus the `/`).
pub fn short_method(path: &str) -> &str {
    let p = path.strip_prefix('/').unwrap_or(path);
    match p.split_once('/') {
        Some((service, _)) => match service.rfind('.') {
            Some(i) => &p[i + 1..],
            None => p,
        },
        None => p,
    }
}

/// The running proxy; stopped (every connection closed, socket removed) when dropped.
#[derive(Debug)]
pub struct CriProxy {
    socket: PathBuf,
    counts: Arc<Mutex<CallCounts>>,
    task: tokio::task::JoinHandle<()>,
}

impl CriProxy {
    /// Listens on `socket` (replacing a stale file) and forwards to the unix socket
    /// `upstream`.
    pub fn start(socket: &Path, upstream: &Path) -> BenchResult<Self> {
        let _ = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket).map_err(BenchError::io("bind", socket))?;
        let counts = Arc::new(Mutex::new(CallCounts::default()));
        let task = tokio::spawn(accept_loop(listener, upstream.to_owned(), counts.clone()));
        Ok(Self {
            socket: socket.to_owned(),
            counts,
            task,
        })
    }

    /// The endpoint to give the kubelet (`unix:///...`).
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// The calls so far.
    pub fn counts(&self) -> CallCounts {
        self.counts.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

impl Drop for CriProxy {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.socket);
    }
}

async fn accept_loop(listener: UnixListener, upstream: PathBuf, counts: Arc<Mutex<CallCounts>>) {
    // Dropped (aborting every connection) when this task is aborted.
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    conns.spawn(serve(stream, upstream.clone(), counts.clone()));
                }
                Err(e) => eprintln!("[bench] CRI proxy: accept: {e}"),
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

async fn serve(stream: UnixStream, upstream: PathBuf, counts: Arc<Mutex<CallCounts>>) {
    let up = match UnixStream::connect(&upstream).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "[bench] CRI proxy: connect {}: {e} (connection dropped)",
                upstream.display()
            );
            return;
        }
    };
    let (sender, conn) = match client_h2::Builder::new(TokioExecutor::new())
        .initial_stream_window_size(4 << 20)
        .initial_connection_window_size(16 << 20)
        .handshake::<_, Incoming>(TokioIo::new(up))
        .await
    {
        Ok(x) => x,
        Err(e) => {
            eprintln!("[bench] CRI proxy: HTTP/2 handshake with containerd: {e}");
            return;
        }
    };
    let client_conn = tokio::spawn(conn);
    let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
        let mut sender = sender.clone();
        let counts = counts.clone();
        async move {
            let path = req.uri().path().to_owned();
            if let Ok(mut c) = counts.lock() {
                *c.0.entry(path.clone()).or_default() += 1;
            }
            let (mut parts, body) = req.into_parts();
            let authority = parts
                .uri
                .authority()
                .map_or_else(|| "localhost".to_owned(), |a| a.to_string());
            let pq = parts
                .uri
                .path_and_query()
                .map_or(path.clone(), |p| p.to_string());
            if let Ok(uri) = Uri::builder()
                .scheme("http")
                .authority(authority)
                .path_and_query(pq)
                .build()
            {
                parts.uri = uri;
            }
            sender.send_request(Request::from_parts(parts, body)).await
        }
    });
    let served = server_h2::Builder::new(TokioExecutor::new())
        .max_concurrent_streams(4096)
        .initial_stream_window_size(4 << 20)
        .initial_connection_window_size(16 << 20)
        .serve_connection(TokioIo::new(stream), svc)
        .await;
    if let Err(e) = served
        && !e.is_closed()
    {
        eprintln!("[bench] CRI proxy: connection: {e}");
    }
    client_conn.abort();
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn counts(v: &[(&str, u64)]) -> CallCounts {
        CallCounts(v.iter().map(|(m, n)| ((*m).to_owned(), *n)).collect())
    }

    #[test]
    fn short_methods() {
        assert_eq!(
            short_method("/runtime.v1.RuntimeService/ListContainers"),
            "RuntimeService/ListContainers"
        );
        assert_eq!(
            short_method("/runtime.v1.ImageService/ImageFsInfo"),
            "ImageService/ImageFsInfo"
        );
        assert_eq!(short_method("/Plain/Method"), "Plain/Method");
        assert_eq!(short_method("/odd"), "odd");
        assert_eq!(short_method(""), "");
    }

    #[test]
    fn differences_and_rates() {
        let before = counts(&[
            ("/runtime.v1.RuntimeService/ListContainers", 10),
            ("/runtime.v1.RuntimeService/Version", 3),
        ]);
        let after = counts(&[
            ("/runtime.v1.RuntimeService/ListContainers", 70),
            ("/runtime.v1.RuntimeService/Version", 3),
            ("/runtime.v1.ImageService/ImageFsInfo", 6),
        ]);
        let d = after.since(&before);
        assert_eq!(
            d,
            counts(&[
                ("/runtime.v1.ImageService/ImageFsInfo", 6),
                ("/runtime.v1.RuntimeService/ListContainers", 60),
            ])
        );
        assert_eq!(d.total(), 66);
        let pm = d.per_minute(120.0);
        assert_eq!(pm["RuntimeService/ListContainers"], 30.0);
        assert_eq!(pm["ImageService/ImageFsInfo"], 3.0);
        assert!(d.per_minute(0.0).is_empty());
        // A counter that went down (cannot happen, but must not underflow).
        assert_eq!(before.since(&after), CallCounts::default());
    }

    #[tokio::test]
    async fn forwards_and_counts_grpc_over_http2() {
        // A tiny HTTP/2 "containerd" answering every request with the path it saw, and a
        // trailer, behind the proxy.
        let dir = tempfile::tempdir().unwrap();
        let upstream = dir.path().join("up.sock");
        let listener = UnixListener::bind(&upstream).unwrap();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(|req: Request<Incoming>| async move {
                        let body = format!(
                            "{} {}",
                            req.uri().path(),
                            req.uri().scheme_str().unwrap_or("-")
                        );
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(body))
                    });
                    let _ = server_h2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(s), svc)
                        .await;
                });
            }
        });
        let proxy = CriProxy::start(&dir.path().join("proxy.sock"), &upstream).unwrap();
        assert!(proxy.endpoint().starts_with("unix:///"));
        let stream = UnixStream::connect(dir.path().join("proxy.sock"))
            .await
            .unwrap();
        let (mut send, conn) =
            client_h2::handshake::<_, _, String>(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(conn);
        for path in [
            "/runtime.v1.RuntimeService/ListPodSandbox",
            "/runtime.v1.RuntimeService/ListPodSandbox",
            "/runtime.v1.ImageService/ImageFsInfo",
        ] {
            let req = Request::builder()
                .uri(format!("http://localhost{path}"))
                .method("POST")
                .body(String::new())
                .unwrap();
            let resp = send.send_request(req).await.unwrap();
            use http_body_util::BodyExt as _;
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, format!("{path} http").as_bytes());
        }
        let c = proxy.counts();
        assert_eq!(c.total(), 3);
        assert_eq!(c.0["/runtime.v1.RuntimeService/ListPodSandbox"], 2);
        drop(proxy);
        assert!(!dir.path().join("proxy.sock").exists());
    }
}
