//! `GETOnlyRestfulFilter` (`pkg/kubelet/server/server.go`): read-only kubelet APIs answer
//! 405 with `Allow: GET` to every other method, HEAD included (axum would otherwise
//! answer HEAD with the GET handler); go-restful answers the same 405 for the routes
//! registered for other methods (`/run`: POST; `/exec`, `/attach`, `/portForward`: GET, POST).

use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The middleware (`axum::middleware::from_fn`, as a `route_layer`).
pub async fn get_only(req: Request, next: Next) -> Response {
    only(req, next, &[Method::GET], "GET").await
}

/// Routes registered for GET and POST (`/exec`, `/attach`, `/portForward`).
pub async fn get_or_post(req: Request, next: Next) -> Response {
    only(req, next, &[Method::GET, Method::POST], "GET, POST").await
}

/// Routes registered for POST only (`/run`).
pub async fn post_only(req: Request, next: Next) -> Response {
    only(req, next, &[Method::POST], "POST").await
}

/// go-restful's 405 for a path whose routes do not accept the method.
async fn only(req: Request, next: Next, allowed: &[Method], allow: &'static str) -> Response {
    if allowed.contains(req.method()) {
        return next.run(req).await;
    }
    let mut resp = (StatusCode::METHOD_NOT_ALLOWED, "405: Method Not Allowed").into_response();
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    resp
}
