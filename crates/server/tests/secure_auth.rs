//! The secure port's authentication, authorization and routing, over real TLS.
#![allow(clippy::unwrap_used)]

mod support;

use kubelet_server::{AuthorizerError, Decision};
use support::*;

#[tokio::test]
async fn client_cert_user_gets_configz() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut cfg, pki, authz) = authz_config(
        tmp.path(),
        "system:kube-apiserver",
        &["system:masters"],
        Ok(Decision::Allow),
    );
    cfg.anonymous = false;
    let (server, cancel) = start(cfg).await;
    let (status, body) = request13(&server, tmp.path(), Some(&pki), "GET", "/configz")
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
    let (cfg, _, authz) = authz_config(tmp.path(), "unused", &[], Ok(Decision::Allow));
    let (server, cancel) = start(cfg).await;
    let (status, body) = request13(&server, tmp.path(), None, "GET", "/pods")
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
    let (mut cfg, _, authz) = authz_config(tmp.path(), "unused", &[], Ok(Decision::Allow));
    cfg.anonymous = false;
    let (server, cancel) = start(cfg).await;
    // An unknown path under a prefix upstream's mux hands to the container; one outside
    // every prefix is the mux's 404 before authentication, as upstream.
    for path in ["/configz", "/healthz", "/pods/no/such/path"] {
        let got = request13(&server, tmp.path(), None, "GET", path)
            .await
            .unwrap();
        assert_eq!(got, (401, "Unauthorized".to_string()), "{path}");
    }
    assert_eq!(
        request13(&server, tmp.path(), None, "GET", "/no/such/path")
            .await
            .unwrap()
            .0,
        404
    );
    assert!(
        authz.seen().is_empty(),
        "authz must not run for unauthenticated requests"
    );
    cancel.cancel();
}

#[tokio::test]
async fn denying_authorizer_gives_403_listing_subresources() {
    let tmp = tempfile::tempdir().unwrap();
    let (cfg, pki, authz) = authz_config(tmp.path(), "alice", &[], Ok(Decision::NoOpinion));
    let (server, cancel) = start(cfg).await;
    let got = request13(&server, tmp.path(), Some(&pki), "GET", "/configz")
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
    let got = request13(&server, tmp.path(), None, "GET", "/healthz")
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
    let cases = [
        ("POST", "/configz", 405),
        ("HEAD", "/configz", 405),
        ("PUT", "/pods", 405),
        ("DELETE", "/healthz", 405),
        ("GET", "/no/such/path", 404),
        // Routed: no stream asked for is 400, an unknown pod 404 (as upstream's getExec).
        ("GET", "/exec/default/p/c", 400),
        ("GET", "/exec/default/p/c?input=1", 404),
        ("GET", "/exec/default/p", 404),
        ("GET", "/healthz/syncloop", 200),
        ("GET", "/configz", 200),
    ];
    for (method, path, want) in cases {
        let (status, body) = request13(&server, tmp.path(), None, method, path)
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
    for (method, path) in [
        ("POST", "/exec/default/p/c"),
        ("GET", "/containerLogs/default/p/c"),
        ("GET", "/runningpods/"),
        ("GET", "/debug/pprof/profile"),
        ("GET", "/logs/"),
    ] {
        let got = request13(&server, tmp.path(), None, method, path)
            .await
            .unwrap();
        assert_eq!(
            got,
            (405, "Debug endpoints are disabled.\n".to_string()),
            "{path}"
        );
    }
    let (status, _) = request13(&server, tmp.path(), None, "GET", "/configz")
        .await
        .unwrap();
    assert_eq!(status, 404);
    cancel.cancel();
}
