//! What the clients put on the wire, read by a plain-HTTP server in the test: client-go's
//! user agent on every client, JSON, and the main client's token bucket.

#![allow(clippy::unwrap_used)]

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
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    \
             server: http://127.0.0.1:{port}\nusers:\n- name: u\n  user:\n    token: t\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
             current-context: c\n"
        ),
    )
    .unwrap();
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
