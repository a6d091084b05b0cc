//! The bundle as the volume plugins and the environment see it, and the referenced names.

#![allow(clippy::unwrap_used)]

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{
    CSIVolumeSource, ConfigMapEnvSource, ConfigMapProjection, Container, EnvFromSource,
    EphemeralContainer, LocalObjectReference, PodSpec, ProjectedVolumeSource, SecretEnvSource,
    SecretProjection, SecretVolumeSource, Volume, VolumeProjection,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_container::clock::FakeClock;

use super::*;
use crate::watch::tests::cm;

fn bundle(cms: &FakeObjects<ConfigMap>, secrets: &FakeObjects<Secret>) -> KubeletObjects {
    KubeletObjects::new(
        Arc::new(cms.clone()),
        Arc::new(secrets.clone()),
        Arc::new(secrets.clone()),
        Arc::new(FakeClock::default()),
        &ObjectsConfig {
            strategy: ChangeDetectionStrategy::Get,
            resync_interval: Duration::from_secs(60),
            get_ttl: Arc::new(|| None),
        },
    )
    .unwrap()
}

#[tokio::test]
async fn env_objects_read_data_and_report_not_found() {
    let cms = FakeObjects::default();
    let secrets = FakeObjects::default();
    cms.set("ns", "a", Some(cm("a", "1", "v", false)));
    secrets.set(
        "ns",
        "s",
        Some(Secret {
            data: Some([("pw".to_string(), ByteString(b"hunter2".to_vec()))].into()),
            ..Default::default()
        }),
    );
    let o = bundle(&cms, &secrets);
    let env: &dyn EnvObjects = &o;
    assert_eq!(env.config_map("ns", "a").await.unwrap()["k"], "v");
    assert_eq!(env.secret("ns", "s").await.unwrap()["pw"], "hunter2");
    assert_eq!(
        env.config_map("ns", "x").await.unwrap_err(),
        EnvObjectError::NotFound(r#"configmaps "x" not found"#.into())
    );
    assert_eq!(
        env.secret("ns", "x").await.unwrap_err(),
        EnvObjectError::NotFound(r#"secrets "x" not found"#.into())
    );
    let vol: &dyn VolumeObjects = &o;
    assert!(vol.get_config_map("ns", "a").await.is_ok());
    assert!(matches!(
        vol.get_secret("ns", "x").await,
        Err(ObjectError::NotFound { .. })
    ));
}

#[test]
fn referenced_names_as_upstream_visits_them() {
    let pod = Pod {
        metadata: ObjectMeta::default(),
        spec: Some(PodSpec {
            image_pull_secrets: Some(vec![LocalObjectReference {
                name: "pull".into(),
            }]),
            init_containers: Some(vec![Container {
                env_from: Some(vec![EnvFromSource {
                    config_map_ref: Some(ConfigMapEnvSource {
                        name: "init-cm".into(),
                        optional: None,
                    }),
                    secret_ref: Some(SecretEnvSource {
                        name: "init-s".into(),
                        optional: None,
                    }),
                    prefix: None,
                }]),
                ..Default::default()
            }]),
            ephemeral_containers: Some(vec![EphemeralContainer {
                env_from: Some(vec![EnvFromSource {
                    config_map_ref: Some(ConfigMapEnvSource {
                        name: "eph-cm".into(),
                        optional: None,
                    }),
                    secret_ref: None,
                    prefix: None,
                }]),
                ..Default::default()
            }]),
            volumes: Some(vec![
                Volume {
                    name: "p".into(),
                    projected: Some(ProjectedVolumeSource {
                        sources: Some(vec![
                            VolumeProjection {
                                config_map: Some(ConfigMapProjection {
                                    name: "kube-root-ca.crt".into(),
                                    ..Default::default()
                                }),
                                secret: Some(SecretProjection {
                                    name: "proj-s".into(),
                                    ..Default::default()
                                }),
                                ..Default::default()
                            },
                            VolumeProjection::default(),
                        ]),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                Volume {
                    name: "s".into(),
                    secret: Some(SecretVolumeSource {
                        secret_name: Some("vol-s".into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                Volume {
                    name: "empty".into(),
                    secret: Some(SecretVolumeSource::default()),
                    ..Default::default()
                },
                Volume {
                    name: "csi".into(),
                    csi: Some(CSIVolumeSource {
                        node_publish_secret_ref: Some(LocalObjectReference {
                            name: "csi-s".into(),
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let v = |s: &[&str]| {
        s.iter()
            .map(ToString::to_string)
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(
        names::config_map_names(&pod),
        v(&["eph-cm", "init-cm", "kube-root-ca.crt"])
    );
    assert_eq!(
        names::secret_names(&pod),
        v(&["csi-s", "init-s", "proj-s", "pull", "vol-s"])
    );
}

#[tokio::test]
async fn pull_secrets_skip_what_cannot_be_read_with_one_event() {
    let cms = FakeObjects::default();
    let secrets = FakeObjects::default();
    secrets.set(
        "ns",
        "reg",
        Some(Secret {
            metadata: ObjectMeta {
                name: Some("reg".into()),
                ..Default::default()
            },
            ..Default::default()
        }),
    );
    let o = bundle(&cms, &secrets);
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            namespace: Some("ns".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            image_pull_secrets: Some(
                ["", "reg", "gone", "gone2"]
                    .iter()
                    .map(|n| LocalObjectReference {
                        name: n.to_string(),
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        ..Default::default()
    };
    let recorder = kubelet_container::FakeRecorder::new();
    let got = o.get_pull_secrets_for_pod(&pod, &recorder).await;
    assert_eq!(
        got.iter()
            .map(|s| s.metadata.name.as_deref())
            .collect::<Vec<_>>(),
        vec![Some("reg")]
    );
    assert_eq!(
        recorder.lines(),
        vec![
            "Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (gone, gone2); attempting to pull the image may not succeed."
        ]
    );
    let none = o.get_pull_secrets_for_pod(&Pod::default(), &recorder).await;
    assert!(none.is_empty());
    assert_eq!(recorder.lines().len(), 1);
}
