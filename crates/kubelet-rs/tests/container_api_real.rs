//! The kubelet API's `/containerLogs`, `/run`, `/runningpods/` and `/exec` on the secure port
//! of a standalone kubelet-rs on the real containerd of `hack/runtime-up.sh`, read with curl
//! (anonymous, AlwaysAllow): the CRI log file as upstream serves it (a line longer than
//! containerd's 16 KiB record limit comes back joined), each log option, upstream's errors.
//! (stdout and stderr reach the log through separate pipes: only time orders them.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::node::{Node, busybox_pod, runtime_lock};

const T: Duration = Duration::from_secs(60);

/// `curl -sk -X method https://127.0.0.1:port/path`: (status, body).
async fn curl(port: u16, method: &str, path: &str) -> (u16, String) {
    let out = tokio::process::Command::new("curl")
        .args([
            "-sk",
            "--max-time",
            "30",
            "-w",
            "\n%{http_code}",
            "-X",
            method,
        ])
        .arg(format!("https://127.0.0.1:{port}{path}"))
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn container_logs_run_and_running_pods_on_the_secure_port() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-api").await;
    node.start().await;
    node.write_manifest(
        "talker.yaml",
        &busybox_pod(
            "talker",
            &node.busybox,
            "Always",
            "echo first; head -c 20000 /dev/zero | tr '\\0' x; echo; sleep 1; echo err >&2; sleep 3600",
        ),
    );
    node.wait_for("talker running", T, || async {
        node.running("talker").await.pop()
    })
    .await;
    let pod = format!("talker-{}", node.name);
    let logs = format!("/containerLogs/default/{pod}/main");
    let port = node.secure_port;
    let long = "x".repeat(20000);
    let all = node
        .wait_for("the whole log", T, || async {
            let (status, body) = curl(port, "GET", &logs).await;
            (status == 200 && body.ends_with("err\n")).then_some(body)
        })
        .await;
    assert_eq!(all, format!("first\n{long}\nerr\n"));
    assert_eq!(
        curl(port, "GET", &format!("{logs}?tailLines=1")).await,
        (200, "err\n".into())
    );
    assert_eq!(curl(port, "GET", &format!("{logs}?tail=all")).await.1, all);
    assert_eq!(
        curl(port, "GET", &format!("{logs}?limitBytes=3")).await,
        (200, "fir".into())
    );
    assert_eq!(
        curl(
            port,
            "GET",
            &format!("{logs}?sinceTime=2999-01-01T00:00:00Z")
        )
        .await,
        (200, String::new())
    );
    let (status, stamped) = curl(port, "GET", &format!("{logs}?timestamps=true")).await;
    assert_eq!(status, 200);
    let lines: Vec<&str> = stamped.lines().collect();
    assert_eq!(lines.len(), 3, "one prefix per line, the long one included");
    for (line, want) in lines.iter().zip(["first", long.as_str(), "err"]) {
        let (ts, rest) = line.split_once(' ').unwrap();
        assert!(ts.parse::<jiff::Timestamp>().is_ok(), "{ts}");
        assert_eq!(ts.len(), "2026-01-01T00:00:00.000000000Z".len(), "{ts}");
        assert_eq!(rest, want);
    }
    assert_eq!(
        curl(port, "GET", &format!("{logs}?previous=true")).await,
        (
            400,
            format!("previous terminated container \"main\" in pod \"{pod}\" not found")
        )
    );
    assert_eq!(
        curl(port, "GET", &format!("{logs}?tailLines=-1")).await,
        (422, r#"{"message": "Invalid request."}"#.into())
    );
    assert_eq!(
        curl(port, "GET", "/containerLogs/default/nobody/main").await,
        (404, "pod \"nobody\" does not exist".into())
    );
    assert_eq!(
        curl(port, "GET", &format!("/containerLogs/default/{pod}/other")).await,
        (
            404,
            format!("container \"other\" not found in pod \"{pod}\"")
        )
    );
    // /run: ExecSync in the container.
    assert_eq!(
        curl(
            port,
            "POST",
            &format!("/run/default/{pod}/main?cmd=echo%20ran")
        )
        .await,
        (200, "ran\n".into())
    );
    let (status, body) = curl(port, "POST", &format!("/run/default/{pod}/main?cmd=false")).await;
    assert_eq!(status, 500);
    assert!(body.contains("command 'false' exited with 1"), "{body}");
    // /runningpods/: the runtime's pods.
    let (status, body) = curl(port, "GET", "/runningpods/").await;
    assert_eq!(status, 200);
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    let talker = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["metadata"]["name"] == pod.as_str())
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(talker["spec"]["containers"][0]["name"], "main");
    // /exec asks containerd for a URL; a request that is no upgrade is refused by the proxy.
    assert_eq!(
        curl(
            port,
            "GET",
            &format!("/exec/default/{pod}/main?command=ls&output=1")
        )
        .await,
        (500, "Upgrade request required\n".into())
    );
    node.cleanup().await;
}
