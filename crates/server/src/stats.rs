//! The stats and resource-usage routes of `InstallAuthNotRequiredHandlers`
//! (`pkg/kubelet/server/server.go`), on both the read-only and the secure port:
//!
//! * `/stats/summary`, GET and POST (`pkg/kubelet/server/stats/handler.go`): the summary as
//!   go-restful's `WriteAsJson` writes it (indented by one space, no trailing newline);
//!   `only_cpu_and_memory=true` (query or form body) answers `GetCPUAndMemoryStats`; a
//!   failure is 500 `Internal Error: <cause>`. Nothing else is served under `/stats/` in
//!   1.35 (the legacy `/stats/container` and `/stats/<pod>/<container>` are gone): 404.
//! * `/metrics/resource` and `/metrics/cadvisor`, GET: the Prometheus text format.
//!
//! The data comes from the host's [`kubelet_stats::SummaryProvider`] (see that crate).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use serde::Serialize;

use crate::Host;
use crate::methods::{get_only, get_or_post};
use crate::respond::restful_error;

/// The exposition format `promhttp` answers with (client_golang v1.23, common v0.66).
pub const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores";

/// The routes (`host.stats_provider()` `None`: 500 answers, as a kubelet whose provider
/// failed).
pub(crate) fn stats_handlers(host: Host) -> Router {
    let summary = Router::new()
        .route("/stats/summary", any(summary))
        .route_layer(axum::middleware::from_fn(get_or_post))
        .with_state(host.clone());
    let metrics = Router::new()
        .route("/metrics/resource", get(resource_metrics))
        .route("/metrics/cadvisor", get(cadvisor_metrics))
        .route_layer(axum::middleware::from_fn(get_only))
        .with_state(host);
    summary.merge(metrics)
}

/// `only_cpu_and_memory` given exactly once as `true` (`request.Request.Form`: the query and,
/// for a form POST, the body).
fn only_cpu_and_memory(query: Option<&str>, body: &[u8]) -> bool {
    let values: Vec<String> = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .chain(form_urlencoded::parse(body))
        .filter(|(k, _)| k == "only_cpu_and_memory")
        .map(|(_, v)| v.into_owned())
        .collect();
    values.len() == 1 && values[0] == "true"
}

/// The size of the last JSON answer: the next one's buffer starts that large (no doubling
/// copies of a 365 kB summary).
static LAST_JSON_SIZE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// go-restful's `WriteAsJson` with `PrettyPrintResponses`: `json.MarshalIndent(v, "", " ")`.
fn restful_json(v: &impl Serialize) -> Response {
    use std::sync::atomic::Ordering::Relaxed;
    let mut out = Vec::with_capacity(LAST_JSON_SIZE.load(Relaxed) + 4096);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, OneSpaceIndent::default());
    if let Err(e) = v.serialize(&mut ser) {
        return restful_error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
    }
    LAST_JSON_SIZE.store(out.len(), Relaxed);
    let mut resp = (StatusCode::OK, out).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// serde_json's `PrettyFormatter::with_indent(b" ")`, each line break and its indentation
/// written in one piece (the summary has ~15 000 lines, up to 9 levels deep).
#[derive(Default)]
struct OneSpaceIndent {
    level: usize,
    has_value: bool,
}

impl OneSpaceIndent {
    fn newline<W: ?Sized + std::io::Write>(&self, w: &mut W) -> std::io::Result<()> {
        const SPACES: &[u8; 65] =
            b"\n                                                                ";
        let mut n = self.level;
        w.write_all(&SPACES[..1 + n.min(64)])?;
        while n > 64 {
            n -= 64;
            w.write_all(&SPACES[1..1 + n.min(64)])?;
        }
        Ok(())
    }
    fn open<W: ?Sized + std::io::Write>(&mut self, w: &mut W, c: &[u8]) -> std::io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(c)
    }
    fn close<W: ?Sized + std::io::Write>(&mut self, w: &mut W, c: &[u8]) -> std::io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.newline(w)?;
        }
        w.write_all(c)
    }
    fn item<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)
    }
}

impl serde_json::ser::Formatter for OneSpaceIndent {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// `handleSummary`.
async fn summary(State(host): State<Host>, RawQuery(query): RawQuery, body: Bytes) -> Response {
    let Some(p) = host.stats_provider() else {
        return restful_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal Error: no stats provider",
        );
    };
    let result = if only_cpu_and_memory(query.as_deref(), &body) {
        p.get_cpu_and_memory_stats().await
    } else {
        p.get().await
    };
    match result {
        Ok(s) => restful_json(&s),
        Err(e) => {
            tracing::error!(err = %e, request = "/stats/summary", "HTTP InternalServerError serving");
            restful_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Internal Error: {e}"),
            )
        }
    }
}

fn text_format(body: String) -> Response {
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(TEXT_FORMAT));
    resp
}

/// `/metrics/resource`: the resource metrics collector over `GetCPUAndMemoryStats`.
async fn resource_metrics(State(host): State<Host>) -> Response {
    let body = match host.stats_provider() {
        Some(p) => {
            kubelet_stats::resource_metrics::render(p.get_resource_metrics_stats().await.as_ref())
        }
        None => kubelet_stats::resource_metrics::render(Err(&kubelet_stats::StatsError::Summary(
            "no stats provider".into(),
        ))),
    };
    text_format(body)
}

/// `/metrics/cadvisor`: cAdvisor's container collector.
async fn cadvisor_metrics(State(host): State<Host>) -> Response {
    let snap = match host.stats_provider() {
        Some(p) => p.cadvisor_snapshot().await,
        None => kubelet_stats::cadvisor_metrics::Snapshot {
            error: true,
            ..Default::default()
        },
    };
    text_format(kubelet_stats::cadvisor_metrics::render(&snap))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::HostInterface;
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use std::sync::Arc;
    use tower::ServiceExt;

    struct NoProvider;
    impl HostInterface for NoProvider {
        fn get_pods(&self) -> Vec<k8s_openapi::api::core::v1::Pod> {
            Vec::new()
        }
        fn sync_loop_health(&self) -> Result<(), String> {
            Ok(())
        }
    }

    async fn call(method: &str, uri: &str) -> (u16, String, String) {
        let r = stats_handlers(Arc::new(NoProvider));
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .unwrap();
        let resp = r.oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let ct = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, ct, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn methods_paths_and_failures_as_upstream() {
        assert_eq!(call("GET", "/stats/summary").await.0, 500);
        assert_eq!(call("POST", "/stats/summary").await.0, 500);
        assert_eq!(
            call("GET", "/stats/summary").await.2,
            "Internal Error: no stats provider"
        );
        assert_eq!(call("PUT", "/stats/summary").await.0, 405);
        assert_eq!(call("POST", "/metrics/resource").await.0, 405);
        assert_eq!(call("GET", "/stats/container").await.0, 404);
        let (status, ct, body) = call("GET", "/metrics/resource").await;
        assert_eq!((status, ct.as_str()), (200, TEXT_FORMAT));
        assert!(body.ends_with("resource_scrape_error 1\n"), "{body}");
        let (status, _, body) = call("GET", "/metrics/cadvisor").await;
        assert_eq!(status, 200);
        assert!(body.contains("container_scrape_error 1"), "{body}");
    }

    #[test]
    fn only_cpu_and_memory_exactly_once_true() {
        assert!(only_cpu_and_memory(Some("only_cpu_and_memory=true"), b""));
        assert!(only_cpu_and_memory(None, b"only_cpu_and_memory=true"));
        assert!(!only_cpu_and_memory(Some("only_cpu_and_memory=1"), b""));
        assert!(!only_cpu_and_memory(
            Some("only_cpu_and_memory=true&only_cpu_and_memory=true"),
            b""
        ));
    }

    #[test]
    fn one_space_indent_is_serde_jsons_pretty_formatter() {
        let deep = (0..70).fold(
            serde_json::json!([1, {"k": []}, {}]),
            |v, i| serde_json::json!({"level": i, "v": v, "list": [2.5, null, "s\"q"]}),
        );
        let mut want = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b" ");
        deep.serialize(&mut serde_json::Serializer::with_formatter(&mut want, fmt))
            .unwrap();
        let mut got = Vec::new();
        deep.serialize(&mut serde_json::Serializer::with_formatter(
            &mut got,
            OneSpaceIndent::default(),
        ))
        .unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            String::from_utf8(want).unwrap()
        );
    }

    #[test]
    fn json_as_go_restful_indents_it() {
        let resp = restful_json(&serde_json::json!({"node": {"a": 1}, "pods": []}));
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        let body = futures::executor::block_on(resp.into_body().collect())
            .unwrap()
            .to_bytes();
        assert_eq!(
            String::from_utf8(body.to_vec()).unwrap(),
            "{\n \"node\": {\n  \"a\": 1\n },\n \"pods\": []\n}"
        );
    }
}
