//! The reflector and the pod source on the scripted lister-watcher: snapshots after every
//! change, resume from the last resource version, relist on 410, back-off on failures.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kubelet_podsource::SourceUpdate;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::ApiError;
use crate::fake::{FakeCall, FakeListerWatcher, FakeWatch};
use crate::node::NodeLister;
use crate::reflector::{ObjectList, WatchEvent};
use crate::source::run_source_apiserver;

fn pod(name: &str, rv: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": rv},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}
    }))
    .unwrap()
}

fn list<K>(items: Vec<K>, rv: &str) -> Result<ObjectList<K>, ApiError> {
    Ok(ObjectList {
        items,
        resource_version: rv.into(),
    })
}

fn gone() -> ApiError {
    ApiError::Status {
        code: 410,
        reason: "Expired".into(),
        message: "too old resource version: 5 (10)".into(),
    }
}

fn names(u: &SourceUpdate) -> Vec<String> {
    u.pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect()
}

struct Running {
    lw: FakeListerWatcher<Pod>,
    rx: mpsc::Receiver<SourceUpdate>,
    node: NodeLister,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

/// The pod source over `lw`, with a synced node informer.
fn start(lw: FakeListerWatcher<Pod>) -> Running {
    let node = NodeLister::new("n1");
    node.set_node(None);
    start_with_node(lw, node)
}

fn start_with_node(lw: FakeListerWatcher<Pod>, node: NodeLister) -> Running {
    let (tx, rx) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(run_source_apiserver(
        lw.clone(),
        node.clone(),
        tx,
        cancel.clone(),
    ));
    Running {
        lw,
        rx,
        node,
        cancel,
        task,
    }
}

impl Running {
    async fn next(&mut self) -> SourceUpdate {
        tokio::time::timeout(Duration::from_secs(3600), self.rx.recv())
            .await
            .unwrap()
            .unwrap()
    }

    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn every_change_delivers_the_full_snapshot() {
    let lw = FakeListerWatcher::default();
    lw.push_list(list(vec![pod("a", "2")], "5"));
    lw.push_watch(FakeWatch::EventsThenHang(vec![
        Ok(WatchEvent::Added(pod("b", "6"))),
        Ok(WatchEvent::Bookmark("7".into())),
        Ok(WatchEvent::Modified(pod("a", "8"))),
        Ok(WatchEvent::Deleted(pod("b", "9"))),
    ]));
    let mut r = start(lw);
    assert_eq!(names(&r.next().await), ["a"], "the first list");
    assert_eq!(names(&r.next().await), ["a", "b"], "added");
    // The bookmark changes nothing: the next snapshot is the modification.
    let modified = r.next().await;
    assert_eq!(names(&modified), ["a", "b"]);
    assert_eq!(
        modified.pods[0].metadata.resource_version.as_deref(),
        Some("8")
    );
    assert_eq!(names(&r.next().await), ["a"], "deleted");
    assert_eq!(
        r.lw.calls(),
        [FakeCall::List("0".into()), FakeCall::Watch("5".into())],
        "the first list may be served from the watch cache; the watch starts at the list's version"
    );
    r.stop().await;
}

fn with_managed_fields(mut p: Pod) -> Pod {
    p.metadata.managed_fields = Some(vec![
        serde_json::from_value(json!({
            "manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:containers": {}}}
        }))
        .unwrap(),
    ]);
    p
}

/// Listed and watched pods reach the kubelet without `managedFields` (the transform of
/// upstream's scheduler and controller-manager informers), the rest untouched.
#[tokio::test(start_paused = true)]
async fn pods_arrive_without_managed_fields() {
    let lw = FakeListerWatcher::default();
    lw.push_list(list(vec![with_managed_fields(pod("a", "2"))], "5"));
    lw.push_watch(FakeWatch::EventsThenHang(vec![Ok(WatchEvent::Added(
        with_managed_fields(pod("b", "6")),
    ))]));
    let mut r = start(lw);
    let listed = r.next().await;
    let watched = r.next().await;
    for p in listed.pods.iter().chain(&watched.pods) {
        assert_eq!(p.metadata.managed_fields, None, "{:?}", p.metadata.name);
        assert_eq!(
            p.spec.as_ref().unwrap().containers[0].image.as_deref(),
            Some("i")
        );
    }
    assert_eq!(names(&watched), ["a", "b"]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_empty_first_list_is_still_a_snapshot() {
    let lw = FakeListerWatcher::default();
    lw.push_list(list(vec![], "3"));
    let mut r = start(lw);
    assert!(r.next().await.pods.is_empty());
    // Cancelling stops the source while its watch hangs.
    r.lw.wait_for_calls(2).await;
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_ended_watch_resumes_from_the_last_resource_version() {
    let lw = FakeListerWatcher::default();
    lw.push_list(list(vec![], "5"));
    lw.push_watch(FakeWatch::Events(vec![
        Ok(WatchEvent::Added(pod("a", "6"))),
        Ok(WatchEvent::Bookmark("9".into())),
    ]));
    lw.push_watch(FakeWatch::EventsThenHang(vec![Ok(WatchEvent::Added(pod(
        "b", "10",
    )))]));
    let mut r = start(lw);
    r.next().await;
    r.next().await;
    assert_eq!(names(&r.next().await), ["a", "b"]);
    assert_eq!(
        r.lw.calls(),
        [
            FakeCall::List("0".into()),
            FakeCall::Watch("5".into()),
            FakeCall::Watch("9".into()),
        ],
        "no relist, the bookmark's version is the resume point"
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn gone_relists_from_the_last_version_then_from_the_latest() {
    let lw = FakeListerWatcher::default();
    lw.push_list(list(vec![pod("a", "4")], "5"));
    lw.push_watch(FakeWatch::Events(vec![
        Ok(WatchEvent::Added(pod("b", "6"))),
        Ok(WatchEvent::Error(gone())),
    ]));
    // The relist at the last version is gone too: a consistent list follows at once.
    lw.push_list(Err(gone()));
    lw.push_list(list(vec![pod("c", "20")], "21"));
    let mut r = start(lw);
    assert_eq!(names(&r.next().await), ["a"]);
    assert_eq!(names(&r.next().await), ["a", "b"]);
    assert_eq!(
        names(&r.next().await),
        ["c"],
        "the relist replaces everything: a and b are gone from the snapshot"
    );
    r.lw.wait_for_calls(5).await;
    assert_eq!(
        r.lw.calls(),
        [
            FakeCall::List("0".into()),
            FakeCall::Watch("5".into()),
            FakeCall::List("6".into()),
            FakeCall::List(String::new()),
            FakeCall::Watch("21".into()),
        ]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_api_server_is_retried_with_back_off() {
    let lw = FakeListerWatcher::default();
    lw.push_list(Err(ApiError::Transport("connection refused".into())));
    lw.push_list(Err(ApiError::Transport("connection refused".into())));
    lw.push_list(list(vec![pod("a", "1")], "2"));
    // The watch cannot connect: it is retried from the same version, no relist.
    lw.push_watch(FakeWatch::Fail(ApiError::Transport(
        "connection refused".into(),
    )));
    lw.push_watch(FakeWatch::EventsThenHang(vec![Ok(WatchEvent::Added(pod(
        "b", "3",
    )))]));
    let start_time = tokio::time::Instant::now();
    let mut r = start(lw);
    assert_eq!(names(&r.next().await), ["a"]);
    assert!(
        start_time.elapsed() >= crate::backoff::INITIAL_BACKOFF * 3,
        "two back-offs (800 ms, then 1.6 s) before the list succeeded: {:?}",
        start_time.elapsed()
    );
    assert_eq!(names(&r.next().await), ["a", "b"]);
    assert_eq!(
        r.lw.calls(),
        [
            FakeCall::List("0".into()),
            FakeCall::List("0".into()),
            FakeCall::List("0".into()),
            FakeCall::Watch("2".into()),
            FakeCall::Watch("2".into()),
        ]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_source_waits_for_the_node_informer() {
    let lw = FakeListerWatcher::default();
    lw.push_list(list(vec![pod("a", "1")], "2"));
    let node = NodeLister::new("n1");
    let mut r = start_with_node(lw, node);
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        r.lw.calls().is_empty(),
        "no pod list before the node synced"
    );
    assert!(r.rx.try_recv().is_err());
    r.node.set_node(None);
    assert_eq!(names(&r.next().await), ["a"]);
    r.stop().await;
}

fn node_obj(name: &str, rv: &str, label: &str) -> k8s_openapi::api::core::v1::Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": rv, "labels": {"l": label}}
    }))
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_node_informer_keeps_the_latest_node() {
    let lw = FakeListerWatcher::default();
    // The node is not registered yet: an empty list still syncs the informer.
    lw.push_list(list(vec![], "1"));
    lw.push_watch(FakeWatch::EventsThenHang(vec![
        Ok(WatchEvent::Added(node_obj("n1", "2", "a"))),
        Ok(WatchEvent::Modified(node_obj("n1", "3", "b"))),
    ]));
    let lister = NodeLister::new("n1");
    let cancel = CancellationToken::new();
    let task = tokio::spawn(crate::node::run_node_informer(
        lw.clone(),
        lister.clone(),
        cancel.clone(),
    ));
    lister.wait_for_sync().await;
    lw.wait_for_calls(2).await;
    tokio::time::sleep(Duration::from_millis(1)).await;
    let label = |l: &NodeLister| {
        l.get()
            .and_then(|n| n.metadata.labels.as_ref()?.get("l").cloned())
    };
    assert_eq!(label(&lister).as_deref(), Some("b"), "the latest version");
    cancel.cancel();
    task.await.unwrap();

    // A deleted Node is gone from the lister.
    let lw = FakeListerWatcher::default();
    lw.push_list(list(vec![node_obj("n1", "1", "a")], "1"));
    lw.push_watch(FakeWatch::EventsThenHang(vec![Ok(WatchEvent::Deleted(
        node_obj("n1", "2", "a"),
    ))]));
    let lister = NodeLister::new("n1");
    let cancel = CancellationToken::new();
    let task = tokio::spawn(crate::node::run_node_informer(
        lw.clone(),
        lister.clone(),
        cancel.clone(),
    ));
    lw.wait_for_calls(2).await;
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(lister.has_synced());
    assert!(lister.get().is_none());
    cancel.cancel();
    task.await.unwrap();
}
