//! The topology manager and the CPU manager together on a fake sysfs of a 2-socket,
//! 4-NUMA-node machine (`testdata/sysfs/dual-socket-4-numa`: NUMA node n holds CPUs
//! 4n..4n+3 and their siblings 4n+16..4n+19; distances 10 local, 11 within a socket,
//! 21 across), the CPU manager's static policy with 1 reserved CPU (CPU 0, on node 0),
//! for each topology policy and scope.
//!
//! The expected affinities follow upstream's rules as its tables state them:
//! `generateCPUTopologyHints` makes every NUMA mask with enough free CPUs a hint,
//! preferred when it is as narrow as the narrowest mask the request could fit in at all
//! (cpumanager `topology_hints_test.go`); the merge keeps the narrowest preferred hint,
//! the lower mask among equals, or with `prefer-closest-numa-nodes` the one with the
//! lowest mean distance (`policy_test.go` "…ClosestNUMA", `numa_info_test.go`
//! `TestClosest`); `restricted` and `single-numa-node` refuse a non-preferred result,
//! `single-numa-node` keeps only one-node hints (`policy_single_numa_node_test.go`).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kubelet_apimachinery::{CpuSet, Quantity};
use kubelet_cpumanager::kubelet::CpuManager;
use kubelet_cpumanager::manager::{
    ActivePods, Manager, ManagerSources, PodStatusProvider, SourcesReady,
};
use kubelet_cpumanager::state::{ContainerMap, FakeCheckpointStore};
use kubelet_cpumanager::{RealSysFs, machine_info_from_sysfs};
use kubelet_features::FeatureGate;
use kubelet_topologymanager::{BitMask, OptionGates, Store, TopologyHint};

#[derive(Clone, Default)]
struct Pods(Arc<Mutex<Vec<Pod>>>);

impl ActivePods for Pods {
    fn active_pods(&self) -> Vec<Arc<Pod>> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .cloned()
            .map(Arc::new)
            .collect()
    }
}

impl SourcesReady for Pods {
    fn all_ready(&self) -> bool {
        true
    }
}

impl PodStatusProvider for Pods {
    fn get_pod_status(&self, _pod_uid: &str) -> Option<PodStatus> {
        None
    }
}

struct Node {
    topology: Arc<kubelet_topologymanager::Manager>,
    cpu: CpuManager,
    pods: Pods,
}

/// The kubelet's wiring: the topology manager from the machine's NUMA nodes, the CPU
/// manager reading its affinities, registered as its hint provider.
fn node(policy: &str, scope: &str, options: &[(&str, &str)]) -> Node {
    let sys = RealSysFs::with_root(format!(
        "{}/testdata/sysfs/dual-socket-4-numa",
        env!("CARGO_MANIFEST_DIR")
    ));
    let machine = machine_info_from_sysfs(&sys).unwrap();
    let options: BTreeMap<String, String> = options
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let topology = Arc::new(
        kubelet_topologymanager::Manager::new(
            &machine.numa_nodes(),
            policy,
            scope,
            &options,
            OptionGates::default(),
        )
        .unwrap(),
    );
    let manager = Manager::new(
        "static",
        &BTreeMap::new(),
        Duration::from_secs(10),
        &machine,
        &CpuSet::new(),
        Some(&Quantity::parse("1").unwrap()),
        topology.clone(),
        &FeatureGate::new(),
    )
    .unwrap();
    let cpu = CpuManager::new(manager);
    let pods = Pods::default();
    cpu.start(
        ManagerSources {
            active_pods: Box::new(pods.clone()),
            sources_ready: Box::new(pods.clone()),
            pod_status_provider: Box::new(pods.clone()),
        },
        FakeCheckpointStore::new(),
        "/var/lib/kubelet/cpu_manager_state",
        ContainerMap::new(),
    )
    .unwrap();
    topology.add_hint_provider(Arc::new(cpu.clone()));
    Node {
        topology,
        cpu,
        pods,
    }
}

/// A Guaranteed pod `name` (UID = name) with one container per CPU count (`c0`, `c1`…).
fn pod(name: &str, cpus: &[u32]) -> Pod {
    let containers = cpus
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let list = BTreeMap::from([
                ("cpu".to_owned(), ApiQuantity(n.to_string())),
                ("memory".to_owned(), ApiQuantity("1Gi".to_owned())),
            ]);
            Container {
                name: format!("c{i}"),
                resources: Some(ResourceRequirements {
                    requests: Some(list.clone()),
                    limits: Some(list),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }
        })
        .collect();
    let mut pod = Pod::default();
    pod.metadata.name = Some(name.to_owned());
    pod.metadata.uid = Some(name.to_owned());
    pod.spec = Some(PodSpec {
        containers,
        ..PodSpec::default()
    });
    pod
}

impl Node {
    /// Admits as the kubelet does: the pod is active first.
    fn admit(&self, p: &Pod) -> kubelet_admission::PodAdmitResult {
        self.pods.0.lock().unwrap().push(p.clone());
        self.topology.admit_pod(p)
    }

    /// The container's affinity and the NUMA nodes of its exclusive CPUs.
    fn placed(&self, p: &str, container: &str) -> (TopologyHint, Vec<usize>) {
        let manager = self.cpu.lock();
        let cpus = manager.get_exclusive_cpus(p, container);
        let details = &manager.topology().cpu_details;
        let mut nodes: Vec<usize> = cpus
            .iter()
            .map(|c| details.get(c).unwrap().numa_node_id)
            .collect();
        nodes.dedup();
        nodes.sort_unstable();
        nodes.dedup();
        (self.topology.get_affinity(p, container), nodes)
    }
}

fn hint(nodes: &[usize], preferred: bool) -> TopologyHint {
    TopologyHint {
        numa_node_affinity: Some(BitMask::new(nodes)),
        preferred,
    }
}

const ALIGNING: [&str; 3] = ["best-effort", "restricted", "single-numa-node"];

/// 4 CPUs fit on one node: every aligning policy puts the container on node 0 (the
/// lowest of the preferred one-node hints); `single-numa-node` stores that as the node,
/// the others too. `none` stores no affinity.
#[test]
fn a_small_guaranteed_pod_gets_one_numa_node() {
    for scope in ["container", "pod"] {
        for policy in ALIGNING {
            let n = node(policy, scope, &[]);
            assert!(n.admit(&pod("p", &[4])).admit, "{policy}/{scope}");
            assert_eq!(
                n.placed("p", "c0"),
                (hint(&[0], true), vec![0]),
                "{policy}/{scope}"
            );
        }
        let n = node("none", scope, &[]);
        assert!(n.admit(&pod("p", &[4])).admit);
        assert_eq!(n.placed("p", "c0").0, TopologyHint::default());
    }
}

/// 10 CPUs fit on no single node (8 CPUs each, 7 free on node 0): the preferred hints
/// are the 2-node masks. Node 1 is filled first by an 8-CPU pod (node 0 has only 7
/// free), so `{0,1}` no longer fits: `best-effort` and `restricted` take the lowest
/// 2-node mask that fits, `{0,2}` (across sockets); with `prefer-closest-numa-nodes` the
/// closest, `{2,3}` (mean distance 10.5 against 15.5); `single-numa-node` rejects the
/// pod with `TopologyAffinityError`.
#[test]
fn a_pod_wider_than_a_node_spans_the_narrowest_or_closest_nodes() {
    for scope in ["container", "pod"] {
        for (policy, options, want) in [
            ("best-effort", &[][..], Some(vec![0, 2])),
            ("restricted", &[][..], Some(vec![0, 2])),
            (
                "best-effort",
                &[("prefer-closest-numa-nodes", "true")][..],
                Some(vec![2, 3]),
            ),
            (
                "restricted",
                &[("prefer-closest-numa-nodes", "true")][..],
                Some(vec![2, 3]),
            ),
            ("single-numa-node", &[][..], None),
        ] {
            let n = node(policy, scope, options);
            assert!(n.admit(&pod("fill", &[8])).admit);
            assert_eq!(n.placed("fill", "c0"), (hint(&[1], true), vec![1]));
            let result = n.admit(&pod("wide", &[10]));
            match want {
                Some(nodes) => {
                    assert!(result.admit, "{policy}/{scope}/{options:?}: {result:?}");
                    assert_eq!(
                        n.placed("wide", "c0"),
                        (hint(&nodes, true), nodes.clone()),
                        "{policy}/{scope}/{options:?}"
                    );
                }
                None => {
                    assert_eq!(
                        result,
                        kubelet_admission::PodAdmitResult::reject(
                            "TopologyAffinityError",
                            "Resources cannot be allocated with Topology locality"
                        ),
                        "{policy}/{scope}"
                    );
                    assert!(n.cpu.lock().get_exclusive_cpus("wide", "c0").is_empty());
                }
            }
        }
        // `none`: admitted, no affinity.
        let n = node("none", scope, &[]);
        assert!(n.admit(&pod("wide", &[10])).admit);
        assert_eq!(n.placed("wide", "c0").0, TopologyHint::default());
    }
}

/// Two 4-CPU containers. The container scope aligns each on its own: the first takes
/// node 0 (7 free), leaving 3 there, so the second goes to node 1. The pod scope
/// aligns the 8 CPUs together: node 0 cannot hold them, node 1 can, so both
/// containers share node 1.
#[test]
fn container_scope_aligns_each_container_pod_scope_the_whole_pod() {
    for policy in ALIGNING {
        let n = node(policy, "container", &[]);
        assert!(n.admit(&pod("p", &[4, 4])).admit, "{policy}");
        assert_eq!(n.placed("p", "c0"), (hint(&[0], true), vec![0]), "{policy}");
        assert_eq!(n.placed("p", "c1"), (hint(&[1], true), vec![1]), "{policy}");
        let n = node(policy, "pod", &[]);
        assert!(n.admit(&pod("p", &[4, 4])).admit, "{policy}");
        assert_eq!(n.placed("p", "c0"), (hint(&[1], true), vec![1]), "{policy}");
        assert_eq!(n.placed("p", "c1"), (hint(&[1], true), vec![1]), "{policy}");
    }
}

/// Two 6-CPU containers: each fits a node alone, the pair does not. `single-numa-node`
/// admits them per container (nodes 0 and 1) and rejects them per pod; `restricted`
/// per pod spans the lowest 2-node mask, `{0,1}`.
#[test]
fn single_numa_node_pod_scope_rejects_what_container_scope_admits() {
    let n = node("single-numa-node", "container", &[]);
    assert!(n.admit(&pod("p", &[6, 6])).admit);
    assert_eq!(n.placed("p", "c0"), (hint(&[0], true), vec![0]));
    assert_eq!(n.placed("p", "c1"), (hint(&[1], true), vec![1]));
    let n = node("single-numa-node", "pod", &[]);
    let result = n.admit(&pod("p", &[6, 6]));
    assert_eq!(result.reason, "TopologyAffinityError");
    assert!(n.cpu.lock().get_exclusive_cpus("p", "c0").is_empty());
    let n = node("restricted", "pod", &[]);
    assert!(n.admit(&pod("p", &[6, 6])).admit);
    assert_eq!(n.placed("p", "c0").0, hint(&[0, 1], true));
    assert_eq!(n.placed("p", "c1").0, hint(&[0, 1], true));
}

/// A pod without exclusive CPUs has no preference: admitted under every policy;
/// `single-numa-node` stores no affinity (the default mask becomes nil), the others the
/// whole machine.
#[test]
fn a_pod_without_exclusive_cpus_has_no_preference() {
    let mut burstable = pod("b", &[1]);
    burstable.spec.as_mut().unwrap().containers[0]
        .resources
        .as_mut()
        .unwrap()
        .limits = None;
    for scope in ["container", "pod"] {
        for (policy, want) in [
            ("best-effort", hint(&[0, 1, 2, 3], true)),
            ("restricted", hint(&[0, 1, 2, 3], true)),
            (
                "single-numa-node",
                TopologyHint {
                    numa_node_affinity: None,
                    preferred: true,
                },
            ),
        ] {
            let n = node(policy, scope, &[]);
            assert!(n.admit(&burstable).admit, "{policy}/{scope}");
            assert_eq!(n.placed("b", "c0"), (want, vec![]), "{policy}/{scope}");
        }
    }
}
