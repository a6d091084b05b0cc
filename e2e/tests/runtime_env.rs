//! Proves the test runtime of `hack/runtime-up.sh`: containerd answers, the locally
//! built images are imported under every name, containers run, a second `up` is a
//! no-op, and the CNI network (bridge + host-local + portmap on 198.18.0.0/16) works.
//! CRI-level tests belong to the kubelet-cri crate; these use `ctr` and the CNI
//! plugins directly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use kubelet_e2e::runtime_env::{self, POD_SUBNET, RuntimeEnv};

/// The test runtime; a runtime that cannot be brought up or reached fails the test.
fn env() -> RuntimeEnv {
    runtime_env::ensure().unwrap_or_else(|e| panic!("{e}"))
}

fn unique(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

/// Run to completion; panic with the whole output when it fails.
fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout_of(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&run(cmd).stdout).into_owned()
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[test]
fn containerd_answers_on_the_private_socket() {
    let env = env();
    assert!(env.socket.starts_with(&env.state_dir), "{env:?}");
    assert_eq!(env.endpoint, format!("unix://{}", env.socket.display()));
    let version = stdout_of(env.ctr().arg("version"));
    assert!(version.contains("Server:"), "{version}");
    let plugins = stdout_of(env.ctr().args(["plugins", "ls"]));
    let cri_ok = plugins.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.first() == Some(&"io.containerd.grpc.v1")
            && f.get(1) == Some(&"cri")
            && f.last() == Some(&"ok")
    });
    assert!(cri_ok, "CRI plugin not ok:\n{plugins}");
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[test]
fn images_are_present_under_every_name() {
    let env = env();
    let listing = stdout_of(env.ctr().args(["images", "ls"]));
    let digest_of = |name: &str| {
        listing
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.first() == Some(&name))
            .and_then(|f| f.get(2).map(|d| d.to_string()))
            .unwrap_or_else(|| panic!("{name} not in k8s.io images:\n{listing}"))
    };
    let pause = digest_of(&env.pause_image);
    assert_eq!(pause, digest_of("registry.k8s.io/pause:3.10.1"));
    let busybox = digest_of(&env.busybox_image);
    for alias in [
        "docker.io/library/busybox:latest",
        "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
    ] {
        assert_eq!(busybox, digest_of(alias), "{alias}");
    }
    assert_ne!(pause, busybox);
}

fn ctr_run(env: &RuntimeEnv, image: &str, args: &[&str]) -> Command {
    let mut cmd = env.ctr();
    cmd.args(["run", "--rm", "--snapshotter", &env.snapshotter, image])
        .arg(unique("krs-e2e"))
        .args(args);
    cmd
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[test]
fn busybox_container_runs_echo_hello() {
    let env = env();
    let out = stdout_of(&mut ctr_run(&env, &env.busybox_image, &["echo", "hello"]));
    assert_eq!(out, "hello\n");
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[test]
fn busybox_image_has_a_shell_applets_and_users() {
    let env = env();
    let script = "id -u nobody; id -g nobody; grep -c ^root: /etc/passwd; \
                  test -L /bin/sh && test -x /usr/bin/wget && echo applets";
    let out = stdout_of(&mut ctr_run(
        &env,
        &env.busybox_image,
        &["sh", "-c", script],
    ));
    assert_eq!(out, "65534\n65534\n1\napplets\n");
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[test]
fn pause_exits_zero_on_sigterm() {
    let env = env();
    let id = unique("krs-e2e-pause");
    let mut child = env
        .ctr()
        .args([
            "run",
            "--rm",
            "--snapshotter",
            &env.snapshotter,
            &env.pause_image,
            &id,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let tasks = stdout_of(env.ctr().args(["tasks", "ls"]));
        if tasks
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("RUNNING"))
        {
            break;
        }
        assert!(Instant::now() < deadline, "pause task never ran:\n{tasks}");
        std::thread::sleep(Duration::from_millis(50));
    }
    run(env.ctr().args(["tasks", "kill", "-s", "SIGTERM", &id]));
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "pause exited {status}: {stderr}");
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[test]
fn second_up_is_a_no_op_and_prints_the_endpoint() {
    let env = env();
    let started = Instant::now();
    let out = run(Command::new("bash").arg(runtime_env::up_script()));
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stdout.lines().last(),
        Some(format!("CONTAINER_RUNTIME_ENDPOINT={}", env.endpoint).as_str())
    );
    assert_eq!(runtime_env::parse_output(&stdout), Ok(env.clone()));
    for work in [
        "installing",
        "starting containerd",
        "building",
        "importing",
        "restarting",
    ] {
        assert!(
            !stderr.contains(work),
            "second up did work ({work}):\n{stderr}"
        );
    }
    assert!(
        elapsed < Duration::from_secs(10),
        "warm up took {elapsed:?}"
    );
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[test]
fn cni_conflist_is_valid_and_on_the_test_subnet() {
    let env = env();
    let text = std::fs::read_to_string(env.cni_conflist()).unwrap();
    let conf: serde_json::Value = serde_json::from_str(&text).unwrap();
    let plugins = conf["plugins"].as_array().unwrap();
    let types: Vec<&str> = plugins.iter().filter_map(|p| p["type"].as_str()).collect();
    assert_eq!(types, ["bridge", "portmap"]);
    let bridge = &plugins[0];
    assert_eq!(bridge["bridge"], runtime_env::CNI_BRIDGE);
    assert_eq!(bridge["isGateway"], true);
    assert_eq!(bridge["ipMasq"], false);
    assert_eq!(bridge["ipam"]["type"], "host-local");
    assert_eq!(
        bridge["ipam"]["ranges"],
        serde_json::json!([[{ "subnet": POD_SUBNET, "rangeStart": "198.18.0.2", "rangeEnd": "198.18.127.254" }]])
    );
    for route in bridge["ipam"]["routes"].as_array().unwrap() {
        assert_eq!(route["dst"], POD_SUBNET, "a route leaves the test subnet");
    }
    assert_eq!(plugins[1]["capabilities"]["portMappings"], true);
}

/// A network namespace wired with the runtime's CNI chain; torn down on drop.
struct CniPod {
    env: RuntimeEnv,
    netns: String,
    id: String,
    runtime_config: String,
    server: Option<Child>,
}

impl CniPod {
    fn cni(&self, command: &str) -> Output {
        let hack = runtime_env::repo_root().join("hack/lib");
        let script = format!(
            "set -euo pipefail; source {0}/runtime.sh; source {0}/runtime-cni.sh; \
             krs_cni_exec {command} {1} /var/run/netns/{2} '{3}'",
            hack.display(),
            self.id,
            self.netns,
            self.runtime_config
        );
        Command::new("bash")
            .args(["-c", &script])
            .env("KRS_RUNTIME_DIR", &self.env.state_dir)
            .output()
            .unwrap()
    }
}

impl Drop for CniPod {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
        let del = self.cni("DEL");
        if !del.status.success() {
            eprintln!("CNI DEL failed: {}", String::from_utf8_lossy(&del.stderr));
        }
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.netns])
            .status();
    }
}

fn http_get(addr: SocketAddr) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(b"GET / HTTP/1.0\r\n\r\n")?;
    let mut body = String::new();
    stream.read_to_string(&mut body)?;
    Ok(body)
}

fn http_get_retrying(addr: SocketAddr) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match http_get(addr) {
            Ok(body) => return body,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("GET http://{addr}/: {e}"),
        }
    }
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[test]
fn cni_bridge_and_portmap_carry_traffic_inside_the_test_subnet() {
    let env = env();
    let netns = unique("krs-e2e-cni");
    let host_port = 20000 + (std::process::id() % 10000) as u16;
    run(Command::new("ip").args(["netns", "add", &netns]));
    let mut pod = CniPod {
        env: env.clone(),
        id: netns.clone(),
        netns: netns.clone(),
        runtime_config: format!(
            r#"{{"portMappings":[{{"hostPort":{host_port},"containerPort":80,"protocol":"tcp"}}]}}"#
        ),
        server: None,
    };
    let add = pod.cni("ADD");
    assert!(
        add.status.success(),
        "CNI ADD: {}",
        String::from_utf8_lossy(&add.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&add.stdout).unwrap();
    let cidr = result["ips"][0]["address"].as_str().unwrap().to_string();
    assert!(
        cidr.starts_with("198.18.") && cidr.ends_with("/16"),
        "{cidr}"
    );
    let pod_ip = cidr.trim_end_matches("/16").to_string();
    let gateway = result["ips"][0]["gateway"].as_str().unwrap().to_string();

    let www: PathBuf = std::env::temp_dir().join(&netns);
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("index.html"), "hello from the pod\n").unwrap();
    pod.server = Some(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &netns,
                "/bin/busybox",
                "httpd",
                "-f",
                "-p",
                "80",
                "-h",
            ])
            .arg(&www)
            .spawn()
            .unwrap(),
    );

    let direct = http_get_retrying(format!("{pod_ip}:80").parse().unwrap());
    assert!(direct.contains("hello from the pod"), "{direct}");
    let mapped = http_get_retrying(format!("{gateway}:{host_port}").parse().unwrap());
    assert!(mapped.contains("hello from the pod"), "{mapped}");

    drop(pod);
    let _ = std::fs::remove_dir_all(&www);
    let nat = stdout_of(Command::new("iptables-save").args(["-t", "nat"]));
    assert!(!nat.contains(&netns), "portmap rules left behind:\n{nat}");
}
