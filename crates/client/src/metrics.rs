//! `rest_client_requests_total{code,method,host}` (client-go `rest/request.go`
//! `updateURLMetrics` through component-base `prometheus/restclient`): every request a
//! client sends, by HTTP status code, or `<error>` when no response came.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response};
use tower::{Layer, Service};

/// The layer, for one client whose server is `host` (`host:port`, the URL's host).
#[derive(Debug, Clone)]
pub struct RequestMetricsLayer {
    host: String,
}

impl RequestMetricsLayer {
    /// Counts the requests sent to `host`.
    pub fn new(host: impl Into<String>) -> Self {
        Self { host: host.into() }
    }
}

impl<S> Layer<S> for RequestMetricsLayer {
    type Service = RequestMetrics<S>;

    fn layer(&self, inner: S) -> RequestMetrics<S> {
        RequestMetrics {
            inner,
            host: self.host.clone(),
        }
    }
}

/// The service of [`RequestMetricsLayer`].
#[derive(Debug, Clone)]
pub struct RequestMetrics<S> {
    inner: S,
    host: String,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, R> Service<Request<B>> for RequestMetrics<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<R>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let method = req.method().as_str().to_string();
        let host = self.host.clone();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let out = fut.await;
            let code = match &out {
                Ok(resp) => resp.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            kubelet_metrics::with(|m| {
                m.rest_client_requests
                    .with_label_values(&[&code, &method, &host])
                    .inc();
            });
            out
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    #[tokio::test]
    async fn requests_are_counted_by_code_method_and_host() {
        let host = "127.0.0.1:16443-metrics-test";
        let counter = |code: &str, method: &str| {
            kubelet_metrics::kubelet()
                .unwrap()
                .rest_client_requests
                .with_label_values(&[code, method, host])
                .get()
        };
        let svc = RequestMetricsLayer::new(host).layer(tower::service_fn(
            |req: Request<()>| async move {
                if req.uri().path() == "/fail" {
                    return Err("connection refused");
                }
                Ok(Response::builder().status(201).body(()).unwrap())
            },
        ));
        let req = |path: &str| Request::post(path).body(()).unwrap();
        svc.clone().oneshot(req("/api/v1/nodes")).await.unwrap();
        svc.clone().oneshot(req("/api/v1/nodes")).await.unwrap();
        svc.oneshot(req("/fail")).await.unwrap_err();
        assert_eq!(counter("201", "POST"), 2.0);
        assert_eq!(counter("<error>", "POST"), 1.0);
    }
}
