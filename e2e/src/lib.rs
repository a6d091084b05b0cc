//! Shared helpers for the end-to-end tests: locate or start the real test environment.
//!
//! * [`runtime_env`]: the private containerd from `hack/runtime-up.sh`.
//! * [`cluster`]: the real control plane from `hack/cluster-up.sh`.

pub mod cluster;
pub mod runtime_env;
