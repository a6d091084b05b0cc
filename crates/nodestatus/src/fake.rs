//! A recording in-memory [`NodeApi`]: Nodes and Leases with resource versions and UIDs,
//! strategic merge patches applied as the apiserver would, update conflicts on stale
//! resource versions, a call log, and injected failures.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use serde_json::Value;

use crate::api::{ApiError, NodeApi};
use crate::patch::apply_strategic_merge_patch;

#[derive(Debug, Default)]
struct FakeState {
    nodes: BTreeMap<String, Node>,
    leases: BTreeMap<(String, String), Lease>,
    resource_version: u64,
    calls: Vec<String>,
    patches: Vec<Value>,
    /// Failures returned by the next calls whose log line starts with the key.
    failures: VecDeque<(String, ApiError)>,
    /// Every call fails with this (the API server is unreachable).
    down: Option<ApiError>,
    /// When each call was made (tokio time), for back-off tests on paused time.
    call_times: Vec<tokio::time::Instant>,
}

/// The fake API server. Clones share state.
#[derive(Debug, Clone, Default)]
pub struct FakeNodeApi {
    state: Arc<Mutex<FakeState>>,
}

/// An unreachable API server's error.
pub fn connection_refused() -> ApiError {
    ApiError::Transport("dial tcp 127.0.0.1:6443: connect: connection refused".into())
}

impl FakeNodeApi {
    fn with<R>(&self, f: impl FnOnce(&mut FakeState) -> R) -> R {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The calls made so far (`create node n`, `get node n rv=0`, `patch node status n`,
    /// `get lease kube-node-lease/n`, `create lease ...`, `update lease ...`).
    pub fn calls(&self) -> Vec<String> {
        self.with(|s| s.calls.clone())
    }

    /// The calls and when they were made; forgets them.
    pub fn take_calls(&self) -> Vec<(String, tokio::time::Instant)> {
        self.with(|s| {
            let calls = std::mem::take(&mut s.calls);
            let times = std::mem::take(&mut s.call_times);
            calls.into_iter().zip(times).collect()
        })
    }

    /// The status patches received.
    pub fn patches(&self) -> Vec<Value> {
        self.with(|s| s.patches.clone())
    }

    /// The stored Node.
    pub fn node(&self, name: &str) -> Option<Node> {
        self.with(|s| s.nodes.get(name).cloned())
    }

    /// Stores (or replaces) a Node as if someone else had written it.
    pub fn put_node(&self, mut node: Node) {
        self.with(|s| {
            s.resource_version += 1;
            node.metadata.resource_version = Some(s.resource_version.to_string());
            let name = node.metadata.name.clone().unwrap_or_default();
            node.metadata
                .uid
                .get_or_insert_with(|| format!("uid-{name}"));
            s.nodes.insert(name, node);
        });
    }

    /// The stored Lease.
    pub fn lease(&self, namespace: &str, name: &str) -> Option<Lease> {
        self.with(|s| s.leases.get(&(namespace.into(), name.into())).cloned())
    }

    /// Replaces a Lease as another writer would (a new resource version, not logged).
    pub fn update_lease_as_other(&self, mut lease: Lease) {
        self.with(|s| {
            s.resource_version += 1;
            lease.metadata.resource_version = Some(s.resource_version.to_string());
            s.leases.insert(lease_key(&lease), lease);
        });
    }

    /// Makes the next call whose log line starts with `call` fail with `err`.
    pub fn fail_next(&self, call: &str, err: ApiError) {
        self.with(|s| s.failures.push_back((call.to_string(), err)));
    }

    /// Makes every call fail with a connection error (`true`) or work again.
    pub fn set_down(&self, down: bool) {
        self.with(|s| s.down = down.then(connection_refused));
    }

    fn call(&self, line: String) -> Result<(), ApiError> {
        self.with(|s| {
            s.calls.push(line.clone());
            s.call_times.push(tokio::time::Instant::now());
            if let Some(e) = &s.down {
                return Err(e.clone());
            }
            if let Some(i) = s
                .failures
                .iter()
                .position(|(k, _)| line.starts_with(k.as_str()))
                && let Some((_, e)) = s.failures.remove(i)
            {
                return Err(e);
            }
            Ok(())
        })
    }
}

fn not_found(kind: &str, name: &str) -> ApiError {
    ApiError::status(404, "NotFound", format!("{kind} \"{name}\" not found"))
}

fn lease_key(lease: &Lease) -> (String, String) {
    (
        lease.metadata.namespace.clone().unwrap_or_default(),
        lease.metadata.name.clone().unwrap_or_default(),
    )
}

#[async_trait]
impl NodeApi for FakeNodeApi {
    async fn create_node(&self, node: &Node) -> Result<Node, ApiError> {
        let name = node.metadata.name.clone().unwrap_or_default();
        self.call(format!("create node {name}"))?;
        if self.node(&name).is_some() {
            return Err(ApiError::status(
                409,
                "AlreadyExists",
                format!("nodes \"{name}\" already exists"),
            ));
        }
        self.put_node(node.clone());
        self.node(&name).ok_or_else(|| not_found("nodes", &name))
    }

    async fn get_node(&self, name: &str, from_cache: bool) -> Result<Node, ApiError> {
        let rv = if from_cache { " rv=0" } else { "" };
        self.call(format!("get node {name}{rv}"))?;
        self.node(name).ok_or_else(|| not_found("nodes", name))
    }

    async fn patch_node_status(&self, name: &str, patch: &Value) -> Result<Node, ApiError> {
        self.call(format!("patch node status {name}"))?;
        let node = self.node(name).ok_or_else(|| not_found("nodes", name))?;
        let original =
            serde_json::to_value(&node).map_err(|e| ApiError::Transport(e.to_string()))?;
        let patched = apply_strategic_merge_patch(&original, patch);
        let mut new: Node = serde_json::from_value(patched)
            .map_err(|e| ApiError::status(422, "Invalid", e.to_string()))?;
        // The status subresource keeps the spec.
        new.spec = node.spec;
        self.with(|s| s.patches.push(patch.clone()));
        self.put_node(new);
        self.node(name).ok_or_else(|| not_found("nodes", name))
    }

    async fn get_lease(&self, namespace: &str, name: &str) -> Result<Lease, ApiError> {
        self.call(format!("get lease {namespace}/{name}"))?;
        self.lease(namespace, name)
            .ok_or_else(|| not_found("leases.coordination.k8s.io", name))
    }

    async fn create_lease(&self, lease: &Lease) -> Result<Lease, ApiError> {
        let (ns, name) = lease_key(lease);
        self.call(format!("create lease {ns}/{name}"))?;
        self.with(|s| {
            if s.leases.contains_key(&(ns.clone(), name.clone())) {
                return Err(ApiError::status(
                    409,
                    "AlreadyExists",
                    format!("leases.coordination.k8s.io \"{name}\" already exists"),
                ));
            }
            s.resource_version += 1;
            let mut l = lease.clone();
            l.metadata.resource_version = Some(s.resource_version.to_string());
            s.leases.insert((ns, name), l.clone());
            Ok(l)
        })
    }

    async fn update_lease(&self, lease: &Lease) -> Result<Lease, ApiError> {
        let (ns, name) = lease_key(lease);
        self.call(format!("update lease {ns}/{name}"))?;
        self.with(|s| {
            let Some(current) = s.leases.get(&(ns.clone(), name.clone())) else {
                return Err(not_found("leases.coordination.k8s.io", &name));
            };
            if current.metadata.resource_version != lease.metadata.resource_version {
                return Err(ApiError::status(
                    409,
                    "Conflict",
                    format!(
                        "Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
                    ),
                ));
            }
            s.resource_version += 1;
            let mut l = lease.clone();
            l.metadata.resource_version = Some(s.resource_version.to_string());
            s.leases.insert((ns, name), l.clone());
            Ok(l)
        })
    }
}
