//! Image volumes (`spec.volumes[*].image`, gate `ImageVolume`) against the real containerd
//! 1.6 of `hack/runtime-up.sh`, which predates them (containerd implements them since 2.1).
//!
//! * What the runtime does with a CRI `Mount` that names an image and no host path, asked
//!   directly over the CRI: the reason kubelet-rs does not hand it such mounts.
//! * What kubelet-rs does instead: the image is pulled per the volume's `pullPolicy` (a
//!   `Never` volume whose image is absent fails with `ErrImageNeverPull`), then the
//!   container mounting it fails with `CreateContainerError` and a message naming the
//!   volume, the field and the runtime, while the pod's other containers run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::node::{Node, runtime_lock};
use kubelet_cri::v1::{
    ContainerConfig, ContainerMetadata, ImageSpec, Mount, PodSandboxConfig, PodSandboxMetadata,
};
use kubelet_cri::{ImageService, RuntimeService};

const T: Duration = Duration::from_secs(60);

/// The outcome of creating and starting a container with an image mount at `/vol`.
#[derive(Debug)]
#[allow(dead_code)] // the payloads are printed
enum RawOutcome {
    CreateFailed(String),
    StartFailed(String),
    /// Started; what `ls /vol` printed.
    Started(String),
}

async fn raw_image_mount(node: &Node) -> RawOutcome {
    let images = kubelet_cri::RemoteImageService::connect(&node.endpoint, T)
        .await
        .unwrap();
    let busybox = ImageSpec {
        image: node.busybox.clone(),
        ..ImageSpec::default()
    };
    let image_id = images
        .image_status(&busybox, false)
        .await
        .unwrap()
        .image
        .unwrap()
        .id;
    let dir = tempfile::tempdir().unwrap();
    let sb_cfg = PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: "raw-image-mount".into(),
            namespace: "kubelet-rs-image-volumes".into(),
            uid: format!("uid-raw-image-mount-{}", std::process::id()),
            attempt: 0,
        }),
        hostname: "raw".into(),
        log_directory: dir.path().display().to_string(),
        ..PodSandboxConfig::default()
    };
    let cri = &node.cri;
    let sb = cri.run_pod_sandbox(&sb_cfg, "").await.unwrap();
    let config = ContainerConfig {
        metadata: Some(ContainerMetadata {
            name: "c".into(),
            attempt: 0,
        }),
        image: Some(busybox.clone()),
        command: vec!["sleep".into(), "3600".into()],
        log_path: "c.log".into(),
        mounts: vec![Mount {
            container_path: "/vol".into(),
            host_path: String::new(),
            readonly: true,
            image: Some(ImageSpec {
                image: image_id,
                user_specified_image: node.busybox.clone(),
                ..ImageSpec::default()
            }),
            ..Mount::default()
        }],
        ..ContainerConfig::default()
    };
    let outcome = match cri.create_container(&sb, &config, &sb_cfg).await {
        Err(e) => RawOutcome::CreateFailed(e.to_string()),
        Ok(id) => match cri.start_container(&id).await {
            Err(e) => RawOutcome::StartFailed(e.to_string()),
            Ok(()) => {
                let cmd = vec!["sh".into(), "-c".into(), "ls -A /vol 2>&1; true".into()];
                let out = cri.exec_sync(&id, &cmd, T).await.unwrap();
                RawOutcome::Started(String::from_utf8_lossy(&out.stdout).into_owned())
            }
        },
    };
    cri.stop_pod_sandbox(&sb).await.unwrap();
    cri.remove_pod_sandbox(&sb).await.unwrap();
    outcome
}

/// containerd 1.6 does not know `Mount.image`: the mount is what `host_path` alone says,
/// an empty path it fails to create (upstream's kubelet would show this message as the
/// `CreateContainerError`).
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn containerd_1_6_fails_a_cri_image_mount_on_its_empty_host_path() {
    let _g = runtime_lock().await;
    let node = Node::new("rt-imgvol-raw").await;
    let version = node.cri.version("0.1.0").await.unwrap();
    assert_eq!(version.runtime_name, "containerd", "{version:?}");
    assert!(
        version.runtime_version.starts_with("1.6."),
        "this test describes containerd 1.6: {version:?}"
    );
    match raw_image_mount(&node).await {
        RawOutcome::CreateFailed(e) => assert!(
            e.contains(
                "failed to generate spec: failed to mkdir \"\": mkdir : no such file or directory"
            ),
            "{e}"
        ),
        other => panic!("containerd {}: {other:?}", version.runtime_version),
    }
}

fn waiting(pod: &serde_json::Value, container: &str) -> Option<(String, String)> {
    let statuses = pod["status"]["containerStatuses"].as_array()?;
    let s = statuses.iter().find(|s| s["name"] == container)?;
    let w = &s["state"]["waiting"];
    Some((
        w["reason"].as_str()?.to_string(),
        w["message"].as_str().unwrap_or_default().to_string(),
    ))
}

/// kubelet-rs on containerd 1.6: the image volume's image is looked up per `pullPolicy`
/// (`IfNotPresent`, present: used; `Never`, absent: `ErrImageNeverPull`), the container
/// mounting a pulled image volume fails with `CreateContainerError` naming the volume and
/// the runtime, and the pod's container without image mounts runs.
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn image_volumes_are_pulled_per_policy_then_refused_by_name_on_containerd_1_6() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-imgvol").await;
    let version = node.cri.version("0.1.0").await.unwrap();
    node.start().await;
    let manifest = format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: imgvol
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: mounts
    image: {image}
    imagePullPolicy: Never
    command: [\"sleep\", \"3600\"]
    volumeMounts:
    - {{name: tools, mountPath: /tools, subPath: bin}}
  - name: never
    image: {image}
    imagePullPolicy: Never
    command: [\"sleep\", \"3600\"]
    volumeMounts:
    - {{name: absent, mountPath: /absent}}
  - name: plain
    image: {image}
    imagePullPolicy: Never
    command: [\"sleep\", \"3600\"]
  volumes:
  - name: tools
    image:
      reference: {image}
      pullPolicy: IfNotPresent
  - name: absent
    image:
      reference: example.com/kubelet-rs-absent:1
      pullPolicy: Never
",
        image = node.busybox
    );
    node.write_manifest("imgvol.yaml", &manifest);
    let pod = node
        .wait_for(
            "imgvol: mounts and never waiting, plain running",
            T,
            || async {
                let pod = node.pod("imgvol")?;
                let mounts = waiting(&pod, "mounts")?;
                let never = waiting(&pod, "never")?;
                let plain_running = pod["status"]["containerStatuses"]
                    .as_array()?
                    .iter()
                    .any(|s| s["name"] == "plain" && s["state"]["running"].is_object());
                (mounts.0 == "CreateContainerError"
                    && never.0 == "ErrImageNeverPull"
                    && plain_running)
                    .then_some(pod)
            },
        )
        .await;
    let (_, mounts) = waiting(&pod, "mounts").unwrap();
    assert_eq!(
        mounts,
        format!(
            "ImageVolumeMountFailed: the container runtime containerd {} cannot mount image volumes (containerd 2.1 or later can): container \"mounts\" mounts image volume \"tools\" (spec.volumes[0].image)",
            version.runtime_version
        )
    );
    let (_, never) = waiting(&pod, "never").unwrap();
    assert_eq!(
        never,
        "Container image \"example.com/kubelet-rs-absent:1\" is not present with pull policy of Never"
    );
    // Neither container was created; nothing was pulled (`IfNotPresent` with the image
    // present, `Never`): the kubelet logs every pull's end.
    let names: Vec<String> = node
        .containers("imgvol")
        .await
        .into_iter()
        .filter_map(|c| c.metadata.map(|m| m.name))
        .collect();
    assert_eq!(names, ["plain"], "{names:?}");
    // `incrementImageVolumeMetrics`: the refused mount counts as a mount error.
    let (code, metrics) = common::http_get(node.ro_port, "/metrics").unwrap();
    assert_eq!(code, 200);
    let value = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{name} not in /metrics"))
    };
    assert!(value("kubelet_image_volume_mounted_errors_total") >= 1.0);
    assert!(value("kubelet_image_volume_requested_total") >= 1.0);
    assert_eq!(value("kubelet_image_volume_mounted_succeed_total"), 0.0);
    let log = node.log();
    assert!(
        !log.contains("Successfully pulled image") && !log.contains("Failed to pull image"),
        "{log}"
    );
    node.cleanup().await;
}
