#![allow(clippy::unwrap_used, clippy::panic)]
use super::*;
use crate::os::FakeOs;
use k8s_openapi::api::core::v1::{PodDNSConfigOption, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::path::Path;

const RESOLV: &str = "# comment\nnameserver 10.0.0.1\nnameserver 10.0.0.2\nsearch example.com. corp.local .\noptions ndots:2 timeout:1\noptions ndots:3\n";

fn pod(policy: &str, host_network: bool) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("prod".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            dns_policy: Some(policy.into()),
            host_network: Some(host_network),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn configurer(cluster_dns: &[&str], domain: &str, resolv: bool) -> DnsConfigurer {
    let os = Arc::new(FakeOs::new());
    os.write_file(Path::new("/etc/resolv.conf"), RESOLV.as_bytes())
        .unwrap();
    DnsConfigurer::new(
        os,
        None,
        cluster_dns.iter().map(|s| s.parse().unwrap()).collect(),
        domain,
        resolv.then(|| PathBuf::from("/etc/resolv.conf")),
    )
}

#[test]
fn parses_resolv_conf() {
    let rc = parse_resolv_conf(RESOLV).unwrap();
    assert_eq!(rc.nameservers, vec!["10.0.0.1", "10.0.0.2"]);
    assert_eq!(rc.searches, vec!["example.com", "corp.local"]);
    assert_eq!(rc.options, vec!["timeout:1", "ndots:3"]);
    assert!(parse_resolv_conf("nameserver\n").is_err());
}

#[test]
fn pod_dns_by_policy() {
    let c = configurer(&["10.96.0.10"], "cluster.local", true);
    let cfg = c.get_pod_dns(&pod("ClusterFirst", false)).unwrap();
    assert_eq!(cfg.servers, vec!["10.96.0.10"]);
    assert_eq!(
        cfg.searches,
        vec![
            "prod.svc.cluster.local",
            "svc.cluster.local",
            "cluster.local",
            "example.com",
            "corp.local"
        ]
    );
    assert_eq!(cfg.options, vec!["ndots:5"]);

    // ClusterFirst on the host network falls back to the host's resolv.conf.
    let cfg = c.get_pod_dns(&pod("ClusterFirst", true)).unwrap();
    assert_eq!(cfg.servers, vec!["10.0.0.1", "10.0.0.2"]);
    // ...unless ClusterFirstWithHostNet.
    let cfg = c
        .get_pod_dns(&pod("ClusterFirstWithHostNet", true))
        .unwrap();
    assert_eq!(cfg.servers, vec!["10.96.0.10"]);
    assert_eq!(
        c.get_pod_dns(&pod("None", false)).unwrap(),
        DnsConfig::default()
    );
}

#[test]
fn standalone_cluster_first_uses_host_dns() {
    let c = configurer(&[], "", true);
    let cfg = c.get_pod_dns(&pod("ClusterFirst", false)).unwrap();
    assert_eq!(cfg.servers, vec!["10.0.0.1", "10.0.0.2"]);
    assert_eq!(cfg.searches, vec!["example.com", "corp.local"]);
    // Without a resolv.conf, DNS points at localhost.
    let c = configurer(&[], "", false);
    let cfg = c.get_pod_dns(&pod("Default", false)).unwrap();
    assert_eq!(
        (cfg.servers, cfg.searches),
        (vec!["127.0.0.1".to_string()], vec![".".to_string()])
    );
}

#[test]
fn pod_dns_config_is_merged_and_limited() {
    let c = configurer(&["10.96.0.10"], "cluster.local", true);
    let mut p = pod("ClusterFirst", false);
    if let Some(s) = p.spec.as_mut() {
        s.dns_config = Some(PodDNSConfig {
            nameservers: Some(vec![
                "1.1.1.1".into(),
                "10.96.0.10".into(),
                "2.2.2.2".into(),
                "3.3.3.3".into(),
            ]),
            searches: Some(vec!["extra.local".into()]),
            options: Some(vec![
                PodDNSConfigOption {
                    name: Some("ndots".into()),
                    value: Some("1".into()),
                },
                PodDNSConfigOption {
                    name: Some("edns0".into()),
                    value: None,
                },
            ]),
        });
    }
    let cfg = c.get_pod_dns(&p).unwrap();
    assert_eq!(cfg.servers, vec!["10.96.0.10", "1.1.1.1", "2.2.2.2"]);
    assert_eq!(cfg.searches.last().map(String::as_str), Some("extra.local"));
    assert_eq!(cfg.options, vec!["ndots:1", "edns0"]);
}

#[test]
fn missing_resolv_conf_is_an_error_naming_the_file() {
    let c = DnsConfigurer::new(
        Arc::new(FakeOs::new()),
        None,
        vec![],
        "",
        Some("/nope/resolv.conf".into()),
    );
    let err = c.get_pod_dns(&pod("Default", false)).unwrap_err();
    assert!(err.to_string().contains("/nope/resolv.conf"), "{err}");
}

#[test]
fn hostnames() {
    let mut p = pod("ClusterFirst", false);
    assert_eq!(
        pod_hostname_and_domain(&p, "cluster.local", true).unwrap(),
        ("web".into(), String::new())
    );
    if let Some(s) = p.spec.as_mut() {
        s.hostname = Some("db-0".into());
        s.subdomain = Some("db".into());
    }
    let (h, d) = pod_hostname_and_domain(&p, "cluster.local", true).unwrap();
    assert_eq!(
        (h.as_str(), d.as_str()),
        ("db-0", "db.prod.svc.cluster.local")
    );
    assert_eq!(
        nodename_for_kernel(&h, &d, true).unwrap(),
        "db-0.db.prod.svc.cluster.local"
    );
    assert_eq!(nodename_for_kernel(&h, &d, false).unwrap(), "db-0");

    p.metadata.name = Some(format!("{}-x", "a".repeat(62)));
    if let Some(s) = p.spec.as_mut() {
        s.hostname = None;
    }
    assert_eq!(
        pod_hostname_and_domain(&p, "", true).unwrap().0,
        "a".repeat(62)
    );
    if let Some(s) = p.spec.as_mut() {
        s.hostname = Some("Bad_Name".into());
    }
    assert!(pod_hostname_and_domain(&p, "", true).is_err());
}

/// Upstream `TestGeneratePodHostNameAndDomain` (`pkg/kubelet/kubelet_pods_test.go`).
#[test]
fn generate_pod_hostname_and_domain_as_upstream() {
    struct Case {
        name: &'static str,
        pod_name: String,
        hostname: &'static str,
        subdomain: &'static str,
        hostname_override: Option<&'static str>,
        gate: bool,
        want: Result<(String, &'static str), &'static str>,
    }
    let case = |name, hostname, subdomain, hostname_override, gate, want| Case {
        name,
        pod_name: "test-pod".into(),
        hostname,
        subdomain,
        hostname_override,
        gate,
        want,
    };
    let domain = "my-subdomain.default.svc.cluster.local";
    let cases = vec![
        case(
            "Default behavior - pod name as hostname",
            "",
            "",
            None,
            false,
            Ok(("test-pod".into(), "")),
        ),
        case(
            "Custom Hostname",
            "custom-hostname",
            "",
            None,
            false,
            Ok(("custom-hostname".into(), "")),
        ),
        case(
            "Custom Subdomain",
            "",
            "my-subdomain",
            None,
            false,
            Ok(("test-pod".into(), domain)),
        ),
        case(
            "Custom Hostname and Subdomain",
            "custom-hostname",
            "my-subdomain",
            None,
            false,
            Ok(("custom-hostname".into(), domain)),
        ),
        case(
            "HostnameOverride - enabled - overrides all",
            "custom-hostname",
            "my-subdomain",
            Some("override-hostname"),
            true,
            Ok(("override-hostname".into(), "")),
        ),
        case(
            "HostnameOverride - enabled - invalid hostname",
            "custom-hostname",
            "my-subdomain",
            Some("Invalid-Hostname-!"),
            true,
            Err("pod HostnameOverride \"Invalid-Hostname-!\" is not a valid DNS subdomain"),
        ),
        case(
            "HostnameOverride - enabled - valid DNS hostname",
            "",
            "",
            Some("valid.hostname"),
            true,
            Ok(("valid.hostname".into(), "")),
        ),
        case(
            "HostnameOverride - disabled - is ignored",
            "custom-hostname",
            "my-subdomain",
            Some("override-hostname"),
            false,
            Ok(("custom-hostname".into(), domain)),
        ),
        // A 64-character override (the API allows 64) is cut as a pod name is.
        case(
            "HostnameOverride - 64 characters - truncated",
            "",
            "",
            Some("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bb"),
            true,
            Ok(("a".repeat(62), "")),
        ),
        case(
            "Validation - invalid hostname",
            "Invalid-Hostname-!",
            "",
            None,
            false,
            Err("pod Hostname \"Invalid-Hostname-!\" is not a valid DNS label"),
        ),
        case(
            "Validation - invalid subdomain",
            "",
            "invalid_subdomain",
            None,
            false,
            Err("pod Subdomain \"invalid_subdomain\" is not a valid DNS label"),
        ),
        case(
            "Validation - too long hostname",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "",
            None,
            false,
            Err("must be no more than 63 characters"),
        ),
        Case {
            pod_name: "a".repeat(65),
            ..case(
                "Hostname Truncation - pod name is too long",
                "",
                "",
                None,
                false,
                Ok(("a".repeat(63), "")),
            )
        },
    ];
    for c in cases {
        let p = Pod {
            metadata: ObjectMeta {
                name: Some(c.pod_name.clone()),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                hostname: Some(c.hostname.into()),
                subdomain: Some(c.subdomain.into()),
                hostname_override: c.hostname_override.map(Into::into),
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        let got = pod_hostname_and_domain(&p, "cluster.local", c.gate);
        match (got, c.want) {
            (Ok((h, d)), Ok((wh, wd))) => {
                assert_eq!((h.as_str(), d.as_str()), (wh.as_str(), wd), "{}", c.name)
            }
            (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{}: {e}", c.name),
            (got, want) => panic!("{}: got {got:?}, want {want:?}", c.name),
        }
    }
}
