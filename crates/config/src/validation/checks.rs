//! The first part of `ValidateKubeletConfiguration`, in upstream order.

use kubelet_apimachinery::{Duration, check_taint_validation};
use kubelet_features::{FeatureGate, gates};

use crate::types::KubeletConfiguration;

const P: &str = "invalid configuration:";

fn port_ok(p: i32) -> bool {
    (1..=65535).contains(&p)
}

pub(super) fn general(kc: &KubeletConfiguration, g: &FeatureGate, errs: &mut Vec<String>) {
    if kc.node_lease_duration_seconds <= 0 {
        errs.push(format!(
            "{P} nodeLeaseDurationSeconds must be greater than 0"
        ));
    }
    if !kc.system_cgroups.is_empty() && kc.cgroup_root.is_empty() {
        errs.push(format!(
            "{P} systemCgroups (--system-cgroups) was specified and cgroupRoot (--cgroup-root) was not specified"
        ));
    }
    non_negative(errs, "eventBurst (--event-burst)", kc.event_burst.into());
    non_negative(
        errs,
        "eventRecordQPS (--event-qps)",
        opt(kc.event_record_qps),
    );
    let healthz = kc.healthz_port.unwrap_or(0);
    if healthz != 0 && !port_ok(healthz) {
        errs.push(format!(
            "{P} healthzPort (--healthz-port) {healthz} must be between 1 and 65535, inclusive"
        ));
    }
    cfs_quota_period(kc, g, errs);
    image_gc(kc, g, errs);
    numbers(kc, errs);
}

fn cfs_quota_period(kc: &KubeletConfiguration, g: &FeatureGate, errs: &mut Vec<String>) {
    let period = kc.cpu_cfs_quota_period.unwrap_or(Duration::ZERO);
    let custom = g.enabled(gates::CPU_CFS_QUOTA_PERIOD);
    if !custom && period != Duration::from_millis(100) {
        errs.push(format!(
            "{P} cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {period} requires feature gate CustomCPUCFSQuotaPeriod"
        ));
    }
    if custom && !(Duration::from_millis(1)..=Duration::from_secs(1)).contains(&period) {
        errs.push(format!(
            "{P} cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {period} must be between 1ms and 1sec, inclusive"
        ));
    }
}

fn image_gc(kc: &KubeletConfiguration, g: &FeatureGate, errs: &mut Vec<String>) {
    let high = opt(kc.image_gc_high_threshold_percent);
    let low = opt(kc.image_gc_low_threshold_percent);
    in_range(
        errs,
        "imageGCHighThresholdPercent (--image-gc-high-threshold)",
        high,
        0,
        100,
    );
    in_range(
        errs,
        "imageGCLowThresholdPercent (--image-gc-low-threshold)",
        low,
        0,
        100,
    );
    let mut e = |s: String| errs.push(s);
    if low >= high {
        e(format!(
            "{P} imageGCLowThresholdPercent (--image-gc-low-threshold) {low} must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) {high}"
        ));
    }
    let (min_age, max_age) = (kc.image_minimum_gc_age, kc.image_maximum_gc_age);
    if !max_age.is_zero() && !g.enabled(gates::IMAGE_MAXIMUM_GC_AGE) {
        e(format!(
            "{P} ImageMaximumGCAge feature gate is required for Kubelet configuration option imageMaximumGCAge"
        ));
    }
    if max_age.is_negative() {
        e(format!(
            "{P} imageMaximumGCAge {max_age} must not be negative"
        ));
    }
    if max_age > Duration::ZERO && max_age <= min_age {
        e(format!(
            "{P} imageMaximumGCAge {max_age} must be greater than imageMinimumGCAge {min_age}"
        ));
    }
}

/// `<field> <v> must not be a negative number`.
fn non_negative(errs: &mut Vec<String>, field: &str, v: i64) {
    if v < 0 {
        errs.push(format!("{P} {field} {v} must not be a negative number"));
    }
}

/// `<field> <v> must be between <lo> and <hi>, inclusive` (upstream `IsInRange`).
fn in_range(errs: &mut Vec<String>, field: &str, v: i64, lo: i64, hi: i64) {
    if !(lo..=hi).contains(&v) {
        errs.push(format!(
            "{P} {field} {v} must be between {lo} and {hi}, inclusive"
        ));
    }
}

/// An optional int32 field read as upstream's internal (defaulted) value.
fn opt(v: Option<i32>) -> i64 {
    i64::from(v.unwrap_or(0))
}

fn numbers(kc: &KubeletConfiguration, errs: &mut Vec<String>) {
    let drop_bit = opt(kc.iptables_drop_bit);
    in_range(
        errs,
        "iptablesDropBit (--iptables-drop-bit)",
        drop_bit,
        0,
        31,
    );
    let masq = opt(kc.iptables_masquerade_bit);
    in_range(
        errs,
        "iptablesMasqueradeBit (--iptables-masquerade-bit)",
        masq,
        0,
        31,
    );
    let burst = i64::from(kc.kube_api_burst);
    non_negative(errs, "kubeAPIBurst (--kube-api-burst)", burst);
    non_negative(errs, "kubeAPIQPS (--kube-api-qps)", opt(kc.kube_api_qps));
    let max_images = opt(kc.node_status_max_images);
    if max_images < -1 {
        errs.push(format!(
            "{P} nodeStatusMaxImages (--node-status-max-images) {max_images} must be -1 or greater"
        ));
    }
    non_negative(errs, "maxOpenFiles (--max-open-files)", kc.max_open_files);
    non_negative(errs, "maxPods (--max-pods)", kc.max_pods.into());
    let oom = opt(kc.oom_score_adj);
    in_range(errs, "oomScoreAdj (--oom-score-adj)", oom, -1000, 1000);
    non_negative(
        errs,
        "podsPerCore (--pods-per-core)",
        kc.pods_per_core.into(),
    );
    ports(kc, errs);
    non_negative(
        errs,
        "registryBurst (--registry-burst)",
        kc.registry_burst.into(),
    );
    non_negative(
        errs,
        "registryPullQPS (--registry-qps)",
        opt(kc.registry_pull_qps),
    );
    if let Some(n) = kc.max_parallel_image_pulls {
        if n < 1 {
            errs.push(format!(
                "{P} maxParallelImagePulls {n} must be a positive number"
            ));
        }
        if kc.serialize_image_pulls.unwrap_or(false) && n > 1 {
            errs.push(format!(
                "{P} maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false"
            ));
        }
    }
}

fn ports(kc: &KubeletConfiguration, errs: &mut Vec<String>) {
    if !port_ok(kc.port) {
        errs.push(format!(
            "{P} port (--port) {} must be between 1 and 65535, inclusive",
            kc.port
        ));
    }
    if kc.read_only_port != 0 && !port_ok(kc.read_only_port) {
        errs.push(format!(
            "{P} readOnlyPort (--read-only-port) {} must be between 0 and 65535, inclusive",
            kc.read_only_port
        ));
    }
}

pub(super) fn gated(kc: &KubeletConfiguration, g: &FeatureGate, errs: &mut Vec<String>) {
    if kc.server_tls_bootstrap && !g.enabled(gates::ROTATE_KUBELET_SERVER_CERTIFICATE) {
        errs.push(format!(
            "{P} serverTLSBootstrap true requires feature gate RotateKubeletServerCertificate"
        ));
    }
    if kc.run_once {
        errs.push(format!(
            "{P} runOnce (--runOnce) true, Runonce mode has been deprecated and should not be set"
        ));
    }
    for taint in &kc.register_with_taints {
        if check_taint_validation(&taint.key, &taint.value, &taint.effect).is_err() {
            let added = taint.time_added.as_deref().unwrap_or("<nil>");
            errs.push(format!(
                "invalid taint: {{{} {} {} {added}}}",
                taint.key, taint.value, taint.effect
            ));
        }
        if taint.time_added.is_some() {
            errs.push(format!("{P} taint.TimeAdded is not nil"));
        }
    }
    let policies = ["none", "best-effort", "restricted", "single-numa-node"];
    if !policies.contains(&kc.topology_manager_policy.as_str()) {
        errs.push(format!(
            "{P} topologyManagerPolicy (--topology-manager-policy) {:?} must be one of: [\"none\" \"best-effort\" \"restricted\" \"single-numa-node\"]",
            kc.topology_manager_policy
        ));
    }
    if !matches!(kc.topology_manager_scope.as_str(), "container" | "pod") {
        errs.push(format!(
            "{P} topologyManagerScope (--topology-manager-scope) {:?} must be one of: \"container\", or \"pod\"",
            kc.topology_manager_scope
        ));
    }
    super::extra::shutdown(kc, g, errs);
    super::extra::swap_and_backoff(kc, g, errs);
}

pub(super) fn allocatable(kc: &KubeletConfiguration, errs: &mut Vec<String>) {
    let list = kc.enforce_node_allocatable.clone().unwrap_or_default();
    let has = |k: &str| list.iter().any(|v| v == k);
    for (plain, compressible) in [
        ("system-reserved", "system-reserved-compressible"),
        ("kube-reserved", "kube-reserved-compressible"),
    ] {
        if has(plain) && has(compressible) {
            errs.push(format!(
                "{P} both {plain:?} and {compressible:?} cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)"
            ));
        }
    }
    let mut unique = std::collections::HashSet::new();
    for val in &list {
        if !unique.insert(val.as_str()) {
            errs.push(format!("{P} duplicated enforcements {val:?} in enforceNodeAllocatable (--enforce-node-allocatable)"));
            continue;
        }
        match val.as_str() {
            "pods" => {}
            "system-reserved" | "system-reserved-compressible" => {
                if kc.system_reserved_cgroup.is_empty() {
                    errs.push(format!("{P} systemReservedCgroup (--system-reserved-cgroup) must be specified when \"system-reserved\" or \"system-reserved-compressible\" included in enforceNodeAllocatable (--enforce-node-allocatable)"));
                }
            }
            "kube-reserved" | "kube-reserved-compressible" => {
                if kc.kube_reserved_cgroup.is_empty() {
                    errs.push(format!("{P} kubeReservedCgroup (--kube-reserved-cgroup) must be specified when \"kube-reserved\" or \"kube-reserved-compressible\" included in enforceNodeAllocatable (--enforce-node-allocatable)"));
                }
            }
            "none" => {
                if list.len() > 1 {
                    errs.push(format!("{P} enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when \"none\" is specified"));
                }
                continue;
            }
            _ => {
                errs.push(format!("{P} option {val:?} specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are \"pods\", \"system-reserved\", \"system-reserved-compressible\", \"kube-reserved\", \"kube-reserved-compressible\" or \"none\""));
                continue;
            }
        }
        if !kc.cgroups_per_qos.unwrap_or(false) {
            errs.push(format!("{P} cgroupsPerQOS (--cgroups-per-qos) must be set to true when {val:?} contained in enforceNodeAllocatable (--enforce-node-allocatable)"));
        }
    }
    if !matches!(
        kc.hairpin_mode.as_str(),
        "none" | "hairpin-veth" | "promiscuous-bridge"
    ) {
        errs.push(format!(
            "{P} option {:?} specified for hairpinMode (--hairpin-mode). Valid options are \"none\", \"hairpin-veth\" or \"promiscuous-bridge\"",
            kc.hairpin_mode
        ));
    }
}
