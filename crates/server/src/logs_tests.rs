//! `/logs/` as Go's `http.FileServer` serves it, and the path-traversal corpus.

#![allow(clippy::unwrap_used)]

use super::*;
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use tower::ServiceExt;

/// The marker inside every file outside the log directory; no answer may contain it.
pub(crate) const SECRET: &str = "SECRET-OUTSIDE-THE-LOG-DIR";
/// A file name that exists only outside the log directory; no listing may show it.
pub(crate) const OUTSIDE_NAME: &str = "outside-only.txt";

/// `<tmp>/log` (served) with `a.log`, `sub/b.log`, `link-in -> a.log`, `link-out ->
/// ../outside/outside-only.txt`, `dirlink-out -> ../outside`, `abs-out -> /<tmp>/outside`;
/// `<tmp>/outside/outside-only.txt` holds [`SECRET`].
pub(crate) fn log_tree() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("log");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(log.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(log.join("a.log"), "line one\nline two\n").unwrap();
    std::fs::write(log.join("sub/b.log"), "bee\n").unwrap();
    std::fs::write(outside.join(OUTSIDE_NAME), SECRET).unwrap();
    std::fs::write(tmp.path().join("secret"), SECRET).unwrap();
    std::os::unix::fs::symlink("a.log", log.join("link-in")).unwrap();
    std::os::unix::fs::symlink(format!("../outside/{OUTSIDE_NAME}"), log.join("link-out")).unwrap();
    std::os::unix::fs::symlink("../outside", log.join("dirlink-out")).unwrap();
    std::os::unix::fs::symlink(&outside, log.join("abs-out")).unwrap();
    std::os::unix::fs::symlink("../../..", log.join("sub/up")).unwrap();
    (tmp, log)
}

async fn get(router: &Router, uri: &str, range: Option<&str>) -> (u16, HeaderMap, String) {
    let mut req = Request::get(uri);
    if let Some(r) = range {
        req = req.header(header::RANGE, r);
    }
    let resp = router
        .clone()
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn serves_files_and_lists_directories_as_go_file_server() {
    let (_tmp, log) = log_tree();
    let r = system_log_handler(log);
    let (s, h, body) = get(&r, "/logs/a.log", None).await;
    assert_eq!((s, body.as_str()), (200, "line one\nline two\n"));
    assert_eq!(h[header::CONTENT_TYPE], "text/plain; charset=utf-8");
    assert_eq!(h[header::ACCEPT_RANGES], "bytes");
    assert!(h.contains_key(header::LAST_MODIFIED));
    assert_eq!(
        get(&r, "/logs/link-in", None).await.2,
        "line one\nline two\n"
    );
    assert_eq!(get(&r, "/logs/sub/b.log", None).await.2, "bee\n");

    let (s, h, body) = get(&r, "/logs/", None).await;
    assert_eq!(s, 200);
    assert_eq!(h[header::CONTENT_TYPE], "text/html; charset=utf-8");
    assert!(
        body.starts_with(
            "<!doctype html>\n<meta name=\"viewport\" content=\"width=device-width\">\n<pre>\n"
        ),
        "{body}"
    );
    assert!(
        body.contains("<a href=\"a.log\">a.log</a>\n<a href=\"abs-out\">abs-out</a>\n"),
        "{body}"
    );
    assert!(
        body.contains("<a href=\"sub/\">sub/</a>\n</pre>\n"),
        "{body}"
    );

    let (s, h, _) = get(&r, "/logs/sub", None).await;
    assert_eq!(
        (s, &h[header::LOCATION]),
        (301, &HeaderValue::from_static("sub/"))
    );
    let (s, h, _) = get(&r, "/logs/a.log/", None).await;
    assert_eq!(
        (s, &h[header::LOCATION]),
        (301, &HeaderValue::from_static("../a.log"))
    );
    let (s, h, _) = get(&r, "/logs/sub/index.html", None).await;
    assert_eq!(
        (s, &h[header::LOCATION]),
        (301, &HeaderValue::from_static("./"))
    );
    assert_eq!(get(&r, "/logs/nope.log", None).await.0, 404);
    assert_eq!(
        get(&r, "/logs/nope.log", None).await.2,
        "404 page not found\n"
    );
}

#[tokio::test]
async fn ranges() {
    let (_tmp, log) = log_tree();
    let r = system_log_handler(log);
    let (s, h, body) = get(&r, "/logs/a.log", Some("bytes=5-7")).await;
    assert_eq!((s, body.as_str()), (206, "one"));
    assert_eq!(h[header::CONTENT_RANGE], "bytes 5-7/18");
    assert_eq!(get(&r, "/logs/a.log", Some("bytes=-4")).await.2, "two\n");
    assert_eq!(get(&r, "/logs/a.log", Some("bytes=99-")).await.0, 416);
    assert_eq!(parse_range("bytes=0-", 0), Err(()));
    assert_eq!(parse_range("bytes=2-1", 5), Err(()));
    assert_eq!(parse_range("bytes=1-100", 5), Ok(Some((1, 4))));
    assert_eq!(parse_range("bytes=0-1,3-4", 5), Ok(None));
}

#[test]
fn content_types() {
    assert_eq!(
        content_type(Path::new("x.log"), b"hello\n"),
        "text/plain; charset=utf-8"
    );
    assert_eq!(
        content_type(Path::new("wtmp"), b"\x00\x01"),
        "application/octet-stream"
    );
    assert_eq!(content_type(Path::new("x.gz"), b"abc"), "application/gzip");
}

/// Request paths that try to leave the directory: `..`, encoded dots and slashes (also
/// double-encoded, mixed case, backslashes, overlong UTF-8), absolute paths, symlinks out
/// (file, directory, absolute, through a subdirectory), NUL bytes and very long paths.
pub(crate) fn traversal_corpus() -> Vec<String> {
    let mut c: Vec<String> = [
        "/logs/../secret",
        "/logs/../../../../../../etc/passwd",
        "/logs/%2e%2e/secret",
        "/logs/%2E%2E/secret",
        "/logs/%2e%2e%2fsecret",
        "/logs/..%2fsecret",
        "/logs/..%2Fsecret",
        "/logs/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/logs/.%2e/secret",
        "/logs/%2e./secret",
        "/logs/%252e%252e/secret",
        "/logs/%252e%252e%252fsecret",
        "/logs/..%5csecret",
        "/logs/..%5c..%5csecret",
        "/logs/%c0%ae%c0%ae/secret",
        "/logs/%c0%ae%c0%ae%c0%afsecret",
        "/logs/....//secret",
        "/logs/..;/secret",
        "/logs/sub/../../secret",
        "/logs/sub/%2e%2e/%2e%2e/secret",
        "/logs/sub/up/etc/passwd",
        "/logs/sub/up/",
        "/logs//etc/passwd",
        "/logs/%2fetc%2fpasswd",
        "/logs/link-out",
        "/logs/dirlink-out/",
        "/logs/dirlink-out/outside-only.txt",
        "/logs/dirlink-out/../secret",
        "/logs/abs-out/",
        "/logs/abs-out/outside-only.txt",
        "/logs/link-out/",
        "/logs/%00",
        "/logs/a.log%00.txt",
        "/logs/../log/../secret",
        "/logs/./../secret",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    c.push(format!("/logs/{}", "../".repeat(2000)));
    c.push(format!("/logs/{}secret", "a/../".repeat(3000)));
    c.push(format!("/logs/{}", "x".repeat(70_000)));
    c.push(format!("/logs/{}etc/passwd", "%2e%2e/".repeat(500)));
    c.push(format!("/logs/{}/", "sub/up".repeat(50)));
    c
}

/// `GET uri` through `r`: status and body; `None` when hyper would refuse the URI.
async fn send(r: &Router, uri: &str) -> Option<(u16, String)> {
    let req = Request::get(uri).body(Body::empty()).ok()?;
    let resp = r.clone().oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Some((status, String::from_utf8_lossy(&body).into_owned()))
}

#[tokio::test]
async fn traversal_corpus_serves_nothing_outside() {
    let (tmp, log) = log_tree();
    let r = system_log_handler(log);
    let mut tried = 0;
    for uri in traversal_corpus() {
        // A URI hyper itself refuses never reaches the handler.
        let Some((status, body)) = send(&r, &uri).await else {
            continue;
        };
        tried += 1;
        assert!(!body.contains(SECRET), "{uri}: {status} served {body}");
        assert!(
            !body.contains(OUTSIDE_NAME),
            "{uri}: {status} listed {body}"
        );
        assert!(!body.contains("root:"), "{uri}: {status} served {body}");
        assert!(
            [404, 301, 400].contains(&status) || status == 200 && body.contains("<pre>"),
            "{uri}: {status} {body}"
        );
    }
    assert!(tried >= 35, "only {tried} URIs were valid");
    // The secret is there to be found.
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("secret")).unwrap(),
        SECRET
    );
}

#[test]
fn resolve_refuses_symlink_escapes() {
    let (_tmp, log) = log_tree();
    assert!(resolve_inside(&log, "link-in").is_ok());
    assert_eq!(
        resolve_inside(&log, "link-out"),
        Err(ResolveError::NotFound)
    );
    assert_eq!(resolve_inside(&log, "abs-out"), Err(ResolveError::NotFound));
    assert_eq!(resolve_inside(&log, "sub/up"), Err(ResolveError::NotFound));
    assert_eq!(
        resolve_inside(&log, "../secret"),
        Err(ResolveError::NotFound)
    );
    assert_eq!(clean_components("/a/./b/../../../c//d/"), ["c", "d"]);
    assert_eq!(percent_decode("%2e%2E%2f"), Some("../".into()));
    assert_eq!(percent_decode("%zz"), None);
    assert_eq!(percent_decode("%00"), None);
    assert_eq!(percent_decode("%c0%ae"), None);
}

/// `/containerLogs/` takes no path from the request: the traversal corpus, rewritten onto
/// it, only ever asks the host for pods by name, never finds one, and serves nothing.
#[tokio::test]
async fn container_logs_traversal_corpus_serves_nothing() {
    use crate::{HostInterface, LogSink, LogStreamer, PodLogOptions};
    use std::sync::Mutex;

    #[derive(Default)]
    struct Host {
        asked: Mutex<Vec<String>>,
    }
    impl HostInterface for Host {
        fn get_pods(&self) -> Vec<k8s_openapi::api::core::v1::Pod> {
            let mut p = k8s_openapi::api::core::v1::Pod::default();
            p.metadata.name = Some("p".into());
            p.metadata.namespace = Some("ns".into());
            vec![p]
        }
        fn sync_loop_health(&self) -> Result<(), String> {
            Ok(())
        }
        fn get_kubelet_container_logs<'a>(
            &'a self,
            pod_full_name: &'a str,
            container: &'a str,
            _opts: &'a PodLogOptions,
            _sink: LogSink,
        ) -> crate::HostFuture<'a, Result<LogStreamer, String>> {
            self.asked
                .lock()
                .unwrap()
                .push(format!("{pod_full_name}/{container}"));
            Box::pin(async { Err(SECRET.to_string()) })
        }
    }
    let host = Arc::new(Host::default());
    let cfg = crate::SecureServerConfig {
        anonymous: true,
        ..crate::SecureServerConfig::new("n", Arc::new(crate::AlwaysAllow))
    };
    let r = crate::secure_router(&cfg, host.clone(), serde_json::json!({}));
    let mut tried = 0;
    for uri in traversal_corpus() {
        let rest = uri.trim_start_matches("/logs/");
        for target in [
            format!("/containerLogs/{rest}"),
            format!("/containerLogs/ns/{rest}/c"),
            format!("/containerLogs/ns/p/{rest}"),
            format!("/containerLogs/{rest}/p/c"),
        ] {
            let Some((status, body)) = send(&r, &target).await else {
                continue;
            };
            tried += 1;
            assert!(!body.contains(SECRET), "{target}: {status} {body}");
            assert!(
                [307, 400, 404].contains(&status),
                "{target}: {status} {body}"
            );
        }
    }
    assert!(tried > 100, "only {tried} URIs were valid");
    // Only the exact pod ever reaches the host (here: never, the container name differs).
    assert!(
        host.asked.lock().unwrap().iter().all(|a| a == "p_ns/c"),
        "{:?}",
        host.asked.lock().unwrap()
    );
}
