//! Pod DNS configuration and hostnames (upstream `pkg/kubelet/network/dns/dns.go`,
//! `GeneratePodHostNameAndDomain` in `kubelet_pods.go`, `util.GetNodenameForKernel`).

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodDNSConfig};
use kubelet_container::is_host_network_pod;
use kubelet_cri::v1::DnsConfig;

use crate::error::RuntimeManagerError;
use crate::os::OsInterface;
use kubelet_apimachinery::{is_dns1123_label, is_dns1123_subdomain};

/// Most nameservers a resolv.conf may hold (`validation.MaxDNSNameservers`).
pub const MAX_DNS_NAMESERVERS: usize = 3;
/// Most search domains (`validation.MaxDNSSearchPaths`).
pub const MAX_DNS_SEARCH_PATHS: usize = 32;
/// Longest search line (`validation.MaxDNSSearchListChars`).
pub const MAX_DNS_SEARCH_LIST_CHARS: usize = 2048;
const DEFAULT_DNS_OPTIONS: [&str; 1] = ["ndots:5"];

/// Parsed resolv.conf contents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolvConf {
    /// `nameserver` lines, in order.
    pub nameservers: Vec<String>,
    /// Last `search` line, trailing dots removed, `.` dropped.
    pub searches: Vec<String>,
    /// `options`, later values of the same option replacing earlier ones.
    pub options: Vec<String>,
}

/// `parseResolvConf`. A `nameserver` line without an address is an error.
pub fn parse_resolv_conf(contents: &str) -> Result<ResolvConf, String> {
    let mut rc = ResolvConf::default();
    for line in contents.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = trimmed.split_whitespace().collect();
        match fields.as_slice() {
            ["nameserver", server, ..] => rc.nameservers.push((*server).to_string()),
            ["nameserver"] => return Err("nameserver list is empty".to_string()),
            ["search", domains @ ..] => {
                rc.searches = domains
                    .iter()
                    .filter(|d| **d != ".")
                    .map(|d| d.trim_end_matches('.').to_string())
                    .collect();
            }
            ["options", opts @ ..] => {
                for opt in opts {
                    let name = opt.split(':').next().unwrap_or_default();
                    rc.options.retain(|o| o.split(':').next() != Some(name));
                    rc.options.push((*opt).to_string());
                }
            }
            _ => {}
        }
    }
    Ok(rc)
}

fn omit_duplicates(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Which resolver configuration a pod gets (`podDNSType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PodDnsType {
    Cluster,
    Host,
    None,
}

fn pod_dns_type(pod: &Pod) -> PodDnsType {
    let policy = pod
        .spec
        .as_ref()
        .and_then(|s| s.dns_policy.as_deref())
        .unwrap_or("ClusterFirst");
    match policy {
        "None" => PodDnsType::None,
        "ClusterFirstWithHostNet" => PodDnsType::Cluster,
        "Default" => PodDnsType::Host,
        "ClusterFirst" if is_host_network_pod(pod) => PodDnsType::Host,
        "ClusterFirst" => PodDnsType::Cluster,
        other => {
            tracing::error!(
                dns_policy = other,
                "Invalid DNSPolicy, falling back to ClusterFirst"
            );
            PodDnsType::Cluster
        }
    }
}

/// Builds CRI DNS configs for pods (`dns.Configurer`).
pub struct DnsConfigurer {
    os: Arc<dyn OsInterface>,
    node_ip: Option<IpAddr>,
    cluster_dns: Vec<IpAddr>,
    /// `clusterDomain`; empty in standalone mode.
    pub cluster_domain: String,
    /// `resolvConf`; empty disables host DNS.
    pub resolver_config: Option<PathBuf>,
}

impl DnsConfigurer {
    /// `NewConfigurer`.
    pub fn new(
        os: Arc<dyn OsInterface>,
        node_ip: Option<IpAddr>,
        cluster_dns: Vec<IpAddr>,
        cluster_domain: impl Into<String>,
        resolver_config: Option<PathBuf>,
    ) -> Self {
        Self {
            os,
            node_ip,
            cluster_dns,
            cluster_domain: cluster_domain.into(),
            resolver_config,
        }
    }

    fn host_dns_config(&self) -> Result<ResolvConf, RuntimeManagerError> {
        let Some(path) = &self.resolver_config else {
            return Ok(ResolvConf::default());
        };
        let contents = self
            .os
            .read_to_string(path)
            .map_err(|e| RuntimeManagerError::Io {
                what: "read resolv.conf".into(),
                path: path.clone(),
                source: e,
            })?;
        parse_resolv_conf(&contents).map_err(|reason| RuntimeManagerError::ResolvConf {
            path: path.clone(),
            reason,
        })
    }

    fn cluster_first_searches(&self, host_search: Vec<String>, namespace: &str) -> Vec<String> {
        if self.cluster_domain.is_empty() {
            return host_search;
        }
        let d = &self.cluster_domain;
        let mut s = vec![
            format!("{namespace}.svc.{d}"),
            format!("svc.{d}"),
            d.clone(),
        ];
        s.extend(host_search);
        omit_duplicates(s)
    }

    /// `GetPodDNS`: the resolver configuration for `pod`.
    pub fn get_pod_dns(&self, pod: &Pod) -> Result<DnsConfig, RuntimeManagerError> {
        let host = self.host_dns_config()?;
        let mut cfg = DnsConfig {
            servers: host.nameservers,
            searches: host.searches,
            options: host.options,
        };
        let mut dns_type = pod_dns_type(pod);
        if dns_type == PodDnsType::Cluster && self.cluster_dns.is_empty() {
            tracing::warn!(
                pod = pod.metadata.name.as_deref().unwrap_or_default(),
                "kubelet does not have ClusterDNS IP configured and cannot create Pod using \"ClusterFirst\" policy. Falling back to \"Default\" policy."
            );
            dns_type = PodDnsType::Host;
        }
        match dns_type {
            PodDnsType::None => cfg = DnsConfig::default(),
            PodDnsType::Cluster => {
                cfg.servers = self.cluster_dns.iter().map(ToString::to_string).collect();
                let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
                cfg.searches = self.cluster_first_searches(cfg.searches, ns);
                cfg.options = DEFAULT_DNS_OPTIONS.map(String::from).to_vec();
            }
            PodDnsType::Host => {
                if self.resolver_config.is_none() {
                    let v6 = self.node_ip.is_some_and(|ip| ip.is_ipv6());
                    cfg.servers = vec![if v6 { "::1" } else { "127.0.0.1" }.to_string()];
                    cfg.searches = vec![".".to_string()];
                }
            }
        }
        if let Some(pod_cfg) = pod.spec.as_ref().and_then(|s| s.dns_config.as_ref()) {
            append_dns_config(&mut cfg, pod_cfg);
        }
        fit_limits(&mut cfg);
        Ok(cfg)
    }
}

/// `appendDNSConfig`: adds the pod's own servers, searches and options.
fn append_dns_config(cfg: &mut DnsConfig, pod_cfg: &PodDNSConfig) {
    cfg.servers
        .extend(pod_cfg.nameservers.iter().flatten().cloned());
    cfg.servers = omit_duplicates(std::mem::take(&mut cfg.servers));
    cfg.searches
        .extend(pod_cfg.searches.iter().flatten().cloned());
    cfg.searches = omit_duplicates(std::mem::take(&mut cfg.searches));
    for opt in pod_cfg.options.iter().flatten() {
        let name = opt.name.clone().unwrap_or_default();
        cfg.options
            .retain(|o| o.split(':').next() != Some(name.as_str()));
        cfg.options.push(match &opt.value {
            Some(v) => format!("{name}:{v}"),
            None => name,
        });
    }
}

/// `formDNSConfigFitsLimits`: truncates nameservers and searches to what resolvers accept.
fn fit_limits(cfg: &mut DnsConfig) {
    if cfg.servers.len() > MAX_DNS_NAMESERVERS {
        cfg.servers.truncate(MAX_DNS_NAMESERVERS);
        tracing::warn!(nameservers = ?cfg.servers, "Nameserver limits were exceeded, some nameservers have been omitted");
    }
    let mut exceeded = false;
    if cfg.searches.len() > MAX_DNS_SEARCH_PATHS {
        cfg.searches.truncate(MAX_DNS_SEARCH_PATHS);
        exceeded = true;
    }
    while cfg.searches.join(" ").len() > MAX_DNS_SEARCH_LIST_CHARS {
        cfg.searches.pop();
        exceeded = true;
    }
    if exceeded {
        tracing::warn!(search = %cfg.searches.join(" "), "Search Line limits were exceeded, some search paths have been omitted");
    }
}

/// `truncatePodHostnameIfNeeded`: cut to 63 characters, without a trailing `-` or `.`.
fn truncate_pod_hostname_if_needed(
    pod_name: &str,
    hostname: &str,
) -> Result<String, RuntimeManagerError> {
    const HOSTNAME_MAX_LEN: usize = 63;
    if hostname.len() <= HOSTNAME_MAX_LEN {
        return Ok(hostname.to_string());
    }
    let cut: String = hostname.chars().take(HOSTNAME_MAX_LEN).collect();
    tracing::error!(pod_name, hostname_max_len = HOSTNAME_MAX_LEN, truncated_hostname = %cut, "Hostname for pod was too long, truncated it");
    let truncated = cut.trim_end_matches(['-', '.']);
    if truncated.is_empty() {
        return Err(RuntimeManagerError::InvalidPod(format!(
            "hostname for pod {pod_name:?} was invalid: {hostname:?}"
        )));
    }
    Ok(truncated.to_string())
}

/// `GeneratePodHostNameAndDomain`: with the `HostnameOverride` gate (`hostname_override`)
/// and `spec.hostnameOverride` set, that name (a DNS subdomain, cut to 63 characters) and
/// no domain; otherwise `spec.hostname` or the pod name (cut to 63 characters), and the
/// domain `<subdomain>.<ns>.svc.<clusterDomain>` when a subdomain is set.
pub fn pod_hostname_and_domain(
    pod: &Pod,
    cluster_domain: &str,
    hostname_override: bool,
) -> Result<(String, String), RuntimeManagerError> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let spec = pod.spec.as_ref();
    let invalid = |what: &str, value: &str, kind: &str, msgs: Vec<String>| {
        RuntimeManagerError::InvalidPod(format!(
            "pod {what} {value:?} is not a valid {kind}: {}",
            msgs.join(";")
        ))
    };
    if let Some(h) = spec
        .and_then(|s| s.hostname_override.as_deref())
        .filter(|_| hostname_override)
    {
        let msgs = is_dns1123_subdomain(h);
        if !msgs.is_empty() {
            return Err(invalid("HostnameOverride", h, "DNS subdomain", msgs));
        }
        return Ok((truncate_pod_hostname_if_needed(&name, h)?, String::new()));
    }
    let mut hostname = name.clone();
    if let Some(h) = spec
        .and_then(|s| s.hostname.as_deref())
        .filter(|h| !h.is_empty())
    {
        let msgs = is_dns1123_label(h);
        if !msgs.is_empty() {
            return Err(invalid("Hostname", h, "DNS label", msgs));
        }
        hostname = h.to_string();
    }
    let hostname = truncate_pod_hostname_if_needed(&name, &hostname)?;
    let mut domain = String::new();
    if let Some(sub) = spec
        .and_then(|s| s.subdomain.as_deref())
        .filter(|s| !s.is_empty())
    {
        let msgs = is_dns1123_label(sub);
        if !msgs.is_empty() {
            return Err(invalid("Subdomain", sub, "DNS label", msgs));
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        domain = format!("{sub}.{ns}.svc.{cluster_domain}");
    }
    Ok((hostname, domain))
}

/// `GetNodenameForKernel`: the FQDN when `setHostnameAsFQDN` and a domain exist (max 64 chars).
pub fn nodename_for_kernel(
    hostname: &str,
    domain: &str,
    set_fqdn: bool,
) -> Result<String, RuntimeManagerError> {
    if domain.is_empty() || !set_fqdn {
        return Ok(hostname.to_string());
    }
    let fqdn = format!("{hostname}.{domain}");
    if fqdn.len() > 64 {
        return Err(RuntimeManagerError::InvalidPod(format!(
            "failed to construct FQDN from pod hostname and cluster domain, FQDN {fqdn} is too long (64 characters is the max, {} characters requested)",
            fqdn.len()
        )));
    }
    Ok(fqdn)
}

#[cfg(test)]
#[path = "dns_tests.rs"]
mod tests;
