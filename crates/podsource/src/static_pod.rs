//! Static pod treatment (`pkg/kubelet/config/common.go`): `applyDefaults`,
//! `tryDecodeSinglePod` and `tryDecodePodList`.
//!
//! The UID is an FNV-1a 128 hash of the defaulted pod followed by `host:<node>file:<path>`
//! (file pods) or `url:<url>` (HTTP pods), exactly in upstream's order. Upstream hashes
//! Go's `spew` dump of its internal pod struct; we hash the pod's canonical JSON, so a
//! given manifest gets a stable UID of the same shape (32 hex digits) that differs from the
//! one the Go kubelet would compute.

use crate::api_refs::api_object_reference;
use crate::decode::{DecodeError, decode_pod, decode_pod_list};
use crate::defaults::set_defaults_pod;
use crate::hash::Fnv128a;
use crate::types::CONFIG_HASH_ANNOTATION_KEY;
use crate::validation::{ErrorList, validate_pod_create};
use k8s_openapi::api::core::v1::{Pod, PodStatus, Toleration};

/// Where a static pod manifest came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestOrigin {
    /// A file under `staticPodPath` (the path as given to the kubelet, joined with the name).
    File(String),
    /// The `staticPodURL`.
    Url(String),
}

impl ManifestOrigin {
    fn location(&self) -> &str {
        match self {
            ManifestOrigin::File(p) | ManifestOrigin::Url(p) => p,
        }
    }
}

/// Options for static pod decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticPodOptions {
    /// The `PreventStaticPodAPIReferences` gate (beta, on by default since 1.34).
    pub prevent_api_references: bool,
}

impl Default for StaticPodOptions {
    fn default() -> Self {
        StaticPodOptions {
            prevent_api_references: true,
        }
    }
}

/// A decoded pod that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PodError {
    #[error("invalid pod: name is needed for the pod")]
    NameRequired,
    #[error("invalid pod: {0}")]
    Invalid(ErrorList),
    #[error("static pods may not reference {0}")]
    ApiReference(&'static str),
}

/// Why a manifest produced no pod.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ManifestError {
    /// The data is not a pod at all (upstream: `parsed == false`).
    #[error("{location}: couldn't parse as pod({err}), please check config file")]
    NotAPod { location: String, err: DecodeError },
    /// The data is neither a pod nor a pod list (HTTP source).
    #[error("{location}: couldn't parse as single pod ({single}) or multiple pods ({list})")]
    NotPods {
        location: String,
        single: Box<DecodeError>,
        list: Box<DecodeError>,
    },
    /// The data is a pod but it is invalid (upstream: `parsed == true` with an error).
    #[error("{location}: {err}")]
    Invalid { location: String, err: PodError },
}

/// A decoded static pod plus the number of YAML documents in its manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticPod {
    pub pod: Pod,
    pub documents: usize,
}

/// `tryDecodeSinglePod`: decode, default, validate one static pod.
pub fn decode_static_pod(
    data: &[u8],
    origin: &ManifestOrigin,
    node_name: &str,
    opts: StaticPodOptions,
) -> Result<StaticPod, ManifestError> {
    let location = origin.location().to_string();
    let decoded = decode_pod(data).map_err(|err| ManifestError::NotAPod {
        location: location.clone(),
        err,
    })?;
    let pod = prepare_static_pod(decoded.value, origin, node_name, opts)
        .map_err(|err| ManifestError::Invalid { location, err })?;
    Ok(StaticPod {
        pod,
        documents: decoded.documents,
    })
}

/// The HTTP source's decoding: a single pod first, then a `PodList` (`tryDecodePodList`),
/// where any invalid item rejects the whole list.
pub fn decode_static_pods(
    data: &[u8],
    origin: &ManifestOrigin,
    node_name: &str,
    opts: StaticPodOptions,
) -> Result<Vec<Pod>, ManifestError> {
    let single = match decode_static_pod(data, origin, node_name, opts) {
        Ok(p) => return Ok(vec![p.pod]),
        Err(ManifestError::NotAPod { err, .. }) => err,
        Err(other) => return Err(other),
    };
    let location = origin.location().to_string();
    let list = match decode_pod_list(data) {
        Ok(list) => list.value,
        Err(list) => {
            return Err(ManifestError::NotPods {
                location,
                single: Box::new(single),
                list: Box::new(list),
            });
        }
    };
    list.into_iter()
        .map(|pod| {
            prepare_static_pod(pod, origin, node_name, opts).map_err(|err| ManifestError::Invalid {
                location: location.clone(),
                err,
            })
        })
        .collect()
}

/// Scheme defaults, static pod defaults, validation and the API-reference check.
pub fn prepare_static_pod(
    mut pod: Pod,
    origin: &ManifestOrigin,
    node_name: &str,
    opts: StaticPodOptions,
) -> Result<Pod, PodError> {
    if pod.metadata.name.as_deref().unwrap_or_default().is_empty() {
        return Err(PodError::NameRequired);
    }
    set_defaults_pod(&mut pod);
    apply_defaults(&mut pod, origin, node_name);
    let errs = validate_pod_create(&pod);
    if !errs.is_empty() {
        return Err(PodError::Invalid(errs));
    }
    if opts.prevent_api_references
        && let Some(resource) = api_object_reference(&pod)
    {
        return Err(PodError::ApiReference(resource));
    }
    Ok(pod)
}

/// Upstream `generatePodName`: `<name>-<lowercased node name>`.
pub fn generate_pod_name(name: &str, node_name: &str) -> String {
    format!("{name}-{}", node_name.to_lowercase())
}

/// The UID a static pod gets when its manifest has none.
pub fn static_pod_uid(pod: &Pod, origin: &ManifestOrigin, node_name: &str) -> String {
    let mut hasher = Fnv128a::default();
    // Serializing a k8s-openapi Pod cannot fail (no non-string map keys); an empty buffer
    // would still give a deterministic hash of the source information.
    hasher.write(&serde_json::to_vec(pod).unwrap_or_default());
    match origin {
        ManifestOrigin::File(path) => {
            hasher.write(format!("host:{node_name}").as_bytes());
            hasher.write(format!("file:{path}").as_bytes());
        }
        ManifestOrigin::Url(url) => hasher.write(format!("url:{url}").as_bytes()),
    }
    hasher.hex()
}

/// Upstream `applyDefaults`.
pub fn apply_defaults(pod: &mut Pod, origin: &ManifestOrigin, node_name: &str) {
    if pod.metadata.uid.as_deref().unwrap_or_default().is_empty() {
        let uid = static_pod_uid(pod, origin, node_name);
        tracing::debug!(pod = ?pod.metadata.name, uid, source = origin.location(), "Generated UID");
        pod.metadata.uid = Some(uid);
    }
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    pod.metadata.name = Some(generate_pod_name(name, node_name));
    if pod
        .metadata
        .namespace
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        pod.metadata.namespace = Some("default".to_string());
    }
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.node_name = Some(node_name.to_string());
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(CONFIG_HASH_ANNOTATION_KEY.to_string(), uid);
    if matches!(origin, ManifestOrigin::File(_)) {
        add_or_update_toleration(
            spec.tolerations.get_or_insert_with(Vec::new),
            Toleration {
                operator: Some("Exists".into()),
                effect: Some("NoExecute".into()),
                ..Default::default()
            },
        );
    }
    pod.status.get_or_insert_with(PodStatus::default).phase = Some("Pending".to_string());
}

/// Upstream `helper.AddOrUpdateTolerationInPod`: replace a matching toleration (same key,
/// operator, value and effect) or append.
fn add_or_update_toleration(tolerations: &mut Vec<Toleration>, t: Toleration) {
    let matches = |old: &Toleration| {
        old.key.as_deref().unwrap_or_default() == t.key.as_deref().unwrap_or_default()
            && old.effect.as_deref().unwrap_or_default() == t.effect.as_deref().unwrap_or_default()
            && old.operator.as_deref().unwrap_or_default()
                == t.operator.as_deref().unwrap_or_default()
            && old.value.as_deref().unwrap_or_default() == t.value.as_deref().unwrap_or_default()
    };
    match tolerations.iter_mut().find(|old| matches(old)) {
        Some(old) => *old = t,
        None => tolerations.push(t),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod uid_determinism_tests {
    use super::*;

    #[test]
    fn same_manifest_same_uid() {
        let m = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: keep\nspec:\n  restartPolicy: Always\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: main\n    image: docker.io/library/busybox:1.36\n    imagePullPolicy: Never\n    command: [\"sh\", \"-c\", \"sleep 3600\"]\n";
        let origin = ManifestOrigin::File("/tmp/x/manifests/keep.yaml".into());
        let uids: std::collections::BTreeSet<String> = (0..50)
            .map(|_| {
                decode_static_pod(m, &origin, "n1", StaticPodOptions::default())
                    .map(|p| p.pod.metadata.uid.unwrap_or_default())
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(uids.len(), 1, "{uids:?}");
    }
}
