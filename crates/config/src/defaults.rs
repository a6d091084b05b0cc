//! `SetDefaults_KubeletConfiguration` (`pkg/kubelet/apis/config/v1beta1/defaults.go`),
//! `applyLegacyDefaults` (`cmd/kubelet/app/options/options.go`) and the Linux
//! `eviction.DefaultEvictionHard` (`pkg/kubelet/eviction/defaults_linux.go`).

use kubelet_apimachinery::Duration;
use kubelet_features::{FeatureGate, FeatureGateError, gates};

use crate::types::{
    AUTHZ_MODE_ALWAYS_ALLOW, AUTHZ_MODE_WEBHOOK, KubeletConfiguration,
    set_recommended_logging_configuration,
};

pub const DEFAULT_IPTABLES_MASQUERADE_BIT: i32 = 14;
pub const DEFAULT_IPTABLES_DROP_BIT: i32 = 15;
pub const DEFAULT_VOLUME_PLUGIN_DIR: &str = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/";
pub const DEFAULT_POD_LOGS_DIR: &str = "/var/log/pods";
pub const DEFAULT_MEMORY_THROTTLING_FACTOR: f64 = 0.9;
/// `MaxContainerBackOff`.
pub const MAX_CONTAINER_BACK_OFF: Duration = Duration::from_secs(300);
/// `ports.KubeletPort`, `ports.KubeletReadOnlyPort`, `ports.KubeletHealthzPort`.
pub const KUBELET_PORT: i32 = 10250;
pub const KUBELET_READ_ONLY_PORT: i32 = 10255;
pub const KUBELET_HEALTHZ_PORT: i32 = 10248;
/// `qos.KubeletOOMScoreAdj`.
pub const KUBELET_OOM_SCORE_ADJ: i32 = -999;
/// `kubetypes.ResolvConfDefault`.
pub const RESOLV_CONF_DEFAULT: &str = "/etc/resolv.conf";
pub const DEFAULT_CONTAINER_RUNTIME_ENDPOINT: &str = "unix:///run/containerd/containerd.sock";

/// `eviction.DefaultEvictionHard` on Linux, filled in by `loadConfigFile` when the
/// `--config` file has no `evictionHard` (`load_config_file`).
pub use kubelet_apimachinery::default_eviction_hard;

fn dflt<T>(v: &mut Option<T>, d: T) {
    if v.is_none() {
        *v = Some(d);
    }
}

fn dflt_dur(v: &mut Duration, d: Duration) {
    if v.is_zero() {
        *v = d;
    }
}

fn dflt_str(v: &mut String, d: &str) {
    if v.is_empty() {
        *v = d.to_string();
    }
}

fn dflt_int<T: Default + PartialEq>(v: &mut T, d: T) {
    if *v == T::default() {
        *v = d;
    }
}

/// Applies the v1beta1 defaults. `gate` is the process feature gate; the config's own
/// `featureGates` are merged into a copy of it first, as upstream does (upstream panics when
/// that merge fails; this returns the error instead).
pub fn set_defaults(
    obj: &mut KubeletConfiguration,
    gate: &FeatureGate,
) -> Result<(), FeatureGateError> {
    let mut local = gate.clone();
    local.set_from_map(&obj.feature_gates)?;
    set_server_defaults(obj);
    set_node_defaults(obj);
    set_runtime_defaults(obj);
    set_handler_defaults(obj);
    if local.enabled(gates::KUBELET_CRASH_LOOP_BACK_OFF_MAX) {
        dflt(
            &mut obj.crash_loop_back_off.max_container_restart_period,
            MAX_CONTAINER_BACK_OFF,
        );
    }
    if local.enabled(gates::KUBELET_ENSURE_SECRET_PULLED_IMAGES) {
        dflt_str(
            &mut obj.image_pull_credentials_verification_policy,
            "NeverVerifyPreloadedImages",
        );
    }
    Ok(())
}

fn set_server_defaults(obj: &mut KubeletConfiguration) {
    dflt(&mut obj.enable_server, true);
    dflt_dur(&mut obj.sync_frequency, Duration::from_mins(1));
    dflt_dur(&mut obj.file_check_frequency, Duration::from_secs(20));
    dflt_dur(&mut obj.http_check_frequency, Duration::from_secs(20));
    dflt_str(&mut obj.address, "0.0.0.0");
    dflt_int(&mut obj.port, KUBELET_PORT);
    let authn = &mut obj.authentication;
    dflt(&mut authn.anonymous.enabled, false);
    dflt(&mut authn.webhook.enabled, true);
    dflt_dur(&mut authn.webhook.cache_ttl, Duration::from_mins(2));
    dflt_str(&mut obj.authorization.mode, AUTHZ_MODE_WEBHOOK);
    let authz = &mut obj.authorization.webhook;
    dflt_dur(&mut authz.cache_authorized_ttl, Duration::from_mins(5));
    dflt_dur(&mut authz.cache_unauthorized_ttl, Duration::from_secs(30));
    dflt(&mut obj.registry_pull_qps, 5);
    dflt_int(&mut obj.registry_burst, 10);
    dflt(&mut obj.event_record_qps, 50);
    dflt_int(&mut obj.event_burst, 100);
    dflt(&mut obj.enable_debugging_handlers, true);
    dflt(&mut obj.healthz_port, KUBELET_HEALTHZ_PORT);
    dflt_str(&mut obj.healthz_bind_address, "127.0.0.1");
    dflt(&mut obj.oom_score_adj, KUBELET_OOM_SCORE_ADJ);
    dflt_dur(
        &mut obj.streaming_connection_idle_timeout,
        Duration::from_hours(4),
    );
}

fn set_node_defaults(obj: &mut KubeletConfiguration) {
    if obj.node_status_report_frequency.is_zero() {
        obj.node_status_report_frequency = if obj.node_status_update_frequency.is_zero() {
            Duration::from_mins(5)
        } else {
            obj.node_status_update_frequency
        };
    }
    dflt_dur(
        &mut obj.node_status_update_frequency,
        Duration::from_secs(10),
    );
    dflt_int(&mut obj.node_lease_duration_seconds, 40);
    dflt_dur(&mut obj.image_minimum_gc_age, Duration::from_mins(2));
    dflt(&mut obj.image_gc_high_threshold_percent, 85);
    dflt(&mut obj.image_gc_low_threshold_percent, 80);
    dflt_dur(&mut obj.volume_stats_agg_period, Duration::from_mins(1));
    dflt(&mut obj.cgroups_per_qos, true);
    dflt_str(&mut obj.cgroup_driver, "cgroupfs");
    dflt_str(&mut obj.cpu_manager_policy, "none");
    dflt_dur(
        &mut obj.cpu_manager_reconcile_period,
        Duration::from_secs(10),
    );
    dflt_str(&mut obj.memory_manager_policy, "None");
    dflt_str(&mut obj.topology_manager_policy, "none");
    dflt_str(&mut obj.topology_manager_scope, "container");
    dflt_dur(&mut obj.runtime_request_timeout, Duration::from_mins(2));
    dflt_str(&mut obj.hairpin_mode, "promiscuous-bridge");
    dflt_int(&mut obj.max_pods, 110);
    if obj.pod_pids_limit.is_none_or(|v| v < 0) {
        obj.pod_pids_limit = Some(-1);
    }
    dflt(&mut obj.resolver_config, RESOLV_CONF_DEFAULT.to_string());
    dflt(&mut obj.cpu_cfs_quota, true);
    dflt(&mut obj.cpu_cfs_quota_period, Duration::from_millis(100));
    dflt(&mut obj.node_status_max_images, 50);
    dflt_int(&mut obj.max_open_files, 1_000_000);
    dflt_str(&mut obj.content_type, "application/vnd.kubernetes.protobuf");
    dflt(&mut obj.kube_api_qps, 50);
    dflt_int(&mut obj.kube_api_burst, 100);
}

fn set_runtime_defaults(obj: &mut KubeletConfiguration) {
    if obj.serialize_image_pulls.is_none() {
        let parallel = obj.max_parallel_image_pulls.is_some_and(|n| n >= 2);
        obj.serialize_image_pulls = Some(!parallel);
    }
    dflt_dur(
        &mut obj.eviction_pressure_transition_period,
        Duration::from_mins(5),
    );
    dflt(&mut obj.merge_default_eviction_settings, false);
    dflt(&mut obj.enable_controller_attach_detach, true);
    dflt(&mut obj.make_iptables_util_chains, true);
    dflt(
        &mut obj.iptables_masquerade_bit,
        DEFAULT_IPTABLES_MASQUERADE_BIT,
    );
    dflt(&mut obj.iptables_drop_bit, DEFAULT_IPTABLES_DROP_BIT);
    dflt(&mut obj.fail_swap_on, true);
    dflt_str(&mut obj.container_log_max_size, "10Mi");
    dflt(&mut obj.container_log_max_files, 5);
    dflt(&mut obj.container_log_max_workers, 1);
    dflt(
        &mut obj.container_log_monitor_interval,
        Duration::from_secs(10),
    );
    dflt_str(
        &mut obj.config_map_and_secret_change_detection_strategy,
        "Watch",
    );
    dflt(&mut obj.enforce_node_allocatable, vec!["pods".to_string()]);
    dflt_str(&mut obj.volume_plugin_dir, DEFAULT_VOLUME_PLUGIN_DIR);
    set_recommended_logging_configuration(&mut obj.logging);
}

fn set_handler_defaults(obj: &mut KubeletConfiguration) {
    dflt(&mut obj.enable_system_log_handler, true);
    dflt(&mut obj.enable_profiling_handler, true);
    dflt(&mut obj.enable_debug_flags_handler, true);
    dflt(&mut obj.seccomp_default, false);
    // 1.35: the kubelet refuses cgroup v1 hosts unless told otherwise.
    dflt(&mut obj.fail_cgroup_v1, true);
    dflt(
        &mut obj.memory_throttling_factor,
        DEFAULT_MEMORY_THROTTLING_FACTOR,
    );
    dflt(&mut obj.register_node, true);
    dflt(&mut obj.local_storage_capacity_isolation, true);
    dflt_str(
        &mut obj.container_runtime_endpoint,
        DEFAULT_CONTAINER_RUNTIME_ENDPOINT,
    );
    dflt_str(&mut obj.pod_logs_dir, DEFAULT_POD_LOGS_DIR);
}

/// `applyLegacyDefaults`: the command-line API's insecure defaults, used only as the
/// baseline before a config file is loaded.
pub fn apply_legacy_defaults(kc: &mut KubeletConfiguration) {
    kc.authentication.anonymous.enabled = Some(true);
    kc.authentication.webhook.enabled = Some(false);
    kc.authorization.mode = AUTHZ_MODE_ALWAYS_ALLOW.to_string();
    kc.read_only_port = KUBELET_READ_ONLY_PORT;
}

/// `options.NewKubeletConfiguration`: v1beta1 defaults (with the default gates) plus the
/// legacy flag defaults.
pub fn new_kubelet_configuration() -> KubeletConfiguration {
    let mut kc = KubeletConfiguration::default();
    // featureGates is empty here, so merging it into the default gate cannot fail.
    let _ = set_defaults(&mut kc, &FeatureGate::new());
    apply_legacy_defaults(&mut kc);
    kc
}
