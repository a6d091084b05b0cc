//! Routing, parameters, status codes and the streaming proxy of the debugging handlers,
//! against a recording fake host (and a fake runtime streaming server for the proxy).
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tower::ServiceExt;

use super::*;
use crate::{HostFuture, HostInterface, LogSink, LogStreamer, PodLogOptions};

/// One pod `default/web` (uid `uid-1`) with `app` (tty) and init container `init`.
#[derive(Default)]
struct FakeHost {
    calls: Mutex<Vec<String>>,
    log_opts: Mutex<Option<PodLogOptions>>,
    /// What `get_exec`/`get_attach`/`get_port_forward` answer.
    url: Mutex<Option<Result<String, StreamingError>>>,
}

impl FakeHost {
    fn record(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
    fn answer_url(&self) -> Result<String, StreamingError> {
        self.url
            .lock()
            .unwrap()
            .clone()
            .unwrap_or_else(|| Ok("http://127.0.0.1:1/unused".into()))
    }
}

impl HostInterface for FakeHost {
    fn get_pods(&self) -> Vec<Pod> {
        let mut p = Pod::default();
        p.metadata.name = Some("web".into());
        p.metadata.namespace = Some("default".into());
        p.metadata.uid = Some("uid-1".into());
        p.spec = Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                tty: Some(true),
                ..Container::default()
            }],
            init_containers: Some(vec![Container {
                name: "init".into(),
                ..Container::default()
            }]),
            ..PodSpec::default()
        });
        vec![p]
    }
    fn sync_loop_health(&self) -> Result<(), String> {
        Ok(())
    }
    fn get_running_pods(&self) -> HostFuture<'_, Result<Vec<Pod>, String>> {
        Box::pin(async { Ok(self.get_pods()) })
    }
    fn run_in_container<'a>(
        &'a self,
        pod_full_name: &'a str,
        pod_uid: &'a str,
        container: &'a str,
        cmd: &'a [String],
    ) -> HostFuture<'a, Result<Vec<u8>, String>> {
        self.record(format!(
            "run {pod_full_name} {pod_uid:?} {container} {cmd:?}"
        ));
        Box::pin(async move {
            match container {
                "app" => Ok(b"hello\n".to_vec()),
                "quiet" => Ok(Vec::new()),
                _ => Err(format!("container not found ({container:?})")),
            }
        })
    }
    fn get_exec<'a>(
        &'a self,
        pod_full_name: &'a str,
        pod_uid: &'a str,
        container: &'a str,
        cmd: &'a [String],
        opts: StreamOptions,
    ) -> HostFuture<'a, Result<String, StreamingError>> {
        self.record(format!(
            "exec {pod_full_name} {pod_uid:?} {container} {cmd:?} {opts:?}"
        ));
        Box::pin(async move { self.answer_url() })
    }
    fn get_attach<'a>(
        &'a self,
        pod_full_name: &'a str,
        pod_uid: &'a str,
        container: &'a str,
        opts: StreamOptions,
    ) -> HostFuture<'a, Result<String, StreamingError>> {
        self.record(format!(
            "attach {pod_full_name} {pod_uid:?} {container} {opts:?}"
        ));
        Box::pin(async move { self.answer_url() })
    }
    fn get_port_forward<'a>(
        &'a self,
        pod_name: &'a str,
        pod_namespace: &'a str,
        pod_uid: &'a str,
        ports: &'a [i32],
    ) -> HostFuture<'a, Result<String, StreamingError>> {
        self.record(format!(
            "portforward {pod_name} {pod_namespace} {pod_uid} {ports:?}"
        ));
        Box::pin(async move { self.answer_url() })
    }
    fn get_kubelet_container_logs<'a>(
        &'a self,
        pod_full_name: &'a str,
        container: &'a str,
        opts: &'a PodLogOptions,
        sink: LogSink,
    ) -> HostFuture<'a, Result<LogStreamer, String>> {
        self.record(format!("logs {pod_full_name} {container}"));
        *self.log_opts.lock().unwrap() = Some(opts.clone());
        Box::pin(async move {
            if container == "init" {
                return Err(format!(
                    "container {container:?} in pod \"web\" is waiting to start: PodInitializing"
                ));
            }
            let streamer: LogStreamer = Box::pin(async move {
                sink.send(b"line 1\n".to_vec())
                    .await
                    .map_err(|e| e.to_string())?;
                sink.send(b"line 2\n".to_vec())
                    .await
                    .map_err(|e| e.to_string())?;
                Err("failed to read log file \"/var/log/pods/x/0.log\": gone".to_string())
            });
            Ok(streamer)
        })
    }
}

fn router(host: &Arc<FakeHost>) -> axum::Router {
    debugging_handlers(host.clone(), false)
}

async fn call_with(
    host: &Arc<FakeHost>,
    req: Request<Body>,
) -> (u16, axum::http::HeaderMap, String) {
    let resp = router(host).oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

async fn call(host: &Arc<FakeHost>, method: &str, uri: &str) -> (u16, String) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = call_with(host, req).await;
    (status, body)
}

#[tokio::test]
async fn container_logs_stream_and_end_with_a_late_error() {
    let host = Arc::new(FakeHost::default());
    let (status, body) = call(
        &host,
        "GET",
        "/containerLogs/default/web/app?follow=true&tailLines=5&timestamps=1&limitBytes=10&sinceSeconds=3&previous=false",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        "line 1\nline 2\nfailed to read log file \"/var/log/pods/x/0.log\": gone"
    );
    assert_eq!(host.calls(), ["logs web_default app"]);
    let opts = host.log_opts.lock().unwrap().clone().unwrap();
    assert_eq!(
        opts,
        PodLogOptions {
            follow: true,
            previous: false,
            since_seconds: Some(3),
            since_time: None,
            timestamps: true,
            tail_lines: Some(5),
            limit_bytes: Some(10),
            stream: None,
        }
    );
}

#[tokio::test]
async fn container_logs_legacy_tail_and_since_time() {
    let host = Arc::new(FakeHost::default());
    call(&host, "GET", "/containerLogs/default/web/app?tail=7").await;
    assert_eq!(
        host.log_opts.lock().unwrap().clone().unwrap().tail_lines,
        Some(7)
    );
    call(
        &host,
        "GET",
        "/containerLogs/default/web/app?tailLines=3&tail=all",
    )
    .await;
    assert_eq!(
        host.log_opts.lock().unwrap().clone().unwrap().tail_lines,
        None
    );
    call(
        &host,
        "GET",
        "/containerLogs/default/web/app?sinceTime=2026-01-02T03:04:05Z&previous=",
    )
    .await;
    let opts = host.log_opts.lock().unwrap().clone().unwrap();
    assert_eq!(
        opts.since_time,
        Some("2026-01-02T03:04:05Z".parse().unwrap())
    );
    // Any value but `0`/`false` is true, the empty one included.
    assert!(opts.previous);
}

#[tokio::test]
async fn container_logs_errors_as_upstream() {
    let host = Arc::new(FakeHost::default());
    let cases: &[(&str, u16, &str)] = &[
        (
            "/containerLogs/default/web/app?tailLines=x",
            400,
            r#"{"message": "Unable to decode query."}"#,
        ),
        (
            "/containerLogs/default/web/app?sinceTime=yesterday",
            400,
            r#"{"message": "Unable to decode query."}"#,
        ),
        (
            "/containerLogs/default/web/app?tailLines=-1",
            422,
            r#"{"message": "Invalid request."}"#,
        ),
        (
            "/containerLogs/default/web/app?limitBytes=0",
            422,
            r#"{"message": "Invalid request."}"#,
        ),
        (
            "/containerLogs/default/web/app?sinceSeconds=0",
            422,
            r#"{"message": "Invalid request."}"#,
        ),
        (
            "/containerLogs/default/web/app?sinceSeconds=5&sinceTime=2026-01-02T03:04:05Z",
            422,
            r#"{"message": "Invalid request."}"#,
        ),
        (
            "/containerLogs/default/web/app?stream=Both",
            422,
            r#"{"message": "Invalid request."}"#,
        ),
        (
            "/containerLogs/default/web/app?stream=Stdout",
            400,
            r#"unable to return the given log stream: "Stdout". Please enable PodLogsQuerySplitStreams feature gate in kubelet"#,
        ),
        (
            "/containerLogs/default/nope/app",
            404,
            r#"pod "nope" does not exist"#,
        ),
        (
            "/containerLogs/other/web/app",
            404,
            r#"pod "web" does not exist"#,
        ),
        (
            "/containerLogs/default/web/nope",
            404,
            r#"container "nope" not found in pod "web""#,
        ),
        (
            "/containerLogs/default/web/init",
            400,
            r#"container "init" in pod "web" is waiting to start: PodInitializing"#,
        ),
    ];
    for (uri, status, body) in cases {
        assert_eq!(
            call(&host, "GET", uri).await,
            (*status, (*body).to_string()),
            "{uri}"
        );
    }
    // GET only; a missing segment is no route.
    assert_eq!(
        call(&host, "POST", "/containerLogs/default/web/app")
            .await
            .0,
        405
    );
    assert_eq!(
        call(&host, "GET", "/containerLogs/default/web").await.0,
        404
    );
}

#[tokio::test]
async fn container_logs_with_split_streams() {
    let host = Arc::new(FakeHost::default());
    let r = debugging_handlers(host.clone(), true);
    let req = Request::get("/containerLogs/default/web/app?stream=Stderr")
        .body(Body::empty())
        .unwrap();
    assert_eq!(r.clone().oneshot(req).await.unwrap().status(), 200);
    let got = host.log_opts.lock().unwrap().clone().unwrap().stream;
    assert_eq!(got.as_deref(), Some("Stderr"));
    let req = Request::get("/containerLogs/default/web/app")
        .body(Body::empty())
        .unwrap();
    r.oneshot(req).await.unwrap();
    let got = host.log_opts.lock().unwrap().clone().unwrap().stream;
    assert_eq!(got.as_deref(), Some("All"));
}

#[tokio::test]
async fn exec_parameters_and_errors() {
    let host = Arc::new(FakeHost::default());
    // Not an upgrade: the proxy's 500.
    let (status, body) = call(
        &host,
        "POST",
        "/exec/default/web/app?command=ls&command=-l&command=%2Ftmp&output=1&error=1&tty=1",
    )
    .await;
    assert_eq!((status, body.as_str()), (500, "Upgrade request required\n"));
    // The TTY drops stderr; the commands keep their order.
    assert_eq!(
        host.calls(),
        [format!(
            "exec web_default \"\" app [\"ls\", \"-l\", \"/tmp\"] {:?}",
            StreamOptions {
                stdin: false,
                stdout: true,
                stderr: false,
                tty: true
            }
        )]
    );
    assert_eq!(
        call(&host, "GET", "/exec/default/web/app?command=ls").await,
        (
            400,
            "you must specify at least 1 of stdin, stdout, stderr".into()
        )
    );
    assert_eq!(
        call(&host, "GET", "/exec/default/nope/app?input=1").await,
        (404, "pod does not exist".into())
    );
    call(&host, "GET", "/exec/default/web/uid-9/app?input=1").await;
    assert!(
        host.calls()
            .last()
            .unwrap()
            .starts_with("exec web_default \"uid-9\" app")
    );
    *host.url.lock().unwrap() = Some(Err(StreamingError {
        kind: StreamingErrorKind::NotFound,
        message: "no such container".into(),
    }));
    assert_eq!(
        call(&host, "GET", "/exec/default/web/app?output=1").await,
        (404, "no such container".into())
    );
    *host.url.lock().unwrap() = Some(Err(StreamingError {
        kind: StreamingErrorKind::TooManyInFlight,
        message: "maximum number of in-flight requests exceeded".into(),
    }));
    let req = Request::get("/attach/default/web/app?output=1")
        .body(Body::empty())
        .unwrap();
    let (status, headers, _) = call_with(&host, req).await;
    assert_eq!(status, 429);
    assert_eq!(headers["retry-after"], "60");
    *host.url.lock().unwrap() = Some(Err(StreamingError::other("boom")));
    assert_eq!(
        call(&host, "POST", "/attach/default/web/app?input=1").await,
        (500, "boom".into())
    );
    for method in ["PUT", "DELETE", "HEAD"] {
        assert_eq!(
            call(&host, method, "/exec/default/web/app?input=1").await.0,
            405
        );
    }
}

#[tokio::test]
async fn port_forward_parameters_and_errors() {
    let host = Arc::new(FakeHost::default());
    assert_eq!(
        call(&host, "GET", "/portForward/default/web/uid-2").await,
        (404, "pod not found".into())
    );
    assert_eq!(
        call(&host, "GET", "/portForward/default/nope").await,
        (404, "pod does not exist".into())
    );
    let ws = |q: &str| {
        Request::get(format!("/portForward/default/web/uid-1{q}"))
            .header("Connection", "Upgrade")
            .header("Upgrade", "websocket")
            .body(Body::empty())
            .unwrap()
    };
    assert_eq!(
        call_with(&host, ws("")).await.2,
        "query parameter \"port\" is required"
    );
    assert_eq!(
        call_with(&host, ws("?port=0")).await.2,
        "port \"0\" must be > 0"
    );
    assert_eq!(call_with(&host, ws("?port=http")).await.0, 400);
    host.calls.lock().unwrap().clear();
    // The URL answers nothing: the dial error is the proxy's 500.
    let (status, _, body) = call_with(&host, ws("?port=80,8080&port=9090")).await;
    assert_eq!(status, 500, "{body}");
    assert!(body.starts_with("error dialing backend"), "{body}");
    assert_eq!(
        host.calls(),
        ["portforward web default uid-1 [80, 8080, 9090]"]
    );
}

#[tokio::test]
async fn run_returns_the_output() {
    let host = Arc::new(FakeHost::default());
    let req = Request::post("/run/default/web/app?cmd=echo%20hello")
        .body(Body::empty())
        .unwrap();
    let (status, headers, body) = call_with(&host, req).await;
    assert_eq!((status, body.as_str()), (200, "hello\n"));
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(
        host.calls(),
        ["run web_default \"\" app [\"echo\", \"hello\"]"]
    );
    let req = Request::post("/run/default/web/uid-1/quiet?cmd=true")
        .body(Body::empty())
        .unwrap();
    let (status, headers, body) = call_with(&host, req).await;
    assert_eq!((status, body.as_str()), (200, ""));
    assert!(headers.get("content-type").is_none());
    assert_eq!(
        call(&host, "POST", "/run/default/web/nope?cmd=ls").await,
        (500, "container not found (\"nope\")".into())
    );
    assert_eq!(
        call(&host, "POST", "/run/default/gone/app?cmd=ls").await,
        (404, "pod does not exist".into())
    );
    assert_eq!(
        call(&host, "GET", "/run/default/web/app?cmd=ls").await.0,
        405
    );
}

#[tokio::test]
async fn running_pods_is_a_pod_list() {
    let host = Arc::new(FakeHost::default());
    let (status, body) = call(&host, "GET", "/runningpods/").await;
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["kind"], "PodList");
    assert_eq!(v["items"][0]["metadata"]["uid"], "uid-1");
    assert_eq!(call(&host, "POST", "/runningpods/").await.0, 405);
}

/// A runtime streaming server: answers the upgrade with 101, then echoes; or answers 404.
async fn fake_streaming_server(answer_404: bool) -> (String, tokio::task::JoinHandle<String>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/exec/token123", l.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut head = Vec::new();
        let mut b = [0_u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut b).await.unwrap();
            head.push(b[0]);
        }
        if answer_404 {
            s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 14\r\n\r\nunknown token\n")
                .await
                .unwrap();
            return String::from_utf8(head).unwrap();
        }
        s.write_all(
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n",
        )
        .await
        .unwrap();
        let mut buf = [0_u8; 64];
        loop {
            let n = s.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            s.write_all(&buf[..n]).await.unwrap();
        }
        String::from_utf8(head).unwrap()
    });
    (url, task)
}

/// Serves `router` on one connection, with upgrades, as the secure port does.
async fn serve_one(router: axum::Router) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        let (s, remote) = l.accept().await.unwrap();
        let svc =
            hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                req.extensions_mut()
                    .insert(crate::proxy::RemoteAddr(remote));
                router.clone().oneshot(req)
            });
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
            .with_upgrades()
            .await;
    });
    addr
}

async fn read_head(s: &mut tokio::net::TcpStream) -> String {
    let mut head = Vec::new();
    let mut b = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).await.unwrap();
        head.push(b[0]);
    }
    String::from_utf8(head).unwrap()
}

#[tokio::test]
async fn exec_upgrade_is_proxied_to_the_runtime_and_spliced() {
    let (url, backend) = fake_streaming_server(false).await;
    let host = Arc::new(FakeHost::default());
    *host.url.lock().unwrap() = Some(Ok(url));
    let addr = serve_one(router(&host)).await;
    let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
    c.write_all(
        b"POST /exec/default/web/app?command=sh&input=1&output=1 HTTP/1.1\r\nHost: node1:10250\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Stream-Protocol-Version: v3.channel.k8s.io\r\n\r\n",
    )
    .await
    .unwrap();
    let head = read_head(&mut c).await.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("upgrade: spdy/3.1"), "{head}");
    assert!(
        head.contains("x-stream-protocol-version: v4.channel.k8s.io"),
        "{head}"
    );
    c.write_all(b"frames both ways").await.unwrap();
    let mut echo = [0_u8; 16];
    c.read_exact(&mut echo).await.unwrap();
    assert_eq!(&echo, b"frames both ways");
    drop(c);
    let sent = backend.await.unwrap().to_ascii_lowercase();
    // The request line is the runtime's URL; the upgrade headers are passed on.
    assert!(
        sent.starts_with("post /exec/token123 http/1.1\r\n"),
        "{sent}"
    );
    assert!(sent.contains("upgrade: spdy/3.1"), "{sent}");
    assert!(
        sent.contains("x-stream-protocol-version: v4.channel.k8s.io"),
        "{sent}"
    );
    assert!(
        sent.contains("x-stream-protocol-version: v3.channel.k8s.io"),
        "{sent}"
    );
    assert!(sent.contains("x-forwarded-for: 127.0.0.1"), "{sent}");
}

#[tokio::test]
async fn a_runtime_error_answer_is_passed_back() {
    let (url, backend) = fake_streaming_server(true).await;
    let host = Arc::new(FakeHost::default());
    *host.url.lock().unwrap() = Some(Ok(url));
    let req = Request::get("/attach/default/web/app?output=1")
        .header("Connection", "Upgrade")
        .header("Upgrade", "SPDY/3.1")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = call_with(&host, req).await;
    assert_eq!((status, body.as_str()), (404, "unknown token\n"));
    backend.await.unwrap();
}

#[tokio::test]
async fn a_redirect_from_the_runtime_is_refused() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/exec/x", l.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut buf = [0_u8; 1024];
        let _ = s.read(&mut buf).await.unwrap();
        s.write_all(
            b"HTTP/1.1 302 Found\r\nLocation: http://elsewhere/\r\nContent-Length: 0\r\n\r\n",
        )
        .await
        .unwrap();
    });
    let host = Arc::new(FakeHost::default());
    *host.url.lock().unwrap() = Some(Ok(url));
    let req = Request::get("/exec/default/web/app?output=1")
        .header("Connection", "Upgrade")
        .header("Upgrade", "SPDY/3.1")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = call_with(&host, req).await;
    assert_eq!(
        (status, body.as_str()),
        (500, "invalid upgrade response: status code 302\n")
    );
}
