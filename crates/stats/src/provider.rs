//! The summary provider: upstream's `server/stats/summary.go` (`Get`,
//! `GetCPUAndMemoryStats`, `summary_sys_containers.go`) over the CRI stats provider
//! (`stats/cri_stats_provider.go` `listPodStatsPartiallyFromCRI`,
//! `ListPodCPUAndMemoryStats`, `ImageFsStats`; `stats/provider.go` `RootFsStats`;
//! `stats/pidlimit`), with cAdvisor's part — the cgroup figures that override the CRI's —
//! read on demand by [`CgroupReader`]:
//!
//! * pods and containers come from the runtime (`ListPodSandbox`, `ListContainers`,
//!   `ListContainerStats`, terminated ones removed as upstream); a container's CPU, memory
//!   and swap are the runtime's unless its cgroup is found under the pod cgroup, which
//!   then wins (upstream: cAdvisor's info by container ID wins);
//! * a pod's CPU and memory are its pod cgroup's (`<kubepods>/[qos/]pod<uid>`, found by
//!   listing the QoS cgroups), else the sum of its containers';
//! * the pod network is `/proc/<pid>/net/dev` of a process in the sandbox's cgroup;
//! * container `rootfs` is the runtime's writable layer with the capacity of its
//!   filesystem; `logs` the usage of `/var/log/pods/<ns>_<name>_<uid>/<container>`;
//!   `ephemeral-storage` their sum;
//! * node CPU/memory/swap from the root cgroup, network from the host's `/proc/net/dev`,
//!   `fs` from `--root-dir`'s filesystem, `runtime.imageFs`/`containerFs` from `ImageFsInfo`.
//!
//! * with `KubeletPSI` (beta, on in 1.35): `psi` of CPU and memory and `io.psi` of the node,
//!   system containers, pod cgroups and containers as cAdvisor reads them
//!   (`cgroup.rs` [`crate::cgroup::PsiSample`]: v2 pressure files, zeros on v1).
//!
//! One request: the CRI calls at once on the async runtime, then every host read in one
//! task on the blocking pool (`HostReaders`): the cgroup directories opened relative to
//! their open parent and the cgroup files kept open from one request to the next, read
//! again from offset 0 (`ScrapeFs`), a container's cgroup looked up by its ID before its pod
//! cgroup is listed (at most once), the memory and swap limits reread at most every 5 s
//! (cAdvisor's container spec, [`SPEC_PERIOD`]), each filesystem's capacity asked once
//! (`Scrape`).
//!
//! * pod `volume` entries from the [`FsResourceAnalyzer`]'s latest background measures
//!   (`volume_stats.rs`), the local ephemeral ones added to the pod's `ephemeral-storage`.
//!
//! Not reported (documented in the crate doc): accelerators and user-defined metrics.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kubelet_cm::HostFs;
use kubelet_cri::v1::{
    Container, ContainerState, ContainerStats as CriContainerStats, PodSandbox, PodSandboxState,
    UInt64Value,
};
use kubelet_cri::{ImageService, RuntimeService};

use crate::StatsError;
use crate::cadvisor_metrics::ProcessDetail;
use crate::cgroup::{
    CgroupReader, CgroupSample, Want, extract_id_from_cgroup_path, pod_uid_from_cgroup_name,
};
use crate::cpu::CpuUsageCache;
use crate::fs::{FsCapacity, FsInfo};
use crate::network::{network_stats, parse_net_dev};
use crate::scrape_fs::ScrapeFs;
use crate::types::*;
use crate::volume_stats::FsResourceAnalyzer;

/// CPU, memory, swap and IO of one cgroup reading.
type CgroupFigures = (
    Option<CpuStats>,
    Option<MemoryStats>,
    Option<SwapStats>,
    Option<IoStats>,
);

/// The clock the provider stamps its readings with.
pub type Clock = Arc<dyn Fn() -> jiff::Timestamp + Send + Sync>;

/// What the provider needs from the kubelet's configuration.
#[derive(Debug, Clone, Default)]
pub struct ProviderConfig {
    /// The node's name.
    pub node_name: String,
    /// `--root-dir` (the node `fs`).
    pub root_dir: PathBuf,
    /// The pod log directory (`/var/log/pods`).
    pub pod_logs_dir: PathBuf,
    /// The cgroup of all pods in cgroupfs notation (`/kubepods`, `/kubepods.slice`);
    /// `None` without `cgroupsPerQOS`.
    pub pods_cgroup: Option<String>,
    /// `kubeletCgroups`, `runtimeCgroups`, `systemCgroups` (empty: not reported).
    pub kubelet_cgroup: String,
    /// `runtimeCgroups`.
    pub runtime_cgroup: String,
    /// `systemCgroups`.
    pub system_cgroup: String,
    /// `KubeletPSI`: CPU, memory and IO pressure in the summary and `/metrics/cadvisor`.
    pub psi: bool,
}

/// The sources the provider reads.
pub struct ProviderSources {
    /// The CRI runtime service.
    pub runtime: Arc<dyn RuntimeService>,
    /// The CRI image service.
    pub images: Arc<dyn ImageService>,
    /// Cgroups.
    pub cgroups: CgroupReader,
    /// `/proc` reads.
    pub host: Arc<dyn HostFs>,
    /// `statfs` and `du`.
    pub fs: Arc<dyn FsInfo>,
    /// Now.
    pub clock: Clock,
    /// The node's boot time (`node.startTime`).
    pub boot_time: Time,
    /// Pod volume usage, measured in the background (`None`: no `volume` entries).
    pub volumes: Option<Arc<FsResourceAnalyzer>>,
}

/// One running container as the runtime and its cgroup describe it (what `/metrics/cadvisor`
/// reports, and the summary's container entries come from).
#[derive(Debug, Clone)]
pub struct ContainerInfo {
    /// The runtime's container ID.
    pub id: String,
    /// The container's cgroup (cgroupfs path), when found.
    pub cgroup: Option<String>,
    /// The image the container was created from.
    pub image: String,
    /// The pod.
    pub pod: PodReference,
    /// The summary entry.
    pub stats: ContainerStats,
    /// The cgroup reading, when the cgroup was found.
    pub sample: Option<CgroupSample>,
}

/// The summary provider (upstream `SummaryProvider` + `stats.Provider`): the runtime calls
/// on the async runtime, everything read from the host (cgroups, `/proc`, `statfs`, `du`) in
/// one task on the blocking pool per request (`HostReaders`).
pub struct SummaryProvider {
    runtime: Arc<dyn RuntimeService>,
    images: Arc<dyn ImageService>,
    host: Arc<HostReaders>,
    /// The runtime's sandbox (pause) image, asked once (`image` of the sandbox entries of
    /// `/metrics/cadvisor`).
    sandbox_image: tokio::sync::OnceCell<String>,
}

/// The host side of the provider, shared with the blocking task of each request.
struct HostReaders {
    cfg: ProviderConfig,
    cgroups: CgroupReader,
    host: Arc<dyn HostFs>,
    fs: Arc<dyn FsInfo>,
    clock: Clock,
    boot_time: Time,
    volumes: Option<Arc<FsResourceAnalyzer>>,
    cpu: CpuUsageCache,
    kubelet_creation: Time,
    specs: SpecCache,
    /// What `/metrics/cadvisor` reads once, when the provider is made (the kubelet's start).
    cadvisor_machine: std::sync::OnceLock<CadvisorStatic>,
    /// The cgroup directories and files the requests read, kept open between them.
    scrape_fs: Arc<ScrapeFs>,
}

/// How long a cgroup's limits are reused: cAdvisor's `containerData.GetInfo` updates a
/// container's spec (its memory and swap limits) when it is older than 5 s, and the summary's
/// `availableBytes` and swap limit come from that spec.
pub const SPEC_PERIOD: std::time::Duration = std::time::Duration::from_secs(5);

/// The memory and swap limits of a cgroup as last read (cAdvisor's cached container spec).
#[derive(Debug, Clone, Copy)]
struct Spec {
    read: Time,
    memory_limit: Option<u64>,
    swap_limit: Option<u64>,
    /// cgroup v1: whether the cgroup has a blkio directory (cAdvisor's `Spec.HasDiskIo`,
    /// which gives it its zero IO pressure); `None` when not looked at.
    has_disk_io: Option<bool>,
}

/// Cgroup → its [`Spec`], entries older than [`SPEC_PERIOD`] read again and dropped.
#[derive(Debug, Default)]
struct SpecCache(std::sync::Mutex<HashMap<String, Spec>>);

impl SpecCache {
    fn fresh(&self, cgroup: &str, now: Time) -> Option<Spec> {
        let specs = self.0.lock().ok()?;
        let spec = specs.get(cgroup).copied()?;
        let age = now.0.as_nanosecond() - spec.read.0.as_nanosecond();
        (0..SPEC_PERIOD.as_nanos() as i128)
            .contains(&age)
            .then_some(spec)
    }

    fn store(&self, cgroup: &str, spec: Spec) {
        if let Ok(mut specs) = self.0.lock() {
            match specs.get_mut(cgroup) {
                Some(s) => *s = spec,
                None => {
                    specs.insert(cgroup.to_string(), spec);
                }
            }
        }
    }

    fn cleanup(&self, now: Time) {
        if let Ok(mut specs) = self.0.lock() {
            let limit = SPEC_PERIOD.as_nanos() as i128;
            specs.retain(|_, s| now.0.as_nanosecond() - s.read.0.as_nanosecond() < limit);
        }
    }
}

/// What cAdvisor learns when the kubelet starts.
struct CadvisorStatic {
    machine: crate::machine::MachineFacts,
    /// The root's filesystems.
    partitions: Vec<crate::root_fs::Partition>,
    /// The kubelet's, runtime's and system cgroups (the kubelet's `cgroupRoots` besides
    /// the pods cgroup), whose subtrees cAdvisor watches.
    system_roots: Vec<String>,
}

/// The runtime's view of the pods, terminated sandboxes and containers removed.
#[derive(Default)]
struct RuntimeView {
    sandboxes: HashMap<String, PodSandbox>,
    containers: HashMap<String, Container>,
    stats: Vec<CriContainerStats>,
}

/// A pod cgroup and its children, listed at most once per request.
struct PodCgroup {
    path: String,
    children: std::sync::OnceLock<Vec<String>>,
}

impl PodCgroup {
    /// The cgroup of the pod's container (or sandbox) `id` (`extractIDFromCgroupPath` of the
    /// children): the child named `id` (cgroupfs driver) when it exists, else the children
    /// are listed (once) and searched.
    fn child(&self, cgroups: &CgroupReader, id: &str) -> Option<String> {
        let direct = format!("{}/{id}", self.path);
        if cgroups.exists(&direct) {
            return Some(direct);
        }
        self.children
            .get_or_init(|| cgroups.children(&self.path))
            .iter()
            .find(|child| extract_id_from_cgroup_path(child) == id)
            .map(|child| format!("{}/{child}", self.path))
    }
}

/// One request's reading of the host: the pod cgroups listed once, each filesystem's
/// capacity asked once.
struct Scrape<'a> {
    r: &'a HostReaders,
    /// The cgroups, through this request's [`ScrapeFs`].
    cgroups: CgroupReader,
    now: Time,
    want: Want,
    /// Pod UID → pod cgroup.
    pods: HashMap<String, PodCgroup>,
    capacities: HashMap<PathBuf, Option<FsCapacity>>,
}

fn value(v: Option<&UInt64Value>) -> Option<u64> {
    v.map(|v| v.value)
}

fn pod_ref(s: &PodSandbox) -> PodReference {
    let m = s.metadata.clone().unwrap_or_default();
    PodReference {
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
    }
}

/// Upstream `removeTerminatedPods`: of sandboxes with the same name and namespace, keep the
/// ready ones, else the newest.
pub fn remove_terminated_pods(mut pods: Vec<PodSandbox>) -> Vec<PodSandbox> {
    pods.sort_by_key(|p| p.created_at);
    let mut by_ref: BTreeMap<(String, String), Vec<PodSandbox>> = BTreeMap::new();
    for p in pods {
        let r = pod_ref(&p);
        by_ref.entry((r.namespace, r.name)).or_default().push(p);
    }
    let ready = PodSandboxState::SandboxReady as i32;
    let mut out = Vec::new();
    for (_, mut refs) in by_ref {
        if refs.len() == 1 || !refs.iter().any(|p| p.state == ready) {
            out.extend(refs.pop());
        } else {
            out.extend(refs.into_iter().filter(|p| p.state == ready));
        }
    }
    out
}

/// Upstream `removeTerminatedContainers`: running containers only.
pub fn remove_terminated_containers(containers: Vec<Container>) -> Vec<Container> {
    let running = ContainerState::ContainerRunning as i32;
    containers
        .into_iter()
        .filter(|c| c.state == running)
        .collect()
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(a.unwrap_or(0) + b.unwrap_or(0))
}

/// Runs `f` on the blocking pool (the host reads of one request).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, StatsError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StatsError::Summary(format!("stats reader task failed: {e}")))
}

impl SummaryProvider {
    /// A provider; `kubelet_creation` is now.
    pub fn new(cfg: ProviderConfig, src: ProviderSources) -> Self {
        let kubelet_creation = Time((src.clock)());
        let p = SummaryProvider {
            runtime: src.runtime,
            images: src.images,
            host: Arc::new(HostReaders {
                cfg,
                scrape_fs: Arc::new(ScrapeFs::new(src.cgroups.host_fs().clone())),
                cgroups: src.cgroups,
                host: src.host,
                fs: src.fs,
                clock: src.clock,
                boot_time: src.boot_time,
                volumes: src.volumes,
                cpu: CpuUsageCache::default(),
                kubelet_creation,
                specs: SpecCache::default(),
                cadvisor_machine: std::sync::OnceLock::new(),
            }),
            sandbox_image: tokio::sync::OnceCell::new(),
        };
        // cAdvisor lists the machine and its filesystems when the kubelet starts: mounts
        // made later (pod volumes, container root filesystems) are not the root's.
        p.host.cadvisor_machine();
        p
    }

    /// `Get`: the full summary.
    pub async fn get(&self) -> Result<Summary, StatsError> {
        let image_fs = self.images.image_fs_info().await;
        let view = self.runtime_view().await;
        let r = self.host.clone();
        blocking(move || r.summary(image_fs, view)).await?
    }

    /// The summary without pods: node, system containers, filesystems and rlimit, with no
    /// CRI listing and no pod cgroup read. The eviction manager's signals need only these;
    /// it asks for the full [`SummaryProvider::get`] when it must rank pods or check their
    /// local storage limits.
    pub async fn get_without_pods(&self) -> Result<Summary, StatsError> {
        let image_fs = self.images.image_fs_info().await;
        let r = self.host.clone();
        blocking(move || r.summary(image_fs, Ok(RuntimeView::default()))).await?
    }

    /// `ImageFsStats`: the image filesystem and the container filesystem (the image one
    /// when the runtime names none), what image garbage collection reads.
    pub async fn image_fs_stats(&self) -> Result<(FsStats, FsStats), StatsError> {
        let resp = self
            .images
            .image_fs_info()
            .await
            .map_err(|e| StatsError::Runtime(e.to_string()))?;
        let r = self.host.clone();
        let (image, container) = blocking(move || {
            let mut sc = r.scrape(Want::SUMMARY);
            sc.image_fs_stats(&resp)
        })
        .await??;
        Ok((image.unwrap_or_default(), container.unwrap_or_default()))
    }

    /// `GetCPUAndMemoryStats`: node, system containers and pods, CPU and memory only.
    pub async fn get_cpu_and_memory_stats(&self) -> Result<Summary, StatsError> {
        self.cpu_and_memory(Want::CPU_AND_MEMORY).await
    }

    /// What `/metrics/resource` renders: `GetCPUAndMemoryStats` without the memory limits
    /// (`availableBytes`), which it does not report.
    pub async fn get_resource_metrics_stats(&self) -> Result<Summary, StatsError> {
        self.cpu_and_memory(Want::RESOURCE_METRICS).await
    }

    async fn cpu_and_memory(&self, want: Want) -> Result<Summary, StatsError> {
        let view = self.runtime_view().await;
        let r = self.host.clone();
        blocking(move || r.cpu_and_memory_stats(view, want)).await?
    }

    /// What `/metrics/cadvisor` reports: the root, pod and running container cgroups.
    pub async fn cadvisor_snapshot(&self) -> crate::cadvisor_metrics::Snapshot {
        let (view, sandbox_image) = tokio::join!(self.runtime_view(), self.sandbox_image());
        let r = self.host.clone();
        let time = r.now();
        blocking(move || r.cadvisor_snapshot(view, &sandbox_image))
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(err = %e, "Couldn't get containers");
                crate::cadvisor_metrics::Snapshot {
                    time,
                    error: true,
                    ..Default::default()
                }
            })
    }

    /// The image of the runtime's sandboxes, which cAdvisor reads from containerd's container
    /// metadata: from the runtime's verbose status (containerd's `config` `sandboxImage`, or
    /// `pinned_images` `sandbox`), asked until the runtime answers; empty when it says none.
    pub async fn sandbox_image(&self) -> String {
        let image = self
            .sandbox_image
            .get_or_try_init(|| async {
                let status = self.runtime.status(true).await?;
                Ok::<_, kubelet_cri::CriError>(
                    status
                        .info
                        .values()
                        .find_map(|v| sandbox_image_of(v))
                        .unwrap_or_default(),
                )
            })
            .await;
        image.cloned().unwrap_or_default()
    }

    /// `getPodAndContainerMaps` + `ListContainerStats` (the three calls at once). Labels and
    /// annotations are not decoded: nothing here reads them (pods are named by the
    /// sandboxes' metadata, containers by theirs).
    async fn runtime_view(&self) -> Result<RuntimeView, StatsError> {
        let rt = &self.runtime;
        let (containers, sandboxes, stats) = tokio::join!(
            rt.list_containers_without_labels(None),
            rt.list_pod_sandbox_without_labels(None),
            rt.list_container_stats_without_labels(None)
        );
        let containers = containers
            .map_err(|e| StatsError::Runtime(format!("failed to list all containers: {e}")))?;
        let sandboxes = sandboxes
            .map_err(|e| StatsError::Runtime(format!("failed to list all pod sandboxes: {e}")))?;
        let stats = stats
            .map_err(|e| StatsError::Runtime(format!("failed to list all container stats: {e}")))?;
        Ok(RuntimeView {
            sandboxes: remove_terminated_pods(sandboxes)
                .into_iter()
                .map(|s| (s.id.clone(), s))
                .collect(),
            containers: remove_terminated_containers(containers)
                .into_iter()
                .map(|c| (c.id.clone(), c))
                .collect(),
            stats,
        })
    }
}

impl HostReaders {
    fn now(&self) -> Time {
        Time((self.clock)())
    }

    fn scrape(&self, want: Want) -> Scrape<'_> {
        self.scrape_fs.begin(std::time::Instant::now());
        let cgroups = self.cgroups.with_fs(self.scrape_fs.clone());
        Scrape {
            pods: self.pod_cgroups(&cgroups),
            cgroups,
            r: self,
            now: self.now(),
            want: if self.cfg.psi {
                want
            } else {
                want.without_psi()
            },
            capacities: HashMap::new(),
        }
    }

    /// `Get`, after the runtime calls.
    fn summary(
        &self,
        image_fs: Result<kubelet_cri::v1::ImageFsInfoResponse, kubelet_cri::CriError>,
        view: Result<RuntimeView, StatsError>,
    ) -> Result<Summary, StatsError> {
        let mut sc = self.scrape(Want::SUMMARY);
        let now = sc.now;
        let (cpu, memory, swap, io) = sc.root_stats()?;
        let fs = sc
            .root_fs_stats()
            .map_err(|e| StatsError::Summary(format!("failed to get rootFs stats: {e}")))?;
        let (image_fs, container_fs) = image_fs
            .map_err(|e| StatsError::Runtime(e.to_string()))
            .and_then(|resp| sc.image_fs_stats(&resp))
            .map_err(|e| StatsError::Summary(format!("failed to get imageFs stats: {e}")))?;
        let view =
            view.map_err(|e| StatsError::Summary(format!("failed to list pod stats: {e}")))?;
        let pods = sc.list_pod_stats(&view, true);
        let network = self
            .host
            .read_to_string(Path::new("/proc/net/dev"))
            .ok()
            .and_then(|s| network_stats(now, parse_net_dev(&s)));
        let summary = Summary {
            node: NodeStats {
                node_name: self.cfg.node_name.clone(),
                system_containers: sc.system_containers(),
                start_time: self.boot_time,
                cpu,
                memory,
                io,
                network,
                fs: Some(fs),
                runtime: Some(RuntimeStats {
                    image_fs,
                    container_fs,
                }),
                rlimit: Some(self.rlimit_stats(now)),
                swap,
            },
            pods,
        };
        self.cpu.cleanup(now);
        self.specs.cleanup(now);
        Ok(summary)
    }

    /// `GetCPUAndMemoryStats`, after the runtime calls.
    fn cpu_and_memory_stats(
        &self,
        view: Result<RuntimeView, StatsError>,
        want: Want,
    ) -> Result<Summary, StatsError> {
        let mut sc = self.scrape(want);
        let now = sc.now;
        let (cpu, memory, swap, _) = sc.root_stats()?;
        let view =
            view.map_err(|e| StatsError::Summary(format!("failed to list pod stats: {e}")))?;
        let pods = sc.list_pod_stats(&view, false);
        self.cpu.cleanup(now);
        self.specs.cleanup(now);
        Ok(Summary {
            node: NodeStats {
                node_name: self.cfg.node_name.clone(),
                system_containers: sc.system_containers(),
                start_time: self.boot_time,
                cpu,
                memory,
                swap,
                ..NodeStats::default()
            },
            pods,
        })
    }

    /// `/metrics/cadvisor`'s reading, after the runtime calls.
    fn cadvisor_snapshot(
        &self,
        view: Result<RuntimeView, StatsError>,
        sandbox_image: &str,
    ) -> crate::cadvisor_metrics::Snapshot {
        use crate::cadvisor_metrics::{CgroupEntry, Snapshot};
        let mut sc = self.scrape(Want::CADVISOR);
        let fixed = self.cadvisor_machine();
        let mut snap = Snapshot {
            time: sc.now,
            boot_time: self.boot_time,
            machine_memory: self.cgroups.machine_memory(),
            machine: fixed.machine.clone(),
            ..Snapshot::default()
        };
        let view = match view {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(err = %e, "Couldn't get containers");
                snap.error = true;
                return snap;
            }
        };
        if let Ok(sample) = sc.cgroups.sample_with("/", sc.want) {
            snap.cgroups.push(CgroupEntry {
                id: "/".into(),
                start: self.boot_time,
                sample,
                // The raw root handler's pid is 1: its network and ulimits.
                processes: ProcessDetail {
                    max_open_files: self.max_open_files_of(1),
                    ..self.process_detail("/", false)
                },
                network: self.net_dev(1),
                filesystems: crate::root_fs::global_fs_stats(
                    self.host.as_ref(),
                    self.fs.as_ref(),
                    &fixed.partitions,
                ),
                ..CgroupEntry::default()
            });
        }
        let mut raw = self.qos_cgroups();
        raw.extend(self.system_cgroups(&fixed.system_roots));
        for (id, start) in raw {
            if let Ok(sample) = self.cgroups.sample_with(&id, sc.want) {
                snap.cgroups.push(CgroupEntry {
                    processes: self.process_detail(&id, false),
                    id,
                    start,
                    sample,
                    ..CgroupEntry::default()
                });
            }
        }
        for sandbox in view.sandboxes.values() {
            let pod = pod_ref(sandbox);
            let Some(pc) = sc.pods.get(&pod.uid) else {
                continue;
            };
            let start = Time::from_nanos(sandbox.created_at);
            if let Ok(sample) = sc.cgroups.sample_with(&pc.path, sc.want) {
                snap.cgroups.push(CgroupEntry {
                    processes: self.process_detail(&pc.path, false),
                    id: pc.path.clone(),
                    pod: pod.clone(),
                    start,
                    sample,
                    ..CgroupEntry::default()
                });
            }
            // The sandbox (pause) container, the only one of the pod cAdvisor reports the
            // network of (`RemoveNetMetrics`: its task's netns); `container` is empty, as
            // the sandbox has no container-name label.
            if let Some(cg) = pc.child(&sc.cgroups, &sandbox.id)
                && let Ok(sample) = sc.cgroups.sample_with(&cg, sc.want)
            {
                let network = self
                    .sandbox_net_dev(&sc.cgroups, sandbox, || Some(cg.clone()))
                    .map(|s| crate::network::parse_net_dev_counters(&s))
                    .unwrap_or_default();
                snap.cgroups.push(CgroupEntry {
                    processes: self.process_detail(&cg, true),
                    id: cg,
                    name: sandbox.id.clone(),
                    image: sandbox_image.to_string(),
                    pod,
                    start,
                    sample,
                    network,
                    ..CgroupEntry::default()
                });
            }
        }
        for s in &view.stats {
            let Some((c, sandbox)) = container_and_sandbox(&view, s) else {
                continue;
            };
            let info = sc.container_info(s, c, sandbox, false);
            if let (Some(id), Some(sample)) = (info.cgroup, info.sample) {
                snap.cgroups.push(CgroupEntry {
                    processes: self.process_detail(&id, true),
                    id,
                    name: info.id,
                    image: info.image,
                    container: info.stats.name,
                    pod: info.pod,
                    start: info.stats.start_time,
                    sample,
                    network: Vec::new(),
                    filesystems: Vec::new(),
                });
            }
        }
        self.name_disks(&mut snap);
        snap
    }

    /// The machine facts, the root's filesystems and the system cgroups, read once.
    fn cadvisor_machine(&self) -> &CadvisorStatic {
        self.cadvisor_machine.get_or_init(|| {
            let kubelet = match self.cfg.kubelet_cgroup.as_str() {
                "" => self.own_cgroup(),
                c => Some(c.to_string()),
            };
            let mut system_roots: Vec<String> = Vec::new();
            for c in [
                kubelet,
                Some(self.cfg.runtime_cgroup.clone()),
                Some(self.cfg.system_cgroup.clone()),
            ]
            .into_iter()
            .flatten()
            {
                let c = c.trim_end_matches('/').to_string();
                // `/` would be every cgroup of the machine: not listed.
                if !c.is_empty() && !system_roots.contains(&c) {
                    system_roots.push(c);
                }
            }
            CadvisorStatic {
                machine: crate::machine::read_machine_facts(self.host.as_ref()),
                partitions: crate::root_fs::host_partitions(self.host.as_ref()),
                system_roots,
            }
        })
    }

    /// `GetKubeletContainer` without `kubeletCgroups`: [`own_cgroup`] of
    /// `/proc/self/cgroup`.
    fn own_cgroup(&self) -> Option<String> {
        let table = self
            .host
            .read_to_string(Path::new("/proc/self/cgroup"))
            .ok()?;
        own_cgroup(&table, self.cgroups.version())
    }

    /// The system cgroups and every cgroup below them (cAdvisor's raw handler accepts each
    /// cgroup under a whitelisted root), with their creation times.
    fn system_cgroups(&self, roots: &[String]) -> Vec<(String, Time)> {
        let pods = self
            .cfg
            .pods_cgroup
            .as_deref()
            .map(|p| p.trim_end_matches('/'));
        let under = |cg: &str, root: &str| {
            cg == root || cg.strip_prefix(root).is_some_and(|r| r.starts_with('/'))
        };
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        let mut stack: Vec<String> = roots
            .iter()
            .filter(|r| !pods.is_some_and(|p| under(r, p)) && self.cgroups.exists(r))
            .cloned()
            .collect();
        while let Some(cg) = stack.pop() {
            if !seen.insert(cg.clone()) {
                continue;
            }
            stack.extend(
                self.cgroups
                    .children(&cg)
                    .into_iter()
                    .map(|c| format!("{cg}/{c}")),
            );
            let start = self.cgroup_creation(&cg);
            out.push((cg, start));
        }
        out
    }

    /// The pods cgroup and its QoS cgroups (the raw cgroups cAdvisor reports under the
    /// kubelet's `NodeAllocatableRoot` besides the pods), with their creation times.
    fn qos_cgroups(&self) -> Vec<(String, Time)> {
        let Some(root) = self.cfg.pods_cgroup.as_deref() else {
            return Vec::new();
        };
        let root = root.trim_end_matches('/');
        let mut out = vec![root.to_string()];
        for child in self.cgroups.children(root) {
            if pod_uid_from_cgroup_name(&child).is_none() {
                out.push(format!("{root}/{child}"));
            }
        }
        out.into_iter()
            .map(|cg| {
                let start = self.cgroup_creation(&cg);
                (cg, start)
            })
            .collect()
    }

    /// cAdvisor's `getSpecInternal` creation time: the earlier of the cgroup directory's
    /// and its `cgroup.clone_children` (v1) / `cgroup.events` (v2) modification times, not
    /// before the boot time.
    fn cgroup_creation(&self, cgroup: &str) -> Time {
        let dir = self.cgroups.memory_dir(cgroup);
        let file = match self.cgroups.version() {
            kubelet_cm::CgroupVersion::V1 => "cgroup.clone_children",
            kubelet_cm::CgroupVersion::V2 => "cgroup.events",
        };
        [dir.join(file), dir]
            .iter()
            .filter_map(|p| self.fs.modified_nanos(p).ok())
            .min()
            .map(Time::from_nanos)
            .filter(|t| t.0 > self.boot_time.0)
            .unwrap_or(self.boot_time)
    }

    /// `/proc/<pid>/net/dev` of `sandbox`, through the first process of its cgroup (given by
    /// `cgroup`, asked only when the file is opened). A ready sandbox's file stays open in
    /// the [`ScrapeFs`], kept under the sandbox's ID: its network namespace is the sandbox's
    /// for the sandbox's whole life, so a request costs one `pread` instead of reading the
    /// cgroup's processes and opening the file. A sandbox that is not ready is read afresh
    /// (and nothing kept): its processes may be gone, and then it has no figures, as in
    /// upstream's cAdvisor.
    fn sandbox_net_dev(
        &self,
        cgroups: &CgroupReader,
        sandbox: &PodSandbox,
        cgroup: impl FnOnce() -> Option<String>,
    ) -> Option<String> {
        let host = self.host.as_ref();
        let open = || {
            let not_found = || std::io::Error::from(std::io::ErrorKind::NotFound);
            let cg = cgroup().ok_or_else(not_found)?;
            let pid = *cgroups.procs(&cg).first().ok_or_else(not_found)?;
            let dir = host.open_dir(None, Path::new(&format!("/proc/{pid}/net")))?;
            host.open_file_in(&dir, "dev")
        };
        let key = format!("net/dev of sandbox {}", sandbox.id);
        if sandbox.state != PodSandboxState::SandboxReady as i32 {
            self.scrape_fs.forget(&key);
            return open().and_then(|f| host.reread(&f)).ok();
        }
        self.scrape_fs.read_keyed(&key, host, open).ok()
    }

    /// The interfaces of `/proc/<pid>/net/dev` (`networkStatsFromProc`).
    fn net_dev(&self, pid: u32) -> Vec<crate::network::NetDevCounters> {
        self.host
            .read_to_string(Path::new(&format!("/proc/{pid}/net/dev")))
            .map(|s| crate::network::parse_net_dev_counters(&s))
            .unwrap_or_default()
    }

    /// `AssignDeviceNamesToDiskStats`: the devices of the blkio tables named (the block
    /// devices listed only when some cgroup did I/O).
    fn name_disks(&self, snap: &mut crate::cadvisor_metrics::Snapshot) {
        fn tables(
            c: &mut crate::cadvisor_metrics::CgroupEntry,
        ) -> impl Iterator<Item = &mut crate::cgroup::PerDiskStats> {
            c.sample
                .cadvisor
                .as_mut()
                .map(|x| {
                    x.io_service_bytes
                        .iter_mut()
                        .chain(x.io_serviced.iter_mut())
                })
                .into_iter()
                .flatten()
        }
        if snap.cgroups.iter_mut().all(|c| tables(c).next().is_none()) {
            return;
        }
        let names = crate::fs::disk_names(self.host.as_ref());
        for d in snap.cgroups.iter_mut().flat_map(tables) {
            d.device = names.get(&(d.major, d.minor)).cloned().unwrap_or_default();
        }
    }

    /// `processStatsFromProcs`: the descriptors of the cgroup's processes and, for a
    /// container, the open-files soft limit of its first process (cAdvisor: the task's pid).
    fn process_detail(&self, cgroup: &str, container: bool) -> ProcessDetail {
        let pids = self.cgroups.procs(cgroup);
        let mut d = ProcessDetail::default();
        for pid in &pids {
            let Ok(targets) = self.fs.fd_targets(*pid) else {
                continue;
            };
            d.fds += targets.len() as u64;
            d.sockets += targets.iter().filter(|t| t.starts_with("socket")).count() as u64;
        }
        if container && let Some(pid) = pids.first() {
            d.max_open_files = self.max_open_files_of(*pid);
        }
        d
    }

    /// The soft `Max open files` of `/proc/<pid>/limits` (`processRootProcUlimits`).
    fn max_open_files_of(&self, pid: u32) -> Option<i64> {
        self.host
            .read_to_string(Path::new(&format!("/proc/{pid}/limits")))
            .ok()
            .and_then(|s| max_open_files(&s))
    }

    /// Pod UID → pod cgroup and its children, from the pods cgroup and its QoS children.
    fn pod_cgroups(&self, cg: &CgroupReader) -> HashMap<String, PodCgroup> {
        let mut out = HashMap::new();
        let Some(root) = self.cfg.pods_cgroup.as_deref() else {
            return out;
        };
        let mut add = |uid: String, path: String| {
            let children = std::sync::OnceLock::new();
            out.insert(uid, PodCgroup { path, children });
        };
        let root = root.trim_end_matches('/');
        for child in cg.children(root) {
            let path = format!("{root}/{child}");
            match pod_uid_from_cgroup_name(&child) {
                Some(uid) => add(uid, path),
                None => {
                    for grandchild in cg.children(&path) {
                        if let Some(uid) = pod_uid_from_cgroup_name(&grandchild) {
                            add(uid, format!("{path}/{grandchild}"));
                        }
                    }
                }
            }
        }
        out
    }

    /// `pidlimit.Stats`: min(`pid_max`, `threads-max`), tasks from `/proc/loadavg`.
    fn rlimit_stats(&self, now: Time) -> RlimitStats {
        let read = |p: &str| {
            self.host
                .read_to_string(Path::new(p))
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
        };
        let max_pid = [
            read("/proc/sys/kernel/pid_max"),
            read("/proc/sys/kernel/threads-max"),
        ]
        .into_iter()
        .flatten()
        .min();
        let procs = self
            .host
            .read_to_string(Path::new("/proc/loadavg"))
            .ok()
            .and_then(|s| s.split_whitespace().nth(3)?.split_once('/')?.1.parse().ok());
        RlimitStats {
            time: now,
            max_pid,
            num_of_running_processes: procs,
        }
    }
}

/// `getContainer` of a `/proc/<pid>/cgroup` table: the unified cgroup on v2; on v1 the
/// `cpu` cgroup when it is the `memory` one (else none, as upstream, which then logs that
/// kubelet system container metrics may be missing).
fn own_cgroup(table: &str, version: kubelet_cm::CgroupVersion) -> Option<String> {
    let of = |controller: &str| {
        table.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
            let hit = if controller.is_empty() {
                controllers.is_empty()
            } else {
                controllers.split(',').any(|c| c == controller)
            };
            hit.then(|| path.to_string())
        })
    };
    match version {
        kubelet_cm::CgroupVersion::V2 => of(""),
        kubelet_cm::CgroupVersion::V1 => of("cpu").filter(|cpu| of("memory").as_ref() == Some(cpu)),
    }
}

/// The soft `Max open files` of a `/proc/<pid>/limits` (`processLimitsFile`): `-1` when
/// unlimited.
fn max_open_files(limits: &str) -> Option<i64> {
    let line = limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [soft, _hard, _units] = fields.as_slice() else {
        return None;
    };
    match *soft {
        "unlimited" => Some(-1),
        v => v.parse().ok(),
    }
}

/// The sandbox image in one value of the runtime's verbose status: a JSON object with
/// `sandboxImage` (containerd 1.x) or `pinned_images.sandbox` (2.x), at any depth.
fn sandbox_image_of(info: &str) -> Option<String> {
    fn find(v: &serde_json::Value) -> Option<String> {
        let o = v.as_object()?;
        if let Some(i) = o.get("sandboxImage").and_then(|i| i.as_str()) {
            return Some(i.to_string());
        }
        if let Some(i) = o
            .get("pinned_images")
            .and_then(|p| p.get("sandbox"))
            .and_then(|i| i.as_str())
        {
            return Some(i.to_string());
        }
        o.values().find_map(find)
    }
    find(&serde_json::from_str(info).ok()?)
}

fn container_and_sandbox<'v>(
    view: &'v RuntimeView,
    s: &CriContainerStats,
) -> Option<(&'v Container, &'v PodSandbox)> {
    let id = s.attributes.as_ref()?.id.as_str();
    let c = view.containers.get(id)?;
    let sandbox = view.sandboxes.get(&c.pod_sandbox_id)?;
    Some((c, sandbox))
}

impl Scrape<'_> {
    /// `sample_with`, the memory and swap limits from the cgroup's [`Spec`] when younger
    /// than [`SPEC_PERIOD`] (cAdvisor's container spec), else read and kept.
    fn sample(&self, cgroup: &str, want: Want) -> Result<CgroupSample, StatsError> {
        let specs = &self.r.specs;
        let v1 = self.cgroups.version() == kubelet_cm::CgroupVersion::V1;
        let spec = specs.fresh(cgroup, self.now);
        if let Some(spec) = spec.filter(|s| !(v1 && want.io && s.has_disk_io.is_none())) {
            let lean = Want {
                memory_limit: false,
                swap_limit: false,
                // v1's IO pressure is zeros where the blkio directory exists.
                io: want.io && !v1,
                ..want
            };
            let mut s = self.cgroups.sample_with(cgroup, lean)?;
            if let Some(m) = s.memory.as_mut().filter(|_| want.memory_limit) {
                m.limit = spec.memory_limit;
            }
            if let Some(sw) = s.swap.as_mut().filter(|_| want.swap_limit) {
                sw.limit = spec.swap_limit;
            }
            if v1 && let Some(p) = s.psi.as_mut() {
                p.io = (want.io && spec.has_disk_io == Some(true)).then(PsiStats::default);
            }
            return Ok(s);
        }
        let full = Want {
            memory_limit: true,
            swap_limit: true,
            ..want
        };
        let mut s = self.cgroups.sample_with(cgroup, full)?;
        let spec = Spec {
            read: self.now,
            memory_limit: s.memory.as_ref().and_then(|m| m.limit),
            swap_limit: s.swap.as_ref().and_then(|sw| sw.limit),
            has_disk_io: (v1 && want.io)
                .then(|| s.psi.as_ref().map(|p| p.io.is_some()))
                .flatten(),
        };
        specs.store(cgroup, spec);
        if let Some(m) = s.memory.as_mut().filter(|_| !want.memory_limit) {
            m.limit = None;
        }
        if let Some(sw) = s.swap.as_mut().filter(|_| !want.swap_limit) {
            sw.limit = None;
        }
        Ok(s)
    }

    /// What the summary reads of a cgroup that is no container (the node, system
    /// containers, pods): no `cgroup.procs`, the process count being the containers' only.
    fn not_container(&self) -> Want {
        Want {
            processes: false,
            ..self.want
        }
    }

    /// The root cgroup's CPU, memory and swap (`GetCgroupStats("/")`).
    fn root_stats(&self) -> Result<CgroupFigures, StatsError> {
        let root = self
            .cgroups
            .sample_with("/", self.not_container())
            .map_err(|e| StatsError::Summary(format!("failed to get root cgroup stats: {e}")))?;
        Ok(self.cgroup_stats("/", &root))
    }

    /// The capacity of the filesystem holding `path`, asked once per request.
    fn capacity(&mut self, path: &Path) -> Option<FsCapacity> {
        if let Some(c) = self.capacities.get(path) {
            return *c;
        }
        let c = self.r.fs.capacity(path).ok();
        self.capacities.insert(path.to_path_buf(), c);
        c
    }

    /// CPU, memory and swap of a cgroup reading (cAdvisor's `cadvisorInfoToCPUandMemoryStats`
    /// and `cadvisorInfoToSwapStats`), the CPU rate from [`CpuUsageCache`] under `key`.
    fn cgroup_stats(&self, key: &str, s: &CgroupSample) -> CgroupFigures {
        let now = self.now;
        let psi = s.psi.as_ref();
        let cpu = s.cpu_usage_ns.map(|usage| CpuStats {
            time: now,
            usage_nano_cores: self.r.cpu.nano_cores(key, now, usage),
            usage_core_nano_seconds: Some(usage),
            psi: psi.map(|p| p.cpu),
        });
        let memory = s.memory.as_ref().map(|m| MemoryStats {
            time: now,
            available_bytes: m.available(),
            usage_bytes: Some(m.usage),
            working_set_bytes: Some(m.working_set),
            rss_bytes: Some(m.rss),
            page_faults: Some(m.page_faults),
            major_page_faults: Some(m.major_page_faults),
            psi: psi.map(|p| p.memory),
        });
        let swap = s.swap.as_ref().map(|sw| SwapStats {
            time: now,
            swap_available_bytes: sw
                .limit
                .filter(|l| *l <= crate::cgroup::MAX_MEMORY_SIZE)
                .map(|l| l.saturating_sub(sw.usage)),
            swap_usage_bytes: Some(sw.usage),
        });
        let io = psi.and_then(|p| p.io).map(|io| IoStats {
            time: now,
            psi: Some(io),
        });
        (cpu, memory, swap, io)
    }

    /// `GetSystemContainersStats`: `kubelet`, `runtime`, `misc` (when configured) and `pods`.
    fn system_containers(&self) -> Vec<ContainerStats> {
        let c = &self.r.cfg;
        let entries = [
            (
                system_containers::KUBELET,
                c.kubelet_cgroup.as_str(),
                Some(self.r.kubelet_creation),
            ),
            (system_containers::RUNTIME, c.runtime_cgroup.as_str(), None),
            (system_containers::MISC, c.system_cgroup.as_str(), None),
            (
                system_containers::PODS,
                c.pods_cgroup.as_deref().unwrap_or_default(),
                None,
            ),
        ];
        let mut out = Vec::new();
        for (name, cgroup, start) in entries {
            if cgroup.is_empty() {
                continue;
            }
            let s = match self.sample(cgroup, self.not_container()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(err = %e, container_name = cgroup, "Failed to get system container stats");
                    continue;
                }
            };
            let (cpu, memory, swap, io) = self.cgroup_stats(cgroup, &s);
            out.push(ContainerStats {
                name: name.to_string(),
                start_time: start.unwrap_or(self.r.boot_time),
                cpu,
                memory,
                io,
                swap,
                ..ContainerStats::default()
            });
        }
        out
    }

    /// `makeContainerStats` / `makeContainerCPUAndMemoryStats`, then the cgroup's figures
    /// (`addCadvisorContainerStats`).
    fn container_info(
        &mut self,
        s: &CriContainerStats,
        c: &Container,
        sandbox: &PodSandbox,
        full: bool,
    ) -> ContainerInfo {
        let now = self.now;
        let name = s
            .attributes
            .as_ref()
            .and_then(|a| a.metadata.as_ref())
            .map(|m| m.name.clone())
            .unwrap_or_default();
        let pod = pod_ref(sandbox);
        let mut cs = ContainerStats {
            name,
            start_time: Time::from_nanos(c.created_at),
            ..ContainerStats::default()
        };
        let cgroup = self
            .pods
            .get(&pod.uid)
            .and_then(|pc| pc.child(&self.cgroups, &c.id));
        let sample = cgroup
            .as_deref()
            .and_then(|cg| self.sample(cg, self.want).ok());
        // The runtime's figures (`makeContainerStats`), the cgroup's where read.
        let psi = self.want.psi;
        cs.cpu = runtime_cpu(s, now, psi);
        cs.memory = runtime_memory(s, now, psi);
        cs.swap = runtime_swap(s, now);
        cs.io = (full && self.want.io).then(|| runtime_io(s, now));
        if let Some(sample) = &sample {
            let (cpu, memory, swap, io) = self.cgroup_stats(&c.id, sample);
            cs.cpu = cpu.or(cs.cpu.take());
            cs.memory = memory.or(cs.memory.take());
            cs.swap = swap.or(cs.swap.take());
            if full {
                cs.io = io.or(cs.io.take());
            }
        }
        if full {
            cs.rootfs = Some(self.writable_layer(s));
            cs.logs = self.log_stats(&pod, &cs.name);
        }
        ContainerInfo {
            id: c.id.clone(),
            cgroup,
            image: c
                .image
                .as_ref()
                .map(|i| i.image.clone())
                .unwrap_or_default(),
            pod,
            stats: cs,
            sample,
        }
    }

    /// The writable layer (`makeContainerStats`' `Rootfs`).
    fn writable_layer(&mut self, s: &CriContainerStats) -> FsStats {
        let Some(w) = &s.writable_layer else {
            return FsStats {
                time: self.now,
                ..FsStats::default()
            };
        };
        let mut fs = FsStats {
            time: Time::from_nanos(w.timestamp),
            used_bytes: value(w.used_bytes.as_ref()),
            inodes_used: value(w.inodes_used.as_ref()),
            ..FsStats::default()
        };
        if let Some(id) = &w.fs_id
            && let Some(c) = self.capacity(Path::new(&id.mountpoint))
        {
            fs.available_bytes = Some(c.available);
            fs.capacity_bytes = Some(c.capacity);
            fs.inodes_free = Some(c.inodes_free);
            fs.inodes = Some(c.inodes);
        }
        fs
    }

    /// `getPodContainerLogStats`: usage of the files of the container's log directory
    /// (`fileMetricsByDir`: no usage figures when it holds none), capacity of the root
    /// filesystem; `None` when the directory cannot be read.
    fn log_stats(&mut self, pod: &PodReference, container: &str) -> Option<FsStats> {
        let r = self.r;
        let mut dir = r.cfg.pod_logs_dir.clone();
        dir.push(format!("{}_{}_{}", pod.namespace, pod.name, pod.uid));
        dir.push(container);
        let u = r.fs.files_usage(&dir).ok()?;
        let c = self.capacity(&r.cfg.root_dir);
        Some(FsStats {
            time: self.now,
            available_bytes: c.map(|c| c.available),
            capacity_bytes: c.map(|c| c.capacity),
            used_bytes: u.map(|u| u.bytes),
            inodes_free: c.map(|c| c.inodes_free),
            inodes: c.map(|c| c.inodes),
            inodes_used: u.map(|u| u.inodes),
        })
    }

    /// `listPodStatsPartiallyFromCRI` (full) / `ListPodCPUAndMemoryStats`.
    fn list_pod_stats(&mut self, view: &RuntimeView, full: bool) -> Vec<PodStats> {
        let mut pods: BTreeMap<&str, PodStats> = BTreeMap::new();
        for s in &view.stats {
            let Some((c, sandbox)) = container_and_sandbox(view, s) else {
                continue;
            };
            let info = self.container_info(s, c, sandbox, full);
            let ps = pods.entry(&sandbox.id).or_insert_with(|| PodStats {
                pod_ref: info.pod.clone(),
                start_time: Time::from_nanos(sandbox.created_at),
                ..PodStats::default()
            });
            if full && let Some(n) = info.sample.as_ref() {
                let procs = ps.process_stats.get_or_insert_with(ProcessStats::default);
                procs.process_count = add(procs.process_count, n.processes);
            }
            ps.containers.push(info.stats);
        }
        let mut out: Vec<PodStats> = pods
            .into_iter()
            .map(|(sandbox_id, mut ps)| {
                self.add_pod_cpu_memory(&mut ps);
                if full {
                    ps.network = view
                        .sandboxes
                        .get(sandbox_id)
                        .and_then(|sandbox| self.pod_network(&ps.pod_ref.uid, sandbox));
                    // `makePodStorageStats`: the volumes, local ephemeral ones first.
                    let volumes = self.r.volumes.as_ref();
                    let v = volumes.and_then(|v| v.pod_volume_stats(&ps.pod_ref.uid));
                    let v = v.unwrap_or_default();
                    ps.ephemeral_storage = Some(ephemeral_storage(&ps, &v.ephemeral, self.now));
                    ps.volume_stats = v.ephemeral;
                    ps.volume_stats.extend(v.persistent);
                }
                ps
            })
            .collect();
        out.sort_by(|a, b| a.pod_ref.cmp(&b.pod_ref));
        out
    }

    /// `addPodCPUMemoryStats` + `addSwapStats`: the pod cgroup, else the containers' sum.
    fn add_pod_cpu_memory(&self, ps: &mut PodStats) {
        if let Some(pc) = self.pods.get(&ps.pod_ref.uid)
            && let Ok(sample) = self.sample(&pc.path, self.not_container())
        {
            let (cpu, memory, swap, io) = self.cgroup_stats(&pc.path, &sample);
            ps.cpu = cpu;
            ps.memory = memory;
            ps.swap = swap;
            ps.io = io;
            return;
        }
        // `addIOStats`: pod-level pressure cannot be summed from the containers'.
        ps.io = ps
            .containers
            .iter()
            .find_map(|c| c.io.as_ref())
            .map(|io| IoStats {
                time: io.time,
                psi: None,
            });
        for cs in &ps.containers {
            if let Some(c) = &cs.cpu {
                let p = ps.cpu.get_or_insert_with(CpuStats::default);
                p.time = c.time;
                p.usage_core_nano_seconds =
                    add(p.usage_core_nano_seconds, c.usage_core_nano_seconds);
                p.usage_nano_cores = add(p.usage_nano_cores, c.usage_nano_cores);
            }
            if let Some(m) = &cs.memory {
                let p = ps.memory.get_or_insert_with(MemoryStats::default);
                p.time = m.time;
                p.available_bytes = add(p.available_bytes, m.available_bytes);
                p.usage_bytes = add(p.usage_bytes, m.usage_bytes);
                p.working_set_bytes = add(p.working_set_bytes, m.working_set_bytes);
                p.rss_bytes = add(p.rss_bytes, m.rss_bytes);
                p.page_faults = add(p.page_faults, m.page_faults);
                p.major_page_faults = add(p.major_page_faults, m.major_page_faults);
            }
            if let Some(sw) = &cs.swap {
                let p = ps.swap.get_or_insert_with(SwapStats::default);
                p.time = sw.time;
                p.swap_usage_bytes = add(p.swap_usage_bytes, sw.swap_usage_bytes);
                p.swap_available_bytes = add(p.swap_available_bytes, sw.swap_available_bytes);
            }
        }
    }

    /// The pod's network namespace counters, through a process of the sandbox's cgroup.
    fn pod_network(&self, uid: &str, sandbox: &PodSandbox) -> Option<NetworkStats> {
        let pc = self.pods.get(uid)?;
        let dev = self.r.sandbox_net_dev(&self.cgroups, sandbox, || {
            pc.child(&self.cgroups, &sandbox.id)
        })?;
        network_stats(self.now, parse_net_dev(&dev))
    }

    /// `RootFsStats`: the filesystem of `--root-dir`.
    fn root_fs_stats(&mut self) -> Result<FsStats, StatsError> {
        let root_dir = self.r.cfg.root_dir.clone();
        let c = self
            .r
            .fs
            .capacity(&root_dir)
            .map_err(|e| StatsError::Fs(format!("{}: {e}", root_dir.display())))?;
        self.capacities.insert(root_dir, Some(c));
        Ok(FsStats {
            time: self.now,
            available_bytes: Some(c.available),
            capacity_bytes: Some(c.capacity),
            used_bytes: Some(c.usage),
            inodes_free: Some(c.inodes_free),
            inodes: Some(c.inodes),
            inodes_used: Some(c.inodes.saturating_sub(c.inodes_free)),
        })
    }

    /// `ImageFsStats`: the runtime's image filesystem (and container filesystem, the image
    /// one when the runtime names none), with the capacity of its mount point.
    fn image_fs_stats(
        &mut self,
        resp: &kubelet_cri::v1::ImageFsInfoResponse,
    ) -> Result<(Option<FsStats>, Option<FsStats>), StatsError> {
        let Some(first) = resp.image_filesystems.first() else {
            return Err(StatsError::Runtime(
                "imageFs information is unavailable".into(),
            ));
        };
        let image = self.filesystem_usage(first);
        let container = match resp.container_filesystems.first() {
            Some(u) => self.filesystem_usage(u),
            None => image.clone(),
        };
        Ok((Some(image), Some(container)))
    }

    fn filesystem_usage(&mut self, u: &kubelet_cri::v1::FilesystemUsage) -> FsStats {
        let mut fs = FsStats {
            time: Time::from_nanos(u.timestamp),
            used_bytes: value(u.used_bytes.as_ref()),
            inodes_used: value(u.inodes_used.as_ref()),
            ..FsStats::default()
        };
        if fs.time == Time::default() {
            fs.time = self.now;
        }
        if let Some(id) = &u.fs_id
            && let Some(c) = self.capacity(Path::new(&id.mountpoint))
        {
            fs.available_bytes = Some(c.available);
            fs.capacity_bytes = Some(c.capacity);
            fs.inodes_free = Some(c.inodes_free);
            fs.inodes = Some(c.inodes);
        }
        fs
    }
}

/// `makePSIStats`: the runtime's pressure figures (`KubeletPSI`).
fn runtime_psi(p: Option<&kubelet_cri::v1::PsiStats>, psi: bool) -> Option<PsiStats> {
    let p = p.filter(|_| psi)?;
    let data = |d: Option<&kubelet_cri::v1::PsiData>| {
        d.map(|d| PsiData {
            total: d.total,
            avg10: d.avg10,
            avg60: d.avg60,
            avg300: d.avg300,
        })
        .unwrap_or_default()
    };
    Some(PsiStats {
        full: data(p.full.as_ref()),
        some: data(p.some.as_ref()),
    })
}

/// The runtime's CPU figures, zero when missing (`zeroMissingValues`).
fn runtime_cpu(s: &CriContainerStats, now: Time, psi: bool) -> Option<CpuStats> {
    Some(match &s.cpu {
        Some(cpu) => CpuStats {
            time: Time::from_nanos(cpu.timestamp),
            usage_nano_cores: value(cpu.usage_nano_cores.as_ref()),
            usage_core_nano_seconds: Some(value(cpu.usage_core_nano_seconds.as_ref()).unwrap_or(0)),
            psi: runtime_psi(cpu.psi.as_ref(), psi),
        },
        None => CpuStats {
            time: now,
            usage_nano_cores: Some(0),
            usage_core_nano_seconds: Some(0),
            psi: None,
        },
    })
}

/// The runtime's IO figures (`makeContainerStats` with `KubeletPSI`).
fn runtime_io(s: &CriContainerStats, now: Time) -> IoStats {
    match &s.io {
        Some(io) => IoStats {
            time: Time::from_nanos(io.timestamp),
            psi: runtime_psi(io.psi.as_ref(), true),
        },
        None => IoStats {
            time: now,
            psi: None,
        },
    }
}

/// The runtime's memory figures, zero when missing.
fn runtime_memory(s: &CriContainerStats, now: Time, psi: bool) -> Option<MemoryStats> {
    Some(match &s.memory {
        Some(m) => MemoryStats {
            time: Time::from_nanos(m.timestamp),
            available_bytes: value(m.available_bytes.as_ref()),
            usage_bytes: Some(value(m.usage_bytes.as_ref()).unwrap_or(0)),
            working_set_bytes: Some(value(m.working_set_bytes.as_ref()).unwrap_or(0)),
            rss_bytes: Some(value(m.rss_bytes.as_ref()).unwrap_or(0)),
            page_faults: value(m.page_faults.as_ref()),
            major_page_faults: value(m.major_page_faults.as_ref()),
            psi: runtime_psi(m.psi.as_ref(), psi),
        },
        None => MemoryStats {
            time: now,
            usage_bytes: Some(0),
            working_set_bytes: Some(0),
            rss_bytes: Some(0),
            ..MemoryStats::default()
        },
    })
}

/// The runtime's swap figures, zero when missing.
fn runtime_swap(s: &CriContainerStats, now: Time) -> Option<SwapStats> {
    Some(match &s.swap {
        Some(sw) => SwapStats {
            time: Time::from_nanos(sw.timestamp),
            swap_available_bytes: value(sw.swap_available_bytes.as_ref()),
            swap_usage_bytes: value(sw.swap_usage_bytes.as_ref()),
        },
        None => SwapStats {
            time: now,
            swap_available_bytes: Some(0),
            swap_usage_bytes: Some(0),
        },
    })
}

/// `calcEphemeralStorage`: writable layers and logs of the containers, and the local
/// ephemeral volumes.
fn ephemeral_storage(ps: &PodStats, volumes: &[VolumeStats], now: Time) -> FsStats {
    let mut fs = FsStats {
        time: now,
        used_bytes: Some(0),
        inodes_used: Some(0),
        ..FsStats::default()
    };
    for c in &ps.containers {
        for part in [&c.rootfs, &c.logs].into_iter().flatten() {
            fs.used_bytes = add(fs.used_bytes, part.used_bytes);
            fs.inodes_used = add(fs.inodes_used, part.inodes_used);
            if fs.capacity_bytes.is_none() {
                fs.capacity_bytes = part.capacity_bytes;
                fs.available_bytes = part.available_bytes;
                fs.inodes = part.inodes;
                fs.inodes_free = part.inodes_free;
            }
        }
    }
    for v in volumes {
        fs.used_bytes = add(fs.used_bytes, v.fs.used_bytes);
        fs.inodes_used = add(fs.inodes_used, v.fs.inodes_used);
        fs.time = fs.time.max(v.fs.time);
    }
    fs
}

#[cfg(test)]
#[test]
fn max_open_files_soft_limit() {
    let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax cpu time              unlimited            unlimited            seconds\nMax open files            1024                 524288               files\n";
    assert_eq!(max_open_files(limits), Some(1024));
    let unlimited = "Max open files            unlimited            unlimited            files\n";
    assert_eq!(max_open_files(unlimited), Some(-1));
    assert_eq!(max_open_files("Max processes 1 2 processes\n"), None);
}

#[cfg(test)]
#[path = "provider_tests.rs"]
mod tests;
