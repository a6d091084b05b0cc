//! Table-driven tests of phase, container statuses, generation and the status
//! manager (upstream `kubelet_pods_test.go`, `status_manager_test.go`).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerState as ApiState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, Pod as ApiPod, PodCondition, PodSpec,
    PodStatus as ApiPodStatus, Probe,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubelet_container::kubetypes::{CONFIG_SOURCE_ANNOTATION_KEY, FILE_SOURCE};
use kubelet_container::{
    Clock, ContainerId, ContainerState, FakeClock, FakeProbeResults, PodStatus, PodSyncResult,
    ProbeResult, ProbeType, SandboxState, SandboxStatus, Status, SyncAction, SyncErrorKind,
    SyncResult,
};

use crate::container_statuses::{ConvertInput, convert_to_api_container_statuses};
use crate::reasons::{condition, phase};
use crate::*;

// ---------- builders ----------

fn container(name: &str) -> Container {
    Container {
        name: name.into(),
        image: Some("busybox".into()),
        ..Container::default()
    }
}

fn sidecar(name: &str) -> Container {
    Container {
        restart_policy: Some("Always".into()),
        ..container(name)
    }
}

fn pod_with(policy: &str, init: Vec<Container>, containers: Vec<Container>) -> ApiPod {
    ApiPod {
        metadata: ObjectMeta {
            uid: Some("uid-1".into()),
            name: Some("web".into()),
            namespace: Some("default".into()),
            generation: Some(3),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some(policy.into()),
            init_containers: (!init.is_empty()).then_some(init),
            containers,
            ..PodSpec::default()
        }),
        ..ApiPod::default()
    }
}

fn pod(policy: &str, names: &[&str]) -> ApiPod {
    pod_with(policy, vec![], names.iter().map(|n| container(n)).collect())
}

fn api_status(name: &str, state: ApiState) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        state: Some(state),
        ..ContainerStatus::default()
    }
}

fn running(name: &str) -> ContainerStatus {
    api_status(
        name,
        ApiState {
            running: Some(ContainerStateRunning::default()),
            ..ApiState::default()
        },
    )
}

fn started(name: &str) -> ContainerStatus {
    ContainerStatus {
        started: Some(true),
        ..running(name)
    }
}

fn terminated(name: &str, code: i32) -> ContainerStatus {
    let t = ContainerStateTerminated {
        exit_code: code,
        ..ContainerStateTerminated::default()
    };
    api_status(
        name,
        ApiState {
            terminated: Some(t),
            ..ApiState::default()
        },
    )
}

fn waiting(name: &str) -> ContainerStatus {
    api_status(
        name,
        ApiState {
            waiting: Some(ContainerStateWaiting::default()),
            ..ApiState::default()
        },
    )
}

fn waiting_after(name: &str, code: i32) -> ContainerStatus {
    let last = terminated(name, code).state;
    ContainerStatus {
        last_state: last,
        ..waiting(name)
    }
}

fn ts(sec: i64) -> Option<Timestamp> {
    Some(Timestamp::from_second(1_700_000_000 + sec).unwrap())
}

fn rt(name: &str, id: &str, state: ContainerState, created: i64) -> Status {
    Status {
        id: ContainerId::new("containerd", id),
        name: name.into(),
        state,
        created_at: ts(created),
        started_at: ts(created + 1),
        finished_at: (state == ContainerState::Exited)
            .then(|| ts(created + 5))
            .flatten(),
        image: "busybox".into(),
        image_ref: "sha256:abc".into(),
        ..Status::default()
    }
}

fn runtime_status(containers: Vec<Status>, sandbox_ready: bool) -> PodStatus {
    PodStatus {
        ips: vec!["198.18.0.7".into()],
        container_statuses: containers,
        sandbox_statuses: vec![SandboxStatus {
            id: "sb1".into(),
            state: if sandbox_ready {
                SandboxState::Ready
            } else {
                SandboxState::NotReady
            },
            ip: "198.18.0.7".into(),
            ..SandboxStatus::default()
        }],
        ..PodStatus::empty("uid-1", "web", "default")
    }
}

// ---------- phase ----------

#[test]
fn phase_table() {
    let init_pod = |policy| pod_with(policy, vec![container("init")], vec![container("a")]);
    let sidecar_pod = |policy| pod_with(policy, vec![sidecar("side")], vec![container("a")]);
    let static_pod = {
        let mut p = pod("Always", &["a"]);
        p.metadata.annotations = Some(
            [(
                CONFIG_SOURCE_ANNOTATION_KEY.to_string(),
                FILE_SOURCE.to_string(),
            )]
            .into(),
        );
        p
    };
    let cases: Vec<(&str, ApiPod, Vec<ContainerStatus>, bool, &str)> = vec![
        (
            "all running",
            pod("Always", &["a", "b"]),
            vec![running("a"), running("b")],
            false,
            phase::RUNNING,
        ),
        (
            "status missing",
            pod("Always", &["a", "b"]),
            vec![running("a")],
            false,
            phase::PENDING,
        ),
        (
            "one waiting",
            pod("Always", &["a", "b"]),
            vec![running("a"), waiting("b")],
            false,
            phase::PENDING,
        ),
        (
            "restarting counts as stopped",
            pod("Always", &["a"]),
            vec![waiting_after("a", 1)],
            false,
            phase::RUNNING,
        ),
        (
            "all exited 0, Always",
            pod("Always", &["a"]),
            vec![terminated("a", 0)],
            false,
            phase::RUNNING,
        ),
        (
            "all exited 0, OnFailure",
            pod("OnFailure", &["a"]),
            vec![terminated("a", 0)],
            false,
            phase::SUCCEEDED,
        ),
        (
            "all exited 0, Never",
            pod("Never", &["a", "b"]),
            vec![terminated("a", 0), terminated("b", 0)],
            false,
            phase::SUCCEEDED,
        ),
        (
            "one failed, Never",
            pod("Never", &["a", "b"]),
            vec![terminated("a", 0), terminated("b", 2)],
            false,
            phase::FAILED,
        ),
        (
            "one failed, OnFailure",
            pod("OnFailure", &["a"]),
            vec![terminated("a", 2)],
            false,
            phase::RUNNING,
        ),
        (
            "mixed running and exited",
            pod("Never", &["a", "b"]),
            vec![running("a"), terminated("b", 1)],
            false,
            phase::RUNNING,
        ),
        (
            "terminal pod, Always, success",
            pod("Always", &["a"]),
            vec![terminated("a", 0)],
            true,
            phase::SUCCEEDED,
        ),
        (
            "terminal pod, Always, failure",
            pod("Always", &["a"]),
            vec![terminated("a", 137)],
            true,
            phase::FAILED,
        ),
        (
            "terminal static pod keeps policy",
            static_pod,
            vec![terminated("a", 0)],
            true,
            phase::RUNNING,
        ),
        (
            "init running",
            init_pod("Always"),
            vec![running("init"), waiting("a")],
            false,
            phase::PENDING,
        ),
        (
            "init failed, Never",
            init_pod("Never"),
            vec![terminated("init", 1), waiting("a")],
            false,
            phase::FAILED,
        ),
        (
            "init failed, retrying",
            init_pod("Always"),
            vec![waiting_after("init", 1), waiting("a")],
            false,
            phase::PENDING,
        ),
        (
            "init done, app running",
            init_pod("Never"),
            vec![terminated("init", 0), running("a")],
            false,
            phase::RUNNING,
        ),
        (
            "sidecar not started yet",
            sidecar_pod("Always"),
            vec![running("side"), waiting("a")],
            false,
            phase::PENDING,
        ),
        (
            "sidecar started, app running",
            sidecar_pod("Never"),
            vec![started("side"), running("a")],
            false,
            phase::RUNNING,
        ),
        (
            "app done, sidecar running",
            sidecar_pod("Never"),
            vec![started("side"), terminated("a", 0)],
            false,
            phase::RUNNING,
        ),
        (
            "app done, sidecar stopped",
            sidecar_pod("Never"),
            vec![terminated("side", 137), terminated("a", 0)],
            false,
            phase::SUCCEEDED,
        ),
        (
            "sidecar restarting after init",
            sidecar_pod("Always"),
            vec![running("side"), running("a")],
            false,
            phase::RUNNING,
        ),
    ];
    for (name, p, statuses, terminal, want) in cases {
        assert_eq!(get_phase(&p, &statuses, terminal), want, "{name}");
    }
}

/// Upstream `TestPodPhaseWithContainerRestartPolicy` and
/// `TestPodPhaseWithContainerRestartPolicyInitContainers` (`failedState`: exit -1), plus the
/// restart rules and the gate turned off.
#[test]
fn phase_with_container_restart_policy() {
    let with = |name: &str, policy: Option<&str>| Container {
        restart_policy: policy.map(Into::into),
        ..container(name)
    };
    let on_42 = |mut c: Container| {
        c.restart_policy_rules = Some(vec![kubelet_container::podutil::restart_rule(
            "Restart",
            "In",
            &[42],
        )]);
        c
    };
    let failed = |name| terminated(name, -1);
    // (name, pod, statuses, phase with the gate on, phase with the gate off)
    let cases: Vec<(&str, ApiPod, Vec<ContainerStatus>, &str, &str)> = vec![
        (
            "container Never failed",
            pod_with("Always", vec![], vec![with("a", Some("Never"))]),
            vec![failed("a")],
            phase::FAILED,
            phase::RUNNING,
        ),
        (
            "container OnFailure failed",
            pod_with("Always", vec![], vec![with("a", Some("OnFailure"))]),
            vec![failed("a")],
            phase::RUNNING,
            phase::RUNNING,
        ),
        (
            "container Always failed",
            pod_with("Always", vec![], vec![with("a", Some("Always"))]),
            vec![failed("a")],
            phase::RUNNING,
            phase::RUNNING,
        ),
        (
            "one restartable container failed",
            pod_with(
                "Never",
                vec![],
                vec![with("a", Some("Always")), with("b", None)],
            ),
            vec![terminated("a", 0), failed("b")],
            phase::RUNNING,
            phase::FAILED,
        ),
        (
            "no restartable container, one failed",
            pod_with(
                "Always",
                vec![],
                vec![with("a", Some("Never")), with("b", Some("OnFailure"))],
            ),
            vec![failed("a"), terminated("b", 0)],
            phase::FAILED,
            phase::RUNNING,
        ),
        (
            "all succeeded",
            pod_with(
                "Always",
                vec![],
                vec![with("a", Some("Never")), with("b", Some("OnFailure"))],
            ),
            vec![terminated("a", 0), terminated("b", 0)],
            phase::SUCCEEDED,
            phase::RUNNING,
        ),
        (
            "rule matches: restarting (waiting after exit 42)",
            pod_with("Never", vec![], vec![on_42(with("a", Some("Never")))]),
            vec![waiting_after("a", 42)],
            phase::RUNNING,
            phase::FAILED,
        ),
        (
            "rule does not match",
            pod_with("Always", vec![], vec![on_42(with("a", Some("Never")))]),
            vec![terminated("a", 1)],
            phase::FAILED,
            phase::RUNNING,
        ),
        (
            "init container Never failed",
            pod_with(
                "Always",
                vec![with("i", Some("Never"))],
                vec![container("a")],
            ),
            vec![failed("i")],
            phase::FAILED,
            phase::PENDING,
        ),
        (
            "init container OnFailure failed",
            pod_with(
                "Never",
                vec![with("i", Some("OnFailure"))],
                vec![container("a")],
            ),
            vec![failed("i")],
            phase::PENDING,
            phase::FAILED,
        ),
        (
            "sidecar failed",
            pod_with(
                "Never",
                vec![with("i", Some("Always"))],
                vec![container("a")],
            ),
            vec![failed("i")],
            phase::PENDING,
            phase::PENDING,
        ),
    ];
    for (name, p, statuses, on, off) in cases {
        assert_eq!(get_phase(&p, &statuses, false), on, "{name}, gate on");
        let _gate = kubelet_container::gates::set_container_restart_rules_during_test(false);
        assert_eq!(get_phase(&p, &statuses, false), off, "{name}, gate off");
    }
}

// ---------- container statuses ----------

fn convert(
    p: &ApiPod,
    status: &PodStatus,
    previous: &[ContainerStatus],
    cache: &ReasonCache,
) -> Vec<ContainerStatus> {
    let spec = p.spec.as_ref().unwrap();
    convert_to_api_container_statuses(&ConvertInput {
        pod: p,
        pod_status: status,
        previous,
        containers: &spec.containers,
        has_init_containers: spec.init_containers.is_some(),
        is_init_container: false,
        reason_cache: cache,
    })
}

type Summary = (String, Option<String>, Option<i32>);

fn state_summary(s: &ContainerStatus) -> Summary {
    let st = s.state.clone().unwrap_or_default();
    match (st.waiting, st.running, st.terminated) {
        (Some(w), _, _) => ("waiting".into(), w.reason, None),
        (_, Some(_), _) => ("running".into(), None, None),
        (_, _, Some(t)) => ("terminated".into(), t.reason, Some(t.exit_code)),
        _ => ("none".into(), None, None),
    }
}

fn fail(kind: SyncErrorKind, msg: &str) -> ReasonCache {
    let cache = ReasonCache::default();
    let mut r = SyncResult::new(SyncAction::StartContainer, "a");
    r.fail(kind, msg);
    let mut result = PodSyncResult::default();
    result.add_sync_result(r);
    cache.update("uid-1", &result);
    cache
}

#[test]
fn container_status_reason_table() {
    let crashed = Status {
        exit_code: 1,
        reason: "Error".into(),
        ..rt("a", "c1", ContainerState::Exited, 0)
    };
    let oom = Status {
        exit_code: 137,
        reason: "OOMKilled".into(),
        ..rt("a", "c1", ContainerState::Exited, 0)
    };
    let w = |r: &str| ("waiting".to_string(), Some(r.to_string()), None);
    let t = |r: &str, code| ("terminated".to_string(), Some(r.to_string()), Some(code));
    let cases: Vec<(&str, ApiPod, Vec<Status>, ReasonCache, Summary)> = vec![
        (
            "never started",
            pod("Always", &["a"]),
            vec![],
            ReasonCache::default(),
            w("ContainerCreating"),
        ),
        (
            "init pending",
            pod_with("Always", vec![container("i")], vec![container("a")]),
            vec![],
            ReasonCache::default(),
            w("PodInitializing"),
        ),
        (
            "running",
            pod("Always", &["a"]),
            vec![rt("a", "c1", ContainerState::Running, 0)],
            ReasonCache::default(),
            ("running".into(), None, None),
        ),
        (
            "created is waiting",
            pod("Always", &["a"]),
            vec![rt("a", "c1", ContainerState::Created, 0)],
            ReasonCache::default(),
            ("waiting".into(), None, None),
        ),
        (
            "exited error",
            pod("Never", &["a"]),
            vec![crashed.clone()],
            ReasonCache::default(),
            t("Error", 1),
        ),
        (
            "oom killed",
            pod("Never", &["a"]),
            vec![oom],
            ReasonCache::default(),
            t("OOMKilled", 137),
        ),
        (
            "completed",
            pod("Never", &["a"]),
            vec![Status {
                reason: "Completed".into(),
                ..rt("a", "c1", ContainerState::Exited, 0)
            }],
            ReasonCache::default(),
            t("Completed", 0),
        ),
        (
            "crash loop",
            pod("Always", &["a"]),
            vec![crashed.clone()],
            fail(SyncErrorKind::CrashLoopBackOff, "back-off 10s"),
            w("CrashLoopBackOff"),
        ),
        (
            "crash loop ignored for Never",
            pod("Never", &["a"]),
            vec![crashed],
            fail(SyncErrorKind::CrashLoopBackOff, "x"),
            t("Error", 1),
        ),
        (
            "image pull error",
            pod("Always", &["a"]),
            vec![],
            fail(SyncErrorKind::ImagePull, "not found"),
            w("ErrImagePull"),
        ),
        (
            "image pull backoff",
            pod("Always", &["a"]),
            vec![],
            fail(SyncErrorKind::ImagePullBackOff, "x"),
            w("ImagePullBackOff"),
        ),
        (
            "create config error",
            pod("Always", &["a"]),
            vec![],
            fail(SyncErrorKind::CreateContainerConfig, "x"),
            w("CreateContainerConfigError"),
        ),
    ];
    for (name, p, containers, cache, want) in cases {
        let out = convert(&p, &runtime_status(containers, true), &[], &cache);
        assert_eq!(out.len(), 1, "{name}");
        assert_eq!(state_summary(&out[0]), want, "{name}");
    }
}

#[test]
fn restarted_container_reports_last_state_and_ids() {
    let p = pod("Always", &["a"]);
    let status = runtime_status(
        vec![
            // The runtime lists newest first; conversion re-sorts by creation anyway.
            Status {
                restart_count: 1,
                ..rt("a", "new", ContainerState::Running, 10)
            },
            Status {
                exit_code: 2,
                restart_count: 0,
                ..rt("a", "old", ContainerState::Exited, 0)
            },
            Status {
                restart_count: 0,
                ..rt("a", "older", ContainerState::Exited, -10)
            },
        ],
        true,
    );
    let cache = fail(
        SyncErrorKind::CrashLoopBackOff,
        "stale entry is ignored while running",
    );
    let out = convert(&p, &status, &[], &cache);
    let s = &out[0];
    assert_eq!(s.restart_count, 1);
    assert_eq!(s.container_id.as_deref(), Some("containerd://new"));
    assert_eq!(s.image_id, "sha256:abc");
    assert_eq!(
        s.state
            .as_ref()
            .unwrap()
            .running
            .as_ref()
            .unwrap()
            .started_at,
        ts(11).map(Time)
    );
    let last = s.last_state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!(
        (last.exit_code, last.container_id.as_deref()),
        (2, Some("containerd://old"))
    );
}

#[test]
fn crash_loop_keeps_termination_as_last_state() {
    let crashed = Status {
        exit_code: 1,
        reason: "Error".into(),
        ..rt("a", "c1", ContainerState::Exited, 0)
    };
    let out = convert(
        &pod("Always", &["a"]),
        &runtime_status(vec![crashed], true),
        &[],
        &fail(SyncErrorKind::CrashLoopBackOff, "back-off 10s restarting"),
    );
    let s = &out[0];
    assert_eq!(
        s.state
            .as_ref()
            .unwrap()
            .waiting
            .as_ref()
            .unwrap()
            .message
            .as_deref(),
        Some("back-off 10s restarting")
    );
    assert_eq!(
        s.last_state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .unwrap()
            .exit_code,
        1
    );
}

#[test]
fn vanished_running_container_is_inferred_terminated() {
    let p = pod("Always", &["a"]);
    let previous = [ContainerStatus {
        restart_count: 4,
        ..running("a")
    }];
    let out = convert(
        &p,
        &runtime_status(vec![], false),
        &previous,
        &ReasonCache::default(),
    );
    let s = &out[0];
    assert_eq!(s.restart_count, 5);
    let last = s.last_state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!(
        (last.exit_code, last.reason.as_deref()),
        (137, Some("ContainerStatusUnknown"))
    );

    let unknown = rt("a", "c1", ContainerState::Unknown, 0);
    let out = convert(
        &p,
        &runtime_status(vec![unknown], false),
        &previous,
        &ReasonCache::default(),
    );
    assert_eq!(
        state_summary(&out[0]),
        (
            "terminated".into(),
            Some("ContainerStatusUnknown".into()),
            Some(137)
        )
    );
}

#[test]
fn statuses_are_sorted_by_name_and_init_by_spec_order() {
    let p = pod_with(
        "Always",
        vec![container("z-init"), container("a-init")],
        vec![container("b"), container("a")],
    );
    let status = runtime_status(vec![rt("z-init", "z", ContainerState::Exited, 0)], true);
    let opts = GenerateOptions {
        resize_conditions: &[],
        old_status: None,
        reason_cache: &ReasonCache::default(),
        probes: &NoProbeResults,
        host_ips: &[],
        pod_is_terminal: false,
    };
    let s = generate_api_pod_status(&p, &status, &opts);
    let names = |l: &Option<Vec<ContainerStatus>>| {
        l.iter()
            .flatten()
            .map(|c| c.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&s.container_statuses), ["a", "b"]);
    assert_eq!(names(&s.init_container_statuses), ["z-init", "a-init"]);
    assert!(
        s.init_container_statuses.as_ref().unwrap()[0].ready,
        "init exited 0 is ready"
    );
}

// ---------- generate ----------

fn cond<'a>(s: &'a ApiPodStatus, t: &str) -> &'a PodCondition {
    s.conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == t)
        .unwrap()
}

fn generate(p: &ApiPod, status: &PodStatus, terminal: bool) -> ApiPodStatus {
    let host = ["10.0.0.1".to_string()];
    let opts = GenerateOptions {
        resize_conditions: &[],
        old_status: None,
        reason_cache: &ReasonCache::default(),
        probes: &NoProbeResults,
        host_ips: &host,
        pod_is_terminal: terminal,
    };
    generate_api_pod_status(p, status, &opts)
}

#[test]
fn running_pod_status() {
    let p = pod("Always", &["a"]);
    let s = generate(
        &p,
        &runtime_status(vec![rt("a", "c1", ContainerState::Running, 0)], true),
        false,
    );
    assert_eq!(s.phase.as_deref(), Some(phase::RUNNING));
    assert_eq!(s.pod_ip.as_deref(), Some("198.18.0.7"));
    assert_eq!(s.host_ip.as_deref(), Some("10.0.0.1"));
    assert_eq!(s.qos_class.as_deref(), Some("BestEffort"));
    assert_eq!(s.observed_generation, Some(3));
    for t in [
        condition::POD_READY_TO_START_CONTAINERS,
        condition::INITIALIZED,
        condition::READY,
        condition::CONTAINERS_READY,
        condition::POD_SCHEDULED,
    ] {
        assert_eq!(cond(&s, t).status, "True", "{t}");
        assert_eq!(cond(&s, t).observed_generation, Some(3), "{t}");
    }
    let c = &s.container_statuses.as_ref().unwrap()[0];
    assert!(c.ready && c.started == Some(true));
}

#[test]
fn pending_pod_without_sandbox() {
    let p = pod("Always", &["a"]);
    let s = generate(&p, &PodStatus::empty("uid-1", "web", "default"), false);
    assert_eq!(s.phase.as_deref(), Some(phase::PENDING));
    assert_eq!(
        cond(&s, condition::POD_READY_TO_START_CONTAINERS).status,
        "False"
    );
    let ready = cond(&s, condition::READY);
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("False", Some("ContainersNotReady"))
    );
    assert_eq!(
        ready.message.as_deref(),
        Some("containers with unready status: [a]")
    );
    assert!(s.pod_ip.is_none());
}

#[test]
fn readiness_probe_without_result_is_not_ready() {
    let mut p = pod("Always", &["a"]);
    p.spec.as_mut().unwrap().containers[0].readiness_probe = Some(Probe::default());
    let s = generate(
        &p,
        &runtime_status(vec![rt("a", "c1", ContainerState::Running, 0)], true),
        false,
    );
    assert_eq!(s.phase.as_deref(), Some(phase::RUNNING));
    assert_eq!(cond(&s, condition::READY).status, "False");

    let ready = FakeProbeResults::with(
        ProbeType::Readiness,
        ContainerId::new("containerd", "c1"),
        ProbeResult::Success,
    );
    let opts = GenerateOptions {
        resize_conditions: &[],
        old_status: None,
        reason_cache: &ReasonCache::default(),
        probes: &ready,
        host_ips: &[],
        pod_is_terminal: false,
    };
    let s = generate_api_pod_status(
        &p,
        &runtime_status(vec![rt("a", "c1", ContainerState::Running, 0)], true),
        &opts,
    );
    assert_eq!(cond(&s, condition::READY).status, "True");
}

#[test]
fn terminal_phase_is_sticky_and_foreign_conditions_kept() {
    let mut p = pod("Always", &["a"]);
    p.status = Some(ApiPodStatus {
        phase: Some(phase::SUCCEEDED.into()),
        reason: Some("Done".into()),
        conditions: Some(vec![
            PodCondition {
                type_: "example.com/gate".into(),
                status: "True".into(),
                ..PodCondition::default()
            },
            PodCondition {
                type_: condition::READY.into(),
                status: "True".into(),
                ..PodCondition::default()
            },
        ]),
        ..ApiPodStatus::default()
    });
    let s = generate(
        &p,
        &runtime_status(vec![rt("a", "c1", ContainerState::Running, 0)], true),
        false,
    );
    assert_eq!(s.phase.as_deref(), Some(phase::SUCCEEDED));
    assert_eq!(s.reason.as_deref(), Some("Done"));
    assert_eq!(cond(&s, "example.com/gate").status, "True");
    assert_eq!(
        s.conditions
            .iter()
            .flatten()
            .filter(|c| c.type_ == condition::READY)
            .count(),
        1
    );
}

#[test]
fn host_network_pod_uses_node_ips() {
    let mut p = pod("Always", &["a"]);
    p.spec.as_mut().unwrap().host_network = Some(true);
    let mut status = runtime_status(vec![rt("a", "c1", ContainerState::Running, 0)], true);
    status.ips.clear();
    status.sandbox_statuses[0].host_network = true;
    status.sandbox_statuses[0].ip.clear();
    let host = ["10.0.0.1".to_string(), "fd00::1".to_string()];
    let opts = GenerateOptions {
        resize_conditions: &[],
        old_status: None,
        reason_cache: &ReasonCache::default(),
        probes: &NoProbeResults,
        host_ips: &host,
        pod_is_terminal: false,
    };
    let s = generate_api_pod_status(&p, &status, &opts);
    assert_eq!(s.pod_ip.as_deref(), Some("10.0.0.1"));
    let ips: Vec<_> = s.pod_ips.unwrap().into_iter().map(|i| i.ip).collect();
    assert_eq!(ips, ["10.0.0.1", "fd00::1"]);
    assert_eq!(s.host_ips.unwrap().len(), 2);
    assert_eq!(
        cond(
            &generate(&p, &status, false),
            condition::POD_READY_TO_START_CONTAINERS
        )
        .status,
        "True"
    );
}

#[test]
fn pod_ips_follow_node_family() {
    let ips = [
        "fd00::7".to_string(),
        "198.18.0.7".to_string(),
        "198.18.0.8".to_string(),
    ];
    assert_eq!(
        sort_pod_ips(&ips, &["10.0.0.1".into()]),
        ["198.18.0.7", "fd00::7"]
    );
    assert_eq!(
        sort_pod_ips(&ips, &["fd00::1".into()]),
        ["fd00::7", "198.18.0.7"]
    );
}

// ---------- status manager ----------

#[tokio::test]
async fn status_manager_keeps_times_and_versions() {
    let clock = FakeClock::new(Timestamp::from_second(1_700_000_000).unwrap());
    let manager = StatusManager::new(Arc::new(clock.clone()));
    let mut changes = manager.subscribe();
    let p = pod("Always", &["a"]);
    let s1 = generate(
        &p,
        &runtime_status(vec![rt("a", "c1", ContainerState::Running, 0)], true),
        false,
    );
    manager.set_pod_status(&p, s1.clone());
    assert!(changes.has_changed().unwrap());
    changes.borrow_and_update();
    let stored = manager.get_pod_status("uid-1").unwrap();
    let start = stored.start_time.clone().unwrap();
    let ready_since = cond(&stored, condition::READY)
        .last_transition_time
        .clone()
        .unwrap();
    assert_eq!(start.0, clock.now());

    clock.step(Duration::from_secs(30));
    manager.set_pod_status(&p, s1);
    assert!(
        !changes.has_changed().unwrap(),
        "same status is not a change"
    );
    assert_eq!(manager.versioned_statuses()["uid-1"].version, 1);

    let s2 = generate(
        &p,
        &runtime_status(vec![rt("a", "c1", ContainerState::Exited, 0)], false),
        false,
    );
    manager.set_pod_status(&p, s2);
    let stored = manager.get_pod_status("uid-1").unwrap();
    assert_eq!(
        stored.start_time.clone().unwrap(),
        start,
        "start time never changes"
    );
    assert_eq!(
        cond(&stored, condition::POD_SCHEDULED)
            .last_transition_time
            .clone()
            .unwrap(),
        ready_since,
        "unchanged condition keeps its time"
    );
    assert_eq!(
        cond(&stored, condition::READY)
            .last_transition_time
            .clone()
            .unwrap()
            .0,
        clock.now()
    );
    assert_eq!(manager.versioned_statuses()["uid-1"].version, 2);
}

#[test]
fn terminate_pod_finalizes_status() {
    let manager = StatusManager::new(Arc::new(FakeClock::default()));
    let p = pod("Always", &["a", "b"]);
    let mut status = generate(
        &p,
        &runtime_status(
            vec![
                rt("a", "c1", ContainerState::Running, 0),
                rt("b", "c2", ContainerState::Exited, 0),
            ],
            true,
        ),
        false,
    );
    // sub-second times are normalized away
    status.start_time = Some(Time(
        Timestamp::from_second(1_700_000_000).unwrap() + jiff::SignedDuration::from_millis(250),
    ));
    manager.set_pod_status(&p, status);
    assert_eq!(
        manager
            .get_pod_status("uid-1")
            .unwrap()
            .start_time
            .unwrap()
            .0
            .subsec_nanosecond(),
        0
    );
    manager.terminate_pod(&p);
    let v = &manager.versioned_statuses()["uid-1"];
    assert!(v.pod_is_finished);
    assert_eq!(v.status.phase.as_deref(), Some(phase::FAILED));
    let a = &v.status.container_statuses.as_ref().unwrap()[0];
    assert_eq!(
        state_summary(a),
        (
            "terminated".into(),
            Some("ContainerStatusUnknown".into()),
            Some(137)
        )
    );
    manager.remove_orphaned_statuses([]);
    assert!(manager.get_pod_status("uid-1").is_none());
}

/// Upstream `TestTerminatePod_DefaultUnknownStatus`: before a pod has initialized, only the
/// init containers that attempted to start (and at least the first) become terminated
/// unknown; the regular containers keep waiting. Afterwards every missing status is a failure.
#[test]
fn terminate_pod_before_initialization_keeps_waiting_containers() {
    let manager = StatusManager::new(Arc::new(FakeClock::default()));
    let mut p = pod_with(
        "Never",
        vec![container("i1"), container("i2"), container("i3")],
        vec![container("a")],
    );
    let status = ApiPodStatus {
        phase: Some(phase::PENDING.into()),
        init_container_statuses: Some(vec![
            terminated("i1", 0),
            waiting_after("i2", 1),
            waiting("i3"),
        ]),
        container_statuses: Some(vec![waiting("a")]),
        ..ApiPodStatus::default()
    };
    p.status = Some(status.clone());
    manager.terminate_pod(&p);
    let s = manager.get_pod_status("uid-1").unwrap();
    let init: Vec<_> = s
        .init_container_statuses
        .as_ref()
        .unwrap()
        .iter()
        .map(state_summary)
        .collect();
    assert_eq!(init[0].0, "terminated");
    assert_eq!(init[0].2, Some(0), "a terminated state is kept");
    assert_eq!(
        init[1],
        (
            "terminated".into(),
            Some("ContainerStatusUnknown".into()),
            Some(137)
        ),
        "it attempted to start"
    );
    assert_eq!(init[2].0, "waiting", "never attempted");
    let regular = &s.container_statuses.as_ref().unwrap()[0];
    assert_eq!(state_summary(regular).0, "waiting", "not initialized");
    assert_eq!(s.phase.as_deref(), Some(phase::FAILED));

    // Once the last init container succeeded, a waiting container is a failure.
    let manager = StatusManager::new(Arc::new(FakeClock::default()));
    p.status = Some(ApiPodStatus {
        init_container_statuses: Some(vec![
            terminated("i1", 0),
            terminated("i2", 0),
            terminated("i3", 0),
        ]),
        ..status
    });
    manager.terminate_pod(&p);
    let s = manager.get_pod_status("uid-1").unwrap();
    let regular = &s.container_statuses.as_ref().unwrap()[0];
    assert_eq!(
        state_summary(regular).1.as_deref(),
        Some("ContainerStatusUnknown")
    );
}

/// Upstream `updateStatusInternal`: a static pod without a cached status starts from its
/// mirror pod's status, so its start time and transition times survive a kubelet restart.
#[test]
fn static_pod_starts_from_its_mirror_pod_status() {
    let clock = FakeClock::new(Timestamp::from_second(1_700_000_000).unwrap());
    let manager = StatusManager::new(Arc::new(clock.clone()));
    let mut p = pod("Always", &["a"]);
    p.metadata.annotations = Some(
        [(
            CONFIG_SOURCE_ANNOTATION_KEY.to_string(),
            FILE_SOURCE.to_string(),
        )]
        .into(),
    );
    let before = Time(Timestamp::from_second(1_600_000_000).unwrap());
    let mirror_status = ApiPodStatus {
        start_time: Some(before.clone()),
        conditions: Some(vec![PodCondition {
            type_: condition::POD_SCHEDULED.into(),
            status: "True".into(),
            last_transition_time: Some(before.clone()),
            ..PodCondition::default()
        }]),
        ..ApiPodStatus::default()
    };
    manager.set_mirror_pod_status_source(Arc::new(move |_| Some(mirror_status.clone())));
    let s = generate(
        &p,
        &runtime_status(vec![rt("a", "c1", ContainerState::Running, 0)], true),
        false,
    );
    manager.set_pod_status(&p, s);
    let stored = manager.get_pod_status("uid-1").unwrap();
    assert_eq!(stored.start_time, Some(before.clone()));
    assert_eq!(
        cond(&stored, condition::POD_SCHEDULED).last_transition_time,
        Some(before)
    );
    assert_eq!(
        cond(&stored, condition::READY).last_transition_time,
        Some(Time(clock.now()))
    );
}

/// The first status with `Ready=True` is the pod startup timeline's `ready` step
/// (`kubelet_container::timeline`); later ones keep its time.
#[test]
fn first_ready_status_is_the_timelines_ready_step() {
    use kubelet_container::timeline::{Step, global};
    let manager = StatusManager::new(Arc::new(FakeClock::default()));
    let mut p = pod("Always", &["a"]);
    let uid = "uid-status-timeline";
    p.metadata.uid = Some(uid.into());
    let status = |ready: &str| ApiPodStatus {
        conditions: Some(vec![PodCondition {
            type_: condition::READY.into(),
            status: ready.into(),
            ..PodCondition::default()
        }]),
        ..ApiPodStatus::default()
    };
    global().seen(uid);
    manager.set_pod_status(&p, status("False"));
    assert!(global().get(uid).unwrap().first(Step::Ready).is_none());
    manager.set_pod_status(&p, status("True"));
    let ready = global().get(uid).unwrap().first(Step::Ready).cloned();
    assert!(ready.is_some());
    manager.set_pod_status(&p, status("False"));
    manager.set_pod_status(&p, status("True"));
    let t = global().get(uid).unwrap();
    global().remove(uid);
    assert_eq!(t.steps.iter().filter(|s| s.step == Step::Ready).count(), 1);
    assert_eq!(t.first(Step::Ready).cloned(), ready);
}

#[test]
fn container_user_is_reported_as_the_runtime_gives_it() {
    let p = pod("Always", &["a", "b"]);
    let mut with_user = rt("a", "c1", ContainerState::Running, 0);
    with_user.user = Some(kubelet_container::ContainerUser {
        linux: Some(kubelet_container::LinuxContainerUser {
            uid: 1000,
            gid: 3000,
            supplemental_groups: vec![3000, 4000],
        }),
    });
    let mut no_groups = rt("b", "c2", ContainerState::Running, 0);
    no_groups.user = Some(kubelet_container::ContainerUser {
        linux: Some(kubelet_container::LinuxContainerUser::default()),
    });
    let out = convert(
        &p,
        &runtime_status(vec![with_user, no_groups], true),
        &[],
        &ReasonCache::new(10),
    );
    let json = serde_json::to_value(&out).unwrap();
    assert_eq!(
        json[0]["user"],
        serde_json::json!({"linux": {"uid": 1000, "gid": 3000, "supplementalGroups": [3000, 4000]}})
    );
    assert_eq!(
        json[1]["user"],
        serde_json::json!({"linux": {"uid": 0, "gid": 0}})
    );

    // A runtime that does not report it (containerd 1.6): no `user`.
    let out = convert(
        &p,
        &runtime_status(vec![rt("a", "c1", ContainerState::Running, 0)], true),
        &[],
        &ReasonCache::new(10),
    );
    assert!(out.iter().all(|s| s.user.is_none()));
}
