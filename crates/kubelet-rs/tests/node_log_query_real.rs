//! The node log query on a real kubelet-rs (`enableSystemLogQuery` with the `NodeLogQuery`
//! gate): a standalone node on the real containerd of `hack/runtime-up.sh` starts with the
//! setting (no longer refused), and `/logs/?query=` answers on the secure port with this
//! machine's `journalctl` and `/var/log/` as upstream's `kubelet_server_journal.go` does:
//! a unit the journal does not list is looked for as `/var/log/<name>.log`, parameter and
//! validation errors are 400 / 406. Run under the shared runtime lock
//! (`flock /var/lib/kubelet-rs-test/dev-runtime.lock`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::node::{Node, runtime_lock};

/// `(status, body)` of `GET https://127.0.0.1:<port><path>`.
fn get(port: u16, path: &str) -> (String, Vec<u8>) {
    let out = Command::new("curl")
        .args(["-s", "-k", "--max-time", "60", "-w", "\n%{http_code}"])
        .arg(format!("https://127.0.0.1:{port}{path}"))
        .output()
        .unwrap();
    let mut body = out.stdout;
    let nl = body.iter().rposition(|b| *b == b'\n').unwrap();
    let status = String::from_utf8_lossy(&body[nl + 1..]).into_owned();
    body.truncate(nl);
    (status, body)
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn node_log_query_answers_from_the_journal_or_var_log() {
    let _g = runtime_lock().await;
    let mut node = Node::with_config(
        "rt-logquery",
        "enableSystemLogQuery: true\nfeatureGates:\n  NodeLogQuery: true\n",
    )
    .await;
    node.start().await;
    let port = node.secure_port;
    // A name the journal does not list (this machine's journal has no units at all, or not
    // this one): the file heuristics find `/var/log/<name>.log`.
    let name = ["dpkg", "alternatives"]
        .into_iter()
        .find(|n| std::path::Path::new(&format!("/var/log/{n}.log")).is_file())
        .expect("no /var/log/dpkg.log or /var/log/alternatives.log on this machine");
    let units = Command::new("journalctl")
        .args(["--field", "_SYSTEMD_UNIT"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(!units.contains(&format!("{name}.service")), "{units}");
    let want = std::fs::read(format!("/var/log/{name}.log")).unwrap();
    let (status, body) = get(port, &format!("/logs/?query={name}"));
    assert_eq!(status, "200", "{}", String::from_utf8_lossy(&body));
    assert_eq!(body, want, "/logs/?query={name}");
    let (status, body) = get(port, "/logs/?query=krs-no-such-service");
    assert_eq!(
        (status.as_str(), String::from_utf8_lossy(&body).as_ref()),
        ("200", "\nlog not found for krs-no-such-service\n")
    );
    let (status, body) = get(port, &format!("/logs/?query={name}&tailLines=1"));
    assert_eq!(
        (status.as_str(), String::from_utf8_lossy(&body).into_owned()),
        (
            "200",
            format!(
                "\noptions present and query resolved to log files for [{name}]\ntry without specifying options\n"
            )
        )
    );
    for (path, want_status, want_body) in [
        (
            "/logs/?query=x&sinceTime=yesterday",
            "400",
            "sinceTime: Invalid value: \"yesterday\": invalid time format\n",
        ),
        (
            "/logs/?query=x%3By",
            "406",
            "query: Invalid value: \"x;y\": input contains unsupported characters\n",
        ),
        (
            "/logs/README?query=x",
            "406",
            "path not allowed in query mode\n",
        ),
    ] {
        let (status, body) = get(port, path);
        assert_eq!(
            (status.as_str(), String::from_utf8_lossy(&body).as_ref()),
            (want_status, want_body),
            "{path}"
        );
    }
    node.cleanup().await;
}
