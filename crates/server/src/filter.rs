//! The secure port's auth filter (`pkg/kubelet/server/server.go` `InstallAuthFilter`),
//! run on **every** request, unknown paths included, before routing:
//! * not authenticated, or authentication failed (e.g. a rejected bearer token) → 401
//!   `Unauthorized`;
//! * authorizer error → 500 `Authorization error (user=…, verb=…, resource=…, subresource=…)`;
//! * no attribute set allowed → 403 `Forbidden (user=…, verb=…, resource=nodes,
//!   subresource(s)=[…])` with a trailing newline.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::authn::{Authenticator, PeerIdentity};
use crate::authz::{Authorizer, Decision, request_attributes};

/// What the filter needs.
#[derive(Clone)]
pub struct AuthFilter {
    /// x509, bearer token, anonymous.
    pub authenticator: Authenticator,
    /// Decides the attribute sets.
    pub authorizer: Arc<dyn Authorizer>,
    /// This node's name (the `nodes` object authorized against).
    pub node_name: String,
    /// `KubeletFineGrainedAuthz`.
    pub fine_grained: bool,
}

fn plain(status: StatusCode, body: String) -> Response {
    let mut resp = (status, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// The middleware (`axum::middleware::from_fn_with_state`).
pub async fn auth_filter(
    State(filter): State<AuthFilter>,
    mut req: Request<Body>,
    next: Next,
) -> Response {
    let peer = req
        .extensions()
        .get::<PeerIdentity>()
        .cloned()
        .unwrap_or(PeerIdentity::None);
    let user = match filter
        .authenticator
        .authenticate(&peer, req.headers_mut())
        .await
    {
        Ok(Some(user)) => user,
        Ok(None) => return plain(StatusCode::UNAUTHORIZED, "Unauthorized".into()),
        Err(e) => {
            tracing::error!(err = %e, "Unable to authenticate the request due to an error");
            return plain(StatusCode::UNAUTHORIZED, "Unauthorized".into());
        }
    };
    let attrs = request_attributes(
        &filter.node_name,
        &user,
        req.method().as_str(),
        req.uri().path(),
        filter.fine_grained,
    );
    let mut allowed = false;
    for attr in &attrs {
        match filter.authorizer.authorize(attr).await {
            Err(e) => {
                let msg = format!(
                    "Authorization error (user={}, verb={}, resource={}, subresource={})",
                    user.name, attr.verb, attr.resource, attr.subresource
                );
                tracing::error!(err = %e, "{msg}");
                return plain(StatusCode::INTERNAL_SERVER_ERROR, msg);
            }
            Ok(Decision::Allow) => {
                allowed = true;
                break;
            }
            Ok(Decision::Deny | Decision::NoOpinion) => {}
        }
    }
    if allowed {
        return next.run(req).await;
    }
    let Some(first) = attrs.first() else {
        return plain(
            StatusCode::FORBIDDEN,
            "Authorization error: could not determine attributes for request".into(),
        );
    };
    let subs: Vec<&str> = attrs.iter().map(|a| a.subresource.as_str()).collect();
    tracing::debug!(user = %user.name, verb = %first.verb, subresources = ?subs, "Forbidden");
    plain(
        StatusCode::FORBIDDEN,
        format!(
            "Forbidden (user={}, verb={}, resource={}, subresource(s)=[{}])\n",
            user.name,
            first.verb,
            first.resource,
            subs.join(" ")
        ),
    )
}

/// The paths upstream's `http.ServeMux` hands to the go-restful container (each web
/// service's root, with and without its slash, and the `Handle`d paths): exact matches,
/// and subtrees for those ending in `/`. Every other path is the mux's own 404, answered
/// before the auth filter (an unknown path needs no credentials upstream either).
const SERVE_MUX_PATTERNS: &[&str] = &[
    "/healthz",
    "/healthz/",
    "/pods",
    "/pods/",
    "/stats",
    "/stats/",
    "/metrics",
    "/metrics/cadvisor",
    "/metrics/resource",
    "/metrics/probes",
    "/configz",
    "/run",
    "/run/",
    "/exec",
    "/exec/",
    "/attach",
    "/attach/",
    "/portForward",
    "/portForward/",
    "/containerLogs",
    "/containerLogs/",
    "/runningpods/",
    "/logs/",
    "/debug/pprof/",
    "/debug/flags/v",
    // kubelet-rs's pod startup timelines (`crate::timeline`).
    "/debug/pods/",
];

/// The checkpoint web service's root: on the mux only when upstream adds the web service
/// (`enableDebuggingHandlers` and the `ContainerCheckpoint` gate); otherwise a request
/// there is the mux's 404 before authentication.
const CHECKPOINT_PATTERNS: &[&str] = &["/checkpoint", "/checkpoint/"];

/// The patterns a server's mux has beyond the fixed ones (`SERVE_MUX_PATTERNS`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ServeMux {
    /// `/checkpoint` and `/checkpoint/` (see `CHECKPOINT_PATTERNS`).
    pub checkpoint: bool,
}

/// Whether upstream's mux routes `path` to the container (and so to the auth filter).
pub fn serve_mux_routes(path: &str, mux: ServeMux) -> bool {
    let extra: &[&str] = if mux.checkpoint {
        CHECKPOINT_PATTERNS
    } else {
        &[]
    };
    SERVE_MUX_PATTERNS.iter().chain(extra).any(|p| {
        if p.ends_with('/') {
            path.starts_with(p)
        } else {
            path == *p
        }
    })
}

/// `path.Clean` keeping a trailing slash (`http.ServeMux`'s `cleanPath`).
pub fn clean_path(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let mut out = format!("/{}", parts.join("/"));
    if p.ends_with('/') && out != "/" {
        out.push('/');
    }
    out
}

/// `http.ServeMux` in front of everything: a request path that is not clean (`..`, `.`,
/// `//` segments, as sent, before percent-decoding) is redirected (307) to its cleaned
/// form; a path no pattern covers is 404 `404 page not found`. Both before authentication,
/// as upstream.
pub async fn serve_mux(State(mux): State<ServeMux>, req: Request<Body>, next: Next) -> Response {
    let path = req.uri().path();
    let cleaned = clean_path(path);
    if cleaned != path && req.method() != axum::http::Method::CONNECT {
        let location = match req.uri().query() {
            Some(q) => format!("{cleaned}?{q}"),
            None => cleaned,
        };
        let mut resp = StatusCode::TEMPORARY_REDIRECT.into_response();
        if let Ok(v) = HeaderValue::from_str(&location) {
            resp.headers_mut().insert(header::LOCATION, v);
        }
        return resp;
    }
    if !serve_mux_routes(path, mux) {
        return crate::respond::text(StatusCode::NOT_FOUND, "404 page not found\n");
    }
    next.run(req).await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::authn::{TokenAuthenticator, TokenError, TokenFuture, UserInfo};
    use crate::authz::{Attributes, AuthorizeFuture, AuthorizerError};
    use axum::Router;
    use axum::routing::get;
    use http_body_util::BodyExt;
    use std::sync::Mutex;
    use tower::ServiceExt;

    struct Tokens;
    impl TokenAuthenticator for Tokens {
        fn authenticate_token<'a>(&'a self, token: &'a str) -> TokenFuture<'a> {
            Box::pin(async move {
                match token {
                    "admin" => Ok(Some(UserInfo::new("admin", vec![]))),
                    "viewer" => Ok(Some(UserInfo::new("viewer", vec![]))),
                    "broken" => Err(TokenError("connection refused".into())),
                    _ => Ok(None),
                }
            })
        }
    }

    /// Allows `admin` and `viewer` on `healthz` only; errors for `broken`; records subresources.
    #[derive(Default)]
    struct Authz {
        seen: Mutex<Vec<String>>,
    }
    impl Authorizer for Authz {
        fn authorize<'a>(&'a self, a: &'a Attributes) -> AuthorizeFuture<'a> {
            self.seen.lock().unwrap().push(a.subresource.clone());
            Box::pin(async move {
                match (a.user.name.as_str(), a.subresource.as_str()) {
                    ("admin", _) | ("viewer", "healthz") => Ok(Decision::Allow),
                    ("system:anonymous", "proxy") => Err(AuthorizerError("SAR failed".into())),
                    _ => Ok(Decision::NoOpinion),
                }
            })
        }
    }

    fn router(anonymous: bool, authz: Arc<Authz>) -> Router {
        let filter = AuthFilter {
            authenticator: Authenticator {
                anonymous,
                token: Some(Arc::new(Tokens)),
                x509: None,
            },
            authorizer: authz,
            node_name: "node1".into(),
            fine_grained: true,
        };
        Router::new()
            .route("/pods", get(|| async { "pods" }))
            .route("/healthz", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(filter, auth_filter))
    }

    async fn call(router: &Router, method: &str, path: &str, token: Option<&str>) -> (u16, String) {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let resp = router
            .clone()
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn unauthenticated_is_401() {
        let r = router(false, Arc::default());
        assert_eq!(
            call(&r, "GET", "/pods", None).await,
            (401, "Unauthorized".into())
        );
        assert_eq!(
            call(&r, "GET", "/pods", Some("nobody")).await,
            (401, "Unauthorized".into())
        );
        assert_eq!(
            call(&r, "GET", "/pods", Some("broken")).await,
            (401, "Unauthorized".into())
        );
        // A rejected token is not anonymous even when anonymous is enabled.
        let r = router(true, Arc::default());
        assert_eq!(
            call(&r, "GET", "/pods", Some("nobody")).await,
            (401, "Unauthorized".into())
        );
    }

    #[tokio::test]
    async fn allowed_passes_and_denied_is_403_with_all_subresources() {
        let authz = Arc::new(Authz::default());
        let r = router(false, authz.clone());
        assert_eq!(
            call(&r, "GET", "/pods", Some("admin")).await,
            (200, "pods".into())
        );
        assert_eq!(
            call(&r, "GET", "/healthz", Some("viewer")).await,
            (200, "ok".into())
        );
        authz.seen.lock().unwrap().clear();
        assert_eq!(
            call(&r, "GET", "/pods", Some("viewer")).await,
            (
                403,
                "Forbidden (user=viewer, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"
                    .into()
            )
        );
        assert_eq!(*authz.seen.lock().unwrap(), ["pods", "proxy"]);
    }

    #[tokio::test]
    async fn authorizer_error_is_500() {
        let r = router(true, Arc::default());
        assert_eq!(
            call(&r, "POST", "/pods", None).await,
            (
                500,
                "Authorization error (user=system:anonymous, verb=create, resource=nodes, subresource=proxy)"
                    .into()
            )
        );
    }

    #[test]
    fn serve_mux_cleaning_and_patterns() {
        assert_eq!(clean_path("/logs/../etc/passwd"), "/etc/passwd");
        assert_eq!(clean_path("/logs//a/./b/"), "/logs/a/b/");
        assert_eq!(clean_path("/logs/%2e%2e/x"), "/logs/%2e%2e/x");
        assert_eq!(clean_path("/"), "/");
        let mux = ServeMux::default();
        assert!(serve_mux_routes("/stats/summary", mux));
        assert!(serve_mux_routes("/metrics", mux));
        assert!(!serve_mux_routes("/metrics/other", mux));
        assert!(!serve_mux_routes("/nothing-here", mux));
        assert!(!serve_mux_routes("/runningpods", mux));
        assert!(serve_mux_routes("/debug/flags/v", mux));
        assert!(!serve_mux_routes("/debug/flags/vv", mux));
        assert!(serve_mux_routes("/debug/pods/ns/p/timeline", mux));
        assert!(!serve_mux_routes("/checkpoint/ns/p/c", mux));
        let with_checkpoint = ServeMux { checkpoint: true };
        assert!(serve_mux_routes("/checkpoint/ns/p/c", with_checkpoint));
        assert!(serve_mux_routes("/checkpoint", with_checkpoint));
    }
}
