//! Ported from `nodeshutdown_manager_test.go` and `nodeshutdown_manager_linux_test.go`,
//! with the recording D-Bus fake and tokio's paused clock.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ObjectReference, Pod, PodSpec, PodStatus};
use kubelet_admission::{PodAdmitAttributes, PodAdmitHandler};
use kubelet_container::{FakeClock, FakeRecorder};

use crate::fake::{DbusCall, FakeConnector, FakeDbusInhibiter, FakePodKiller};
use crate::manager::*;
use crate::storage::{LOCAL_STORAGE_STATE_FILE, LocalStorage, Storage};

const S: fn(u64) -> Duration = Duration::from_secs;

fn make_pod(name: &str, priority: i32, termination_grace_period: Option<i64>) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(name.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            priority: Some(priority),
            termination_grace_period_seconds: termination_grace_period,
            ..Default::default()
        }),
        status: None,
    })
}

fn band(priority: i32, secs: i64) -> ShutdownGracePeriodByPodPriority {
    ShutdownGracePeriodByPodPriority {
        priority,
        shutdown_grace_period_seconds: secs,
    }
}

/// `Test_migrateConfig`.
#[test]
fn migrate_config_as_upstream() {
    assert_eq!(
        migrate_config(S(300), S(120)),
        [band(0, 180), band(SYSTEM_CRITICAL_PRIORITY, 120)]
    );
    assert_eq!(
        migrate_config(S(100), S(0)),
        [band(0, 100), band(SYSTEM_CRITICAL_PRIORITY, 0)]
    );
    assert!(migrate_config(S(0), S(0)).is_empty());
    assert!(migrate_config(S(1), S(100)).is_empty());
}

fn names(g: &PodShutdownGroup) -> Vec<String> {
    g.pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

/// `Test_groupByPriority`: bands from the migrated config and from priorities; pods below
/// the lowest band go to it, above the highest to it, between two to the lower.
#[test]
fn group_by_priority_as_upstream() {
    let highest_user_definable = 1_000_000_000;
    let groups = group_by_priority(
        &migrate_config(S(300), S(120)),
        &[
            make_pod("normal-pod", 0, None),
            make_pod("highest-user-definable-pod", highest_user_definable, None),
            make_pod("critical-pod", SYSTEM_CRITICAL_PRIORITY, None),
        ],
    );
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0].period, band(0, 180));
    assert_eq!(
        names(&groups[0]),
        ["normal-pod", "highest-user-definable-pod"]
    );
    assert_eq!(groups[1].period, band(SYSTEM_CRITICAL_PRIORITY, 120));
    assert_eq!(names(&groups[1]), ["critical-pod"]);

    let periods = [band(1, 10), band(2, 20), band(3, 30), band(4, 40)];
    let pods: Vec<_> = (0..=5)
        .map(|i| make_pod(&format!("pod-{i}"), i, None))
        .collect();
    let groups = group_by_priority(&periods, &pods);
    let got: Vec<Vec<String>> = groups.iter().map(names).collect();
    assert_eq!(
        got,
        [
            vec!["pod-0", "pod-1"],
            vec!["pod-2"],
            vec!["pod-3"],
            vec!["pod-4", "pod-5"]
        ]
    );
    // Between two bands: the lower one.
    let groups = group_by_priority(&[band(10, 1), band(20, 2)], &[make_pod("p", 15, None)]);
    assert_eq!(names(&groups[0]), ["p"]);
}

/// `newPodManager`: the by-priority list sorted (gate on), the migrated config when the
/// gate is off or the list empty.
#[test]
fn periods_by_priority_sorted_or_migrated() {
    let mut c = Config {
        graceful_node_shutdown: true,
        graceful_node_shutdown_based_on_pod_priority: true,
        shutdown_grace_period_by_pod_priority: vec![band(100, 5), band(0, 10), band(50, 7)],
        shutdown_grace_period_requested: S(30),
        shutdown_grace_period_critical_pods: S(10),
        ..Config::default()
    };
    assert_eq!(
        shutdown_grace_periods(&c),
        [band(0, 10), band(50, 7), band(100, 5)]
    );
    c.graceful_node_shutdown_based_on_pod_priority = false;
    assert_eq!(
        shutdown_grace_periods(&c),
        [band(0, 20), band(SYSTEM_CRITICAL_PRIORITY, 10)]
    );
}

struct Harness {
    dbus: FakeDbusInhibiter,
    connector: FakeConnector,
    killer: FakePodKiller,
    recorder: Arc<FakeRecorder>,
    dir: tempfile::TempDir,
}

impl Harness {
    fn new(pods: Vec<Arc<Pod>>, delay: Duration, after_override: Duration) -> Self {
        let dbus = FakeDbusInhibiter::new(delay, after_override);
        Self {
            connector: FakeConnector::new(dbus.clone()),
            dbus,
            killer: FakePodKiller::new(pods),
            recorder: Arc::new(FakeRecorder::new()),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn config(&self, requested: Duration, critical: Duration) -> Config {
        Config {
            graceful_node_shutdown: true,
            graceful_node_shutdown_based_on_pod_priority: true,
            shutdown_grace_period_requested: requested,
            shutdown_grace_period_critical_pods: critical,
            state_directory: self.dir.path().to_path_buf(),
            ..Config::default()
        }
    }

    fn manager(&self, config: &Config) -> Option<ManagerImpl> {
        ManagerImpl::new(
            config,
            Deps {
                connector: Arc::new(self.connector.clone()),
                pods: Arc::new(self.killer.clone()),
                recorder: self.recorder.clone(),
                node_ref: ObjectReference {
                    kind: Some("Node".into()),
                    name: Some("test".into()),
                    ..Default::default()
                },
                clock: Arc::new(FakeClock::default()),
            },
        )
    }
}

fn admit(m: &ManagerImpl) -> kubelet_admission::PodAdmitResult {
    let pod = Pod::default();
    m.admit(&PodAdmitAttributes {
        pod: &pod,
        other_pods: &[],
    })
}

/// Lets the spawned tasks run (time is paused: sleeps end at once when all tasks idle).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

async fn wait_kills(killer: &FakePodKiller, n: usize) {
    for _ in 0..10_000 {
        if killer.kills().len() >= n {
            return;
        }
        settle().await;
    }
    panic!("only {} of {n} kills", killer.kills().len());
}

struct Case {
    desc: &'static str,
    pods: Vec<Arc<Pod>>,
    requested: u64,
    critical: u64,
    system_inhibit_delay: u64,
    override_system_inhibit_delay: u64,
    expected_did_override: bool,
    expected: &'static [(&'static str, i64)],
    expected_error: Option<&'static str>,
}

/// `TestManager`: the grace period each pod is killed with, the logind override, the
/// start errors, admission and `ShutdownStatus` before and after the event.
#[tokio::test(start_paused = true)]
async fn manager_kills_with_band_periods_and_overrides_logind() {
    let normal = || make_pod("normal-pod-nil-grace-period", 0, None);
    let critical = || {
        make_pod(
            "critical-pod-nil-grace-period",
            SYSTEM_CRITICAL_PRIORITY,
            None,
        )
    };
    let cases = vec![
        Case {
            desc: "no override (total=30s, critical=10s)",
            pods: vec![normal(), critical()],
            requested: 30,
            critical: 10,
            system_inhibit_delay: 40,
            override_system_inhibit_delay: 40,
            expected_did_override: false,
            expected: &[
                ("normal-pod-nil-grace-period", 20),
                ("critical-pod-nil-grace-period", 10),
            ],
            expected_error: None,
        },
        Case {
            desc: "no override (total=30s, critical=10s) pods with terminationGracePeriod and without",
            pods: vec![
                normal(),
                critical(),
                make_pod("normal-pod-grace-period", 0, Some(2)),
                make_pod(
                    "critical-pod-grace-period",
                    SYSTEM_CRITICAL_PRIORITY,
                    Some(2),
                ),
                make_pod("normal-pod-long-grace-period", 0, Some(1000)),
            ],
            requested: 30,
            critical: 10,
            system_inhibit_delay: 40,
            override_system_inhibit_delay: 40,
            expected_did_override: false,
            expected: &[
                ("normal-pod-nil-grace-period", 20),
                ("critical-pod-nil-grace-period", 10),
                ("normal-pod-grace-period", 2),
                ("critical-pod-grace-period", 2),
                ("normal-pod-long-grace-period", 20),
            ],
            expected_error: None,
        },
        Case {
            desc: "no override (total=30, critical=0)",
            pods: vec![normal(), critical()],
            requested: 30,
            critical: 0,
            system_inhibit_delay: 40,
            override_system_inhibit_delay: 40,
            expected_did_override: false,
            expected: &[
                ("normal-pod-nil-grace-period", 30),
                ("critical-pod-nil-grace-period", 0),
            ],
            expected_error: None,
        },
        Case {
            desc: "override successful (total=30, critical=10)",
            pods: vec![normal(), critical()],
            requested: 30,
            critical: 10,
            system_inhibit_delay: 5,
            override_system_inhibit_delay: 30,
            expected_did_override: true,
            expected: &[
                ("normal-pod-nil-grace-period", 20),
                ("critical-pod-nil-grace-period", 10),
            ],
            expected_error: None,
        },
        Case {
            desc: "override unsuccessful",
            pods: vec![normal(), critical()],
            requested: 30,
            critical: 10,
            system_inhibit_delay: 5,
            override_system_inhibit_delay: 5,
            expected_did_override: true,
            expected: &[],
            expected_error: Some(
                "node shutdown manager was timed out after 5 attempts waiting for logind InhibitDelayMaxSec to update to 30s (ShutdownGracePeriod), current value is 5s",
            ),
        },
        Case {
            desc: "override unsuccessful, zero time",
            pods: vec![normal(), critical()],
            requested: 5,
            critical: 5,
            system_inhibit_delay: 0,
            override_system_inhibit_delay: 0,
            expected_did_override: true,
            expected: &[],
            expected_error: Some(
                "node shutdown manager was timed out after 5 attempts waiting for logind InhibitDelayMaxSec to update to 5s (ShutdownGracePeriod), current value is 0s",
            ),
        },
        Case {
            desc: "no override, all time to critical pods",
            pods: vec![normal(), critical()],
            requested: 5,
            critical: 5,
            system_inhibit_delay: 5,
            override_system_inhibit_delay: 5,
            expected_did_override: false,
            expected: &[
                ("normal-pod-nil-grace-period", 0),
                ("critical-pod-nil-grace-period", 5),
            ],
            expected_error: None,
        },
    ];
    for tc in cases {
        let h = Harness::new(
            tc.pods.clone(),
            S(tc.system_inhibit_delay),
            S(tc.override_system_inhibit_delay),
        );
        let m = h
            .manager(&h.config(S(tc.requested), S(tc.critical)))
            .unwrap();
        let res = m.start().await;
        assert_eq!(
            h.dbus.did_override_inhibit_delay(),
            tc.expected_did_override,
            "{}",
            tc.desc
        );
        if let Some(want) = tc.expected_error {
            assert_eq!(res.unwrap_err().to_string(), want, "{}", tc.desc);
            // Five reads after the override, as `wait.ExponentialBackoff` with 5 steps.
            let reads = h
                .dbus
                .calls()
                .iter()
                .filter(|c| **c == DbusCall::CurrentInhibitDelay)
                .count();
            assert_eq!(reads, 6, "{}", tc.desc);
            assert!(h.dbus.held_locks().is_empty(), "{}", tc.desc);
            continue;
        }
        res.unwrap();
        assert_eq!(h.dbus.held_locks().len(), 1, "{}: inhibited", tc.desc);
        assert!(m.shutdown_status().is_ok(), "{}", tc.desc);
        assert!(admit(&m).admit, "{}", tc.desc);
        assert!(h.dbus.prepare_for_shutdown(true).await, "{}", tc.desc);
        wait_kills(&h.killer, tc.pods.len()).await;
        assert_eq!(
            m.shutdown_status().unwrap_err(),
            "node is shutting down",
            "{}",
            tc.desc
        );
        let r = admit(&m);
        assert!(!r.admit, "{}", tc.desc);
        assert_eq!(r.reason, "NodeShutdown");
        assert_eq!(r.message, "Pod was rejected as the node is shutting down.");
        let got: BTreeMap<String, i64> = h
            .killer
            .kills()
            .into_iter()
            .map(|k| (k.pod, k.grace_period_override))
            .collect();
        let want: BTreeMap<String, i64> = tc
            .expected
            .iter()
            .map(|(n, g)| ((*n).to_string(), *g))
            .collect();
        assert_eq!(got, want, "{}", tc.desc);
        assert!(h.killer.kills().iter().all(|k| !k.is_evicted));
    }
}

/// `TestManager` "verify pod status": `Failed` unless `Succeeded`, reason `Terminated`,
/// the shutdown message, `DisruptionTarget`/`TerminationByKubelet`.
#[tokio::test(start_paused = true)]
async fn killed_pods_get_upstreams_status() {
    let with_phase = |name: &str, phase: &str| {
        let mut p = (*make_pod(name, 0, None)).clone();
        p.spec.as_mut().unwrap().priority = None;
        p.metadata.generation = Some(3);
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            ..Default::default()
        });
        Arc::new(p)
    };
    let pods = vec![
        with_phase("running-pod", "Running"),
        with_phase("failed-pod", "Failed"),
        with_phase("succeeded-pod", "Succeeded"),
    ];
    let h = Harness::new(pods, S(40), S(40));
    let m = h.manager(&h.config(S(30), S(10))).unwrap();
    m.start().await.unwrap();
    assert!(h.dbus.prepare_for_shutdown(true).await);
    wait_kills(&h.killer, 3).await;
    for k in h.killer.kills() {
        assert_eq!(k.grace_period_override, 20, "{}", k.pod);
        let want_phase = if k.pod == "succeeded-pod" {
            "Succeeded"
        } else {
            "Failed"
        };
        assert_eq!(k.status.phase.as_deref(), Some(want_phase), "{}", k.pod);
        assert_eq!(k.status.reason.as_deref(), Some("Terminated"));
        assert_eq!(
            k.status.message.as_deref(),
            Some("Pod was terminated in response to imminent node shutdown.")
        );
        let conds = k.status.conditions.unwrap();
        assert_eq!(conds.len(), 1);
        assert_eq!(conds[0].type_, "DisruptionTarget");
        assert_eq!(conds[0].status, "True");
        assert_eq!(conds[0].reason.as_deref(), Some("TerminationByKubelet"));
        assert_eq!(
            conds[0].message.as_deref(),
            Some("Pod was terminated in response to imminent node shutdown.")
        );
        assert_eq!(conds[0].observed_generation, Some(3));
        assert!(conds[0].last_transition_time.is_some());
    }
}

/// `TestFeatureEnabled`: the stub without a period or with the gate off.
#[test]
fn feature_enabled_only_with_gate_and_period() {
    let h = Harness::new(Vec::new(), S(0), S(0));
    assert!(h.manager(&h.config(S(0), S(0))).is_none());
    let mut c = h.config(S(100), S(0));
    c.graceful_node_shutdown = false;
    assert!(h.manager(&c).is_none());
    assert!(h.manager(&h.config(S(100), S(0))).is_some());
    let mut c = h.config(S(0), S(0));
    c.shutdown_grace_period_by_pod_priority = vec![band(0, 5)];
    assert!(h.manager(&c).is_some());
    // With the priority gate off, the list is ignored (and nothing else is set).
    c.graceful_node_shutdown_based_on_pod_priority = false;
    assert!(h.manager(&c).is_none());
}

/// `TestRestart`: when the watch ends (the connection is lost) the manager reconnects
/// after `dbusReconnectPeriod`, takes a new lock and watches again.
#[tokio::test(start_paused = true)]
async fn restart_reconnects_after_the_watch_ends() {
    let h = Harness::new(Vec::new(), S(40), S(40));
    let m = h.manager(&h.config(S(30), S(10))).unwrap();
    m.start().await.unwrap();
    for i in 1..=3 {
        assert_eq!(h.connector.connects(), i);
        h.dbus.close_connection();
        settle().await;
        tokio::time::sleep(DBUS_RECONNECT_PERIOD).await;
        settle().await;
    }
    assert_eq!(h.connector.connects(), 4);
    let monitors = h
        .dbus
        .calls()
        .iter()
        .filter(|c| **c == DbusCall::MonitorShutdown)
        .count();
    assert_eq!(monitors, 4);
}

/// A failing start (no bus): the error is returned and nothing retries (upstream's
/// reconnect loop starts only after a successful start).
#[tokio::test(start_paused = true)]
async fn failed_start_returns_the_error_and_does_not_retry() {
    let mut h = Harness::new(Vec::new(), S(40), S(40));
    h.connector.fail = Some(
        "dial unix /var/run/dbus/system_bus_socket: connect: no such file or directory".into(),
    );
    let m = h.manager(&h.config(S(30), S(10))).unwrap();
    let err = m.start().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "dial unix /var/run/dbus/system_bus_socket: connect: no such file or directory"
    );
    tokio::time::sleep(S(10)).await;
    assert_eq!(h.connector.connects(), 1);
    assert!(admit(&m).admit);
}

/// `MonitorShutdown` failing releases the lock just taken.
#[tokio::test(start_paused = true)]
async fn monitor_failure_releases_the_lock() {
    let h = Harness::new(Vec::new(), S(40), S(40));
    h.dbus.fail_monitor("no match rule");
    let m = h.manager(&h.config(S(30), S(10))).unwrap();
    let err = m.start().await.unwrap_err();
    assert_eq!(err.to_string(), "failed to monitor shutdown: no match rule");
    assert!(h.dbus.held_locks().is_empty());
}

/// The event sequence: shutdown → node status sync, `Shutdown` event, pods killed by
/// band (lowest first, the next band after the first band's pods are done), state file
/// written, the lock released; cancelled → the lock taken again and pods admitted.
#[tokio::test(start_paused = true)]
async fn shutdown_then_cancel_releases_and_retakes_the_lock() {
    let pods = vec![
        make_pod("critical", SYSTEM_CRITICAL_PRIORITY, None),
        make_pod("low", 0, None),
        make_pod("mid", 1000, None),
    ];
    let mut h = Harness::new(pods, S(100), S(100));
    h.killer.kill_time = S(3);
    let mut c = h.config(S(0), S(0));
    c.shutdown_grace_period_by_pod_priority = vec![
        band(SYSTEM_CRITICAL_PRIORITY, 20),
        band(0, 10),
        band(1000, 5),
    ];
    let m = h.manager(&c).unwrap();
    m.start().await.unwrap();
    assert_eq!(h.dbus.held_locks(), [1]);
    assert!(h.dbus.prepare_for_shutdown(true).await);
    wait_kills(&h.killer, 3).await;
    // The release comes after the last band.
    for _ in 0..1000 {
        if h.dbus.held_locks().is_empty() {
            break;
        }
        settle().await;
    }
    assert!(h.dbus.held_locks().is_empty(), "{:?}", h.dbus.calls());
    let kills = h.killer.kills();
    let order: Vec<(&str, i64, u64)> = kills
        .iter()
        .map(|k| (k.pod.as_str(), k.grace_period_override, k.at.as_secs()))
        .collect();
    // Each band waits for its kills (3 s each) and the unmounts, not its whole period.
    assert_eq!(order, [("low", 10, 0), ("mid", 5, 3), ("critical", 20, 6)]);
    assert_eq!(h.killer.node_status_syncs(), 1);
    assert_eq!(h.killer.unmount_waits(), 3);
    let events = h.recorder.events();
    assert_eq!(events[0].reason, "Shutdown");
    assert_eq!(
        events[0].message,
        "Shutdown manager detected shutdown event"
    );
    let state = LocalStorage {
        path: h.dir.path().join(LOCAL_STORAGE_STATE_FILE),
    }
    .load()
    .unwrap();
    assert!(state.start_time.is_some() && state.end_time.is_some());
    assert!(m.shutdown_status().is_err());

    assert!(h.dbus.prepare_for_shutdown(false).await);
    for _ in 0..1000 {
        if !h.dbus.held_locks().is_empty() {
            break;
        }
        settle().await;
    }
    assert_eq!(h.dbus.held_locks(), [2]);
    assert!(m.shutdown_status().is_ok());
    assert!(admit(&m).admit);
    assert_eq!(
        h.recorder.events()[1].message,
        "Shutdown manager detected shutdown cancellation"
    );
}

/// A band whose kills outlast its period: the next band starts after the period
/// (upstream "Shutdown manager pod killing time out").
#[tokio::test(start_paused = true)]
async fn slow_kills_move_on_after_the_band_period() {
    let pods = vec![make_pod("low", 1, None), make_pod("high", 2, None)];
    let mut h = Harness::new(pods, S(100), S(100));
    h.killer.kill_time = S(60);
    let mut c = h.config(S(0), S(0));
    c.shutdown_grace_period_by_pod_priority = vec![band(1, 10), band(2, 20)];
    let m = h.manager(&c).unwrap();
    m.start().await.unwrap();
    assert!(h.dbus.prepare_for_shutdown(true).await);
    wait_kills(&h.killer, 2).await;
    let at: Vec<u64> = h.killer.kills().iter().map(|k| k.at.as_secs()).collect();
    assert_eq!(at, [0, 10]);
}

/// `Test_processShutdownEvent_VolumeUnmountTimeout`: an unmount wait longer than the band
/// ends with the band's period.
#[tokio::test(start_paused = true)]
async fn unmount_wait_is_bounded_by_the_band_period() {
    let pods = vec![make_pod("a", 1, None), make_pod("b", 2, None)];
    let mut h = Harness::new(pods, S(100), S(100));
    h.killer.unmount_time = S(3);
    let mut c = h.config(S(0), S(0));
    c.shutdown_grace_period_by_pod_priority = vec![band(1, 2), band(2, 2)];
    let m = h.manager(&c).unwrap();
    m.start().await.unwrap();
    assert!(h.dbus.prepare_for_shutdown(true).await);
    wait_kills(&h.killer, 2).await;
    let at: Vec<u64> = h.killer.kills().iter().map(|k| k.at.as_secs()).collect();
    assert_eq!(at, [0, 2]);
}
