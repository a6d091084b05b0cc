#![allow(clippy::unwrap_used)]
use super::*;
use k8s_openapi::api::core::v1::{EphemeralContainer, PodSpec, Probe};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_container::{FakeProbeResults, NoProbeResults, SandboxState, SandboxStatus};

/// `computePodActions` for pods whose containers have no resources (nothing to resize).
fn actions(p: &Pod, s: &PodStatus, probes: &dyn ProbeResults) -> PodActions {
    compute_pod_actions(p, s, probes, &ActuatedState::default())
}

fn c(name: &str) -> Container {
    Container {
        name: name.into(),
        image: Some("busybox".into()),
        ..Container::default()
    }
}

fn sidecar(name: &str) -> Container {
    Container {
        restart_policy: Some("Always".into()),
        ..c(name)
    }
}

fn pod(policy: &str, inits: Vec<Container>, regular: Vec<Container>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            namespace: Some("ns".into()),
            uid: Some("u".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some(policy.into()),
            init_containers: (!inits.is_empty()).then_some(inits),
            containers: regular,
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn ready_sandbox() -> SandboxStatus {
    SandboxStatus {
        id: "sb1".into(),
        state: SandboxState::Ready,
        ip: "198.18.0.5".into(),
        ..Default::default()
    }
}

/// A status for container `spec` in `state`, with exit code and an ID derived from the name.
fn st(spec: &Container, state: ContainerState, exit_code: i32) -> Status {
    Status {
        id: ContainerId::new("containerd", format!("id-{}", spec.name)),
        name: spec.name.clone(),
        state,
        exit_code,
        hash: hash_container(spec),
        ..Status::default()
    }
}

fn status(sandboxes: Vec<SandboxStatus>, containers: Vec<Status>) -> PodStatus {
    PodStatus {
        sandbox_statuses: sandboxes,
        container_statuses: containers,
        ..PodStatus::empty("u", "p", "ns")
    }
}

fn killed(a: &PodActions) -> Vec<String> {
    a.containers_to_kill
        .values()
        .map(|k| k.name.clone())
        .collect()
}

#[test]
fn new_pod_creates_sandbox_and_starts_all() {
    let p = pod("Always", vec![], vec![c("a"), c("b")]);
    let a = actions(&p, &status(vec![], vec![]), &NoProbeResults);
    assert!(a.create_sandbox && a.kill_pod);
    assert_eq!((a.attempt, a.sandbox_id.as_str()), (0, ""));
    assert_eq!(a.containers_to_start, vec![0, 1]);
}

#[test]
fn steady_state_does_nothing() {
    let (ca, cb) = (c("a"), c("b"));
    let p = pod("Always", vec![], vec![ca.clone(), cb.clone()]);
    let s = status(
        vec![ready_sandbox()],
        vec![
            st(&ca, ContainerState::Running, 0),
            st(&cb, ContainerState::Running, 0),
        ],
    );
    let a = actions(&p, &s, &NoProbeResults);
    assert_eq!(
        a,
        PodActions {
            sandbox_id: "sb1".into(),
            ..PodActions::default()
        }
    );
}

#[test]
fn restart_policies_for_exited_containers() {
    let ca = c("a");
    // (policy, exit code) -> (start?, kill pod?)
    let cases = [
        ("Always", 0, true, false),
        ("Always", 1, true, false),
        ("OnFailure", 1, true, false),
        ("OnFailure", 0, false, true),
        ("Never", 1, false, true),
        ("Never", 0, false, true),
    ];
    for (policy, code, start, kill_pod) in cases {
        let p = pod(policy, vec![], vec![ca.clone()]);
        let s = status(
            vec![ready_sandbox()],
            vec![st(&ca, ContainerState::Exited, code)],
        );
        let a = actions(&p, &s, &NoProbeResults);
        assert_eq!(
            !a.containers_to_start.is_empty(),
            start,
            "{policy} exit {code}"
        );
        assert_eq!(a.kill_pod, kill_pod, "{policy} exit {code}");
        assert!(!a.create_sandbox);
    }
}

#[test]
fn changed_spec_and_failed_probes_kill_running_containers() {
    let ca = c("a");
    let mut changed = ca.clone();
    changed.image = Some("busybox:2".into());
    let p = pod("Always", vec![], vec![changed.clone()]);
    let s = status(
        vec![ready_sandbox()],
        vec![st(&ca, ContainerState::Running, 0)],
    );
    let a = actions(&p, &s, &NoProbeResults);
    assert_eq!(
        (killed(&a), a.containers_to_start.clone()),
        (vec!["a".to_string()], vec![0])
    );
    assert!(
        a.containers_to_kill
            .values()
            .all(|k| k.message.contains("definition changed, will be restarted"))
    );

    for (policy, restarts) in [("Always", true), ("Never", false)] {
        let p = pod(policy, vec![], vec![ca.clone()]);
        let s = status(
            vec![ready_sandbox()],
            vec![st(&ca, ContainerState::Running, 0)],
        );
        let probes = FakeProbeResults::with(
            ProbeType::Liveness,
            ContainerId::new("containerd", "id-a"),
            ProbeResult::Failure,
        );
        let a = actions(&p, &s, &probes);
        assert_eq!(killed(&a), vec!["a"]);
        assert_eq!(
            a.containers_to_kill.values().next().unwrap().reason,
            KillReason::LivenessProbe
        );
        assert_eq!(!a.containers_to_start.is_empty(), restarts, "{policy}");
        assert_eq!(a.kill_pod, !restarts, "{policy}");
    }
}

#[test]
fn unknown_containers_are_killed_before_restart() {
    let ca = c("a");
    let p = pod("Always", vec![], vec![ca.clone()]);
    let s = status(
        vec![ready_sandbox()],
        vec![st(&ca, ContainerState::Unknown, 0)],
    );
    let a = actions(&p, &s, &NoProbeResults);
    assert_eq!(
        (killed(&a), a.containers_to_start),
        (vec!["a".to_string()], vec![0])
    );
}

#[test]
fn sandbox_changes() {
    let ca = c("a");
    let p = pod("Always", vec![], vec![ca.clone()]);
    let dead = SandboxStatus {
        state: SandboxState::NotReady,
        attempt: 2,
        ..ready_sandbox()
    };
    let s = status(vec![dead.clone()], vec![st(&ca, ContainerState::Exited, 0)]);
    let a = actions(&p, &s, &NoProbeResults);
    assert!(a.create_sandbox && a.kill_pod);
    assert_eq!(
        (
            a.attempt,
            a.sandbox_id.as_str(),
            a.containers_to_start.clone()
        ),
        (3, "sb1", vec![0])
    );

    // Never: everything already ran, so no new sandbox; just make sure it is dead.
    let p = pod("Never", vec![], vec![ca.clone()]);
    let a = actions(&p, &s, &NoProbeResults);
    assert!(!a.create_sandbox && a.kill_pod);

    // A sandbox without an IP is replaced; so is one whose network mode differs.
    let no_ip = SandboxStatus {
        ip: String::new(),
        ..ready_sandbox()
    };
    assert_eq!(
        pod_sandbox_changed(&p, &status(vec![no_ip], vec![])),
        (true, 1, "sb1".to_string())
    );
    let host = SandboxStatus {
        host_network: true,
        ..ready_sandbox()
    };
    assert_eq!(
        pod_sandbox_changed(&p, &status(vec![host], vec![])),
        (true, 1, String::new())
    );
    let two = vec![
        ready_sandbox(),
        SandboxStatus {
            id: "sb0".into(),
            ..ready_sandbox()
        },
    ];
    assert!(pod_sandbox_changed(&p, &status(two, vec![])).0);
}

#[test]
fn init_containers_run_in_order() {
    let (i0, i1, ca) = (c("i0"), c("i1"), c("a"));
    let p = pod("Always", vec![i0.clone(), i1.clone()], vec![ca.clone()]);
    // New sandbox: only the first init container.
    let a = actions(&p, &status(vec![], vec![]), &NoProbeResults);
    assert_eq!(
        (
            a.init_containers_to_start.clone(),
            a.containers_to_start.clone()
        ),
        (vec![0], vec![])
    );

    let sb = || vec![ready_sandbox()];
    let cases: Vec<(Vec<Status>, Vec<usize>, Vec<usize>)> = vec![
        (vec![], vec![0], vec![]),
        (vec![st(&i0, ContainerState::Running, 0)], vec![], vec![]),
        (vec![st(&i0, ContainerState::Exited, 0)], vec![1], vec![]),
        (vec![st(&i0, ContainerState::Exited, 1)], vec![0], vec![]),
        (
            vec![
                st(&i1, ContainerState::Exited, 0),
                st(&i0, ContainerState::Exited, 0),
            ],
            vec![],
            vec![0],
        ),
        // Init containers garbage-collected but the app already ran: no re-init.
        (vec![st(&ca, ContainerState::Running, 0)], vec![], vec![]),
    ];
    for (statuses, inits, regular) in cases {
        let a = actions(&p, &status(sb(), statuses.clone()), &NoProbeResults);
        assert_eq!(a.init_containers_to_start, inits, "{statuses:?}");
        assert_eq!(a.containers_to_start, regular, "{statuses:?}");
        assert!(!a.kill_pod, "{statuses:?}");
    }

    // A failed init container with restartPolicy Never fails the pod.
    let p = pod("Never", vec![i0.clone(), i1], vec![ca]);
    let a = actions(
        &p,
        &status(sb(), vec![st(&i0, ContainerState::Exited, 1)]),
        &NoProbeResults,
    );
    assert!(a.kill_pod);
    assert!(a.init_containers_to_start.is_empty());
}

#[test]
fn sidecars_start_next_and_are_restarted() {
    let (side, i1, ca) = (sidecar("side"), c("i1"), c("a"));
    let p = pod("Never", vec![side.clone(), i1.clone()], vec![ca.clone()]);
    let sb = || vec![ready_sandbox()];
    // Running sidecar lets the next init container start.
    let a = actions(
        &p,
        &status(sb(), vec![st(&side, ContainerState::Running, 0)]),
        &NoProbeResults,
    );
    assert_eq!(a.init_containers_to_start, vec![1]);

    // With a startup probe, wait for it to succeed.
    let mut probed = side.clone();
    probed.startup_probe = Some(Probe::default());
    let p2 = pod("Never", vec![probed.clone(), i1.clone()], vec![ca.clone()]);
    let a = actions(
        &p2,
        &status(sb(), vec![st(&probed, ContainerState::Running, 0)]),
        &NoProbeResults,
    );
    assert!(a.init_containers_to_start.is_empty());
    let probes = FakeProbeResults::with(
        ProbeType::Startup,
        ContainerId::new("containerd", "id-side"),
        ProbeResult::Success,
    );
    let a = actions(
        &p2,
        &status(sb(), vec![st(&probed, ContainerState::Running, 0)]),
        &probes,
    );
    assert_eq!(a.init_containers_to_start, vec![1]);

    // Initialized pod: an exited sidecar restarts even with restartPolicy Never,
    // while the app keeps running.
    let s = status(
        sb(),
        vec![
            st(&ca, ContainerState::Running, 0),
            st(&i1, ContainerState::Exited, 0),
            st(&side, ContainerState::Exited, 1),
        ],
    );
    let a = actions(&p, &s, &NoProbeResults);
    assert_eq!(
        (
            a.init_containers_to_start.clone(),
            a.containers_to_start.clone()
        ),
        (vec![0], vec![])
    );
    assert!(!a.kill_pod);

    // When the app is done, the sidecar does not keep the pod alive.
    let s = status(
        sb(),
        vec![
            st(&ca, ContainerState::Exited, 0),
            st(&i1, ContainerState::Exited, 0),
            st(&side, ContainerState::Running, 0),
        ],
    );
    let a = actions(&p, &s, &NoProbeResults);
    assert!(a.kill_pod);
    assert!(a.init_containers_to_start.is_empty());
}

#[test]
fn ephemeral_containers_start_once() {
    let ca = c("a");
    let mut p = pod("Always", vec![], vec![ca.clone()]);
    if let Some(s) = p.spec.as_mut() {
        s.ephemeral_containers = Some(vec![
            EphemeralContainer {
                name: "debug".into(),
                ..Default::default()
            },
            EphemeralContainer {
                name: "done".into(),
                ..Default::default()
            },
        ]);
    }
    let done = Status {
        name: "done".into(),
        state: ContainerState::Exited,
        ..Status::default()
    };
    let s = status(
        vec![ready_sandbox()],
        vec![st(&ca, ContainerState::Running, 0), done],
    );
    assert_eq!(
        actions(&p, &s, &NoProbeResults).ephemeral_containers_to_start,
        vec![0]
    );
}

fn with_policy(mut c: Container, policy: &str) -> Container {
    c.restart_policy = Some(policy.into());
    c
}

fn restart_on(mut c: Container, codes: &[i32]) -> Container {
    c.restart_policy_rules = Some(vec![kubelet_container::podutil::restart_rule(
        "Restart", "In", codes,
    )]);
    c
}

/// Upstream `TestComputePodActionsWithContainerRestartRules`: three containers, the first
/// two exited with 0 and 111 (the third running), container-level policies.
#[test]
fn container_restart_rules_for_regular_containers() {
    // (pod policy, container policy of a and b, containers to start)
    let cases: [(&str, &str, &[usize]); 3] = [
        ("Never", "Always", &[0, 1]),
        ("Never", "OnFailure", &[1]),
        ("Always", "Never", &[]),
    ];
    for gate in [true, false] {
        let _gate = gates::set_container_restart_rules_during_test(gate);
        for (pod_policy, policy, want) in cases {
            let (ca, cb, cc) = (
                with_policy(c("a"), policy),
                with_policy(c("b"), policy),
                c("c"),
            );
            let p = pod(pod_policy, vec![], vec![ca.clone(), cb.clone(), cc.clone()]);
            let s = status(
                vec![ready_sandbox()],
                vec![
                    st(&ca, ContainerState::Exited, 0),
                    st(&cb, ContainerState::Exited, 111),
                    st(&cc, ContainerState::Running, 0),
                ],
            );
            let a = actions(&p, &s, &NoProbeResults);
            // Gate off: the pod's policy decides (Never: none, Always: both).
            let off: &[usize] = if pod_policy == "Always" { &[0, 1] } else { &[] };
            let want = if gate { want } else { off };
            assert_eq!(
                a.containers_to_start, want,
                "gate {gate} {pod_policy}/{policy}"
            );
            assert!(!a.kill_pod && a.containers_to_kill.is_empty());
        }
    }
}

#[test]
fn container_restart_rules_created_container_and_exit_code_rules() {
    let (ca, cb) = (
        with_policy(c("a"), "OnFailure"),
        with_policy(c("b"), "OnFailure"),
    );
    let p = pod("Never", vec![], vec![ca.clone(), cb.clone()]);
    let s = status(
        vec![ready_sandbox()],
        vec![
            st(&ca, ContainerState::Exited, 0),
            st(&cb, ContainerState::Created, 0),
        ],
    );
    assert_eq!(
        actions(&p, &s, &NoProbeResults).containers_to_start,
        vec![1]
    );

    // Restart on 42 only, otherwise Never.
    let cr = restart_on(with_policy(c("r"), "Never"), &[42]);
    let p = pod("Always", vec![], vec![cr.clone()]);
    for (code, start) in [(42, true), (1, false), (0, false)] {
        let s = status(
            vec![ready_sandbox()],
            vec![st(&cr, ContainerState::Exited, code)],
        );
        let a = actions(&p, &s, &NoProbeResults);
        assert_eq!(!a.containers_to_start.is_empty(), start, "exit {code}");
        assert_eq!(a.kill_pod, !start, "exit {code}");
    }
}

/// A running container failing its liveness probe is restarted by its container-level
/// policy (the rules are not evaluated while it runs).
#[test]
fn container_restart_rules_probe_failure_uses_container_policy() {
    let ca = restart_on(with_policy(c("a"), "Never"), &[42]);
    let cb = with_policy(c("b"), "Always");
    let p = pod("Always", vec![], vec![ca.clone(), cb.clone()]);
    let (sa, sb) = (
        st(&ca, ContainerState::Running, 0),
        st(&cb, ContainerState::Running, 0),
    );
    let probes = FakeProbeResults::with(ProbeType::Liveness, sa.id.clone(), ProbeResult::Failure);
    let s = status(vec![ready_sandbox()], vec![sa, sb]);
    let a = actions(&p, &s, &probes);
    assert_eq!(killed(&a), vec!["a".to_string()]);
    assert!(a.containers_to_start.is_empty());
    let p = pod("Never", vec![], vec![ca.clone(), cb.clone()]);
    let _gate = gates::set_container_restart_rules_during_test(true);
    let cb_probed = st(&cb, ContainerState::Running, 0);
    let probes = FakeProbeResults::with(
        ProbeType::Liveness,
        cb_probed.id.clone(),
        ProbeResult::Failure,
    );
    let s = status(
        vec![ready_sandbox()],
        vec![st(&ca, ContainerState::Running, 0), cb_probed],
    );
    assert_eq!(actions(&p, &s, &probes).containers_to_start, vec![1]);
}

/// Upstream "Kill pod and recreate all containers (except for the succeeded one) if the pod
/// sandbox is dead": a container-level OnFailure that succeeded is not started again.
#[test]
fn container_restart_rules_sandbox_recreation_skips_succeeded_on_failure() {
    let (ca, cb, cc) = (c("a"), with_policy(c("b"), "OnFailure"), c("c"));
    let p = pod("Always", vec![], vec![ca.clone(), cb.clone(), cc.clone()]);
    let dead = SandboxStatus {
        state: SandboxState::NotReady,
        ..ready_sandbox()
    };
    let s = status(
        vec![dead],
        vec![
            st(&ca, ContainerState::Running, 0),
            st(&cb, ContainerState::Exited, 0),
            st(&cc, ContainerState::Running, 0),
        ],
    );
    let a = actions(&p, &s, &NoProbeResults);
    assert!(a.create_sandbox && a.kill_pod);
    assert_eq!((a.attempt, a.containers_to_start), (1, vec![0, 2]));
    let _gate = gates::set_container_restart_rules_during_test(false);
    assert_eq!(
        actions(&p, &s, &NoProbeResults).containers_to_start,
        vec![0, 1, 2]
    );
}

/// A failed (non-sidecar) init container is restarted by its own rules and policy, not the
/// pod's: with the gate off the pod's policy decides.
#[test]
fn container_restart_rules_for_init_containers() {
    let init = restart_on(with_policy(c("init"), "Never"), &[42]);
    let app = c("app");
    for (pod_policy, code, gate, restart) in [
        ("Never", 42, true, true),
        ("Never", 1, true, false),
        ("Always", 1, true, false),
        ("Never", 42, false, false),
        ("Always", 1, false, true),
    ] {
        let _gate = gates::set_container_restart_rules_during_test(gate);
        let p = pod(pod_policy, vec![init.clone()], vec![app.clone()]);
        let s = status(
            vec![ready_sandbox()],
            vec![st(&init, ContainerState::Exited, code)],
        );
        let a = actions(&p, &s, &NoProbeResults);
        let want: &[usize] = if restart { &[0] } else { &[] };
        assert_eq!(
            a.init_containers_to_start, want,
            "{pod_policy} {code} gate {gate}"
        );
        assert_eq!(a.kill_pod, !restart, "{pod_policy} {code} gate {gate}");
    }
    // Unknown state: only the container-level policy (no exit code for the rules).
    let init = with_policy(c("init"), "OnFailure");
    let p = pod("Never", vec![init.clone()], vec![app.clone()]);
    let s = status(
        vec![ready_sandbox()],
        vec![st(&init, ContainerState::Unknown, 0)],
    );
    let a = actions(&p, &s, &NoProbeResults);
    assert_eq!(
        (a.kill_pod, &a.init_containers_to_start[..]),
        (false, &[0][..])
    );
    assert_eq!(killed(&a), vec!["init".to_string()]);
}
