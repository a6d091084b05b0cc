//! What an API call can fail with, as much of `apimachinery/pkg/api/errors` as the
//! reflector and the mirror client decide on (`IsResourceExpired`/`IsGone`, `IsNotFound`,
//! `IsConflict`, `IsAlreadyExists`, `IsTooManyRequests`).

/// A failed API call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// The server answered with a `Status` failure (HTTP code and reason).
    #[error("{message} (code {code}, reason {reason})")]
    Status {
        /// HTTP status code.
        code: u16,
        /// `metav1.StatusReason` (`Expired`, `Gone`, `NotFound`, `Conflict`, ...).
        reason: String,
        /// The server's message.
        message: String,
    },
    /// The server could not be reached, or the connection broke.
    #[error("{0}")]
    Transport(String),
    /// The answer could not be decoded.
    #[error("{0}")]
    Decode(String),
}

impl ApiError {
    /// apimachinery `ReasonForError`, falling back to the code when the reason is empty.
    fn is(&self, want_code: u16, want_reason: &str) -> bool {
        matches!(self, Self::Status { code, reason, .. }
            if reason == want_reason || (reason.is_empty() && *code == want_code))
    }

    /// Upstream reflector `isExpiredError`: `IsResourceExpired || IsGone` (HTTP 410).
    pub fn is_expired(&self) -> bool {
        self.is(410, "Expired") || self.is(410, "Gone")
    }

    /// `IsNotFound` (404).
    pub fn is_not_found(&self) -> bool {
        self.is(404, "NotFound")
    }

    /// `IsConflict` (409; a failed UID precondition is one).
    pub fn is_conflict(&self) -> bool {
        self.is(409, "Conflict")
    }

    /// `IsAlreadyExists`.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, Self::Status { reason, .. } if reason == "AlreadyExists")
    }

    /// `IsTooManyRequests` (429).
    pub fn is_too_many_requests(&self) -> bool {
        self.is(429, "TooManyRequests")
    }

    /// Upstream reflector `isWatchErrorRetriable`: the API server is not reachable or asks
    /// us to slow down; the watch is restarted from the same resource version after a
    /// back-off instead of relisting.
    pub fn is_watch_retriable(&self) -> bool {
        matches!(self, Self::Transport(_)) || self.is_too_many_requests()
    }
}

impl From<kube::Error> for ApiError {
    fn from(e: kube::Error) -> Self {
        match e {
            kube::Error::Api(s) => Self::from(*s),
            kube::Error::SerdeError(e) => Self::Decode(e.to_string()),
            other => Self::Transport(other.to_string()),
        }
    }
}

impl From<kube::core::Status> for ApiError {
    fn from(s: kube::core::Status) -> Self {
        Self::Status {
            code: s.code,
            reason: s.reason,
            message: s.message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str) -> ApiError {
        ApiError::Status {
            code,
            reason: reason.into(),
            message: "m".into(),
        }
    }

    #[test]
    fn classification_matches_apimachinery() {
        assert!(status(410, "Expired").is_expired());
        assert!(status(410, "Gone").is_expired());
        assert!(!status(500, "InternalError").is_expired());
        assert!(status(404, "NotFound").is_not_found());
        assert!(status(409, "Conflict").is_conflict());
        assert!(status(409, "AlreadyExists").is_already_exists());
        assert!(!status(409, "AlreadyExists").is_conflict());
        assert!(status(409, "").is_conflict());
        assert!(status(429, "TooManyRequests").is_watch_retriable());
        assert!(ApiError::Transport("connection refused".into()).is_watch_retriable());
        assert!(!status(403, "Forbidden").is_watch_retriable());
    }
}
