//! The ConfigMaps and Secrets a pod refers to (upstream `pkg/api/v1/pod/util.go`
//! `VisitPodConfigmapNames`, `VisitPodSecretNames`; `getConfigMapNames`/`getSecretNames` of
//! the managers). Empty names are skipped (`skipEmptyNames`); transitive references
//! (pod → PVC → PV → secret) are not followed.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{EnvFromSource, EnvVar, Pod, Volume};

/// `envFrom` and `env` of one container.
type ContainerEnv<'a> = (Option<&'a Vec<EnvFromSource>>, Option<&'a Vec<EnvVar>>);

/// `env`/`envFrom` of every container: init, regular and ephemeral (`AllContainers`).
fn container_envs(pod: &Pod) -> Vec<ContainerEnv<'_>> {
    let Some(spec) = &pod.spec else {
        return Vec::new();
    };
    let init = spec.init_containers.iter().flatten();
    let regular = spec.containers.iter();
    let mut out: Vec<_> = init
        .chain(regular)
        .map(|c| (c.env_from.as_ref(), c.env.as_ref()))
        .collect();
    out.extend(
        spec.ephemeral_containers
            .iter()
            .flatten()
            .map(|c| (c.env_from.as_ref(), c.env.as_ref())),
    );
    out
}

fn volumes(pod: &Pod) -> impl Iterator<Item = &Volume> {
    pod.spec.iter().flat_map(|s| s.volumes.iter().flatten())
}

fn insert(set: &mut BTreeSet<String>, name: &str) {
    if !name.is_empty() {
        set.insert(name.to_string());
    }
}

/// Upstream `getConfigMapNames`.
pub fn config_map_names(pod: &Pod) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (env_from, env) in container_envs(pod) {
        for r in env_from
            .into_iter()
            .flatten()
            .filter_map(|e| e.config_map_ref.as_ref())
        {
            insert(&mut names, &r.name);
        }
        let keys = env
            .into_iter()
            .flatten()
            .filter_map(|e| e.value_from.as_ref());
        for r in keys.filter_map(|v| v.config_map_key_ref.as_ref()) {
            insert(&mut names, &r.name);
        }
    }
    for v in volumes(pod) {
        if let Some(p) = &v.projected {
            for s in p
                .sources
                .iter()
                .flatten()
                .filter_map(|s| s.config_map.as_ref())
            {
                insert(&mut names, &s.name);
            }
        } else if let Some(c) = &v.config_map {
            insert(&mut names, &c.name);
        }
    }
    names
}

/// Upstream `getSecretNames`.
pub fn secret_names(pod: &Pod) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for r in pod
        .spec
        .iter()
        .flat_map(|s| s.image_pull_secrets.iter().flatten())
    {
        insert(&mut names, &r.name);
    }
    for (env_from, env) in container_envs(pod) {
        for r in env_from
            .into_iter()
            .flatten()
            .filter_map(|e| e.secret_ref.as_ref())
        {
            insert(&mut names, &r.name);
        }
        let keys = env
            .into_iter()
            .flatten()
            .filter_map(|e| e.value_from.as_ref());
        for r in keys.filter_map(|v| v.secret_key_ref.as_ref()) {
            insert(&mut names, &r.name);
        }
    }
    for v in volumes(pod) {
        // Upstream's `switch`: the first set source of the volume counts.
        let name = if let Some(a) = &v.azure_file {
            Some(a.secret_name.as_str())
        } else if let Some(c) = &v.cephfs {
            c.secret_ref.as_ref().map(|r| r.name.as_str())
        } else if let Some(c) = &v.cinder {
            c.secret_ref.as_ref().map(|r| r.name.as_str())
        } else if let Some(f) = &v.flex_volume {
            f.secret_ref.as_ref().map(|r| r.name.as_str())
        } else if let Some(p) = &v.projected {
            for s in p.sources.iter().flatten().filter_map(|s| s.secret.as_ref()) {
                insert(&mut names, &s.name);
            }
            None
        } else if let Some(r) = &v.rbd {
            r.secret_ref.as_ref().map(|r| r.name.as_str())
        } else if let Some(s) = &v.secret {
            s.secret_name.as_deref()
        } else if let Some(s) = &v.scale_io {
            Some(s.secret_ref.name.as_str())
        } else if let Some(i) = &v.iscsi {
            i.secret_ref.as_ref().map(|r| r.name.as_str())
        } else if let Some(s) = &v.storageos {
            s.secret_ref.as_ref().map(|r| r.name.as_str())
        } else if let Some(c) = &v.csi {
            c.node_publish_secret_ref.as_ref().map(|r| r.name.as_str())
        } else {
            None
        };
        if let Some(n) = name {
            insert(&mut names, n);
        }
    }
    names
}
