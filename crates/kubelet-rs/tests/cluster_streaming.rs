//! The kubelet API's logs and streaming endpoints through the real control plane
//! (`hack/cluster-up.sh`), on a kubelet-rs node with its own containerd
//! (`hack/kubelet-rs-node-up.sh`), as users reach them: `kubectl logs` (`--tail`,
//! `--timestamps`, `--previous`, `-f`, `--limit-bytes`), `kubectl exec` with stdin and exit
//! codes, `kubectl exec -it` with a terminal, `kubectl attach`, `kubectl port-forward` with an
//! HTTP request through it, and the node proxy for
//! `/runningpods/` and `/run`. The API server reaches the kubelet with its kubelet client
//! certificate, authorized by the node's Webhook authorizer (`system:kubelet-api-admin`);
//! kubectl 1.35 speaks WebSocket to the API server, which speaks SPDY to the kubelet, which
//! proxies it to containerd's streaming server.
//!
//! Node `krs-t-server-rs` (198.18.255.61), namespace `t-server-stream`. Built as ignored with
//! `KRS_SKIP_CLUSTER_TESTS=1` or `KRS_SKIP_RUNTIME_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use kubelet_e2e::cluster::{self, Cluster, NodeKubelet, NodeSpec};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const NODE: &str = "krs-t-server-rs";
const NODE_IP: &str = "198.18.255.61";
const NS: &str = "t-server-stream";
const TAINT_KEY: &str = "kubelet-rs.test/server";
const BUSYBOX: &str = "docker.io/library/busybox:1.36";

fn wait_for<T>(
    what: &str,
    secs: u64,
    mut f: impl FnMut() -> Result<Option<T>, Box<dyn std::error::Error>>,
) -> Result<T, Box<dyn std::error::Error>> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f()? {
            return Ok(v);
        }
        if Instant::now() >= deadline {
            return Err(format!("timed out after {secs}s waiting for {what}").into());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn kubectl(c: &Cluster, args: &[&str]) -> Output {
    c.kubectl().args(args).output().unwrap()
}

fn ok_stdout(c: &Cluster, args: &[&str]) -> String {
    let out = kubectl(c, args);
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `main` serves HTTP on 8080 after writing to stdout, then stderr (a second later: the
/// runtime reads the two pipes separately, so only time orders them in the log); `crasher`
/// prints and exits 1 every run (so it has a previous instance).
fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {
            "nodeName": NODE,
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 1,
            "tolerations": [
                {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
            ],
            "containers": [
                {
                    "name": "main",
                    "image": BUSYBOX,
                    "command": ["sh", "-c",
                        "mkdir -p /www && echo hello-from-httpd > /www/index.html; \
                         echo line-one; echo line-two; sleep 1; echo to-stderr >&2; \
                         exec httpd -f -p 8080 -h /www"],
                },
                {
                    "name": "ticker",
                    "image": BUSYBOX,
                    "command": ["sh", "-c", "i=0; while true; do i=$((i+1)); echo tick $i; sleep 1; done"],
                },
                {
                    "name": "crasher",
                    "image": BUSYBOX,
                    "command": ["sh", "-c", "echo crash-output; sleep 3; exit 1"],
                },
            ],
        },
    })
}

struct Cleanup<'a> {
    c: &'a Cluster,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let _ = kubectl(
            self.c,
            &[
                "delete",
                "namespace",
                NS,
                "--ignore-not-found",
                "--wait",
                "--timeout=120s",
            ],
        );
    }
}

fn container_status(p: &Value, name: &str) -> Value {
    p["status"]["containerStatuses"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == name))
        .cloned()
        .unwrap_or(Value::Null)
}

/// `kubectl port-forward` on a free local port; returns the process and the port.
fn port_forward(c: &Cluster) -> (std::process::Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = c
        .kubectl()
        .args(["-n", NS, "port-forward", "pod/web", &format!("{port}:8080")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(
        line.starts_with("Forwarding from"),
        "port-forward said {line:?}"
    );
    // Keep reading: kubectl reports each connection on stdout and dies of SIGPIPE when
    // nobody reads it.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    (child, port)
}

fn http_get(port: u16) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    s.write_all(b"GET /index.html HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[test]
fn kubectl_logs_exec_and_port_forward_through_a_kubelet_rs_node() -> TestResult {
    let c = cluster::ensure()?;
    let mut spec = NodeSpec::new(
        NodeKubelet::KubeletRs(PathBuf::from(env!("CARGO_BIN_EXE_kubelet-rs"))),
        NODE,
        NODE_IP,
    );
    spec.taints = vec![format!("{TAINT_KEY}=:NoSchedule")];
    let node = c.start_node(spec)?;
    let _ = kubectl(
        &c,
        &[
            "delete",
            "namespace",
            NS,
            "--ignore-not-found",
            "--wait",
            "--timeout=120s",
        ],
    );
    ok_stdout(&c, &["create", "namespace", NS]);
    let cleanup = Cleanup { c: &c };
    let mut create = c
        .kubectl()
        .args(["-n", NS, "create", "-f", "-"])
        .stdin(Stdio::piped())
        .spawn()?;
    create
        .stdin
        .take()
        .unwrap()
        .write_all(pod().to_string().as_bytes())?;
    assert!(create.wait()?.success());

    wait_for("main running and crasher restarted", 180, || {
        let p: Value = serde_json::from_str(&ok_stdout(
            &c,
            &["-n", NS, "get", "pod", "web", "-o", "json"],
        ))?;
        let main = container_status(&p, "main");
        let crasher = container_status(&p, "crasher");
        Ok((main["state"]["running"].is_object()
            && crasher["restartCount"].as_i64().unwrap_or(0) >= 1)
            .then_some(()))
    })?;

    // kubectl logs, with its flags.
    let all = ok_stdout(&c, &["-n", NS, "logs", "web", "-c", "main"]);
    assert_eq!(all, "line-one\nline-two\nto-stderr\n");
    let tail = ok_stdout(&c, &["-n", NS, "logs", "web", "-c", "main", "--tail=1"]);
    assert_eq!(tail, "to-stderr\n");
    let limited = ok_stdout(
        &c,
        &["-n", NS, "logs", "web", "-c", "main", "--limit-bytes=6"],
    );
    assert_eq!(limited, "line-o");
    let stamped = ok_stdout(&c, &["-n", NS, "logs", "web", "-c", "main", "--timestamps"]);
    for line in stamped.lines() {
        let (ts, rest) = line.split_once(' ').unwrap();
        assert!(ts.parse::<jiff::Timestamp>().is_ok(), "{line}");
        assert!(
            ["line-one", "line-two", "to-stderr"].contains(&rest),
            "{line}"
        );
    }
    let previous = ok_stdout(
        &c,
        &["-n", NS, "logs", "web", "-c", "crasher", "--previous"],
    );
    assert_eq!(previous, "crash-output\n");
    let no_previous = kubectl(&c, &["-n", NS, "logs", "web", "-c", "main", "--previous"]);
    assert!(!no_previous.status.success());
    let err = String::from_utf8_lossy(&no_previous.stderr);
    assert!(
        err.contains(r#"previous terminated container "main" in pod "web" not found"#),
        "{err}"
    );
    // -f on a container that exits: the stream ends with it.
    let started = Instant::now();
    let followed = kubectl(&c, &["-n", NS, "logs", "-f", "web", "-c", "crasher"]);
    assert!(
        followed.status.success(),
        "{}",
        String::from_utf8_lossy(&followed.stderr)
    );
    assert!(String::from_utf8_lossy(&followed.stdout).contains("crash-output"));
    assert!(started.elapsed() < Duration::from_secs(60));

    // kubectl exec with stdin, and with an exit code.
    let mut exec = c
        .kubectl()
        .args(["-n", NS, "exec", "-i", "web", "-c", "main", "--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    exec.stdin
        .take()
        .unwrap()
        .write_all(b"hi through the kubelet\n")?;
    let out = exec.wait_with_output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hi through the kubelet\n"
    );
    let out = kubectl(
        &c,
        &[
            "-n",
            NS,
            "exec",
            "web",
            "-c",
            "main",
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2; exit 3",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("err"));

    // kubectl exec -it: a terminal inside (script(1) gives kubectl one outside).
    let line = format!(
        "{} --kubeconfig {} -n {NS} exec -it web -c main -- tty",
        c.bin("kubectl").display(),
        c.kubeconfig.display()
    );
    let tty = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .stdin(Stdio::piped())
        .output()?;
    let tty_out = String::from_utf8_lossy(&tty.stdout);
    assert!(
        tty.status.success(),
        "{tty_out} {}",
        String::from_utf8_lossy(&tty.stderr)
    );
    assert!(tty_out.contains("/dev/pts/"), "{tty_out}");

    // kubectl attach: the running container's output, as it comes.
    let mut attach = c
        .kubectl()
        .args(["-n", NS, "attach", "web", "-c", "ticker"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut attached = BufReader::new(attach.stdout.take().unwrap());
    let mut tick = String::new();
    attached.read_line(&mut tick)?;
    let _ = attach.kill();
    let _ = attach.wait();
    assert!(tick.starts_with("tick "), "{tick:?}");

    // kubectl port-forward, with a real request through it.
    let (mut pf, port) = port_forward(&c);
    let answer = http_get(port);
    let _ = pf.kill();
    let pf_out = pf.wait_with_output()?;
    let answer = answer.map_err(|e| {
        format!(
            "GET through port-forward: {e}; kubectl port-forward said: {}",
            String::from_utf8_lossy(&pf_out.stderr)
        )
    })?;
    assert!(
        answer.starts_with("HTTP/1.") && answer.contains("hello-from-httpd"),
        "{answer}"
    );

    // The node proxy: /runningpods/ and /run.
    let running: Value = serde_json::from_str(&ok_stdout(
        &c,
        &[
            "get",
            "--raw",
            &format!("/api/v1/nodes/{NODE}/proxy/runningpods/"),
        ],
    ))?;
    let names: Vec<&str> = running["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    assert!(names.contains(&"web"), "{running}");
    let ran = ok_stdout(
        &c,
        &[
            "create",
            "--raw",
            &format!("/api/v1/nodes/{NODE}/proxy/run/{NS}/web/main?cmd=echo%20ran"),
            "-f",
            "/dev/null",
        ],
    );
    assert_eq!(ran, "ran\n");

    drop(cleanup);
    node.stop()?;
    Ok(())
}
