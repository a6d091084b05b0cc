//! Upstream `cpu_manager_test.go` (`TestCPUManagerGenerate`, `TestCPUManagerRemove`,
//! `TestReconcileState`, `TestCPUManagerHandlePolicyOptions`,
//! `TestCPUManagerGetAllocatableCPUs`), plus the stale-state removal the manager does
//! before allocating and before hints.
#![allow(clippy::unwrap_used, clippy::panic, clippy::type_complexity)]

use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    PodSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

use super::*;
use crate::policy_static::StaticPolicyError;
use crate::state::{ContainerCPUAssignments, FakeCheckpointStore};
use crate::testing_topologies::*;
use crate::topology::{CPUDetails, CPUInfo, Cache, Core, Node};
use kubelet_topologymanager::FakeStore;

fn cs(cpus: &[usize]) -> CpuSet {
    cpus.iter().copied().collect()
}

fn asg(pods: &[(&str, &[(&str, CpuSet)])]) -> ContainerCPUAssignments {
    pods.iter()
        .map(|(pod, cs)| {
            (
                (*pod).to_owned(),
                cs.iter()
                    .map(|(c, s)| ((*c).to_owned(), s.clone()))
                    .collect(),
            )
        })
        .collect()
}

#[derive(Clone, Default)]
struct Fakes {
    pods: Arc<Mutex<Vec<Pod>>>,
    status: Arc<Mutex<Option<PodStatus>>>,
}

impl ActivePods for Fakes {
    fn active_pods(&self) -> Vec<Arc<Pod>> {
        self.pods
            .lock()
            .unwrap()
            .iter()
            .cloned()
            .map(Arc::new)
            .collect()
    }
}

impl SourcesReady for Fakes {
    fn all_ready(&self) -> bool {
        true
    }
}

impl PodStatusProvider for Fakes {
    fn get_pod_status(&self, _pod_uid: &str) -> Option<PodStatus> {
        self.status.lock().unwrap().clone()
    }
}

fn sources(f: &Fakes) -> ManagerSources {
    ManagerSources {
        active_pods: Box::new(f.clone()),
        sources_ready: Box::new(f.clone()),
        pod_status_provider: Box::new(f.clone()),
    }
}

fn mocked_machine_info() -> MachineInfo {
    MachineInfo {
        num_cores: 4,
        num_sockets: 0,
        topology: vec![Node {
            id: 0,
            distances: None,
            cores: (0..4)
                .map(|i| Core {
                    id: i,
                    threads: vec![i],
                    socket_id: 0,
                    caches: Vec::new(),
                    uncore_caches: vec![Cache {
                        id: 1,
                        ..Cache::default()
                    }],
                })
                .collect(),
            caches: Vec::new(),
        }],
    }
}

fn new_manager(
    name: &str,
    options: &[(&str, &str)],
    machine: &MachineInfo,
    reserved: Option<&str>,
) -> Result<Manager, ManagerError> {
    let options = options
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let reserved = reserved.map(|q| Quantity::parse(q).unwrap());
    Manager::new(
        name,
        &options,
        Duration::from_secs(5),
        machine,
        &CpuSet::new(),
        reserved.as_ref(),
        FakeStore::default(),
        &FeatureGate::new(),
    )
}

#[test]
fn test_cpu_manager_generate() {
    let cases: [(&str, &str, Option<&str>, bool, Result<&str, &str>); 6] = [
        ("set none policy", "none", None, false, Ok("none")),
        (
            "invalid policy name",
            "invalid",
            None,
            false,
            Err("unknown policy: \"invalid\""),
        ),
        ("static policy", "static", Some("3"), false, Ok("static")),
        (
            "static policy - broken topology",
            "static",
            None,
            true,
            Err("could not detect number of cpus"),
        ),
        (
            "static policy - broken reservation",
            "static",
            None,
            false,
            Err("unable to determine reserved CPU resources for static policy"),
        ),
        (
            "static policy - no CPU resources",
            "static",
            Some("0"),
            false,
            Err(
                "the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero",
            ),
        ),
    ];
    for (description, policy, reserved, broken, expected) in cases {
        let machine = if broken {
            MachineInfo::default()
        } else {
            mocked_machine_info()
        };
        match (new_manager(policy, &[], &machine, reserved), expected) {
            (Ok(m), Ok(name)) => {
                assert_eq!(m.policy_name(), name, "{description}");
                assert_eq!(m.topology().num_cpus, 4, "{description}");
            }
            (Err(e), Err(msg)) => assert!(e.to_string().contains(msg), "{description}: {e}"),
            (Ok(_), Err(msg)) => panic!("{description}: expected {msg}"),
            (Err(e), Ok(_)) => panic!("{description}: {e}"),
        }
    }
    // ceil(1.5 CPUs) = 2 reserved.
    let mut m = new_manager("static", &[], &mocked_machine_info(), Some("1500m")).unwrap();
    let f = Fakes::default();
    let period = m
        .start(
            sources(&f),
            FakeCheckpointStore::new(),
            "cpu_manager_state",
            ContainerMap::new(),
        )
        .unwrap();
    assert_eq!(period, Some(Duration::from_secs(5)));
    assert_eq!(m.get_allocatable_cpus(), cs(&[2, 3]));
    assert_eq!(m.get_all_cpus(), cs(&[0, 1, 2, 3]));
}

#[test]
fn test_cpu_manager_handle_policy_options() {
    let err = new_manager(
        "none",
        &[("full-pcpus-only", "true")],
        &mocked_machine_info(),
        None,
    )
    .err()
    .unwrap();
    assert!(
        err.to_string().contains("received unsupported options"),
        "{err}"
    );
    let mut m = new_manager("none", &[], &mocked_machine_info(), None).unwrap();
    let period = m
        .start(
            sources(&Fakes::default()),
            FakeCheckpointStore::new(),
            "p",
            ContainerMap::new(),
        )
        .unwrap();
    assert_eq!(period, None, "no reconcile loop with the none policy");
}

/// The 8-CPU topology of `TestReconcileState`.
fn reconcile_topology() -> CPUTopology {
    let details: CPUDetails = (0..8)
        .map(|cpu| {
            (
                cpu,
                CPUInfo {
                    core_id: cpu % 4,
                    socket_id: cpu / 4,
                    ..CPUInfo::default()
                },
            )
        })
        .collect();
    CPUTopology {
        num_cpus: 8,
        num_sockets: 2,
        num_cores: 4,
        cpu_details: details,
        ..CPUTopology::default()
    }
}

fn static_policy(topo: CPUTopology, num_reserved: usize, reserved: &CpuSet) -> Box<dyn Policy> {
    Box::new(
        StaticPolicy::new(
            topo,
            num_reserved,
            reserved,
            FakeStore::default(),
            &BTreeMap::new(),
            &FeatureGate::new(),
        )
        .unwrap(),
    )
}

fn pod(uid: &str, init: &[&str], app: &[&str]) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some("fakePodName".into());
    pod.metadata.uid = Some(uid.into());
    let c = |n: &&str| Container {
        name: (*n).to_owned(),
        ..Container::default()
    };
    pod.spec = Some(PodSpec {
        init_containers: Some(init.iter().map(c).collect()),
        containers: app.iter().map(c).collect(),
        ..PodSpec::default()
    });
    pod
}

fn status(init: bool, name: &str, id: &str, state: Option<ContainerState>) -> PodStatus {
    let cs = ContainerStatus {
        name: name.to_owned(),
        container_id: Some(id.to_owned()),
        state,
        ..ContainerStatus::default()
    };
    if init {
        PodStatus {
            init_container_statuses: Some(vec![cs]),
            ..PodStatus::default()
        }
    } else {
        PodStatus {
            container_statuses: Some(vec![cs]),
            ..PodStatus::default()
        }
    }
}

fn running() -> Option<ContainerState> {
    Some(ContainerState {
        running: Some(ContainerStateRunning::default()),
        ..ContainerState::default()
    })
}

struct ReconcileCase {
    description: &'static str,
    active_pods: Vec<Pod>,
    psp: Option<PodStatus>,
    update_err: bool,
    st_assignments: ContainerCPUAssignments,
    st_default: CpuSet,
    last_update: ContainerCPUAssignments,
    expect_assignments: ContainerCPUAssignments,
    expect_default: CpuSet,
    expect_succeeded: &'static str,
    expect_failed: &'static str,
}

/// Upstream's loop body after `reconcileState`'s checks: the CRI update (fake).
fn run_reconcile(
    m: &mut Manager,
    update_err: bool,
) -> (
    Vec<ReconciledContainer>,
    Vec<ReconciledContainer>,
    Vec<ReconcileUpdate>,
) {
    let result = m.reconcile_state();
    let (mut success, mut failure) = (result.success, result.failure);
    for update in &result.updates {
        if update_err {
            failure.push(update.container.clone());
        } else {
            m.update_done(update);
            success.push(update.container.clone());
        }
    }
    (success, failure, result.updates)
}

#[test]
fn test_reconcile_state() {
    let one = asg(&[("fakePodUID", &[("fakeContainerName", cs(&[1, 2]))])]);
    let app = || vec![pod("fakePodUID", &[], &["fakeContainerName"])];
    let cases = vec![
        ReconcileCase {
            description: "cpu manager reconcile - no error",
            active_pods: app(),
            psp: Some(status(
                false,
                "fakeContainerName",
                "docker://fakeContainerID",
                running(),
            )),
            update_err: false,
            st_assignments: one.clone(),
            st_default: cs(&[3, 4, 5, 6, 7]),
            last_update: ContainerCPUAssignments::new(),
            expect_assignments: one.clone(),
            expect_default: cs(&[3, 4, 5, 6, 7]),
            expect_succeeded: "fakeContainerName",
            expect_failed: "",
        },
        ReconcileCase {
            description: "cpu manager reconcile init container - no error",
            active_pods: vec![pod("fakePodUID", &["fakeContainerName"], &[])],
            psp: Some(status(
                true,
                "fakeContainerName",
                "docker://fakeContainerID",
                running(),
            )),
            update_err: false,
            st_assignments: one.clone(),
            st_default: cs(&[3, 4, 5, 6, 7]),
            last_update: ContainerCPUAssignments::new(),
            expect_assignments: one.clone(),
            expect_default: cs(&[3, 4, 5, 6, 7]),
            expect_succeeded: "fakeContainerName",
            expect_failed: "",
        },
        ReconcileCase {
            description: "cpu manager reconcile - pod status not found",
            active_pods: app(),
            psp: None,
            update_err: false,
            st_assignments: ContainerCPUAssignments::new(),
            st_default: CpuSet::new(),
            last_update: ContainerCPUAssignments::new(),
            expect_assignments: ContainerCPUAssignments::new(),
            expect_default: CpuSet::new(),
            expect_succeeded: "",
            expect_failed: "",
        },
        ReconcileCase {
            description: "cpu manager reconcile - container state not found",
            active_pods: app(),
            psp: Some(status(
                false,
                "fakeContainerName1",
                "docker://fakeContainerID",
                None,
            )),
            update_err: false,
            st_assignments: ContainerCPUAssignments::new(),
            st_default: CpuSet::new(),
            last_update: ContainerCPUAssignments::new(),
            expect_assignments: ContainerCPUAssignments::new(),
            expect_default: CpuSet::new(),
            expect_succeeded: "",
            expect_failed: "fakeContainerName",
        },
        ReconcileCase {
            description: "cpu manager reconclie - cpuset is empty",
            active_pods: app(),
            psp: Some(status(
                false,
                "fakeContainerName",
                "docker://fakeContainerID",
                running(),
            )),
            update_err: false,
            st_assignments: asg(&[("fakePodUID", &[("fakeContainerName", CpuSet::new())])]),
            st_default: cs(&[1, 2, 3, 4, 5, 6, 7]),
            last_update: ContainerCPUAssignments::new(),
            expect_assignments: asg(&[("fakePodUID", &[("fakeContainerName", CpuSet::new())])]),
            expect_default: cs(&[1, 2, 3, 4, 5, 6, 7]),
            expect_succeeded: "",
            expect_failed: "fakeContainerName",
        },
        ReconcileCase {
            description: "cpu manager reconclie - container update error",
            active_pods: app(),
            psp: Some(status(
                false,
                "fakeContainerName",
                "docker://fakeContainerID",
                running(),
            )),
            update_err: true,
            st_assignments: one.clone(),
            st_default: cs(&[3, 4, 5, 6, 7]),
            last_update: ContainerCPUAssignments::new(),
            expect_assignments: one.clone(),
            expect_default: cs(&[3, 4, 5, 6, 7]),
            expect_succeeded: "",
            expect_failed: "fakeContainerName",
        },
        ReconcileCase {
            description: "cpu manager reconcile - state has inactive container",
            active_pods: app(),
            psp: Some(status(
                false,
                "fakeContainerName",
                "docker://fakeContainerID",
                running(),
            )),
            update_err: false,
            st_assignments: asg(&[
                ("fakePodUID", &[("fakeContainerName", cs(&[1, 2]))]),
                (
                    "secondfakePodUID",
                    &[("secondfakeContainerName", cs(&[3, 4]))],
                ),
            ]),
            st_default: cs(&[5, 6, 7]),
            last_update: ContainerCPUAssignments::new(),
            expect_assignments: one.clone(),
            expect_default: cs(&[3, 4, 5, 6, 7]),
            expect_succeeded: "fakeContainerName",
            expect_failed: "",
        },
        ReconcileCase {
            description: "cpu manager reconcile - last update state is current",
            active_pods: app(),
            psp: Some(status(
                false,
                "fakeContainerName",
                "docker://fakeContainerID",
                running(),
            )),
            update_err: false,
            st_assignments: one.clone(),
            st_default: cs(&[5, 6, 7]),
            last_update: one.clone(),
            expect_assignments: one.clone(),
            expect_default: cs(&[5, 6, 7]),
            expect_succeeded: "fakeContainerName",
            expect_failed: "",
        },
        ReconcileCase {
            description: "cpu manager reconcile - last update state is not current",
            active_pods: app(),
            psp: Some(status(
                false,
                "fakeContainerName",
                "docker://fakeContainerID",
                running(),
            )),
            update_err: false,
            st_assignments: one.clone(),
            st_default: cs(&[3, 4, 5, 6, 7]),
            last_update: asg(&[("fakePodUID", &[("fakeContainerName", cs(&[3, 4]))])]),
            expect_assignments: one.clone(),
            expect_default: cs(&[3, 4, 5, 6, 7]),
            expect_succeeded: "fakeContainerName",
            expect_failed: "",
        },
    ];
    for tc in cases {
        let f = Fakes::default();
        *f.pods.lock().unwrap() = tc.active_pods.clone();
        *f.status.lock().unwrap() = tc.psp.clone();
        let mut st = StateMemory::new();
        st.set_cpu_assignments(tc.st_assignments.clone());
        st.set_default_cpu_set(tc.st_default.clone());
        let mut m = Manager::for_test(
            static_policy(reconcile_topology(), 0, &CpuSet::new()),
            Box::new(st),
            sources(&f),
            reconcile_topology(),
        );
        m.last_update_state
            .set_cpu_assignments(tc.last_update.clone());
        let (success, failure, _) = run_reconcile(&mut m, tc.update_err);
        let state = m.state_reader().unwrap();
        assert_eq!(
            state.get_cpu_assignments(),
            tc.expect_assignments,
            "{}",
            tc.description
        );
        assert_eq!(
            state.get_default_cpu_set(),
            tc.expect_default,
            "{}",
            tc.description
        );
        if !tc.expect_succeeded.is_empty() {
            assert!(
                success
                    .iter()
                    .any(|r| r.container_name == tc.expect_succeeded),
                "{}: {success:?}",
                tc.description
            );
        }
        if !tc.expect_failed.is_empty() {
            assert!(
                failure.iter().any(|r| r.container_name == tc.expect_failed),
                "{}: {failure:?}",
                tc.description
            );
        }
    }
}

#[test]
fn reconcile_reports_updates_and_skips_waiting_and_terminated() {
    let f = Fakes::default();
    *f.pods.lock().unwrap() = vec![pod("uid", &[], &["c"])];
    let mut st = StateMemory::new();
    st.set_cpu_assignments(asg(&[("uid", &[("c", cs(&[1, 2]))])]));
    st.set_default_cpu_set(cs(&[0, 3, 4, 5, 6, 7]));
    let mut m = Manager::for_test(
        static_policy(reconcile_topology(), 0, &CpuSet::new()),
        Box::new(st),
        sources(&f),
        reconcile_topology(),
    );
    // Running: one update with the container id without its runtime prefix.
    *f.status.lock().unwrap() = Some(status(false, "c", "containerd://abc", running()));
    let result = m.reconcile_state();
    assert_eq!(result.updates.len(), 1);
    assert_eq!(result.updates[0].container.container_id, "abc");
    assert_eq!(result.updates[0].cpus.to_string(), "1-2");
    m.update_done(&result.updates[0]);
    // Up to date now.
    let result = m.reconcile_state();
    assert!(result.updates.is_empty());
    assert_eq!(result.success.len(), 1);
    // Waiting: a failure, no update.
    let waiting = Some(ContainerState {
        waiting: Some(ContainerStateWaiting::default()),
        ..ContainerState::default()
    });
    *f.status.lock().unwrap() = Some(status(false, "c", "containerd://abc", waiting));
    let result = m.reconcile_state();
    assert!(result.updates.is_empty() && result.failure.len() == 1);
    // Terminated: neither.
    let terminated = Some(ContainerState {
        terminated: Some(ContainerStateTerminated::default()),
        ..ContainerState::default()
    });
    *f.status.lock().unwrap() = Some(status(false, "c", "containerd://abc", terminated));
    let result = m.reconcile_state();
    assert!(result.updates.is_empty() && result.failure.is_empty() && result.success.is_empty());
}

#[test]
fn test_cpu_manager_remove() {
    let f = Fakes::default();
    let mut st = StateMemory::new();
    st.set_cpu_assignments(asg(&[("pod", &[("c", cs(&[1]))])]));
    st.set_default_cpu_set(cs(&[0, 2, 3, 4, 5, 6, 7]));
    let mut m = Manager::for_test(
        static_policy(reconcile_topology(), 0, &CpuSet::new()),
        Box::new(st),
        sources(&f),
        reconcile_topology(),
    );
    // Unknown id: nothing happens.
    m.remove_container("unknown");
    let p = pod("pod", &[], &["c"]);
    m.add_container(&p, &p.spec.as_ref().unwrap().containers[0], "fakeID");
    m.remove_container("fakeID");
    let state = m.state_reader().unwrap();
    assert!(state.get_cpu_assignments().is_empty());
    assert_eq!(state.get_default_cpu_set(), cs(&[0, 1, 2, 3, 4, 5, 6, 7]));
    assert!(m.container_map.is_empty());
}

#[test]
fn test_cpu_manager_get_allocatable_cpus() {
    let topo = || {
        let details: CPUDetails = (0..4)
            .map(|cpu| {
                (
                    cpu,
                    CPUInfo {
                        core_id: cpu,
                        ..CPUInfo::default()
                    },
                )
            })
            .collect();
        CPUTopology {
            num_cpus: 4,
            num_sockets: 1,
            num_cores: 4,
            cpu_details: details,
            ..CPUTopology::default()
        }
    };
    let cases: [(&str, Box<dyn Policy>, CpuSet); 2] = [
        ("None Policy", Box::new(NonePolicy), CpuSet::new()),
        (
            "Static Policy",
            static_policy(topo(), 1, &cs(&[0])),
            cs(&[1, 2, 3]),
        ),
    ];
    for (description, policy, expected) in cases {
        let mut st = StateMemory::new();
        st.set_default_cpu_set(cs(&[0, 1, 2, 3]));
        let m = Manager::for_test(policy, Box::new(st), sources(&Fakes::default()), topo());
        assert_eq!(m.get_allocatable_cpus(), expected, "{description}");
    }
}

fn guaranteed(uid: &str, name: &str, cpus: &str) -> Pod {
    let list = BTreeMap::from([
        ("cpu".to_owned(), ApiQuantity(cpus.to_owned())),
        ("memory".to_owned(), ApiQuantity("1G".to_owned())),
    ]);
    let mut pod = pod(uid, &[], &[name]);
    if let Some(spec) = pod.spec.as_mut() {
        spec.containers[0].resources = Some(ResourceRequirements {
            requests: Some(list.clone()),
            limits: Some(list),
            ..ResourceRequirements::default()
        });
    }
    pod
}

#[test]
fn allocate_and_hints_drop_stale_assignments_first() {
    let f = Fakes::default();
    let mut st = StateMemory::new();
    // A pod that is gone holds CPUs 1-6.
    st.set_cpu_assignments(asg(&[("gone", &[("c", cs(&[1, 2, 3, 5, 6, 7]))])]));
    st.set_default_cpu_set(cs(&[0, 4]));
    let mut m = Manager::for_test(
        static_policy(reconcile_topology(), 1, &CpuSet::new()),
        Box::new(st),
        sources(&f),
        reconcile_topology(),
    );
    let p = guaranteed("new", "app", "4");
    *f.pods.lock().unwrap() = vec![p.clone()];
    let container = p.spec.as_ref().unwrap().containers[0].clone();
    let hints = m.get_topology_hints(&p, &container).unwrap();
    assert!(!hints.is_empty());
    m.allocate(&p, &container).unwrap();
    assert_eq!(m.get_exclusive_cpus("new", "app").len(), 4);
    assert!(m.get_exclusive_cpus("gone", "c").is_empty());
    assert_eq!(
        m.get_cpu_affinity("new", "app"),
        m.get_exclusive_cpus("new", "app")
    );
    // Any other container runs on the shared pool.
    assert_eq!(
        m.get_cpu_affinity("other", "x"),
        m.state_reader().unwrap().get_default_cpu_set()
    );
    // Not enough CPUs: the policy's error.
    let big = guaranteed("big", "app", "8");
    let err = m
        .allocate(&big, &big.spec.as_ref().unwrap().containers[0])
        .unwrap_err();
    assert!(
        err.to_string().starts_with("not enough cpus available"),
        "{err}"
    );
    assert_eq!(
        err.pod_admit_reason(),
        (
            "UnexpectedAdmissionError",
            "Allocate failed due to not enough cpus available to satisfy request: requested=8, available=3, which is unexpected".to_owned()
        )
    );
}

#[test]
fn smt_alignment_error_keeps_its_reason() {
    let err = ManagerError::Policy(PolicyError::Static(StaticPolicyError::SMTAlignment(
        crate::policy_static::SMTAlignmentError {
            requested_cpus: 3,
            cpus_per_core: 2,
            available_physical_cpus: 0,
            caused_by_physical_cpus: false,
        },
    )));
    assert_eq!(
        err.pod_admit_reason(),
        (
            "SMTAlignmentError",
            "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2".to_owned()
        )
    );
}

/// `makeMultiContainerPod` (name "pod", uid "podUID").
fn make_multi_container_pod(init: &[(&str, &str)], app: &[(&str, &str)]) -> Pod {
    let resources = |req: &str, lim: &str| {
        let list = |cpu: &str| {
            BTreeMap::from([
                ("cpu".to_owned(), ApiQuantity(cpu.to_owned())),
                ("memory".to_owned(), ApiQuantity("1G".to_owned())),
            ])
        };
        ResourceRequirements {
            requests: Some(list(req)),
            limits: Some(list(lim)),
            ..ResourceRequirements::default()
        }
    };
    let containers = |prefix: &str, v: &[(&str, &str)]| -> Vec<Container> {
        v.iter()
            .enumerate()
            .map(|(i, (req, lim))| Container {
                name: format!("{prefix}-{i}"),
                resources: Some(resources(req, lim)),
                ..Container::default()
            })
            .collect()
    };
    let mut pod = Pod::default();
    pod.metadata.name = Some("pod".into());
    pod.metadata.uid = Some("podUID".into());
    pod.spec = Some(PodSpec {
        init_containers: Some(containers("initContainer", init)),
        containers: containers("appContainer", app),
        ..PodSpec::default()
    });
    pod
}

struct W {
    description: &'static str,
    topo: CPUTopology,
    num_reserved_cpus: usize,
    init_container_ids: Vec<&'static str>,
    container_ids: Vec<&'static str>,
    st_default_cpu_set: CpuSet,
    pod: Pod,
    exp_init_csets: Vec<CpuSet>,
    exp_csets: Vec<CpuSet>,
}

#[test]
fn test_cpu_manager_add_with_init_containers() {
    let cases = vec![
        W {
            description: "No Guaranteed Init CPUs",
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 0,
            init_container_ids: vec!["initFakeID"],
            container_ids: vec!["appFakeID"],
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: make_multi_container_pod(&[("100m", "100m")], &[("4000m", "4000m")]),
            exp_init_csets: vec![cs(&[])],
            exp_csets: vec![cs(&[0, 4, 1, 5])],
        },
        W {
            description: "Equal Number of Guaranteed CPUs",
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 0,
            init_container_ids: vec!["initFakeID"],
            container_ids: vec!["appFakeID"],
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: make_multi_container_pod(&[("4000m", "4000m")], &[("4000m", "4000m")]),
            exp_init_csets: vec![cs(&[0, 4, 1, 5])],
            exp_csets: vec![cs(&[0, 4, 1, 5])],
        },
        W {
            description: "More Init Container Guaranteed CPUs",
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 0,
            init_container_ids: vec!["initFakeID"],
            container_ids: vec!["appFakeID"],
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: make_multi_container_pod(&[("6000m", "6000m")], &[("4000m", "4000m")]),
            exp_init_csets: vec![cs(&[0, 4, 1, 5, 2, 6])],
            exp_csets: vec![cs(&[0, 4, 1, 5])],
        },
        W {
            description: "Less Init Container Guaranteed CPUs",
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 0,
            init_container_ids: vec!["initFakeID"],
            container_ids: vec!["appFakeID"],
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: make_multi_container_pod(&[("2000m", "2000m")], &[("4000m", "4000m")]),
            exp_init_csets: vec![cs(&[0, 4])],
            exp_csets: vec![cs(&[0, 4, 1, 5])],
        },
        W {
            description: "Multi Init Container Equal CPUs",
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 0,
            init_container_ids: vec!["initFakeID-1", "initFakeID-2"],
            container_ids: vec!["appFakeID"],
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: make_multi_container_pod(
                &[("2000m", "2000m"), ("2000m", "2000m")],
                &[("2000m", "2000m")],
            ),
            exp_init_csets: vec![cs(&[0, 4]), cs(&[0, 4])],
            exp_csets: vec![cs(&[0, 4])],
        },
        W {
            description: "Multi Init Container Less CPUs",
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 0,
            init_container_ids: vec!["initFakeID-1", "initFakeID-2"],
            container_ids: vec!["appFakeID"],
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: make_multi_container_pod(
                &[("4000m", "4000m"), ("4000m", "4000m")],
                &[("2000m", "2000m")],
            ),
            exp_init_csets: vec![cs(&[0, 4, 1, 5]), cs(&[0, 4, 1, 5])],
            exp_csets: vec![cs(&[0, 4])],
        },
        W {
            description: "Multi Init Container More CPUs",
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 0,
            init_container_ids: vec!["initFakeID-1", "initFakeID-2"],
            container_ids: vec!["appFakeID"],
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: make_multi_container_pod(
                &[("2000m", "2000m"), ("2000m", "2000m")],
                &[("4000m", "4000m")],
            ),
            exp_init_csets: vec![cs(&[0, 4]), cs(&[0, 4])],
            exp_csets: vec![cs(&[0, 4, 1, 5])],
        },
        W {
            description: "Multi Init Container Increasing CPUs",
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 0,
            init_container_ids: vec!["initFakeID-1", "initFakeID-2"],
            container_ids: vec!["appFakeID"],
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: make_multi_container_pod(
                &[("2000m", "2000m"), ("4000m", "4000m")],
                &[("6000m", "6000m")],
            ),
            exp_init_csets: vec![cs(&[0, 4]), cs(&[0, 4, 1, 5])],
            exp_csets: vec![cs(&[0, 4, 1, 5, 2, 6])],
        },
        W {
            description: "Multi Init, Multi App Container Split CPUs",
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 0,
            init_container_ids: vec!["initFakeID-1", "initFakeID-2"],
            container_ids: vec!["appFakeID-1", "appFakeID-2"],
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: make_multi_container_pod(
                &[("2000m", "2000m"), ("4000m", "4000m")],
                &[("2000m", "2000m"), ("2000m", "2000m")],
            ),
            exp_init_csets: vec![cs(&[0, 4]), cs(&[0, 4, 1, 5])],
            exp_csets: vec![cs(&[0, 4]), cs(&[1, 5])],
        },
    ];
    assert_eq!(cases.len(), 9);
    for tc in cases {
        let f = Fakes::default();
        *f.pods.lock().unwrap() = vec![tc.pod.clone()];
        let mut st = StateMemory::new();
        st.set_default_cpu_set(tc.st_default_cpu_set.clone());
        let mut m = Manager::for_test(
            static_policy(tc.topo.clone(), tc.num_reserved_cpus, &CpuSet::new()),
            Box::new(st),
            sources(&f),
            tc.topo.clone(),
        );
        let spec = tc.pod.spec.clone().unwrap();
        let containers: Vec<Container> = spec
            .init_containers
            .unwrap_or_default()
            .into_iter()
            .chain(spec.containers)
            .collect();
        let ids: Vec<&str> = tc
            .init_container_ids
            .iter()
            .chain(&tc.container_ids)
            .copied()
            .collect();
        let exp: Vec<CpuSet> = tc
            .exp_init_csets
            .iter()
            .chain(&tc.exp_csets)
            .cloned()
            .collect();
        let mut cum = CpuSet::new();
        for (i, container) in containers.iter().enumerate() {
            m.allocate(&tc.pod, container)
                .unwrap_or_else(|e| panic!("{}: {}: {e}", tc.description, ids[i]));
            m.add_container(&tc.pod, container, ids[i]);
            assert!(m.container_map.contains_key(ids[i]), "{}", tc.description);
            let cset = m
                .state_reader()
                .unwrap()
                .get_cpu_set("podUID", &container.name);
            if !exp[i].is_empty() {
                assert!(
                    cset.is_some(),
                    "{}: {} not assigned",
                    tc.description,
                    container.name
                );
            }
            if let Some(cset) = &cset {
                assert_eq!(cset, &exp[i], "{}: {}", tc.description, container.name);
                cum = cum.union(cset);
            }
        }
        assert_eq!(
            m.state_reader().unwrap().get_default_cpu_set(),
            tc.st_default_cpu_set.difference(&cum),
            "{}",
            tc.description
        );
    }
}

fn four_cpu_topology() -> CPUTopology {
    let details: CPUDetails = (0..4)
        .map(|cpu| {
            (
                cpu,
                CPUInfo {
                    core_id: cpu,
                    ..CPUInfo::default()
                },
            )
        })
        .collect();
    CPUTopology {
        num_cpus: 4,
        num_sockets: 1,
        num_cores: 4,
        cpu_details: details,
        ..CPUTopology::default()
    }
}

/// `TestCPUManagerAdd` and `TestCPUManagerAddWithResvList`. Upstream's failing case uses
/// a mock policy; here the static policy fails for want of CPUs (same property: the
/// error is returned, the state is unchanged, `AddContainer` still records the id).
#[test]
fn test_cpu_manager_add() {
    let cases = [
        (
            "cpu manager add - no error",
            0,
            CpuSet::new(),
            cs(&[1, 2, 3, 4]),
            "2",
            Ok(cs(&[3, 4])),
        ),
        (
            "cpu manager add - policy add container error",
            0,
            CpuSet::new(),
            cs(&[1, 2, 3, 4]),
            "5",
            Err("not enough cpus available to satisfy request: requested=5, available=4"),
        ),
        (
            "cpu manager add with reserved list - no error",
            1,
            cs(&[0]),
            cs(&[0, 1, 2, 3]),
            "2",
            Ok(cs(&[0, 3])),
        ),
    ];
    for (description, num_reserved, reserved, default, cpus, expected) in cases {
        let f = Fakes::default();
        let pod = guaranteed("fakePod", "fakeContainer", cpus);
        *f.pods.lock().unwrap() = vec![pod.clone()];
        let mut st = StateMemory::new();
        st.set_default_cpu_set(default.clone());
        let mut m = Manager::for_test(
            static_policy(four_cpu_topology(), num_reserved, &reserved),
            Box::new(st),
            sources(&f),
            four_cpu_topology(),
        );
        let container = pod.spec.as_ref().unwrap().containers[0].clone();
        let result = m.allocate(&pod, &container);
        m.add_container(&pod, &container, "fakeID");
        assert!(m.container_map.contains_key("fakeID"), "{description}");
        let got = m.state_reader().unwrap().get_default_cpu_set();
        match expected {
            Ok(exp) => {
                result.unwrap();
                assert_eq!(got, exp, "{description}");
            }
            Err(msg) => {
                assert_eq!(result.unwrap_err().to_string(), msg, "{description}");
                assert_eq!(got, default, "{description}");
            }
        }
    }
}

#[test]
fn manager_can_live_behind_a_lock_shared_by_tasks() {
    fn is_send<T: Send>() {}
    is_send::<Manager>();
    is_send::<std::sync::Mutex<Manager>>();
}
