//! Rules of the first part of `ValidateKubeletConfiguration`: numbers, ports, CFS quota, image GC, iptables, image pulls.

use super::*;

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
    // v1.35.4 has no rule for a negative imageMinimumGCAge (a later release adds one).
    assert_eq!(
        errors(|kc| kc.image_minimum_gc_age = Duration::from_secs(-1)),
        Vec::<String>::new()
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
