//! The CertificateSigningRequest API the kubelet uses (client-go
//! `CertificatesV1().CertificateSigningRequests()`: create, get, list+watch one object by
//! name), behind [`CsrApi`], with the kube-rs implementation [`KubeCsrApi`] and the
//! recording fake [`FakeCsrApi`]; and `WaitForCertificate` on top of it
//! ([`wait_for_certificate`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestStatus,
};
use kube::Api;
use kube::api::{ListParams, PostParams, WatchEvent, WatchParams};

use crate::CertificateError;
use crate::csr::{CsrState, csr_state};

/// An API error, sorted the way the certificate code tells them apart.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CsrApiError {
    /// 409 AlreadyExists.
    #[error("{0}")]
    AlreadyExists(String),
    /// 404 NotFound.
    #[error("{0}")]
    NotFound(String),
    /// 401 Unauthorized.
    #[error("{0}")]
    Unauthorized(String),
    /// 403 Forbidden.
    #[error("{0}")]
    Forbidden(String),
    /// 500 with an unexpected body (`IsUnexpectedServerError`), or any other 5xx.
    #[error("{0}")]
    Server(String),
    /// Anything else (transport, decoding).
    #[error("{0}")]
    Other(String),
}

impl CsrApiError {
    /// `updateServerError`: whether the error says the server is alive.
    pub fn server_healthy(&self) -> bool {
        matches!(
            self,
            Self::Unauthorized(_) | Self::NotFound(_) | Self::Forbidden(_)
        )
    }
}

impl From<kube::Error> for CsrApiError {
    fn from(e: kube::Error) -> Self {
        match &e {
            kube::Error::Api(s) => match s.code {
                409 if s.reason == "AlreadyExists" => Self::AlreadyExists(e.to_string()),
                404 => Self::NotFound(e.to_string()),
                401 => Self::Unauthorized(e.to_string()),
                403 => Self::Forbidden(e.to_string()),
                c if c >= 500 => Self::Server(e.to_string()),
                _ => Self::Other(e.to_string()),
            },
            _ => Self::Other(e.to_string()),
        }
    }
}

/// One observation of the request being waited for.
#[derive(Debug, Clone)]
pub enum CsrEvent {
    /// Listed, added or modified.
    Observed(Box<CertificateSigningRequest>),
    /// Deleted.
    Deleted,
}

/// The CertificateSigningRequest calls of the certificate code.
pub trait CsrApi: Send + Sync + std::fmt::Debug {
    /// Create `csr`; returns the created object's name and UID.
    fn create(
        &self,
        csr: CertificateSigningRequest,
    ) -> BoxFuture<'_, Result<(String, String), CsrApiError>>;
    /// Get the request `name`.
    fn get<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<CertificateSigningRequest, CsrApiError>>;
    /// List then watch the request `name` (field selector `metadata.name`): its current
    /// state, then every change, until the watch ends.
    fn watch<'a>(&'a self, name: &'a str) -> BoxStream<'a, Result<CsrEvent, CsrApiError>>;
}

/// `WaitForCertificate`: watch `name` until it is approved and issued (its certificate
/// PEM), denied or failed (an error), deleted, or `timeout` passes. A watch that ends is
/// re-opened after a second, as `UntilWithSync` relists.
pub async fn wait_for_certificate(
    api: &dyn CsrApi,
    name: &str,
    uid: &str,
    timeout: Duration,
) -> Result<Vec<u8>, CertificateError> {
    let wait = async {
        loop {
            let mut events = api.watch(name);
            while let Some(event) = events.next().await {
                match event {
                    Ok(CsrEvent::Observed(csr)) => {
                        if let CsrState::Issued(cert) = csr_state(&csr, uid)? {
                            return Ok(cert);
                        }
                    }
                    Ok(CsrEvent::Deleted) => {
                        return Err(CertificateError::Csr(format!("csr {name:?} was deleted")));
                    }
                    Err(e) => {
                        tracing::debug!(err = %e, "Error fetching v1 certificate signing request");
                        break;
                    }
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    };
    tokio::time::timeout(timeout, wait).await.map_err(|_| {
        CertificateError::Timeout(format!(
            "timed out waiting for the certificate of csr {name:?}"
        ))
    })?
}

/// [`CsrApi`] on a kube-rs client.
#[derive(Clone)]
pub struct KubeCsrApi {
    api: Api<CertificateSigningRequest>,
}

impl std::fmt::Debug for KubeCsrApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeCsrApi").finish_non_exhaustive()
    }
}

impl KubeCsrApi {
    /// The cluster-scoped CSR API of `client`.
    pub fn new(client: kube::Client) -> Self {
        Self {
            api: Api::all(client),
        }
    }
}

impl CsrApi for KubeCsrApi {
    fn create(
        &self,
        csr: CertificateSigningRequest,
    ) -> BoxFuture<'_, Result<(String, String), CsrApiError>> {
        Box::pin(async move {
            let created = self.api.create(&PostParams::default(), &csr).await?;
            Ok((
                created.metadata.name.unwrap_or_default(),
                created.metadata.uid.unwrap_or_default(),
            ))
        })
    }

    fn get<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<CertificateSigningRequest, CsrApiError>> {
        Box::pin(async move { Ok(self.api.get(name).await?) })
    }

    fn watch<'a>(&'a self, name: &'a str) -> BoxStream<'a, Result<CsrEvent, CsrApiError>> {
        let selector = format!("metadata.name={name}");
        let listed = {
            let selector = selector.clone();
            async move {
                let list = self
                    .api
                    .list(&ListParams::default().fields(&selector))
                    .await?;
                Ok::<_, CsrApiError>(list)
            }
        };
        futures::stream::once(listed)
            .map_ok(move |list| {
                let rv = list.metadata.resource_version.clone().unwrap_or_default();
                let items = futures::stream::iter(
                    list.items
                        .into_iter()
                        .map(|c| Ok(CsrEvent::Observed(Box::new(c)))),
                );
                let selector = selector.clone();
                let watched = futures::stream::once(async move {
                    self.api
                        .watch(&WatchParams::default().fields(&selector).timeout(290), &rv)
                        .await
                        .map_err(CsrApiError::from)
                })
                .map_ok(|events| {
                    events
                        .map_err(CsrApiError::from)
                        .try_filter_map(|e| async move {
                            Ok(match e {
                                WatchEvent::Added(c) | WatchEvent::Modified(c) => {
                                    Some(CsrEvent::Observed(Box::new(c)))
                                }
                                WatchEvent::Deleted(_) => Some(CsrEvent::Deleted),
                                WatchEvent::Bookmark(_) => None,
                                WatchEvent::Error(s) => {
                                    return Err(CsrApiError::Other(format!(
                                        "watch error: {}",
                                        s.message
                                    )));
                                }
                            })
                        })
                })
                .try_flatten();
                items.chain(watched)
            })
            .try_flatten()
            .boxed()
    }
}

/// A recording in-memory [`CsrApi`]: created objects get a UID (`uid-<n>`) and are kept;
/// tests approve, issue, deny or delete them, or install an auto-signer.
#[derive(Default)]
pub struct FakeCsrApi {
    state: Mutex<FakeState>,
    changed: tokio::sync::watch::Sender<u64>,
}

/// Issues a certificate PEM for a created request (the fake's auto-approver + signer).
pub type FakeSigner = Arc<dyn Fn(&CertificateSigningRequest) -> Option<Vec<u8>> + Send + Sync>;

#[derive(Default)]
struct FakeState {
    objects: BTreeMap<String, CertificateSigningRequest>,
    created: Vec<CertificateSigningRequest>,
    next: u64,
    signer: Option<FakeSigner>,
    create_error: Option<CsrApiError>,
}

impl std::fmt::Debug for FakeCsrApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("FakeCsrApi")
            .field("objects", &s.objects.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl FakeCsrApi {
    /// An empty API.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self) {
        self.changed.send_modify(|v| *v += 1);
    }

    /// Approve and issue every request from now on with `signer`.
    pub fn set_signer(&self, signer: FakeSigner) {
        self.lock().signer = Some(signer);
    }

    /// Make the next creates fail with `err` (`None` clears).
    pub fn set_create_error(&self, err: Option<CsrApiError>) {
        self.lock().create_error = err;
    }

    /// Every object passed to `create`, in order.
    pub fn created(&self) -> Vec<CertificateSigningRequest> {
        self.lock().created.clone()
    }

    /// The stored object `name`.
    pub fn object(&self, name: &str) -> Option<CertificateSigningRequest> {
        self.lock().objects.get(name).cloned()
    }

    /// Add a condition (`Approved`, `Denied`, `Failed`) and, if given, the certificate.
    pub fn set_condition(&self, name: &str, type_: &str, certificate: Option<Vec<u8>>) {
        {
            let mut s = self.lock();
            if let Some(csr) = s.objects.get_mut(name) {
                let status = csr
                    .status
                    .get_or_insert_with(CertificateSigningRequestStatus::default);
                status.conditions.get_or_insert_with(Vec::new).push(
                    CertificateSigningRequestCondition {
                        type_: type_.to_string(),
                        status: "True".into(),
                        reason: Some(format!("Fake{type_}")),
                        message: Some(format!("{type_} by the fake")),
                        ..CertificateSigningRequestCondition::default()
                    },
                );
                if let Some(c) = certificate {
                    status.certificate = Some(k8s_openapi::ByteString(c));
                }
            }
        }
        self.bump();
    }

    /// Delete the object `name`.
    pub fn delete(&self, name: &str) {
        self.lock().objects.remove(name);
        self.bump();
    }
}

impl CsrApi for FakeCsrApi {
    fn create(
        &self,
        mut csr: CertificateSigningRequest,
    ) -> BoxFuture<'_, Result<(String, String), CsrApiError>> {
        Box::pin(async move {
            let signer = {
                let mut s = self.lock();
                s.created.push(csr.clone());
                if let Some(e) = s.create_error.clone() {
                    return Err(e);
                }
                s.next += 1;
                let n = s.next;
                let name = match csr.metadata.name.clone() {
                    Some(name) => name,
                    None => format!(
                        "{}{n}",
                        csr.metadata.generate_name.clone().unwrap_or_default()
                    ),
                };
                if s.objects.contains_key(&name) {
                    return Err(CsrApiError::AlreadyExists(format!(
                        "certificatesigningrequests.certificates.k8s.io {name:?} already exists"
                    )));
                }
                csr.metadata.name = Some(name.clone());
                csr.metadata.uid = Some(format!("uid-{n}"));
                s.objects.insert(name.clone(), csr.clone());
                s.signer.clone().map(|signer| (signer, name))
            };
            self.bump();
            let name = csr.metadata.name.clone().unwrap_or_default();
            let uid = csr.metadata.uid.clone().unwrap_or_default();
            if let Some((signer, name)) = signer
                && let Some(cert) = signer(&csr)
            {
                self.set_condition(&name, "Approved", Some(cert));
            }
            Ok((name, uid))
        })
    }

    fn get<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<CertificateSigningRequest, CsrApiError>> {
        Box::pin(async move {
            self.object(name)
                .ok_or_else(|| CsrApiError::NotFound(format!("{name:?} not found")))
        })
    }

    fn watch<'a>(&'a self, name: &'a str) -> BoxStream<'a, Result<CsrEvent, CsrApiError>> {
        let rx = self.changed.subscribe();
        futures::stream::unfold((rx, true), move |(mut rx, first)| async move {
            if !first && rx.changed().await.is_err() {
                return None;
            }
            rx.borrow_and_update();
            let event = match self.object(name) {
                Some(c) => CsrEvent::Observed(Box::new(c)),
                None if first => {
                    // Not there yet: wait for the next change.
                    return Some((Ok(CsrEvent::Observed(Box::default())), (rx, false)));
                }
                None => CsrEvent::Deleted,
            };
            Some((Ok(event), (rx, false)))
        })
        .filter(|e| {
            let keep = !matches!(e, Ok(CsrEvent::Observed(c)) if c.metadata.name.is_none());
            async move { keep }
        })
        .boxed()
    }
}
