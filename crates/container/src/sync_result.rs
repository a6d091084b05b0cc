//! Per-action results of a pod sync (upstream `pkg/kubelet/container/sync_result.go`,
//! plus the image errors of `pkg/kubelet/images/types.go` and the container
//! errors of `pkg/kubelet/kuberuntime/kuberuntime_container.go`).
//!
//! The error kinds double as container waiting reasons: the kubelet caches the
//! last failed `StartContainer` result per container (upstream `ReasonCache`)
//! and reports it as `state.waiting.reason`.

use std::fmt;

/// Action a sync step performed (upstream `SyncAction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncAction {
    /// Start a container.
    StartContainer,
    /// Kill a container.
    KillContainer,
    /// Set up pod networking.
    SetupNetwork,
    /// Tear down pod networking.
    TeardownNetwork,
    /// Start an init container.
    InitContainer,
    /// Create the pod sandbox.
    CreatePodSandbox,
    /// Generate the sandbox config.
    ConfigPodSandbox,
    /// Stop the pod sandbox.
    KillPodSandbox,
    /// Resize a running pod in place.
    ResizePodInPlace,
}

impl SyncAction {
    /// Upstream string value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StartContainer => "StartContainer",
            Self::KillContainer => "KillContainer",
            Self::SetupNetwork => "SetupNetwork",
            Self::TeardownNetwork => "TeardownNetwork",
            Self::InitContainer => "InitContainer",
            Self::CreatePodSandbox => "CreatePodSandbox",
            Self::ConfigPodSandbox => "ConfigPodSandbox",
            Self::KillPodSandbox => "KillPodSandbox",
            Self::ResizePodInPlace => "ResizePodInPlace",
        }
    }
}

impl fmt::Display for SyncAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a sync step failed. [`SyncErrorKind::reason`] is the upstream error
/// string, which is also the container waiting reason shown in the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncErrorKind {
    /// Container restart is backing off (`CrashLoopBackOff`).
    CrashLoopBackOff,
    /// No matching container (`no matching container`).
    ContainerNotFound,
    /// Starting the container failed (`RunContainerError`).
    RunContainer,
    /// Killing the container failed (`KillContainerError`).
    KillContainer,
    /// Creating the sandbox failed (`CreatePodSandboxError`).
    CreatePodSandbox,
    /// Building the sandbox config failed (`ConfigPodSandboxError`).
    ConfigPodSandbox,
    /// Stopping the sandbox failed (`KillPodSandboxError`).
    KillPodSandbox,
    /// In-place resize failed (`ResizePodInPlaceError`).
    ResizePodInPlace,
    /// Image pull is backing off (`ImagePullBackOff`).
    ImagePullBackOff,
    /// Inspecting the image failed (`ImageInspectError`).
    ImageInspect,
    /// Pulling the image failed (`ErrImagePull`).
    ImagePull,
    /// Image absent and pull policy Never (`ErrImageNeverPull`).
    ImageNeverPull,
    /// Image name does not parse (`InvalidImageName`).
    InvalidImageName,
    /// Building the container config failed (`CreateContainerConfigError`).
    CreateContainerConfig,
    /// Pre-create hook failed (`PreCreateHookError`).
    PreCreateHook,
    /// CRI CreateContainer failed (`CreateContainerError`).
    CreateContainer,
    /// Pre-start hook failed (`PreStartHookError`).
    PreStartHook,
    /// postStart lifecycle hook failed (`PostStartHookError`).
    PostStartHook,
}

impl SyncErrorKind {
    /// Upstream error string (and container waiting reason).
    pub fn reason(self) -> &'static str {
        match self {
            Self::CrashLoopBackOff => "CrashLoopBackOff",
            Self::ContainerNotFound => "no matching container",
            Self::RunContainer => "RunContainerError",
            Self::KillContainer => "KillContainerError",
            Self::CreatePodSandbox => "CreatePodSandboxError",
            Self::ConfigPodSandbox => "ConfigPodSandboxError",
            Self::KillPodSandbox => "KillPodSandboxError",
            Self::ResizePodInPlace => "ResizePodInPlaceError",
            Self::ImagePullBackOff => "ImagePullBackOff",
            Self::ImageInspect => "ImageInspectError",
            Self::ImagePull => "ErrImagePull",
            Self::ImageNeverPull => "ErrImageNeverPull",
            Self::InvalidImageName => "InvalidImageName",
            Self::CreateContainerConfig => "CreateContainerConfigError",
            Self::PreCreateHook => "PreCreateHookError",
            Self::CreateContainer => "CreateContainerError",
            Self::PreStartHook => "PreStartHookError",
            Self::PostStartHook => "PostStartHookError",
        }
    }

    /// True for back-off states, which upstream does not treat as sync
    /// failures worth an event or a fast retry (`CrashLoopBackOff`, `ImagePullBackOff`).
    pub fn is_backoff(self) -> bool {
        matches!(self, Self::CrashLoopBackOff | Self::ImagePullBackOff)
    }
}

impl fmt::Display for SyncErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

/// Result of one sync action (upstream `SyncResult`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncResult {
    /// What was done.
    pub action: SyncAction,
    /// On what: a container name, or the pod's full name for sandbox actions.
    pub target: String,
    /// Failure kind, `None` on success.
    pub error: Option<SyncErrorKind>,
    /// Human-readable failure detail.
    pub message: String,
}

impl SyncResult {
    /// A pending (successful until [`fail`](Self::fail)) result (upstream `NewSyncResult`).
    pub fn new(action: SyncAction, target: impl Into<String>) -> Self {
        Self {
            action,
            target: target.into(),
            error: None,
            message: String::new(),
        }
    }

    /// Marks the result failed (upstream `Fail`).
    pub fn fail(&mut self, error: SyncErrorKind, message: impl Into<String>) {
        self.error = Some(error);
        self.message = message.into();
    }
}

impl fmt::Display for SyncResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.error {
            Some(e) => write!(
                f,
                "failed to {} for {:?} with {}: {:?}",
                self.action, self.target, e, self.message
            ),
            None => write!(f, "{} for {:?} succeeded", self.action, self.target),
        }
    }
}

/// Results of a whole pod sync (upstream `PodSyncResult`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSyncResult {
    /// Per-action results in execution order.
    pub sync_results: Vec<SyncResult>,
    /// Error that aborted the sync before or between actions.
    pub sync_error: Option<String>,
}

impl PodSyncResult {
    /// Appends results (upstream `AddSyncResult`).
    pub fn add_sync_result(&mut self, result: SyncResult) {
        self.sync_results.push(result);
    }

    /// Merges another pod result (upstream `AddPodSyncResult`).
    pub fn add_pod_sync_result(&mut self, other: PodSyncResult) {
        self.sync_results.extend(other.sync_results);
        if other.sync_error.is_some() {
            self.sync_error = other.sync_error;
        }
    }

    /// Records an error that aborted the sync (upstream `Fail`).
    pub fn fail(&mut self, message: impl Into<String>) {
        self.sync_error = Some(message.into());
    }

    /// Failed results, in order.
    pub fn failures(&self) -> impl Iterator<Item = &SyncResult> {
        self.sync_results.iter().filter(|r| r.error.is_some())
    }

    /// Aggregated error text, `None` when everything succeeded (upstream `Error()`).
    pub fn error(&self) -> Option<String> {
        let mut parts: Vec<String> = Vec::new();
        if let Some(e) = &self.sync_error {
            parts.push(format!("failed to sync pod: {e}"));
        }
        parts.extend(self.failures().map(ToString::to_string));
        if parts.is_empty() {
            None
        } else {
            Some(parts.join("; "))
        }
    }

    /// True when the sync started at least one container (init or regular).
    pub fn started_containers(&self) -> bool {
        self.sync_results.iter().any(|r| {
            r.error.is_none()
                && matches!(
                    r.action,
                    SyncAction::StartContainer | SyncAction::InitContainer
                )
        })
    }

    /// True when every failure is a back-off (the pod is merely waiting).
    pub fn only_backoff_failures(&self) -> bool {
        self.sync_error.is_none()
            && self
                .failures()
                .all(|r| r.error.is_some_and(SyncErrorKind::is_backoff))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn pod_sync_result_aggregates_errors() {
        let mut result = PodSyncResult::default();
        result.add_sync_result(SyncResult::new(SyncAction::CreatePodSandbox, "web_default"));
        assert_eq!(result.error(), None);

        let mut start = SyncResult::new(SyncAction::StartContainer, "app");
        start.fail(
            SyncErrorKind::CrashLoopBackOff,
            "back-off 10s restarting failed container",
        );
        let mut other = PodSyncResult::default();
        other.add_sync_result(start);
        result.add_pod_sync_result(other);
        let err = result.error().unwrap();
        assert!(
            err.contains("StartContainer") && err.contains("CrashLoopBackOff"),
            "{err}"
        );
        assert!(result.only_backoff_failures());

        result.fail("sandbox network not ready");
        assert!(
            result
                .error()
                .unwrap()
                .starts_with("failed to sync pod: sandbox network not ready")
        );
        assert!(!result.only_backoff_failures());
    }

    #[test]
    fn reasons_match_upstream_strings() {
        assert_eq!(SyncErrorKind::ImagePull.reason(), "ErrImagePull");
        assert_eq!(
            SyncErrorKind::CreateContainerConfig.to_string(),
            "CreateContainerConfigError"
        );
        assert!(!SyncErrorKind::RunContainer.is_backoff());
    }

    #[test]
    fn started_containers_counts_only_successful_starts() {
        let mut result = PodSyncResult::default();
        result.add_sync_result(SyncResult::new(SyncAction::CreatePodSandbox, "p"));
        assert!(!result.started_containers());
        let mut failed = SyncResult::new(SyncAction::StartContainer, "a");
        failed.fail(SyncErrorKind::RunContainer, "boom");
        result.add_sync_result(failed);
        assert!(!result.started_containers());
        result.add_sync_result(SyncResult::new(SyncAction::StartContainer, "b"));
        assert!(result.started_containers());
    }
}
