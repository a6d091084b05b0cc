//! Pods from the API server (issue #7 items 5 and 7): the pod source, the kubelet's own
//! Node, and mirror pods.
//!
//! | Rust module      | Upstream Go file                                                     |
//! |------------------|----------------------------------------------------------------------|
//! | [`source`]       | `pkg/kubelet/config/apiserver.go` (`NewSourceApiserver`)             |
//! | [`node`]         | `kubelet.go` `NewMainKubelet` node informer, `kubelet_getters.go` `GetNode`/`getNodeAnyWay` |
//! | [`mirror`]       | `pkg/kubelet/pod/mirror_client.go`, `pod_manager.go` `IsMirrorPodOf`, `kubelet.go` `tryReconcileMirrorPods` |
//! | [`reflector`]    | client-go `tools/cache/reflector.go` (list+watch mode)               |
//! | [`undelta`]      | client-go `tools/cache/undelta_store.go`                             |
//! | [`backoff`]      | apimachinery `wait.NewExponentialBackoffManager` (the reflector's)   |
//! | [`kube_lw`]      | client-go `cache.NewListWatchFromClient` with a field selector       |
//! | [`error`]        | apimachinery `api/errors` (the predicates the callers need)          |
//! | [`fake`]         | a scripted [`reflector::ListerWatcher`] for tests                    |
//!
//! Every API call goes through a trait with a kube-rs implementation and a recording fake:
//! [`reflector::ListerWatcher`] ([`kube_lw::KubeListerWatcher`], [`fake::FakeListerWatcher`])
//! and [`mirror::MirrorClient`] ([`mirror::KubeMirrorClient`], [`mirror::FakeMirrorClient`]).
//!
//! # Wiring (what `kubelet-app` does in API server mode)
//!
//! 1. [`node::NodeLister::new`] at `NewMainKubelet` (empty in standalone mode, so
//!    [`node::NodeInfoGetter`] falls back to the standalone node); admission reads it.
//! 2. [`node::run_node_informer`] over [`node::node_lister_watcher`] (`metadata.name=<node>`).
//! 3. [`source::run_source_apiserver`] over [`source::pod_lister_watcher`]
//!    (`spec.nodeName=<node>`), feeding `PodConfig::channel(API_SERVER_SOURCE)`.
//! 4. [`mirror::KubeMirrorClient`] for `SyncPod` ([`mirror::try_reconcile_mirror_pod`]) and
//!    housekeeping (orphaned mirror pods).
//!
//! The API server being unreachable is never fatal: the reflectors log and retry with
//! client-go's back-off; static pods keep running.

pub mod backoff;
pub mod error;
pub mod fake;
pub mod kube_lw;
pub mod mirror;
pub mod node;
pub mod reflector;
pub mod source;
pub mod undelta;

pub use error::ApiError;
pub use mirror::{
    FakeMirrorClient, KubeMirrorClient, MirrorCall, MirrorClient, MirrorError, is_mirror_pod_of,
    try_reconcile_mirror_pod,
};
pub use node::{NodeInfoGetter, NodeLister, node_lister_watcher, run_node_informer};
pub use source::{pod_lister_watcher, run_source_apiserver};
