#![allow(clippy::unwrap_used, clippy::panic)]
use super::*;
use k8s_openapi::api::core::v1::{
    ConfigMapEnvSource, ConfigMapKeySelector, EnvFromSource, EnvVar, EnvVarSource,
    ObjectFieldSelector, PodSpec, ResourceRequirements, SecretEnvSource, SecretKeySelector,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn var(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        value_from: None,
    }
}

fn from(name: &str, src: EnvVarSource) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: None,
        value_from: Some(src),
    }
}

fn field(path: &str) -> EnvVarSource {
    EnvVarSource {
        field_ref: Some(ObjectFieldSelector {
            field_path: path.into(),
            api_version: None,
        }),
        ..Default::default()
    }
}

fn resource(res: &str, divisor: Option<&str>) -> EnvVarSource {
    EnvVarSource {
        resource_field_ref: Some(ResourceFieldSelector {
            resource: res.into(),
            divisor: divisor.map(|d| Quantity(d.into())),
            container_name: None,
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn env_values_fields_and_resources() {
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("ns".into()),
            uid: Some("u1".into()),
            labels: Some([("app".to_string(), "w".to_string())].into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some("node-a".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let container = Container {
        name: "c".into(),
        env: Some(vec![
            var("A", "x"),
            var("B", "$(A)-$(MISSING)-$$(A)"),
            from("NAME", field("metadata.name")),
            from("LABEL", field("metadata.labels['app']")),
            from("NODE", field("spec.nodeName")),
            from("IP", field("status.podIP")),
            from("HOST", field("status.hostIP")),
            from("CPU", resource("limits.cpu", None)),
            from("MEM_MI", resource("requests.memory", Some("1Mi"))),
            // The API server stores an unset divisor as "0": it means 1.
            from("CPU_ZERO_DIVISOR", resource("limits.cpu", Some("0"))),
            var("A", "y"),
        ]),
        resources: Some(ResourceRequirements {
            requests: Some([("memory".to_string(), Quantity("100Mi".into()))].into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let node = NodeEnvInfo {
        host_ips: vec!["10.0.0.1".into()],
        allocatable_milli_cpu: 2500,
        ..Default::default()
    };
    let env = make_environment_variables(
        &pod,
        &container,
        &["198.18.0.9".into()],
        &node,
        &NoEnvObjects,
        None,
    )
    .await
    .unwrap();
    let want: Vec<(String, String)> = [
        ("A", "y"),
        ("B", "x-$(MISSING)-$(A)"),
        ("NAME", "web"),
        ("LABEL", "w"),
        ("NODE", "node-a"),
        ("IP", "198.18.0.9"),
        ("HOST", "10.0.0.1"),
        ("CPU", "3"),
        ("MEM_MI", "100"),
        ("CPU_ZERO_DIVISOR", "3"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(env, want);
}

/// ConfigMaps and Secrets by name; the messages of upstream's watch-based managers.
type Data = Vec<(&'static str, &'static str)>;
struct MapObjects(Vec<(Kind, &'static str, Data)>);

#[async_trait]
impl EnvObjects for MapObjects {
    async fn config_map(
        &self,
        _: &str,
        name: &str,
    ) -> Result<BTreeMap<String, String>, EnvObjectError> {
        self.find(Kind::ConfigMap, name)
            .ok_or_else(|| EnvObjectError::NotFound(format!("configmap {name:?} not found")))
    }
    async fn secret(
        &self,
        _: &str,
        name: &str,
    ) -> Result<BTreeMap<String, String>, EnvObjectError> {
        self.find(Kind::Secret, name)
            .ok_or_else(|| EnvObjectError::NotFound(format!("secret {name:?} not found")))
    }
}

impl MapObjects {
    fn find(&self, kind: Kind, name: &str) -> Option<BTreeMap<String, String>> {
        self.0
            .iter()
            .find(|(k, n, _)| *k == kind && *n == name)
            .map(|(_, _, d)| {
                d.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
    }
}

fn cm_key(name: &str, key: &str, optional: Option<bool>) -> EnvVarSource {
    EnvVarSource {
        config_map_key_ref: Some(ConfigMapKeySelector {
            name: name.into(),
            key: key.into(),
            optional,
        }),
        ..Default::default()
    }
}

fn secret_key(name: &str, key: &str, optional: Option<bool>) -> EnvVarSource {
    EnvVarSource {
        secret_key_ref: Some(SecretKeySelector {
            name: name.into(),
            key: key.into(),
            optional,
        }),
        ..Default::default()
    }
}

fn objects() -> MapObjects {
    MapObjects(vec![
        (Kind::ConfigMap, "cm", vec![("k", "v"), ("other", "o")]),
        (Kind::Secret, "s", vec![("pw", "hunter2")]),
    ])
}

async fn env_of(c: &Container, o: &dyn EnvObjects) -> Result<Vec<(String, String)>, String> {
    let pod = Pod {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    make_environment_variables(&pod, c, &[], &NodeEnvInfo::default(), o, None)
        .await
        .map_err(|e| e.to_string())
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn config_map_and_secret_references_as_upstream() {
    let c = Container {
        name: "c".into(),
        env_from: Some(vec![
            EnvFromSource {
                prefix: Some("CM_".into()),
                config_map_ref: Some(ConfigMapEnvSource {
                    name: "cm".into(),
                    optional: None,
                }),
                secret_ref: None,
            },
            EnvFromSource {
                prefix: None,
                config_map_ref: None,
                secret_ref: Some(SecretEnvSource {
                    name: "s".into(),
                    optional: None,
                }),
            },
            EnvFromSource {
                prefix: None,
                config_map_ref: Some(ConfigMapEnvSource {
                    name: "gone".into(),
                    optional: Some(true),
                }),
                secret_ref: None,
            },
        ]),
        env: Some(vec![
            from("K", cm_key("cm", "k", None)),
            from("PW", secret_key("s", "pw", None)),
            from("OPT_KEY", cm_key("cm", "nokey", Some(true))),
            from("OPT_OBJ", secret_key("nosecret", "x", Some(true))),
            var("REF", "$(CM_k)-$(pw)"),
        ]),
        ..Default::default()
    };
    assert_eq!(
        env_of(&c, &objects()).await.unwrap(),
        pairs(&[
            ("CM_k", "v"),
            ("CM_other", "o"),
            ("pw", "hunter2"),
            ("K", "v"),
            ("PW", "hunter2"),
            ("REF", "v-hunter2"),
        ])
    );
}

#[tokio::test]
async fn missing_references_fail_with_upstream_messages() {
    let one = |src| Container {
        name: "c".into(),
        env: Some(vec![from("X", src)]),
        ..Default::default()
    };
    let cases = [
        (
            cm_key("cm", "nokey", None),
            "couldn't find key nokey in ConfigMap ns/cm",
        ),
        (
            secret_key("s", "nokey", None),
            "couldn't find key nokey in Secret ns/s",
        ),
        (cm_key("gone", "k", None), "configmap \"gone\" not found"),
        (secret_key("gone", "k", None), "secret \"gone\" not found"),
    ];
    for (src, want) in cases {
        assert_eq!(env_of(&one(src), &objects()).await.unwrap_err(), want);
    }
    let env_from = Container {
        name: "c".into(),
        env_from: Some(vec![EnvFromSource {
            prefix: None,
            config_map_ref: Some(ConfigMapEnvSource {
                name: "gone".into(),
                optional: Some(false),
            }),
            secret_ref: None,
        }]),
        ..Default::default()
    };
    assert_eq!(
        env_of(&env_from, &objects()).await.unwrap_err(),
        "configmap \"gone\" not found"
    );
    // Standalone: upstream fails before looking at `optional`.
    assert_eq!(
        env_of(&one(cm_key("cm", "k", Some(true))), &NoEnvObjects)
            .await
            .unwrap_err(),
        "couldn't get configMap ns/cm, no kubeClient defined"
    );
    assert_eq!(
        env_of(&one(secret_key("s", "k", None)), &NoEnvObjects)
            .await
            .unwrap_err(),
        "couldn't get secret ns/s, no kubeClient defined"
    );
    assert!(env_of(&one(field("spec.bogus")), &objects()).await.is_err());
}

/// Services only (upstream `TestMakeEnvironmentVariables`' service cases).
struct ServiceObjects(Option<Vec<k8s_openapi::api::core::v1::Service>>);

#[async_trait]
impl EnvObjects for ServiceObjects {
    async fn config_map(
        &self,
        _: &str,
        n: &str,
    ) -> Result<BTreeMap<String, String>, EnvObjectError> {
        Err(EnvObjectError::NotFound(format!(
            "configmap {n:?} not found"
        )))
    }
    async fn secret(&self, _: &str, n: &str) -> Result<BTreeMap<String, String>, EnvObjectError> {
        Err(EnvObjectError::NotFound(format!("secret {n:?} not found")))
    }
    async fn services(
        &self,
    ) -> Result<Option<Vec<k8s_openapi::api::core::v1::Service>>, EnvObjectError> {
        self.0.clone().map(Some).ok_or_else(|| {
            EnvObjectError::Other(
                "services have not yet been read at least once, cannot construct envvars".into(),
            )
        })
    }
}

#[tokio::test]
async fn service_variables_follow_the_container_and_expand() {
    use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
    let kubernetes = Service {
        metadata: ObjectMeta {
            name: Some("kubernetes".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("10.0.0.1".into()),
            ports: Some(vec![ServicePort {
                name: Some("https".into()),
                port: 443,
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let c = Container {
        env: Some(vec![
            var(
                "URL",
                "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)",
            ),
            var("KUBERNETES_SERVICE_PORT", "mine"),
        ]),
        ..Default::default()
    };
    let env = env_of(&c, &ServiceObjects(Some(vec![kubernetes])))
        .await
        .unwrap();
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(
        env[0],
        ("URL".to_string(), "https://10.0.0.1:443".to_string())
    );
    assert_eq!(
        get("KUBERNETES_SERVICE_PORT"),
        Some("mine"),
        "declared wins"
    );
    assert_eq!(get("KUBERNETES_SERVICE_HOST"), Some("10.0.0.1"));
    assert_eq!(get("KUBERNETES_PORT_443_TCP"), Some("tcp://10.0.0.1:443"));
    assert_eq!(
        env.iter()
            .filter(|(n, _)| n == "KUBERNETES_SERVICE_PORT")
            .count(),
        1
    );
    // Before the Service informer's first list the container cannot be configured.
    let e = env_of(&c, &ServiceObjects(None)).await.unwrap_err();
    assert!(e.contains("services have not yet been read"), "{e}");
}

/// `fileKeyRef` (upstream `TestMakeEnvironmentVariablesWithFileKeyRef`, kubelet_pods_test.go).
mod file_key_ref {
    use super::*;
    use crate::os::FakeOs;
    use crate::volumes::LocalVolumes;
    use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, FileKeySelector, Volume};
    use std::path::Path;

    const VOL: &str =
        "/var/lib/kubelet/pods/test-pod-uid/volumes/kubernetes.io~empty-dir/config-volume";

    fn file_ref(name: &str, volume: &str, path: &str, key: &str, optional: Option<bool>) -> EnvVar {
        from(
            name,
            EnvVarSource {
                file_key_ref: Some(FileKeySelector {
                    volume_name: volume.into(),
                    path: path.into(),
                    key: key.into(),
                    optional,
                }),
                ..Default::default()
            },
        )
    }

    fn test_pod(c: &Container) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("test-pod".into()),
                namespace: Some("test-namespace".into()),
                uid: Some("test-pod-uid".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![c.clone()],
                enable_service_links: Some(false),
                volumes: Some(vec![Volume {
                    name: "config-volume".into(),
                    empty_dir: Some(EmptyDirVolumeSource::default()),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// The environment of a container whose env files are `files` (name, content) in the
    /// pod's emptyDir, `gate` being `EnvFiles`.
    async fn env_with(
        env: Vec<EnvVar>,
        files: &[(&str, &str)],
        gate: bool,
    ) -> (Result<Vec<(String, String)>, String>, Arc<FakeOs>) {
        let os = Arc::new(FakeOs::new());
        for (name, content) in files {
            os.write_file(&Path::new(VOL).join(name), content.as_bytes())
                .unwrap();
        }
        let c = Container {
            name: "c".into(),
            env: Some(env),
            ..Default::default()
        };
        let volumes = LocalVolumes::new(os.clone(), "/var/lib/kubelet");
        let files = EnvFiles {
            os: os.as_ref(),
            volumes: &volumes,
        };
        let got = make_environment_variables(
            &test_pod(&c),
            &c,
            &["192.168.1.1".into()],
            &NodeEnvInfo::default(),
            &NoEnvObjects,
            gate.then_some(files),
        )
        .await
        .map_err(|e| e.to_string());
        (got, os)
    }

    use std::sync::Arc;

    #[tokio::test]
    async fn values_and_errors_as_upstream() {
        let db = file_ref(
            "DATABASE",
            "config-volume",
            "database.env",
            "DATABASE",
            None,
        );
        type Case = (
            &'static str,
            Vec<EnvVar>,
            Vec<(&'static str, &'static str)>,
            Result<Vec<(&'static str, &'static str)>, &'static str>,
        );
        let cases: Vec<Case> = vec![
            (
                "successful file key reference",
                vec![db.clone()],
                vec![("database.env", "DATABASE='mydb'\nAPI_KEY='secret123'\n")],
                Ok(vec![("DATABASE", "mydb")]),
            ),
            (
                "file key reference with comments and empty lines",
                vec![file_ref(
                    "API_KEY",
                    "config-volume",
                    "config.env",
                    "API_KEY",
                    None,
                )],
                vec![(
                    "config.env",
                    "# This is a comment\n\nDATABASE='mydb'\nAPI_KEY='secret123'\n\n# Another comment\n",
                )],
                Ok(vec![("API_KEY", "secret123")]),
            ),
            (
                "file key reference with spaces around equals sign",
                vec![file_ref(
                    "DEBUG_MODE",
                    "config-volume",
                    "debug.env",
                    "DEBUG_MODE",
                    None,
                )],
                vec![("debug.env", "DEBUG_MODE = 'true'\nLOG_LEVEL = 'info'\n")],
                Err("couldn't parse env file"),
            ),
            (
                "key not found in file",
                vec![file_ref(
                    "MISSING_KEY",
                    "config-volume",
                    "config.env",
                    "MISSING_KEY",
                    None,
                )],
                vec![("config.env", "EXISTING_KEY='value'\n")],
                Err(
                    "environment variable key \"MISSING_KEY\" not found in file \"/var/lib/kubelet/pods/test-pod-uid/volumes/kubernetes.io~empty-dir/config-volume/config.env\"",
                ),
            ),
            (
                "key not found in file with optional flag",
                vec![file_ref(
                    "OPTIONAL_KEY",
                    "config-volume",
                    "config.env",
                    "OPTIONAL_KEY",
                    Some(true),
                )],
                vec![("config.env", "EXISTING_KEY='value'\n")],
                Ok(vec![]),
            ),
            (
                // An empty value reads as a missing key, as upstream.
                "empty value is a missing key",
                vec![file_ref("E", "config-volume", "config.env", "E", None)],
                vec![("config.env", "E=''\n")],
                Err("environment variable key \"E\" not found in file"),
            ),
            (
                "file does not exist",
                vec![db.clone()],
                vec![],
                Err("couldn't parse env file"),
            ),
            (
                // `optional` only tolerates a missing key, not a missing file.
                "file does not exist, optional",
                vec![file_ref(
                    "DATABASE",
                    "config-volume",
                    "database.env",
                    "DATABASE",
                    Some(true),
                )],
                vec![],
                Err("couldn't parse env file"),
            ),
            (
                "volume not found",
                vec![file_ref(
                    "DATABASE",
                    "nonexistent-volume",
                    "database.env",
                    "DATABASE",
                    None,
                )],
                vec![],
                Err("cannot find the volume \"nonexistent-volume\" referenced by FileKeyRef"),
            ),
            (
                "multiple file key references",
                vec![
                    db.clone(),
                    file_ref("API_KEY", "config-volume", "api.env", "API_KEY", None),
                ],
                vec![
                    ("database.env", "DATABASE='mydb'\n"),
                    ("api.env", "API_KEY='secret123'\n"),
                ],
                Ok(vec![("DATABASE", "mydb"), ("API_KEY", "secret123")]),
            ),
            (
                "mixed environment variable sources",
                vec![
                    var("STATIC_VAR", "static_value"),
                    file_ref("FILE_VAR", "config-volume", "config.env", "FILE_VAR", None),
                ],
                vec![("config.env", "FILE_VAR='file_value'\n")],
                Ok(vec![
                    ("STATIC_VAR", "static_value"),
                    ("FILE_VAR", "file_value"),
                ]),
            ),
            (
                // Later variables expand a file variable like any other.
                "file variable expanded by a later one",
                vec![db.clone(), var("URL", "db://$(DATABASE)")],
                vec![("database.env", "DATABASE='mydb'\n")],
                Ok(vec![("DATABASE", "mydb"), ("URL", "db://mydb")]),
            ),
            (
                // securejoin: `..` stops at the volume root.
                "dot-dot stays in the volume",
                vec![file_ref(
                    "DATABASE",
                    "config-volume",
                    "../../../../../database.env",
                    "DATABASE",
                    None,
                )],
                vec![("database.env", "DATABASE='mydb'\n")],
                Ok(vec![("DATABASE", "mydb")]),
            ),
        ];
        for (name, env, files, want) in cases {
            let (got, _) = env_with(env, &files, true).await;
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, pairs(&want), "{name}"),
                (Err(e), Err(want)) => assert!(e.contains(want), "{name}: {e}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[tokio::test]
    async fn the_gate_off_sets_the_variable_empty() {
        // Upstream's switch skips the source: the variable is declared, with "".
        let (got, _) = env_with(
            vec![file_ref(
                "DATABASE",
                "config-volume",
                "database.env",
                "DATABASE",
                None,
            )],
            &[],
            false,
        )
        .await;
        assert_eq!(got.unwrap(), pairs(&[("DATABASE", "")]));
    }

    #[tokio::test]
    async fn symlinks_resolve_inside_the_volume_only() {
        let env = |path: &str| vec![file_ref("K", "config-volume", path, "K", None)];
        let reading = |path: &str| Container {
            name: "c".into(),
            env: Some(env(path)),
            ..Default::default()
        };
        // A symlink inside the volume is followed, as upstream's SecureJoin does.
        let os_files = [("real/k.env", "K='inside'\n")];
        let (os_got, os) = env_with(env("real/k.env"), &os_files, true).await;
        assert_eq!(os_got.unwrap(), pairs(&[("K", "inside")]));
        os.symlink(Path::new("real/k.env"), &Path::new(VOL).join("link.env"))
            .unwrap();
        // (a second run on the same fake filesystem)
        let volumes = LocalVolumes::new(os.clone(), "/var/lib/kubelet");
        let files = EnvFiles {
            os: os.as_ref(),
            volumes: &volumes,
        };
        let run = |c: Container| async move {
            make_environment_variables(
                &test_pod(&c),
                &c,
                &[],
                &NodeEnvInfo::default(),
                &NoEnvObjects,
                Some(files),
            )
            .await
            .map_err(|e| e.to_string())
        };
        assert_eq!(
            run(reading("link.env")).await.unwrap(),
            pairs(&[("K", "inside")])
        );

        // Symlinks pointing out of the volume, absolute or relative, resolve inside it.
        os.write_file(Path::new("/etc/leak.env"), b"K='host secret'\n")
            .unwrap();
        os.symlink(Path::new("/etc/leak.env"), &Path::new(VOL).join("abs.env"))
            .unwrap();
        os.symlink(
            Path::new("../../../../../../../etc/leak.env"),
            &Path::new(VOL).join("rel.env"),
        )
        .unwrap();
        os.symlink(Path::new("/etc"), &Path::new(VOL).join("etcdir"))
            .unwrap();
        for path in ["abs.env", "rel.env", "etcdir/leak.env"] {
            let e = run(reading(path)).await.unwrap_err();
            assert_eq!(e, "couldn't parse env file", "{path}");
        }
        // The same names inside the volume are what they read.
        os.write_file(&Path::new(VOL).join("etc/leak.env"), b"K='volume'\n")
            .unwrap();
        for path in ["abs.env", "rel.env", "etcdir/leak.env"] {
            let got = run(reading(path)).await.unwrap();
            assert_eq!(got, pairs(&[("K", "volume")]), "{path}");
        }
    }
}
