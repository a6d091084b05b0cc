#![allow(clippy::unwrap_used)]
use super::*;
use k8s_openapi::api::core::v1::{
    ConfigMapKeySelector, EnvVar, EnvVarSource, ObjectFieldSelector, PodSpec, ResourceRequirements,
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

#[test]
fn env_values_fields_and_resources() {
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
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(env, want);
}

#[test]
fn missing_config_map_is_an_error_unless_optional() {
    let sel = |optional| EnvVarSource {
        config_map_key_ref: Some(ConfigMapKeySelector {
            name: "cm".into(),
            key: "k".into(),
            optional,
        }),
        ..Default::default()
    };
    let pod = Pod::default();
    let mut c = Container {
        name: "c".into(),
        env: Some(vec![from("X", sel(None))]),
        ..Default::default()
    };
    let e = make_environment_variables(&pod, &c, &[], &NodeEnvInfo::default(), &NoEnvObjects)
        .unwrap_err();
    assert!(e.to_string().contains("ConfigMap"), "{e}");
    c.env = Some(vec![from("X", sel(Some(true)))]);
    assert!(
        make_environment_variables(&pod, &c, &[], &NodeEnvInfo::default(), &NoEnvObjects)
            .unwrap()
            .is_empty()
    );
    c.env = Some(vec![from("X", field("spec.bogus"))]);
    assert!(
        make_environment_variables(&pod, &c, &[], &NodeEnvInfo::default(), &NoEnvObjects).is_err()
    );
}
