//! TLS bootstrap: `pkg/kubelet/certificate/bootstrap/bootstrap.go`.
//!
//! * [`load_client_cert`] (`LoadClientCert`, used when `rotateCertificates` is off): if
//!   `--kubeconfig` holds a client certificate that has not expired, nothing happens;
//!   otherwise the `--bootstrap-kubeconfig` credentials request a client certificate
//!   (signer `kubernetes.io/kube-apiserver-client-kubelet`, `CN=system:node:<node>`,
//!   `O=system:nodes`, ECDSA P-256, usages digital signature + client auth, request name
//!   `node-csr-<digest>`), the issued certificate and key go to
//!   `<cert-dir>/kubelet-client-current.pem` (the [`FileStore`]), and `--kubeconfig` is
//!   written pointing at it. The key is kept in `kubelet-client.key.tmp` until the request
//!   succeeds, so a restarted bootstrap reuses it (and finds its pending request).
//! * [`load_client_config`] (`LoadClientConfig`, used when `rotateCertificates` is on):
//!   decides which kubeconfig requests certificates (the valid `--kubeconfig`, else the
//!   bootstrap one) and, when bootstrapping, writes `--kubeconfig` pointing at the store's
//!   current file before it exists; the certificate manager then requests it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use kube::config::{Kubeconfig, NamedAuthInfo, NamedCluster};

use crate::CertificateError;
use crate::api::{CsrApi, KubeCsrApi, wait_for_certificate};
use crate::cert::{Certificate, parse_certs_pem};
use crate::csr::{
    KUBE_APISERVER_CLIENT_KUBELET_SIGNER, KUBELET_CLIENT_USAGES, RequestTemplate, digested_name,
    make_csr, request_certificate,
};
use crate::keys::{PrivateKey, load_or_generate_key_file, parse_private_key_pem};
use crate::store::FileStore;

/// `tmpPrivateKeyFile`.
pub const TMP_PRIVATE_KEY_FILE: &str = "kubelet-client.key.tmp";
/// The store's pair name for the client certificate.
pub const KUBELET_CLIENT_PAIR: &str = "kubelet-client";
/// How long the bootstrap waits for its certificate (`requestNodeCertificate`: 3600 s).
pub const BOOTSTRAP_WAIT: Duration = Duration::from_secs(3600);

/// The cluster stanza of a kubeconfig's current context (`restclient.Config` Host, CA and
/// `Insecure`), file paths already absolute.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterInfo {
    /// `server`.
    pub server: String,
    /// `certificate-authority` (absolute path).
    pub certificate_authority: Option<String>,
    /// `certificate-authority-data` (base64, as in the file).
    pub certificate_authority_data: Option<String>,
    /// `insecure-skip-tls-verify`.
    pub insecure_skip_tls_verify: bool,
}

fn current(kc: &Kubeconfig) -> (Option<&NamedCluster>, Option<&NamedAuthInfo>) {
    let ctx = kc
        .current_context
        .as_deref()
        .and_then(|name| kc.contexts.iter().find(|c| c.name == name))
        .and_then(|c| c.context.as_ref());
    let cluster = ctx.and_then(|c| kc.clusters.iter().find(|n| n.name == c.cluster));
    let user = ctx
        .and_then(|c| c.user.as_deref())
        .and_then(|u| kc.auth_infos.iter().find(|n| n.name == u));
    (cluster, user)
}

/// The current context's cluster of the kubeconfig at `path`.
pub fn read_cluster_info(path: &Path) -> Result<ClusterInfo, CertificateError> {
    let kc = Kubeconfig::read_from(path)
        .map_err(|e| CertificateError::Kubeconfig(format!("{}: {e}", path.display())))?;
    let (cluster, _) = current(&kc);
    let c = cluster.and_then(|c| c.cluster.as_ref()).ok_or_else(|| {
        CertificateError::Kubeconfig(format!(
            "{}: no cluster in the current context",
            path.display()
        ))
    })?;
    Ok(ClusterInfo {
        server: c.server.clone().unwrap_or_default(),
        certificate_authority: c.certificate_authority.clone(),
        certificate_authority_data: c.certificate_authority_data.clone(),
        insecure_skip_tls_verify: c.insecure_skip_tls_verify.unwrap_or(false),
    })
}

/// The client certificate and key PEM of the kubeconfig's current user, when it has one
/// (files or `-data`).
fn client_cert_and_key(path: &Path) -> Result<(Vec<u8>, Option<Vec<u8>>), String> {
    use base64::Engine;
    let kc = Kubeconfig::read_from(path).map_err(|e| {
        format!(
            "unable to read existing bootstrap client config from {}: {e}",
            path.display()
        )
    })?;
    let (_, user) = current(&kc);
    let user = user.and_then(|u| u.auth_info.as_ref());
    let load = |data: Option<&str>, file: Option<&String>| -> Result<Option<Vec<u8>>, String> {
        if let Some(d) = data.filter(|d| !d.is_empty()) {
            return base64::engine::general_purpose::STANDARD
                .decode(d.trim())
                .map(Some)
                .map_err(|e| e.to_string());
        }
        match file.filter(|f| !f.is_empty()) {
            Some(f) => std::fs::read(f).map(Some).map_err(|e| format!("{f}: {e}")),
            None => Ok(None),
        }
    };
    let context = |e: String| {
        format!(
            "unable to load TLS configuration from existing bootstrap client config read from {}: {e}",
            path.display()
        )
    };
    let cert = user
        .map(|u| {
            load(
                u.client_certificate_data.as_deref(),
                u.client_certificate.as_ref(),
            )
        })
        .transpose()
        .map_err(context)?
        .flatten();
    let key = user
        .map(|u| {
            load(
                u.client_key_data.as_ref().map(|s| {
                    use secrecy::ExposeSecret;
                    s.expose_secret()
                }),
                u.client_key.as_ref(),
            )
        })
        .transpose()
        .map_err(context)?
        .flatten();
    match cert {
        Some(c) => Ok((c, key)),
        None => Err(format!(
            "unable to read TLS certificates from existing bootstrap client config read from {}",
            path.display()
        )),
    }
}

/// `isClientConfigStillValid`: the kubeconfig exists, its current user has a client
/// certificate (and key) that loads, and no certificate of it has expired. A kubeconfig
/// that cannot be read or has no certificate is "not valid" (logged), not an error; only
/// failing to stat it is.
pub fn is_client_config_still_valid(
    path: &Path,
    now: SystemTime,
) -> Result<bool, CertificateError> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(CertificateError::Kubeconfig(format!(
                "error reading existing bootstrap kubeconfig {}: {e}",
                path.display()
            )));
        }
        Ok(_) => {}
    }
    let (cert, key) = match client_cert_and_key(path) {
        Ok(pair) => pair,
        Err(msg) => {
            tracing::error!("{msg}");
            return Ok(false);
        }
    };
    if let Some(key) = &key
        && let Err(e) = Certificate::from_pem(&cert, key)
    {
        tracing::error!(
            "unable to load TLS configuration from existing bootstrap client config read from {}: {e}",
            path.display()
        );
        return Ok(false);
    }
    let certs = match parse_certs_pem(&cert) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(
                "unable to load TLS certificates from existing bootstrap client config read from {}: {e}",
                path.display()
            );
            return Ok(false);
        }
    };
    for c in &certs {
        let leaf = crate::cert::parse_leaf(c)?;
        if now > leaf.not_after {
            tracing::error!(
                "part of the existing bootstrap client certificate in {} is expired: {}",
                path.display(),
                crate::util::format_time(leaf.not_after)
            );
            return Ok(false);
        }
    }
    Ok(true)
}

/// A YAML scalar: plain when unambiguous, else double-quoted (JSON escaping is valid YAML).
fn yaml_scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:+=@".contains(c))
        && !s.starts_with([':', '-', '@'])
        && !matches!(
            s,
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "~"
        )
        && s.parse::<f64>().is_err();
    if plain {
        s.to_string()
    } else {
        serde_json::Value::String(s.to_string()).to_string()
    }
}

/// `writeKubeconfigFromBootstrapping`: cluster `default-cluster` from the bootstrap
/// kubeconfig (server, CA file or else CA data, insecure), user `default-auth` with
/// `client-certificate` and `client-key` both `pem_path`, context `default-context`
/// (namespace `default`), written as `clientcmd.WriteToFile` does (YAML, mode 0600, the
/// directory created).
pub fn write_kubeconfig_from_bootstrapping(
    cluster: &ClusterInfo,
    kubeconfig_path: &Path,
    pem_path: &Path,
) -> Result<(), CertificateError> {
    let mut c = String::new();
    match (
        &cluster.certificate_authority,
        &cluster.certificate_authority_data,
    ) {
        (Some(file), _) if !file.is_empty() => {
            c.push_str(&format!(
                "    certificate-authority: {}\n",
                yaml_scalar(file)
            ));
        }
        (_, Some(data)) if !data.is_empty() => {
            c.push_str(&format!(
                "    certificate-authority-data: {}\n",
                yaml_scalar(data)
            ));
        }
        _ => {}
    }
    if cluster.insecure_skip_tls_verify {
        c.push_str("    insecure-skip-tls-verify: true\n");
    }
    c.push_str(&format!("    server: {}\n", yaml_scalar(&cluster.server)));
    let pem = yaml_scalar(&pem_path.display().to_string());
    let text = format!(
        "apiVersion: v1\nclusters:\n- cluster:\n{c}  name: default-cluster\ncontexts:\n- context:\n    \
         cluster: default-cluster\n    namespace: default\n    user: default-auth\n  name: \
         default-context\ncurrent-context: default-context\nkind: Config\npreferences: {{}}\n\
         users:\n- name: default-auth\n  user:\n    client-certificate: {pem}\n    client-key: \
         {pem}\n"
    );
    if let Some(dir) = kubeconfig_path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir).map_err(|e| CertificateError::io(dir, e))?;
    }
    crate::keys::write_private(kubeconfig_path, text.as_bytes())
}

/// What [`load_client_config`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfigPaths {
    /// The kubeconfig whose credentials request certificates while the kubelet has none
    /// (`certConfig`).
    pub cert_config: PathBuf,
    /// The kubeconfig of the clients (`userConfig`): `--kubeconfig`.
    pub user_config: PathBuf,
    /// Whether `--kubeconfig` was (re)written to point at the certificate store.
    pub bootstrapping: bool,
}

/// `LoadClientConfig`: with no bootstrap kubeconfig, `--kubeconfig` serves both; with
/// one, a valid `--kubeconfig` serves both; otherwise the bootstrap kubeconfig requests
/// certificates and `--kubeconfig` is written to point at `<cert-dir>/kubelet-client-current.pem`.
pub fn load_client_config(
    kubeconfig: &Path,
    bootstrap: Option<&Path>,
    cert_dir: &Path,
    now: SystemTime,
) -> Result<ClientConfigPaths, CertificateError> {
    let Some(bootstrap) = bootstrap else {
        tracing::debug!("No bootstrapping requested, will use kubeconfig");
        return Ok(ClientConfigPaths {
            cert_config: kubeconfig.to_path_buf(),
            user_config: kubeconfig.to_path_buf(),
            bootstrapping: false,
        });
    };
    let store = FileStore::new(KUBELET_CLIENT_PAIR, cert_dir, cert_dir, None, None)
        .map_err(|_| CertificateError::Store("unable to build bootstrap cert store".into()))?;
    if is_client_config_still_valid(kubeconfig, now)? {
        tracing::debug!("Current kubeconfig file contents are still valid, no bootstrap necessary");
        return Ok(ClientConfigPaths {
            cert_config: kubeconfig.to_path_buf(),
            user_config: kubeconfig.to_path_buf(),
            bootstrapping: false,
        });
    }
    let cluster = read_cluster_info(bootstrap).map_err(|e| {
        CertificateError::Kubeconfig(format!("unable to load bootstrap kubeconfig: {e}"))
    })?;
    write_kubeconfig_from_bootstrapping(&cluster, kubeconfig, &store.current_path())?;
    tracing::debug!(
        "Use the bootstrap credentials to request a cert, and set kubeconfig to point to the certificate dir"
    );
    Ok(ClientConfigPaths {
        cert_config: bootstrap.to_path_buf(),
        user_config: kubeconfig.to_path_buf(),
        bootstrapping: true,
    })
}

/// The client credentials of a kubeconfig's current user: embedded data and file paths
/// (`rest.Config` `CertData`/`KeyData`, `CertFile`/`KeyFile`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserCredentials {
    /// `client-certificate-data`, decoded.
    pub cert_data: Option<Vec<u8>>,
    /// `client-key-data`, decoded.
    pub key_data: Option<Vec<u8>>,
    /// `client-certificate` (absolute).
    pub cert_file: Option<PathBuf>,
    /// `client-key` (absolute).
    pub key_file: Option<PathBuf>,
}

/// The current user's [`UserCredentials`] of the kubeconfig at `path`.
pub fn read_user_credentials(path: &Path) -> Result<UserCredentials, CertificateError> {
    use base64::Engine;
    let kc = Kubeconfig::read_from(path)
        .map_err(|e| CertificateError::Kubeconfig(format!("{}: {e}", path.display())))?;
    let (_, user) = current(&kc);
    let Some(u) = user.and_then(|u| u.auth_info.as_ref()) else {
        return Ok(UserCredentials::default());
    };
    let decode = |d: Option<&str>| -> Result<Option<Vec<u8>>, CertificateError> {
        d.filter(|d| !d.is_empty())
            .map(|d| {
                base64::engine::general_purpose::STANDARD
                    .decode(d.trim())
                    .map_err(|e| CertificateError::Kubeconfig(format!("{}: {e}", path.display())))
            })
            .transpose()
    };
    let key_data = {
        use secrecy::ExposeSecret;
        decode(u.client_key_data.as_ref().map(|s| s.expose_secret()))?
    };
    Ok(UserCredentials {
        cert_data: decode(u.client_certificate_data.as_deref())?,
        key_data,
        cert_file: u
            .client_certificate
            .as_ref()
            .filter(|f| !f.is_empty())
            .map(PathBuf::from),
        key_file: u
            .client_key
            .as_ref()
            .filter(|f| !f.is_empty())
            .map(PathBuf::from),
    })
}

/// `newClientsetFn` of `buildClientCertificateManager`: the API with the current
/// certificate's kubeconfig (`user_config`, pointing at the store) once there is a valid
/// certificate, else with `cert_config` (the bootstrap credentials). A new client each
/// time, so the files are read afresh.
pub fn kube_api_factory(cert_config: PathBuf, user_config: PathBuf) -> crate::manager::ApiFactory {
    Arc::new(move |current| {
        let path = if current.is_some() {
            user_config.clone()
        } else {
            cert_config.clone()
        };
        Box::pin(async move {
            let client = client_for(&path).await?;
            let api: Arc<dyn CsrApi> = Arc::new(KubeCsrApi::new(client));
            Ok(api)
        })
    })
}

/// `buildClientCertificateManager`: the client certificate manager for what
/// [`load_client_config`] decided; a kubeconfig with embedded certificate data hands it to
/// the manager as the bootstrap pair (kubeadm's, rotated at once).
pub fn build_client_certificate_manager(
    paths: &ClientConfigPaths,
    cert_dir: &Path,
    node_name: &str,
    clock: Arc<dyn crate::manager::Clock>,
    jitter: Arc<dyn crate::manager::Jitter>,
) -> Result<Arc<crate::manager::Manager>, CertificateError> {
    let user = read_user_credentials(&paths.user_config)?;
    let bootstrap = user.cert_data.zip(user.key_data);
    crate::manager::new_kubelet_client_certificate_manager(
        cert_dir,
        node_name,
        bootstrap,
        user.cert_file.as_deref(),
        user.key_file.as_deref(),
        Some(kube_api_factory(
            paths.cert_config.clone(),
            paths.user_config.clone(),
        )),
        clock,
        jitter,
    )
}

/// A kube client (no rate limit: upstream's bootstrap clientset uses client-go's defaults,
/// which the CSR calls never reach) from the kubeconfig at `path`.
pub async fn client_for(path: &Path) -> Result<kube::Client, CertificateError> {
    let config = kubelet_client::load_kubeconfig(path)
        .await
        .map_err(|e| CertificateError::Kubeconfig(e.to_string()))?;
    kube::Client::try_from(config).map_err(|e| {
        CertificateError::Api(format!(
            "unable to create certificates signing request client: {e}"
        ))
    })
}

/// `LoadClientCert` with the real API: the bootstrap kubeconfig's client; waits up to a
/// minute for `/healthz` first (`waitForServer`).
pub async fn load_client_cert(
    kubeconfig: &Path,
    bootstrap: &Path,
    cert_dir: &Path,
    node_name: &str,
) -> Result<(), CertificateError> {
    if is_client_config_still_valid(kubeconfig, SystemTime::now())? {
        tracing::debug!(path = %kubeconfig.display(), "Kubeconfig exists and is valid, skipping bootstrap");
        return Ok(());
    }
    let client = client_for(bootstrap).await.map_err(|e| {
        CertificateError::Kubeconfig(format!("unable to load bootstrap kubeconfig: {e}"))
    })?;
    let api = KubeCsrApi::new(client.clone());
    load_client_cert_with(kubeconfig, bootstrap, cert_dir, node_name, &api, async {
        if let Err(e) = wait_for_server(&client, Duration::from_secs(60)).await {
            tracing::info!(err = %e, "Error waiting for apiserver to come up");
        }
    })
    .await
}

/// `LoadClientCert` on any [`CsrApi`]; `wait_for_server` runs before the request.
pub async fn load_client_cert_with(
    kubeconfig: &Path,
    bootstrap: &Path,
    cert_dir: &Path,
    node_name: &str,
    api: &dyn CsrApi,
    wait_for_server: impl std::future::Future<Output = ()>,
) -> Result<(), CertificateError> {
    if is_client_config_still_valid(kubeconfig, SystemTime::now())? {
        tracing::debug!(path = %kubeconfig.display(), "Kubeconfig exists and is valid, skipping bootstrap");
        return Ok(());
    }
    tracing::debug!(
        "Using bootstrap kubeconfig to generate TLS client cert, key and kubeconfig file"
    );
    let cluster = read_cluster_info(bootstrap).map_err(|e| {
        CertificateError::Kubeconfig(format!("unable to load bootstrap kubeconfig: {e}"))
    })?;
    let store = FileStore::new(KUBELET_CLIENT_PAIR, cert_dir, cert_dir, None, None)
        .map_err(|_| CertificateError::Store("unable to build bootstrap cert store".into()))?;
    // Reuse the key of the current (expired) certificate, else the cached one.
    let key = store
        .current()
        .ok()
        .and_then(|c| parse_private_key_pem(&c.key_pem).ok());
    let tmp_key = cert_dir.join(TMP_PRIVATE_KEY_FILE);
    let key = match key {
        Some(k) => k,
        None => {
            tracing::debug!(
                "No valid private key and/or certificate found, reusing existing private key or creating a new one"
            );
            load_or_generate_key_file(&tmp_key)?
        }
    };
    wait_for_server.await;
    let cert = request_node_certificate(api, &key, node_name).await?;
    store.update(&cert, key.pem.as_bytes())?;
    if let Err(e) = std::fs::remove_file(&tmp_key)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::debug!(path = %tmp_key.display(), err = %e, "Failed cleaning up private key file");
    }
    write_kubeconfig_from_bootstrapping(&cluster, kubeconfig, &store.current_path())
}

/// `requestNodeCertificate`: the node client request, named by its digest, then the wait.
pub async fn request_node_certificate(
    api: &dyn CsrApi,
    key: &PrivateKey,
    node_name: &str,
) -> Result<Vec<u8>, CertificateError> {
    let template = RequestTemplate::node(node_name);
    let csr = make_csr(key, &template)?;
    let name = digested_name(key, &template, KUBELET_CLIENT_USAGES);
    let (name, uid) = request_certificate(
        api,
        &csr,
        Some(&name),
        KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
        None,
        KUBELET_CLIENT_USAGES,
        key,
    )
    .await?;
    tracing::debug!("Waiting for client certificate to be issued");
    wait_for_certificate(api, &name, &uid, BOOTSTRAP_WAIT).await
}

/// `waitForServer`: `GET /healthz` (1 s timeout) every 2 s (jitter 0.2) until it answers
/// or `deadline` passes.
pub async fn wait_for_server(
    client: &kube::Client,
    deadline: Duration,
) -> Result<(), CertificateError> {
    let probe = async {
        loop {
            let req = http::Request::get("/healthz").body(Vec::new());
            let ok = match req {
                Ok(req) => {
                    match tokio::time::timeout(Duration::from_secs(1), client.request_text(req))
                        .await
                    {
                        Ok(Ok(_)) => true,
                        Ok(Err(e)) => {
                            tracing::info!(err = %e, "Failed to connect to apiserver");
                            false
                        }
                        Err(_) => {
                            tracing::info!(err = "timeout", "Failed to connect to apiserver");
                            false
                        }
                    }
                }
                Err(_) => false,
            };
            if ok {
                return;
            }
            tokio::time::sleep(crate::manager::jitter(
                Duration::from_secs(2),
                0.2,
                crate::manager::rand_f64(),
            ))
            .await;
        }
    };
    tokio::time::timeout(deadline, probe)
        .await
        .map_err(|_| CertificateError::Timeout("timed out waiting to connect to apiserver".into()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::api::FakeCsrApi;
    use crate::testing::{TestCa, signing_api};

    fn bootstrap_kubeconfig(dir: &Path) -> PathBuf {
        let path = dir.join("bootstrap-kubeconfig");
        std::fs::write(dir.join("ca.crt"), "unused").unwrap();
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n    \
             certificate-authority: ca.crt\nusers:\n- name: u\n  user:\n    token: abcdef.0123456789abcdef\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
        )
        .unwrap();
        path
    }

    /// A temporary directory with a bootstrap kubeconfig; the kubeconfig and cert dir paths.
    struct Fixture {
        dir: tempfile::TempDir,
        bootstrap: PathBuf,
        kubeconfig: PathBuf,
        cert_dir: PathBuf,
    }

    /// `LoadClientCert` for node `n1`, the server assumed up.
    async fn bootstrap_n1(
        kubeconfig: &Path,
        bootstrap: &Path,
        cert_dir: &Path,
        api: &dyn CsrApi,
    ) -> Result<(), CertificateError> {
        load_client_cert_with(kubeconfig, bootstrap, cert_dir, "n1", api, async {}).await
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        Fixture {
            bootstrap: bootstrap_kubeconfig(dir.path()),
            kubeconfig: dir.path().join("kubelet.kubeconfig"),
            cert_dir: dir.path().join("pki"),
            dir,
        }
    }

    #[tokio::test]
    async fn bootstrap_requests_a_node_client_certificate_and_writes_the_kubeconfig() {
        let Fixture {
            dir,
            bootstrap,
            kubeconfig,
            cert_dir,
        } = fixture();
        let ca = Arc::new(TestCa::new());
        let api = signing_api(&ca, Duration::from_secs(3600));
        bootstrap_n1(&kubeconfig, &bootstrap, &cert_dir, api.as_ref())
            .await
            .unwrap();

        let created = api.created();
        assert_eq!(created.len(), 1);
        let csr = &created[0];
        assert!(
            csr.metadata
                .name
                .as_deref()
                .unwrap()
                .starts_with("node-csr-")
        );
        assert_eq!(
            csr.spec.signer_name,
            "kubernetes.io/kube-apiserver-client-kubelet"
        );
        assert_eq!(
            csr.spec.usages.as_deref().unwrap(),
            &["digital signature".to_string(), "client auth".to_string()]
        );
        assert_eq!(csr.spec.expiration_seconds, None);

        let current = cert_dir.join("kubelet-client-current.pem");
        let cert = FileStore::new("kubelet-client", &cert_dir, &cert_dir, None, None)
            .unwrap()
            .current()
            .unwrap();
        assert_eq!(cert.leaf.common_name, "system:node:n1");
        assert_eq!(cert.leaf.organizations, vec!["system:nodes".to_string()]);
        assert!(!cert_dir.join(TMP_PRIVATE_KEY_FILE).exists());

        let text = std::fs::read_to_string(&kubeconfig).unwrap();
        let ca_path = dir.path().join("ca.crt");
        assert_eq!(
            text,
            format!(
                "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority: {}\n    server: \
                 https://127.0.0.1:6443\n  name: default-cluster\ncontexts:\n- context:\n    cluster: \
                 default-cluster\n    namespace: default\n    user: default-auth\n  name: default-context\n\
                 current-context: default-context\nkind: Config\npreferences: {{}}\nusers:\n- name: \
                 default-auth\n  user:\n    client-certificate: {p}\n    client-key: {p}\n",
                ca_path.display(),
                p = current.display()
            )
        );
        // kube reads it back, and it is now valid: a second bootstrap does nothing.
        assert!(is_client_config_still_valid(&kubeconfig, SystemTime::now()).unwrap());
        bootstrap_n1(&kubeconfig, &bootstrap, &cert_dir, api.as_ref())
            .await
            .unwrap();
        assert_eq!(
            api.created().len(),
            1,
            "a valid kubeconfig skips the bootstrap"
        );
    }

    #[tokio::test]
    async fn an_expired_kubeconfig_certificate_bootstraps_again_with_the_same_key() {
        let Fixture {
            dir: _dir,
            bootstrap,
            kubeconfig,
            cert_dir,
        } = fixture();
        let ca = Arc::new(TestCa::new());
        // An expired certificate in the store, pointed at by the kubeconfig.
        let (cert, key) = ca.issue_client_at(
            "system:node:n1",
            SystemTime::now() - Duration::from_secs(7200),
            Duration::from_secs(3600),
        );
        let store = FileStore::new("kubelet-client", &cert_dir, &cert_dir, None, None).unwrap();
        let old = store
            .update_at(cert.as_bytes(), key.as_bytes(), "2026-01-01-00-00-00")
            .unwrap();
        write_kubeconfig_from_bootstrapping(
            &read_cluster_info(&bootstrap).unwrap(),
            &kubeconfig,
            &store.current_path(),
        )
        .unwrap();
        assert!(!is_client_config_still_valid(&kubeconfig, SystemTime::now()).unwrap());

        let api = signing_api(&ca, Duration::from_secs(3600));
        bootstrap_n1(&kubeconfig, &bootstrap, &cert_dir, api.as_ref())
            .await
            .unwrap();
        let new = store.current().unwrap();
        assert_ne!(new.leaf.serial, old.leaf.serial);
        // Same key as the expired certificate's.
        assert_eq!(
            parse_private_key_pem(&new.key_pem)
                .unwrap()
                .key_pair
                .public_key_raw(),
            parse_private_key_pem(&key)
                .unwrap()
                .key_pair
                .public_key_raw()
        );
    }

    #[tokio::test]
    async fn a_denied_request_fails_and_keeps_the_key_for_the_next_try() {
        let Fixture {
            dir: _dir,
            bootstrap,
            kubeconfig,
            cert_dir,
        } = fixture();
        let api = FakeCsrApi::new();
        let api2 = api.clone();
        let deny = tokio::spawn(async move {
            loop {
                if let Some(c) = api2.created().first() {
                    api2.set_condition(c.metadata.name.as_deref().unwrap(), "Denied", None);
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        let err = bootstrap_n1(&kubeconfig, &bootstrap, &cert_dir, api.as_ref())
            .await
            .unwrap_err();
        deny.await.unwrap();
        assert!(
            err.to_string()
                .contains("certificate signing request is denied, reason: FakeDenied"),
            "{err}"
        );
        assert!(cert_dir.join(TMP_PRIVATE_KEY_FILE).exists());
        assert!(!kubeconfig.exists());
        // A restart finds its request (same key, same name) and reuses it: denied again.
        let err = bootstrap_n1(&kubeconfig, &bootstrap, &cert_dir, api.as_ref())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("denied"), "{err}");
        let created = api.created();
        assert_eq!(created.len(), 2);
        assert_eq!(created[0].metadata.name, created[1].metadata.name);
    }

    #[test]
    fn load_client_config_chooses_like_upstream() {
        let Fixture {
            dir: _dir,
            bootstrap,
            kubeconfig,
            cert_dir,
        } = fixture();
        let now = SystemTime::now();
        // No bootstrap: the kubeconfig for both.
        let p = load_client_config(&kubeconfig, None, &cert_dir, now).unwrap();
        assert!(!p.bootstrapping);
        assert_eq!(p.cert_config, kubeconfig);
        // Bootstrap and no valid kubeconfig: the bootstrap requests, the kubeconfig is written.
        let p = load_client_config(&kubeconfig, Some(&bootstrap), &cert_dir, now).unwrap();
        assert!(p.bootstrapping);
        assert_eq!(p.cert_config, bootstrap);
        assert_eq!(p.user_config, kubeconfig);
        let text = std::fs::read_to_string(&kubeconfig).unwrap();
        assert!(text.contains("kubelet-client-current.pem"), "{text}");
    }
}
