//! The route table: every route the kubelet's servers install, with its authorization
//! case (the `nodes/<subresource>` list `GetRequestAttributes` gives, most specific first)
//! and whether the read-only port serves it (upstream `InstallAuthNotRequiredHandlers`).
//!
//! * [`every_route_in_the_source_has_an_authorization_case`] reads every `crates/*/src`
//!   file and fails when a `.route("…")`, `.route_service("…")`, `.nest("…")` or
//!   `.nest_service("…")` names a path that has no row here — adding a route without
//!   deciding its authorization fails the build's tests;
//! * [`every_case_is_routed_and_authorized_as_listed`] sends each row's example through the
//!   secure router (all handlers on) with a recording authorizer: the subresources asked
//!   must be the row's, a denied user gets 403 for every method, an allowed one reaches a
//!   handler (not the router's fallback);
//! * [`read_only_port_serves_exactly_the_listed_set`] (the read-only audit): the read-only
//!   router routes exactly the rows marked `read_only`, and nothing else.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use tower::ServiceExt;

use crate::authn::{PeerIdentity, UserInfo};
use crate::authz::{Attributes, AuthorizeFuture, Authorizer, Decision};
use crate::{HostInterface, SecureServerConfig, secure_router};

/// One route.
pub(crate) struct Case {
    /// The pattern as written in the source (axum syntax).
    pub route: &'static str,
    /// A request path the pattern matches.
    pub example: &'static str,
    /// The subresources tried, with `KubeletFineGrainedAuthz` (the 1.35 default).
    pub subresources: &'static [&'static str],
    /// Served on the read-only port too.
    pub read_only: bool,
}

const fn case(
    route: &'static str,
    example: &'static str,
    subresources: &'static [&'static str],
    read_only: bool,
) -> Case {
    Case {
        route,
        example,
        subresources,
        read_only,
    }
}

/// Every route. Upstream's read-only set is `/healthz`, `/pods`, `/stats/`, `/metrics`,
/// `/metrics/cadvisor`, `/metrics/resource`, `/metrics/probes`.
pub(crate) const CASES: &[Case] = &[
    case("/healthz", "/healthz", &["healthz", "proxy"], true),
    case(
        "/healthz/{name}",
        "/healthz/syncloop",
        &["healthz", "proxy"],
        true,
    ),
    case("/pods", "/pods", &["pods", "proxy"], true),
    case("/pods/", "/pods/", &["pods", "proxy"], true),
    case("/configz", "/configz", &["configz", "proxy"], false),
    case(
        "/run/{ns}/{pod}/{container}",
        "/run/ns/p/c",
        &["proxy"],
        false,
    ),
    case(
        "/run/{ns}/{pod}/{uid}/{container}",
        "/run/ns/p/u/c",
        &["proxy"],
        false,
    ),
    case(
        "/exec/{ns}/{pod}/{container}",
        "/exec/ns/p/c",
        &["proxy"],
        false,
    ),
    case(
        "/exec/{ns}/{pod}/{uid}/{container}",
        "/exec/ns/p/u/c",
        &["proxy"],
        false,
    ),
    case(
        "/attach/{ns}/{pod}/{container}",
        "/attach/ns/p/c",
        &["proxy"],
        false,
    ),
    case(
        "/attach/{ns}/{pod}/{uid}/{container}",
        "/attach/ns/p/u/c",
        &["proxy"],
        false,
    ),
    case(
        "/portForward/{ns}/{pod}",
        "/portForward/ns/p",
        &["proxy"],
        false,
    ),
    case(
        "/portForward/{ns}/{pod}/{uid}",
        "/portForward/ns/p/u",
        &["proxy"],
        false,
    ),
    case(
        "/containerLogs/{ns}/{pod}/{container}",
        "/containerLogs/ns/p/c",
        &["proxy"],
        false,
    ),
    case("/runningpods/", "/runningpods/", &["pods", "proxy"], false),
    case("/metrics", "/metrics", &["metrics"], true),
    case("/metrics/probes", "/metrics/probes", &["metrics"], true),
    case("/metrics/resource", "/metrics/resource", &["metrics"], true),
    case("/metrics/cadvisor", "/metrics/cadvisor", &["metrics"], true),
    case("/stats/summary", "/stats/summary", &["stats"], true),
    case("/logs/", "/logs/", &["log"], false),
    case("/logs/{*logpath}", "/logs/x.log", &["log"], false),
    case("/logs/{*rest}", "/logs/x.log", &["log"], false),
    case("/debug/pprof/", "/debug/pprof/", &["proxy"], false),
    case(
        "/debug/pprof/{*subpath}",
        "/debug/pprof/cmdline",
        &["proxy"],
        false,
    ),
    case(
        "/debug/pprof/{*rest}",
        "/debug/pprof/cmdline",
        &["proxy"],
        false,
    ),
    case("/debug/flags/v", "/debug/flags/v", &["proxy"], false),
    case(
        "/checkpoint/{ns}/{pod}/{container}",
        "/checkpoint/ns/p/c",
        &["checkpoint"],
        false,
    ),
];

/// Paths that appear in route calls but are not served by the kubelet's ports (none yet).
const NOT_KUBELET_PORTS: &[&str] = &[];

/// The string literal that opens a route call, from `src` after `call(`.
fn literal_after(src: &str) -> Option<&str> {
    let rest = src.trim_start();
    let rest = rest.strip_prefix('"')?;
    rest.split('"').next()
}

fn route_literals(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for call in [".route(", ".route_service(", ".nest(", ".nest_service("] {
        for (i, _) in src.match_indices(call) {
            if let Some(lit) = literal_after(&src[i + call.len()..])
                && lit.starts_with('/')
            {
                out.push(lit.to_string());
            }
        }
    }
    out
}

fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_route_in_the_source_has_an_authorization_case() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).unwrap().flatten() {
        rust_files(&krate.path().join("src"), &mut files);
    }
    assert!(files.len() > 50, "only {} source files found", files.len());
    let mut found = 0;
    let mut missing = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        for lit in route_literals(&src) {
            found += 1;
            if !CASES.iter().any(|c| c.route == lit) && !NOT_KUBELET_PORTS.contains(&lit.as_str()) {
                missing.push(format!("{} in {}", lit, f.display()));
            }
        }
    }
    assert!(
        found >= 20,
        "only {found} routes found: is the scan broken?"
    );
    assert!(
        missing.is_empty(),
        "routes without an authorization case in crates/server/src/route_table.rs: {missing:#?}"
    );
}

#[test]
fn the_scan_sees_multi_line_calls() {
    let src = "r.route(\n    \"/a/{b}\",\n get(x)).nest_service(\"/n\", s).route(path, h)";
    assert_eq!(route_literals(src), ["/a/{b}", "/n"]);
}

struct NoPods;
impl HostInterface for NoPods {
    fn get_pods(&self) -> Vec<k8s_openapi::api::core::v1::Pod> {
        Vec::new()
    }
    fn sync_loop_health(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Allows `allowed`, denies everyone else; records the subresources asked.
#[derive(Default)]
struct Recording {
    seen: Mutex<Vec<String>>,
}
impl Authorizer for Recording {
    fn authorize<'a>(&'a self, a: &'a Attributes) -> AuthorizeFuture<'a> {
        self.seen.lock().unwrap().push(a.subresource.clone());
        let allow = a.user.name == "allowed";
        Box::pin(async move {
            Ok(if allow {
                Decision::Allow
            } else {
                Decision::NoOpinion
            })
        })
    }
}

/// The router's fallback in these tests: a status no handler answers.
const FALLBACK: u16 = 599;

fn with_fallback(r: Router) -> Router {
    r.fallback(|| async {
        axum::http::StatusCode::from_u16(FALLBACK).unwrap_or(axum::http::StatusCode::IM_A_TEAPOT)
    })
}

fn config(authz: Arc<Recording>) -> SecureServerConfig {
    let mut cfg = SecureServerConfig::new("node1", authz);
    cfg.debug.node_log_dir = std::env::temp_dir();
    cfg
}

async fn status(r: &Router, method: &str, path: &str, user: &str) -> u16 {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .body(Body::empty())
        .unwrap();
    req.extensions_mut()
        .insert(PeerIdentity::Cert(UserInfo::new(user, vec![])));
    r.clone().oneshot(req).await.unwrap().status().as_u16()
}

#[tokio::test]
async fn every_case_is_routed_and_authorized_as_listed() {
    let authz = Arc::new(Recording::default());
    let r = with_fallback(secure_router(
        &config(authz.clone()),
        Arc::new(NoPods),
        serde_json::json!({}),
    ));
    for c in CASES {
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"] {
            authz.seen.lock().unwrap().clear();
            assert_eq!(
                status(&r, method, c.example, "denied").await,
                403,
                "{method} {}",
                c.route
            );
            assert_eq!(
                *authz.seen.lock().unwrap(),
                c.subresources,
                "{method} {}",
                c.route
            );
        }
        let got = status(&r, "GET", c.example, "allowed").await;
        assert_ne!(got, FALLBACK, "{} ({}) is not routed", c.route, c.example);
    }
    // Paths the mux hands over but no route serves are authorized (as `proxy`) before
    // their 404; paths the mux does not hand over are 404 with no authorization at all.
    let r = secure_router(
        &config(authz.clone()),
        Arc::new(NoPods),
        serde_json::json!({}),
    );
    authz.seen.lock().unwrap().clear();
    assert_eq!(status(&r, "GET", "/pods/x/y", "denied").await, 403);
    assert_eq!(*authz.seen.lock().unwrap(), ["pods", "proxy"]);
    assert_eq!(status(&r, "GET", "/pods/x/y", "allowed").await, 404);
    authz.seen.lock().unwrap().clear();
    assert_eq!(status(&r, "GET", "/nothing/here", "denied").await, 404);
    assert!(authz.seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn read_only_port_serves_exactly_the_listed_set() {
    let r = with_fallback(crate::read_only_router(Arc::new(NoPods)));
    for c in CASES {
        let got = status(&r, "GET", c.example, "").await;
        if c.read_only {
            assert_ne!(got, FALLBACK, "{} is not on the read-only port", c.route);
        } else {
            assert_eq!(
                got, FALLBACK,
                "{} must not be on the read-only port",
                c.route
            );
        }
    }
}
