//! The debugging handlers of the secure port (`pkg/kubelet/server/server.go`
//! `InstallAuthRequiredHandlers`), installed only with `enableDebuggingHandlers`:
//! * `POST /run/{ns}/{pod}[/{uid}]/{container}?cmd=…` (`getRun`): the command (split on
//!   spaces) runs through the runtime's ExecSync; its output is the body;
//! * `GET|POST /exec/{ns}/{pod}[/{uid}]/{container}?command=…&input=1&output=1&error=1&tty=1`
//!   (`getExec`), `/attach/…` (`getAttach`) and `/portForward/{ns}/{pod}[/{uid}]`
//!   (`getPortForward`): the kubelet asks the runtime for a streaming URL and proxies the
//!   client's upgrade request (SPDY or WebSocket, whatever the runtime's streaming server
//!   speaks) to it ([`crate::proxy`]);
//! * `GET /containerLogs/{ns}/{pod}/{container}` ([`crate::container_logs`]);
//! * `GET /runningpods/` (`getRunningPods`): the runtime's pods as a `v1.PodList`.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;

use crate::Host;
use crate::container_logs::{LogsState, get_container_logs};
use crate::methods::{get_only, get_or_post, post_only};
use crate::respond::restful_error;

/// `remotecommandserver.Options`: which streams the client asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamOptions {
    /// `input=1`.
    pub stdin: bool,
    /// `output=1`.
    pub stdout: bool,
    /// `error=1` (dropped with a TTY).
    pub stderr: bool,
    /// `tty=1`.
    pub tty: bool,
}

/// How `streaming.WriteError` answers a failed streaming request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamingErrorKind {
    /// gRPC `NotFound`: 404.
    NotFound,
    /// gRPC `ResourceExhausted`: 429.
    TooManyInFlight,
    /// Anything else: 500.
    Other,
}

/// A failed `GetExec`/`GetAttach`/`GetPortForward`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StreamingError {
    /// The status it maps to.
    pub kind: StreamingErrorKind,
    /// The error text (the body).
    pub message: String,
}

impl StreamingError {
    /// An error answered with 500.
    pub fn other(message: impl Into<String>) -> Self {
        StreamingError {
            kind: StreamingErrorKind::Other,
            message: message.into(),
        }
    }
}

/// `streaming.WriteError` (`k8s.io/kubelet/pkg/cri/streaming/errors.go`).
fn write_streaming_error(e: StreamingError) -> Response {
    let status = match e.kind {
        StreamingErrorKind::NotFound => StatusCode::NOT_FOUND,
        StreamingErrorKind::TooManyInFlight => StatusCode::TOO_MANY_REQUESTS,
        StreamingErrorKind::Other => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let mut resp = restful_error(status, e.message);
    if e.kind == StreamingErrorKind::TooManyInFlight {
        // The streaming server's request cache TTL (`cacheTTL`, 1 minute).
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
    }
    resp
}

/// The query's values of `key`, in order (Go's `url.Values`).
pub(crate) fn query_values(query: Option<&str>, key: &str) -> Vec<String> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
        .collect()
}

fn query_value(query: Option<&str>, key: &str) -> String {
    query_values(query, key)
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// `remotecommandserver.NewOptions`: the `v1` exec parameters `input`, `output`, `error`
/// and `tty` are on when `1`.
pub fn stream_options(query: Option<&str>) -> Result<StreamOptions, String> {
    let on = |k| query_value(query, k) == "1";
    let tty = on("tty");
    let opts = StreamOptions {
        stdin: on("input"),
        stdout: on("output"),
        // Access to exec with tty and stderr is not supported, bypassing stderr.
        stderr: on("error") && !tty,
        tty,
    };
    if !opts.stdin && !opts.stdout && !opts.stderr {
        return Err("you must specify at least 1 of stdin, stdout, stderr".into());
    }
    Ok(opts)
}

/// `httpstream.IsUpgradeRequest` + `Upgrade: websocket` (`wsstream.IsWebSocketRequest`).
fn is_websocket_request(headers: &HeaderMap) -> bool {
    crate::proxy::is_upgrade_request(headers)
        && headers
            .get(header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// `portforward.NewV4Options`: only WebSocket requests carry ports in the query (`port`,
/// repeated or comma-separated); SPDY clients open one stream per port later.
pub fn port_forward_options(headers: &HeaderMap, query: Option<&str>) -> Result<Vec<i32>, String> {
    if !is_websocket_request(headers) {
        return Ok(Vec::new());
    }
    let values = query_values(query, "port");
    if values.is_empty() {
        return Err("query parameter \"port\" is required".into());
    }
    let mut ports = Vec::new();
    for s in &values {
        if s.is_empty() {
            return Err("query parameter \"port\" cannot be empty".into());
        }
        for p in s.split(',') {
            let port: u16 = p
                .parse()
                .map_err(|e| format!("unable to parse {s:?} as a port: {e}"))?;
            if port < 1 {
                return Err(format!("port {s:?} must be > 0"));
            }
            ports.push(i32::from(port));
        }
    }
    Ok(ports)
}

/// Path parameters of the exec-like routes (`getExecRequestParams`).
#[derive(Debug, Default)]
struct ExecParams {
    namespace: String,
    pod: String,
    uid: String,
    container: String,
}

impl ExecParams {
    fn from_segments(segs: &[String]) -> Self {
        match segs {
            [ns, pod, container] => ExecParams {
                namespace: ns.clone(),
                pod: pod.clone(),
                container: container.clone(),
                ..ExecParams::default()
            },
            [ns, pod, uid, container] => ExecParams {
                namespace: ns.clone(),
                pod: pod.clone(),
                uid: uid.clone(),
                container: container.clone(),
            },
            _ => ExecParams::default(),
        }
    }
}

pub(crate) fn pod_full_name(pod: &k8s_openapi::api::core::v1::Pod) -> String {
    format!(
        "{}_{}",
        pod.metadata.name.as_deref().unwrap_or_default(),
        pod.metadata.namespace.as_deref().unwrap_or_default()
    )
}

fn pod_does_not_exist() -> Response {
    restful_error(StatusCode::NOT_FOUND, "pod does not exist")
}

#[derive(Clone, Copy)]
enum Streaming {
    Exec,
    Attach,
}

async fn exec_or_attach(host: Host, kind: Streaming, segs: Vec<String>, req: Request) -> Response {
    let params = ExecParams::from_segments(&segs);
    let query = req.uri().query().map(str::to_string);
    let opts = match stream_options(query.as_deref()) {
        Ok(o) => o,
        Err(e) => {
            tracing::error!(err = %e, "Invalid streaming request");
            return restful_error(StatusCode::BAD_REQUEST, e);
        }
    };
    let Some(pod) = host.get_pod_by_name(&params.namespace, &params.pod) else {
        return pod_does_not_exist();
    };
    let full_name = pod_full_name(&pod);
    let url = match kind {
        Streaming::Exec => {
            let cmd = query_values(query.as_deref(), "command");
            host.get_exec(&full_name, &params.uid, &params.container, &cmd, opts)
                .await
        }
        Streaming::Attach => {
            host.get_attach(&full_name, &params.uid, &params.container, opts)
                .await
        }
    };
    match url {
        Ok(url) => crate::proxy::proxy_stream(req, &url).await,
        Err(e) => write_streaming_error(e),
    }
}

async fn get_exec(
    State(host): State<Host>,
    Path(segs): Path<Vec<String>>,
    req: Request,
) -> Response {
    exec_or_attach(host, Streaming::Exec, segs, req).await
}

async fn get_attach(
    State(host): State<Host>,
    Path(segs): Path<Vec<String>>,
    req: Request,
) -> Response {
    exec_or_attach(host, Streaming::Attach, segs, req).await
}

async fn get_port_forward(
    State(host): State<Host>,
    Path(segs): Path<Vec<String>>,
    req: Request,
) -> Response {
    let (namespace, name, uid) = match segs.as_slice() {
        [ns, pod] => (ns.clone(), pod.clone(), String::new()),
        [ns, pod, uid] => (ns.clone(), pod.clone(), uid.clone()),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let ports = match port_forward_options(req.headers(), req.uri().query()) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(err = %e, "Invalid port-forward request");
            return restful_error(StatusCode::BAD_REQUEST, e);
        }
    };
    let Some(pod) = host.get_pod_by_name(&namespace, &name) else {
        return pod_does_not_exist();
    };
    let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
    if !uid.is_empty() && pod_uid != uid {
        return restful_error(StatusCode::NOT_FOUND, "pod not found");
    }
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let pod_ns = pod.metadata.namespace.clone().unwrap_or_default();
    match host
        .get_port_forward(&pod_name, &pod_ns, &pod_uid, &ports)
        .await
    {
        Ok(url) => crate::proxy::proxy_stream(req, &url).await,
        Err(e) => write_streaming_error(e),
    }
}

/// `writeJSONResponse`: no body (and no content type) for no output.
pub(crate) fn write_json_response(data: Vec<u8>) -> Response {
    if data.is_empty() {
        return StatusCode::OK.into_response();
    }
    let mut resp = (StatusCode::OK, data).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

async fn get_run(
    State(host): State<Host>,
    Path(segs): Path<Vec<String>>,
    RawQuery(query): RawQuery,
) -> Response {
    let params = ExecParams::from_segments(&segs);
    let Some(pod) = host.get_pod_by_name(&params.namespace, &params.pod) else {
        return pod_does_not_exist();
    };
    // For legacy reasons, run uses a different query parameter than exec.
    let cmd: Vec<String> = query_value(query.as_deref(), "cmd")
        .split(' ')
        .map(str::to_string)
        .collect();
    match host
        .run_in_container(&pod_full_name(&pod), &params.uid, &params.container, &cmd)
        .await
    {
        Ok(data) => write_json_response(data),
        Err(e) => restful_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn get_running_pods(State(host): State<Host>) -> Response {
    match host.get_running_pods().await {
        Ok(pods) => crate::respond::pod_list(pods),
        Err(e) => restful_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// `InstallAuthRequiredHandlers`' routes other than `/configz` (merged by the secure router).
pub(crate) fn debugging_handlers(host: Host, split_streams: bool) -> Router {
    let streaming = Router::new()
        .route("/exec/{ns}/{pod}/{container}", any(get_exec))
        .route("/exec/{ns}/{pod}/{uid}/{container}", any(get_exec))
        .route("/attach/{ns}/{pod}/{container}", any(get_attach))
        .route("/attach/{ns}/{pod}/{uid}/{container}", any(get_attach))
        .route("/portForward/{ns}/{pod}", any(get_port_forward))
        .route("/portForward/{ns}/{pod}/{uid}", any(get_port_forward))
        .route_layer(axum::middleware::from_fn(get_or_post))
        .with_state(host.clone());
    let run = Router::new()
        .route("/run/{ns}/{pod}/{container}", any(get_run))
        .route("/run/{ns}/{pod}/{uid}/{container}", any(get_run))
        .route_layer(axum::middleware::from_fn(post_only))
        .with_state(host.clone());
    let logs_state = Arc::new(LogsState {
        host: host.clone(),
        split_streams,
    });
    let logs = Router::new()
        .route(
            "/containerLogs/{ns}/{pod}/{container}",
            any(get_container_logs),
        )
        .route_layer(axum::middleware::from_fn(get_only))
        .with_state(logs_state);
    let running = Router::new()
        .route("/runningpods/", any(get_running_pods))
        .route_layer(axum::middleware::from_fn(get_only))
        .with_state(host);
    streaming.merge(run).merge(logs).merge(running)
}

#[cfg(test)]
#[path = "debugging_tests.rs"]
mod tests;
