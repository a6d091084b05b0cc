//! Feature-gated rules, taints, topology manager, shutdown, swap, back-off, node allocatable.

use super::*;

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
    let allow = |patterns: &[&str]| {
        errors(|kc| {
            kc.image_pull_credentials_verification_policy = "NeverVerifyAllowlistedImages".into();
            kc.preloaded_images_verification_allowlist =
                patterns.iter().map(|p| (*p).to_string()).collect();
        })
    };
    assert!(allow(&["registry.k8s.io/pause", "example.com/team/*"]).is_empty());
    one(
        allow(&["registry.k8s.io/pause", "busybox:1.36"]),
        "invalid configuration: invalid image pattern in `preloadedImagesVerificationAllowlist`: neither tag nor digest is accepted in an image reference: busybox:1.36",
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
