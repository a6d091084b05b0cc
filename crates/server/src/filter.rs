//! The secure port's auth filter (`pkg/kubelet/server/server.go` `InstallAuthFilter`),
//! run on **every** request, unknown paths included, before routing:
//! * not authenticated → 401 `Unauthorized`;
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
    /// x509 + anonymous.
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
    req: Request<Body>,
    next: Next,
) -> Response {
    let peer = req
        .extensions()
        .get::<PeerIdentity>()
        .cloned()
        .unwrap_or(PeerIdentity::None);
    let Some(user) = filter.authenticator.authenticate(&peer) else {
        return plain(StatusCode::UNAUTHORIZED, "Unauthorized".into());
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
