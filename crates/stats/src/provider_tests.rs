//! The summary provider over the fake CRI, a fake cgroup tree and fake filesystems.
#![allow(clippy::unwrap_used)]

use std::sync::Mutex;

use kubelet_cm::{CgroupVersion, FakeHostFs};
use kubelet_cri::fake::{FakeImageService, FakeRuntimeService, container_config, sandbox_config};
use kubelet_cri::v1::{
    ContainerStats as CriStats, CpuUsage, FilesystemIdentifier, FilesystemUsage, MemoryUsage,
};

use super::*;
use crate::fs::{DirUsage, FakeFsInfo, FsCapacity};

struct Env {
    provider: SummaryProvider,
    host: Arc<FakeHostFs>,
    runtime: Arc<FakeRuntimeService>,
    images: Arc<FakeImageService>,
    now: Arc<Mutex<i64>>,
    container_id: String,
    other_id: String,
}

const POD_CG: &str = "/sys/fs/cgroup/memory/kubepods/burstable/poduid-1";
const POD2_CG: &str = "/sys/fs/cgroup/memory/kubepods/besteffort/poduid-2";

fn set_cgroup(host: &FakeHostFs, dir: &str, cpu_ns: u64, usage: u64, inactive: u64) {
    let rel = dir.trim_start_matches("/sys/fs/cgroup/memory");
    host.add_dir(dir);
    host.add_file(format!("{dir}/memory.usage_in_bytes"), usage.to_string());
    host.add_file(
        format!("{dir}/memory.stat"),
        format!("total_inactive_file {inactive}\ntotal_rss 100\ntotal_cache 50\n"),
    );
    host.add_file(
        format!("{dir}/memory.limit_in_bytes"),
        "9223372036854771712",
    );
    host.add_file(
        format!("/sys/fs/cgroup/cpuacct{rel}/cpuacct.usage"),
        cpu_ns.to_string(),
    );
    host.add_file(format!("/sys/fs/cgroup/pids{rel}/pids.current"), "3");
    host.add_file(format!("{dir}/cgroup.procs"), "100\n101\n");
}

async fn env() -> Env {
    env_with(false).await
}

async fn env_with(psi: bool) -> Env {
    env_opts(psi, false).await
}

/// A pod-volume source for the web pod (`uid-1`): an emptyDir and a secret.
struct WebVolumes;
impl crate::volume_stats::PodVolumeSource for WebVolumes {
    fn pods(&self) -> Vec<crate::volume_stats::PodVolumes> {
        let vol = |name: &str, plugin: &str, ephemeral: bool| crate::volume_stats::PodVolume {
            name: name.into(),
            path: format!("/var/lib/kubelet/pods/uid-1/volumes/{plugin}/{name}").into(),
            ephemeral,
            cached: !ephemeral,
        };
        vec![crate::volume_stats::PodVolumes {
            uid: "uid-1".into(),
            volumes: vec![
                vol("token", "kubernetes.io~secret", false),
                vol("cache", "kubernetes.io~empty-dir", true),
            ],
        }]
    }
}

async fn env_opts(psi: bool, with_volumes: bool) -> Env {
    let runtime = Arc::new(FakeRuntimeService::new());
    let images = Arc::new(FakeImageService::new());
    // Pod 1 (burstable, with a pod cgroup and a container cgroup); pod 2 (no cgroups: sums
    // its containers' runtime figures).
    let sb1 = sandbox_config("web", "default", "uid-1", 0);
    let s1 = runtime.run_pod_sandbox(&sb1, "").await.unwrap();
    let c1 = runtime
        .create_container(&s1, &container_config("app", 0, "busybox", &[]), &sb1)
        .await
        .unwrap();
    runtime.start_container(&c1).await.unwrap();
    let sb2 = sandbox_config("db", "prod", "uid-2", 0);
    let s2 = runtime.run_pod_sandbox(&sb2, "").await.unwrap();
    let c2 = runtime
        .create_container(&s2, &container_config("pg", 0, "postgres", &[]), &sb2)
        .await
        .unwrap();
    runtime.start_container(&c2).await.unwrap();
    // An exited container is not reported.
    let c3 = runtime
        .create_container(&s2, &container_config("init", 0, "busybox", &[]), &sb2)
        .await
        .unwrap();
    runtime.start_container(&c3).await.unwrap();
    runtime.exit_container(&c3, 0).unwrap();
    runtime.with_state(|st| {
        let attrs = |id: &str| st.containers[id].attributes();
        let cri = |id: &str, cpu: u64, ws: u64| CriStats {
            attributes: Some(attrs(id)),
            cpu: Some(CpuUsage {
                timestamp: 5_000_000_000,
                usage_core_nano_seconds: Some(UInt64Value { value: cpu }),
                ..Default::default()
            }),
            memory: Some(MemoryUsage {
                timestamp: 5_000_000_000,
                working_set_bytes: Some(UInt64Value { value: ws }),
                ..Default::default()
            }),
            writable_layer: Some(FilesystemUsage {
                timestamp: 5_000_000_000,
                fs_id: Some(FilesystemIdentifier {
                    mountpoint: "/var/lib/containerd".into(),
                }),
                used_bytes: Some(UInt64Value { value: 4096 }),
                inodes_used: Some(UInt64Value { value: 3 }),
            }),
            ..Default::default()
        };
        let a = cri(&c1, 1, 1);
        let b = cri(&c2, 7_000, 300);
        st.container_stats.insert(c1.clone(), a);
        st.container_stats.insert(c2.clone(), b);
    });

    let host = Arc::new(FakeHostFs::default());
    set_cgroup(&host, "/sys/fs/cgroup/memory", 50_000_000_000, 8000, 1000);
    set_cgroup(
        &host,
        "/sys/fs/cgroup/memory/kubepods",
        9_000_000_000,
        5000,
        500,
    );
    host.add_dir("/sys/fs/cgroup/memory/kubepods/besteffort");
    set_cgroup(&host, POD_CG, 2_000_000_000, 3000, 1000);
    set_cgroup(&host, &format!("{POD_CG}/{c1}"), 1_500_000_000, 2500, 500);
    set_cgroup(&host, &format!("{POD_CG}/{s1}"), 10_000_000, 100, 0);
    host.add_file(format!("{POD_CG}/{s1}/cgroup.procs"), "4242\n");
    host.add_file(
        "/proc/4242/net/dev",
        "h1\nh2\n  eth0: 10 1 0 0 0 0 0 0 20 2 0 0 0 0 0 0\n    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n",
    );
    host.add_file("/proc/meminfo", "MemTotal: 16 kB\nMemFree: 4 kB\n");
    // `/metrics/cadvisor`'s machine and root filesystems, read when the provider is made.
    host.add_file(
        "/proc/self/mountinfo",
        "22 1 254:0 / /var/lib/kubelet rw - ext4 /dev/vda rw\n23 22 0:21 / /proc rw - proc proc rw\n",
    );
    host.add_file("/etc/machine-id", "m1\n");
    host.add_file("/proc/sys/kernel/pid_max", "4194304\n");
    host.add_file("/proc/sys/kernel/threads-max", "126000\n");
    host.add_file("/proc/loadavg", "0.10 0.20 0.30 2/345 6789\n");
    host.add_file(
        "/proc/net/dev",
        "h1\nh2\n  eth0: 1000 1 5 0 0 0 0 0 2000 2 6 0 0 0 0 0\n",
    );

    let fs = Arc::new(FakeFsInfo::default());
    fs.set_fds(100, &["/dev/null", "socket:[123]", "pipe:[9]"]);
    host.add_file(
        "/proc/100/limits",
        "Limit Soft Hard Units\nMax open files            1024                 524288               files\n",
    );
    let cap = FsCapacity {
        capacity: 100_000,
        available: 60_000,
        usage: 40_000,
        inodes: 1000,
        inodes_free: 900,
    };
    fs.set_capacity("/var/lib/kubelet", cap);
    fs.set_capacity(
        "/var/lib/containerd",
        FsCapacity {
            capacity: 200_000,
            ..cap
        },
    );
    fs.set_usage(
        "/var/log/pods/default_web_uid-1/app",
        DirUsage {
            bytes: 8192,
            inodes: 2,
        },
    );
    let now = Arc::new(Mutex::new(10_000_000_000i64));
    let clock_now = now.clone();
    let clock: Clock = Arc::new(move || {
        jiff::Timestamp::from_nanosecond(i128::from(*clock_now.lock().unwrap())).unwrap()
    });
    let volumes = with_volumes.then(|| {
        for (dir, bytes) in [
            ("kubernetes.io~empty-dir/cache", 1000),
            ("kubernetes.io~secret/token", 10),
        ] {
            fs.set_usage(
                format!("/var/lib/kubelet/pods/uid-1/volumes/{dir}"),
                DirUsage { bytes, inodes: 1 },
            );
        }
        let a = Arc::new(crate::volume_stats::FsResourceAnalyzer::new(
            Arc::new(WebVolumes),
            fs.clone(),
            std::time::Duration::from_secs(60),
            clock.clone(),
        ));
        a.update();
        a
    });
    let provider = SummaryProvider::new(
        ProviderConfig {
            node_name: "node1".into(),
            root_dir: "/var/lib/kubelet".into(),
            pod_logs_dir: "/var/log/pods".into(),
            pods_cgroup: Some("/kubepods".into()),
            psi,
            ..ProviderConfig::default()
        },
        ProviderSources {
            runtime: runtime.clone(),
            images: images.clone(),
            cgroups: CgroupReader::new(host.clone(), CgroupVersion::V1),
            host: host.clone(),
            fs,
            clock,
            boot_time: Time::from_nanos(1_000_000_000),
            volumes,
        },
    );
    Env {
        provider,
        host,
        runtime,
        images,
        now,
        container_id: c1,
        other_id: c2,
    }
}

#[tokio::test]
async fn summary_from_cgroups_and_the_runtime() {
    let e = env().await;
    let s = e.provider.get().await.unwrap();
    let node = &s.node;
    assert_eq!(node.node_name, "node1");
    assert_eq!(node.start_time, Time::from_nanos(1_000_000_000));
    let mem = node.memory.as_ref().unwrap();
    assert_eq!(mem.working_set_bytes, Some(7000));
    assert_eq!(
        mem.available_bytes,
        Some(16 * 1024 - 7000),
        "machine memory − working set"
    );
    assert_eq!(
        node.cpu.as_ref().unwrap().usage_core_nano_seconds,
        Some(50_000_000_000)
    );
    assert_eq!(
        node.cpu.as_ref().unwrap().usage_nano_cores,
        None,
        "first sample"
    );
    assert_eq!(node.network.as_ref().unwrap().default.tx_errors, Some(6));
    assert_eq!(node.fs.as_ref().unwrap().used_bytes, Some(40_000));
    assert_eq!(node.fs.as_ref().unwrap().inodes_used, Some(100));
    let rl = node.rlimit.as_ref().unwrap();
    assert_eq!(
        (rl.max_pid, rl.num_of_running_processes),
        (Some(126_000), Some(345))
    );
    assert_eq!(node.system_containers.len(), 1);
    assert_eq!(node.system_containers[0].name, "pods");
    let image_fs = node.runtime.as_ref().unwrap().image_fs.as_ref().unwrap();
    assert_eq!(
        image_fs.capacity_bytes, None,
        "fake mount point unknown to the fs fake"
    );

    assert_eq!(s.pods.len(), 2);
    let db = &s.pods[0];
    assert_eq!(db.pod_ref.name, "db");
    assert_eq!(db.containers.len(), 1, "exited containers are left out");
    assert_eq!(db.containers[0].name, "pg");
    // No cgroups: the runtime's figures, and the pod as the sum of its containers.
    assert_eq!(
        db.containers[0].memory.as_ref().unwrap().working_set_bytes,
        Some(300)
    );
    assert_eq!(db.memory.as_ref().unwrap().working_set_bytes, Some(300));
    assert_eq!(db.cpu.as_ref().unwrap().usage_core_nano_seconds, Some(7000));
    assert!(db.network.is_none());

    let web = &s.pods[1];
    assert_eq!(web.pod_ref.uid, "uid-1");
    let app = &web.containers[0];
    // The container cgroup wins over the runtime's figures.
    assert_eq!(app.memory.as_ref().unwrap().working_set_bytes, Some(2000));
    assert_eq!(app.memory.as_ref().unwrap().rss_bytes, Some(100));
    assert_eq!(
        app.cpu.as_ref().unwrap().usage_core_nano_seconds,
        Some(1_500_000_000)
    );
    let rootfs = app.rootfs.as_ref().unwrap();
    assert_eq!(
        (rootfs.used_bytes, rootfs.capacity_bytes),
        (Some(4096), Some(200_000))
    );
    assert_eq!(app.logs.as_ref().unwrap().used_bytes, Some(8192));
    assert_eq!(app.logs.as_ref().unwrap().capacity_bytes, Some(100_000));
    assert_eq!(web.memory.as_ref().unwrap().working_set_bytes, Some(2000));
    assert_eq!(web.network.as_ref().unwrap().default.rx_bytes, Some(10));
    assert_eq!(
        web.network.as_ref().unwrap().interfaces.len(),
        1,
        "lo left out"
    );
    assert_eq!(
        web.ephemeral_storage.as_ref().unwrap().used_bytes,
        Some(4096 + 8192)
    );
    assert_eq!(web.process_stats.as_ref().unwrap().process_count, Some(2));
    let _ = (&e.other_id, &e.runtime);
}

/// `ImageFsStats` for image garbage collection: the CRI image filesystem's usage with the
/// capacity and availability of its mount point.
#[tokio::test]
async fn image_fs_stats_from_image_fs_info_and_the_mount_points_statfs() {
    let e = env().await;
    e.images.with_state(|st| {
        st.fs_info = Some(kubelet_cri::v1::ImageFsInfoResponse {
            image_filesystems: vec![FilesystemUsage {
                timestamp: 5_000_000_000,
                fs_id: Some(FilesystemIdentifier {
                    mountpoint: "/var/lib/containerd".into(),
                }),
                used_bytes: Some(UInt64Value { value: 777 }),
                inodes_used: None,
            }],
            container_filesystems: Vec::new(),
        });
    });
    let (image, container) = e.provider.image_fs_stats().await.unwrap();
    assert_eq!(image.capacity_bytes, Some(200_000));
    assert_eq!(image.available_bytes, Some(60_000));
    assert_eq!(image.used_bytes, Some(777));
    assert_eq!(container, image, "no container filesystem: the image one");

    e.images.with_state(|st| {
        st.fs_info = Some(kubelet_cri::v1::ImageFsInfoResponse::default());
    });
    let err = e.provider.image_fs_stats().await.unwrap_err();
    assert!(
        err.to_string()
            .contains("imageFs information is unavailable"),
        "{err}"
    );
}

#[tokio::test]
async fn nano_cores_from_the_previous_request() {
    let e = env().await;
    let first = e.provider.get_cpu_and_memory_stats().await.unwrap();
    assert!(first.node.fs.is_none() && first.node.network.is_none());
    assert!(first.pods[1].containers[0].rootfs.is_none());
    // 2 s later the container used 1 more CPU second: half a core.
    *e.now.lock().unwrap() += 2_000_000_000;
    let rel = format!("/kubepods/burstable/poduid-1/{}", e.container_id);
    e.host.add_file(
        format!("/sys/fs/cgroup/cpuacct{rel}/cpuacct.usage"),
        "2500000000",
    );
    let second = e.provider.get_cpu_and_memory_stats().await.unwrap();
    let cpu = second.pods[1].containers[0].cpu.as_ref().unwrap();
    assert_eq!(cpu.usage_nano_cores, Some(500_000_000));
    assert_eq!(second.node.cpu.as_ref().unwrap().usage_nano_cores, Some(0));
    let text = crate::resource_metrics::render(Ok(&second));
    assert!(
        text.contains(
            "container_cpu_usage_seconds_total{container=\"app\",namespace=\"default\",pod=\"web\"} 2.5 12000"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn runtime_failure_is_an_error_and_a_scrape_error() {
    let e = env().await;
    e.runtime.inject_error(
        "ListContainers",
        kubelet_cri::CriError::status("fake", "ListContainers", tonic_code(), "down"),
    );
    let err = e.provider.get_cpu_and_memory_stats().await.unwrap_err();
    e.runtime.inject_error(
        "ListContainers",
        kubelet_cri::CriError::status("fake", "ListContainers", tonic_code(), "down"),
    );
    assert!(
        err.to_string()
            .starts_with("failed to list pod stats: failed to list all containers"),
        "{err}"
    );
    let snap = e.provider.cadvisor_snapshot().await;
    assert!(snap.error);
    let text = crate::cadvisor_metrics::render(&snap);
    assert!(text.contains("container_scrape_error 1"), "{text}");
}

#[tokio::test]
async fn cadvisor_snapshot_has_root_pod_and_container_cgroups() {
    let e = env().await;
    let snap = e.provider.cadvisor_snapshot().await;
    let ids: Vec<&str> = snap.cgroups.iter().map(|c| c.id.as_str()).collect();
    assert!(ids.contains(&"/"), "{ids:?}");
    assert!(ids.contains(&"/kubepods/burstable/poduid-1"), "{ids:?}");
    let app = snap.cgroups.iter().find(|c| c.container == "app").unwrap();
    assert_eq!(app.name, e.container_id);
    assert_eq!(app.pod.name, "web");
    assert_eq!(app.image, "busybox");
    assert_eq!(app.sample.memory.as_ref().unwrap().working_set, 2000);
    assert_eq!(app.sample.processes, Some(2));
    assert!(app.sample.cadvisor.is_some());
    assert_eq!(app.processes.fds, 3, "pid 100's descriptors");
    assert_eq!(app.processes.sockets, 1);
    assert_eq!(app.processes.max_open_files, Some(1024));
    assert!(
        app.network.is_empty(),
        "RemoveNetMetrics: no network but the sandbox's"
    );
    let _ = POD2_CG;
}

#[tokio::test]
async fn cadvisor_network_on_the_root_and_the_sandbox_container() {
    let e = env().await;
    e.host.add_file(
        "/proc/1/net/dev",
        "h1\nh2\n  eth0: 1000 9 1 2 0 0 0 0 2000 8 3 4 0 0 0 0\n    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n",
    );
    let snap = e.provider.cadvisor_snapshot().await;
    let root = snap.cgroups.iter().find(|c| c.id == "/").unwrap();
    assert_eq!(root.network.len(), 1, "lo is ignored");
    assert_eq!(
        (root.network[0].rx_packets, root.network[0].tx_dropped),
        (9, 4)
    );
    let pod = snap
        .cgroups
        .iter()
        .find(|c| c.id == "/kubepods/burstable/poduid-1")
        .unwrap();
    assert!(pod.network.is_empty());
    let sandbox = snap
        .cgroups
        .iter()
        .find(|c| c.id.starts_with("/kubepods/burstable/poduid-1/") && c.container.is_empty())
        .unwrap();
    assert_eq!(
        sandbox.id,
        format!("/kubepods/burstable/poduid-1/{}", sandbox.name)
    );
    assert_eq!(sandbox.pod.name, "web");
    assert_eq!(sandbox.network.len(), 1);
    assert_eq!(
        (
            sandbox.network[0].name.as_str(),
            sandbox.network[0].rx_bytes
        ),
        ("eth0", 10)
    );
    let text = crate::cadvisor_metrics::render(&snap);
    let want = format!(
        "container_network_transmit_bytes_total{{container=\"\",id=\"{}\",image=\"\",interface=\"eth0\",name=\"{}\",namespace=\"default\",pod=\"web\"}} 20 10000",
        sandbox.id, sandbox.name
    );
    assert!(text.lines().any(|l| l == want), "{want}\n{text}");
}

/// A ready sandbox's `net/dev` stays open, kept under the sandbox's ID: read again on the
/// next requests (summary and `/metrics/cadvisor`) without asking its cgroup's processes
/// again; once the sandbox is not ready it is read afresh through its cgroup's first process.
#[tokio::test]
async fn sandbox_network_kept_while_ready_and_read_afresh_once_not() {
    let e = env().await;
    let web_rx = |s: &crate::types::Summary| {
        s.pods
            .iter()
            .find(|p| p.pod_ref.name == "web")
            .and_then(|p| p.network.as_ref())
            .and_then(|n| n.default.rx_bytes)
    };
    assert_eq!(web_rx(&e.provider.get().await.unwrap()), Some(10));
    let sandbox_id = e
        .runtime
        .with_state(|st| {
            st.sandboxes
                .iter()
                .find(|(_, s)| s.config.metadata.as_ref().is_some_and(|m| m.uid == "uid-1"))
                .map(|(id, _)| id.clone())
        })
        .unwrap();
    // Another process first in the sandbox's cgroup (one without a network namespace of its
    // own in the fake), and the namespace's counters moved on.
    e.host
        .add_file(format!("{POD_CG}/{sandbox_id}/cgroup.procs"), "5555\n");
    e.host.add_file(
        "/proc/4242/net/dev",
        "h1\nh2\n  eth0: 11 1 0 0 0 0 0 0 20 2 0 0 0 0 0 0\n",
    );
    assert_eq!(
        web_rx(&e.provider.get().await.unwrap()),
        Some(11),
        "the kept file, read again"
    );
    let sandbox_rx = |snap: &crate::cadvisor_metrics::Snapshot| {
        let sb = snap.cgroups.iter().find(|c| c.name == sandbox_id).unwrap();
        sb.network.first().map(|n| n.rx_bytes)
    };
    assert_eq!(sandbox_rx(&e.provider.cadvisor_snapshot().await), Some(11));
    e.runtime.stop_pod_sandbox(&sandbox_id).await.unwrap();
    assert_eq!(
        sandbox_rx(&e.provider.cadvisor_snapshot().await),
        None,
        "not ready: read afresh through pid 5555, which has no net/dev"
    );
}

#[test]
fn sandbox_image_from_the_runtime_status() {
    let v1 = r#"{"containerd":{},"sandboxImage":"registry.k8s.io/pause:3.10"}"#;
    let v2 = r#"{"imageConfig":{"pinned_images":{"sandbox":"registry.k8s.io/pause:3.10"}}}"#;
    for info in [v1, v2] {
        assert_eq!(
            super::sandbox_image_of(info).as_deref(),
            Some("registry.k8s.io/pause:3.10")
        );
    }
    assert_eq!(super::sandbox_image_of("{\"other\":1}"), None);
    assert_eq!(super::sandbox_image_of("not json"), None);
}

fn tonic_code() -> tonic::Code {
    tonic::Code::Unavailable
}

#[tokio::test]
async fn resource_metrics_read_no_memory_limit_nor_processes() {
    let e = env().await;
    let rel = format!("/kubepods/burstable/poduid-1/{}", e.container_id);
    e.host.add_file(
        format!("/sys/fs/cgroup/memory{rel}/memory.limit_in_bytes"),
        "8000",
    );
    let full = e.provider.get_cpu_and_memory_stats().await.unwrap();
    let mem = full.pods[1].containers[0].memory.as_ref().unwrap();
    assert_eq!(mem.available_bytes, Some(8000 - 2000));
    let lean = e.provider.get_resource_metrics_stats().await.unwrap();
    let mem = lean.pods[1].containers[0].memory.as_ref().unwrap();
    assert_eq!(mem.available_bytes, None);
    assert_eq!(mem.working_set_bytes, Some(2000));
    assert!(lean.pods.iter().all(|p| p.process_stats.is_none()));
}

#[tokio::test]
async fn psi_as_upstream_on_cgroup_v1_zeros_and_io_where_blkio() {
    let off = env().await.provider.get().await.unwrap();
    let json = serde_json::to_string(&off).unwrap();
    assert!(!json.contains("psi") && !json.contains("\"io\""), "{json}");

    let e = env_with(true).await;
    e.host
        .add_dir("/sys/fs/cgroup/blkio/kubepods/burstable/poduid-1");
    let s = e.provider.get().await.unwrap();
    let web = &s.pods[1];
    assert_eq!(web.pod_ref.name, "web");
    let zero = Some(PsiStats::default());
    assert_eq!(web.cpu.as_ref().unwrap().psi, zero);
    assert_eq!(web.memory.as_ref().unwrap().psi, zero);
    assert_eq!(
        web.io.as_ref().unwrap().psi,
        zero,
        "the pod cgroup has blkio"
    );
    assert_eq!(web.containers[0].cpu.as_ref().unwrap().psi, zero);
    assert!(web.containers[0].io.is_some(), "{:?}", web.containers[0]);
    // Pod 2 has no cgroups: the runtime's figures, no pressure.
    let db = &s.pods[0];
    assert_eq!(db.cpu.as_ref().unwrap().psi, None);
    let json = serde_json::to_string(&web.cpu).unwrap();
    assert!(
        json.contains(r#""psi":{"full":{"total":0,"avg10":0,"avg60":0,"avg300":0},"some":{"total":0,"avg10":0,"avg60":0,"avg300":0}}"#),
        "{json}"
    );
    // `only_cpu_and_memory`: CPU and memory pressure, no IO.
    let cm = e.provider.get_cpu_and_memory_stats().await.unwrap();
    assert_eq!(cm.pods[1].cpu.as_ref().unwrap().psi, zero);
    assert!(cm.pods[1].io.is_none() && cm.node.io.is_none());
    // `/metrics/resource` reads none.
    let rm = e.provider.get_resource_metrics_stats().await.unwrap();
    assert_eq!(rm.pods[1].cpu.as_ref().unwrap().psi, None);
    // `HasDiskIo` is part of cAdvisor's spec: kept for 5 s, then looked at again.
    e.host
        .remove_dir(Path::new(
            "/sys/fs/cgroup/blkio/kubepods/burstable/poduid-1",
        ))
        .unwrap();
    let again = e.provider.get().await.unwrap();
    assert_eq!(again.pods[1].io.as_ref().unwrap().psi, zero);
    assert_eq!(again.pods[1].cpu.as_ref().unwrap().psi, zero);
    *e.now.lock().unwrap() += 5_000_000_000;
    let later = e.provider.get().await.unwrap();
    assert!(later.pods[1].io.is_none(), "{:?}", later.pods[1].io);
}

#[tokio::test]
async fn volume_stats_from_the_background_measures_and_in_ephemeral_storage() {
    let e = env_opts(false, true).await;
    let s = e.provider.get().await.unwrap();
    let web = &s.pods[1];
    let names: Vec<&str> = web.volume_stats.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["cache", "token"], "local ephemeral first");
    assert_eq!(web.volume_stats[0].fs.used_bytes, Some(1000));
    assert_eq!(web.volume_stats[0].fs.capacity_bytes, Some(100_000));
    assert_eq!(
        web.ephemeral_storage.as_ref().unwrap().used_bytes,
        Some(4096 + 8192 + 1000),
        "the emptyDir counts, the secret does not"
    );
    let json = serde_json::to_value(web).unwrap();
    assert_eq!(json["volume"][1]["name"], "token");
    assert_eq!(json["volume"][1]["usedBytes"], 10);
    assert!(s.pods[0].volume_stats.is_empty());
    let cm = e.provider.get_cpu_and_memory_stats().await.unwrap();
    assert!(cm.pods[1].volume_stats.is_empty());
}

#[tokio::test]
async fn limits_reused_for_five_seconds_as_cadvisors_spec() {
    let e = env().await;
    let rel = format!("/kubepods/burstable/poduid-1/{}", e.container_id);
    let limit = format!("/sys/fs/cgroup/memory{rel}/memory.limit_in_bytes");
    e.host.add_file(&limit, "8000");
    let available = |s: &Summary| {
        s.pods[1].containers[0]
            .memory
            .as_ref()
            .unwrap()
            .available_bytes
    };
    let first = e.provider.get().await.unwrap();
    assert_eq!(available(&first), Some(8000 - 2000));
    // The limit changes: within 5 s the spec read first is kept, then read again.
    e.host.add_file(&limit, "9000");
    *e.now.lock().unwrap() += 4_000_000_000;
    let second = e.provider.get().await.unwrap();
    assert_eq!(available(&second), Some(8000 - 2000));
    *e.now.lock().unwrap() += 1_000_000_000;
    let third = e.provider.get().await.unwrap();
    assert_eq!(available(&third), Some(9000 - 2000));
    // Resource metrics, which report no available bytes, still get none from the spec.
    let lean = e.provider.get_resource_metrics_stats().await.unwrap();
    assert_eq!(available(&lean), None);
}

#[tokio::test]
async fn cadvisor_qos_cgroups_root_filesystems_and_machine_facts() {
    let e = env().await;
    e.host.add_file(
        "/proc/diskstats",
        " 254       0 vda 11 36 427 27 27 28 118 10 0 14 38\n",
    );
    e.host.add_file(
        "/proc/1/limits",
        "Limit Soft Hard Units\nMax open files            32768                32768                files\n",
    );
    let snap = e.provider.cadvisor_snapshot().await;
    let ids: Vec<&str> = snap.cgroups.iter().map(|c| c.id.as_str()).collect();
    assert!(
        ids.contains(&"/kubepods") && ids.contains(&"/kubepods/besteffort"),
        "the pods cgroup and its QoS cgroups: {ids:?}"
    );
    let qos = snap.cgroups.iter().find(|c| c.id == "/kubepods").unwrap();
    assert!(qos.pod.name.is_empty() && qos.name.is_empty());
    assert_eq!(
        qos.start,
        Time::from_nanos(1_000_000_000),
        "not before boot"
    );
    assert_eq!(qos.sample.memory.as_ref().unwrap().usage, 5000);
    let root = snap.cgroups.iter().find(|c| c.id == "/").unwrap();
    assert_eq!(
        root.processes.max_open_files,
        Some(32768),
        "pid 1's, as the raw root handler"
    );
    assert_eq!(qos.processes.max_open_files, None);
    assert_eq!(root.filesystems.len(), 1, "{:?}", root.filesystems);
    let vda = &root.filesystems[0];
    assert_eq!(
        (
            vda.device.as_str(),
            vda.limit,
            vda.usage,
            vda.disk.reads_completed
        ),
        ("/dev/vda", 100_000, 40_000, 11)
    );
    assert!(
        snap.cgroups
            .iter()
            .filter(|c| c.id != "/")
            .all(|c| c.filesystems.is_empty())
    );
    assert_eq!(
        (
            snap.machine.machine_id.as_str(),
            snap.machine.system_uuid.as_str()
        ),
        ("m1", "m1")
    );
    // Partitions and machine facts were read once, when the provider was made.
    e.host.add_file("/proc/self/mountinfo", "");
    e.host.add_file("/etc/machine-id", "m2\n");
    let snap = e.provider.cadvisor_snapshot().await;
    let root = snap.cgroups.iter().find(|c| c.id == "/").unwrap();
    assert_eq!(root.filesystems.len(), 1);
    assert_eq!(snap.machine.machine_id, "m1");
}

/// A provider with no pods over `host` (cgroup v2) and `cfg`.
fn bare_provider(
    host: Arc<FakeHostFs>,
    fs: Arc<FakeFsInfo>,
    cfg: ProviderConfig,
) -> SummaryProvider {
    SummaryProvider::new(
        cfg,
        ProviderSources {
            runtime: Arc::new(FakeRuntimeService::new()),
            images: Arc::new(FakeImageService::new()),
            cgroups: CgroupReader::new(host.clone(), CgroupVersion::V2),
            host,
            fs,
            clock: Arc::new(|| jiff::Timestamp::from_second(100).unwrap()),
            boot_time: Time::from_nanos(1_000_000_000),
            volumes: None,
        },
    )
}

#[tokio::test]
async fn cadvisor_system_cgroup_subtrees_and_the_kubelets_own_cgroup_on_v2() {
    let host = Arc::new(FakeHostFs::default());
    for dir in [
        "",
        "/kubepods.slice",
        "/system.slice",
        "/system.slice/kubelet.service",
        "/system.slice/containerd.service",
        "/system.slice/containerd.service/sub",
        "/user.slice",
    ] {
        host.add_dir(format!("/sys/fs/cgroup{dir}"));
        host.add_file(format!("/sys/fs/cgroup{dir}/memory.current"), "10");
    }
    host.add_file("/proc/self/cgroup", "0::/system.slice/kubelet.service\n");
    let fs = Arc::new(FakeFsInfo::default());
    fs.set_modified(
        "/sys/fs/cgroup/system.slice/containerd.service",
        5_000_000_000,
    );
    fs.set_modified(
        "/sys/fs/cgroup/system.slice/containerd.service/cgroup.events",
        4_000_000_000,
    );
    let cfg = ProviderConfig {
        pods_cgroup: Some("/kubepods.slice".into()),
        runtime_cgroup: "/system.slice/containerd.service".into(),
        ..ProviderConfig::default()
    };
    let ids = |snap: &crate::cadvisor_metrics::Snapshot| {
        let mut ids: Vec<String> = snap.cgroups.iter().map(|c| c.id.clone()).collect();
        ids.sort();
        ids.join(" ")
    };
    let p = bare_provider(host.clone(), fs.clone(), cfg.clone());
    let snap = p.cadvisor_snapshot().await;
    assert_eq!(
        ids(&snap),
        "/ /kubepods.slice /system.slice/containerd.service /system.slice/containerd.service/sub /system.slice/kubelet.service",
        "the kubelet's own cgroup, the runtime's subtree; not the rest"
    );
    let containerd = snap
        .cgroups
        .iter()
        .find(|c| c.id == "/system.slice/containerd.service")
        .unwrap();
    assert_eq!(
        containerd.start,
        Time::from_nanos(4_000_000_000),
        "the earlier of the directory's and cgroup.events' mtimes"
    );

    // `kubeletCgroups` set: that one, not the process's; one under the pods cgroup is not
    // listed twice.
    let p = bare_provider(
        host,
        fs,
        ProviderConfig {
            kubelet_cgroup: "/user.slice".into(),
            system_cgroup: "/kubepods.slice".into(),
            ..cfg
        },
    );
    let snap = p.cadvisor_snapshot().await;
    assert_eq!(
        ids(&snap),
        "/ /kubepods.slice /system.slice/containerd.service /system.slice/containerd.service/sub /user.slice"
    );
}

#[test]
fn own_cgroup_as_get_container() {
    let v1 = "12:pids:/a\n4:memory:/kubelet.service\n3:cpu,cpuacct:/kubelet.service\n0::/x\n";
    assert_eq!(
        super::own_cgroup(v1, CgroupVersion::V1).as_deref(),
        Some("/kubelet.service")
    );
    assert_eq!(
        super::own_cgroup(v1, CgroupVersion::V2).as_deref(),
        Some("/x")
    );
    let split = "4:memory:/process_api/5b2c\n1:cpu:/\n";
    assert_eq!(
        super::own_cgroup(split, CgroupVersion::V1),
        None,
        "cpu and memory not unified"
    );
}

/// The eviction manager's summary without pods: the node, the system containers and the
/// filesystems as the full summary has them, no pod, and no CRI listing (a runtime that
/// cannot list does not fail it).
#[tokio::test]
async fn summary_without_pods_has_the_node_and_asks_the_runtime_for_no_listing() {
    let e = env().await;
    let full = e.provider.get().await.unwrap();
    assert!(!full.pods.is_empty());
    e.runtime.inject_error(
        "ListContainers",
        kubelet_cri::CriError::status("fake", "ListContainers", tonic_code(), "down"),
    );
    let s = e.provider.get_without_pods().await.unwrap();
    assert!(s.pods.is_empty());
    assert_eq!(s.node.node_name, full.node.node_name);
    assert_eq!(
        s.node.memory.as_ref().unwrap().working_set_bytes,
        full.node.memory.as_ref().unwrap().working_set_bytes
    );
    assert_eq!(s.node.fs, full.node.fs);
    assert_eq!(s.node.rlimit, full.node.rlimit);
    let names = |s: &crate::types::Summary| -> Vec<String> {
        s.node
            .system_containers
            .iter()
            .map(|c| c.name.clone())
            .collect()
    };
    assert_eq!(names(&s), names(&full));
}

/// `GetSystemContainersStats`: `kubelet`, `runtime` (`--runtime-cgroups`, upstream's only
/// use of it) and `misc` (`systemCgroups`) from their cgroups when configured, besides
/// `pods`.
#[tokio::test]
async fn system_containers_come_from_the_configured_cgroups() {
    let host = Arc::new(FakeHostFs::default());
    for dir in [
        "",
        "/kubepods.slice",
        "/system.slice/containerd.service",
        "/kubelet",
        "/misc",
    ] {
        host.add_dir(format!("/sys/fs/cgroup{dir}"));
        host.add_file(format!("/sys/fs/cgroup{dir}/memory.current"), "10");
    }
    host.add_file("/proc/meminfo", "MemTotal: 16 kB\nMemFree: 4 kB\n");
    let names = |s: &crate::types::Summary| -> Vec<String> {
        let mut n: Vec<String> = s
            .node
            .system_containers
            .iter()
            .map(|c| c.name.clone())
            .collect();
        n.sort();
        n
    };
    let fs = Arc::new(FakeFsInfo::default());
    fs.set_capacity(
        "/var/lib/kubelet",
        FsCapacity {
            capacity: 100_000,
            available: 60_000,
            usage: 40_000,
            inodes: 1000,
            inodes_free: 900,
        },
    );
    let cfg = ProviderConfig {
        root_dir: "/var/lib/kubelet".into(),
        pods_cgroup: Some("/kubepods.slice".into()),
        ..ProviderConfig::default()
    };
    let p = bare_provider(host.clone(), fs.clone(), cfg.clone());
    assert_eq!(names(&p.get().await.unwrap()), ["pods"]);
    let p = bare_provider(
        host,
        fs,
        ProviderConfig {
            runtime_cgroup: "/system.slice/containerd.service".into(),
            kubelet_cgroup: "/kubelet".into(),
            system_cgroup: "/misc".into(),
            ..cfg
        },
    );
    assert_eq!(
        names(&p.get().await.unwrap()),
        ["kubelet", "misc", "pods", "runtime"]
    );
}
