//! The kubelet's API object managers (issue #9 items 2 and 3): ConfigMaps and Secrets for
//! volumes and the environment, and service account tokens.
//!
//! | Rust module   | Upstream Go file                                                          |
//! |---------------|---------------------------------------------------------------------------|
//! | [`manager`]   | `pkg/kubelet/configmap/configmap_manager.go`, `pkg/kubelet/secret/secret_manager.go`, `pkg/kubelet/util/manager/manager.go`, `cache_based_manager.go` (`cacheBasedManager`) |
//! | [`watch`]     | `pkg/kubelet/util/manager/watch_based_manager.go` (`objectCache`)         |
//! | [`cache`]     | `pkg/kubelet/util/manager/cache_based_manager.go` (`objectStore`, `GetObjectTTLFromNodeFunc`) |
//! | [`token`]     | `pkg/kubelet/token/token_manager.go`                                      |
//! | [`names`]     | `pkg/api/v1/pod/util.go` (`VisitPodConfigmapNames`, `VisitPodSecretNames`) |
//! | [`runtimeclass`] | `pkg/kubelet/runtimeclass/runtimeclass_manager.go`                      |
//! | [`services`]  | `kubelet.go` Service informer (`serviceLister`, `serviceHasSynced`)      |
//! | [`api`]       | the `kubeClient` calls of the above (kube-rs, and a recording fake)      |
//!
//! [`KubeletObjects`] bundles them (upstream `kl.configMapManager`, `kl.secretManager`,
//! `tokenManager`) and is what the rest of the kubelet sees: [`kubelet_volume::VolumeObjects`]
//! for the volume plugins, [`kubelet_runtime::env::EnvObjects`] for `makeEnvironmentVariables`,
//! and [`KubeletObjects::register_pod`]/[`KubeletObjects::unregister_pod`] for `SyncPod` and
//! `SyncTerminatedPod`.

pub mod api;
pub mod cache;
pub mod manager;
pub mod names;
pub mod runtimeclass;
pub mod services;
pub mod token;
pub mod watch;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kubelet_container::clock::Clock;
use kubelet_container::events::{EventRecorder, EventType, pod_ref};
use kubelet_runtime::env::{EnvObjectError, EnvObjects};
use kubelet_volume::{ObjectError, VolumeObjects};
use tokio_util::sync::CancellationToken;

pub use api::{FakeObjects, KubeObjectsClient, ObjectClient, TokenClient};
pub use cache::{GetObjectTtl, object_ttl_from_node};
pub use manager::{Backend, ChangeDetectionStrategy, ObjectManager, UnknownStrategy};
pub use runtimeclass::{RuntimeClassManager, runtime_class_lister_watcher};
pub use services::{ServiceLister, service_lister_watcher};
pub use token::TokenManager;

/// Upstream `events.FailedToRetrieveImagePullSecret`.
pub const FAILED_TO_RETRIEVE_IMAGE_PULL_SECRET: &str = "FailedToRetrieveImagePullSecret";

/// ConfigMap, Secret and token managers of one kubelet.
pub struct KubeletObjects {
    /// Upstream `configMapManager`.
    pub config_maps: ObjectManager<ConfigMap>,
    /// Upstream `secretManager`.
    pub secrets: ObjectManager<Secret>,
    /// Upstream `tokenManager`.
    pub tokens: TokenManager,
    /// Upstream `serviceLister` (filled by [`ServiceLister::run`]).
    pub services: ServiceLister,
}

/// What [`KubeletObjects::new`] needs.
pub struct ObjectsConfig {
    /// `configMapAndSecretChangeDetectionStrategy`.
    pub strategy: ChangeDetectionStrategy,
    /// `syncFrequency` (upstream `resyncInterval`): idle watches stop after 5 × this.
    pub resync_interval: Duration,
    /// The Node's TTL annotation, for `Cache`.
    pub get_ttl: GetObjectTtl,
}

fn backend<K: api::Object>(
    client: Arc<dyn ObjectClient<K>>,
    clock: &Arc<dyn Clock>,
    config: &ObjectsConfig,
) -> Result<Backend<K>, tokio::runtime::TryCurrentError> {
    Ok(match config.strategy {
        ChangeDetectionStrategy::Watch => Backend::Watch(Arc::new(watch::ObjectCache::new(
            client,
            clock.clone(),
            config.resync_interval.saturating_mul(5),
        )?)),
        ChangeDetectionStrategy::Cache => Backend::Cache(cache::ObjectStore::new(
            client,
            clock.clone(),
            config.get_ttl.clone(),
            cache::DEFAULT_TTL,
        )),
        ChangeDetectionStrategy::Get => Backend::Get(client),
    })
}

impl KubeletObjects {
    /// The managers over `config_maps`, `secrets` and `tokens` (upstream `NewMainKubelet`).
    ///
    /// # Errors
    /// Outside a tokio runtime (the `Watch` reflectors need one).
    pub fn new(
        config_maps: Arc<dyn ObjectClient<ConfigMap>>,
        secrets: Arc<dyn ObjectClient<Secret>>,
        tokens: Arc<dyn TokenClient>,
        clock: Arc<dyn Clock>,
        config: &ObjectsConfig,
    ) -> Result<Self, tokio::runtime::TryCurrentError> {
        Ok(Self {
            config_maps: ObjectManager::new(
                backend(config_maps, &clock, config)?,
                names::config_map_names,
            ),
            secrets: ObjectManager::new(backend(secrets, &clock, config)?, names::secret_names),
            tokens: TokenManager::new(tokens, clock),
            services: ServiceLister::new(),
        })
    }

    /// The managers over the kubelet's main client.
    ///
    /// # Errors
    /// Outside a tokio runtime.
    pub fn from_client(
        client: kube::Client,
        clock: Arc<dyn Clock>,
        config: &ObjectsConfig,
    ) -> Result<Self, tokio::runtime::TryCurrentError> {
        let api = Arc::new(KubeObjectsClient::new(client));
        Self::new(api.clone(), api.clone(), api, clock, config)
    }

    /// `SyncPod`: registers the pod's ConfigMaps and Secrets.
    pub fn register_pod(&self, pod: &Pod) {
        self.secrets.register_pod(pod);
        self.config_maps.register_pod(pod);
    }

    /// `SyncTerminatedPod`: unregisters them.
    pub fn unregister_pod(&self, pod: &Pod) {
        self.secrets.unregister_pod(pod);
        self.config_maps.unregister_pod(pod);
    }

    /// Upstream `getPullSecretsForPod`: the pod's `imagePullSecrets` through the Secret
    /// manager; the ones that cannot be read are skipped with a log line and one
    /// `FailedToRetrieveImagePullSecret` event naming them all (the pull may still work).
    pub async fn get_pull_secrets_for_pod(
        &self,
        pod: &Pod,
        recorder: &dyn EventRecorder,
    ) -> Vec<Secret> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let mut pull_secrets = Vec::new();
        let mut failed = Vec::new();
        let refs = pod
            .spec
            .iter()
            .flat_map(|s| s.image_pull_secrets.iter().flatten());
        // API validation permitted entries with empty names: ignored without a warning.
        for r in refs.filter(|r| !r.name.is_empty()) {
            match self.secrets.get(namespace, &r.name).await {
                Ok(s) => pull_secrets.push(s),
                Err(e) => {
                    tracing::info!(pod = %format!("{namespace}/{}", pod.metadata.name.as_deref().unwrap_or_default()), secret = %r.name, err = %e, "Unable to retrieve pull secret, the image pull may not succeed.");
                    failed.push(r.name.clone());
                }
            }
        }
        if !failed.is_empty() {
            recorder.event(
                &pod_ref(pod),
                EventType::Warning,
                FAILED_TO_RETRIEVE_IMAGE_PULL_SECRET,
                &format!(
                    "Unable to retrieve some image pull secrets ({}); attempting to pull the image may not succeed.",
                    failed.join(", ")
                ),
            );
        }
        pull_secrets
    }

    /// The background work until `cancel`: idle-watch recycling of the `Watch` caches, the
    /// token cache's cleanup.
    pub async fn run(&self, cancel: CancellationToken) {
        let cm = async {
            if let Backend::Watch(c) = self.config_maps.backend() {
                c.run(cancel.clone()).await;
            }
        };
        let secrets = async {
            if let Backend::Watch(c) = self.secrets.backend() {
                c.run(cancel.clone()).await;
            }
        };
        tokio::join!(cm, secrets, self.tokens.run_cleanup(cancel.clone()));
    }
}

#[async_trait]
impl VolumeObjects for KubeletObjects {
    async fn get_config_map(&self, namespace: &str, name: &str) -> Result<ConfigMap, ObjectError> {
        self.config_maps.get(namespace, name).await
    }
    async fn get_secret(&self, namespace: &str, name: &str) -> Result<Secret, ObjectError> {
        self.secrets.get(namespace, name).await
    }
    async fn get_service_account_token(
        &self,
        namespace: &str,
        name: &str,
        request: &TokenRequest,
    ) -> Result<TokenRequest, ObjectError> {
        self.tokens
            .get_service_account_token(namespace, name, request)
            .await
    }
    fn delete_service_account_token(&self, pod_uid: &str) {
        self.tokens.delete_service_account_token(pod_uid);
    }
}

fn env_error(e: ObjectError) -> EnvObjectError {
    match e {
        ObjectError::NotFound { .. } => EnvObjectError::NotFound(e.to_string()),
        ObjectError::Other(m) => EnvObjectError::Other(m),
    }
}

#[async_trait]
impl EnvObjects for KubeletObjects {
    async fn config_map(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<BTreeMap<String, String>, EnvObjectError> {
        let cm = self
            .config_maps
            .get(namespace, name)
            .await
            .map_err(env_error)?;
        Ok(cm.data.unwrap_or_default())
    }
    async fn secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<BTreeMap<String, String>, EnvObjectError> {
        let s = self.secrets.get(namespace, name).await.map_err(env_error)?;
        Ok(s.data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
            .collect())
    }
    async fn services(
        &self,
    ) -> Result<Option<Vec<k8s_openapi::api::core::v1::Service>>, EnvObjectError> {
        self.services.list().map(Some).ok_or_else(|| {
            EnvObjectError::Other(
                "services have not yet been read at least once, cannot construct envvars".into(),
            )
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
