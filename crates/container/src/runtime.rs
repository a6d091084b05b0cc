//! The [`Runtime`] trait the kubelet drives, and its companions
//! (upstream `pkg/kubelet/container/runtime.go`, `container_gc.go`).
//!
//! Implementations must be safe to call concurrently (`Send + Sync`), as
//! upstream requires of `container.Runtime`: pod workers, the PLEG and
//! garbage collection call in parallel.

use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Pod as ApiPod, Secret};

use crate::backoff::Backoff;
use crate::status::PodStatus;
use crate::sync_result::PodSyncResult;
use crate::types::{ContainerId, ImageSpec, Pod};

/// Errors from a [`Runtime`] or [`ImageService`] call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// The runtime could not be reached (socket missing, connection refused, deadline).
    #[error("container runtime is unavailable: {0}")]
    Unavailable(String),
    /// A runtime call returned an error.
    #[error("runtime call {method} failed: {message}")]
    Call {
        /// The CRI (or runtime) method, e.g. `ListContainers`.
        method: String,
        /// Error text from the runtime.
        message: String,
    },
    /// The object does not exist in the runtime.
    #[error("{kind} {id:?} not found in the container runtime")]
    NotFound {
        /// `container`, `sandbox`, `image` ...
        kind: &'static str,
        /// Its ID.
        id: String,
    },
    /// A container ID string is not of the form `<type>://<id>`.
    #[error("invalid container id {0:?}: expected <type>://<id>")]
    InvalidContainerId(String),
    /// Killing some of a pod's containers or sandboxes failed.
    #[error("failed to kill pod {pod}: {message}")]
    KillPod {
        /// `name_namespace(uid)`.
        pod: String,
        /// Aggregated failures.
        message: String,
    },
    /// The request is not valid for the runtime (bad spec, unsupported option).
    #[error("invalid runtime request: {0}")]
    Invalid(String),
}

impl RuntimeError {
    /// True for errors worth retrying soon (runtime unreachable or a failed call).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Unavailable(_) | Self::Call { .. } | Self::KillPod { .. }
        )
    }
}

/// Runtime name and versions (CRI `VersionResponse`, upstream `Version()`/`APIVersion()`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeVersion {
    /// Runtime name, e.g. `containerd` (also the [`ContainerId`] type).
    pub runtime_name: String,
    /// Runtime version, e.g. `1.7.24`.
    pub runtime_version: String,
    /// CRI API version, e.g. `v1`.
    pub runtime_api_version: String,
}

/// One runtime condition (CRI `RuntimeCondition`, upstream `RuntimeCondition`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeCondition {
    /// `RuntimeReady` or `NetworkReady`.
    pub type_: String,
    /// Whether the condition holds.
    pub status: bool,
    /// Machine-readable reason when false.
    pub reason: String,
    /// Human-readable message when false.
    pub message: String,
}

/// Runtime status (upstream `RuntimeStatus`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeStatus {
    /// Conditions reported by the runtime.
    pub conditions: Vec<RuntimeCondition>,
    /// The features the runtime implements (CRI `StatusResponse.features`); `None` when
    /// the runtime reports none (older runtimes, e.g. containerd 1.6).
    pub features: Option<RuntimeFeatures>,
}

/// Features implemented by the runtime (upstream `RuntimeFeatures`, from the CRI
/// `RuntimeFeatures`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeFeatures {
    /// The runtime honours `supplemental_groups_policy` and reports the container's
    /// `user` (feature `SupplementalGroupsPolicy`).
    pub supplemental_groups_policy: bool,
}

impl RuntimeStatus {
    /// Condition type `RuntimeReady`.
    pub const RUNTIME_READY: &'static str = "RuntimeReady";
    /// Condition type `NetworkReady`.
    pub const NETWORK_READY: &'static str = "NetworkReady";

    /// The condition with this type (upstream `GetRuntimeCondition`).
    pub fn condition(&self, type_: &str) -> Option<&RuntimeCondition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// Container garbage-collection policy (upstream `GCPolicy`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerGcPolicy {
    /// Minimum age at which a dead container may be removed.
    pub min_age: Duration,
    /// Dead containers kept per (pod, container name); negative means no limit.
    pub max_per_pod_container: i32,
    /// Dead containers kept in total; negative means no limit.
    pub max_containers: i32,
}

impl Default for ContainerGcPolicy {
    /// Kubelet defaults: minAge 0, 1 per container, no global cap.
    fn default() -> Self {
        Self {
            min_age: Duration::ZERO,
            max_per_pod_container: 1,
            max_containers: -1,
        }
    }
}

/// An image known to the runtime (upstream `Image`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Image {
    /// Image ID.
    pub id: String,
    /// Tags, e.g. `busybox:1.36`.
    pub repo_tags: Vec<String>,
    /// Digests, e.g. `busybox@sha256:...`.
    pub repo_digests: Vec<String>,
    /// Size in bytes.
    pub size: u64,
    /// Whether the image is pinned (never garbage-collected).
    pub pinned: bool,
    /// Spec the image was pulled with.
    pub spec: ImageSpec,
}

/// Answers questions about a pod's lifecycle for runtime-side cleanup
/// (upstream kuberuntime `podStateProvider`). Implemented by the pod workers;
/// consumed by container GC in `kubelet-runtime`.
pub trait PodStateProvider: Send + Sync {
    /// True once termination was requested for the pod (deleted, evicted, finished).
    fn is_pod_termination_requested(&self, uid: &str) -> bool;
    /// True when the pod's content (logs, dead containers) may be removed.
    fn should_pod_content_be_removed(&self, uid: &str) -> bool;
    /// True when the pod's containers and sandboxes may be removed.
    fn should_pod_runtime_be_removed(&self, uid: &str) -> bool;
}

/// A container runtime as the kubelet sees it (upstream `container.Runtime`).
#[async_trait]
pub trait Runtime: Send + Sync {
    /// Runtime type, e.g. `containerd` (upstream `Type()`); used as [`ContainerId::type_`].
    fn type_name(&self) -> &str;

    /// Runtime name and versions (upstream `Version()` / `APIVersion()`).
    async fn version(&self) -> Result<RuntimeVersion, RuntimeError>;

    /// Runtime readiness conditions (upstream `Status()`).
    async fn status(&self) -> Result<RuntimeStatus, RuntimeError>;

    /// Containers grouped by pod. With `all = false` only running containers
    /// and ready sandboxes are returned; with `all = true` also exited ones
    /// (used by the PLEG and garbage collection).
    async fn get_pods(&self, all: bool) -> Result<Vec<Pod>, RuntimeError>;

    /// Status of every container and sandbox of the pod visible in the runtime
    /// (upstream `GetPodStatus`). A pod unknown to the runtime gets an empty status.
    async fn get_pod_status(
        &self,
        uid: &str,
        name: &str,
        namespace: &str,
    ) -> Result<PodStatus, RuntimeError>;

    /// Drives the running pod towards the desired API pod: creates the sandbox,
    /// pulls images, starts init containers then regular containers, kills
    /// containers whose spec hash changed (upstream `SyncPod`). `backoff` holds
    /// the per-container CrashLoopBackOff state across calls.
    async fn sync_pod(
        &self,
        pod: &ApiPod,
        pod_status: &PodStatus,
        pull_secrets: &[Secret],
        backoff: &Backoff,
    ) -> PodSyncResult;

    /// Kills all containers and sandboxes of `running_pod`. `pod` may be `None`
    /// for orphaned runtime pods. `grace_period_override` (seconds) replaces the
    /// pod's grace period; only hard-kill paths (eviction) should set it
    /// (upstream `KillPod`).
    async fn kill_pod(
        &self,
        pod: Option<&ApiPod>,
        running_pod: &Pod,
        grace_period_override: Option<i64>,
    ) -> Result<(), RuntimeError>;

    /// Removes dead containers and sandboxes per `policy`. With
    /// `all_sources_ready = false` containers of unknown pods are kept. With
    /// `evict_non_deleted_pods` containers of terminated but not deleted pods
    /// are removed too (upstream `GarbageCollect`).
    async fn garbage_collect(
        &self,
        policy: &ContainerGcPolicy,
        all_sources_ready: bool,
        evict_non_deleted_pods: bool,
    ) -> Result<(), RuntimeError>;

    /// Removes one container; fails if it is still running (upstream `DeleteContainer`).
    async fn delete_container(&self, id: &ContainerId) -> Result<(), RuntimeError>;

    /// The image IDs the container mounts as image volumes: `Mounts[*].Image.Image` of
    /// upstream `GetContainerStatus`, the part image GC's `handleImageVolumes` reads.
    async fn container_image_mounts(&self, id: &ContainerId) -> Result<Vec<String>, RuntimeError>;
}

/// Image operations (upstream `ImageService` embedded in `Runtime`; kept as a
/// separate trait so image GC and node status can depend on it alone).
#[async_trait]
pub trait ImageService: Send + Sync {
    /// Pulls `image` and returns its reference (digest or ID).
    async fn pull_image(
        &self,
        image: &ImageSpec,
        pull_secrets: &[Secret],
    ) -> Result<String, RuntimeError>;
    /// Reference of a present image, or `None` when it is not present.
    async fn get_image_ref(&self, image: &ImageSpec) -> Result<Option<String>, RuntimeError>;
    /// All images on the node.
    async fn list_images(&self) -> Result<Vec<Image>, RuntimeError>;
    /// Removes an image.
    async fn remove_image(&self, image: &ImageSpec) -> Result<(), RuntimeError>;
}
