//! Entry points for fuzzing the secure port: the libFuzzer targets in `fuzz/fuzz_targets/`
//! call them, and so does the stable-Rust driver `crates/server/tests/fuzz_stable.rs`
//! (see `hack/fuzz.sh` for how both run, bounded in time, from `hack/test.sh`).
//!
//! * [`request`]: one HTTP request (method, URI, headers) through the whole secure router
//!   — auth filter, routing, every handler, the streaming upgrade handshake of `/exec`,
//!   `/attach`, `/portForward` up to the proxy — with `AlwaysAllow`, against a host with one
//!   pod (`default/p`, container `c`) whose runtime streaming URL refuses connections, and
//!   `/logs/` serving a small directory next to a file holding [`SECRET`]. Invariants: no
//!   panic, and no answer contains [`SECRET`] (nothing outside the log directory) unless the
//!   request itself names it (then an answer may echo it, see [`names_the_secret`]).
//! * [`query`]: the query and header parsers on their own (`PodLogOptions::decode` and
//!   `validate`, exec `stream_options`, `port_forward_options`, the `/logs/` range,
//!   percent-decoding and path cleaning, `/debug/flags/v`'s number, the streaming URL
//!   parser). Invariants: no panic; a cleaned path has no `..`; a parsed range lies inside
//!   the file.
//!
//! Input format of [`request`] (so that seeds are readable): first line the method, second
//! the request target, then `Name: value` header lines, all separated by `\n`.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use tower::ServiceExt;

use crate::debugging::{StreamOptions, StreamingError};
use crate::{HostFuture, HostInterface, SecureServerConfig, secure_router};

/// What the file outside the fuzzed log directory holds; no response may contain it.
pub const SECRET: &str = "KRS-FUZZ-SECRET-OUTSIDE-THE-LOG-DIR";

struct FuzzHost;

impl HostInterface for FuzzHost {
    fn get_pods(&self) -> Vec<Pod> {
        let mut p = Pod::default();
        p.metadata.name = Some("p".into());
        p.metadata.namespace = Some("default".into());
        p.metadata.uid = Some("uid".into());
        p.spec = Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                ..Container::default()
            }],
            ..PodSpec::default()
        });
        vec![p]
    }
    fn sync_loop_health(&self) -> Result<(), String> {
        Ok(())
    }
    fn get_exec<'a>(
        &'a self,
        _pod_full_name: &'a str,
        _pod_uid: &'a str,
        _container: &'a str,
        _cmd: &'a [String],
        _opts: StreamOptions,
    ) -> HostFuture<'a, Result<String, StreamingError>> {
        // Port 1 on loopback: the dial is refused at once.
        Box::pin(async { Ok("http://127.0.0.1:1/exec/token".to_string()) })
    }
    fn get_attach<'a>(
        &'a self,
        _pod_full_name: &'a str,
        _pod_uid: &'a str,
        _container: &'a str,
        _opts: StreamOptions,
    ) -> HostFuture<'a, Result<String, StreamingError>> {
        Box::pin(async { Ok("http://127.0.0.1:1/attach/token".to_string()) })
    }
    fn get_port_forward<'a>(
        &'a self,
        _pod_name: &'a str,
        _pod_namespace: &'a str,
        _pod_uid: &'a str,
        _ports: &'a [i32],
    ) -> HostFuture<'a, Result<String, StreamingError>> {
        Box::pin(async { Ok("http://127.0.0.1:1/portforward/token".to_string()) })
    }
}

struct Fixture {
    runtime: tokio::runtime::Runtime,
    router: Router,
}

/// `<tmp>/krs-fuzz-<pid>/{log,outside}`: `log/` has a file, a subdirectory and symlinks
/// out; `outside/secret` and `secret` hold [`SECRET`].
fn log_tree() -> std::io::Result<PathBuf> {
    let base = std::env::temp_dir().join(format!("krs-fuzz-{}", std::process::id()));
    let log = base.join("log");
    std::fs::create_dir_all(log.join("sub"))?;
    std::fs::create_dir_all(base.join("outside"))?;
    std::fs::write(log.join("a.log"), "a log line\n")?;
    std::fs::write(log.join("sub/b.log"), "b\n")?;
    std::fs::write(base.join("outside/secret"), SECRET)?;
    std::fs::write(base.join("secret"), SECRET)?;
    for (target, link) in [
        ("../outside/secret", "link-out"),
        ("../outside", "dirlink-out"),
        ("../../..", "sub/up"),
    ] {
        let link = log.join(link);
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(target, link)?;
        }
    }
    Ok(log)
}

fn fixture() -> Option<&'static Fixture> {
    static F: OnceLock<Option<Fixture>> = OnceLock::new();
    F.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        let mut cfg = SecureServerConfig::new("fuzz", Arc::new(crate::AlwaysAllow));
        cfg.anonymous = true;
        cfg.split_log_streams = true;
        cfg.debug.node_log_dir = log_tree().ok()?;
        cfg.debug.set_verbosity = Some(Arc::new(|_| Ok(())));
        let router = secure_router(&cfg, Arc::new(FuzzHost), serde_json::json!({}));
        Some(Fixture { runtime, router })
    })
    .as_ref()
}

/// Parses the [`request`] input format; `None` when it is not a request hyper would pass on.
fn parse_request(data: &[u8]) -> Option<Request<Body>> {
    let text = std::str::from_utf8(data).ok()?;
    let mut lines = text.split('\n');
    let method = Method::from_bytes(lines.next()?.as_bytes()).ok()?;
    let uri: axum::http::Uri = lines.next()?.parse().ok()?;
    let mut headers = HeaderMap::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(value.trim()),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .body(Body::empty())
        .ok()?;
    *req.headers_mut() = headers;
    Some(req)
}

/// Whether the request text names [`SECRET`] itself, literally or percent-encoded (any number
/// of times). An answer may then echo it without reading any file: an unknown container's
/// name in a `/run/` error, as upstream's. libFuzzer learns the secret from the comparison in
/// [`request`] (its automatic dictionary), so such requests do come up.
pub fn names_the_secret(data: &[u8]) -> bool {
    let mut text = String::from_utf8_lossy(data).into_owned();
    loop {
        if text.contains(SECRET) {
            return true;
        }
        let decoded = decode_lenient(&text);
        if decoded == text {
            return false;
        }
        text = decoded;
    }
}

/// One percent-decoding pass that keeps invalid escapes as they are.
fn decode_lenient(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One request through the secure router; panics when an invariant breaks.
pub fn request(data: &[u8]) {
    let Some(req) = parse_request(data) else {
        return;
    };
    let f = fixture();
    assert!(f.is_some(), "the fuzzing fixture could not be set up");
    let Some(f) = f else { return };
    let target = req.uri().to_string();
    let body = f.runtime.block_on(async {
        let resp = f.router.clone().oneshot(req).await.ok()?;
        // Bounded: a `/logs/` file of the fixture is tiny; streams end with the request.
        let limited = http_body_util::Limited::new(resp.into_body(), 1 << 20);
        limited.collect().await.ok().map(|b| b.to_bytes())
    });
    if let Some(body) = body {
        let body = String::from_utf8_lossy(&body);
        assert!(
            !body.contains(SECRET) || names_the_secret(data),
            "{target} served a file from outside the log directory"
        );
    }
}

/// The parsers on their own; panics when an invariant breaks.
pub fn query(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let q = Some(text.as_ref());
    if let Ok(opts) = crate::PodLogOptions::decode(&text) {
        let _ = opts.validate();
    }
    let _ = crate::debugging::stream_options(q);
    let mut ws = HeaderMap::new();
    ws.insert("connection", HeaderValue::from_static("Upgrade"));
    ws.insert("upgrade", HeaderValue::from_static("websocket"));
    if let Ok(ports) = crate::debugging::port_forward_options(&ws, q) {
        assert!(ports.iter().all(|p| (1..=65535).contains(p)), "{ports:?}");
    }
    let _ = crate::proxy::is_upgrade_request(&ws);
    let _ = crate::proxy::backend(&text);
    if let Some(decoded) = crate::logs::percent_decode(&text) {
        let parts = crate::logs::clean_components(&decoded);
        assert!(
            parts
                .iter()
                .all(|p| *p != ".." && *p != "." && !p.is_empty()),
            "{parts:?}"
        );
    }
    if let Ok(Some(nlq)) = crate::journal::new_node_log_query(q) {
        let valid = nlq
            .validate(std::path::Path::new("/nonexistent-krs-fuzz"))
            .is_empty();
        let (_, args) = crate::journal::logging_cmd(&nlq, &nlq.services);
        if valid {
            // Only safe service names reach journalctl.
            for unit in args.iter().filter_map(|a| a.strip_prefix("--unit=")) {
                assert!(
                    unit.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.:@".contains(c)),
                    "{unit:?}"
                );
            }
        }
    }
    let _ = crate::openmetrics::negotiate(q);
    assert!(crate::openmetrics::text_to_openmetrics(&text).ends_with("# EOF\n"));
    let size = u64::from(data.first().copied().unwrap_or(0));
    if let Ok(Some((a, b))) = crate::logs::parse_range(&text, size) {
        assert!(a <= b && b < size, "{text:?}: {a}-{b} of {size}");
    }
    if let Ok(v) = crate::debug::parse_verbosity(&text) {
        assert!(
            !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()),
            "{text:?} parsed as {v}"
        );
        assert_eq!(text.trim_start_matches('0').parse::<u32>().unwrap_or(0), v);
    }
}
