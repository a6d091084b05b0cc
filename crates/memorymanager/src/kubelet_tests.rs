#![allow(clippy::unwrap_used, clippy::panic, clippy::type_complexity)]

use std::collections::BTreeMap;

use super::*;
use crate::policy::Policy;
use crate::policy_static::{StaticPolicy, SystemReservedMemory};
use crate::state::StateMemory;
use crate::test_util::*;
use kubelet_cpumanager::state::ContainerMap;
use kubelet_features::FeatureGate;
use kubelet_runtime::internal_lifecycle::{ComposedLifecycle, RecordingLifecycle};
use kubelet_topologymanager::{BitMask, FakeStore, TopologyHint};

fn shared(store: FakeStore) -> MemoryManager {
    let reserved: SystemReservedMemory = (0..2)
        .map(|n| {
            (
                n,
                [("memory".to_owned(), GB)]
                    .into_iter()
                    .collect::<BTreeMap<_, _>>(),
            )
        })
        .collect();
    let policy: Box<dyn Policy> = Box::new(
        StaticPolicy::new(
            return_machine_info(),
            reserved,
            Arc::new(store),
            &FeatureGate::default(),
        )
        .unwrap(),
    );
    let mut state = StateMemory::new();
    crate::state::State::set_machine_state(&mut state, default_two_node_state());
    MemoryManager::new(Manager::with_state(
        policy,
        Box::new(state),
        None,
        ContainerMap::new(),
    ))
}

/// `PreCreateContainer` sets `cpuset_mems` to the container's NUMA nodes (joined by
/// commas) after `Allocate`; a container without blocks keeps the runtime's default;
/// `PreStartContainer` records the container id.
#[test]
fn lifecycle_sets_cpuset_mems_from_the_allocation() {
    let mut store = FakeStore::default();
    store.hints.insert(
        ("pod1".into(), "c1".into()),
        TopologyHint {
            numa_node_affinity: Some(BitMask::new(&[0, 1])),
            preferred: false,
        },
    );
    let mm = shared(store);
    let p = pod("pod1", vec![], vec![guaranteed("c1", "5Gi", None)]);
    let bp = pod("pod2", vec![], vec![burstable_container("c2")]);
    let spec = p.spec.clone().unwrap();
    HintProvider::allocate(&mm, &p, &spec.containers[0]).unwrap();
    let bc = bp.spec.clone().unwrap().containers[0].clone();
    HintProvider::allocate(&mm, &bp, &bc).unwrap();
    let life = MemoryManagerLifecycle(mm.clone());
    let mut config = ContainerConfig::default();
    life.pre_create_container(&p, &spec.containers[0], &mut config)
        .unwrap();
    assert_eq!(config.linux.unwrap().resources.unwrap().cpuset_mems, "0,1");
    let mut config = ContainerConfig::default();
    life.pre_create_container(&bp, &bc, &mut config).unwrap();
    assert!(config.linux.is_none());
    life.pre_start_container(&p, &spec.containers[0], "id1")
        .unwrap();
    assert_eq!(mm.lock().container_map().get("id1").unwrap().1, "c1");
    life.post_stop_container("id1").unwrap();
    assert!(mm.lock().container_map().contains_key("id1"));
}

/// Composed after another manager's hooks: both change the config, in order.
#[test]
fn composed_with_the_cpu_managers_hooks() {
    let mm = shared(FakeStore {
        default_hint: TopologyHint {
            numa_node_affinity: Some(BitMask::new(&[1])),
            preferred: true,
        },
        ..FakeStore::default()
    });
    let p = pod("pod1", vec![], vec![guaranteed("c1", "1Gi", None)]);
    let c = p.spec.as_ref().unwrap().containers[0].clone();
    HintProvider::allocate(&mm, &p, &c).unwrap();
    let cpu = Arc::new(RecordingLifecycle {
        cpuset: Some("1".into()),
        ..RecordingLifecycle::default()
    });
    let both = ComposedLifecycle(vec![cpu.clone(), Arc::new(MemoryManagerLifecycle(mm))]);
    let mut config = ContainerConfig::default();
    both.pre_create_container(&p, &c, &mut config).unwrap();
    let r = config.linux.unwrap().resources.unwrap();
    assert_eq!((r.cpuset_cpus.as_str(), r.cpuset_mems.as_str()), ("1", "1"));
    both.pre_start_container(&p, &c, "id").unwrap();
    assert_eq!(cpu.calls().len(), 2);
    // The first failing hook stops the others.
    let failing = ComposedLifecycle(vec![
        Arc::new(RecordingLifecycle {
            fail: vec!["pre_create"],
            ..RecordingLifecycle::default()
        }),
        cpu.clone(),
    ]);
    assert!(
        failing
            .pre_create_container(&p, &c, &mut ContainerConfig::default())
            .is_err()
    );
    assert_eq!(cpu.calls().len(), 2);
}

/// The hint provider: hints per resource; an `Allocate` error is not an admission error
/// (upstream rejects the pod as `UnexpectedAdmissionError`).
#[test]
fn hint_provider() {
    let mm = shared(FakeStore::default());
    let p = pod("pod1", vec![], vec![guaranteed("c1", "1Gi", Some("1Gi"))]);
    let c = p.spec.as_ref().unwrap().containers[0].clone();
    let hints = mm.get_topology_hints(&p, &c);
    assert_eq!(
        hints.keys().cloned().collect::<Vec<_>>(),
        vec![HUGEPAGES_1G.to_owned(), "memory".to_owned()]
    );
    assert_eq!(mm.get_pod_topology_hints(&p), hints);
    let huge = pod("pod2", vec![], vec![guaranteed("c1", "100Gi", None)]);
    let err = HintProvider::allocate(&mm, &huge, &huge.spec.as_ref().unwrap().containers[0])
        .err()
        .unwrap();
    assert_eq!(err.reason, None);
    assert_eq!(
        err.message,
        "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available"
    );
}
