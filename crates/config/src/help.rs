//! `--help` output: the command's long description and `FlagUsagesWrapped(2)` of the flag
//! set (sorted by name, usage on the same line, defaults and deprecations appended).

use kubelet_features::FeatureGate;

use crate::flag_table::{FlagDef, Usage};
use crate::flagparse::FlagSet;
use crate::flags::Parsed;
use crate::flagvalue::{Target, render};

const LONG: &str = "The kubelet is the primary \"node agent\" that runs on each
node. It can register the node with the apiserver using one of: the hostname; a flag to
override the hostname; or specific logic for a cloud provider.

The kubelet works in terms of a PodSpec. A PodSpec is a YAML or JSON object
that describes a pod. The kubelet takes a set of PodSpecs that are provided through
various mechanisms (primarily through the apiserver) and ensures that the containers
described in those PodSpecs are running and healthy. The kubelet doesn't manage
containers which were not created by Kubernetes.

Other than from an PodSpec from the apiserver, there are two ways that a container
manifest can be provided to the Kubelet.

File: Path passed as a flag on the command line. Files under this path will be monitored
periodically for updates. The monitoring period is 20s by default and is configurable
via a flag.

HTTP endpoint: HTTP endpoint passed as a parameter on the command line. This endpoint
is checked every 20 seconds (also configurable with a flag).";

/// Kubelet label namespaces and labels (`k8s.io/kubelet/pkg/apis/well_known_labels.go`).
pub const KUBELET_LABEL_NAMESPACES: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];
pub const KUBELET_LABELS: &[&str] = &[
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "kubernetes.io/arch",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
];

/// `cliflag.PreferredTLSCipherNames` / `InsecureTLSCipherNames`: Go's `tls.CipherSuites()`
/// and `tls.InsecureCipherSuites()` of the toolchain the harness builds upstream with (Go
/// 1.26 counts the RSA key-exchange suites as insecure), sorted.
const TLS_PREFERRED: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
];
const TLS_INSECURE: &[&str] = &[
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_RSA_WITH_RC4_128_SHA",
];

pub(crate) fn usage_text(def: &FlagDef, gates: &FeatureGate) -> String {
    match def.usage {
        Usage::Static(s) => s.to_string(),
        Usage::FeatureGates => format!(
            "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:\n{}",
            gates.known_features().join("\n")
        ),
        Usage::NodeLabels => format!(
            "Labels to add when registering the node in the cluster.  Labels must be key=value pairs separated by ','. Labels in the 'kubernetes.io' namespace must begin with an allowed prefix ({}) or be in the specifically allowed set ({})",
            KUBELET_LABEL_NAMESPACES.join(", "),
            KUBELET_LABELS.join(", ")
        ),
        Usage::TlsCipherSuites => format!(
            "Comma-separated list of cipher suites for the server. If omitted, the default Go cipher suites will be used. \nPreferred values: {}. \nInsecure values: {}.",
            TLS_PREFERRED.join(", "),
            TLS_INSECURE.join(", ")
        ),
        Usage::TlsMinVersion => "Minimum TLS version supported. Possible values: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13".to_string(),
    }
}

/// `pflag.UnquoteUsage`: a back-quoted word in the usage names the argument (and loses its
/// quotes); otherwise the argument is the flag's type name.
fn unquote_usage(type_name: &str, usage: String) -> (String, String) {
    if let Some((before, rest)) = usage.split_once('`')
        && let Some((name, after)) = rest.split_once('`')
    {
        return (name.to_string(), format!("{before}{name}{after}"));
    }
    (type_name.to_string(), usage)
}

fn is_zero_default(t: Target, shown: &str) -> bool {
    match t {
        Target::Dur(..) | Target::OptDur(..) | Target::FlushFreq(..) => {
            shown == "0s" || shown == "0"
        }
        _ => matches!(shown, "" | "<nil>" | "[]" | "0" | "false"),
    }
}

/// The help text printed by `kubelet --help`, with defaults taken from `baseline`.
pub fn help_text(baseline: &Parsed, gates: &FeatureGate) -> String {
    let set = FlagSet::new();
    let mut defs: Vec<&FlagDef> = set.defs().iter().filter(|d| !d.hidden).collect();
    defs.sort_by_key(|d| d.name);
    let mut lines = Vec::new();
    let mut maxlen = 0;
    for def in defs {
        let mut line = match def.shorthand {
            Some(c) => format!("  -{c}, --{}", def.name),
            None => format!("      --{}", def.name),
        };
        let (ty, mut usage) = unquote_usage(def.target.type_name(), usage_text(def, gates));
        if !ty.is_empty() {
            line.push(' ');
            line.push_str(&ty);
        }
        if matches!(def.target, Target::Version) {
            line.push_str("[=true]");
        }
        maxlen = maxlen.max(line.len());
        let shown = render(def.target, baseline);
        if !is_zero_default(def.target, &shown) {
            if def.target.type_name() == "string" {
                usage.push_str(&format!(" (default {shown:?})"));
            } else {
                usage.push_str(&format!(" (default {shown})"));
            }
        }
        if let Some(d) = def.deprecated {
            usage.push_str(&format!(" (DEPRECATED: {d})"));
        }
        lines.push((line, usage));
    }
    let mut flags = String::new();
    for (line, usage) in lines {
        let pad = " ".repeat(maxlen - line.len());
        let usage = usage.replace('\n', &format!("\n{}", " ".repeat(16)));
        flags.push_str(&format!("{line}{pad}   {usage}\n"));
    }
    format!("{LONG}\n\nUsage:\n  kubelet [flags]\n\nFlags:\n{flags}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::BTreeMap;

    use super::*;
    use crate::flag_table::all_flags;
    use crate::new_kubelet_configuration;

    /// Splits the `Flags:` section into entries: flag name -> the entry's text (its first
    /// line plus the continuation lines of multi-line usage).
    fn entries(text: &str) -> Vec<(String, String)> {
        let (_, section) = text.split_once("\nFlags:\n").unwrap();
        let mut out: Vec<(String, String)> = Vec::new();
        for line in section.lines() {
            let long = if line.starts_with("  -") && line.get(4..8) == Some(", --") {
                line.get(8..)
            } else {
                line.strip_prefix("      --")
            };
            match long {
                Some(rest) => {
                    let name = rest.split(' ').next().unwrap().to_string();
                    out.push((name, line.to_string()));
                }
                None => {
                    let (_, entry) = out.last_mut().unwrap();
                    entry.push('\n');
                    entry.push_str(line);
                }
            }
        }
        out
    }

    #[test]
    fn help_lists_every_visible_flag_in_the_table_once() {
        let baseline = Parsed {
            flags: Default::default(),
            config: new_kubelet_configuration(),
            global: Default::default(),
        };
        let listed = entries(&help_text(&baseline, &FeatureGate::new()));
        let names: Vec<&str> = listed.iter().map(|(n, _)| n.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(names, sorted, "entries are sorted and unique");

        let by_name: BTreeMap<&str, &str> = listed
            .iter()
            .map(|(n, e)| (n.as_str(), e.as_str()))
            .collect();
        let (hidden, table): (Vec<_>, Vec<_>) = all_flags().into_iter().partition(|d| d.hidden);
        assert_eq!(by_name.len(), table.len());
        for def in &hidden {
            assert!(!by_name.contains_key(def.name), "--{} is hidden", def.name);
            assert!(FlagSet::new().has_flag(def.name));
        }
        for def in &table {
            let entry = by_name
                .get(def.name)
                .unwrap_or_else(|| unreachable!("--{} is missing from --help", def.name));
            let head = match def.shorthand {
                Some(c) => format!("  -{c}, --{}", def.name),
                None => format!("      --{}", def.name),
            };
            assert!(entry.starts_with(&head), "{entry}");
            let ty = def.target.type_name();
            if !ty.is_empty() {
                assert!(entry.starts_with(&format!("{head} {ty}")), "{entry}");
            }
            let deprecation = def.deprecated.map(|d| format!("(DEPRECATED: {d})"));
            assert_eq!(
                deprecation
                    .as_ref()
                    .is_some_and(|d| entry.contains(d.as_str())),
                def.deprecated.is_some(),
                "{entry}"
            );
            if def.deprecated.is_none() {
                assert!(!entry.contains("(DEPRECATED:"), "{entry}");
            }
        }
    }
}
