//! The read-only server (`ListenAndServeKubeletReadOnlyServer`): default handlers only.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;

use crate::Host;
use crate::healthz::{HealthCheck, healthz_routes};
use crate::methods::get_only;

/// The read-only port's router: `/healthz` (ping, log, syncloop) and `/pods`, behind
/// upstream's `ServeMux` behaviour (unclean paths redirected, see `crate::filter::serve_mux`).
pub fn read_only_router(host: Host) -> Router {
    default_handlers(host)
        .layer(axum::middleware::from_fn_with_state(
            crate::metrics::HttpMetrics::read_only(),
            crate::metrics::http_metrics,
        ))
        // Outermost, as Go's ServeMux answers before the restful container's filters.
        .layer(axum::middleware::from_fn_with_state(
            crate::filter::ServeMux::default(),
            crate::filter::serve_mux,
        ))
}

/// `InstallAuthNotRequiredHandlers` as far as implemented: `/healthz` (ping, log,
/// syncloop), `/pods`, `/stats/summary`, `/metrics/resource`, `/metrics/cadvisor` (see
/// `crate::stats`). Shared by the read-only and secure ports.
pub(crate) fn default_handlers(host: Host) -> Router {
    let sync_host = host.clone();
    let checks = vec![
        HealthCheck::ping(),
        HealthCheck::new("log", || Ok(())),
        HealthCheck::new("syncloop", move || sync_host.sync_loop_health()),
    ];
    Router::new()
        .route("/pods", get(pods))
        .route("/pods/", get(pods))
        .route_layer(axum::middleware::from_fn(get_only))
        .with_state(host.clone())
        .merge(healthz_routes(checks))
        .merge(
            // OpenMetrics when asked, for every metrics endpoint (`crate::openmetrics`).
            crate::metrics::metrics_routes()
                .merge(crate::stats::stats_handlers(host))
                .layer(axum::middleware::from_fn(crate::openmetrics::open_metrics)),
        )
}

/// `GET /pods`: a `v1.PodList` of the pods this kubelet runs, as upstream encodes it.
async fn pods(State(host): State<Host>) -> Response {
    crate::respond::pod_list(host.get_pods())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::HostInterface;
    use axum::body::Body;
    use axum::http::Request;
    use axum::http::{StatusCode, header};
    use http_body_util::BodyExt;
    use k8s_openapi::api::core::v1::Pod;
    use std::sync::Arc;
    use tower::ServiceExt;

    struct FakeHost {
        healthy: bool,
    }
    impl HostInterface for FakeHost {
        fn get_pods(&self) -> Vec<Pod> {
            let mut p = Pod::default();
            p.metadata.name = Some("web-node1".into());
            p.metadata.namespace = Some("default".into());
            vec![p]
        }
        fn sync_loop_health(&self) -> Result<(), String> {
            if self.healthy {
                Ok(())
            } else {
                Err("sync loop stuck".into())
            }
        }
    }

    async fn call(healthy: bool, uri: &str) -> (StatusCode, String) {
        let r = read_only_router(Arc::new(FakeHost { healthy }));
        let resp = r
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn pods_is_a_pod_list() {
        let (status, body) = call(true, "/pods").await;
        assert_eq!(status, StatusCode::OK);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["kind"], "PodList");
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["items"][0]["metadata"]["name"], "web-node1");
    }

    #[tokio::test]
    async fn pods_is_get_only() {
        let r = read_only_router(Arc::new(FakeHost { healthy: true }));
        for method in ["HEAD", "POST", "DELETE"] {
            let req = Request::builder()
                .method(method)
                .uri("/pods")
                .body(Body::empty())
                .unwrap();
            let resp = r.clone().oneshot(req).await.unwrap();
            assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED, "{method}");
            assert_eq!(resp.headers()[header::ALLOW], "GET");
        }
    }

    #[tokio::test]
    async fn healthz_includes_syncloop() {
        assert_eq!(call(true, "/healthz").await, (StatusCode::OK, "ok".into()));
        let (status, body) = call(false, "/healthz").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(body.contains("[-]syncloop failed"), "{body}");
    }

    #[tokio::test]
    async fn no_debugging_or_exec_handlers() {
        for path in [
            "/exec/default/p/c",
            "/run/default/p/c",
            "/logs/",
            "/configz",
            "/containerLogs/default/p/c",
            "/debug/pprof/",
        ] {
            assert_eq!(call(true, path).await.0, StatusCode::NOT_FOUND, "{path}");
        }
        assert_eq!(
            call(true, "/pods/../configz").await.0,
            StatusCode::TEMPORARY_REDIRECT
        );
    }
}
