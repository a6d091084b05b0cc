//! Generates the CRI v1 (`runtime.v1`) messages, clients and servers from the vendored
//! `k8s.io/cri-api` proto (see proto/SOURCE.md), with the protoc shipped by protoc-bin-vendored
//! so no system protoc is needed.

const PROTO: &str = "proto/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto";
const INCLUDE: &str = "proto";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed={PROTO}");
    println!("cargo:rerun-if-changed=build.rs");
    // Equivalent to setting PROTOC: edition 2024 makes `std::env::set_var` unsafe (and the
    // workspace denies unsafe code), so the path goes to prost-build's config directly.
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_with_config(config, &[PROTO], &[INCLUDE])?;
    Ok(())
}
