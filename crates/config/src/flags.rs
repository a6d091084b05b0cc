//! `KubeletFlags` (`cmd/kubelet/app/options/options.go`): the settings that exist only on
//! the command line, plus the global flags (`--version`, cAdvisor's leftovers, `--help`).

use std::collections::BTreeMap;

use kubelet_apimachinery::Duration;

/// The kubelet's default root directory.
pub const DEFAULT_ROOT_DIR: &str = "/var/lib/kubelet";

/// Command-line-only kubelet settings.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeletFlags {
    pub kubeconfig: String,
    pub bootstrap_kubeconfig: String,
    pub hostname_override: String,
    pub node_ip: String,
    pub cert_directory: String,
    pub cloud_provider: String,
    pub root_directory: String,
    /// `--config`
    pub kubelet_config_file: String,
    /// `--config-dir`
    pub kubelet_dropin_config_directory: String,
    pub experimental_mounter_path: String,
    pub experimental_node_allocatable_ignore_eviction_threshold: bool,
    pub node_labels: BTreeMap<String, String>,
    pub lock_file_path: String,
    /// `--runtime-cgroups`
    pub runtime_cgroups: String,
    pub exit_on_lock_contention: bool,
    pub minimum_gc_age: Duration,
    pub max_per_pod_container_count: i32,
    pub max_container_count: i32,
    pub seccomp_default: bool,
    pub image_credential_provider_config_path: String,
    pub image_credential_provider_bin_dir: String,
}

impl Default for KubeletFlags {
    /// `NewKubeletFlags`.
    fn default() -> Self {
        KubeletFlags {
            kubeconfig: String::new(),
            bootstrap_kubeconfig: String::new(),
            hostname_override: String::new(),
            node_ip: String::new(),
            cert_directory: "/var/lib/kubelet/pki".to_string(),
            cloud_provider: String::new(),
            root_directory: DEFAULT_ROOT_DIR.to_string(),
            kubelet_config_file: String::new(),
            kubelet_dropin_config_directory: String::new(),
            experimental_mounter_path: String::new(),
            experimental_node_allocatable_ignore_eviction_threshold: false,
            node_labels: BTreeMap::new(),
            lock_file_path: String::new(),
            runtime_cgroups: String::new(),
            exit_on_lock_contention: false,
            minimum_gc_age: Duration::ZERO,
            max_per_pod_container_count: 1,
            max_container_count: -1,
            seccomp_default: false,
            image_credential_provider_config_path: String::new(),
            image_credential_provider_bin_dir: String::new(),
        }
    }
}

/// What `--version` asked for (`verflag.versionValue`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum VersionRequest {
    #[default]
    NotSet,
    /// `--version` / `--version=true`
    Print,
    /// `--version=raw`
    Raw,
}

/// Flags registered by `AddGlobalFlags` and the `-h/--help` flag.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GlobalFlags {
    pub help: bool,
    pub version: VersionRequest,
    /// `--version=vX.Y.Z...`: the version to report instead of the default
    /// (`version.SetDynamicVersion`); it stays set whatever `--version` says later.
    pub dynamic_version: Option<String>,
    /// cAdvisor's `--housekeeping-interval` (default 10s).
    pub housekeeping_interval: Option<Duration>,
    /// Values given to the deprecated cAdvisor flags, by flag name. They have no effect.
    pub cadvisor: BTreeMap<String, String>,
}

/// Everything one parse of the command line fills in.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub flags: KubeletFlags,
    pub config: crate::KubeletConfiguration,
    pub global: GlobalFlags,
}
