//! Register/unregister through pods (references counted per pod, updates diffed), and the
//! three strategies behind one `get`.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapKeySelector, ConfigMapVolumeSource, Container, EnvVar, EnvVarSource,
    PodSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_container::clock::FakeClock;

use super::*;
use crate::api::{FakeCall, FakeObjects};
use crate::names::config_map_names;
use crate::watch::tests::{cm, list};

/// A pod whose container reads ConfigMap key `env_cm` and that mounts ConfigMap `vol_cm`.
fn pod(uid: &str, env_cm: &str, vol_cm: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("p-{uid}")),
            namespace: Some("ns".into()),
            uid: Some(uid.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                env: Some(vec![EnvVar {
                    name: "X".into(),
                    value: None,
                    value_from: Some(EnvVarSource {
                        config_map_key_ref: Some(ConfigMapKeySelector {
                            name: env_cm.into(),
                            key: "k".into(),
                            optional: None,
                        }),
                        ..Default::default()
                    }),
                }]),
                ..Default::default()
            }],
            volumes: Some(vec![Volume {
                name: "v".into(),
                config_map: Some(ConfigMapVolumeSource {
                    name: vol_cm.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn watching(
    api: &FakeObjects<ConfigMap>,
) -> (ObjectManager<ConfigMap>, Arc<ObjectCache<ConfigMap>>) {
    let cache = Arc::new(
        ObjectCache::new(
            Arc::new(api.clone()),
            Arc::new(FakeClock::default()),
            Duration::from_secs(300),
        )
        .unwrap(),
    );
    (
        ObjectManager::new(Backend::Watch(cache.clone()), config_map_names),
        cache,
    )
}

fn started(api: &FakeObjects<ConfigMap>) -> Vec<String> {
    api.calls()
        .into_iter()
        .filter_map(|c| match c {
            FakeCall::ListerWatcher(_, name) => Some(name),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn register_and_unregister_count_references_per_pod() {
    let api = FakeObjects::default();
    for name in ["a", "b", "c"] {
        api.lister_watcher_of("ns", name)
            .push_list(list(vec![cm(name, "1", name, false)], "1"));
    }
    let (m, cache) = watching(&api);
    m.register_pod(&pod("u1", "a", "b"));
    m.register_pod(&pod("u1", "a", "b"));
    assert_eq!(
        started(&api),
        vec!["a", "b"],
        "a re-registration adds nothing"
    );
    assert_eq!(m.get("ns", "b").await.unwrap().data.unwrap()["k"], "b");

    // An update: `b` dropped, `c` added.
    m.register_pod(&pod("u1", "a", "c"));
    assert_eq!(started(&api), vec!["a", "b", "c"]);
    assert_eq!(cache.len(), 2);
    assert!(
        m.get("ns", "b")
            .await
            .unwrap_err()
            .to_string()
            .contains("not registered")
    );

    m.register_pod(&pod("u2", "a", "a"));
    m.unregister_pod(&pod("u1", "a", "c"));
    assert_eq!(cache.len(), 1, "u2 still refers to a");
    assert!(m.get("ns", "a").await.is_ok());
    m.unregister_pod(&pod("u2", "a", "a"));
    m.unregister_pod(&pod("u2", "a", "a"));
    assert!(cache.is_empty());
    assert_eq!(started(&api).len(), 3);
}

#[tokio::test]
async fn get_strategy_always_gets_and_registers_nothing() {
    let api = FakeObjects::default();
    api.set("ns", "a", Some(cm("a", "1", "v", false)));
    let m = ObjectManager::new(Backend::Get(Arc::new(api.clone())), config_map_names);
    m.register_pod(&pod("u1", "a", "a"));
    m.get("ns", "a").await.unwrap();
    m.get("ns", "a").await.unwrap();
    assert_eq!(
        m.get("ns", "gone").await.unwrap_err().to_string(),
        r#"configmaps "gone" not found"#
    );
    assert_eq!(
        api.calls(),
        vec![
            FakeCall::Get("ns".into(), "a".into(), false),
            FakeCall::Get("ns".into(), "a".into(), false),
            FakeCall::Get("ns".into(), "gone".into(), false),
        ]
    );
}

#[tokio::test]
async fn cache_strategy_reads_once_per_ttl_after_registration() {
    let api = FakeObjects::default();
    api.set("ns", "a", Some(cm("a", "1", "v", false)));
    let store = crate::cache::ObjectStore::new(
        Arc::new(api.clone()),
        Arc::new(FakeClock::default()),
        Arc::new(|| None),
        crate::cache::DEFAULT_TTL,
    );
    let m = ObjectManager::new(Backend::Cache(store), config_map_names);
    assert!(
        m.get("ns", "a")
            .await
            .unwrap_err()
            .to_string()
            .contains("not registered")
    );
    m.register_pod(&pod("u1", "a", "a"));
    m.get("ns", "a").await.unwrap();
    m.get("ns", "a").await.unwrap();
    assert_eq!(api.calls().len(), 1);
    m.unregister_pod(&pod("u1", "a", "a"));
    assert!(m.get("ns", "a").await.is_err());
}

#[test]
fn strategies_parse_as_the_config_spells_them() {
    assert_eq!("Watch".parse(), Ok(ChangeDetectionStrategy::Watch));
    assert_eq!("Cache".parse(), Ok(ChangeDetectionStrategy::Cache));
    assert_eq!("Get".parse(), Ok(ChangeDetectionStrategy::Get));
    assert_eq!(
        "watch"
            .parse::<ChangeDetectionStrategy>()
            .unwrap_err()
            .to_string(),
        "unknown configmap and secret manager mode: watch"
    );
}
