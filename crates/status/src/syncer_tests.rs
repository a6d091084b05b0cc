//! The status syncer on the recording fake apiserver (upstream
//! `status_manager_test.go`: `TestSyncBatch*`, `TestStaleUpdates`,
//! `TestStaticPod`, `TestDoNotDeleteMirrorPods`, `TestMergePodStatus`...).
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus,
    Pod as ApiPod, PodCondition, PodSpec, PodStatus as ApiPodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubelet_container::FakeClock;
use kubelet_container::kubetypes::{
    CONFIG_MIRROR_ANNOTATION_KEY, CONFIG_SOURCE_ANNOTATION_KEY, FILE_SOURCE,
};
use serde_json::Value;

use crate::api::{FakePodStatusApi, StatusApiCall};
use crate::manager::check_container_state_transition;
use crate::reasons::{condition, phase};
use crate::syncer::{PodDeletionSafetyProvider, PodManager, StatusSyncer, merge_pod_status};
use crate::{PodStatusApi, StatusManager};

const T0: i64 = 1_700_000_000;

fn pod(uid: &str, name: &str) -> ApiPod {
    let mut p = ApiPod::default();
    p.metadata.uid = Some(uid.into());
    p.metadata.name = Some(name.into());
    p.metadata.namespace = Some("ns".into());
    p.metadata.generation = Some(1);
    p.spec = Some(PodSpec {
        containers: vec![Container {
            name: "c".into(),
            image: Some("img".into()),
            ..Container::default()
        }],
        restart_policy: Some("Never".into()),
        ..PodSpec::default()
    });
    p.status = Some(ApiPodStatus {
        phase: Some(phase::PENDING.into()),
        conditions: Some(vec![PodCondition {
            type_: condition::POD_SCHEDULED.into(),
            status: "True".into(),
            last_transition_time: Some(time(T0 - 100)),
            ..PodCondition::default()
        }]),
        ..ApiPodStatus::default()
    });
    p
}

fn time(sec: i64) -> Time {
    Time(Timestamp::from_second(sec).unwrap())
}

fn cond(type_: &str, status: bool) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        ..PodCondition::default()
    }
}

fn container_status(state: ContainerState) -> ContainerStatus {
    ContainerStatus {
        name: "c".into(),
        image: "img".into(),
        ready: state.running.is_some(),
        state: Some(state),
        ..ContainerStatus::default()
    }
}

fn running() -> ContainerState {
    ContainerState {
        running: Some(ContainerStateRunning {
            started_at: Some(time(T0)),
        }),
        ..ContainerState::default()
    }
}

fn exited(code: i32) -> ContainerState {
    ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: code,
            ..ContainerStateTerminated::default()
        }),
        ..ContainerState::default()
    }
}

/// What the kubelet generates: phase, container status and its conditions.
fn kubelet_status(pod_phase: &str, state: ContainerState) -> ApiPodStatus {
    let ready = state.running.is_some();
    ApiPodStatus {
        phase: Some(pod_phase.into()),
        host_ip: Some("198.18.0.1".into()),
        pod_ip: Some("198.18.5.7".into()),
        qos_class: Some("BestEffort".into()),
        container_statuses: Some(vec![container_status(state)]),
        conditions: Some(vec![
            cond(condition::POD_READY_TO_START_CONTAINERS, true),
            cond(condition::INITIALIZED, true),
            cond(condition::READY, ready),
            cond(condition::CONTAINERS_READY, ready),
            cond(condition::POD_SCHEDULED, true),
        ]),
        ..ApiPodStatus::default()
    }
}

#[derive(Default)]
struct FakePods {
    pods: Mutex<HashMap<String, Arc<ApiPod>>>,
    /// static pod UID -> mirror pod ("" UID: none yet)
    mirrors: Mutex<HashMap<String, Option<Arc<ApiPod>>>>,
}

impl FakePods {
    fn add(&self, p: &ApiPod) {
        let uid = p.metadata.uid.clone().unwrap();
        self.pods.lock().unwrap().insert(uid, Arc::new(p.clone()));
    }
    fn set_mirror(&self, static_uid: &str, mirror: Option<&ApiPod>) {
        self.mirrors
            .lock()
            .unwrap()
            .insert(static_uid.into(), mirror.map(|m| Arc::new(m.clone())));
    }
}

impl PodManager for FakePods {
    fn get_pod_by_uid(&self, uid: &str) -> Option<Arc<ApiPod>> {
        self.pods.lock().unwrap().get(uid).cloned()
    }
    fn get_mirror_pod_by_pod(&self, pod: &ApiPod) -> Option<Arc<ApiPod>> {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        self.mirrors.lock().unwrap().get(uid).cloned().flatten()
    }
    fn translate_pod_uid(&self, uid: &str) -> String {
        let mirrors = self.mirrors.lock().unwrap();
        let found = mirrors.iter().find(|(_, m)| {
            m.as_ref()
                .is_some_and(|m| m.metadata.uid.as_deref() == Some(uid))
        });
        found.map_or_else(|| uid.to_string(), |(s, _)| s.clone())
    }
    fn pod_to_mirror(&self) -> HashMap<String, String> {
        self.mirrors
            .lock()
            .unwrap()
            .iter()
            .map(|(s, m)| {
                let uid = m.as_ref().and_then(|m| m.metadata.uid.clone());
                (s.clone(), uid.unwrap_or_default())
            })
            .collect()
    }
}

#[derive(Default)]
struct FakeSafety(Mutex<BTreeSet<String>>);

impl PodDeletionSafetyProvider for FakeSafety {
    fn pod_could_have_running_containers(&self, uid: &str) -> bool {
        self.0.lock().unwrap().contains(uid)
    }
}

struct Env {
    manager: StatusManager,
    api: Arc<FakePodStatusApi>,
    pods: Arc<FakePods>,
    safety: Arc<FakeSafety>,
    syncer: StatusSyncer,
}

fn env() -> Env {
    let clock = Arc::new(FakeClock::new(Timestamp::from_second(T0).unwrap()));
    let manager = StatusManager::new(clock.clone());
    let api = Arc::new(FakePodStatusApi::default());
    let pods = Arc::new(FakePods::default());
    let safety = Arc::new(FakeSafety::default());
    let syncer = StatusSyncer::new(
        manager.clone(),
        api.clone(),
        pods.clone(),
        safety.clone(),
        clock,
    );
    Env {
        manager,
        api,
        pods,
        safety,
        syncer,
    }
}

/// A pod known to the apiserver and the pod manager.
fn with_pod(e: &Env, p: &ApiPod) {
    e.api.put(p.clone());
    e.pods.add(p);
}

fn api_status(e: &Env) -> ApiPodStatus {
    e.api.pod("ns", "p").unwrap().status.unwrap()
}

fn condition_of<'a>(s: &'a ApiPodStatus, t: &str) -> Option<&'a PodCondition> {
    s.conditions.iter().flatten().find(|c| c.type_ == t)
}

#[tokio::test]
async fn patches_only_when_changed() {
    let mut e = env();
    let p = pod("u1", "p");
    with_pod(&e, &p);
    e.manager
        .set_pod_status(&p, kubelet_status(phase::RUNNING, running()));
    assert_eq!(e.syncer.sync_batch(false).await, 1);
    let patches = e.api.patches();
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0]["metadata"]["uid"], "u1");
    let s = api_status(&e);
    assert_eq!(s.phase.as_deref(), Some(phase::RUNNING));
    assert_eq!(s.pod_ip.as_deref(), Some("198.18.5.7"));
    assert_eq!(s.observed_generation, Some(1));
    assert!(s.start_time.is_some());

    // Nothing new: neither the change pass nor the periodic pass sends anything.
    e.pods.add(&e.api.pod("ns", "p").unwrap());
    e.api.clear_calls();
    assert_eq!(e.syncer.sync_batch(false).await, 0);
    assert_eq!(e.syncer.sync_batch(true).await, 0);
    assert!(e.api.calls().is_empty());

    // The same status again is no new version.
    e.manager
        .set_pod_status(&p, kubelet_status(phase::RUNNING, running()));
    assert_eq!(e.syncer.sync_batch(false).await, 0);

    // A status equal to the API's is checked (GET) but not patched.
    let mut other = p.clone();
    other.metadata.uid = Some("u2".into());
    other.metadata.name = Some("q".into());
    other.status = Some(api_status(&e));
    with_pod(&e, &other);
    e.manager.set_pod_status(&other, api_status(&e));
    e.api.clear_calls();
    assert_eq!(e.syncer.sync_batch(false).await, 1);
    assert_eq!(e.api.calls(), [StatusApiCall::Get("ns/q".into())]);
}

#[tokio::test]
async fn periodic_pass_reconciles_a_status_changed_by_someone_else() {
    let mut e = env();
    let p = pod("u1", "p");
    with_pod(&e, &p);
    e.manager
        .set_pod_status(&p, kubelet_status(phase::RUNNING, running()));
    e.syncer.sync_batch(false).await;
    // Someone else set Ready=False; the watch delivered it to the pod manager.
    let mut changed = e.api.pod("ns", "p").unwrap();
    let s = changed.status.as_mut().unwrap();
    for c in s.conditions.iter_mut().flatten() {
        if c.type_ == condition::READY {
            c.status = "False".into();
        }
    }
    e.api.put(changed.clone());
    e.pods.add(&changed);
    e.api.clear_calls();
    assert_eq!(e.syncer.sync_batch(false).await, 0, "no new version");
    assert_eq!(e.syncer.sync_batch(true).await, 1);
    let ready = condition_of(&api_status(&e), condition::READY).cloned();
    assert_eq!(ready.unwrap().status, "True", "the kubelet's view wins");
}

#[tokio::test]
async fn latest_version_wins_and_stale_is_never_sent() {
    let mut e = env();
    let p = pod("u1", "p");
    with_pod(&e, &p);
    e.manager.set_pod_status(
        &p,
        kubelet_status(phase::PENDING, ContainerState::default()),
    );
    e.manager
        .set_pod_status(&p, kubelet_status(phase::RUNNING, running()));
    assert_eq!(e.manager.versioned_statuses()["u1"].version, 2);
    e.syncer.sync_batch(false).await;
    assert_eq!(e.api.patches().len(), 1, "only the latest version is sent");
    assert_eq!(api_status(&e).phase.as_deref(), Some(phase::RUNNING));
    // Version 2 is recorded: a second pass does not send it again.
    e.api.clear_calls();
    assert_eq!(e.syncer.sync_batch(false).await, 0);
    // A failed PATCH is retried at the next pass.
    e.manager
        .set_pod_status(&p, kubelet_status(phase::SUCCEEDED, exited(0)));
    e.api
        .fail_with(Some(crate::StatusApiError::Transport("down".into())));
    assert_eq!(e.syncer.sync_batch(false).await, 1);
    e.api.fail_with(None);
    assert_eq!(e.syncer.sync_batch(false).await, 1);
    assert_eq!(api_status(&e).phase.as_deref(), Some(phase::SUCCEEDED));
}

#[tokio::test]
async fn terminal_phase_is_never_left() {
    let mut e = env();
    let mut p = pod("u1", "p");
    p.status.as_mut().unwrap().phase = Some(phase::FAILED.into());
    e.api.put(p.clone());
    // The kubelet's cache thinks it runs (e.g. an old status); the API is terminal.
    let mut stale = p.clone();
    stale.status = None;
    e.manager
        .set_pod_status(&stale, kubelet_status(phase::RUNNING, running()));
    e.syncer.sync_batch(false).await;
    let s = api_status(&e);
    assert_eq!(s.phase.as_deref(), Some(phase::FAILED));
    assert_eq!(
        condition_of(&s, condition::READY).unwrap().status,
        "False",
        "no ready=true with a terminal phase"
    );
    // A terminated container of a Never pod cannot run again in the cache either.
    let old = kubelet_status(phase::FAILED, exited(1));
    let new = kubelet_status(phase::RUNNING, running());
    assert!(check_container_state_transition(&old, &new, &p).is_err());
    p.spec.as_mut().unwrap().restart_policy = Some("OnFailure".into());
    assert!(check_container_state_transition(&old, &new, &p).is_ok());
    let succeeded = kubelet_status(phase::SUCCEEDED, exited(0));
    assert!(check_container_state_transition(&succeeded, &new, &p).is_err());
}

#[tokio::test]
async fn terminal_phase_waits_for_containers_to_stop() {
    let mut e = env();
    let p = pod("u1", "p");
    with_pod(&e, &p);
    e.safety.0.lock().unwrap().insert("u1".into());
    e.manager
        .set_pod_status(&p, kubelet_status(phase::FAILED, exited(1)));
    e.syncer.sync_batch(false).await;
    assert_eq!(api_status(&e).phase.as_deref(), Some(phase::PENDING));
    e.safety.0.lock().unwrap().clear();
    e.syncer.sync_batch(true).await;
    assert_eq!(api_status(&e).phase.as_deref(), Some(phase::FAILED));
}

#[tokio::test]
async fn conditions_the_kubelet_does_not_own_are_kept() {
    let mut e = env();
    let mut p = pod("u1", "p");
    let gate = PodCondition {
        type_: "example.com/gate".into(),
        status: "True".into(),
        last_transition_time: Some(time(T0 - 50)),
        ..PodCondition::default()
    };
    p.status
        .as_mut()
        .unwrap()
        .conditions
        .as_mut()
        .unwrap()
        .push(gate.clone());
    with_pod(&e, &p);
    e.manager
        .set_pod_status(&p, kubelet_status(phase::RUNNING, running()));
    e.syncer.sync_batch(false).await;
    let s = api_status(&e);
    assert_eq!(condition_of(&s, "example.com/gate"), Some(&gate));
    let scheduled = condition_of(&s, condition::POD_SCHEDULED).unwrap();
    assert_eq!(scheduled.status, "True");
    assert_eq!(
        scheduled.last_transition_time,
        Some(time(T0 - 100)),
        "the scheduler's transition time stays"
    );
    let patch = &e.api.patches()[0];
    let sent: Vec<&str> = patch["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert!(!sent.contains(&condition::POD_SCHEDULED), "{patch}");
    assert!(!sent.contains(&"example.com/gate"), "{patch}");
}

#[tokio::test]
async fn final_delete_only_once_finished() {
    let mut e = env();
    let mut p = pod("u1", "p");
    p.metadata.deletion_timestamp = Some(time(T0 + 30));
    p.metadata.deletion_grace_period_seconds = Some(30);
    with_pod(&e, &p);
    e.safety.0.lock().unwrap().insert("u1".into());
    e.manager
        .set_pod_status(&p, kubelet_status(phase::RUNNING, running()));
    e.syncer.sync_batch(false).await;
    // Containers stopped, status terminal but SyncTerminatedPod not done yet.
    e.safety.0.lock().unwrap().clear();
    e.manager
        .set_pod_status(&p, kubelet_status(phase::FAILED, exited(137)));
    e.syncer.sync_batch(false).await;
    assert_eq!(api_status(&e).phase.as_deref(), Some(phase::FAILED));
    assert!(
        !e.api
            .calls()
            .iter()
            .any(|c| matches!(c, StatusApiCall::Delete(..)))
    );
    // TerminatePod: finished. Delete with grace 0 and the UID precondition.
    let api_pod = e.api.pod("ns", "p").unwrap();
    e.pods.add(&api_pod);
    e.manager.terminate_pod(&api_pod);
    e.syncer.sync_batch(false).await;
    assert!(
        e.api
            .calls()
            .contains(&StatusApiCall::Delete("ns/p".into(), "u1".into()))
    );
    assert!(e.api.pod("ns", "p").is_none());
    assert!(e.manager.get_pod_status("u1").is_none());
}

#[tokio::test]
async fn periodic_pass_retries_a_failed_delete() {
    let mut e = env();
    let mut p = pod("u1", "p");
    p.metadata.deletion_timestamp = Some(time(T0 + 30));
    with_pod(&e, &p);
    e.manager
        .set_pod_status(&p, kubelet_status(phase::FAILED, exited(1)));
    e.manager.terminate_pod(&p);
    // The PATCH succeeds, the DELETE does not (e.g. timeout).
    e.api
        .fail_deletes_with(Some(crate::StatusApiError::Transport("timeout".into())));
    e.syncer.sync_batch(false).await;
    assert_eq!(api_status(&e).phase.as_deref(), Some(phase::FAILED));
    let mut terminal = p.clone();
    terminal.status = Some(api_status(&e));
    e.pods.add(&terminal);
    assert!(e.manager.get_pod_status("u1").is_some());
    // Nothing new for the change pass; the periodic pass sees it can be deleted.
    assert_eq!(e.syncer.sync_batch(false).await, 0);
    e.api.fail_deletes_with(None);
    assert_eq!(e.syncer.sync_batch(true).await, 1);
    assert!(e.api.pod("ns", "p").is_none());
}

#[tokio::test]
async fn mirror_pods_get_the_static_pod_status_and_are_never_deleted() {
    let mut e = env();
    let mut static_pod = pod("s1", "p");
    static_pod.metadata.annotations = Some(
        [(
            CONFIG_SOURCE_ANNOTATION_KEY.to_string(),
            FILE_SOURCE.to_string(),
        )]
        .into(),
    );
    static_pod.status = None;
    e.pods.add(&static_pod);
    e.pods.set_mirror("s1", None);
    e.manager
        .set_pod_status(&static_pod, kubelet_status(phase::RUNNING, running()));
    assert_eq!(e.syncer.sync_batch(false).await, 0, "no mirror pod yet");
    assert!(e.api.calls().is_empty());

    let mut mirror = pod("m1", "p");
    mirror.metadata.annotations = Some(
        [
            (CONFIG_SOURCE_ANNOTATION_KEY.to_string(), "api".to_string()),
            (CONFIG_MIRROR_ANNOTATION_KEY.to_string(), "hash".to_string()),
        ]
        .into(),
    );
    mirror.metadata.deletion_timestamp = Some(time(T0));
    e.api.put(mirror.clone());
    e.pods.set_mirror("s1", Some(&mirror));
    assert_eq!(e.syncer.sync_batch(false).await, 1);
    let patches = e.api.patches();
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0]["metadata"]["uid"], "m1");
    assert_eq!(api_status(&e).phase.as_deref(), Some(phase::RUNNING));

    // A terminal, finished static pod never deletes its mirror pod.
    e.manager
        .set_pod_status(&static_pod, kubelet_status(phase::SUCCEEDED, exited(0)));
    e.manager.terminate_pod(&static_pod);
    e.syncer.sync_batch(false).await;
    e.syncer.sync_batch(true).await;
    assert!(
        !e.api
            .calls()
            .iter()
            .any(|c| matches!(c, StatusApiCall::Delete(..)))
    );
    assert!(e.api.pod("ns", "p").is_some());
}

#[tokio::test]
async fn recreated_pod_is_not_patched() {
    let mut e = env();
    let p = pod("u1", "p");
    e.pods.add(&p);
    // The apiserver has a new pod with the same name.
    e.api.put(pod("u2", "p"));
    e.manager
        .set_pod_status(&p, kubelet_status(phase::RUNNING, running()));
    e.syncer.sync_batch(false).await;
    assert!(e.api.patches().is_empty());
    assert!(e.manager.get_pod_status("u1").is_none());
    // Gone from the apiserver: nothing is sent.
    e.manager
        .set_pod_status(&p, kubelet_status(phase::RUNNING, running()));
    e.api.clear_calls();
    let gone = e.api.delete_pod("ns", "p", "u2").await;
    assert!(gone.is_ok());
    e.syncer.sync_batch(false).await;
    assert!(e.api.patches().is_empty());
}

#[test]
fn merge_keeps_disruption_target_until_terminal() {
    let p = pod("u1", "p");
    let now = time(T0);
    let mut old = p.status.clone().unwrap();
    old.phase = Some(phase::RUNNING.into());
    let mut new = kubelet_status(phase::FAILED, exited(1));
    new.conditions
        .as_mut()
        .unwrap()
        .push(cond(condition::DISRUPTION_TARGET, true));
    let still_running = merge_pod_status(&p, &old, new.clone(), true, &now);
    assert_eq!(still_running.phase.as_deref(), Some(phase::RUNNING));
    assert!(condition_of(&still_running, condition::DISRUPTION_TARGET).is_none());
    let stopped = merge_pod_status(&p, &old, new, false, &now);
    assert_eq!(stopped.phase.as_deref(), Some(phase::FAILED));
    let dt = condition_of(&stopped, condition::DISRUPTION_TARGET).unwrap();
    assert_eq!(dt.last_transition_time, Some(now));
}

#[tokio::test]
async fn run_syncs_on_change_and_stops_on_cancel() {
    let Env {
        manager,
        api,
        pods,
        syncer,
        ..
    } = env();
    let p = pod("u1", "p");
    api.put(p.clone());
    pods.add(&p);
    // A status set before the start is synced at once.
    manager.set_pod_status(
        &p,
        kubelet_status(phase::PENDING, ContainerState::default()),
    );
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(syncer.run(cancel.clone()));
    let wait_for = |n: usize| {
        let api = api.clone();
        async move {
            while api.patches().len() < n {
                tokio::task::yield_now().await;
            }
        }
    };
    wait_for(1).await;
    manager.set_pod_status(&p, kubelet_status(phase::RUNNING, running()));
    wait_for(2).await;
    let status = api.pod("ns", "p").unwrap().status.unwrap();
    assert_eq!(status.phase.as_deref(), Some(phase::RUNNING));
    cancel.cancel();
    task.await.unwrap();
    let _: Vec<Value> = api.patches();
}

/// `checkContainerStateTransition` with `ContainerRestartRules`: a container the restart
/// rules or its own policy restart may leave the terminated state in a Never pod.
#[test]
fn container_restart_rules_allow_leaving_terminated() {
    let mut p = pod("u1", "p");
    let c = &mut p.spec.as_mut().unwrap().containers[0];
    c.restart_policy = Some("Never".into());
    c.restart_policy_rules = Some(vec![kubelet_container::podutil::restart_rule(
        "Restart",
        "In",
        &[42],
    )]);
    let new = kubelet_status(phase::RUNNING, running());
    let old = |code| kubelet_status(phase::RUNNING, exited(code));
    assert!(check_container_state_transition(&old(42), &new, &p).is_ok());
    assert!(check_container_state_transition(&old(1), &new, &p).is_err());
    p.spec.as_mut().unwrap().containers[0].restart_policy = Some("Always".into());
    assert!(check_container_state_transition(&old(0), &new, &p).is_ok());
    // Gate off: the pod's policy (Never) alone.
    let _gate = kubelet_container::gates::set_container_restart_rules_during_test(false);
    assert!(check_container_state_transition(&old(0), &new, &p).is_err());
    assert!(check_container_state_transition(&old(42), &new, &p).is_err());
}
