//! Service environment variables (upstream `pkg/kubelet/envvars/envvars.go` `FromServices`,
//! and the selection of `getServiceEnvVarMap` in `pkg/kubelet/kubelet_pods.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;

/// Upstream `masterServices`: the services of the `default` namespace every pod gets, even
/// with `enableServiceLinks: false`.
const MASTER_SERVICES: &[&str] = &["kubernetes"];

/// `v1helper.IsServiceIPSet`: the ClusterIP is neither empty nor `None`.
fn is_service_ip_set(s: &Service) -> bool {
    s.spec
        .as_ref()
        .and_then(|s| s.cluster_ip.as_deref())
        .is_some_and(|ip| !ip.is_empty() && ip != "None")
}

/// `makeEnvVariableName`: upper case, `-` → `_`.
fn env_name(s: &str) -> String {
    s.replace('-', "_").to_uppercase()
}

/// `net.JoinHostPort`: IPv6 addresses in brackets.
fn join_host_port(host: &str, port: i32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `FromServices`: `<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT[_<PORT NAME>]` and the
/// Docker link variables of each service with a cluster IP.
pub fn from_services(services: &[&Service]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for s in services {
        if !is_service_ip_set(s) {
            continue;
        }
        let Some(spec) = s.spec.as_ref() else {
            continue;
        };
        let Some(first) = spec.ports.as_ref().and_then(|p| p.first()) else {
            continue;
        };
        let ip = spec.cluster_ip.as_deref().unwrap_or_default();
        let prefix = env_name(s.metadata.name.as_deref().unwrap_or_default());
        out.push((format!("{prefix}_SERVICE_HOST"), ip.to_string()));
        let port_name = format!("{prefix}_SERVICE_PORT");
        out.push((port_name.clone(), first.port.to_string()));
        let ports = spec.ports.iter().flatten();
        for sp in ports.clone() {
            if let Some(n) = sp.name.as_deref().filter(|n| !n.is_empty()) {
                out.push((format!("{port_name}_{}", env_name(n)), sp.port.to_string()));
            }
        }
        // `makeLinkVariables`: Docker-compatible variables.
        for (i, sp) in ports.enumerate() {
            let protocol = sp
                .protocol
                .as_deref()
                .filter(|p| !p.is_empty())
                .unwrap_or("TCP");
            let url = format!(
                "{}://{}",
                protocol.to_lowercase(),
                join_host_port(ip, sp.port)
            );
            if i == 0 {
                out.push((format!("{prefix}_PORT"), url.clone()));
            }
            let pp = format!("{prefix}_PORT_{}_{}", sp.port, protocol.to_uppercase());
            out.push((format!("{pp}_PROTO"), protocol.to_lowercase()));
            out.push((format!("{pp}_PORT"), sp.port.to_string()));
            out.push((format!("{pp}_ADDR"), ip.to_string()));
            out.push((pp, url));
        }
    }
    out
}

/// `getServiceEnvVarMap`: the variables of the master services of `default`, and of the
/// services of `namespace` when `enable_service_links`; a service of the pod's namespace
/// wins over a master service of the same name.
pub fn service_env_var_map(
    services: &[Service],
    namespace: &str,
    enable_service_links: bool,
) -> BTreeMap<String, String> {
    let mut by_name: BTreeMap<&str, &Service> = BTreeMap::new();
    for s in services {
        if !is_service_ip_set(s) {
            continue;
        }
        let name = s.metadata.name.as_deref().unwrap_or_default();
        let ns = s.metadata.namespace.as_deref().unwrap_or_default();
        if ns == "default" && MASTER_SERVICES.contains(&name) {
            by_name.entry(name).or_insert(s);
        } else if ns == namespace && enable_service_links {
            by_name.insert(name, s);
        }
    }
    let mapped: Vec<&Service> = by_name.into_values().collect();
    from_services(&mapped).into_iter().collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::api::core::v1::{ServicePort, ServiceSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn svc(ns: &str, name: &str, ip: &str, ports: &[(Option<&str>, i32, Option<&str>)]) -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ns.into()),
                ..ObjectMeta::default()
            },
            spec: Some(ServiceSpec {
                cluster_ip: Some(ip.into()),
                ports: Some(
                    ports
                        .iter()
                        .map(|(n, p, proto)| ServicePort {
                            name: n.map(Into::into),
                            port: *p,
                            protocol: proto.map(Into::into),
                            ..ServicePort::default()
                        })
                        .collect(),
                ),
                ..ServiceSpec::default()
            }),
            ..Service::default()
        }
    }

    /// Upstream `TestMakeEnvironmentVariables`' service variables (`envvars_test.go`).
    #[test]
    fn variables_as_upstream() {
        let s = svc(
            "ns",
            "foo-bar",
            "1.2.3.4",
            &[(None, 8080, Some("TCP")), (Some("https"), 443, Some("UDP"))],
        );
        let got: BTreeMap<String, String> = from_services(&[&s]).into_iter().collect();
        let want: BTreeMap<String, String> = [
            ("FOO_BAR_SERVICE_HOST", "1.2.3.4"),
            ("FOO_BAR_SERVICE_PORT", "8080"),
            ("FOO_BAR_SERVICE_PORT_HTTPS", "443"),
            ("FOO_BAR_PORT", "tcp://1.2.3.4:8080"),
            ("FOO_BAR_PORT_8080_TCP", "tcp://1.2.3.4:8080"),
            ("FOO_BAR_PORT_8080_TCP_PROTO", "tcp"),
            ("FOO_BAR_PORT_8080_TCP_PORT", "8080"),
            ("FOO_BAR_PORT_8080_TCP_ADDR", "1.2.3.4"),
            ("FOO_BAR_PORT_443_UDP", "udp://1.2.3.4:443"),
            ("FOO_BAR_PORT_443_UDP_PROTO", "udp"),
            ("FOO_BAR_PORT_443_UDP_PORT", "443"),
            ("FOO_BAR_PORT_443_UDP_ADDR", "1.2.3.4"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
        let v6 = svc("ns", "v6", "fd00::1", &[(None, 80, None)]);
        let got: BTreeMap<String, String> = from_services(&[&v6]).into_iter().collect();
        assert_eq!(got["V6_PORT"], "tcp://[fd00::1]:80");
    }

    #[test]
    fn master_services_always_others_with_service_links() {
        let services = vec![
            svc(
                "default",
                "kubernetes",
                "10.0.0.1",
                &[(Some("https"), 443, None)],
            ),
            svc("default", "other", "10.0.0.2", &[(None, 80, None)]),
            svc("ns", "web", "10.0.0.3", &[(None, 80, None)]),
            svc("ns", "headless", "None", &[(None, 80, None)]),
        ];
        let off = service_env_var_map(&services, "ns", false);
        assert_eq!(off["KUBERNETES_SERVICE_HOST"], "10.0.0.1");
        assert_eq!(off["KUBERNETES_SERVICE_PORT"], "443");
        assert!(!off.contains_key("WEB_SERVICE_HOST"));
        assert!(!off.contains_key("OTHER_SERVICE_HOST"));
        let on = service_env_var_map(&services, "ns", true);
        assert_eq!(on["WEB_SERVICE_HOST"], "10.0.0.3");
        assert!(!on.contains_key("HEADLESS_SERVICE_HOST"));
        assert!(!on.contains_key("OTHER_SERVICE_HOST"));
        // A service named like a master service in the pod's namespace wins.
        let mut shadow = services.clone();
        shadow.push(svc("ns", "kubernetes", "10.0.0.9", &[(None, 1, None)]));
        assert_eq!(
            service_env_var_map(&shadow, "ns", true)["KUBERNETES_SERVICE_HOST"],
            "10.0.0.9"
        );
    }
}
