//! A container's environment (upstream `makeEnvironmentVariables`,
//! `podFieldSelectorRuntimeValue` and `containerResourceRuntimeValue` in
//! `pkg/kubelet/kubelet_pods.go`, `pkg/api/v1/resource` `ExtractContainerResourceValue`).
//!
//! `envFrom` first, then `env` in order, each value `$(VAR)`-expanded against what was
//! declared before it. Unlike Go (map order) the result keeps declaration order.
//!
//! ConfigMaps and Secrets come through [`EnvObjects`] (the kubelet's managers, crate
//! kubelet-objects), each read once per container; the errors are upstream's, and become
//! the container's `CreateContainerConfigError` message: the manager's for a missing object
//! (`configmap "x" not found`; skipped when `optional`), `couldn't find key k in ConfigMap
//! ns/x` for a missing key. Upstream 1.35 no longer drops `envFrom` keys that are not valid
//! variable names (no `InvalidEnvironmentVariableNames` event): neither does this.
//!
//! `fileKeyRef` (feature gate `EnvFiles`) reads the key from a file in one of the pod's
//! volumes (an emptyDir an init container wrote, `<root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>`):
//! the path is joined as upstream's `securejoin.SecureJoin` does (symlinks resolved as if
//! the volume were `/`), then opened component by component refusing symlinks, so nothing
//! outside the volume is ever read. The format and its errors are [`crate::env_file`]'s; as
//! upstream, a file that is missing or malformed fails the container with `couldn't parse
//! env file` (even when `optional`: that only tolerates a missing key), and a missing key
//! with `environment variable key "K" not found in file "<path>"`. With the gate off the
//! source is ignored and the variable is set, empty, as upstream's switch does.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Container, FileKeySelector, Pod, ResourceFieldSelector, Service};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::env_file::parse_env;
use crate::error::RuntimeManagerError;
use crate::expansion::{expand, syntax_wrap};
use crate::os::OsInterface;
use crate::quantity;
use crate::volumes::VolumeHost;

/// Why a ConfigMap or Secret could not be read (the text is the error upstream's managers
/// return, which becomes the `CreateContainerConfigError` message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvObjectError {
    /// The object does not exist (upstream `apierrors.IsNotFound`: `optional` references
    /// tolerate it), e.g. `configmap "x" not found`.
    #[error("{0}")]
    NotFound(String),
    /// Any other failure.
    #[error("{0}")]
    Other(String),
}

/// ConfigMaps and Secrets referenced by `env`/`envFrom` (the kubelet's `configMapManager`
/// and `secretManager`).
#[async_trait]
pub trait EnvObjects: Send + Sync {
    /// `data` of ConfigMap `namespace/name` (upstream `GetConfigMap`).
    async fn config_map(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<BTreeMap<String, String>, EnvObjectError>;
    /// `data` of Secret `namespace/name`, each value as Go's `string(bytes)` (upstream
    /// `GetSecret`).
    async fn secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<BTreeMap<String, String>, EnvObjectError>;
    /// Every Service, for the service environment variables (upstream `serviceLister.List`);
    /// `Ok(None)` without an API client (upstream: no service variables at all). An error
    /// before the Service informer's first list (upstream `serviceHasSynced`).
    async fn services(&self) -> Result<Option<Vec<Service>>, EnvObjectError> {
        Ok(None)
    }
}

/// Standalone mode: no API client, so every reference fails as upstream's does when
/// `kubeClient` is nil (even an optional one).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoEnvObjects;

#[async_trait]
impl EnvObjects for NoEnvObjects {
    async fn config_map(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<BTreeMap<String, String>, EnvObjectError> {
        Err(EnvObjectError::Other(format!(
            "couldn't get configMap {namespace}/{name}, no kubeClient defined"
        )))
    }
    async fn secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<BTreeMap<String, String>, EnvObjectError> {
        Err(EnvObjectError::Other(format!(
            "couldn't get secret {namespace}/{name}, no kubeClient defined"
        )))
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

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    ConfigMap,
    Secret,
}

/// The objects one `makeEnvironmentVariables` call has read (upstream's `configMaps` and
/// `secrets` maps): each is fetched once per container.
struct Fetched<'a> {
    objects: &'a dyn EnvObjects,
    namespace: &'a str,
    seen: HashMap<(Kind, String), BTreeMap<String, String>>,
}

impl Fetched<'_> {
    /// The object's data; `Ok(None)` when it is missing and `optional` (upstream skips the
    /// reference); a missing non-optional object or any other error fails the container.
    async fn get(
        &mut self,
        kind: Kind,
        name: &str,
        optional: Option<bool>,
    ) -> Result<Option<&BTreeMap<String, String>>, RuntimeManagerError> {
        let key = (kind, name.to_string());
        if !self.seen.contains_key(&key) {
            let fetched = match kind {
                Kind::ConfigMap => self.objects.config_map(self.namespace, name).await,
                Kind::Secret => self.objects.secret(self.namespace, name).await,
            };
            match fetched {
                Ok(data) => {
                    self.seen.insert(key.clone(), data);
                }
                Err(EnvObjectError::NotFound(_)) if optional == Some(true) => return Ok(None),
                Err(e) => return Err(err(e.to_string())),
            }
        }
        Ok(self.seen.get(&key))
    }
}

/// Where `fileKeyRef` variables are read (upstream: the pod's mounted volumes, the host
/// filesystem); `make_environment_variables` gets `None` when the `EnvFiles` gate is off.
#[derive(Clone, Copy)]
pub struct EnvFiles<'a> {
    /// The host filesystem.
    pub os: &'a dyn OsInterface,
    /// The pod's volumes.
    pub volumes: &'a dyn VolumeHost,
}

impl EnvFiles<'_> {
    /// The `fileKeyRef` case of `makeEnvironmentVariables`: `Ok(None)` when the key is not
    /// in the file (or empty) and the reference is `optional`.
    fn value(&self, pod: &Pod, f: &FileKeySelector) -> Result<Option<String>, RuntimeManagerError> {
        let volume = pod
            .spec
            .iter()
            .flat_map(|s| s.volumes.iter().flatten())
            .find(|v| v.name == f.volume_name)
            .ok_or_else(|| {
                err(format!(
                    "cannot find the volume {:?} referenced by FileKeyRef",
                    f.volume_name
                ))
            })?;
        let host_path = self.volumes.volume_path(pod, volume).map_err(|e| {
            err(format!(
                "failed to get host path for volume {:?}: {e}",
                f.volume_name
            ))
        })?;
        let env_file_path = self
            .os
            .secure_join(&host_path, &f.path)
            .map_err(|e| err(e.to_string()))?;
        let shown = env_file_path.to_string_lossy();
        let parsed = self
            .os
            .open_in_base(&env_file_path, &host_path)
            .map_err(|e| crate::env_file::ParseEnvError::Open {
                path: shown.to_string(),
                source: e,
            })
            .and_then(|file| parse_env(std::io::BufReader::new(file), &shown, &f.key));
        let value = match parsed {
            Ok(v) => v,
            Err(e) => {
                let pod_ref = format!(
                    "{}/{}",
                    pod.metadata.namespace.as_deref().unwrap_or_default(),
                    pod.metadata.name.as_deref().unwrap_or_default()
                );
                tracing::error!(error = %e, pod = %pod_ref, "Failed to parse env file");
                return Err(err("couldn't parse env file".to_string()));
            }
        };
        if !value.is_empty() {
            return Ok(Some(value));
        }
        if f.optional == Some(true) {
            return Ok(None);
        }
        Err(err(format!(
            "environment variable key {} not found in file {}",
            kubelet_apimachinery::go_quote(&f.key),
            kubelet_apimachinery::go_quote(&shown)
        )))
    }
}

/// Builds the environment of `container` in `pod` (upstream `makeEnvironmentVariables`,
/// without the service links). `files` is `None` when the `EnvFiles` gate is off.
pub async fn make_environment_variables(
    pod: &Pod,
    container: &Container,
    pod_ips: &[String],
    node: &NodeEnvInfo,
    objects: &dyn EnvObjects,
    files: Option<EnvFiles<'_>>,
) -> Result<Vec<(String, String)>, RuntimeManagerError> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    // `getServiceEnvVarMap` (the API server's defaulting always sets enableServiceLinks).
    let enable_service_links = pod
        .spec
        .as_ref()
        .and_then(|s| s.enable_service_links)
        .unwrap_or(true);
    let service_env = match objects.services().await.map_err(|e| err(e.to_string()))? {
        Some(services) => crate::envvars::service_env_var_map(&services, ns, enable_service_links),
        None => BTreeMap::new(),
    };
    let mut fetched = Fetched {
        objects,
        namespace: ns,
        seen: HashMap::new(),
    };
    let mut env = Env::default();
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.as_deref().unwrap_or_default();
        let data = if let Some(r) = &from.config_map_ref {
            fetched.get(Kind::ConfigMap, &r.name, r.optional).await?
        } else if let Some(r) = &from.secret_ref {
            fetched.get(Kind::Secret, &r.name, r.optional).await?
        } else {
            continue;
        };
        for (k, v) in data.into_iter().flatten() {
            env.set(format!("{prefix}{k}"), v.clone());
        }
    }
    for var in container.env.iter().flatten() {
        let value = match (
            var.value.as_deref().filter(|v| !v.is_empty()),
            &var.value_from,
        ) {
            (Some(v), _) => expand(v, &|name: &str| {
                env.get(name)
                    .or_else(|| service_env.get(name).cloned())
                    .unwrap_or_else(|| syntax_wrap(name))
            }),
            (None, Some(from)) => {
                if let Some(f) = &from.field_ref {
                    pod_field_value(pod, &f.field_path, pod_ips, node)?
                } else if let Some(r) = &from.resource_field_ref {
                    container_resource_value(pod, container, r, node)?
                } else if let Some(k) = &from.config_map_key_ref {
                    let Some(data) = fetched.get(Kind::ConfigMap, &k.name, k.optional).await?
                    else {
                        continue;
                    };
                    match data.get(&k.key) {
                        Some(v) => v.clone(),
                        None if k.optional == Some(true) => continue,
                        None => {
                            return Err(err(format!(
                                "couldn't find key {} in ConfigMap {ns}/{}",
                                k.key, k.name
                            )));
                        }
                    }
                } else if let Some(k) = &from.secret_key_ref {
                    let Some(data) = fetched.get(Kind::Secret, &k.name, k.optional).await? else {
                        continue;
                    };
                    match data.get(&k.key) {
                        Some(v) => v.clone(),
                        None if k.optional == Some(true) => continue,
                        None => {
                            return Err(err(format!(
                                "couldn't find key {} in Secret {ns}/{}",
                                k.key, k.name
                            )));
                        }
                    }
                } else if let (Some(files), Some(f)) = (files, &from.file_key_ref) {
                    match files.value(pod, f)? {
                        Some(v) => v,
                        None => continue,
                    }
                } else {
                    String::new()
                }
            }
            (None, None) => String::new(),
        };
        env.set(var.name.clone(), value);
    }
    // The service variables the container does not declare itself, after its own.
    for (k, v) in service_env {
        if env.get(&k).is_none() {
            env.0.push((k, v));
        }
    }
    Ok(env.0)
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
    // Upstream `ExtractContainerResourceValue`: a zero divisor (unset, or "0" as the API
    // server stores an unset one) means 1.
    let one = Quantity("1".to_string());
    let divisor = sel
        .divisor
        .as_ref()
        .filter(|d| quantity::milli_value(d).is_ok_and(|m| m != 0))
        .unwrap_or(&one);
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
