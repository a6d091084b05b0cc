//! Process-level tests of the real binary: start-up contract, healthz, signals, lock file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use nix::sys::signal::Signal;

const START: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread")]
async fn healthz_answers_and_sigterm_exits_cleanly() {
    let FakeSetup {
        dir,
        cri: _cri,
        port,
        cfg,
        ..
    } = fake_setup("").await;
    let notify = dir.path().join("notify.sock");
    let sock = std::os::unix::net::UnixDatagram::bind(&notify).unwrap();
    sock.set_read_timeout(Some(START)).unwrap();
    let log = dir.path().join("p.log");
    let child = std::process::Command::new(BIN)
        .args([
            "--config",
            cfg.to_str().unwrap(),
            "--root-dir",
            dir.path().to_str().unwrap(),
        ])
        .env("NOTIFY_SOCKET", &notify)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut buf = [0u8; 256];
    let n = sock.recv(&mut buf).expect("READY=1 on NOTIFY_SOCKET");
    assert_eq!(&buf[..n], b"READY=1\n");
    // READY=1 comes after healthz is up.
    assert_eq!(http_get(port, "/healthz"), Some((200, "ok".to_string())));
    assert_eq!(
        http_get(port, "/healthz/ping"),
        Some((200, "ok".to_string()))
    );
    assert_eq!(http_get(port, "/pods").map(|r| r.0), Some(404));
    let mut p = Proc { child, log };
    p.signal(Signal::SIGTERM);
    let code = p.wait_exit(Duration::from_secs(2)).await;
    assert_eq!(code, Some(0), "log:\n{}", p.log());
    assert!(http_get(port, "/healthz").is_none(), "healthz must be gone");
}

/// The open-files limit is the hard one, as the Go runtime gives the upstream kubelet before
/// its own `SetNumFiles(maxOpenFiles)` (which this unprivileged host refuses): started with a
/// soft limit of 256, the kubelet runs with soft = hard.
#[tokio::test(flavor = "multi_thread")]
async fn open_files_soft_limit_is_raised_to_the_hard_one() {
    use std::os::unix::process::CommandExt;
    let FakeSetup {
        dir,
        cri: _cri,
        port,
        cfg,
        ..
    } = fake_setup("").await;
    let log = dir.path().join("k.log");
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["--config", cfg.to_str().unwrap()])
        .stderr(std::fs::File::create(&log).unwrap());
    // SAFETY: only `setrlimit`, async-signal-safe, between fork and exec.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(|| {
            let (_, hard) =
                nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)?;
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, 256, hard)?;
            Ok(())
        });
    }
    let mut p = Proc {
        child: cmd.spawn().unwrap(),
        log,
    };
    assert!(wait_healthy(&mut p, port, START).await, "log:\n{}", p.log());
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", p.child.id())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let v: Vec<&str> = line.split_whitespace().collect();
    let (soft, hard) = (v[3], v[4]);
    assert_eq!(soft, hard, "{line}");
    assert_ne!(soft, "256", "{line}");
}

/// A signal while the kubelet starts (here: stuck at CRI pre-init on a runtime that accepts
/// the connection and never answers) ends the start and exits 0, neither killed by the
/// default action of SIGTERM nor waiting for the runtime's timeout.
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_while_starting_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let sock = dir.path().join("silent.sock");
    let listener = tokio::net::UnixListener::bind(&sock).unwrap();
    let cfg = write(
        dir.path(),
        "kubelet.yaml",
        &standalone_config(
            &format!("unix://{}", sock.display()),
            port,
            "runtimeRequestTimeout: 5m\n",
        ),
    );
    let mut p = Proc::spawn(dir.path(), "k", &["--config", cfg.to_str().unwrap()]);
    let (_conn, _) = tokio::time::timeout(START, listener.accept())
        .await
        .expect("the kubelet reaches CRI pre-init")
        .unwrap();
    p.signal(Signal::SIGTERM);
    let code = p.wait_exit(Duration::from_secs(2)).await;
    assert_eq!(code, Some(0), "log:\n{}", p.log());
    assert!(
        p.log().contains("Received a signal while starting"),
        "log:\n{}",
        p.log()
    );
    assert!(http_get(port, "/healthz").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_exits_cleanly() {
    let FakeSetup {
        dir,
        cri: _cri,
        port,
        cfg,
        ..
    } = fake_setup("").await;
    let mut p = Proc::spawn(dir.path(), "k", &["--config", cfg.to_str().unwrap()]);
    assert!(wait_healthy(&mut p, port, START).await, "log:\n{}", p.log());
    p.signal(Signal::SIGINT);
    assert_eq!(
        p.wait_exit(Duration::from_secs(2)).await,
        Some(0),
        "log:\n{}",
        p.log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_config_exits_1_naming_every_field_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let lock = dir.path().join("kubelet.lock");
    let cfg = write(
        dir.path(),
        "kubelet.yaml",
        &standalone_config(
            "unix:///nonexistent.sock",
            port,
            "oomScoreAdj: 5000\nimageGCHighThresholdPercent: 50\nimageGCLowThresholdPercent: 60\nnodeLeaseDurationSeconds: -1\nhairpinMode: sideways\n",
        ),
    );
    let mut p = Proc::spawn(
        dir.path(),
        "k",
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--lock-file",
            lock.to_str().unwrap(),
        ],
    );
    assert_eq!(p.wait_exit(START).await, Some(1));
    let log = p.log();
    for needle in [
        "oomScoreAdj (--oom-score-adj)",
        "imageGCLowThresholdPercent (--image-gc-low-threshold)",
        "nodeLeaseDurationSeconds",
        "hairpinMode (--hairpin-mode)",
    ] {
        assert!(log.contains(needle), "missing {needle:?} in:\n{log}");
    }
    assert!(
        !lock.exists(),
        "nothing may be written before validation passes"
    );
    assert!(http_get(port, "/healthz").is_none(), "nothing may be bound");
}

#[tokio::test(flavor = "multi_thread")]
async fn runtime_socket_absent_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let missing = format!("unix://{}/missing.sock", dir.path().display());
    let cfg = write(
        dir.path(),
        "kubelet.yaml",
        &standalone_config(&missing, port, "runtimeRequestTimeout: 2s\n"),
    );
    let mut p = Proc::spawn(dir.path(), "k", &["--config", cfg.to_str().unwrap()]);
    assert_eq!(p.wait_exit(START).await, Some(1));
    let log = p.log();
    assert!(
        log.contains(&missing),
        "error must name the endpoint:\n{log}"
    );
    assert!(http_get(port, "/healthz").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn lock_contention_makes_the_first_instance_exit() {
    let dir = tempfile::tempdir().unwrap();
    let cri = kubelet_cri::fake::serve_fake(&dir.path().join("cri.sock"))
        .await
        .unwrap();
    let lock = dir.path().join("kubelet.lock");
    let (p1, p2) = (free_port(), free_port());
    let c1 = write(
        dir.path(),
        "a.yaml",
        &standalone_config(&cri.endpoint(), p1, ""),
    );
    let c2 = write(
        dir.path(),
        "b.yaml",
        &standalone_config(&cri.endpoint(), p2, ""),
    );
    let args = |c: &std::path::Path| {
        vec![
            "--config".to_string(),
            c.to_str().unwrap().to_string(),
            "--lock-file".to_string(),
            lock.to_str().unwrap().to_string(),
            "--exit-on-lock-contention".to_string(),
        ]
    };
    let a1 = args(&c1);
    let mut first = Proc::spawn(
        dir.path(),
        "first",
        &a1.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert!(
        wait_healthy(&mut first, p1, START).await,
        "log:\n{}",
        first.log()
    );
    let a2 = args(&c2);
    let mut second = Proc::spawn(
        dir.path(),
        "second",
        &a2.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(
        first.wait_exit(START).await,
        Some(0),
        "first must exit on contention:\n{}",
        first.log()
    );
    assert!(
        wait_healthy(&mut second, p2, START).await,
        "second must take over:\n{}",
        second.log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_on_lock_contention_without_lock_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "k.yaml",
        &standalone_config("unix:///x.sock", free_port(), ""),
    );
    let mut p = Proc::spawn(
        dir.path(),
        "k",
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--exit-on-lock-contention",
        ],
    );
    assert_eq!(p.wait_exit(START).await, Some(1));
    assert!(
        p.log()
            .contains("cannot exit on lock file contention: no lock file specified"),
        "{}",
        p.log()
    );
}

#[test]
fn version_help_and_positional_args() {
    let out = std::process::Command::new(BIN)
        .arg("--version")
        .output()
        .unwrap();
    let v = String::from_utf8(out.stdout).unwrap();
    assert!(v.starts_with("Kubernetes v1.35.4+kubelet-rs."), "{v}");
    let out = std::process::Command::new(BIN)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--config string",
        "--kubeconfig string",
        "--print-config",
        "--feature-gates",
    ] {
        assert!(help.contains(flag), "help lacks {flag}");
    }
    let out = std::process::Command::new(BIN).arg("run").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown command run"));
    let out = std::process::Command::new(BIN)
        .arg("--no-such-flag")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-flag"));
    // Removed upstream by 1.35: refused like any unknown flag, as the upstream kubelet
    // does: one klog error line (cli.Run's `klog.ErrorS(err, "command failed")`, the
    // logs being initialised before RunE), no usage, exit 1.
    let out = std::process::Command::new(BIN)
        .arg("--pod-infra-container-image=registry.k8s.io/pause:3.10")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with('E'), "{err}");
    assert!(
        err.ends_with(
            "] \"command failed\" err=\"failed to parse kubelet flag: unknown flag: --pod-infra-container-image\"\n"
        ),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_missing_kubeconfig_stops_the_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "k.yaml",
        &standalone_config("unix:///x.sock", free_port(), ""),
    );
    let missing = dir.path().join("kubelet.conf");
    let out = std::process::Command::new(BIN)
        .args([
            "--config",
            cfg.to_str().unwrap(),
            "--kubeconfig",
            missing.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("invalid kubeconfig: {}", missing.display())),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn evented_pleg_uses_the_cri_event_stream_when_enabled() {
    let FakeSetup {
        dir,
        cri,
        port,
        cfg,
        ..
    } = fake_setup("featureGates:\n  EventedPLEG: true\n").await;
    let mut p = Proc::spawn(dir.path(), "k", &["--config", cfg.to_str().unwrap()]);
    assert!(wait_healthy(&mut p, port, START).await, "log:\n{}", p.log());
    let start = std::time::Instant::now();
    while !p.log().contains("Using the CRI container event stream") {
        assert!(
            start.elapsed() < START,
            "evented PLEG not started:\n{}",
            p.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        cri.runtime
            .called()
            .iter()
            .any(|c| c == "GetContainerEvents"),
        "{:?}",
        cri.runtime.called()
    );
}

/// The memory manager's `NewManager` refuses what upstream's refuses, before anything
/// starts: a `reservedMemory` that does not add up to the node allocatable reservation
/// (here the 100Mi hard eviction threshold), a NUMA node the machine does not have, an
/// unknown policy.
#[tokio::test(flavor = "multi_thread")]
async fn memory_manager_configurations_upstream_refuses_stop_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let cri = kubelet_cri::fake::serve_fake(&dir.path().join("cri.sock"))
        .await
        .unwrap();
    for (extra, needle) in [
        (
            "memoryManagerPolicy: Static\n",
            // (the log quotes the error: its quotes are escaped)
            r#"the total amount \"0\" of type \"memory\" is not equal to the value \"100Mi\" determined by Node Allocatable feature"#,
        ),
        (
            "memoryManagerPolicy: Static\nreservedMemory:\n- numaNode: 63\n  limits:\n    memory: 100Mi\n",
            "the reserved memory configuration references a NUMA node 63 that does not exist on this machine",
        ),
        (
            "memoryManagerPolicy: Fancy\n",
            r#"unknown policy: \"Fancy\""#,
        ),
    ] {
        let port = free_port();
        let cfg = write(
            dir.path(),
            "k.yaml",
            &standalone_config(&cri.endpoint(), port, extra),
        );
        let mut p = Proc::spawn(dir.path(), "k", &["--config", cfg.to_str().unwrap()]);
        assert_eq!(p.wait_exit(START).await, Some(1), "{}", p.log());
        assert!(p.log().contains(needle), "{needle} in:\n{}", p.log());
        assert!(http_get(port, "/healthz").is_none());
        assert!(!dir.path().join("memory_manager_state").exists());
    }
}

/// The CPU manager's `NewManager` refuses what upstream's refuses, before anything starts:
/// the static policy without reserved CPUs, options with the `none` policy.
#[tokio::test(flavor = "multi_thread")]
async fn cpu_manager_configurations_upstream_refuses_stop_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let cri = kubelet_cri::fake::serve_fake(&dir.path().join("cri.sock"))
        .await
        .unwrap();
    for (extra, needle) in [
        (
            "cpuManagerPolicy: static\n",
            "[cpumanager] unable to determine reserved CPU resources for static policy",
        ),
        (
            "cpuManagerPolicyOptions:\n  full-pcpus-only: \"true\"\n",
            "new none policy error: None policy: received unsupported options=map[full-pcpus-only:true]",
        ),
    ] {
        let port = free_port();
        let cfg = write(
            dir.path(),
            "k.yaml",
            &standalone_config(&cri.endpoint(), port, extra),
        );
        let mut p = Proc::spawn(dir.path(), "k", &["--config", cfg.to_str().unwrap()]);
        assert_eq!(p.wait_exit(START).await, Some(1), "{}", p.log());
        assert!(p.log().contains(needle), "{needle} in:\n{}", p.log());
        assert!(http_get(port, "/healthz").is_none());
    }
}

/// The topology manager's `NewManager` refuses what upstream's refuses (unknown or bad
/// policy options), before anything starts; `--print-config` refuses them too. An
/// aligning policy with its options starts.
#[tokio::test(flavor = "multi_thread")]
async fn topology_manager_configurations_upstream_refuses_stop_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let cri = kubelet_cri::fake::serve_fake(&dir.path().join("cri.sock"))
        .await
        .unwrap();
    for (extra, needle) in [
        (
            "topologyManagerPolicy: best-effort\ntopologyManagerPolicyOptions:\n  foo: bar\n",
            // (klog quotes the error: its quotes are escaped in the log)
            "unknown Topology Manager Policy option: \\\"foo\\\"",
        ),
        (
            "topologyManagerPolicy: single-numa-node\ntopologyManagerPolicyOptions:\n  max-allowable-numa-nodes: \"2\"\n",
            "the minimum value of \\\"max-allowable-numa-nodes\\\" should not be less than 8",
        ),
    ] {
        let port = free_port();
        let cfg = write(
            dir.path(),
            "k.yaml",
            &standalone_config(&cri.endpoint(), port, extra),
        );
        let mut p = Proc::spawn(dir.path(), "k", &["--config", cfg.to_str().unwrap()]);
        assert_eq!(p.wait_exit(START).await, Some(1), "{}", p.log());
        assert!(p.log().contains(needle), "{needle} in:\n{}", p.log());
        assert!(http_get(port, "/healthz").is_none());
        let mut p = Proc::spawn(
            dir.path(),
            "print",
            &["--config", cfg.to_str().unwrap(), "--print-config"],
        );
        assert_eq!(p.wait_exit(START).await, Some(1), "{}", p.log());
        assert!(p.log().contains(needle), "{needle} in:\n{}", p.log());
    }
    let FakeSetup {
        dir,
        cri: _cri,
        port,
        cfg,
        ..
    } = fake_setup(
        "topologyManagerPolicy: restricted\ntopologyManagerScope: pod\ntopologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: \"true\"\n",
    )
    .await;
    let mut p = Proc::spawn(dir.path(), "k", &["--config", cfg.to_str().unwrap()]);
    assert!(wait_healthy(&mut p, port, START).await, "log:\n{}", p.log());
    p.signal(Signal::SIGTERM);
    assert_eq!(p.wait_exit(Duration::from_secs(2)).await, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn secure_server_serves_configz_equal_to_print_config() {
    let FakeSetup {
        dir,
        cri: _cri,
        port: hz,
        secure_port: port,
        cfg,
    } = fake_setup("maxPods: 42\n").await;
    let certs = dir.path().join("pki");
    let args = [
        "--config",
        cfg.to_str().unwrap(),
        "--cert-dir",
        certs.to_str().unwrap(),
        "--hostname-override",
        "secure-node",
    ];
    let mut p = Proc::spawn(dir.path(), "k", &args);
    assert!(wait_healthy(&mut p, hz, START).await, "log:\n{}", p.log());
    let (status, body) = common::tls::https_get(port, "/configz", &certs.join("kubelet.crt")).await;
    assert_eq!(status, 200, "{body}");
    let served: serde_json::Value = serde_json::from_str(&body).unwrap();
    let out = std::process::Command::new(BIN)
        .arg("--print-config")
        .args(args)
        .output()
        .unwrap();
    let mut printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // `--print-config` adds kind/apiVersion; upstream's /configz has neither.
    let printed_map = printed.as_object_mut().unwrap();
    assert_eq!(printed_map.remove("kind").unwrap(), "KubeletConfiguration");
    assert!(printed_map.remove("apiVersion").is_some());
    assert!(served["kubeletconfig"].get("kind").is_none());
    assert_eq!(
        served["kubeletconfig"], printed,
        "/configz must serve what --print-config prints"
    );
    assert_eq!(
        printed["tlsCertFile"],
        certs.join("kubelet.crt").to_str().unwrap()
    );
    assert_eq!(printed["maxPods"], 42);
    let (status, body) = common::tls::https_get(port, "/pods", &certs.join("kubelet.crt")).await;
    assert_eq!(status, 200);
    assert!(body.contains("\"kind\":\"PodList\""), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn start_refuses_what_print_config_refuses_before_writing_or_binding() {
    let dir = tempfile::tempdir().unwrap();
    let cri = kubelet_cri::fake::serve_fake(&dir.path().join("cri.sock"))
        .await
        .unwrap();
    let lock = dir.path().join("kubelet.lock");
    let certs = dir.path().join("pki");
    for (extra, needle) in UNSTARTABLE {
        let port = free_port();
        let cfg = write(
            dir.path(),
            "k.yaml",
            &standalone_config(&cri.endpoint(), port, extra),
        );
        let mut p = Proc::spawn(
            dir.path(),
            "k",
            &[
                "--config",
                cfg.to_str().unwrap(),
                "--lock-file",
                lock.to_str().unwrap(),
                "--cert-dir",
                certs.to_str().unwrap(),
            ],
        );
        assert_eq!(p.wait_exit(START).await, Some(1), "{extra}: {}", p.log());
        assert!(
            p.log().contains(needle),
            "{extra}: {needle:?} in:\n{}",
            p.log()
        );
        assert!(http_get(port, "/healthz").is_none());
        assert!(!lock.exists(), "{extra}: the lock file was written");
        assert!(!certs.exists(), "{extra}: the serving pair was written");
    }
    assert!(
        cri.runtime.called().is_empty(),
        "the runtime was called: {:?}",
        cri.runtime.called()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_node_ip_starts_with_upstreams_warning() {
    let FakeSetup {
        dir,
        cri: _cri,
        port,
        cfg,
        ..
    } = fake_setup("").await;
    let mut p = Proc::spawn(
        dir.path(),
        "k",
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--node-ip=garbage",
            "--cert-dir",
            dir.path().join("pki").to_str().unwrap(),
        ],
    );
    assert!(wait_healthy(&mut p, port, START).await, "log:\n{}", p.log());
    let log = p.log();
    let line = log
        .lines()
        .find(|l| l.contains("Could not parse some node IP(s), ignoring them"))
        .unwrap_or_else(|| panic!("no warning in:\n{log}"));
    assert!(line.starts_with('W'), "{line}");
    assert!(line.contains("IPs=\"[garbage]\""), "{line}");
}

/// The systemd cgroup driver on a host where systemd is not running (this harness's: no
/// `/run/systemd/system`): the start fails where upstream's does (the container manager's
/// first slice, libcontainer's "systemd not running on this host, cannot use systemd
/// cgroups manager") with a message naming `cgroupDriver` and where the driver came from —
/// configured, or reported by the runtime over CRI (which overrides the configuration).
/// Nothing is served.
#[tokio::test(flavor = "multi_thread")]
async fn systemd_cgroup_driver_without_systemd_is_refused_naming_cgroup_driver() {
    assert!(
        !std::path::Path::new("/run/systemd/system").is_dir(),
        "this test needs a host where systemd is not running (no /run/systemd/system)"
    );
    let dir = tempfile::tempdir().unwrap();
    let cri = kubelet_cri::fake::serve_fake(&dir.path().join("cri.sock"))
        .await
        .unwrap();
    use kubelet_cri::v1::CgroupDriver;
    for (reported, configured, needle) in [
        (
            None,
            "systemd",
            // (klog quotes the message: the driver's quotes are escaped)
            "cgroupDriver (--cgroup-driver) is \\\"systemd\\\", but",
        ),
        (
            Some(CgroupDriver::Systemd),
            "cgroupfs",
            "the container runtime reports the systemd cgroup driver (CRI RuntimeConfig), which overrides cgroupDriver (--cgroup-driver)",
        ),
    ] {
        cri.runtime.set_cgroup_driver(reported);
        let port = free_port();
        let config = standalone_config(
            &cri.endpoint(),
            port,
            &format!("cgroupDriver: {configured}\n"),
        )
        .replace("cgroupsPerQOS: false\n", "cgroupsPerQOS: true\n");
        let cfg = write(dir.path(), "k.yaml", &config);
        let mut p = Proc::spawn(dir.path(), "k", &["--config", cfg.to_str().unwrap()]);
        assert_eq!(p.wait_exit(START).await, Some(1), "{}", p.log());
        let log = p.log();
        for want in [
            "Failed to start ContainerManager: systemd not running on this host, cannot use systemd cgroups manager",
            needle,
            "/run/systemd/system does not exist",
        ] {
            assert!(log.contains(want), "{want:?} in:\n{log}");
        }
        assert!(http_get(port, "/healthz").is_none());
    }
}

/// `kubeletCgroups`: the container manager's start moves the kubelet into that cgroup
/// (created in every hierarchy but `devices`, as libcontainer's fs manager does), and
/// `systemCgroups: /` stops the start with upstream's message. (`systemCgroups` itself
/// would move every process of the machine's root cgroup: proven on the fake host in
/// `kubelet_cm::system_containers`.)
#[tokio::test(flavor = "multi_thread")]
async fn kubelet_cgroups_hold_the_kubelet_and_system_cgroups_may_not_be_the_root() {
    const CG: &str = "krs-t-kubelet-cgroups";
    remove_cgroup_root(CG);
    let FakeSetup {
        dir,
        cri: _cri,
        port,
        cfg,
        ..
    } = fake_setup(&format!("kubeletCgroups: /{CG}\n")).await;
    let mut p = Proc::spawn(dir.path(), "k", &["--config", cfg.to_str().unwrap()]);
    assert!(wait_healthy(&mut p, port, START).await, "{}", p.log());
    let pid = p.child.id();
    let mut table = String::new();
    for _ in 0..100 {
        table = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
        if table.lines().any(|l| l.ends_with(&format!(":/{CG}")))
            || p.log().contains("Failed to ensure state")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    p.signal(Signal::SIGTERM);
    assert_eq!(
        p.wait_exit(Duration::from_secs(5)).await,
        Some(0),
        "{}",
        p.log()
    );
    remove_cgroup_root(CG);
    let cgroup_of = |controller: &str| {
        table.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, c, path) = (f.next()?, f.next()?, f.next()?);
            let hit = if controller.is_empty() {
                c.is_empty()
            } else {
                c.split(',').any(|c| c == controller)
            };
            hit.then(|| path.to_string())
        })
    };
    if std::fs::read_link("/proc/1/ns/pid").is_err() {
        // Where init's pid namespace cannot be read (this VM's sandbox denies it even to
        // root), upstream's `isProcessRunningInHost` fails and it moves nothing, "on the
        // side of caution": the same here.
        let log = p.log();
        assert!(
            log.contains("Failed to ensure state")
                && log.contains("failed to find pid namespace of init process"),
            "{log}"
        );
        assert_eq!(
            cgroup_of("memory").as_deref().map(|c| c.ends_with(CG)),
            Some(false)
        );
    } else {
        let unified = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
        let controllers: &[&str] = if unified {
            &[""]
        } else {
            &["cpu", "memory", "pids"]
        };
        for c in controllers {
            assert_eq!(
                cgroup_of(c).as_deref(),
                Some(format!("/{CG}").as_str()),
                "{c:?} in {table}\n{}",
                p.log()
            );
        }
        if !unified {
            assert_ne!(
                cgroup_of("devices").as_deref(),
                Some(format!("/{CG}").as_str()),
                "devices is skipped: {table}"
            );
        }
    }

    let FakeSetup {
        dir,
        cri: _cri,
        port,
        cfg,
        ..
    } = fake_setup("systemCgroups: /\ncgroupRoot: /\n").await;
    let mut p = Proc::spawn(dir.path(), "k", &["--config", cfg.to_str().unwrap()]);
    assert_eq!(p.wait_exit(START).await, Some(1), "{}", p.log());
    assert!(
        p.log()
            .contains("Failed to start ContainerManager: system container cannot be root"),
        "{}",
        p.log()
    );
    assert!(http_get(port, "/healthz").is_none());
}
