//! `kubelet-objects` against the real kube-apiserver of `hack/cluster-up.sh`, with a node's
//! own identity (`system:node:krs-t-objects-<pid>-…`, so the Node authorizer and
//! `NodeRestriction` decide what it may read, as for a kubelet):
//!
//! - the kubelet of `run_kubelet` in API server mode, over the recording fake CRI
//!   (`crates/app/tests/support`), as such a node: a pod bound to it with `env` from a
//!   ConfigMap key and a Secret key (`valueFrom`) and `envFrom` both with prefixes gets
//!   exactly those variables in its CRI container config (read through the Watch
//!   managers: the node may only list+watch objects its pods refer to); a missing key and a
//!   missing ConfigMap leave the container waiting in `CreateContainerConfigError` with
//!   upstream's messages, in the pod status the API server holds;
//! - the token manager over the kube-rs client: a TokenRequest bound to a pod of the node
//!   (whose token volume names the audience, as NodeRestriction requires) returns a token
//!   whose audience (checked by a TokenReview) and expiry match the request, cached on the
//!   second call.
//!
//! No kubelet uses the shared containerd: no runtime lock. Ignored only when built with
//! `KRS_SKIP_CLUSTER_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/node_env.rs"]
mod node_env;
#[path = "../../crates/app/tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{
    BoundObjectReference, TokenRequest, TokenRequestSpec, TokenReview, TokenReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kubelet_container::RealClock;
use kubelet_objects::{ChangeDetectionStrategy, KubeletObjects, ObjectsConfig};
use kubelet_volume::VolumeObjects;
use node_env::{Env, env, eventually};
use serde_json::json;
use support::TestKubelet;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The Node of [`env`] with allocatable set, as registration would leave it (admission
/// reads it).
async fn node_env(suffix: &str) -> Result<Env, Box<dyn std::error::Error>> {
    let e = env("objects", suffix).await?;
    Api::<Node>::all(e.admin.clone())
        .patch_status(
            &e.node,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"},
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "20"}}}),
            ),
        )
        .await?;
    Ok(e)
}

/// A pod bound to `node` whose container `main` has `env` and `envFrom`.
fn pod(name: &str, node: &str, env: serde_json::Value, env_from: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        // No service account token volume: not this test's subject.
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
            "automountServiceAccountToken": false,
            "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "1d"],
                "env": env, "envFrom": env_from}]}
    }))
    .unwrap()
}

async fn create_objects(e: &Env) -> TestResult {
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "cfg"}, "data": {"greeting": "hello", "other": "x"}
    }))?;
    Api::<ConfigMap>::namespaced(e.admin.clone(), &e.ns)
        .create(&PostParams::default(), &cm)
        .await?;
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "sec"}, "stringData": {"password": "s3cr3t"}
    }))?;
    Api::<Secret>::namespaced(e.admin.clone(), &e.ns)
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

/// The waiting reason and message of container `main` as the API server has them.
async fn api_waiting(pods: &Api<Pod>, name: &str) -> Option<(String, String)> {
    let p = pods.get_opt(name).await.ok().flatten()?;
    let cs = p.status?.container_statuses?;
    let w = cs.into_iter().find(|c| c.name == "main")?.state?.waiting?;
    Some((w.reason?, w.message?))
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_from_config_maps_and_secrets_on_a_kubelet_rs_node() -> TestResult {
    let e = node_env("env").await?;
    create_objects(&e).await?;
    let mut k = TestKubelet::new("").await;
    k.server.flags.hostname_override = e.node.clone();
    k.clients = Some(e.node_clients.clone());
    k.start().await;
    let pods: Api<Pod> = Api::namespaced(e.admin.clone(), &e.ns);

    let ok = pods
        .create(
            &PostParams::default(),
            &pod(
                "env-ok",
                &e.node,
                json!([
                    {"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "greeting"}}},
                    {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "password"}}},
                    {"name": "OPTIONAL", "valueFrom": {"configMapKeyRef": {"name": "none", "key": "k", "optional": true}}},
                    {"name": "BOTH", "value": "$(GREETING)-$(S_password)"}
                ]),
                json!([
                    {"prefix": "CM_", "configMapRef": {"name": "cfg"}},
                    {"prefix": "S_", "secretRef": {"name": "sec"}}
                ]),
            ),
        )
        .await?;
    let uid = ok.metadata.uid.clone().unwrap();
    let c = k.wait_running(&uid, "main").await;
    let envs: Vec<(String, String)> = c
        .config
        .envs
        .iter()
        .map(|kv| {
            (
                kv.key.clone(),
                String::from_utf8_lossy(&kv.value).into_owned(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("CM_greeting", "hello"),
        ("CM_other", "x"),
        ("S_password", "s3cr3t"),
        ("GREETING", "hello"),
        ("PASSWORD", "s3cr3t"),
        ("BOTH", "hello-s3cr3t"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    // The declared variables first, then the service variables (`getServiceEnvVarMap`:
    // the `kubernetes` Service of `default`, from the Service informer).
    let (services, declared): (Vec<_>, Vec<_>) = envs
        .into_iter()
        .partition(|(k, _)| k.starts_with("KUBERNETES_"));
    assert_eq!(declared, want);
    let host = services
        .iter()
        .find(|(k, _)| k == "KUBERNETES_SERVICE_HOST")
        .map(|(_, v)| v.clone());
    assert!(
        host.as_deref().is_some_and(|h| h.starts_with("198.18.")),
        "service variables: {services:?}"
    );

    // A missing key, then a missing ConfigMap: upstream's CreateContainerConfigError.
    let cases = [
        (
            "env-nokey",
            json!([{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "nokey"}}}]),
            json!([]),
            format!("couldn't find key nokey in ConfigMap {}/cfg", e.ns),
        ),
        (
            "env-nocm",
            json!([]),
            json!([{"configMapRef": {"name": "absent"}}]),
            r#"configmap "absent" not found"#.to_string(),
        ),
        (
            "env-nosecretkey",
            json!([{"name": "X", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "nokey"}}}]),
            json!([]),
            format!("couldn't find key nokey in Secret {}/sec", e.ns),
        ),
    ];
    for (name, env, env_from, message) in cases {
        let p = pods
            .create(&PostParams::default(), &pod(name, &e.node, env, env_from))
            .await?;
        let uid = p.metadata.uid.clone().unwrap();
        let got = eventually(&format!("{name} waiting in the API"), || {
            api_waiting(&pods, name)
        })
        .await;
        assert_eq!(
            got,
            ("CreateContainerConfigError".to_string(), message),
            "{name}"
        );
        assert!(k.containers(&uid).is_empty(), "{name} never created");
    }
    k.stop().await;
    Ok(())
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_requests_bound_to_a_pod_match_audience_and_expiry() -> TestResult {
    let e = env("objects", "token").await?;
    let pods: Api<Pod> = Api::namespaced(e.admin.clone(), &e.ns);
    let audience = format!("krs-objects-{}", std::process::id());
    // NodeRestriction lets a node request only the audiences its pods' token volumes name.
    let mut with_volume = pod("token", &e.node, json!([]), json!([]));
    with_volume.spec.as_mut().unwrap().volumes = Some(vec![serde_json::from_value(json!({
        "name": "tok",
        "projected": {"sources": [{"serviceAccountToken": {
            "audience": audience, "expirationSeconds": 3600, "path": "token"}}]}
    }))?]);
    let p = pods.create(&PostParams::default(), &with_volume).await?;
    let objects = KubeletObjects::from_client(
        e.node_clients.main.clone(),
        Arc::new(RealClock),
        &ObjectsConfig {
            strategy: ChangeDetectionStrategy::Watch,
            resync_interval: Duration::from_secs(60),
            get_ttl: Arc::new(|| None),
        },
    )?;
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: vec![audience.clone()],
            expiration_seconds: Some(3600),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: p.metadata.name.clone(),
                uid: p.metadata.uid.clone(),
            }),
        },
        ..Default::default()
    };
    let before = jiff::Timestamp::now();
    let tr = objects
        .get_service_account_token(&e.ns, "default", &request)
        .await?;
    let status = tr.status.clone().unwrap();
    assert!(!status.token.is_empty());
    let lifetime = status.expiration_timestamp.0.duration_since(before);
    assert!(
        (3590..=3610).contains(&lifetime.as_secs()),
        "expires in {lifetime:?}, asked for 3600 s"
    );
    // The API server authenticates it for exactly the requested audience.
    let review: TokenReview = serde_json::from_value(json!({"spec": {}}))?;
    let review = TokenReview {
        spec: TokenReviewSpec {
            token: Some(status.token.clone()),
            audiences: Some(vec![audience.clone()]),
        },
        ..review
    };
    let reviewed = Api::<TokenReview>::all(e.admin.clone())
        .create(&PostParams::default(), &review)
        .await?
        .status
        .unwrap();
    assert_eq!(reviewed.authenticated, Some(true), "{reviewed:?}");
    assert_eq!(reviewed.audiences, Some(vec![audience.clone()]));
    assert_eq!(
        reviewed.user.and_then(|u| u.username).as_deref(),
        Some(format!("system:serviceaccount:{}:default", e.ns).as_str())
    );
    // Cached: the same token again, until 80 % of its lifetime.
    let again = objects
        .get_service_account_token(&e.ns, "default", &request)
        .await?;
    assert_eq!(again.status.unwrap().token, status.token);
    assert_eq!(objects.tokens.len(), 1);
    objects.delete_service_account_token(p.metadata.uid.as_deref().unwrap());
    assert!(objects.tokens.is_empty());
    Ok(())
}
