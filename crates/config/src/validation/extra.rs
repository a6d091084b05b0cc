//! The second part of `ValidateKubeletConfiguration`, in upstream order.

use kubelet_apimachinery::{CpuSet, Duration};
use kubelet_features::{FeatureGate, gates};

use super::HostInfo;
use crate::types::KubeletConfiguration;

const P: &str = "invalid configuration:";

pub(super) fn shutdown(kc: &KubeletConfiguration, g: &FeatureGate, errs: &mut Vec<String>) {
    let (total, critical) = (
        kc.shutdown_grace_period,
        kc.shutdown_grace_period_critical_pods,
    );
    let bad = |d: Duration| d.is_negative() || (d > Duration::ZERO && d < Duration::from_secs(1));
    let gns = g.enabled(gates::GRACEFUL_NODE_SHUTDOWN);
    if gns {
        if critical > total {
            errs.push(format!("{P} shutdownGracePeriodCriticalPods {critical} must be <= shutdownGracePeriod {total}"));
        }
        if bad(total) {
            errs.push(format!(
                "{P} shutdownGracePeriod {total} must be either zero or otherwise >= 1 sec"
            ));
        }
        if bad(critical) {
            errs.push(format!("{P} shutdownGracePeriodCriticalPods {critical} must be either zero or otherwise >= 1 sec"));
        }
    }
    let any_set = total > Duration::ZERO || critical > Duration::ZERO;
    if any_set && !gns {
        errs.push(format!("{P} specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown"));
    }
    let by_priority = !kc.shutdown_grace_period_by_pod_priority.is_empty();
    if g.enabled(gates::GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY) {
        if by_priority && any_set {
            errs.push(format!("{P} Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time"));
        }
    } else if by_priority {
        errs.push(format!("{P} Specifying shutdownGracePeriodByPodPriority requires feature gate GracefulNodeShutdownBasedOnPodPriority"));
    }
}

pub(super) fn swap_and_backoff(kc: &KubeletConfiguration, g: &FeatureGate, errs: &mut Vec<String>) {
    let swap = kc.memory_swap.swap_behavior.as_str();
    if g.enabled(gates::NODE_SWAP) {
        if !matches!(swap, "" | "NoSwap" | "LimitedSwap") {
            errs.push(format!("{P} memorySwap.swapBehavior {swap:?} must be one of: \"\", \"LimitedSwap\" or \"NoSwap\""));
        }
    } else if !swap.is_empty() {
        errs.push(format!(
            "{P} memorySwap.swapBehavior cannot be set when NodeSwap feature flag is disabled"
        ));
    }
    let max = kc.crash_loop_back_off.max_container_restart_period;
    if g.enabled(gates::KUBELET_CRASH_LOOP_BACK_OFF_MAX) {
        match max {
            None => errs.push(format!(
                "{P} FeatureGate KubeletCrashLoopBackOffMax is enabled, CrashLoopBackOff.MaxContainerRestartPeriod must be set"
            )),
            Some(d) if !(1000..=300_000).contains(&d.as_millis()) => errs.push(format!(
                "{P} CrashLoopBackOff.MaxContainerRestartPeriod (got: {} seconds) must be set between 1s and 300s",
                go_float(d.as_nanos() as f64 / 1e9)
            )),
            Some(_) => {}
        }
    } else if max.is_some() {
        errs.push(format!("{P} FeatureGate KubeletCrashLoopBackOffMax not enabled, CrashLoopBackOff.MaxContainerRestartPeriod must not be set"));
    }
}

/// Go's `%v` for a float64 (shortest representation, `e` notation for large exponents).
pub(crate) fn go_float(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

const POLICIES: [&str; 4] = [
    "NeverVerify",
    "NeverVerifyPreloadedImages",
    "NeverVerifyAllowlistedImages",
    "AlwaysVerify",
];

fn image_credentials(kc: &KubeletConfiguration, g: &FeatureGate, errs: &mut Vec<String>) {
    let policy = kc.image_pull_credentials_verification_policy.as_str();
    let allowlist = &kc.preloaded_images_verification_allowlist;
    if g.enabled(gates::KUBELET_ENSURE_SECRET_PULLED_IMAGES) {
        if !POLICIES.contains(&policy) {
            errs.push(format!(
                "{P} option {policy:?} specified for imagePullCredentialsVerificationPolicy. Valid options are \"NeverVerify\", \"NeverVerifyPreloadedImages\", \"NeverVerifyAllowlistedImages\" or \"AlwaysVerify\""
            ));
        }
        if !allowlist.is_empty() && policy != "NeverVerifyAllowlistedImages" {
            errs.push(format!("{P} can't set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\""));
        } else if let Err(e) = super::image_pattern::validate_allowlist_images_patterns(allowlist) {
            errs.push(format!(
                "{P} invalid image pattern in `preloadedImagesVerificationAllowlist`: {e}"
            ));
        }
    } else {
        if !policy.is_empty() {
            errs.push(format!("{P} `imagePullCredentialsVerificationPolicy` must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled"));
        }
        if !allowlist.is_empty() {
            errs.push(format!("{P} `preloadedImagesVerificationAllowlist` must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled"));
        }
    }
}

fn reserved(kc: &KubeletConfiguration, errs: &mut Vec<String>) {
    if !kc.reserved_system_cpus.is_empty() {
        if !kc.system_reserved_cgroup.is_empty() || !kc.kube_reserved_cgroup.is_empty() {
            errs.push(format!("{P} can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)"));
        }
        if let Err(e) = CpuSet::parse(&kc.reserved_system_cpus) {
            errs.push(format!(
                "{P} unable to parse reservedSystemCPUs (--reserved-cpus) {}, error: {e}",
                kc.reserved_system_cpus
            ));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for r in &kc.reserved_memory {
        for (name, q) in &r.limits {
            let node = r.numa_node;
            if name != "memory" && !name.starts_with("hugepages-") {
                errs.push(format!("{P} the limit type {name:?} for NUMA node {node} is not supported, only [memory hugepages-<HugePageSize>] is accepted"));
            }
            if q.is_zero() {
                errs.push(format!(
                    "{P} reserved memory may not be zero for NUMA node {node} and resource {name:?}"
                ));
            }
            if !seen.insert((node, name.clone())) {
                errs.push(format!("{P} the reserved memory has a duplicate value for NUMA node {node} and resource {name:?}"));
            }
        }
    }
}

pub(super) fn rest(
    kc: &KubeletConfiguration,
    g: &FeatureGate,
    host: HostInfo,
    errs: &mut Vec<String>,
) {
    image_credentials(kc, g, errs);
    reserved(kc, errs);
    if let Some(e) = os(kc, host) {
        errs.push(e);
    }
    if !kc.show_hidden_metrics_for_version.is_empty()
        && kc.show_hidden_metrics_for_version != "1.34"
    {
        errs.push("--show-hidden-metrics-for-version must be omitted or have the value '1.34'. Only the previous minor version is allowed".to_string());
    }
    super::checks_tail::logging_and_tail(kc, g, errs);
}

/// `validateKubeletOSConfiguration` (`pkg/kubelet/apis/config/validation/validation_linux.go`):
/// only the first problem is reported.
fn os(kc: &KubeletConfiguration, host: HostInfo) -> Option<String> {
    if kc.fail_cgroup_v1.unwrap_or(false) && host.cgroup_v1 {
        return Some("kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release".to_string());
    }
    if host.cgroup_v1 && kc.single_process_oom_kill == Some(false) {
        return Some(format!(
            "{P} singleProcessOOMKill must not be explicitly set to false when using cgroup v1"
        ));
    }
    let ids = kc.user_namespaces.as_ref().and_then(|u| u.ids_per_pod)?;
    ids_per_pod(ids)
}

/// `userNsUnitLength` in `validation_linux.go`: user namespaces are handed out in
/// blocks of 65536 IDs.
const USER_NS_UNIT_LENGTH: i64 = 65536;

/// The `userNamespaces.idsPerPod` checks of `validation_linux.go`.
fn ids_per_pod(ids: i64) -> Option<String> {
    let field = "userNamespaces.idsPerPod";
    if ids < USER_NS_UNIT_LENGTH {
        return Some(format!(
            "{P} {field} must not be less than {USER_NS_UNIT_LENGTH}"
        ));
    }
    if ids % USER_NS_UNIT_LENGTH != 0 {
        return Some(format!(
            "{P} {field} must be a multiple of {USER_NS_UNIT_LENGTH}"
        ));
    }
    if ids > i64::from(u32::MAX) {
        return Some(format!("{P} {field} must not be more than {}", u32::MAX));
    }
    None
}
