//! Runtime pods and containers (upstream `pkg/kubelet/container/runtime.go`).

use std::fmt;
use std::str::FromStr;

use crate::runtime::RuntimeError;

/// Identifies a container: `<type>://<id>`, e.g. `containerd://0123abcd`
/// (upstream `ContainerID`). `type_` is the runtime name as reported by CRI
/// `Version().runtime_name`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContainerId {
    /// Runtime type, e.g. `containerd`.
    pub type_: String,
    /// Runtime-specific ID, passed verbatim to CRI.
    pub id: String,
}

impl ContainerId {
    /// Builds an ID from its parts (upstream `BuildContainerID`).
    pub fn new(type_: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            type_: type_.into(),
            id: id.into(),
        }
    }

    /// True when both parts are empty (upstream `IsEmpty`).
    pub fn is_empty(&self) -> bool {
        self.type_.is_empty() && self.id.is_empty()
    }
}

impl fmt::Display for ContainerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.type_, self.id)
    }
}

impl FromStr for ContainerId {
    type Err = RuntimeError;

    /// Parses `<type>://<id>` (surrounding quotes are trimmed, like upstream `ParseString`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s.trim_matches('"');
        let mut parts = trimmed.split("://");
        match (parts.next(), parts.next(), parts.next()) {
            (Some(t), Some(id), None) => Ok(Self::new(t, id)),
            _ => Err(RuntimeError::InvalidContainerId(s.to_string())),
        }
    }
}

/// State of a container as the kubelet sees it (upstream `State`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ContainerState {
    /// Created but not started.
    Created,
    /// Running.
    Running,
    /// Exited (has an exit code and a finish time).
    Exited,
    /// Any other state.
    #[default]
    Unknown,
}

impl ContainerState {
    /// Upstream string value (`created`, `running`, `exited`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Running => "running",
            Self::Exited => "exited",
            Self::Unknown => "unknown",
        }
    }
}

impl fmt::Display for ContainerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Internal representation of an image reference (upstream `ImageSpec`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ImageSpec {
    /// Image name or ID as written in the pod spec or returned by the runtime.
    pub image: String,
    /// Runtime handler (RuntimeClass handler) the image is pulled for; empty for the default.
    pub runtime_handler: String,
    /// Annotations passed to CRI on pull.
    pub annotations: Vec<(String, String)>,
}

impl ImageSpec {
    /// Spec for `image` on the default runtime handler.
    pub fn new(image: impl Into<String>) -> Self {
        Self {
            image: image.into(),
            ..Self::default()
        }
    }
}

/// Runtime information about one container (upstream `Container`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Container {
    /// Runtime container ID.
    pub id: ContainerId,
    /// Name from the pod spec (`v1.Container.Name`).
    pub name: String,
    /// Image as requested, `NAME:TAG`.
    pub image: String,
    /// Image ID the runtime resolved.
    pub image_id: String,
    /// Image reference (digest) the runtime resolved.
    pub image_ref: String,
    /// Runtime handler used for the image.
    pub image_runtime_handler: String,
    /// [`crate::hash_container`] of the spec the container was created from (0 if unknown).
    pub hash: u64,
    /// Current state.
    pub state: ContainerState,
}

/// A group of containers and sandboxes belonging to one pod UID, as reported
/// by the runtime (upstream `Pod`; not the API pod).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pod {
    /// Pod UID.
    pub id: String,
    /// Pod name.
    pub name: String,
    /// Pod namespace.
    pub namespace: String,
    /// Creation time of the newest sandbox, nanoseconds since the epoch (0 if unknown).
    pub created_at: u64,
    /// Containers; only running ones unless listed with `all = true`.
    pub containers: Vec<Container>,
    /// Pod sandboxes, represented as containers (upstream does the same).
    pub sandboxes: Vec<Container>,
}

impl Pod {
    /// First container with this spec name (upstream `FindContainerByName`).
    pub fn find_container_by_name(&self, name: &str) -> Option<&Container> {
        self.containers.iter().find(|c| c.name == name)
    }

    /// Container with this ID (upstream `FindContainerByID`).
    pub fn find_container_by_id(&self, id: &ContainerId) -> Option<&Container> {
        self.containers.iter().find(|c| &c.id == id)
    }

    /// Sandbox with this ID (upstream `FindSandboxByID`).
    pub fn find_sandbox_by_id(&self, id: &ContainerId) -> Option<&Container> {
        self.sandboxes.iter().find(|c| &c.id == id)
    }

    /// True when the pod has no containers and no sandboxes (upstream `IsEmpty`).
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.sandboxes.is_empty()
    }

    /// `name_namespace` (upstream `kubecontainer.GetPodFullName`).
    pub fn full_name(&self) -> String {
        format!("{}_{}", self.name, self.namespace)
    }
}

/// Lookup helpers over a runtime pod list (upstream `Pods`).
pub trait Pods {
    /// Pod with this UID.
    fn find_pod_by_id(&self, uid: &str) -> Option<&Pod>;
    /// Pod with this `name_namespace` full name.
    fn find_pod_by_full_name(&self, full_name: &str) -> Option<&Pod>;
}

impl Pods for [Pod] {
    fn find_pod_by_id(&self, uid: &str) -> Option<&Pod> {
        self.iter().find(|p| p.id == uid)
    }

    fn find_pod_by_full_name(&self, full_name: &str) -> Option<&Pod> {
        self.iter().find(|p| p.full_name() == full_name)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn container_id_round_trips() {
        let id: ContainerId = "containerd://abc123".parse().unwrap();
        assert_eq!(id, ContainerId::new("containerd", "abc123"));
        assert_eq!(id.to_string(), "containerd://abc123");
        let quoted: ContainerId = "\"docker://x\"".parse().unwrap();
        assert_eq!(quoted.id, "x");
    }

    #[test]
    fn container_id_rejects_bad_input() {
        for bad in ["abc", "a://b://c", ""] {
            let err = bad.parse::<ContainerId>().unwrap_err();
            assert!(err.to_string().contains("invalid container id"), "{err}");
        }
    }

    #[test]
    fn pods_lookup() {
        let pods = [Pod {
            id: "u1".into(),
            name: "web".into(),
            namespace: "default".into(),
            containers: vec![Container {
                id: ContainerId::new("containerd", "c1"),
                name: "app".into(),
                ..Container::default()
            }],
            ..Pod::default()
        }];
        let pod = pods.find_pod_by_full_name("web_default").unwrap();
        assert_eq!(pods.find_pod_by_id("u1"), Some(pod));
        assert!(pods.find_pod_by_id("u2").is_none());
        assert_eq!(pod.find_container_by_name("app").unwrap().id.id, "c1");
        assert!(
            pod.find_container_by_id(&ContainerId::new("containerd", "c1"))
                .is_some()
        );
        assert!(!pod.is_empty());
    }
}
