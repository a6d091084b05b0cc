//! Test support: a validated `KubeletServer` from a configuration file's body.
#![allow(clippy::unwrap_used)]

use kubelet_config::KubeletServer;

/// A validated start with `--config` holding `extra` (v1beta1 fields, YAML).
pub fn server(extra: &str) -> KubeletServer {
    let yaml =
        format!("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n{extra}");
    let fs = kubelet_config::FakeFs::default().with_file("/k.yaml", &yaml);
    let args = ["--config".to_string(), "/k.yaml".to_string()];
    let host = kubelet_config::HostInfo { cgroup_v1: false };
    match kubelet_config::load(&args, &fs, host).unwrap() {
        kubelet_config::Command::Run(s) => *s,
        _ => unreachable!("--config gives a run"),
    }
}
