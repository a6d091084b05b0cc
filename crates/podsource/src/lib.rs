//! Pod sources: static pod files and URL, merged into one stream of pod updates
//! (mirrors `pkg/kubelet/config` of the upstream kubelet).
//!
//! # Pieces
//!
//! - [`PodConfig`] (`config.go`): the merger. Every source sends full snapshots
//!   ([`SourceUpdate`]); the merger turns them into incremental [`PodUpdate`]s
//!   (`ADD`/`UPDATE`/`DELETE`/`REMOVE`/`RECONCILE`, upstream's `PodConfigNotificationIncremental`
//!   mode) on one `tokio::sync::mpsc` channel, sets `kubernetes.io/config.source` and
//!   `kubernetes.io/config.seen`, and answers [`PodConfig::seen_all_sources`].
//! - The file source ([`file`](mod@file), `file.go` + `file_linux.go`): `staticPodPath` (a directory
//!   or a single file), inotify plus a re-scan every `fileCheckFrequency`. Bad manifests are
//!   logged once and skipped; everything else keeps being reported.
//! - The HTTP source ([`http`], `http.go`): `staticPodURL` polled every
//!   `httpCheckFrequency` (`http://`, or `https://` with rustls/ring and the system roots),
//!   a pod or a `PodList`; failures keep the previous pods.
//! - Static pod decoding ([`static_pod`], `common.go`): YAML/JSON → `v1.Pod`
//!   ([`decode`]), apiserver defaulting ([`defaults`]), static pod defaults (UID, name
//!   suffix, namespace, node name, config hash, NoExecute toleration), validation like
//!   `ValidatePodCreate` ([`validation`]) and the ban on API object references
//!   ([`api_refs`]).
//!
//! Source names are [`FILE_SOURCE`] (`"file"`), [`HTTP_SOURCE`] (`"http"`) and
//! [`API_SERVER_SOURCE`] (`"api"`): the API watch lives elsewhere and feeds its snapshots
//! through [`PodConfig::channel`].
//!
//! # Wiring
//!
//! ```no_run
//! use kubelet_podsource::{PodConfig, PodOperation};
//! use std::time::Duration;
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn run() {
//! let cancel = CancellationToken::new();
//! let (config, mut updates) = PodConfig::new("node-1");
//! config.start_file_source("/etc/kubernetes/manifests", Duration::from_secs(20), cancel.clone());
//! config.start_http_source(
//!     "http://127.0.0.1:8080/pods",
//!     vec![("Authorization".into(), "Bearer t".into())],
//!     Duration::from_secs(20),
//!     cancel.clone(),
//! );
//! // The API source, fed by a pod watch filtered on spec.nodeName:
//! let api = config.channel(kubelet_podsource::API_SERVER_SOURCE, cancel.clone());
//! # drop(api);
//! while let Some(update) = updates.recv().await {
//!     match update.op {
//!         PodOperation::Add => { /* HandlePodAdditions(update.pods) */ }
//!         PodOperation::Update => { /* HandlePodUpdates */ }
//!         PodOperation::Remove => { /* HandlePodRemoves */ }
//!         PodOperation::Reconcile => { /* HandlePodReconcile */ }
//!         PodOperation::Delete => { /* graceful delete: HandlePodUpdates */ }
//!     }
//! }
//! # }
//! ```

pub mod api_refs;
pub mod clock;
pub mod config;
pub mod decode;
pub mod defaults;
pub mod file;
mod hash;
pub mod http;
pub mod static_pod;
pub mod types;
pub mod validation;

pub use clock::{Clock, FakeClock, RealClock};
pub use config::PodConfig;
pub use file::{MAX_CONFIG_LENGTH, start_file_source};
pub use http::start_http_source;
pub use static_pod::{
    ManifestError, ManifestOrigin, PodError, StaticPodOptions, decode_static_pod,
    decode_static_pods,
};
pub use types::{
    ALL_SOURCE, API_SERVER_SOURCE, CONFIG_FIRST_SEEN_ANNOTATION_KEY, CONFIG_HASH_ANNOTATION_KEY,
    CONFIG_MIRROR_ANNOTATION_KEY, CONFIG_SOURCE_ANNOTATION_KEY, FILE_SOURCE, HTTP_SOURCE,
    PodOperation, PodUpdate, SourceUpdate,
};
