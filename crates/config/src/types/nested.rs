//! Nested v1beta1 types (`staging/src/k8s.io/kubelet/config/v1beta1/types.go`).

use std::collections::BTreeMap;

use kubelet_apimachinery::{Duration, Quantity};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletAuthentication {
    #[serde(default)]
    pub x509: KubeletX509Authentication,
    #[serde(default)]
    pub webhook: KubeletWebhookAuthentication,
    #[serde(default)]
    pub anonymous: KubeletAnonymousAuthentication,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletX509Authentication {
    #[serde(
        default,
        rename = "clientCAFile",
        skip_serializing_if = "String::is_empty"
    )]
    pub client_ca_file: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletWebhookAuthentication {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(default, rename = "cacheTTL")]
    pub cache_ttl: Duration,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletAnonymousAuthentication {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// `KubeletAuthorizationMode` values.
pub const AUTHZ_MODE_ALWAYS_ALLOW: &str = "AlwaysAllow";
pub const AUTHZ_MODE_WEBHOOK: &str = "Webhook";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletAuthorization {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mode: String,
    #[serde(default)]
    pub webhook: KubeletWebhookAuthorization,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletWebhookAuthorization {
    #[serde(default, rename = "cacheAuthorizedTTL")]
    pub cache_authorized_ttl: Duration,
    #[serde(default, rename = "cacheUnauthorizedTTL")]
    pub cache_unauthorized_ttl: Duration,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemorySwapConfiguration {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub swap_behavior: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrashLoopBackOffConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_container_restart_period: Option<Duration>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownGracePeriodByPodPriority {
    #[serde(default)]
    pub priority: i32,
    #[serde(default)]
    pub shutdown_grace_period_seconds: i64,
}

/// `MemoryReservation`: `limits` is a `v1.ResourceList` (resource name to quantity).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryReservation {
    #[serde(default)]
    pub numa_node: i32,
    #[serde(default)]
    pub limits: BTreeMap<String, Quantity>,
}

/// `v1.Taint` as used by `registerWithTaints`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    #[serde(default)]
    pub key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    #[serde(default)]
    pub effect: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<String>,
}

/// `k8s.io/component-base/tracing/api/v1.TracingConfiguration`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TracingConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_rate_per_million: Option<i32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserNamespaces {
    #[serde(default, rename = "idsPerPod", skip_serializing_if = "Option::is_none")]
    pub ids_per_pod: Option<i64>,
}
