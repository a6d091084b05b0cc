//! `ValidateKubeletConfiguration` (`pkg/kubelet/apis/config/validation/validation.go`,
//! `validation_linux.go`, `validation_reserved_memory.go`) and `ValidateKubeletFlags`
//! (`cmd/kubelet/app/options/options.go`). Every rule runs and all errors are returned
//! together, with upstream's messages.

mod checks;
mod checks_tail;
mod extra;
mod flags;
mod go_url;
mod image_pattern;

use kubelet_features::FeatureGate;

use crate::types::KubeletConfiguration;

pub use flags::validate_kubelet_flags;

/// Facts about the host that OS-specific checks need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HostInfo {
    /// The host uses cgroup v1 (not the unified v2 hierarchy).
    pub cgroup_v1: bool,
}

/// All validation errors, printed like `utilerrors.NewAggregate`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", aggregate(.0))]
pub struct ValidationErrors(pub Vec<String>);

/// `utilerrors.NewAggregate(...).Error()`: one message alone, several as `[a, b]`
/// (duplicate messages are shown once).
pub fn aggregate(errs: &[String]) -> String {
    let mut seen = std::collections::HashSet::new();
    let msgs: Vec<&String> = errs.iter().filter(|e| seen.insert(e.as_str())).collect();
    match msgs.as_slice() {
        [one] => (*one).clone(),
        _ => format!(
            "[{}]",
            msgs.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `ValidateKubeletConfiguration(kc, featureGate)` plus the Linux OS checks for `host`.
pub fn validate_kubelet_configuration(
    kc: &KubeletConfiguration,
    gate: &FeatureGate,
    host: HostInfo,
) -> Result<(), ValidationErrors> {
    let mut local = gate.clone();
    if let Err(e) = local.set_from_map(&kc.feature_gates) {
        return Err(ValidationErrors(vec![e.to_string()]));
    }
    let mut errs = Vec::new();
    checks::general(kc, &local, &mut errs);
    checks::gated(kc, &local, &mut errs);
    checks::allocatable(kc, &mut errs);
    extra::rest(kc, &local, host, &mut errs);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ValidationErrors(errs))
    }
}

#[cfg(test)]
mod tests;
