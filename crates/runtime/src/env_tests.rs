#![allow(clippy::unwrap_used)]
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
    make_environment_variables(&pod, c, &[], &NodeEnvInfo::default(), o)
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
