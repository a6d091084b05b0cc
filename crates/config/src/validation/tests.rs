#![allow(clippy::unwrap_used)]
//! One test per `ValidateKubeletConfiguration` rule.

use std::collections::BTreeMap;

use kubelet_apimachinery::{Duration, Quantity};
use kubelet_features::FeatureGate;

use super::*;
use crate::types::{
    MemoryReservation, ShutdownGracePeriodByPodPriority, Taint, TracingConfiguration,
    UserNamespaces,
};

const V2: HostInfo = HostInfo { cgroup_v1: false };

fn valid() -> KubeletConfiguration {
    let mut kc = KubeletConfiguration::default();
    crate::set_defaults(&mut kc, &FeatureGate::new()).unwrap();
    kc
}

fn errors_with(gates: &[(&str, bool)], f: impl FnOnce(&mut KubeletConfiguration)) -> Vec<String> {
    let mut kc = valid();
    kc.feature_gates = gates.iter().map(|(k, v)| ((*k).to_string(), *v)).collect();
    f(&mut kc);
    match validate_kubelet_configuration(&kc, &FeatureGate::new(), V2) {
        Ok(()) => vec![],
        Err(e) => e.0,
    }
}

fn errors(f: impl FnOnce(&mut KubeletConfiguration)) -> Vec<String> {
    errors_with(&[], f)
}

fn one(errs: Vec<String>, want: &str) {
    assert_eq!(errs, vec![want.to_string()]);
}

#[test]
fn defaults_are_valid() {
    assert_eq!(errors(|_| {}), Vec::<String>::new());
}

#[test]
fn feature_gate_errors_come_alone() {
    let errs = errors_with(&[("Bogus", true)], |kc| kc.max_pods = -1);
    assert_eq!(errs, vec!["unrecognized feature gate: Bogus"]);
}

#[test]
fn node_lease_duration() {
    one(
        errors(|kc| kc.node_lease_duration_seconds = 0),
        "invalid configuration: nodeLeaseDurationSeconds must be greater than 0",
    );
}

#[test]
fn system_cgroups_needs_cgroup_root() {
    one(
        errors(|kc| kc.system_cgroups = "/system".into()),
        "invalid configuration: systemCgroups (--system-cgroups) was specified and cgroupRoot (--cgroup-root) was not specified",
    );
}

#[test]
fn negative_numbers() {
    let errs = errors(|kc| {
        kc.event_burst = -1;
        kc.event_record_qps = Some(-2);
        kc.kube_api_burst = -3;
        kc.kube_api_qps = Some(-4);
        kc.max_open_files = -5;
        kc.max_pods = -6;
        kc.pods_per_core = -7;
        kc.registry_burst = -8;
        kc.registry_pull_qps = Some(-9);
    });
    assert_eq!(
        errs,
        vec![
            "invalid configuration: eventBurst (--event-burst) -1 must not be a negative number",
            "invalid configuration: eventRecordQPS (--event-qps) -2 must not be a negative number",
            "invalid configuration: kubeAPIBurst (--kube-api-burst) -3 must not be a negative number",
            "invalid configuration: kubeAPIQPS (--kube-api-qps) -4 must not be a negative number",
            "invalid configuration: maxOpenFiles (--max-open-files) -5 must not be a negative number",
            "invalid configuration: maxPods (--max-pods) -6 must not be a negative number",
            "invalid configuration: podsPerCore (--pods-per-core) -7 must not be a negative number",
            "invalid configuration: registryBurst (--registry-burst) -8 must not be a negative number",
            "invalid configuration: registryPullQPS (--registry-qps) -9 must not be a negative number",
        ]
    );
}

#[test]
fn ports() {
    one(
        errors(|kc| kc.healthz_port = Some(70000)),
        "invalid configuration: healthzPort (--healthz-port) 70000 must be between 1 and 65535, inclusive",
    );
    assert!(errors(|kc| kc.healthz_port = Some(0)).is_empty());
    one(
        errors(|kc| kc.port = 0),
        "invalid configuration: port (--port) 0 must be between 1 and 65535, inclusive",
    );
    one(
        errors(|kc| kc.read_only_port = -1),
        "invalid configuration: readOnlyPort (--read-only-port) -1 must be between 0 and 65535, inclusive",
    );
}

#[test]
fn cfs_quota_period() {
    one(
        errors(|kc| kc.cpu_cfs_quota_period = Some(Duration::from_millis(50))),
        "invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) 50ms requires feature gate CustomCPUCFSQuotaPeriod",
    );
    assert!(
        errors_with(&[("CustomCPUCFSQuotaPeriod", true)], |kc| kc
            .cpu_cfs_quota_period =
            Some(Duration::from_millis(50)))
        .is_empty()
    );
    one(
        errors_with(&[("CustomCPUCFSQuotaPeriod", true)], |kc| {
            kc.cpu_cfs_quota_period = Some(Duration::from_secs(2))
        }),
        "invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) 2s must be between 1ms and 1sec, inclusive",
    );
}

#[test]
fn image_gc_thresholds() {
    assert_eq!(
        errors(|kc| kc.image_gc_high_threshold_percent = Some(101)),
        vec![
            "invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be between 0 and 100, inclusive"
        ]
    );
    assert_eq!(
        errors(|kc| kc.image_gc_low_threshold_percent = Some(-1)),
        vec![
            "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) -1 must be between 0 and 100, inclusive"
        ]
    );
    one(
        errors(|kc| kc.image_gc_low_threshold_percent = Some(90)),
        "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 90 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85",
    );
}

#[test]
fn image_gc_ages() {
    one(
        errors(|kc| kc.image_minimum_gc_age = Duration::from_secs(-1)),
        "invalid configuration: imageMinimumGCAge -1s must not be negative",
    );
    assert!(
        errors(|kc| kc.image_maximum_gc_age = Duration::from_secs(-1)).contains(
            &"invalid configuration: imageMaximumGCAge -1s must not be negative".to_string()
        )
    );
    one(
        errors(|kc| kc.image_maximum_gc_age = Duration::from_secs(60)),
        "invalid configuration: imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s",
    );
}

#[test]
fn iptables_bits() {
    one(
        errors(|kc| kc.iptables_drop_bit = Some(32)),
        "invalid configuration: iptablesDropBit (--iptables-drop-bit) 32 must be between 0 and 31, inclusive",
    );
    one(
        errors(|kc| kc.iptables_masquerade_bit = Some(-1)),
        "invalid configuration: iptablesMasqueradeBit (--iptables-masquerade-bit) -1 must be between 0 and 31, inclusive",
    );
}

#[test]
fn node_status_max_images() {
    one(
        errors(|kc| kc.node_status_max_images = Some(-2)),
        "invalid configuration: nodeStatusMaxImages (--node-status-max-images) -2 must be -1 or greater",
    );
}

#[test]
fn oom_score_adj() {
    one(
        errors(|kc| kc.oom_score_adj = Some(1001)),
        "invalid configuration: oomScoreAdj (--oom-score-adj) 1001 must be between -1000 and 1000, inclusive",
    );
}

#[test]
fn parallel_image_pulls() {
    one(
        errors(|kc| kc.max_parallel_image_pulls = Some(0)),
        "invalid configuration: maxParallelImagePulls 0 must be a positive number",
    );
    one(
        errors(|kc| kc.max_parallel_image_pulls = Some(3)),
        "invalid configuration: maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false",
    );
}

#[test]
fn server_tls_bootstrap_needs_gate() {
    one(
        errors_with(&[("RotateKubeletServerCertificate", false)], |kc| {
            kc.server_tls_bootstrap = true
        }),
        "invalid configuration: serverTLSBootstrap true requires feature gate RotateKubeletServerCertificate",
    );
}

#[test]
fn run_once() {
    one(
        errors(|kc| kc.run_once = true),
        "invalid configuration: runOnce (--runOnce) true, Runonce mode has been deprecated and should not be set",
    );
}

#[test]
fn taints() {
    let bad = Taint {
        key: "a b".into(),
        value: String::new(),
        effect: "NoSchedule".into(),
        time_added: None,
    };
    one(
        errors(|kc| kc.register_with_taints = vec![bad]),
        "invalid taint: {a b  NoSchedule <nil>}",
    );
    let timed = Taint {
        key: "a".into(),
        value: "b".into(),
        effect: "NoSchedule".into(),
        time_added: Some("2024-01-01T00:00:00Z".into()),
    };
    one(
        errors(|kc| kc.register_with_taints = vec![timed]),
        "invalid configuration: taint.TimeAdded is not nil",
    );
}

#[test]
fn topology_manager() {
    one(
        errors(|kc| kc.topology_manager_policy = "x".into()),
        "invalid configuration: topologyManagerPolicy (--topology-manager-policy) \"x\" must be one of: [\"none\" \"best-effort\" \"restricted\" \"single-numa-node\"]",
    );
    one(
        errors(|kc| kc.topology_manager_scope = "node".into()),
        "invalid configuration: topologyManagerScope (--topology-manager-scope) \"node\" must be one of: \"container\", or \"pod\"",
    );
}

#[test]
fn graceful_shutdown() {
    one(
        errors(|kc| {
            kc.shutdown_grace_period = Duration::from_secs(10);
            kc.shutdown_grace_period_critical_pods = Duration::from_secs(20);
        }),
        "invalid configuration: shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s",
    );
    one(
        errors(|kc| kc.shutdown_grace_period = Duration::from_millis(500)),
        "invalid configuration: shutdownGracePeriod 500ms must be either zero or otherwise >= 1 sec",
    );
    assert!(errors(|kc| kc.shutdown_grace_period_critical_pods = Duration::from_millis(500))
        .contains(&"invalid configuration: shutdownGracePeriodCriticalPods 500ms must be either zero or otherwise >= 1 sec".to_string()));
    let gate_off = errors_with(
        &[
            ("GracefulNodeShutdown", false),
            ("GracefulNodeShutdownBasedOnPodPriority", false),
        ],
        |kc| kc.shutdown_grace_period = Duration::from_secs(30),
    );
    assert_eq!(
        gate_off,
        vec![
            "invalid configuration: specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown"
        ]
    );
    let by_prio = vec![ShutdownGracePeriodByPodPriority {
        priority: 0,
        shutdown_grace_period_seconds: 30,
    }];
    one(
        errors(|kc| {
            kc.shutdown_grace_period = Duration::from_secs(30);
            kc.shutdown_grace_period_by_pod_priority = by_prio.clone();
        }),
        "invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time",
    );
    one(
        errors_with(&[("GracefulNodeShutdownBasedOnPodPriority", false)], |kc| {
            kc.shutdown_grace_period_by_pod_priority = by_prio
        }),
        "invalid configuration: Specifying shutdownGracePeriodByPodPriority requires feature gate GracefulNodeShutdownBasedOnPodPriority",
    );
}

#[test]
fn swap_behavior() {
    one(
        errors(|kc| kc.memory_swap.swap_behavior = "Unlimited".into()),
        "invalid configuration: memorySwap.swapBehavior \"Unlimited\" must be one of: \"\", \"LimitedSwap\" or \"NoSwap\"",
    );
    assert!(errors(|kc| kc.memory_swap.swap_behavior = "LimitedSwap".into()).is_empty());
}

#[test]
fn crash_loop_back_off() {
    one(
        errors(|kc| kc.crash_loop_back_off.max_container_restart_period = None),
        "invalid configuration: FeatureGate KubeletCrashLoopBackOffMax is enabled, CrashLoopBackOff.MaxContainerRestartPeriod must be set",
    );
    one(
        errors(|kc| {
            kc.crash_loop_back_off.max_container_restart_period = Some(Duration::from_secs(301))
        }),
        "invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 301 seconds) must be set between 1s and 300s",
    );
    one(
        errors_with(&[("KubeletCrashLoopBackOffMax", false)], |_| {}),
        "invalid configuration: FeatureGate KubeletCrashLoopBackOffMax not enabled, CrashLoopBackOff.MaxContainerRestartPeriod must not be set",
    );
}

#[test]
fn enforce_node_allocatable() {
    let set = |v: &[&str]| -> Vec<String> {
        let v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        errors(move |kc| kc.enforce_node_allocatable = Some(v))
    };
    assert!(set(&["pods", "pods"]).contains(&"invalid configuration: duplicated enforcements \"pods\" in enforceNodeAllocatable (--enforce-node-allocatable)".to_string()));
    assert!(set(&["system-reserved", "system-reserved-compressible"]).contains(
        &"invalid configuration: both \"system-reserved\" and \"system-reserved-compressible\" cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)".to_string()
    ));
    one(
        set(&["kube-reserved"]),
        "invalid configuration: kubeReservedCgroup (--kube-reserved-cgroup) must be specified when \"kube-reserved\" or \"kube-reserved-compressible\" included in enforceNodeAllocatable (--enforce-node-allocatable)",
    );
    one(
        set(&["system-reserved"]),
        "invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when \"system-reserved\" or \"system-reserved-compressible\" included in enforceNodeAllocatable (--enforce-node-allocatable)",
    );
    one(
        set(&["none", "pods"]),
        "invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when \"none\" is specified",
    );
    one(
        set(&["bogus"]),
        "invalid configuration: option \"bogus\" specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are \"pods\", \"system-reserved\", \"system-reserved-compressible\", \"kube-reserved\", \"kube-reserved-compressible\" or \"none\"",
    );
    one(
        errors(|kc| kc.cgroups_per_qos = Some(false)),
        "invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true when \"pods\" contained in enforceNodeAllocatable (--enforce-node-allocatable)",
    );
    assert!(set(&["none"]).is_empty());
}

#[test]
fn hairpin_mode() {
    one(
        errors(|kc| kc.hairpin_mode = "x".into()),
        "invalid configuration: option \"x\" specified for hairpinMode (--hairpin-mode). Valid options are \"none\", \"hairpin-veth\" or \"promiscuous-bridge\"",
    );
}

#[test]
fn image_pull_credentials() {
    one(
        errors(|kc| kc.image_pull_credentials_verification_policy = "Sometimes".into()),
        "invalid configuration: option \"Sometimes\" specified for imagePullCredentialsVerificationPolicy. Valid options are \"NeverVerify\", \"NeverVerifyPreloadedImages\", \"NeverVerifyAllowlistedImages\" or \"AlwaysVerify\"",
    );
    one(
        errors(|kc| {
            kc.preloaded_images_verification_allowlist = vec!["registry.k8s.io/pause".into()]
        }),
        "invalid configuration: can't set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\"",
    );
    let off = errors_with(&[("KubeletEnsureSecretPulledImages", false)], |kc| {
        kc.preloaded_images_verification_allowlist = vec!["x".into()];
    });
    assert_eq!(
        off,
        vec![
            "invalid configuration: `imagePullCredentialsVerificationPolicy` must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled",
            "invalid configuration: `preloadedImagesVerificationAllowlist` must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled",
        ]
    );
}

#[test]
fn reserved_system_cpus() {
    one(
        errors(|kc| {
            kc.reserved_system_cpus = "0-1".into();
            kc.kube_reserved_cgroup = "/kube".into();
        }),
        "invalid configuration: can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)",
    );
    one(
        errors(|kc| kc.reserved_system_cpus = "3-1".into()),
        "invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) 3-1, error: invalid range \"3-1\" (3 > 1)",
    );
}

#[test]
fn reserved_memory() {
    let limits = |pairs: &[(&str, &str)]| -> BTreeMap<String, Quantity> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity::parse(v).unwrap()))
            .collect()
    };
    let errs = errors(|kc| {
        kc.reserved_memory = vec![
            MemoryReservation {
                numa_node: 0,
                limits: limits(&[("cpu", "1"), ("memory", "0")]),
            },
            MemoryReservation {
                numa_node: 0,
                limits: limits(&[("memory", "1Gi")]),
            },
        ]
    });
    assert_eq!(
        errs,
        vec![
            "invalid configuration: the limit type \"cpu\" for NUMA node 0 is not supported, only [memory hugepages-<HugePageSize>] is accepted",
            "invalid configuration: reserved memory may not be zero for NUMA node 0 and resource \"memory\"",
            "invalid configuration: the reserved memory has a duplicate value for NUMA node 0 and resource \"memory\"",
        ]
    );
}

#[test]
fn cgroup_v1_host() {
    let kc = valid();
    let v1 = HostInfo { cgroup_v1: true };
    let e = validate_kubelet_configuration(&kc, &FeatureGate::new(), v1).unwrap_err();
    assert_eq!(
        e.0,
        vec![
            "kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is in maintenance mode"
        ]
    );
    let mut kc = valid();
    kc.fail_cgroup_v1 = Some(false);
    kc.single_process_oom_kill = Some(false);
    let e = validate_kubelet_configuration(&kc, &FeatureGate::new(), v1).unwrap_err();
    assert_eq!(
        e.0,
        vec![
            "invalid configuration: singleProcessOOMKill must not be explicitly set to false when using cgroup v1"
        ]
    );
    assert!(validate_kubelet_configuration(&kc, &FeatureGate::new(), V2).is_ok());
}

/// `validateKubeletOSConfiguration` in upstream
/// `pkg/kubelet/apis/config/validation/validation_linux.go` (1.33+): idsPerPod is a
/// multiple of 65536 between 65536 and 2^32-1, checked on every Linux host.
#[test]
fn user_namespaces_ids_per_pod() {
    let ids = |n: i64| {
        errors(|kc| {
            kc.user_namespaces = Some(UserNamespaces {
                ids_per_pod: Some(n),
            })
        })
    };
    assert!(ids(65536).is_empty());
    assert!(ids(65536 * 65535).is_empty());
    one(
        ids(0),
        "invalid configuration: userNamespaces.idsPerPod must not be less than 65536",
    );
    one(
        ids(65536 + 1),
        "invalid configuration: userNamespaces.idsPerPod must be a multiple of 65536",
    );
    one(
        ids(65536 * 65536),
        "invalid configuration: userNamespaces.idsPerPod must not be more than 4294967295",
    );
    assert!(errors(|kc| kc.user_namespaces = Some(UserNamespaces::default())).is_empty());
}

#[test]
fn show_hidden_metrics() {
    assert!(errors(|kc| kc.show_hidden_metrics_for_version = "1.34".into()).is_empty());
    one(
        errors(|kc| kc.show_hidden_metrics_for_version = "1.33".into()),
        "--show-hidden-metrics-for-version must be omitted or have the value '1.34'. Only the previous minor version is allowed",
    );
}

#[test]
fn logging() {
    one(
        errors(|kc| kc.logging.format = "xml".into()),
        "logging.format: Invalid value: \"xml\": Unsupported log format",
    );
    assert!(errors(|kc| kc.logging.format = "json".into()).is_empty());
    one(
        errors(|kc| kc.logging.options.text.split_stream = true),
        "logging.options.text.splitStream: Forbidden: Feature LoggingAlphaOptions is disabled",
    );
}

#[test]
fn tracing() {
    one(
        errors(|kc| {
            kc.tracing = Some(TracingConfiguration {
                endpoint: None,
                sampling_rate_per_million: Some(-1),
            })
        }),
        "tracing.samplingRatePerMillion: Invalid value: -1: sampling rate must be positive",
    );
}

#[test]
fn memory_qos() {
    one(
        errors_with(&[("MemoryQoS", true)], |kc| {
            kc.memory_throttling_factor = None
        }),
        "invalid configuration: memoryThrottlingFactor is required when MemoryQoS feature flag is enabled",
    );
    one(
        errors(|kc| kc.memory_throttling_factor = Some(1.5)),
        "invalid configuration: memoryThrottlingFactor 1.5 must be greater than 0 and less than or equal to 1.0",
    );
}

#[test]
fn runtime_endpoint() {
    one(
        errors(|kc| kc.container_runtime_endpoint.clear()),
        "invalid configuration: the containerRuntimeEndpoint was not specified or empty",
    );
}

#[test]
fn system_log_query() {
    let errs = errors(|kc| {
        kc.enable_system_log_query = Some(true);
        kc.enable_system_log_handler = Some(false);
    });
    assert_eq!(
        errs,
        vec![
            "invalid configuration: NodeLogQuery feature gate is required for enableSystemLogQuery",
            "invalid configuration: enableSystemLogHandler is required for enableSystemLogQuery",
        ]
    );
}

#[test]
fn log_rotation() {
    one(
        errors(|kc| kc.container_log_max_workers = Some(0)),
        "invalid configuration: containerLogMaxWorkers must be greater than or equal to 1",
    );
    one(
        errors(|kc| kc.container_log_monitor_interval = Some(Duration::from_secs(2))),
        "invalid configuration: containerLogMonitorInterval must be a positive time duration greater than or equal to 3s",
    );
    one(
        errors(|kc| kc.container_log_max_files = Some(1)),
        "invalid configuration: containerLogMaxFiles must be greater than 1",
    );
}

#[test]
fn pod_logs_dir() {
    one(
        errors(|kc| kc.pod_logs_dir = "logs".into()),
        "invalid configuration: pod logs path \"logs\" must be absolute path",
    );
    one(
        errors(|kc| kc.pod_logs_dir = "/var/log//pods/".into()),
        "invalid configuration: pod logs path \"/var/log//pods/\" must be normalized",
    );
    one(
        errors(|kc| kc.pod_logs_dir = "/var/lög".into()),
        "invalid configuration: pod logs path \"/var/lög\" mut contains ASCII characters only",
    );
    let errs = errors(|kc| kc.pod_logs_dir.clear());
    assert_eq!(
        errs[0],
        "invalid configuration: podLogsDir was not specified"
    );
}

#[test]
fn all_errors_are_collected_and_aggregated() {
    let mut kc = valid();
    kc.port = 0;
    kc.max_pods = -1;
    let e = validate_kubelet_configuration(&kc, &FeatureGate::new(), V2).unwrap_err();
    assert_eq!(e.0.len(), 2);
    assert_eq!(
        e.to_string(),
        "[invalid configuration: maxPods (--max-pods) -1 must not be a negative number, invalid configuration: port (--port) 0 must be between 1 and 65535, inclusive]"
    );
}

#[test]
fn kubelet_label_allow_list() {
    assert!(validate_kubelet_flags(&crate::KubeletFlags::default()).is_ok());
    assert!(flags::is_kubelet_label("kubernetes.io/hostname"));
    assert!(flags::is_kubelet_label("a.node.kubernetes.io/x"));
    assert!(!flags::is_kubelet_label("node-role.kubernetes.io/worker"));
    let mut f = crate::KubeletFlags::default();
    f.node_labels
        .insert("node-role.kubernetes.io/worker".into(), String::new());
    assert!(
        validate_kubelet_flags(&f)
            .unwrap_err()
            .contains("[node-role.kubernetes.io/worker]")
    );
}
