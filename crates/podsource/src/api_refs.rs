//! Static pods may not reference API objects (`podutil.HasAPIObjectReference`, used by
//! `common.go` behind the `PreventStaticPodAPIReferences` gate, on by default since 1.34).

use k8s_openapi::api::core::v1::{Container, EnvFromSource, EnvVar, Pod, PodSpec, Volume};

/// The plural resource a static pod refers to, or `None` when it refers to none.
pub fn api_object_reference(pod: &Pod) -> Option<&'static str> {
    let spec = pod.spec.as_ref()?;
    let non_empty = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
    if non_empty(&spec.service_account_name) || non_empty(&spec.service_account) {
        return Some("serviceaccounts");
    }
    if references_secrets(spec) {
        return Some("secrets");
    }
    if references_config_maps(spec) {
        return Some("configmaps");
    }
    if spec.resource_claims.as_ref().is_some_and(|c| !c.is_empty()) {
        return Some("resourceclaims");
    }
    spec.volumes.iter().flatten().find_map(volume_reference)
}

fn containers(
    spec: &PodSpec,
) -> impl Iterator<Item = (Option<&[EnvVar]>, Option<&[EnvFromSource]>)> {
    let regular = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers);
    let regular = regular.map(|c: &Container| (c.env.as_deref(), c.env_from.as_deref()));
    let ephemeral = spec.ephemeral_containers.iter().flatten();
    regular.chain(ephemeral.map(|c| (c.env.as_deref(), c.env_from.as_deref())))
}

fn references_secrets(spec: &PodSpec) -> bool {
    if spec
        .image_pull_secrets
        .as_ref()
        .is_some_and(|s| !s.is_empty())
    {
        return true;
    }
    let in_env = containers(spec).any(|(env, env_from)| {
        env.into_iter().flatten().any(|e| {
            e.value_from
                .as_ref()
                .is_some_and(|f| f.secret_key_ref.is_some())
        }) || env_from
            .into_iter()
            .flatten()
            .any(|e| e.secret_ref.is_some())
    });
    in_env || spec.volumes.iter().flatten().any(volume_has_secret)
}

fn volume_has_secret(v: &Volume) -> bool {
    let projected = v
        .projected
        .as_ref()
        .is_some_and(|p| p.sources.iter().flatten().any(|s| s.secret.is_some()));
    v.secret.is_some()
        || projected
        || v.azure_file.is_some()
        || v.cephfs.as_ref().is_some_and(|c| c.secret_ref.is_some())
        || v.cinder.as_ref().is_some_and(|c| c.secret_ref.is_some())
        || v.flex_volume
            .as_ref()
            .is_some_and(|c| c.secret_ref.is_some())
        || v.rbd.as_ref().is_some_and(|c| c.secret_ref.is_some())
        || v.scale_io.is_some()
        || v.iscsi.as_ref().is_some_and(|c| c.secret_ref.is_some())
        || v.storageos.as_ref().is_some_and(|c| c.secret_ref.is_some())
        || v.csi
            .as_ref()
            .is_some_and(|c| c.node_publish_secret_ref.is_some())
}

fn references_config_maps(spec: &PodSpec) -> bool {
    let in_env = containers(spec).any(|(env, env_from)| {
        env.into_iter().flatten().any(|e| {
            e.value_from
                .as_ref()
                .is_some_and(|f| f.config_map_key_ref.is_some())
        }) || env_from
            .into_iter()
            .flatten()
            .any(|e| e.config_map_ref.is_some())
    });
    let in_volumes = spec.volumes.iter().flatten().any(|v| {
        v.config_map.is_some()
            || v.projected
                .as_ref()
                .is_some_and(|p| p.sources.iter().flatten().any(|s| s.config_map.is_some()))
    });
    in_env || in_volumes
}

fn volume_reference(v: &Volume) -> Option<&'static str> {
    if v.csi.is_some() {
        return Some("csidrivers (via CSI volumes)");
    }
    if v.glusterfs.is_some() {
        return Some("endpoints (via glusterFS volumes)");
    }
    if v.persistent_volume_claim.is_some() {
        return Some("persistentvolumeclaims");
    }
    if v.ephemeral.is_some() {
        return Some("persistentvolumeclaims (via ephemeral volumes)");
    }
    let projected = v.projected.as_ref()?;
    projected.sources.iter().flatten().find_map(|s| {
        if s.service_account_token.is_some() {
            Some("serviceaccounts (via projected volumes)")
        } else if s.cluster_trust_bundle.is_some() {
            Some("clustertrustbundles")
        } else if s.pod_certificate.is_some() {
            Some("podcertificates")
        } else {
            None
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::decode::decode_pod;

    fn refs(spec_yaml: &str) -> Option<&'static str> {
        let y = format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n{spec_yaml}");
        api_object_reference(&decode_pod(y.as_bytes()).unwrap().value)
    }

    const C: &str = "  containers:\n  - name: c\n    image: i\n";

    #[test]
    fn plain_pod_has_no_reference() {
        let y = format!(
            "{C}  volumes:\n  - name: h\n    hostPath:\n      path: /x\n  - name: e\n    emptyDir: {{}}\n  - name: d\n    projected:\n      sources:\n      - downwardAPI:\n          items: []\n"
        );
        assert_eq!(refs(&y), None);
    }

    #[test]
    fn finds_each_kind_of_reference() {
        assert_eq!(
            refs(&format!("  serviceAccountName: sa\n{C}")),
            Some("serviceaccounts")
        );
        assert_eq!(
            refs(&format!("  imagePullSecrets:\n  - name: s\n{C}")),
            Some("secrets")
        );
        let env = "    env:\n    - name: X\n      valueFrom:\n        configMapKeyRef:\n          name: cm\n          key: k\n";
        assert_eq!(refs(&format!("{C}{env}")), Some("configmaps"));
        let vol = "  volumes:\n  - name: v\n    secret:\n      secretName: s\n";
        assert_eq!(refs(&format!("{C}{vol}")), Some("secrets"));
        let pvc = "  volumes:\n  - name: v\n    persistentVolumeClaim:\n      claimName: c\n";
        assert_eq!(refs(&format!("{C}{pvc}")), Some("persistentvolumeclaims"));
        let token = "  volumes:\n  - name: v\n    projected:\n      sources:\n      - serviceAccountToken:\n          path: t\n";
        assert_eq!(
            refs(&format!("{C}{token}")),
            Some("serviceaccounts (via projected volumes)")
        );
    }
}
