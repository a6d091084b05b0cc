//! Pod fields kubelet-rs does not implement yet: a pod using one is rejected at admission
//! (reason `UnsupportedPodFeature`, a message naming each field path) instead of being run
//! differently from what it asks for.
//!
//! [`UNSUPPORTED_POD_FEATURES`] is the one list. It shrinks as features land; the
//! `docs/pod-features.md` table is generated from it and a test keeps the two equal
//! (regenerate with `KRS_UPDATE_DOCS=1 cargo test -p kubelet-admission --lib features`).
//! Fields whose effect upstream also ignores on a standalone node (scheduler-only fields
//! such as tolerations or topology spread constraints) are not listed.

use k8s_openapi::api::core::v1::{Container, PodSpec, Volume};

use crate::{PodAdmitAttributes, PodAdmitHandler, PodAdmitResult};

/// Reason of a pod rejected for a field kubelet-rs does not implement (ours; upstream has
/// no such reason).
pub const UNSUPPORTED_POD_FEATURE_REASON: &str = "UnsupportedPodFeature";

/// One pod field kubelet-rs refuses.
#[derive(Debug, Clone, Copy)]
pub struct UnsupportedPodFeature {
    /// The field path as documented (`[*]`: any index; `{initContainers,containers}`: both).
    pub field: &'static str,
    /// What the upstream kubelet does with it.
    pub upstream: &'static str,
    /// Appends the concrete paths of the pod that use the field.
    find: fn(&PodSpec, &mut Vec<String>),
}

impl UnsupportedPodFeature {
    /// The concrete paths of `spec` that use this field (empty: the pod does not use it).
    pub fn find(&self, spec: &PodSpec) -> Vec<String> {
        let mut out = Vec::new();
        (self.find)(spec, &mut out);
        out
    }
}

/// Init containers then regular containers, with their paths.
fn containers(spec: &PodSpec) -> impl Iterator<Item = (String, &Container)> {
    let init = spec.init_containers.iter().flatten().enumerate();
    let init = init.map(|(i, c)| (format!("spec.initContainers[{i}]"), c));
    let regular = spec.containers.iter().enumerate();
    init.chain(regular.map(|(i, c)| (format!("spec.containers[{i}]"), c)))
}

fn container_field(
    spec: &PodSpec,
    out: &mut Vec<String>,
    name: &str,
    uses: fn(&Container) -> bool,
) {
    out.extend(
        containers(spec)
            .filter(|(_, c)| uses(c))
            .map(|(p, _)| format!("{p}.{name}")),
    );
}

/// The volume source's field name (`configMap`, `nfs`, `image` ...), from its JSON form.
fn volume_type(v: &Volume) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::Object(m)) => m
            .keys()
            .find(|k| k.as_str() != "name")
            .cloned()
            .unwrap_or_default(),
        _ => String::new(),
    }
}

fn volumes(spec: &PodSpec) -> impl Iterator<Item = (String, &Volume)> {
    let vols = spec.volumes.iter().flatten().enumerate();
    vols.map(|(i, v)| (format!("spec.volumes[{i}]"), v))
}

/// Every pod field kubelet-rs refuses, in the order the rejection message names them.
pub const UNSUPPORTED_POD_FEATURES: &[UnsupportedPodFeature] = &[
    UnsupportedPodFeature {
        field: "spec.{initContainers,containers}[*].restartPolicyRules[*].action: RestartAllContainers",
        upstream: "refused here only with the gate RestartAllContainersOnContainerExits (alpha) on, when upstream restarts all the pod's containers in place; with the gate off (the default) a matching rule with this action falls back to the container's restartPolicy, in kubelet-rs as upstream",
        find: |s, out| {
            if !kubelet_container::gates::restart_all_containers_on_container_exits() {
                return;
            }
            for (p, c) in containers(s) {
                let rules = c.restart_policy_rules.iter().flatten().enumerate();
                out.extend(
                    rules
                        .filter(|(_, r)| r.action == "RestartAllContainers")
                        .map(|(i, _)| format!("{p}.restartPolicyRules[{i}].action")),
                );
            }
        },
    },
    UnsupportedPodFeature {
        field: "spec.{initContainers,containers}[*].resources.claims",
        upstream: "gives the container the dynamic resources (DRA) it claims",
        find: |s, out| {
            container_field(s, out, "resources.claims", |c| {
                c.resources
                    .as_ref()
                    .and_then(|r| r.claims.as_ref())
                    .is_some_and(|cl| !cl.is_empty())
            })
        },
    },
    UnsupportedPodFeature {
        field: "spec.{initContainers,containers}[*].volumeDevices",
        upstream: "maps raw block devices of persistent volumes into the container",
        find: |s, out| {
            container_field(s, out, "volumeDevices", |c| {
                c.volume_devices.as_ref().is_some_and(|d| !d.is_empty())
            })
        },
    },
    UnsupportedPodFeature {
        field: "spec.volumes[*] of any type but emptyDir, hostPath, configMap, secret, downwardAPI, projected and image",
        upstream: "sets the volume up with its volume plugin (persistentVolumeClaim, ephemeral, csi, nfs, iscsi, ...)",
        find: |s, out| {
            out.extend(
                volumes(s)
                    .filter(|(_, v)| {
                        v.empty_dir.is_none()
                            && v.host_path.is_none()
                            && v.config_map.is_none()
                            && v.secret.is_none()
                            && v.downward_api.is_none()
                            && v.projected.is_none()
                            && v.image.is_none()
                    })
                    .map(|(p, v)| format!("{p}.{}", volume_type(v))),
            );
        },
    },
    UnsupportedPodFeature {
        field: "spec.volumes[*].projected.sources[*].{clusterTrustBundle,podCertificate}",
        upstream: "projects ClusterTrustBundle trust anchors or a PodCertificateRequest's key and chain (gates ClusterTrustBundleProjection and PodCertificateRequest, off by default)",
        find: |s, out| {
            for (p, v) in volumes(s) {
                let sources = v
                    .projected
                    .iter()
                    .flat_map(|pr| pr.sources.iter().flatten());
                for (i, src) in sources.enumerate() {
                    if src.cluster_trust_bundle.is_some() {
                        out.push(format!("{p}.projected.sources[{i}].clusterTrustBundle"));
                    }
                    if src.pod_certificate.is_some() {
                        out.push(format!("{p}.projected.sources[{i}].podCertificate"));
                    }
                }
            }
        },
    },
];

/// The admit handler rejecting pods that use a field of [`UNSUPPORTED_POD_FEATURES`].
#[derive(Debug, Clone, Copy, Default)]
pub struct UnsupportedPodFeatures;

impl PodAdmitHandler for UnsupportedPodFeatures {
    fn admit(&self, attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult {
        let Some(spec) = attrs.pod.spec.as_ref() else {
            return PodAdmitResult::admit();
        };
        let used: Vec<String> = UNSUPPORTED_POD_FEATURES
            .iter()
            .flat_map(|f| f.find(spec))
            .collect();
        if used.is_empty() {
            return PodAdmitResult::admit();
        }
        PodAdmitResult::reject(
            UNSUPPORTED_POD_FEATURE_REASON,
            format!("kubelet-rs does not support {} yet", used.join(", ")),
        )
    }
}

/// The Markdown page documenting [`UNSUPPORTED_POD_FEATURES`] (`docs/pod-features.md`).
pub fn markdown() -> String {
    let mut s = String::from(
        "# Pod fields kubelet-rs does not support yet\n\n\
         <!-- Generated from crates/admission/src/features.rs (UNSUPPORTED_POD_FEATURES); \
         a test keeps this file equal to it. -->\n\n\
         A pod that uses one of these fields is not run differently from what it asks for: \
         it is rejected at admission, ends in phase `Failed` with reason \
         `UnsupportedPodFeature`, and its message names each field path it uses \
         (for example `Pod was rejected: kubelet-rs does not support \
         spec.hostUsers yet`). Nothing of it reaches the container runtime.\n\n\
         | Field | What upstream does with it |\n| --- | --- |\n",
    );
    for f in UNSUPPORTED_POD_FEATURES {
        s.push_str(&format!("| `{}` | {} |\n", f.field, f.upstream));
    }
    s
}

#[cfg(test)]
#[path = "features_tests.rs"]
mod tests;
