//! Differential test (issue 12, item 6): the same configuration given to the upstream kubelet
//! v1.35.4 and to kubelet-rs, `/configz` fetched over TLS from both and compared field by
//! field.
//!
//! Both run standalone on the private containerd of `hack/runtime-up.sh`, one after the
//! other, with no static pods, on 127.0.0.1 ports, their own `--root-dir`, and a harness
//! drop-in (`zz-harness.conf`, applied last) that makes every case runnable without an API
//! server and harmless to the shared runtime: anonymous auth + AlwaysAllow (so `/configz` is
//! readable), no QoS cgroups, no read-only port, no image GC (`imageGCHighThresholdPercent:
//! 100`: the upstream kubelet would otherwise delete the shared images on a full disk).
//! The upstream kubelet stops every runtime pod it does not know, so run this test alone on
//! the runtime: `flock /var/lib/kubelet-rs-test/dev-runtime.lock cargo test -p kubelet-rs
//! --test configz_upstream`. The upstream kubelet bind-mounts its `--root-dir` onto itself;
//! the test unmounts it after each run.
//!
//! The upstream binary is `$KRS_CLUSTER_BIN/kubelet` (or `_output/bin/kubelet`, built by
//! `hack/lib/cluster-build.sh`); when it is missing the test fails. With
//! `KRS_SKIP_CLUSTER_TESTS=1` or `KRS_SKIP_RUNTIME_TESTS=1` it is built as ignored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, free_port, write};
use serde_json::Value;

const HEADER: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

/// One configuration: the `--config` body (after the header; `None`: no config file),
/// drop-ins before the harness one, and extra flags.
struct Case {
    name: &'static str,
    config: Option<&'static str>,
    dropins: &'static [(&'static str, &'static str)],
    flags: &'static [&'static str],
    /// Messages both kubelets must log.
    logged: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "no config file (legacy defaults), drop-in only",
        config: None,
        dropins: &[],
        flags: &[],
        logged: &[],
    },
    Case {
        name: "no config file, settings as flags",
        config: None,
        dropins: &[],
        flags: &[
            "--max-pods=40",
            "--cluster-dns=10.96.0.10,not-an-ip",
            "--cluster-domain=flags.local",
            "--v=2",
            "--eviction-hard=memory.available<300Mi",
            "--node-ip=garbage",
        ],
        // Unparsable entries are ignored with a message, not refused.
        logged: &[
            "\"Could not parse some node IP(s), ignoring them\"",
            "\"Invalid clusterDNS IP\" IP=\"not-an-ip\"",
        ],
    },
    Case {
        name: "minimal config file",
        config: Some(""),
        dropins: &[],
        flags: &[],
        logged: &[],
    },
    Case {
        name: "kubeadm-style",
        config: Some(
            "authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509: {}
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: \"\"
cpuManagerReconcilePeriod: 0s
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: \"0\"
    text:
      infoBufferSize: \"0\"
  verbosity: 0
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
",
        ),
        dropins: &[],
        flags: &[],
        logged: &[],
    },
    Case {
        name: "EKS-style",
        config: Some(
            "address: 0.0.0.0
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 2m0s
    enabled: true
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 5m0s
    cacheUnauthorizedTTL: 30s
clusterDomain: cluster.local
hairpinMode: hairpin-veth
readOnlyPort: 0
cgroupDriver: cgroupfs
cgroupRoot: /
featureGates:
  RotateKubeletServerCertificate: true
serializeImagePulls: false
tlsCipherSuites:
- TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
- TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
- TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305
- TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305
- TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
- TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
evictionHard:
  memory.available: 100Mi
  nodefs.available: 10%
  nodefs.inodesFree: 5%
kubeReserved:
  cpu: 70m
  ephemeral-storage: 1Gi
  memory: 442Mi
maxPods: 29
containerLogMaxSize: 50Mi
",
        ),
        dropins: &[],
        flags: &[],
        logged: &[],
    },
    Case {
        name: "drop-ins over the config file",
        config: Some("maxPods: 50\nclusterDNS: [10.0.0.1, 10.0.0.2]\n"),
        dropins: &[
            ("10-a.conf", "maxPods: 60\nclusterDNS: [10.0.0.9]\n"),
            (
                "20-b.conf",
                "clusterDomain: drop.in\nkubeReserved:\n  memory: 1Gi\n",
            ),
            ("30-ignored.yaml", "maxPods: 99\n"),
        ],
        flags: &[],
        logged: &[],
    },
    Case {
        name: "flags over drop-ins over the config file",
        config: Some("maxPods: 50\nclusterDomain: file.local\n"),
        dropins: &[("10-a.conf", "maxPods: 60\nclusterDomain: drop.in\n")],
        flags: &["--max-pods=70", "--sync-frequency=30s"],
        logged: &[],
    },
    Case {
        name: "evictionHard merged with the defaults",
        config: Some(
            "evictionHard:\n  memory.available: 200Mi\nmergeDefaultEvictionSettings: true\n",
        ),
        dropins: &[],
        flags: &[],
        logged: &[],
    },
    Case {
        name: "YAML anchors and aliases",
        config: Some(
            "syncFrequency: &period 30s
fileCheckFrequency: *period
evictionSoft: &soft
  memory.available: 300Mi
evictionSoftGracePeriod:
  memory.available: 1m30s
evictionMinimumReclaim: *soft
",
        ),
        dropins: &[],
        flags: &[],
        logged: &[],
    },
    Case {
        name: "lenient decoding of unknown fields",
        config: Some("noSuchField: true\nmaxPods: 33\n"),
        dropins: &[],
        flags: &[],
        logged: &[],
    },
];

/// The settings every case gets last, so both kubelets can run standalone side by side
/// with the other tests' runtime and be read over TLS.
fn harness_dropin(endpoint: &str, port: u16, healthz: u16) -> String {
    format!(
        "{HEADER}address: 127.0.0.1
port: {port}
healthzBindAddress: 127.0.0.1
healthzPort: {healthz}
readOnlyPort: 0
containerRuntimeEndpoint: {endpoint}
failCgroupV1: false
failSwapOn: false
cgroupsPerQOS: false
enforceNodeAllocatable: [none]
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 80
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
"
    )
}

/// The upstream kubelet binary (the test fails when it is missing).
fn upstream_kubelet() -> PathBuf {
    let dir = std::env::var_os("KRS_CLUSTER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| kubelet_e2e::runtime_env::repo_root().join("_output/bin"));
    let bin = dir.join("kubelet");
    assert!(
        bin.is_file(),
        "the upstream kubelet {} is missing: build it with hack/lib/cluster-build.sh or set KRS_CLUSTER_BIN (KRS_SKIP_CLUSTER_TESTS=1 skips this test)",
        bin.display()
    );
    bin
}

/// A kubelet process; killed (and reaped) when dropped.
struct Running {
    child: Child,
    log: PathBuf,
}

impl Running {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then SIGKILL after 20 s.
    fn stop(mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(bin: &Path, args: &[String], log: PathBuf) -> Running {
    let child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    Running { child, log }
}

/// GET `https://127.0.0.1:port/configz` (self-signed certificates: not verified).
fn get_configz(port: u16) -> Option<Value> {
    let out = Command::new("curl")
        .args(["-sk", "--max-time", "5"])
        .arg(format!("https://127.0.0.1:{port}/configz"))
        .output()
        .expect("curl");
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

/// Runs one kubelet until `/configz` answers; returns the `kubeletconfig` object and the log.
fn configz_of(
    bin: &Path,
    args: &[String],
    port: u16,
    log: PathBuf,
) -> Result<(Value, String), String> {
    let mut k = spawn(bin, args, log);
    let deadline = Instant::now() + Duration::from_secs(60);
    let got = loop {
        if let Some(v) = get_configz(port) {
            break Ok((v["kubeletconfig"].clone(), k.log()));
        }
        if let Some(status) = k.child.try_wait().unwrap() {
            break Err(format!("{} exited ({status}):\n{}", bin.display(), k.log()));
        }
        if Instant::now() > deadline {
            break Err(format!(
                "{}: no /configz in 60 s:\n{}",
                bin.display(),
                k.log()
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    k.stop();
    got
}

/// The mount points at or under `dir` (`/proc/self/mountinfo`), deepest first.
fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mut found: Vec<PathBuf> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(PathBuf::from)
        .filter(|m| m.starts_with(dir))
        .collect();
    found.sort_by(|a, b| b.cmp(a));
    found
}

/// Unmounts what a kubelet left mounted under its root directory; fails if any remains.
fn unmount_under(dir: &Path) {
    for m in mounts_under(dir) {
        nix::mount::umount2(&m, nix::mount::MntFlags::empty())
            .unwrap_or_else(|e| panic!("umount {}: {e}", m.display()));
    }
    assert_eq!(mounts_under(dir), Vec::<PathBuf>::new(), "mounts left");
}

/// `a.b[0].c` → leaf value.
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, x, out);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), x, out);
            }
        }
        _ => {
            out.insert(prefix.to_string(), v.clone());
        }
    }
}

/// The fields that differ, one line each.
fn diff(upstream: &Value, ours: &Value) -> Vec<String> {
    let (mut u, mut o) = (BTreeMap::new(), BTreeMap::new());
    flatten("", upstream, &mut u);
    flatten("", ours, &mut o);
    let keys: std::collections::BTreeSet<&String> = u.keys().chain(o.keys()).collect();
    keys.into_iter()
        .filter(|k| u.get(*k) != o.get(*k))
        .map(|k| {
            let show = |m: &BTreeMap<String, Value>| {
                m.get(k).map_or("(absent)".to_string(), Value::to_string)
            };
            format!("{k}: upstream {} / kubelet-rs {}", show(&u), show(&o))
        })
        .collect()
}

#[test]
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
fn configz_matches_the_upstream_kubelet() {
    let upstream = upstream_kubelet();
    let env = kubelet_e2e::runtime_env::ensure().expect("hack/runtime-up.sh");
    let ours = PathBuf::from(BIN);
    let mut failures = Vec::new();
    for case in CASES {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (port, healthz) = (free_port(), free_port());
        let dropins = d.join("conf.d");
        std::fs::create_dir_all(&dropins).unwrap();
        std::fs::create_dir_all(d.join("manifests")).unwrap();
        for (name, body) in case.dropins {
            write(&dropins, name, &format!("{HEADER}{body}"));
        }
        write(
            &dropins,
            "zz-harness.conf",
            &harness_dropin(&env.endpoint, port, healthz),
        );
        let mut args = vec![format!("--config-dir={}", dropins.display())];
        if let Some(body) = case.config {
            let cfg = write(d, "kubelet.yaml", &format!("{HEADER}{body}"));
            args.push(format!("--config={}", cfg.display()));
        }
        args.extend(case.flags.iter().map(|f| f.to_string()));
        // The same --cert-dir for both (it is in /configz), emptied between the runs.
        let pki = d.join("pki");
        let run = |bin: &Path, who: &str| {
            let _ = std::fs::remove_dir_all(&pki);
            let root = d.join(format!("root-{who}"));
            let mut a = args.clone();
            a.push(format!("--root-dir={}", root.display()));
            a.push(format!("--cert-dir={}", pki.display()));
            let got = configz_of(bin, &a, port, d.join(format!("{who}.log")));
            // The upstream kubelet bind-mounts its root directory onto itself (rshared).
            unmount_under(&root);
            got
        };
        let u = run(&upstream, "upstream");
        let o = run(&ours, "kubelet-rs");
        match (u, o) {
            (Ok((u, u_log)), Ok((o, o_log))) => {
                for msg in case.logged {
                    for (who, log) in [("upstream", &u_log), ("kubelet-rs", &o_log)] {
                        if !log.contains(msg) {
                            failures.push(format!("{}: {who} did not log {msg}", case.name));
                        }
                    }
                }
                let mut leaves = BTreeMap::new();
                flatten("", &u, &mut leaves);
                assert!(
                    leaves.len() > 60 && leaves.contains_key("port"),
                    "{}: upstream's /configz looks empty: {u}",
                    case.name
                );
                let d = diff(&u, &o);
                if !d.is_empty() {
                    failures.push(format!("{}:\n  {}", case.name, d.join("\n  ")));
                }
            }
            (u, o) => failures.push(format!(
                "{}: upstream {:?}\nkubelet-rs {:?}",
                case.name,
                u.err(),
                o.err()
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "/configz differs from the upstream kubelet's:\n{}",
        failures.join("\n")
    );
}

#[test]
fn diff_names_every_differing_field() {
    let u = serde_json::json!({"a": 1, "b": {"c": [1, 2]}, "e": false});
    let o = serde_json::json!({"a": 1, "b": {"c": [1, 3]}, "kind": "K"});
    assert_eq!(
        diff(&u, &o),
        vec![
            "b.c[1]: upstream 2 / kubelet-rs 3",
            "e: upstream false / kubelet-rs (absent)",
            "kind: upstream (absent) / kubelet-rs \"K\"",
        ]
    );
}
