//! The safe sysctls (upstream `pkg/kubelet/sysctl/safe_sysctls.go` at v1.35.4, kernel
//! versions from `pkg/util/kernel/constants.go`): namespaced sysctls any pod may set.
//! Some are only namespaced from a kernel version on, and are safe only there.

/// A safe sysctl and the first kernel where it is namespaced (`None`: all kernels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SafeSysctl {
    /// The sysctl name.
    pub name: &'static str,
    /// `(major, minor)` of the first kernel where it is namespaced.
    pub kernel: Option<(u64, u64)>,
}

/// Upstream `safeSysctls`, in upstream's order.
pub const SAFE_SYSCTLS: &[SafeSysctl] = &[
    SafeSysctl {
        name: "kernel.shm_rmid_forced",
        kernel: None,
    },
    SafeSysctl {
        name: "net.ipv4.ip_local_port_range",
        kernel: None,
    },
    SafeSysctl {
        name: "net.ipv4.tcp_syncookies",
        kernel: None,
    },
    SafeSysctl {
        name: "net.ipv4.ping_group_range",
        kernel: None,
    },
    SafeSysctl {
        name: "net.ipv4.ip_unprivileged_port_start",
        kernel: None,
    },
    // IPLocalReservedPortsNamespacedKernelVersion
    SafeSysctl {
        name: "net.ipv4.ip_local_reserved_ports",
        kernel: Some((3, 16)),
    },
    // TCPKeepAliveTimeNamespacedKernelVersion
    SafeSysctl {
        name: "net.ipv4.tcp_keepalive_time",
        kernel: Some((4, 5)),
    },
    // TCPFinTimeoutNamespacedKernelVersion
    SafeSysctl {
        name: "net.ipv4.tcp_fin_timeout",
        kernel: Some((4, 6)),
    },
    // TCPKeepAliveIntervalNamespacedKernelVersion
    SafeSysctl {
        name: "net.ipv4.tcp_keepalive_intvl",
        kernel: Some((4, 5)),
    },
    // TCPKeepAliveProbesNamespacedKernelVersion
    SafeSysctl {
        name: "net.ipv4.tcp_keepalive_probes",
        kernel: Some((4, 5)),
    },
    // TCPReceiveMemoryNamespacedKernelVersion
    SafeSysctl {
        name: "net.ipv4.tcp_rmem",
        kernel: Some((4, 15)),
    },
    // TCPTransmitMemoryNamespacedKernelVersion
    SafeSysctl {
        name: "net.ipv4.tcp_wmem",
        kernel: Some((4, 15)),
    },
];

/// `major.minor[.patch...]` at the start of a kernel release such as
/// `6.1.0-18-amd64` (upstream `version.ParseGeneric`: at least two components).
pub fn parse_kernel_version(release: &str) -> Option<Vec<u64>> {
    let s = release.trim_start();
    let s = s.strip_prefix('v').unwrap_or(s);
    let numeric_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let mut parts = Vec::new();
    for p in s.get(..numeric_end)?.split('.') {
        if p.is_empty() {
            break;
        }
        parts.push(p.parse().ok()?);
    }
    (parts.len() >= 2).then_some(parts)
}

/// The safe sysctls available on a kernel of release `kernel_release` (upstream
/// `SafeSysctlAllowlist`). Version-gated ones are dropped when the version is too old or
/// cannot be parsed, as upstream drops them when it cannot read the version.
pub fn safe_sysctl_allowlist(kernel_release: &str) -> Vec<String> {
    let version = parse_kernel_version(kernel_release);
    SAFE_SYSCTLS
        .iter()
        .filter(|sc| match (sc.kernel, &version) {
            (None, _) => true,
            (Some((major, minor)), Some(v)) => {
                let have = (
                    v.first().copied().unwrap_or(0),
                    v.get(1).copied().unwrap_or(0),
                );
                have >= (major, minor)
            }
            (Some(_), None) => false,
        })
        .map(|sc| sc.name.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_KERNEL_LIMIT: [&str; 5] = [
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
    ];

    // Upstream `Test_getSafeSysctlAllowlist`.
    #[test]
    fn unknown_kernel_keeps_only_unversioned_sysctls() {
        assert_eq!(safe_sysctl_allowlist(""), NO_KERNEL_LIMIT);
        assert_eq!(safe_sysctl_allowlist("garbage"), NO_KERNEL_LIMIT);
    }

    #[test]
    fn kernel_3_18_adds_ip_local_reserved_ports() {
        let mut want = NO_KERNEL_LIMIT.to_vec();
        want.push("net.ipv4.ip_local_reserved_ports");
        assert_eq!(safe_sysctl_allowlist("3.18.0-957.27.2.el7.x86_64"), want);
    }

    #[test]
    fn kernel_5_15_has_every_safe_sysctl() {
        let all: Vec<&str> = SAFE_SYSCTLS.iter().map(|s| s.name).collect();
        assert_eq!(safe_sysctl_allowlist("5.15.0-75-generic"), all);
        assert_eq!(all.len(), 12);
    }

    #[test]
    fn kernel_4_5_is_between_the_gates() {
        let got = safe_sysctl_allowlist("4.5.0");
        assert!(got.iter().any(|s| s == "net.ipv4.tcp_keepalive_time"));
        assert!(!got.iter().any(|s| s == "net.ipv4.tcp_fin_timeout"));
        assert!(!got.iter().any(|s| s == "net.ipv4.tcp_rmem"));
    }

    #[test]
    fn parses_generic_versions() {
        assert_eq!(parse_kernel_version("6.1.0-18-amd64"), Some(vec![6, 1, 0]));
        assert_eq!(parse_kernel_version("v4.15"), Some(vec![4, 15]));
        assert_eq!(parse_kernel_version("5"), None);
        assert_eq!(parse_kernel_version("x5.1"), None);
    }
}
