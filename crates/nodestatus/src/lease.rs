//! The node lease: `k8s.io/component-helpers/apimachinery/lease/controller.go` (`Run`,
//! `sync`, `backoffEnsureLease`, `ensureLease`, `retryUpdateLease`, `newLease`) with the
//! kubelet's `newLeasePostProcessFunc`, `pkg/kubelet/util/nodelease.go` `SetNodeOwnerFunc`.
//!
//! The kubelet calls `Run` (not `Start`): the lease is not deleted at start or stop.
//! `onRepeatedHeartbeatFailure` (closing the heartbeat client's connections) is not built.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use kubelet_container::clock::Clock;
use tokio_util::sync::CancellationToken;

use crate::api::{ApiError, NAMESPACE_NODE_LEASE, NodeApi};
use crate::node_status::jitter;

/// `maxUpdateRetries`.
pub const MAX_UPDATE_RETRIES: usize = 5;
/// `maxBackoff`.
pub const MAX_BACKOFF: Duration = Duration::from_secs(7);
/// `nodeLeaseRenewIntervalFraction`.
pub const NODE_LEASE_RENEW_INTERVAL_FRACTION: f64 = 0.25;

/// Why a lease could not be prepared or renewed.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// `SetNodeOwnerFunc` could not read the Node.
    #[error("{0}")]
    GetNode(ApiError),
    /// `retryUpdateLease` gave up.
    #[error("failed {0} attempts to update lease")]
    UpdateRetries(usize),
}

/// The lease controller of one node.
pub struct LeaseController {
    api: Arc<dyn NodeApi>,
    clock: Arc<dyn Clock>,
    holder_identity: String,
    lease_name: String,
    lease_namespace: String,
    lease_duration_seconds: i32,
    renew_interval: Duration,
    node_name: String,
    latest_lease: Option<Lease>,
    on_failure: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for LeaseController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseController")
            .field("lease", &self.lease_name)
            .field("renew_interval", &self.renew_interval)
            .finish_non_exhaustive()
    }
}

impl LeaseController {
    /// The kubelet's controller (`NewMainKubelet`): lease `<node>` in `kube-node-lease`
    /// held by the node, renewed every `leaseDuration × 0.25`, owned by the Node.
    pub fn for_node(
        api: Arc<dyn NodeApi>,
        clock: Arc<dyn Clock>,
        node_name: &str,
        lease_duration_seconds: i32,
    ) -> Self {
        let lease_duration =
            Duration::from_secs(u64::try_from(lease_duration_seconds).unwrap_or_default());
        LeaseController {
            api,
            clock,
            holder_identity: node_name.to_string(),
            lease_name: node_name.to_string(),
            lease_namespace: NAMESPACE_NODE_LEASE.to_string(),
            lease_duration_seconds,
            renew_interval: lease_duration.mul_f64(NODE_LEASE_RENEW_INTERVAL_FRACTION),
            node_name: node_name.to_string(),
            latest_lease: None,
            on_failure: None,
        }
    }

    /// Calls `f` whenever a renewal fails (the node status manager then reads the Node
    /// from the API server for a while, see `NodeStatusManager::note_heartbeat_failure`).
    pub fn with_failure_hook(mut self, f: Arc<dyn Fn() + Send + Sync>) -> Self {
        self.on_failure = Some(f);
        self
    }

    fn failed(&self) {
        if let Some(f) = &self.on_failure {
            f();
        }
    }

    /// The renew interval.
    pub fn renew_interval(&self) -> Duration {
        self.renew_interval
    }

    /// `Run`: `sync` every renew interval (4 % jitter, sliding) until cancelled.
    pub async fn run(mut self, cancel: CancellationToken) {
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = self.sync() => {}
            }
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(jitter(self.renew_interval, 0.04)) => {}
            }
        }
    }

    /// `sync`: renew from the latest lease, else ensure it exists (creating it) and renew.
    pub async fn sync(&mut self) {
        if let Some(latest) = self.latest_lease.clone() {
            match self.retry_update_lease(latest).await {
                Ok(()) => return,
                Err(e) => {
                    self.failed();
                    tracing::info!(err = %e, "failed to update lease using latest lease, fallback to ensure lease")
                }
            }
        }
        let (lease, created) = self.backoff_ensure_lease().await;
        self.latest_lease = lease.clone();
        if !created
            && let Some(lease) = lease
            && let Err(e) = self.retry_update_lease(lease).await
        {
            tracing::error!(err = %e, interval = ?self.renew_interval, "Will retry updating lease");
        }
    }

    /// `backoffEnsureLease`: `ensureLease` until it does not fail, waiting 200 ms doubling
    /// to 7 s between tries.
    async fn backoff_ensure_lease(&self) -> (Option<Lease>, bool) {
        let mut sleep = Duration::from_millis(100);
        loop {
            match self.ensure_lease().await {
                Ok(r) => return r,
                Err(e) => {
                    self.failed();
                    sleep = (sleep * 2).min(MAX_BACKOFF);
                    tracing::error!(err = %e, interval = ?sleep, "Failed to ensure lease exists, will retry");
                    tokio::time::sleep(sleep).await;
                }
            }
        }
    }

    /// `ensureLease`: get it, or create it when it does not exist (not created, without
    /// error, when the new lease cannot be prepared).
    async fn ensure_lease(&self) -> Result<(Option<Lease>, bool), ApiError> {
        match self
            .api
            .get_lease(&self.lease_namespace, &self.lease_name)
            .await
        {
            Ok(lease) => Ok((Some(lease), false)),
            Err(e) if e.is_not_found() => {
                let Ok(to_create) = self.new_lease(None).await else {
                    return Ok((None, false));
                };
                let lease = self.api.create_lease(&to_create).await?;
                Ok((Some(lease), true))
            }
            Err(e) => Err(e),
        }
    }

    /// `retryUpdateLease`.
    async fn retry_update_lease(&mut self, mut base: Lease) -> Result<(), LeaseError> {
        for _ in 0..MAX_UPDATE_RETRIES {
            match self.new_lease(Some(&base)).await {
                Err(e) => tracing::error!(err = %e, "Failed to prepare lease"),
                Ok(to_update) => match self.api.update_lease(&to_update).await {
                    Ok(lease) => {
                        self.latest_lease = Some(lease);
                        return Ok(());
                    }
                    Err(e) => {
                        tracing::error!(err = %e, "Failed to update lease");
                        if e.is_conflict() {
                            if let (Some(l), _) = self.backoff_ensure_lease().await {
                                base = l;
                            }
                            continue;
                        }
                    }
                },
            }
        }
        Err(LeaseError::UpdateRetries(MAX_UPDATE_RETRIES))
    }

    /// `newLease`: a copy of `base` (or a new lease held by this node) with the duration
    /// and renew time set, then `SetNodeOwnerFunc`.
    async fn new_lease(&self, base: Option<&Lease>) -> Result<Lease, LeaseError> {
        let mut lease = base.cloned().unwrap_or_else(|| Lease {
            metadata: ObjectMeta {
                name: Some(self.lease_name.clone()),
                namespace: Some(self.lease_namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.holder_identity.clone()),
                ..LeaseSpec::default()
            }),
        });
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        spec.lease_duration_seconds = Some(self.lease_duration_seconds);
        spec.renew_time = Some(MicroTime(self.clock.now()));
        self.set_node_owner(&mut lease).await?;
        Ok(lease)
    }

    /// `SetNodeOwnerFunc`: until the lease has an owner, read the Node and make it the
    /// owner (so the lease goes with the Node).
    async fn set_node_owner(&self, lease: &mut Lease) -> Result<(), LeaseError> {
        if lease
            .metadata
            .owner_references
            .as_ref()
            .is_some_and(|o| !o.is_empty())
        {
            return Ok(());
        }
        match self.api.get_node(&self.node_name, false).await {
            Ok(node) => {
                lease.metadata.owner_references = Some(vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Node".into(),
                    name: self.node_name.clone(),
                    uid: node.metadata.uid.unwrap_or_default(),
                    ..OwnerReference::default()
                }]);
                Ok(())
            }
            Err(e) => {
                tracing::error!(err = %e, node = %self.node_name, "Failed to get node when trying to set owner ref to the node lease");
                Err(LeaseError::GetNode(e))
            }
        }
    }
}
