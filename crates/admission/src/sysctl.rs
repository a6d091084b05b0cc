//! The sysctl admit handler (upstream `pkg/kubelet/sysctl/allowlist.go`, namespaces from
//! `k8s.io/component-helpers/node/util/sysctl`): a pod may set a sysctl only when it is in
//! the safe set or matches `allowedUnsafeSysctls`, and never a network sysctl with
//! `hostNetwork` or an IPC sysctl with `hostIPC`. Anything else is rejected with reason
//! `SysctlForbidden`, so an unsafe sysctl never reaches the runtime unless allowed.

use std::collections::BTreeMap;

use crate::{AdmissionError, PodAdmitAttributes, PodAdmitHandler, PodAdmitResult};

/// Reason of a pod rejected for a sysctl (upstream `ForbiddenReason`).
pub const FORBIDDEN_REASON: &str = "SysctlForbidden";

/// Upstream `policyvalidation.SysctlContainSlashPatternFmt`.
pub const SYSCTL_PATTERN_REGEX: &str =
    r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]";

/// Upstream `apivalidation.SysctlMaxLength`.
const SYSCTL_MAX_LENGTH: usize = 253;

/// The kernel namespace a sysctl belongs to (upstream `utilsysctl.Namespace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespace {
    /// The IPC namespace.
    Ipc,
    /// The network namespace.
    Net,
}

impl Namespace {
    /// Upstream's name, as messages print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ipc => "IPC",
            Self::Net => "Net",
        }
    }
}

/// Upstream `nameToNamespace`.
const NAME_TO_NAMESPACE: &[(&str, Namespace)] = &[
    ("kernel.sem", Namespace::Ipc),
    ("kernel.shmall", Namespace::Ipc),
    ("kernel.shmmax", Namespace::Ipc),
    ("kernel.shmmni", Namespace::Ipc),
    ("kernel.shm_rmid_forced", Namespace::Ipc),
    ("kernel.shm", Namespace::Ipc),
    ("kernel.msgmax", Namespace::Ipc),
    ("kernel.msgmnb", Namespace::Ipc),
    ("kernel.msgmni", Namespace::Ipc),
    ("kernel.msg", Namespace::Ipc),
];

/// Upstream `prefixToNamespace` (matched with a trailing dot).
const PREFIX_TO_NAMESPACE: &[(&str, Namespace)] =
    &[("net", Namespace::Net), ("fs.mqueue", Namespace::Ipc)];

/// The namespace of a sysctl name or prefix; `None` when it is not namespaced (upstream
/// `namespaceOf`).
pub fn namespace_of(val: &str) -> Option<Namespace> {
    if let Some((_, ns)) = NAME_TO_NAMESPACE.iter().find(|(n, _)| *n == val) {
        return Some(*ns);
    }
    PREFIX_TO_NAMESPACE
        .iter()
        .find(|(p, _)| {
            val.strip_prefix(p)
                .is_some_and(|rest| rest.starts_with('.'))
        })
        .map(|(_, ns)| *ns)
}

/// Converts a slash-separated sysctl name (`net/ipv4/conf/eno2.100/rp_filter`) to the
/// dotted form (`net.ipv4.conf.eno2/100.rp_filter`) (upstream `NormalizeName`).
pub fn normalize_name(val: &str) -> String {
    match val.find(['.', '/']) {
        Some(i) if val.as_bytes().get(i) == Some(&b'/') => val
            .chars()
            .map(|c| match c {
                '.' => '/',
                '/' => '.',
                c => c,
            })
            .collect(),
        _ => val.to_string(),
    }
}

fn is_segment(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let inner = |c: &u8| edge(c) || *c == b'-' || *c == b'_';
    match b {
        [] => false,
        [c] => edge(c),
        [first, mid @ .., last] => edge(first) && edge(last) && mid.iter().all(inner),
    }
}

fn is_pattern_segment(s: &str) -> bool {
    match s.strip_suffix('*') {
        Some("") => true,
        Some(head) => {
            let b = head.as_bytes();
            let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
            b.first().is_some_and(edge) && b.iter().all(|c| edge(c) || *c == b'-' || *c == b'_')
        }
        None => {
            let b = s.as_bytes();
            let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
            b.first().is_some_and(edge)
                && b.last().is_some_and(edge)
                && b.iter().all(|c| edge(c) || *c == b'-' || *c == b'_')
        }
    }
}

/// Whether `name` is a valid sysctl pattern (upstream `IsValidSysctlPattern`).
pub fn is_valid_sysctl_pattern(name: &str) -> bool {
    if name.len() > SYSCTL_MAX_LENGTH {
        return false;
    }
    let mut parts: Vec<&str> = name.split(['.', '/']).collect();
    let Some(last) = parts.pop() else {
        return false;
    };
    parts.into_iter().all(is_segment) && is_pattern_segment(last)
}

/// The allowed sysctls and sysctl prefixes with their namespaces (upstream
/// `patternAllowlist`).
#[derive(Debug, Clone, Default)]
pub struct SysctlAllowlist {
    sysctls: BTreeMap<String, Namespace>,
    prefixes: BTreeMap<String, Namespace>,
}

impl SysctlAllowlist {
    /// An allowlist of `patterns`: exact names, or prefixes ending in `*` (upstream
    /// `NewAllowlist`). Fails on an invalid pattern or one outside the IPC and network
    /// namespaces, as the upstream kubelet fails to start.
    pub fn new(patterns: &[String]) -> Result<Self, AdmissionError> {
        let mut w = Self::default();
        for s in patterns {
            if !is_valid_sysctl_pattern(s) {
                return Err(AdmissionError::InvalidSysctlPattern {
                    pattern: s.clone(),
                    regex: SYSCTL_PATTERN_REGEX,
                });
            }
            let mut name = normalize_name(s);
            let prefixed = match name.find('*') {
                Some(i) => {
                    name.truncate(i);
                    true
                }
                None => false,
            };
            let ns = namespace_of(&name)
                .ok_or_else(|| AdmissionError::SysctlNotNamespaced(name.clone()))?;
            if prefixed {
                w.prefixes.insert(name, ns);
            } else {
                w.sysctls.insert(name, ns);
            }
        }
        Ok(w)
    }

    /// Checks one sysctl of a pod (upstream `validateSysctl`); the error is upstream's text.
    pub fn validate_sysctl(
        &self,
        sysctl: &str,
        host_net: bool,
        host_ipc: bool,
    ) -> Result<(), String> {
        let sysctl = normalize_name(sysctl);
        let found = self.sysctls.get(&sysctl).or_else(|| {
            self.prefixes
                .iter()
                .find(|(p, _)| sysctl.starts_with(p.as_str()))
                .map(|(_, ns)| ns)
        });
        match found {
            Some(ns @ Namespace::Ipc) if host_ipc => Err(format!(
                "{sysctl:?} not allowed with host {} enabled",
                ns.as_str()
            )),
            Some(ns @ Namespace::Net) if host_net => Err(format!(
                "{sysctl:?} not allowed with host {} enabled",
                ns.as_str()
            )),
            Some(_) => Ok(()),
            None => Err(format!("{sysctl:?} not allowlisted")),
        }
    }
}

impl PodAdmitHandler for SysctlAllowlist {
    fn admit(&self, attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult {
        let Some(spec) = attrs.pod.spec.as_ref() else {
            return PodAdmitResult::admit();
        };
        let sysctls = spec
            .security_context
            .as_ref()
            .and_then(|sc| sc.sysctls.as_deref())
            .unwrap_or_default();
        let host_net = spec.host_network.unwrap_or(false);
        let host_ipc = spec.host_ipc.unwrap_or(false);
        for s in sysctls {
            if let Err(e) = self.validate_sysctl(&s.name, host_net, host_ipc) {
                return PodAdmitResult::reject(FORBIDDEN_REASON, format!("forbidden sysctl: {e}"));
            }
        }
        PodAdmitResult::admit()
    }
}

#[cfg(test)]
#[path = "sysctl_tests.rs"]
mod tests;
