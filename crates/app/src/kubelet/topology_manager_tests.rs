//! The kubelet's topology manager from the configuration, on the CPU manager's fake
//! sysfs of a 2-socket, 4-NUMA-node machine.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubelet_admission::{PodAdmitAttributes, PodAdmitHandler};
use kubelet_cpumanager::manager::{ActivePods, ManagerSources, PodStatusProvider, SourcesReady};
use kubelet_cpumanager::state::{ContainerMap, FakeCheckpointStore};
use kubelet_topologymanager::{BitMask, Store, TopologyHint};

use super::*;
use crate::kubelet::cpu_manager::tests::machine;

fn four_numa() -> kubelet_cpumanager::MachineInfo {
    let sys = kubelet_cpumanager::RealSysFs::with_root(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../cpumanager/testdata/sysfs/dual-socket-4-numa"
    ));
    kubelet_cpumanager::machine_info_from_sysfs(&sys).unwrap()
}

fn managers(extra: &str) -> Result<ResourceManagers, RunError> {
    let server = crate::kubelet::test_config::server(extra);
    let node_config = crate::startup::container_manager_config(&server, &machine()).unwrap();
    new_resource_managers_with_topology(
        &server,
        &machine(),
        &node_config,
        &four_numa(),
        &kubelet_memorymanager::MachineInfo::default(),
    )
}

/// Settings upstream's `NewManager` refuses stop the start with its messages; the
/// `none` policy ignores scope and options as upstream's.
#[test]
fn topology_manager_settings_upstream_refuses_stop_the_start() {
    for (extra, want) in [
        (
            "topologyManagerPolicy: best-effort\ntopologyManagerPolicyOptions:\n  foo: bar\n",
            "unknown Topology Manager Policy option: \"foo\"",
        ),
        (
            "topologyManagerPolicy: restricted\ntopologyManagerPolicyOptions:\n  max-allowable-numa-nodes: \"4\"\n",
            "the minimum value of \"max-allowable-numa-nodes\" should not be less than 8",
        ),
        (
            "topologyManagerPolicy: single-numa-node\ntopologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: \"yes\"\n",
            "bad value for option \"prefer-closest-numa-nodes\": strconv.ParseBool: parsing \"yes\": invalid syntax",
        ),
    ] {
        let err = managers(extra).err().unwrap();
        assert_eq!(err.to_string(), want, "{extra}");
    }
    for (extra, policy, scope) in [
        ("", "none", "none"),
        (
            "topologyManagerPolicyOptions:\n  foo: bar\ntopologyManagerScope: pod\n",
            "none",
            "none",
        ),
        (
            "topologyManagerPolicy: best-effort\n",
            "best-effort",
            "container",
        ),
        (
            "topologyManagerPolicy: restricted\ntopologyManagerScope: pod\n",
            "restricted",
            "pod",
        ),
        (
            "topologyManagerPolicy: single-numa-node\ntopologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: \"true\"\n  max-allowable-numa-nodes: \"16\"\n",
            "single-numa-node",
            "container",
        ),
    ] {
        let m = managers(extra).unwrap();
        assert_eq!(m.topology.policy_name(), policy, "{extra}");
        assert_eq!(m.topology.scope_name(), scope, "{extra}");
    }
    // `prefer-closest-numa-nodes` needs every node's distances (cAdvisor's).
    let server = crate::kubelet::test_config::server(
        "topologyManagerPolicy: best-effort\ntopologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: \"true\"\n",
    );
    let mut no_distances = four_numa();
    no_distances.topology[3].distances = None;
    let err = new_topology_manager(&server, &no_distances.numa_nodes())
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "cannot discover NUMA topology: error getting NUMA distances from cadvisor"
    );
}

#[derive(Clone, Default)]
struct NoPods;

impl ActivePods for NoPods {
    fn active_pods(&self) -> Vec<Arc<Pod>> {
        Vec::new()
    }
}

impl SourcesReady for NoPods {
    fn all_ready(&self) -> bool {
        false
    }
}

impl PodStatusProvider for NoPods {
    fn get_pod_status(&self, _pod_uid: &str) -> Option<PodStatus> {
        None
    }
}

fn guaranteed(cpus: &str) -> Pod {
    let list = BTreeMap::from([
        ("cpu".to_owned(), Quantity(cpus.to_owned())),
        ("memory".to_owned(), Quantity("1Gi".to_owned())),
    ]);
    let mut pod = Pod::default();
    pod.metadata.uid = Some("uid".to_owned());
    pod.spec = Some(PodSpec {
        containers: vec![Container {
            name: "c".to_owned(),
            resources: Some(ResourceRequirements {
                requests: Some(list.clone()),
                limits: Some(list),
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        }],
        ..PodSpec::default()
    });
    pod
}

/// The CPU manager is the topology manager's hint provider and reads its affinity: with
/// `single-numa-node` a 4-CPU Guaranteed pod is pinned within one NUMA node, a 10-CPU one
/// is rejected `TopologyAffinityError`.
#[test]
fn the_cpu_manager_is_a_hint_provider_of_the_admit_handler() {
    let m = managers(
        "topologyManagerPolicy: single-numa-node\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n",
    )
    .unwrap();
    m.cpu
        .start(
            ManagerSources {
                active_pods: Box::new(NoPods),
                sources_ready: Box::new(NoPods),
                pod_status_provider: Box::new(NoPods),
            },
            FakeCheckpointStore::new(),
            "cpu_manager_state",
            ContainerMap::new(),
        )
        .unwrap();
    let handler = kubelet_topologymanager::AdmitHandler(m.topology.clone());
    let admit = |p: &Pod| {
        handler.admit(&PodAdmitAttributes {
            pod: p,
            other_pods: &[],
        })
    };
    let wide = guaranteed("10");
    let result = admit(&wide);
    assert_eq!(
        (result.admit, result.reason.as_str()),
        (false, "TopologyAffinityError")
    );
    assert!(admit(&guaranteed("4")).admit);
    assert_eq!(
        m.topology.get_affinity("uid", "c"),
        TopologyHint {
            numa_node_affinity: Some(BitMask::new(&[0])),
            preferred: true
        }
    );
    let cpus = m.cpu.lock().get_exclusive_cpus("uid", "c");
    assert_eq!(cpus.to_string(), "1-2,17-18");
}

fn four_numa_memory() -> kubelet_memorymanager::MachineInfo {
    let sys = kubelet_cpumanager::RealSysFs::with_root(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../memorymanager/testdata/sysfs/dual-socket-4-numa"
    ));
    kubelet_memorymanager::machine_info_from_sysfs(&sys).unwrap()
}

fn with_memory(p: &Pod, memory: &str) -> Pod {
    let mut p = p.clone();
    let c = &mut p.spec.as_mut().unwrap().containers[0];
    let r = c.resources.as_mut().unwrap();
    for list in [r.requests.as_mut().unwrap(), r.limits.as_mut().unwrap()] {
        list.insert("memory".to_owned(), Quantity(memory.to_owned()));
    }
    p
}

/// The memory manager is the topology manager's second hint provider and reads its
/// affinity: with `single-numa-node`, a Guaranteed pod's CPUs and memory land on the same
/// NUMA node (its `cpuset_mems`), a pod whose memory fits no single node is rejected
/// `TopologyAffinityError`.
#[test]
fn the_memory_manager_is_a_hint_provider_after_the_cpu_manager() {
    let extra = "topologyManagerPolicy: single-numa-node\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\nmemoryManagerPolicy: Static\nreservedMemory:\n- numaNode: 0\n  limits:\n    memory: 100Mi\n";
    let server = crate::kubelet::test_config::server(extra);
    let node_config = crate::startup::container_manager_config(&server, &machine()).unwrap();
    let m = new_resource_managers_with_topology(
        &server,
        &machine(),
        &node_config,
        &four_numa(),
        &four_numa_memory(),
    )
    .unwrap();
    let sources = || ManagerSources {
        active_pods: Box::new(NoPods),
        sources_ready: Box::new(NoPods),
        pod_status_provider: Box::new(NoPods),
    };
    m.cpu
        .start(
            sources(),
            FakeCheckpointStore::new(),
            "cpu_manager_state",
            ContainerMap::new(),
        )
        .unwrap();
    m.memory
        .start(
            sources(),
            FakeCheckpointStore::new(),
            "memory_manager_state",
            ContainerMap::new(),
        )
        .unwrap();
    let handler = kubelet_topologymanager::AdmitHandler(m.topology.clone());
    let admit = |p: &Pod| {
        handler.admit(&PodAdmitAttributes {
            pod: p,
            other_pods: &[],
        })
    };
    let too_big = with_memory(&guaranteed("2"), "20Gi");
    let result = admit(&too_big);
    assert_eq!(
        (result.admit, result.reason.as_str()),
        (false, "TopologyAffinityError")
    );
    let pod = with_memory(&guaranteed("4"), "2Gi");
    assert!(admit(&pod).admit);
    let c = pod.spec.as_ref().unwrap().containers[0].clone();
    let nodes = m.memory.lock().get_memory_numa_nodes(&pod, &c).unwrap();
    assert_eq!(nodes.into_iter().collect::<Vec<_>>(), vec![0]);
    assert_eq!(
        m.cpu.lock().get_exclusive_cpus("uid", "c").to_string(),
        "1-2,17-18"
    );
    assert_eq!(m.memory.lock().get_memory("uid", "c")[0].size, 2 << 30);
}
