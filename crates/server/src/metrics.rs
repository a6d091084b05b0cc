//! `/metrics` and `/metrics/probes` (OpenMetrics when asked: `crate::openmetrics`) (`InstallAuthNotRequiredHandlers` in
//! `pkg/kubelet/server/server.go`: `legacyregistry.Handler()` and the prober registry's
//! `HandlerFor`), and the HTTP request metrics every request of both ports updates
//! (`Server.ServeHTTP`: `kubelet_http_requests_total`, `kubelet_http_inflight_requests`,
//! `kubelet_http_requests_duration_seconds`, labelled by the method bucket, the path
//! bucket of the handlers installed, `server_type` and `long_running`).

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use kubelet_metrics::KubeRegistry;

/// `/metrics` and `/metrics/probes`, every method (registered with `Handle`, as upstream).
pub(crate) fn metrics_routes() -> Router {
    Router::new()
        .route("/metrics", any(legacy))
        .route("/metrics/probes", any(probes))
}

async fn legacy(headers: HeaderMap) -> Response {
    serve(kubelet_metrics::legacy_registry(), &headers, true)
}

async fn probes(headers: HeaderMap) -> Response {
    serve(kubelet_metrics::probes_registry(), &headers, false)
}

/// promhttp's handler: the negotiated format; legacyregistry's handler also sends
/// `Process-Start-Time-Unix` (`HandlerOpts.ProcessStartTime`).
fn serve(registry: Option<&KubeRegistry>, headers: &HeaderMap, start_header: bool) -> Response {
    let Some(registry) = registry else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "An error has occurred while gathering metrics: the registry failed to register\n",
        )
            .into_response();
    };
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let scrape = kubelet_metrics::scrape(registry, accept);
    let mut resp = (StatusCode::OK, scrape.body).into_response();
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&scrape.content_type) {
        h.insert(header::CONTENT_TYPE, v);
    }
    if start_header {
        h.insert(
            "Process-Start-Time-Unix",
            HeaderValue::from(kubelet_metrics::process_start_unix()),
        );
    }
    resp
}

/// The path buckets of one server (`addMetricsBucketMatcher`) and its `server_type`.
#[derive(Clone)]
pub(crate) struct HttpMetrics {
    server_type: &'static str,
    buckets: Arc<HashSet<&'static str>>,
}

/// `InstallAuthNotRequiredHandlers`' buckets.
const DEFAULT_BUCKETS: [&str; 7] = [
    "healthz",
    "pods",
    "stats",
    "metrics",
    "metrics/cadvisor",
    "metrics/probes",
    "metrics/resource",
];

impl HttpMetrics {
    /// The read-only server (`auth == nil`: `server_type="readonly"`).
    pub(crate) fn read_only() -> Self {
        Self::new("readonly", &[])
    }

    /// The secure server: `InstallAuthRequiredHandlers` (+ system log, profiling and
    /// `checkpoint` with the `ContainerCheckpoint` gate) or
    /// `InstallDebuggingDisabledHandlers`.
    pub(crate) fn secure(debugging_handlers: bool, checkpoint: bool) -> Self {
        // Both sets install these subtrees (handlers or the 405 "disabled" ones).
        const BOTH: [&str; 7] = [
            "run",
            "exec",
            "attach",
            "portForward",
            "containerLogs",
            "runningpods",
            "logs",
        ];
        let extra: &[&str] = if debugging_handlers {
            &["configz", "debug"]
        } else {
            &["pprof"]
        };
        let checkpoint = (debugging_handlers && checkpoint).then_some("checkpoint");
        let all: Vec<&'static str> = BOTH
            .iter()
            .chain(extra)
            .copied()
            .chain(checkpoint)
            .collect();
        Self::new("readwrite", &all)
    }

    fn new(server_type: &'static str, extra: &[&'static str]) -> Self {
        HttpMetrics {
            server_type,
            buckets: Arc::new(DEFAULT_BUCKETS.iter().chain(extra).copied().collect()),
        }
    }

    /// `getMetricBucket`.
    fn path_bucket(&self, path: &str) -> &'static str {
        let root = url_root_path(path);
        self.buckets.get(root.as_str()).copied().unwrap_or("other")
    }
}

/// `getURLRootPath`: the first segment, or `metrics/<x>` under `/metrics/`.
fn url_root_path(path: &str) -> String {
    let parts: Vec<&str> = path.trim_start_matches('/').splitn(3, '/').collect();
    match parts.as_slice() {
        ["metrics", second, ..] => format!("metrics/{second}"),
        [first, ..] => (*first).to_string(),
        [] => path.to_string(),
    }
}

/// `getMetricMethodBucket`.
fn method_bucket(method: &str) -> &'static str {
    const KNOWN: [&str; 8] = [
        "OPTIONS", "GET", "HEAD", "POST", "PUT", "DELETE", "TRACE", "CONNECT",
    ];
    KNOWN
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("other")
}

/// Decrements the in-flight gauge and observes the duration when the response body is
/// done (dropped), as `ServeHTTP`'s deferred calls run after the handler wrote it.
struct InFlight {
    labels: [String; 4],
    start: Instant,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let labels: Vec<&str> = self.labels.iter().map(String::as_str).collect();
        let secs = self.start.elapsed().as_secs_f64();
        kubelet_metrics::with(|m| {
            m.http_inflight_requests.with_label_values(&labels).dec();
            m.http_requests_duration
                .with_label_values(&labels)
                .observe(secs);
        });
    }
}

/// The middleware (outermost: requests refused by the auth filter count too).
pub(crate) async fn http_metrics(
    State(metrics): State<HttpMetrics>,
    req: Request,
    next: Next,
) -> Response {
    let path = metrics.path_bucket(req.uri().path());
    // `longRunningRequestPathMap` holds `portforward` in lower case, so `portForward`
    // requests count as not long-running upstream too.
    let long_running = matches!(path, "exec" | "attach" | "portforward" | "debug");
    let labels = [
        method_bucket(req.method().as_str()).to_string(),
        path.to_string(),
        metrics.server_type.to_string(),
        long_running.to_string(),
    ];
    let label_refs: Vec<&str> = labels.iter().map(String::as_str).collect();
    kubelet_metrics::with(|m| {
        m.http_requests.with_label_values(&label_refs).inc();
        m.http_inflight_requests
            .with_label_values(&label_refs)
            .inc();
    });
    let guard = InFlight {
        labels,
        start: Instant::now(),
    };
    let resp = next.run(req).await;
    resp.map(|inner| {
        Body::new(Guarded {
            inner,
            _guard: guard,
        })
    })
}

/// A response body holding the [`InFlight`] guard; size and end forwarded, so a small
/// answer keeps its `Content-Length`.
struct Guarded {
    inner: Body,
    _guard: InFlight,
}

impl HttpBody for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::HostInterface;
    use http_body_util::BodyExt;
    use k8s_openapi::api::core::v1::Pod;
    use kubelet_metrics::testing::{parse, value};
    use tower::ServiceExt;

    struct NoPods;
    impl HostInterface for NoPods {
        fn get_pods(&self) -> Vec<Pod> {
            Vec::new()
        }
        fn sync_loop_health(&self) -> Result<(), String> {
            Ok(())
        }
    }

    async fn get(uri: &str, accept: Option<&str>) -> (StatusCode, HeaderMap, String) {
        let router = crate::read_only_router(Arc::new(NoPods));
        let mut req = axum::http::Request::get(uri);
        if let Some(a) = accept {
            req = req.header(header::ACCEPT, a);
        }
        let resp = router
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, headers, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn read_only_port_serves_metrics_and_counts_requests() {
        let _ = get("/pods", None).await;
        // A path outside every ServeMux pattern is answered 404 before the handlers (not
        // counted, as upstream's mux); one inside a pattern but unrouted is counted.
        let _ = get("/nope/x", None).await;
        let _ = get("/stats/nope", None).await;
        // The text format preferred (OpenMetrics when preferred: `crate::openmetrics`).
        let (status, headers, body) = get(
            "/metrics",
            Some("text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0;q=0.5"),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            headers[header::CONTENT_TYPE],
            "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"
        );
        assert!(headers.contains_key("Process-Start-Time-Unix"));
        let families = parse(&body).unwrap();
        let requests = &families["kubelet_http_requests_total"];
        assert_eq!(
            requests.get_label_names(),
            ["long_running", "method", "path", "server_type"]
        );
        assert!(value(requests, &["false", "GET", "pods", "readonly"]).unwrap() >= 1.0);
        assert!(value(requests, &["false", "GET", "stats", "readonly"]).unwrap() >= 1.0);
        assert_eq!(
            value(requests, &["false", "GET", "other", "readonly"]),
            None
        );
        // The scrape itself is in flight while it is gathered.
        assert!(
            value(
                &families["kubelet_http_inflight_requests"],
                &["false", "GET", "metrics", "readonly"]
            )
            .unwrap()
                >= 1.0
        );
        let durations = &families["kubelet_http_requests_duration_seconds"];
        assert!(value(durations, &["false", "GET", "pods", "readonly"]).unwrap() >= 1.0);

        let (status, _, body) = get("/metrics/probes", None).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            parse(&body)
                .unwrap()
                .contains_key("process_start_time_seconds")
        );
        let (status, _, _) = get("/metrics/other", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[test]
    fn path_and_method_buckets_follow_upstream() {
        let ro = HttpMetrics::read_only();
        assert_eq!(ro.path_bucket("/pods"), "pods");
        assert_eq!(ro.path_bucket("/metrics"), "metrics");
        assert_eq!(ro.path_bucket("/metrics/probes"), "metrics/probes");
        assert_eq!(ro.path_bucket("/metrics/nope"), "other");
        assert_eq!(ro.path_bucket("/stats/summary"), "stats");
        // Not installed on the read-only port.
        assert_eq!(ro.path_bucket("/exec/ns/p/c"), "other");
        assert_eq!(ro.path_bucket("/"), "other");
        let rw = HttpMetrics::secure(true, true);
        assert_eq!(rw.path_bucket("/exec/ns/p/c"), "exec");
        assert_eq!(rw.path_bucket("/configz"), "configz");
        assert_eq!(rw.path_bucket("/debug/pprof/heap"), "debug");
        assert_eq!(rw.path_bucket("/checkpoint/ns/p/c"), "checkpoint");
        let no_gate = HttpMetrics::secure(true, false);
        assert_eq!(no_gate.path_bucket("/checkpoint/ns/p/c"), "other");
        let disabled = HttpMetrics::secure(false, true);
        assert_eq!(disabled.path_bucket("/configz"), "other");
        assert_eq!(disabled.path_bucket("/checkpoint/ns/p/c"), "other");
        assert_eq!(method_bucket("GET"), "GET");
        assert_eq!(method_bucket("PATCH"), "other");
    }
}
