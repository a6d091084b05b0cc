//! The HTTP source (`pkg/kubelet/config/http.go`): `staticPodURL` polled every
//! `httpCheckFrequency` with the `staticPodURLHeader` headers. The body is a single pod or
//! a `PodList`.
//!
//! As upstream:
//! - any failure (connection, non-200 status, body of 10 MiB or more, undecodable or invalid
//!   pods) sends nothing, so the previous pods stay;
//! - an empty `200` body sends an empty set (the source counts as seen) and is reported;
//! - a body identical to the last one is not decoded again, so a bad body is reported once;
//! - failures are logged at warning level three times, then at debug level until a success.

mod client;

pub use client::{FakeFetcher, FetchError, HTTP_TIMEOUT, HttpFetcher, HttpResponse, HyperFetcher};

use crate::file::MAX_CONFIG_LENGTH;
use crate::static_pod::{ManifestError, ManifestOrigin, StaticPodOptions, decode_static_pods};
use crate::types::SourceUpdate;
use k8s_openapi::api::core::v1::Pod;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Why a poll produced no pods.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UrlError {
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error("{url}: {status}")]
    Status { url: String, status: String },
    #[error("zero-length data received from {0}")]
    Empty(String),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
}

/// The outcome of one poll.
#[derive(Debug, Clone, PartialEq)]
pub enum Poll {
    /// New content: send this set.
    Pods(Vec<Pod>),
    /// Same body as last time: nothing to do.
    Unchanged,
    /// The poll failed; `send_empty` is set for an empty body, which upstream turns into an
    /// empty set so that the source counts as seen.
    Failed { err: UrlError, send_empty: bool },
}

/// The state of the HTTP source between polls (upstream `sourceURL`).
pub struct SourceUrl<F: HttpFetcher> {
    url: String,
    headers: Vec<(String, String)>,
    node_name: String,
    options: StaticPodOptions,
    fetcher: F,
    limit: usize,
    data: Option<Vec<u8>>,
    failure_logs: u32,
}

impl<F: HttpFetcher> SourceUrl<F> {
    pub fn new(
        url: impl Into<String>,
        headers: Vec<(String, String)>,
        node_name: impl Into<String>,
        fetcher: F,
    ) -> Self {
        SourceUrl {
            url: url.into(),
            headers,
            node_name: node_name.into(),
            options: StaticPodOptions::default(),
            fetcher,
            limit: MAX_CONFIG_LENGTH,
            data: None,
            failure_logs: 0,
        }
    }

    /// Overrides the body size limit (10 MiB by default).
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Upstream `extractFromURL`.
    pub async fn extract_from_url(&mut self) -> Poll {
        let resp = match self.fetcher.get(&self.url, &self.headers, self.limit).await {
            Ok(r) => r,
            Err(e) => return failed(e.into()),
        };
        if resp.status != 200 {
            let err = UrlError::Status {
                url: self.url.clone(),
                status: resp.status_text,
            };
            return failed(err);
        }
        if resp.body.is_empty() {
            return Poll::Failed {
                err: UrlError::Empty(self.url.clone()),
                send_empty: true,
            };
        }
        if self.data.as_ref() == Some(&resp.body) {
            return Poll::Unchanged;
        }
        let origin = ManifestOrigin::Url(self.url.clone());
        let decoded = decode_static_pods(&resp.body, &origin, &self.node_name, self.options);
        self.data = Some(resp.body);
        match decoded {
            Ok(pods) => Poll::Pods(pods),
            Err(e) => failed(e.into()),
        }
    }

    /// One poll with upstream's logging (`run`); returns the set to send, if any.
    pub async fn run_once(&mut self) -> Option<Vec<Pod>> {
        match self.extract_from_url().await {
            Poll::Pods(pods) => {
                self.succeeded();
                Some(pods)
            }
            Poll::Unchanged => {
                self.succeeded();
                None
            }
            Poll::Failed { err, send_empty } => {
                self.log_failure(&err);
                send_empty.then(Vec::new)
            }
        }
    }

    fn succeeded(&mut self) {
        if self.failure_logs > 0 {
            tracing::info!(url = %self.url, "Successfully read pods from URL");
            self.failure_logs = 0;
        }
    }

    fn log_failure(&mut self, err: &UrlError) {
        match self.failure_logs {
            0..=2 => tracing::warn!(url = %self.url, %err, "Failed to read pods from URL"),
            3 => {
                tracing::warn!(url = %self.url, %err, "Failed to read pods from URL. Dropping verbosity of this message to debug")
            }
            _ => tracing::debug!(url = %self.url, %err, "Failed to read pods from URL"),
        }
        self.failure_logs = self.failure_logs.saturating_add(1);
    }
}

fn failed(err: UrlError) -> Poll {
    Poll::Failed {
        err,
        send_empty: false,
    }
}

/// Starts the HTTP source with a [`HyperFetcher`]; it sends snapshots on `updates` until
/// `cancel` fires or the receiver is dropped.
pub fn start_http_source(
    url: impl Into<String>,
    headers: Vec<(String, String)>,
    period: Duration,
    node_name: impl Into<String>,
    updates: mpsc::Sender<SourceUpdate>,
    cancel: CancellationToken,
) -> JoinHandle<()> {
    let source = SourceUrl::new(url, headers, node_name, HyperFetcher::default());
    tokio::spawn(run_http_source(source, period, updates, cancel))
}

/// Polls now and then every `period` (`wait.Until`).
pub async fn run_http_source<F: HttpFetcher>(
    mut source: SourceUrl<F>,
    period: Duration,
    updates: mpsc::Sender<SourceUpdate>,
    cancel: CancellationToken,
) {
    tracing::info!(url = %source.url, "Watching URL");
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let polled = tokio::select! {
            _ = cancel.cancelled() => return,
            polled = source.run_once() => polled,
        };
        let Some(pods) = polled else { continue };
        tokio::select! {
            _ = cancel.cancelled() => return,
            sent = updates.send(SourceUpdate { pods }) => if sent.is_err() { return },
        }
    }
}

#[cfg(test)]
mod tests;
