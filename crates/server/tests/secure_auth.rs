//! The secure port's authentication, authorization and routing, over real TLS.
#![allow(clippy::unwrap_used)]

mod support;

use kubelet_server::{AuthorizerError, Decision};
use rustls::version::TLS13;
use support::*;

#[tokio::test]
async fn client_cert_user_gets_configz() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = client_pki(tmp.path(), "system:kube-apiserver", &["system:masters"]);
    let authz = RecordingAuthorizer::new(Ok(Decision::Allow));
    let mut cfg = config(tmp.path());
    cfg.anonymous = false;
    cfg.client_ca_file = Some(pki.ca_file.clone());
    cfg.authorizer = authz.clone();
    let (server, cancel) = start(cfg).await;
    let roots = server_roots(&tmp.path().join("pki/kubelet.crt"));
    let (status, body) = request(
        server.local_addr,
        client(roots, Some(&pki), &[&TLS13]),
        "GET",
        "/configz",
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v, configz_payload());
    let seen = authz.seen();
    assert_eq!(
        seen.len(),
        1,
        "allowed on the first (configz) attribute set"
    );
    assert_eq!(seen[0].user.name, "system:kube-apiserver");
    assert_eq!(
        seen[0].user.groups,
        vec![
            "system:masters".to_string(),
            "system:authenticated".to_string()
        ]
    );
    assert_eq!(
        (
            seen[0].verb.as_str(),
            seen[0].subresource.as_str(),
            seen[0].name.as_str()
        ),
        ("get", "configz", "node1")
    );
    cancel.cancel();
}

#[tokio::test]
async fn anonymous_allowed_without_client_cert() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = client_pki(tmp.path(), "unused", &[]);
    let authz = RecordingAuthorizer::new(Ok(Decision::Allow));
    let mut cfg = config(tmp.path());
    cfg.client_ca_file = Some(pki.ca_file.clone());
    cfg.authorizer = authz.clone();
    let (server, cancel) = start(cfg).await;
    let roots = server_roots(&tmp.path().join("pki/kubelet.crt"));
    let (status, body) = request(
        server.local_addr,
        client(roots, None, &[&TLS13]),
        "GET",
        "/pods",
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("web-node1"), "{body}");
    let seen = authz.seen();
    assert_eq!(seen[0].user.name, "system:anonymous");
    assert_eq!(
        seen[0].user.groups,
        vec!["system:unauthenticated".to_string()]
    );
    assert_eq!(seen[0].subresource, "pods");
    cancel.cancel();
}

#[tokio::test]
async fn anonymous_disabled_and_no_cert_is_401_even_for_unknown_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = client_pki(tmp.path(), "unused", &[]);
    let authz = RecordingAuthorizer::new(Ok(Decision::Allow));
    let mut cfg = config(tmp.path());
    cfg.anonymous = false;
    cfg.client_ca_file = Some(pki.ca_file.clone());
    cfg.authorizer = authz.clone();
    let (server, cancel) = start(cfg).await;
    for path in ["/configz", "/healthz", "/no/such/path"] {
        let roots = server_roots(&tmp.path().join("pki/kubelet.crt"));
        let got = request(
            server.local_addr,
            client(roots, None, &[&TLS13]),
            "GET",
            path,
        )
        .await
        .unwrap();
        assert_eq!(got, (401, "Unauthorized".to_string()), "{path}");
    }
    assert!(
        authz.seen().is_empty(),
        "authz must not run for unauthenticated requests"
    );
    cancel.cancel();
}

#[tokio::test]
async fn denying_authorizer_gives_403_listing_subresources() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = client_pki(tmp.path(), "alice", &[]);
    let authz = RecordingAuthorizer::new(Ok(Decision::NoOpinion));
    let mut cfg = config(tmp.path());
    cfg.client_ca_file = Some(pki.ca_file.clone());
    cfg.authorizer = authz.clone();
    let (server, cancel) = start(cfg).await;
    let roots = server_roots(&tmp.path().join("pki/kubelet.crt"));
    let got = request(
        server.local_addr,
        client(roots, Some(&pki), &[&TLS13]),
        "GET",
        "/configz",
    )
    .await
    .unwrap();
    assert_eq!(
        got,
        (
            403,
            "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[configz proxy])\n"
                .to_string()
        )
    );
    let subs: Vec<_> = authz.seen().into_iter().map(|a| a.subresource).collect();
    assert_eq!(subs, vec!["configz", "proxy"]);
    cancel.cancel();
}

#[tokio::test]
async fn authorizer_error_gives_500() {
    let tmp = tempfile::tempdir().unwrap();
    let authz = RecordingAuthorizer::new(Err(AuthorizerError("SAR failed".into())));
    let mut cfg = config(tmp.path());
    cfg.authorizer = authz.clone();
    let (server, cancel) = start(cfg).await;
    let roots = server_roots(&tmp.path().join("pki/kubelet.crt"));
    let got = request(
        server.local_addr,
        client(roots, None, &[&TLS13]),
        "GET",
        "/healthz",
    )
    .await
    .unwrap();
    assert_eq!(
        got,
        (
            500,
            "Authorization error (user=system:anonymous, verb=get, resource=nodes, subresource=healthz)"
                .to_string()
        )
    );
    cancel.cancel();
}

#[tokio::test]
async fn only_get_and_unknown_paths_404() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, cancel) = start(config(tmp.path())).await;
    let roots = || server_roots(&tmp.path().join("pki/kubelet.crt"));
    let cases = [
        ("POST", "/configz", 405),
        ("HEAD", "/configz", 405),
        ("PUT", "/pods", 405),
        ("DELETE", "/healthz", 405),
        ("GET", "/no/such/path", 404),
        ("GET", "/exec/default/p/c", 404),
        ("GET", "/healthz/syncloop", 200),
        ("GET", "/configz", 200),
    ];
    for (method, path, want) in cases {
        let (status, body) = request(
            server.local_addr,
            client(roots(), None, &[&TLS13]),
            method,
            path,
        )
        .await
        .unwrap();
        assert_eq!(status, want, "{method} {path}: {body}");
    }
    cancel.cancel();
}

#[tokio::test]
async fn debugging_handlers_disabled() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    cfg.enable_debugging_handlers = false;
    let (server, cancel) = start(cfg).await;
    let roots = || server_roots(&tmp.path().join("pki/kubelet.crt"));
    for (method, path) in [
        ("POST", "/exec/default/p/c"),
        ("GET", "/containerLogs/default/p/c"),
        ("GET", "/runningpods/"),
        ("GET", "/debug/pprof/profile"),
        ("GET", "/logs/"),
    ] {
        let got = request(
            server.local_addr,
            client(roots(), None, &[&TLS13]),
            method,
            path,
        )
        .await
        .unwrap();
        assert_eq!(
            got,
            (405, "Debug endpoints are disabled.\n".to_string()),
            "{path}"
        );
    }
    let (status, _) = request(
        server.local_addr,
        client(roots(), None, &[&TLS13]),
        "GET",
        "/configz",
    )
    .await
    .unwrap();
    assert_eq!(status, 404);
    cancel.cancel();
}
