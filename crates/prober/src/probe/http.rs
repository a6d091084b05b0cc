//! HTTP probe (upstream `pkg/probe/http/http.go` and `request.go`).
//!
//! As upstream's prober transport: one connection per probe with keep-alive off
//! (`Connection: close`), the probe dialer (`SO_LINGER` 1 s), no proxy, no compression, TLS
//! without certificate verification, the whole exchange (redirects and body included) within
//! the probe timeout. Redirects are followed while they stay on the same host name (at most
//! 10); a redirect to another host ends the probe with the redirect response, which is a
//! success with a warning. At most 10 KiB of the body is read.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::{Container, HTTPGetAction};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use kubelet_runtime::lifecycle::{HttpHookFuture, HttpHookOutcome, LifecycleHttpClient};

use super::{
    Outcome, ProbeError, ProbeOutput, Probed, join_host_port, probe_connect, resolve_container_port,
};

/// At most this much of the response body is read (upstream `maxRespBodyLength`, 10 KiB).
pub const MAX_RESP_BODY_LENGTH: usize = 10 * 1024;
/// Redirects followed before the probe fails (Go's `http.Client` limit).
const MAX_REDIRECTS: usize = 10;
/// `kube-<purpose>/<major>.<minor>` of kubelet 1.35.
const KUBE_VERSION: &str = "1.35";

/// `http` or `https`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// TLS, certificate not verified.
    Https,
}

impl Scheme {
    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// One probe request: the URL and the headers (upstream `*http.Request`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeRequest {
    /// URL scheme.
    pub scheme: Scheme,
    /// URL host (an IP or a name, without brackets).
    pub host: String,
    /// URL port.
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
    /// Headers in order (names as given).
    pub headers: Vec<(String, String)>,
}

impl ProbeRequest {
    /// The URL as Go prints it.
    pub fn url(&self) -> String {
        format!(
            "{}://{}{}",
            self.scheme.as_str(),
            join_host_port(&self.host, self.port),
            self.path
        )
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn normalize_path(path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    }
}

/// Builds the request of an `httpGet` action (upstream `NewRequestForHTTPGetAction`): scheme
/// default `http`, host default the pod IP, port by number or name, the headers plus
/// `User-Agent: kube-<purpose>/1.35` and `Accept: */*` unless given (an empty `Accept` removes
/// it).
pub fn new_request_for_http_get_action(
    get: &HTTPGetAction,
    container: &Container,
    pod_ip: &str,
    user_agent_fragment: &str,
) -> Result<ProbeRequest, ProbeError> {
    let scheme = match get
        .scheme
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("" | "http") => Scheme::Http,
        Some("https") => Scheme::Https,
        Some(other) => {
            return Err(ProbeError(format!("unsupported protocol scheme {other:?}")));
        }
    };
    let host = get
        .host
        .clone()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| pod_ip.to_string());
    let port = resolve_container_port(&get.port, container)?;
    let mut headers: Vec<(String, String)> = get
        .http_headers
        .iter()
        .flatten()
        .map(|h| (h.name.clone(), h.value.clone()))
        .collect();
    let has = |headers: &[(String, String)], name: &str| {
        headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name))
    };
    if !has(&headers, "User-Agent") {
        headers.push((
            "User-Agent".into(),
            format!("kube-{user_agent_fragment}/{KUBE_VERSION}"),
        ));
    }
    if !has(&headers, "Accept") {
        headers.push(("Accept".into(), "*/*".into()));
    } else if headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("Accept"))
        .is_some_and(|(_, v)| v.is_empty())
    {
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case("Accept"));
    }
    Ok(ProbeRequest {
        scheme,
        host,
        port,
        path: normalize_path(get.path.as_deref().unwrap_or("")),
        headers,
    })
}

/// Accepts any server certificate (upstream `tls.Config{InsecureSkipVerify: true}`).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The HTTP prober (upstream `httpProber`): built once, shared by every worker.
#[derive(Clone)]
pub struct HttpProber {
    tls: tokio_rustls::TlsConnector,
}

impl std::fmt::Debug for HttpProber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProber").finish_non_exhaustive()
    }
}

/// The TLS client configuration could not be built.
#[derive(Debug, thiserror::Error)]
#[error("probe TLS configuration: {0}")]
pub struct TlsConfigError(#[from] rustls::Error);

impl HttpProber {
    /// A prober that does not follow redirects to other hosts (upstream
    /// `New(followNonLocalRedirects=false)`, what the kubelet uses).
    pub fn new() -> Result<Self, TlsConfigError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth();
        Ok(Self {
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
        })
    }

    /// Runs the probe within `timeout` (upstream `Probe` + `DoHTTPProbe`).
    pub async fn probe(&self, req: &ProbeRequest, timeout: Duration) -> ProbeOutput {
        match tokio::time::timeout(timeout, self.follow(req)).await {
            Ok(out) => out,
            Err(_) => Ok(Probed::new(
                Outcome::Failure,
                format!(
                    "Get {:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                    req.url()
                ),
            )),
        }
    }

    async fn follow(&self, first: &ProbeRequest) -> ProbeOutput {
        match self.follow_response(first).await {
            Ok(resp) => evaluate(resp).await,
            Err(message) => Ok(Probed::new(Outcome::Failure, message)),
        }
    }

    /// Sends `first` and follows same-host redirects (upstream `RedirectChecker(false)`);
    /// `Err` is the failure message.
    async fn follow_response(
        &self,
        first: &ProbeRequest,
    ) -> Result<Response<hyper::body::Incoming>, String> {
        let mut current = first.clone();
        let mut sent = 0;
        loop {
            let resp = self
                .send(&current)
                .await
                .map_err(|e| format!("Get {:?}: {e}", current.url()))?;
            sent += 1;
            let location = is_redirect(resp.status())
                .then(|| resp.headers().get(hyper::header::LOCATION))
                .flatten()
                .and_then(|l| l.to_str().ok())
                .map(str::to_string);
            let Some(location) = location else {
                return Ok(resp);
            };
            let next = resolve_redirect(&current, &location)?;
            if next.host != first.host {
                // `http.ErrUseLastResponse`: the redirect response is the answer.
                return Ok(resp);
            }
            if sent >= MAX_REDIRECTS {
                return Err(format!(
                    "Get {:?}: stopped after {MAX_REDIRECTS} redirects",
                    next.url()
                ));
            }
            current = next;
        }
    }

    /// A lifecycle hook's GET (upstream `runHTTPHandler` with the kubelet's
    /// `insecureContainerLifecycleHTTPClient`, which has this prober's transport): any
    /// response is a success, its status code ignored and at most 10 KiB of its body read
    /// (`discardHTTPRespBody`); an HTTPS request that got a plain HTTP answer is sent again
    /// over HTTP without its `Authorization` header.
    pub async fn lifecycle_get(&self, req: &ProbeRequest) -> Result<HttpHookOutcome, String> {
        match self.follow_response(req).await {
            Ok(resp) => {
                discard_body(resp).await;
                Ok(HttpHookOutcome::Sent)
            }
            Err(e) if req.scheme == Scheme::Https && e.contains(HTTP_RESPONSE_TO_HTTPS) => {
                let mut plain = req.clone();
                plain.scheme = Scheme::Http;
                plain
                    .headers
                    .retain(|(k, _)| !k.eq_ignore_ascii_case("Authorization"));
                match self.follow_response(&plain).await {
                    Ok(resp) => {
                        discard_body(resp).await;
                        Ok(HttpHookOutcome::FellBackToHttp(join_host_port(
                            &plain.host,
                            plain.port,
                        )))
                    }
                    // Upstream keeps the first error when the fallback fails too.
                    Err(_) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    async fn send(&self, req: &ProbeRequest) -> Result<Response<hyper::body::Incoming>, String> {
        let authority = join_host_port(&req.host, req.port);
        // The caller's timeout covers the whole exchange, the dial included.
        let tcp = probe_connect(&authority).await?;
        let mut builder = Request::get(req.path.as_str()).header(
            hyper::header::HOST,
            req.header("Host").unwrap_or(authority.as_str()),
        );
        for (k, v) in req
            .headers
            .iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("Host"))
        {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let request = builder
            .header(hyper::header::CONNECTION, "close")
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        match req.scheme {
            Scheme::Http => send_on(TokioIo::new(tcp), request).await,
            Scheme::Https => {
                let name = ServerName::try_from(req.host.clone()).map_err(|e| e.to_string())?;
                let tls = self.tls.connect(name, tcp).await.map_err(tls_error)?;
                send_on(TokioIo::new(tls), request).await
            }
        }
    }
}

async fn send_on<I>(
    io: I,
    request: Request<Empty<Bytes>>,
) -> Result<Response<hyper::body::Incoming>, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    // The connection ends with the response (`Connection: close`) or when the probe drops it.
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())
}

impl LifecycleHttpClient for HttpProber {
    fn get<'a>(
        &'a self,
        action: &'a HTTPGetAction,
        container: &'a Container,
        pod_ip: &'a str,
    ) -> HttpHookFuture<'a> {
        Box::pin(async move {
            let req = new_request_for_http_get_action(action, container, pod_ip, "lifecycle")
                .map_err(|e| e.0)?;
            self.lifecycle_get(&req).await
        })
    }
}

/// Go's `tls` error when the first record the server sends is not TLS but HTTP.
const HTTP_RESPONSE_TO_HTTPS: &str = "server gave HTTP response to HTTPS client";

/// A failed TLS handshake as Go words it: a server answering in plain text (a record of
/// no TLS content type, as `HTTP/1.1 ...` is) gets Go's `RecordHeaderError` message.
fn tls_error(e: std::io::Error) -> String {
    let plain_text = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some_and(|tls| {
            matches!(
                tls,
                rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)
            )
        });
    if plain_text {
        format!("http: {HTTP_RESPONSE_TO_HTTPS}")
    } else {
        format!("remote error: tls: {e}")
    }
}

/// Reads (at most [`MAX_RESP_BODY_LENGTH`] of) the body and drops the response.
async fn discard_body(resp: Response<hyper::body::Incoming>) {
    let mut body = resp.into_body();
    let mut read = 0;
    while read < MAX_RESP_BODY_LENGTH {
        match body.frame().await {
            Some(Ok(frame)) => read += frame.data_ref().map_or(0, |c| c.len()),
            Some(Err(_)) | None => break,
        }
    }
}

fn is_redirect(status: StatusCode) -> bool {
    matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
}

/// The request a `Location` leads to: absolute, scheme-relative, absolute-path or relative
/// to the current path; headers are kept, a `Host` override only for a relative location (as
/// Go's client does).
fn resolve_redirect(current: &ProbeRequest, location: &str) -> Result<ProbeRequest, String> {
    let mut next = current.clone();
    let absolute = location
        .strip_prefix("http://")
        .map(|rest| (Scheme::Http, rest))
        .or_else(|| {
            location
                .strip_prefix("https://")
                .map(|rest| (Scheme::Https, rest))
        })
        .or_else(|| {
            location
                .strip_prefix("//")
                .map(|rest| (current.scheme, rest))
        });
    match absolute {
        Some((scheme, rest)) => {
            let (authority, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
            let uri: hyper::Uri = format!("{}://{authority}/", scheme.as_str())
                .parse()
                .map_err(|e| format!("failed to parse Location header {location:?}: {e}"))?;
            next.scheme = scheme;
            next.host = uri
                .host()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string();
            next.port = uri.port_u16().unwrap_or(match scheme {
                Scheme::Http => 80,
                Scheme::Https => 443,
            });
            next.path = normalize_path(path);
            next.headers
                .retain(|(k, _)| !k.eq_ignore_ascii_case("Host"));
        }
        None if location.starts_with('/') => next.path = location.to_string(),
        None => {
            let base = current.path.split('?').next().unwrap_or("/");
            let dir = &base[..=base.rfind('/').unwrap_or(0)];
            next.path = format!("{dir}{location}");
        }
    }
    Ok(next)
}

/// `DoHTTPProbe` on a response: 2xx success with the body, 3xx (a redirect not followed) a
/// warning, anything else a failure with the status code.
async fn evaluate(resp: Response<hyper::body::Incoming>) -> ProbeOutput {
    let code = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut data: Vec<u8> = Vec::new();
    while data.len() < MAX_RESP_BODY_LENGTH {
        match body.frame().await {
            None => break,
            Some(Ok(frame)) => {
                if let Some(chunk) = frame.data_ref() {
                    data.extend_from_slice(chunk);
                }
            }
            Some(Err(e)) => return Err(ProbeError(e.to_string())),
        }
    }
    data.truncate(MAX_RESP_BODY_LENGTH);
    let body = String::from_utf8_lossy(&data).into_owned();
    Ok(match code {
        200..=299 => Probed::new(Outcome::Success, body),
        300..=399 => Probed::new(
            Outcome::Warning,
            format!("Probe terminated redirects, Response body: {body}"),
        ),
        _ => Probed::new(
            Outcome::Failure,
            format!("HTTP probe failed with statuscode: {code}"),
        ),
    })
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
