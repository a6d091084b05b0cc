//! The CPU manager as the kubelet uses it: admission, the runtime's hooks and the
//! reconcile loop over a recording CRI fake.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStatus, PodSpec, PodStatus,
    ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_admission::PodAdmitResult;
use kubelet_apimachinery::{CpuSet, Quantity};
use kubelet_cri::CriError;
use kubelet_cri::fake::{FakeContainer, FakeRuntimeService};
use kubelet_features::FeatureGate;

use super::*;
use crate::manager::{ActivePods, PodStatusProvider, SourcesReady};
use crate::state::FakeCheckpointStore;
use crate::topology::{Cache, Core, MachineInfo, Node};

/// One NUMA node, `cores` cores of `threads` threads (thread t of core c is CPU
/// c + t × cores, as Linux numbers siblings).
fn machine(cores: usize, threads: usize) -> MachineInfo {
    MachineInfo {
        num_cores: cores * threads,
        num_sockets: 1,
        topology: vec![Node {
            id: 0,
            distances: None,
            cores: (0..cores)
                .map(|c| Core {
                    id: c,
                    threads: (0..threads).map(|t| c + t * cores).collect(),
                    socket_id: 0,
                    caches: Vec::new(),
                    uncore_caches: vec![Cache {
                        id: 0,
                        ..Cache::default()
                    }],
                })
                .collect(),
            caches: Vec::new(),
        }],
    }
}

#[derive(Clone, Default)]
struct Pods {
    pods: Arc<Mutex<Vec<Pod>>>,
    statuses: Arc<Mutex<BTreeMap<String, PodStatus>>>,
}

impl ActivePods for Pods {
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

impl SourcesReady for Pods {
    fn all_ready(&self) -> bool {
        true
    }
}

impl PodStatusProvider for Pods {
    fn get_pod_status(&self, pod_uid: &str) -> Option<PodStatus> {
        self.statuses.lock().unwrap().get(pod_uid).cloned()
    }
}

fn started(policy: &str, options: &[(&str, &str)], m: &MachineInfo) -> (CpuManager, Pods) {
    let options = options
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let manager = Manager::new(
        policy,
        &options,
        Duration::from_secs(10),
        m,
        &CpuSet::new(),
        Some(&Quantity::parse("1").unwrap()),
        kubelet_topologymanager::FakeStore::default(),
        &FeatureGate::new(),
    )
    .unwrap();
    let pods = Pods::default();
    let cpu = CpuManager::new(manager);
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
    (cpu, pods)
}

/// A pod `name` (UID `uid-<name>`) with one container `app` per entry of `cpus`
/// (`app`, `app1`, …): `Some(q)` requests and limits `q` CPU and 100Mi (Guaranteed when
/// every container does), `None` asks for nothing.
fn pod(name: &str, cpus: &[Option<&str>]) -> Pod {
    let containers = cpus
        .iter()
        .enumerate()
        .map(|(i, cpu)| Container {
            name: if i == 0 {
                "app".to_owned()
            } else {
                format!("app{i}")
            },
            resources: cpu.map(|q| {
                let list: BTreeMap<String, ApiQuantity> = [
                    ("cpu".to_owned(), ApiQuantity(q.to_owned())),
                    ("memory".to_owned(), ApiQuantity("100Mi".to_owned())),
                ]
                .into_iter()
                .collect();
                ResourceRequirements {
                    requests: Some(list.clone()),
                    limits: Some(list),
                    ..ResourceRequirements::default()
                }
            }),
            ..Container::default()
        })
        .collect();
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            uid: Some(format!("uid-{name}")),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers,
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// Admits `p` as the kubelet does (the pod is in the pod manager, active, first): the
/// topology manager with `topology_policy` (container scope) and the CPU manager as its
/// hint provider.
fn admit_with(topology_policy: &str, cpu: &CpuManager, pods: &Pods, p: &Pod) -> PodAdmitResult {
    use kubelet_admission::{PodAdmitAttributes, PodAdmitHandler};
    pods.pods.lock().unwrap().push(p.clone());
    let nodes = cpu
        .lock()
        .topology()
        .cpu_details
        .numa_nodes()
        .iter()
        .map(|id| kubelet_topologymanager::NumaNode {
            id,
            distances: None,
        })
        .collect::<Vec<_>>();
    let topology = Arc::new(
        kubelet_topologymanager::Manager::new(
            &nodes,
            topology_policy,
            "container",
            &BTreeMap::new(),
            kubelet_topologymanager::OptionGates::default(),
        )
        .unwrap(),
    );
    topology.add_hint_provider(Arc::new(cpu.clone()));
    kubelet_topologymanager::AdmitHandler(topology).admit(&PodAdmitAttributes {
        pod: p,
        other_pods: &[],
    })
}

/// [`admit_with`] the `none` topology policy.
fn admit(cpu: &CpuManager, pods: &Pods, p: &Pod) -> PodAdmitResult {
    admit_with("none", cpu, pods, p)
}

/// The `cpuset_cpus` `PreCreateContainer` writes for container `name` of `p`.
fn cpuset_at_create(cpu: &CpuManager, p: &Pod, name: &str) -> String {
    let container = p
        .spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .find(|c| c.name == name)
        .unwrap();
    let mut config = ContainerConfig::default();
    CpuManagerLifecycle {
        cpu: cpu.clone(),
        topology: None,
    }
    .pre_create_container(p, container, &mut config)
    .unwrap();
    config
        .linux
        .and_then(|l| l.resources)
        .map(|r| r.cpuset_cpus)
        .unwrap_or_default()
}

#[test]
fn guaranteed_integer_cpus_are_exclusive_and_others_share_the_rest() {
    // 4 CPUs, 1 reserved (CPU 0): 3 allocatable.
    let (cpu, pods) = started("static", &[], &machine(4, 1));
    let g = pod("g", &[Some("2")]);
    assert_eq!(admit(&cpu, &pods, &g), PodAdmitResult::admit());
    assert_eq!(cpuset_at_create(&cpu, &g, "app"), "1-2");
    // A fractional CPU (Guaranteed, but not an integer) and a BestEffort container get
    // the shared pool, the reserved CPU included.
    let b = pod("b", &[Some("500m")]);
    assert_eq!(admit(&cpu, &pods, &b), PodAdmitResult::admit());
    assert_eq!(cpuset_at_create(&cpu, &b, "app"), "0,3");
    let be = pod("be", &[None]);
    assert_eq!(admit(&cpu, &pods, &be), PodAdmitResult::admit());
    assert_eq!(cpuset_at_create(&cpu, &be, "app"), "0,3");
    // Admission is idempotent: the same pod keeps its CPUs.
    assert_eq!(admit(&cpu, &pods, &g), PodAdmitResult::admit());
    assert_eq!(cpuset_at_create(&cpu, &g, "app"), "1-2");
}

#[test]
fn a_pod_asking_more_than_the_free_cpus_is_rejected_unexpected() {
    let (cpu, pods) = started("static", &[], &machine(4, 1));
    let r = admit(&cpu, &pods, &pod("big", &[Some("1"), Some("3")]));
    assert!(!r.admit);
    assert_eq!(r.reason, "UnexpectedAdmissionError");
    assert!(
        r.message.starts_with("Allocate failed due to ")
            && r.message.ends_with(", which is unexpected"),
        "{}",
        r.message
    );
    assert!(
        r.message.contains("not enough cpus available"),
        "{}",
        r.message
    );
}

#[test]
fn full_pcpus_only_rejects_a_partial_core_with_smt_alignment_error() {
    // 2 cores × 2 threads; 1 CPU reserved.
    let (cpu, pods) = started("static", &[("full-pcpus-only", "true")], &machine(2, 2));
    let r = admit(&cpu, &pods, &pod("odd", &[Some("1")]));
    assert!(!r.admit);
    assert_eq!(r.reason, "SMTAlignmentError");
    assert_eq!(
        r.message,
        "SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2"
    );
}

#[test]
fn the_none_policy_admits_all_and_sets_no_cpuset() {
    let (cpu, pods) = started("none", &[], &machine(4, 1));
    let g = pod("g", &[Some("2")]);
    assert_eq!(admit(&cpu, &pods, &g), PodAdmitResult::admit());
    assert_eq!(cpuset_at_create(&cpu, &g, "app"), "");
}

#[tokio::test]
async fn pre_start_records_the_container_so_reconcile_leaves_it_alone() {
    let (cpu, pods) = started("static", &[], &machine(4, 1));
    let runtime = fake_runtime(&["c1"]);
    let g = pod("g", &[Some("1")]);
    admit(&cpu, &pods, &g);
    let app = &g.spec.as_ref().unwrap().containers[0];
    CpuManagerLifecycle {
        cpu: cpu.clone(),
        topology: None,
    }
    .pre_start_container(&g, app, "c1")
    .unwrap();
    pods.statuses
        .lock()
        .unwrap()
        .insert("uid-g".into(), running_status(&[("app", "c1")]));
    // Created with its CPUs (`AddContainer` recorded them): no CRI update.
    let result = cpu.reconcile_once(&runtime).await;
    assert_eq!(result.success.len(), 1, "{result:?}");
    assert!(
        !runtime
            .called()
            .contains(&"UpdateContainerResources".to_owned()),
        "{:?}",
        runtime.called()
    );
    assert_eq!(
        cpu.lock().get_exclusive_cpus("uid-g", "app").to_string(),
        "1"
    );
    // Pinned: no CFS quota for it (`DisableCPUQuotaWithExclusiveCPUs`).
    let reader = CpuManagerLifecycle {
        cpu: cpu.clone(),
        topology: None,
    };
    assert!(reader.container_has_exclusive_cpus(&g, app));
    assert!(reader.pod_has_exclusive_cpus(&g));
    let be = pod("be", &[None]);
    admit(&cpu, &pods, &be);
    assert!(!reader.pod_has_exclusive_cpus(&be));
}

fn running_status(containers: &[(&str, &str)]) -> PodStatus {
    PodStatus {
        container_statuses: Some(
            containers
                .iter()
                .map(|(name, id)| ContainerStatus {
                    name: (*name).to_owned(),
                    container_id: Some(format!("containerd://{id}")),
                    state: Some(ContainerState {
                        running: Some(ContainerStateRunning::default()),
                        ..ContainerState::default()
                    }),
                    ..ContainerStatus::default()
                })
                .collect(),
        ),
        ..PodStatus::default()
    }
}

fn fake_runtime(ids: &[&str]) -> FakeRuntimeService {
    let runtime = FakeRuntimeService::new();
    runtime.with_state(|s| {
        for id in ids {
            s.containers.insert(
                (*id).to_owned(),
                FakeContainer {
                    status: kubelet_cri::v1::ContainerStatus {
                        id: (*id).to_owned(),
                        ..Default::default()
                    },
                    sandbox_id: "sandbox".to_owned(),
                    ..FakeContainer::default()
                },
            );
        }
    });
    runtime
}

fn cpuset_in_runtime(runtime: &FakeRuntimeService, id: &str) -> Option<String> {
    runtime.with_state(|s| {
        s.containers[id]
            .status
            .resources
            .as_ref()
            .and_then(|r| r.linux.as_ref())
            .map(|l| l.cpuset_cpus.clone())
    })
}

#[tokio::test]
async fn reconcile_moves_shared_containers_off_exclusive_cpus() {
    let (cpu, pods) = started("static", &[], &machine(4, 1));
    let runtime = fake_runtime(&["shared", "pinned"]);
    // A BestEffort container started first, on the whole shared pool.
    let be = pod("be", &[None]);
    admit(&cpu, &pods, &be);
    pods.statuses
        .lock()
        .unwrap()
        .insert("uid-be".into(), running_status(&[("app", "shared")]));
    let first = cpu.reconcile_once(&runtime).await;
    assert_eq!(first.success.len(), 1, "{first:?}");
    assert_eq!(
        cpuset_in_runtime(&runtime, "shared").as_deref(),
        Some("0-3")
    );
    // Nothing changed: no CRI call the second time.
    runtime.clear_calls();
    cpu.reconcile_once(&runtime).await;
    assert!(
        !runtime
            .called()
            .contains(&"UpdateContainerResources".to_owned()),
        "{:?}",
        runtime.called()
    );

    // A Guaranteed pod takes CPUs 1-2: the shared container is moved to 0,3 and the
    // pinned one gets its own.
    let g = pod("g", &[Some("2")]);
    admit(&cpu, &pods, &g);
    pods.statuses
        .lock()
        .unwrap()
        .insert("uid-g".into(), running_status(&[("app", "pinned")]));
    let result = cpu.reconcile_once(&runtime).await;
    assert_eq!(result.success.len(), 2, "{result:?}");
    assert_eq!(
        cpuset_in_runtime(&runtime, "shared").as_deref(),
        Some("0,3")
    );
    assert_eq!(
        cpuset_in_runtime(&runtime, "pinned").as_deref(),
        Some("1-2")
    );

    // The Guaranteed pod is gone: its CPUs return to the shared pool.
    pods.pods
        .lock()
        .unwrap()
        .retain(|p| p.metadata.name.as_deref() != Some("g"));
    cpu.reconcile_once(&runtime).await;
    assert_eq!(
        cpuset_in_runtime(&runtime, "shared").as_deref(),
        Some("0-3")
    );
}

#[tokio::test]
async fn a_failed_update_is_retried_at_the_next_reconcile() {
    let (cpu, pods) = started("static", &[], &machine(4, 1));
    let runtime = fake_runtime(&["c"]);
    let be = pod("be", &[None]);
    admit(&cpu, &pods, &be);
    pods.statuses
        .lock()
        .unwrap()
        .insert("uid-be".into(), running_status(&[("app", "c")]));
    runtime.inject_error(
        "UpdateContainerResources",
        CriError::status(
            "fake",
            "UpdateContainerResources",
            tonic::Code::Unknown,
            "busy",
        ),
    );
    let failed = cpu.reconcile_once(&runtime).await;
    assert_eq!((failed.success.len(), failed.failure.len()), (0, 1));
    assert_eq!(cpuset_in_runtime(&runtime, "c"), None);
    let retried = cpu.reconcile_once(&runtime).await;
    assert_eq!(retried.success.len(), 1, "{retried:?}");
    assert_eq!(cpuset_in_runtime(&runtime, "c").as_deref(), Some("0-3"));
}

#[tokio::test(start_paused = true)]
async fn the_loop_reconciles_at_once_and_then_every_period() {
    let (cpu, pods) = started("static", &[], &machine(4, 1));
    let runtime = Arc::new(fake_runtime(&["c"]));
    let be = pod("be", &[None]);
    admit(&cpu, &pods, &be);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(cpu.clone().run_reconcile_loop(
        Duration::from_secs(10),
        runtime.clone(),
        cancel.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    // No status yet: nothing updated.
    assert_eq!(cpuset_in_runtime(&runtime, "c"), None);
    pods.statuses
        .lock()
        .unwrap()
        .insert("uid-be".into(), running_status(&[("app", "c")]));
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(cpuset_in_runtime(&runtime, "c"), None, "before the period");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(cpuset_in_runtime(&runtime, "c").as_deref(), Some("0-3"));
    cancel.cancel();
    task.await.unwrap();
}

/// Each admission is a topology manager admission request (a rejection an admission
/// error under a policy other than `none`, as upstream's scopes count them); a container
/// needing pinning is a pinning request, and a refused one a pinning error and (with
/// `full-pcpus-only`) a physical-CPU alignment failure. Other tests run alongside: only
/// increases are asserted.
#[test]
fn admissions_and_pinnings_are_counted_in_the_kubelets_metrics() {
    let m = &kubelet_metrics::kubelet().unwrap().resource_managers;
    let failures = || {
        m.container_aligned_compute_resources_failure
            .with_label_values(&["container", "physical_cpu"])
            .get()
    };
    let before = (
        m.topology_manager_admission_requests_total.get(),
        m.topology_manager_admission_errors_total.get(),
        m.cpu_manager_pinning_requests_total.get(),
        m.cpu_manager_pinning_errors_total.get(),
        failures(),
    );
    let (cpu, pods) = started("static", &[("full-pcpus-only", "true")], &machine(2, 2));
    assert!(!admit_with("best-effort", &cpu, &pods, &pod("odd", &[Some("1")])).admit);
    assert!(admit(&cpu, &pods, &pod("be", &[None])).admit);
    assert!(m.topology_manager_admission_requests_total.get() - before.0 >= 2.0);
    assert!(m.topology_manager_admission_errors_total.get() - before.1 >= 1.0);
    assert!(m.cpu_manager_pinning_requests_total.get() - before.2 >= 1.0);
    assert!(m.cpu_manager_pinning_errors_total.get() - before.3 >= 1.0);
    assert!(failures() - before.4 >= 1.0);
}
