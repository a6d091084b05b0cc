//! Small builders for CRI configs in tests (sandbox and container configs with metadata).

use crate::v1::{
    ContainerConfig, ContainerMetadata, ImageSpec, PodSandboxConfig, PodSandboxMetadata,
};

/// A sandbox config with metadata `name`/`namespace`/`uid`/`attempt`.
pub fn sandbox_config(name: &str, namespace: &str, uid: &str, attempt: u32) -> PodSandboxConfig {
    PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            uid: uid.to_owned(),
            attempt,
        }),
        hostname: name.to_owned(),
        ..Default::default()
    }
}

/// A container config with metadata `name`/`attempt` running `image` with `command`.
pub fn container_config(
    name: &str,
    attempt: u32,
    image: &str,
    command: &[&str],
) -> ContainerConfig {
    ContainerConfig {
        metadata: Some(ContainerMetadata {
            name: name.to_owned(),
            attempt,
        }),
        image: Some(ImageSpec {
            image: image.to_owned(),
            ..Default::default()
        }),
        command: command.iter().map(|s| (*s).to_owned()).collect(),
        ..Default::default()
    }
}
