//! HTTP GET behind [`HttpFetcher`]: [`HyperFetcher`] (hyper 1 + hyper-util; `https://`
//! through hyper-rustls with the `ring` provider and the system's root certificates, like
//! Go's default transport) and [`FakeFetcher`] for unit tests.

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

/// Upstream's client timeout for the static pod URL (`http.Client{Timeout: 10 * time.Second}`).
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

/// A response whose body was read up to the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    /// Status line text, e.g. `500 Internal Server Error`.
    pub status_text: String,
    pub body: Vec<u8>,
}

/// Why a GET failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("invalid URL {url:?}: {err}")]
    InvalidUrl { url: String, err: String },
    #[error("unsupported URL scheme in {0:?}: only http:// and https:// are supported")]
    UnsupportedScheme(String),
    #[error("invalid header {name:?}: {err}")]
    InvalidHeader { name: String, err: String },
    #[error("{url}: request failed: {err}")]
    Request { url: String, err: String },
    #[error("{url}: no complete response within {timeout:?}")]
    Timeout { url: String, timeout: Duration },
    #[error("{url}: response body reached the limit of {limit} bytes")]
    TooLarge { url: String, limit: usize },
}

/// Performs HTTP GETs.
pub trait HttpFetcher: Send + Sync + 'static {
    /// GETs `url` with `headers`, reading at most `limit` bytes of body (a body of `limit`
    /// bytes or more is [`FetchError::TooLarge`], like upstream's `ReadAtMost`).
    fn get(
        &self,
        url: &str,
        headers: &[(String, String)],
        limit: usize,
    ) -> impl Future<Output = Result<HttpResponse, FetchError>> + Send;
}

impl<T: HttpFetcher> HttpFetcher for std::sync::Arc<T> {
    fn get(
        &self,
        url: &str,
        headers: &[(String, String)],
        limit: usize,
    ) -> impl Future<Output = Result<HttpResponse, FetchError>> + Send {
        T::get(self, url, headers, limit)
    }
}

/// A hyper client for `http://` and `https://` URLs.
#[derive(Clone)]
pub struct HyperFetcher {
    /// `Err` when TLS could not be set up; every request then fails with that message.
    client: Result<Client<HttpsConnector<HttpConnector>, Empty<Bytes>>, String>,
    timeout: Duration,
}

impl Default for HyperFetcher {
    fn default() -> Self {
        Self::new(HTTP_TIMEOUT)
    }
}

impl HyperFetcher {
    pub fn new(timeout: Duration) -> Self {
        let client = https_connector().map(|c| Client::builder(TokioExecutor::new()).build(c));
        HyperFetcher { client, timeout }
    }

    fn request(
        &self,
        url: &str,
        headers: &[(String, String)],
    ) -> Result<hyper::Request<Empty<Bytes>>, FetchError> {
        let uri: hyper::Uri =
            url.parse()
                .map_err(|e: hyper::http::uri::InvalidUri| FetchError::InvalidUrl {
                    url: url.to_string(),
                    err: e.to_string(),
                })?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) {
            return Err(FetchError::UnsupportedScheme(url.to_string()));
        }
        let mut req = hyper::Request::get(uri);
        for (name, value) in headers {
            let name_ok =
                hyper::header::HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string());
            let value_ok = hyper::header::HeaderValue::from_str(value).map_err(|e| e.to_string());
            match (name_ok, value_ok) {
                (Ok(n), Ok(v)) => req = req.header(n, v),
                (Err(err), _) | (_, Err(err)) => {
                    return Err(FetchError::InvalidHeader {
                        name: name.clone(),
                        err,
                    });
                }
            }
        }
        req.body(Empty::new()).map_err(|e| FetchError::InvalidUrl {
            url: url.to_string(),
            err: e.to_string(),
        })
    }

    async fn fetch(
        &self,
        url: &str,
        req: hyper::Request<Empty<Bytes>>,
        limit: usize,
    ) -> Result<HttpResponse, FetchError> {
        let request_err = |err: String| FetchError::Request {
            url: url.to_string(),
            err,
        };
        let client = self.client.as_ref().map_err(|e| request_err(e.clone()))?;
        let resp = client
            .request(req)
            .await
            .map_err(|e| request_err(error_chain(&e)))?;
        let status = resp.status();
        let status_text = format!(
            "{} {}",
            status.as_u16(),
            status.canonical_reason().unwrap_or_default()
        );
        let collected = Limited::new(resp.into_body(), limit).collect().await;
        let body = match collected {
            Ok(c) => c.to_bytes().to_vec(),
            Err(e)
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some() =>
            {
                return Err(FetchError::TooLarge {
                    url: url.to_string(),
                    limit,
                });
            }
            Err(e) => return Err(request_err(e.to_string())),
        };
        if body.len() >= limit {
            return Err(FetchError::TooLarge {
                url: url.to_string(),
                limit,
            });
        }
        Ok(HttpResponse {
            status: status.as_u16(),
            status_text,
            body,
        })
    }
}

/// TLS with the `ring` provider and the system's roots. Without usable roots, `https://`
/// requests fail certificate verification (a warning says why).
fn https_connector() -> Result<HttpsConnector<HttpConnector>, String> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let builder = match HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(provider.clone())
    {
        Ok(b) => b,
        Err(err) => {
            tracing::warn!(%err, "No usable root certificates: https static pod URLs will fail verification");
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| format!("TLS setup failed: {e}"))?
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
            HttpsConnectorBuilder::new().with_tls_config(config)
        }
    };
    Ok(builder.https_or_http().enable_http1().build())
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        cur = s.source();
    }
    msg
}

impl HttpFetcher for HyperFetcher {
    async fn get(
        &self,
        url: &str,
        headers: &[(String, String)],
        limit: usize,
    ) -> Result<HttpResponse, FetchError> {
        let req = self.request(url, headers)?;
        match tokio::time::timeout(self.timeout, self.fetch(url, req, limit)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout {
                url: url.to_string(),
                timeout: self.timeout,
            }),
        }
    }
}

/// A scripted fetcher: returns queued responses in order (the last one repeats) and records
/// the requests.
#[derive(Default)]
pub struct FakeFetcher {
    state: Mutex<FakeState>,
}

#[derive(Default)]
struct FakeState {
    script: VecDeque<Result<HttpResponse, FetchError>>,
    requests: Vec<(String, Vec<(String, String)>)>,
}

impl FakeFetcher {
    fn with<R>(&self, f: impl FnOnce(&mut FakeState) -> R) -> R {
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    /// Queues a response.
    pub fn push(&self, r: Result<HttpResponse, FetchError>) {
        self.with(|s| s.script.push_back(r));
    }

    /// Queues a `200 OK` with `body`.
    pub fn push_ok(&self, body: impl Into<Vec<u8>>) {
        self.push(Ok(HttpResponse {
            status: 200,
            status_text: "200 OK".into(),
            body: body.into(),
        }));
    }

    /// The requests made so far: (url, headers).
    pub fn requests(&self) -> Vec<(String, Vec<(String, String)>)> {
        self.with(|s| s.requests.clone())
    }
}

impl HttpFetcher for FakeFetcher {
    async fn get(
        &self,
        url: &str,
        headers: &[(String, String)],
        _limit: usize,
    ) -> Result<HttpResponse, FetchError> {
        self.with(|s| {
            s.requests.push((url.to_string(), headers.to_vec()));
            let next = if s.script.len() > 1 {
                s.script.pop_front()
            } else {
                s.script.front().cloned()
            };
            next.unwrap_or_else(|| {
                Err(FetchError::Request {
                    url: url.to_string(),
                    err: "no scripted response".into(),
                })
            })
        })
    }
}
