//! `GETOnlyRestfulFilter` (`pkg/kubelet/server/server.go`): read-only kubelet APIs answer
//! 405 with `Allow: GET` to every other method, HEAD included (axum would otherwise
//! answer HEAD with the GET handler).

use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The middleware (`axum::middleware::from_fn`, as a `route_layer`).
pub async fn get_only(req: Request, next: Next) -> Response {
    if req.method() == Method::GET {
        return next.run(req).await;
    }
    let mut resp = (StatusCode::METHOD_NOT_ALLOWED, "405: Method Not Allowed").into_response();
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET"));
    resp
}
