//! The version kubelet-rs reports (`--version`, node info, logs).
//!
//! We report the Kubernetes level we are compatible with as the semver core and our own
//! version as build metadata, so version-skew checks (which parse major.minor) see 1.35.

/// The upstream Kubernetes release whose kubelet behaviour we implement.
pub const KUBERNETES_VERSION: &str = "v1.35.0";

/// `v1.35.0+kubelet-rs.<our version>`: a valid semver with build metadata.
pub fn git_version() -> String {
    format!(
        "{KUBERNETES_VERSION}+kubelet-rs.{}",
        env!("CARGO_PKG_VERSION")
    )
}

/// What `--version` prints: `Kubernetes v1.35.0+kubelet-rs.0.1.0`.
pub fn version_line() -> String {
    format!("Kubernetes {}", git_version())
}

/// What `--version` (`Print`) or `--version=raw` (`Raw`, Go's `%#v` of `version.Info`) prints.
pub fn render(req: &kubelet_config::flags::VersionRequest) -> String {
    use kubelet_config::flags::VersionRequest;
    match req {
        VersionRequest::Raw => format!(
            "version.Info{{Major:\"1\", Minor:\"35\", EmulationMajor:\"\", EmulationMinor:\"\", MinCompatibilityMajor:\"\", MinCompatibilityMinor:\"\", GitVersion:\"{}\", GitCommit:\"\", GitTreeState:\"\", BuildDate:\"\", GoVersion:\"\", Compiler:\"rustc\", Platform:\"{}/{}\"}}",
            git_version(),
            std::env::consts::OS,
            go_arch()
        ),
        _ => version_line(),
    }
}

/// The Go name of this architecture (`GOARCH`).
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_parses_as_1_35() {
        let v = git_version();
        let core = v.trim_start_matches('v').split('+').next().unwrap_or("");
        let parts: Vec<&str> = core.split('.').collect();
        assert_eq!(parts, ["1", "35", "0"]);
        let meta = v.split('+').nth(1).unwrap_or("");
        assert!(
            meta.split('.')
                .all(|id| !id.is_empty()
                    && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')),
            "build metadata must be semver identifiers: {meta}"
        );
        assert!(version_line().starts_with("Kubernetes v1.35.0"));
    }
}
