#![allow(clippy::unwrap_used, clippy::panic, clippy::type_complexity)]
//! Upstream `memory_manager_test.go`.

use std::sync::{Arc, Mutex};

use super::*;
use crate::state::{MemoryTable, NUMANodeMap, StateMemory};
use crate::test_util::*;
use kubelet_cpumanager::manager::{ActivePods, PodStatusProvider, SourcesReady};
use kubelet_cpumanager::state::FakeCheckpointStore;
use kubelet_topologymanager::FakeStore;

const MSG_NOT_EQUAL: &str = "the total amount {} of type {} is not equal to the value {} determined by Node Allocatable feature";

fn not_equal(reserved: &str, resource: &str, allocatable: &str) -> String {
    MSG_NOT_EQUAL
        .replacen("{}", &format!("{reserved:?}"), 1)
        .replacen("{}", &format!("{resource:?}"), 1)
        .replacen("{}", &format!("{allocatable:?}"), 1)
}

fn two_nodes() -> MachineInfo {
    MachineInfo {
        topology: vec![
            crate::sysfs::Node {
                id: 0,
                ..Default::default()
            },
            crate::sysfs::Node {
                id: 1,
                ..Default::default()
            },
        ],
    }
}

fn reservation(node: i32, limits: BTreeMap<String, Quantity>) -> MemoryReservation {
    MemoryReservation {
        numa_node: node,
        limits,
    }
}

/// `TestValidateReservedMemory`.
#[test]
fn validate_reserved_memory_table() {
    let cases: Vec<(&str, BTreeMap<String, Quantity>, Vec<MemoryReservation>, String)> = vec![
        ("Node Allocatable not set, reserved not set", res(&[]), vec![], String::new()),
        (
            "Node Allocatable set to zero, reserved set to zero",
            res(&[("memory", 0)]),
            vec![reservation(0, res(&[("memory", 0)]))],
            String::new(),
        ),
        (
            "Node Allocatable not set (equal zero), reserved set",
            res(&[]),
            vec![reservation(0, res(&[("memory", 12)]))],
            not_equal("12", "memory", "0"),
        ),
        (
            "Node Allocatable set, reserved not set",
            res(&[(HUGEPAGES_2M, 5)]),
            vec![],
            not_equal("0", HUGEPAGES_2M, "5"),
        ),
        (
            "Reserved not equal to Node Allocatable",
            res(&[("memory", 5)]),
            vec![reservation(0, res(&[("memory", 12)]))],
            not_equal("12", "memory", "5"),
        ),
        (
            "Reserved contains the NUMA node that does not exist under the machine",
            res(&[("memory", 17)]),
            vec![
                reservation(0, res(&[("memory", 12)])),
                reservation(2, res(&[("memory", 5)])),
            ],
            "the reserved memory configuration references a NUMA node 2 that does not exist on this machine".to_owned(),
        ),
        (
            "Reserved total equal to Node Allocatable",
            res(&[("memory", 17), (HUGEPAGES_2M, 77), (HUGEPAGES_1G, 13)]),
            vec![
                reservation(0, res(&[("memory", 12), (HUGEPAGES_2M, 70), (HUGEPAGES_1G, 13)])),
                reservation(1, res(&[("memory", 5), (HUGEPAGES_2M, 7)])),
            ],
            String::new(),
        ),
        (
            "Reserved total hugapages-2M not equal to Node Allocatable",
            res(&[("memory", 17), (HUGEPAGES_2M, 14), (HUGEPAGES_1G, 13)]),
            vec![
                reservation(0, res(&[("memory", 12), (HUGEPAGES_2M, 70), (HUGEPAGES_1G, 13)])),
                reservation(1, res(&[("memory", 5), (HUGEPAGES_2M, 7)])),
            ],
            not_equal("77", HUGEPAGES_2M, "14"),
        ),
    ];
    for (name, allocatable, reserved, want) in cases {
        let got = validate_reserved_memory(&two_nodes(), &allocatable, &reserved)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(got, want, "{name}");
    }
}

/// `TestConvertPreReserved`.
#[test]
fn convert_reserved_table() {
    let r = |items: &[(usize, &[(&str, u64)])]| -> SystemReservedMemory {
        items
            .iter()
            .map(|(n, l)| (*n, l.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()))
            .collect()
    };
    let cases = vec![
        ("Empty", vec![], r(&[(0, &[]), (1, &[])])),
        (
            "Single NUMA node is reserved",
            vec![reservation(
                0,
                res(&[("memory", 12), (HUGEPAGES_2M, 70), (HUGEPAGES_1G, 13)]),
            )],
            r(&[
                (0, &[("memory", 12), (HUGEPAGES_2M, 70), (HUGEPAGES_1G, 13)]),
                (1, &[]),
            ]),
        ),
        (
            "Both NUMA nodes are reserved",
            vec![
                reservation(
                    0,
                    res(&[("memory", 12), (HUGEPAGES_2M, 70), (HUGEPAGES_1G, 13)]),
                ),
                reservation(1, res(&[("memory", 5), (HUGEPAGES_2M, 7)])),
            ],
            r(&[
                (0, &[("memory", 12), (HUGEPAGES_2M, 70), (HUGEPAGES_1G, 13)]),
                (1, &[("memory", 5), (HUGEPAGES_2M, 7)]),
            ]),
        ),
    ];
    for (name, reserved, want) in cases {
        assert_eq!(
            convert_reserved(&two_nodes(), &reserved).unwrap(),
            want,
            "{name}"
        );
    }
}

/// `TestNewManager`.
#[test]
fn new_manager_table() {
    let gate = FeatureGate::default();
    let two_gi = res_bin(&[("memory", 2 * GB)]);
    let cases: Vec<(
        &str,
        &str,
        BTreeMap<String, Quantity>,
        Vec<MemoryReservation>,
        Option<&str>,
    )> = vec![
        (
            "Successful creation of Memory Manager instance",
            "Static",
            two_gi.clone(),
            vec![
                reservation(0, res_bin(&[("memory", GB)])),
                reservation(1, res_bin(&[("memory", GB)])),
            ],
            None,
        ),
        (
            "Should return an error when systemReservedMemory (configured with kubelet flag) does not comply with Node Allocatable feature values",
            "Static",
            two_gi.clone(),
            vec![
                reservation(0, res_bin(&[("memory", GB)])),
                reservation(1, res_bin(&[("memory", 2 * GB)])),
            ],
            Some(
                "the total amount \"3Gi\" of type \"memory\" is not equal to the value \"2Gi\" determined by Node Allocatable feature",
            ),
        ),
        (
            "Should return an error when memory reserved for system is empty (systemReservedMemory)",
            "Static",
            res(&[]),
            vec![],
            Some("[memorymanager] you should specify the system reserved memory"),
        ),
        (
            "Should return an error when policy name is not correct",
            "fake",
            res(&[]),
            vec![],
            Some("unknown policy: \"fake\""),
        ),
        (
            "Should create manager with \"none\" policy",
            "None",
            res(&[]),
            vec![],
            None,
        ),
        (
            "BestEffort is Windows only",
            "BestEffort",
            res(&[]),
            vec![],
            Some("policy \"BestEffort\" is not available for platform \"linux\""),
        ),
    ];
    for (name, policy, allocatable, reserved, want) in cases {
        let got = Manager::new(
            policy,
            &return_machine_info(),
            &allocatable,
            &reserved,
            Arc::new(FakeStore::default()),
            &gate,
        );
        match (got, want) {
            (Ok(m), None) => assert_eq!(m.policy_name(), policy, "{name}"),
            (Err(e), Some(want)) => assert_eq!(e.to_string(), want, "{name}"),
            (Ok(_), Some(want)) => panic!("{name}: want error {want}"),
            (Err(e), None) => panic!("{name}: unexpected error {e}"),
        }
    }
}

#[derive(Clone, Default)]
struct Sources {
    pods: Arc<Mutex<Vec<Arc<Pod>>>>,
}

impl ActivePods for Sources {
    fn active_pods(&self) -> Vec<Arc<Pod>> {
        self.pods.lock().unwrap().clone()
    }
}

impl SourcesReady for Sources {
    fn all_ready(&self) -> bool {
        true
    }
}

impl PodStatusProvider for Sources {
    fn get_pod_status(&self, _pod_uid: &str) -> Option<k8s_openapi::api::core::v1::PodStatus> {
        None
    }
}

fn manager_sources(s: &Sources) -> ManagerSources {
    ManagerSources {
        active_pods: Box::new(s.clone()),
        sources_ready: Box::new(s.clone()),
        pod_status_provider: Box::new(s.clone()),
    }
}

fn static_policy(store: FakeStore) -> Box<dyn Policy> {
    let reserved: SystemReservedMemory = (0..2)
        .map(|n| (n, [("memory".to_owned(), GB)].into_iter().collect()))
        .collect();
    Box::new(
        StaticPolicy::new(
            return_machine_info(),
            reserved,
            Arc::new(store),
            &FeatureGate::default(),
        )
        .unwrap(),
    )
}

fn started(
    store: FakeStore,
    sources: &Sources,
    ms: NUMANodeMap,
    blocks: crate::state::ContainerMemoryAssignments,
) -> Manager {
    let mut state = StateMemory::new();
    state.set_machine_state(ms);
    state.set_memory_assignments(blocks);
    Manager::with_state(
        static_policy(store),
        Box::new(state),
        Some(manager_sources(sources)),
        ContainerMap::new(),
    )
}

fn blocks(node: usize, memory: u64, hugepages: u64) -> Vec<Block> {
    vec![
        Block {
            numa_affinity: vec![node],
            type_: HUGEPAGES_1G.to_owned(),
            size: hugepages,
        },
        Block {
            numa_affinity: vec![node],
            type_: "memory".to_owned(),
            size: memory,
        },
    ]
}

/// `TestRemoveStaleState` ("Should remove the state of containers no longer in active
/// pods" and "keep the state of active pods").
#[test]
fn remove_stale_state_drops_inactive_containers_and_frees_their_memory() {
    let sources = Sources::default();
    let mut ms = default_two_node_state();
    let n0 = ms.get_mut(&0).unwrap();
    n0.number_of_assignments = 4;
    n0.memory_map
        .insert("memory".into(), table(10 * GB, GB, 4 * GB, 2 * GB));
    n0.memory_map
        .insert(HUGEPAGES_1G.into(), table(5 * GB, 0, 5 * GB, 2 * GB));
    let assignments: crate::state::ContainerMemoryAssignments = [(
        "fakePod1".to_owned(),
        [
            ("fakeContainer1".to_owned(), blocks(0, GB, GB)),
            ("fakeContainer2".to_owned(), blocks(0, GB, GB)),
        ]
        .into_iter()
        .collect(),
    )]
    .into_iter()
    .collect();
    // The pod is active: nothing changes.
    sources.pods.lock().unwrap().push(Arc::new(pod(
        "fakePod1",
        vec![],
        vec![
            guaranteed("fakeContainer1", "1Gi", Some("1Gi")),
            guaranteed("fakeContainer2", "1Gi", Some("1Gi")),
        ],
    )));
    let mut m = started(
        FakeStore::default(),
        &sources,
        ms.clone(),
        assignments.clone(),
    );
    m.remove_stale_state();
    assert_eq!(
        m.state_reader().unwrap().get_memory_assignments(),
        assignments
    );
    assert_eq!(m.state_reader().unwrap().get_machine_state(), ms);
    // No active pod: the blocks go, the memory is free again.
    sources.pods.lock().unwrap().clear();
    m.remove_stale_state();
    assert!(
        m.state_reader()
            .unwrap()
            .get_memory_assignments()
            .is_empty()
    );
    assert_eq!(
        m.state_reader().unwrap().get_machine_state(),
        default_two_node_state()
    );
}

/// `TestAddContainer`: the container id is recorded; `Allocate` (with the fake
/// topology manager's affinity) reserves the memory; `GetMemoryNUMANodes` gives it.
#[test]
fn allocate_then_add_container_records_the_blocks_and_numa_nodes() {
    let sources = Sources::default();
    let p = pod(
        "fakePod1",
        vec![],
        vec![guaranteed("fakeContainer1", "1Gi", Some("1Gi"))],
    );
    sources.pods.lock().unwrap().push(Arc::new(p.clone()));
    let mut store = FakeStore::default();
    store.hints.insert(
        ("fakePod1".into(), "fakeContainer1".into()),
        kubelet_topologymanager::TopologyHint {
            numa_node_affinity: Some(kubelet_topologymanager::BitMask::new(&[0])),
            preferred: true,
        },
    );
    let mut m = started(
        store,
        &sources,
        default_two_node_state(),
        Default::default(),
    );
    let c = &p.spec.as_ref().unwrap().containers[0];
    m.allocate(&p, c).unwrap();
    m.add_container(&p, c, "fakeID");
    assert_eq!(
        m.container_map().get("fakeID").unwrap(),
        &("fakePod1".to_owned(), "fakeContainer1".to_owned())
    );
    assert_eq!(
        m.get_memory("fakePod1", "fakeContainer1"),
        blocks(0, GB, GB)
    );
    assert_eq!(
        m.get_memory_numa_nodes(&p, c),
        Some([0].into_iter().collect())
    );
    let ms = m.state_reader().unwrap().get_machine_state();
    assert_eq!(ms[&0].memory_map["memory"], table(10 * GB, GB, 4 * GB, GB));
    assert_eq!(
        ms[&0].memory_map[HUGEPAGES_1G],
        table(5 * GB, 0, 5 * GB, GB)
    );
    assert_eq!(ms[&0].number_of_assignments, 2);
    // `RemoveContainer` by id gives it back.
    m.remove_container("fakeID");
    assert_eq!(
        m.state_reader().unwrap().get_machine_state(),
        default_two_node_state()
    );
    assert!(m.container_map().is_empty());
    // An unknown id is ignored.
    m.remove_container("unknown");
}

/// `TestAllocateAndAddPodWithInitContainers`: the app container reuses the init
/// container's memory; `AddContainer` of the app container removes the init container's
/// blocks.
#[test]
fn init_container_memory_is_reused_and_released_at_add_container() {
    let sources = Sources::default();
    let p = pod(
        "pod1",
        vec![guaranteed("initContainer1", "4Gi", Some("4Gi"))],
        vec![guaranteed("container1", "4Gi", Some("4Gi"))],
    );
    sources.pods.lock().unwrap().push(Arc::new(p.clone()));
    let mut m = started(
        FakeStore::default(),
        &sources,
        default_two_node_state(),
        Default::default(),
    );
    let spec = p.spec.clone().unwrap();
    let init = &spec.init_containers.unwrap()[0];
    let app = &spec.containers[0];
    m.allocate(&p, init).unwrap();
    m.allocate(&p, app).unwrap();
    assert_eq!(m.get_memory("pod1", "initContainer1"), blocks(0, 0, 0));
    assert_eq!(
        m.get_memory("pod1", "container1"),
        blocks(0, 4 * GB, 4 * GB)
    );
    let ms = m.state_reader().unwrap().get_machine_state();
    assert_eq!(
        ms[&0].memory_map["memory"],
        table(10 * GB, GB, 4 * GB, 4 * GB)
    );
    assert_eq!(ms[&0].number_of_assignments, 4);
    m.add_container(&p, init, "init-id");
    m.add_container(&p, app, "app-id");
    assert!(
        m.state_reader()
            .unwrap()
            .get_memory_blocks("pod1", "initContainer1")
            .is_none()
    );
    let ms = m.state_reader().unwrap().get_machine_state();
    assert_eq!(
        ms[&0].memory_map["memory"],
        table(10 * GB, GB, 4 * GB, 4 * GB)
    );
    assert_eq!(ms[&0].number_of_assignments, 2);
}

/// `Start` writes a fresh checkpoint with the default machine state, and a second start
/// with the `None` policy refuses it.
#[test]
fn start_writes_the_checkpoint_and_refuses_another_policys() {
    let sources = Sources::default();
    let store = Arc::new(FakeCheckpointStore::new());
    struct Shared(Arc<FakeCheckpointStore>);
    impl CheckpointStore for Shared {
        fn read(&self, key: &str) -> std::io::Result<Option<Vec<u8>>> {
            self.0.read(key)
        }
        fn write(&self, key: &str, data: &[u8]) -> std::io::Result<()> {
            self.0.write(key, data)
        }
        fn remove(&self, key: &str) -> std::io::Result<()> {
            self.0.remove(key)
        }
    }
    let mut m = Manager::with_policy(static_policy(FakeStore::default()));
    m.start(
        manager_sources(&sources),
        Shared(store.clone()),
        "/x/memory_manager_state",
        ContainerMap::new(),
    )
    .unwrap();
    let blob = store.blob("memory_manager_state").unwrap();
    let cp = crate::state::MemoryManagerCheckpoint::unmarshal(&blob).unwrap();
    assert_eq!(cp.policy_name, "Static");
    assert_eq!(cp.machine_state().unwrap(), default_two_node_state());
    assert_eq!(
        m.get_allocatable_memory(),
        vec![
            Block {
                numa_affinity: vec![0],
                type_: HUGEPAGES_1G.into(),
                size: 5 * GB
            },
            Block {
                numa_affinity: vec![0],
                type_: "memory".into(),
                size: 4 * GB
            },
            Block {
                numa_affinity: vec![1],
                type_: HUGEPAGES_1G.into(),
                size: 5 * GB
            },
            Block {
                numa_affinity: vec![1],
                type_: "memory".into(),
                size: 4 * GB
            },
        ]
    );
    let mut none = Manager::with_policy(Box::new(NonePolicy));
    let err = none
        .start(
            manager_sources(&sources),
            Shared(store),
            "/x/memory_manager_state",
            ContainerMap::new(),
        )
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "could not restore state from checkpoint: [memorymanager] configured policy \"None\" differs from state checkpoint policy \"Static\", please drain this node and delete the memory manager checkpoint file \"/x/memory_manager_state\" before restarting Kubelet"
    );
    let _ = MemoryTable::default();
}
