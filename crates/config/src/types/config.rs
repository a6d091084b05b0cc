//! The `KubeletConfiguration` struct, field for field in upstream order
//! (`staging/src/k8s.io/kubelet/config/v1beta1/types.go`). Field names are upstream's in
//! snake case; `rename` is spelled out only where upstream's JSON name is not plain
//! camelCase (`staticPodURL`, `kubeAPIQPS`, ...). The section comments group neighbouring
//! fields by topic; they do not reorder anything, so JSON output keeps upstream's order.

use std::collections::BTreeMap;

use kubelet_apimachinery::Duration;
use serde::{Deserialize, Serialize};

use super::{
    CrashLoopBackOffConfig, KubeletAuthentication, KubeletAuthorization, LoggingConfiguration,
    MemoryReservation, MemorySwapConfiguration, ShutdownGracePeriodByPodPriority, Taint,
    TracingConfiguration, UserNamespaces, is_default, none_or_empty, none_or_empty_map,
};

/// `KubeletConfiguration` (v1beta1). `kind`/`apiVersion` are not fields: the loader checks
/// them and [`KubeletConfiguration::to_versioned_json`](crate::KubeletConfiguration::to_versioned_json) adds them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct KubeletConfiguration {
    // Server switch, static pod sources and sync periods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_server: Option<bool>,
    #[serde(skip_serializing_if = "is_default")]
    pub static_pod_path: String,
    #[serde(skip_serializing_if = "is_default")]
    pub pod_logs_dir: String,
    pub sync_frequency: Duration,
    pub file_check_frequency: Duration,
    pub http_check_frequency: Duration,
    #[serde(rename = "staticPodURL", skip_serializing_if = "is_default")]
    pub static_pod_url: String,
    #[serde(rename = "staticPodURLHeader", skip_serializing_if = "is_default")]
    pub static_pod_url_header: BTreeMap<String, Vec<String>>,

    // Serving: address, ports, TLS, authentication and authorization.
    #[serde(skip_serializing_if = "is_default")]
    pub address: String,
    #[serde(skip_serializing_if = "is_default")]
    pub port: i32,
    #[serde(skip_serializing_if = "is_default")]
    pub read_only_port: i32,
    #[serde(skip_serializing_if = "is_default")]
    pub tls_cert_file: String,
    #[serde(skip_serializing_if = "is_default")]
    pub tls_private_key_file: String,
    #[serde(skip_serializing_if = "is_default")]
    pub tls_cipher_suites: Vec<String>,
    #[serde(skip_serializing_if = "is_default")]
    pub tls_min_version: String,
    #[serde(skip_serializing_if = "is_default")]
    pub rotate_certificates: bool,
    #[serde(rename = "serverTLSBootstrap", skip_serializing_if = "is_default")]
    pub server_tls_bootstrap: bool,
    pub authentication: KubeletAuthentication,
    pub authorization: KubeletAuthorization,

    // Image pulls: registry rate limits and credential verification.
    #[serde(rename = "registryPullQPS", skip_serializing_if = "Option::is_none")]
    pub registry_pull_qps: Option<i32>,
    #[serde(skip_serializing_if = "is_default")]
    pub registry_burst: i32,
    #[serde(skip_serializing_if = "is_default")]
    pub image_pull_credentials_verification_policy: String,
    #[serde(skip_serializing_if = "is_default")]
    pub preloaded_images_verification_allowlist: Vec<String>,

    // Events, debugging handlers, healthz and the kubelet's OOM score.
    #[serde(rename = "eventRecordQPS", skip_serializing_if = "Option::is_none")]
    pub event_record_qps: Option<i32>,
    #[serde(skip_serializing_if = "is_default")]
    pub event_burst: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_debugging_handlers: Option<bool>,
    #[serde(skip_serializing_if = "is_default")]
    pub enable_contention_profiling: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthz_port: Option<i32>,
    #[serde(skip_serializing_if = "is_default")]
    pub healthz_bind_address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oom_score_adj: Option<i32>,

    // Cluster DNS and streaming connections.
    #[serde(skip_serializing_if = "is_default")]
    pub cluster_domain: String,
    #[serde(rename = "clusterDNS", skip_serializing_if = "is_default")]
    pub cluster_dns: Vec<String>,
    pub streaming_connection_idle_timeout: Duration,

    // Node status and lease.
    pub node_status_update_frequency: Duration,
    pub node_status_report_frequency: Duration,
    #[serde(skip_serializing_if = "is_default")]
    pub node_lease_duration_seconds: i32,

    // Image garbage collection and volume stats.
    #[serde(rename = "imageMinimumGCAge")]
    pub image_minimum_gc_age: Duration,
    #[serde(rename = "imageMaximumGCAge")]
    pub image_maximum_gc_age: Duration,
    #[serde(
        rename = "imageGCHighThresholdPercent",
        skip_serializing_if = "Option::is_none"
    )]
    pub image_gc_high_threshold_percent: Option<i32>,
    #[serde(
        rename = "imageGCLowThresholdPercent",
        skip_serializing_if = "Option::is_none"
    )]
    pub image_gc_low_threshold_percent: Option<i32>,
    pub volume_stats_agg_period: Duration,

    // Cgroups and the CPU, memory and topology managers.
    #[serde(skip_serializing_if = "is_default")]
    pub kubelet_cgroups: String,
    #[serde(skip_serializing_if = "is_default")]
    pub system_cgroups: String,
    #[serde(skip_serializing_if = "is_default")]
    pub cgroup_root: String,
    #[serde(rename = "cgroupsPerQOS", skip_serializing_if = "Option::is_none")]
    pub cgroups_per_qos: Option<bool>,
    #[serde(skip_serializing_if = "is_default")]
    pub cgroup_driver: String,
    #[serde(skip_serializing_if = "is_default")]
    pub cpu_manager_policy: String,
    #[serde(
        rename = "singleProcessOOMKill",
        skip_serializing_if = "Option::is_none"
    )]
    pub single_process_oom_kill: Option<bool>,
    #[serde(skip_serializing_if = "is_default")]
    pub cpu_manager_policy_options: BTreeMap<String, String>,
    pub cpu_manager_reconcile_period: Duration,
    #[serde(skip_serializing_if = "is_default")]
    pub memory_manager_policy: String,
    #[serde(skip_serializing_if = "is_default")]
    pub topology_manager_policy: String,
    #[serde(skip_serializing_if = "is_default")]
    pub topology_manager_scope: String,
    #[serde(skip_serializing_if = "is_default")]
    pub topology_manager_policy_options: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "is_default")]
    pub qos_reserved: BTreeMap<String, String>,

    // Runtime requests, networking, per-pod limits and CFS quota.
    pub runtime_request_timeout: Duration,
    #[serde(skip_serializing_if = "is_default")]
    pub hairpin_mode: String,
    #[serde(skip_serializing_if = "is_default")]
    pub max_pods: i32,
    #[serde(rename = "podCIDR", skip_serializing_if = "is_default")]
    pub pod_cidr: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_pids_limit: Option<i64>,
    #[serde(rename = "resolvConf", skip_serializing_if = "Option::is_none")]
    pub resolver_config: Option<String>,
    #[serde(skip_serializing_if = "is_default")]
    pub run_once: bool,
    #[serde(rename = "cpuCFSQuota", skip_serializing_if = "Option::is_none")]
    pub cpu_cfs_quota: Option<bool>,
    #[serde(rename = "cpuCFSQuotaPeriod", skip_serializing_if = "Option::is_none")]
    pub cpu_cfs_quota_period: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_status_max_images: Option<i32>,
    #[serde(skip_serializing_if = "is_default")]
    pub max_open_files: i64,

    // API server client and image pull parallelism.
    #[serde(skip_serializing_if = "is_default")]
    pub content_type: String,
    #[serde(rename = "kubeAPIQPS", skip_serializing_if = "Option::is_none")]
    pub kube_api_qps: Option<i32>,
    #[serde(rename = "kubeAPIBurst", skip_serializing_if = "is_default")]
    pub kube_api_burst: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serialize_image_pulls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_parallel_image_pulls: Option<i32>,

    // Eviction.
    #[serde(skip_serializing_if = "none_or_empty_map")]
    pub eviction_hard: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "is_default")]
    pub eviction_soft: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "is_default")]
    pub eviction_soft_grace_period: BTreeMap<String, String>,
    pub eviction_pressure_transition_period: Duration,
    #[serde(skip_serializing_if = "is_default")]
    pub eviction_max_pod_grace_period: i32,
    #[serde(skip_serializing_if = "is_default")]
    pub eviction_minimum_reclaim: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_default_eviction_settings: Option<bool>,

    // Pod density, attach/detach, kernel defaults and iptables.
    #[serde(skip_serializing_if = "is_default")]
    pub pods_per_core: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_controller_attach_detach: Option<bool>,
    #[serde(skip_serializing_if = "is_default")]
    pub protect_kernel_defaults: bool,
    #[serde(
        rename = "makeIPTablesUtilChains",
        skip_serializing_if = "Option::is_none"
    )]
    pub make_iptables_util_chains: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iptables_masquerade_bit: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iptables_drop_bit: Option<i32>,

    // Feature gates and swap.
    #[serde(skip_serializing_if = "is_default")]
    pub feature_gates: BTreeMap<String, bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_swap_on: Option<bool>,
    pub memory_swap: MemorySwapConfiguration,

    // Container logs and ConfigMap/Secret change detection.
    #[serde(skip_serializing_if = "is_default")]
    pub container_log_max_size: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_log_max_files: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_log_max_workers: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_log_monitor_interval: Option<Duration>,
    #[serde(skip_serializing_if = "is_default")]
    pub config_map_and_secret_change_detection_strategy: String,

    // Reserved resources and node allocatable (showHiddenMetricsForVersion sits here upstream).
    #[serde(skip_serializing_if = "is_default")]
    pub system_reserved: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "is_default")]
    pub kube_reserved: BTreeMap<String, String>,
    #[serde(rename = "reservedSystemCPUs", skip_serializing_if = "is_default")]
    pub reserved_system_cpus: String,
    #[serde(skip_serializing_if = "is_default")]
    pub show_hidden_metrics_for_version: String,
    #[serde(skip_serializing_if = "is_default")]
    pub system_reserved_cgroup: String,
    #[serde(skip_serializing_if = "is_default")]
    pub kube_reserved_cgroup: String,
    #[serde(skip_serializing_if = "none_or_empty")]
    pub enforce_node_allocatable: Option<Vec<String>>,

    // Sysctls, volume plugins, provider ID, memcg notification.
    #[serde(skip_serializing_if = "is_default")]
    pub allowed_unsafe_sysctls: Vec<String>,
    #[serde(skip_serializing_if = "is_default")]
    pub volume_plugin_dir: String,
    #[serde(rename = "providerID", skip_serializing_if = "is_default")]
    pub provider_id: String,
    #[serde(skip_serializing_if = "is_default")]
    pub kernel_memcg_notification: bool,

    // Logging.
    pub logging: LoggingConfiguration,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_system_log_handler: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_system_log_query: Option<bool>,

    // Graceful node shutdown and container restart back-off.
    pub shutdown_grace_period: Duration,
    pub shutdown_grace_period_critical_pods: Duration,
    #[serde(skip_serializing_if = "is_default")]
    pub shutdown_grace_period_by_pod_priority: Vec<ShutdownGracePeriodByPodPriority>,
    pub crash_loop_back_off: CrashLoopBackOffConfig,

    // Memory manager reservations, debug handlers, seccomp and memory QoS.
    #[serde(skip_serializing_if = "is_default")]
    pub reserved_memory: Vec<MemoryReservation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_profiling_handler: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_debug_flags_handler: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seccomp_default: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_throttling_factor: Option<f64>,

    // Node registration and tracing.
    #[serde(skip_serializing_if = "is_default")]
    pub register_with_taints: Vec<Taint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub register_node: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracing: Option<TracingConfiguration>,

    // Local storage isolation, CRI endpoints, cgroup v1 refusal and user namespaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_storage_capacity_isolation: Option<bool>,
    pub container_runtime_endpoint: String,
    #[serde(skip_serializing_if = "is_default")]
    pub image_service_endpoint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_cgroup_v1: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_namespaces: Option<UserNamespaces>,
}
