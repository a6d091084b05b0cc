//! `/healthz` as `k8s.io/apiserver/pkg/server/healthz` serves it: `ok` when every check
//! passes; otherwise HTTP 500 listing each check, with `?verbose` listing them on success.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;

use crate::respond::text;
use axum::routing::get;

/// One named health check.
#[derive(Clone)]
pub struct HealthCheck {
    /// The check's name, as shown in verbose output (`ping`, `log`, `syncloop`).
    pub name: &'static str,
    /// Returns `Err(reason)` when unhealthy.
    pub check: Arc<dyn Fn() -> Result<(), String> + Send + Sync>,
}

impl HealthCheck {
    /// The ping check, which always passes.
    pub fn ping() -> Self {
        Self::new("ping", || Ok(()))
    }

    /// A check from a closure.
    pub fn new(
        name: &'static str,
        check: impl Fn() -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name,
            check: Arc::new(check),
        }
    }
}

#[derive(Clone)]
struct Checks(Arc<Vec<HealthCheck>>);

/// A router serving `/healthz` and `/healthz/<check>` for the given checks.
pub fn healthz_routes(checks: Vec<HealthCheck>) -> Router {
    Router::new()
        .route("/healthz", get(all_checks))
        .route("/healthz/{name}", get(one_check))
        .with_state(Checks(Arc::new(checks)))
}

/// The healthz port's router: the ping check only (upstream `healthz.InstallHandler(mux)`).
pub fn healthz_router() -> Router {
    healthz_routes(vec![HealthCheck::ping()])
}

async fn all_checks(
    State(Checks(checks)): State<Checks>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let mut lines = String::new();
    let mut failed = false;
    for c in checks.iter() {
        match (c.check)() {
            Ok(()) => lines.push_str(&format!("[+]{} ok\n", c.name)),
            Err(reason) => {
                failed = true;
                tracing::info!(check = c.name, reason = %reason, "healthz check failed");
                lines.push_str(&format!("[-]{} failed: reason withheld\n", c.name));
            }
        }
    }
    if failed {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{lines}healthz check failed\n"),
        );
    }
    if q.contains_key("verbose") {
        return text(StatusCode::OK, format!("{lines}healthz check passed\n"));
    }
    text(StatusCode::OK, "ok")
}

async fn one_check(
    State(Checks(checks)): State<Checks>,
    axum::extract::Path(name): axum::extract::Path<String>,
) -> Response {
    match checks.iter().find(|c| c.name == name) {
        None => text(StatusCode::NOT_FOUND, "404 page not found\n"),
        Some(c) => match (c.check)() {
            Ok(()) => text(StatusCode::OK, "ok"),
            Err(_) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal server error: reason withheld\n",
            ),
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn get_body(router: Router, uri: &str) -> (StatusCode, String) {
        let resp = router
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn healthz_port_answers_ok_and_nothing_else() {
        assert_eq!(
            get_body(healthz_router(), "/healthz").await,
            (StatusCode::OK, "ok".into())
        );
        assert_eq!(
            get_body(healthz_router(), "/healthz/ping").await,
            (StatusCode::OK, "ok".into())
        );
        assert_eq!(
            get_body(healthz_router(), "/pods").await.0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            get_body(healthz_router(), "/healthz/syncloop").await.0,
            StatusCode::NOT_FOUND
        );
    }

    #[tokio::test]
    async fn failing_check_gives_500_with_listing() {
        let r = healthz_routes(vec![
            HealthCheck::ping(),
            HealthCheck::new("syncloop", || Err("stuck".into())),
        ]);
        let (status, body) = get_body(r, "/healthz").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            "[+]ping ok\n[-]syncloop failed: reason withheld\nhealthz check failed\n"
        );
    }

    #[tokio::test]
    async fn verbose_lists_checks() {
        let (status, body) = get_body(healthz_router(), "/healthz?verbose").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "[+]ping ok\nhealthz check passed\n");
    }
}
