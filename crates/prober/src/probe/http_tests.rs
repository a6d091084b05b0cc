#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::HTTPHeader;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// A server on 127.0.0.1 answering each request with `respond(path)`; records request heads.
async fn serve(
    respond: impl Fn(&str, u16) -> Option<String> + Send + Sync + 'static,
) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let respond = Arc::new(respond);
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let seen = seen2.clone();
            let respond = respond.clone();
            tokio::spawn(async move {
                let mut buf = vec![0_u8; 4096];
                let mut head = String::new();
                while !head.contains("\r\n\r\n") {
                    let n = s.read(&mut buf).await.unwrap();
                    if n == 0 {
                        return;
                    }
                    head.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                seen.lock().unwrap().push(head);
                match respond(&path, port) {
                    Some(resp) => {
                        let _ = s.write_all(resp.as_bytes()).await;
                    }
                    // Never answer.
                    None => tokio::time::sleep(Duration::from_secs(30)).await,
                }
            });
        }
    });
    (port, seen)
}

fn response(code: u16, extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {code} X\r\nContent-Length: {}\r\n{extra}\r\n{body}",
        body.len()
    )
}

fn request(port: u16, path: &str) -> ProbeRequest {
    let get = HTTPGetAction {
        path: Some(path.into()),
        port: IntOrString::Int(i32::from(port)),
        http_headers: Some(vec![HTTPHeader {
            name: "X-Probe".into(),
            value: "yes".into(),
        }]),
        ..HTTPGetAction::default()
    };
    new_request_for_http_get_action(&get, &Container::default(), "127.0.0.1", "probe").unwrap()
}

const T: Duration = Duration::from_secs(2);

#[test]
fn request_defaults_follow_upstream() {
    let get = HTTPGetAction {
        path: Some("healthz?x=1".into()),
        port: IntOrString::Int(8080),
        scheme: Some("HTTPS".into()),
        http_headers: Some(vec![
            HTTPHeader {
                name: "accept".into(),
                value: String::new(),
            },
            HTTPHeader {
                name: "user-agent".into(),
                value: "mine".into(),
            },
        ]),
        ..HTTPGetAction::default()
    };
    let req =
        new_request_for_http_get_action(&get, &Container::default(), "fd00::5", "probe").unwrap();
    assert_eq!(req.url(), "https://[fd00::5]:8080/healthz?x=1");
    assert_eq!(
        req.headers,
        vec![("user-agent".to_string(), "mine".to_string())]
    );
    let plain = request(80, "");
    assert_eq!(plain.url(), "http://127.0.0.1:80/");
    assert_eq!(plain.header("User-Agent"), Some("kube-probe/1.35"));
    assert_eq!(plain.header("Accept"), Some("*/*"));
}

#[tokio::test]
async fn success_failure_and_headers() {
    let (port, seen) = serve(|path, _| {
        Some(match path {
            "/ok" => response(200, "", "fine"),
            _ => response(500, "", "broken"),
        })
    })
    .await;
    let p = HttpProber::new().unwrap();
    let ok = p.probe(&request(port, "/ok"), T).await.unwrap();
    assert_eq!(ok, Probed::new(Outcome::Success, "fine"));
    let bad = p.probe(&request(port, "/bad"), T).await.unwrap();
    assert_eq!(
        bad,
        Probed::new(Outcome::Failure, "HTTP probe failed with statuscode: 500")
    );
    let head = seen.lock().unwrap()[0].to_ascii_lowercase();
    for line in [
        "get /ok http/1.1",
        &format!("host: 127.0.0.1:{port}"),
        "user-agent: kube-probe/1.35",
        "accept: */*",
        "x-probe: yes",
        "connection: close",
    ] {
        assert!(head.contains(line), "{line:?} missing in {head}");
    }
    assert!(!head.contains("accept-encoding"), "{head}");
}

#[tokio::test]
async fn same_host_redirects_are_followed_other_hosts_are_a_warning() {
    let (port, _) = serve(|path, port| {
        Some(match path {
            "/a" => response(302, "Location: b\r\n", ""),
            "/b" => response(
                301,
                &format!("Location: http://127.0.0.1:{port}/ok\r\n"),
                "",
            ),
            "/ok" => response(200, "", "done"),
            "/away" => response(302, "Location: http://127.0.0.2:1/x\r\n", "moved"),
            "/loop" => response(307, "Location: /loop\r\n", ""),
            _ => response(404, "", ""),
        })
    })
    .await;
    let p = HttpProber::new().unwrap();
    let followed = p.probe(&request(port, "/a"), T).await.unwrap();
    assert_eq!(followed, Probed::new(Outcome::Success, "done"));
    let away = p.probe(&request(port, "/away"), T).await.unwrap();
    assert_eq!(
        away,
        Probed::new(
            Outcome::Warning,
            "Probe terminated redirects, Response body: moved"
        )
    );
    let looped = p.probe(&request(port, "/loop"), T).await.unwrap();
    assert_eq!(
        looped,
        Probed::new(
            Outcome::Failure,
            format!("Get \"http://127.0.0.1:{port}/loop\": stopped after 10 redirects")
        )
    );
}

#[tokio::test]
async fn body_is_read_up_to_10_kib_and_timeouts_fail() {
    let big = "x".repeat(3 * MAX_RESP_BODY_LENGTH);
    let (port, _) = serve(move |path, _| match path {
        "/big" => Some(response(200, "", &big)),
        _ => None,
    })
    .await;
    let p = HttpProber::new().unwrap();
    let out = p.probe(&request(port, "/big"), T).await.unwrap();
    assert_eq!(out.outcome, Outcome::Success);
    assert_eq!(out.output.len(), MAX_RESP_BODY_LENGTH);
    let slow = p
        .probe(&request(port, "/slow"), Duration::from_millis(200))
        .await
        .unwrap();
    assert_eq!(slow.outcome, Outcome::Failure);
    assert!(slow.output.contains("Client.Timeout exceeded"), "{slow:?}");
}

#[tokio::test]
async fn refused_connection_fails_with_the_dial_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let p = HttpProber::new().unwrap();
    let out = p.probe(&request(port, "/"), T).await.unwrap();
    assert_eq!(
        out,
        Probed::new(
            Outcome::Failure,
            format!(
                "Get \"http://127.0.0.1:{port}/\": dial tcp 127.0.0.1:{port}: connect: connection refused"
            )
        )
    );
}

#[test]
fn redirect_locations_resolve_like_urls() {
    let cur = request(8080, "/a/b?q=1");
    let r = |loc: &str| resolve_redirect(&cur, loc).unwrap().url();
    assert_eq!(r("c"), "http://127.0.0.1:8080/a/c");
    assert_eq!(r("/x"), "http://127.0.0.1:8080/x");
    assert_eq!(r("https://h:9/p"), "https://h:9/p");
    assert_eq!(r("http://h"), "http://h:80/");
    assert_eq!(r("//[fd00::1]:7/z"), "http://[fd00::1]:7/z");
}

#[tokio::test]
async fn lifecycle_get_ignores_the_status_code_as_upstream() {
    let (port, seen) = serve(|_, _| Some(response(500, "", "broken"))).await;
    let get = HTTPGetAction {
        path: Some("/hook".into()),
        port: IntOrString::Int(i32::from(port)),
        ..HTTPGetAction::default()
    };
    let p = HttpProber::new().unwrap();
    let out = LifecycleHttpClient::get(&p, &get, &Container::default(), "127.0.0.1").await;
    assert_eq!(out, Ok(HttpHookOutcome::Sent));
    let head = seen.lock().unwrap()[0].to_ascii_lowercase();
    assert!(head.contains("get /hook http/1.1"), "{head}");
    assert!(head.contains("user-agent: kube-lifecycle/1.35"), "{head}");
}

#[tokio::test]
async fn lifecycle_get_fails_without_a_response() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let p = HttpProber::new().unwrap();
    let err = p.lifecycle_get(&request(port, "/hook")).await.unwrap_err();
    assert!(err.contains("Get \"http://127.0.0.1:"), "{err}");
}

#[tokio::test]
async fn lifecycle_https_answered_in_http_falls_back_to_http_without_authorization() {
    // A plain HTTP server as Go's answers a TLS ClientHello: with a 400 in plain text.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0_u8; 4096];
            let n = s.read(&mut buf).await.unwrap();
            let answer = if buf.first() == Some(&0x16) {
                "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
                    .to_string()
            } else {
                seen2
                    .lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                response(200, "", "plain")
            };
            let _ = s.write_all(answer.as_bytes()).await;
        }
    });
    let get = HTTPGetAction {
        path: Some("/hook".into()),
        port: IntOrString::Int(i32::from(port)),
        scheme: Some("HTTPS".into()),
        http_headers: Some(vec![HTTPHeader {
            name: "Authorization".into(),
            value: "Bearer secret".into(),
        }]),
        ..HTTPGetAction::default()
    };
    let req =
        new_request_for_http_get_action(&get, &Container::default(), "127.0.0.1", "lifecycle")
            .unwrap();
    let p = HttpProber::new().unwrap();
    let out = p.lifecycle_get(&req).await;
    assert_eq!(
        out,
        Ok(HttpHookOutcome::FellBackToHttp(format!("127.0.0.1:{port}")))
    );
    let heads = seen.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(heads[0].starts_with("GET /hook HTTP/1.1"), "{heads:?}");
    assert!(
        !heads[0].to_ascii_lowercase().contains("authorization"),
        "{heads:?}"
    );
}
