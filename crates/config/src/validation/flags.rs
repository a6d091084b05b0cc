//! `ValidateKubeletFlags` (`cmd/kubelet/app/options/options.go`) and `IsKubeletLabel`
//! (`k8s.io/kubelet/pkg/apis/well_known_labels.go`).

use std::collections::{BTreeMap, BTreeSet};

use kubelet_apimachinery::{is_qualified_name, is_valid_label_value};

use crate::flags::KubeletFlags;
use crate::help::{KUBELET_LABEL_NAMESPACES, KUBELET_LABELS};

fn label_namespace(key: &str) -> &str {
    key.split_once('/').map(|(ns, _)| ns).unwrap_or("")
}

fn is_kubernetes_label(key: &str) -> bool {
    let ns = label_namespace(key);
    ns == "kubernetes.io"
        || ns.ends_with(".kubernetes.io")
        || ns == "k8s.io"
        || ns.ends_with(".k8s.io")
}

/// `IsKubeletLabel`: a label the kubelet may set on its own Node.
pub fn is_kubelet_label(key: &str) -> bool {
    if KUBELET_LABELS.contains(&key) {
        return true;
    }
    let ns = label_namespace(key);
    KUBELET_LABEL_NAMESPACES
        .iter()
        .any(|allowed| ns == *allowed || ns.ends_with(&format!(".{allowed}")))
}

/// `ValidateKubeletFlags`: checks `--node-labels`.
pub fn validate_kubelet_flags(f: &KubeletFlags) -> Result<(), String> {
    let mut unknown = BTreeSet::new();
    let mut invalid: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in &f.node_labels {
        if is_kubernetes_label(k) && !is_kubelet_label(k) {
            unknown.insert(k.clone());
        }
        let errs = is_qualified_name(k);
        if !errs.is_empty() {
            invalid.entry(k.clone()).or_default().extend(errs);
        }
        let errs = is_valid_label_value(v);
        if !errs.is_empty() {
            invalid.entry(v.clone()).or_default().extend(errs);
        }
    }
    if !unknown.is_empty() {
        let list: Vec<&str> = unknown.iter().map(String::as_str).collect();
        return Err(format!(
            "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [{}]\n--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix ({}) or be in the specifically allowed set ({})",
            list.join(" "),
            KUBELET_LABEL_NAMESPACES.join(", "),
            KUBELET_LABELS.join(", ")
        ));
    }
    if !invalid.is_empty() {
        let parts: Vec<String> = invalid
            .iter()
            .map(|(k, v)| format!("'{k}' - {}", v.join(", ")))
            .collect();
        return Err(format!("invalid node labels: {}", parts.join("; ")));
    }
    Ok(())
}
