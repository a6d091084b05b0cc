//! Upstream's `topology_manager_test.go`, `scope_test.go`, `scope_container_test.go` and
//! `scope_pod_test.go` (v1.35.4), over a mock hint provider.
#![allow(clippy::unwrap_used)]

use std::sync::Mutex;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::BitMask;

/// `mockHintProvider`, which also records its `Allocate` calls with the affinity the
/// store gave at that moment (as the CPU manager's static policy reads it).
#[derive(Default)]
struct Mock {
    th: ResourceHints,
    allocate_error: Option<AllocateError>,
    store: Mutex<Option<Arc<Manager>>>,
    allocated: Mutex<Vec<(String, TopologyHint)>>,
}

impl HintProvider for Mock {
    fn get_topology_hints(&self, _pod: &Pod, _container: &Container) -> ResourceHints {
        self.th.clone()
    }

    fn get_pod_topology_hints(&self, _pod: &Pod) -> ResourceHints {
        self.th.clone()
    }

    fn allocate(&self, pod: &Pod, container: &Container) -> Result<(), AllocateError> {
        let affinity = self
            .store
            .lock()
            .unwrap()
            .as_ref()
            .map(|s| s.get_affinity(pod.metadata.uid.as_deref().unwrap(), &container.name))
            .unwrap_or_default();
        self.allocated
            .lock()
            .unwrap()
            .push((container.name.clone(), affinity));
        match &self.allocate_error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

fn hint(bits: &[usize], preferred: bool) -> TopologyHint {
    TopologyHint {
        numa_node_affinity: Some(BitMask::new(bits)),
        preferred,
    }
}

fn hints(list: Vec<TopologyHint>) -> ResourceHints {
    [("resource".to_owned(), Some(list))].into_iter().collect()
}

fn nodes(n: usize) -> Vec<NumaNode> {
    (0..n)
        .map(|id| NumaNode {
            id,
            distances: None,
        })
        .collect()
}

fn manager(policy: &str, scope: &str) -> Arc<Manager> {
    Arc::new(
        Manager::new(
            &nodes(2),
            policy,
            scope,
            &BTreeMap::new(),
            OptionGates::default(),
        )
        .unwrap(),
    )
}

fn pod(containers: &[&str]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("p".to_owned()),
            uid: Some("uid".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            init_containers: Some(vec![Container {
                name: "init".to_owned(),
                ..Container::default()
            }]),
            containers: containers
                .iter()
                .map(|n| Container {
                    name: (*n).to_owned(),
                    ..Container::default()
                })
                .collect(),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn with_mock(m: &Arc<Manager>, mock: Mock) -> Arc<Mock> {
    let mock = Arc::new(mock);
    *mock.store.lock().unwrap() = Some(m.clone());
    m.add_hint_provider(mock.clone());
    mock
}

/// `TestNewManager`.
#[test]
fn new_manager() {
    for policy in ["none", "best-effort", "restricted", "single-numa-node"] {
        let m = Manager::new(
            &[],
            policy,
            "container",
            &BTreeMap::new(),
            OptionGates::default(),
        )
        .unwrap();
        assert_eq!(m.policy_name(), policy);
        assert_eq!(m.policy().name(), policy);
    }
    let new = |topology: &[NumaNode], policy: &str, scope: &str, options: &[(&str, &str)]| {
        let options = options
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Manager::new(topology, policy, scope, &options, OptionGates::default())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        new(&[], "unknown", "container", &[]),
        "unknown policy: \"unknown\""
    );
    for policy in ["best-effort", "restricted"] {
        assert_eq!(
            new(&[], policy, "container", &[("unknown-option", "true")]),
            "unknown Topology Manager Policy option: \"unknown-option\""
        );
    }
    assert_eq!(
        new(
            &nodes(1),
            "best-effort",
            "container",
            &[("prefer-closest-numa-nodes", "true")]
        ),
        "cannot discover NUMA topology: error getting NUMA distances from cadvisor"
    );
    assert_eq!(
        new(&nodes(9), "best-effort", "container", &[]),
        "unsupported on machines with more than 8 NUMA Nodes"
    );
    // `max-allowable-numa-nodes` raises the limit.
    assert!(
        Manager::new(
            &nodes(9),
            "best-effort",
            "container",
            &[("max-allowable-numa-nodes".to_owned(), "9".to_owned())]
                .into_iter()
                .collect(),
            OptionGates::default()
        )
        .is_ok()
    );
    // `TestManagerScope`, and the scope upstream's validation leaves to `NewManager`.
    assert_eq!(
        manager("best-effort", "container").scope_name(),
        "container"
    );
    assert_eq!(manager("best-effort", "pod").scope_name(), "pod");
    assert_eq!(manager("none", "pod").scope_name(), "none");
    assert_eq!(
        new(&nodes(2), "best-effort", "node", &[]),
        "unknown scope: \"node\""
    );
    // The `none` policy ignores options and scope, as upstream's short circuit.
    assert!(
        Manager::new(
            &nodes(9),
            "none",
            "node",
            &[("unknown-option".to_owned(), "x".to_owned())]
                .into_iter()
                .collect(),
            OptionGates::default()
        )
        .is_ok()
    );
}

/// `TestAdmit`: for each policy, container and pod scope alike.
#[test]
fn admit() {
    let preferred_0 = || hints(vec![hint(&[0], true), hint(&[0, 1], false)]);
    let two_preferred = || {
        hints(vec![
            hint(&[0], true),
            hint(&[1], true),
            hint(&[0, 1], false),
        ])
    };
    let none_preferred = || hints(vec![hint(&[0, 1], false)]);
    let cases: Vec<(&str, Option<ResourceHints>, bool)> = vec![
        ("none", None, true),
        ("single-numa-node", Some(ResourceHints::new()), true),
        ("restricted", Some(ResourceHints::new()), true),
        ("best-effort", Some(preferred_0()), true),
        ("best-effort", Some(two_preferred()), true),
        ("best-effort", Some(none_preferred()), true),
        ("restricted", Some(preferred_0()), true),
        ("restricted", Some(two_preferred()), true),
        ("restricted", Some(none_preferred()), false),
        ("single-numa-node", Some(preferred_0()), true),
        ("single-numa-node", Some(none_preferred()), false),
    ];
    for (policy, th, want) in cases {
        for scope in ["container", "pod"] {
            let m = manager(policy, scope);
            if let Some(th) = th.clone() {
                with_mock(
                    &m,
                    Mock {
                        th,
                        ..Mock::default()
                    },
                );
            }
            let result = m.admit_pod(&pod(&["c"]));
            assert_eq!(result.admit, want, "{policy}/{scope}");
            if !want {
                assert_eq!(
                    result,
                    PodAdmitResult::reject(
                        "TopologyAffinityError",
                        "Resources cannot be allocated with Topology locality"
                    ),
                    "{policy}/{scope}"
                );
            }
        }
    }
}

/// The merged hint is stored before each `Allocate` (container scope: per container;
/// pod scope: the pod's hint for every container), init containers first;
/// `GetAffinity` answers it afterwards (`TestGetAffinity`).
#[test]
fn affinity_is_stored_before_allocate() {
    for scope in ["container", "pod"] {
        let m = manager("best-effort", scope);
        let mock = with_mock(
            &m,
            Mock {
                th: hints(vec![hint(&[1], true), hint(&[0, 1], false)]),
                ..Mock::default()
            },
        );
        assert!(m.admit_pod(&pod(&["a", "b"])).admit);
        let want = hint(&[1], true);
        assert_eq!(
            *mock.allocated.lock().unwrap(),
            vec![
                ("init".to_owned(), want),
                ("a".to_owned(), want),
                ("b".to_owned(), want)
            ],
            "{scope}"
        );
        assert_eq!(m.get_affinity("uid", "b"), want);
        assert_eq!(m.get_affinity("uid", "other"), TopologyHint::default());
    }
    // `none`: no hint is stored; `Allocate` still runs.
    let m = manager("none", "container");
    let mock = with_mock(&m, Mock::default());
    assert!(m.admit_pod(&pod(&["a"])).admit);
    assert_eq!(mock.allocated.lock().unwrap().len(), 2);
    assert_eq!(m.get_affinity("uid", "a"), TopologyHint::default());
}

/// A provider's `Allocate` error rejects the pod as `admission.GetPodAdmitResult`: an
/// admission error keeps its reason, any other is `UnexpectedAdmissionError`.
#[test]
fn allocate_errors_reject_the_pod() {
    for policy in ["none", "best-effort", "single-numa-node"] {
        for (err, want) in [
            (
                AllocateError {
                    reason: Some("SMTAlignmentError".to_owned()),
                    message: "SMT Alignment Error: …".to_owned(),
                },
                PodAdmitResult::reject("SMTAlignmentError", "SMT Alignment Error: …"),
            ),
            (
                AllocateError {
                    reason: None,
                    message: "not enough cpus available to satisfy request".to_owned(),
                },
                PodAdmitResult::reject(
                    "UnexpectedAdmissionError",
                    "Allocate failed due to not enough cpus available to satisfy request, which is unexpected",
                ),
            ),
        ] {
            let m = manager(policy, "container");
            let mock = with_mock(
                &m,
                Mock {
                    allocate_error: Some(err),
                    ..Mock::default()
                },
            );
            assert_eq!(m.admit_pod(&pod(&["a", "b"])), want, "{policy}");
            // The first failing container (the init container) stops the admission.
            assert_eq!(mock.allocated.lock().unwrap().len(), 1, "{policy}");
        }
    }
}

/// `TestAddContainer`, `TestRemoveContainer`: a hint is forgotten when its container
/// stops, unless the container runs again under a new id.
#[test]
fn add_and_remove_container() {
    let m = manager("single-numa-node", "container");
    with_mock(
        &m,
        Mock {
            th: hints(vec![hint(&[0], true)]),
            ..Mock::default()
        },
    );
    let p = pod(&["a"]);
    assert!(m.admit_pod(&p).admit);
    let a = &p.spec.as_ref().unwrap().containers[0];
    m.add_container(&p, a, "id-1");
    m.add_container(&p, a, "id-2");
    m.remove_container("id-1");
    assert_eq!(m.get_affinity("uid", "a"), hint(&[0], true));
    m.remove_container("id-2");
    assert_eq!(m.get_affinity("uid", "a"), TopologyHint::default());
    // The init container's hint stays until its own container stops.
    assert_eq!(m.get_affinity("uid", "init"), hint(&[0], true));
    m.remove_container("unknown");
}

/// `TestContainerAccumulateProvidersHints` / `TestPodAccumulateProvidersHints`: every
/// provider is asked, in the order added, and their hints merged.
#[test]
fn hints_of_every_provider_are_merged() {
    for scope in ["container", "pod"] {
        let m = manager("restricted", scope);
        with_mock(
            &m,
            Mock {
                th: hints(vec![hint(&[0], true), hint(&[1], true)]),
                ..Mock::default()
            },
        );
        let second = with_mock(
            &m,
            Mock {
                th: [("other".to_owned(), Some(vec![hint(&[1], true)]))]
                    .into_iter()
                    .collect(),
                ..Mock::default()
            },
        );
        assert!(m.admit_pod(&pod(&["a"])).admit, "{scope}");
        assert_eq!(
            second.allocated.lock().unwrap().last().unwrap().1,
            hint(&[1], true),
            "{scope}"
        );
    }
}
