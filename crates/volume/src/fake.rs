//! A recording [`VolumeObjects`] for tests (feature `fake`).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

use crate::objects::{ObjectError, VolumeObjects};

/// One call the fake saw.
#[derive(Clone, Debug, PartialEq)]
pub enum ObjectCall {
    /// `get_config_map(namespace, name)`.
    ConfigMap(String, String),
    /// `get_secret(namespace, name)`.
    Secret(String, String),
    /// `get_service_account_token(namespace, name, request)`.
    Token(String, String, Box<TokenRequest>),
    /// `delete_service_account_token(pod_uid)`.
    DeleteToken(String),
}

#[derive(Default)]
struct State {
    config_maps: BTreeMap<(String, String), ConfigMap>,
    secrets: BTreeMap<(String, String), Secret>,
    tokens: BTreeMap<(String, String), String>,
    failure: Option<String>,
    calls: Vec<ObjectCall>,
}

/// In-memory objects; a missing object is `NotFound`, like the API.
#[derive(Default)]
pub struct FakeVolumeObjects {
    state: Mutex<State>,
}

impl FakeVolumeObjects {
    /// No objects.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates or replaces ConfigMap `namespace/name` with `data`.
    pub fn set_config_map(&self, namespace: &str, name: &str, data: &[(&str, &str)]) {
        let cm = ConfigMap {
            data: Some(
                data.iter()
                    .map(|(k, v)| ((*k).into(), (*v).into()))
                    .collect(),
            ),
            ..ConfigMap::default()
        };
        self.state()
            .config_maps
            .insert((namespace.into(), name.into()), cm);
    }

    /// Deletes ConfigMap `namespace/name`.
    pub fn delete_config_map(&self, namespace: &str, name: &str) {
        self.state()
            .config_maps
            .remove(&(namespace.into(), name.into()));
    }

    /// Creates or replaces Secret `namespace/name` with `data`.
    pub fn set_secret(&self, namespace: &str, name: &str, data: &[(&str, &[u8])]) {
        let s = Secret {
            data: Some(
                data.iter()
                    .map(|(k, v)| ((*k).into(), k8s_openapi::ByteString(v.to_vec())))
                    .collect(),
            ),
            ..Secret::default()
        };
        self.state()
            .secrets
            .insert((namespace.into(), name.into()), s);
    }

    /// The token issued for service account `namespace/name` from now on.
    pub fn set_token(&self, namespace: &str, name: &str, token: &str) {
        self.state()
            .tokens
            .insert((namespace.into(), name.into()), token.into());
    }

    /// Every call fails with `Other(message)` (`None`: back to normal).
    pub fn fail_with(&self, message: Option<&str>) {
        self.state().failure = message.map(str::to_string);
    }

    /// The calls so far.
    pub fn calls(&self) -> Vec<ObjectCall> {
        self.state().calls.clone()
    }
}

#[async_trait]
impl VolumeObjects for FakeVolumeObjects {
    async fn get_config_map(&self, namespace: &str, name: &str) -> Result<ConfigMap, ObjectError> {
        let mut s = self.state();
        s.calls
            .push(ObjectCall::ConfigMap(namespace.into(), name.into()));
        if let Some(f) = &s.failure {
            return Err(ObjectError::Other(f.clone()));
        }
        s.config_maps
            .get(&(namespace.into(), name.into()))
            .cloned()
            .ok_or_else(|| ObjectError::NotFound {
                kind: "configmap",
                name: name.into(),
            })
    }

    async fn get_secret(&self, namespace: &str, name: &str) -> Result<Secret, ObjectError> {
        let mut s = self.state();
        s.calls
            .push(ObjectCall::Secret(namespace.into(), name.into()));
        if let Some(f) = &s.failure {
            return Err(ObjectError::Other(f.clone()));
        }
        s.secrets
            .get(&(namespace.into(), name.into()))
            .cloned()
            .ok_or_else(|| ObjectError::NotFound {
                kind: "secret",
                name: name.into(),
            })
    }

    async fn get_service_account_token(
        &self,
        namespace: &str,
        name: &str,
        request: &TokenRequest,
    ) -> Result<TokenRequest, ObjectError> {
        let mut s = self.state();
        s.calls.push(ObjectCall::Token(
            namespace.into(),
            name.into(),
            Box::new(request.clone()),
        ));
        if let Some(f) = &s.failure {
            return Err(ObjectError::Other(f.clone()));
        }
        let token = s
            .tokens
            .get(&(namespace.into(), name.into()))
            .cloned()
            .ok_or_else(|| ObjectError::NotFound {
                kind: "serviceaccount",
                name: name.into(),
            })?;
        Ok(TokenRequest {
            status: Some(TokenRequestStatus {
                token,
                expiration_timestamp: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::now(),
                ),
            }),
            ..request.clone()
        })
    }

    fn delete_service_account_token(&self, pod_uid: &str) {
        self.state()
            .calls
            .push(ObjectCall::DeleteToken(pod_uid.into()));
    }
}
