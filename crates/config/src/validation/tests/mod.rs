#![allow(clippy::unwrap_used)]
//! One test per `ValidateKubeletConfiguration` rule, split by the part of the function
//! that holds the rule.

use std::collections::BTreeMap;

use kubelet_apimachinery::{Duration, Quantity};
use kubelet_features::FeatureGate;

use super::*;
use crate::types::{
    MemoryReservation, ShutdownGracePeriodByPodPriority, Taint, TracingConfiguration,
    UserNamespaces,
};

const V2: HostInfo = HostInfo { cgroup_v1: false };

fn valid() -> KubeletConfiguration {
    let mut kc = KubeletConfiguration::default();
    crate::set_defaults(&mut kc, &FeatureGate::new()).unwrap();
    kc
}

fn errors_with(gates: &[(&str, bool)], f: impl FnOnce(&mut KubeletConfiguration)) -> Vec<String> {
    let mut kc = valid();
    kc.feature_gates = gates.iter().map(|(k, v)| ((*k).to_string(), *v)).collect();
    f(&mut kc);
    match validate_kubelet_configuration(&kc, &FeatureGate::new(), V2) {
        Ok(()) => vec![],
        Err(e) => e.0,
    }
}

fn errors(f: impl FnOnce(&mut KubeletConfiguration)) -> Vec<String> {
    errors_with(&[], f)
}

fn one(errs: Vec<String>, want: &str) {
    assert_eq!(errs, vec![want.to_string()]);
}

mod gated;
mod general;
mod host;
mod tail;
