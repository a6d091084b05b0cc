//! `EventSink` (client-go `tools/record/event.go`, `kubernetes/typed/core/v1/event_expansion.go`
//! `EventSinkImpl`): where the broadcaster writes events. [`KubeEventSink`] posts to
//! `/api/v1/namespaces/<ns>/events` with the kubelet's event client; [`FakeEventSink`]
//! records the calls and answers from a script.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, Patch, PatchParams, PostParams};

/// `metav1.StatusReason` of an object that exists.
pub const REASON_ALREADY_EXISTS: &str = "AlreadyExists";
/// `v1.NamespaceTerminatingCause`.
pub const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

/// Why a write failed, in the classes `recordEvent` tells apart.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SinkError {
    /// `*errors.StatusError`: the server answered with a failure status. Not retried
    /// (a 404 on a patch turns into a create).
    #[error("{message} (code {code}, reason {reason:?})")]
    Status {
        code: u16,
        reason: String,
        message: String,
        /// `details.causes[].reason`.
        causes: Vec<String>,
    },
    /// `*restclient.RequestConstructionError`: the request cannot be built. Not retried.
    #[error("unable to construct request: {0}")]
    RequestConstruction(String),
    /// Transport errors and unexpected answers: retried.
    #[error("{0}")]
    Transport(String),
}

impl SinkError {
    /// `util.IsKeyNotFoundError`.
    pub fn is_not_found(&self) -> bool {
        matches!(self, SinkError::Status { code: 404, .. })
    }

    /// `errors.IsAlreadyExists(err) || errors.HasStatusCause(err, NamespaceTerminatingCause)`:
    /// rejections logged at V(5) only.
    pub fn is_expected_rejection(&self) -> bool {
        match self {
            SinkError::Status { reason, causes, .. } => {
                reason == REASON_ALREADY_EXISTS
                    || causes.iter().any(|c| c == NAMESPACE_TERMINATING_CAUSE)
            }
            _ => false,
        }
    }
}

impl From<kube::Error> for SinkError {
    fn from(err: kube::Error) -> Self {
        match err {
            kube::Error::Api(status) => SinkError::Status {
                code: status.code,
                reason: status.reason.clone(),
                message: status.message.clone(),
                causes: status
                    .details
                    .as_ref()
                    .map(|d| d.causes.iter().map(|c| c.reason.clone()).collect())
                    .unwrap_or_default(),
            },
            e @ (kube::Error::BuildRequest(_) | kube::Error::HttpError(_)) => {
                SinkError::RequestConstruction(e.to_string())
            }
            e => SinkError::Transport(e.to_string()),
        }
    }
}

/// `record.EventSink` without `Update` (the broadcaster never calls it).
#[async_trait]
pub trait EventSink: Send + Sync + std::fmt::Debug {
    /// Create `event` in its namespace.
    async fn create(&self, event: &Event) -> Result<Event, SinkError>;
    /// Strategic-merge-patch the existing `event` (by name, in its namespace) with `patch`.
    async fn patch(&self, event: &Event, patch: &serde_json::Value) -> Result<Event, SinkError>;
}

/// The sink of `makeEventRecorder`: `EventSinkImpl{Interface: EventClient.Events("")}`.
#[derive(Clone)]
pub struct KubeEventSink {
    client: kube::Client,
}

impl std::fmt::Debug for KubeEventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeEventSink").finish_non_exhaustive()
    }
}

impl KubeEventSink {
    /// A sink writing through `client` (the kubelet's event client).
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }

    fn api(&self, event: &Event) -> Result<Api<Event>, SinkError> {
        let ns = event
            .metadata
            .namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .ok_or_else(|| SinkError::RequestConstruction("event has no namespace".into()))?;
        Ok(Api::namespaced(self.client.clone(), ns))
    }
}

#[async_trait]
impl EventSink for KubeEventSink {
    async fn create(&self, event: &Event) -> Result<Event, SinkError> {
        Ok(self
            .api(event)?
            .create(&PostParams::default(), event)
            .await?)
    }

    async fn patch(&self, event: &Event, patch: &serde_json::Value) -> Result<Event, SinkError> {
        let name = event
            .metadata
            .name
            .as_deref()
            .ok_or_else(|| SinkError::RequestConstruction("event has no name".into()))?;
        Ok(self
            .api(event)?
            .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await?)
    }
}

/// One call a [`FakeEventSink`] saw.
#[derive(Clone, Debug, PartialEq)]
pub enum SinkCall {
    Create(Event),
    Patch(Event, serde_json::Value),
}

/// A recording sink. Calls are answered from the scripted errors first (in order), then
/// with success: the event as written with a resourceVersion (a patch applies `count`,
/// `lastTimestamp` and `message` to the event it names).
#[derive(Debug, Default)]
pub struct FakeEventSink {
    calls: Mutex<Vec<SinkCall>>,
    errors: Mutex<VecDeque<SinkError>>,
}

impl FakeEventSink {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next calls fail with `errors`, in order.
    pub fn fail_next(&self, errors: impl IntoIterator<Item = SinkError>) {
        self.errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(errors);
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<SinkCall> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, call: SinkCall) -> Result<usize, SinkError> {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.push(call);
        let n = calls.len();
        match self
            .errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
        {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }
}

#[async_trait]
impl EventSink for FakeEventSink {
    async fn create(&self, event: &Event) -> Result<Event, SinkError> {
        let n = self.record(SinkCall::Create(event.clone()))?;
        let mut written = event.clone();
        written.metadata.resource_version = Some(n.to_string());
        Ok(written)
    }

    async fn patch(&self, event: &Event, patch: &serde_json::Value) -> Result<Event, SinkError> {
        let n = self.record(SinkCall::Patch(event.clone(), patch.clone()))?;
        let mut written = event.clone();
        written.metadata.resource_version = Some(n.to_string());
        Ok(written)
    }
}
