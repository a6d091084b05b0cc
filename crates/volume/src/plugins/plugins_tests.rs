//! Payload tests, after upstream's `configmap_test.go`, `secret_test.go`,
//! `downwardapi_test.go` and `projected_test.go` `TestMakePayload`/`TestCollectData` cases.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapProjection, ConfigMapVolumeSource, Container, DownwardAPIProjection,
    DownwardAPIVolumeFile, DownwardAPIVolumeSource, KeyToPath, ObjectFieldSelector, PodSpec,
    ProjectedVolumeSource, ResourceFieldSelector, ResourceRequirements, Secret, SecretProjection,
    SecretVolumeSource, ServiceAccountTokenProjection, Volume, VolumeProjection,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::atomic_writer::FileProjection;
use crate::fake::{FakeVolumeObjects, ObjectCall};

fn file(data: &str, mode: u32) -> FileProjection {
    FileProjection {
        data: data.as_bytes().to_vec(),
        mode,
        fs_user: None,
    }
}

fn payload(files: &[(&str, &str, u32)]) -> Payload {
    files
        .iter()
        .map(|(p, d, m)| ((*p).to_string(), file(d, *m)))
        .collect()
}

fn ktp(key: &str, path: &str, mode: Option<i32>) -> KeyToPath {
    KeyToPath {
        key: key.into(),
        path: path.into(),
        mode,
    }
}

fn config_map(data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

fn pod() -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("ns".into()),
            uid: Some("uid-1".into()),
            labels: Some(BTreeMap::from([
                ("app".to_string(), "web".to_string()),
                ("a".to_string(), "say \"hi\"".to_string()),
            ])),
            annotations: Some(BTreeMap::from([
                ("note".to_string(), "x".to_string()),
                ("ctl".to_string(), "a\u{1}b\u{7f}é".to_string()),
            ])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            service_account_name: Some("builder".into()),
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    limits: Some(BTreeMap::from([(
                        "memory".to_string(),
                        Quantity("64Mi".into()),
                    )])),
                    requests: Some(BTreeMap::from([(
                        "cpu".to_string(),
                        Quantity("250m".into()),
                    )])),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn node() -> NodeEnvInfo {
    NodeEnvInfo {
        allocatable_milli_cpu: 2000,
        allocatable_memory: 1 << 30,
        ..NodeEnvInfo::default()
    }
}

#[test]
fn configmap_make_payload_cases() {
    let cm = config_map(&[("foo", "foo"), ("bar", "bar")]);
    let mut binary = cm.clone();
    binary.binary_data = Some(BTreeMap::from([(
        "bin".to_string(),
        ByteString(vec![0, 1, 2]),
    )]));
    // no overrides (data and binaryData)
    let p = configmap::make_payload(&[], &binary, 0o644, false).unwrap();
    assert_eq!(p.len(), 3);
    assert_eq!(p["bin"].data, vec![0, 1, 2]);
    assert_eq!(p["foo"], file("foo", 0o644));
    // basic, subdirs
    let p =
        configmap::make_payload(&[ktp("foo", "path/to/foo.txt", None)], &cm, 0o644, false).unwrap();
    assert_eq!(p, payload(&[("path/to/foo.txt", "foo", 0o644)]));
    // mapping with mode, mapping with defaultMode
    let items = [
        ktp("foo", "foo.txt", Some(0o400)),
        ktp("bar", "bar.bin", None),
    ];
    let p = configmap::make_payload(&items, &cm, 0o600, false).unwrap();
    assert_eq!(
        p,
        payload(&[("foo.txt", "foo", 0o400), ("bar.bin", "bar", 0o600)])
    );
    // non existent key
    let err = configmap::make_payload(&[ktp("zab", "path/to/foo.txt", None)], &cm, 0o644, false)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "configmap references non-existent config key: zab"
    );
    // optional non existent key
    let p =
        configmap::make_payload(&[ktp("zab", "path/to/foo.txt", None)], &cm, 0o644, true).unwrap();
    assert!(p.is_empty());
}

#[test]
fn secret_make_payload_cases() {
    let secret = Secret {
        data: Some(BTreeMap::from([
            ("foo".to_string(), ByteString(b"foo".to_vec())),
            ("bar".to_string(), ByteString(b"bar".to_vec())),
        ])),
        ..Secret::default()
    };
    let p = secret::make_payload(&[], &secret, 0o644, false).unwrap();
    assert_eq!(p, payload(&[("foo", "foo", 0o644), ("bar", "bar", 0o644)]));
    let p = secret::make_payload(&[ktp("foo", "a/b", Some(0o400))], &secret, 0o644, false).unwrap();
    assert_eq!(p, payload(&[("a/b", "foo", 0o400)]));
    let err = secret::make_payload(&[ktp("zab", "x", None)], &secret, 0o644, false).unwrap_err();
    assert_eq!(err.to_string(), "references non-existent secret key: zab");
    assert!(
        secret::make_payload(&[ktp("zab", "x", None)], &secret, 0o644, true)
            .unwrap()
            .is_empty()
    );
}

fn field(path: &str, field_path: &str, mode: Option<i32>) -> DownwardAPIVolumeFile {
    DownwardAPIVolumeFile {
        path: path.into(),
        field_ref: Some(ObjectFieldSelector {
            field_path: field_path.into(),
            api_version: None,
        }),
        mode,
        ..DownwardAPIVolumeFile::default()
    }
}

fn resource(path: &str, res: &str, divisor: Option<&str>) -> DownwardAPIVolumeFile {
    DownwardAPIVolumeFile {
        path: path.into(),
        resource_field_ref: Some(ResourceFieldSelector {
            container_name: Some("c".into()),
            resource: res.into(),
            divisor: divisor.map(|d| Quantity(d.into())),
        }),
        ..DownwardAPIVolumeFile::default()
    }
}

#[test]
fn downward_api_collect_data() {
    let items = [
        field("name", "metadata.name", None),
        field("./sub//namespace", "metadata.namespace", Some(0o400)),
        field("uid", "metadata.uid", None),
        field("labels", "metadata.labels", None),
        field("annotations", "metadata.annotations", None),
        field("app", "metadata.labels['app']", None),
        resource("mem_limit", "limits.memory", Some("1Mi")),
        resource("cpu_limit", "limits.cpu", Some("1m")),
        resource("cpu_request", "requests.cpu", Some("1m")),
    ];
    let p = downwardapi::collect_data(&items, &pod(), &node(), 0o644).unwrap();
    assert_eq!(
        p,
        payload(&[
            ("name", "web", 0o644),
            ("sub/namespace", "ns", 0o400),
            ("uid", "uid-1", 0o644),
            ("labels", "a=\"say \\\"hi\\\"\"\napp=\"web\"", 0o644),
            // Go's %q: \x01 and \x7f, printable UTF-8 kept.
            ("annotations", "ctl=\"a\\x01b\\x7fé\"\nnote=\"x\"", 0o644),
            ("app", "web", 0o644),
            ("mem_limit", "64", 0o644),
            ("cpu_limit", "2000", 0o644),
            ("cpu_request", "250", 0o644),
        ])
    );
}

#[test]
fn downward_api_errors_are_aggregated() {
    let items = [
        field("n", "spec.nodeName", None),
        field("ok", "metadata.name", None),
        DownwardAPIVolumeFile {
            path: "x".into(),
            resource_field_ref: Some(ResourceFieldSelector {
                container_name: Some("missing".into()),
                resource: "limits.cpu".into(),
                divisor: None,
            }),
            ..DownwardAPIVolumeFile::default()
        },
    ];
    let err = downwardapi::collect_data(&items, &pod(), &node(), 0o644).unwrap_err();
    assert_eq!(
        err.to_string(),
        "[unsupported fieldPath: spec.nodeName, container missing not found]"
    );
}

fn ctx<'a>(
    pod: &'a Pod,
    objects: &'a FakeVolumeObjects,
    node: &'a NodeEnvInfo,
) -> SetUpContext<'a> {
    SetUpContext {
        pod,
        objects,
        node,
        fs_user: None,
        fs_group: None,
    }
}

fn volume(name: &str) -> Volume {
    Volume {
        name: name.into(),
        ..Volume::default()
    }
}

#[tokio::test]
async fn configmap_volume_reads_the_object_and_tolerates_missing_when_optional() {
    let objects = FakeVolumeObjects::new();
    objects.set_config_map("ns", "cfg", &[("k", "v")]);
    let (p, n) = (pod(), node());
    let c = ctx(&p, &objects, &n);
    let mut v = volume("cfg");
    v.config_map = Some(ConfigMapVolumeSource {
        name: "cfg".into(),
        ..ConfigMapVolumeSource::default()
    });
    assert_eq!(
        make_payload(&c, &v).await.unwrap(),
        payload(&[("k", "v", 0o644)])
    );
    assert_eq!(
        objects.calls(),
        vec![ObjectCall::ConfigMap("ns".into(), "cfg".into())]
    );

    v.config_map = Some(ConfigMapVolumeSource {
        name: "gone".into(),
        items: Some(vec![ktp("k", "k", None)]),
        ..ConfigMapVolumeSource::default()
    });
    let err = make_payload(&c, &v).await.unwrap_err();
    assert_eq!(err.to_string(), "configmap \"gone\" not found");
    v.config_map.as_mut().unwrap().optional = Some(true);
    assert!(
        make_payload(&c, &v).await.unwrap().is_empty(),
        "optional and missing: empty volume"
    );
    // Other errors are not tolerated, even when optional.
    objects.fail_with(Some("connection refused"));
    assert_eq!(
        make_payload(&c, &v).await.unwrap_err().to_string(),
        "connection refused"
    );
}

#[tokio::test]
async fn secret_volume_default_mode_and_items() {
    let objects = FakeVolumeObjects::new();
    objects.set_secret("ns", "creds", &[("user", b"admin"), ("pass", b"s3cr3t")]);
    let (p, n) = (pod(), node());
    let c = ctx(&p, &objects, &n);
    let mut v = volume("creds");
    v.secret = Some(SecretVolumeSource {
        secret_name: Some("creds".into()),
        default_mode: Some(0o400),
        items: Some(vec![
            ktp("pass", "db/password", None),
            ktp("user", "user", Some(0o440)),
        ]),
        ..SecretVolumeSource::default()
    });
    assert_eq!(
        make_payload(&c, &v).await.unwrap(),
        payload(&[("db/password", "s3cr3t", 0o400), ("user", "admin", 0o440)])
    );
}

fn projected(sources: Vec<VolumeProjection>, default_mode: Option<i32>) -> Volume {
    let mut v = volume("kube-api-access");
    v.projected = Some(ProjectedVolumeSource {
        sources: Some(sources),
        default_mode,
    });
    v
}

/// The service-account volume every API pod gets (`kube-api-access-*`).
fn kube_api_access() -> Vec<VolumeProjection> {
    vec![
        VolumeProjection {
            service_account_token: Some(ServiceAccountTokenProjection {
                path: "token".into(),
                expiration_seconds: Some(3607),
                audience: None,
            }),
            ..VolumeProjection::default()
        },
        VolumeProjection {
            config_map: Some(ConfigMapProjection {
                name: "kube-root-ca.crt".into(),
                items: Some(vec![ktp("ca.crt", "ca.crt", None)]),
                optional: None,
            }),
            ..VolumeProjection::default()
        },
        VolumeProjection {
            downward_api: Some(DownwardAPIProjection {
                items: Some(vec![field("namespace", "metadata.namespace", None)]),
            }),
            ..VolumeProjection::default()
        },
    ]
}

#[tokio::test]
async fn projected_kube_api_access_volume() {
    let objects = FakeVolumeObjects::new();
    objects.set_config_map("ns", "kube-root-ca.crt", &[("ca.crt", "PEM")]);
    objects.set_token("ns", "builder", "tok-1");
    let (p, n) = (pod(), node());
    let c = ctx(&p, &objects, &n);
    let v = projected(kube_api_access(), Some(0o644));
    assert_eq!(
        make_payload(&c, &v).await.unwrap(),
        payload(&[
            ("token", "tok-1", 0o644),
            ("ca.crt", "PEM", 0o644),
            ("namespace", "ns", 0o644)
        ])
    );
    let token_call = objects
        .calls()
        .into_iter()
        .find_map(|c| match c {
            ObjectCall::Token(ns, sa, req) => Some((ns, sa, req)),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (token_call.0.as_str(), token_call.1.as_str()),
        ("ns", "builder")
    );
    let spec = token_call.2.spec;
    assert_eq!(spec.expiration_seconds, Some(3607));
    assert!(spec.audiences.is_empty());
    let bound = spec.bound_object_ref.unwrap();
    assert_eq!(bound.kind.as_deref(), Some("Pod"));
    assert_eq!(bound.api_version.as_deref(), Some("v1"));
    assert_eq!(bound.name.as_deref(), Some("web"));
    assert_eq!(bound.uid.as_deref(), Some("uid-1"));
}

#[tokio::test]
async fn projected_token_audience_default_expiry_and_fs_group_mode() {
    let objects = FakeVolumeObjects::new();
    objects.set_token("ns", "builder", "tok");
    let (p, n) = (pod(), node());
    let mut c = ctx(&p, &objects, &n);
    c.fs_group = Some(1234);
    c.fs_user = Some(1000);
    let v = projected(
        vec![VolumeProjection {
            service_account_token: Some(ServiceAccountTokenProjection {
                path: "vault/token".into(),
                expiration_seconds: None,
                audience: Some("vault".into()),
            }),
            ..VolumeProjection::default()
        }],
        None,
    );
    let p = make_payload(&c, &v).await.unwrap();
    assert_eq!(
        p["vault/token"],
        FileProjection {
            data: b"tok".to_vec(),
            mode: 0o600,
            fs_user: Some(1000),
        }
    );
    let req = match objects.calls().pop() {
        Some(ObjectCall::Token(_, _, req)) => req,
        other => unreachable!("not a token request: {other:?}"),
    };
    assert_eq!(req.spec.audiences, vec!["vault".to_string()]);
    assert_eq!(req.spec.expiration_seconds, Some(3600));
}

#[tokio::test]
async fn projected_errors_of_all_sources_are_aggregated_and_optional_sources_tolerated() {
    let objects = FakeVolumeObjects::new();
    let (p, n) = (pod(), node());
    let c = ctx(&p, &objects, &n);
    let v = projected(
        vec![
            VolumeProjection {
                secret: Some(SecretProjection {
                    name: "missing".into(),
                    optional: Some(true),
                    items: None,
                }),
                ..VolumeProjection::default()
            },
            VolumeProjection {
                config_map: Some(ConfigMapProjection {
                    name: "cm".into(),
                    items: None,
                    optional: None,
                }),
                ..VolumeProjection::default()
            },
            VolumeProjection {
                secret: Some(SecretProjection {
                    name: "s".into(),
                    optional: None,
                    items: None,
                }),
                ..VolumeProjection::default()
            },
        ],
        None,
    );
    let err = make_payload(&c, &v).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "[configmap \"cm\" not found, secret \"s\" not found]"
    );
}

#[tokio::test]
async fn projected_needs_a_kube_client_downward_api_does_not() {
    let objects = crate::objects::NoVolumeObjects;
    let (p, n) = (pod(), node());
    let c = SetUpContext {
        pod: &p,
        objects: &objects,
        node: &n,
        fs_user: None,
        fs_group: None,
    };
    let v = projected(kube_api_access(), None);
    assert_eq!(
        make_payload(&c, &v).await.unwrap_err().to_string(),
        "cannot setup projected volume kube-api-access because kube client is not configured"
    );
    let mut d = volume("podinfo");
    d.downward_api = Some(DownwardAPIVolumeSource {
        items: Some(vec![field("name", "metadata.name", None)]),
        default_mode: None,
    });
    assert_eq!(
        make_payload(&c, &d).await.unwrap(),
        payload(&[("name", "web", 0o644)])
    );
}

#[test]
fn plugin_dirs_and_media_as_upstream() {
    assert_eq!(Plugin::ConfigMap.dir_name(), "kubernetes.io~configmap");
    assert_eq!(Plugin::Secret.dir_name(), "kubernetes.io~secret");
    assert_eq!(Plugin::DownwardApi.dir_name(), "kubernetes.io~downward-api");
    assert_eq!(Plugin::Projected.dir_name(), "kubernetes.io~projected");
    assert!(!Plugin::ConfigMap.memory_backed());
    assert!(Plugin::Secret.memory_backed());
    assert!(Plugin::DownwardApi.memory_backed());
    assert!(Plugin::Projected.memory_backed());
    for p in Plugin::ALL {
        assert_eq!(Plugin::from_dir_name(p.dir_name()), Some(p));
    }
}
