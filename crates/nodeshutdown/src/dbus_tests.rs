//! The zbus implementation against a real `dbus-daemon` (private, session-style, on a
//! unix socket in a temporary directory) serving a fake logind and systemd manager.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ObjectReference, Pod, PodSpec};
use kubelet_container::{FakeClock, FakeRecorder};

use crate::fake::FakePodKiller;
use crate::fake_logind::{FakeLogind, InhibitCall, PrivateBus};
use crate::manager::{Config, Deps, Manager, ManagerImpl};
use crate::systemd::{DBusCon, DbusInhibiter, SystemBus};

const S: fn(u64) -> Duration = Duration::from_secs;

fn pod(name: &str, priority: i32) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(name.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            priority: Some(priority),
            ..Default::default()
        }),
        status: None,
    })
}

fn manager(bus: SystemBus, killer: &FakePodKiller, state_dir: &std::path::Path) -> ManagerImpl {
    ManagerImpl::new(
        &Config {
            graceful_node_shutdown: true,
            graceful_node_shutdown_based_on_pod_priority: true,
            shutdown_grace_period_requested: S(30),
            shutdown_grace_period_critical_pods: S(10),
            state_directory: state_dir.to_path_buf(),
            ..Config::default()
        },
        Deps {
            connector: Arc::new(bus),
            pods: Arc::new(killer.clone()),
            recorder: Arc::new(FakeRecorder::new()),
            node_ref: ObjectReference::default(),
            clock: Arc::new(FakeClock::default()),
        },
    )
    .unwrap()
}

fn upstream_inhibit(released: bool) -> InhibitCall {
    InhibitCall {
        what: "shutdown".into(),
        who: "kubelet".into(),
        why: "Kubelet needs time to handle node shutdown".into(),
        mode: "delay".into(),
        released,
    }
}

async fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Start on a real bus: logind's delay (5 s) is below the 30 s requested, so the drop-in
/// is written, logind is reloaded (`KillUnit`), the delay read again; the lock is taken
/// with upstream's `Inhibit` arguments. `PrepareForShutdown(true)` kills the pods and
/// closes the lock's descriptor; `PrepareForShutdown(false)` takes a new lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_bus_override_inhibit_shutdown_and_cancel() {
    let bus = PrivateBus::start().unwrap();
    let conf = tempfile::tempdir().unwrap();
    let conf_dir = conf.path().join("logind.conf.d");
    let logind = FakeLogind::serve(&bus.address, S(5), Some(conf_dir.clone()))
        .await
        .unwrap();
    let killer = FakePodKiller::new(vec![pod("normal", 0), pod("critical", 2_000_000_000)]);
    let state = tempfile::tempdir().unwrap();
    let m = manager(
        SystemBus {
            address: Some(bus.address.clone()),
            logind_config_directory: conf_dir.clone(),
        },
        &killer,
        state.path(),
    );
    m.start().await.unwrap();

    assert_eq!(
        std::fs::read_to_string(conf_dir.join("99-kubelet.conf")).unwrap(),
        "# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=30\n"
    );
    assert_eq!(
        logind.kill_units(),
        [("systemd-logind.service".to_string(), "all".to_string(), 1)]
    );
    assert_eq!(logind.inhibit_delay_max_usec(), 30_000_000);
    assert_eq!(logind.inhibits(), [upstream_inhibit(false)]);

    logind.prepare_for_shutdown(true).await.unwrap();
    assert!(logind.wait_released(0, S(10)).await, "lock not released");
    let kills: Vec<(String, i64)> = killer
        .kills()
        .into_iter()
        .map(|k| (k.pod, k.grace_period_override))
        .collect();
    assert_eq!(
        kills,
        [("normal".to_string(), 20), ("critical".to_string(), 10)]
    );
    assert!(m.shutdown_status().is_err());
    assert!(state.path().join("graceful_node_shutdown_state").exists());

    logind.prepare_for_shutdown(false).await.unwrap();
    assert!(logind.wait_inhibits(2, S(10)).await);
    assert_eq!(
        logind.inhibits(),
        [upstream_inhibit(true), upstream_inhibit(false)]
    );
    wait_until("shutdown status cleared", || m.shutdown_status().is_ok()).await;
}

/// logind does not take the new delay (no drop-in directory it reads): the start fails
/// after five reads with upstream's message, and no lock is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_bus_delay_not_updated_fails_start() {
    let bus = PrivateBus::start().unwrap();
    let conf = tempfile::tempdir().unwrap();
    let logind = FakeLogind::serve(&bus.address, S(5), None).await.unwrap();
    let killer = FakePodKiller::new(Vec::new());
    let m = manager(
        SystemBus {
            address: Some(bus.address.clone()),
            logind_config_directory: conf.path().to_path_buf(),
        },
        &killer,
        conf.path(),
    );
    let err = m.start().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "node shutdown manager was timed out after 5 attempts waiting for logind InhibitDelayMaxSec to update to 30s (ShutdownGracePeriod), current value is 5s"
    );
    assert_eq!(logind.kill_units().len(), 1);
    assert!(logind.inhibits().is_empty());
}

/// `DBusCon` alone: the delay in microseconds, `MonitorShutdown` delivering the signal's
/// value, `ReleaseInhibitLock` closing the descriptor logind handed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dbus_con_reads_delay_monitors_and_releases() {
    let bus = PrivateBus::start().unwrap();
    let logind = FakeLogind::serve(&bus.address, Duration::from_micros(1_500_000), None)
        .await
        .unwrap();
    let con = DBusCon::new(&SystemBus {
        address: Some(bus.address.clone()),
        ..SystemBus::default()
    })
    .await
    .unwrap();
    assert_eq!(
        con.current_inhibit_delay().await.unwrap(),
        Duration::from_millis(1500)
    );
    let mut events = con.monitor_shutdown().await.unwrap();
    let lock = con.inhibit_shutdown().await.unwrap();
    // Close-on-exec: no process the kubelet starts keeps the lock.
    let flags = nix::fcntl::fcntl(lock.fd().unwrap(), nix::fcntl::FcntlArg::F_GETFD).unwrap();
    assert!(nix::fcntl::FdFlag::from_bits_truncate(flags).contains(nix::fcntl::FdFlag::FD_CLOEXEC));
    logind.prepare_for_shutdown(true).await.unwrap();
    assert_eq!(
        tokio::time::timeout(S(10), events.recv()).await.unwrap(),
        Some(true)
    );
    assert!(!logind.wait_released(0, Duration::from_millis(200)).await);
    con.release_inhibit_lock(lock).unwrap();
    assert!(logind.wait_released(0, S(10)).await);
}

/// No bus at the address (as on a host without systemd): connecting fails, so `Start`
/// returns the error (the kubelet logs it and goes on).
#[tokio::test]
async fn no_bus_fails_start() {
    let dir = tempfile::tempdir().unwrap();
    let killer = FakePodKiller::new(Vec::new());
    let m = manager(
        SystemBus {
            address: Some(format!("unix:path={}", dir.path().join("none").display())),
            logind_config_directory: dir.path().to_path_buf(),
        },
        &killer,
        dir.path(),
    );
    let err = m.start().await.unwrap_err().to_string();
    assert!(err.contains("No such file or directory"), "{err}");
}

/// The bus goes away (dbus-daemon killed) and comes back at the same address: the watch
/// ends, the manager reconnects (`dbusReconnectPeriod`), takes a new lock from the new
/// logind and handles its `PrepareForShutdown`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_bus_lost_and_back_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    let bus = PrivateBus::start_in(dir.path()).unwrap();
    let address = bus.socket_address();
    let logind = FakeLogind::serve(&address, S(60), None).await.unwrap();
    let killer = FakePodKiller::new(vec![pod("p", 0)]);
    let m = manager(
        SystemBus {
            address: Some(address.clone()),
            logind_config_directory: dir.path().to_path_buf(),
        },
        &killer,
        dir.path(),
    );
    m.start().await.unwrap();
    assert_eq!(logind.inhibits().len(), 1);
    drop(logind);
    drop(bus);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let bus = PrivateBus::start_in(dir.path()).unwrap();
    let logind = FakeLogind::serve(&address, S(60), None).await.unwrap();
    assert!(
        logind.wait_inhibits(1, S(10)).await,
        "no reconnect: no lock taken on the new bus"
    );
    logind.prepare_for_shutdown(true).await.unwrap();
    assert!(logind.wait_released(0, S(10)).await);
    assert_eq!(killer.kills().len(), 1);
    drop(bus);
}
