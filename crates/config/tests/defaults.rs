#![allow(clippy::unwrap_used, clippy::panic, clippy::bool_assert_comparison)]
#![recursion_limit = "512"]
//! The defaults in both regimes, field by field, against upstream's values
//! (`SetDefaults_KubeletConfiguration`, `applyLegacyDefaults`, `DefaultEvictionHard`).

use kubelet_config::{Command, FakeFs, KubeletServer, load_unvalidated};
use serde_json::{Value, json};

fn run(args: &[&str], fs: &FakeFs) -> KubeletServer {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    match load_unvalidated(&args, fs).unwrap() {
        Command::Run(s) => *s,
        other => panic!("unexpected {other:?}"),
    }
}

/// Every field upstream sets by default, with the secure v1beta1 values.
fn common() -> Value {
    json!({
        "kind": "KubeletConfiguration",
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "enableServer": true,
        "podLogsDir": "/var/log/pods",
        "syncFrequency": "1m0s",
        "fileCheckFrequency": "20s",
        "httpCheckFrequency": "20s",
        "address": "0.0.0.0",
        "port": 10250,
        "authentication": {
            "x509": {},
            "webhook": {"enabled": true, "cacheTTL": "2m0s"},
            "anonymous": {"enabled": false}
        },
        "authorization": {
            "mode": "Webhook",
            "webhook": {"cacheAuthorizedTTL": "5m0s", "cacheUnauthorizedTTL": "30s"}
        },
        "registryPullQPS": 5,
        "registryBurst": 10,
        "imagePullCredentialsVerificationPolicy": "NeverVerifyPreloadedImages",
        "eventRecordQPS": 50,
        "eventBurst": 100,
        "enableDebuggingHandlers": true,
        "healthzPort": 10248,
        "healthzBindAddress": "127.0.0.1",
        "oomScoreAdj": -999,
        "streamingConnectionIdleTimeout": "4h0m0s",
        "nodeStatusUpdateFrequency": "10s",
        "nodeStatusReportFrequency": "5m0s",
        "nodeLeaseDurationSeconds": 40,
        "imageMinimumGCAge": "2m0s",
        "imageMaximumGCAge": "0s",
        "imageGCHighThresholdPercent": 85,
        "imageGCLowThresholdPercent": 80,
        "volumeStatsAggPeriod": "1m0s",
        "cgroupsPerQOS": true,
        "cgroupDriver": "cgroupfs",
        "cpuManagerPolicy": "none",
        "cpuManagerReconcilePeriod": "10s",
        "memoryManagerPolicy": "None",
        "topologyManagerPolicy": "none",
        "topologyManagerScope": "container",
        "runtimeRequestTimeout": "2m0s",
        "hairpinMode": "promiscuous-bridge",
        "maxPods": 110,
        "podPidsLimit": -1,
        "resolvConf": "/etc/resolv.conf",
        "cpuCFSQuota": true,
        "cpuCFSQuotaPeriod": "100ms",
        "nodeStatusMaxImages": 50,
        "maxOpenFiles": 1000000,
        "contentType": "application/vnd.kubernetes.protobuf",
        "kubeAPIQPS": 50,
        "kubeAPIBurst": 100,
        "serializeImagePulls": true,
        "evictionPressureTransitionPeriod": "5m0s",
        "mergeDefaultEvictionSettings": false,
        "enableControllerAttachDetach": true,
        "makeIPTablesUtilChains": true,
        "iptablesMasqueradeBit": 14,
        "iptablesDropBit": 15,
        "failSwapOn": true,
        "memorySwap": {},
        "containerLogMaxSize": "10Mi",
        "containerLogMaxFiles": 5,
        "containerLogMaxWorkers": 1,
        "containerLogMonitorInterval": "10s",
        "configMapAndSecretChangeDetectionStrategy": "Watch",
        "enforceNodeAllocatable": ["pods"],
        "volumePluginDir": "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/",
        "logging": {
            "format": "text",
            "flushFrequency": "5s",
            "verbosity": 0,
            "options": {"text": {"infoBufferSize": "0"}, "json": {"infoBufferSize": "0"}}
        },
        "enableSystemLogHandler": true,
        "shutdownGracePeriod": "0s",
        "shutdownGracePeriodCriticalPods": "0s",
        "crashLoopBackOff": {"maxContainerRestartPeriod": "5m0s"},
        "enableProfilingHandler": true,
        "enableDebugFlagsHandler": true,
        "seccompDefault": false,
        "memoryThrottlingFactor": 0.9,
        "registerNode": true,
        "localStorageCapacityIsolation": true,
        "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock",
        "failCgroupV1": true,
        // No v1beta1 default, but the internal `bool` converted back is always printed
        // (what upstream's /configz shows).
        "enableSystemLogQuery": false
    })
}

fn assert_fields(got: &Value, want: &Value) {
    let (g, w) = (got.as_object().unwrap(), want.as_object().unwrap());
    for (k, v) in w {
        assert_eq!(g.get(k), Some(v), "field {k}");
    }
    for k in g.keys() {
        assert!(w.contains_key(k), "unexpected field {k} = {}", g[k]);
    }
    let order: Vec<&String> = g.keys().collect();
    assert_eq!(order[..2], [&"kind".to_string(), &"apiVersion".to_string()]);
}

#[test]
fn no_config_file_uses_legacy_defaults() {
    let s = run(&[], &FakeFs::default());
    let mut want = common();
    want["readOnlyPort"] = json!(10255);
    want["authentication"]["anonymous"]["enabled"] = json!(true);
    want["authentication"]["webhook"]["enabled"] = json!(false);
    want["authorization"]["mode"] = json!("AlwaysAllow");
    // evictionHard has no default without a config file. Checked against upstream:
    // SetDefaults_KubeletConfiguration (pkg/kubelet/apis/config/v1beta1/defaults.go) does
    // not set it since kubernetes/kubernetes#110263; only loadConfigFile
    // (cmd/kubelet/app/server.go) fills eviction.DefaultEvictionHard, and
    // NewKubeletConfiguration/applyLegacyDefaults (cmd/kubelet/app/options/options.go) leave
    // it nil, so `kubelet --help` shows no default for --eviction-hard.
    assert_fields(&s.config.to_versioned_json(), &want);
    assert!(s.config.eviction_hard.is_none());
}

#[test]
fn config_file_uses_v1beta1_defaults() {
    let fs = FakeFs::default().with_file(
        "/etc/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n",
    );
    let s = run(&["--config=/etc/kubelet/config.yaml"], &fs);
    let mut want = common();
    // eviction.DefaultEvictionHard (pkg/kubelet/eviction/defaults_linux.go); imagefs.inodesFree
    // is in it since 1.30 (kubernetes/kubernetes#121834).
    want["evictionHard"] = json!({
        "imagefs.available": "15%",
        "imagefs.inodesFree": "5%",
        "memory.available": "100Mi",
        "nodefs.available": "10%",
        "nodefs.inodesFree": "5%"
    });
    assert_fields(&s.config.to_versioned_json(), &want);
}

#[test]
fn config_dir_alone_keeps_legacy_defaults() {
    let fs = FakeFs::default().with_file(
        "/etc/kubelet.d/10-a.conf",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 7\n",
    );
    let s = run(&["--config-dir=/etc/kubelet.d"], &fs);
    assert_eq!(s.config.max_pods, 7);
    // mergeKubeletConfigurations (cmd/kubelet/app/server.go) does not go through
    // loadConfigFile, so drop-ins alone do not bring evictionHard defaults either.
    assert!(s.config.eviction_hard.is_none());
    assert_eq!(s.config.read_only_port, 10255);
    assert_eq!(s.config.authorization.mode, "AlwaysAllow");
    assert_eq!(s.config.authentication.anonymous.enabled, Some(true));
}

#[test]
fn node_status_report_frequency_follows_explicit_update_frequency() {
    let fs = FakeFs::default().with_file(
        "/c.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nnodeStatusUpdateFrequency: 20s\n",
    );
    let s = run(&["--config", "/c.yaml"], &fs);
    assert_eq!(s.config.node_status_report_frequency.to_string(), "20s");
}

#[test]
fn explicit_zero_and_false_pointer_fields_are_kept() {
    let fs = FakeFs::default().with_file(
        "/c.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nhealthzPort: 0\nenableServer: false\nregistryPullQPS: 0\nfailCgroupV1: false\npodPidsLimit: -5\nmaxParallelImagePulls: 3\n",
    );
    let s = run(&["--config", "/c.yaml"], &fs);
    assert_eq!(s.config.healthz_port, Some(0));
    assert_eq!(s.config.enable_server, Some(false));
    assert_eq!(s.config.registry_pull_qps, Some(0));
    assert_eq!(s.config.fail_cgroup_v1, Some(false));
    assert_eq!(s.config.pod_pids_limit, Some(-1));
    assert_eq!(s.config.serialize_image_pulls, Some(false));
}

#[test]
fn crash_loop_default_depends_on_gate_in_file() {
    let fs = FakeFs::default().with_file(
        "/c.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  KubeletCrashLoopBackOffMax: false\n  KubeletEnsureSecretPulledImages: false\n",
    );
    let s = run(&["--config", "/c.yaml"], &fs);
    assert_eq!(
        s.config.crash_loop_back_off.max_container_restart_period,
        None
    );
    assert_eq!(s.config.image_pull_credentials_verification_policy, "");
}
