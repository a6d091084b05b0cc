//! CRI v1 (`runtime.v1`) for kubelet-rs: the generated gRPC types, the service traits the
//! kubelet programs against, gRPC clients over unix sockets, start-up helpers, a server adapter
//! and (feature `fake`) recording fakes.
//!
//! Upstream map:
//! * [`v1`]: `k8s.io/cri-api/pkg/apis/runtime/v1/api.proto` (vendored, see `proto/SOURCE.md`);
//! * [`RuntimeService`], [`ImageService`]: `k8s.io/cri-api/pkg/apis/services.go`;
//! * [`RemoteRuntimeService`], [`RemoteImageService`]: `k8s.io/cri-client/pkg/remote_*.go`;
//! * [`logs`]: `k8s.io/cri-client/pkg/logs` (`ReadLogs`: container log files as `kubectl logs` reads them);
//! * [`pre_init_runtime_service`]: `pkg/kubelet/kubelet.go` `PreInitRuntimeService`;
//! * [`cgroup_driver_from_cri`]: `cmd/kubelet/app/server.go` `getCgroupDriverFromCRI`;
//! * `fake`: `k8s.io/cri-api/pkg/apis/testing` (`FakeRuntimeService`, `FakeImageService`) and
//!   `k8s.io/cri-client/pkg/fake` (a fake CRI server on a socket).

/// Generated `runtime.v1` messages, clients (`runtime_service_client`, `image_service_client`)
/// and servers (`runtime_service_server`, `image_service_server`).
#[allow(
    clippy::all,
    clippy::pedantic,
    missing_docs,
    rustdoc::invalid_html_tags,
    rustdoc::bare_urls,
    rustdoc::broken_intra_doc_links
)]
pub mod v1 {
    tonic::include_proto!("runtime.v1");
}

pub mod error;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod logs;
pub mod preinit;
pub mod remote;
pub mod server;
pub mod services;

pub use error::{CriError, CriResult, error_chain};
pub use preinit::{
    CgroupDriverSource, CriCgroupDriver, cgroup_driver_from_cri, cgroup_driver_from_cri_with_sleep,
    pre_init_runtime_service, validate_runtime_version,
};
pub use remote::endpoint::{image_service_endpoint, parse_endpoint};
pub use remote::{MAX_MSG_SIZE, RemoteImageService, RemoteRuntimeService};
pub use services::{ContainerEventStream, ImageService, RuntimeService};
