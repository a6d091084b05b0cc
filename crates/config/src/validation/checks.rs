//! The first part of `ValidateKubeletConfiguration`, in upstream order.

use kubelet_apimachinery::Duration;
use kubelet_features::{FeatureGate, gates};

use crate::types::KubeletConfiguration;

const P: &str = "invalid configuration:";

fn port_ok(p: i32) -> bool {
    (1..=65535).contains(&p)
}

pub(super) fn general(kc: &KubeletConfiguration, g: &FeatureGate, errs: &mut Vec<String>) {
    let mut e = |s: String| errs.push(s);
    if kc.node_lease_duration_seconds <= 0 {
        e(format!(
            "{P} nodeLeaseDurationSeconds must be greater than 0"
        ));
    }
    if !kc.system_cgroups.is_empty() && kc.cgroup_root.is_empty() {
        e(format!(
            "{P} systemCgroups (--system-cgroups) was specified and cgroupRoot (--cgroup-root) was not specified"
        ));
    }
    if kc.event_burst < 0 {
        e(format!(
            "{P} eventBurst (--event-burst) {} must not be a negative number",
            kc.event_burst
        ));
    }
    let qps = kc.event_record_qps.unwrap_or(0);
    if qps < 0 {
        e(format!(
            "{P} eventRecordQPS (--event-qps) {qps} must not be a negative number"
        ));
    }
    let healthz = kc.healthz_port.unwrap_or(0);
    if healthz != 0 && !port_ok(healthz) {
        e(format!(
            "{P} healthzPort (--healthz-port) {healthz} must be between 1 and 65535, inclusive"
        ));
    }
    let period = kc.cpu_cfs_quota_period.unwrap_or(Duration::ZERO);
    let custom = g.enabled(gates::CPU_CFS_QUOTA_PERIOD);
    if !custom && period != Duration::from_millis(100) {
        e(format!(
            "{P} cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {period} requires feature gate CustomCPUCFSQuotaPeriod"
        ));
    }
    if custom && !(Duration::from_millis(1)..=Duration::from_secs(1)).contains(&period) {
        e(format!(
            "{P} cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {period} must be between 1ms and 1sec, inclusive"
        ));
    }
    let high = kc.image_gc_high_threshold_percent.unwrap_or(0);
    let low = kc.image_gc_low_threshold_percent.unwrap_or(0);
    if !(0..=100).contains(&high) {
        e(format!(
            "{P} imageGCHighThresholdPercent (--image-gc-high-threshold) {high} must be between 0 and 100, inclusive"
        ));
    }
    if !(0..=100).contains(&low) {
        e(format!(
            "{P} imageGCLowThresholdPercent (--image-gc-low-threshold) {low} must be between 0 and 100, inclusive"
        ));
    }
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
    if min_age.is_negative() {
        e(format!(
            "{P} imageMinimumGCAge {min_age} must not be negative"
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
    numbers(kc, errs);
}

fn numbers(kc: &KubeletConfiguration, errs: &mut Vec<String>) {
    let mut e = |s: String| errs.push(s);
    let drop_bit = kc.iptables_drop_bit.unwrap_or(0);
    if !(0..=31).contains(&drop_bit) {
        e(format!(
            "{P} iptablesDropBit (--iptables-drop-bit) {drop_bit} must be between 0 and 31, inclusive"
        ));
    }
    let masq = kc.iptables_masquerade_bit.unwrap_or(0);
    if !(0..=31).contains(&masq) {
        e(format!(
            "{P} iptablesMasqueradeBit (--iptables-masquerade-bit) {masq} must be between 0 and 31, inclusive"
        ));
    }
    if kc.kube_api_burst < 0 {
        e(format!(
            "{P} kubeAPIBurst (--kube-api-burst) {} must not be a negative number",
            kc.kube_api_burst
        ));
    }
    let api_qps = kc.kube_api_qps.unwrap_or(0);
    if api_qps < 0 {
        e(format!(
            "{P} kubeAPIQPS (--kube-api-qps) {api_qps} must not be a negative number"
        ));
    }
    let max_images = kc.node_status_max_images.unwrap_or(0);
    if max_images < -1 {
        e(format!(
            "{P} nodeStatusMaxImages (--node-status-max-images) {max_images} must be -1 or greater"
        ));
    }
    if kc.max_open_files < 0 {
        e(format!(
            "{P} maxOpenFiles (--max-open-files) {} must not be a negative number",
            kc.max_open_files
        ));
    }
    if kc.max_pods < 0 {
        e(format!(
            "{P} maxPods (--max-pods) {} must not be a negative number",
            kc.max_pods
        ));
    }
    let oom = kc.oom_score_adj.unwrap_or(0);
    if !(-1000..=1000).contains(&oom) {
        e(format!(
            "{P} oomScoreAdj (--oom-score-adj) {oom} must be between -1000 and 1000, inclusive"
        ));
    }
    if kc.pods_per_core < 0 {
        e(format!(
            "{P} podsPerCore (--pods-per-core) {} must not be a negative number",
            kc.pods_per_core
        ));
    }
    if !port_ok(kc.port) {
        e(format!(
            "{P} port (--port) {} must be between 1 and 65535, inclusive",
            kc.port
        ));
    }
    if kc.read_only_port != 0 && !port_ok(kc.read_only_port) {
        e(format!(
            "{P} readOnlyPort (--read-only-port) {} must be between 0 and 65535, inclusive",
            kc.read_only_port
        ));
    }
    if kc.registry_burst < 0 {
        e(format!(
            "{P} registryBurst (--registry-burst) {} must not be a negative number",
            kc.registry_burst
        ));
    }
    let reg_qps = kc.registry_pull_qps.unwrap_or(0);
    if reg_qps < 0 {
        e(format!(
            "{P} registryPullQPS (--registry-qps) {reg_qps} must not be a negative number"
        ));
    }
    if let Some(n) = kc.max_parallel_image_pulls {
        if n < 1 {
            e(format!(
                "{P} maxParallelImagePulls {n} must be a positive number"
            ));
        }
        if kc.serialize_image_pulls.unwrap_or(false) && n > 1 {
            e(format!(
                "{P} maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false"
            ));
        }
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
        if super::extra::check_taint(taint).is_err() {
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
