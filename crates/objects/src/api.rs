//! The API calls the managers make, behind traits (upstream: the `kubeClient` closures
//! `NewWatchingConfigMapManager`, `NewCachingConfigMapManager`, `NewSimpleConfigMapManager`
//! and `token.NewManager` build), with the kube-rs implementation and a recording fake.

use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::stream::BoxStream;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use kube::api::{Api, GetParams, PostParams};
use kubelet_apipods::ApiError;
use kubelet_apipods::fake::FakeListerWatcher;
use kubelet_apipods::kube_lw::{KubeListerWatcher, one_term_equal_selector};
use kubelet_apipods::reflector::{ListerWatcher, ObjectList, WatchEvent};
use serde::de::DeserializeOwned;

/// A namespaced kind the managers keep (ConfigMap, Secret).
pub trait Object: kube::Resource + Clone + Debug + Send + Sync + 'static {
    /// Upstream's `corev1.Resource(...)` group resource, as `NotFound` errors of the
    /// watch-based manager name it (`configmap`, `secret`).
    const GROUP_RESOURCE: &'static str;
    /// The API's resource name, as the API server's `NotFound` errors name it.
    const RESOURCE: &'static str;
    /// `immutable: true` (upstream `isImmutable`).
    fn is_immutable(&self) -> bool;
}

impl Object for ConfigMap {
    const GROUP_RESOURCE: &'static str = "configmap";
    const RESOURCE: &'static str = "configmaps";
    fn is_immutable(&self) -> bool {
        self.immutable == Some(true)
    }
}

impl Object for Secret {
    const GROUP_RESOURCE: &'static str = "secret";
    const RESOURCE: &'static str = "secrets";
    fn is_immutable(&self) -> bool {
        self.immutable == Some(true)
    }
}

/// A boxed [`ListerWatcher`] (what [`ObjectClient::lister_watcher`] hands out).
pub struct BoxedListerWatcher<K>(pub Box<dyn ListerWatcher<K>>);

#[async_trait]
impl<K: Send + 'static> ListerWatcher<K> for BoxedListerWatcher<K> {
    async fn list(&self, resource_version: &str) -> Result<ObjectList<K>, ApiError> {
        self.0.list(resource_version).await
    }
    async fn watch(
        &self,
        resource_version: &str,
        timeout_secs: u32,
    ) -> Result<BoxStream<'static, Result<WatchEvent<K>, ApiError>>, ApiError> {
        self.0.watch(resource_version, timeout_secs).await
    }
}

/// Reads one kind of object.
#[async_trait]
pub trait ObjectClient<K>: Send + Sync {
    /// `GET` `namespace/name`; `from_cache` asks for `resourceVersion=0` (upstream
    /// `util.FromApiserverCache`).
    async fn get(&self, namespace: &str, name: &str, from_cache: bool) -> Result<K, ApiError>;
    /// List+watch of `namespace` with `fieldSelector=metadata.name=<name>` (upstream
    /// `newReflectorLocked`).
    fn lister_watcher(&self, namespace: &str, name: &str) -> BoxedListerWatcher<K>;
}

/// Requests service account tokens.
#[async_trait]
pub trait TokenClient: Send + Sync {
    /// `POST serviceaccounts/<name>/token` in `namespace` (upstream `CreateToken`).
    async fn create_token(
        &self,
        namespace: &str,
        name: &str,
        request: &TokenRequest,
    ) -> Result<TokenRequest, ApiError>;
}

/// The kube-rs implementation over the kubelet's main client.
#[derive(Clone)]
pub struct KubeObjectsClient {
    client: kube::Client,
}

impl KubeObjectsClient {
    /// Calls through `client` (`KubeletClients.main`).
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }
}

#[async_trait]
impl<K> ObjectClient<K> for KubeObjectsClient
where
    K: Object + DeserializeOwned + kube::Resource<Scope = kube::core::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    async fn get(&self, namespace: &str, name: &str, from_cache: bool) -> Result<K, ApiError> {
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        let params = if from_cache {
            GetParams::any()
        } else {
            GetParams::default()
        };
        Ok(api.get_with(name, &params).await?)
    }

    fn lister_watcher(&self, namespace: &str, name: &str) -> BoxedListerWatcher<K> {
        BoxedListerWatcher(Box::new(KubeListerWatcher::<K>::namespaced(
            self.client.clone(),
            namespace,
            one_term_equal_selector("metadata.name", name),
        )))
    }
}

#[async_trait]
impl TokenClient for KubeObjectsClient {
    async fn create_token(
        &self,
        namespace: &str,
        name: &str,
        request: &TokenRequest,
    ) -> Result<TokenRequest, ApiError> {
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), namespace);
        Ok(api
            .create_subresource("token", name, &PostParams::default(), request)
            .await?)
    }
}

/// A call the fake saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeCall {
    /// `get(namespace, name, from_cache)`.
    Get(String, String, bool),
    /// `lister_watcher(namespace, name)`: a reflector was started.
    ListerWatcher(String, String),
    /// `create_token(namespace, name)`.
    CreateToken(String, String),
}

struct FakeState<K> {
    objects: HashMap<(String, String), K>,
    get_errors: VecDeque<ApiError>,
    lister_watchers: HashMap<(String, String), FakeListerWatcher<K>>,
    tokens: VecDeque<Result<TokenRequest, ApiError>>,
    calls: Vec<FakeCall>,
}

/// A recording, scripted API: `get` serves [`FakeObjects::set`] objects (404 otherwise,
/// or the next scripted error), each `lister_watcher` is the scripted
/// [`FakeListerWatcher`] of that object, tokens come from [`FakeObjects::push_token`].
pub struct FakeObjects<K> {
    state: Arc<Mutex<FakeState<K>>>,
}

impl<K> Clone for FakeObjects<K> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
        }
    }
}

impl<K> Default for FakeObjects<K> {
    fn default() -> Self {
        Self {
            state: Arc::new(Mutex::new(FakeState {
                objects: HashMap::new(),
                get_errors: VecDeque::new(),
                lister_watchers: HashMap::new(),
                tokens: VecDeque::new(),
                calls: Vec::new(),
            })),
        }
    }
}

impl<K: Clone> FakeObjects<K> {
    fn lock(&self) -> std::sync::MutexGuard<'_, FakeState<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores (or with `None` deletes) the object `get` returns.
    pub fn set(&self, namespace: &str, name: &str, object: Option<K>) {
        let key = (namespace.to_string(), name.to_string());
        let mut s = self.lock();
        match object {
            Some(o) => s.objects.insert(key, o),
            None => s.objects.remove(&key),
        };
    }

    /// The next `get` fails with `e`.
    pub fn push_get_error(&self, e: ApiError) {
        self.lock().get_errors.push_back(e);
    }

    /// The lister-watcher reflectors of `namespace/name` use (created on first use).
    pub fn lister_watcher_of(&self, namespace: &str, name: &str) -> FakeListerWatcher<K> {
        self.lock()
            .lister_watchers
            .entry((namespace.to_string(), name.to_string()))
            .or_default()
            .clone()
    }

    /// The answer of the next `create_token`.
    pub fn push_token(&self, r: Result<TokenRequest, ApiError>) {
        self.lock().tokens.push_back(r);
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<FakeCall> {
        self.lock().calls.clone()
    }
}

/// A `404 NotFound` as the API server returns it.
pub fn not_found(resource: &str, name: &str) -> ApiError {
    ApiError::Status {
        code: 404,
        reason: "NotFound".into(),
        message: format!("{resource} {name:?} not found"),
    }
}

#[async_trait]
impl<K: Object> ObjectClient<K> for FakeObjects<K> {
    async fn get(&self, namespace: &str, name: &str, from_cache: bool) -> Result<K, ApiError> {
        let mut s = self.lock();
        s.calls.push(FakeCall::Get(
            namespace.to_string(),
            name.to_string(),
            from_cache,
        ));
        if let Some(e) = s.get_errors.pop_front() {
            return Err(e);
        }
        s.objects
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
            .ok_or_else(|| not_found(K::RESOURCE, name))
    }

    fn lister_watcher(&self, namespace: &str, name: &str) -> BoxedListerWatcher<K> {
        self.lock()
            .calls
            .push(FakeCall::ListerWatcher(namespace.into(), name.into()));
        BoxedListerWatcher(Box::new(self.lister_watcher_of(namespace, name)))
    }
}

#[async_trait]
impl<K: Clone + Send + 'static> TokenClient for FakeObjects<K> {
    async fn create_token(
        &self,
        namespace: &str,
        name: &str,
        _: &TokenRequest,
    ) -> Result<TokenRequest, ApiError> {
        let mut s = self.lock();
        s.calls
            .push(FakeCall::CreateToken(namespace.into(), name.into()));
        s.tokens
            .pop_front()
            .unwrap_or_else(|| Err(ApiError::Transport("connection refused".into())))
    }
}
