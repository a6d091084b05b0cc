//! Pod lifecycle event generator (upstream `pkg/kubelet/pleg`).
//!
//! The PLEG turns container state changes into [`PodLifecycleEvent`]s for the
//! kubelet sync loop and keeps the pod status [`kubelet_container::Cache`]
//! fresh for the pod workers.
//!
//! - [`GenericPleg`] (`generic.go`) relists all containers every second
//!   (`Runtime::get_pods(true)`: one CRI `ListPodSandbox` + `ListContainers`),
//!   diffs them with the previous list and calls `Runtime::get_pod_status`
//!   **only for pods whose containers changed**. Polling every pod's status every
//!   second would cost the runtime ~47 millicores at 100 pods (perf-anchors).
//! - [`EventedPleg`] (`evented.go`) consumes a stream of runtime container
//!   events (CRI `GetContainerEvents`), updates the cache per event, and slows
//!   the generic relist to a 300 s fallback; when the stream ends it restores
//!   the 1 s relist.
//!
//! | Rust module   | Upstream                        |
//! |---------------|---------------------------------|
//! | [`event`]     | `pleg.go` (event types)         |
//! | [`generic`]   | `generic.go` (relist, health)   |
//! | [`records`]   | `generic.go` (`podRecords`, `computeEvents`) |
//! | [`evented`]   | `evented.go`                    |

pub mod event;
pub mod evented;
pub mod generic;
pub mod records;

pub use event::{PodLifecycleEvent, PodLifecycleEventType};
pub use evented::{ContainerEvent, ContainerEventType, EventedPleg};
pub use generic::{GenericPleg, PlegError, RelistDuration};

/// Capacity of the event channel (upstream `plegChannelCapacity`).
pub const PLEG_CHANNEL_CAPACITY: usize = 1000;

#[cfg(test)]
mod tests;
