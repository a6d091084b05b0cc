//! Proofs for the support table (`crates/config/src/support/`): changing an implemented
//! setting changes what the app computes from it and hands to the subsystems — the runtime
//! manager's settings, the secure server's settings, the container GC policy, the node name
//! and node allocatable. The subsystems' own tests show what those settings do.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kubelet_cm::{CgroupDriver, CgroupVersion, FakeHostFs, MachineInfo};
use kubelet_config::{Command, FakeFs, KubeletServer};
use kubelet_runtime::setup::RuntimeManagerSettings;
use tokio_util::sync::CancellationToken;

use super::{KubeletDeps, runtime_setup, secure};
use crate::configz::Configz;
use crate::startup::{PreInitRuntime, container_manager_config, node_name};

const HEADER: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

/// Loads `args` with `yaml` (after the header) as the `--config` file.
fn server(args: &[&str], yaml: &str) -> KubeletServer {
    let fs = FakeFs::default().with_file("/k.yaml", &format!("{HEADER}{yaml}"));
    let mut all = vec!["--config=/k.yaml".to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    match kubelet_config::load_unvalidated(&all, &fs).unwrap() {
        Command::Run(s) => *s,
        _ => panic!("not a run"),
    }
}

/// A 4-CPU, 8 GiB machine.
fn machine() -> MachineInfo {
    let fs = FakeHostFs::default();
    fs.add_file("/sys/devices/system/cpu/online", "0-3\n");
    fs.add_file("/proc/meminfo", "MemTotal:       8388608 kB\n");
    fs.add_file("/proc/sys/kernel/osrelease", "6.1.0\n");
    kubelet_cm::read_machine_info(&fs).unwrap()
}

async fn runtime_settings(s: &KubeletServer, endpoint: &str) -> RuntimeManagerSettings {
    let timeout = Duration::from_secs(5);
    let machine = machine();
    let node_config = container_manager_config(s, &machine).unwrap();
    let deps = KubeletDeps {
        server: s,
        node_name: "node".into(),
        machine,
        node_config,
        // What `check_startable` computes from the configuration.
        node_ips: crate::startable::node_ips(s, &mut Vec::new()).unwrap(),
        cluster_dns: crate::startable::cluster_dns(s, &mut Vec::new()),
        container_log_max_size: crate::startable::container_log_max_size(
            &s.config.container_log_max_size,
        )
        .unwrap(),
        serving_tls: None,
        cgroup_version: CgroupVersion::V2,
        runtime: PreInitRuntime {
            runtime: Arc::new(
                kubelet_cri::RemoteRuntimeService::connect(endpoint, timeout)
                    .await
                    .unwrap(),
            ),
            image: Arc::new(
                kubelet_cri::RemoteImageService::connect(endpoint, timeout)
                    .await
                    .unwrap(),
            ),
            version: Default::default(),
            cgroup_driver: CgroupDriver::Cgroupfs,
            cgroup_driver_source: kubelet_cri::CgroupDriverSource::Runtime,
            features: None,
        },
        systemd: None,
        configz: Configz::new(serde_json::json!({})),
        clients: None,
        recorder: Arc::new(kubelet_container::NoopRecorder),
        host_fs: Arc::new(FakeHostFs::default()),
        rlimits: Arc::new(kubelet_cm::FakeRlimits::default()),
        process_killer: Arc::new(kubelet_cm::FakeProcessKiller::default()),
        shutdown: CancellationToken::new(),
        fatal: CancellationToken::new(),
    };
    runtime_setup::settings(&deps).unwrap()
}

#[tokio::test]
async fn runtime_settings_follow_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let cri = kubelet_cri::fake::serve_fake(&dir.path().join("cri.sock"))
        .await
        .unwrap();
    let base = runtime_settings(&server(&[], ""), &cri.endpoint()).await;
    let changed = server(
        &["--root-dir=/srv/kubelet", "--node-ip=10.1.2.3"],
        "podLogsDir: /srv/logs\ncgroupRoot: /custom\ncgroupsPerQOS: false\nresolvConf: \"\"\n\
         clusterDNS: [10.96.0.10]\nclusterDomain: cluster.local\nserializeImagePulls: false\n\
         maxParallelImagePulls: 3\ncontainerLogMaxSize: 1Mi\ncontainerLogMaxFiles: 2\n\
         cpuCFSQuota: false\ncpuCFSQuotaPeriod: 50ms\nseccompDefault: true\n\
         singleProcessOOMKill: true\nkubeReserved: {cpu: 500m}\nsystemReserved: {memory: 1Gi}\n",
    );
    let s = runtime_settings(&changed, &cri.endpoint()).await;

    assert_eq!(base.root_dir, PathBuf::from("/var/lib/kubelet"));
    assert_eq!(s.root_dir, PathBuf::from("/srv/kubelet"));
    assert_eq!(base.pod_logs_dir, PathBuf::from("/var/log/pods"));
    assert_eq!(s.pod_logs_dir, PathBuf::from("/srv/logs"));
    assert_eq!(
        (base.cgroup_root.as_str(), s.cgroup_root.as_str()),
        ("", "/custom")
    );
    assert!(base.cgroups_per_qos && !s.cgroups_per_qos);
    assert_eq!(base.resolv_conf, Some(PathBuf::from("/etc/resolv.conf")));
    assert_eq!(s.resolv_conf, None);
    assert!(base.cluster_dns.is_empty());
    assert_eq!(
        s.cluster_dns,
        vec!["10.96.0.10".parse::<std::net::IpAddr>().unwrap()]
    );
    assert_eq!(
        (base.cluster_domain.as_str(), s.cluster_domain.as_str()),
        ("", "cluster.local")
    );
    assert!(base.serialize_image_pulls && !s.serialize_image_pulls);
    assert_eq!(
        (base.max_parallel_image_pulls, s.max_parallel_image_pulls),
        (None, Some(3))
    );
    assert_eq!(base.container_log_max_size, 10 * 1024 * 1024);
    assert_eq!(s.container_log_max_size, 1024 * 1024);
    assert_eq!(
        (base.container_log_max_files, s.container_log_max_files),
        (5, 2)
    );
    assert!(base.cpu_cfs_quota && !s.cpu_cfs_quota);
    assert_eq!(base.cpu_cfs_quota_period, Duration::from_millis(100));
    assert_eq!(s.cpu_cfs_quota_period, Duration::from_millis(50));
    assert!(!base.seccomp_default && s.seccomp_default);
    assert!(!base.single_process_oom_kill && s.single_process_oom_kill);
    assert!(base.node_ips.is_empty());
    assert_eq!(
        s.node_ips,
        vec!["10.1.2.3".parse::<std::net::IpAddr>().unwrap()]
    );
    assert_eq!(base.allocatable_milli_cpu - s.allocatable_milli_cpu, 500);
    assert_eq!(base.allocatable_memory - s.allocatable_memory, 1 << 30);

    // The command-line `--seccomp-default` is ORed with the field, as upstream does.
    let flag = runtime_settings(&server(&["--seccomp-default"], ""), &cri.endpoint()).await;
    assert!(flag.seccomp_default);
    cri.shutdown().await.unwrap();
}

#[test]
fn secure_server_settings_follow_the_configuration() {
    let config = |s: &KubeletServer| {
        let node_ips = crate::startable::node_ips(s, &mut Vec::new()).unwrap();
        secure::secure_server_config(s, "node", &node_ips).unwrap()
    };
    let base = config(&server(&[], ""));
    let s = config(&server(
        &["--cert-dir=/srv/pki", "--node-ip=10.1.2.3"],
        "address: 127.0.0.1\nport: 11250\ntlsCertFile: /c.crt\ntlsPrivateKeyFile: /c.key\n\
         tlsMinVersion: VersionTLS13\ntlsCipherSuites: [TLS_AES_128_GCM_SHA256]\n\
         authentication: {x509: {clientCAFile: /ca.crt}, anonymous: {enabled: true}}\n\
         enableDebuggingHandlers: false\n",
    ));
    assert_eq!(
        (base.address.as_str(), s.address.as_str()),
        ("0.0.0.0", "127.0.0.1")
    );
    assert_eq!((base.port, s.port), (10250, 11250));
    assert_eq!(base.tls.cert_file, None);
    assert_eq!(s.tls.cert_file, Some(PathBuf::from("/c.crt")));
    assert_eq!(s.tls.key_file, Some(PathBuf::from("/c.key")));
    assert_eq!(base.tls.cert_dir, PathBuf::from("/var/lib/kubelet/pki"));
    assert_eq!(s.tls.cert_dir, PathBuf::from("/srv/pki"));
    assert!(s.tls.ips.contains(&"10.1.2.3".parse().unwrap()));
    assert!(!base.tls.ips.contains(&"10.1.2.3".parse().unwrap()));
    assert_eq!(
        (base.tls.min_version.as_str(), s.tls.min_version.as_str()),
        ("", "VersionTLS13")
    );
    assert!(base.tls.cipher_suites.is_empty());
    assert_eq!(
        s.tls.cipher_suites,
        vec!["TLS_AES_128_GCM_SHA256".to_string()]
    );
    assert_eq!(base.client_ca_file, None);
    assert_eq!(s.client_ca_file, Some(PathBuf::from("/ca.crt")));
    assert!(!base.anonymous && s.anonymous);
    assert!(base.enable_debugging_handlers && !s.enable_debugging_handlers);
}

#[test]
fn enable_server_false_starts_no_secure_server() {
    assert!(secure::secure_server_wanted(&server(&[], "")).unwrap());
    assert!(!secure::secure_server_wanted(&server(&[], "enableServer: false\n")).unwrap());
}

#[test]
fn server_tls_bootstrap_takes_the_managers_certificate() {
    // Accepted; the TLS settings make no self-signed pair (the certificate manager's
    // certificate is served instead).
    let s = server(&[], "serverTLSBootstrap: true\n");
    assert!(secure::secure_server_wanted(&s).unwrap());
    let tls = crate::startable::tls_settings(&s, "n1", &[]);
    assert!(tls.server_tls_bootstrap);
    let dir = tempfile::tempdir().unwrap();
    let mut tls = tls;
    tls.cert_dir = dir.path().to_path_buf();
    let prepared = kubelet_server::prepare_tls(&tls, None).unwrap();
    assert!(prepared.server_tls_bootstrap());
    assert!(!dir.path().join("kubelet.crt").exists());
    // Refused only with its feature gate off (upstream would serve no certificate).
    let off = server(
        &[],
        "serverTLSBootstrap: true\nfeatureGates:\n  RotateKubeletServerCertificate: false\n",
    );
    let err = secure::secure_server_wanted(&off).unwrap_err();
    assert!(
        err.to_string().contains("RotateKubeletServerCertificate"),
        "{err}"
    );
}

#[test]
fn gc_policy_follows_the_deprecated_flags() {
    let base = runtime_setup::gc_policy(&server(&[], ""));
    assert_eq!(
        (
            base.min_age,
            base.max_per_pod_container,
            base.max_containers
        ),
        (Duration::ZERO, 1, -1)
    );
    let p = runtime_setup::gc_policy(&server(
        &[
            "--minimum-container-ttl-duration=1m",
            "--maximum-dead-containers-per-container=3",
            "--maximum-dead-containers=10",
        ],
        "",
    ));
    assert_eq!(
        (p.min_age, p.max_per_pod_container, p.max_containers),
        (Duration::from_secs(60), 3, 10)
    );
}

#[test]
fn node_name_follows_hostname_override() {
    assert_eq!(node_name("  Node-A.Example ").unwrap(), "node-a.example");
    let host = node_name("").unwrap();
    assert!(!host.is_empty() && host == host.to_lowercase());
}

#[test]
fn admission_allocatable_follows_reserved_and_eviction_settings() {
    let memory = |args: &[&str], yaml: &str| {
        let s = server(args, yaml);
        let machine = machine();
        let node_config = container_manager_config(&s, &machine).unwrap();
        super::admission::node_allocatable(&s.config, &machine, &node_config).memory
    };
    const GIB: i64 = 1 << 30;
    // 8 GiB machine; the defaults apply no threshold in a config file that sets none.
    let hard = "evictionHard:\n  memory.available: 1Gi\n";
    assert_eq!(memory(&[], hard), 7 * GIB);
    assert_eq!(
        memory(&[], &format!("{hard}kubeReserved:\n  memory: 1Gi\n")),
        6 * GIB
    );
    assert_eq!(
        memory(&[], &format!("{hard}systemReserved:\n  memory: 2Gi\n")),
        5 * GIB
    );
    // `--experimental-allocatable-ignore-eviction`: the threshold no longer counts.
    assert_eq!(
        memory(&["--experimental-allocatable-ignore-eviction"], hard),
        8 * GIB
    );
}

/// Admission's allocatable `ephemeral-storage` (standalone node, `initialNode`): the root
/// filesystem's capacity − kube/system-reserved − the hard `nodefs.available` threshold;
/// none with `localStorageCapacityIsolation: false` or an unreadable filesystem.
#[test]
fn admission_allocatable_ephemeral_storage_follows_local_storage_settings() {
    const GIB: i64 = 1 << 30;
    let storage = |yaml: &str, fs: Result<u64, String>| {
        let s = server(&[], yaml);
        let machine = machine();
        let node_config = container_manager_config(&s, &machine).unwrap();
        super::admission::allocatable_ephemeral_storage(&s.config, &node_config, fs)
    };
    let hard = "evictionHard:\n  nodefs.available: 10Gi\n";
    assert_eq!(storage(hard, Ok(100 << 30)), 90 * GIB);
    assert_eq!(
        storage(
            &format!("{hard}kubeReserved:\n  ephemeral-storage: 5Gi\n"),
            Ok(100 << 30)
        ),
        85 * GIB
    );
    assert_eq!(storage(hard, Err("no fs".into())), 0);
    assert_eq!(
        storage(
            &format!("{hard}localStorageCapacityIsolation: false\n"),
            Ok(100 << 30)
        ),
        0
    );
}

#[test]
fn enable_system_log_query_reaches_the_secure_server() {
    let node_ips = [std::net::IpAddr::from([127, 0, 0, 1])];
    let on = "enableSystemLogQuery: true\nenableSystemLogHandler: true\nfeatureGates:\n  NodeLogQuery: true\n";
    let s = server(&[], on);
    assert!(secure::secure_server_wanted(&s).unwrap());
    let cfg = secure::secure_server_config(&s, "node", &node_ips).unwrap();
    assert!(cfg.debug.system_log_query.is_some());
    let off = secure::secure_server_config(&server(&[], ""), "node", &node_ips).unwrap();
    assert!(off.debug.system_log_query.is_none());
}

#[test]
fn debug_handler_settings_reach_the_secure_server() {
    let node_ips = [std::net::IpAddr::from([127, 0, 0, 1])];
    let s = server(
        &[],
        "enableSystemLogHandler: false\nenableProfilingHandler: false\nenableDebugFlagsHandler: false\n",
    );
    let cfg = secure::secure_server_config(&s, "node", &node_ips).unwrap();
    assert!(!cfg.debug.enable_system_log_handler);
    assert!(!cfg.debug.enable_profiling_handler);
    assert!(!cfg.debug.enable_debug_flags_handler);
    let d = secure::secure_server_config(&server(&[], ""), "node", &node_ips).unwrap();
    assert!(d.debug.enable_system_log_handler && d.debug.enable_profiling_handler);
    assert_eq!(d.debug.node_log_dir, PathBuf::from("/var/log/"));
    assert!(d.debug.set_verbosity.is_some());
}

/// `userNamespaces.idsPerPod` and `maxPods` size the user namespace manager the runtime gets
/// (upstream `MakeUserNsManager`), over the `kubelet` user's subordinate IDs; with the
/// `UserNamespacesSupport` gate off there is none.
#[test]
fn user_namespaces_ids_per_pod_sizes_the_pods_user_namespaces() {
    use kubelet_runtime::os::{FakeOs, OsInterface};
    struct SubIds;
    impl kubelet_runtime::userns::SubIdsCommand for SubIds {
        fn output(&self, _group: bool, user: &str) -> Result<String, String> {
            // Ten pods' worth of 131072 IDs from 131072 on.
            Ok(format!("0: {user} 131072 1310720\n"))
        }
    }
    let os = Arc::new(FakeOs::new());
    os.write_file(
        std::path::Path::new("/etc/passwd"),
        b"root:x:0:0::/root:/bin/sh\nkubelet:x:900:900::/:/usr/sbin/nologin\n",
    )
    .unwrap();
    let root = std::path::Path::new("/var/lib/kubelet");
    let s = server(&[], "maxPods: 10\nuserNamespaces:\n  idsPerPod: 131072\n");
    let m = runtime_setup::userns_manager(&s, root, &SubIds, os.clone())
        .unwrap()
        .expect("the gate is on by default");
    let got = m.get_or_create("pod-a").unwrap();
    assert_eq!(got.uid_mappings.len(), 1);
    let uid = got.uid_mappings[0];
    assert_eq!((uid.container_id, uid.length), (0, 131072));
    assert!(
        uid.host_id >= 131072 && uid.host_id.is_multiple_of(131072),
        "{uid:?}"
    );
    assert_eq!(got.gid_mappings, got.uid_mappings);

    // Eleven pods do not fit in ten pods' IDs: upstream's start-up error.
    let s = server(&[], "maxPods: 11\nuserNamespaces:\n  idsPerPod: 131072\n");
    let Err(e) = runtime_setup::userns_manager(&s, root, &SubIds, os.clone()) else {
        panic!("eleven pods fit in ten pods' IDs");
    };
    let e = e.to_string();
    assert!(e.contains("create user namespace manager"), "{e}");
    assert!(e.contains("not enough to support 11 pods"), "{e}");

    let s = server(&["--feature-gates=UserNamespacesSupport=false"], "");
    assert!(
        runtime_setup::userns_manager(&s, root, &SubIds, os)
            .unwrap()
            .is_none()
    );
}
