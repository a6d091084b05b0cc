//! API defaulting for pods, as the apiserver's scheme applies it while decoding a `v1.Pod`
//! (`pkg/apis/core/v1/defaults.go`: `SetDefaults_Pod`, `SetDefaults_PodSpec`,
//! `SetDefaults_Container`, `SetDefaults_Probe`, `SetDefaults_Volume`, ...).
//!
//! Only defaulting runs here, no admission: like upstream, `spec.priority` is not derived
//! from `priorityClassName` for static pods.

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, HTTPGetAction, Lifecycle, LifecycleHandler, Pod,
    PodSecurityContext, PodSpec, Probe, ResourceRequirements, Volume,
};

pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
pub const TERMINATION_MESSAGE_PATH_DEFAULT: &str = "/dev/termination-log";
const DEFAULT_FILE_MODE: i32 = 0o644;

/// Applies the scheme defaults to a pod in place.
pub fn set_defaults_pod(pod: &mut Pod) {
    let spec = pod.spec.get_or_insert_with(PodSpec::default);
    set_defaults_pod_spec(spec);
    let host_network = spec.host_network.unwrap_or(false);
    for c in all_containers_mut(spec) {
        set_defaults_container(c);
        default_requests_to_limits(c.resources.as_mut());
        if host_network {
            default_host_network_ports(c.ports.as_mut());
        }
    }
    if spec.enable_service_links.is_none() {
        spec.enable_service_links = Some(true);
    }
    for v in spec.volumes.iter_mut().flatten() {
        set_defaults_volume(v);
    }
}

fn set_defaults_pod_spec(spec: &mut PodSpec) {
    default_str(&mut spec.dns_policy, "ClusterFirst");
    default_str(&mut spec.restart_policy, "Always");
    if spec.security_context.is_none() {
        spec.security_context = Some(PodSecurityContext::default());
    }
    if spec.termination_grace_period_seconds.is_none() {
        spec.termination_grace_period_seconds = Some(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
    }
    default_str(&mut spec.scheduler_name, DEFAULT_SCHEDULER_NAME);
}

fn all_containers_mut(spec: &mut PodSpec) -> impl Iterator<Item = &mut Container> {
    spec.init_containers
        .iter_mut()
        .flatten()
        .chain(spec.containers.iter_mut())
}

fn set_defaults_container(c: &mut Container) {
    if c.image_pull_policy
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        let policy = if image_tag(c.image.as_deref().unwrap_or_default()) == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        c.image_pull_policy = Some(policy.to_string());
    }
    default_str(
        &mut c.termination_message_path,
        TERMINATION_MESSAGE_PATH_DEFAULT,
    );
    default_str(&mut c.termination_message_policy, "File");
    for p in c.ports.iter_mut().flatten() {
        set_defaults_container_port(p);
    }
    for probe in [
        &mut c.liveness_probe,
        &mut c.readiness_probe,
        &mut c.startup_probe,
    ]
    .into_iter()
    .flatten()
    {
        set_defaults_probe(probe);
    }
    if let Some(lifecycle) = c.lifecycle.as_mut() {
        set_defaults_lifecycle(lifecycle);
    }
    for env in c.env.iter_mut().flatten() {
        set_defaults_env(env);
    }
}

fn set_defaults_container_port(p: &mut ContainerPort) {
    default_str(&mut p.protocol, "TCP");
}

fn set_defaults_probe(p: &mut Probe) {
    for (field, default) in [
        (&mut p.timeout_seconds, 1),
        (&mut p.period_seconds, 10),
        (&mut p.success_threshold, 1),
        (&mut p.failure_threshold, 3),
    ] {
        if field.unwrap_or(0) == 0 {
            *field = Some(default);
        }
    }
    if let Some(h) = p.http_get.as_mut() {
        set_defaults_http_get(h);
    }
}

fn set_defaults_lifecycle(l: &mut Lifecycle) {
    for handler in [&mut l.post_start, &mut l.pre_stop].into_iter().flatten() {
        set_defaults_handler(handler);
    }
}

fn set_defaults_handler(h: &mut LifecycleHandler) {
    if let Some(g) = h.http_get.as_mut() {
        set_defaults_http_get(g);
    }
}

fn set_defaults_http_get(h: &mut HTTPGetAction) {
    default_str(&mut h.path, "/");
    default_str(&mut h.scheme, "HTTP");
}

fn set_defaults_env(env: &mut EnvVar) {
    let field_ref = env.value_from.as_mut().and_then(|v| v.field_ref.as_mut());
    if let Some(f) = field_ref {
        default_str(&mut f.api_version, "v1");
    }
}

fn set_defaults_volume(v: &mut Volume) {
    if !has_volume_source(v) {
        v.empty_dir = Some(Default::default());
    }
    if let Some(h) = v.host_path.as_mut()
        && h.type_.is_none()
    {
        h.type_ = Some(String::new());
    }
    if let Some(d) = v.downward_api.as_mut() {
        d.default_mode.get_or_insert(DEFAULT_FILE_MODE);
        for item in d.items.iter_mut().flatten() {
            if let Some(f) = item.field_ref.as_mut() {
                default_str(&mut f.api_version, "v1");
            }
        }
    }
    if let Some(s) = v.secret.as_mut() {
        s.default_mode.get_or_insert(DEFAULT_FILE_MODE);
    }
    if let Some(c) = v.config_map.as_mut() {
        c.default_mode.get_or_insert(DEFAULT_FILE_MODE);
    }
    if let Some(p) = v.projected.as_mut() {
        p.default_mode.get_or_insert(DEFAULT_FILE_MODE);
    }
    // `SetDefaults_Volume`: with `ImageVolume`, the pull policy follows the tag as a
    // container's `imagePullPolicy` does.
    if let Some(i) = v.image.as_mut()
        && kubelet_container::gates::image_volume()
        && i.pull_policy.as_deref().unwrap_or_default().is_empty()
    {
        let reference = i.reference.as_deref().unwrap_or_default();
        let policy = if image_tag(reference) == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        i.pull_policy = Some(policy.to_string());
    }
}

/// True when any volume source field is set (upstream `ptr.AllPtrFieldsNil` negated).
pub fn has_volume_source(v: &Volume) -> bool {
    volume_source_count(v) > 0
}

/// Number of volume source fields set on `v`.
pub fn volume_source_count(v: &Volume) -> usize {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::Object(m)) => m.keys().filter(|k| k.as_str() != "name").count(),
        _ => 0,
    }
}

/// If limits are set but requests are not, requests default to limits (per resource).
fn default_requests_to_limits(resources: Option<&mut ResourceRequirements>) {
    let Some(r) = resources else { return };
    let Some(limits) = r.limits.as_ref() else {
        return;
    };
    let requests = r.requests.get_or_insert_with(Default::default);
    for (name, value) in limits {
        requests
            .entry(name.clone())
            .or_insert_with(|| value.clone());
    }
}

fn default_host_network_ports(ports: Option<&mut Vec<ContainerPort>>) {
    for p in ports.into_iter().flatten() {
        if p.host_port.unwrap_or(0) == 0 {
            p.host_port = Some(p.container_port);
        }
    }
}

fn default_str(field: &mut Option<String>, default: &str) {
    if field.as_deref().unwrap_or_default().is_empty() {
        *field = Some(default.to_string());
    }
}

/// The tag of an image reference as upstream `parsers.ParseImageName` sees it: `latest`
/// when neither a tag nor a digest is given, `None` for a digest-only reference.
pub fn image_tag(image: &str) -> Option<&str> {
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last_component = name.rsplit('/').next().unwrap_or(name);
    match last_component.split_once(':') {
        Some((_, tag)) => Some(tag),
        None if digest.is_some() => None,
        None => Some("latest"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::decode::decode_pod;

    fn pod(yaml: &str) -> Pod {
        let mut p = decode_pod(yaml.as_bytes()).unwrap().value;
        set_defaults_pod(&mut p);
        p
    }

    const BASE: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n";

    #[test]
    fn pod_spec_defaults() {
        let p = pod(&format!(
            "{BASE}  containers:\n  - name: c\n    image: nginx:1.25\n"
        ));
        let s = p.spec.unwrap();
        assert_eq!(s.restart_policy.as_deref(), Some("Always"));
        assert_eq!(s.dns_policy.as_deref(), Some("ClusterFirst"));
        assert_eq!(s.termination_grace_period_seconds, Some(30));
        assert_eq!(s.scheduler_name.as_deref(), Some("default-scheduler"));
        assert_eq!(s.enable_service_links, Some(true));
        assert_eq!(s.security_context, Some(PodSecurityContext::default()));
        let c = &s.containers[0];
        assert_eq!(c.image_pull_policy.as_deref(), Some("IfNotPresent"));
        assert_eq!(
            c.termination_message_path.as_deref(),
            Some("/dev/termination-log")
        );
        assert_eq!(c.termination_message_policy.as_deref(), Some("File"));
    }

    #[test]
    fn explicit_values_are_kept() {
        let p = pod(&format!(
            "{BASE}  restartPolicy: Never\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: c\n    image: nginx\n    imagePullPolicy: Never\n"
        ));
        let s = p.spec.unwrap();
        assert_eq!(s.restart_policy.as_deref(), Some("Never"));
        assert_eq!(s.termination_grace_period_seconds, Some(0));
        assert_eq!(s.containers[0].image_pull_policy.as_deref(), Some("Never"));
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        assert_eq!(image_tag("nginx"), Some("latest"));
        assert_eq!(image_tag("nginx:latest"), Some("latest"));
        assert_eq!(image_tag("localhost:5000/nginx"), Some("latest"));
        assert_eq!(image_tag("localhost:5000/nginx:1.2"), Some("1.2"));
        assert_eq!(image_tag("nginx@sha256:abc"), None);
        assert_eq!(image_tag("nginx:1@sha256:abc"), Some("1"));
        let p = pod(&format!(
            "{BASE}  initContainers:\n  - name: i\n    image: busybox\n  containers:\n  - name: c\n    image: nginx@sha256:abc\n"
        ));
        let s = p.spec.unwrap();
        assert_eq!(
            s.init_containers.unwrap()[0].image_pull_policy.as_deref(),
            Some("Always")
        );
        assert_eq!(
            s.containers[0].image_pull_policy.as_deref(),
            Some("IfNotPresent")
        );
    }

    #[test]
    fn ports_probes_and_resources() {
        let p = pod(&format!(
            "{BASE}  hostNetwork: true\n  containers:\n  - name: c\n    image: i\n    ports:\n    - containerPort: 80\n    livenessProbe:\n      httpGet:\n        port: 80\n    resources:\n      limits:\n        cpu: 1\n      requests:\n        memory: 1Gi\n"
        ));
        let c = &p.spec.unwrap().containers[0];
        let port = &c.ports.as_ref().unwrap()[0];
        assert_eq!(port.protocol.as_deref(), Some("TCP"));
        assert_eq!(port.host_port, Some(80));
        let probe = c.liveness_probe.as_ref().unwrap();
        assert_eq!(
            (probe.timeout_seconds, probe.period_seconds),
            (Some(1), Some(10))
        );
        assert_eq!(
            (probe.success_threshold, probe.failure_threshold),
            (Some(1), Some(3))
        );
        let get = probe.http_get.as_ref().unwrap();
        assert_eq!(
            (get.path.as_deref(), get.scheme.as_deref()),
            (Some("/"), Some("HTTP"))
        );
        let req = c.resources.as_ref().unwrap().requests.as_ref().unwrap();
        assert_eq!(req["cpu"].0, "1");
        assert_eq!(req["memory"].0, "1Gi");
    }

    #[test]
    fn volumes_default_to_empty_dir() {
        let p = pod(&format!(
            "{BASE}  volumes:\n  - name: scratch\n  - name: host\n    hostPath:\n      path: /etc\n  containers:\n  - name: c\n    image: i\n"
        ));
        let vols = p.spec.unwrap().volumes.unwrap();
        assert!(vols[0].empty_dir.is_some());
        assert_eq!(volume_source_count(&vols[0]), 1);
        assert!(vols[1].empty_dir.is_none());
        assert_eq!(
            vols[1].host_path.as_ref().unwrap().type_.as_deref(),
            Some("")
        );
    }
}
