//! Response helpers shared by the kubelet's servers.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// A `text/plain` response with `nosniff`, as Go's `http.Error` and healthz write them.
pub(crate) fn text(status: StatusCode, body: impl Into<String>) -> Response {
    let mut resp = (status, body.into()).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// A JSON response (500 with the error text if it cannot be encoded).
pub(crate) fn json(value: &serde_json::Value) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => {
            let mut resp = (StatusCode::OK, body).into_response();
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            resp
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// What go-restful's `WriteError` and the CRI streaming `WriteError` write: the status and
/// the message as is (no trailing newline), `text/plain` as Go sniffs it.
pub(crate) fn restful_error(status: StatusCode, body: impl Into<String>) -> Response {
    let mut resp = (status, body.into()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// A `v1.PodList` of `items` (`encodePods`).
pub(crate) fn pod_list(items: Vec<k8s_openapi::api::core::v1::Pod>) -> Response {
    json(&serde_json::json!({
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {},
        "items": items,
    }))
}
