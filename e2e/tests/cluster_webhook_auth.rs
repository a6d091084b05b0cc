//! The secure port's webhook authentication and authorization (`kubelet-auth`) against the
//! real kube-apiserver of `hack/cluster-up.sh`, with a node's own credentials
//! (`system:node:krs-t-webhook-<pid>` from `krs-pki`), as a kubelet makes its TokenReviews and
//! SubjectAccessReviews (the `system:node` rules allow creating both):
//! * a ServiceAccount token is authenticated by TokenReview, a garbage one is not;
//! * a SubjectAccessReview for `nodes/proxy` is not allowed for that ServiceAccount until a
//!   ClusterRoleBinding grants it;
//! * the whole secure server over TLS: 401 for a garbage token, 403 with upstream's body for
//!   the ServiceAccount, 200 once it may `get nodes/proxy`.
//!
//! Objects: namespace `t-webhook-<pid>-<test>` with a ServiceAccount `viewer`, ClusterRole
//! and ClusterRoleBinding of the same name; deleted at the end (also when the test fails).
//! Ignored only when built with `KRS_SKIP_CLUSTER_TESTS=1`.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use kubelet_auth::{
    CachedTokenAuthenticator, KubeReviewers, WebhookAuthorizer, WebhookTokenAuthenticator,
};
use kubelet_client::KubeletClients;
use kubelet_e2e::cluster::{self, Cluster};
use kubelet_server::authz::request_attributes;
use kubelet_server::{Authorizer, Decision, TokenAuthenticator, UserInfo};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A namespace with a ServiceAccount, a token for it, the node's client; cleaned up on drop.
struct Fixture {
    cluster: Cluster,
    name: String,
    node: String,
    token: String,
    main: kube::Client,
}

impl Fixture {
    async fn new(test: &str) -> Result<Fixture, Box<dyn std::error::Error>> {
        let cluster = cluster::ensure()?;
        let pid = std::process::id();
        let name = format!("t-webhook-{pid}-{test}");
        let node = format!("krs-t-webhook-{pid}");
        let files = cluster.node_files(&node, "127.0.0.1")?;
        let clients = KubeletClients::build(
            &files.kubeconfig,
            &kubelet_config::new_kubelet_configuration(),
        )
        .await?;
        cluster.kubectl_output(["create", "namespace", &name])?;
        let mut f = Fixture {
            main: clients.main.clone(),
            token: String::new(),
            cluster,
            name,
            node,
        };
        f.kubectl(&["-n", &f.name, "create", "serviceaccount", "viewer"])?;
        let token = f.kubectl(&[
            "-n",
            &f.name,
            "create",
            "token",
            "viewer",
            "--duration",
            "10m",
        ])?;
        f.token = token.trim().to_string();
        Ok(f)
    }

    fn kubectl(&self, args: &[&str]) -> Result<String, cluster::ClusterError> {
        self.cluster.kubectl_output(args)
    }

    fn sa_user(&self) -> String {
        format!("system:serviceaccount:{}:viewer", self.name)
    }

    /// ClusterRole + ClusterRoleBinding: the ServiceAccount may `get nodes/proxy`.
    fn grant_node_proxy(&self) -> Result<(), cluster::ClusterError> {
        self.kubectl(&[
            "create",
            "clusterrole",
            &self.name,
            "--verb=get",
            "--resource=nodes/proxy",
        ])?;
        self.kubectl(&[
            "create",
            "clusterrolebinding",
            &self.name,
            "--clusterrole",
            &self.name,
            "--serviceaccount",
            &format!("{}:viewer", self.name),
        ])?;
        Ok(())
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        for kind in ["clusterrolebinding", "clusterrole", "namespace"] {
            let r = self.kubectl(&[
                "delete",
                kind,
                &self.name,
                "--ignore-not-found",
                "--wait=false",
            ]);
            if let Err(e) = r {
                eprintln!("clean-up of {kind}/{}: {e}", self.name);
            }
        }
        let dir = self.cluster.state_dir.join("nodes").join(&self.node);
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn token_authenticator(main: &kube::Client) -> CachedTokenAuthenticator {
    let reviewers = Arc::new(KubeReviewers::new(main.clone()));
    let webhook = Arc::new(WebhookTokenAuthenticator::new(reviewers));
    CachedTokenAuthenticator::new(webhook, Duration::from_secs(120), Duration::from_secs(120))
        .unwrap()
}

/// The SubjectAccessReview authorizer; denials cached for 1 s so a new binding shows soon.
fn authorizer(main: &kube::Client) -> WebhookAuthorizer {
    let reviewers = Arc::new(KubeReviewers::new(main.clone()));
    WebhookAuthorizer::new(reviewers, Duration::from_secs(300), Duration::from_secs(1))
}

/// Polls `check` every second for up to 60 s (RBAC sees a new binding through its informers).
async fn eventually<F, Fut>(what: &str, mut check: F) -> TestResult
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..60 {
        if check().await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Err(format!("{what}: not within 60 s").into())
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn a_service_account_token_is_reviewed_with_the_node_identity() -> TestResult {
    let f = Fixture::new("token").await?;
    let authn = token_authenticator(&f.main);
    let user = authn
        .authenticate_token(&f.token)
        .await?
        .ok_or("the ServiceAccount token was not authenticated")?;
    assert_eq!(user.name, f.sa_user());
    assert!(!user.uid.is_empty(), "{user:?}");
    for g in [
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{}", f.name),
        "system:authenticated".to_string(),
    ] {
        assert!(user.groups.contains(&g), "{g} not in {:?}", user.groups);
    }
    // A second lookup within cacheTTL gives the same user (from the cache).
    assert_eq!(authn.authenticate_token(&f.token).await?, Some(user));
    let garbage = authn.authenticate_token("not-a-token").await;
    assert!(!matches!(garbage, Ok(Some(_))), "{garbage:?}");
    Ok(())
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn node_proxy_is_denied_for_the_service_account_until_a_cluster_role_binding() -> TestResult {
    let f = Fixture::new("sar").await?;
    let user = token_authenticator(&f.main)
        .authenticate_token(&f.token)
        .await?
        .ok_or("not authenticated")?;
    let authz = authorizer(&f.main);
    // GET /pods with KubeletFineGrainedAuthz: nodes/pods, then nodes/proxy.
    let attrs = request_attributes(&f.node, &user, "GET", "/pods", true);
    assert_eq!(attrs[1].subresource, "proxy");
    for a in &attrs {
        assert_eq!(
            authz.authorize(a).await?,
            Decision::NoOpinion,
            "{}",
            a.subresource
        );
    }
    f.grant_node_proxy()?;
    eventually("nodes/proxy allowed", || async {
        authz.authorize(&attrs[1]).await == Ok(Decision::Allow)
    })
    .await?;
    assert_eq!(
        authz.authorize(&attrs[0]).await?,
        Decision::NoOpinion,
        "only proxy granted"
    );
    // Another node's proxy is granted too (a ClusterRole on all nodes); another user is not.
    let other = UserInfo::new("someone-else", vec!["system:authenticated".into()]);
    let theirs = request_attributes(&f.node, &other, "GET", "/pods", true);
    assert_eq!(authz.authorize(&theirs[1]).await?, Decision::NoOpinion);
    Ok(())
}

struct NoPods;

impl kubelet_server::HostInterface for NoPods {
    fn get_pods(&self) -> Vec<k8s_openapi::api::core::v1::Pod> {
        Vec::new()
    }
    fn sync_loop_health(&self) -> Result<(), String> {
        Ok(())
    }
}

/// `curl -k` with a bearer token: (status, body).
async fn get(port: u16, path: &str, token: &str) -> (u16, String) {
    let out = tokio::process::Command::new("curl")
        .args(["-sk", "--max-time", "30", "-w", "\n%{http_code}", "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .arg(format!("https://127.0.0.1:{port}{path}"))
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn the_secure_port_authenticates_and_authorizes_through_the_api_server() -> TestResult {
    let f = Fixture::new("server").await?;
    let dir = tempfile::tempdir()?;
    let cfg = kubelet_server::SecureServerConfig {
        address: "127.0.0.1".into(),
        port: 0,
        node_name: f.node.clone(),
        tls: kubelet_server::TlsSettings {
            cert_dir: dir.path().to_path_buf(),
            hostname: "localhost".into(),
            ips: vec![std::net::Ipv4Addr::LOCALHOST.into()],
            ..Default::default()
        },
        prepared_tls: None,
        client_ca_file: None,
        anonymous: false,
        token_authenticator: Some(Arc::new(token_authenticator(&f.main))),
        authorizer: Arc::new(authorizer(&f.main)),
        fine_grained_authz: true,
        enable_debugging_handlers: true,
        split_log_streams: false,
        debug: kubelet_server::DebugHandlers::default(),
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let srv = kubelet_server::start_secure_server(
        cfg,
        Arc::new(NoPods),
        serde_json::json!({}),
        cancel.clone(),
    )
    .await?;
    let port = srv.local_addr.port();

    assert_eq!(
        get(port, "/pods", "garbage").await,
        (401, "Unauthorized".into())
    );
    let forbidden = format!(
        "Forbidden (user={}, verb=get, resource=nodes, subresource(s)=[pods proxy])\n",
        f.sa_user()
    );
    assert_eq!(get(port, "/pods", &f.token).await, (403, forbidden));
    f.grant_node_proxy()?;
    eventually("GET /pods allowed", || async {
        get(port, "/pods", &f.token).await.0 == 200
    })
    .await?;
    let (_, body) = get(port, "/pods", &f.token).await;
    let pods: serde_json::Value = serde_json::from_str(&body)?;
    assert_eq!(pods["kind"], "PodList");
    cancel.cancel();
    let _ = srv.task.await;
    Ok(())
}
