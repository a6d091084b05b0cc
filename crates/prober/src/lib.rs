//! Liveness, readiness and startup probes (upstream `pkg/kubelet/prober` and `pkg/probe`).
//!
//! - [`manager`]: the probe manager (`prober_manager.go`): one worker per probe.
//! - [`worker`]: one tokio task per probe with its own ticker (`worker.go`).
//! - [`prober`]: runs a probe and records `Unhealthy` events (`prober.go`).
//! - [`results`]: the liveness/readiness/startup results managers (`results/`), the read side
//!   the runtime manager and the status generator use through
//!   [`kubelet_container::ProbeResults`], and the updates that make the sync loop resync a pod.
//! - [`probe`]: the exec (CRI `ExecSync`), HTTP, TCP and gRPC probers (`pkg/probe`).

pub mod manager;
pub mod probe;
pub mod prober;
pub mod results;
mod worker;

pub use manager::{PodStatusProvider, ProbeManager, ProbeManagerParts, ReadinessTriggers};
pub use probe::exec::{CommandRunner, CriCommandRunner, RunInContainerError};
pub use probe::http::HttpProber;
pub use results::{ProberResults, ResultsManager, Update};
