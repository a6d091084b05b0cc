#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStatus, ExecAction, PodSpec, Probe,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubelet_container::{FakeClock, FakeRecorder, ProbeResult, ProbeResults};

use super::*;
use crate::probe::exec::RunInContainerError;

#[derive(Default)]
struct FakeStatus(Mutex<HashMap<String, ApiPodStatus>>);

impl PodStatusProvider for FakeStatus {
    fn get_pod_status(&self, uid: &str) -> Option<ApiPodStatus> {
        self.0.lock().unwrap().get(uid).cloned()
    }
}

/// Exit code per command (first word), and how many times each ran.
#[derive(Default)]
struct FakeRunner {
    exit: Mutex<HashMap<String, i32>>,
    calls: Mutex<HashMap<String, usize>>,
    total: AtomicUsize,
}

impl FakeRunner {
    fn set(&self, cmd: &str, code: i32) {
        self.exit.lock().unwrap().insert(cmd.into(), code);
    }
    fn calls(&self, cmd: &str) -> usize {
        self.calls.lock().unwrap().get(cmd).copied().unwrap_or(0)
    }
}

#[async_trait]
impl CommandRunner for FakeRunner {
    async fn run_in_container(
        &self,
        _: &ContainerId,
        cmd: &[String],
        _: std::time::Duration,
    ) -> Result<Vec<u8>, RunInContainerError> {
        let name = cmd[0].clone();
        *self.calls.lock().unwrap().entry(name.clone()).or_default() += 1;
        self.total.fetch_add(1, Ordering::Relaxed);
        match self.exit.lock().unwrap().get(&name).copied().unwrap_or(0) {
            0 => Ok(b"ok".to_vec()),
            code => Err(RunInContainerError::Exit {
                cmd: name,
                code,
                output: b"boom".to_vec(),
            }),
        }
    }
}

fn exec_probe(cmd: &str, period: i32, failure: i32) -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(vec![cmd.into()]),
        }),
        period_seconds: Some(period),
        failure_threshold: Some(failure),
        success_threshold: Some(1),
        timeout_seconds: Some(1),
        ..Probe::default()
    }
}

struct Env {
    manager: ProbeManager,
    status: Arc<FakeStatus>,
    runner: Arc<FakeRunner>,
    recorder: Arc<FakeRecorder>,
    results: Arc<ProberResults>,
    updates: tokio::sync::mpsc::UnboundedReceiver<crate::results::Update>,
}

fn env() -> Env {
    let status = Arc::new(FakeStatus::default());
    let runner = Arc::new(FakeRunner::default());
    let recorder = Arc::new(FakeRecorder::new());
    let (results, updates) = ProberResults::new();
    let manager = ProbeManager::new(ProbeManagerParts {
        status: status.clone(),
        results: results.clone(),
        runner: runner.clone(),
        http: HttpProber::new().unwrap(),
        recorder: recorder.clone(),
        clock: Arc::new(FakeClock::new(jiff::Timestamp::now())),
        change_container_status_on_kubelet_restart: false,
        shutdown: CancellationToken::new(),
    });
    Env {
        manager,
        status,
        runner,
        recorder,
        results,
        updates,
    }
}

fn pod(container: Container) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            namespace: Some("ns".into()),
            uid: Some("uid1".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![container],
            ..PodSpec::default()
        }),
        ..Pod::default()
    })
}

fn running(id: &str, started: bool) -> ApiPodStatus {
    ApiPodStatus {
        phase: Some("Running".into()),
        pod_ip: Some("127.0.0.1".into()),
        container_statuses: Some(vec![ContainerStatus {
            name: "c".into(),
            container_id: Some(format!("containerd://{id}")),
            started: Some(started),
            state: Some(ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(Time(jiff::Timestamp::now())),
                }),
                ..ContainerState::default()
            }),
            ..ContainerStatus::default()
        }]),
        ..ApiPodStatus::default()
    }
}

async fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + TEST_WAIT * 120;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn cid(id: &str) -> ContainerId {
    ContainerId::new("containerd", id)
}

#[tokio::test(start_paused = true)]
async fn liveness_failure_after_threshold_holds_until_a_new_container() {
    let mut e = env();
    e.runner.set("live", 1);
    let c = Container {
        name: "c".into(),
        liveness_probe: Some(exec_probe("live", 1, 2)),
        ..Container::default()
    };
    e.status
        .0
        .lock()
        .unwrap()
        .insert("uid1".into(), running("a", true));
    e.manager.add_pod(&pod(c));
    assert_eq!(e.manager.worker_count(), 1);
    let results = e.results.clone();
    wait_until("liveness failure", || {
        results.get(ProbeType::Liveness, &cid("a")) == Some(ProbeResult::Failure)
    })
    .await;
    assert_eq!(e.runner.calls("live"), 2, "failureThreshold 2");
    // Initial value, then the failure: both are updates for the sync loop.
    let first = e.updates.recv().await.unwrap();
    assert_eq!(first.result, ProbeResult::Success);
    let second = e.updates.recv().await.unwrap();
    assert_eq!(
        (second.probe_type, second.result, second.pod_uid.as_str()),
        (ProbeType::Liveness, ProbeResult::Failure, "uid1")
    );
    let events = e.recorder.events();
    assert_eq!(events[0].reason, "Unhealthy");
    assert_eq!(events[0].message, "Liveness probe failed: boom");
    assert_eq!(
        events[0].object.field_path.as_deref(),
        Some("spec.containers{c}")
    );
    // On hold: no more probes of container a.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(e.runner.calls("live"), 2);
    // The restarted container starts from Success and is probed again.
    e.runner.set("live", 0);
    e.status
        .0
        .lock()
        .unwrap()
        .insert("uid1".into(), running("b", true));
    wait_until("new container probed", || e.runner.calls("live") > 2).await;
    assert_eq!(e.results.get(ProbeType::Liveness, &cid("a")), None);
    assert_eq!(
        e.results.get(ProbeType::Liveness, &cid("b")),
        Some(ProbeResult::Success)
    );
    let m = e.manager.clone();
    e.manager.cleanup_pods(&HashSet::from(["uid1".to_string()]));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(m.worker_count(), 1, "a desired pod keeps its workers");
    e.manager.cleanup_pods(&HashSet::new());
    wait_until("worker gone", || m.worker_count() == 0).await;
    assert_eq!(e.results.get(ProbeType::Liveness, &cid("b")), None);
}

#[tokio::test(start_paused = true)]
async fn startup_gates_readiness_and_readiness_flips_both_ways() {
    let e = env();
    let c = Container {
        name: "c".into(),
        startup_probe: Some(exec_probe("start", 1, 3)),
        readiness_probe: Some(exec_probe("ready", 1, 1)),
        ..Container::default()
    };
    let p = pod(c);
    e.status
        .0
        .lock()
        .unwrap()
        .insert("uid1".into(), running("a", false));
    e.manager.add_pod(&p);
    assert_eq!(e.manager.worker_count(), 2);
    e.manager.add_pod(&p);
    assert_eq!(e.manager.worker_count(), 2, "AddPod is idempotent");
    let results = e.results.clone();
    wait_until("started", || {
        results.get(ProbeType::Startup, &cid("a")) == Some(ProbeResult::Success)
    })
    .await;
    wait_until("readiness starts as Failure", || {
        results.get(ProbeType::Readiness, &cid("a")) == Some(ProbeResult::Failure)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(e.runner.calls("ready"), 0, "readiness waits for the start");
    // Startup is on hold after its result; the status now says started.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let startup_calls = e.runner.calls("start");
    e.status
        .0
        .lock()
        .unwrap()
        .insert("uid1".into(), running("a", true));
    wait_until("ready", || {
        results.get(ProbeType::Readiness, &cid("a")) == Some(ProbeResult::Success)
    })
    .await;
    e.runner.set("ready", 1);
    wait_until("not ready", || {
        results.get(ProbeType::Readiness, &cid("a")) == Some(ProbeResult::Failure)
    })
    .await;
    assert!(
        e.recorder
            .events()
            .iter()
            .any(|ev| ev.message == "Readiness probe failed: boom")
    );
    e.runner.set("ready", 0);
    wait_until("ready again", || {
        results.get(ProbeType::Readiness, &cid("a")) == Some(ProbeResult::Success)
    })
    .await;
    assert_eq!(
        e.runner.calls("start"),
        startup_calls,
        "startup stays on hold"
    );
    e.manager.remove_pod(&p);
    let m = e.manager.clone();
    wait_until("workers gone", || m.worker_count() == 0).await;
}

#[tokio::test(start_paused = true)]
async fn update_pod_status_triggers_an_unready_readiness_probe_at_once() {
    let e = env();
    let c = Container {
        name: "c".into(),
        // A long period: only the trigger can make it probe twice soon.
        readiness_probe: Some(exec_probe("ready", 300, 1)),
        ..Container::default()
    };
    let p = pod(c);
    e.status
        .0
        .lock()
        .unwrap()
        .insert("uid1".into(), running("a", true));
    e.runner.set("ready", 1);
    e.manager.add_pod(&p);
    wait_until("first probe", || e.runner.calls("ready") == 1).await;
    e.runner.set("ready", 0);
    e.manager.update_pod_status(&p, &running("a", true)).fire();
    wait_until("triggered probe", || e.runner.calls("ready") == 2).await;
    assert_eq!(
        e.results.get(ProbeType::Readiness, &cid("a")),
        Some(ProbeResult::Success)
    );
    // A terminal pod ends its workers.
    let mut done = running("a", true);
    done.phase = Some("Succeeded".into());
    e.status
        .0
        .lock()
        .unwrap()
        .insert("uid1".into(), done.clone());
    e.manager.update_pod_status(&p, &running("a", true)).fire();
    let m = e.manager.clone();
    wait_until("worker exits", || m.worker_count() == 0).await;
}

#[tokio::test(start_paused = true)]
async fn initial_delay_and_deletion_are_respected() {
    let e = env();
    let mut probe = exec_probe("live", 1, 1);
    probe.initial_delay_seconds = Some(30);
    let c = Container {
        name: "c".into(),
        liveness_probe: Some(probe),
        ..Container::default()
    };
    e.status
        .0
        .lock()
        .unwrap()
        .insert("uid1".into(), running("a", true));
    e.manager.add_pod(&pod(c.clone()));
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        e.runner.calls("live"),
        0,
        "within initialDelaySeconds (fake clock)"
    );
    e.manager.remove_pod(&pod(c.clone()));
    let m = e.manager.clone();
    wait_until("stopped", || m.worker_count() == 0).await;
    // A pod being deleted: liveness is forced to Success and the worker ends.
    let mut deleting = (*pod(c)).clone();
    deleting.metadata.uid = Some("uid2".into());
    deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
    e.status
        .0
        .lock()
        .unwrap()
        .insert("uid2".into(), running("d", true));
    e.manager.add_pod(&Arc::new(deleting));
    wait_until("deleting worker exits", || m.worker_count() == 0).await;
    assert_eq!(e.runner.total.load(Ordering::Relaxed), 0);
}

fn terminated(id: &str, exit_code: i32) -> ApiPodStatus {
    let mut s = running(id, true);
    let cs = &mut s.container_statuses.as_mut().unwrap()[0];
    cs.state = Some(ContainerState {
        terminated: Some(k8s_openapi::api::core::v1::ContainerStateTerminated {
            exit_code,
            container_id: cs.container_id.clone(),
            ..Default::default()
        }),
        ..ContainerState::default()
    });
    s
}

/// Upstream `doProbe` with `ContainerRestartRules`: the worker of an exited container keeps
/// running while the container's rules and policy will restart it, and stops otherwise
/// (with the gate off, the pod's `Never` policy stops it).
#[tokio::test(start_paused = true)]
async fn exited_container_keeps_its_worker_while_its_restart_rules_restart_it() {
    for (policy, exit_code, gate, keeps) in [
        ("Always", 1, true, true),
        ("Never", 42, true, true),
        ("Never", 1, true, false),
        ("Always", 1, false, false),
    ] {
        let _gate = kubelet_container::gates::set_container_restart_rules_during_test(gate);
        let e = env();
        let c = Container {
            name: "c".into(),
            liveness_probe: Some(exec_probe("live", 1, 3)),
            restart_policy: Some(policy.into()),
            restart_policy_rules: Some(vec![kubelet_container::podutil::restart_rule(
                "Restart",
                "In",
                &[42],
            )]),
            ..Container::default()
        };
        let mut p = (*pod(c)).clone();
        p.spec.as_mut().unwrap().restart_policy = Some("Never".into());
        let status = |s| e.status.0.lock().unwrap().insert("uid1".into(), s);
        status(running("a", true));
        e.manager.add_pod(&p);
        wait_until("first probe", || e.runner.calls("live") > 0).await;
        status(terminated("a", exit_code));
        tokio::time::sleep(Duration::from_secs(5)).await;
        let case = format!("{policy} exit {exit_code} gate {gate}");
        assert_eq!(e.manager.worker_count(), usize::from(keeps), "{case}");
        e.manager.cleanup_pods(&HashSet::new());
    }
}
