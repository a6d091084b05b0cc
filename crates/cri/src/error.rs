//! Typed CRI errors that keep the gRPC status code, the endpoint and the CRI method.
//!
//! Upstream callers do `status.FromError(err)` / `status.Code(err)` on whatever the CRI client
//! returned (k8s.io/cri-client/pkg/remote_runtime.go, pkg/kubelet/kuberuntime). Here the code is
//! a field, so callers check [`CriError::code`] (or [`CriError::is_not_found`] and friends)
//! without matching on strings.

use std::time::Duration;

/// Result of a CRI call.
pub type CriResult<T> = Result<T, CriError>;

/// Error from a CRI runtime or image service call.
#[derive(Debug, thiserror::Error)]
pub enum CriError {
    /// The endpoint string could not be used (bad scheme, empty, ...).
    #[error("invalid CRI endpoint {endpoint:?}: {reason}")]
    InvalidEndpoint {
        /// The endpoint as configured.
        endpoint: String,
        /// Why it was rejected.
        reason: String,
    },

    /// Nothing answered at the endpoint.
    #[error("failed to connect to {service} at {endpoint}: {reason}")]
    Connect {
        /// "container runtime" or "image service".
        service: &'static str,
        /// The endpoint as configured (e.g. `unix:///run/containerd/containerd.sock`).
        endpoint: String,
        /// The transport error, with its source chain flattened.
        reason: String,
    },

    /// The runtime answered with a non-OK gRPC status (or the per-call deadline passed).
    #[error("CRI {method} at {endpoint}: {}", rpc_error_string(*code, message))]
    Status {
        /// Endpoint the call went to.
        endpoint: String,
        /// CRI method name as in the proto (`RunPodSandbox`, `PullImage`, ...).
        method: &'static str,
        /// gRPC status code.
        code: tonic::Code,
        /// gRPC status message.
        message: String,
    },

    /// The runtime answered OK but the response lacks required fields
    /// (upstream `verifySandboxStatus`, `verifyContainerStatus`, "URL is not set", ...).
    #[error("CRI {method} at {endpoint}: invalid response: {reason}")]
    InvalidResponse {
        /// Endpoint the call went to.
        endpoint: String,
        /// CRI method name.
        method: &'static str,
        /// What is missing or wrong.
        reason: String,
    },

    /// The caller passed arguments the CRI client refuses before calling the runtime.
    #[error("CRI {method}: invalid request: {reason}")]
    InvalidRequest {
        /// CRI method name.
        method: &'static str,
        /// What is wrong.
        reason: String,
    },

    /// The runtime speaks a CRI API version other than v1.
    #[error(
        "container runtime at {endpoint} reports CRI API version {version:?}; kubelet-rs requires v1"
    )]
    UnsupportedApiVersion {
        /// Endpoint the handshake went to.
        endpoint: String,
        /// `VersionResponse.runtime_api_version`.
        version: String,
    },

    /// ExecSync ran past its timeout (upstream `ErrCommandTimedOut`).
    #[error("command timed out: {cmd:?} timed out after {timeout:?}")]
    CommandTimedOut {
        /// The command, joined with spaces.
        cmd: String,
        /// The ExecSync timeout.
        timeout: Duration,
    },

    /// RuntimeConfig returned a cgroup driver this kubelet does not know.
    #[error("runtime returned an unknown cgroup driver {0}")]
    UnknownCgroupDriver(i32),

    /// The fake CRI server or a server adapter failed (bind, serve).
    #[error("CRI server at {path}: {reason}")]
    Serve {
        /// Socket path.
        path: String,
        /// What failed.
        reason: String,
    },
}

impl CriError {
    /// Builds a [`CriError::Status`].
    pub fn status(
        endpoint: impl Into<String>,
        method: &'static str,
        code: tonic::Code,
        message: impl Into<String>,
    ) -> Self {
        CriError::Status {
            endpoint: endpoint.into(),
            method,
            code,
            message: message.into(),
        }
    }

    /// Converts a tonic status returned by `method` at `endpoint`.
    pub fn from_tonic(endpoint: &str, method: &'static str, status: &tonic::Status) -> Self {
        Self::status(endpoint, method, status.code(), status.message())
    }

    /// The gRPC code this error stands for, if any. A timed-out ExecSync maps to
    /// `DeadlineExceeded` like upstream, which wraps the gRPC DeadlineExceeded error.
    pub fn code(&self) -> Option<tonic::Code> {
        match self {
            CriError::Status { code, .. } => Some(*code),
            CriError::CommandTimedOut { .. } => Some(tonic::Code::DeadlineExceeded),
            CriError::Connect { .. } => Some(tonic::Code::Unavailable),
            CriError::InvalidRequest { .. } => Some(tonic::Code::InvalidArgument),
            _ => None,
        }
    }

    /// True for gRPC `NotFound`.
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(tonic::Code::NotFound)
    }

    /// True for gRPC `ResourceExhausted` (e.g. the streaming server's in-flight limit).
    pub fn is_resource_exhausted(&self) -> bool {
        self.code() == Some(tonic::Code::ResourceExhausted)
    }

    /// True for gRPC `Unimplemented`.
    pub fn is_unimplemented(&self) -> bool {
        self.code() == Some(tonic::Code::Unimplemented)
    }

    /// True for gRPC `DeadlineExceeded` (including a timed-out ExecSync).
    pub fn is_deadline_exceeded(&self) -> bool {
        self.code() == Some(tonic::Code::DeadlineExceeded)
    }

    /// The CRI method that failed, when the error comes from a call.
    pub fn method(&self) -> Option<&'static str> {
        match self {
            CriError::Status { method, .. }
            | CriError::InvalidResponse { method, .. }
            | CriError::InvalidRequest { method, .. } => Some(method),
            _ => None,
        }
    }

    /// The error text the Go kubelet would show for this error in events and pod status:
    /// `rpc error: code = NotFound desc = ...` for gRPC statuses (with the code stripped for
    /// `Unknown` PullImage errors, as `remote_image.go` does), the plain message otherwise.
    pub fn upstream_message(&self) -> String {
        match self {
            CriError::Status {
                method: "PullImage",
                code: tonic::Code::Unknown,
                message,
                ..
            } => message.clone(),
            CriError::Status { code, message, .. } => rpc_error_string(*code, message),
            CriError::InvalidResponse { reason, .. } => reason.clone(),
            other => other.to_string(),
        }
    }

    /// Converts this error into a tonic status for a CRI server (the fake server, adapters).
    pub fn to_tonic_status(&self) -> tonic::Status {
        match self {
            CriError::Status { code, message, .. } => tonic::Status::new(*code, message.clone()),
            other => tonic::Status::new(
                other.code().unwrap_or(tonic::Code::Unknown),
                other.to_string(),
            ),
        }
    }
}

/// Go's `status.Error(...).Error()` format: `rpc error: code = NotFound desc = ...`.
pub fn rpc_error_string(code: tonic::Code, message: &str) -> String {
    format!("rpc error: code = {} desc = {message}", go_code_name(code))
}

/// The name Go's `codes.Code.String()` gives a gRPC code (tonic spells some differently,
/// e.g. `Cancelled` vs Go's `Canceled`).
pub fn go_code_name(code: tonic::Code) -> &'static str {
    use tonic::Code as C;
    match code {
        C::Ok => "OK",
        C::Cancelled => "Canceled",
        C::Unknown => "Unknown",
        C::InvalidArgument => "InvalidArgument",
        C::DeadlineExceeded => "DeadlineExceeded",
        C::NotFound => "NotFound",
        C::AlreadyExists => "AlreadyExists",
        C::PermissionDenied => "PermissionDenied",
        C::ResourceExhausted => "ResourceExhausted",
        C::FailedPrecondition => "FailedPrecondition",
        C::Aborted => "Aborted",
        C::OutOfRange => "OutOfRange",
        C::Unimplemented => "Unimplemented",
        C::Internal => "Internal",
        C::Unavailable => "Unavailable",
        C::DataLoss => "DataLoss",
        C::Unauthenticated => "Unauthenticated",
    }
}

/// Flattens an error and its `source()` chain into one line.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = e.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_keeps_code_method_and_endpoint() {
        let e = CriError::status(
            "unix:///x.sock",
            "StartContainer",
            tonic::Code::NotFound,
            "no",
        );
        assert!(e.is_not_found());
        assert!(!e.is_unimplemented());
        assert_eq!(e.method(), Some("StartContainer"));
        assert_eq!(
            e.to_string(),
            "CRI StartContainer at unix:///x.sock: rpc error: code = NotFound desc = no"
        );
        assert_eq!(e.upstream_message(), "rpc error: code = NotFound desc = no");
    }

    #[test]
    fn pull_image_unknown_is_stripped_like_upstream() {
        let e = CriError::status("unix:///x", "PullImage", tonic::Code::Unknown, "boom");
        assert_eq!(e.upstream_message(), "boom");
        let e = CriError::status("unix:///x", "PullImage", tonic::Code::NotFound, "gone");
        assert_eq!(
            e.upstream_message(),
            "rpc error: code = NotFound desc = gone"
        );
    }

    #[test]
    fn command_timeout_counts_as_deadline_exceeded() {
        let e = CriError::CommandTimedOut {
            cmd: "sleep 10".into(),
            timeout: Duration::from_secs(1),
        };
        assert!(e.is_deadline_exceeded());
    }

    #[test]
    fn go_spelling_of_cancelled() {
        assert_eq!(go_code_name(tonic::Code::Cancelled), "Canceled");
    }

    #[test]
    fn to_tonic_status_round_trips_the_code() {
        let e = CriError::status("fake", "RuntimeConfig", tonic::Code::Unimplemented, "nope");
        let s = e.to_tonic_status();
        assert_eq!(s.code(), tonic::Code::Unimplemented);
        assert_eq!(s.message(), "nope");
    }
}
