//! The apiserver calls of the status manager (upstream `status_manager.go`
//! `syncPod`: `Pods().Get`, `statusutil.PatchPodStatus`, `Pods().Delete`
//! with grace period 0 and a UID precondition) behind [`PodStatusApi`], with
//! the `kube::Client` implementation [`KubePodStatusApi`] (the kubelet's main
//! client) and the recording [`FakePodStatusApi`] (feature `fake`).

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod as ApiPod;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::Value;

/// A failed apiserver call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusApiError {
    /// 404: the pod does not exist (any more).
    #[error("pods \"{0}\" not found")]
    NotFound(String),
    /// Any other status the apiserver answered with (409 for a failed
    /// precondition, 422 for an invalid patch...).
    #[error("{message} ({code})")]
    Api {
        /// HTTP status code.
        code: u16,
        /// The apiserver's message.
        message: String,
    },
    /// The request did not get an answer (connection, TLS, timeout, decoding).
    #[error("{0}")]
    Transport(String),
}

impl StatusApiError {
    /// The apiserver answered 404.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound(_))
    }
}

/// What the status manager asks the apiserver.
#[async_trait]
pub trait PodStatusApi: Send + Sync + std::fmt::Debug {
    /// The pod as the apiserver has it; `None` when it does not exist.
    async fn get_pod(&self, namespace: &str, name: &str) -> Result<Option<ApiPod>, StatusApiError>;

    /// Sends a strategic merge patch to `pods/<name>/status` (the patch
    /// carries `metadata.uid`, see [`crate::patch`]); returns the updated pod.
    async fn patch_pod_status(
        &self,
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<ApiPod, StatusApiError>;

    /// Deletes the pod with grace period 0, only if its UID is still `uid`.
    async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<(), StatusApiError>;
}

/// [`PodStatusApi`] over a `kube::Client` (the kubelet's main client).
#[derive(Clone)]
pub struct KubePodStatusApi {
    client: kube::Client,
}

impl std::fmt::Debug for KubePodStatusApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubePodStatusApi").finish_non_exhaustive()
    }
}

impl KubePodStatusApi {
    /// Calls go through `client`.
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }

    fn pods(&self, namespace: &str) -> Api<ApiPod> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

fn api_error(name: &str, e: kube::Error) -> StatusApiError {
    match e {
        kube::Error::Api(s) if s.code == 404 => StatusApiError::NotFound(name.to_string()),
        kube::Error::Api(s) => StatusApiError::Api {
            code: s.code,
            message: s.message,
        },
        other => StatusApiError::Transport(other.to_string()),
    }
}

#[async_trait]
impl PodStatusApi for KubePodStatusApi {
    async fn get_pod(&self, namespace: &str, name: &str) -> Result<Option<ApiPod>, StatusApiError> {
        match self.pods(namespace).get(name).await {
            Ok(p) => Ok(Some(p)),
            Err(e) => match api_error(name, e) {
                StatusApiError::NotFound(_) => Ok(None),
                other => Err(other),
            },
        }
    }

    async fn patch_pod_status(
        &self,
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<ApiPod, StatusApiError> {
        self.pods(namespace)
            .patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .map_err(|e| api_error(name, e))
    }

    async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<(), StatusApiError> {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            // Never delete a newer pod with the same name.
            preconditions: Some(Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        self.pods(namespace)
            .delete(name, &params)
            .await
            .map(|_| ())
            .map_err(|e| api_error(name, e))
    }
}

#[cfg(any(test, feature = "fake"))]
pub use fake::{FakePodStatusApi, StatusApiCall};

#[cfg(any(test, feature = "fake"))]
mod fake {
    use std::collections::HashMap;
    use std::sync::{Mutex, PoisonError};

    use super::*;
    use crate::patch::apply_pod_status_patch;

    /// One call recorded by [`FakePodStatusApi`].
    #[derive(Debug, Clone, PartialEq)]
    pub enum StatusApiCall {
        /// `GET namespace/name`.
        Get(String),
        /// `PATCH namespace/name/status` with this body.
        Patch(String, Value),
        /// `DELETE namespace/name` (grace 0) with this UID precondition.
        Delete(String, String),
    }

    #[derive(Debug, Default)]
    struct State {
        pods: HashMap<String, ApiPod>,
        calls: Vec<StatusApiCall>,
        fail: Option<StatusApiError>,
        fail_deletes: Option<StatusApiError>,
    }

    /// An in-memory apiserver for pods: patches are applied as the
    /// apiserver would (UID precondition, merge lists by key), deletes
    /// honour the UID precondition; every call is recorded.
    #[derive(Debug, Default)]
    pub struct FakePodStatusApi {
        state: Mutex<State>,
    }

    fn key(namespace: &str, name: &str) -> String {
        format!("{namespace}/{name}")
    }

    impl FakePodStatusApi {
        fn state(&self) -> std::sync::MutexGuard<'_, State> {
            self.state.lock().unwrap_or_else(PoisonError::into_inner)
        }

        /// Stores (creates or replaces) a pod.
        pub fn put(&self, pod: ApiPod) {
            let k = key(
                pod.metadata.namespace.as_deref().unwrap_or_default(),
                pod.metadata.name.as_deref().unwrap_or_default(),
            );
            self.state().pods.insert(k, pod);
        }

        /// The stored pod.
        pub fn pod(&self, namespace: &str, name: &str) -> Option<ApiPod> {
            self.state().pods.get(&key(namespace, name)).cloned()
        }

        /// Calls so far.
        pub fn calls(&self) -> Vec<StatusApiCall> {
            self.state().calls.clone()
        }

        /// Patches sent so far.
        pub fn patches(&self) -> Vec<Value> {
            self.calls()
                .into_iter()
                .filter_map(|c| match c {
                    StatusApiCall::Patch(_, p) => Some(p),
                    _ => None,
                })
                .collect()
        }

        /// Forgets the recorded calls.
        pub fn clear_calls(&self) {
            self.state().calls.clear();
        }

        /// Every following call fails with `err` (`None`: calls succeed again).
        pub fn fail_with(&self, err: Option<StatusApiError>) {
            self.state().fail = err;
        }

        /// Every following DELETE fails with `err` (`None`: they succeed again).
        pub fn fail_deletes_with(&self, err: Option<StatusApiError>) {
            self.state().fail_deletes = err;
        }
    }

    #[async_trait]
    impl PodStatusApi for FakePodStatusApi {
        async fn get_pod(
            &self,
            namespace: &str,
            name: &str,
        ) -> Result<Option<ApiPod>, StatusApiError> {
            let mut s = self.state();
            s.calls.push(StatusApiCall::Get(key(namespace, name)));
            if let Some(e) = s.fail.clone() {
                return Err(e);
            }
            Ok(s.pods.get(&key(namespace, name)).cloned())
        }

        async fn patch_pod_status(
            &self,
            namespace: &str,
            name: &str,
            patch: &Value,
        ) -> Result<ApiPod, StatusApiError> {
            let mut s = self.state();
            let k = key(namespace, name);
            s.calls.push(StatusApiCall::Patch(k.clone(), patch.clone()));
            if let Some(e) = s.fail.clone() {
                return Err(e);
            }
            let pod = s
                .pods
                .get_mut(&k)
                .ok_or_else(|| StatusApiError::NotFound(name.to_string()))?;
            let want = patch.pointer("/metadata/uid").and_then(Value::as_str);
            if want.is_some() && want != pod.metadata.uid.as_deref() {
                return Err(StatusApiError::Api {
                    code: 422,
                    message: "metadata.uid: field is immutable".into(),
                });
            }
            let current = pod.status.clone().unwrap_or_default();
            pod.status = Some(apply_pod_status_patch(&current, patch));
            Ok(pod.clone())
        }

        async fn delete_pod(
            &self,
            namespace: &str,
            name: &str,
            uid: &str,
        ) -> Result<(), StatusApiError> {
            let mut s = self.state();
            let k = key(namespace, name);
            s.calls
                .push(StatusApiCall::Delete(k.clone(), uid.to_string()));
            if let Some(e) = s.fail.clone().or_else(|| s.fail_deletes.clone()) {
                return Err(e);
            }
            match s.pods.get(&k) {
                None => Err(StatusApiError::NotFound(name.to_string())),
                Some(p) if p.metadata.uid.as_deref() != Some(uid) => Err(StatusApiError::Api {
                    code: 409,
                    message:
                        "Precondition failed: UID in precondition does not match UID in object"
                            .into(),
                }),
                Some(_) => {
                    s.pods.remove(&k);
                    Ok(())
                }
            }
        }
    }
}
