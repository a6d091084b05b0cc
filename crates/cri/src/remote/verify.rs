//! Response checks, mirroring `k8s.io/cri-client/pkg/utils.go` (`verifySandboxStatus`,
//! `verifyContainerStatus`) and the field checks in `remote_runtime.go` `versionV1`.

use crate::v1::{ContainerStatus, PodSandboxStatus, VersionResponse};

/// Checks the fields upstream requires in a sandbox status.
pub fn verify_sandbox_status(status: &PodSandboxStatus) -> Result<(), String> {
    if status.id.is_empty() {
        return Err("status.Id is not set".into());
    }
    let Some(metadata) = &status.metadata else {
        return Err("status.Metadata is not set".into());
    };
    if metadata.name.is_empty() || metadata.namespace.is_empty() || metadata.uid.is_empty() {
        return Err(format!(
            "metadata.Name, metadata.Namespace or metadata.Uid is not in metadata {metadata:?}"
        ));
    }
    if status.created_at == 0 {
        return Err("status.CreatedAt is not set".into());
    }
    Ok(())
}

/// Checks the fields upstream requires in a container status.
pub fn verify_container_status(status: &ContainerStatus) -> Result<(), String> {
    if status.id.is_empty() {
        return Err("status.Id is not set".into());
    }
    let Some(metadata) = &status.metadata else {
        return Err("status.Metadata is not set".into());
    };
    if metadata.name.is_empty() {
        return Err(format!("metadata.Name is not in metadata {metadata:?}"));
    }
    if status.created_at == 0 {
        return Err("status.CreatedAt is not set".into());
    }
    if status.image.as_ref().is_none_or(|i| i.image.is_empty()) {
        return Err("status.Image is not set".into());
    }
    if status.image_ref.is_empty() {
        return Err("status.ImageRef is not set".into());
    }
    Ok(())
}

/// Checks that every field of a VersionResponse is set.
pub fn verify_version(v: &VersionResponse) -> Result<(), String> {
    let missing: Vec<&str> = [
        ("Version", v.version.is_empty()),
        ("RuntimeName", v.runtime_name.is_empty()),
        ("RuntimeApiVersion", v.runtime_api_version.is_empty()),
        ("RuntimeVersion", v.runtime_version.is_empty()),
    ]
    .into_iter()
    .filter_map(|(name, empty)| empty.then_some(name))
    .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "not all fields are set in VersionResponse (missing {})",
            missing.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1::{ContainerMetadata, ImageSpec, PodSandboxMetadata};

    #[test]
    fn sandbox_status_needs_id_metadata_and_created_at() {
        let mut s = PodSandboxStatus::default();
        assert_eq!(
            verify_sandbox_status(&s),
            Err("status.Id is not set".into())
        );
        s.id = "a".into();
        assert_eq!(
            verify_sandbox_status(&s),
            Err("status.Metadata is not set".into())
        );
        s.metadata = Some(PodSandboxMetadata {
            name: "n".into(),
            namespace: "ns".into(),
            uid: "u".into(),
            attempt: 0,
        });
        assert_eq!(
            verify_sandbox_status(&s),
            Err("status.CreatedAt is not set".into())
        );
        s.created_at = 1;
        assert_eq!(verify_sandbox_status(&s), Ok(()));
    }

    #[test]
    fn container_status_needs_image_and_ref() {
        let mut s = ContainerStatus {
            id: "c".into(),
            metadata: Some(ContainerMetadata {
                name: "x".into(),
                attempt: 0,
            }),
            created_at: 1,
            ..Default::default()
        };
        assert_eq!(
            verify_container_status(&s),
            Err("status.Image is not set".into())
        );
        s.image = Some(ImageSpec {
            image: "busybox".into(),
            ..Default::default()
        });
        assert_eq!(
            verify_container_status(&s),
            Err("status.ImageRef is not set".into())
        );
        s.image_ref = "sha256:1".into();
        assert_eq!(verify_container_status(&s), Ok(()));
    }

    #[test]
    fn version_lists_missing_fields() {
        let v = VersionResponse {
            version: "0.1.0".into(),
            runtime_name: "containerd".into(),
            ..Default::default()
        };
        assert_eq!(
            verify_version(&v),
            Err("not all fields are set in VersionResponse (missing RuntimeApiVersion, RuntimeVersion)".into())
        );
    }
}
