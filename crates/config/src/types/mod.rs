//! The versioned `KubeletConfiguration` (kubelet.config.k8s.io/v1beta1).
//!
//! Mirrors `staging/src/k8s.io/kubelet/config/v1beta1/types.go`: JSON names, field order and
//! `omitempty` behaviour are upstream's, so `serde_json::to_value` gives what `/configz`
//! serves. Go pointer fields are `Option`; after [`crate::set_defaults`] they are `Some`
//! except the ones upstream leaves nil.

mod config;
mod logging;
mod nested;

pub use config::*;
pub use logging::*;
pub use nested::*;

/// `apiVersion` of the kubelet configuration group.
pub const API_VERSION: &str = "kubelet.config.k8s.io/v1beta1";
/// `kind` of the kubelet configuration object.
pub const KIND: &str = "KubeletConfiguration";

pub(crate) fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

pub(crate) fn none_or_empty<T>(v: &Option<Vec<T>>) -> bool {
    v.as_ref().is_none_or(Vec::is_empty)
}

pub(crate) fn none_or_empty_map<K, V>(v: &Option<std::collections::BTreeMap<K, V>>) -> bool {
    v.as_ref().is_none_or(std::collections::BTreeMap::is_empty)
}
