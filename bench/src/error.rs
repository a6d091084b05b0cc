//! Errors of the benchmark library.

use std::path::PathBuf;

/// Why a benchmark step failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A CRI call failed.
    #[error("CRI {what}: {source}")]
    Cri {
        /// What was being done.
        what: String,
        /// The CRI error.
        #[source]
        source: kubelet_cri::CriError,
    },
    /// A file or process operation failed.
    #[error("{what} {path:?}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or program.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `hack/runtime-up.sh` failed or printed no endpoint.
    #[error("hack/runtime-up.sh: {0}")]
    RuntimeUp(String),
    /// The kubelet under test misbehaved (exited, never healthy, ...).
    #[error("{0}")]
    Kubelet(String),
    /// Something did not happen in time.
    #[error("{0}")]
    Timeout(String),
}

impl BenchError {
    /// A [`BenchError::Cri`] for `what`.
    pub fn cri(what: impl Into<String>) -> impl FnOnce(kubelet_cri::CriError) -> Self {
        let what = what.into();
        move |source| Self::Cri { what, source }
    }

    /// A [`BenchError::Io`] for `what` on `path`.
    pub fn io(what: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { what, path, source }
    }
}

/// Result of the benchmark library.
pub type BenchResult<T> = Result<T, BenchError>;
