//! Errors of the volume plugins and the volume manager.

use std::path::PathBuf;

use crate::atomic_writer::WriteError;
use crate::objects::ObjectError;

/// Why a volume could not be set up or torn down.
#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    /// An API object could not be read.
    #[error(transparent)]
    Object(#[from] ObjectError),
    /// The payload cannot be built from the objects (a missing key, an unknown field path ...).
    #[error("{0}")]
    Payload(String),
    /// The atomic writer failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A filesystem or mount operation failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// On which path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A node-local volume (`emptyDir`) could not be set up.
    #[error(transparent)]
    Local(#[from] kubelet_runtime::error::RuntimeManagerError),
    /// No volume plugin handles the volume (upstream `volume.ErrNoPluginMatched`).
    #[error("no volume plugin matched")]
    NoPluginMatched,
    /// Several sources failed (upstream `utilerrors.NewAggregate`).
    #[error("{}", aggregate_message(.0))]
    Aggregate(Vec<VolumeError>),
}

impl VolumeError {
    pub(crate) fn io(
        what: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> Self + use<> {
        let path = path.to_path_buf();
        move |source| Self::Io { what, path, source }
    }

    /// `utilerrors.NewAggregate`: `None` for no errors, the error itself for one.
    pub(crate) fn aggregate(mut errs: Vec<VolumeError>) -> Option<Self> {
        match errs.len() {
            0 => None,
            1 => errs.pop(),
            _ => Some(Self::Aggregate(errs)),
        }
    }
}

/// upstream `aggregate.Error()`: one message as is, several distinct ones as `[a, b]`.
fn aggregate_message(errs: &[VolumeError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errs {
        let m = e.to_string();
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    if seen.len() == 1 {
        return seen.remove(0);
    }
    format!("[{}]", seen.join(", "))
}
