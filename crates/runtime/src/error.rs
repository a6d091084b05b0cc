//! Errors of the runtime manager.

use std::path::PathBuf;

/// Everything that can go wrong while turning pods into CRI calls.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeManagerError {
    /// A resource quantity could not be parsed.
    #[error("invalid resource quantity {0:?}")]
    InvalidQuantity(String),
    /// A filesystem operation failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: String,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The resolver configuration file is malformed.
    #[error("resolv.conf {}: {reason}", path.display())]
    ResolvConf {
        /// The file (`resolvConf` setting).
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The pod spec cannot be run as given.
    #[error("{0}")]
    InvalidPod(String),
    /// A CRI call failed.
    #[error("CRI {method} failed: {message}")]
    Cri {
        /// The RPC.
        method: &'static str,
        /// The runtime's message.
        message: String,
    },
}
