//! The real client ([`DbusSystemdManager`] under [`Systemd`]) against the fake systemd
//! manager on a private `dbus-daemon`: calls, property variants, job paths and the
//! `JobRemoved` signals end to end.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use crate::fake_systemd::{FakeSystemd, PrivateBus};
use crate::{
    DbusSystemdManager, PropValue, Systemd, SystemdCall, SystemdError, SystemdManager, prop,
};

async fn setup(job_timeout: Duration) -> (PrivateBus, FakeSystemd, Arc<DbusSystemdManager>) {
    let bus = PrivateBus::start().unwrap();
    let fake = FakeSystemd::serve(&bus.address).await.unwrap();
    let client = Arc::new(DbusSystemdManager::with_address(&bus.address, job_timeout).unwrap());
    (bus, fake, client)
}

fn slice_props() -> Vec<crate::Property> {
    vec![
        prop(
            "Description",
            PropValue::Str("libcontainer container kubepods.slice".into()),
        ),
        prop("Wants", PropValue::StrList(vec!["-.slice".into()])),
        prop("MemoryAccounting", PropValue::Bool(true)),
        prop("DefaultDependencies", PropValue::Bool(false)),
    ]
}

/// Start (waiting for `JobRemoved` "done"), an existing slice ignored, properties of every
/// variant type, stop, reset — the calls as the fake received them.
#[tokio::test(flavor = "multi_thread")]
async fn real_bus_start_set_stop_with_job_results() {
    let (_bus, fake, client) = setup(Duration::from_secs(10)).await;
    let sd = Systemd::new(client.clone());
    let calls = tokio::task::spawn_blocking(move || {
        sd.start_unit("kubepods.slice", &slice_props(), true)?;
        // Exists: UnitExists from the bus, ignored for a slice.
        sd.start_unit("kubepods.slice", &slice_props(), true)?;
        assert_eq!(sd.systemd_version(), 252);
        let mut props = vec![prop("MemoryMax", PropValue::U64(1 << 30))];
        let mut quota = 50_000;
        sd.add_cpu_quota(&mut props, &mut quota, 100_000);
        sd.add_cpuset(&mut props, "0-3,9", "")?;
        props.push(prop("TasksMax", PropValue::U64(u64::MAX)));
        sd.set_unit_properties("kubepods.slice", &props)?;
        sd.stop_unit("kubepods.slice")?;
        Ok::<_, SystemdError>(props)
    })
    .await
    .unwrap()
    .unwrap();
    let start = SystemdCall::StartTransientUnit {
        name: "kubepods.slice".into(),
        mode: "replace".into(),
        properties: slice_props(),
    };
    assert_eq!(
        fake.calls(),
        [
            start.clone(),
            start,
            SystemdCall::SetUnitProperties {
                name: "kubepods.slice".into(),
                runtime: true,
                properties: calls.clone(),
            },
            SystemdCall::StopUnit {
                name: "kubepods.slice".into(),
                mode: "replace".into(),
            },
            SystemdCall::ResetFailedUnit {
                name: "kubepods.slice".into(),
            },
        ]
    );
    assert_eq!(
        calls,
        [
            prop("MemoryMax", PropValue::U64(1 << 30)),
            prop("CPUQuotaPeriodUSec", PropValue::U64(100_000)),
            prop("CPUQuotaPerSecUSec", PropValue::U64(500_000)),
            prop("AllowedCPUs", PropValue::Bytes(vec![0x0f, 0x02])),
            prop("TasksMax", PropValue::U64(u64::MAX)),
        ]
    );
    assert!(fake.active().is_empty());
}

/// A job ending `failed` is upstream's error and resets the unit; a job that never ends
/// times out with upstream's message.
#[tokio::test(flavor = "multi_thread")]
async fn real_bus_failed_and_unfinished_jobs() {
    let (_bus, fake, client) = setup(Duration::from_millis(500)).await;
    fake.set_job_result("failed");
    let sd = Arc::new(Systemd::new(client.clone()));
    let s = sd.clone();
    let err = tokio::task::spawn_blocking(move || s.start_unit("a.slice", &[], true))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "error creating systemd unit `a.slice`: got `failed`"
    );
    assert_eq!(
        fake.calls().last(),
        Some(&SystemdCall::ResetFailedUnit {
            name: "a.slice".into()
        })
    );
    fake.hold_jobs(true);
    let s = sd.clone();
    let err = tokio::task::spawn_blocking(move || s.start_unit("b.slice", &[], true))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Timeout waiting for systemd to create b.slice"
    );
    let s = sd.clone();
    let err = tokio::task::spawn_blocking(move || s.stop_unit("b.slice"))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Timed out while waiting for systemd to remove b.slice"
    );
}

/// Without a bus the first call fails naming the connection; the calls work from a tokio
/// worker thread too (the manager has its own runtime).
#[tokio::test(flavor = "multi_thread")]
async fn no_bus_is_a_connect_error() {
    let dir = tempfile::tempdir().unwrap();
    let addr = format!("unix:path={}", dir.path().join("none").display());
    let client = DbusSystemdManager::with_address(&addr, Duration::from_secs(1)).unwrap();
    let err = client
        .set_unit_properties("x.slice", true, &[])
        .unwrap_err();
    assert!(
        matches!(err, SystemdError::Connect(_))
            && err.to_string().contains("failed to connect to dbus"),
        "{err}"
    );
}
