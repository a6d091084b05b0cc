#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::fake::{FAKE_ENDPOINT, FakeRuntimeService, serve_fake};
use crate::v1::{CgroupDriver, LinuxRuntimeConfiguration, VersionResponse};
use crate::{
    CgroupDriverSource, CriError, RemoteRuntimeService, cgroup_driver_from_cri_with_sleep,
    pre_init_runtime_service, validate_runtime_version,
};

/// Runs cgroup_driver_from_cri with a sleep that records instead of sleeping.
async fn driver(
    rt: &FakeRuntimeService,
    configured: &str,
) -> (Result<crate::CriCgroupDriver, CriError>, Vec<Duration>) {
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let rec = sleeps.clone();
    let result = cgroup_driver_from_cri_with_sleep(rt, configured, move |d| {
        rec.lock().unwrap().push(d);
        async {}
    })
    .await;
    let sleeps = sleeps.lock().unwrap().clone();
    (result, sleeps)
}

fn unavailable() -> CriError {
    CriError::status(
        FAKE_ENDPOINT,
        "RuntimeConfig",
        tonic::Code::Unavailable,
        "starting",
    )
}

#[tokio::test]
async fn runtime_driver_wins_and_maps_names() {
    let rt = FakeRuntimeService::new();
    rt.set_cgroup_driver(Some(CgroupDriver::Systemd));
    let (got, sleeps) = driver(&rt, "cgroupfs").await;
    let got = got.unwrap();
    assert_eq!(
        (got.driver.as_str(), got.source),
        ("systemd", CgroupDriverSource::Runtime)
    );
    assert!(sleeps.is_empty());
    rt.set_cgroup_driver(Some(CgroupDriver::Cgroupfs));
    assert_eq!(driver(&rt, "systemd").await.0.unwrap().driver, "cgroupfs");
}

#[tokio::test]
async fn no_linux_section_keeps_the_configured_driver() {
    let rt = FakeRuntimeService::new();
    let got = driver(&rt, "systemd").await.0.unwrap();
    assert_eq!(
        (got.driver.as_str(), got.source),
        ("systemd", CgroupDriverSource::ConfigNoLinuxConfig)
    );
}

#[tokio::test]
async fn transient_errors_are_retried_two_seconds_apart() {
    let rt = FakeRuntimeService::new();
    rt.set_cgroup_driver(Some(CgroupDriver::Cgroupfs));
    rt.inject_error("RuntimeConfig", unavailable());
    rt.inject_error("RuntimeConfig", unavailable());
    let (got, sleeps) = driver(&rt, "systemd").await;
    assert_eq!(got.unwrap().driver, "cgroupfs");
    assert_eq!(sleeps, [Duration::from_secs(2); 2]);
    assert_eq!(rt.called().len(), 3);
}

#[tokio::test]
async fn three_failures_return_the_last_error() {
    let rt = FakeRuntimeService::new();
    for _ in 0..4 {
        rt.inject_error("RuntimeConfig", unavailable());
    }
    let (got, sleeps) = driver(&rt, "systemd").await;
    assert_eq!(got.unwrap_err().code(), Some(tonic::Code::Unavailable));
    assert_eq!(sleeps.len(), 2);
    assert_eq!(rt.called(), ["RuntimeConfig"; 3]);
}

#[tokio::test]
async fn unknown_driver_is_an_error() {
    let rt = FakeRuntimeService::new();
    rt.with_state(|s| s.linux_config = Some(LinuxRuntimeConfiguration { cgroup_driver: 7 }));
    let err = driver(&rt, "systemd").await.0.unwrap_err();
    assert_eq!(
        err.to_string(),
        "runtime returned an unknown cgroup driver 7"
    );
}

#[tokio::test]
async fn unimplemented_over_the_socket_falls_back_without_retrying() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve_fake(&dir.path().join("cri.sock")).await.unwrap();
    server.runtime.set_unimplemented("RuntimeConfig");
    let remote = RemoteRuntimeService::connect(&server.endpoint(), Duration::from_secs(5))
        .await
        .unwrap();
    let got = cgroup_driver_from_cri_with_sleep(&remote, "cgroupfs", |_| async {
        panic!("must not sleep on Unimplemented")
    })
    .await
    .unwrap();
    assert_eq!(
        (got.driver.as_str(), got.source),
        ("cgroupfs", CgroupDriverSource::ConfigRuntimeUnimplemented)
    );
    assert_eq!(server.runtime.called(), ["RuntimeConfig"]);
}

#[tokio::test]
async fn handshake_rejects_a_non_v1_runtime() {
    let rt = FakeRuntimeService::new();
    rt.with_state(|s| {
        s.version = Some(VersionResponse {
            version: "0.1.0".into(),
            runtime_name: "old".into(),
            runtime_version: "1.0".into(),
            runtime_api_version: "v1alpha2".into(),
        })
    });
    let err = validate_runtime_version(&rt, "unix:///old.sock")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "container runtime at unix:///old.sock reports CRI API version \"v1alpha2\"; kubelet-rs requires v1"
    );
}

#[tokio::test]
async fn pre_init_validates_the_image_service_too() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve_fake(&dir.path().join("cri.sock")).await.unwrap();
    server.image.inject_error(
        "ImageFsInfo",
        CriError::status(
            FAKE_ENDPOINT,
            "ImageFsInfo",
            tonic::Code::Internal,
            "broken",
        ),
    );
    let err = pre_init_runtime_service(&server.endpoint(), "", Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(err.method(), Some("ImageFsInfo"));
    let missing = format!("unix://{}", dir.path().join("img.sock").display());
    let err = pre_init_runtime_service(&server.endpoint(), &missing, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "failed to connect to image service at {missing}: "
        )),
        "{err}"
    );
}
