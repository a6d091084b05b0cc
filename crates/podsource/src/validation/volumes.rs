//! Volume checks (`ValidateVolumes`).

use super::{ErrorList, FieldError};
use crate::defaults::volume_source_count;
use k8s_openapi::api::core::v1::{
    EmptyDirVolumeSource, HostPathVolumeSource, ImageVolumeSource, Volume,
};
use kubelet_apimachinery::Quantity;
use kubelet_apimachinery::is_dns1123_label;
use std::collections::HashSet;

const HOST_PATH_TYPES: &[&str] = &[
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
];

/// Returns the set of valid volume names plus the problems found.
pub(super) fn validate_volumes(volumes: &[Volume]) -> (HashSet<String>, ErrorList) {
    let mut errs = ErrorList::default();
    let mut names = HashSet::new();
    for (i, v) in volumes.iter().enumerate() {
        let path = format!("spec.volumes[{i}]");
        if v.name.is_empty() {
            errs.push(FieldError::required(format!("{path}.name"), ""));
        } else {
            let name_errs = is_dns1123_label(&v.name);
            for msg in &name_errs {
                errs.push(FieldError::invalid(
                    format!("{path}.name"),
                    v.name.as_str(),
                    msg.as_str(),
                ));
            }
            if !names.insert(v.name.clone()) {
                errs.push(FieldError::duplicate(
                    format!("{path}.name"),
                    v.name.as_str(),
                ));
            }
        }
        errs.extend(validate_source(v, &path));
    }
    (names, errs)
}

fn validate_source(v: &Volume, path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    match volume_source_count(v) {
        0 => errs.push(FieldError::required(
            path.to_string(),
            "must specify a volume type",
        )),
        1 => {}
        _ => errs.push(FieldError::forbidden(
            path.to_string(),
            "may not specify more than 1 volume type",
        )),
    }
    if let Some(h) = v.host_path.as_ref() {
        errs.extend(validate_host_path(h, &format!("{path}.hostPath")));
    }
    if let Some(e) = v.empty_dir.as_ref() {
        errs.extend(validate_empty_dir(e, &format!("{path}.emptyDir")));
    }
    if let Some(i) = v.image.as_ref() {
        errs.extend(validate_image(i, &format!("{path}.image")));
    }
    errs
}

/// `validateImageVolumeSource` (for a pod: the reference is required) with
/// `validatePullPolicy`.
fn validate_image(i: &ImageVolumeSource, path: &str) -> ErrorList {
    const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
    let mut errs = ErrorList::default();
    if i.reference.as_deref().unwrap_or_default().is_empty() {
        errs.push(FieldError::required(format!("{path}.reference"), ""));
    }
    let field = format!("{path}.pullPolicy");
    match i.pull_policy.as_deref().unwrap_or_default() {
        "" => errs.push(FieldError::required(field, "")),
        p if !PULL_POLICIES.contains(&p) => {
            errs.push(FieldError::not_supported(field, p, PULL_POLICIES));
        }
        _ => {}
    }
    errs
}

fn validate_host_path(h: &HostPathVolumeSource, path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    if h.path.is_empty() {
        errs.push(FieldError::required(format!("{path}.path"), ""));
    } else if h.path.split('/').any(|p| p == "..") {
        errs.push(FieldError::invalid(
            format!("{path}.path"),
            h.path.as_str(),
            "must not contain '..'",
        ));
    }
    let ty = h.type_.as_deref().unwrap_or_default();
    if !HOST_PATH_TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(
            format!("{path}.type"),
            ty,
            HOST_PATH_TYPES,
        ));
    }
    errs
}

fn validate_empty_dir(e: &EmptyDirVolumeSource, path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    let medium = e.medium.as_deref().unwrap_or_default();
    let medium_ok =
        matches!(medium, "" | "Memory" | "HugePages") || medium.starts_with("HugePages-");
    if !medium_ok {
        errs.push(FieldError::not_supported(
            format!("{path}.medium"),
            medium,
            &["", "Memory", "HugePages", "HugePages-<size>"],
        ));
    }
    if let Some(limit) = e.size_limit.as_ref() {
        match Quantity::parse(&limit.0) {
            Ok(q) if q.sign() < 0 => errs.push(FieldError::invalid(
                format!("{path}.sizeLimit"),
                limit.0.as_str(),
                "must be greater than or equal to 0",
            )),
            Ok(_) => {}
            Err(err) => errs.push(FieldError::invalid(
                format!("{path}.sizeLimit"),
                limit.0.as_str(),
                err.to_string(),
            )),
        }
    }
    errs
}
