//! Upstream `allowlist_test.go` (`TestNewAllowlist`, `TestAllowlist`), plus the messages.

use k8s_openapi::api::core::v1::{Pod, PodSecurityContext, PodSpec, Sysctl};

use super::*;
use crate::safe_sysctls::safe_sysctl_allowlist;

const KERNEL: &str = "5.15.0-75-generic";

fn allowlist(extra: &[&str]) -> Result<SysctlAllowlist, AdmissionError> {
    let mut patterns = safe_sysctl_allowlist(KERNEL);
    patterns.extend(extra.iter().map(|s| s.to_string()));
    SysctlAllowlist::new(&patterns)
}

fn pod(sysctl: &str, host_net: bool, host_ipc: bool) -> Pod {
    Pod {
        spec: Some(PodSpec {
            host_network: Some(host_net),
            host_ipc: Some(host_ipc),
            security_context: Some(PodSecurityContext {
                sysctls: Some(vec![Sysctl {
                    name: sysctl.into(),
                    value: sysctl.into(),
                }]),
                ..PodSecurityContext::default()
            }),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn admit(w: &SysctlAllowlist, pod: &Pod) -> PodAdmitResult {
    w.admit(&PodAdmitAttributes {
        pod,
        other_pods: &[],
    })
}

#[test]
fn new_allowlist() {
    let ok: &[&[&str]] = &[
        &["kernel.msg*", "kernel.sem"],
        &["kernel/msg*", "kernel/sem"],
    ];
    for extra in ok {
        assert!(allowlist(extra).is_ok(), "{extra:?}");
    }
    let bad: &[&str] = &[
        " kernel.msg*",
        "kernel.msg* ",
        "net.-",
        "net.*.foo",
        "net.*/foo",
        "foo",
        "foo*",
    ];
    for extra in bad {
        assert!(allowlist(&[extra]).is_err(), "{extra:?}");
    }
}

#[test]
fn new_allowlist_errors_are_upstreams() {
    let e = allowlist(&["net.-"]).err().map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some(
            "sysctl \"net.-\" must have at most 253 characters and match regex \
             ([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]"
        )
    );
    let e = allowlist(&["foo*"]).err().map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("the sysctls \"foo\" are not known to be namespaced")
    );
}

#[test]
fn allowlist_admits_and_rejects_as_upstream() {
    let w = allowlist(&["kernel.msg*", "kernel.sem", "net.b.*"]);
    let Ok(w) = w else {
        unreachable!("allowlist must build: {w:?}");
    };
    let valid = [
        ("kernel.shm_rmid_forced", false, false),
        ("kernel/shm_rmid_forced", false, false),
        ("net.ipv4.ip_local_port_range", false, false),
        ("kernel.msgmax", false, false),
        ("kernel.sem", false, false),
        ("kernel/sem", false, false),
    ];
    for (s, net, ipc) in valid {
        assert_eq!(w.validate_sysctl(s, net, ipc), Ok(()), "{s}");
        assert!(admit(&w, &pod(s, net, ipc)).admit, "{s}");
    }
    let invalid = [
        ("kernel.shm_rmid_forced", false, true),
        ("net.ipv4.ip_local_port_range", true, false),
        ("foo", false, false),
        ("net.a.b.c", false, false),
        ("net.ipv4.ip_local_port_range.a.b.c", false, false),
        ("kernel.msgmax", false, true),
        ("kernel.sem", false, true),
        ("net.b.c", true, false),
    ];
    for (s, net, ipc) in invalid {
        assert!(w.validate_sysctl(s, net, ipc).is_err(), "{s}");
        let r = admit(&w, &pod(s, net, ipc));
        assert!(!r.admit, "{s}");
        assert_eq!(r.reason, "SysctlForbidden");
    }
    let mut empty = pod("x", false, false);
    if let Some(sc) = empty
        .spec
        .as_mut()
        .and_then(|s| s.security_context.as_mut())
    {
        sc.sysctls = Some(vec![]);
    }
    assert!(admit(&w, &empty).admit);
    assert!(admit(&w, &Pod::default()).admit);
}

#[test]
fn rejection_messages_are_upstreams() {
    let Ok(w) = allowlist(&[]) else {
        unreachable!("the safe set builds");
    };
    let r = admit(&w, &pod("kernel.msgmax", false, false));
    assert_eq!(
        r.message,
        "forbidden sysctl: \"kernel.msgmax\" not allowlisted"
    );
    let r = admit(&w, &pod("net.ipv4.tcp_syncookies", true, false));
    assert_eq!(
        r.message,
        "forbidden sysctl: \"net.ipv4.tcp_syncookies\" not allowed with host Net enabled"
    );
    let r = admit(&w, &pod("kernel/shm_rmid_forced", false, true));
    assert_eq!(
        r.message,
        "forbidden sysctl: \"kernel.shm_rmid_forced\" not allowed with host IPC enabled"
    );
}

#[test]
fn normalize_name_swaps_separators() {
    assert_eq!(
        normalize_name("net/ipv4/conf/eno2.100/rp_filter"),
        "net.ipv4.conf.eno2/100.rp_filter"
    );
    assert_eq!(
        normalize_name("net.ipv4.conf.eno2/100.rp_filter"),
        "net.ipv4.conf.eno2/100.rp_filter"
    );
    assert_eq!(normalize_name(""), "");
}
