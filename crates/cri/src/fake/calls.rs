//! Call recording, error injection and delays shared by the fakes (upstream `Called`,
//! `InjectError`/`popError` in `k8s.io/cri-api/pkg/apis/testing`).

use std::collections::{HashMap, HashSet, VecDeque};
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
}

impl FakeCalls {
    /// Records `method` and returns its delay and the error to answer with, if any.
    pub(crate) fn begin(&mut self, method: &'static str) -> (Option<Duration>, Option<CriError>) {
        self.called.push(method.to_owned());
        let delay = self.delays.get(method).copied();
        if self.unimplemented.contains(method) {
            let msg = format!("unknown method {method} for service runtime.v1");
            let err = CriError::status(FAKE_ENDPOINT, method, tonic::Code::Unimplemented, msg);
            return (delay, Some(err));
        }
        let err = self.errors.get_mut(method).and_then(VecDeque::pop_front);
        (delay, err)
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
pub(crate) async fn settle((delay, err): (Option<Duration>, Option<CriError>)) -> CriResult<()> {
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    err.map_or(Ok(()), Err)
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
