#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: nginx\n";
const LIST: &str = "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"a\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}},{\"metadata\":{\"name\":\"b\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}]}";

/// A local HTTP server on 127.0.0.1 replying with a settable (status, body) and recording
/// the request headers.
#[derive(Clone, Default)]
struct TestServer {
    reply: Arc<Mutex<(u16, Vec<u8>)>>,
    headers: Arc<Mutex<Vec<hyper::HeaderMap>>>,
}

impl TestServer {
    async fn start() -> (TestServer, String) {
        let server = TestServer::default();
        server.set(200, POD);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/pods", listener.local_addr().unwrap());
        let s = server.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let s = s.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let s = s.clone();
                        async move {
                            s.headers.lock().unwrap().push(req.headers().clone());
                            let (status, body) = s.reply.lock().unwrap().clone();
                            let resp = hyper::Response::builder()
                                .status(status)
                                .body(Full::new(Bytes::from(body)));
                            Ok::<_, Infallible>(resp.unwrap())
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        (server, url)
    }

    fn set(&self, status: u16, body: impl Into<Vec<u8>>) {
        *self.reply.lock().unwrap() = (status, body.into());
    }
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

#[tokio::test]
async fn fetches_a_pod_with_headers_then_reports_unchanged() {
    let (server, url) = TestServer::start().await;
    let headers = vec![
        ("X-Token".to_string(), "abc".to_string()),
        ("X-Token".to_string(), "def".to_string()),
    ];
    let mut src = SourceUrl::new(url.clone(), headers, "node1", HyperFetcher::default());
    let Poll::Pods(pods) = src.extract_from_url().await else {
        panic!("no pods")
    };
    assert_eq!(names(&pods), ["web-node1"]);
    assert_eq!(
        pods[0].spec.as_ref().unwrap().tolerations,
        None,
        "no toleration for URL pods"
    );
    let got: Vec<_> = server.headers.lock().unwrap()[0]
        .get_all("x-token")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    assert_eq!(got, ["abc", "def"]);
    assert_eq!(src.extract_from_url().await, Poll::Unchanged);
}

#[tokio::test]
async fn accepts_a_pod_list() {
    let (server, url) = TestServer::start().await;
    server.set(200, LIST);
    let mut src = SourceUrl::new(url, vec![], "n", HyperFetcher::default());
    let Poll::Pods(pods) = src.extract_from_url().await else {
        panic!("no pods")
    };
    assert_eq!(names(&pods), ["a-n", "b-n"]);
}

#[tokio::test]
async fn failures_keep_state_and_bad_body_is_reported_once() {
    let (server, url) = TestServer::start().await;
    let mut src = SourceUrl::new(url.clone(), vec![], "n", HyperFetcher::default());
    assert!(matches!(src.extract_from_url().await, Poll::Pods(_)));

    server.set(500, "boom");
    let Poll::Failed { err, send_empty } = src.extract_from_url().await else {
        panic!()
    };
    assert_eq!(err.to_string(), format!("{url}: 500 Internal Server Error"));
    assert!(!send_empty);
    assert_eq!(src.run_once().await, None, "nothing sent on failure");

    server.set(200, "kind: Secret\napiVersion: v1\n");
    let Poll::Failed { err, .. } = src.extract_from_url().await else {
        panic!()
    };
    assert!(
        err.to_string()
            .starts_with(&format!("{url}: couldn't parse as single pod")),
        "{err}"
    );
    assert_eq!(
        src.extract_from_url().await,
        Poll::Unchanged,
        "same bad body is not decoded again"
    );

    server.set(200, "");
    let Poll::Failed { err, send_empty } = src.extract_from_url().await else {
        panic!()
    };
    assert_eq!(err, UrlError::Empty(url));
    assert!(send_empty);
    assert_eq!(
        src.run_once().await,
        Some(vec![]),
        "empty body sends an empty set"
    );
}

#[tokio::test]
async fn body_limit_and_connection_errors() {
    let (server, url) = TestServer::start().await;
    server.set(200, vec![b' '; 100]);
    let mut src = SourceUrl::new(url.clone(), vec![], "n", HyperFetcher::default()).with_limit(100);
    let Poll::Failed { err, .. } = src.extract_from_url().await else {
        panic!()
    };
    assert!(
        matches!(
            err,
            UrlError::Fetch(FetchError::TooLarge { limit: 100, .. })
        ),
        "{err}"
    );

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);
    let mut src = SourceUrl::new(closed, vec![], "n", HyperFetcher::default());
    let Poll::Failed { err, .. } = src.extract_from_url().await else {
        panic!()
    };
    assert!(
        matches!(err, UrlError::Fetch(FetchError::Request { .. })),
        "{err}"
    );

    let mut src = SourceUrl::new("ftp://127.0.0.1/", vec![], "n", HyperFetcher::default());
    let Poll::Failed { err, .. } = src.extract_from_url().await else {
        panic!()
    };
    assert!(
        matches!(err, UrlError::Fetch(FetchError::UnsupportedScheme(_))),
        "{err}"
    );

    // https is spoken: against a plain-text server the TLS handshake fails.
    let tls_url = url.replace("http://", "https://");
    let mut src = SourceUrl::new(tls_url, vec![], "n", HyperFetcher::default());
    let Poll::Failed { err, .. } = src.extract_from_url().await else {
        panic!()
    };
    let UrlError::Fetch(FetchError::Request { err: msg, .. }) = &err else {
        panic!("{err}")
    };
    assert!(
        msg.contains("InvalidContentType"),
        "a TLS record error: {msg}"
    );

    let bad_header = vec![("bad header".to_string(), "v".to_string())];
    let mut src = SourceUrl::new(url, bad_header, "n", HyperFetcher::default());
    let Poll::Failed { err, .. } = src.extract_from_url().await else {
        panic!()
    };
    assert!(
        matches!(err, UrlError::Fetch(FetchError::InvalidHeader { .. })),
        "{err}"
    );
}

#[tokio::test]
async fn times_out_on_a_silent_server() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let fetcher = HyperFetcher::new(Duration::from_millis(200));
    let err = fetcher.get(&url, &[], 1000).await.unwrap_err();
    assert!(matches!(err, FetchError::Timeout { .. }), "{err}");
    drop(listener);
}

#[tokio::test(start_paused = true)]
async fn loop_polls_every_period_and_sends_only_changes() {
    let fetcher = FakeFetcher::default();
    fetcher.push_ok(POD);
    fetcher.push(Err(FetchError::Request {
        url: "u".into(),
        err: "down".into(),
    }));
    fetcher.push_ok(POD);
    fetcher.push_ok(LIST);
    let fetcher = Arc::new(fetcher);
    let (tx, mut rx) = mpsc::channel(4);
    let cancel = CancellationToken::new();
    let src = SourceUrl::new("http://u", vec![], "n", fetcher.clone());
    let period = Duration::from_secs(20);
    let task = tokio::spawn(run_http_source(src, period, tx, cancel.clone()));

    assert_eq!(names(&rx.recv().await.unwrap().pods), ["web-n"]);
    let start = tokio::time::Instant::now();
    // Poll 2 fails and poll 3 is unchanged: neither sends; poll 4 brings the list.
    assert_eq!(names(&rx.recv().await.unwrap().pods), ["a-n", "b-n"]);
    assert_eq!(tokio::time::Instant::now() - start, period * 3);
    assert_eq!(fetcher.requests().len(), 4);
    cancel.cancel();
    task.await.unwrap();
}
