//! Upstream `policy_static_test.go`: the `staticPolicyTest` tables generated from
//! v1.35.4 (`TestStaticPolicyStart`, `TestStaticPolicyAdd`, `TestStaticPolicyRemove`,
//! `TestStaticPolicyStartWithResvList`, `TestStaticPolicyAddWithResvList`,
//! `TestStaticPolicyAddWithUncoreAlignment`), the rest ported by hand.
#![allow(clippy::unwrap_used, clippy::panic, clippy::type_complexity)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

use super::*;
use crate::policy_options::*;
use crate::state::{ContainerCPUAssignments, StateMemory};
use crate::testing_topologies::*;
use kubelet_topologymanager::FakeStore;

fn cs(cpus: &[usize]) -> CpuSet {
    cpus.iter().copied().collect()
}

fn asg(pods: Vec<(&str, Vec<(&str, CpuSet)>)>) -> ContainerCPUAssignments {
    pods.into_iter()
        .map(|(pod, containers)| {
            let containers = containers
                .into_iter()
                .map(|(c, cpus)| (c.to_owned(), cpus))
                .collect();
            (pod.to_owned(), containers)
        })
        .collect()
}

fn resources(request: &str, limit: &str) -> ResourceRequirements {
    let list = |cpu: &str| {
        BTreeMap::from([
            ("cpu".to_owned(), ApiQuantity(cpu.to_owned())),
            ("memory".to_owned(), ApiQuantity("1G".to_owned())),
        ])
    };
    ResourceRequirements {
        requests: Some(list(request)),
        limits: Some(list(limit)),
        ..ResourceRequirements::default()
    }
}

fn make_pod(pod_uid: &str, container_name: &str, cpu_request: &str, cpu_limit: &str) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.uid = Some(pod_uid.to_owned());
    pod.spec = Some(PodSpec {
        containers: vec![Container {
            name: container_name.to_owned(),
            resources: Some(resources(cpu_request, cpu_limit)),
            ..Container::default()
        }],
        ..PodSpec::default()
    });
    pod
}

/// `makeMultiContainerPodWithOptions`: `(request, limit, restartPolicy)`.
fn make_multi_container_pod_with_options(
    init: &[(&str, &str, Option<&str>)],
    app: &[(&str, &str, Option<&str>)],
) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some("pod".to_owned());
    pod.metadata.uid = Some("podUID".to_owned());
    let container =
        |prefix: &str, i: usize, (req, lim, restart): &(&str, &str, Option<&str>)| Container {
            name: format!("{prefix}-{i}"),
            resources: Some(resources(req, lim)),
            restart_policy: restart.map(str::to_owned),
            ..Container::default()
        };
    pod.spec = Some(PodSpec {
        init_containers: Some(
            init.iter()
                .enumerate()
                .map(|(i, c)| container("initContainer", i, c))
                .collect(),
        ),
        containers: app
            .iter()
            .enumerate()
            .map(|(i, c)| container("appContainer", i, c))
            .collect(),
        ..PodSpec::default()
    });
    pod
}

fn make_multi_container_pod(
    init: &[(&'static str, &'static str)],
    app: &[(&'static str, &'static str)],
) -> Pod {
    let f = |v: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str, Option<&'static str>)> {
        v.iter().map(|(a, b)| (*a, *b, None)).collect()
    };
    make_multi_container_pod_with_options(&f(init), &f(app))
}

fn with_pod_uid(mut pod: Pod, pod_uid: &str) -> Pod {
    pod.metadata.uid = Some(pod_uid.to_owned());
    pod
}

/// `staticPolicyTest` and `staticPolicyTestWithResvList` in one.
#[derive(Clone, Default)]
struct T {
    description: String,
    topo: CPUTopology,
    num_reserved_cpus: usize,
    reserved_cpus: Option<CpuSet>,
    reserved: CpuSet,
    pod_uid: String,
    options: Vec<(&'static str, &'static str)>,
    container_name: String,
    st_assignments: ContainerCPUAssignments,
    st_default_cpu_set: CpuSet,
    pod: Option<Pod>,
    topology_hint: Option<TopologyHint>,
    exp_err: Option<String>,
    exp_new_err: Option<String>,
    exp_cpu_alloc: bool,
    exp_cset: CpuSet,
    exp_uncore_cache: CpuSet,
}

fn options_map(options: &[(&str, &str)]) -> BTreeMap<String, String> {
    options
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn alpha_gate() -> FeatureGate {
    let mut gate = FeatureGate::new();
    gate.set("CPUManagerPolicyAlphaOptions=true").unwrap();
    gate
}

fn new_policy(
    tc: &T,
    reserved: &CpuSet,
    gate: &FeatureGate,
) -> Result<StaticPolicy<FakeStore>, StaticPolicyError> {
    let affinity = FakeStore {
        default_hint: tc.topology_hint.unwrap_or_default(),
        ..FakeStore::default()
    };
    StaticPolicy::new(
        tc.topo.clone(),
        tc.num_reserved_cpus,
        reserved,
        affinity,
        &options_map(&tc.options),
        gate,
    )
}

fn mock_state(tc: &T) -> StateMemory {
    let mut st = StateMemory::new();
    st.set_cpu_assignments(tc.st_assignments.clone());
    st.set_default_cpu_set(tc.st_default_cpu_set.clone());
    st
}

/// Large topology sets of `TestStaticPolicyAdd`.
struct LargeTopo {
    all: CpuSet,
    sock0: CpuSet,
    sock1: CpuSet,
}

fn large_topo() -> LargeTopo {
    let topo = topo_quad_socket_four_way_ht();
    LargeTopo {
        all: topo.cpu_details.cpus(),
        sock0: topo.cpu_details.cpus_in_sockets(&[0]),
        sock1: topo.cpu_details.cpus_in_sockets(&[1]),
    }
}

fn start_cases() -> Vec<T> {
    vec![
    T {
        description: "non-corrupted state".into(),
        topo: topo_dual_socket_ht(),
        st_assignments: asg(vec![("fakePod", vec![("0", cs(&[0]))])]),
        st_default_cpu_set: cs(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        exp_cset: cs(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        ..T::default()
    },
    T {
        description: "empty cpuset".into(),
        topo: topo_dual_socket_ht(),
        num_reserved_cpus: 1,
        st_assignments: asg(vec![]),
        st_default_cpu_set: cs(&[]),
        exp_cset: cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        ..T::default()
    },
    T {
        description: "reserved cores 0 & 6 are not present in available cpuset".into(),
        topo: topo_dual_socket_ht(),
        num_reserved_cpus: 2,
        st_assignments: asg(vec![]),
        st_default_cpu_set: cs(&[0, 1]),
        exp_err: Some("not all reserved cpus: \"0,6\" are present in defaultCpuSet: \"0-1\"".to_owned()),
        ..T::default()
    },
    T {
        description: "some of reserved cores are present in available cpuset (StrictCPUReservationOption)".into(),
        topo: topo_dual_socket_ht(),
        num_reserved_cpus: 2,
        options: vec![(STRICT_CPU_RESERVATION_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: cs(&[0, 1]),
        exp_err: Some("some of strictly reserved cpus: \"0\" are present in defaultCpuSet: \"0-1\"".to_owned()),
        ..T::default()
    },
    T {
        description: "assigned core 2 is still present in available cpuset".into(),
        topo: topo_dual_socket_ht(),
        st_assignments: asg(vec![("fakePod", vec![("0", cs(&[0, 1, 2]))])]),
        st_default_cpu_set: cs(&[2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        exp_err: Some("pod: fakePod, container: 0 cpuset: \"0-2\" overlaps with default cpuset \"2-11\"".to_owned()),
        ..T::default()
    },
    T {
        description: "assigned core 2 is still present in available cpuset (StrictCPUReservationOption)".into(),
        topo: topo_dual_socket_ht(),
        options: vec![(STRICT_CPU_RESERVATION_OPTION, "true")],
        st_assignments: asg(vec![("fakePod", vec![("0", cs(&[0, 1, 2]))])]),
        st_default_cpu_set: cs(&[2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        exp_err: Some("pod: fakePod, container: 0 cpuset: \"0-2\" overlaps with default cpuset \"2-11\"".to_owned()),
        ..T::default()
    },
    T {
        description: "core 12 is not present in topology but is in state cpuset".into(),
        topo: topo_dual_socket_ht(),
        st_assignments: asg(vec![("fakePod", vec![("0", cs(&[0, 1, 2])), ("1", cs(&[3, 4]))])]),
        st_default_cpu_set: cs(&[5, 6, 7, 8, 9, 10, 11, 12]),
        exp_err: Some("current set of available CPUs \"0-11\" doesn't match with CPUs in state \"0-12\"".to_owned()),
        ..T::default()
    },
    T {
        description: "core 11 is present in topology but is not in state cpuset".into(),
        topo: topo_dual_socket_ht(),
        st_assignments: asg(vec![("fakePod", vec![("0", cs(&[0, 1, 2])), ("1", cs(&[3, 4]))])]),
        st_default_cpu_set: cs(&[5, 6, 7, 8, 9, 10]),
        exp_err: Some("current set of available CPUs \"0-11\" doesn't match with CPUs in state \"0-10\"".to_owned()),
        ..T::default()
    },
    ]
}
fn remove_cases() -> Vec<T> {
    vec![
        T {
            description: "SingleSocketHT, DeAllocOneContainer".into(),
            topo: topo_single_socket_ht(),
            pod_uid: "fakePod".into(),
            container_name: "fakeContainer1".into(),
            st_assignments: asg(vec![("fakePod", vec![("fakeContainer1", cs(&[1, 2, 3]))])]),
            st_default_cpu_set: cs(&[4, 5, 6, 7]),
            exp_cset: cs(&[1, 2, 3, 4, 5, 6, 7]),
            ..T::default()
        },
        T {
            description: "SingleSocketHT, DeAllocOneContainer, BeginEmpty".into(),
            topo: topo_single_socket_ht(),
            pod_uid: "fakePod".into(),
            container_name: "fakeContainer1".into(),
            st_assignments: asg(vec![(
                "fakePod",
                vec![
                    ("fakeContainer1", cs(&[1, 2, 3])),
                    ("fakeContainer2", cs(&[4, 5, 6, 7])),
                ],
            )]),
            st_default_cpu_set: cs(&[]),
            exp_cset: cs(&[1, 2, 3]),
            ..T::default()
        },
        T {
            description: "SingleSocketHT, DeAllocTwoContainer".into(),
            topo: topo_single_socket_ht(),
            pod_uid: "fakePod".into(),
            container_name: "fakeContainer1".into(),
            st_assignments: asg(vec![(
                "fakePod",
                vec![
                    ("fakeContainer1", cs(&[1, 3, 5])),
                    ("fakeContainer2", cs(&[2, 4])),
                ],
            )]),
            st_default_cpu_set: cs(&[6, 7]),
            exp_cset: cs(&[1, 3, 5, 6, 7]),
            ..T::default()
        },
        T {
            description: "SingleSocketHT, NoDeAlloc".into(),
            topo: topo_single_socket_ht(),
            pod_uid: "fakePod".into(),
            container_name: "fakeContainer2".into(),
            st_assignments: asg(vec![("fakePod", vec![("fakeContainer1", cs(&[1, 3, 5]))])]),
            st_default_cpu_set: cs(&[2, 4, 6, 7]),
            exp_cset: cs(&[2, 4, 6, 7]),
            ..T::default()
        },
    ]
}
fn start_with_resv_list_cases() -> Vec<T> {
    vec![
    T {
        description: "empty cpuset".into(),
        topo: topo_dual_socket_ht(),
        num_reserved_cpus: 2,
        reserved: cs(&[0, 1]),
        st_assignments: asg(vec![]),
        st_default_cpu_set: cs(&[]),
        exp_cset: cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        ..T::default()
    },
    T {
        description: "empty cpuset with StrictCPUReservationOption enabled".into(),
        topo: topo_dual_socket_ht(),
        num_reserved_cpus: 2,
        reserved: cs(&[0, 1]),
        options: vec![(STRICT_CPU_RESERVATION_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: cs(&[]),
        exp_cset: cs(&[2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        ..T::default()
    },
    T {
        description: "reserved cores 0 & 1 are not present in available cpuset".into(),
        topo: topo_dual_socket_ht(),
        num_reserved_cpus: 2,
        reserved: cs(&[0, 1]),
        st_assignments: asg(vec![]),
        st_default_cpu_set: cs(&[2, 3, 4, 5]),
        exp_err: Some("not all reserved cpus: \"0-1\" are present in defaultCpuSet: \"2-5\"".to_owned()),
        ..T::default()
    },
    T {
        description: "reserved cores 0 & 1 are present in available cpuset with StrictCPUReservationOption enabled".into(),
        topo: topo_dual_socket_ht(),
        num_reserved_cpus: 2,
        reserved: cs(&[0, 1]),
        options: vec![(STRICT_CPU_RESERVATION_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5]),
        exp_err: Some("some of strictly reserved cpus: \"0-1\" are present in defaultCpuSet: \"0-5\"".to_owned()),
        ..T::default()
    },
    T {
        description: "inconsistency between numReservedCPUs and reserved".into(),
        topo: topo_dual_socket_ht(),
        num_reserved_cpus: 1,
        reserved: cs(&[0, 1]),
        st_assignments: asg(vec![]),
        st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        exp_new_err: Some("[cpumanager] unable to reserve the required amount of CPUs (size of 0-1 did not equal 1)".to_owned()),
        ..T::default()
    },
    ]
}
fn add_with_resv_list_cases() -> Vec<T> {
    vec![
        T {
            description: "GuPodSingleCore, SingleSocketHT, ExpectError".into(),
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 1,
            reserved: cs(&[0]),
            st_assignments: asg(vec![]),
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: Some(make_pod("fakePod", "fakeContainer2", "8000m", "8000m")),
            exp_err: Some(
                "not enough cpus available to satisfy request: requested=8, available=7".to_owned(),
            ),
            exp_cpu_alloc: false,
            exp_cset: cs(&[]),
            ..T::default()
        },
        T {
            description: "GuPodSingleCore, SingleSocketHT, ExpectAllocOneCPU".into(),
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 2,
            reserved: cs(&[0, 1]),
            st_assignments: asg(vec![]),
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: Some(make_pod("fakePod", "fakeContainer2", "1000m", "1000m")),
            exp_err: None,
            exp_cpu_alloc: true,
            exp_cset: cs(&[4]),
            ..T::default()
        },
        T {
            description: "GuPodMultipleCores, SingleSocketHT, ExpectAllocOneCore".into(),
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 2,
            reserved: cs(&[0, 1]),
            st_assignments: asg(vec![(
                "fakePod",
                vec![("fakeContainer100", cs(&[2, 3, 6, 7]))],
            )]),
            st_default_cpu_set: cs(&[0, 1, 4, 5]),
            pod: Some(make_pod("fakePod", "fakeContainer3", "2000m", "2000m")),
            exp_err: None,
            exp_cpu_alloc: true,
            exp_cset: cs(&[4, 5]),
            ..T::default()
        },
    ]
}
fn add_with_uncore_alignment_cases() -> Vec<T> {
    vec![
    T {
        description: "GuPodSingleContainerSaturating, DualSocketHTUncore, ExpectAllocOneUncore, FullUncoreAvail".into(),
        topo: topo_dual_socket_single_numa_per_socket_smt_uncore(),
        num_reserved_cpus: 8,
        reserved: cs(&[0, 1, 96, 97, 192, 193, 288, 289]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus().difference(&
				cs(&[]).union(&
					topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus_in_uncore_caches(&[0]),
				).union(&
					topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus_in_uncore_caches(&[12]),
				),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("16000m", "16000m")],
				),
				"with-app-container-saturating",
			)),
        exp_uncore_cache: cs(&[1]),
        ..T::default()
    },
    T {
        description: "GuPodMainAndSidecarContainer, DualSocketHTUncore, ExpectAllocOneUncore, FullUncoreAvail".into(),
        topo: topo_dual_socket_single_numa_per_socket_smt_uncore(),
        num_reserved_cpus: 8,
        reserved: cs(&[0, 1, 96, 97, 192, 193, 288, 289]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus().difference(&
				cs(&[]).union(&
					topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus_in_uncore_caches(&[0]),
				).union(&
					topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus_in_uncore_caches(&[12]),
				),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("12000m", "12000m"), ("2000m", "2000m")],
				),
				"with-app-container-and-sidecar",
			)),
        exp_uncore_cache: cs(&[1]),
        ..T::default()
    },
    T {
        description: "GuPodSidecarAndMainContainer, DualSocketHTUncore, ExpectAllocOneUncore, FullUncoreAvail".into(),
        topo: topo_dual_socket_single_numa_per_socket_smt_uncore(),
        num_reserved_cpus: 8,
        reserved: cs(&[0, 1, 96, 97, 192, 193, 288, 289]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus().difference(&
				cs(&[]).union(&
					topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus_in_uncore_caches(&[0]),
				).union(&
					topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus_in_uncore_caches(&[12]),
				),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("2000m", "2000m"), ("12000m", "12000m")],
				),
				"with-sidecar-and-app-container",
			)),
        exp_uncore_cache: cs(&[1]),
        ..T::default()
    },
    T {
        description: "GuPodMainAndManySidecarContainer, DualSocketHTUncore, ExpectAllocOneUncore, FullUncoreAvail".into(),
        topo: topo_dual_socket_single_numa_per_socket_smt_uncore(),
        num_reserved_cpus: 8,
        reserved: cs(&[0, 1, 96, 97, 192, 193, 288, 289]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus().difference(&
				cs(&[]).union(&
					topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus_in_uncore_caches(&[0]),
				).union(&
					topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus_in_uncore_caches(&[12]),
				),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("10000m", "10000m"), ("2000m", "2000m"), ("2000m", "2000m"), ("2000m", "2000m")],
				),
				"with-app-container-and-multi-sidecar",
			)),
        exp_uncore_cache: cs(&[1]),
        ..T::default()
    },
    T {
        description: "GuPodMainAndSidecarContainer, DualSocketHTUncore, ExpectAllocTwoUncore".into(),
        topo: topo_dual_socket_single_numa_per_socket_smt_uncore(),
        num_reserved_cpus: 8,
        reserved: cs(&[0, 1, 96, 97, 192, 193, 288, 289]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_dual_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("12000m", "12000m"), ("2000m", "2000m")],
				),
				"with-app-container-and-sidecar",
			)),
        exp_uncore_cache: cs(&[0, 1]),
        ..T::default()
    },
    T {
        description: "GuPodSingleContainer, SingleSocketSMTSmallUncore, ExpectAllocOneUncore".into(),
        topo: topo_single_socket_single_numa_per_socket_smt_small_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 64, 65]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_single_socket_single_numa_per_socket_smt_small_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("8000m", "8000m")],
				),
				"with-app-container-saturating",
			)),
        exp_uncore_cache: cs(&[1]),
        ..T::default()
    },
    T {
        description: "GuPodSingleContainer, SingleSocketSMTSmallUncore, ExpectAllocTwoUncore".into(),
        topo: topo_single_socket_single_numa_per_socket_smt_small_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 64, 65]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_single_socket_single_numa_per_socket_smt_small_uncore().cpu_details.cpus().difference(&
				topo_single_socket_single_numa_per_socket_smt_small_uncore().cpu_details.cpus_in_uncore_caches(&[1]),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("12000m", "12000m")],
				),
				"with-app-container-saturating",
			)),
        exp_uncore_cache: cs(&[0, 2]),
        ..T::default()
    },
    T {
        description: "GuPodSingleContainer, SingleSocketNoSMTSmallUncore, FragmentedUncore, ExpectAllocThreeUncore".into(),
        topo: topo_single_socket_single_numa_per_socket_no_smt_small_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 2, 3]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_single_socket_single_numa_per_socket_no_smt_small_uncore().cpu_details.cpus().difference(&
				cs(&[]).union(&
					topo_single_socket_single_numa_per_socket_no_smt_small_uncore().cpu_details.cpus_in_uncore_caches(&[2]),
				).union(&
					topo_single_socket_single_numa_per_socket_no_smt_small_uncore().cpu_details.cpus_in_uncore_caches(&[3]),
				).union(&
					topo_single_socket_single_numa_per_socket_no_smt_small_uncore().cpu_details.cpus_in_uncore_caches(&[5]),
				),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("12000m", "12000m")],
				),
				"with-app-container-saturating",
			)),
        exp_uncore_cache: cs(&[1, 4, 6]),
        ..T::default()
    },
    T {
        description: "GuPodMultiContainer, DualSocketSMTUncore, FragmentedUncore, ExpectAllocOneUncore".into(),
        topo: topo_small_dual_socket_single_numa_per_socket_no_smt_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 32, 33]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_small_dual_socket_single_numa_per_socket_no_smt_uncore().cpu_details.cpus().difference(&
				topo_small_dual_socket_single_numa_per_socket_no_smt_uncore().cpu_details.cpus_in_uncore_caches(&[1]),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("4000m", "4000m"), ("2000m", "2000m")],
				),
				"with-multiple-container",
			)),
        exp_uncore_cache: cs(&[0]),
        ..T::default()
    },
    T {
        description: "GuPodMultiContainer, DualSocketSMTUncore, FragmentedUncore, ExpectAllocTwoUncore".into(),
        topo: topo_small_dual_socket_single_numa_per_socket_no_smt_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 32, 33]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_small_dual_socket_single_numa_per_socket_no_smt_uncore().cpu_details.cpus().difference(&
				topo_small_dual_socket_single_numa_per_socket_no_smt_uncore().cpu_details.cpus_in_uncore_caches(&[1]),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("4000m", "4000m"), ("4000m", "4000m")],
				),
				"with-multiple-container",
			)),
        exp_uncore_cache: cs(&[0, 2]),
        ..T::default()
    },
    T {
        description: "GuPodMultiContainer, LargeSingleSocketSMTUncore, PartialUncoreFit, ExpectAllocTwoUncore".into(),
        topo: topo_large_single_socket_single_numa_per_socket_smt_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 128, 129]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_large_single_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus().difference(&
				cs(&[8, 9, 136, 137]),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("12000m", "12000m"), ("12000m", "12000m")],
				),
				"with-multiple-container",
			)),
        exp_uncore_cache: cs(&[0, 1]),
        ..T::default()
    },
    T {
        description: "GuPodMultiContainer, LargeSingleSocketSMTUncore, PartialUncoreNoFit, ExpectAllocTwoUncore".into(),
        topo: topo_large_single_socket_single_numa_per_socket_smt_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 128, 129]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_large_single_socket_single_numa_per_socket_smt_uncore().cpu_details.cpus().difference(&
				cs(&[8, 9, 136, 137]),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("14000m", "14000m"), ("14000m", "14000m")],
				),
				"with-multiple-container",
			)),
        exp_uncore_cache: cs(&[2, 3]),
        ..T::default()
    },
    T {
        description: "GuPodLargeSingleContainer, DualSocketNoSMTUncore, FullNUMAsAvail, ExpectAllocFullNUMA".into(),
        topo: topo_dual_socket_multi_numa_per_socket_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 2, 3]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_dual_socket_multi_numa_per_socket_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("48000m", "48000m")],
				),
				"with-large-single-container",
			)),
        exp_uncore_cache: cs(&[6, 7, 8, 9, 10, 11]),
        ..T::default()
    },
    T {
        description: "GuPodSingleContainer, MonoUncoreCacheHT, ExpectAllocCPUSet".into(),
        topo: topo_dual_socket_sub_numa_per_socket_ht_monolithic_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 120, 121]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_dual_socket_sub_numa_per_socket_ht_monolithic_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("6000m", "6000m")],
				),
				"with-single-container",
			)),
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 3, 4, 122, 123, 124]),
        exp_uncore_cache: cs(&[0]),
        ..T::default()
    },
    T {
        description: "GuPodSingleContainer, MonoUncoreCacheHT, ExpectAllocCPUSet".into(),
        topo: topo_single_socket_single_numa_per_socket_p_core_ht_monolithic_uncore(),
        num_reserved_cpus: 2,
        reserved: cs(&[0, 1]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_single_socket_single_numa_per_socket_p_core_ht_monolithic_uncore().cpu_details.cpus().difference(&
				cs(&[4, 5, 6, 7]),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("6000m", "6000m")],
				),
				"with-single-container",
			)),
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 3, 8, 9, 16, 17]),
        exp_uncore_cache: cs(&[0]),
        ..T::default()
    },
    T {
        description: "GuPodSingleContainer, LargeSingleSocketUncore, ExpectAllocOneUncore".into(),
        topo: topo_large_single_socket_single_numa_per_socket_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 2, 3]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_large_single_socket_single_numa_per_socket_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("8000m", "8000m")],
				),
				"with-single-container",
			)),
        exp_uncore_cache: cs(&[1]),
        ..T::default()
    },
    T {
        description: "GuPodSingleContainer, MonoUncoreCacheHT, ExpectFragmentedAllocCPUSet".into(),
        topo: topo_single_socket_single_numa_per_socket_uncore(),
        num_reserved_cpus: 2,
        reserved: cs(&[0, 1]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_single_socket_single_numa_per_socket_uncore().cpu_details.cpus().difference(&
				cs(&[]).union(&
					cs(&[6, 7, 8, 9]),
				).union(&
					cs(&[12, 13, 14, 15]),
				).union(&
					cs(&[18, 19]),
				),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("12000m", "12000m")],
				),
				"with-single-container",
			)),
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 3, 4, 5, 10, 11, 16, 17, 20, 21, 22, 23]),
        exp_uncore_cache: cs(&[0]),
        ..T::default()
    },
    T {
        description: "GuPodSingleContainer, SingleSocketUncore, PartialUncore, ExpectBestEffortAllocTwoUncore".into(),
        topo: topo_small_single_socket_single_numa_per_socket_no_smt_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 2, 3]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_small_single_socket_single_numa_per_socket_no_smt_uncore().cpu_details.cpus().difference(&
				cs(&[]).union(&
					cs(&[8, 9, 10, 11]),
				).union(&
					cs(&[16, 17, 18, 19]),
				).union(&
					cs(&[24, 25, 26, 27]),
				),
			),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("8000m", "8000m")],
				),
				"with-single-container",
			)),
        exp_uncore_cache: cs(&[0, 1]),
        ..T::default()
    },
    T {
        description: "odd integer cpu required on smt-disabled".into(),
        topo: topo_small_single_socket_single_numa_per_socket_no_smt_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 2, 3]),
        options: vec![(FULL_PCPUS_ONLY_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_small_single_socket_single_numa_per_socket_no_smt_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("5000m", "5000m")],
				),
				"with-single-container",
			)),
        exp_cpu_alloc: true,
        exp_cset: cs(&[8, 9, 10, 11, 12]),
        ..T::default()
    },
    T {
        description: "odd integer required on smt-enabled".into(),
        topo: topo_single_socket_single_numa_per_socket_smt_small_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 64, 65]),
        options: vec![(PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_single_socket_single_numa_per_socket_smt_small_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("3000m", "3000m")],
				),
				"with-single-container",
			)),
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 3, 66]),
        ..T::default()
    },
    T {
        description: "odd integer required on odd integer partial uncore".into(),
        topo: topo_single_socket_single_numa_per_socket_smt_small_uncore(),
        num_reserved_cpus: 3,
        reserved: cs(&[0, 1, 64]),
        options: vec![(PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_single_socket_single_numa_per_socket_smt_small_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("3000m", "3000m")],
				),
				"with-single-container",
			)),
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 65, 66]),
        ..T::default()
    },
    T {
        description: "even integer required on odd integer partial uncore".into(),
        topo: topo_single_socket_single_numa_per_socket_smt_small_uncore(),
        num_reserved_cpus: 3,
        reserved: cs(&[0, 1, 64]),
        options: vec![(PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_single_socket_single_numa_per_socket_smt_small_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("4000m", "4000m")],
				),
				"with-single-container",
			)),
        exp_cpu_alloc: true,
        exp_cset: cs(&[4, 5, 68, 69]),
        ..T::default()
    },
    T {
        description: "large odd integer required on smt-enabled".into(),
        topo: topo_single_socket_single_numa_per_socket_smt_small_uncore(),
        num_reserved_cpus: 3,
        reserved: cs(&[0, 1, 64]),
        options: vec![(PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_single_socket_single_numa_per_socket_smt_small_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("11000m", "11000m")],
				),
				"with-single-container",
			)),
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 65, 66, 4, 5, 6, 7, 68, 69, 70, 71]),
        ..T::default()
    },
    T {
        description: "odd integer required on HT monolithic uncore".into(),
        topo: topo_dual_socket_sub_numa_per_socket_ht_monolithic_uncore(),
        num_reserved_cpus: 3,
        reserved: cs(&[0, 1, 120]),
        options: vec![(PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_single_socket_single_numa_per_socket_smt_small_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("5000m", "5000m")],
				),
				"with-single-container",
			)),
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 3, 121, 122, 123]),
        ..T::default()
    },
    T {
        description: "even integer required on HT monolithic uncore".into(),
        topo: topo_dual_socket_sub_numa_per_socket_ht_monolithic_uncore(),
        num_reserved_cpus: 3,
        reserved: cs(&[0, 1, 120]),
        options: vec![(PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_single_socket_single_numa_per_socket_smt_small_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("4000m", "4000m")],
				),
				"with-single-container",
			)),
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 3, 122, 123]),
        ..T::default()
    },
    T {
        description: "GuPodSingleContainer, SingleSocketSMTSmallUncore, StrictReserveCompatability".into(),
        topo: topo_single_socket_single_numa_per_socket_smt_small_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 64, 65]),
        options: vec![(STRICT_CPU_RESERVATION_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_single_socket_single_numa_per_socket_smt_small_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("2000m", "2000m")],
				),
				"with-single-container",
			)),
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 66]),
        ..T::default()
    },
    T {
        description: "GuPodSingleContainer, DualSocketHTMonoUncore, StrictReserveCompatability".into(),
        topo: topo_dual_socket_sub_numa_per_socket_ht_monolithic_uncore(),
        num_reserved_cpus: 4,
        reserved: cs(&[0, 1, 120, 121]),
        options: vec![(STRICT_CPU_RESERVATION_OPTION, "true"), (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true")],
        st_assignments: asg(vec![]),
        st_default_cpu_set: topo_dual_socket_sub_numa_per_socket_ht_monolithic_uncore().cpu_details.cpus(),
        pod: Some(with_pod_uid(
				make_multi_container_pod(
					&[],
					&[("4000m", "4000m")],
				),
				"with-single-container",
			)),
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 3, 122, 123]),
        ..T::default()
    },
    ]
}
fn options_insensitive_cases(lt: &LargeTopo) -> Vec<T> {
    vec![
    T {
        description: "GuPodMultipleCores, SingleSocketHT, ExpectAllocOneCore".into(),
        topo: topo_single_socket_ht(),
        num_reserved_cpus: 1,
        st_assignments: asg(vec![("fakePod", vec![("fakeContainer100", cs(&[2, 3, 6, 7]))])]),
        st_default_cpu_set: cs(&[0, 1, 4, 5]),
        pod: Some(make_pod("fakePod", "fakeContainer3", "2000m", "2000m")),
        exp_err: None,
        exp_cpu_alloc: true,
        exp_cset: cs(&[1, 5]),
        ..T::default()
    },
    T {
        description: "GuPodMultipleCores, DualSocketHT, ExpectAllocOneSocket".into(),
        topo: topo_dual_socket_ht(),
        num_reserved_cpus: 1,
        st_assignments: asg(vec![("fakePod", vec![("fakeContainer100", cs(&[2]))])]),
        st_default_cpu_set: cs(&[0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        pod: Some(make_pod("fakePod", "fakeContainer3", "6000m", "6000m")),
        exp_err: None,
        exp_cpu_alloc: true,
        exp_cset: cs(&[1, 3, 5, 7, 9, 11]),
        ..T::default()
    },
    T {
        description: "GuPodMultipleCores, DualSocketHT, ExpectAllocThreeCores".into(),
        topo: topo_dual_socket_ht(),
        num_reserved_cpus: 1,
        st_assignments: asg(vec![("fakePod", vec![("fakeContainer100", cs(&[1, 5]))])]),
        st_default_cpu_set: cs(&[0, 2, 3, 4, 6, 7, 8, 9, 10, 11]),
        pod: Some(make_pod("fakePod", "fakeContainer3", "6000m", "6000m")),
        exp_err: None,
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 3, 4, 8, 9, 10]),
        ..T::default()
    },
    T {
        description: "GuPodMultipleCores, DualSocketNoHT, ExpectAllocOneSocket".into(),
        topo: topo_dual_socket_no_ht(),
        num_reserved_cpus: 1,
        st_assignments: asg(vec![("fakePod", vec![("fakeContainer100", cs(&[]))])]),
        st_default_cpu_set: cs(&[0, 1, 3, 4, 5, 6, 7]),
        pod: Some(make_pod("fakePod", "fakeContainer1", "4000m", "4000m")),
        exp_err: None,
        exp_cpu_alloc: true,
        exp_cset: cs(&[4, 5, 6, 7]),
        ..T::default()
    },
    T {
        description: "GuPodMultipleCores, DualSocketNoHT, ExpectAllocFourCores".into(),
        topo: topo_dual_socket_no_ht(),
        num_reserved_cpus: 1,
        st_assignments: asg(vec![("fakePod", vec![("fakeContainer100", cs(&[4, 5]))])]),
        st_default_cpu_set: cs(&[0, 1, 3, 6, 7]),
        pod: Some(make_pod("fakePod", "fakeContainer1", "4000m", "4000m")),
        exp_err: None,
        exp_cpu_alloc: true,
        exp_cset: cs(&[1, 3, 6, 7]),
        ..T::default()
    },
    T {
        description: "GuPodMultipleCores, DualSocketHT, ExpectAllocOneSocketOneCore".into(),
        topo: topo_dual_socket_ht(),
        num_reserved_cpus: 1,
        st_assignments: asg(vec![("fakePod", vec![("fakeContainer100", cs(&[2]))])]),
        st_default_cpu_set: cs(&[0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        pod: Some(make_pod("fakePod", "fakeContainer3", "8000m", "8000m")),
        exp_err: None,
        exp_cpu_alloc: true,
        exp_cset: cs(&[1, 3, 4, 5, 7, 9, 10, 11]),
        ..T::default()
    },
    T {
        description: "NonGuPod, SingleSocketHT, NoAlloc".into(),
        topo: topo_single_socket_ht(),
        num_reserved_cpus: 1,
        st_assignments: asg(vec![]),
        st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
        pod: Some(make_pod("fakePod", "fakeContainer1", "1000m", "2000m")),
        exp_err: None,
        exp_cpu_alloc: false,
        exp_cset: cs(&[]),
        ..T::default()
    },
    T {
        description: "GuPodNonIntegerCore, SingleSocketHT, NoAlloc".into(),
        topo: topo_single_socket_ht(),
        num_reserved_cpus: 1,
        st_assignments: asg(vec![]),
        st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
        pod: Some(make_pod("fakePod", "fakeContainer4", "977m", "977m")),
        exp_err: None,
        exp_cpu_alloc: false,
        exp_cset: cs(&[]),
        ..T::default()
    },
    T {
        description: "GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocSock0".into(),
        topo: topo_quad_socket_four_way_ht(),
        st_assignments: asg(vec![("fakePod", vec![("fakeContainer100", cs(&[3, 11, 4, 5, 6, 7]))])]),
        st_default_cpu_set: lt.all.clone().difference(&cs(&[3, 11, 4, 5, 6, 7])),
        pod: Some(make_pod("fakePod", "fakeContainer5", "72000m", "72000m")),
        exp_err: None,
        exp_cpu_alloc: true,
        exp_cset: lt.sock0.clone(),
        ..T::default()
    },
    T {
        description: "GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocAllFullCoresFromThreeSockets".into(),
        topo: topo_quad_socket_four_way_ht(),
        st_assignments: asg(vec![("fakePod", vec![("fakeContainer100", lt.all.clone().difference(&cs(&[1, 25, 13, 38, 2, 9, 11, 35, 23, 48, 12, 51, 53, 173, 113, 233, 54, 61])))])]),
        st_default_cpu_set: cs(&[1, 25, 13, 38, 2, 9, 11, 35, 23, 48, 12, 51, 53, 173, 113, 233, 54, 61]),
        pod: Some(make_pod("fakePod", "fakeCcontainer5", "12000m", "12000m")),
        exp_err: None,
        exp_cpu_alloc: true,
        exp_cset: cs(&[1, 25, 13, 38, 11, 35, 23, 48, 53, 173, 113, 233]),
        ..T::default()
    },
    T {
        description: "GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocAllSock1+FullCore".into(),
        topo: topo_quad_socket_four_way_ht(),
        st_assignments: asg(vec![("fakePod", vec![("fakeContainer100", lt.all.clone().difference(&lt.sock1.clone().union(&cs(&[10, 34, 22, 47, 53, 173, 61, 181, 108, 228, 115, 235]))))])]),
        st_default_cpu_set: lt.sock1.clone().union(&cs(&[10, 34, 22, 47, 53, 173, 61, 181, 108, 228, 115, 235])),
        pod: Some(make_pod("fakePod", "fakeContainer5", "76000m", "76000m")),
        exp_err: None,
        exp_cpu_alloc: true,
        exp_cset: lt.sock1.clone().union(&cs(&[10, 34, 22, 47])),
        ..T::default()
    },
    ]
}
fn default_options_cases(lt: &LargeTopo) -> Vec<T> {
    vec![
        T {
            description: "GuPodSingleCore, SingleSocketHT, ExpectAllocOneCPU".into(),
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 1,
            st_assignments: asg(vec![]),
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: Some(make_pod("fakePod", "fakeContainer2", "1000m", "1000m")),
            exp_err: None,
            exp_cpu_alloc: true,
            exp_cset: cs(&[4]),
            ..T::default()
        },
        T {
            description: "GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocCPUs".into(),
            topo: topo_quad_socket_four_way_ht(),
            st_assignments: asg(vec![(
                "fakePod",
                vec![(
                    "fakeContainer100",
                    lt.all
                        .clone()
                        .difference(&cs(&[10, 11, 53, 37, 55, 67, 52])),
                )],
            )]),
            st_default_cpu_set: cs(&[10, 11, 53, 67, 52]),
            pod: Some(make_pod("fakePod", "fakeContainer5", "5000m", "5000m")),
            exp_err: None,
            exp_cpu_alloc: true,
            exp_cset: cs(&[10, 11, 53, 67, 52]),
            ..T::default()
        },
        T {
            description: "GuPodSingleCore, SingleSocketHT, ExpectError".into(),
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 1,
            st_assignments: asg(vec![]),
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: Some(make_pod("fakePod", "fakeContainer2", "8000m", "8000m")),
            exp_err: Some(
                "not enough cpus available to satisfy request: requested=8, available=7".to_owned(),
            ),
            exp_cpu_alloc: false,
            exp_cset: cs(&[]),
            ..T::default()
        },
        T {
            description: "GuPodMultipleCores, SingleSocketHT, ExpectSameAllocation".into(),
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 1,
            st_assignments: asg(vec![(
                "fakePod",
                vec![("fakeContainer3", cs(&[2, 3, 6, 7]))],
            )]),
            st_default_cpu_set: cs(&[0, 1, 4, 5]),
            pod: Some(make_pod("fakePod", "fakeContainer3", "4000m", "4000m")),
            exp_err: None,
            exp_cpu_alloc: true,
            exp_cset: cs(&[2, 3, 6, 7]),
            ..T::default()
        },
        T {
            description: "GuPodMultipleCores, DualSocketHT, NoAllocExpectError".into(),
            topo: topo_dual_socket_ht(),
            num_reserved_cpus: 1,
            st_assignments: asg(vec![(
                "fakePod",
                vec![("fakeContainer100", cs(&[1, 2, 3]))],
            )]),
            st_default_cpu_set: cs(&[0, 4, 5, 6, 7, 8, 9, 10, 11]),
            pod: Some(make_pod("fakePod", "fakeContainer5", "10000m", "10000m")),
            exp_err: Some(
                "not enough cpus available to satisfy request: requested=10, available=8"
                    .to_owned(),
            ),
            exp_cpu_alloc: false,
            exp_cset: cs(&[]),
            ..T::default()
        },
        T {
            description: "GuPodMultipleCores, SingleSocketHT, NoAllocExpectError".into(),
            topo: topo_single_socket_ht(),
            num_reserved_cpus: 1,
            st_assignments: asg(vec![(
                "fakePod",
                vec![("fakeContainer100", cs(&[1, 2, 3, 4, 5, 6]))],
            )]),
            st_default_cpu_set: cs(&[0, 7]),
            pod: Some(make_pod("fakePod", "fakeContainer5", "2000m", "2000m")),
            exp_err: Some(
                "not enough cpus available to satisfy request: requested=2, available=1".to_owned(),
            ),
            exp_cpu_alloc: false,
            exp_cset: cs(&[]),
            ..T::default()
        },
        T {
            description: "GuPodMultipleCores, topoQuadSocketFourWayHT, NoAlloc".into(),
            topo: topo_quad_socket_four_way_ht(),
            st_assignments: asg(vec![(
                "fakePod",
                vec![(
                    "fakeContainer100",
                    lt.all
                        .clone()
                        .difference(&cs(&[10, 11, 53, 37, 55, 67, 52])),
                )],
            )]),
            st_default_cpu_set: cs(&[10, 11, 53, 37, 55, 67, 52]),
            pod: Some(make_pod("fakePod", "fakeContainer5", "76000m", "76000m")),
            exp_err: Some(
                "not enough cpus available to satisfy request: requested=76, available=7"
                    .to_owned(),
            ),
            exp_cpu_alloc: false,
            exp_cset: cs(&[]),
            ..T::default()
        },
    ]
}
fn smtalign_option_cases(lt: &LargeTopo) -> Vec<T> {
    vec![
        T {
            description: "GuPodSingleCore, SingleSocketHT, ExpectAllocOneCPU".into(),
            topo: topo_single_socket_ht(),
            options: vec![(FULL_PCPUS_ONLY_OPTION, "true")],
            num_reserved_cpus: 1,
            st_assignments: asg(vec![]),
            st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            pod: Some(make_pod("fakePod", "fakeContainer2", "1000m", "1000m")),
            exp_err: Some(
                SMTAlignmentError {
                    requested_cpus: 1,
                    cpus_per_core: 2,
                    available_physical_cpus: 0,
                    caused_by_physical_cpus: false,
                }
                .to_string(),
            ),
            exp_cpu_alloc: false,
            exp_cset: cs(&[]),
            ..T::default()
        },
        T {
            description: "GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocOneCPUs".into(),
            topo: topo_quad_socket_four_way_ht(),
            options: vec![(FULL_PCPUS_ONLY_OPTION, "true")],
            num_reserved_cpus: 8,
            st_assignments: asg(vec![]),
            st_default_cpu_set: lt.all.clone(),
            pod: Some(make_pod("fakePod", "fakeContainer15", "15000m", "15000m")),
            exp_err: Some(
                SMTAlignmentError {
                    requested_cpus: 15,
                    cpus_per_core: 4,
                    available_physical_cpus: 0,
                    caused_by_physical_cpus: false,
                }
                .to_string(),
            ),
            exp_cpu_alloc: false,
            exp_cset: cs(&[]),
            ..T::default()
        },
        T {
            description: "GuPodManyCores, topoDualSocketHT, ExpectDoNotAllocPartialCPU".into(),
            topo: topo_dual_socket_ht(),
            options: vec![(FULL_PCPUS_ONLY_OPTION, "true")],
            num_reserved_cpus: 2,
            reserved_cpus: Some(cs(&[1, 6])),
            st_assignments: asg(vec![]),
            st_default_cpu_set: cs(&[0, 2, 3, 4, 5, 7, 8, 9, 10, 11]),
            pod: Some(make_pod(
                "fakePod",
                "fakeContainerBug113537_1",
                "10000m",
                "10000m",
            )),
            exp_err: Some(
                SMTAlignmentError {
                    requested_cpus: 10,
                    cpus_per_core: 2,
                    available_physical_cpus: 8,
                    caused_by_physical_cpus: true,
                }
                .to_string(),
            ),
            exp_cpu_alloc: false,
            exp_cset: cs(&[]),
            ..T::default()
        },
        T {
            description: "GuPodManyCores, topoDualSocketHT, AutoReserve, ExpectAllocAllCPUs".into(),
            topo: topo_dual_socket_ht(),
            options: vec![(FULL_PCPUS_ONLY_OPTION, "true")],
            num_reserved_cpus: 2,
            st_assignments: asg(vec![]),
            st_default_cpu_set: cs(&[1, 2, 3, 4, 5, 7, 8, 9, 10, 11]),
            pod: Some(make_pod(
                "fakePod",
                "fakeContainerBug113537_2",
                "10000m",
                "10000m",
            )),
            exp_err: None,
            exp_cpu_alloc: true,
            exp_cset: cs(&[1, 2, 3, 4, 5, 7, 8, 9, 10, 11]),
            ..T::default()
        },
        T {
            description: "GuPodManyCores, topoDualSocketHT, ExpectAllocAllCPUs".into(),
            topo: topo_dual_socket_ht(),
            options: vec![(FULL_PCPUS_ONLY_OPTION, "true")],
            num_reserved_cpus: 2,
            reserved_cpus: Some(cs(&[0, 6])),
            st_assignments: asg(vec![]),
            st_default_cpu_set: cs(&[1, 2, 3, 4, 5, 7, 8, 9, 10, 11]),
            pod: Some(make_pod(
                "fakePod",
                "fakeContainerBug113537_2",
                "10000m",
                "10000m",
            )),
            exp_err: None,
            exp_cpu_alloc: true,
            exp_cset: cs(&[1, 2, 3, 4, 5, 7, 8, 9, 10, 11]),
            ..T::default()
        },
    ]
}
fn align_by_socket_option_cases() -> Vec<T> {
    vec![
    T {
        description: "Align by socket: true, cpu's within same socket of numa in hint are part of allocation".into(),
        topo: topo_dual_socket_multi_numa_per_socket_ht(),
        options: vec![(ALIGN_BY_SOCKET_OPTION, "true")],
        num_reserved_cpus: 1,
        st_assignments: asg(vec![]),
        st_default_cpu_set: cs(&[2, 11, 21, 22]),
        pod: Some(make_pod("fakePod", "fakeContainer2", "2000m", "2000m")),
        topology_hint: Some(TopologyHint { numa_node_affinity: Some(BitMask::new(&[0, 2])), preferred: true }),
        exp_err: None,
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 11]),
        ..T::default()
    },
    T {
        description: "Align by socket: false, cpu's are taken strictly from NUMA nodes in hint".into(),
        topo: topo_dual_socket_multi_numa_per_socket_ht(),
        options: vec![(ALIGN_BY_SOCKET_OPTION, "false")],
        num_reserved_cpus: 1,
        st_assignments: asg(vec![]),
        st_default_cpu_set: cs(&[2, 11, 21, 22]),
        pod: Some(make_pod("fakePod", "fakeContainer2", "2000m", "2000m")),
        topology_hint: Some(TopologyHint { numa_node_affinity: Some(BitMask::new(&[0, 2])), preferred: true }),
        exp_err: None,
        exp_cpu_alloc: true,
        exp_cset: cs(&[2, 21]),
        ..T::default()
    },
    ]
}

#[test]
fn test_static_policy_name() {
    let tc = T {
        topo: topo_single_socket_ht(),
        num_reserved_cpus: 1,
        ..T::default()
    };
    let policy = new_policy(&tc, &CpuSet::new(), &FeatureGate::new()).unwrap();
    assert_eq!(policy.name(), "static");
}

#[test]
fn test_static_policy_start() {
    assert_eq!(start_cases().len(), 8);
    for tc in start_cases() {
        let mut policy = new_policy(&tc, &CpuSet::new(), &alpha_gate()).unwrap();
        let mut st = mock_state(&tc);
        let err = policy.start(&mut st).err().map(|e| e.to_string());
        assert_eq!(err, tc.exp_err, "{}", tc.description);
        if err.is_some() {
            continue;
        }
        if !tc.st_default_cpu_set.is_empty() {
            for cpu in 1..policy.topology.num_cpus {
                assert!(
                    st.get_default_cpu_set().contains(cpu),
                    "{}: cpu {cpu}",
                    tc.description
                );
            }
        }
        assert_eq!(st.get_default_cpu_set(), tc.exp_cset, "{}", tc.description);
    }
}

fn run_static_policy_test_case(tc: &T, gate: &FeatureGate) {
    let reserved = tc.reserved_cpus.clone().unwrap_or_default();
    let mut policy = new_policy(tc, &reserved, gate)
        .unwrap_or_else(|e| panic!("{}: NewStaticPolicy() failed: {e}", tc.description));
    let mut st = mock_state(tc);
    let pod = tc.pod.clone().unwrap();
    let container = pod.spec.as_ref().unwrap().containers[0].clone();
    let err = policy
        .allocate(&mut st, &pod, &container)
        .err()
        .map(|e| e.to_string());
    assert_eq!(err, tc.exp_err, "{}", tc.description);
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let found = st.get_cpu_set(&uid, &container.name);
    if tc.exp_cpu_alloc {
        let cset = found.unwrap_or_else(|| panic!("{}: not assigned", tc.description));
        assert_eq!(cset, tc.exp_cset, "{}", tc.description);
        assert!(
            cset.intersection(&st.get_default_cpu_set()).is_empty(),
            "{}",
            tc.description
        );
    } else {
        assert!(found.is_none(), "{}", tc.description);
    }
}

#[test]
fn test_static_policy_add() {
    let lt = large_topo();
    assert_eq!(lt.all.len(), 288);
    assert_eq!(options_insensitive_cases(&lt).len(), 11);
    assert_eq!(default_options_cases(&lt).len(), 7);
    assert_eq!(smtalign_option_cases(&lt).len(), 5);
    assert_eq!(align_by_socket_option_cases().len(), 2);
    for tc in options_insensitive_cases(&lt) {
        for options in [vec![], vec![(FULL_PCPUS_ONLY_OPTION, "true")]] {
            let tc = T {
                description: format!("options={options:?} {}", tc.description),
                options,
                ..tc.clone()
            };
            run_static_policy_test_case(&tc, &FeatureGate::new());
        }
    }
    for tc in default_options_cases(&lt) {
        run_static_policy_test_case(&tc, &FeatureGate::new());
    }
    for tc in smtalign_option_cases(&lt) {
        run_static_policy_test_case(&tc, &FeatureGate::new());
    }
    for tc in align_by_socket_option_cases() {
        run_static_policy_test_case(&tc, &alpha_gate());
    }
}

#[test]
fn test_static_policy_reuse_cpus() {
    let tc = T {
        description: "SingleSocketHT, DeAllocOneInitContainer".into(),
        topo: topo_single_socket_ht(),
        pod: Some(make_multi_container_pod(
            &[("4000m", "4000m")],
            &[("2000m", "2000m")],
        )),
        container_name: "initContainer-0".into(),
        st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
        ..T::default()
    };
    let (exp_after_alloc, exp_after_remove) = (cs(&[2, 3, 6, 7]), cs(&[1, 2, 3, 5, 6, 7]));
    let mut policy = new_policy(&tc, &CpuSet::new(), &FeatureGate::new()).unwrap();
    let mut st = mock_state(&tc);
    let pod = tc.pod.clone().unwrap();
    let spec = pod.spec.clone().unwrap();
    for container in spec
        .init_containers
        .unwrap_or_default()
        .iter()
        .chain(&spec.containers)
    {
        let _ = policy.allocate(&mut st, &pod, container);
    }
    assert_eq!(st.get_default_cpu_set(), exp_after_alloc);
    policy.remove_container(&mut st, "podUID", &tc.container_name);
    assert_eq!(st.get_default_cpu_set(), exp_after_remove);
    assert_eq!(st.get_cpu_set("podUID", &tc.container_name), None);
}

#[test]
fn test_static_policy_do_not_reuse_cpus() {
    let tc = T {
        description: "SingleSocketHT, Don't reuse CPUs of a restartable init container".into(),
        topo: topo_single_socket_ht(),
        pod: Some(make_multi_container_pod_with_options(
            &[("4000m", "4000m", Some("Always"))],
            &[("2000m", "2000m", None)],
        )),
        st_default_cpu_set: cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
        ..T::default()
    };
    let mut policy = new_policy(&tc, &CpuSet::new(), &FeatureGate::new()).unwrap();
    let mut st = mock_state(&tc);
    let pod = tc.pod.clone().unwrap();
    let spec = pod.spec.clone().unwrap();
    for container in spec
        .init_containers
        .unwrap_or_default()
        .iter()
        .chain(&spec.containers)
    {
        policy.allocate(&mut st, &pod, container).unwrap();
    }
    assert_eq!(st.get_default_cpu_set(), cs(&[3, 7]), "{}", tc.description);
}

#[test]
fn test_static_policy_remove() {
    assert_eq!(remove_cases().len(), 4);
    for tc in remove_cases() {
        let mut policy = new_policy(&tc, &CpuSet::new(), &FeatureGate::new()).unwrap();
        let mut st = mock_state(&tc);
        policy.remove_container(&mut st, &tc.pod_uid, &tc.container_name);
        assert_eq!(st.get_default_cpu_set(), tc.exp_cset, "{}", tc.description);
        assert_eq!(
            st.get_cpu_set(&tc.pod_uid, &tc.container_name),
            None,
            "{}",
            tc.description
        );
    }
}

#[test]
fn test_topology_aware_allocate_cpus() {
    let all = cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    let cases = [
        ("Request 2 CPUs, No BitMask", 2, None, cs(&[0, 6])),
        (
            "Request 2 CPUs, BitMask on Socket 0",
            2,
            Some(BitMask::new(&[0])),
            cs(&[0, 6]),
        ),
        (
            "Request 2 CPUs, BitMask on Socket 1",
            2,
            Some(BitMask::new(&[1])),
            cs(&[1, 7]),
        ),
        (
            "Request 8 CPUs, BitMask on Socket 0",
            8,
            Some(BitMask::new(&[0])),
            cs(&[0, 6, 2, 8, 4, 10, 1, 7]),
        ),
        (
            "Request 8 CPUs, BitMask on Socket 1",
            8,
            Some(BitMask::new(&[1])),
            cs(&[1, 7, 3, 9, 5, 11, 0, 6]),
        ),
    ];
    for (description, num_requested, mask, exp) in cases {
        let tc = T {
            topo: topo_dual_socket_ht(),
            st_default_cpu_set: all.clone(),
            ..T::default()
        };
        let mut policy = new_policy(&tc, &CpuSet::new(), &FeatureGate::new()).unwrap();
        let mut st = mock_state(&tc);
        policy.start(&mut st).unwrap();
        let alloc = policy
            .allocate_cpus(&mut st, num_requested, mask, &CpuSet::new())
            .unwrap();
        assert_eq!(alloc.cpus, exp, "{description}");
    }
}

#[test]
fn test_static_policy_start_with_resv_list() {
    assert_eq!(start_with_resv_list_cases().len(), 5);
    for tc in start_with_resv_list_cases() {
        let policy = new_policy(&tc, &tc.reserved, &alpha_gate());
        let err = policy.as_ref().err().map(ToString::to_string);
        assert_eq!(err, tc.exp_new_err, "{}", tc.description);
        let Ok(mut policy) = policy else { continue };
        let mut st = mock_state(&tc);
        let err = policy.start(&mut st).err().map(|e| e.to_string());
        assert_eq!(err, tc.exp_err, "{}", tc.description);
        if err.is_some() {
            continue;
        }
        assert_eq!(st.get_default_cpu_set(), tc.exp_cset, "{}", tc.description);
    }
}

#[test]
fn test_static_policy_add_with_resv_list() {
    assert_eq!(add_with_resv_list_cases().len(), 3);
    for tc in add_with_resv_list_cases() {
        let mut policy = new_policy(&tc, &tc.reserved, &FeatureGate::new()).unwrap();
        let mut st = mock_state(&tc);
        let pod = tc.pod.clone().unwrap();
        let container = pod.spec.as_ref().unwrap().containers[0].clone();
        let err = policy
            .allocate(&mut st, &pod, &container)
            .err()
            .map(|e| e.to_string());
        assert_eq!(err, tc.exp_err, "{}", tc.description);
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let found = st.get_cpu_set(&uid, &container.name);
        if tc.exp_cpu_alloc {
            let cset = found.unwrap();
            assert_eq!(cset, tc.exp_cset, "{}", tc.description);
            assert!(cset.intersection(&st.get_default_cpu_set()).is_empty());
        } else {
            assert!(found.is_none(), "{}", tc.description);
        }
    }
}

#[test]
fn test_static_policy_add_with_uncore_alignment() {
    assert_eq!(add_with_uncore_alignment_cases().len(), 27);
    for tc in add_with_uncore_alignment_cases() {
        let mut policy = new_policy(&tc, &tc.reserved, &alpha_gate())
            .unwrap_or_else(|e| panic!("{}: {e}", tc.description));
        let mut st = StateMemory::new();
        st.set_cpu_assignments(tc.st_assignments.clone());
        st.set_default_cpu_set(tc.st_default_cpu_set.difference(&tc.reserved));
        let pod = tc.pod.clone().unwrap();
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let containers = pod.spec.as_ref().unwrap().containers.clone();
        for container in &containers {
            policy
                .allocate(&mut st, &pod, container)
                .unwrap_or_else(|e| panic!("{}: Allocate failed: {e}", tc.description));
        }
        if tc.exp_cpu_alloc {
            let cset = st.get_cpu_set(&uid, &containers[0].name).unwrap();
            assert_eq!(cset, tc.exp_cset, "{}", tc.description);
            continue;
        }
        // getPodUncoreCacheIDs
        let mut ids = CpuSet::new();
        for container in &containers {
            let cset = st.get_cpu_set(&uid, &container.name).unwrap();
            for cpu in &cset {
                ids = ids.union(&cs(&[tc
                    .topo
                    .cpu_details
                    .get(cpu)
                    .unwrap()
                    .uncore_cache_id]));
            }
        }
        assert_eq!(ids, tc.exp_uncore_cache, "{}", tc.description);
    }
}

#[test]
fn test_static_policy_options() {
    let cases: Vec<(&str, Vec<(&str, &str)>, bool, StaticPolicyOptions)> = vec![
        ("nil args", vec![], false, StaticPolicyOptions::default()),
        (
            "bad single arg",
            vec![("badValue1", "")],
            true,
            StaticPolicyOptions::default(),
        ),
        (
            "bad multiple arg",
            vec![("badValue1", ""), ("badvalue2", "aaaa")],
            true,
            StaticPolicyOptions::default(),
        ),
        (
            "good arg",
            vec![(FULL_PCPUS_ONLY_OPTION, "true")],
            false,
            StaticPolicyOptions {
                full_physical_cpus_only: true,
                ..StaticPolicyOptions::default()
            },
        ),
        (
            "good arg, bad value",
            vec![(FULL_PCPUS_ONLY_OPTION, "enabled!")],
            true,
            StaticPolicyOptions::default(),
        ),
        (
            "bad arg intermixed",
            vec![(FULL_PCPUS_ONLY_OPTION, "1"), ("badvalue2", "lorem ipsum")],
            true,
            StaticPolicyOptions::default(),
        ),
    ];
    for (description, options, expected_error, expected) in cases {
        let got = StaticPolicyOptions::new(&options_map(&options), &FeatureGate::new());
        assert_eq!(got.is_err(), expected_error, "{description}");
        if let Ok(got) = got {
            assert_eq!(got, expected, "{description}");
        }
    }
}

#[test]
fn test_smt_alignment_error_text() {
    let err = |requested_cpus, cpus_per_core, available_physical_cpus, caused_by_physical_cpus| {
        SMTAlignmentError {
            requested_cpus,
            cpus_per_core,
            available_physical_cpus,
            caused_by_physical_cpus,
        }
        .to_string()
    };
    assert_eq!(
        err(15, 4, 0, false),
        "SMT Alignment Error: requested 15 cpus not multiple cpus per core = 4"
    );
    assert_eq!(
        err(4, 2, 0, false),
        "SMT Alignment Error: requested 4 cpus not multiple cpus per core = 2"
    );
    assert_eq!(
        err(4, 2, 0, true),
        "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 0, requested CPUs = 4, CPUs per core = 2"
    );
    assert_eq!(
        SMTAlignmentError {
            requested_cpus: 1,
            cpus_per_core: 2,
            available_physical_cpus: 0,
            caused_by_physical_cpus: false
        }
        .type_name(),
        "SMTAlignmentError"
    );
}

#[test]
fn iterate_bit_masks_order() {
    let mut seen = Vec::new();
    iterate_bit_masks(&[0, 1, 2], &mut |m| seen.push(m.bits()));
    assert_eq!(
        seen,
        vec![
            vec![0],
            vec![1],
            vec![2],
            vec![0, 1],
            vec![0, 2],
            vec![1, 2],
            vec![0, 1, 2]
        ]
    );
}

// ---- upstream topology_hints_test.go (the policy's part: the manager's stale-state
// removal before the hints is not ported yet) ----

/// `returnMachineInfo`'s topology.
fn hints_topology() -> CPUTopology {
    use crate::topology::{Cache, Core, MachineInfo, Node, discover};
    let core = |socket_id, id, threads: [usize; 2]| Core {
        id,
        socket_id,
        threads: threads.to_vec(),
        caches: Vec::new(),
        uncore_caches: vec![Cache {
            id: 1,
            ..Cache::default()
        }],
    };
    let machine = MachineInfo {
        num_cores: 12,
        num_sockets: 0,
        topology: vec![
            Node {
                id: 0,
                distances: None,
                cores: vec![core(0, 0, [0, 6]), core(0, 1, [1, 7]), core(0, 2, [2, 8])],
                caches: Vec::new(),
            },
            Node {
                id: 1,
                distances: None,
                cores: vec![core(1, 0, [3, 9]), core(1, 1, [4, 10]), core(1, 2, [5, 11])],
                caches: Vec::new(),
            },
        ],
    };
    discover(&machine).unwrap()
}

fn hints_policy(
    topo: CPUTopology,
    options: &[(&str, &str)],
    gate: &FeatureGate,
) -> StaticPolicy<FakeStore> {
    StaticPolicy::new(
        topo,
        0,
        &CpuSet::new(),
        FakeStore::default(),
        &options_map(options),
        gate,
    )
    .unwrap()
}

fn sorted(mut hints: Vec<TopologyHint>) -> Vec<TopologyHint> {
    hints.sort_by_key(|h| (h.numa_node_affinity, h.preferred));
    hints
}

fn hint(bits: &[usize], preferred: bool) -> TopologyHint {
    TopologyHint {
        numa_node_affinity: Some(BitMask::new(bits)),
        preferred,
    }
}

fn make_pod_with_pod_level_resources(
    uid: &str,
    pod_req: &str,
    pod_lim: &str,
    name: &str,
    req: &str,
    lim: &str,
) -> Pod {
    let mut pod = make_pod(uid, name, req, lim);
    if let Some(spec) = pod.spec.as_mut() {
        spec.resources = Some(resources(pod_req, pod_lim));
    }
    pod
}

/// `returnTestCases`: name, pod, assignments, default cpuset, expected hints, PodLevelResources.
fn hints_test_cases() -> Vec<(
    &'static str,
    Pod,
    ContainerCPUAssignments,
    CpuSet,
    Vec<TopologyHint>,
    bool,
)> {
    let pod1 = make_pod("fakePod", "fakeContainer", "2", "2");
    let pod2 = make_pod("fakePod", "fakeContainer", "5", "5");
    let pod3 = make_pod("fakePod", "fakeContainer", "7", "7");
    let pod4 = make_pod("fakePod", "fakeContainer", "11", "11");
    let pod5 = make_pod_with_pod_level_resources("fakePod", "5", "5", "fakeContainer", "4", "4");
    let avail = cs(&[2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    let one = |cpus: &[usize]| asg(vec![("fakePod", vec![("fakeContainer", cs(cpus))])]);
    let none = ContainerCPUAssignments::new();
    vec![
        (
            "Request 2 CPUs, 4 available on NUMA 0, 6 available on NUMA 1",
            pod1.clone(),
            none.clone(),
            avail.clone(),
            vec![hint(&[0], true), hint(&[1], true), hint(&[0, 1], false)],
            false,
        ),
        (
            "Request 5 CPUs, 4 available on NUMA 0, 6 available on NUMA 1",
            pod2.clone(),
            none.clone(),
            avail.clone(),
            vec![hint(&[1], true), hint(&[0, 1], false)],
            false,
        ),
        (
            "Request 7 CPUs, 4 available on NUMA 0, 6 available on NUMA 1",
            pod3,
            none.clone(),
            avail.clone(),
            vec![hint(&[0, 1], true)],
            false,
        ),
        (
            "Request 11 CPUs, 4 available on NUMA 0, 6 available on NUMA 1",
            pod4.clone(),
            none.clone(),
            avail,
            vec![],
            false,
        ),
        (
            "Request 2 CPUs, 1 available on NUMA 0, 1 available on NUMA 1",
            pod1.clone(),
            none.clone(),
            cs(&[0, 3]),
            vec![hint(&[0, 1], false)],
            false,
        ),
        (
            "Request more CPUs than available",
            pod2,
            none.clone(),
            cs(&[0, 1, 2, 3]),
            vec![],
            false,
        ),
        (
            "Regenerate Single-Node NUMA Hints if already allocated 1/2",
            pod1.clone(),
            one(&[0, 6]),
            CpuSet::new(),
            vec![hint(&[0], true), hint(&[0, 1], false)],
            false,
        ),
        (
            "Regenerate Single-Node NUMA Hints if already allocated 1/2",
            pod1.clone(),
            one(&[3, 9]),
            CpuSet::new(),
            vec![hint(&[1], true), hint(&[0, 1], false)],
            false,
        ),
        (
            "Regenerate Cross-NUMA Hints if already allocated",
            pod4.clone(),
            one(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
            CpuSet::new(),
            vec![hint(&[0, 1], true)],
            false,
        ),
        (
            "Requested less than already allocated",
            pod1,
            one(&[0, 6, 3, 9]),
            CpuSet::new(),
            vec![],
            false,
        ),
        (
            "Requested more than already allocated",
            pod4,
            one(&[0, 6, 3, 9]),
            CpuSet::new(),
            vec![],
            false,
        ),
        (
            "Pod has pod level resources, no hint generation",
            pod5,
            none,
            cs(&[0, 1, 2, 3]),
            vec![],
            true,
        ),
    ]
}

fn pod_level_gate(enabled: bool) -> FeatureGate {
    let mut gate = FeatureGate::new();
    gate.set(&format!("PodLevelResources={enabled}")).unwrap();
    gate
}

#[test]
fn test_get_topology_hints() {
    for (name, pod, assignments, default, expected, pod_level) in hints_test_cases() {
        let policy = hints_policy(hints_topology(), &[], &pod_level_gate(pod_level));
        let mut st = StateMemory::new();
        st.set_cpu_assignments(assignments);
        st.set_default_cpu_set(default);
        let container = pod.spec.as_ref().unwrap().containers[0].clone();
        let hints = policy
            .get_topology_hints(&st, &pod, &container)
            .unwrap_or_default();
        assert_eq!(sorted(hints), sorted(expected), "{name}");
    }
}

#[test]
fn test_get_pod_topology_hints() {
    for (name, pod, assignments, default, expected, pod_level) in hints_test_cases() {
        let policy = hints_policy(hints_topology(), &[], &pod_level_gate(pod_level));
        let mut st = StateMemory::new();
        st.set_cpu_assignments(assignments);
        st.set_default_cpu_set(default);
        let hints = policy.get_pod_topology_hints(&st, &pod).unwrap_or_default();
        assert_eq!(sorted(hints), sorted(expected), "{name}");
    }
}

#[test]
fn test_get_pod_topology_hints_with_policy_options() {
    let pod1 = make_pod("fakePod", "fakeContainer", "2", "2");
    let pod2 = make_pod("fakePod", "fakeContainer", "41", "41");
    let across_socket = CpuSet::parse("0-28,40-57").unwrap();
    let all_but_single: Vec<TopologyHint> = [
        &[0, 1][..],
        &[0, 2],
        &[0, 3],
        &[0, 1, 2],
        &[0, 1, 3],
        &[0, 2, 3],
        &[0, 1, 2, 3],
    ]
    .iter()
    .map(|b| hint(b, false))
    .collect();
    let mut expect_false = vec![hint(&[0], true)];
    expect_false.extend(all_but_single.iter().copied());
    let mut expect_true = expect_false.clone();
    expect_true[1] = hint(&[0, 1], true);
    let cases = [
        (
            "AlignBySocket:false, Preferred hints does not contains socket aligned hints",
            &pod1,
            cs(&[2, 3, 11]),
            "false",
            expect_false,
        ),
        (
            "AlignBySocket:true Preferred hints contains socket aligned hints",
            &pod1,
            cs(&[2, 3, 11]),
            "true",
            expect_true,
        ),
        (
            "AlignBySocket:true Preferred hints are spread across socket since 2 sockets are required",
            &pod2,
            across_socket,
            "true",
            vec![hint(&[0, 1, 2], true), hint(&[0, 1, 2, 3], true)],
        ),
    ];
    for (description, pod, default, align, expected) in cases {
        let policy = hints_policy(
            topo_dual_socket_multi_numa_per_socket_ht(),
            &[(ALIGN_BY_SOCKET_OPTION, align)],
            &alpha_gate(),
        );
        let mut st = StateMemory::new();
        st.set_default_cpu_set(default);
        let hints = policy.get_pod_topology_hints(&st, pod).unwrap_or_default();
        assert_eq!(sorted(hints), sorted(expected), "{description}");
    }
}

#[test]
fn test_pod_guaranteed_cpus() {
    let o = |req: &'static str, restart: Option<&'static str>| (req, req, restart);
    let p = |init: &[(&'static str, &'static str, Option<&'static str>)],
             app: &[(&'static str, &'static str, Option<&'static str>)]| {
        make_multi_container_pod_with_options(init, app)
    };
    let zero = [o("0", None)];
    let two = [o("2", None)];
    let five = [o("5", None)];
    let multi = [o("2", None), o("4", None)];
    let always = Some("Always");
    let cases = [
        (
            "TestCase01: if requestedCPU == 0, Pod is not Guaranteed Qos",
            p(&zero, &zero),
            0,
        ),
        (
            "TestCase02: if requestedCPU == 0, Pod is not Guaranteed Qos",
            p(&zero, &two),
            0,
        ),
        (
            "TestCase03: if requestedCPU == 0, Pod is not Guaranteed Qos",
            p(&two, &zero),
            0,
        ),
        (
            "TestCase04: Guaranteed Pod requests 2 CPUs",
            p(&two, &two),
            2,
        ),
        (
            "TestCase05: Guaranteed Pod requests 5 CPUs",
            p(&five, &five),
            5,
        ),
        ("TestCase06: app bigger than init", p(&two, &five), 5),
        ("TestCase07: init bigger than app", p(&five, &two), 5),
        (
            "TestCase08: Sum of CPUs requested by multiple containers",
            p(&multi, &multi),
            6,
        ),
        (
            "TestCase09: restartable init container + regular container",
            p(&[o("1", always)], &[o("1", None)]),
            2,
        ),
        (
            "TestCase09: multiple restartable init containers",
            p(
                &[o("5", None), o("1", always), o("2", always), o("3", always)],
                &[o("1", None)],
            ),
            7,
        ),
        (
            "TestCase11: multiple restartable and regular init containers",
            p(
                &[
                    o("5", None),
                    o("1", always),
                    o("2", always),
                    o("5", None),
                    o("3", always),
                ],
                &[o("1", None)],
            ),
            8,
        ),
        (
            "TestCase12: restartable init, regular init and regular container",
            p(&[o("10", always), o("200", None)], &[o("100", None)]),
            210,
        ),
    ];
    let policy = hints_policy(topo_single_socket_ht(), &[], &FeatureGate::new());
    for (name, pod, expected) in cases {
        assert_eq!(policy.pod_guaranteed_cpus(&pod), expected, "{name}");
    }
}
