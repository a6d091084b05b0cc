//! The kubelet's own Node (upstream `NewMainKubelet`'s node informer: a shared informer on
//! `metadata.name=<node>`, its lister, and `nodeHasSynced`; `kubelet_getters.go`
//! `GetNode`/`getNodeAnyWay`).
//!
//! [`NodeLister`] is readable synchronously by admission and the mirror pod client. In
//! standalone mode it stays empty, as upstream's empty indexer does, and [`NodeInfoGetter`]
//! falls back to the node the kubelet would register (`initialNode`).

use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use kubelet_admission::{NodeGetter, NodeInfo};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::kube_lw::{KubeListerWatcher, one_term_equal_selector};
use crate::reflector::{ListerWatcher, Reflector, Store};

/// The latest Node object of this node, shared (cheap to clone).
#[derive(Debug, Clone)]
pub struct NodeLister {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    node_name: String,
    node: RwLock<Option<Arc<Node>>>,
    synced: watch::Sender<bool>,
}

impl NodeLister {
    /// An empty lister for `node_name` (never synced until an informer fills it).
    pub fn new(node_name: impl Into<String>) -> Self {
        Self {
            inner: Arc::new(Inner {
                node_name: node_name.into(),
                node: RwLock::new(None),
                synced: watch::Sender::new(false),
            }),
        }
    }

    /// The node name.
    pub fn node_name(&self) -> &str {
        &self.inner.node_name
    }

    /// The Node object, when the API server has one (upstream `nodeLister.Get`).
    pub fn get(&self) -> Option<Arc<Node>> {
        self.inner
            .node
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The informer has listed once (upstream `nodeHasSynced`).
    pub fn has_synced(&self) -> bool {
        *self.inner.synced.borrow()
    }

    /// Waits until [`NodeLister::has_synced`].
    pub async fn wait_for_sync(&self) {
        let mut rx = self.inner.synced.subscribe();
        // An error means the sender is gone, which cannot happen while `self` lives.
        let _ = rx.wait_for(|synced| *synced).await;
    }

    fn set(&self, node: Option<Node>) {
        let node = node.filter(|n| n.metadata.name.as_deref() == Some(self.node_name()));
        *self
            .inner
            .node
            .write()
            .unwrap_or_else(PoisonError::into_inner) = node.map(Arc::new);
    }

    /// Sets the node directly (tests, and callers that fetched it themselves).
    pub fn set_node(&self, node: Option<Node>) {
        self.set(node);
        self.inner.synced.send_replace(true);
    }
}

/// The store behind the node informer: the object named like the node.
struct NodeStore(NodeLister);

#[async_trait]
impl Store<Node> for NodeStore {
    async fn replace(&mut self, items: Vec<Node>) {
        let name = self.0.node_name().to_string();
        let node = items
            .into_iter()
            .find(|n| n.metadata.name.as_deref() == Some(name.as_str()));
        self.0.set_node(node);
    }

    async fn upsert(&mut self, item: Node) {
        if item.metadata.name.as_deref() == Some(self.0.node_name()) {
            self.0.set(Some(item));
        }
    }

    async fn delete(&mut self, item: Node) {
        if item.metadata.name.as_deref() == Some(self.0.node_name()) {
            self.0.set(None);
        }
    }
}

/// The node informer's list+watch: `metadata.name=<node>`.
pub fn node_lister_watcher(client: kube::Client, node_name: &str) -> KubeListerWatcher<Node> {
    KubeListerWatcher::new(client, one_term_equal_selector("metadata.name", node_name))
}

/// Runs the node informer into `lister` until `cancel` fires.
pub async fn run_node_informer<L: ListerWatcher<Node>>(
    lw: L,
    lister: NodeLister,
    cancel: CancellationToken,
) {
    tracing::info!(
        node = lister.node_name(),
        "Attempting to sync node with API server"
    );
    Reflector::new("node informer", lw, NodeStore(lister))
        .run(cancel)
        .await;
}

/// Admission's node (upstream `getNodeAnyWay`): the informer's Node, else `initial`.
#[derive(Debug, Clone)]
pub struct NodeInfoGetter {
    lister: NodeLister,
    initial: NodeInfo,
}

impl NodeInfoGetter {
    /// Reads `lister`, falling back to `initial` (the standalone `initialNode`).
    pub fn new(lister: NodeLister, initial: NodeInfo) -> Self {
        Self { lister, initial }
    }
}

impl NodeGetter for NodeInfoGetter {
    fn get_node_any_way(&self) -> NodeInfo {
        match self.lister.get() {
            Some(node) => NodeInfo::from_node(&node),
            None => self.initial.clone(),
        }
    }
}
