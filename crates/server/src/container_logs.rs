//! `GET /containerLogs/{podNamespace}/{podID}/{containerName}` (`pkg/kubelet/server/server.go`
//! `getContainerLogs`): the query decoded as a v1 `PodLogOptions` (legacy `tail=N`/`tail=all`
//! included), validated as `ValidatePodLogOptions`, the pod and container looked up, then the
//! log streamed as a chunked body, flushed as it is read.
//!
//! Status codes as upstream: 400 `{"message": "Unable to decode query."}` for a query that
//! does not decode, 422 `{"message": "Invalid request."}` for invalid options, 404
//! `pod "<name>" does not exist` / `container "<c>" not found in pod "<name>"`, 400 with the
//! kubelet's message when the container has no log to show (waiting, no previous instance…);
//! once streaming started the status is 200 and a later error ends the body with its text.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::core::v1::Pod;

use crate::Host;
use crate::respond::restful_error;

/// Where the log is written: each message is one chunk of the response body.
pub type LogSink = tokio::sync::mpsc::Sender<Vec<u8>>;

/// Writes the log to the sink given to [`crate::HostInterface::get_kubelet_container_logs`].
pub type LogStreamer = crate::HostFuture<'static, Result<(), String>>;

/// `v1.PodLogOptions` as the kubelet decodes it from the query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodLogOptions {
    /// `follow`.
    pub follow: bool,
    /// `previous`: the previous terminated instance.
    pub previous: bool,
    /// `sinceSeconds`.
    pub since_seconds: Option<i64>,
    /// `sinceTime` (RFC 3339); the zero time when given empty.
    pub since_time: Option<jiff::Timestamp>,
    /// `timestamps`.
    pub timestamps: bool,
    /// `tailLines`.
    pub tail_lines: Option<i64>,
    /// `limitBytes`.
    pub limit_bytes: Option<i64>,
    /// `stream` (`All`, `Stdout`, `Stderr`; needs `PodLogsQuerySplitStreams`).
    pub stream: Option<String>,
}

/// `Convert_Slice_string_To_bool`: only `0` and `false` (any case) are false.
fn parse_bool(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

/// Go's zero `time.Time` (`0001-01-01T00:00:00Z`), what an empty `sinceTime` decodes to.
fn zero_time() -> jiff::Timestamp {
    jiff::Timestamp::from_second(-62_135_596_800).unwrap_or(jiff::Timestamp::MIN)
}

impl PodLogOptions {
    /// `ParameterCodec.DecodeParameters` into `v1.PodLogOptions` (first value of each
    /// parameter; unknown parameters ignored), after mapping the legacy `tail`.
    pub fn decode(query: &str) -> Result<Self, String> {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let first = |key: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let int = |key: &str| -> Result<Option<i64>, String> {
            first(key)
                .map(|v| v.parse::<i64>().map_err(|e| format!("{key}: {e}")))
                .transpose()
        };
        let mut opts = PodLogOptions {
            follow: first("follow").is_some_and(parse_bool),
            previous: first("previous").is_some_and(parse_bool),
            since_seconds: int("sinceSeconds")?,
            timestamps: first("timestamps").is_some_and(parse_bool),
            tail_lines: int("tailLines")?,
            limit_bytes: int("limitBytes")?,
            stream: first("stream").map(str::to_string),
            since_time: None,
        };
        // backwards compatibility for the "tail" query parameter; "all" is no limit.
        if let Some(tail) = first("tail").filter(|t| !t.is_empty()) {
            opts.tail_lines = if tail == "all" {
                None
            } else {
                Some(tail.parse::<i64>().map_err(|e| format!("tail: {e}"))?)
            };
        }
        if let Some(t) = first("sinceTime") {
            opts.since_time = Some(if t.is_empty() || t == "null" {
                zero_time()
            } else {
                t.parse::<jiff::Timestamp>()
                    .map_err(|e| format!("sinceTime: {e}"))?
            });
        }
        Ok(opts)
    }

    /// `ValidatePodLogOptions` (`pkg/apis/core/v1/validation`): the error messages.
    pub fn validate(&self) -> Vec<String> {
        let mut errs = Vec::new();
        if let Some(t) = self.tail_lines.filter(|t| *t < 0) {
            errs.push(format!(
                "tailLines: Invalid value: {t}: must be greater than or equal to 0"
            ));
        }
        if let Some(b) = self.limit_bytes.filter(|b| *b < 1) {
            errs.push(format!(
                "limitBytes: Invalid value: {b}: must be greater than 0"
            ));
        }
        match (self.since_seconds, self.since_time) {
            (Some(_), Some(_)) => errs.push(
                "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified".into(),
            ),
            (Some(s), None) if s < 1 => {
                errs.push(format!(
                    "sinceSeconds: Invalid value: {s}: must be greater than 0"
                ));
            }
            _ => {}
        }
        if let Some(stream) = &self.stream {
            if !["All", "Stdout", "Stderr"].contains(&stream.as_str()) {
                errs.push(format!("stream: Unsupported value: {stream:?}"));
            }
            if stream != "All" && self.tail_lines.is_some() {
                errs.push(
                    "Forbidden: `tailLines` and specific `stream` are mutually exclusive for now"
                        .into(),
                );
            }
        }
        errs
    }
}

/// `kubecontainer.GetContainerSpec`: containers, init containers, ephemeral containers.
fn has_container(pod: &Pod, name: &str) -> bool {
    let Some(spec) = &pod.spec else {
        return false;
    };
    spec.containers.iter().any(|c| c.name == name)
        || spec
            .init_containers
            .iter()
            .flatten()
            .any(|c| c.name == name)
        || spec
            .ephemeral_containers
            .iter()
            .flatten()
            .any(|c| c.name == name)
}

/// What the handler needs besides the host.
#[derive(Clone)]
pub(crate) struct LogsState {
    pub host: Host,
    /// The `PodLogsQuerySplitStreams` feature gate.
    pub split_streams: bool,
}

/// Chunks buffered between the log reader and the connection.
const SINK_CAPACITY: usize = 16;

/// The handler.
pub(crate) async fn get_container_logs(
    State(state): State<Arc<LogsState>>,
    Path((namespace, pod_name, container)): Path<(String, String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    if pod_name.is_empty() {
        return restful_error(StatusCode::BAD_REQUEST, r#"{"message": "Missing podID."}"#);
    }
    if container.is_empty() {
        return restful_error(
            StatusCode::BAD_REQUEST,
            r#"{"message": "Missing container name."}"#,
        );
    }
    if namespace.is_empty() {
        return restful_error(
            StatusCode::BAD_REQUEST,
            r#"{"message": "Missing podNamespace."}"#,
        );
    }
    let Ok(mut opts) = PodLogOptions::decode(query.as_deref().unwrap_or_default()) else {
        return restful_error(
            StatusCode::BAD_REQUEST,
            r#"{"message": "Unable to decode query."}"#,
        );
    };
    if state.split_streams && opts.stream.is_none() {
        opts.stream = Some("All".into());
    }
    if !opts.validate().is_empty() {
        return restful_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            r#"{"message": "Invalid request."}"#,
        );
    }
    let Some(pod) = state.host.get_pod_by_name(&namespace, &pod_name) else {
        return restful_error(
            StatusCode::NOT_FOUND,
            format!("pod {pod_name:?} does not exist"),
        );
    };
    if !has_container(&pod, &container) {
        return restful_error(
            StatusCode::NOT_FOUND,
            format!("container {container:?} not found in pod {pod_name:?}"),
        );
    }
    if !state.split_streams
        && let Some(stream) = opts.stream.as_deref().filter(|s| *s != "All")
    {
        return restful_error(
            StatusCode::BAD_REQUEST,
            format!(
                "unable to return the given log stream: {stream:?}. Please enable PodLogsQuerySplitStreams feature gate in kubelet"
            ),
        );
    }
    let full_name = format!(
        "{}_{}",
        pod.metadata.name.as_deref().unwrap_or_default(),
        pod.metadata.namespace.as_deref().unwrap_or_default()
    );
    let (sink, chunks) = tokio::sync::mpsc::channel::<Vec<u8>>(SINK_CAPACITY);
    let closed = sink.clone();
    let streamer = match state
        .host
        .get_kubelet_container_logs(&full_name, &container, &opts, sink.clone())
        .await
    {
        Ok(s) => s,
        Err(e) => return restful_error(StatusCode::BAD_REQUEST, e),
    };
    // The reader runs until it is done or the client goes away (the body, holding the
    // receiver, is dropped), like upstream's request context.
    tokio::spawn(async move {
        tokio::select! {
            result = streamer => {
                if let Err(e) = result {
                    let _ = sink.send(e.into_bytes()).await;
                }
            }
            () = closed.closed() => {}
        }
    });
    let stream = futures::stream::unfold(chunks, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, std::io::Error>(chunk), rx))
    });
    let mut resp = Body::from_stream(stream).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
