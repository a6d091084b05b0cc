#![allow(clippy::unwrap_used, clippy::panic, clippy::bool_assert_comparison)]
//! Config file, drop-ins and flag precedence (`NewKubeletCommand`).

use kubelet_config::{Command, FakeFs, HostInfo, KubeletServer, load, load_unvalidated};

const HDR: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn run(a: &[&str], fs: &FakeFs) -> KubeletServer {
    match load_unvalidated(&args(a), fs).unwrap() {
        Command::Run(s) => *s,
        other => panic!("unexpected {other:?}"),
    }
}

fn err(a: &[&str], fs: &FakeFs) -> String {
    load_unvalidated(&args(a), fs).unwrap_err().to_string()
}

#[test]
fn empty_file_is_an_error() {
    let fs = FakeFs::default().with_file("/c.yaml", "");
    assert_eq!(
        err(&["--config=/c.yaml"], &fs),
        "failed to load kubelet config file, path: /c.yaml, error: failed to load Kubelet config file /c.yaml, error kubelet config file \"/c.yaml\" was empty"
    );
}

#[test]
fn missing_file_and_wrong_kind() {
    let fs = FakeFs::default().with_file(
        "/k.yaml",
        "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n",
    );
    assert!(
        err(&["--config=/nope.yaml"], &fs)
            .contains("failed to read kubelet config file \"/nope.yaml\"")
    );
    assert!(err(&["--config=/k.yaml"], &fs).contains(
        "no kind \"KubeletConfiguration\" is registered for version \"kubelet.config.k8s.io/v1\""
    ));
    let fs = FakeFs::default().with_file("/n.yaml", "port: 1\n");
    assert!(err(&["--config=/n.yaml"], &fs).contains("Object 'Kind' is missing"));
}

#[test]
fn json_file_is_accepted() {
    let fs = FakeFs::default().with_file(
        "/c.json",
        r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","maxPods":33,"syncFrequency":"30s"}"#,
    );
    let s = run(&["--config=/c.json"], &fs);
    assert_eq!(s.config.max_pods, 33);
    assert_eq!(s.config.sync_frequency.to_string(), "30s");
}

#[test]
fn unknown_and_duplicate_fields_fall_back_to_lenient_with_warning() {
    let fs = FakeFs::default().with_file(
        "/c.yaml",
        &format!("{HDR}maxPods: 5\nbogusField: 1\nauthentication:\n  nope: true\n"),
    );
    let s = run(&["--config=/c.yaml"], &fs);
    assert_eq!(s.config.max_pods, 5);
    // In sorted key order, as the upstream kubelet v1.35.4 lists them for this file.
    assert_eq!(
        s.warnings,
        vec![
            "Using lenient decoding as strict decoding failed: strict decoding error: unknown field \"authentication.nope\", unknown field \"bogusField\""
        ]
    );
    let fs = FakeFs::default().with_file("/d.yaml", &format!("{HDR}maxPods: 5\nmaxPods: 6\n"));
    let s = run(&["--config=/d.yaml"], &fs);
    assert_eq!(s.config.max_pods, 6);
    assert_eq!(s.warnings.len(), 1);
    assert!(
        s.warnings[0].starts_with(
            "Using lenient decoding as strict decoding failed: strict decoding error: "
        )
    );
}

/// Not in 1.35's v1beta1 `types.go` (staging/src/k8s.io/kubelet/config/v1beta1): upstream
/// added `draManagerReconcilePeriod` (kubernetes/kubernetes#136946, default 60s) and
/// `memoryReservationPolicy` (None | TieredReservation, for MemoryQoS) in 1.36. A 1.35
/// kubelet treats them as unknown fields: lenient decoding with a warning.
#[test]
fn fields_added_after_1_35_are_unknown() {
    let fs = FakeFs::default().with_file(
        "/c.yaml",
        &format!(
            "{HDR}draManagerReconcilePeriod: 30s
memoryReservationPolicy: None
"
        ),
    );
    let s = run(&["--config=/c.yaml"], &fs);
    assert_eq!(
        s.warnings,
        vec![
            "Using lenient decoding as strict decoding failed: strict decoding error: unknown field \"draManagerReconcilePeriod\", unknown field \"memoryReservationPolicy\""
        ]
    );
    let json = s.config.to_versioned_json();
    assert!(json.get("draManagerReconcilePeriod").is_none());
    assert!(json.get("memoryReservationPolicy").is_none());
}

/// The JSON names that are not plain camelCase decode strictly and come back unchanged.
#[test]
fn irregular_json_names_round_trip() {
    let fields = [
        ("staticPodURL", "http://127.0.0.1/pods"),
        ("serverTLSBootstrap", "true"),
        ("registryPullQPS", "3"),
        ("eventRecordQPS", "4"),
        ("imageMinimumGCAge", "3m0s"),
        ("imageMaximumGCAge", "1h0m0s"),
        ("imageGCHighThresholdPercent", "90"),
        ("imageGCLowThresholdPercent", "70"),
        ("cgroupsPerQOS", "false"),
        ("singleProcessOOMKill", "true"),
        ("podCIDR", "10.0.0.0/24"),
        ("resolvConf", "/r.conf"),
        ("cpuCFSQuota", "false"),
        ("cpuCFSQuotaPeriod", "50ms"),
        ("kubeAPIQPS", "7"),
        ("kubeAPIBurst", "8"),
        ("makeIPTablesUtilChains", "false"),
        ("reservedSystemCPUs", "0-1"),
        ("providerID", "p"),
    ];
    let mut yaml = format!("{HDR}clusterDNS: [10.0.0.10]\nstaticPodURLHeader:\n  a: [b]\n");
    for (k, v) in fields {
        yaml.push_str(&format!("{k}: {v}\n"));
    }
    let fs = FakeFs::default().with_file("/c.yaml", &yaml);
    let s = run(&["--config=/c.yaml"], &fs);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let json = s.config.to_versioned_json();
    for (k, v) in fields {
        let got = &json[k];
        let got = got.as_str().map_or_else(|| got.to_string(), str::to_string);
        assert_eq!(got, v, "{k}");
    }
    assert_eq!(json["clusterDNS"], serde_json::json!(["10.0.0.10"]));
    assert_eq!(json["staticPodURLHeader"], serde_json::json!({"a": ["b"]}));
}

#[test]
fn type_errors_are_fatal() {
    let fs = FakeFs::default().with_file("/c.yaml", &format!("{HDR}maxPods: lots\n"));
    assert!(err(&["--config=/c.yaml"], &fs).contains("failed to decode: "));
    let fs = FakeFs::default().with_file("/c.yaml", &format!("{HDR}syncFrequency: 10\n"));
    assert!(err(&["--config=/c.yaml"], &fs).contains("failed to decode: "));
}

#[test]
fn relative_paths_resolve_against_config_dir() {
    let fs = FakeFs::default().with_file(
        "/etc/kubelet/config.yaml",
        &format!("{HDR}staticPodPath: manifests\ntlsCertFile: ../pki/k.crt\ntlsPrivateKeyFile: /abs/k.key\nauthentication:\n  x509:\n    clientCAFile: ca.crt\nresolvConf: ''\npodLogsDir: logs\nvolumePluginDir: plugins\n"),
    );
    let s = run(&["--config=/etc/kubelet/config.yaml"], &fs);
    assert_eq!(s.config.static_pod_path, "/etc/kubelet/manifests");
    assert_eq!(s.config.tls_cert_file, "/etc/pki/k.crt");
    assert_eq!(s.config.tls_private_key_file, "/abs/k.key");
    assert_eq!(
        s.config.authentication.x509.client_ca_file,
        "/etc/kubelet/ca.crt"
    );
    assert_eq!(s.config.resolver_config.as_deref(), Some(""));
    assert_eq!(s.config.pod_logs_dir, "/etc/kubelet/logs");
    assert_eq!(s.config.volume_plugin_dir, "/etc/kubelet/plugins");
}

#[test]
fn relative_config_path_starts_at_cwd() {
    let mut fs = FakeFs::default().with_file("/srv/k/c.yaml", &format!("{HDR}staticPodPath: m\n"));
    fs.cwd = "/srv".into();
    let s = run(&["--config=k/c.yaml"], &fs);
    assert_eq!(s.config.static_pod_path, "/srv/k/m");
}

#[test]
fn eviction_hard_replaced_or_merged() {
    let fs = FakeFs::default()
        .with_file(
            "/a.yaml",
            &format!("{HDR}evictionHard:\n  memory.available: 1Gi\n"),
        )
        .with_file(
            "/b.yaml",
            &format!(
                "{HDR}mergeDefaultEvictionSettings: true\nevictionHard:\n  memory.available: 1Gi\n"
            ),
        );
    let a = run(&["--config=/a.yaml"], &fs)
        .config
        .eviction_hard
        .unwrap();
    assert_eq!(a.len(), 1);
    let b = run(&["--config=/b.yaml"], &fs)
        .config
        .eviction_hard
        .unwrap();
    // The four other Linux defaults (with imagefs.inodesFree, kubernetes/kubernetes#121834).
    assert_eq!(b.len(), 5);
    assert_eq!(b["memory.available"], "1Gi");
    assert_eq!(b["imagefs.available"], "15%");
    assert_eq!(b["imagefs.inodesFree"], "5%");
}

#[test]
fn flags_override_file_only_when_given() {
    let fs = FakeFs::default().with_file(
        "/c.yaml",
        &format!("{HDR}maxPods: 50\nport: 11111\nreadOnlyPort: 0\n"),
    );
    let s = run(&["--config=/c.yaml", "--max-pods=60"], &fs);
    assert_eq!(s.config.max_pods, 60);
    assert_eq!(s.config.port, 11111);
    // the flag default (legacy 10255) does not override the file
    assert_eq!(s.config.read_only_port, 0);
}

#[test]
fn drop_ins_merge_in_lexical_order_with_list_replacement() {
    let fs = FakeFs::default()
        .with_file("/c.yaml", &format!("{HDR}maxPods: 50\nclusterDNS: [10.0.0.1, 10.0.0.2]\nfeatureGates:\n  MemoryQoS: true\n"))
        .with_file("/d/20-b.conf", &format!("{HDR}maxPods: 70\n"))
        .with_file("/d/10-a.conf", &format!("{HDR}maxPods: 60\nclusterDNS: [10.0.0.9]\nport: 2222\n"))
        .with_file("/d/sub/30-c.conf", &format!("{HDR}healthzPort: 0\n"))
        .with_file("/d/99-ignored.yaml", &format!("{HDR}maxPods: 1\n"));
    let s = run(&["--config=/c.yaml", "--config-dir=/d"], &fs);
    assert_eq!(s.config.max_pods, 70);
    assert_eq!(s.config.cluster_dns, vec!["10.0.0.9"]);
    assert_eq!(s.config.port, 2222);
    assert_eq!(s.config.healthz_port, Some(0));
    assert_eq!(s.config.feature_gates["MemoryQoS"], true);
    assert_eq!(s.skipped_dropins, vec!["/d/99-ignored.yaml"]);
    // explicit flags beat drop-ins
    let s = run(
        &["--config=/c.yaml", "--config-dir=/d", "--max-pods=80"],
        &fs,
    );
    assert_eq!(s.config.max_pods, 80);
}

#[test]
fn drop_in_null_restores_default() {
    let fs = FakeFs::default()
        .with_file("/c.yaml", &format!("{HDR}maxPods: 50\n"))
        .with_file("/d/1.conf", &format!("{HDR}maxPods: null\n"));
    assert_eq!(
        run(&["--config=/c.yaml", "--config-dir=/d"], &fs)
            .config
            .max_pods,
        110
    );
}

#[test]
fn drop_in_gvk_errors() {
    let fs = FakeFs::default().with_file("/d/1.conf", "maxPods: 3\n");
    assert!(
        err(&["--config-dir=/d"], &fs)
            .ends_with("failed to load kubelet dropin file, path: /d/1.conf, no apiVersion/kind")
    );
    let fs = FakeFs::default().with_file(
        "/d/1.conf",
        "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n",
    );
    assert!(
        err(&["--config-dir=/d"], &fs).ends_with(
            "unknown apiVersion/kind: kubelet.config.k8s.io/v1, Kind=KubeletConfiguration"
        )
    );
    assert!(err(&["--config-dir=/missing"], &FakeFs::default()).starts_with("failed to merge kubelet configs: failed to walk through kubelet dropin directory \"/missing\""));
}

#[test]
fn feature_gates_from_file_and_flags_merge_flag_wins() {
    let fs = FakeFs::default().with_file(
        "/c.yaml",
        &format!("{HDR}featureGates:\n  MemoryQoS: true\n  QOSReserved: true\n"),
    );
    let s = run(
        &[
            "--config=/c.yaml",
            "--feature-gates=QOSReserved=false,CPUManagerPolicyAlphaOptions=true",
        ],
        &fs,
    );
    assert_eq!(s.config.feature_gates.len(), 3);
    assert_eq!(s.config.feature_gates["MemoryQoS"], true);
    assert_eq!(s.config.feature_gates["QOSReserved"], false);
    assert!(s.feature_gates.enabled(kubelet_features::gates::MEMORY_QOS));
    assert!(
        !s.feature_gates
            .enabled(kubelet_features::gates::QOS_RESERVED)
    );
    assert!(
        s.feature_gates
            .enabled(kubelet_features::gates::CPU_MANAGER_POLICY_ALPHA_OPTIONS)
    );
}

#[test]
fn unknown_gate_in_file_is_fatal() {
    let fs =
        FakeFs::default().with_file("/c.yaml", &format!("{HDR}featureGates:\n  Bogus: true\n"));
    assert!(err(&["--config=/c.yaml"], &fs).contains("unrecognized feature gate: Bogus"));
}

#[test]
fn node_labels_are_validated_before_loading() {
    let e = err(&["--node-labels=kubernetes.io/foo=bar"], &FakeFs::default());
    assert!(e.starts_with("failed to validate kubelet flags: unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [kubernetes.io/foo]\n--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (kubelet.kubernetes.io, node.kubernetes.io) or be in the specifically allowed set (beta.kubernetes.io/arch, "));
    let e = err(&["--node-labels=ok=bad value"], &FakeFs::default());
    assert!(e.starts_with("failed to validate kubelet flags: invalid node labels: 'bad value' - a valid label must be an empty string"));
    let s = run(
        &[
            "--node-labels=node.kubernetes.io/role=x,foo.kubelet.kubernetes.io/a=b,kubernetes.io/hostname=h,example.com/x=y",
        ],
        &FakeFs::default(),
    );
    assert_eq!(s.flags.node_labels.len(), 4);
}

#[test]
fn load_validates_with_host_info() {
    let fs = FakeFs::default().with_file("/c.yaml", HDR);
    let v1 = HostInfo { cgroup_v1: true };
    let e = load(&args(&["--config=/c.yaml"]), &fs, v1)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "failed to validate kubelet configuration, error: kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release"
    );
    let fs = FakeFs::default().with_file("/c.yaml", &format!("{HDR}failCgroupV1: false\n"));
    assert!(load(&args(&["--config=/c.yaml"]), &fs, v1).is_ok());
    assert!(
        load(
            &args(&[]),
            &FakeFs::default(),
            HostInfo { cgroup_v1: false }
        )
        .is_ok()
    );
}
