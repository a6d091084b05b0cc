//! "Startable": the one function that decides whether a start can go ahead, called by both
//! `--print-config` (`crates/app/src/command.rs`) and a start (`startup::run`), before
//! anything is started, bound or written.
//!
//! Upstream runs these checks spread over `run()`, `UnsecuredDependencies` (`InitializeTLS`),
//! `RunKubelet` (`ParseNodeIPArgument`) and `NewMainKubelet` (`clusterDNS`, the container log
//! manager), some after the lock file is taken and the servers are bound. kubelet-rs runs
//! them all first, so an accepted `--print-config` means the start gets past every one.
//!
//! What only a start can find out (not checked here):
//! * the lock file can be taken (`--lock-file`; another kubelet may hold it);
//! * the container runtime answers on `containerRuntimeEndpoint` and its cgroup driver;
//! * the cgroup hierarchy can be created and written (QoS cgroups, node allocatable);
//! * the self-signed serving pair can be written to `--cert-dir` when it does not exist;
//! * the ports (`port`, `readOnlyPort`, `healthzPort`) can be bound;
//! * `staticPodPath` / `staticPodURL` can be read (upstream retries them too).

use std::net::IpAddr;
use std::path::PathBuf;

use kubelet_cm::{HostFs, MachineInfo, NodeConfig};
use kubelet_config::{HostInfo, KubeletServer};
use kubelet_server::{PreparedTls, TlsSettings};

use crate::auth::AuthSettings;
use crate::startup::{self, RunError};

/// A warning a start logs (and `--print-config` prints, in the same log format) about input
/// it ignores, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartWarning {
    /// `--node-ip` entries that are not IPs (`RunKubelet`).
    InvalidNodeIps(Vec<String>),
    /// A `clusterDNS` entry that is not an IP (`NewMainKubelet`).
    InvalidClusterDns(String),
}

impl StartWarning {
    /// Logs the warning at V(0) (upstream logs these at info level; they drop input, so
    /// kubelet-rs says so at warning level).
    pub fn log(&self) {
        match self {
            StartWarning::InvalidNodeIps(ips) => {
                tracing::warn!(IPs = %go_string_slice(ips), "Could not parse some node IP(s), ignoring them");
            }
            StartWarning::InvalidClusterDns(ip) => {
                tracing::warn!(IP = %ip, "Invalid clusterDNS IP");
            }
        }
    }
}

/// A `[]string` as klog's text format prints it (`%+v`): `[a b]`.
fn go_string_slice(v: &[String]) -> String {
    format!("[{}]", v.join(" "))
}

/// What the checks computed, for the start to use (so it never parses anything twice).
#[derive(Debug)]
pub struct Startable {
    /// `nodeutil.GetHostname(--hostname-override)`.
    pub node_name: String,
    /// The outcome of `BuildAuth`.
    pub auth: AuthSettings,
    /// Machine facts (read from `/proc` and `/sys`).
    pub machine: MachineInfo,
    /// Reserved CPUs, kube/system reserved, hard eviction thresholds, QoS reserved.
    pub node_config: NodeConfig,
    /// The usable `--node-ip` entries.
    pub node_ips: Vec<IpAddr>,
    /// The usable `clusterDNS` entries.
    pub cluster_dns: Vec<IpAddr>,
    /// `containerLogMaxSize` in bytes.
    pub container_log_max_size: i64,
    /// The secure server's TLS, checked (`None` when `enableServer` is false).
    pub tls: Option<PreparedTls>,
    /// Input the start ignores, with upstream's messages.
    pub warnings: Vec<StartWarning>,
}

/// Decides whether `s` can start on this host: every check a start runs before it starts,
/// binds or writes anything, in upstream's order. Reads the host (hostname, `/proc`,
/// `/sys`, the certificate files) but changes nothing.
pub fn check_startable(
    s: &KubeletServer,
    host: HostInfo,
    fs: &dyn HostFs,
) -> Result<Startable, RunError> {
    let _: kubelet_klog::Format = s.config.logging.format.parse()?;
    startup::validate_kubelet_server(s, host)?;
    check_kubeconfig(s)?;
    let node_name = startup::node_name(&s.flags.hostname_override)?;
    let auth = startup::build_auth_step(s)?;
    let machine = startup::machine_info(fs)?;
    let node_config = startup::container_manager_config(s, &machine)?;
    // `NewMainKubelet`'s `ParseThresholdConfig` of every eviction setting.
    // (The cgroup driver only names the pod cgroup root; the runtime reports it later.)
    crate::kubelet::eviction_config(s, kubelet_cm::CgroupDriver::Cgroupfs)?;
    startup::check_resource_managers(s)?;
    // `NewContainerManager`'s `topologymanager.NewManager` (policy, scope, options, NUMA
    // nodes) and `cpumanager.NewManager` (policy, options, reserved CPUs).
    crate::kubelet::topology_manager::new_resource_managers(s, &machine, &node_config)?;
    startup::check_swap(s, fs, host)?;
    let mut warnings = Vec::new();
    let node_ips = node_ips(s, &mut warnings)?;
    let tls = serving_tls(s, &node_name, &node_ips)?;
    let cluster_dns = cluster_dns(s, &mut warnings);
    let container_log_max_size = container_log_max_size(&s.config.container_log_max_size)?;
    check_log_rotate_policy(
        container_log_max_size,
        s.config.container_log_max_files.unwrap_or(5),
    )?;
    // `NewMainKubelet` → `sysctl.NewAllowlist`: the same error `run_kubelet` would return.
    kubelet_admission::validate_allowed_unsafe_sysctls(&s.config.allowed_unsafe_sysctls)
        .map_err(|e| RunError::Kubelet(format!("failed to create kubelet: {e}")))?;
    Ok(Startable {
        node_name,
        auth,
        machine,
        node_config,
        node_ips,
        cluster_dns,
        container_log_max_size,
        tls,
        warnings,
    })
}

/// `RunKubelet`: `nodeutil.ParseNodeIPArgument(--node-ip, --cloud-provider)`.
pub(crate) fn node_ips(
    s: &KubeletServer,
    warnings: &mut Vec<StartWarning>,
) -> Result<Vec<IpAddr>, RunError> {
    let node_ip = &s.flags.node_ip;
    let (ips, invalid) =
        kubelet_apimachinery::parse_node_ip_argument(node_ip, &s.flags.cloud_provider).map_err(
            |e| {
                RunError::Kubelet(format!(
                    "bad --node-ip {}: {e}",
                    kubelet_apimachinery::go_quote(node_ip)
                ))
            },
        )?;
    if !invalid.is_empty() {
        warnings.push(StartWarning::InvalidNodeIps(invalid));
    }
    Ok(ips)
}

/// `NewMainKubelet`: the `clusterDNS` entries that parse; the others are logged and ignored.
pub(crate) fn cluster_dns(s: &KubeletServer, warnings: &mut Vec<StartWarning>) -> Vec<IpAddr> {
    let mut ips = Vec::new();
    for entry in &s.config.cluster_dns {
        match kubelet_apimachinery::parse_ip_sloppy(entry) {
            Some(ip) => ips.push(ip),
            None => warnings.push(StartWarning::InvalidClusterDns(entry.clone())),
        }
    }
    ips
}

/// `NewContainerLogManager`'s `parseMaxSize`.
pub(crate) fn container_log_max_size(size: &str) -> Result<i64, RunError> {
    let fail = |e: String| {
        RunError::Kubelet(format!(
            "failed to initialize container log manager: failed to parse container log max size {}: {e}",
            kubelet_apimachinery::go_quote(size)
        ))
    };
    let q = kubelet_apimachinery::Quantity::parse(size).map_err(|e| fail(e.to_string()))?;
    Ok(q.value())
}

/// `NewContainerLogManager`'s policy checks (`containerLogMaxFiles` > 1, and kubelet-rs
/// refuses a size that is not positive).
fn check_log_rotate_policy(max_size: i64, max_files: i32) -> Result<(), RunError> {
    kubelet_runtime::logs::LogRotatePolicy::new(max_size, max_files)
        .map(|_| ())
        .map_err(|e| RunError::Kubelet(format!("failed to initialize container log manager: {e}")))
}

/// `InitializeTLS` without writing, for the secure server (when `enableServer`).
fn serving_tls(
    s: &KubeletServer,
    node_name: &str,
    node_ips: &[IpAddr],
) -> Result<Option<PreparedTls>, RunError> {
    let c = &s.config;
    if !crate::kubelet::secure_server_wanted(s)? {
        return Ok(None);
    }
    let path = |p: &str| (!p.is_empty()).then(|| PathBuf::from(p));
    let settings = tls_settings(s, node_name, node_ips);
    let client_ca = path(&c.authentication.x509.client_ca_file);
    let prepared = kubelet_server::prepare_tls(&settings, client_ca.as_deref())
        .map_err(kubelet_server::ServerError::from)?;
    Ok(Some(prepared))
}

/// The secure server's TLS inputs: the configured pair or `--cert-dir`, the names the
/// self-signed certificate is made for, `tlsMinVersion`, `tlsCipherSuites`.
pub fn tls_settings(s: &KubeletServer, node_name: &str, node_ips: &[IpAddr]) -> TlsSettings {
    let c = &s.config;
    let path = |p: &str| (!p.is_empty()).then(|| PathBuf::from(p));
    let mut ips = node_ips.to_vec();
    ips.push(std::net::Ipv4Addr::LOCALHOST.into());
    TlsSettings {
        cert_file: path(&c.tls_cert_file),
        key_file: path(&c.tls_private_key_file),
        cert_dir: PathBuf::from(&s.flags.cert_directory),
        hostname: node_name.to_string(),
        ips,
        min_version: c.tls_min_version.clone(),
        cipher_suites: c.tls_cipher_suites.clone(),
        server_tls_bootstrap: c.server_tls_bootstrap,
    }
}

/// `--kubeconfig` must be a readable kubeconfig, as the client build of a start (step 6)
/// requires, unless `--bootstrap-kubeconfig` is there to write it (TLS bootstrap).
fn check_kubeconfig(s: &KubeletServer) -> Result<(), RunError> {
    let path = &s.flags.kubeconfig;
    if path.is_empty() || !s.flags.bootstrap_kubeconfig.is_empty() {
        return Ok(());
    }
    kube::config::Kubeconfig::read_from(path).map_err(|source| {
        RunError::Clients(kubelet_client::ClientError::Kubeconfig {
            path: std::path::PathBuf::from(path),
            source,
        })
    })?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn container_log_max_size_is_parsed_or_refused_naming_the_value() {
        assert_eq!(container_log_max_size("10Mi").unwrap(), 10 * 1024 * 1024);
        let err = container_log_max_size("10Qi").unwrap_err().to_string();
        assert!(
            err.starts_with(
                "failed to initialize container log manager: failed to parse container log max size \"10Qi\""
            ),
            "{err}"
        );
        let err = check_log_rotate_policy(0, 5).unwrap_err().to_string();
        assert!(err.contains("containerLogMaxSize 0"), "{err}");
        check_log_rotate_policy(1, 2).unwrap();
    }
}
