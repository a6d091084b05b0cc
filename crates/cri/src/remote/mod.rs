//! gRPC CRI clients over unix sockets, mirroring `k8s.io/cri-client/pkg`
//! (`remote_runtime.go`, `remote_image.go`, `utils.go`, `util/util_unix.go`).

mod conn;
pub mod endpoint;
mod image;
pub mod lean;
mod runtime;
mod runtime_exec;
mod runtime_stats;
#[cfg(test)]
mod tests;
pub(crate) mod verify;

pub use conn::MAX_MSG_SIZE;
pub use image::RemoteImageService;
pub use runtime::RemoteRuntimeService;
