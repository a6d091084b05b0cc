//! The rotating certificate manager: client-go `util/certificate/certificate_manager.go`
//! (`NewManager`, `run`, `rotateCerts`, `nextRotationDeadline`, `jitteryDuration`,
//! `certSatisfiesTemplate`, `updateServerError`) and its two kubelet instances of
//! `pkg/kubelet/certificate/kubelet.go` ([`new_kubelet_client_certificate_manager`],
//! [`new_kubelet_server_certificate_manager`]).
//!
//! The current certificate is published on a watch channel of rustls [`CertifiedKey`]s
//! ([`Manager::certified_keys`]): the API clients (`kubelet-client`) and the secure server
//! (`kubelet-server`) present whatever it holds, and the clients close their connections
//! when it changes (upstream `UpdateTransport`).
//!
//! Time goes through [`Clock`] (the deadline, the sleeps, the back-off) and the jitter
//! through [`Jitter`], so the tests run on a fake clock and a fixed jitter.

use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::NodeAddress;
use rustls::sign::CertifiedKey;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::CertificateError;
use crate::api::{CsrApi, wait_for_certificate};
use crate::cert::Certificate;
use crate::csr::{
    KUBE_APISERVER_CLIENT_KUBELET_SIGNER, KUBELET_CLIENT_USAGES, KUBELET_SERVING_SIGNER,
    KUBELET_SERVING_USAGES, RequestTemplate, make_csr, request_certificate,
};
use crate::keys::generate_key;
use crate::store::{FileStore, is_no_cert_key};

/// `certificateWaitTimeout`: how long one rotation waits for its request to be issued.
pub const CERTIFICATE_WAIT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Wall-clock time and sleeping.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now.
    fn now(&self) -> SystemTime;
    /// Sleep for `d` of this clock's time.
    fn sleep(&self, d: Duration) -> BoxFuture<'static, ()>;
}

/// The system clock and tokio's timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
    fn sleep(&self, d: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(d))
    }
}

/// A clock that moves only when told ([`FakeClock::advance`]); sleepers wake when their
/// time has come.
#[derive(Debug)]
pub struct FakeClock {
    now: Mutex<SystemTime>,
    moved: Arc<Notify>,
}

impl FakeClock {
    /// A clock at `now`.
    pub fn new(now: SystemTime) -> Arc<Self> {
        Arc::new(Self {
            now: Mutex::new(now),
            moved: Arc::new(Notify::new()),
        })
    }

    /// Move forward by `d`.
    pub fn advance(&self, d: Duration) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) += d;
        self.moved.notify_waiters();
    }
}

impl Clock for Arc<FakeClock> {
    fn now(&self) -> SystemTime {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
    fn sleep(&self, d: Duration) -> BoxFuture<'static, ()> {
        let this = self.clone();
        let until = self.now() + d;
        Box::pin(async move {
            loop {
                let moved = this.moved.notified();
                if this.now() >= until {
                    return;
                }
                moved.await;
            }
        })
    }
}

/// `jitteryDuration`: where in a certificate's lifetime it is renewed.
pub trait Jitter: Send + Sync + std::fmt::Debug {
    /// The offset from `NotBefore` for a lifetime of `total`.
    fn rotation_offset(&self, total: Duration) -> Duration;
}

/// Upstream's `wait.Jitter(total, 0.2) - 0.3*total`: uniformly 70–90 % of the lifetime.
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomJitter;

impl Jitter for RandomJitter {
    fn rotation_offset(&self, total: Duration) -> Duration {
        rotation_offset(total, rand_f64())
    }
}

/// A fixed draw in `[0, 1)` (tests).
#[derive(Debug, Clone, Copy)]
pub struct FixedJitter(pub f64);

impl Jitter for FixedJitter {
    fn rotation_offset(&self, total: Duration) -> Duration {
        rotation_offset(total, self.0)
    }
}

/// `jitteryDuration` with the random draw `r` in `[0, 1)`: `total + r*0.2*total - 0.3*total`.
pub fn rotation_offset(total: Duration, r: f64) -> Duration {
    jitter(total, 0.2, r).saturating_sub(total.mul_f64(0.3))
}

/// `wait.Jitter(d, max_factor)` with the draw `r`: `d + r*max_factor*d`.
pub fn jitter(d: Duration, max_factor: f64, r: f64) -> Duration {
    d + d.mul_f64(max_factor * r.clamp(0.0, 1.0))
}

/// A uniform draw in `[0, 1)` from the system's random source.
pub fn rand_f64() -> f64 {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 8];
    if ring::rand::SystemRandom::new().fill(&mut b).is_err() {
        return 0.5;
    }
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

/// `ClientsetFunc`: the API to request certificates with, given the current certificate
/// (`None` before the first one).
pub type ApiFactory = Arc<
    dyn Fn(
            Option<Arc<Certificate>>,
        ) -> BoxFuture<'static, Result<Arc<dyn CsrApi>, CertificateError>>
        + Send
        + Sync,
>;

/// `GetTemplate`: the request to make, or `None` when there is nothing to request yet.
pub type TemplateFn = Arc<dyn Fn() -> Option<RequestTemplate> + Send + Sync>;

/// `certificate.Config`.
pub struct ManagerConfig {
    /// The name in logs (`Name`, else the signer name).
    pub name: String,
    /// `ClientsetFn`; `None`: no rotation ("no connection to the apiserver").
    pub api: Option<ApiFactory>,
    /// `GetTemplate`.
    pub template: TemplateFn,
    /// Whether the template can change (`GetTemplate` given): checked every second.
    pub dynamic_template: bool,
    /// `SignerName`.
    pub signer_name: &'static str,
    /// `Usages`.
    pub usages: &'static [&'static str],
    /// `RequestedCertificateLifetime` (`spec.expirationSeconds`).
    pub requested_lifetime: Option<Duration>,
    /// `CertificateStore`.
    pub store: FileStore,
    /// `BootstrapCertificatePEM` / `BootstrapKeyPEM`.
    pub bootstrap: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for ManagerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerConfig")
            .field("name", &self.name)
            .field("signer_name", &self.signer_name)
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct State {
    cert: Option<Arc<Certificate>>,
    force_rotation: bool,
    server_health: bool,
    last_request: Option<RequestTemplate>,
}

/// `certificate.Manager`.
pub struct Manager {
    config: ManagerConfig,
    clock: Arc<dyn Clock>,
    jitter: Arc<dyn Jitter>,
    state: Mutex<State>,
    certified: watch::Sender<Option<Arc<CertifiedKey>>>,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("config", &self.config)
            .field("state", &self.lock())
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// `NewManager`: the store's current certificate if it has not expired, else the
    /// bootstrap pair (written to the store, rotated at once), else none (rotated at once).
    pub fn new(
        config: ManagerConfig,
        clock: Arc<dyn Clock>,
        jitter: Arc<dyn Jitter>,
    ) -> Result<Arc<Self>, CertificateError> {
        let (cert, force_rotation) = current_or_bootstrap(&config, clock.now())?;
        let certified = watch::Sender::new(cert.as_ref().map(|c| c.certified_key.clone()));
        Ok(Arc::new(Self {
            config,
            clock,
            jitter,
            state: Mutex::new(State {
                cert,
                force_rotation,
                ..State::default()
            }),
            certified,
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `Current`: the certificate, or `None` before the first one or once it expired.
    pub fn current(&self) -> Option<Arc<Certificate>> {
        let cert = self.lock().cert.clone()?;
        if self.clock.now() > cert.leaf.not_after {
            tracing::debug!(name = %self.config.name, "Current certificate is expired");
            return None;
        }
        Some(cert)
    }

    /// The certificate the TLS stacks present, updated on every rotation.
    pub fn certified_keys(&self) -> watch::Receiver<Option<Arc<CertifiedKey>>> {
        self.certified.subscribe()
    }

    /// `ServerHealthy`.
    pub fn server_healthy(&self) -> bool {
        self.lock().server_health
    }

    /// `certSatisfiesTemplateLocked`: same CN, and no DNS name, IP or organization of the
    /// template missing from the certificate.
    fn cert_satisfies_template(&self, cert: Option<&Certificate>) -> bool {
        let Some(cert) = cert else {
            return false;
        };
        let Some(t) = (self.config.template)() else {
            return true;
        };
        let leaf = &cert.leaf;
        if t.common_name != leaf.common_name {
            tracing::debug!(currentName = %leaf.common_name, requestedName = %t.common_name, "Current certificate CN does not match requested CN");
            return false;
        }
        let dns = missing(&t.dns_names, &leaf.dns_names);
        if !dns.is_empty() {
            tracing::debug!(dnsNames = ?dns, "Current certificate is missing requested DNS names");
            return false;
        }
        let ips = missing(&t.ip_addresses, &leaf.ip_addresses);
        if !ips.is_empty() {
            tracing::debug!(IPs = ?ips, "Current certificate is missing requested IP addresses");
            return false;
        }
        let orgs = missing(&t.organizations, &leaf.organizations);
        if !orgs.is_empty() {
            tracing::debug!(orgs = ?orgs, "Current certificate is missing requested orgs");
            return false;
        }
        true
    }

    /// `nextRotationDeadline`: now when forced or when the certificate does not satisfy
    /// the template, else `NotBefore` + 70–90 % of the lifetime.
    pub fn next_rotation_deadline(&self) -> SystemTime {
        let mut state = self.lock();
        if state.force_rotation {
            state.force_rotation = false;
            return self.clock.now();
        }
        let cert = state.cert.clone();
        drop(state);
        let Some(cert) = cert.filter(|c| self.cert_satisfies_template(Some(c))) else {
            return self.clock.now();
        };
        let total = cert
            .leaf
            .not_after
            .duration_since(cert.leaf.not_before)
            .unwrap_or_default();
        let deadline = cert.leaf.not_before + self.jitter.rotation_offset(total);
        tracing::debug!(
            name = %self.config.name,
            expiration = %crate::util::format_time(cert.leaf.not_after),
            deadline = %crate::util::format_time(deadline),
            "Certificate rotation deadline determined"
        );
        deadline
    }

    /// `rotateCerts`: a new key, a request for the template, the wait, the store, the
    /// swap. `Ok(false)` when it did not get a certificate (logged); errors never end
    /// the loop.
    pub async fn rotate_certs(&self) -> bool {
        let name = &self.config.name;
        tracing::debug!(name = %name, "Rotating certificates");
        let Some(template) = (self.config.template)() else {
            tracing::error!(name = %name, "Unable to generate a certificate signing request: unable to create a csr, no template available");
            return false;
        };
        let key = match generate_key() {
            Ok(k) => k,
            Err(e) => {
                tracing::error!(name = %name, err = %e, "Unable to generate a certificate signing request");
                return false;
            }
        };
        let csr = match make_csr(&key, &template) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(name = %name, err = %e, "Unable to generate a certificate signing request");
                return false;
            }
        };
        let Some(factory) = &self.config.api else {
            return false;
        };
        let api = match factory(self.current()).await {
            Ok(api) => api,
            Err(e) => {
                tracing::error!(name = %name, err = %e, "Unable to load a client to request certificates");
                return false;
            }
        };
        let (req_name, uid) = match request_certificate(
            api.as_ref(),
            &csr,
            None,
            self.config.signer_name,
            self.config.requested_lifetime,
            self.config.usages,
            &key,
        )
        .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(name = %name, err = %e, "Failed while requesting a signed certificate from the control plane");
                self.update_server_error(&e);
                return false;
            }
        };
        self.lock().last_request = Some(template);
        let cert_pem =
            match wait_for_certificate(api.as_ref(), &req_name, &uid, CERTIFICATE_WAIT_TIMEOUT)
                .await
            {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(name = %name, err = %e, "Certificate request was not signed");
                    return false;
                }
            };
        let cert = match self.config.store.update(&cert_pem, key.pem.as_bytes()) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                tracing::error!(name = %name, err = %e, "Unable to store the new cert/key pair");
                return false;
            }
        };
        self.update_cached(cert);
        true
    }

    /// `updateCached`: swap the certificate (and publish it), server assumed healthy.
    fn update_cached(&self, cert: Arc<Certificate>) {
        {
            let mut state = self.lock();
            state.server_health = true;
            state.cert = Some(cert.clone());
        }
        tracing::info!(name = %self.config.name, serial = %cert.leaf.serial, notAfter = %crate::util::format_time(cert.leaf.not_after), "Rotated certificate");
        self.certified
            .send_replace(Some(cert.certified_key.clone()));
    }

    /// `updateServerError`.
    fn update_server_error(&self, e: &CertificateError) {
        let healthy = match e {
            CertificateError::ApiStatus(s) => s.server_healthy(),
            _ => false,
        };
        self.lock().server_health = healthy;
    }

    /// Whether the dynamic template changed since the last request and the certificate
    /// does not satisfy it (the template goroutine's check).
    fn template_changed(&self) -> bool {
        let cert = self.lock().cert.clone();
        if self.cert_satisfies_template(cert.as_deref()) {
            return false;
        }
        let last = self.lock().last_request.clone();
        last != (self.config.template)()
    }

    /// `UpdateTransport`'s `exitAfter` check, every `period`: returns once the manager has
    /// had no valid certificate (none yet, deleted or expired) for longer than `exit_after`
    /// while the server is responsive (upstream then exits the process, so that a wrapper
    /// or the bootstrap credentials can lay down new initial credentials). While the server
    /// is not responsive it only logs.
    pub async fn wait_until_unusable(&self, exit_after: Duration, period: Duration) {
        let mut last_available = self.clock.now();
        loop {
            self.clock.sleep(period).await;
            let now = self.clock.now();
            if self.current().is_some() {
                last_available = now;
                continue;
            }
            if now <= last_available + exit_after {
                continue;
            }
            if self.server_healthy() {
                tracing::error!(
                    lastCertificateAvailabilityTime = %crate::util::format_time(last_available),
                    shutdownThreshold = ?exit_after,
                    "No valid client certificate is found and the server is responsive, exiting."
                );
                return;
            }
            tracing::error!(
                lastCertificateAvailabilityTime = %crate::util::format_time(last_available),
                shutdownThreshold = ?exit_after,
                "No valid client certificate is found but the server is not responsive. A restart may be necessary to retrieve new initial credentials."
            );
        }
    }

    /// `run`: sleep until the deadline (waking every second to check a dynamic template),
    /// rotate with back-off (2 s doubling, jitter 0.1, 5 steps), then every 32 s until it
    /// works; again. Returns when `cancel` fires.
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) {
        let name = self.config.name.clone();
        if self.config.api.is_none() {
            tracing::debug!(name = %name, "Certificate rotation is not enabled, no connection to the apiserver");
            return;
        }
        tracing::debug!(name = %name, "Certificate rotation is enabled");
        let work = async {
            loop {
                let deadline = self.next_rotation_deadline();
                loop {
                    let now = self.clock.now();
                    let Ok(left) = deadline.duration_since(now) else {
                        break;
                    };
                    if left.is_zero() {
                        break;
                    }
                    if self.config.dynamic_template {
                        self.clock.sleep(left.min(Duration::from_secs(1))).await;
                        if self.template_changed() {
                            tracing::debug!(name = %name, "Certificate template changed, rotating");
                            break;
                        }
                    } else {
                        tracing::debug!(name = %name, sleep = ?left, "Waiting for next certificate rotation");
                        self.clock.sleep(left).await;
                    }
                }
                if (self.config.template)().is_some() {
                    self.rotate_with_backoff().await;
                }
                // wait.UntilWithContext(rotate, time.Second)
                self.clock.sleep(Duration::from_secs(1)).await;
            }
        };
        tokio::select! {
            () = cancel.cancelled() => {}
            () = work => {}
        }
    }

    async fn rotate_with_backoff(&self) {
        let mut step = Duration::from_secs(2);
        for i in 0..5 {
            if self.rotate_certs().await {
                return;
            }
            if i < 4 {
                self.clock.sleep(jitter(step, 0.1, rand_f64())).await;
                step *= 2;
            }
        }
        tracing::error!(name = %self.config.name, "Reached backoff limit, still unable to rotate certs");
        loop {
            self.clock.sleep(Duration::from_secs(32)).await;
            if self.rotate_certs().await {
                return;
            }
        }
    }
}

/// The entries of `want` not in `have` (`sets.Difference`).
fn missing<'a, T: PartialEq>(want: &'a [T], have: &[T]) -> Vec<&'a T> {
    want.iter().filter(|w| !have.contains(w)).collect()
}

fn current_or_bootstrap(
    config: &ManagerConfig,
    now: SystemTime,
) -> Result<(Option<Arc<Certificate>>, bool), CertificateError> {
    match config.store.current() {
        Ok(c) if now < c.leaf.not_after => return Ok((Some(Arc::new(c)), false)),
        Ok(_) => {}
        Err(e) if is_no_cert_key(&e) => {}
        Err(e) => return Err(e),
    }
    let Some((cert, key)) = &config.bootstrap else {
        return Ok((None, true));
    };
    let bootstrap = Certificate::from_pem(cert, key)?;
    if let Err(e) = config.store.update(cert, key) {
        tracing::error!(err = %e, "Unable to set the cert/key pair to the bootstrap certificate");
    }
    Ok((Some(Arc::new(bootstrap)), true))
}

/// `NewKubeletClientCertificateManager`: store `kubelet-client` in `cert_dir` (falling
/// back to `cert_file`/`key_file`), template `CN=system:node:<node>, O=system:nodes`,
/// signer `kubernetes.io/kube-apiserver-client-kubelet`; `bootstrap` is the pair of a
/// kubeconfig with embedded certificate data (kubeadm's, rotated at once).
#[allow(clippy::too_many_arguments)]
pub fn new_kubelet_client_certificate_manager(
    cert_dir: &Path,
    node_name: &str,
    bootstrap: Option<(Vec<u8>, Vec<u8>)>,
    cert_file: Option<&Path>,
    key_file: Option<&Path>,
    api: Option<ApiFactory>,
    clock: Arc<dyn Clock>,
    jitter: Arc<dyn Jitter>,
) -> Result<Arc<Manager>, CertificateError> {
    let store =
        FileStore::new("kubelet-client", cert_dir, cert_dir, cert_file, key_file).map_err(|e| {
            CertificateError::Store(format!(
                "failed to initialize client certificate store: {e}"
            ))
        })?;
    let template = RequestTemplate::node(node_name);
    Manager::new(
        ManagerConfig {
            name: KUBE_APISERVER_CLIENT_KUBELET_SIGNER.into(),
            api,
            template: Arc::new(move || Some(template.clone())),
            dynamic_template: false,
            signer_name: KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
            usages: KUBELET_CLIENT_USAGES,
            requested_lifetime: None,
            store,
            bootstrap,
        },
        clock,
        jitter,
    )
    .map_err(|e| {
        CertificateError::Store(format!(
            "failed to initialize client certificate manager: {e}"
        ))
    })
}

/// `addressesToHostnamesAndIPs`: Hostname (or an IP written as one), ExternalIP,
/// InternalIP, ExternalDNS, InternalDNS; deduplicated and sorted.
pub fn addresses_to_hostnames_and_ips(addresses: &[NodeAddress]) -> (Vec<String>, Vec<IpAddr>) {
    let mut dns = std::collections::BTreeSet::new();
    let mut ips = std::collections::BTreeMap::new();
    for a in addresses.iter().filter(|a| !a.address.is_empty()) {
        let ip = a.address.parse::<IpAddr>().ok();
        match a.type_.as_str() {
            "Hostname" => match ip {
                Some(ip) => {
                    ips.insert(ip.to_string(), ip);
                }
                None => {
                    dns.insert(a.address.clone());
                }
            },
            "ExternalIP" | "InternalIP" => {
                if let Some(ip) = ip {
                    ips.insert(ip.to_string(), ip);
                }
            }
            "ExternalDNS" | "InternalDNS" => {
                dns.insert(a.address.clone());
            }
            _ => {}
        }
    }
    (dns.into_iter().collect(), ips.into_values().collect())
}

/// `newGetTemplateFn`: the serving request for the node's current addresses; `None` until
/// it has an IP (or, with `AllowDNSOnlyNodeCSR`, a DNS name).
pub fn serving_template(
    node_name: &str,
    addresses: &[NodeAddress],
    allow_dns_only: bool,
) -> Option<RequestTemplate> {
    let (dns_names, ip_addresses) = addresses_to_hostnames_and_ips(addresses);
    let has_required = !ip_addresses.is_empty() || (allow_dns_only && !dns_names.is_empty());
    has_required.then(|| RequestTemplate {
        dns_names,
        ip_addresses,
        ..RequestTemplate::node(node_name)
    })
}

/// The node's addresses as last observed (`getLastObservedNodeAddresses`).
pub type AddressesFn = Arc<dyn Fn() -> Vec<NodeAddress> + Send + Sync>;

/// `NewKubeletServerCertificateManager`: store `kubelet-server` in `cert_dir` (falling
/// back to `tlsCertFile`/`tlsPrivateKeyFile`), the template of the node's addresses,
/// signer `kubernetes.io/kubelet-serving`, usages digital signature + server auth.
#[allow(clippy::too_many_arguments)]
pub fn new_kubelet_server_certificate_manager(
    api: Option<Arc<dyn CsrApi>>,
    tls_cert_file: Option<&Path>,
    tls_key_file: Option<&Path>,
    node_name: &str,
    get_addresses: AddressesFn,
    cert_dir: &Path,
    allow_dns_only: bool,
    clock: Arc<dyn Clock>,
    jitter: Arc<dyn Jitter>,
) -> Result<Arc<Manager>, CertificateError> {
    let store = FileStore::new(
        "kubelet-server",
        cert_dir,
        cert_dir,
        tls_cert_file,
        tls_key_file,
    )
    .map_err(|e| {
        CertificateError::Store(format!(
            "failed to initialize server certificate store: {e}"
        ))
    })?;
    let node = node_name.to_string();
    let factory: Option<ApiFactory> = api.map(|api| {
        let f: ApiFactory = Arc::new(move |_| {
            let api = api.clone();
            Box::pin(async move { Ok(api) })
        });
        f
    });
    Manager::new(
        ManagerConfig {
            name: KUBELET_SERVING_SIGNER.into(),
            api: factory,
            template: Arc::new(move || serving_template(&node, &get_addresses(), allow_dns_only)),
            dynamic_template: true,
            signer_name: KUBELET_SERVING_SIGNER,
            usages: KUBELET_SERVING_USAGES,
            requested_lifetime: None,
            store,
            bootstrap: None,
        },
        clock,
        jitter,
    )
    .map_err(|e| {
        CertificateError::Store(format!(
            "failed to initialize server certificate manager: {e}"
        ))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::api::FakeCsrApi;
    use crate::testing::{TestCa, signing_api};

    /// A client manager for node `n1` on an empty store in a temporary directory, a fake
    /// API signing for an hour, a fake clock and the 80 % deadline.
    fn client_manager() -> (
        tempfile::TempDir,
        Arc<FakeCsrApi>,
        Arc<FakeClock>,
        Arc<Manager>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let ca = Arc::new(TestCa::new());
        let api = signing_api(&ca, Duration::from_secs(3600));
        let clock = FakeClock::new(SystemTime::now());
        let m = new_kubelet_client_certificate_manager(
            dir.path(),
            "n1",
            None,
            None,
            None,
            Some(factory(api.clone())),
            Arc::new(clock.clone()),
            Arc::new(FixedJitter(0.5)),
        )
        .unwrap();
        (dir, api, clock, m)
    }

    fn factory(api: Arc<FakeCsrApi>) -> ApiFactory {
        Arc::new(move |_| {
            let api: Arc<dyn CsrApi> = api.clone();
            Box::pin(async move { Ok(api) })
        })
    }

    #[test]
    fn deadline_is_70_to_90_percent_of_the_lifetime() {
        let total = Duration::from_secs(1000);
        assert_eq!(rotation_offset(total, 0.0), Duration::from_secs(700));
        assert_eq!(rotation_offset(total, 0.5), Duration::from_secs(800));
        let hi = rotation_offset(total, 0.999_999);
        assert!(
            hi < Duration::from_secs(900) && hi > Duration::from_millis(899_990),
            "{hi:?}"
        );
        for _ in 0..1000 {
            let d = RandomJitter.rotation_offset(total);
            assert!(
                d >= Duration::from_secs(700) && d < Duration::from_secs(900),
                "{d:?}"
            );
        }
    }

    #[test]
    fn next_rotation_deadline_from_the_store_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new();
        let nb = SystemTime::now() - Duration::from_secs(10);
        let (cert, key) = ca.issue_client_at("system:node:n1", nb, Duration::from_secs(10_000));
        let store = FileStore::new("kubelet-client", dir.path(), dir.path(), None, None).unwrap();
        store.update(cert.as_bytes(), key.as_bytes()).unwrap();
        let clock = FakeClock::new(SystemTime::now());
        let m = new_kubelet_client_certificate_manager(
            dir.path(),
            "n1",
            None,
            None,
            None,
            None,
            Arc::new(clock.clone()),
            Arc::new(FixedJitter(0.25)),
        )
        .unwrap();
        assert!(m.current().is_some());
        // Whole seconds: the certificate's validity has second precision.
        let leaf = &m.current().unwrap().leaf;
        assert_eq!(
            m.next_rotation_deadline(),
            leaf.not_before + Duration::from_secs(7_500)
        );
        // Another node's certificate does not satisfy the template: now.
        let m2 = new_kubelet_client_certificate_manager(
            dir.path(),
            "n2",
            None,
            None,
            None,
            None,
            Arc::new(clock.clone()),
            Arc::new(FixedJitter(0.25)),
        )
        .unwrap();
        assert_eq!(m2.next_rotation_deadline(), clock.now());
        // Expired: no current certificate.
        clock.advance(Duration::from_secs(20_000));
        assert!(m.current().is_none());
    }

    #[tokio::test]
    async fn no_certificate_rotates_at_once_and_publishes_it() {
        let (dir, api, clock, m) = client_manager();
        assert!(m.current().is_none());
        let mut keys = m.certified_keys();
        assert!(keys.borrow().is_none());
        let cancel = CancellationToken::new();
        let task = tokio::spawn(m.clone().run(cancel.clone()));
        keys.changed().await.unwrap();
        let first = keys.borrow_and_update().clone().unwrap();
        let cert = m.current().unwrap();
        assert_eq!(cert.leaf.common_name, "system:node:n1");
        assert!(Arc::ptr_eq(&first, &cert.certified_key));
        let created = api.created();
        assert_eq!(created.len(), 1);
        assert_eq!(created[0].metadata.generate_name.as_deref(), Some("csr-"));
        assert_eq!(
            created[0].spec.signer_name,
            KUBE_APISERVER_CLIENT_KUBELET_SIGNER
        );
        assert!(dir.path().join("kubelet-client-current.pem").exists());

        // Nothing more before 80 % of the hour ...
        clock.advance(Duration::from_secs(60 * 47));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(api.created().len(), 1);
        // ... and a new certificate, published to the resolvers, after it.
        clock.advance(Duration::from_secs(60 * 2));
        keys.changed().await.unwrap();
        let second = keys.borrow_and_update().clone().unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert_ne!(m.current().unwrap().leaf.serial, cert.leaf.serial);
        assert_eq!(api.created().len(), 2);
        cancel.cancel();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn failures_back_off_and_keep_the_old_certificate() {
        let (_dir, api, clock, m) = client_manager();
        api.set_create_error(Some(crate::api::CsrApiError::Forbidden("forbidden".into())));
        let cancel = CancellationToken::new();
        let task = tokio::spawn(m.clone().run(cancel.clone()));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(api.created().len(), 1, "the first try is immediate");
        // Forbidden means the server answered.
        assert!(m.server_healthy());
        clock.advance(Duration::from_millis(1500));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(api.created().len(), 1, "the back-off is 2 s (+ up to 10 %)");
        clock.advance(Duration::from_millis(800));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(api.created().len(), 2);
        api.set_create_error(None);
        clock.advance(Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(api.created().len(), 3);
        assert!(m.current().is_some());
        cancel.cancel();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn a_kubeconfig_certificate_bootstraps_the_store_and_is_rotated_at_once() {
        // kubeadm's case: --kubeconfig embeds a certificate; the store is empty.
        let dir = tempfile::tempdir().unwrap();
        let ca = Arc::new(TestCa::new());
        let (cert, key) = ca.issue_client("system:node:n1", Duration::from_secs(3600));
        let api = signing_api(&ca, Duration::from_secs(3600));
        let clock = FakeClock::new(SystemTime::now());
        let m = new_kubelet_client_certificate_manager(
            dir.path(),
            "n1",
            Some((cert.clone().into_bytes(), key.into_bytes())),
            None,
            None,
            Some(factory(api.clone())),
            Arc::new(clock.clone()),
            Arc::new(FixedJitter(0.5)),
        )
        .unwrap();
        let bootstrap = m.current().unwrap();
        assert_eq!(bootstrap.leaf.common_name, "system:node:n1");
        assert!(dir.path().join("kubelet-client-current.pem").exists());
        // Rotated at the first opportunity, well before 70 % of its lifetime.
        assert_eq!(m.next_rotation_deadline(), clock.now());
        assert!(m.next_rotation_deadline() > clock.now());
    }

    #[tokio::test]
    async fn exit_after_five_minutes_without_a_certificate_only_when_the_server_answers() {
        let (_dir, api, clock, m) = client_manager();
        api.set_create_error(Some(crate::api::CsrApiError::Server("503".into())));
        assert!(!m.rotate_certs().await);
        assert!(!m.server_healthy(), "a 5xx says the server is not healthy");
        let waiter = tokio::spawn({
            let m = m.clone();
            async move {
                m.wait_until_unusable(Duration::from_secs(300), Duration::from_secs(10))
                    .await
            }
        });
        for _ in 0..40 {
            clock.advance(Duration::from_secs(10));
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert!(
            !waiter.is_finished(),
            "not while the server does not answer"
        );
        // Forbidden: the server answers; still no certificate.
        api.set_create_error(Some(crate::api::CsrApiError::Forbidden("forbidden".into())));
        assert!(!m.rotate_certs().await);
        assert!(m.server_healthy());
        clock.advance(Duration::from_secs(10));
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
    }

    #[test]
    fn serving_template_needs_an_ip() {
        let addr = |t: &str, a: &str| NodeAddress {
            type_: t.into(),
            address: a.into(),
        };
        assert_eq!(
            serving_template("n1", &[addr("Hostname", "n1")], false),
            None
        );
        let t = serving_template("n1", &[addr("Hostname", "n1")], true).unwrap();
        assert_eq!(t.dns_names, vec!["n1".to_string()]);
        let t = serving_template(
            "n1",
            &[
                addr("InternalIP", "198.18.255.9"),
                addr("Hostname", "n1"),
                addr("InternalIP", "198.18.255.9"),
                addr("ExternalDNS", "a.example"),
                addr("Hostname", "10.0.0.1"),
                addr("InternalIP", "not-an-ip"),
            ],
            false,
        )
        .unwrap();
        assert_eq!(t.common_name, "system:node:n1");
        assert_eq!(t.organizations, vec!["system:nodes".to_string()]);
        assert_eq!(t.dns_names, vec!["a.example".to_string(), "n1".to_string()]);
        assert_eq!(
            t.ip_addresses,
            vec![
                "10.0.0.1".parse::<IpAddr>().unwrap(),
                "198.18.255.9".parse().unwrap()
            ]
        );
    }

    #[tokio::test]
    async fn serving_manager_requests_when_the_addresses_arrive() {
        let dir = tempfile::tempdir().unwrap();
        let ca = Arc::new(TestCa::new());
        let api = signing_api(&ca, Duration::from_secs(3600));
        let addresses = Arc::new(Mutex::new(Vec::<NodeAddress>::new()));
        let a = addresses.clone();
        let clock = FakeClock::new(SystemTime::now());
        let m = new_kubelet_server_certificate_manager(
            Some(api.clone()),
            None,
            None,
            "n1",
            Arc::new(move || a.lock().unwrap().clone()),
            dir.path(),
            false,
            Arc::new(clock.clone()),
            Arc::new(FixedJitter(0.5)),
        )
        .unwrap();
        let cancel = CancellationToken::new();
        let task = tokio::spawn(m.clone().run(cancel.clone()));
        for _ in 0..3 {
            clock.advance(Duration::from_secs(1));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(api.created().is_empty(), "no template, no request");
        *addresses.lock().unwrap() = vec![NodeAddress {
            type_: "InternalIP".into(),
            address: "198.18.255.9".into(),
        }];
        let mut keys = m.certified_keys();
        for _ in 0..20 {
            clock.advance(Duration::from_secs(1));
            tokio::time::sleep(Duration::from_millis(20)).await;
            if keys.borrow().is_some() {
                break;
            }
        }
        assert!(keys.borrow_and_update().is_some());
        let created = api.created();
        assert_eq!(created[0].spec.signer_name, KUBELET_SERVING_SIGNER);
        assert_eq!(
            created[0].spec.usages.as_deref().unwrap(),
            &["digital signature".to_string(), "server auth".to_string()]
        );
        let cert = m.current().unwrap();
        assert_eq!(
            cert.leaf.ip_addresses,
            vec!["198.18.255.9".parse::<IpAddr>().unwrap()]
        );
        assert!(dir.path().join("kubelet-server-current.pem").exists());
        cancel.cancel();
        task.await.unwrap();
    }
}
