//! The kubelet's metrics at start (`kubelet.go` `initializeModules`: `metrics.Register()`,
//! `kubelet_node_name`; `cmd/kubelet/app` `version.RegisterBuildInfo`; the
//! `showHiddenMetricsForVersion` option's `SetShowHidden`). The registries and families
//! are `kubelet_metrics`'; `/metrics` and `/metrics/probes` serve them on both ports.

use kubelet_config::KubeletServer;
use kubelet_metrics::BuildInfo;

use crate::version::{git_version, go_arch};

/// `kubernetes_build_info`'s labels, as `--version=raw` reports them.
pub(crate) fn build_info() -> BuildInfo {
    BuildInfo {
        major: "1".into(),
        minor: "35".into(),
        git_version: git_version(),
        compiler: "rustc".into(),
        platform: format!("{}/{}", std::env::consts::OS, go_arch()),
        ..BuildInfo::default()
    }
}

/// Registers every family, sets the node name and build information, and shows the
/// hidden metrics when `showHiddenMetricsForVersion` is set (validated as upstream: only
/// the previous minor version).
pub(crate) fn register(server: &KubeletServer, node_name: &str) -> Result<(), String> {
    if !server.config.show_hidden_metrics_for_version.is_empty() {
        kubelet_metrics::set_show_hidden();
    }
    kubelet_metrics::register(node_name, &build_info()).map_err(|e| e.to_string())?;
    if server
        .feature_gates
        .enabled(kubelet_features::gates::IMAGE_VOLUME)
    {
        kubelet_metrics::register_image_volume().map_err(|e| e.to_string())?;
    }
    let gates = &server.feature_gates;
    if gates.enabled(kubelet_features::gates::GRACEFUL_NODE_SHUTDOWN)
        && gates.enabled(kubelet_features::gates::GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY)
    {
        kubelet_metrics::register_graceful_shutdown().map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn build_info_matches_the_raw_version() {
        let b = build_info();
        let raw = crate::version::render(&kubelet_config::flags::VersionRequest::Raw, None);
        assert!(raw.contains(&format!("GitVersion:\"{}\"", b.git_version)));
        assert!(raw.contains(&format!("Platform:\"{}\"", b.platform)));
        assert!(raw.contains(&format!("Compiler:\"{}\"", b.compiler)));
    }
}
