#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::os::{FakeEntry, FakeOs, RealOs};
use k8s_openapi::api::core::v1::{Container, PodSecurityContext, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const ROOT: &str = "/var/lib/kubelet";
const ED: &str = "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir";

fn pod(limits: &[Option<&str>], fs_group: Option<i64>) -> Pod {
    let containers = limits
        .iter()
        .enumerate()
        .map(|(i, l)| Container {
            name: format!("c{i}"),
            resources: l.map(|l| ResourceRequirements {
                limits: Some([("memory".to_string(), Quantity(l.into()))].into()),
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        })
        .collect();
    Pod {
        metadata: ObjectMeta {
            uid: Some("u1".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers,
            security_context: fs_group.map(|g| PodSecurityContext {
                fs_group: Some(g),
                ..PodSecurityContext::default()
            }),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn empty_dir(name: &str, medium: Option<&str>, size: Option<&str>) -> Volume {
    Volume {
        name: name.into(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: medium.map(Into::into),
            size_limit: size.map(|s| Quantity(s.into())),
        }),
        ..Volume::default()
    }
}

fn host_path(path: &str, type_: &str) -> Volume {
    Volume {
        name: "hp".into(),
        host_path: Some(HostPathVolumeSource {
            path: path.into(),
            type_: Some(type_.into()),
        }),
        ..Volume::default()
    }
}

fn fake() -> (Arc<FakeOs>, LocalVolumes) {
    let os = Arc::new(FakeOs::new());
    let lv = LocalVolumes::new(os.clone(), ROOT)
        .with_node_allocatable_memory(8 << 30)
        .with_tmpfs_noswap(false);
    (os, lv)
}

fn err(lv: &LocalVolumes, v: &Volume) -> String {
    lv.volume_path(&pod(&[None], None), v)
        .unwrap_err()
        .to_string()
}

#[test]
fn host_path_types_are_checked_as_upstream() {
    let (os, lv) = fake();
    let p = pod(&[None], None);
    os.mkdir_all(Path::new("/srv/dir")).unwrap();
    os.write_file(Path::new("/srv/file"), b"x").unwrap();
    os.symlink(Path::new("/srv/dir"), Path::new("/srv/link"))
        .unwrap();
    fake_special(&os, "/run/x.sock", FileType::Socket);
    fake_special(&os, "/dev/null", FileType::CharDevice);
    fake_special(&os, "/dev/sda", FileType::BlockDevice);

    for (path, t) in [
        ("/srv/dir", "Directory"),
        ("/srv/link", "Directory"),
        ("/srv/dir", "DirectoryOrCreate"),
        ("/srv/file", "File"),
        ("/srv/file", "FileOrCreate"),
        ("/run/x.sock", "Socket"),
        ("/dev/null", "CharDevice"),
        ("/dev/sda", "BlockDevice"),
        ("/anything/missing", ""),
    ] {
        let got = lv.volume_path(&p, &host_path(path, t)).unwrap();
        assert_eq!(got, PathBuf::from(path), "{path} {t}");
    }
    for (path, t, msg) in [
        ("/srv/file", "Directory", "/srv/file is not a directory"),
        ("/missing", "Directory", "/missing is not a directory"),
        (
            "/srv/file",
            "DirectoryOrCreate",
            "/srv/file is not a directory",
        ),
        ("/srv/dir", "File", "/srv/dir is not a file"),
        ("/srv/dir", "FileOrCreate", "/srv/dir is not a file"),
        ("/srv/file", "Socket", "/srv/file is not a socket file"),
        ("/missing", "Socket", "/missing is not a socket file"),
        (
            "/dev/sda",
            "CharDevice",
            "/dev/sda is not a character device",
        ),
        (
            "/dev/null",
            "BlockDevice",
            "/dev/null is not a block device",
        ),
    ] {
        assert_eq!(
            err(&lv, &host_path(path, t)),
            format!("hostPath type check failed: {msg}"),
            "{path} {t}"
        );
    }
    assert_eq!(
        err(&lv, &host_path("/x", "Bogus")),
        "Bogus is an invalid volume type"
    );

    lv.volume_path(&p, &host_path("/new/dir", "DirectoryOrCreate"))
        .unwrap();
    assert!(os.is_dir(Path::new("/new/dir")));
    lv.volume_path(&p, &host_path("/srv/new-file", "FileOrCreate"))
        .unwrap();
    assert_eq!(
        os.attrs(Path::new("/srv/new-file")),
        Some((0o644, None)),
        "created with 0644"
    );
    // As upstream, FileOrCreate does not create missing parents.
    assert!(
        lv.volume_path(&p, &host_path("/nodir/f", "FileOrCreate"))
            .is_err()
    );
}

fn fake_special(os: &FakeOs, path: &str, t: FileType) {
    let p = Path::new(path);
    os.mkdir_all(p.parent().unwrap()).unwrap();
    os.insert(p, FakeEntry::Special(t));
}

#[test]
fn host_path_on_the_real_filesystem() {
    let tmp = tempfile::tempdir().unwrap();
    let lv = LocalVolumes::new(Arc::new(RealOs), tmp.path());
    let p = pod(&[None], None);
    let sock = tmp.path().join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let s = sock.to_str().unwrap();
    lv.volume_path(&p, &host_path(s, "Socket")).unwrap();
    lv.volume_path(&p, &host_path("/dev/null", "CharDevice"))
        .unwrap();
    assert!(
        lv.volume_path(&p, &host_path(s, "File"))
            .unwrap_err()
            .to_string()
            .ends_with("is not a file")
    );
    let f = tmp.path().join("f");
    lv.volume_path(&p, &host_path(f.to_str().unwrap(), "FileOrCreate"))
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & !0o022, 0o644 & !0o022);
}

#[test]
fn disk_empty_dir_is_0777_and_set_up_once_with_fs_group() {
    let (os, lv) = fake();
    let p = pod(&[None], Some(2000));
    let dir = lv.volume_path(&p, &empty_dir("cache", None, None)).unwrap();
    assert_eq!(dir, PathBuf::from(format!("{ED}/cache")));
    assert_eq!(os.attrs(&dir), Some((0o2777, Some(2000))));
    assert!(os.exists(Path::new(
        "/var/lib/kubelet/pods/u1/plugins/kubernetes.io~empty-dir/cache/ready"
    )));
    // Ready: a second call does not walk again.
    os.write_file(&dir.join("f"), b"x").unwrap();
    lv.volume_path(&p, &empty_dir("cache", None, None)).unwrap();
    assert_eq!(os.attrs(&dir.join("f")), None);
    assert!(os.mount_points().is_empty());
}

#[test]
fn memory_empty_dir_is_a_sized_tmpfs() {
    let (os, lv) = fake();
    // No pod limit: node allocatable.
    let dir = lv
        .volume_path(&pod(&[None], None), &empty_dir("m", Some("Memory"), None))
        .unwrap();
    assert_eq!(os.tmpfs_options(&dir).as_deref(), Some("size=8589934592"));
    // Pod limit below allocatable (all containers declare one).
    let limited = pod(&[Some("64Mi"), Some("64Mi")], None);
    assert_eq!(
        lv.empty_dir_memory_size(
            &limited,
            empty_dir("m", None, None).empty_dir.as_ref().unwrap()
        ),
        128 << 20
    );
    // One container without a limit: no pod limit.
    let partial = pod(&[Some("64Mi"), None], None);
    assert_eq!(
        lv.empty_dir_memory_size(
            &partial,
            empty_dir("m", None, None).empty_dir.as_ref().unwrap()
        ),
        8 << 30
    );
    // sizeLimit wins when smaller; ignored when larger than the pod limit.
    let v = empty_dir("s", Some("Memory"), Some("1Mi"));
    assert_eq!(
        lv.empty_dir_memory_size(&limited, v.empty_dir.as_ref().unwrap()),
        1 << 20
    );
    let v = empty_dir("s", Some("Memory"), Some("1Gi"));
    assert_eq!(
        lv.empty_dir_memory_size(&limited, v.empty_dir.as_ref().unwrap()),
        128 << 20
    );

    let noswap = LocalVolumes::new(os.clone(), ROOT).with_tmpfs_noswap(true);
    let v = empty_dir("n", Some("Memory"), Some("1Mi"));
    let dir = noswap.volume_path(&limited, &v).unwrap();
    assert_eq!(
        os.tmpfs_options(&dir).as_deref(),
        Some("size=1048576,noswap")
    );
    // Idempotent: mounted once.
    noswap.volume_path(&limited, &v).unwrap();
    assert_eq!(os.mount_points().iter().filter(|m| **m == dir).count(), 1);

    let e = lv
        .volume_path(&limited, &empty_dir("o", Some("Floppy"), None))
        .unwrap_err();
    assert_eq!(e.to_string(), "unknown storage medium \"Floppy\"");
}

/// A pod whose containers request the given huge page resources (`hugepages-2Mi` ...).
fn hugepages_pod(requests: &[&[&str]]) -> Pod {
    let mut p = pod(&vec![None; requests.len()], None);
    let spec = p.spec.as_mut().unwrap();
    for (c, names) in spec.containers.iter_mut().zip(requests) {
        c.resources = Some(ResourceRequirements {
            requests: Some(
                names
                    .iter()
                    .map(|n| (n.to_string(), Quantity("4Mi".into())))
                    .collect(),
            ),
            ..ResourceRequirements::default()
        });
    }
    p
}

#[test]
fn huge_pages_empty_dir_mounts_hugetlbfs_of_the_requested_page_size() {
    let (os, lv) = fake();
    let p = hugepages_pod(&[&["hugepages-2Mi", "memory"]]);
    let v = empty_dir("hp", Some("HugePages"), None);
    let dir = lv.volume_path(&p, &v).unwrap();
    assert_eq!(dir, Path::new(ED).join("hp"));
    assert_eq!(os.hugetlbfs_options(&dir).as_deref(), Some("pagesize=2Mi"));
    assert_eq!(os.statfs_type(&dir).unwrap(), HUGETLBFS_MAGIC);
    // Idempotent (`GetMountMedium`): mounted once.
    lv.volume_path(&p, &v).unwrap();
    assert_eq!(os.mount_points().iter().filter(|m| **m == dir).count(), 1);

    // HugePages-<size> picks the request of that size among several.
    let both = hugepages_pod(&[&["hugepages-2Mi"], &["hugepages-1Gi"]]);
    let sized = empty_dir("one-gig", Some("HugePages-1Gi"), None);
    let dir = lv.volume_path(&both, &sized).unwrap();
    assert_eq!(os.hugetlbfs_options(&dir).as_deref(), Some("pagesize=1Gi"));
    // Mounted with the same size (as `/proc/mounts` shows it, `1024M`): nothing to do.
    lv.volume_path(&both, &sized).unwrap();
    assert_eq!(os.mount_points().iter().filter(|m| **m == dir).count(), 1);
    // An init container's request counts too.
    let mut init = hugepages_pod(&[&[]]);
    init.spec.as_mut().unwrap().init_containers = Some(
        hugepages_pod(&[&["hugepages-2Mi"]])
            .spec
            .unwrap()
            .containers,
    );
    assert_eq!(
        get_page_size_mount_option("HugePages-2Mi", &init).unwrap(),
        "pagesize=2Mi"
    );
}

#[test]
fn huge_pages_empty_dir_errors_are_upstreams() {
    let (os, lv) = fake();
    let e = |p: &Pod, medium: &str| {
        lv.volume_path(p, &empty_dir("hp", Some(medium), None))
            .unwrap_err()
            .to_string()
    };
    let none = hugepages_pod(&[&["memory"]]);
    assert_eq!(
        e(&none, "HugePages"),
        "medium HugePages: hugePages storage requested, but there is no resource request for huge pages"
    );
    let two_mi = hugepages_pod(&[&["hugepages-2Mi"]]);
    assert_eq!(
        e(&two_mi, "HugePages-1Gi"),
        "medium HugePages-1Gi: hugePages storage requested, but there is no resource request for huge pages"
    );
    let both = hugepages_pod(&[&["hugepages-2Mi"], &["hugepages-1Gi"]]);
    assert_eq!(
        e(&both, "HugePages"),
        "medium: HugePages can't be used if container requests multiple huge page sizes"
    );
    assert!(
        e(&two_mi, "HugePages-x").starts_with("quantities must match the regular expression"),
        "{}",
        e(&two_mi, "HugePages-x")
    );
    assert!(
        os.mount_points().is_empty(),
        "nothing mounted on error: {:?}",
        os.mount_points()
    );
    // Mounted with another page size than the medium asks for.
    let dir = Path::new(ED).join("hp");
    os.mkdir_all(&dir).unwrap();
    os.mount_hugetlbfs(&dir, "rw,relatime,pagesize=2M").unwrap();
    assert_eq!(
        e(&both, "HugePages-1Gi"),
        format!(
            "pod u1: mounted dir {} pagesize '2Mi' and requested medium size '1Gi' differ",
            dir.display()
        )
    );
}

#[test]
fn proc_mounts_options_are_read_for_the_exact_mount_point() {
    let mounts = "\
tmpfs /run tmpfs rw,nosuid 0 0
nodev /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/a\\040b hugetlbfs rw,relatime,pagesize=2M 0 0
nodev /x hugetlbfs rw,pagesize=1024M 0 0
";
    assert_eq!(
        crate::os::mount_options_in(
            mounts,
            Path::new("/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/a b")
        )
        .unwrap(),
        ["rw", "relatime", "pagesize=2M"]
    );
    assert_eq!(
        crate::os::mount_options_in(mounts, Path::new("/x")).unwrap(),
        ["rw", "pagesize=1024M"]
    );
    assert!(crate::os::mount_options_in(mounts, Path::new("/run/x")).is_none());
}

#[test]
fn tear_down_unmounts_tmpfs_and_subpaths() {
    let (os, lv) = fake();
    let p = pod(&[None], None);
    let mem = lv
        .volume_path(&p, &empty_dir("m", Some("Memory"), None))
        .unwrap();
    let disk = lv.volume_path(&p, &empty_dir("d", None, None)).unwrap();
    let huge = lv
        .volume_path(
            &hugepages_pod(&[&["hugepages-2Mi"]]),
            &empty_dir("h", Some("HugePages"), None),
        )
        .unwrap();
    assert!(os.is_mount_point(&huge).unwrap());
    os.mkdir_all(&disk.join("sub")).unwrap();
    let target = os
        .prepare_safe_subpath(&crate::subpath::Subpath {
            volume_mount_index: 0,
            path: disk.join("sub"),
            volume_name: "d".into(),
            volume_path: disk.clone(),
            pod_dir: "/var/lib/kubelet/pods/u1".into(),
            container_name: "c".into(),
        })
        .unwrap();
    assert!(os.is_mount_point(&target).unwrap());
    let errors = tear_down_local_mounts(os.as_ref(), Path::new("/var/lib/kubelet/pods/u1"));
    assert!(errors.is_empty(), "{errors:?}");
    assert!(os.mount_points().is_empty(), "{:?}", os.mount_points());
    assert!(!os.exists(&mem));
    assert!(!os.exists(&huge));
    assert!(
        os.exists(&disk.join("sub")),
        "disk emptyDirs are left to pod_dirs"
    );
    assert!(!os.exists(Path::new("/var/lib/kubelet/pods/u1/volume-subpaths")));
}

#[test]
fn noswap_needs_kernel_6_4() {
    assert!(noswap_for_release("6.4.0"));
    assert!(noswap_for_release("6.18.44-fc-v657\n"));
    assert!(noswap_for_release("7.0"));
    assert!(!noswap_for_release("6.3.9-generic"));
    assert!(!noswap_for_release("5.15.0"));
    assert!(!noswap_for_release("garbage"));
}
