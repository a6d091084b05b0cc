//! OpenMetrics negotiation, the text → OpenMetrics conversion, and every metrics endpoint's
//! OpenMetrics answer parsed by an OpenMetrics parser (the text answers unchanged).

#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;

use axum::http::Request;
use http_body_util::BodyExt;
use kubelet_metrics::testing::{parse, parse_openmetrics};
use tower::ServiceExt;

use super::*;
use crate::HostInterface;

/// What Prometheus sends by default.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

#[test]
fn negotiation_as_negotiate_including_openmetrics() {
    let om1 = Some((Version::V1_0_0, "underscores".to_string()));
    let om0 = Some((Version::V0_0_1, "underscores".to_string()));
    assert_eq!(negotiate(Some(PROMETHEUS_ACCEPT)), om1);
    assert_eq!(negotiate(Some("application/openmetrics-text")), om0);
    assert_eq!(
        negotiate(Some("application/openmetrics-text;version=0.0.1")),
        om0
    );
    assert_eq!(
        negotiate(Some(
            "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0;q=0.8"
        )),
        None
    );
    assert_eq!(
        negotiate(Some("text/plain;q=0.5,application/openmetrics-text;q=0.6")),
        om0
    );
    // An unknown version is not acceptable; the next entry decides.
    assert_eq!(
        negotiate(Some(
            "application/openmetrics-text;version=2.0.0,application/openmetrics-text;version=1.0.0;q=0.2"
        )),
        om1
    );
    assert_eq!(
        negotiate(Some(
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;q=0.5"
        )),
        None
    );
    assert_eq!(
        negotiate(Some(
            "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8"
        )),
        Some((Version::V1_0_0, "allow-utf-8".to_string()))
    );
    assert_eq!(negotiate(Some("*/*")), None);
    assert_eq!(negotiate(None), None);
    assert_eq!(
        content_type(Version::V1_0_0, "underscores"),
        "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores"
    );
}

#[test]
fn conversion_as_client_golang_writes_openmetrics() {
    let text = "\
# HELP kubelet_evictions [ALPHA] Cumulative number of pod evictions by eviction signal
# TYPE kubelet_evictions counter
kubelet_evictions{eviction_signal=\"memory.available\"} 2
# HELP rest_client_requests_total [ALPHA] Number of HTTP requests, partitioned by \"code\", method, and host. Back\\\\slash\\nnew line
# TYPE rest_client_requests_total counter
rest_client_requests_total{code=\"200\",host=\"a\",method=\"GET\"} 5
# HELP kubelet_pod_worker_duration_seconds [ALPHA] Duration.
# TYPE kubelet_pod_worker_duration_seconds histogram
kubelet_pod_worker_duration_seconds_bucket{operation_type=\"sync\",le=\"0.005\"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type=\"sync\",le=\"1\"} 2
kubelet_pod_worker_duration_seconds_bucket{operation_type=\"sync\",le=\"+Inf\"} 3
kubelet_pod_worker_duration_seconds_sum{operation_type=\"sync\"} 1.5
kubelet_pod_worker_duration_seconds_count{operation_type=\"sync\"} 3
# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container=\"c\",namespace=\"n\",pod=\"p\"} 0.25 1700000000123

# HELP scrape_error [ALPHA] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 0
# a comment
# HELP legacy_thing An untyped metric.
# TYPE legacy_thing untyped
legacy_thing 7
# HELP rpc_latency A summary.
# TYPE rpc_latency summary
rpc_latency{quantile=\"0.5\"} 0.1
rpc_latency{quantile=\"1\"} 0.4
rpc_latency_sum 2
rpc_latency_count 10
";
    let want = "\
# HELP kubelet_evictions [ALPHA] Cumulative number of pod evictions by eviction signal
# TYPE kubelet_evictions counter
kubelet_evictions_total{eviction_signal=\"memory.available\"} 2
# HELP rest_client_requests [ALPHA] Number of HTTP requests, partitioned by \\\"code\\\", method, and host. Back\\\\slash\\nnew line
# TYPE rest_client_requests counter
rest_client_requests_total{code=\"200\",host=\"a\",method=\"GET\"} 5
# HELP kubelet_pod_worker_duration_seconds [ALPHA] Duration.
# TYPE kubelet_pod_worker_duration_seconds histogram
kubelet_pod_worker_duration_seconds_bucket{operation_type=\"sync\",le=\"0.005\"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type=\"sync\",le=\"1.0\"} 2
kubelet_pod_worker_duration_seconds_bucket{operation_type=\"sync\",le=\"+Inf\"} 3
kubelet_pod_worker_duration_seconds_sum{operation_type=\"sync\"} 1.5
kubelet_pod_worker_duration_seconds_count{operation_type=\"sync\"} 3
# HELP container_cpu_usage_seconds [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds counter
container_cpu_usage_seconds_total{container=\"c\",namespace=\"n\",pod=\"p\"} 0.25 1700000000.123
# HELP scrape_error [ALPHA] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 0
# HELP legacy_thing An untyped metric.
# TYPE legacy_thing unknown
legacy_thing 7
# HELP rpc_latency A summary.
# TYPE rpc_latency summary
rpc_latency{quantile=\"0.5\"} 0.1
rpc_latency{quantile=\"1.0\"} 0.4
rpc_latency_sum 2
rpc_latency_count 10
# EOF
";
    let got = text_to_openmetrics(text);
    assert_eq!(got, want);
    let families = parse_openmetrics(&got).unwrap();
    assert!(families.contains_key("kubelet_evictions"), "{families:?}");
    assert!(families.contains_key("container_cpu_usage_seconds"));
    assert_eq!(text_to_openmetrics(""), "# EOF\n");
}

#[test]
fn label_values_with_quotes_and_braces_survive() {
    let text = "# HELP m h\n# TYPE m gauge\nm{a=\"x\\\"}{,y\",b=\"\\\\\"} 1\n";
    let got = text_to_openmetrics(text);
    assert_eq!(
        got,
        "# HELP m h\n# TYPE m gauge\nm{a=\"x\\\"}{,y\",b=\"\\\\\"} 1\n# EOF\n"
    );
    parse_openmetrics(&got).unwrap();
}

struct NoPods;
impl HostInterface for NoPods {
    fn get_pods(&self) -> Vec<k8s_openapi::api::core::v1::Pod> {
        Vec::new()
    }
    fn sync_loop_health(&self) -> Result<(), String> {
        Ok(())
    }
}

async fn get(router: &axum::Router, path: &str, accept: Option<&str>) -> (u16, String, String) {
    let mut req = Request::get(path);
    if let Some(a) = accept {
        req = req.header(header::ACCEPT, a);
    }
    let resp = router
        .clone()
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, ct, String::from_utf8(body.to_vec()).unwrap())
}

/// Every metrics endpoint of the read-only router: OpenMetrics for Prometheus' `Accept`
/// (valid OpenMetrics), the text format otherwise (valid text, as before).
#[tokio::test]
async fn every_metrics_endpoint_answers_openmetrics_when_asked() {
    let router = crate::read_only_router(Arc::new(NoPods));
    for path in [
        "/metrics",
        "/metrics/probes",
        "/metrics/resource",
        "/metrics/cadvisor",
    ] {
        let (status, ct, body) = get(&router, path, Some(PROMETHEUS_ACCEPT)).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(
            ct, "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores",
            "{path}"
        );
        parse_openmetrics(&body).unwrap_or_else(|e| panic!("{path}: {e}\n{body}"));
        let (status, ct, text) = get(&router, path, None).await;
        assert_eq!(status, 200, "{path}");
        assert!(ct.starts_with("text/plain; version=0.0.4"), "{path}: {ct}");
        parse(&text).unwrap_or_else(|e| panic!("{path}: {e}\n{text}"));
        assert!(!text.contains("# EOF"), "{path}");
        let (_, ct, _) = get(&router, path, Some("text/plain;version=0.0.4")).await;
        assert!(ct.starts_with("text/plain; version=0.0.4"), "{path}: {ct}");
    }
    // /stats/summary is not touched.
    let (_, ct, _) = get(&router, "/stats/summary", Some(PROMETHEUS_ACCEPT)).await;
    assert_ne!(ct, content_type(Version::V1_0_0, "underscores"));
}
