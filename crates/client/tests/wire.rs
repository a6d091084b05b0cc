//! What the clients put on the wire, against servers in the test: client-go's user agent
//! and the bearer token on every client, the main client's token bucket (a plain-HTTP
//! server answering `/version`), and the heartbeat client's timeout
//! (`min(nodeStatusUpdateFrequency, nodeLeaseDurationSeconds)`), which ends a request to a
//! server that accepts TCP connections and stays silent, with tower's `Elapsed`.

#![allow(clippy::unwrap_used)]

use std::error::Error as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubelet_client::{FakeClock, KubeletClients};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const VERSION: &str = r#"{"major":"1","minor":"35","gitVersion":"v1.35.4","gitCommit":"x","gitTreeState":"clean","buildDate":"2026-01-01T00:00:00Z","goVersion":"go1.25","compiler":"gc","platform":"linux/amd64"}"#;

/// Serve `/version` over HTTP/1.1, recording each request head.
async fn serve(heads: Arc<Mutex<Vec<String>>>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let heads = heads.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                        buf.drain(..end + 4);
                        heads.lock().unwrap().push(head);
                        let reply = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                             Content-Length: {}\r\n\r\n{VERSION}",
                            VERSION.len()
                        );
                        if conn.write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                    match conn.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    port
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[tokio::test]
async fn user_agent_and_throttling_on_the_wire() {
    let heads = Arc::new(Mutex::new(Vec::new()));
    let port = serve(heads.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = token_kubeconfig(
        dir.path(),
        &format!("    server: http://127.0.0.1:{port}\n"),
    );
    let mut cfg = kubelet_config::new_kubelet_configuration();
    cfg.kube_api_qps = Some(10);
    cfg.kube_api_burst = 1;
    let clock = FakeClock::new();
    let clients = KubeletClients::build_with_clock(&kubeconfig, &cfg, Arc::new(clock.clone()))
        .await
        .unwrap();
    for _ in 0..4 {
        clients.main.apiserver_version().await.unwrap();
    }
    clients.event.apiserver_version().await.unwrap();
    clients.heartbeat.apiserver_version().await.unwrap();
    // One token of burst, then three waits of 1/10 s.
    assert_eq!(clock.sleeps(), vec![Duration::from_millis(100); 3]);

    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 6, "{heads:?}");
    let argv0 = std::env::args().next().unwrap();
    let command = std::path::Path::new(&argv0)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    let want =
        kubelet_client::default_user_agent(command, &kubelet_config::version::git_version(), "");
    // client-go cuts the version at its first `-`: ours, `v1.35.4+kubelet-rs.<v>`,
    // becomes `v1.35.4+kubelet`, as an upstream kubelet built with it would send.
    assert!(
        want.starts_with(&format!("{command}/v1.35.4+kubelet (")),
        "{want}"
    );
    assert!(want.ends_with(" kubernetes/unknown"), "{want}");
    for head in &heads {
        assert!(head.starts_with("GET /version"), "{head}");
        assert_eq!(header(head, "user-agent"), Some(want.as_str()), "{head}");
        assert_eq!(header(head, "authorization"), Some("Bearer t"), "{head}");
    }
}

/// A kubeconfig in `dir` with the `cluster` lines and the bearer token `t`.
fn token_kubeconfig(dir: &Path, cluster: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n{cluster}\
             users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n  context:\n    \
             cluster: c\n    user: u\ncurrent-context: c\n"
        ),
    )
    .unwrap();
    path
}

#[tokio::test]
async fn heartbeat_request_to_a_silent_server_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accept and hold every connection without a byte of TLS.
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            held.push(conn);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = token_kubeconfig(
        dir.path(),
        &format!("    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\n"),
    );
    let mut cfg = kubelet_config::new_kubelet_configuration();
    cfg.node_status_update_frequency = kubelet_apimachinery::Duration::from_millis(300);
    let clients = KubeletClients::build(&kubeconfig, &cfg).await.unwrap();
    assert_eq!(
        clients.settings.heartbeat.timeout,
        Some(Duration::from_millis(300))
    );
    let err = clients.heartbeat.apiserver_version().await.unwrap_err();
    let mut source: Option<&(dyn std::error::Error + 'static)> = err.source();
    let mut elapsed = false;
    while let Some(e) = source {
        elapsed |= e.is::<tower::timeout::error::Elapsed>();
        source = e.source();
    }
    if let kube::Error::Service(inner) = &err {
        elapsed |= inner.is::<tower::timeout::error::Elapsed>();
    }
    assert!(elapsed, "expected the heartbeat timeout, got {err:?}");
    silent.abort();
}
