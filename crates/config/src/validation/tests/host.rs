//! Reservations and the Linux host checks of `validateKubeletOSConfiguration`.

use super::*;

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
            "kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release"
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
