//! What `--version` prints (`verflag.PrintAndExitIfRequested`). The version itself
//! (`KUBERNETES_VERSION`, `git_version`, `--version=v…`) is `kubelet_config::version`.

pub use kubelet_config::version::{KUBERNETES_VERSION, git_version};

/// What `--version` prints: `Kubernetes v1.35.4+kubelet-rs.0.1.0`.
pub fn version_line() -> String {
    format!("Kubernetes {}", git_version())
}

/// What `--version` (`Print`) or `--version=raw` (`Raw`, Go's `%#v` of `version.Info`)
/// prints; `dynamic` is a `--version=v…` given before, reported instead of the default.
pub fn render(req: &kubelet_config::flags::VersionRequest, dynamic: Option<&str>) -> String {
    use kubelet_config::flags::VersionRequest;
    let git = dynamic.map_or_else(git_version, str::to_string);
    match req {
        VersionRequest::Raw => format!(
            "version.Info{{Major:\"1\", Minor:\"35\", EmulationMajor:\"\", EmulationMinor:\"\", MinCompatibilityMajor:\"\", MinCompatibilityMinor:\"\", GitVersion:\"{}\", GitCommit:\"\", GitTreeState:\"\", BuildDate:\"\", GoVersion:\"\", Compiler:\"rustc\", Platform:\"{}/{}\"}}",
            git,
            std::env::consts::OS,
            go_arch()
        ),
        _ => format!("Kubernetes {git}"),
    }
}

/// The Go name of this architecture (`GOARCH`).
pub use kubelet_apimachinery::goruntime::go_arch;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn version_parses_as_1_35() {
        let v = git_version();
        let core = v.trim_start_matches('v').split('+').next().unwrap_or("");
        let parts: Vec<&str> = core.split('.').collect();
        assert_eq!(parts, ["1", "35", "4"]);
        let meta = v.split('+').nth(1).unwrap_or("");
        assert!(
            meta.split('.')
                .all(|id| !id.is_empty()
                    && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')),
            "build metadata must be semver identifiers: {meta}"
        );
        assert!(version_line().starts_with("Kubernetes v1.35.4+kubelet-rs."));
    }

    #[test]
    fn a_dynamic_version_is_reported_instead() {
        use kubelet_config::flags::VersionRequest;
        assert_eq!(
            render(&VersionRequest::Print, Some("v1.35.4-custom")),
            "Kubernetes v1.35.4-custom"
        );
        assert!(
            render(&VersionRequest::Raw, Some("v1.35.4-custom"))
                .contains("GitVersion:\"v1.35.4-custom\"")
        );
        assert_eq!(render(&VersionRequest::Print, None), version_line());
    }
}
