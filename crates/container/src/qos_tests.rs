use super::*;
use k8s_openapi::api::core::v1::{Container, PodSpec, PodStatus};

fn res(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, ApiQuantity>> {
    (!pairs.is_empty()).then(|| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), ApiQuantity(v.to_string())))
            .collect()
    })
}

fn resources(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> ResourceRequirements {
    ResourceRequirements {
        requests: res(requests),
        limits: res(limits),
        ..Default::default()
    }
}

fn container(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
    Container {
        name: "c".into(),
        resources: Some(resources(requests, limits)),
        ..Container::default()
    }
}

fn pod(containers: Vec<Container>) -> ApiPod {
    ApiPod {
        spec: Some(PodSpec {
            containers,
            ..PodSpec::default()
        }),
        ..ApiPod::default()
    }
}

#[test]
fn qos_table() {
    let cpu_mem = [("cpu", "100m"), ("memory", "64Mi")];
    let cases: Vec<(&str, Vec<Container>, QosClass)> = vec![
        ("nothing", vec![Container::default()], QosClass::BestEffort),
        (
            "zero requests",
            vec![container(&[("cpu", "0")], &[])],
            QosClass::BestEffort,
        ),
        (
            "limits equal requests",
            vec![container(&cpu_mem, &cpu_mem)],
            QosClass::Guaranteed,
        ),
        (
            "limits only, before API defaulting",
            vec![container(&[], &cpu_mem)],
            QosClass::Burstable,
        ),
        (
            "requests below limits",
            vec![container(&[("cpu", "50m"), ("memory", "64Mi")], &cpu_mem)],
            QosClass::Burstable,
        ),
        (
            "cpu request only",
            vec![container(&[("cpu", "100m")], &[])],
            QosClass::Burstable,
        ),
        (
            "cpu limit only",
            vec![container(&[("cpu", "100m")], &[("cpu", "100m")])],
            QosClass::Burstable,
        ),
        (
            "one best-effort container",
            vec![container(&cpu_mem, &cpu_mem), Container::default()],
            QosClass::Burstable,
        ),
        (
            "1 cpu equals 1000m",
            vec![container(
                &[("cpu", "1"), ("memory", "1Gi")],
                &[("cpu", "1000m"), ("memory", "1024Mi")],
            )],
            QosClass::Guaranteed,
        ),
    ];
    for (name, containers, want) in cases {
        assert_eq!(compute_pod_qos(&pod(containers)), want, "{name}");
    }
}

#[test]
fn pod_level_resources_decide_when_set() {
    let cpu_mem = [("cpu", "1"), ("memory", "1Gi")];
    let mut p = pod(vec![Container::default()]);
    if let Some(spec) = p.spec.as_mut() {
        spec.resources = Some(resources(&cpu_mem, &cpu_mem));
    }
    assert_eq!(compute_pod_qos(&p), QosClass::Guaranteed);
    // An empty pod-level stanza leaves the decision to the containers.
    let mut p = pod(vec![container(&cpu_mem, &cpu_mem)]);
    if let Some(spec) = p.spec.as_mut() {
        spec.resources = Some(ResourceRequirements::default());
    }
    assert_eq!(compute_pod_qos(&p), QosClass::Guaranteed);
}

#[test]
fn recorded_class_wins() {
    let mut p = pod(vec![Container::default()]);
    p.status = Some(PodStatus {
        qos_class: Some("Guaranteed".into()),
        ..PodStatus::default()
    });
    assert_eq!(get_pod_qos(&p), QosClass::Guaranteed);
    assert_eq!(QosClass::from_api("Burstable"), Some(QosClass::Burstable));
    assert_eq!(QosClass::from_api("Gold"), None);
    assert_eq!(QosClass::BestEffort.as_str(), "BestEffort");
}
