//! The pieces together, through the public API only: topology discovered from a fake
//! sysfs tree (2 sockets x 4 NUMA nodes, 2 threads per core), the static policy with
//! `full-pcpus-only`, its state in a `cpu_manager_state` file, a restart that restores
//! and validates it.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubelet_apimachinery::CpuSet;
use kubelet_cpumanager::policy::Policy;
use kubelet_cpumanager::policy_static::StaticPolicy;
use kubelet_cpumanager::state::{
    CPU_MANAGER_STATE_FILE_NAME, ContainerMap, FileCheckpointStore, State, StateCheckpoint,
};
use kubelet_cpumanager::{RealSysFs, discover, machine_info_from_sysfs};
use kubelet_features::FeatureGate;
use kubelet_topologymanager::FakeStore;

fn guaranteed_pod(uid: &str, container: &str, cpus: &str) -> Pod {
    let list = BTreeMap::from([
        ("cpu".to_owned(), Quantity(cpus.to_owned())),
        ("memory".to_owned(), Quantity("1Gi".to_owned())),
    ]);
    let mut pod = Pod::default();
    pod.metadata.uid = Some(uid.to_owned());
    pod.spec = Some(PodSpec {
        containers: vec![Container {
            name: container.to_owned(),
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

fn policy() -> StaticPolicy<FakeStore> {
    let sys = RealSysFs::with_root(format!(
        "{}/testdata/sysfs/dual-socket-4-numa",
        env!("CARGO_MANIFEST_DIR")
    ));
    let topo = discover(&machine_info_from_sysfs(&sys).unwrap()).unwrap();
    let options = BTreeMap::from([("full-pcpus-only".to_owned(), "true".to_owned())]);
    StaticPolicy::new(
        topo,
        2,
        &CpuSet::new(),
        FakeStore::default(),
        &options,
        &FeatureGate::new(),
    )
    .unwrap()
}

fn state(dir: &std::path::Path) -> StateCheckpoint<FileCheckpointStore> {
    StateCheckpoint::new(
        FileCheckpointStore::new(dir),
        &dir.join(CPU_MANAGER_STATE_FILE_NAME).display().to_string(),
        CPU_MANAGER_STATE_FILE_NAME,
        "static",
        &ContainerMap::new(),
    )
    .unwrap()
}

#[test]
fn allocate_persist_restart_release() {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = policy();
    // The reserved CPU is the first core's two threads.
    assert_eq!(policy.reserved_cpus().to_string(), "0,16");
    let mut st = state(dir.path());
    Policy::start(&mut policy, &mut st).unwrap();
    assert_eq!(st.get_default_cpu_set().to_string(), "0-31");
    assert_eq!(
        Policy::get_allocatable_cpus(&policy, &st).to_string(),
        "1-15,17-31"
    );

    let pod = guaranteed_pod("pod-1", "app", "4");
    let app = pod.spec.as_ref().unwrap().containers[0].clone();
    Policy::allocate(&mut policy, &mut st, &pod, &app).unwrap();
    // Whole cores, NUMA node 0's free one first, then NUMA node 1's.
    let assigned = st.get_cpu_set("pod-1", "app").unwrap();
    assert_eq!(assigned.to_string(), "1-2,17-18");
    assert_eq!(st.get_default_cpu_set().to_string(), "0,3-16,19-31");

    // An odd request is refused by full-pcpus-only.
    let odd = guaranteed_pod("pod-2", "app", "3");
    let err = Policy::allocate(
        &mut policy,
        &mut st,
        &odd,
        &odd.spec.as_ref().unwrap().containers[0],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
    );

    // The file is what the Go kubelet would write.
    let text = std::fs::read_to_string(dir.path().join(CPU_MANAGER_STATE_FILE_NAME)).unwrap();
    assert!(
        text.starts_with(
            r#"{"policyName":"static","defaultCpuSet":"0,3-16,19-31","entries":{"pod-1":{"app":"1-2,17-18"}},"checksum":"#
        ),
        "{text}"
    );

    // Restart: restored and valid.
    let mut policy = self::policy();
    let mut st = state(dir.path());
    Policy::start(&mut policy, &mut st).unwrap();
    assert_eq!(st.get_cpu_set("pod-1", "app"), Some(assigned));

    // Release.
    Policy::remove_container(&mut policy, &mut st, "pod-1", "app");
    assert_eq!(st.get_default_cpu_set().to_string(), "0-31");
    let st = state(dir.path());
    assert!(st.get_cpu_assignments().is_empty());
}

#[test]
fn restart_with_another_policy_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(state(dir.path()));
    let err = StateCheckpoint::new(
        FileCheckpointStore::new(dir.path()),
        "/var/lib/kubelet/cpu_manager_state",
        CPU_MANAGER_STATE_FILE_NAME,
        "none",
        &ContainerMap::new(),
    )
    .err()
    .unwrap();
    assert_eq!(
        err.to_string(),
        "could not restore state from checkpoint: configured policy \"none\" differs from state checkpoint policy \"static\", please drain this node and delete the CPU manager checkpoint file \"/var/lib/kubelet/cpu_manager_state\" before restarting Kubelet"
    );
}
