//! What registration, node status and the lease are configured with (the `Kubelet`
//! fields `NewMainKubelet` fills from `KubeletConfiguration` and `KubeletFlags`).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use k8s_openapi::api::core::v1::Taint;
use kubelet_cm::NodeConfig;
use kubelet_config::KubeletConfiguration;
use kubelet_config::flags::KubeletFlags;

/// The node's settings.
#[derive(Debug, Clone)]
pub struct NodeStatusConfig {
    /// `nodeName`.
    pub node_name: String,
    /// `hostname` (`--hostname-override` or the host's name, lower-cased).
    pub hostname: String,
    /// `--node-ip`, parsed (at most one per family).
    pub node_ips: Vec<IpAddr>,
    /// `registerNode`.
    pub register_node: bool,
    /// `registerWithTaints`.
    pub register_with_taints: Vec<Taint>,
    /// `--node-labels` (validated at start by `ValidateKubeletFlags`).
    pub node_labels: BTreeMap<String, String>,
    /// `providerID`.
    pub provider_id: String,
    /// `--cloud-provider=external`.
    pub external_cloud_provider: bool,
    /// `enableControllerAttachDetach`.
    pub enable_controller_attach_detach: bool,
    /// `maxPods`.
    pub max_pods: i64,
    /// `podsPerCore`.
    pub pods_per_core: i64,
    /// `port`: the daemon endpoint.
    pub kubelet_port: i32,
    /// `nodeStatusMaxImages` (-1: no limit).
    pub node_status_max_images: i32,
    /// `nodeStatusUpdateFrequency`.
    pub node_status_update_frequency: Duration,
    /// `nodeStatusReportFrequency`.
    pub node_status_report_frequency: Duration,
    /// `nodeLeaseDurationSeconds`.
    pub node_lease_duration_seconds: i32,
    /// `localStorageCapacityIsolation`.
    pub local_storage_capacity_isolation: bool,
    /// `version.Get().String()`: what `--version` prints.
    pub kubelet_version: String,
    /// Feature gate `DisableNodeKubeProxyVersion` (on at 1.35: `kubeProxyVersion` is cleared).
    pub disable_node_kube_proxy_version: bool,
    /// Feature gate `KubeletRegistrationGetOnExistsOnly` (off at 1.35): a forbidden create
    /// is final instead of falling back to reading the existing Node.
    pub registration_get_on_exists_only: bool,
    /// kube- and system-reserved and the hard eviction thresholds (allocatable).
    pub node_config: NodeConfig,
}

fn std_duration(d: kubelet_apimachinery::Duration) -> Duration {
    d.as_std().unwrap_or_default()
}

impl NodeStatusConfig {
    /// From the defaulted, validated configuration and flags, the node name and hostname
    /// (`startup::node_name`), the parsed `--node-ip` and the container manager's
    /// parsed settings.
    pub fn new(
        cfg: &KubeletConfiguration,
        flags: &KubeletFlags,
        node_name: &str,
        hostname: &str,
        node_ips: Vec<IpAddr>,
        node_config: NodeConfig,
    ) -> Self {
        NodeStatusConfig {
            node_name: node_name.to_string(),
            hostname: hostname.to_string(),
            node_ips,
            register_node: cfg.register_node.unwrap_or(true),
            register_with_taints: cfg
                .register_with_taints
                .iter()
                .map(|t| Taint {
                    key: t.key.clone(),
                    value: (!t.value.is_empty()).then(|| t.value.clone()),
                    effect: t.effect.clone(),
                    time_added: t
                        .time_added
                        .as_deref()
                        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
                        .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time),
                })
                .collect(),
            node_labels: flags.node_labels.clone(),
            provider_id: cfg.provider_id.clone(),
            external_cloud_provider: flags.cloud_provider == "external",
            enable_controller_attach_detach: cfg.enable_controller_attach_detach.unwrap_or(true),
            max_pods: i64::from(cfg.max_pods),
            pods_per_core: i64::from(cfg.pods_per_core),
            kubelet_port: cfg.port,
            node_status_max_images: cfg.node_status_max_images.unwrap_or(50),
            node_status_update_frequency: std_duration(cfg.node_status_update_frequency),
            node_status_report_frequency: std_duration(cfg.node_status_report_frequency),
            node_lease_duration_seconds: cfg.node_lease_duration_seconds,
            local_storage_capacity_isolation: cfg.local_storage_capacity_isolation.unwrap_or(true),
            kubelet_version: kubelet_config::version::git_version(),
            disable_node_kube_proxy_version: true,
            registration_get_on_exists_only: false,
            node_config,
        }
    }
}
