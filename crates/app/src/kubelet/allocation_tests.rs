#![allow(clippy::unwrap_used)]
use super::*;
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_runtime::os::FakeOs;
use std::path::PathBuf;
use std::sync::Arc;

fn res(cpu: &str, memory: &str) -> ResourceRequirements {
    let list: BTreeMap<String, Quantity> = [
        ("cpu".to_string(), Quantity(cpu.into())),
        ("memory".to_string(), Quantity(memory.into())),
    ]
    .into();
    ResourceRequirements {
        requests: Some(list),
        ..ResourceRequirements::default()
    }
}

fn pod(cpu: &str, memory: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            uid: Some("u".into()),
            generation: Some(2),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c1".into(),
                resources: Some(res(cpu, memory)),
                ..Container::default()
            }],
            init_containers: Some(vec![Container {
                name: "init".into(),
                ..Container::default()
            }]),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn allocatable() -> Allocatable {
    Allocatable {
        pods: 110,
        milli_cpu: 2000,
        memory: 1 << 30,
        ephemeral_storage: 0,
    }
}

#[test]
fn pods_sync_with_their_allocation_until_a_resize_is_admitted() {
    let m = AllocationManager::new(PodResourcesState::default(), allocatable());
    let admitted = pod("100m", "100Mi");
    // Unknown pods are their own allocation.
    assert!(!m.update_pod_from_allocation(&admitted).1);
    m.set_allocated_resources(&admitted);
    // Equal quantities written differently are no resize.
    assert!(!m.update_pod_from_allocation(&pod("0.1", "100Mi")).1);
    let desired = pod("200m", "100Mi");
    assert!(has_resize_operations(&admitted, &desired));
    let (allocated, differs) = m.update_pod_from_allocation(&desired);
    assert!(differs);
    assert_eq!(
        allocated.spec.unwrap().containers[0].resources,
        Some(res("100m", "100Mi"))
    );
    m.set_allocated_resources(&desired);
    assert!(!m.update_pod_from_allocation(&desired).1);
    m.remove_pod("u");
    assert!(!m.update_pod_from_allocation(&admitted).1);
}

#[test]
fn allocations_survive_a_restart_through_the_checkpoint() {
    let os = Arc::new(FakeOs::default());
    let path = PathBuf::from("/var/lib/kubelet/allocated_pods_state");
    let first = AllocationManager::new(
        PodResourcesState::with_checkpoint(os.clone(), path.clone()),
        allocatable(),
    );
    first.set_allocated_resources(&pod("100m", "100Mi"));
    let second =
        AllocationManager::new(PodResourcesState::with_checkpoint(os, path), allocatable());
    let (allocated, differs) = second.update_pod_from_allocation(&pod("300m", "100Mi"));
    assert!(differs);
    assert_eq!(
        allocated.spec.unwrap().containers[0].resources,
        Some(res("100m", "100Mi"))
    );
}

#[test]
fn resize_events_carry_upstreams_resource_summary() {
    assert_eq!(
        pod_resize_message(&pod("200m", "100Mi"), Some(2), "", "Pod resize started"),
        r#"Pod resize started: {"initContainers":[{"name":"init","resources":{}}],"containers":[{"name":"c1","resources":{"requests":{"cpu":"200m","memory":"100Mi"}}}],"generation":2}"#
    );
    assert_eq!(
        pod_resize_message(&pod("3", "1Gi"), Some(3), "no room", "Pod resize Deferred"),
        r#"Pod resize Deferred: {"initContainers":[{"name":"init","resources":{}}],"containers":[{"name":"c1","resources":{"requests":{"cpu":"3","memory":"1Gi"}}}],"generation":3,"error":"no room"}"#
    );
}

#[test]
fn a_cpu_resize_is_told_from_a_memory_resize_by_value() {
    let m = AllocationManager::new(PodResourcesState::default(), allocatable())
        .with_static_cpu_policy(true);
    assert!(m.static_cpu_policy);
    m.set_allocated_resources(&pod("1", "100Mi"));
    // `1000m` is the allocated `1`: no CPU resize; memory is not looked at.
    assert!(!m.guaranteed_pod_resource_resize_required(&pod("1000m", "200Mi"), "cpu"));
    assert!(m.guaranteed_pod_resource_resize_required(&pod("2", "100Mi"), "cpu"));
    assert!(m.guaranteed_pod_resource_resize_required(&pod("1", "200Mi"), "memory"));
}
