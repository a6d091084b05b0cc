#![allow(clippy::unwrap_used, clippy::panic, clippy::type_complexity)]
//! Upstream `policy_static_test.go`: the cases of its tables, on machines built the way
//! its cases build them (NUMA nodes of `total` memory with `reserved` of it reserved for
//! the system and some 1 GiB pages).

use super::*;
use crate::state::{ContainerMemoryAssignments, MemoryTable, StateMemory};
use crate::sysfs::{HugePagesInfo, Node};
use crate::test_util::{
    GB, HUGEPAGES_1G, MB, burstable_container, container, guaranteed, node, pod, table,
};
use kubelet_topologymanager::FakeStore;

const PAGE_1G: u64 = 1024 * 1024;

/// `nodes` NUMA nodes of `total` memory, `reserved` of it reserved, `pages` 1 GiB pages.
fn machine(nodes: usize, total: u64, pages: u64) -> MachineInfo {
    MachineInfo {
        topology: (0..nodes)
            .map(|id| Node {
                id,
                memory: total,
                huge_pages: vec![HugePagesInfo {
                    page_size: PAGE_1G,
                    num_pages: pages,
                }],
            })
            .collect(),
    }
}

fn reserved(nodes: usize, memory: u64) -> SystemReservedMemory {
    (0..nodes)
        .map(|n| (n, [("memory".to_owned(), memory)].into_iter().collect()))
        .collect()
}

fn policy(m: MachineInfo, r: SystemReservedMemory, store: FakeStore) -> StaticPolicy {
    StaticPolicy::new(m, r, Arc::new(store), &FeatureGate::default()).unwrap()
}

fn hint(nodes: &[usize], preferred: bool) -> TopologyHint {
    TopologyHint {
        numa_node_affinity: Some(BitMask::new(nodes)),
        preferred,
    }
}

fn store_with(uid: &str, container: &str, h: TopologyHint) -> FakeStore {
    let mut s = FakeStore::default();
    s.hints.insert((uid.into(), container.into()), h);
    s
}

/// Upstream `requirementsGuaranteed`: 1 CPU, 1Gi memory, 1Gi of 1 GiB pages.
fn guaranteed_pod(uid: &str, name: &str) -> Pod {
    pod(uid, vec![], vec![guaranteed(name, "1Gi", Some("1Gi"))])
}

fn block(nodes: &[usize], type_: &str, size: u64) -> Block {
    Block {
        numa_affinity: nodes.to_vec(),
        type_: type_.to_owned(),
        size,
    }
}

fn state_with(ms: NUMANodeMap, a: ContainerMemoryAssignments) -> StateMemory {
    let mut s = StateMemory::new();
    s.set_machine_state(ms);
    s.set_memory_assignments(a);
    s
}

fn assignments(uid: &str, container: &str, blocks: Vec<Block>) -> ContainerMemoryAssignments {
    [(
        uid.to_owned(),
        [(container.to_owned(), blocks)].into_iter().collect(),
    )]
    .into_iter()
    .collect()
}

fn first_container(p: &Pod) -> Container {
    p.spec.as_ref().unwrap().containers[0].clone()
}

/// `TestStaticPolicyNew` and `TestStaticPolicyName`.
#[test]
fn new_needs_reserved_memory() {
    let err = StaticPolicy::new(
        machine(1, 2 * GB, 1),
        SystemReservedMemory::new(),
        Arc::new(FakeStore::default()),
        &FeatureGate::default(),
    )
    .err()
    .unwrap();
    assert_eq!(err, PolicyError::NoSystemReserved);
    assert_eq!(
        policy(
            machine(1, 2 * GB, 1),
            reserved(1, 512 * MB),
            FakeStore::default()
        )
        .name(),
        "Static"
    );
}

/// `TestStaticPolicyStart`.
#[test]
fn start_table() {
    let m1 = machine(1, 3 * GB, 1);
    let default1: NUMANodeMap = [(
        0,
        node(
            0,
            &[0],
            table(3 * GB, 512 * MB, 1536 * MB, 0),
            table(GB, 0, GB, 0),
        ),
    )]
    .into_iter()
    .collect();
    // should fail, if machine state is empty, but it has memory assignments
    let mut s = state_with(
        NUMANodeMap::new(),
        assignments("pod", "container1", vec![block(&[0], "memory", 512 * MB)]),
    );
    let mut p = policy(m1.clone(), reserved(1, 512 * MB), FakeStore::default());
    assert_eq!(p.start(&mut s).err(), Some(PolicyError::EmptyMachineState));
    // should fill the state with default values, when the state is empty
    let mut s = StateMemory::new();
    p.start(&mut s).unwrap();
    assert_eq!(s.get_machine_state(), default1);
    assert!(s.get_memory_assignments().is_empty());
    // should fail when machine state does not have all NUMA nodes
    let two = machine(2, 2 * GB, 1);
    let one: NUMANodeMap = [(
        0,
        node(
            0,
            &[0],
            table(2 * GB, 512 * MB, 512 * MB, 0),
            table(GB, 0, GB, 0),
        ),
    )]
    .into_iter()
    .collect();
    let mut s = state_with(one, ContainerMemoryAssignments::new());
    let mut p2 = policy(two.clone(), reserved(2, 512 * MB), FakeStore::default());
    assert_eq!(
        p2.start(&mut s).err(),
        Some(PolicyError::MachineStateDiffers)
    );
    // should fail when machine state does not have memory resource
    let mut no_memory = p2.get_default_machine_state();
    no_memory.get_mut(&0).unwrap().memory_map.remove("memory");
    let mut s = state_with(no_memory, ContainerMemoryAssignments::new());
    assert_eq!(
        p2.start(&mut s).err(),
        Some(PolicyError::MachineStateDiffers)
    );
    // should fail when machine state has wrong size of total memory
    let mut wrong = p2.get_default_machine_state();
    wrong
        .get_mut(&0)
        .unwrap()
        .memory_map
        .get_mut("memory")
        .unwrap()
        .total_mem_size = 1536 * MB;
    let mut s = state_with(wrong, ContainerMemoryAssignments::new());
    assert_eq!(
        p2.start(&mut s).err(),
        Some(PolicyError::MachineStateDiffers)
    );
    // should fail when the memory assignment uses the NUMA that does not exist
    let mut s = state_with(
        p2.get_default_machine_state(),
        assignments("pod", "container1", vec![block(&[2], "memory", 512 * MB)]),
    );
    assert_eq!(
        p2.start(&mut s).err().unwrap().to_string(),
        "[memorymanager] (pod: pod, container: container1) the memory assignment uses the NUMA that does not exist"
    );
    // should fail when the memory assignment uses a resource that does not exist
    let mut s = state_with(
        p2.get_default_machine_state(),
        assignments(
            "pod",
            "container1",
            vec![block(&[0], "hugepages-2Mi", 512 * MB)],
        ),
    );
    assert_eq!(
        p2.start(&mut s).err().unwrap().to_string(),
        "[memorymanager] (pod: pod, container: container1) the memory assignment uses memory resource that does not exist"
    );
    // should fail when the machine state does not follow the assignments (free memory)
    let mut s = state_with(
        p2.get_default_machine_state(),
        assignments("pod", "container1", vec![block(&[0], "memory", 512 * MB)]),
    );
    assert_eq!(
        p2.start(&mut s).err(),
        Some(PolicyError::MachineStateDiffers)
    );
    // should validate a cross NUMA allocation: 2 GiB spread over nodes 0 and 1
    let mut cross = p2.get_default_machine_state();
    for n in [0, 1] {
        let ns = cross.get_mut(&n).unwrap();
        ns.cells = vec![0, 1];
        ns.number_of_assignments = 1;
    }
    let t0 = cross
        .get_mut(&0)
        .unwrap()
        .memory_map
        .get_mut("memory")
        .unwrap();
    t0.free = 0;
    t0.reserved = 512 * MB;
    let t1 = cross
        .get_mut(&1)
        .unwrap()
        .memory_map
        .get_mut("memory")
        .unwrap();
    t1.free = 0;
    t1.reserved = 512 * MB;
    let mut s = state_with(
        cross.clone(),
        assignments("pod", "container1", vec![block(&[0, 1], "memory", GB)]),
    );
    p2.start(&mut s).unwrap();
    assert_eq!(s.get_machine_state(), cross);
}

/// A machine state from (node, assignments, cells, memory table, 1 GiB pages table).
fn ms_of(nodes: &[(usize, i64, &[usize], MemoryTable, MemoryTable)]) -> NUMANodeMap {
    nodes
        .iter()
        .map(|(id, a, cells, m, h)| (*id, node(*a, cells, *m, *h)))
        .collect()
}

/// `TestStaticPolicyAllocate`.
#[test]
fn allocate_table() {
    let gb3 = machine(1, 3 * GB, 1);
    // should do nothing for non-guaranteed pods
    let mut p = policy(gb3.clone(), reserved(1, 512 * MB), FakeStore::default());
    let mut s = StateMemory::new();
    p.start(&mut s).unwrap();
    let before = s.get_machine_state();
    let bp = pod("pod1", vec![], vec![burstable_container("container1")]);
    p.allocate(&mut s, &bp, &first_container(&bp)).unwrap();
    assert_eq!(s.get_machine_state(), before);
    assert!(s.get_memory_assignments().is_empty());
    // should do nothing once container already exists under the state file
    let gp = guaranteed_pod("pod1", "container1");
    let existing = assignments("pod1", "container1", vec![block(&[0], "memory", GB)]);
    let mut s2 = state_with(before.clone(), existing.clone());
    p.allocate(&mut s2, &gp, &first_container(&gp)).unwrap();
    assert_eq!(s2.get_memory_assignments(), existing);
    assert_eq!(s2.get_machine_state(), before);
    // should calculate a default topology hint when no NUMA affinity was provided
    p.allocate(&mut s, &gp, &first_container(&gp)).unwrap();
    assert_eq!(
        s.get_memory_assignments(),
        assignments(
            "pod1",
            "container1",
            vec![block(&[0], HUGEPAGES_1G, GB), block(&[0], "memory", GB)]
        )
    );
    assert_eq!(
        s.get_machine_state()[&0],
        node(
            2,
            &[0],
            table(3 * GB, 512 * MB, 1536 * MB, GB),
            table(GB, 0, GB, GB)
        )
    );
    // should fail when no NUMA affinity was provided under the topology manager hint and
    // calculation of the default hint failed
    let mut p = policy(
        machine(1, 2 * GB, 1),
        reserved(1, 512 * MB),
        FakeStore::default(),
    );
    let mut s = StateMemory::new();
    p.start(&mut s).unwrap();
    let big = pod(
        "pod1",
        vec![],
        vec![guaranteed("container1", "2Gi", Some("1Gi"))],
    );
    assert_eq!(
        p.allocate(&mut s, &big, &first_container(&big)).err(),
        Some(PolicyError::NoDefaultAffinity)
    );
    // should fail when no NUMA affinity was provided under the topology manager preferred
    // hint and default hint has preferred false
    let hp = table(GB, 0, GB, 0);
    let three = ms_of(&[
        (0, 1, &[0], table(1536 * MB, 512 * MB, GB, 512 * MB), hp),
        (1, 0, &[1], table(1536 * MB, 512 * MB, 512 * MB, 0), hp),
        (2, 0, &[2], table(1536 * MB, 512 * MB, 512 * MB, 0), hp),
    ]);
    let mut p = policy(
        machine(3, GB, 1),
        reserved(3, 512 * MB),
        store_with(
            "pod2",
            "container2",
            TopologyHint {
                numa_node_affinity: None,
                preferred: true,
            },
        ),
    );
    let mut s = state_with(
        three,
        assignments("pod1", "container1", vec![block(&[0], "memory", 512 * MB)]),
    );
    let gp2 = guaranteed_pod("pod2", "container2");
    assert_eq!(
        p.allocate(&mut s, &gp2, &first_container(&gp2)).err(),
        Some(PolicyError::NoDefaultPreferredHint)
    );
    // should fail when NUMA affinity provided under the topology manager hint did not
    // satisfy container requirements and extended hint generation failed
    let one = ms_of(&[(0, 0, &[0], table(GB, 512 * MB, 512 * MB, 0), hp)]);
    let mut p = policy(
        machine(1, GB, 1),
        reserved(1, 512 * MB),
        store_with("pod1", "container1", hint(&[0], false)),
    );
    let mut s = state_with(one, ContainerMemoryAssignments::new());
    assert_eq!(
        p.allocate(&mut s, &gp, &first_container(&gp)).err(),
        Some(PolicyError::CannotExtendHint)
    );
    // should fail when the topology manager provided the preferred hint and extended hint
    // has preferred false
    let group = ms_of(&[
        (0, 1, &[0, 1], table(1536 * MB, 512 * MB, GB, 512 * MB), hp),
        (1, 1, &[0, 1], table(1536 * MB, 512 * MB, GB, 0), hp),
    ]);
    let mut p = policy(
        machine(2, GB, 1),
        reserved(2, 512 * MB),
        store_with("pod1", "container1", hint(&[0], true)),
    );
    let mut s = state_with(group, ContainerMemoryAssignments::new());
    assert_eq!(
        p.allocate(&mut s, &gp, &first_container(&gp)).err(),
        Some(PolicyError::NoExtendedPreferredHint)
    );
    // should succeed to allocate memory from multiple NUMA nodes
    let small = table(GB, 512 * MB, 512 * MB, 0);
    let four = ms_of(&[
        (0, 0, &[0], small, hp),
        (1, 0, &[1], small, hp),
        (2, 0, &[2], small, hp),
        (3, 0, &[3], small, hp),
    ]);
    let mut p = policy(
        machine(4, GB, 1),
        reserved(4, 512 * MB),
        store_with(
            "pod1",
            "container1",
            TopologyHint {
                numa_node_affinity: None,
                preferred: true,
            },
        ),
    );
    let mut s = state_with(four, ContainerMemoryAssignments::new());
    p.allocate(&mut s, &gp, &first_container(&gp)).unwrap();
    assert_eq!(
        s.get_memory_assignments(),
        assignments(
            "pod1",
            "container1",
            vec![
                block(&[0, 1], HUGEPAGES_1G, GB),
                block(&[0, 1], "memory", GB)
            ]
        )
    );
    let ms = s.get_machine_state();
    assert_eq!(
        ms[&0],
        node(
            2,
            &[0, 1],
            table(GB, 512 * MB, 512 * MB, 512 * MB),
            table(GB, 0, GB, GB)
        )
    );
    assert_eq!(
        ms[&1],
        node(
            2,
            &[0, 1],
            table(GB, 512 * MB, 512 * MB, 512 * MB),
            table(GB, 0, GB, 0)
        )
    );
    assert_eq!(ms[&2], node(0, &[2], small, hp));
    // should validate NUMA node can not have both single and cross NUMA node memory
    // allocations: node 1 is in group (0, 1); a hint of (1, 2) with enough free memory
    // violates it.
    let roomy = table(4 * GB, 512 * MB, 3 * GB, 0);
    let mixed = ms_of(&[
        (0, 1, &[0, 1], roomy, hp),
        (1, 1, &[0, 1], roomy, hp),
        (2, 0, &[2], roomy, hp),
    ]);
    let mut p = policy(
        machine(3, GB, 1),
        reserved(3, 512 * MB),
        store_with("pod2", "container2", hint(&[1, 2], true)),
    );
    let mut s = state_with(mixed, ContainerMemoryAssignments::new());
    assert_eq!(
        p.allocate(&mut s, &gp2, &first_container(&gp2)).err(),
        Some(PolicyError::HintViolatesNumaAllocation)
    );
}

/// `TestStaticPolicyAllocate`: a guaranteed pod with pod-level resources is skipped
/// (with the `PodLevelResources` gate, on by default in 1.35).
#[test]
fn allocate_skips_pod_level_resources() {
    let mut p = policy(
        machine(1, 2 * GB, 1),
        reserved(1, 512 * MB),
        FakeStore::default(),
    );
    let mut s = StateMemory::new();
    p.start(&mut s).unwrap();
    let mut gp = guaranteed_pod("pod1", "container1");
    let list: BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity> = [
        (
            "cpu".to_owned(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("1".into()),
        ),
        (
            "memory".to_owned(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("1Gi".into()),
        ),
    ]
    .into_iter()
    .collect();
    gp.spec.as_mut().unwrap().resources = Some(k8s_openapi::api::core::v1::ResourceRequirements {
        requests: Some(list.clone()),
        limits: Some(list),
        ..Default::default()
    });
    if p.pod_level_resources {
        p.allocate(&mut s, &gp, &first_container(&gp)).unwrap();
        assert!(s.get_memory_assignments().is_empty());
        assert!(
            p.get_topology_hints(&s, &gp, &first_container(&gp))
                .is_empty()
        );
        assert!(p.get_pod_topology_hints(&s, &gp).is_empty());
    }
}

/// `TestStaticPolicyAllocateWithInitContainers`: "init containers requests 1Gi and 2Gi,
/// apps containers 3Gi and 4Gi" — the app containers take over the init containers'
/// memory; the machine state holds the apps' 7 GiB only.
#[test]
fn allocate_with_init_containers_reuses_their_memory() {
    let m = machine(1, 20 * GB, 8);
    let mut p = policy(
        m,
        reserved(1, 512 * MB),
        store_with("pod1", "", hint(&[0], true)),
    );
    p.affinity = Arc::new(FakeStore {
        default_hint: hint(&[0], true),
        ..FakeStore::default()
    });
    let mut s = StateMemory::new();
    p.start(&mut s).unwrap();
    let pd = pod(
        "pod1",
        vec![
            guaranteed("initContainer1", "1Gi", Some("1Gi")),
            guaranteed("initContainer2", "2Gi", Some("2Gi")),
        ],
        vec![
            guaranteed("container1", "3Gi", Some("3Gi")),
            guaranteed("container2", "4Gi", Some("4Gi")),
        ],
    );
    let spec = pd.spec.clone().unwrap();
    for c in spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
    {
        p.allocate(&mut s, &pd, c).unwrap();
    }
    let a = s.get_memory_assignments();
    let pod1 = &a["pod1"];
    assert_eq!(
        pod1["initContainer1"],
        vec![block(&[0], HUGEPAGES_1G, 0), block(&[0], "memory", 0)]
    );
    assert_eq!(
        pod1["initContainer2"],
        vec![block(&[0], HUGEPAGES_1G, 0), block(&[0], "memory", 0)]
    );
    assert_eq!(
        pod1["container1"],
        vec![
            block(&[0], HUGEPAGES_1G, 3 * GB),
            block(&[0], "memory", 3 * GB)
        ]
    );
    assert_eq!(
        pod1["container2"],
        vec![
            block(&[0], HUGEPAGES_1G, 4 * GB),
            block(&[0], "memory", 4 * GB)
        ]
    );
    let ms = s.get_machine_state();
    assert_eq!(ms[&0].memory_map["memory"].reserved, 7 * GB);
    assert_eq!(ms[&0].memory_map[HUGEPAGES_1G].reserved, 7 * GB);
    assert_eq!(ms[&0].number_of_assignments, 8);
}

/// `TestStaticPolicyAllocateWithRestartableInitContainers`: a restartable init container
/// (sidecar) keeps its memory; the app container does not reuse it.
#[test]
fn restartable_init_container_memory_is_not_reused() {
    let mut p = policy(
        machine(1, 20 * GB, 8),
        reserved(1, 512 * MB),
        FakeStore {
            default_hint: hint(&[0], true),
            ..FakeStore::default()
        },
    );
    let mut s = StateMemory::new();
    p.start(&mut s).unwrap();
    let mut sidecar = guaranteed("restartableInit1", "1Gi", Some("1Gi"));
    sidecar.restart_policy = Some("Always".into());
    let pd = pod(
        "pod1",
        vec![sidecar, guaranteed("init2", "2Gi", Some("2Gi"))],
        vec![guaranteed("container1", "3Gi", Some("3Gi"))],
    );
    let spec = pd.spec.clone().unwrap();
    for c in spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
    {
        p.allocate(&mut s, &pd, c).unwrap();
    }
    let a = s.get_memory_assignments();
    assert_eq!(
        a["pod1"]["restartableInit1"],
        vec![block(&[0], HUGEPAGES_1G, GB), block(&[0], "memory", GB)]
    );
    assert_eq!(
        a["pod1"]["init2"],
        vec![block(&[0], HUGEPAGES_1G, 0), block(&[0], "memory", 0)]
    );
    assert_eq!(
        s.get_machine_state()[&0].memory_map[HUGEPAGES_1G].reserved,
        4 * GB
    );
}

/// `TestStaticPolicyRemoveContainer`.
#[test]
fn remove_container_table() {
    let two = machine(2, 3 * GB, 1);
    let mut p = policy(two.clone(), reserved(2, 512 * MB), FakeStore::default());
    let default = p.get_default_machine_state();
    // should do nothing when the container does not exist under the state
    let mut s = state_with(default.clone(), ContainerMemoryAssignments::new());
    p.remove_container(&mut s, "pod1", "container1");
    assert_eq!(s.get_machine_state(), default);
    // should delete the container assignment and update the machine state
    let mut s = StateMemory::new();
    p.start(&mut s).unwrap();
    let gp = guaranteed_pod("pod1", "container1");
    p.allocate(&mut s, &gp, &first_container(&gp)).unwrap();
    assert_ne!(s.get_machine_state(), default);
    p.remove_container(&mut s, "pod1", "container1");
    assert_eq!(s.get_machine_state(), default);
    assert!(s.get_memory_assignments().is_empty());
    // should delete the cross NUMA container assignment and update the machine state
    let mut p = policy(
        two,
        reserved(2, 512 * MB),
        store_with("pod1", "container1", hint(&[0, 1], false)),
    );
    let mut s = StateMemory::new();
    p.start(&mut s).unwrap();
    let big = pod(
        "pod1",
        vec![],
        vec![guaranteed("container1", "2Gi", Some("2Gi"))],
    );
    p.allocate(&mut s, &big, &first_container(&big)).unwrap();
    let ms = s.get_machine_state();
    assert_eq!(ms[&0].cells, vec![0, 1]);
    assert_eq!(ms[&0].memory_map["memory"].reserved, 1536 * MB);
    assert_eq!(ms[&1].memory_map["memory"].reserved, 512 * MB);
    p.remove_container(&mut s, "pod1", "container1");
    assert_eq!(s.get_machine_state(), default);
}

/// `TestStaticPolicyGetTopologyHints`.
#[test]
fn get_topology_hints_table() {
    let p = policy(
        machine(4, 2 * GB, 1),
        reserved(4, 512 * MB),
        FakeStore::default(),
    );
    let free = table(2 * GB, 512 * MB, 1536 * MB, 0);
    let hp = table(GB, 0, GB, 0);
    let default4 = ms_of(&[
        (0, 0, &[0], free, hp),
        (1, 0, &[1], free, hp),
        (2, 0, &[2], free, hp),
        (3, 0, &[3], free, hp),
    ]);
    let gp = guaranteed_pod("pod1", "container1");
    let c = first_container(&gp);
    let s = state_with(default4.clone(), ContainerMemoryAssignments::new());
    // should not provide topology hints for non-guaranteed pods
    let bp = pod("pod1", vec![], vec![burstable_container("container1")]);
    assert!(
        p.get_topology_hints(&s, &bp, &first_container(&bp))
            .is_empty()
    );
    // should provide topology hints based on the existent memory assignment
    let s = state_with(
        p.get_default_machine_state(),
        assignments(
            "pod1",
            "container1",
            vec![block(&[0], "memory", GB), block(&[0], HUGEPAGES_1G, GB)],
        ),
    );
    let want: ResourceHints = [
        (HUGEPAGES_1G.to_owned(), Some(vec![hint(&[0], true)])),
        ("memory".to_owned(), Some(vec![hint(&[0], true)])),
    ]
    .into_iter()
    .collect();
    assert_eq!(p.get_topology_hints(&s, &gp, &c), want);
    assert_eq!(p.get_pod_topology_hints(&s, &gp), want);
    // should calculate new topology hints, when the container does not exist under
    // assignments (nodes 0 and 1 are a group with no memory left)
    let mut ms = default4.clone();
    for n in [0, 1] {
        let ns = ms.get_mut(&n).unwrap();
        ns.cells = vec![0, 1];
        ns.number_of_assignments = 2;
    }
    ms.get_mut(&0).unwrap().memory_map.insert(
        "memory".into(),
        table(2 * GB, 512 * MB, 1536 * MB, 1536 * MB),
    );
    ms.get_mut(&0)
        .unwrap()
        .memory_map
        .insert(HUGEPAGES_1G.into(), table(GB, 0, GB, GB));
    ms.get_mut(&1).unwrap().memory_map.insert(
        "memory".into(),
        table(2 * GB, 512 * MB, 1536 * MB, 512 * MB),
    );
    ms.get_mut(&1)
        .unwrap()
        .memory_map
        .insert(HUGEPAGES_1G.into(), table(GB, 0, GB, GB));
    let s = state_with(
        ms,
        assignments(
            "pod1",
            "container1",
            vec![
                block(&[0, 1], "memory", 2 * GB),
                block(&[0, 1], HUGEPAGES_1G, 2 * GB),
            ],
        ),
    );
    let gp2 = guaranteed_pod("pod2", "container2");
    let expected = Some(vec![
        hint(&[2], true),
        hint(&[3], true),
        hint(&[2, 3], false),
    ]);
    let want: ResourceHints = [
        (HUGEPAGES_1G.to_owned(), expected.clone()),
        ("memory".to_owned(), expected),
    ]
    .into_iter()
    .collect();
    assert_eq!(p.get_topology_hints(&s, &gp2, &first_container(&gp2)), want);
    // should fail when number of existing memory assignment resources are different from
    // resources requested by container; when the types differ; when the size differs
    for blocks in [
        vec![block(&[0], "memory", GB)],
        vec![block(&[0], "memory", GB), block(&[0], "hugepages-2Mi", GB)],
        vec![block(&[0], "memory", 2 * GB), block(&[0], HUGEPAGES_1G, GB)],
    ] {
        let s = state_with(
            p.get_default_machine_state(),
            assignments("pod1", "container1", blocks),
        );
        assert!(p.get_topology_hints(&s, &gp, &c).is_empty());
    }
    // should not return preferred hints with multiple NUMA nodes for the pod with
    // resources satisfied by a single NUMA node
    let s = state_with(default4, ContainerMemoryAssignments::new());
    let hints = p.get_topology_hints(&s, &gp, &c);
    for list in hints.values() {
        for h in list.as_ref().unwrap() {
            assert_eq!(
                h.preferred,
                h.numa_node_affinity.unwrap().count() == 1,
                "{h:?}"
            );
        }
        assert_eq!(list.as_ref().unwrap().len(), 15);
    }
}

/// `Test_getPodRequestedResources`.
#[test]
fn pod_requested_resources_table() {
    let mem = |n: &str, m: &str| container(n, &[("cpu", "1"), ("memory", m)]);
    let sidecar = |n: &str, m: &str| {
        let mut c = mem(n, m);
        c.restart_policy = Some("Always".into());
        c
    };
    let r =
        |m: u64| -> BTreeMap<String, u64> { [("memory".to_owned(), m * GB)].into_iter().collect() };
    let cases = vec![
        (
            "maximum resources of init containers > total resources of containers",
            pod(
                "p",
                vec![mem("i1", "10Gi"), mem("i2", "20Gi")],
                vec![mem("c1", "1Gi"), mem("c2", "2Gi")],
            ),
            r(20),
        ),
        (
            "maximum resources of init containers < total resources of containers",
            pod(
                "p",
                vec![mem("i1", "1Gi"), mem("i2", "2Gi")],
                vec![mem("c1", "10Gi"), mem("c2", "20Gi")],
            ),
            r(30),
        ),
        (
            "maximum resources of init containers > total resources of long running containers, including restartable init containers",
            pod(
                "p",
                vec![
                    sidecar("r1", "1Gi"),
                    mem("i1", "20Gi"),
                    sidecar("r2", "2Gi"),
                ],
                vec![mem("c1", "1Gi")],
            ),
            r(21),
        ),
        (
            "maximum resources of init containers < total resources of long running containers, including restartable init containers",
            pod(
                "p",
                vec![
                    sidecar("r1", "10Gi"),
                    mem("i1", "2Gi"),
                    sidecar("r2", "20Gi"),
                ],
                vec![mem("c1", "1Gi")],
            ),
            r(31),
        ),
    ];
    for (name, p, want) in cases {
        assert_eq!(get_pod_requested_resources(&p).unwrap(), want, "{name}");
    }
    // calculate different resources independently
    let p = pod(
        "p",
        vec![container("i1", &[("memory", "2Gi"), (HUGEPAGES_1G, "1Gi")])],
        vec![container("c1", &[("memory", "1Gi"), (HUGEPAGES_1G, "2Gi")])],
    );
    let want: BTreeMap<String, u64> = [
        (HUGEPAGES_1G.to_owned(), 2 * GB),
        ("memory".to_owned(), 2 * GB),
    ]
    .into_iter()
    .collect();
    assert_eq!(get_pod_requested_resources(&p).unwrap(), want);
    // a fractional request is refused
    let bad = container("c", &[("memory", "0.5")]);
    assert_eq!(
        get_requested_resources(&bad).err(),
        Some(PolicyError::QuantityNotInt)
    );
}

/// `Test_isAffinityViolatingNUMAAllocations`.
#[test]
fn affinity_violating_numa_allocations_table() {
    let mut ms = policy(
        machine(3, 2 * GB, 1),
        reserved(3, 512 * MB),
        FakeStore::default(),
    )
    .get_default_machine_state();
    for (n, cells, count) in [(0, vec![0, 1], 1), (1, vec![0, 1], 1), (2, vec![2], 1)] {
        let ns = ms.get_mut(&n).unwrap();
        ns.cells = cells;
        ns.number_of_assignments = count;
    }
    // violating NUMA allocations because given affinity asks for NUMA ID 1 which is on
    // different cells group
    assert!(is_affinity_violating_numa_allocations(
        &ms,
        BitMask::new(&[1, 2])
    ));
    // ... asks for NUMA ID 2 which is used for a single NUMA node memory allocation
    assert!(is_affinity_violating_numa_allocations(
        &ms,
        BitMask::new(&[2, 3])
    ));
    // valid affinity: the existing group, or a single node
    assert!(!is_affinity_violating_numa_allocations(
        &ms,
        BitMask::new(&[0, 1])
    ));
    assert!(!is_affinity_violating_numa_allocations(
        &ms,
        BitMask::new(&[2])
    ));
    let empty = policy(
        machine(2, 2 * GB, 1),
        reserved(2, 512 * MB),
        FakeStore::default(),
    )
    .get_default_machine_state();
    // valid affinity, no prior assignments
    assert!(!is_affinity_violating_numa_allocations(
        &empty,
        BitMask::new(&[0, 1])
    ));
}

/// `GetAllocatableMemory` per node and resource; `findBestHint`, `isHintInGroup`.
#[test]
fn helpers() {
    let p = policy(
        machine(2, 2 * GB, 1),
        reserved(2, 512 * MB),
        FakeStore::default(),
    );
    let s = state_with(
        p.get_default_machine_state(),
        ContainerMemoryAssignments::new(),
    );
    assert_eq!(
        p.get_allocatable_memory(&s),
        vec![
            block(&[0], HUGEPAGES_1G, GB),
            block(&[0], "memory", 512 * MB),
            block(&[1], HUGEPAGES_1G, GB),
            block(&[1], "memory", 512 * MB),
        ]
    );
    assert_eq!(
        find_best_hint(&[hint(&[0, 1], false), hint(&[1], true), hint(&[0], true)]),
        hint(&[0], true)
    );
    assert_eq!(find_best_hint(&[]), TopologyHint::default());
    assert!(is_hint_in_group(&[1], &[0, 1]));
    assert!(!is_hint_in_group(&[2], &[0, 1]));
}
