//! `kubelet-events` against the real kube-apiserver of `hack/cluster-up.sh`, with a node's
//! identity (`system:node:krs-t-events-1`, the event client of `kubelet-client`): an event
//! about a pod in `t-events-*` is created as client-go's recorder builds it, a duplicate
//! becomes a `count: 2` patch of the same object, a node event lands in `default`, and the
//! server's answers are classified as `recordEvent` needs (404 on a patch of a missing
//! event → create). Ignored only when built with `KRS_SKIP_CLUSTER_TESTS=1`.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Namespace, ObjectReference};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use kubelet_client::KubeletClients;
use kubelet_container::RealClock;
use kubelet_container::events::{EventType, node_ref};
use kubelet_e2e::cluster;
use kubelet_events::{EventSink, KubeEventSink, SinkError, make_event_recorder};
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const NODE: &str = "krs-t-events-1";

/// A fresh `t-events-*` namespace.
async fn namespace(admin: &kube::Client) -> Result<String, kube::Error> {
    let name = format!("t-events-{:x}", std::process::id() ^ fastrand_u32());
    let api: Api<Namespace> = Api::all(admin.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.clone());
    api.create(&PostParams::default(), &ns).await?;
    Ok(name)
}

/// Runs `body` with the admin client, the clients of node [`NODE`] (its own
/// credentials, as the kubelet's) and a fresh namespace, then deletes the namespace
/// whatever the outcome.
async fn with_node<F, Fut>(body: F) -> TestResult
where
    F: FnOnce(kube::Client, KubeletClients, String) -> Fut,
    Fut: std::future::Future<Output = TestResult>,
{
    let c = cluster::ensure()?;
    let admin = kube::Client::try_from(kubelet_client::load_kubeconfig(&c.kubeconfig).await?)?;
    let node = c.node_files(NODE, "127.0.0.1")?;
    let clients = KubeletClients::build(
        &node.kubeconfig,
        &kubelet_config::new_kubelet_configuration(),
    )
    .await?;
    let ns = namespace(&admin).await?;
    let result = body(admin.clone(), clients, ns.clone()).await;
    let api: Api<Namespace> = Api::all(admin);
    api.delete(&ns, &DeleteParams::default()).await?;
    result
}

fn fastrand_u32() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}

/// Polls the events of `ns` about `name` until `done` holds for one of them (30 s).
async fn wait_event(
    api: &Api<Event>,
    name: &str,
    done: impl Fn(&Event) -> bool,
) -> Result<Event, Box<dyn std::error::Error>> {
    let lp = ListParams::default().fields(&format!("involvedObject.name={name}"));
    let mut last = Vec::new();
    for _ in 0..300 {
        last = api.list(&lp).await?.items;
        if let Some(e) = last.iter().find(|e| done(e)) {
            return Ok(e.clone());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("no matching event about {name}: {last:?}").into())
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn pod_events_are_created_then_counted_with_a_patch() -> TestResult {
    with_node(|admin, clients, ns| async move {
        let cancel = CancellationToken::new();
        let _stop = cancel.clone().drop_guard();
        let recorder = make_event_recorder(
            NODE,
            Some(Arc::new(KubeEventSink::new(clients.event.clone()))),
            Arc::new(RealClock),
            cancel,
        );
        let pod = ObjectReference {
            kind: Some("Pod".into()),
            api_version: Some("v1".into()),
            namespace: Some(ns.clone()),
            name: Some("web".into()),
            uid: Some("8f1c7a2e-0000-4000-8000-000000000001".into()),
            field_path: Some("spec.containers{c}".into()),
            ..ObjectReference::default()
        };
        recorder.event(
            &pod,
            EventType::Normal,
            "Pulling",
            "Pulling image \"busybox\"",
        );
        let events: Api<Event> = Api::namespaced(admin.clone(), &ns);
        let first = wait_event(&events, "web", |_| true).await?;
        assert_eq!(first.count, Some(1));
        assert_eq!(first.type_.as_deref(), Some("Normal"));
        assert_eq!(first.reason.as_deref(), Some("Pulling"));
        assert_eq!(first.message.as_deref(), Some("Pulling image \"busybox\""));
        let source = first.source.clone().unwrap();
        assert_eq!(source.component.as_deref(), Some("kubelet"));
        assert_eq!(source.host.as_deref(), Some(NODE));
        assert_eq!(first.reporting_component.as_deref(), Some("kubelet"));
        assert_eq!(first.reporting_instance.as_deref(), Some(NODE));
        assert_eq!(first.involved_object, pod);
        let name = first.metadata.name.clone().unwrap();
        assert!(name.starts_with("web."), "{name}");

        // Same event again: the same object, count 2 (a patch, not a second event).
        tokio::time::sleep(Duration::from_millis(1100)).await;
        recorder.event(
            &pod,
            EventType::Normal,
            "Pulling",
            "Pulling image \"busybox\"",
        );
        let second = wait_event(&events, "web", |e| e.count == Some(2)).await?;
        assert_eq!(second.metadata.name.as_deref(), Some(name.as_str()));
        assert_eq!(second.first_timestamp, first.first_timestamp);
        assert!(second.last_timestamp > first.last_timestamp);
        assert_eq!(events.list(&ListParams::default()).await?.items.len(), 1);

        // A node event goes to `default`.
        recorder.event(
            &node_ref(NODE),
            EventType::Normal,
            "Starting",
            "Starting kubelet.",
        );
        let default: Api<Event> = Api::namespaced(admin.clone(), "default");
        let started = wait_event(&default, NODE, |e| {
            e.reason.as_deref() == Some("Starting")
                && e.source.as_ref().and_then(|s| s.host.as_deref()) == Some(NODE)
        })
        .await?;
        assert_eq!(started.involved_object.kind.as_deref(), Some("Node"));
        default
            .delete(
                started.metadata.name.as_deref().unwrap(),
                &DeleteParams::default(),
            )
            .await?;
        Ok(())
    })
    .await
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn server_answers_are_classified_as_record_event_needs() -> TestResult {
    with_node(|_admin, clients, ns| async move {
        let sink = KubeEventSink::new(clients.event.clone());
        let mut event = Event::default();
        event.metadata.name = Some("web.1".into());
        event.metadata.namespace = Some(ns.clone());
        event.involved_object = ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some(ns.clone()),
            name: Some("web".into()),
            ..ObjectReference::default()
        };
        event.reason = Some("Started".into());
        event.message = Some("Container started".into());
        event.type_ = Some("Normal".into());
        event.count = Some(2);

        // A patch of an event that does not exist: 404, which recordEvent turns into a create.
        let err = sink
            .patch(&event, &serde_json::json!({"count": 2}))
            .await
            .unwrap_err();
        assert!(err.is_not_found(), "{err:?}");
        let created = sink.create(&event).await?;
        assert!(created.metadata.resource_version.is_some());
        // Creating it again: AlreadyExists, a rejection not retried and logged at V(5).
        let err = sink.create(&event).await.unwrap_err();
        assert!(err.is_expected_rejection(), "{err:?}");
        // The patch now applies.
        let patched = sink
            .patch(&event, &serde_json::json!({"count": 3, "message": "again"}))
            .await?;
        assert_eq!(patched.count, Some(3));
        assert_eq!(patched.message.as_deref(), Some("again"));
        // An invalid event is rejected (422), not retried.
        let mut bad = event.clone();
        bad.metadata.name = Some("web.2".into());
        bad.involved_object.namespace = Some("elsewhere".into());
        let err = sink.create(&bad).await.unwrap_err();
        assert!(
            matches!(err, SinkError::Status { code: 422, .. }),
            "{err:?}"
        );
        Ok(())
    })
    .await
}
