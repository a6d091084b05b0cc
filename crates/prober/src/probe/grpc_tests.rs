#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;

use futures::stream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::{HeaderMap, Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;
use tokio::net::TcpListener;

use super::*;

type Body = StreamBody<stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, Infallible>>>>;

/// A gRPC server answering Health/Check with `status` for service "ok-svc" and
/// NOT_SERVING for any other; other methods are Unimplemented.
async fn handle(req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    let ua = req
        .headers()
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let mut trailers = HeaderMap::new();
    let mut frames = Vec::new();
    if path == CHECK && ua.starts_with("kube-probe/1.35") {
        let asked = HealthCheckRequest::decode(&body[5..]).unwrap();
        let status = if asked.service == "ok-svc" {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        };
        let msg = HealthCheckResponse {
            status: status as i32,
        }
        .encode_to_vec();
        let mut data = vec![0_u8];
        data.extend_from_slice(&u32::try_from(msg.len()).unwrap().to_be_bytes());
        data.extend_from_slice(&msg);
        frames.push(Ok(Frame::data(Bytes::from(data))));
        trailers.insert("grpc-status", "0".parse().unwrap());
    } else {
        trailers.insert("grpc-status", "12".parse().unwrap());
        trailers.insert("grpc-message", "unknown service".parse().unwrap());
    }
    frames.push(Ok(Frame::trailers(trailers)));
    Ok(Response::builder()
        .header("content-type", "application/grpc")
        .body(StreamBody::new(stream::iter(frames)))
        .unwrap())
}

async fn serve(path_ok: bool) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (s, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |mut req: Request<Incoming>| {
                    if !path_ok {
                        *req.uri_mut() = "/other.Service/Check".parse().unwrap();
                    }
                    handle(req)
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    port
}

const T: Duration = Duration::from_secs(2);

#[tokio::test]
async fn serving_is_success_anything_else_a_failure() {
    let port = serve(true).await;
    let ok = probe("127.0.0.1", "ok-svc", port, T).await.unwrap();
    assert_eq!(ok, Probed::new(Outcome::Success, "service healthy"));
    let down = probe("127.0.0.1", "", port, T).await.unwrap();
    assert_eq!(
        down,
        Probed::new(
            Outcome::Failure,
            "service unhealthy (responded with \"NOT_SERVING\")"
        )
    );
}

#[tokio::test]
async fn unimplemented_and_unreachable_servers_fail() {
    let port = serve(false).await;
    let out = probe("127.0.0.1", "", port, T).await.unwrap();
    assert_eq!(
        out,
        Probed::new(
            Outcome::Failure,
            "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service"
        )
    );
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let out = probe("127.0.0.1", "", port, T).await.unwrap();
    assert_eq!(out.outcome, Outcome::Failure);
    assert!(
        out.output
            .starts_with("error: failed to connect service at")
            || out.output.starts_with("timeout:"),
        "{out:?}"
    );
}
