//! The API calls of registration, node status and the lease, behind [`NodeApi`]
//! (client-go's `CoreV1().Nodes()` and `CoordinationV1().Leases()` as the kubelet uses
//! them), with the kube-rs implementation [`KubeNodeApi`]. The recording fake is
//! [`crate::fake::FakeNodeApi`].

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, GetParams, Patch, PatchParams, PostParams};

/// `v1.NamespaceNodeLease`.
pub const NAMESPACE_NODE_LEASE: &str = "kube-node-lease";

/// An API error as `apierrors` classifies it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// The server answered with a `Status` (code, reason, message).
    #[error("{message}")]
    Status {
        code: u16,
        reason: String,
        message: String,
    },
    /// The request did not get an answer (connection refused, timeout, TLS...).
    #[error("{0}")]
    Transport(String),
}

impl ApiError {
    /// A `Status` error.
    pub fn status(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError::Status {
            code,
            reason: reason.to_string(),
            message: message.into(),
        }
    }

    fn is(&self, want_reason: &str, want_code: u16) -> bool {
        match self {
            // `apierrors.ReasonForError`, falling back to the code as `IsNotFound` & co do.
            ApiError::Status { code, reason, .. } => {
                reason == want_reason || (reason.is_empty() && *code == want_code)
            }
            ApiError::Transport(_) => false,
        }
    }

    /// `apierrors.IsAlreadyExists`.
    pub fn is_already_exists(&self) -> bool {
        self.is("AlreadyExists", 409)
    }
    /// `apierrors.IsNotFound`.
    pub fn is_not_found(&self) -> bool {
        self.is("NotFound", 404)
    }
    /// `apierrors.IsConflict`.
    pub fn is_conflict(&self) -> bool {
        self.is("Conflict", 409)
    }
    /// `apierrors.IsForbidden`.
    pub fn is_forbidden(&self) -> bool {
        self.is("Forbidden", 403)
    }
}

impl From<kube::Error> for ApiError {
    fn from(e: kube::Error) -> Self {
        match e {
            kube::Error::Api(s) => ApiError::Status {
                code: s.code,
                reason: s.reason.clone(),
                message: s.message.clone(),
            },
            other => ApiError::Transport(other.to_string()),
        }
    }
}

/// The Node and Lease calls the kubelet makes. One instance per client: registration uses
/// the main client, node status and the lease the heartbeat client (as upstream).
#[async_trait]
pub trait NodeApi: Send + Sync {
    /// `Nodes().Create`.
    async fn create_node(&self, node: &Node) -> Result<Node, ApiError>;
    /// `Nodes().Get`; `from_cache` asks for `resourceVersion=0` (any version the
    /// apiserver's watch cache has).
    async fn get_node(&self, name: &str, from_cache: bool) -> Result<Node, ApiError>;
    /// `Nodes().Patch(name, StrategicMergePatchType, patch, "status")`.
    async fn patch_node_status(
        &self,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<Node, ApiError>;
    /// `Leases(namespace).Get`.
    async fn get_lease(&self, namespace: &str, name: &str) -> Result<Lease, ApiError>;
    /// `Leases(namespace).Create`.
    async fn create_lease(&self, lease: &Lease) -> Result<Lease, ApiError>;
    /// `Leases(namespace).Update` (a PUT with the lease's resourceVersion).
    async fn update_lease(&self, lease: &Lease) -> Result<Lease, ApiError>;
}

/// [`NodeApi`] over a kube-rs client.
#[derive(Clone)]
pub struct KubeNodeApi {
    client: kube::Client,
}

impl std::fmt::Debug for KubeNodeApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeNodeApi").finish_non_exhaustive()
    }
}

impl KubeNodeApi {
    /// Calls through `client`.
    pub fn new(client: kube::Client) -> Self {
        KubeNodeApi { client }
    }

    fn nodes(&self) -> Api<Node> {
        Api::all(self.client.clone())
    }

    fn leases(&self, namespace: &str) -> Api<Lease> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

fn lease_ns_name(lease: &Lease) -> (&str, &str) {
    (
        lease.metadata.namespace.as_deref().unwrap_or_default(),
        lease.metadata.name.as_deref().unwrap_or_default(),
    )
}

#[async_trait]
impl NodeApi for KubeNodeApi {
    async fn create_node(&self, node: &Node) -> Result<Node, ApiError> {
        Ok(self.nodes().create(&PostParams::default(), node).await?)
    }

    async fn get_node(&self, name: &str, from_cache: bool) -> Result<Node, ApiError> {
        let gp = if from_cache {
            GetParams::any()
        } else {
            GetParams::default()
        };
        Ok(self.nodes().get_with(name, &gp).await?)
    }

    async fn patch_node_status(
        &self,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<Node, ApiError> {
        Ok(self
            .nodes()
            .patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await?)
    }

    async fn get_lease(&self, namespace: &str, name: &str) -> Result<Lease, ApiError> {
        Ok(self.leases(namespace).get(name).await?)
    }

    async fn create_lease(&self, lease: &Lease) -> Result<Lease, ApiError> {
        let (ns, _) = lease_ns_name(lease);
        Ok(self
            .leases(ns)
            .create(&PostParams::default(), lease)
            .await?)
    }

    async fn update_lease(&self, lease: &Lease) -> Result<Lease, ApiError> {
        let (ns, name) = lease_ns_name(lease);
        Ok(self
            .leases(ns)
            .replace(name, &PostParams::default(), lease)
            .await?)
    }
}
