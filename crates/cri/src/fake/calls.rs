//! Call recording, error injection and delays shared by the fakes (upstream `Called`,
//! `InjectError`/`popError` in `k8s.io/cri-api/pkg/apis/testing`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::error::{CriError, CriResult};

/// Endpoint name the fakes put in their errors.
pub const FAKE_ENDPOINT: &str = "fake";

/// Recorded calls and queued behaviour for one fake.
#[derive(Debug, Default)]
pub struct FakeCalls {
    /// CRI method names in call order (`"RunPodSandbox"`, `"PullImage"`, ...).
    pub called: Vec<String>,
    /// One-shot errors per method, returned by the next calls in order.
    pub errors: HashMap<String, VecDeque<CriError>>,
    /// Methods that always answer `Unimplemented`.
    pub unimplemented: HashSet<String>,
    /// Methods that sleep this long before answering (for deadline tests).
    pub delays: HashMap<String, Duration>,
    /// Calls whose future was dropped before they answered (the caller hit a deadline or
    /// was cancelled), in order. Shared with the in-flight calls, which record themselves.
    pub abandoned: Arc<Mutex<Vec<String>>>,
}

/// A call that has begun: its delay, its answer, and a guard recording it as abandoned
/// when it is dropped before [`settle`] finished.
pub(crate) struct Begun {
    method: &'static str,
    delay: Option<Duration>,
    err: Option<CriError>,
    abandoned: Arc<Mutex<Vec<String>>>,
}

/// Records the call as abandoned unless disarmed.
struct AbandonGuard<'a>(Option<&'a Begun>);

impl Drop for AbandonGuard<'_> {
    fn drop(&mut self) {
        if let Some(b) = self.0 {
            b.abandoned
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(b.method.to_owned());
        }
    }
}

impl FakeCalls {
    /// Records `method` and returns its delay and the error to answer with, if any.
    pub(crate) fn begin(&mut self, method: &'static str) -> Begun {
        self.called.push(method.to_owned());
        let delay = self.delays.get(method).copied();
        let err = if self.unimplemented.contains(method) {
            let msg = format!("unknown method {method} for service runtime.v1");
            Some(CriError::status(
                FAKE_ENDPOINT,
                method,
                tonic::Code::Unimplemented,
                msg,
            ))
        } else {
            self.errors.get_mut(method).and_then(VecDeque::pop_front)
        };
        Begun {
            method,
            delay,
            err,
            abandoned: self.abandoned.clone(),
        }
    }

    /// Names of the calls dropped before they answered.
    pub fn abandoned(&self) -> Vec<String> {
        self.abandoned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Queues `err` as the answer of the next call of `method`.
    pub(crate) fn inject_error(&mut self, method: &str, err: CriError) {
        self.errors
            .entry(method.to_owned())
            .or_default()
            .push_back(err);
    }
}

/// Sleeps the delay [`FakeCalls::begin`] returned, then answers its injected error, if any.
/// Dropped while sleeping, the call is recorded in [`FakeCalls::abandoned`].
pub(crate) async fn settle(begun: Begun) -> CriResult<()> {
    if let Some(d) = begun.delay {
        let mut guard = AbandonGuard(Some(&begun));
        tokio::time::sleep(d).await;
        guard.0 = None;
    }
    begun.err.map_or(Ok(()), Err)
}

/// Error with `code` from a fake `method`.
pub(crate) fn fake_err(
    method: &'static str,
    code: tonic::Code,
    message: impl Into<String>,
) -> CriError {
    CriError::status(FAKE_ENDPOINT, method, code, message)
}

/// `NotFound` error from a fake `method`.
pub(crate) fn not_found(method: &'static str, what: &str, id: &str) -> CriError {
    fake_err(
        method,
        tonic::Code::NotFound,
        format!("{what} {id:?} not found"),
    )
}
