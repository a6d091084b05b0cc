//! `GET /debug/pods/{namespace}/{name}/timeline` on the secure port: the pod's startup
//! timeline (`kubelet_container::timeline`), a kubelet-rs addition without an upstream
//! counterpart. Installed with `enableDebuggingHandlers` as the other `/debug/` routes
//! (without it the subtree answers 405 `Debug endpoints are disabled.`), never on the
//! read-only port, and authorized as `/pods` (`nodes/pods`, then `nodes/proxy`:
//! `crate::authz::subresources`).
//!
//! 200 with the JSON of `Timeline::to_json`; 404 for a pod the kubelet does not have (or
//! has no timeline of); other methods 405 (`GETOnlyRestfulFilter` as every read-only API).

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::any;

use crate::Host;
use crate::methods::get_only;
use crate::respond::{json, text};

async fn get_timeline(
    State(host): State<Host>,
    Path((namespace, name)): Path<(String, String)>,
) -> Response {
    let not_found = |what: &str| {
        text(
            StatusCode::NOT_FOUND,
            format!("pod \"{namespace}/{name}\" {what}\n"),
        )
    };
    let Some(pod) = host.get_pod_by_name(&namespace, &name) else {
        return not_found("does not exist");
    };
    match host.pod_startup_timeline(&pod) {
        Some(timeline) => json(&timeline),
        None => not_found("has no startup timeline"),
    }
}

/// The route (merged by the secure router when debugging handlers are on).
pub(crate) fn timeline_handlers(host: Host) -> Router {
    Router::new()
        .route("/debug/pods/{ns}/{pod}/timeline", any(get_timeline))
        .route_layer(axum::middleware::from_fn(get_only))
        .with_state(host)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use k8s_openapi::api::core::v1::Pod;
    use tower::ServiceExt;

    use super::*;
    use crate::HostInterface;

    struct OnePod;

    impl HostInterface for OnePod {
        fn get_pods(&self) -> Vec<Pod> {
            ["web", "new"]
                .iter()
                .map(|name| {
                    let mut p = Pod::default();
                    p.metadata.namespace = Some("default".into());
                    p.metadata.name = Some((*name).into());
                    p.metadata.uid = Some(format!("uid-{name}"));
                    p
                })
                .collect()
        }
        fn sync_loop_health(&self) -> Result<(), String> {
            Ok(())
        }
        fn pod_startup_timeline(&self, pod: &Pod) -> Option<serde_json::Value> {
            (pod.metadata.uid.as_deref() == Some("uid-web"))
                .then(|| serde_json::json!({"uid": "uid-web", "steps": []}))
        }
    }

    async fn get(method: &str, path: &str) -> (StatusCode, String) {
        let resp = timeline_handlers(Arc::new(OnePod))
            .oneshot(
                Request::builder()
                    .method(method)
                    .uri(path)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn answers_the_timeline_or_404() {
        let (status, body) = get("GET", "/debug/pods/default/web/timeline").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, r#"{"uid":"uid-web","steps":[]}"#);
        assert_eq!(
            get("GET", "/debug/pods/default/nope/timeline").await,
            (
                StatusCode::NOT_FOUND,
                "pod \"default/nope\" does not exist\n".into()
            )
        );
        assert_eq!(
            get("GET", "/debug/pods/default/new/timeline").await,
            (
                StatusCode::NOT_FOUND,
                "pod \"default/new\" has no startup timeline\n".into()
            )
        );
        let (status, _) = get("POST", "/debug/pods/default/web/timeline").await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    }
}
