//! A container's environment (upstream `makeEnvironmentVariables`,
//! `podFieldSelectorRuntimeValue` and `containerResourceRuntimeValue` in
//! `pkg/kubelet/kubelet_pods.go`, `pkg/api/v1/resource` `ExtractContainerResourceValue`).
//!
//! `envFrom` first, then `env` in order, each value `$(VAR)`-expanded against what was
//! declared before it. Unlike Go (map order) the result keeps declaration order.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, ResourceFieldSelector};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::error::RuntimeManagerError;
use crate::expansion::{expand, syntax_wrap};
use crate::quantity;

/// ConfigMaps and Secrets referenced by `env`/`envFrom` (the kubelet's API-backed managers).
pub trait EnvObjects: Send + Sync {
    /// Data of a ConfigMap; `Ok(None)` when it does not exist.
    fn config_map(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<BTreeMap<String, String>>, String>;
    /// Data of a Secret, decoded; `Ok(None)` when it does not exist.
    fn secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<BTreeMap<String, String>>, String>;
}

/// Standalone mode: there is no API server, so no ConfigMap or Secret exists.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoEnvObjects;

impl EnvObjects for NoEnvObjects {
    fn config_map(&self, _: &str, _: &str) -> Result<Option<BTreeMap<String, String>>, String> {
        Ok(None)
    }
    fn secret(&self, _: &str, _: &str) -> Result<Option<BTreeMap<String, String>>, String> {
        Ok(None)
    }
}

/// Node facts the downward API exposes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeEnvInfo {
    /// `status.hostIPs`.
    pub host_ips: Vec<String>,
    /// Allocatable CPU in millicores, the default for unset `limits.cpu`.
    pub allocatable_milli_cpu: i64,
    /// Allocatable memory in bytes, the default for unset `limits.memory`.
    pub allocatable_memory: i64,
    /// Allocatable ephemeral storage in bytes.
    pub allocatable_ephemeral_storage: i64,
}

#[derive(Default)]
struct Env(Vec<(String, String)>);

impl Env {
    fn set(&mut self, k: String, v: String) {
        match self.0.iter_mut().find(|(name, _)| *name == k) {
            Some(slot) => slot.1 = v,
            None => self.0.push((k, v)),
        }
    }
    fn get(&self, k: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.clone())
    }
}

fn err(msg: String) -> RuntimeManagerError {
    RuntimeManagerError::InvalidPod(msg)
}

/// Builds the environment of `container` in `pod`.
pub fn make_environment_variables(
    pod: &Pod,
    container: &Container,
    pod_ips: &[String],
    node: &NodeEnvInfo,
    objects: &dyn EnvObjects,
) -> Result<Vec<(String, String)>, RuntimeManagerError> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let mut env = Env::default();
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.clone().unwrap_or_default();
        let (kind, name, optional, data) = if let Some(r) = &from.config_map_ref {
            (
                "configmap",
                r.name.clone(),
                r.optional,
                objects.config_map(ns, &r.name),
            )
        } else if let Some(r) = &from.secret_ref {
            (
                "secret",
                r.name.clone(),
                r.optional,
                objects.secret(ns, &r.name),
            )
        } else {
            continue;
        };
        match data.map_err(|e| err(format!("couldn't get {kind} {ns}/{name}: {e}")))? {
            Some(data) => data
                .into_iter()
                .for_each(|(k, v)| env.set(format!("{prefix}{k}"), v)),
            None if optional == Some(true) => {}
            None => return Err(err(format!("{kind} {name:?} not found"))),
        }
    }
    for var in container.env.iter().flatten() {
        let value = match (
            var.value.as_deref().filter(|v| !v.is_empty()),
            &var.value_from,
        ) {
            (Some(v), _) => expand(v, &|name: &str| {
                env.get(name).unwrap_or_else(|| syntax_wrap(name))
            }),
            (None, Some(from)) => {
                if let Some(f) = &from.field_ref {
                    pod_field_value(pod, &f.field_path, pod_ips, node)?
                } else if let Some(r) = &from.resource_field_ref {
                    container_resource_value(pod, container, r, node)?
                } else if let Some(k) = &from.config_map_key_ref {
                    match lookup(
                        objects.config_map(ns, &k.name),
                        "configmap",
                        ns,
                        &k.name,
                        &k.key,
                    )? {
                        Some(v) => v,
                        None if k.optional == Some(true) => continue,
                        None => {
                            return Err(err(format!(
                                "couldn't find key {} in ConfigMap {ns}/{}",
                                k.key, k.name
                            )));
                        }
                    }
                } else if let Some(k) = &from.secret_key_ref {
                    match lookup(objects.secret(ns, &k.name), "secret", ns, &k.name, &k.key)? {
                        Some(v) => v,
                        None if k.optional == Some(true) => continue,
                        None => {
                            return Err(err(format!(
                                "couldn't find key {} in Secret {ns}/{}",
                                k.key, k.name
                            )));
                        }
                    }
                } else {
                    String::new()
                }
            }
            (None, None) => String::new(),
        };
        env.set(var.name.clone(), value);
    }
    Ok(env.0)
}

fn lookup(
    data: Result<Option<BTreeMap<String, String>>, String>,
    kind: &str,
    ns: &str,
    name: &str,
    key: &str,
) -> Result<Option<String>, RuntimeManagerError> {
    let data = data.map_err(|e| err(format!("couldn't get {kind} {ns}/{name}: {e}")))?;
    Ok(data.and_then(|d| d.get(key).cloned()))
}

fn bracket_key<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(prefix)?.strip_prefix("['")?;
    rest.strip_suffix("']")
}

fn format_map(m: Option<&BTreeMap<String, String>>) -> String {
    m.into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", kubelet_apimachinery::go_quote(v)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `podFieldSelectorRuntimeValue` / `fieldpath.ExtractFieldPathAsString`.
pub fn pod_field_value(
    pod: &Pod,
    path: &str,
    pod_ips: &[String],
    node: &NodeEnvInfo,
) -> Result<String, RuntimeManagerError> {
    let m = &pod.metadata;
    let spec = pod.spec.as_ref();
    let v = match path {
        "metadata.name" => m.name.clone().unwrap_or_default(),
        "metadata.namespace" => m.namespace.clone().unwrap_or_default(),
        "metadata.uid" => m.uid.clone().unwrap_or_default(),
        "metadata.labels" => format_map(m.labels.as_ref()),
        "metadata.annotations" => format_map(m.annotations.as_ref()),
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()).unwrap_or_default(),
        "spec.serviceAccountName" => spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default(),
        "status.hostIP" => node.host_ips.first().cloned().unwrap_or_default(),
        "status.hostIPs" => node.host_ips.join(","),
        "status.podIP" => pod_ips.first().cloned().unwrap_or_default(),
        "status.podIPs" => pod_ips.join(","),
        other => {
            if let Some(k) = bracket_key(other, "metadata.labels") {
                m.labels
                    .as_ref()
                    .and_then(|l| l.get(k).cloned())
                    .unwrap_or_default()
            } else if let Some(k) = bracket_key(other, "metadata.annotations") {
                m.annotations
                    .as_ref()
                    .and_then(|a| a.get(k).cloned())
                    .unwrap_or_default()
            } else {
                return Err(err(format!("unsupported fieldPath: {other}")));
            }
        }
    };
    Ok(v)
}

/// `containerResourceRuntimeValue`: requests/limits of a container, limits defaulting
/// to node allocatable, divided by the divisor and rounded up.
pub fn container_resource_value(
    pod: &Pod,
    current: &Container,
    sel: &ResourceFieldSelector,
    node: &NodeEnvInfo,
) -> Result<String, RuntimeManagerError> {
    let target = match sel.container_name.as_deref().filter(|n| !n.is_empty()) {
        None => current,
        Some(name) => pod
            .spec
            .iter()
            .flat_map(|s| {
                s.containers
                    .iter()
                    .chain(s.init_containers.iter().flatten())
            })
            .find(|c| c.name == name)
            .ok_or_else(|| {
                err(format!(
                    "container {name:?} not found in pod for resourceFieldRef"
                ))
            })?,
    };
    let res = target.resources.as_ref();
    let get = |kind: &str, name: &str| {
        let m = if kind == "limits" {
            res.and_then(|r| r.limits.as_ref())
        } else {
            res.and_then(|r| r.requests.as_ref())
        };
        m.and_then(|m| m.get(name)).cloned()
    };
    let one = Quantity("1".to_string());
    let divisor = sel.divisor.as_ref().unwrap_or(&one);
    let (kind, name) = sel
        .resource
        .split_once('.')
        .ok_or_else(|| err(format!("unsupported container resource: {}", sel.resource)))?;
    let q = get(kind, name);
    match name {
        "cpu" => {
            let milli = match q {
                Some(q) => quantity::milli_value(&q)?,
                None if kind == "limits" => node.allocatable_milli_cpu,
                None => 0,
            };
            Ok(ceil_div(milli, quantity::milli_value(divisor)?).to_string())
        }
        "memory" | "ephemeral-storage" => {
            let default = if name == "memory" {
                node.allocatable_memory
            } else {
                node.allocatable_ephemeral_storage
            };
            let v = match q {
                Some(q) => quantity::value(&q)?,
                None if kind == "limits" => default,
                None => 0,
            };
            Ok(ceil_div(v, quantity::value(divisor)?).to_string())
        }
        _ if name.starts_with("hugepages-") => {
            let v = q.map(|q| quantity::value(&q)).transpose()?.unwrap_or(0);
            Ok(ceil_div(v, quantity::value(divisor)?).to_string())
        }
        _ => Err(err(format!(
            "unsupported container resource: {}",
            sel.resource
        ))),
    }
}

fn ceil_div(v: i64, d: i64) -> i64 {
    if d <= 0 {
        return v;
    }
    (v + d - 1).div_euclid(d)
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
