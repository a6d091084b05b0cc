//! The `KubeletConfiguration` struct, field for field in upstream order.

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
pub struct KubeletConfiguration {
    #[serde(
        default,
        rename = "enableServer",
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_server: Option<bool>,
    #[serde(default, rename = "staticPodPath", skip_serializing_if = "is_default")]
    pub static_pod_path: String,
    #[serde(default, rename = "podLogsDir", skip_serializing_if = "is_default")]
    pub pod_logs_dir: String,
    #[serde(default, rename = "syncFrequency")]
    pub sync_frequency: Duration,
    #[serde(default, rename = "fileCheckFrequency")]
    pub file_check_frequency: Duration,
    #[serde(default, rename = "httpCheckFrequency")]
    pub http_check_frequency: Duration,
    #[serde(default, rename = "staticPodURL", skip_serializing_if = "is_default")]
    pub static_pod_url: String,
    #[serde(
        default,
        rename = "staticPodURLHeader",
        skip_serializing_if = "is_default"
    )]
    pub static_pod_url_header: BTreeMap<String, Vec<String>>,
    #[serde(default, rename = "address", skip_serializing_if = "is_default")]
    pub address: String,
    #[serde(default, rename = "port", skip_serializing_if = "is_default")]
    pub port: i32,
    #[serde(default, rename = "readOnlyPort", skip_serializing_if = "is_default")]
    pub read_only_port: i32,
    #[serde(default, rename = "tlsCertFile", skip_serializing_if = "is_default")]
    pub tls_cert_file: String,
    #[serde(
        default,
        rename = "tlsPrivateKeyFile",
        skip_serializing_if = "is_default"
    )]
    pub tls_private_key_file: String,
    #[serde(
        default,
        rename = "tlsCipherSuites",
        skip_serializing_if = "is_default"
    )]
    pub tls_cipher_suites: Vec<String>,
    #[serde(
        default,
        rename = "tlsCurvePreferences",
        skip_serializing_if = "is_default"
    )]
    pub tls_curve_preferences: Vec<i32>,
    #[serde(default, rename = "tlsMinVersion", skip_serializing_if = "is_default")]
    pub tls_min_version: String,
    #[serde(
        default,
        rename = "rotateCertificates",
        skip_serializing_if = "is_default"
    )]
    pub rotate_certificates: bool,
    #[serde(
        default,
        rename = "serverTLSBootstrap",
        skip_serializing_if = "is_default"
    )]
    pub server_tls_bootstrap: bool,
    #[serde(default, rename = "authentication")]
    pub authentication: KubeletAuthentication,
    #[serde(default, rename = "authorization")]
    pub authorization: KubeletAuthorization,
    #[serde(
        default,
        rename = "registryPullQPS",
        skip_serializing_if = "Option::is_none"
    )]
    pub registry_pull_qps: Option<i32>,
    #[serde(default, rename = "registryBurst", skip_serializing_if = "is_default")]
    pub registry_burst: i32,
    #[serde(
        default,
        rename = "imagePullCredentialsVerificationPolicy",
        skip_serializing_if = "is_default"
    )]
    pub image_pull_credentials_verification_policy: String,
    #[serde(
        default,
        rename = "preloadedImagesVerificationAllowlist",
        skip_serializing_if = "is_default"
    )]
    pub preloaded_images_verification_allowlist: Vec<String>,
    #[serde(
        default,
        rename = "eventRecordQPS",
        skip_serializing_if = "Option::is_none"
    )]
    pub event_record_qps: Option<i32>,
    #[serde(default, rename = "eventBurst", skip_serializing_if = "is_default")]
    pub event_burst: i32,
    #[serde(
        default,
        rename = "enableDebuggingHandlers",
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_debugging_handlers: Option<bool>,
    #[serde(
        default,
        rename = "enableContentionProfiling",
        skip_serializing_if = "is_default"
    )]
    pub enable_contention_profiling: bool,
    #[serde(
        default,
        rename = "healthzPort",
        skip_serializing_if = "Option::is_none"
    )]
    pub healthz_port: Option<i32>,
    #[serde(
        default,
        rename = "healthzBindAddress",
        skip_serializing_if = "is_default"
    )]
    pub healthz_bind_address: String,
    #[serde(
        default,
        rename = "oomScoreAdj",
        skip_serializing_if = "Option::is_none"
    )]
    pub oom_score_adj: Option<i32>,
    #[serde(default, rename = "clusterDomain", skip_serializing_if = "is_default")]
    pub cluster_domain: String,
    #[serde(default, rename = "clusterDNS", skip_serializing_if = "is_default")]
    pub cluster_dns: Vec<String>,
    #[serde(default, rename = "streamingConnectionIdleTimeout")]
    pub streaming_connection_idle_timeout: Duration,
    #[serde(default, rename = "nodeStatusUpdateFrequency")]
    pub node_status_update_frequency: Duration,
    #[serde(default, rename = "nodeStatusReportFrequency")]
    pub node_status_report_frequency: Duration,
    #[serde(
        default,
        rename = "nodeLeaseDurationSeconds",
        skip_serializing_if = "is_default"
    )]
    pub node_lease_duration_seconds: i32,
    #[serde(default, rename = "imageMinimumGCAge")]
    pub image_minimum_gc_age: Duration,
    #[serde(default, rename = "imageMaximumGCAge")]
    pub image_maximum_gc_age: Duration,
    #[serde(
        default,
        rename = "imageGCHighThresholdPercent",
        skip_serializing_if = "Option::is_none"
    )]
    pub image_gc_high_threshold_percent: Option<i32>,
    #[serde(
        default,
        rename = "imageGCLowThresholdPercent",
        skip_serializing_if = "Option::is_none"
    )]
    pub image_gc_low_threshold_percent: Option<i32>,
    #[serde(default, rename = "volumeStatsAggPeriod")]
    pub volume_stats_agg_period: Duration,
    #[serde(default, rename = "kubeletCgroups", skip_serializing_if = "is_default")]
    pub kubelet_cgroups: String,
    #[serde(default, rename = "systemCgroups", skip_serializing_if = "is_default")]
    pub system_cgroups: String,
    #[serde(default, rename = "cgroupRoot", skip_serializing_if = "is_default")]
    pub cgroup_root: String,
    #[serde(
        default,
        rename = "cgroupsPerQOS",
        skip_serializing_if = "Option::is_none"
    )]
    pub cgroups_per_qos: Option<bool>,
    #[serde(default, rename = "cgroupDriver", skip_serializing_if = "is_default")]
    pub cgroup_driver: String,
    #[serde(
        default,
        rename = "cpuManagerPolicy",
        skip_serializing_if = "is_default"
    )]
    pub cpu_manager_policy: String,
    #[serde(
        default,
        rename = "singleProcessOOMKill",
        skip_serializing_if = "Option::is_none"
    )]
    pub single_process_oom_kill: Option<bool>,
    #[serde(
        default,
        rename = "cpuManagerPolicyOptions",
        skip_serializing_if = "is_default"
    )]
    pub cpu_manager_policy_options: BTreeMap<String, String>,
    #[serde(default, rename = "cpuManagerReconcilePeriod")]
    pub cpu_manager_reconcile_period: Duration,
    #[serde(
        default,
        rename = "memoryManagerPolicy",
        skip_serializing_if = "is_default"
    )]
    pub memory_manager_policy: String,
    #[serde(
        default,
        rename = "topologyManagerPolicy",
        skip_serializing_if = "is_default"
    )]
    pub topology_manager_policy: String,
    #[serde(
        default,
        rename = "topologyManagerScope",
        skip_serializing_if = "is_default"
    )]
    pub topology_manager_scope: String,
    #[serde(
        default,
        rename = "topologyManagerPolicyOptions",
        skip_serializing_if = "is_default"
    )]
    pub topology_manager_policy_options: BTreeMap<String, String>,
    #[serde(default, rename = "qosReserved", skip_serializing_if = "is_default")]
    pub qos_reserved: BTreeMap<String, String>,
    #[serde(default, rename = "runtimeRequestTimeout")]
    pub runtime_request_timeout: Duration,
    #[serde(default, rename = "hairpinMode", skip_serializing_if = "is_default")]
    pub hairpin_mode: String,
    #[serde(default, rename = "maxPods", skip_serializing_if = "is_default")]
    pub max_pods: i32,
    #[serde(default, rename = "podCIDR", skip_serializing_if = "is_default")]
    pub pod_cidr: String,
    #[serde(
        default,
        rename = "podPidsLimit",
        skip_serializing_if = "Option::is_none"
    )]
    pub pod_pids_limit: Option<i64>,
    #[serde(
        default,
        rename = "resolvConf",
        skip_serializing_if = "Option::is_none"
    )]
    pub resolver_config: Option<String>,
    #[serde(default, rename = "runOnce", skip_serializing_if = "is_default")]
    pub run_once: bool,
    #[serde(
        default,
        rename = "cpuCFSQuota",
        skip_serializing_if = "Option::is_none"
    )]
    pub cpu_cfs_quota: Option<bool>,
    #[serde(
        default,
        rename = "cpuCFSQuotaPeriod",
        skip_serializing_if = "Option::is_none"
    )]
    pub cpu_cfs_quota_period: Option<Duration>,
    #[serde(
        default,
        rename = "nodeStatusMaxImages",
        skip_serializing_if = "Option::is_none"
    )]
    pub node_status_max_images: Option<i32>,
    #[serde(default, rename = "maxOpenFiles", skip_serializing_if = "is_default")]
    pub max_open_files: i64,
    #[serde(default, rename = "contentType", skip_serializing_if = "is_default")]
    pub content_type: String,
    #[serde(
        default,
        rename = "kubeAPIQPS",
        skip_serializing_if = "Option::is_none"
    )]
    pub kube_api_qps: Option<i32>,
    #[serde(default, rename = "kubeAPIBurst", skip_serializing_if = "is_default")]
    pub kube_api_burst: i32,
    #[serde(
        default,
        rename = "serializeImagePulls",
        skip_serializing_if = "Option::is_none"
    )]
    pub serialize_image_pulls: Option<bool>,
    #[serde(
        default,
        rename = "maxParallelImagePulls",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_parallel_image_pulls: Option<i32>,
    #[serde(
        default,
        rename = "evictionHard",
        skip_serializing_if = "none_or_empty_map"
    )]
    pub eviction_hard: Option<BTreeMap<String, String>>,
    #[serde(default, rename = "evictionSoft", skip_serializing_if = "is_default")]
    pub eviction_soft: BTreeMap<String, String>,
    #[serde(
        default,
        rename = "evictionSoftGracePeriod",
        skip_serializing_if = "is_default"
    )]
    pub eviction_soft_grace_period: BTreeMap<String, String>,
    #[serde(default, rename = "evictionPressureTransitionPeriod")]
    pub eviction_pressure_transition_period: Duration,
    #[serde(
        default,
        rename = "evictionMaxPodGracePeriod",
        skip_serializing_if = "is_default"
    )]
    pub eviction_max_pod_grace_period: i32,
    #[serde(
        default,
        rename = "evictionMinimumReclaim",
        skip_serializing_if = "is_default"
    )]
    pub eviction_minimum_reclaim: BTreeMap<String, String>,
    #[serde(
        default,
        rename = "mergeDefaultEvictionSettings",
        skip_serializing_if = "Option::is_none"
    )]
    pub merge_default_eviction_settings: Option<bool>,
    #[serde(default, rename = "podsPerCore", skip_serializing_if = "is_default")]
    pub pods_per_core: i32,
    #[serde(
        default,
        rename = "enableControllerAttachDetach",
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_controller_attach_detach: Option<bool>,
    #[serde(
        default,
        rename = "protectKernelDefaults",
        skip_serializing_if = "is_default"
    )]
    pub protect_kernel_defaults: bool,
    #[serde(
        default,
        rename = "makeIPTablesUtilChains",
        skip_serializing_if = "Option::is_none"
    )]
    pub make_iptables_util_chains: Option<bool>,
    #[serde(
        default,
        rename = "iptablesMasqueradeBit",
        skip_serializing_if = "Option::is_none"
    )]
    pub iptables_masquerade_bit: Option<i32>,
    #[serde(
        default,
        rename = "iptablesDropBit",
        skip_serializing_if = "Option::is_none"
    )]
    pub iptables_drop_bit: Option<i32>,
    #[serde(default, rename = "featureGates", skip_serializing_if = "is_default")]
    pub feature_gates: BTreeMap<String, bool>,
    #[serde(
        default,
        rename = "failSwapOn",
        skip_serializing_if = "Option::is_none"
    )]
    pub fail_swap_on: Option<bool>,
    #[serde(default, rename = "memorySwap")]
    pub memory_swap: MemorySwapConfiguration,
    #[serde(
        default,
        rename = "containerLogMaxSize",
        skip_serializing_if = "is_default"
    )]
    pub container_log_max_size: String,
    #[serde(
        default,
        rename = "containerLogMaxFiles",
        skip_serializing_if = "Option::is_none"
    )]
    pub container_log_max_files: Option<i32>,
    #[serde(
        default,
        rename = "containerLogMaxWorkers",
        skip_serializing_if = "Option::is_none"
    )]
    pub container_log_max_workers: Option<i32>,
    #[serde(
        default,
        rename = "containerLogMonitorInterval",
        skip_serializing_if = "Option::is_none"
    )]
    pub container_log_monitor_interval: Option<Duration>,
    #[serde(
        default,
        rename = "configMapAndSecretChangeDetectionStrategy",
        skip_serializing_if = "is_default"
    )]
    pub config_map_and_secret_change_detection_strategy: String,
    #[serde(default, rename = "systemReserved", skip_serializing_if = "is_default")]
    pub system_reserved: BTreeMap<String, String>,
    #[serde(default, rename = "kubeReserved", skip_serializing_if = "is_default")]
    pub kube_reserved: BTreeMap<String, String>,
    #[serde(
        default,
        rename = "reservedSystemCPUs",
        skip_serializing_if = "is_default"
    )]
    pub reserved_system_cpus: String,
    #[serde(
        default,
        rename = "showHiddenMetricsForVersion",
        skip_serializing_if = "is_default"
    )]
    pub show_hidden_metrics_for_version: String,
    #[serde(
        default,
        rename = "systemReservedCgroup",
        skip_serializing_if = "is_default"
    )]
    pub system_reserved_cgroup: String,
    #[serde(
        default,
        rename = "kubeReservedCgroup",
        skip_serializing_if = "is_default"
    )]
    pub kube_reserved_cgroup: String,
    #[serde(
        default,
        rename = "enforceNodeAllocatable",
        skip_serializing_if = "none_or_empty"
    )]
    pub enforce_node_allocatable: Option<Vec<String>>,
    #[serde(
        default,
        rename = "allowedUnsafeSysctls",
        skip_serializing_if = "is_default"
    )]
    pub allowed_unsafe_sysctls: Vec<String>,
    #[serde(
        default,
        rename = "volumePluginDir",
        skip_serializing_if = "is_default"
    )]
    pub volume_plugin_dir: String,
    #[serde(default, rename = "providerID", skip_serializing_if = "is_default")]
    pub provider_id: String,
    #[serde(
        default,
        rename = "kernelMemcgNotification",
        skip_serializing_if = "is_default"
    )]
    pub kernel_memcg_notification: bool,
    #[serde(default, rename = "logging")]
    pub logging: LoggingConfiguration,
    #[serde(
        default,
        rename = "enableSystemLogHandler",
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_system_log_handler: Option<bool>,
    #[serde(
        default,
        rename = "enableSystemLogQuery",
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_system_log_query: Option<bool>,
    #[serde(default, rename = "shutdownGracePeriod")]
    pub shutdown_grace_period: Duration,
    #[serde(default, rename = "shutdownGracePeriodCriticalPods")]
    pub shutdown_grace_period_critical_pods: Duration,
    #[serde(
        default,
        rename = "shutdownGracePeriodByPodPriority",
        skip_serializing_if = "is_default"
    )]
    pub shutdown_grace_period_by_pod_priority: Vec<ShutdownGracePeriodByPodPriority>,
    #[serde(default, rename = "crashLoopBackOff")]
    pub crash_loop_back_off: CrashLoopBackOffConfig,
    #[serde(default, rename = "reservedMemory", skip_serializing_if = "is_default")]
    pub reserved_memory: Vec<MemoryReservation>,
    #[serde(
        default,
        rename = "enableProfilingHandler",
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_profiling_handler: Option<bool>,
    #[serde(
        default,
        rename = "enableDebugFlagsHandler",
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_debug_flags_handler: Option<bool>,
    #[serde(
        default,
        rename = "seccompDefault",
        skip_serializing_if = "Option::is_none"
    )]
    pub seccomp_default: Option<bool>,
    #[serde(
        default,
        rename = "memoryThrottlingFactor",
        skip_serializing_if = "Option::is_none"
    )]
    pub memory_throttling_factor: Option<f64>,
    #[serde(
        default,
        rename = "registerWithTaints",
        skip_serializing_if = "is_default"
    )]
    pub register_with_taints: Vec<Taint>,
    #[serde(
        default,
        rename = "registerNode",
        skip_serializing_if = "Option::is_none"
    )]
    pub register_node: Option<bool>,
    #[serde(default, rename = "tracing", skip_serializing_if = "Option::is_none")]
    pub tracing: Option<TracingConfiguration>,
    #[serde(
        default,
        rename = "localStorageCapacityIsolation",
        skip_serializing_if = "Option::is_none"
    )]
    pub local_storage_capacity_isolation: Option<bool>,
    #[serde(default, rename = "containerRuntimeEndpoint")]
    pub container_runtime_endpoint: String,
    #[serde(
        default,
        rename = "imageServiceEndpoint",
        skip_serializing_if = "is_default"
    )]
    pub image_service_endpoint: String,
    #[serde(
        default,
        rename = "failCgroupV1",
        skip_serializing_if = "Option::is_none"
    )]
    pub fail_cgroup_v1: Option<bool>,
    #[serde(
        default,
        rename = "userNamespaces",
        skip_serializing_if = "Option::is_none"
    )]
    pub user_namespaces: Option<UserNamespaces>,
}
