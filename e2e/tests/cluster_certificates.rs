//! `kubelet-certificate` against the real kube-apiserver and controller-manager of
//! `hack/cluster-up.sh` (bootstrap tokens enabled, kubeadm's CSR auto-approval bindings):
//!
//! * TLS bootstrap from a bootstrap token: the node client CSR (created by
//!   `system:bootstrap:<id>`) is approved by the controller-manager, signed, stored as
//!   `kubelet-client-current.pem`, and the written `--kubeconfig` authenticates as
//!   `system:node:<node>`;
//! * rotation: the client certificate manager, on a fake clock moved past the jittered
//!   deadline, requests a renewal with the node's own certificate (auto-approved as
//!   `selfnodeclient`), swaps it into the running clients (which reconnect), and the
//!   store's link moves;
//! * `serverTLSBootstrap`: the serving manager's `kubernetes.io/kubelet-serving` CSR is
//!   approved here as the harness (`kubectl certificate approve`), and the secure server's
//!   TLS configuration serves the issued certificate, which verifies against the cluster CA
//!   for the node IP.
//!
//! Ignored only when built with `KRS_SKIP_CLUSTER_TESTS=1`.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{NodeAddress, Secret};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kubelet_certificate::bootstrap::{self, ClientConfigPaths};
use kubelet_certificate::manager::{FakeClock, FixedJitter, RealClock};
use kubelet_certificate::{CsrApi, KubeCsrApi};
use kubelet_client::KubeletClients;
use kubelet_e2e::cluster::{self, Cluster};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn node_name(what: &str) -> String {
    format!("krs-t-certs-{what}-{}", std::process::id())
}

async fn admin(c: &Cluster) -> kube::Client {
    bootstrap::client_for(&c.kubeconfig).await.unwrap()
}

/// A bootstrap token as `kubeadm token create` makes it, and a bootstrap kubeconfig using
/// it; returns the kubeconfig and the Secret's name.
async fn bootstrap_token(c: &Cluster, dir: &Path) -> (PathBuf, String) {
    // Token id [a-z0-9]{6}, secret [a-z0-9]{16}.
    let id = format!("{:06x}", std::process::id() % 0xff_ffff);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let secret = format!("{:016x}", nanos as u64);
    let name = format!("bootstrap-token-{id}");
    let expiration = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1);
    let obj: Secret = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "stringData": {
            "token-id": id,
            "token-secret": secret,
            "expiration": expiration.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "usage-bootstrap-authentication": "true",
            "usage-bootstrap-signing": "true",
            "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
        }
    }))
    .unwrap();
    let secrets: Api<Secret> = Api::namespaced(admin(c).await, "kube-system");
    let _ = secrets.delete(&name, &DeleteParams::default()).await;
    secrets.create(&PostParams::default(), &obj).await.unwrap();
    let path = dir.join("bootstrap-kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: krs\n  cluster:\n    server: {}\n    \
             certificate-authority: {}\nusers:\n- name: kubelet-bootstrap\n  user:\n    token: {id}.{secret}\n\
             contexts:\n- name: krs\n  context:\n    cluster: krs\n    user: kubelet-bootstrap\n\
             current-context: krs\n",
            c.server,
            c.pki_dir().join("ca.crt").display()
        ),
    )
    .unwrap();
    // A control plane started before cluster-up.sh enabled bootstrap tokens answers 401.
    let client = bootstrap::client_for(&path).await.unwrap();
    let who = Api::<SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await;
    assert!(
        who.is_ok(),
        "the kube-apiserver does not accept the bootstrap token ({who:?}): it must run with \
         --enable-bootstrap-token-auth (hack/cluster-up.sh; restart a control plane started \
         before that flag was added)"
    );
    (path, name)
}

async fn whoami(client: kube::Client) -> String {
    Api::<SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap()
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .unwrap_or_default()
}

/// The CSRs whose request is for `cn`, with their requesting user.
async fn csrs_for(c: &Cluster, node: &str) -> Vec<CertificateSigningRequest> {
    let csrs: Api<CertificateSigningRequest> = Api::all(admin(c).await);
    csrs.list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|csr| {
            let req = String::from_utf8_lossy(&csr.spec.request.0).into_owned();
            rcgen_cn(&req).as_deref() == Some(&format!("system:node:{node}"))
        })
        .collect()
}

fn rcgen_cn(pem: &str) -> Option<String> {
    use rustls_pki_types::pem::PemObject;
    let der =
        rustls_pki_types::CertificateSigningRequestDer::from_pem_slice(pem.as_bytes()).ok()?;
    let (_, req) =
        x509_parser::certification_request::X509CertificationRequest::from_der(der.as_ref())
            .ok()?;
    req.certification_request_info
        .subject
        .iter_common_name()
        .next()
        .and_then(|a| a.as_str().ok())
        .map(str::to_string)
}

use x509_parser::prelude::FromDer;

async fn delete_csrs(c: &Cluster, node: &str) {
    let csrs: Api<CertificateSigningRequest> = Api::all(admin(c).await);
    for csr in csrs_for(c, node).await {
        let _ = csrs
            .delete(
                csr.metadata.name.as_deref().unwrap_or_default(),
                &DeleteParams::default(),
            )
            .await;
    }
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn tls_bootstrap_from_a_bootstrap_token_then_rotation_without_restart() -> TestResult {
    let c = cluster::ensure()?;
    let node = node_name("client");
    let dir = tempfile::tempdir()?;
    let (bootstrap_kc, token_secret) = bootstrap_token(&c, dir.path()).await;
    let kubeconfig = dir.path().join("kubelet.kubeconfig");
    let cert_dir = dir.path().join("pki");

    // LoadClientCert: the bootstrap token requests the node's client certificate.
    tokio::time::timeout(
        Duration::from_secs(120),
        bootstrap::load_client_cert(&kubeconfig, &bootstrap_kc, &cert_dir, &node),
    )
    .await??;
    let current = cert_dir.join("kubelet-client-current.pem");
    let first_file = std::fs::read_link(&current)?;
    assert!(
        first_file
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("kubelet-client-2"),
        "{first_file:?}"
    );
    let csrs = csrs_for(&c, &node).await;
    assert_eq!(csrs.len(), 1);
    let first_csr = &csrs[0];
    assert!(
        first_csr
            .metadata
            .name
            .as_deref()
            .unwrap()
            .starts_with("node-csr-")
    );
    assert!(
        first_csr
            .spec
            .username
            .as_deref()
            .unwrap()
            .starts_with("system:bootstrap:"),
        "{:?}",
        first_csr.spec.username
    );
    let cfg = kubelet_config::new_kubelet_configuration();
    let plain = KubeletClients::build(&kubeconfig, &cfg).await?;
    assert_eq!(whoami(plain.main).await, format!("system:node:{node}"));

    // rotateCertificates: the manager starts from the stored certificate; the clients
    // present it.
    let paths = bootstrap::load_client_config(
        &kubeconfig,
        Some(&bootstrap_kc),
        &cert_dir,
        SystemTime::now(),
    )?;
    assert_eq!(
        paths,
        ClientConfigPaths {
            cert_config: kubeconfig.clone(),
            user_config: kubeconfig.clone(),
            bootstrapping: false
        }
    );
    let clock = FakeClock::new(SystemTime::now());
    let manager = bootstrap::build_client_certificate_manager(
        &paths,
        &cert_dir,
        &node,
        Arc::new(clock.clone()),
        Arc::new(FixedJitter(0.5)),
    )?;
    let first = manager.current().unwrap();
    let clients =
        KubeletClients::build_with_certificates(&kubeconfig, &cfg, manager.certified_keys())
            .await?;
    assert_eq!(
        whoami(clients.main.clone()).await,
        format!("system:node:{node}")
    );

    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(manager.clone().run(cancel.clone()));
    // Past 80 % of the lifetime (FixedJitter(0.5)), before expiry.
    let lifetime = first.leaf.not_after.duration_since(first.leaf.not_before)?;
    let target = first.leaf.not_before + lifetime.mul_f64(0.85);
    clock.advance(target.duration_since(clock_now(&clock))?);
    let mut keys = manager.certified_keys();
    tokio::time::timeout(Duration::from_secs(120), keys.changed()).await??;
    let second = manager.current().unwrap();
    assert_ne!(second.leaf.serial, first.leaf.serial);
    assert_eq!(second.leaf.common_name, format!("system:node:{node}"));
    // The store's current pair is the new one (the dated file is named by the second, as
    // upstream's: a renewal within the bootstrap's second rewrites the same file).
    let stored =
        kubelet_certificate::FileStore::new("kubelet-client", &cert_dir, &cert_dir, None, None)?
            .current()?;
    assert_eq!(stored.leaf.serial, second.leaf.serial);
    assert!(std::fs::read_link(&current)?.starts_with(&cert_dir));

    // The renewal was requested by the node itself (selfnodeclient), with a generated name.
    let csrs = csrs_for(&c, &node).await;
    assert_eq!(
        csrs.len(),
        2,
        "{:?}",
        csrs.iter().map(|c| &c.metadata.name).collect::<Vec<_>>()
    );
    let renewal = csrs
        .iter()
        .find(|c| c.metadata.name != first_csr.metadata.name)
        .unwrap();
    assert!(
        renewal
            .metadata
            .name
            .as_deref()
            .unwrap()
            .starts_with("csr-")
    );
    assert_eq!(
        renewal.spec.username.as_deref(),
        Some(format!("system:node:{node}").as_str())
    );
    // The same clients keep working with the new certificate (their connections were
    // closed and re-established).
    assert_eq!(
        whoami(clients.main.clone()).await,
        format!("system:node:{node}")
    );
    assert_eq!(
        whoami(clients.heartbeat.clone()).await,
        format!("system:node:{node}")
    );

    cancel.cancel();
    task.await?;
    delete_csrs(&c, &node).await;
    let secrets: Api<Secret> = Api::namespaced(admin(&c).await, "kube-system");
    secrets
        .delete(&token_secret, &DeleteParams::default())
        .await?;
    Ok(())
}

fn clock_now(clock: &Arc<FakeClock>) -> SystemTime {
    use kubelet_certificate::Clock;
    clock.now()
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn serving_certificate_from_an_approved_kubelet_serving_csr() -> TestResult {
    let c = cluster::ensure()?;
    let node = node_name("serving");
    let ip = "198.18.255.201";
    let files = c.node_files(&node, ip)?;
    let dir = tempfile::tempdir()?;
    let node_client = bootstrap::client_for(&files.kubeconfig).await?;
    let api: Arc<dyn CsrApi> = Arc::new(KubeCsrApi::new(node_client));
    let addresses = vec![
        NodeAddress {
            type_: "InternalIP".into(),
            address: ip.into(),
        },
        NodeAddress {
            type_: "Hostname".into(),
            address: node.clone(),
        },
    ];
    let manager = kubelet_certificate::manager::new_kubelet_server_certificate_manager(
        Some(api),
        None,
        None,
        &node,
        Arc::new(move || addresses.clone()),
        dir.path(),
        false,
        Arc::new(RealClock),
        Arc::new(kubelet_certificate::RandomJitter),
    )?;
    assert!(manager.current().is_none());
    let mut keys = manager.certified_keys();

    // The secure server's TLS with serverTLSBootstrap, before and after the certificate.
    let settings = kubelet_server::TlsSettings {
        cert_dir: dir.path().join("unused"),
        server_tls_bootstrap: true,
        ..Default::default()
    };
    let prepared = kubelet_server::prepare_tls(&settings, None)?;
    let server_config = prepared.server_config_with_certificates(manager.certified_keys())?;

    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(manager.clone().run(cancel.clone()));

    // Not auto-approved: approve it as the harness does.
    let name = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            if let Some(csr) = csrs_for(&c, &node).await.into_iter().next() {
                return csr;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await?;
    assert_eq!(name.spec.signer_name, "kubernetes.io/kubelet-serving");
    assert_eq!(
        name.spec.username.as_deref(),
        Some(format!("system:node:{node}").as_str())
    );
    let csr_name = name.metadata.name.clone().unwrap();
    c.kubectl_output(["certificate", "approve", csr_name.as_str()])?;
    tokio::time::timeout(Duration::from_secs(60), keys.changed()).await??;
    let cert = manager.current().unwrap();
    assert_eq!(cert.leaf.common_name, format!("system:node:{node}"));
    assert!(cert.leaf.ip_addresses.contains(&ip.parse()?));
    assert!(cert.leaf.dns_names.contains(&node));
    assert!(dir.path().join("kubelet-server-current.pem").exists());

    // A client trusting the cluster CA verifies the served certificate for the node IP.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let acceptor = tokio_rustls::TlsAcceptor::from(server_config);
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let _ = acceptor.accept(tcp).await;
    });
    let mut roots = rustls::RootCertStore::empty();
    use rustls_pki_types::pem::PemObject;
    for ca in rustls_pki_types::CertificateDer::pem_file_iter(c.pki_dir().join("ca.crt"))? {
        roots.add(ca?)?;
    }
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let server_name =
        rustls_pki_types::ServerName::IpAddress(ip.parse::<std::net::IpAddr>()?.into());
    tokio_rustls::TlsConnector::from(Arc::new(client))
        .connect(server_name, tcp)
        .await?;
    server.await?;

    cancel.cancel();
    task.await?;
    delete_csrs(&c, &node).await;
    let _ = std::fs::remove_dir_all(c.state_dir.join("nodes").join(&node));
    Ok(())
}
