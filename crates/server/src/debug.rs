//! `/debug/pprof/` and `/debug/flags/v` on the secure port (`pkg/kubelet/server/server.go`
//! `InstallProfilingHandler`, `InstallDebugFlagsHandler`), installed with
//! `enableDebuggingHandlers` only, each gated by its own setting as upstream:
//!
//! * `enableProfilingHandler: false` → `/debug/pprof/` (whole subtree, every method) answers
//!   405 `profiling endpoint is disabled.`; `true` → `GET /debug/pprof/{subpath}`. Upstream
//!   serves Go's `net/http/pprof` there; kubelet-rs is not a Go program and serves what maps:
//!   `cmdline` (the command line, NUL-separated, as `pprof.Cmdline`); the bare
//!   `/debug/pprof/` is 404, as go-restful's `/{subpath:*}` route does not match it upstream
//!   either. Go's runtime profiles (`profile`, `heap`, `goroutine`, `allocs`,
//!   `block`, `mutex`, `threadcreate`, `trace`, `symbol`) answer 501 naming what upstream
//!   would serve; other names 404 `Unknown profile`, as `pprof.Index`. The kubelet warns at
//!   start (the `enableProfilingHandler` row of `docs/support.md`).
//! * `enableDebugFlagsHandler: false` → `/debug/flags/v` answers 405 `flags endpoint is
//!   disabled.`; `true` → `PUT /debug/flags/v` with the verbosity as the body sets `-v` at
//!   run time (`routes.StringFlagPutHandler(logs.GlogSetter)`): 200 `successfully set
//!   klog.logging.verbosity to N`, 400 with `strconv.ParseUint`'s error for a bad number,
//!   406 `unsupported http method` for other methods.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};

use crate::methods::get_only;
use crate::respond::text;

/// Sets the log verbosity (`-v`) at run time; `Err` is the message for a refused value.
pub type VerbositySetter = Arc<dyn Fn(u32) -> Result<(), String> + Send + Sync>;

/// The settings of the debugging handlers beyond `enableDebuggingHandlers`.
#[derive(Clone)]
pub struct DebugHandlers {
    /// `enableSystemLogHandler` (`/logs/`).
    pub enable_system_log_handler: bool,
    /// The directory `/logs/` serves (upstream's `nodeLogDir`, `/var/log/`).
    pub node_log_dir: std::path::PathBuf,
    /// `enableProfilingHandler` (`/debug/pprof/`).
    pub enable_profiling_handler: bool,
    /// `enableDebugFlagsHandler` (`/debug/flags/v`).
    pub enable_debug_flags_handler: bool,
    /// What `PUT /debug/flags/v` calls (`logs.GlogSetter`); `None` refuses every value.
    pub set_verbosity: Option<VerbositySetter>,
    /// `enableSystemLogQuery` with the `NodeLogQuery` gate: the commands the node log query
    /// runs (`crate::JournalCommands`); `None`: off.
    pub system_log_query: Option<Arc<dyn crate::LogCommandRunner>>,
    /// The `ContainerCheckpoint` feature gate (`/checkpoint/`, see `crate::checkpoint`).
    pub container_checkpoint: bool,
}

impl Default for DebugHandlers {
    /// Upstream's defaults: every handler on, `/var/log/`.
    fn default() -> Self {
        DebugHandlers {
            enable_system_log_handler: true,
            node_log_dir: crate::logs::NODE_LOG_DIR.into(),
            enable_profiling_handler: true,
            enable_debug_flags_handler: true,
            set_verbosity: None,
            system_log_query: None,
            container_checkpoint: true,
        }
    }
}

impl std::fmt::Debug for DebugHandlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DebugHandlers")
            .field("enable_system_log_handler", &self.enable_system_log_handler)
            .field("node_log_dir", &self.node_log_dir)
            .field("enable_profiling_handler", &self.enable_profiling_handler)
            .field(
                "enable_debug_flags_handler",
                &self.enable_debug_flags_handler,
            )
            .field("system_log_query", &self.system_log_query.is_some())
            .field("container_checkpoint", &self.container_checkpoint)
            .finish_non_exhaustive()
    }
}

/// `getHandlerForDisabledEndpoint`: `http.Error(w, msg, 405)` for every method.
fn disabled(router: Router, paths: &[&str], msg: &'static str) -> Router {
    let h = any(move || async move { text(StatusCode::METHOD_NOT_ALLOWED, format!("{msg}\n")) });
    paths.iter().fold(router, |r, p| r.route(p, h.clone()))
}

/// `InstallSystemLogHandler`, `InstallProfilingHandler` and `InstallDebugFlagsHandler`.
pub(crate) fn debug_handlers(cfg: &DebugHandlers) -> Router {
    let mut router = if cfg.enable_system_log_handler {
        crate::logs::system_log_handler_with_query(
            cfg.node_log_dir.clone(),
            cfg.system_log_query.clone(),
        )
    } else {
        // `restfulCont.Handle(logsPath, …)`: the `/logs/` subtree.
        disabled(
            Router::new(),
            &["/logs/", "/logs/{*rest}"],
            "logs endpoint is disabled.",
        )
    };
    router = if cfg.enable_profiling_handler {
        router.merge(
            Router::new()
                .route("/debug/pprof/", get(pprof))
                .route("/debug/pprof/{*subpath}", get(pprof))
                .route_layer(axum::middleware::from_fn(get_only)),
        )
    } else {
        disabled(
            router,
            &["/debug/pprof/", "/debug/pprof/{*rest}"],
            "profiling endpoint is disabled.",
        )
    };
    if cfg.enable_debug_flags_handler {
        router.merge(
            Router::new()
                .route("/debug/flags/v", any(put_verbosity))
                .with_state(cfg.set_verbosity.clone()),
        )
    } else {
        disabled(router, &["/debug/flags/v"], "flags endpoint is disabled.")
    }
}

/// Go's runtime profiles, which a Rust process does not have.
const GO_PROFILES: &[&str] = &[
    "allocs",
    "block",
    "goroutine",
    "heap",
    "mutex",
    "profile",
    "symbol",
    "threadcreate",
    "trace",
];

async fn pprof(subpath: Option<Path<String>>) -> Response {
    let name = subpath.map(|Path(p)| p).unwrap_or_default();
    match name.as_str() {
        // go-restful's `/{subpath:*}` under `/debug/pprof/` does not match the bare root.
        "" => text(StatusCode::NOT_FOUND, "404: Page Not Found"),
        "cmdline" => {
            let args: Vec<String> = std::env::args().collect();
            text(StatusCode::OK, args.join("\x00"))
        }
        n if GO_PROFILES.contains(&n) => text(
            StatusCode::NOT_IMPLEMENTED,
            format!(
                "kubelet-rs does not serve Go runtime profiles: upstream's kubelet answers /debug/pprof/{n} with net/http/pprof\n"
            ),
        ),
        _ => text(StatusCode::NOT_FOUND, "Unknown profile\n"),
    }
}

/// `writePlainText`: `text/plain`, `nosniff`, the text and a newline.
fn plain_text(status: StatusCode, msg: &str) -> Response {
    let mut resp = (status, format!("{msg}\n")).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// `StringFlagPutHandler(logs.GlogSetter)`.
async fn put_verbosity(State(setter): State<Option<VerbositySetter>>, req: Request) -> Response {
    if req.method() != Method::PUT {
        return plain_text(StatusCode::NOT_ACCEPTABLE, "unsupported http method");
    }
    let body: Bytes = match axum::body::to_bytes(req.into_body(), 1 << 20).await {
        Ok(b) => b,
        Err(e) => {
            return plain_text(
                StatusCode::BAD_REQUEST,
                &format!("error reading request body: {e}"),
            );
        }
    };
    let val = String::from_utf8_lossy(&body).into_owned();
    let v = match parse_verbosity(&val) {
        Ok(v) => v,
        Err(e) => return plain_text(StatusCode::BAD_REQUEST, &e),
    };
    let Some(set) = setter else {
        return plain_text(
            StatusCode::BAD_REQUEST,
            "failed set klog.logging.verbosity: not supported by this kubelet",
        );
    };
    match set(v) {
        Ok(()) => plain_text(
            StatusCode::OK,
            &format!("successfully set klog.logging.verbosity to {val}"),
        ),
        Err(e) => plain_text(StatusCode::BAD_REQUEST, &e),
    }
}

/// `strconv.ParseUint(val, 10, 32)` with Go's error texts.
pub fn parse_verbosity(val: &str) -> Result<u32, String> {
    if val.is_empty() || !val.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            go_quote(val)
        ));
    }
    val.parse::<u32>().map_err(|_| {
        format!(
            "strconv.ParseUint: parsing {}: value out of range",
            go_quote(val)
        )
    })
}

/// Go's `strconv.Quote` for the printable ASCII cases (others escaped as `\xNN`).
fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_graphic() || c == ' ' => out.push(c),
            c if !c.is_control() => out.push(c),
            c => out.push_str(&format!("\\x{:02x}", c as u32)),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http_body_util::BodyExt;
    use std::sync::atomic::{AtomicU32, Ordering};
    use tower::ServiceExt;

    async fn call(r: &Router, method: &str, uri: &str, body: &str) -> (u16, String) {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::from(body.to_string()))
            .unwrap();
        let resp = r.clone().oneshot(req).await.unwrap();
        let s = resp.status().as_u16();
        let b = resp.into_body().collect().await.unwrap().to_bytes();
        (s, String::from_utf8_lossy(&b).into_owned())
    }

    #[tokio::test]
    async fn disabled_handlers_answer_405_as_upstream() {
        let cfg = DebugHandlers {
            enable_system_log_handler: false,
            enable_profiling_handler: false,
            enable_debug_flags_handler: false,
            ..DebugHandlers::default()
        };
        let r = debug_handlers(&cfg);
        for (m, p, msg) in [
            ("GET", "/logs/", "logs endpoint is disabled.\n"),
            ("POST", "/logs/x/y", "logs endpoint is disabled.\n"),
            ("GET", "/debug/pprof/", "profiling endpoint is disabled.\n"),
            (
                "GET",
                "/debug/pprof/heap",
                "profiling endpoint is disabled.\n",
            ),
            ("PUT", "/debug/flags/v", "flags endpoint is disabled.\n"),
        ] {
            assert_eq!(call(&r, m, p, "").await, (405, msg.to_string()), "{m} {p}");
        }
    }

    #[tokio::test]
    async fn pprof_serves_index_and_cmdline_and_says_what_it_cannot() {
        let r = debug_handlers(&DebugHandlers::default());
        assert_eq!(call(&r, "GET", "/debug/pprof/", "").await.0, 404);
        let (s, body) = call(&r, "GET", "/debug/pprof/cmdline", "").await;
        assert_eq!(s, 200);
        assert_eq!(body.split('\0').next(), std::env::args().next().as_deref());
        let (s, body) = call(&r, "GET", "/debug/pprof/heap", "").await;
        assert_eq!(s, 501);
        assert!(body.contains("/debug/pprof/heap"), "{body}");
        assert_eq!(
            call(&r, "GET", "/debug/pprof/nope", "").await,
            (404, "Unknown profile\n".into())
        );
        assert_eq!(call(&r, "POST", "/debug/pprof/cmdline", "").await.0, 405);
    }

    #[tokio::test]
    async fn debug_flags_v_sets_the_verbosity() {
        let v = Arc::new(AtomicU32::new(2));
        let seen = v.clone();
        let cfg = DebugHandlers {
            set_verbosity: Some(Arc::new(move |n| {
                seen.store(n, Ordering::SeqCst);
                Ok(())
            })),
            ..DebugHandlers::default()
        };
        let r = debug_handlers(&cfg);
        assert_eq!(
            call(&r, "PUT", "/debug/flags/v", "5").await,
            (200, "successfully set klog.logging.verbosity to 5\n".into())
        );
        assert_eq!(v.load(Ordering::SeqCst), 5);
        assert_eq!(
            call(&r, "PUT", "/debug/flags/v", "5\n").await,
            (
                400,
                "strconv.ParseUint: parsing \"5\\n\": invalid syntax\n".into()
            )
        );
        assert_eq!(
            call(&r, "PUT", "/debug/flags/v", "4294967296").await.1,
            "strconv.ParseUint: parsing \"4294967296\": value out of range\n"
        );
        assert_eq!(
            call(&r, "GET", "/debug/flags/v", "").await,
            (406, "unsupported http method\n".into())
        );
        assert_eq!(v.load(Ordering::SeqCst), 5);
    }
}
