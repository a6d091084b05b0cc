//! The `downwardAPI` volume's payload (upstream `pkg/volume/downwardapi/downwardapi.go`
//! `CollectData`, `fieldpath.ExtractFieldPathAsString`,
//! `resource.ExtractResourceValueByContainerNameAndNodeAllocatable`).

use k8s_openapi::api::core::v1::{DownwardAPIVolumeFile, Pod};
use kubelet_runtime::env::{NodeEnvInfo, container_resource_value, pod_field_value};

use crate::atomic_writer::{FileProjection, Payload};
use crate::error::VolumeError;

/// `fieldpath.ExtractFieldPathAsString`: only metadata (the API allows nothing else in a
/// volume); maps are `key="value"` lines, sorted.
fn extract_field_path(pod: &Pod, path: &str) -> Result<String, VolumeError> {
    let supported = matches!(
        path,
        "metadata.name"
            | "metadata.namespace"
            | "metadata.uid"
            | "metadata.labels"
            | "metadata.annotations"
    ) || path.starts_with("metadata.labels[")
        || path.starts_with("metadata.annotations[");
    if !supported {
        return Err(VolumeError::Payload(format!(
            "unsupported fieldPath: {path}"
        )));
    }
    pod_field_value(pod, path, &[], &NodeEnvInfo::default())
        .map_err(|e| VolumeError::Payload(e.to_string()))
}

/// `CollectData`: one file per item (path cleaned), its mode or `default_mode`; the
/// errors of all items are aggregated.
pub fn collect_data(
    items: &[DownwardAPIVolumeFile],
    pod: &Pod,
    node: &NodeEnvInfo,
    default_mode: i32,
) -> Result<Payload, VolumeError> {
    let mut errs = Vec::new();
    let mut data = Payload::new();
    for item in items {
        let mut file = FileProjection {
            data: Vec::new(),
            mode: super::mode_bits(item.mode.unwrap_or(default_mode)),
            fs_user: None,
        };
        if let Some(f) = &item.field_ref {
            match extract_field_path(pod, &f.field_path) {
                Ok(v) => file.data = v.into_bytes(),
                Err(e) => {
                    tracing::error!("Unable to extract field {}: {e}", f.field_path);
                    errs.push(e);
                }
            }
        } else if let Some(r) = &item.resource_field_ref {
            match resource_value(pod, r, node) {
                Ok(v) => file.data = v.into_bytes(),
                Err(e) => {
                    tracing::error!("Unable to extract field {}: {e}", r.resource);
                    errs.push(e);
                }
            }
        }
        data.insert(super::clean_path(&item.path), file);
    }
    match VolumeError::aggregate(errs) {
        None => Ok(data),
        Some(e) => Err(e),
    }
}

fn resource_value(
    pod: &Pod,
    sel: &k8s_openapi::api::core::v1::ResourceFieldSelector,
    node: &NodeEnvInfo,
) -> Result<String, VolumeError> {
    let name = sel.container_name.as_deref().unwrap_or_default();
    let container = pod
        .spec
        .iter()
        .flat_map(|s| {
            s.containers
                .iter()
                .chain(s.init_containers.iter().flatten())
        })
        .find(|c| c.name == name)
        .ok_or_else(|| VolumeError::Payload(format!("container {name} not found")))?;
    container_resource_value(pod, container, sel, node)
        .map_err(|e| VolumeError::Payload(e.to_string()))
}
