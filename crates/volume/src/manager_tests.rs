#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, Container, DownwardAPIVolumeFile, DownwardAPIVolumeSource,
    EmptyDirVolumeSource, ObjectFieldSelector, PodSecurityContext, PodSpec, ProjectedVolumeSource,
    ResourceRequirements, SecretVolumeSource, ServiceAccountTokenProjection, VolumeMount,
    VolumeProjection,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_container::events::FakeRecorder;
use kubelet_runtime::volumes::{VolumeAttributes, VolumeHost};

use super::*;
use crate::atomic_writer::DATA_DIR_NAME;
use crate::fake::{FakeVolumeObjects, ObjectCall};
use crate::host::MountedVolumes;
use crate::mounter::{FakeMounter, RealMounter};

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    objects: Arc<FakeVolumeObjects>,
    mounter: Arc<FakeMounter>,
    recorder: Arc<FakeRecorder>,
    manager: Arc<VolumeManager>,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let objects = Arc::new(FakeVolumeObjects::new());
    let mounter = Arc::new(FakeMounter::new());
    let recorder = Arc::new(FakeRecorder::new());
    let manager = Arc::new(VolumeManager::new(
        &root,
        objects.clone(),
        mounter.clone(),
        recorder.clone(),
        NodeEnvInfo {
            allocatable_memory: 1 << 30,
            ..NodeEnvInfo::default()
        },
    ));
    Fixture {
        _tmp: tmp,
        root,
        objects,
        mounter,
        recorder,
        manager,
    }
}

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        ..VolumeMount::default()
    }
}

fn pod(volumes: Vec<Volume>) -> Pod {
    let mounts = volumes
        .iter()
        .map(|v| mount(&v.name, &format!("/v/{}", v.name)))
        .collect();
    Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("ns".into()),
            uid: Some("uid-1".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            service_account_name: Some("default".into()),
            containers: vec![Container {
                name: "c".into(),
                volume_mounts: Some(mounts),
                resources: Some(ResourceRequirements {
                    limits: Some(BTreeMap::from([(
                        "memory".to_string(),
                        Quantity("64Mi".into()),
                    )])),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }],
            volumes: Some(volumes),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn cm_volume(name: &str, cm: &str) -> Volume {
    Volume {
        name: name.into(),
        config_map: Some(ConfigMapVolumeSource {
            name: cm.into(),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    }
}

fn secret_volume(name: &str, secret: &str) -> Volume {
    Volume {
        name: name.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.into()),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    }
}

fn token_volume(name: &str) -> Volume {
    Volume {
        name: name.into(),
        projected: Some(ProjectedVolumeSource {
            sources: Some(vec![VolumeProjection {
                service_account_token: Some(ServiceAccountTokenProjection {
                    path: "token".into(),
                    expiration_seconds: Some(600),
                    audience: None,
                }),
                ..VolumeProjection::default()
            }]),
            default_mode: Some(0o644),
        }),
        ..Volume::default()
    }
}

fn read(dir: &Path, key: &str) -> String {
    std::fs::read_to_string(dir.join(key)).unwrap()
}

#[tokio::test]
async fn configmap_volume_on_disk_follows_updates_and_drops_the_old_data_dir() {
    let f = fixture();
    f.objects
        .set_config_map("ns", "cfg", &[("a", "1"), ("b", "2")]);
    let p = pod(vec![cm_volume("config", "cfg")]);
    f.manager.wait_for_attach_and_mount(&p).await.unwrap();
    let dir = f
        .root
        .join("pods/uid-1/volumes/kubernetes.io~configmap/config");
    assert_eq!(f.manager.mounted_path("uid-1", "config"), Some(dir.clone()));
    assert_eq!((read(&dir, "a"), read(&dir, "b")), ("1".into(), "2".into()));
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o777
    );
    assert_eq!(
        std::fs::metadata(dir.join("a"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o644
    );
    assert!(
        f.mounter.log().is_empty(),
        "configMap volumes are not tmpfs: {:?}",
        f.mounter.log()
    );
    let old = std::fs::read_link(dir.join(DATA_DIR_NAME)).unwrap();

    // The next sync brings the update; a key that went away goes too.
    f.objects.set_config_map("ns", "cfg", &[("a", "changed")]);
    f.manager.wait_for_attach_and_mount(&p).await.unwrap();
    assert_eq!(read(&dir, "a"), "changed");
    assert!(std::fs::symlink_metadata(dir.join("b")).is_err());
    assert!(
        !dir.join(&old).exists(),
        "old ..data target {old:?} removed"
    );
    assert!(f.recorder.events().is_empty());
}

#[tokio::test]
async fn secret_volume_is_a_tmpfs_sized_by_the_pod_memory_limit() {
    let f = fixture();
    f.objects.set_secret("ns", "creds", &[("pass", b"pw")]);
    let p = pod(vec![secret_volume("creds", "creds")]);
    f.manager.wait_for_attach_and_mount(&p).await.unwrap();
    let dir = f.root.join("pods/uid-1/volumes/kubernetes.io~secret/creds");
    assert_eq!(read(&dir, "pass"), "pw");
    assert_eq!(
        f.mounter.mounts(),
        BTreeMap::from([(
            dir.clone(),
            vec![format!("size={}", 64 << 20), "noswap".to_string()]
        )])
    );
    // A second sync does not mount again.
    f.manager.wait_for_attach_and_mount(&p).await.unwrap();
    assert_eq!(f.mounter.log().len(), 1, "{:?}", f.mounter.log());
}

#[tokio::test]
async fn a_first_mount_failure_fails_the_sync_with_upstreams_messages() {
    let f = fixture();
    let p = pod(vec![
        cm_volume("config", "cfg"),
        secret_volume("creds", "creds"),
    ]);
    let err = f.manager.wait_for_attach_and_mount(&p).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "unmounted volumes=[\"config\", \"creds\"], unattached volumes=[], failed to process volumes=[]: configmap \"cfg\" not found"
    );
    assert_eq!(
        f.recorder.lines(),
        vec![
            "Warning FailedMount MountVolume.SetUp failed for volume \"config\" : configmap \"cfg\" not found",
            "Warning FailedMount MountVolume.SetUp failed for volume \"creds\" : secret \"creds\" not found",
        ]
    );
    assert!(f.mounter.mounts().is_empty(), "nothing left mounted");
    assert_eq!(f.manager.mounted_path("uid-1", "config"), None);
}

#[tokio::test]
async fn a_failing_remount_keeps_the_volume_and_only_records_an_event() {
    let f = fixture();
    f.objects.set_config_map("ns", "cfg", &[("a", "1")]);
    let p = pod(vec![cm_volume("config", "cfg")]);
    f.manager.wait_for_attach_and_mount(&p).await.unwrap();
    f.objects.delete_config_map("ns", "cfg");
    f.manager.wait_for_attach_and_mount(&p).await.unwrap();
    let dir = f
        .root
        .join("pods/uid-1/volumes/kubernetes.io~configmap/config");
    assert_eq!(read(&dir, "a"), "1");
    assert_eq!(f.recorder.lines().len(), 1, "{:?}", f.recorder.lines());
}

#[tokio::test]
async fn token_is_rewritten_when_the_manager_renews_it_and_teardown_forgets_it() {
    let f = fixture();
    f.objects.set_token("ns", "default", "tok-1");
    let p = pod(vec![token_volume("kube-api-access")]);
    f.manager.wait_for_attach_and_mount(&p).await.unwrap();
    let dir = f
        .root
        .join("pods/uid-1/volumes/kubernetes.io~projected/kube-api-access");
    assert_eq!(read(&dir, "token"), "tok-1");
    f.objects.set_token("ns", "default", "tok-2");
    f.manager.wait_for_attach_and_mount(&p).await.unwrap();
    assert_eq!(read(&dir, "token"), "tok-2");
    assert!(f.manager.has_mounted_volumes("uid-1"));

    f.manager.unmount_pod("uid-1").await.unwrap();
    assert!(!f.manager.has_mounted_volumes("uid-1"));
    assert!(!dir.exists());
    assert!(f.mounter.mounts().is_empty());
    assert_eq!(
        f.mounter.log().last().unwrap(),
        &format!("unmount {}", dir.display())
    );
    assert_eq!(
        f.objects.calls().last(),
        Some(&ObjectCall::DeleteToken("uid-1".into()))
    );
    assert_eq!(f.manager.mounted_path("uid-1", "kube-api-access"), None);
}

#[tokio::test]
async fn orphaned_pods_volumes_are_torn_down_from_disk() {
    let f = fixture();
    f.objects.set_secret("ns", "s", &[("k", b"v")]);
    let mut other = pod(vec![secret_volume("s", "s")]);
    other.metadata.uid = Some("uid-2".into());
    f.manager
        .wait_for_attach_and_mount(&pod(vec![secret_volume("s", "s")]))
        .await
        .unwrap();
    f.manager.wait_for_attach_and_mount(&other).await.unwrap();
    let errors = f.manager.cleanup_orphaned_pods(|uid| uid == "uid-1").await;
    assert!(errors.is_empty(), "{errors:?}");
    assert!(
        f.root
            .join("pods/uid-1/volumes/kubernetes.io~secret/s/k")
            .exists()
    );
    assert!(
        !f.root
            .join("pods/uid-2/volumes/kubernetes.io~secret/s")
            .exists()
    );
    assert!(
        f.root
            .join("pods/uid-2/volumes/kubernetes.io~secret")
            .is_dir(),
        "the plugin dir is left for cleanupOrphanedPodDirs' rmdir"
    );
    assert_eq!(f.mounter.mounts().len(), 1);
}

#[tokio::test]
async fn fs_group_owns_the_files_with_group_read_and_setgid_dirs() {
    let f = fixture();
    f.objects.set_config_map("ns", "cfg", &[("a", "1")]);
    let mut p = pod(vec![cm_volume("config", "cfg")]);
    p.spec.as_mut().unwrap().security_context = Some(PodSecurityContext {
        fs_group: Some(1234),
        ..PodSecurityContext::default()
    });
    let mut v = cm_volume("config", "cfg");
    v.config_map.as_mut().unwrap().default_mode = Some(0o400);
    p.spec.as_mut().unwrap().volumes = Some(vec![v]);
    f.manager.wait_for_attach_and_mount(&p).await.unwrap();
    let dir = f
        .root
        .join("pods/uid-1/volumes/kubernetes.io~configmap/config");
    let file = std::fs::metadata(dir.join("a")).unwrap();
    assert_eq!(file.gid(), 1234);
    assert_eq!(file.permissions().mode() & 0o777, 0o440);
    let ts = std::fs::metadata(dir.join(DATA_DIR_NAME)).unwrap();
    assert_eq!(ts.gid(), 1234);
    assert_eq!(ts.permissions().mode() & 0o2000, 0o2000, "setgid");
}

#[tokio::test]
async fn nested_mount_points_are_created_inside_the_volume() {
    let f = fixture();
    f.objects.set_config_map("ns", "cfg", &[("a", "1")]);
    let mut p = pod(vec![cm_volume("config", "cfg")]);
    p.spec.as_mut().unwrap().containers[0].volume_mounts = Some(vec![
        mount("config", "/etc/config"),
        mount("cache", "/etc/config/cache/"),
        mount("deeper", "/etc/config/cache/deeper"),
        mount("other", "/etc/configuration"),
    ]);
    f.manager.wait_for_attach_and_mount(&p).await.unwrap();
    let dir = f
        .root
        .join("pods/uid-1/volumes/kubernetes.io~configmap/config");
    assert!(dir.join("cache").is_dir());
    assert!(
        !dir.join("cache/deeper").exists(),
        "double-nested is the other volume's job"
    );
    assert!(!dir.join("uration").exists());
    assert_eq!(read(&dir, "a"), "1");
}

#[tokio::test]
async fn downward_api_volume_with_no_api_server() {
    let tmp = tempfile::tempdir().unwrap();
    let mounter = Arc::new(FakeMounter::new());
    let manager = VolumeManager::new(
        tmp.path(),
        Arc::new(crate::objects::NoVolumeObjects),
        mounter.clone(),
        Arc::new(FakeRecorder::new()),
        NodeEnvInfo::default(),
    );
    let v = Volume {
        name: "podinfo".into(),
        downward_api: Some(DownwardAPIVolumeSource {
            items: Some(vec![DownwardAPIVolumeFile {
                path: "name".into(),
                field_ref: Some(ObjectFieldSelector {
                    field_path: "metadata.name".into(),
                    api_version: None,
                }),
                ..DownwardAPIVolumeFile::default()
            }]),
            default_mode: None,
        }),
        ..Volume::default()
    };
    let p = pod(vec![v]);
    manager.wait_for_attach_and_mount(&p).await.unwrap();
    let dir = tmp
        .path()
        .join("pods/uid-1/volumes/kubernetes.io~downward-api/podinfo");
    assert_eq!(read(&dir, "name"), "web");
    assert!(
        mounter.mounts().contains_key(&dir),
        "downwardAPI is memory-backed"
    );
}

#[tokio::test]
async fn mounted_volumes_host_serves_ours_and_delegates_the_rest() {
    let f = fixture();
    f.objects.set_config_map("ns", "cfg", &[("a", "1")]);
    let os = Arc::new(kubelet_runtime::os::FakeOs::new());
    let local = Arc::new(kubelet_runtime::volumes::LocalVolumes::new(
        os,
        "/var/lib/kubelet",
    ));
    let host = MountedVolumes::new(f.manager.clone(), local);
    let cm = cm_volume("config", "cfg");
    let scratch = Volume {
        name: "scratch".into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    };
    let p = pod(vec![cm.clone(), scratch.clone()]);
    let err = host.volume_path(&p, &cm).unwrap_err();
    assert_eq!(err.to_string(), "volume \"config\" is not mounted");
    f.manager.wait_for_attach_and_mount(&p).await.unwrap();
    assert_eq!(
        host.volume_path(&p, &cm).unwrap(),
        f.root
            .join("pods/uid-1/volumes/kubernetes.io~configmap/config")
    );
    assert_eq!(
        host.volume_path(&p, &scratch).unwrap(),
        Path::new("/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~empty-dir/scratch")
    );
    let ours = host.attributes(&cm);
    assert!(ours.read_only && ours.managed && ours.selinux_relabel);
    assert_eq!(host.attributes(&scratch), VolumeAttributes::default());
}

/// Needs root: a real tmpfs under a temp root, unmounted and removed at termination.
#[tokio::test]
async fn real_tmpfs_secret_volume_set_up_and_torn_down() {
    let tmp = tempfile::tempdir().unwrap();
    let objects = Arc::new(FakeVolumeObjects::new());
    objects.set_secret("ns", "creds", &[("pass", b"pw")]);
    let mounter = Arc::new(RealMounter::new());
    let manager = VolumeManager::new(
        tmp.path(),
        objects,
        mounter.clone(),
        Arc::new(FakeRecorder::new()),
        NodeEnvInfo {
            allocatable_memory: 1 << 30,
            ..NodeEnvInfo::default()
        },
    );
    let p = pod(vec![secret_volume("creds", "creds")]);
    let mounted = manager.wait_for_attach_and_mount(&p).await;
    let dir = tmp
        .path()
        .join("pods/uid-1/volumes/kubernetes.io~secret/creds");
    let is_tmpfs = mounter.is_tmpfs_mount(&dir);
    let content = std::fs::read_to_string(dir.join("pass"));
    // Again: the tmpfs is reused, not stacked.
    let again = manager.wait_for_attach_and_mount(&p).await;
    let torn = manager.unmount_pod("uid-1").await;
    mounted.unwrap();
    assert!(is_tmpfs.unwrap(), "a tmpfs is mounted");
    assert_eq!(content.unwrap(), "pw");
    again.unwrap();
    torn.unwrap();
    assert!(!dir.exists());
}

/// emptyDirs are set up in `WaitForAttachAndMount` when a local volume host is given: a
/// HugePages emptyDir whose page size the pod does not request is a `FailedMount` with
/// upstream's message, before any container; a good one is mounted there.
#[tokio::test]
async fn empty_dir_set_up_errors_are_failed_mounts() {
    let f = fixture();
    let os = Arc::new(kubelet_runtime::os::FakeOs::new());
    let local = Arc::new(kubelet_runtime::volumes::LocalVolumes::new(
        os.clone(),
        "/var/lib/kubelet",
    ));
    let manager = VolumeManager::new(
        &f.root,
        f.objects.clone(),
        f.mounter.clone(),
        f.recorder.clone(),
        NodeEnvInfo::default(),
    )
    .with_local_volumes(local);
    let huge = |name: &str, medium: &str| Volume {
        name: name.into(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some(medium.into()),
            size_limit: None,
        }),
        ..Volume::default()
    };
    let mut p = pod(vec![
        huge("two", "HugePages-2Mi"),
        huge("gig", "HugePages-1Gi"),
    ]);
    p.spec.as_mut().unwrap().containers[0].resources = Some(ResourceRequirements {
        requests: Some(BTreeMap::from([(
            "hugepages-2Mi".to_string(),
            Quantity("4Mi".into()),
        )])),
        ..ResourceRequirements::default()
    });
    let err = manager.wait_for_attach_and_mount(&p).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "unmounted volumes=[\"gig\"], unattached volumes=[], failed to process volumes=[]: medium HugePages-1Gi: hugePages storage requested, but there is no resource request for huge pages"
    );
    assert_eq!(
        f.recorder.lines(),
        [
            "Warning FailedMount MountVolume.SetUp failed for volume \"gig\" : medium HugePages-1Gi: hugePages storage requested, but there is no resource request for huge pages"
        ]
    );
    let two = Path::new("/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~empty-dir/two");
    assert_eq!(os.hugetlbfs_options(two).as_deref(), Some("pagesize=2Mi"));
}

/// An image volume needs no set-up here (the runtime mounts the image); with the gate
/// `ImageVolume` off no plugin matches it and the pod's volumes never count as mounted.
#[tokio::test]
async fn image_volumes_wait_for_nothing_unless_the_gate_is_off() {
    let f = fixture();
    let image = Volume {
        name: "img".into(),
        image: Some(k8s_openapi::api::core::v1::ImageVolumeSource {
            reference: Some("busybox:1.36".into()),
            pull_policy: Some("IfNotPresent".into()),
        }),
        ..Volume::default()
    };
    let p = pod(vec![image]);
    f.manager.wait_for_attach_and_mount(&p).await.unwrap();
    assert_eq!(f.manager.mounted_path("uid-1", "img"), None);
    let _gate = kubelet_container::gates::set_image_volume_during_test(false);
    let err = f.manager.wait_for_attach_and_mount(&p).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "unmounted volumes=[\"img\"], unattached volumes=[], failed to process volumes=[\"img\"]: no volume plugin matched"
    );
}
