#![allow(clippy::unwrap_used)]
use super::*;
use crate::actions::compute_pod_actions;
use k8s_openapi::api::core::v1::{ContainerResizePolicy, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_container::{NoProbeResults, SandboxState, SandboxStatus};

fn q(s: &str) -> Quantity {
    Quantity(s.into())
}

fn reqs(cpu_req: &str, cpu_lim: &str, mem_req: &str, mem_lim: &str) -> ResourceRequirements {
    let list = |cpu: &str, mem: &str| {
        let mut l = BTreeMap::new();
        if !cpu.is_empty() {
            l.insert("cpu".to_string(), q(cpu));
        }
        if !mem.is_empty() {
            l.insert("memory".to_string(), q(mem));
        }
        (!l.is_empty()).then_some(l)
    };
    ResourceRequirements {
        requests: list(cpu_req, mem_req),
        limits: list(cpu_lim, mem_lim),
        ..ResourceRequirements::default()
    }
}

fn container(name: &str, r: ResourceRequirements, policy: &[(&str, &str)]) -> Container {
    Container {
        name: name.into(),
        image: Some("busybox".into()),
        resources: Some(r),
        resize_policy: (!policy.is_empty()).then(|| {
            policy
                .iter()
                .map(|(res, p)| ContainerResizePolicy {
                    resource_name: (*res).into(),
                    restart_policy: (*p).into(),
                })
                .collect()
        }),
        ..Container::default()
    }
}

fn pod(containers: Vec<Container>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            namespace: Some("ns".into()),
            uid: Some("u".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers,
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn running(pod: &Pod) -> PodStatus {
    let containers = pod.spec.as_ref().unwrap().containers.iter();
    PodStatus {
        id: "u".into(),
        name: "p".into(),
        namespace: "ns".into(),
        sandbox_statuses: vec![SandboxStatus {
            id: "s".into(),
            state: SandboxState::Ready,
            ip: "10.0.0.2".into(),
            ..SandboxStatus::default()
        }],
        container_statuses: containers
            .map(|c| Status {
                id: ContainerId::new("containerd", format!("id-{}", c.name)),
                name: c.name.clone(),
                state: ContainerState::Running,
                hash: kubelet_container::hash_container(c),
                ..Status::default()
            })
            .collect(),
        ..PodStatus::default()
    }
}

fn actuated_with(entries: &[(&str, ResourceRequirements)]) -> ActuatedState {
    let a = ActuatedState::default();
    for (name, r) in entries {
        a.set_container_resources("u", name, r.clone());
    }
    a
}

fn names(list: Option<&Vec<ContainerToUpdate>>) -> Vec<String> {
    list.map(|l| l.iter().map(|i| i.container.name.clone()).collect())
        .unwrap_or_default()
}

#[test]
fn unchanged_resources_need_no_action() {
    let r = reqs("100m", "200m", "100Mi", "200Mi");
    let p = pod(vec![container("c1", r.clone(), &[])]);
    let actuated = actuated_with(&[("c1", r)]);
    let a = compute_pod_actions(&p, &running(&p), &NoProbeResults, &actuated);
    assert!(a.containers_to_update.is_empty());
    assert!(a.containers_to_kill.is_empty() && a.containers_to_start.is_empty());
    assert!(!is_pod_resize_in_progress(&p, &running(&p), &actuated));
}

#[test]
fn decreases_are_applied_before_increases() {
    // c1 and c2 grow, c3 shrinks (the conformance "net increase" case).
    let p = pod(vec![
        container("c1", reqs("200m", "200m", "200Mi", "200Mi"), &[]),
        container("c2", reqs("210m", "210m", "210Mi", "210Mi"), &[]),
        container("c3", reqs("50m", "50m", "50Mi", "50Mi"), &[]),
    ]);
    let actuated = actuated_with(&[
        ("c1", reqs("100m", "100m", "100Mi", "100Mi")),
        ("c2", reqs("110m", "110m", "110Mi", "110Mi")),
        ("c3", reqs("120m", "120m", "120Mi", "120Mi")),
    ]);
    assert!(is_pod_resize_in_progress(&p, &running(&p), &actuated));
    let a = compute_pod_actions(&p, &running(&p), &NoProbeResults, &actuated);
    assert_eq!(
        names(a.containers_to_update.get("memory")),
        ["c3", "c1", "c2"]
    );
    assert_eq!(names(a.containers_to_update.get("cpu")), ["c3", "c1", "c2"]);
    assert!(a.containers_to_kill.is_empty() && !a.kill_pod);
    let c1 = &a.containers_to_update["cpu"][1];
    assert_eq!(c1.desired.cpu_limit, 200);
    assert_eq!(c1.current.cpu_limit, 100);
    assert_eq!(c1.desired.memory_limit, 200 << 20);
}

#[test]
fn restart_policy_restarts_the_container() {
    let p = pod(vec![container(
        "c1",
        reqs("200m", "200m", "100Mi", "100Mi"),
        &[("cpu", "RestartContainer"), ("memory", "NotRequired")],
    )]);
    let actuated = actuated_with(&[("c1", reqs("100m", "200m", "100Mi", "100Mi"))]);
    let a = compute_pod_actions(&p, &running(&p), &NoProbeResults, &actuated);
    assert_eq!(a.containers_to_start, [0]);
    let kill = a.containers_to_kill.values().next().unwrap();
    assert_eq!(kill.message, "Container c1 resize requires restart");
    assert!(a.update_pod_resources);
    assert!(a.containers_to_update.is_empty());

    // A memory-only change with memory NotRequired is done in place.
    let actuated = actuated_with(&[("c1", reqs("200m", "200m", "100Mi", "50Mi"))]);
    let a = compute_pod_actions(&p, &running(&p), &NoProbeResults, &actuated);
    assert!(a.containers_to_kill.is_empty());
    assert_eq!(names(a.containers_to_update.get("memory")), ["c1"]);
}

#[test]
fn static_pods_are_never_resized() {
    let mut p = pod(vec![container("c1", reqs("200m", "", "", ""), &[])]);
    p.metadata.annotations = Some(
        [(
            "kubernetes.io/config.source".to_string(),
            "file".to_string(),
        )]
        .into(),
    );
    let a = compute_pod_actions(&p, &running(&p), &NoProbeResults, &ActuatedState::default());
    assert!(a.containers_to_update.is_empty());
}

#[test]
fn runtime_reported_resources_convert_like_upstream() {
    let cri = CriContainerResources {
        linux: Some(kubelet_cri::v1::LinuxContainerResources {
            cpu_period: 100_000,
            cpu_quota: 20_000,
            cpu_shares: 102,
            memory_limit_in_bytes: 200 << 20,
            ..Default::default()
        }),
        ..Default::default()
    };
    let r = to_kube_container_resources(Some(&cri)).unwrap();
    assert_eq!(r.cpu_limit, Some(q("200m")));
    assert_eq!(r.cpu_request, Some(q("100m")));
    assert_eq!(r.memory_limit, Some(q("200Mi")));
    assert_eq!(r.memory_request, None);
    // The memory request comes from the actuated record.
    let filled = fill_from_actuated(Some(r), Some(&reqs("", "", "64Mi", ""))).unwrap();
    assert_eq!(filled.memory_request, Some(q("64Mi")));
    // Unlimited quota reports no limit.
    let unlimited = CriContainerResources {
        linux: Some(kubelet_cri::v1::LinuxContainerResources {
            cpu_period: 100_000,
            cpu_quota: -1,
            cpu_shares: 2,
            ..Default::default()
        }),
        ..Default::default()
    };
    let r = to_kube_container_resources(Some(&unlimited)).unwrap();
    assert_eq!(r.cpu_limit, None);
    assert_eq!(r.cpu_request, Some(q("2m")));
}

#[test]
fn sandbox_resources_leave_the_overhead_out() {
    let mut p = pod(vec![container("c1", reqs("1", "1", "1Gi", "1Gi"), &[])]);
    p.spec.as_mut().unwrap().overhead = Some(
        [
            ("cpu".to_string(), q("250m")),
            ("memory".to_string(), q("64Mi")),
        ]
        .into(),
    );
    let rc = ResourceConfig {
        cpu_shares: Some(1280),
        cpu_quota: Some(125_000),
        cpu_period: Some(100_000),
        memory: Some((1 << 30) + (64 << 20)),
        ..ResourceConfig::default()
    };
    let linux = resource_config_to_linux(&subtract_overhead(&rc, &p));
    assert_eq!(
        (
            linux.cpu_shares,
            linux.cpu_quota,
            linux.cpu_period,
            linux.memory_limit_in_bytes
        ),
        (1024, 100_000, 100_000, 1 << 30)
    );
    // Without overhead: as is.
    let plain = pod(vec![]);
    assert_eq!(subtract_overhead(&rc, &plain), rc);
}
