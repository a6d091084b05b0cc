#![allow(clippy::unwrap_used, clippy::panic)]
//! `--help`, `--version` and the set of registered flag names.

use kubelet_config::{
    CONFIG_FLAG_DEPRECATION, Command, FakeFs, FlagSet, VersionRequest, load_unvalidated,
};

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[test]
fn help_and_version() {
    match load_unvalidated(&args(&["-h"]), &FakeFs::default()).unwrap() {
        Command::Help(text) => {
            assert!(text.starts_with("The kubelet is the primary \"node agent\""));
            assert!(text.contains("\nUsage:\n  kubelet [flags]\n\nFlags:\n"));
            assert!(text.contains("      --address ip "));
            assert!(text.contains("(default 0.0.0.0)"));
            assert!(text.contains("  -v, --v Level "));
            assert!(text.contains("MemoryQoS=true|false (ALPHA - default=false)"));
            assert!(text.contains(&format!("(DEPRECATED: {CONFIG_FLAG_DEPRECATION})")));
            assert!(text.contains("      --sync-frequency duration "));
            assert!(text.contains("(default 1m0s)"));
            assert!(text.contains("      --version version[=true] "));
            // 1.35 defaults failCgroupV1 to true; the flag is not deprecated.
            let line = text
                .lines()
                .find(|l| l.starts_with("      --fail-cgroupv1 "));
            assert!(line.unwrap().ends_with(
                "Prevent the kubelet from starting on the host using cgroup v1. (default true)"
            ));
            // Removed by 1.35 (the config fields stay).
            assert!(!text.contains("--iptables-masquerade-bit"));
            assert!(!text.contains("--iptables-drop-bit"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        load_unvalidated(&args(&["--help"]), &FakeFs::default()).unwrap(),
        Command::Help(_)
    ));
    assert!(matches!(
        load_unvalidated(&args(&["--version"]), &FakeFs::default()).unwrap(),
        Command::Version(VersionRequest::Print, None)
    ));
    assert!(matches!(
        load_unvalidated(&args(&["--version=raw"]), &FakeFs::default()).unwrap(),
        Command::Version(VersionRequest::Raw, None)
    ));
}

/// `--version=vX.Y.Z...` sets the reported version (verflag / `SetDynamicVersion`): it
/// must keep the default's major.minor.patch; alone it prints nothing and the kubelet runs.
#[test]
fn dynamic_version() {
    match load_unvalidated(
        &args(&["--version=v1.35.4-custom", "--version"]),
        &FakeFs::default(),
    )
    .unwrap()
    {
        Command::Version(VersionRequest::Print, Some(v)) => assert_eq!(v, "v1.35.4-custom"),
        other => panic!("{other:?}"),
    }
    match load_unvalidated(&args(&["--version=v1.35.4-custom"]), &FakeFs::default()).unwrap() {
        Command::Run(server) => {
            assert_eq!(
                server.global.dynamic_version.as_deref(),
                Some("v1.35.4-custom")
            )
        }
        other => panic!("{other:?}"),
    }
    let err = |a: &str| {
        load_unvalidated(&args(&[a]), &FakeFs::default())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err("--version=v1.2.3"),
        format!(
            "failed to parse kubelet flag: invalid argument \"v1.2.3\" for \"--version\" flag: version \"v1.2.3\" must match major/minor/patch of default version \"{}\"",
            kubelet_config::version::git_version()
        )
    );
    assert_eq!(
        err("--version=maybe"),
        "failed to parse kubelet flag: invalid argument \"maybe\" for \"--version\" flag: strconv.ParseBool: parsing \"maybe\": invalid syntax"
    );
}

#[test]
fn every_documented_flag_is_registered() {
    let set = FlagSet::new();
    for name in [
        "address",
        "port",
        "read-only-port",
        "healthz-port",
        "healthz-bind-address",
        "pod-manifest-path",
        "manifest-url",
        "manifest-url-header",
        "sync-frequency",
        "file-check-frequency",
        "http-check-frequency",
        "container-runtime-endpoint",
        "image-service-endpoint",
        "anonymous-auth",
        "authentication-token-webhook",
        "authentication-token-webhook-cache-ttl",
        "client-ca-file",
        "authorization-mode",
        "authorization-webhook-cache-authorized-ttl",
        "authorization-webhook-cache-unauthorized-ttl",
        "tls-cert-file",
        "tls-private-key-file",
        "rotate-server-certificates",
        "rotate-certificates",
        "tls-cipher-suites",
        "tls-min-version",
        "registry-qps",
        "registry-burst",
        "event-qps",
        "event-burst",
        "enable-debugging-handlers",
        "contention-profiling",
        "oom-score-adj",
        "cluster-domain",
        "cluster-dns",
        "node-status-update-frequency",
        "minimum-image-ttl-duration",
        "image-gc-high-threshold",
        "image-gc-low-threshold",
        "volume-stats-agg-period",
        "feature-gates",
        "kubelet-cgroups",
        "system-cgroups",
        "cgroups-per-qos",
        "cgroup-driver",
        "cgroup-root",
        "cpu-manager-policy",
        "cpu-manager-policy-options",
        "cpu-manager-reconcile-period",
        "qos-reserved",
        "topology-manager-policy",
        "topology-manager-scope",
        "topology-manager-policy-options",
        "runtime-request-timeout",
        "hairpin-mode",
        "max-pods",
        "pod-cidr",
        "pod-max-pids",
        "resolv-conf",
        "cpu-cfs-quota",
        "cpu-cfs-quota-period",
        "enable-controller-attach-detach",
        "make-iptables-util-chains",
        "container-log-max-size",
        "container-log-max-files",
        "allowed-unsafe-sysctls",
        "node-status-max-images",
        "kernel-memcg-notification",
        "local-storage-capacity-isolation",
        "max-open-files",
        "kube-api-content-type",
        "kube-api-qps",
        "kube-api-burst",
        "serialize-image-pulls",
        "eviction-hard",
        "eviction-soft",
        "eviction-soft-grace-period",
        "eviction-pressure-transition-period",
        "eviction-max-pod-grace-period",
        "eviction-minimum-reclaim",
        "pods-per-core",
        "protect-kernel-defaults",
        "reserved-cpus",
        "system-reserved",
        "kube-reserved",
        "enforce-node-allocatable",
        "system-reserved-cgroup",
        "kube-reserved-cgroup",
        "memory-manager-policy",
        "reserved-memory",
        "register-node",
        "register-with-taints",
        "fail-swap-on",
        "fail-cgroupv1",
        "runonce",
        "provider-id",
        "logging-format",
        "v",
        "vmodule",
        "log-flush-frequency",
        "config",
        "config-dir",
        "kubeconfig",
        "bootstrap-kubeconfig",
        "hostname-override",
        "node-ip",
        "cert-dir",
        "cloud-provider",
        "root-dir",
        "seccomp-default",
        "node-labels",
        "lock-file",
        "exit-on-lock-contention",
        "runtime-cgroups",
        "image-credential-provider-config",
        "image-credential-provider-bin-dir",
        "minimum-container-ttl-duration",
        "maximum-dead-containers-per-container",
        "maximum-dead-containers",
        "experimental-mounter-path",
        "experimental-allocatable-ignore-eviction",
        "version",
        "help",
    ] {
        assert!(set.has_flag(name), "missing --{name}");
    }
}

/// Flags upstream removed by v1.35.4 are unknown flags, refused as pflag refuses any
/// unknown flag.
#[test]
fn flags_removed_by_1_35_are_unknown() {
    for name in [
        "pod-infra-container-image",
        "cloud-config",
        "iptables-masquerade-bit",
        "iptables-drop-bit",
    ] {
        assert!(!FlagSet::new().has_flag(name), "--{name}");
        let e = load_unvalidated(&args(&[&format!("--{name}=x")]), &FakeFs::default())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!("failed to parse kubelet flag: unknown flag: --{name}")
        );
    }
}
