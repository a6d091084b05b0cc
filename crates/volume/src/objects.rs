//! The API objects volume plugins read (upstream `pkg/kubelet/volume_host.go`:
//! `GetConfigMapFunc`, `GetSecretFunc`, `GetServiceAccountTokenFunc`,
//! `DeleteServiceAccountTokenFunc`), as one trait implemented above this crate.

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

/// Why an object could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    /// The object does not exist (upstream `apierrors.IsNotFound`; `optional` sources
    /// tolerate it).
    #[error("{kind} \"{name}\" not found")]
    NotFound {
        /// `configmaps`, `secrets`, `serviceaccounts`.
        kind: &'static str,
        /// The object's name.
        name: String,
    },
    /// Any other failure (API server unreachable, forbidden, no client in standalone mode).
    #[error("{0}")]
    Other(String),
}

/// ConfigMaps, Secrets and service account tokens for a pod's volumes.
#[async_trait]
pub trait VolumeObjects: Send + Sync {
    /// The ConfigMap `namespace/name` (upstream `configMapManager.GetConfigMap`).
    async fn get_config_map(&self, namespace: &str, name: &str) -> Result<ConfigMap, ObjectError>;
    /// The Secret `namespace/name` (upstream `secretManager.GetSecret`).
    async fn get_secret(&self, namespace: &str, name: &str) -> Result<Secret, ObjectError>;
    /// A token for service account `namespace/name` (upstream
    /// `tokenManager.GetServiceAccountToken`: cached, renewed once 80 % of its lifetime
    /// or 24 h have passed).
    async fn get_service_account_token(
        &self,
        namespace: &str,
        name: &str,
        request: &TokenRequest,
    ) -> Result<TokenRequest, ObjectError>;
    /// Forgets the tokens issued for pod `pod_uid` (upstream
    /// `tokenManager.DeleteServiceAccountToken`).
    fn delete_service_account_token(&self, pod_uid: &str);
    /// Whether the kubelet has an API client (upstream `host.GetKubeClient() != nil`;
    /// projected volumes refuse to set up without one).
    fn has_kube_client(&self) -> bool {
        true
    }
}

/// Standalone mode: there is no API server, so no object exists. Static pods cannot refer
/// to API objects anyway (`PreventStaticPodAPIReferences`).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoVolumeObjects;

fn no_client(what: &str, namespace: &str, name: &str) -> ObjectError {
    ObjectError::Other(format!(
        "cannot get {what} {namespace}/{name}: the kubelet runs without an API server"
    ))
}

#[async_trait]
impl VolumeObjects for NoVolumeObjects {
    async fn get_config_map(&self, namespace: &str, name: &str) -> Result<ConfigMap, ObjectError> {
        Err(no_client("configmap", namespace, name))
    }
    async fn get_secret(&self, namespace: &str, name: &str) -> Result<Secret, ObjectError> {
        Err(no_client("secret", namespace, name))
    }
    async fn get_service_account_token(
        &self,
        namespace: &str,
        name: &str,
        _: &TokenRequest,
    ) -> Result<TokenRequest, ObjectError> {
        Err(no_client("service account token for", namespace, name))
    }
    fn delete_service_account_token(&self, _: &str) {}
    fn has_kube_client(&self) -> bool {
        false
    }
}
