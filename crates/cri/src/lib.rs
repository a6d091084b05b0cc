//! CRI v1 (runtime.v1) gRPC clients, generated from vendored k8s.io/cri-api protos, plus a
//! recording fake CRI server (k8s.io/cri-api, pkg/kubelet/cri/remote).

/// Generated `runtime.v1` messages, clients (`runtime_service_client`, `image_service_client`)
/// and servers (`runtime_service_server`, `image_service_server`).
#[allow(clippy::all, missing_docs)]
pub mod v1 {
    tonic::include_proto!("runtime.v1");
}
