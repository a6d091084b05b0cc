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
//! Not reported (documented in the crate doc): volume stats (`volume`; upstream computes
//! them with a per-volume `du` refreshed every minute), PSI and IO stats (`KubeletPSI`, off
//! by default in 1.35), accelerators and user-defined metrics.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use kubelet_cm::HostFs;
use kubelet_cri::v1::{
    Container, ContainerState, ContainerStats as CriContainerStats, PodSandbox, PodSandboxState,
    UInt64Value,
};
use kubelet_cri::{ImageService, RuntimeService};

use crate::StatsError;
use crate::cgroup::{
    CgroupReader, CgroupSample, extract_id_from_cgroup_path, pod_uid_from_cgroup_name,
};
use crate::cpu::CpuUsageCache;
use crate::fs::FsInfo;
use crate::network::{network_stats, parse_net_dev};
use crate::types::*;

/// CPU, memory and swap of one cgroup reading.
type CgroupFigures = (Option<CpuStats>, Option<MemoryStats>, Option<SwapStats>);

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

/// The summary provider (upstream `SummaryProvider` + `stats.Provider`).
pub struct SummaryProvider {
    cfg: ProviderConfig,
    src: ProviderSources,
    cpu: CpuUsageCache,
    kubelet_creation: Time,
}

/// The runtime's view of the pods, terminated sandboxes and containers removed.
struct RuntimeView {
    sandboxes: HashMap<String, PodSandbox>,
    containers: HashMap<String, Container>,
    stats: Vec<CriContainerStats>,
    /// Pod UID → pod cgroup (cgroupfs path).
    pod_cgroups: HashMap<String, String>,
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

impl SummaryProvider {
    /// A provider; `kubelet_creation` is now.
    pub fn new(cfg: ProviderConfig, src: ProviderSources) -> Self {
        let kubelet_creation = Time((src.clock)());
        SummaryProvider {
            cfg,
            src,
            cpu: CpuUsageCache::default(),
            kubelet_creation,
        }
    }

    fn now(&self) -> Time {
        Time((self.src.clock)())
    }

    /// The root cgroup's CPU, memory and swap (`GetCgroupStats("/")`).
    fn root_stats(&self, now: Time) -> Result<CgroupFigures, StatsError> {
        let root =
            self.src.cgroups.sample("/").map_err(|e| {
                StatsError::Summary(format!("failed to get root cgroup stats: {e}"))
            })?;
        Ok(self.cgroup_stats("/", &root, now))
    }

    /// `Get`: the full summary.
    pub async fn get(&self) -> Result<Summary, StatsError> {
        let now = self.now();
        let (cpu, memory, swap) = self.root_stats(now)?;
        let fs = self
            .root_fs_stats(now)
            .map_err(|e| StatsError::Summary(format!("failed to get rootFs stats: {e}")))?;
        let (image_fs, container_fs) = self
            .image_fs_stats(now)
            .await
            .map_err(|e| StatsError::Summary(format!("failed to get imageFs stats: {e}")))?;
        let view = self
            .runtime_view()
            .await
            .map_err(|e| StatsError::Summary(format!("failed to list pod stats: {e}")))?;
        let pods = self.list_pod_stats(&view, true, now);
        let network = self
            .src
            .host
            .read_to_string(&PathBuf::from("/proc/net/dev"))
            .ok()
            .and_then(|s| network_stats(now, parse_net_dev(&s)));
        let summary = Summary {
            node: NodeStats {
                node_name: self.cfg.node_name.clone(),
                system_containers: self.system_containers(now),
                start_time: self.src.boot_time,
                cpu,
                memory,
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
        Ok(summary)
    }

    /// `GetCPUAndMemoryStats`: node, system containers and pods, CPU and memory only.
    pub async fn get_cpu_and_memory_stats(&self) -> Result<Summary, StatsError> {
        let now = self.now();
        let (cpu, memory, swap) = self.root_stats(now)?;
        let view = self
            .runtime_view()
            .await
            .map_err(|e| StatsError::Summary(format!("failed to list pod stats: {e}")))?;
        let pods = self.list_pod_stats(&view, false, now);
        self.cpu.cleanup(now);
        Ok(Summary {
            node: NodeStats {
                node_name: self.cfg.node_name.clone(),
                system_containers: self.system_containers(now),
                start_time: self.src.boot_time,
                cpu,
                memory,
                swap,
                ..NodeStats::default()
            },
            pods,
        })
    }

    /// What `/metrics/cadvisor` reports: the root, pod and running container cgroups.
    pub async fn cadvisor_snapshot(&self) -> crate::cadvisor_metrics::Snapshot {
        use crate::cadvisor_metrics::{CgroupEntry, Snapshot};
        let now = self.now();
        let mut snap = Snapshot {
            time: now,
            boot_time: self.src.boot_time,
            machine_memory: self.src.cgroups.machine_memory(),
            ..Snapshot::default()
        };
        let view = match self.runtime_view().await {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(err = %e, "Couldn't get containers");
                snap.error = true;
                return snap;
            }
        };
        if let Ok(sample) = self.src.cgroups.sample("/") {
            snap.cgroups.push(CgroupEntry {
                id: "/".into(),
                start: self.src.boot_time,
                sample,
                ..CgroupEntry::default()
            });
        }
        for sandbox in view.sandboxes.values() {
            let pod = pod_ref(sandbox);
            if let Some(cg) = view.pod_cgroups.get(&pod.uid)
                && let Ok(sample) = self.src.cgroups.sample(cg)
            {
                snap.cgroups.push(CgroupEntry {
                    id: cg.clone(),
                    pod,
                    start: Time::from_nanos(sandbox.created_at),
                    sample,
                    ..CgroupEntry::default()
                });
            }
        }
        for s in &view.stats {
            let Some((c, sandbox)) = self.container_and_sandbox(&view, s) else {
                continue;
            };
            let info = self.container_info(&view, s, c, sandbox, false, now);
            if let (Some(id), Some(sample)) = (info.cgroup, info.sample) {
                snap.cgroups.push(CgroupEntry {
                    id,
                    name: info.id,
                    image: info.image,
                    container: info.stats.name,
                    pod: info.pod,
                    start: info.stats.start_time,
                    sample,
                });
            }
        }
        snap
    }

    /// CPU, memory and swap of a cgroup reading (cAdvisor's `cadvisorInfoToCPUandMemoryStats`
    /// and `cadvisorInfoToSwapStats`), the CPU rate from [`CpuUsageCache`] under `key`.
    fn cgroup_stats(&self, key: &str, s: &CgroupSample, now: Time) -> CgroupFigures {
        let cpu = s.cpu_usage_ns.map(|usage| CpuStats {
            time: now,
            usage_nano_cores: self.cpu.nano_cores(key, now, usage),
            usage_core_nano_seconds: Some(usage),
        });
        let memory = s.memory.as_ref().map(|m| MemoryStats {
            time: now,
            available_bytes: m.available(),
            usage_bytes: Some(m.usage),
            working_set_bytes: Some(m.working_set),
            rss_bytes: Some(m.rss),
            page_faults: Some(m.page_faults),
            major_page_faults: Some(m.major_page_faults),
        });
        let swap = s.swap.as_ref().map(|sw| SwapStats {
            time: now,
            swap_available_bytes: sw
                .limit
                .filter(|l| *l <= crate::cgroup::MAX_MEMORY_SIZE)
                .map(|l| l.saturating_sub(sw.usage)),
            swap_usage_bytes: Some(sw.usage),
        });
        (cpu, memory, swap)
    }

    /// `GetSystemContainersStats`: `kubelet`, `runtime`, `misc` (when configured) and `pods`.
    fn system_containers(&self, now: Time) -> Vec<ContainerStats> {
        let c = &self.cfg;
        let entries = [
            (
                system_containers::KUBELET,
                c.kubelet_cgroup.as_str(),
                Some(self.kubelet_creation),
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
            let s = match self.src.cgroups.sample(cgroup) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(err = %e, container_name = cgroup, "Failed to get system container stats");
                    continue;
                }
            };
            let (cpu, memory, swap) = self.cgroup_stats(cgroup, &s, now);
            out.push(ContainerStats {
                name: name.to_string(),
                start_time: start.unwrap_or(self.src.boot_time),
                cpu,
                memory,
                swap,
                ..ContainerStats::default()
            });
        }
        out
    }

    /// `getPodAndContainerMaps` + `ListContainerStats` + the pod cgroups.
    async fn runtime_view(&self) -> Result<RuntimeView, StatsError> {
        let rt = &self.src.runtime;
        let containers = rt
            .list_containers(None)
            .await
            .map_err(|e| StatsError::Runtime(format!("failed to list all containers: {e}")))?;
        let sandboxes = rt
            .list_pod_sandbox(None)
            .await
            .map_err(|e| StatsError::Runtime(format!("failed to list all pod sandboxes: {e}")))?;
        let stats = rt
            .list_container_stats(None)
            .await
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
            pod_cgroups: self.pod_cgroups(),
        })
    }

    /// Pod UID → pod cgroup, from the pods cgroup and its QoS children.
    fn pod_cgroups(&self) -> HashMap<String, String> {
        let mut out = HashMap::new();
        let Some(root) = self.cfg.pods_cgroup.as_deref() else {
            return out;
        };
        let cg = &self.src.cgroups;
        let root = root.trim_end_matches('/');
        for child in cg.children(root) {
            let path = format!("{root}/{child}");
            match pod_uid_from_cgroup_name(&child) {
                Some(uid) => {
                    out.insert(uid, path);
                }
                None => {
                    for grandchild in cg.children(&path) {
                        if let Some(uid) = pod_uid_from_cgroup_name(&grandchild) {
                            out.insert(uid, format!("{path}/{grandchild}"));
                        }
                    }
                }
            }
        }
        out
    }

    fn container_and_sandbox<'v>(
        &self,
        view: &'v RuntimeView,
        s: &CriContainerStats,
    ) -> Option<(&'v Container, &'v PodSandbox)> {
        let id = s.attributes.as_ref()?.id.as_str();
        let c = view.containers.get(id)?;
        let sandbox = view.sandboxes.get(&c.pod_sandbox_id)?;
        Some((c, sandbox))
    }

    /// The cgroup of a container of the pod cgroup (`extractIDFromCgroupPath` of its children).
    fn container_cgroup(&self, pod_cgroup: &str, id: &str) -> Option<String> {
        self.src
            .cgroups
            .children(pod_cgroup)
            .into_iter()
            .find(|child| extract_id_from_cgroup_path(child) == id)
            .map(|child| format!("{pod_cgroup}/{child}"))
    }

    /// `makeContainerStats` / `makeContainerCPUAndMemoryStats`, then the cgroup's figures
    /// (`addCadvisorContainerStats`).
    fn container_info(
        &self,
        view: &RuntimeView,
        s: &CriContainerStats,
        c: &Container,
        sandbox: &PodSandbox,
        full: bool,
        now: Time,
    ) -> ContainerInfo {
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
        // The runtime's figures, zero when missing (`zeroMissingValues`).
        cs.cpu = Some(match &s.cpu {
            Some(cpu) => CpuStats {
                time: Time::from_nanos(cpu.timestamp),
                usage_nano_cores: value(cpu.usage_nano_cores.as_ref()),
                usage_core_nano_seconds: Some(
                    value(cpu.usage_core_nano_seconds.as_ref()).unwrap_or(0),
                ),
            },
            None => CpuStats {
                time: now,
                usage_nano_cores: Some(0),
                usage_core_nano_seconds: Some(0),
            },
        });
        cs.memory = Some(match &s.memory {
            Some(m) => MemoryStats {
                time: Time::from_nanos(m.timestamp),
                available_bytes: value(m.available_bytes.as_ref()),
                usage_bytes: Some(value(m.usage_bytes.as_ref()).unwrap_or(0)),
                working_set_bytes: Some(value(m.working_set_bytes.as_ref()).unwrap_or(0)),
                rss_bytes: Some(value(m.rss_bytes.as_ref()).unwrap_or(0)),
                page_faults: value(m.page_faults.as_ref()),
                major_page_faults: value(m.major_page_faults.as_ref()),
            },
            None => MemoryStats {
                time: now,
                usage_bytes: Some(0),
                working_set_bytes: Some(0),
                rss_bytes: Some(0),
                ..MemoryStats::default()
            },
        });
        cs.swap = Some(match &s.swap {
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
        });
        let cgroup = view
            .pod_cgroups
            .get(&pod.uid)
            .and_then(|pc| self.container_cgroup(pc, &c.id));
        let sample = cgroup
            .as_deref()
            .and_then(|cg| self.src.cgroups.sample(cg).ok());
        if let Some(sample) = &sample {
            let (cpu, memory, swap) = self.cgroup_stats(&c.id, sample, now);
            cs.cpu = cpu.or(cs.cpu);
            cs.memory = memory.or(cs.memory);
            cs.swap = swap.or(cs.swap);
        }
        if full {
            cs.rootfs = Some(self.writable_layer(s, now));
            cs.logs = self.log_stats(&pod, &cs.name, now);
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
    fn writable_layer(&self, s: &CriContainerStats, now: Time) -> FsStats {
        let Some(w) = &s.writable_layer else {
            return FsStats {
                time: now,
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
            && let Ok(c) = self.src.fs.capacity(&PathBuf::from(&id.mountpoint))
        {
            fs.available_bytes = Some(c.available);
            fs.capacity_bytes = Some(c.capacity);
            fs.inodes_free = Some(c.inodes_free);
            fs.inodes = Some(c.inodes);
        }
        fs
    }

    /// `getPodContainerLogStats`: usage of the container's log directory, capacity of the
    /// root filesystem.
    fn log_stats(&self, pod: &PodReference, container: &str, now: Time) -> Option<FsStats> {
        let dir = self
            .cfg
            .pod_logs_dir
            .join(format!("{}_{}_{}", pod.namespace, pod.name, pod.uid))
            .join(container);
        let u = self.src.fs.dir_usage(&dir).ok()?;
        let c = self.src.fs.capacity(&self.cfg.root_dir).ok();
        Some(FsStats {
            time: now,
            available_bytes: c.map(|c| c.available),
            capacity_bytes: c.map(|c| c.capacity),
            used_bytes: Some(u.bytes),
            inodes_free: c.map(|c| c.inodes_free),
            inodes: c.map(|c| c.inodes),
            inodes_used: Some(u.inodes),
        })
    }

    /// `listPodStatsPartiallyFromCRI` (full) / `ListPodCPUAndMemoryStats`.
    fn list_pod_stats(&self, view: &RuntimeView, full: bool, now: Time) -> Vec<PodStats> {
        let mut pods: BTreeMap<String, PodStats> = BTreeMap::new();
        for s in &view.stats {
            let Some((c, sandbox)) = self.container_and_sandbox(view, s) else {
                continue;
            };
            let info = self.container_info(view, s, c, sandbox, full, now);
            let ps = pods.entry(sandbox.id.clone()).or_insert_with(|| PodStats {
                pod_ref: info.pod.clone(),
                start_time: Time::from_nanos(sandbox.created_at),
                ..PodStats::default()
            });
            if full && let Some(n) = info.sample.as_ref() {
                let procs = ps.process_stats.get_or_insert_with(ProcessStats::default);
                procs.process_count = add(procs.process_count, n.pids);
            }
            ps.containers.push(info.stats);
        }
        let mut out: Vec<PodStats> = pods
            .into_iter()
            .map(|(sandbox_id, mut ps)| {
                self.add_pod_cpu_memory(view, &mut ps, now);
                if full {
                    ps.network = self.pod_network(view, &ps.pod_ref.uid, &sandbox_id, now);
                    ps.ephemeral_storage = Some(ephemeral_storage(&ps, now));
                }
                ps
            })
            .collect();
        out.sort_by(|a, b| a.pod_ref.cmp(&b.pod_ref));
        out
    }

    /// `addPodCPUMemoryStats` + `addSwapStats`: the pod cgroup, else the containers' sum.
    fn add_pod_cpu_memory(&self, view: &RuntimeView, ps: &mut PodStats, now: Time) {
        if let Some(pc) = view.pod_cgroups.get(&ps.pod_ref.uid)
            && let Ok(sample) = self.src.cgroups.sample(pc)
        {
            let (cpu, memory, swap) =
                self.cgroup_stats(&format!("pod{}", ps.pod_ref.uid), &sample, now);
            ps.cpu = cpu;
            ps.memory = memory;
            ps.swap = swap;
            return;
        }
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
    fn pod_network(
        &self,
        view: &RuntimeView,
        uid: &str,
        sandbox_id: &str,
        now: Time,
    ) -> Option<NetworkStats> {
        let pc = view.pod_cgroups.get(uid)?;
        let cg = self.container_cgroup(pc, sandbox_id)?;
        let pid = *self.src.cgroups.procs(&cg).first()?;
        let dev = self
            .src
            .host
            .read_to_string(&PathBuf::from(format!("/proc/{pid}/net/dev")))
            .ok()?;
        network_stats(now, parse_net_dev(&dev))
    }

    /// `RootFsStats`: the filesystem of `--root-dir`.
    fn root_fs_stats(&self, now: Time) -> Result<FsStats, StatsError> {
        let c = self
            .src
            .fs
            .capacity(&self.cfg.root_dir)
            .map_err(|e| StatsError::Fs(format!("{}: {e}", self.cfg.root_dir.display())))?;
        Ok(FsStats {
            time: now,
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
    async fn image_fs_stats(
        &self,
        now: Time,
    ) -> Result<(Option<FsStats>, Option<FsStats>), StatsError> {
        let resp = self
            .src
            .images
            .image_fs_info()
            .await
            .map_err(|e| StatsError::Runtime(e.to_string()))?;
        let Some(first) = resp.image_filesystems.first() else {
            return Err(StatsError::Runtime(
                "imageFs information is unavailable".into(),
            ));
        };
        let to_stats = |u: &kubelet_cri::v1::FilesystemUsage| {
            let mut fs = FsStats {
                time: Time::from_nanos(u.timestamp),
                used_bytes: value(u.used_bytes.as_ref()),
                inodes_used: value(u.inodes_used.as_ref()),
                ..FsStats::default()
            };
            if fs.time == Time::default() {
                fs.time = now;
            }
            if let Some(id) = &u.fs_id
                && let Ok(c) = self.src.fs.capacity(&PathBuf::from(&id.mountpoint))
            {
                fs.available_bytes = Some(c.available);
                fs.capacity_bytes = Some(c.capacity);
                fs.inodes_free = Some(c.inodes_free);
                fs.inodes = Some(c.inodes);
            }
            fs
        };
        let image = to_stats(first);
        let container = resp
            .container_filesystems
            .first()
            .map(to_stats)
            .unwrap_or_else(|| image.clone());
        Ok((Some(image), Some(container)))
    }

    /// `pidlimit.Stats`: min(`pid_max`, `threads-max`), tasks from `/proc/loadavg`.
    fn rlimit_stats(&self, now: Time) -> RlimitStats {
        let read = |p: &str| {
            self.src
                .host
                .read_to_string(&PathBuf::from(p))
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
            .src
            .host
            .read_to_string(&PathBuf::from("/proc/loadavg"))
            .ok()
            .and_then(|s| {
                let f = s.split_whitespace().nth(3)?.split_once('/')?.1.to_string();
                f.parse().ok()
            });
        RlimitStats {
            time: now,
            max_pid,
            num_of_running_processes: procs,
        }
    }
}

/// `calcEphemeralStorage` without volumes: writable layers and logs of the containers.
fn ephemeral_storage(ps: &PodStats, now: Time) -> FsStats {
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
    fs
}

#[cfg(test)]
#[path = "provider_tests.rs"]
mod tests;
