//! CPU, memory, swap and process usage of one cgroup, read on demand from cgroup v1 or v2
//! files through [`HostFs`] — what cAdvisor's `libcontainer` handler reads for the kubelet
//! (`cadvisor/container/libcontainer/handler.go`, `helper.go` `cadvisorInfoToCPUandMemoryStats`):
//!
//! * CPU: v1 `cpuacct.usage`; v2 `cpu.stat` `usage_usec` (the v2 root without `cpu.stat`:
//!   `/proc/stat`);
//! * memory: usage v1 `memory.usage_in_bytes`, v2 `memory.current` (the v2 root:
//!   `MemTotal − MemFree` of `/proc/meminfo`); working set = usage − inactive file pages
//!   (`total_inactive_file` / `inactive_file`), 0 when they exceed the usage; RSS
//!   `total_rss` / `anon`; page faults `total_pgfault`/`pgfault`,
//!   `total_pgmajfault`/`pgmajfault`; limit `memory.limit_in_bytes` / `memory.max` (the
//!   root: the machine's memory);
//! * swap: v1 `memory.memsw.usage_in_bytes − usage` / `memory.memsw.limit_in_bytes`, v2
//!   `memory.swap.current` / `memory.swap.max` (the root's limit: `SwapTotal`);
//! * processes: the lines of `cgroup.procs` (cAdvisor's `ProcessCount`); for `/metrics/cadvisor` also
//!   `pids.current`/`pids.max` (threads), user/system CPU and OOM kills;
//! * PSI: v2 `*.pressure` (zeros on v1);
//! * for `/metrics/cadvisor`, disk I/O per device (v1 blkio BFQ/throttle tables, v2
//!   `io.stat`, as libcontainer's `BlkioGroup.GetStats`/`statIo`) and CFS throttling
//!   (`cpu.stat` when `cpu.cfs_quota_us`/`cpu.max` sets a quota).
//!
//! Each cgroup directory is opened once and its files read relative to it
//! (`HostFs::read_files`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kubelet_cm::{CgroupVersion, HostFs};

use crate::StatsError;
use crate::types::PsiStats;

/// `USER_HZ` ticks (`cpuacct.stat`) in nanoseconds (`CLK_TCK` = 100 on Linux).
const NANOS_PER_USER_HZ_TICK: u64 = 10_000_000;

/// The files of one cgroup directory read in one go.
struct Files<'n> {
    names: &'n [&'n str],
    contents: Vec<std::io::Result<String>>,
}

impl Files<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        let i = self.names.iter().position(|n| *n == name)?;
        self.contents.get(i)?.as_deref().ok()
    }

    fn u64(&self, name: &str) -> Option<u64> {
        self.get(name)?.trim().parse().ok()
    }
}

/// The number of non-empty lines (`cgroup.procs`).
fn count_lines(s: &str) -> u64 {
    s.lines().filter(|l| !l.is_empty()).count() as u64
}

/// `pids.max`: 0 for `max` (cAdvisor's "infinity").
fn pids_max(s: &str) -> Option<u64> {
    match s.trim() {
        "max" => Some(0),
        v => v.parse().ok(),
    }
}

/// Memory above this is "unlimited" (upstream `isMemoryUnlimited`: the kernel rounds
/// `PAGE_COUNTER_MAX`).
pub const MAX_MEMORY_SIZE: u64 = 1 << 62;

/// One reading of a cgroup.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CgroupSample {
    /// Cumulative CPU time in nanoseconds.
    pub cpu_usage_ns: Option<u64>,
    /// Memory.
    pub memory: Option<MemorySample>,
    /// Swap usage and limit.
    pub swap: Option<SwapSample>,
    /// The processes of the cgroup itself (`cgroup.procs` lines; cAdvisor's
    /// `ProcessCount`).
    pub processes: Option<u64>,
    /// Pressure stall information (when asked).
    pub psi: Option<PsiSample>,
    /// What only `/metrics/cadvisor` reports (when asked).
    pub cadvisor: Option<CadvisorSample>,
}

/// The cgroup figures only `/metrics/cadvisor` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CadvisorSample {
    /// User CPU time in nanoseconds (v1 `cpuacct.stat` `user` ticks, v2 `cpu.stat`
    /// `user_usec`).
    pub cpu_user_ns: Option<u64>,
    /// System CPU time in nanoseconds (`system` / `system_usec`).
    pub cpu_system_ns: Option<u64>,
    /// Tasks (`pids.current`; cAdvisor's `ThreadsCurrent`).
    pub threads: Option<u64>,
    /// `pids.max`, 0 for `max` (cAdvisor's `ThreadsMax`).
    pub threads_max: Option<u64>,
    /// OOM kills in the cgroup (v1 `memory.oom_control`, v2 `memory.events` `oom_kill`).
    pub oom_kills: Option<u64>,
    /// Bytes per device and operation (libcontainer's `IoServiceBytesRecursive`).
    pub io_service_bytes: Vec<PerDiskStats>,
    /// Operations per device and operation (`IoServicedRecursive`).
    pub io_serviced: Vec<PerDiskStats>,
    /// CFS throttling (`cpu.stat`), when the cgroup has a CPU quota (cAdvisor reports the
    /// `container_cpu_cfs_*` families only then: `Spec.Cpu.Quota != 0`).
    pub cfs: Option<CfsSample>,
    /// The memory figures beyond [`MemorySample`] (`setMemoryStats`).
    pub memory: CadvisorMemory,
    /// The cgroup's limits (`common.GetSpec`).
    pub spec: CgroupSpec,
}

/// libcontainer's memory figures cAdvisor's `setMemoryStats` copies beyond usage, RSS and
/// cache: v1 `memory.{max_usage_in_bytes,failcnt}`, `memory.kmem.usage_in_bytes` and the
/// hierarchical `total_*` keys of `memory.stat` (`use_hierarchy`, always 1 on current
/// kernels); v2 `memory.peak` and the `memory.stat` keys (no failure counter and no
/// separate kernel usage on v2: libcontainer's `fs2` leaves them 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CadvisorMemory {
    /// `MaxUsage`: v1 `memory.max_usage_in_bytes`, v2 `memory.peak` (0 without it).
    pub max_usage: u64,
    /// `Failcnt`: v1 `memory.failcnt`.
    pub failcnt: u64,
    /// `KernelUsage`: v1 `memory.kmem.usage_in_bytes`.
    pub kernel_usage: u64,
    /// `MappedFile`: `total_mapped_file` / `file_mapped`.
    pub mapped_file: u64,
    /// `TotalActiveFile`: `total_active_file` / `active_file`.
    pub active_file: u64,
    /// `TotalInactiveFile`: `total_inactive_file` / `inactive_file`.
    pub inactive_file: u64,
    /// `pgfault` of `memory.stat` (cAdvisor reports it for both scopes, `container` and
    /// `hierarchy`: the un-prefixed key, on v1 the cgroup's own).
    pub pgfault: u64,
    /// `pgmajfault`, likewise.
    pub pgmajfault: u64,
}

/// What cAdvisor's `common.GetSpec` reads of a cgroup's limits (`container_spec_*`):
/// 0 where the file is absent or unparsable (its `readUInt64`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupSpec {
    /// `Cpu.Period`: v1 `cpu.cfs_period_us`, v2 the second field of `cpu.max`.
    pub cpu_period: u64,
    /// `Cpu.Quota`: v1 `cpu.cfs_quota_us` unless `-1`, v2 the first field of `cpu.max`
    /// unless `max`.
    pub cpu_quota: u64,
    /// `Cpu.Limit`: v1 `cpu.shares`, v2 `cpu.weight` converted to shares
    /// (`convertCPUWeightToCPULimit`).
    pub cpu_shares: u64,
    /// `Memory.Reservation`: v1 `memory.soft_limit_in_bytes`, v2 `memory.min`.
    pub memory_reservation: u64,
    /// `Memory.SwapLimit`: v1 `memory.memsw.limit_in_bytes`, v2 `memory.swap.max`; the root:
    /// `SwapTotal` (the raw handler's machine swap capacity).
    pub swap_limit: u64,
}

/// One device's counters of a blkio table, by operation (cAdvisor's `PerDiskStats`,
/// `diskStatsCopy`: `Read`, `Write` and on v1 also `Sync`, `Async`, `Discard`, `Total`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerDiskStats {
    /// Device major number.
    pub major: u64,
    /// Device minor number.
    pub minor: u64,
    /// `/dev/<name>` (cAdvisor's `AssignDeviceNamesToDiskStats`; empty when unknown).
    pub device: String,
    /// Operation → value.
    pub stats: BTreeMap<String, u64>,
}

/// CFS throttling data (libcontainer's `ThrottlingData`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CfsSample {
    /// `nr_periods`.
    pub periods: u64,
    /// `nr_throttled`.
    pub throttled_periods: u64,
    /// Throttled time in nanoseconds (v1 `throttled_time`, v2 `throttled_usec` × 1000).
    pub throttled_ns: u64,
}

/// Pressure stall information of a cgroup: v2 `cpu.pressure`, `memory.pressure`,
/// `io.pressure` (a missing file reads as zeros, as libcontainer's `statPSI` leaves them);
/// zeros on v1, which has none (cAdvisor reports its zero-valued `PSI` structs there).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PsiSample {
    /// CPU pressure.
    pub cpu: PsiStats,
    /// Memory pressure.
    pub memory: PsiStats,
    /// IO pressure, when the cgroup has the io (v1 `blkio`) controller and IO was asked
    /// (cAdvisor's `HasDiskIo`).
    pub io: Option<PsiStats>,
}

/// What a reading reads beyond CPU, memory and swap (`/metrics/resource` needs nothing more,
/// so a scrape of it reads nothing more).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Want {
    /// `pids.current`.
    pub processes: bool,
    /// The memory limit (`availableBytes`; `/metrics/resource` does not report it).
    pub memory_limit: bool,
    /// CPU and memory pressure (`KubeletPSI`).
    pub psi: bool,
    /// IO pressure (`KubeletPSI`; the full summary and `/metrics/cadvisor` only).
    pub io: bool,
    /// [`CadvisorSample`].
    pub cadvisor: bool,
    /// The swap limit (`memory.memsw.limit_in_bytes`, `memory.swap.max`).
    pub swap_limit: bool,
}

impl Want {
    /// `/metrics/resource`: CPU, memory usage and swap.
    pub const RESOURCE_METRICS: Want = Want {
        processes: false,
        memory_limit: false,
        psi: false,
        io: false,
        cadvisor: false,
        swap_limit: true,
    };
    /// `GetCPUAndMemoryStats` (`only_cpu_and_memory`).
    pub const CPU_AND_MEMORY: Want = Want {
        processes: false,
        memory_limit: true,
        psi: true,
        io: false,
        cadvisor: false,
        swap_limit: true,
    };
    /// The full summary.
    pub const SUMMARY: Want = Want {
        processes: true,
        memory_limit: true,
        psi: true,
        io: true,
        cadvisor: false,
        swap_limit: true,
    };
    /// `/metrics/cadvisor`.
    pub const CADVISOR: Want = Want {
        cadvisor: true,
        ..Want::SUMMARY
    };

    /// Without pressure (`KubeletPSI` off).
    pub fn without_psi(self) -> Want {
        Want {
            psi: false,
            io: false,
            ..self
        }
    }
}

/// Memory figures of a cgroup.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemorySample {
    /// Usage (page cache included).
    pub usage: u64,
    /// Usage − inactive file pages.
    pub working_set: u64,
    /// Anonymous memory.
    pub rss: u64,
    /// Page cache (`total_cache` / `file`).
    pub cache: u64,
    /// Page faults.
    pub page_faults: u64,
    /// Major page faults.
    pub major_page_faults: u64,
    /// The limit (`None` or above [`MAX_MEMORY_SIZE`]: unlimited).
    pub limit: Option<u64>,
}

impl MemorySample {
    /// `limit − working set` when limited (upstream `AvailableBytes`).
    pub fn available(&self) -> Option<u64> {
        self.limit
            .filter(|l| *l <= MAX_MEMORY_SIZE)
            .map(|l| l.saturating_sub(self.working_set))
    }
}

/// Swap figures of a cgroup.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwapSample {
    /// Swap in use.
    pub usage: u64,
    /// The swap limit, when set.
    pub limit: Option<u64>,
}

/// Reads cgroups of one hierarchy. Paths are cgroupfs paths from the hierarchy's root
/// (`/`, `/kubepods/burstable/pod<uid>`, `/kubepods.slice/...`).
#[derive(Clone)]
pub struct CgroupReader {
    fs: Arc<dyn HostFs>,
    version: CgroupVersion,
    mount: PathBuf,
    proc: PathBuf,
}

impl CgroupReader {
    /// A reader of the hierarchy mounted at `/sys/fs/cgroup`, `/proc` for the root's
    /// fallbacks.
    pub fn new(fs: Arc<dyn HostFs>, version: CgroupVersion) -> Self {
        Self::with_roots(fs, version, "/sys/fs/cgroup", "/proc")
    }

    /// A reader with other mount points (tests).
    pub fn with_roots(
        fs: Arc<dyn HostFs>,
        version: CgroupVersion,
        mount: impl Into<PathBuf>,
        proc: impl Into<PathBuf>,
    ) -> Self {
        CgroupReader {
            fs,
            version,
            mount: mount.into(),
            proc: proc.into(),
        }
    }

    /// The cgroup version read.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// The host filesystem read.
    pub fn host_fs(&self) -> &Arc<dyn HostFs> {
        &self.fs
    }

    /// The same hierarchy read through `fs` (one request's [`crate::scrape_fs::ScrapeFs`]).
    pub fn with_fs(&self, fs: Arc<dyn HostFs>) -> CgroupReader {
        CgroupReader { fs, ..self.clone() }
    }

    /// The directory of `cgroup` for `controller` (ignored on v2).
    fn dir(&self, controller: &str, cgroup: &str) -> PathBuf {
        let rel = cgroup.trim_start_matches('/');
        // One allocation of the whole length (a `join` per part grows it twice).
        let mut dir =
            PathBuf::with_capacity(self.mount.as_os_str().len() + controller.len() + rel.len() + 2);
        dir.push(&self.mount);
        if self.version == CgroupVersion::V1 {
            dir.push(controller);
        }
        if !rel.is_empty() {
            dir.push(rel);
        }
        dir
    }

    /// The directory of `cgroup` in the memory hierarchy (v1) or the unified one (v2).
    pub fn memory_dir(&self, cgroup: &str) -> PathBuf {
        self.dir("memory", cgroup)
    }

    fn read(&self, path: &Path) -> Option<String> {
        self.fs.read_to_string(path).ok()
    }

    /// Whether the cgroup exists.
    pub fn exists(&self, cgroup: &str) -> bool {
        self.fs.exists(&self.dir("memory", cgroup))
    }

    /// The names of the cgroup's child cgroups.
    pub fn children(&self, cgroup: &str) -> Vec<String> {
        self.fs
            .read_dir(&self.dir("memory", cgroup))
            .unwrap_or_default()
    }

    /// The processes of the cgroup (`cgroup.procs`).
    pub fn procs(&self, cgroup: &str) -> Vec<u32> {
        self.read(&self.dir("memory", cgroup).join("cgroup.procs"))
            .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Reads the cgroup's CPU, memory, swap and processes; `Err(NotFound)` when it does not
    /// exist.
    pub fn sample(&self, cgroup: &str) -> Result<CgroupSample, StatsError> {
        self.sample_with(cgroup, Want::SUMMARY)
    }

    /// Reads what `want` asks of the cgroup; `Err(NotFound)` when it does not exist. The
    /// existence is only checked when the first file cannot be read (one syscall less per
    /// cgroup on the hot path).
    pub fn sample_with(&self, cgroup: &str, want: Want) -> Result<CgroupSample, StatsError> {
        let root = cgroup.trim_matches('/').is_empty();
        let sample = match self.version {
            CgroupVersion::V1 => self.sample_v1(cgroup, root, want),
            CgroupVersion::V2 => self.sample_v2(cgroup, root, want),
        };
        if sample.memory.is_none() && sample.cpu_usage_ns.is_none() && !self.exists(cgroup) {
            return Err(StatsError::CgroupNotFound(cgroup.to_string()));
        }
        Ok(sample)
    }

    /// Reads `names` of directory `dir` in one go (`HostFs::read_files`: one path walk).
    fn files<'n>(&self, dir: &Path, names: &'n [&'n str]) -> Files<'n> {
        Files {
            names,
            contents: self.fs.read_files(dir, names),
        }
    }

    fn sample_v1(&self, cgroup: &str, root: bool, want: Want) -> CgroupSample {
        let mut names = vec![
            "memory.stat",
            "memory.usage_in_bytes",
            "memory.memsw.usage_in_bytes",
        ];
        if !root {
            if want.memory_limit {
                names.push("memory.limit_in_bytes");
            }
            if want.swap_limit {
                names.push("memory.memsw.limit_in_bytes");
            }
        }
        if want.processes {
            names.push("cgroup.procs");
        }
        if want.cadvisor {
            names.extend([
                "memory.oom_control",
                "memory.max_usage_in_bytes",
                "memory.failcnt",
                "memory.kmem.usage_in_bytes",
                "memory.soft_limit_in_bytes",
            ]);
        }
        let mem = self.files(&self.dir("memory", cgroup), &names);
        let mut acct_names = vec!["cpuacct.usage"];
        if want.cadvisor {
            acct_names.push("cpuacct.stat");
        }
        let acct = self.files(&self.dir("cpuacct", cgroup), &acct_names);
        let cpu_usage_ns = acct.u64("cpuacct.usage");
        let memory = mem.u64("memory.usage_in_bytes").map(|usage| {
            let limit = if root {
                self.machine_memory()
            } else {
                mem.u64("memory.limit_in_bytes")
            };
            memory_sample(
                usage,
                mem.get("memory.stat").unwrap_or_default(),
                "total_",
                limit,
            )
        });
        let swap = mem
            .u64("memory.memsw.usage_in_bytes")
            .zip(memory.as_ref())
            .map(|(memsw, m)| SwapSample {
                usage: memsw.saturating_sub(m.usage),
                limit: if root {
                    self.machine_swap()
                } else {
                    mem.u64("memory.memsw.limit_in_bytes")
                },
            });
        let processes = mem.get("cgroup.procs").map(count_lines);
        let psi = want.psi.then(|| PsiSample {
            io: (want.io && self.fs.exists(&self.dir("blkio", cgroup))).then(PsiStats::default),
            ..PsiSample::default()
        });
        let cadvisor = want.cadvisor.then(|| {
            let (io_service_bytes, io_serviced) = self.blkio_v1(cgroup);
            let cpu = self.files(
                &self.dir("cpu", cgroup),
                &[
                    "cpu.cfs_quota_us",
                    "cpu.stat",
                    "cpu.shares",
                    "cpu.cfs_period_us",
                ],
            );
            let cfs = cpu
                .get("cpu.cfs_quota_us")
                .filter(|q| !matches!(q.trim(), "-1" | "0" | ""))
                .map(|_| cfs_sample(cpu.get("cpu.stat").unwrap_or_default(), "throttled_time", 1));
            let ticks = |k: &str| {
                acct.get("cpuacct.stat")
                    .and_then(|s| flat_keyed_value(s, k))
                    .map(|t| t.saturating_mul(NANOS_PER_USER_HZ_TICK))
            };
            let pids = self.files(&self.dir("pids", cgroup), &["pids.current", "pids.max"]);
            CadvisorSample {
                cpu_user_ns: ticks("user"),
                cpu_system_ns: ticks("system"),
                threads: pids.u64("pids.current"),
                threads_max: pids.get("pids.max").and_then(pids_max),
                oom_kills: mem
                    .get("memory.oom_control")
                    .and_then(|s| flat_keyed_value(s, "oom_kill")),
                io_service_bytes,
                io_serviced,
                cfs,
                memory: CadvisorMemory {
                    max_usage: mem.u64("memory.max_usage_in_bytes").unwrap_or(0),
                    failcnt: mem.u64("memory.failcnt").unwrap_or(0),
                    kernel_usage: mem.u64("memory.kmem.usage_in_bytes").unwrap_or(0),
                    ..cadvisor_memory(mem.get("memory.stat").unwrap_or_default(), "total_")
                },
                spec: CgroupSpec {
                    cpu_period: cpu.u64("cpu.cfs_period_us").unwrap_or(0),
                    cpu_quota: cpu
                        .get("cpu.cfs_quota_us")
                        .filter(|q| q.trim() != "-1")
                        .and_then(|q| q.trim().parse().ok())
                        .unwrap_or(0),
                    cpu_shares: cpu.u64("cpu.shares").unwrap_or(0),
                    memory_reservation: mem.u64("memory.soft_limit_in_bytes").unwrap_or(0),
                    swap_limit: if root {
                        self.machine_swap()
                    } else {
                        mem.u64("memory.memsw.limit_in_bytes")
                    }
                    .unwrap_or(0),
                },
            }
        });
        CgroupSample {
            cpu_usage_ns,
            memory,
            swap,
            processes,
            psi,
            cadvisor,
        }
    }

    fn sample_v2(&self, cgroup: &str, root: bool, want: Want) -> CgroupSample {
        let mut names = vec![
            "memory.stat",
            "cpu.stat",
            "memory.current",
            "memory.swap.current",
        ];
        if !root {
            if want.memory_limit {
                names.push("memory.max");
            }
            if want.swap_limit {
                names.push("memory.swap.max");
            }
        }
        if want.processes {
            names.push("cgroup.procs");
        }
        if want.psi {
            names.extend(["cpu.pressure", "memory.pressure"]);
            if want.io {
                names.push("io.pressure");
            }
        }
        if want.cadvisor {
            names.extend([
                "pids.current",
                "pids.max",
                "memory.events",
                "io.stat",
                "cpu.max",
                "cpu.weight",
                "memory.peak",
                "memory.min",
            ]);
        }
        let f = self.files(&self.dir("", cgroup), &names);
        let cpu_stat = |k: &str| {
            f.get("cpu.stat")
                .and_then(|s| flat_keyed_value(s, k))
                .map(|us| us.saturating_mul(1000))
        };
        let cpu_usage_ns =
            cpu_stat("usage_usec").or_else(|| root.then(|| self.proc_stat_cpu_ns()).flatten());
        let usage = f
            .u64("memory.current")
            .or_else(|| root.then(|| self.meminfo_usage()).flatten());
        let memory = usage.map(|usage| {
            let limit = if root {
                self.machine_memory()
            } else {
                // `max` does not parse: unlimited.
                f.u64("memory.max")
            };
            memory_sample(usage, f.get("memory.stat").unwrap_or_default(), "", limit)
        });
        let swap = f.u64("memory.swap.current").map(|usage| SwapSample {
            usage,
            limit: if root {
                self.machine_swap()
            } else {
                f.u64("memory.swap.max")
            },
        });
        let processes = f.get("cgroup.procs").map(count_lines);
        let pressure = |file: &str| f.get(file).map(parse_psi).unwrap_or_default();
        let psi = want.psi.then(|| PsiSample {
            cpu: pressure("cpu.pressure"),
            memory: pressure("memory.pressure"),
            io: want.io.then(|| pressure("io.pressure")),
        });
        let cadvisor = want.cadvisor.then(|| {
            let (io_service_bytes, io_serviced) =
                f.get("io.stat").map(parse_io_stat).unwrap_or_default();
            let cpu_max = f.get("cpu.max").and_then(|m| m.trim().split_once(' '));
            // `cpu.max` `max <period>`: no quota.
            let cfs = f
                .get("cpu.max")
                .and_then(|m| m.split_whitespace().next())
                .filter(|q| *q != "max")
                .map(|_| {
                    cfs_sample(
                        f.get("cpu.stat").unwrap_or_default(),
                        "throttled_usec",
                        1000,
                    )
                });
            CadvisorSample {
                cpu_user_ns: cpu_stat("user_usec"),
                cpu_system_ns: cpu_stat("system_usec"),
                threads: f.u64("pids.current"),
                threads_max: f.get("pids.max").and_then(pids_max),
                oom_kills: f
                    .get("memory.events")
                    .and_then(|s| flat_keyed_value(s, "oom_kill")),
                io_service_bytes,
                io_serviced,
                cfs,
                memory: CadvisorMemory {
                    max_usage: f.u64("memory.peak").unwrap_or(0),
                    ..cadvisor_memory(f.get("memory.stat").unwrap_or_default(), "")
                },
                spec: CgroupSpec {
                    cpu_period: cpu_max.and_then(|(_, p)| p.parse().ok()).unwrap_or(0),
                    cpu_quota: cpu_max
                        .filter(|(q, _)| *q != "max")
                        .and_then(|(q, _)| q.parse().ok())
                        .unwrap_or(0),
                    cpu_shares: f
                        .u64("cpu.weight")
                        .filter(|w| (1..=10_000).contains(w))
                        .map_or(0, cpu_weight_to_shares),
                    memory_reservation: f.u64("memory.min").unwrap_or(0),
                    swap_limit: if root {
                        self.machine_swap()
                    } else {
                        f.u64("memory.swap.max")
                    }
                    .unwrap_or(0),
                },
            }
        });
        CgroupSample {
            cpu_usage_ns,
            memory,
            swap,
            processes,
            psi,
            cadvisor,
        }
    }

    /// libcontainer's v1 `BlkioGroup.GetStats` for the tables cAdvisor's kubelet families
    /// read: the first group whose first file has entries, of BFQ
    /// (`blkio.bfq.io_serviced_recursive`, `..._service_bytes_recursive`), the throttle
    /// `_recursive` files and the plain throttle files (the CFQ tables are gone with the
    /// legacy block layer).
    fn blkio_v1(&self, cgroup: &str) -> (Vec<PerDiskStats>, Vec<PerDiskStats>) {
        const GROUPS: [[&str; 2]; 3] = [
            [
                "blkio.bfq.io_serviced_recursive",
                "blkio.bfq.io_service_bytes_recursive",
            ],
            [
                "blkio.throttle.io_serviced_recursive",
                "blkio.throttle.io_service_bytes_recursive",
            ],
            [
                "blkio.throttle.io_serviced",
                "blkio.throttle.io_service_bytes",
            ],
        ];
        let f = self.files(&self.dir("blkio", cgroup), GROUPS.as_flattened());
        for [serviced, bytes] in GROUPS {
            let serviced = f.get(serviced).map(parse_blkio).unwrap_or_default();
            if !serviced.is_empty() {
                return (f.get(bytes).map(parse_blkio).unwrap_or_default(), serviced);
            }
        }
        (Vec::new(), Vec::new())
    }

    fn meminfo(&self) -> BTreeMap<String, u64> {
        self.read(&self.proc.join("meminfo"))
            .map(|s| parse_meminfo(&s))
            .unwrap_or_default()
    }

    /// `MemTotal` in bytes (cAdvisor's machine memory capacity).
    pub fn machine_memory(&self) -> Option<u64> {
        self.meminfo().get("MemTotal").copied()
    }

    /// `SwapTotal` in bytes (cAdvisor's machine swap capacity, the root's swap limit).
    pub fn machine_swap(&self) -> Option<u64> {
        self.meminfo().get("SwapTotal").copied()
    }

    fn meminfo_usage(&self) -> Option<u64> {
        let m = self.meminfo();
        Some(m.get("MemTotal")?.saturating_sub(*m.get("MemFree")?))
    }

    /// Busy CPU time of the machine from `/proc/stat` (USER_HZ = 100 ticks per second).
    fn proc_stat_cpu_ns(&self) -> Option<u64> {
        let s = self.read(&self.proc.join("stat"))?;
        let line = s.lines().find(|l| l.starts_with("cpu "))?;
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|v| v.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal
        let busy: u64 = [0usize, 1, 2, 5, 6, 7]
            .iter()
            .filter_map(|i| f.get(*i))
            .sum();
        Some(busy.saturating_mul(10_000_000))
    }
}

fn memory_sample(usage: u64, stat: &str, prefix: &str, limit: Option<u64>) -> MemorySample {
    let (rss_key, cache_key) = if prefix.is_empty() {
        ("anon", "file")
    } else {
        ("rss", "cache")
    };
    let mut m = MemorySample {
        usage,
        limit,
        ..MemorySample::default()
    };
    let mut inactive = 0;
    // One pass over `memory.stat`, no allocation per line.
    for line in stat.lines() {
        let Some((k, v)) = line.split_once(' ') else {
            continue;
        };
        let Some(k) = k.strip_prefix(prefix) else {
            continue;
        };
        let slot = match k {
            "inactive_file" => &mut inactive,
            "pgfault" => &mut m.page_faults,
            "pgmajfault" => &mut m.major_page_faults,
            k if k == rss_key => &mut m.rss,
            k if k == cache_key => &mut m.cache,
            _ => continue,
        };
        *slot = v.trim().parse().unwrap_or(0);
    }
    m.working_set = usage.saturating_sub(inactive);
    m
}

/// The [`CadvisorMemory`] keys of `memory.stat` (`prefix` `total_` on v1).
fn cadvisor_memory(stat: &str, prefix: &str) -> CadvisorMemory {
    let mapped = if prefix.is_empty() {
        "file_mapped"
    } else {
        "mapped_file"
    };
    let mut m = CadvisorMemory::default();
    for line in stat.lines() {
        let Some((k, v)) = line.split_once(' ') else {
            continue;
        };
        let slot = match k {
            "pgfault" => &mut m.pgfault,
            "pgmajfault" => &mut m.pgmajfault,
            k => match k.strip_prefix(prefix) {
                Some(k) if k == mapped => &mut m.mapped_file,
                Some("active_file") => &mut m.active_file,
                Some("inactive_file") => &mut m.inactive_file,
                _ => continue,
            },
        };
        *slot = v.trim().parse().unwrap_or(0);
    }
    m
}

/// cAdvisor's `convertCPUWeightToCPULimit`: `cpu.weight` [1, 10000] to shares [2, 262144].
fn cpu_weight_to_shares(weight: u64) -> u64 {
    2 + (weight.saturating_sub(1) * 262_142) / 9_999
}

/// The entry of device `major:minor` in `disks`, added when missing.
fn disk_entry(disks: &mut Vec<PerDiskStats>, major: u64, minor: u64) -> &mut PerDiskStats {
    let i = match disks
        .iter()
        .position(|d| d.major == major && d.minor == minor)
    {
        Some(i) => i,
        None => {
            disks.push(PerDiskStats {
                major,
                minor,
                ..PerDiskStats::default()
            });
            disks.len() - 1
        }
    };
    &mut disks[i]
}

fn major_minor(s: &str) -> Option<(u64, u64)> {
    let (major, minor) = s.split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// A v1 blkio table (`8:0 Read 4096` lines; the `Total N` line skipped), per device as
/// libcontainer's `diskStatsCopy`.
pub fn parse_blkio(s: &str) -> Vec<PerDiskStats> {
    let mut disks = Vec::new();
    for line in s.lines() {
        let mut it = line.split_whitespace();
        let (Some(dev), Some(op), Some(v)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let (Some((major, minor)), Ok(v)) = (major_minor(dev), v.parse()) else {
            continue;
        };
        disk_entry(&mut disks, major, minor)
            .stats
            .insert(op.to_string(), v);
    }
    disks
}

/// v2 `io.stat` (`8:0 rbytes=.. wbytes=.. rios=.. wios=.. dbytes=.. dios=..`) as
/// libcontainer's `statIo` maps it onto the v1 tables: `rbytes`/`wbytes` → service bytes
/// `Read`/`Write`, `rios`/`wios` → serviced `Read`/`Write`, the rest skipped.
pub fn parse_io_stat(s: &str) -> (Vec<PerDiskStats>, Vec<PerDiskStats>) {
    let (mut bytes, mut ios) = (Vec::new(), Vec::new());
    for line in s.lines() {
        let mut it = line.split_whitespace();
        let Some((major, minor)) = it.next().and_then(major_minor) else {
            continue;
        };
        for kv in it {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let (table, op) = match k {
                "rbytes" => (&mut bytes, "Read"),
                "wbytes" => (&mut bytes, "Write"),
                "rios" => (&mut ios, "Read"),
                "wios" => (&mut ios, "Write"),
                _ => continue,
            };
            if let Ok(v) = v.parse() {
                disk_entry(table, major, minor)
                    .stats
                    .insert(op.to_string(), v);
            }
        }
    }
    (bytes, ios)
}

/// CFS throttling from `cpu.stat`; the throttled time under `throttled_key`, in units of
/// `ns_per_unit` nanoseconds.
fn cfs_sample(cpu_stat: &str, throttled_key: &str, ns_per_unit: u64) -> CfsSample {
    let v = |k: &str| flat_keyed_value(cpu_stat, k).unwrap_or(0);
    CfsSample {
        periods: v("nr_periods"),
        throttled_periods: v("nr_throttled"),
        throttled_ns: v(throttled_key).saturating_mul(ns_per_unit),
    }
}

/// The value of `key` in `key value` lines (`cpu.stat`, `memory.events`).
pub fn flat_keyed_value(s: &str, key: &str) -> Option<u64> {
    s.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// `key value` lines (`memory.stat`, `cpu.stat`).
pub fn parse_flat_keyed(s: &str) -> BTreeMap<String, u64> {
    s.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect()
}

/// A `*.pressure` file (libcontainer's `statPSI`): `some`/`full` lines of `avg10=`,
/// `avg60=`, `avg300=`, `total=`; what does not parse stays 0.
pub fn parse_psi(s: &str) -> PsiStats {
    let mut psi = PsiStats::default();
    for line in s.lines() {
        let mut fields = line.split_whitespace();
        let data = match fields.next() {
            Some("some") => &mut psi.some,
            Some("full") => &mut psi.full,
            _ => continue,
        };
        for f in fields {
            let Some((k, v)) = f.split_once('=') else {
                continue;
            };
            match k {
                "avg10" => data.avg10 = v.parse().unwrap_or(0.0),
                "avg60" => data.avg60 = v.parse().unwrap_or(0.0),
                "avg300" => data.avg300 = v.parse().unwrap_or(0.0),
                "total" => data.total = v.parse().unwrap_or(0),
                _ => {}
            }
        }
    }
    psi
}

/// `/proc/meminfo` in bytes.
pub fn parse_meminfo(s: &str) -> BTreeMap<String, u64> {
    s.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            let mut it = v.split_whitespace();
            let n: u64 = it.next()?.parse().ok()?;
            let n = if it.next() == Some("kB") { n * 1024 } else { n };
            Some((k.trim().to_string(), n))
        })
        .collect()
}

/// The container ID of a container cgroup (upstream `extractIDFromCgroupPath`): the last
/// path element, or for the systemd driver what follows the last `-` of `<prefix>-<id>.scope`.
pub fn extract_id_from_cgroup_path(path: &str) -> &str {
    let id = path.rsplit('/').next().unwrap_or(path);
    match id.strip_suffix(".scope") {
        Some(scope) => scope.rsplit('-').next().unwrap_or(scope),
        None => id,
    }
}

/// The pod UID of a pod cgroup's last element: `pod<uid>` (cgroupfs) or
/// `kubepods-<qos>-pod<uid with _>.slice` (systemd); `None` for any other cgroup.
pub fn pod_uid_from_cgroup_name(name: &str) -> Option<String> {
    if let Some(slice) = name.strip_suffix(".slice") {
        let (_, uid) = slice.rsplit_once("-pod")?;
        return Some(uid.replace('_', "-"));
    }
    name.strip_prefix("pod").map(str::to_string)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kubelet_cm::FakeHostFs;

    fn v1_fs() -> Arc<FakeHostFs> {
        let fs = Arc::new(FakeHostFs::default());
        let pod = "/sys/fs/cgroup/memory/kubepods/burstable/podabc";
        fs.add_dir(pod);
        fs.add_file(format!("{pod}/memory.usage_in_bytes"), "10000\n");
        fs.add_file(
            format!("{pod}/memory.stat"),
            "cache 1\nrss 2\ntotal_rss 4000\ntotal_inactive_file 3000\ntotal_pgfault 7\ntotal_pgmajfault 1\n",
        );
        fs.add_file(
            format!("{pod}/memory.limit_in_bytes"),
            "9223372036854771712\n",
        );
        fs.add_file(format!("{pod}/memory.memsw.usage_in_bytes"), "10500\n");
        fs.add_file(format!("{pod}/memory.memsw.limit_in_bytes"), "20000\n");
        fs.add_file(
            "/sys/fs/cgroup/cpuacct/kubepods/burstable/podabc/cpuacct.usage",
            "123456789\n",
        );
        fs.add_file(
            "/sys/fs/cgroup/pids/kubepods/burstable/podabc/pids.current",
            "3\n",
        );
        fs.add_file(format!("{pod}/cgroup.procs"), "10\n11\n");
        fs
    }

    #[test]
    fn v1_working_set_is_usage_minus_inactive_file() {
        let r = CgroupReader::new(v1_fs(), CgroupVersion::V1);
        let s = r.sample("/kubepods/burstable/podabc").unwrap();
        assert_eq!(s.cpu_usage_ns, Some(123_456_789));
        let m = s.memory.unwrap();
        assert_eq!((m.usage, m.working_set, m.rss), (10_000, 7_000, 4_000));
        assert_eq!((m.page_faults, m.major_page_faults), (7, 1));
        assert_eq!(m.available(), None, "unlimited");
        assert_eq!(s.processes, Some(2), "cgroup.procs lines");
        assert_eq!(s.cadvisor, None, "only for /metrics/cadvisor");
        assert_eq!(
            s.swap,
            Some(SwapSample {
                usage: 500,
                limit: Some(20_000)
            })
        );
        assert!(matches!(
            r.sample("/kubepods/podnone"),
            Err(StatsError::CgroupNotFound(_))
        ));
    }

    #[test]
    fn v2_reads_the_unified_files_and_the_root_from_proc() {
        let fs = Arc::new(FakeHostFs::default());
        fs.add_dir("/sys/fs/cgroup");
        fs.add_dir("/sys/fs/cgroup/kubepods/podx/c1");
        fs.add_file(
            "/sys/fs/cgroup/kubepods/podx/c1/cpu.stat",
            "usage_usec 2500\nuser_usec 2000\n",
        );
        fs.add_file("/sys/fs/cgroup/kubepods/podx/c1/memory.current", "5000");
        fs.add_file(
            "/sys/fs/cgroup/kubepods/podx/c1/memory.stat",
            "anon 1000\nfile 4000\ninactive_file 6000\npgfault 9\npgmajfault 2\n",
        );
        fs.add_file("/sys/fs/cgroup/kubepods/podx/c1/memory.max", "8000\n");
        fs.add_file("/sys/fs/cgroup/kubepods/podx/c1/memory.swap.current", "10");
        fs.add_file("/sys/fs/cgroup/kubepods/podx/c1/memory.swap.max", "max");
        fs.add_file(
            "/proc/meminfo",
            "MemTotal:       1000 kB\nMemFree:         400 kB\n",
        );
        fs.add_file("/proc/stat", "cpu  10 1 5 100 3 1 1 0 0 0\ncpu0 1 1 1 1\n");
        fs.add_file("/sys/fs/cgroup/memory.stat", "inactive_file 102400\n");
        let r = CgroupReader::new(fs, CgroupVersion::V2);
        let s = r.sample("/kubepods/podx/c1").unwrap();
        assert_eq!(s.cpu_usage_ns, Some(2_500_000));
        let m = s.memory.unwrap();
        assert_eq!((m.usage, m.working_set, m.rss), (5000, 0, 1000));
        assert_eq!(m.available(), Some(8000));
        assert_eq!(
            s.swap,
            Some(SwapSample {
                usage: 10,
                limit: None
            })
        );
        let root = r.sample("/").unwrap();
        assert_eq!(root.cpu_usage_ns, Some(18 * 10_000_000));
        let m = root.memory.unwrap();
        assert_eq!((m.usage, m.working_set), (600 * 1024, 500 * 1024));
        assert_eq!(m.available(), Some(500 * 1024));
    }

    #[test]
    fn psi_from_v2_pressure_files_and_zeros_on_v1() {
        let fs = Arc::new(FakeHostFs::default());
        let cg = "/sys/fs/cgroup/kubepods/podx";
        fs.add_dir(cg);
        fs.add_file(format!("{cg}/memory.current"), "5000");
        fs.add_file(
            format!("{cg}/cpu.pressure"),
            "some avg10=1.50 avg60=0.25 avg300=0.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=789\n",
        );
        fs.add_file(
            format!("{cg}/io.pressure"),
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=4\n",
        );
        let r = CgroupReader::new(fs, CgroupVersion::V2);
        let psi = r.sample("/kubepods/podx").unwrap().psi.unwrap();
        assert_eq!(psi.cpu.some.total, 123_456);
        assert_eq!((psi.cpu.some.avg10, psi.cpu.some.avg60), (1.5, 0.25));
        assert_eq!(psi.cpu.full.total, 789);
        assert_eq!(psi.memory, PsiStats::default(), "no memory.pressure: zeros");
        assert_eq!(psi.io.unwrap().full.total, 4);
        let lean = r.sample_with("/kubepods/podx", Want::RESOURCE_METRICS);
        assert_eq!(lean.unwrap().psi, None);
        let cpu_mem = r
            .sample_with("/kubepods/podx", Want::CPU_AND_MEMORY)
            .unwrap();
        assert_eq!(cpu_mem.psi.unwrap().io, None, "IO only in the full summary");

        let v1 = v1_fs();
        v1.add_dir("/sys/fs/cgroup/blkio/kubepods/burstable/podabc");
        let r = CgroupReader::new(v1, CgroupVersion::V1);
        let psi = r.sample("/kubepods/burstable/podabc").unwrap().psi.unwrap();
        assert_eq!(psi.cpu, PsiStats::default());
        assert_eq!(psi.io, Some(PsiStats::default()), "blkio: HasDiskIo");
    }

    #[test]
    fn cadvisor_figures_v1_and_v2() {
        let v1 = v1_fs();
        let rel = "kubepods/burstable/podabc";
        v1.add_file(
            format!("/sys/fs/cgroup/cpuacct/{rel}/cpuacct.stat"),
            "user 150\nsystem 25\n",
        );
        v1.add_file(
            format!("/sys/fs/cgroup/memory/{rel}/memory.oom_control"),
            "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
        );
        v1.add_file(format!("/sys/fs/cgroup/pids/{rel}/pids.max"), "max\n");
        let r = CgroupReader::new(v1, CgroupVersion::V1);
        let x = r.sample_with("/kubepods/burstable/podabc", Want::CADVISOR);
        let x = x.unwrap().cadvisor.unwrap();
        assert_eq!(x.cpu_user_ns, Some(1_500_000_000), "USER_HZ ticks");
        assert_eq!(x.cpu_system_ns, Some(250_000_000));
        assert_eq!(
            (x.threads, x.threads_max, x.oom_kills),
            (Some(3), Some(0), Some(2))
        );

        let fs = Arc::new(FakeHostFs::default());
        let cg = "/sys/fs/cgroup/kubepods/podx";
        fs.add_dir(cg);
        fs.add_file(format!("{cg}/memory.current"), "5000");
        fs.add_file(
            format!("{cg}/cpu.stat"),
            "usage_usec 30\nuser_usec 20\nsystem_usec 10\n",
        );
        fs.add_file(
            format!("{cg}/memory.events"),
            "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n",
        );
        fs.add_file(format!("{cg}/pids.current"), "7");
        fs.add_file(format!("{cg}/pids.max"), "1024");
        let r = CgroupReader::new(fs, CgroupVersion::V2);
        let x = r.sample_with("/kubepods/podx", Want::CADVISOR);
        let x = x.unwrap().cadvisor.unwrap();
        assert_eq!(
            (x.cpu_user_ns, x.cpu_system_ns),
            (Some(20_000), Some(10_000))
        );
        assert_eq!(
            (x.threads, x.threads_max, x.oom_kills),
            (Some(7), Some(1024), Some(1))
        );
    }

    #[test]
    fn cadvisor_memory_and_spec_v1_and_v2() {
        let v1 = v1_fs();
        let mem = "/sys/fs/cgroup/memory/kubepods/burstable/podabc";
        let cpu = "/sys/fs/cgroup/cpu/kubepods/burstable/podabc";
        v1.add_file(
            format!("{mem}/memory.stat"),
            "pgfault 5\npgmajfault 2\nmapped_file 1\ntotal_mapped_file 300\ntotal_active_file 600\ntotal_inactive_file 700\ntotal_pgfault 50\n",
        );
        v1.add_file(format!("{mem}/memory.max_usage_in_bytes"), "12000\n");
        v1.add_file(format!("{mem}/memory.failcnt"), "4\n");
        v1.add_file(format!("{mem}/memory.kmem.usage_in_bytes"), "900\n");
        v1.add_file(
            format!("{mem}/memory.soft_limit_in_bytes"),
            "9223372036854771712\n",
        );
        v1.add_file(format!("{cpu}/cpu.shares"), "102\n");
        v1.add_file(format!("{cpu}/cpu.cfs_period_us"), "100000\n");
        v1.add_file(format!("{cpu}/cpu.cfs_quota_us"), "20000\n");
        v1.add_file("/proc/meminfo", "MemTotal: 1000 kB\nSwapTotal: 8 kB\n");
        v1.add_file("/sys/fs/cgroup/memory/memory.usage_in_bytes", "1\n");
        let r = CgroupReader::new(v1, CgroupVersion::V1);
        let x = r.sample_with("/kubepods/burstable/podabc", Want::CADVISOR);
        let x = x.unwrap().cadvisor.unwrap();
        assert_eq!(
            x.memory,
            CadvisorMemory {
                max_usage: 12000,
                failcnt: 4,
                kernel_usage: 900,
                mapped_file: 300,
                active_file: 600,
                inactive_file: 700,
                pgfault: 5,
                pgmajfault: 2,
            },
            "the hierarchical keys, but the cgroup's own page faults, as cAdvisor"
        );
        assert_eq!(
            x.spec,
            CgroupSpec {
                cpu_period: 100_000,
                cpu_quota: 20_000,
                cpu_shares: 102,
                memory_reservation: 9_223_372_036_854_771_712,
                swap_limit: 20_000,
            }
        );
        let root = r
            .sample_with("/", Want::CADVISOR)
            .unwrap()
            .cadvisor
            .unwrap();
        assert_eq!(root.spec.swap_limit, 8 * 1024, "the root's: SwapTotal");
        assert_eq!(root.spec.cpu_quota, 0);

        let fs = Arc::new(FakeHostFs::default());
        let cg = "/sys/fs/cgroup/kubepods/podx";
        fs.add_dir(cg);
        fs.add_file(format!("{cg}/memory.current"), "5000");
        fs.add_file(
            format!("{cg}/memory.stat"),
            "anon 1\nfile 2\nfile_mapped 30\nactive_file 60\ninactive_file 70\npgfault 80\npgmajfault 9\n",
        );
        fs.add_file(format!("{cg}/memory.peak"), "6000");
        fs.add_file(format!("{cg}/memory.min"), "1024");
        fs.add_file(format!("{cg}/memory.swap.max"), "max");
        fs.add_file(format!("{cg}/cpu.max"), "max 100000");
        fs.add_file(format!("{cg}/cpu.weight"), "4");
        let r = CgroupReader::new(fs.clone(), CgroupVersion::V2);
        let x = r.sample_with("/kubepods/podx", Want::CADVISOR);
        let x = x.unwrap().cadvisor.unwrap();
        assert_eq!(
            x.memory,
            CadvisorMemory {
                max_usage: 6000,
                mapped_file: 30,
                active_file: 60,
                inactive_file: 70,
                pgfault: 80,
                pgmajfault: 9,
                ..CadvisorMemory::default()
            },
            "no failcnt or kernel usage on v2"
        );
        assert_eq!(
            x.spec,
            CgroupSpec {
                cpu_period: 100_000,
                cpu_quota: 0,
                cpu_shares: 2 + 3 * 262_142 / 9_999,
                memory_reservation: 1024,
                swap_limit: 0,
            }
        );
        fs.add_file(format!("{cg}/cpu.max"), "50000 100000");
        fs.add_file(format!("{cg}/cpu.weight"), "10001");
        let x = r.sample_with("/kubepods/podx", Want::CADVISOR);
        let spec = x.unwrap().cadvisor.unwrap().spec;
        assert_eq!(
            (spec.cpu_quota, spec.cpu_shares),
            (50_000, 0),
            "weight out of range"
        );
    }

    #[test]
    fn disk_io_and_cfs_v1_and_v2() {
        let v1 = v1_fs();
        let rel = "kubepods/burstable/podabc";
        let blkio = format!("/sys/fs/cgroup/blkio/{rel}");
        // An empty recursive table falls through to the plain throttle files.
        v1.add_file(
            format!("{blkio}/blkio.throttle.io_serviced_recursive"),
            "Total 0\n",
        );
        v1.add_file(
            format!("{blkio}/blkio.throttle.io_serviced"),
            "8:0 Read 3\n8:0 Write 5\n8:0 Sync 8\n8:0 Async 0\n8:0 Discard 0\n8:0 Total 8\nTotal 8\n",
        );
        v1.add_file(
            format!("{blkio}/blkio.throttle.io_service_bytes"),
            "8:0 Read 4096\n8:0 Write 8192\n8:0 Total 12288\n253:1 Read 1\nTotal 12289\n",
        );
        v1.add_file(
            format!("/sys/fs/cgroup/cpu/{rel}/cpu.cfs_quota_us"),
            "50000\n",
        );
        v1.add_file(
            format!("/sys/fs/cgroup/cpu/{rel}/cpu.stat"),
            "nr_periods 10\nnr_throttled 4\nthrottled_time 2500000000\n",
        );
        let r = CgroupReader::new(v1.clone(), CgroupVersion::V1);
        let x = r.sample_with(&format!("/{rel}"), Want::CADVISOR);
        let x = x.unwrap().cadvisor.unwrap();
        assert_eq!(x.io_serviced.len(), 1);
        assert_eq!(x.io_serviced[0].stats.get("Write"), Some(&5));
        assert_eq!(x.io_serviced[0].stats.len(), 6);
        assert_eq!(
            x.io_service_bytes
                .iter()
                .map(|d| (d.major, d.minor, d.stats.get("Read").copied()))
                .collect::<Vec<_>>(),
            vec![(8, 0, Some(4096)), (253, 1, Some(1))]
        );
        assert_eq!(
            x.cfs,
            Some(CfsSample {
                periods: 10,
                throttled_periods: 4,
                throttled_ns: 2_500_000_000
            })
        );
        // No quota: no CFS families; no blkio files: no tables.
        v1.add_file(format!("/sys/fs/cgroup/cpu/{rel}/cpu.cfs_quota_us"), "-1\n");
        v1.add_file(format!("{blkio}/blkio.throttle.io_serviced"), "Total 0\n");
        let x = r.sample_with(&format!("/{rel}"), Want::CADVISOR);
        let x = x.unwrap().cadvisor.unwrap();
        assert_eq!(x.cfs, None);
        assert!(x.io_serviced.is_empty() && x.io_service_bytes.is_empty());

        let fs = Arc::new(FakeHostFs::default());
        let cg = "/sys/fs/cgroup/kubepods/podx";
        fs.add_dir(cg);
        fs.add_file(format!("{cg}/memory.current"), "5000");
        fs.add_file(
            format!("{cg}/cpu.stat"),
            "usage_usec 30\nnr_periods 7\nnr_throttled 2\nthrottled_usec 1500\n",
        );
        fs.add_file(format!("{cg}/cpu.max"), "20000 100000\n");
        fs.add_file(
            format!("{cg}/io.stat"),
            "8:0 rbytes=4096 wbytes=512 rios=2 wios=1 dbytes=0 dios=0\n259:0 rbytes=1 wbytes=0 rios=1 wios=0 dbytes=9 dios=9\n",
        );
        let r = CgroupReader::new(fs.clone(), CgroupVersion::V2);
        let x = r.sample_with("/kubepods/podx", Want::CADVISOR);
        let x = x.unwrap().cadvisor.unwrap();
        assert_eq!(x.io_service_bytes.len(), 2);
        assert_eq!(
            x.io_service_bytes[0].stats,
            BTreeMap::from([("Read".to_string(), 4096), ("Write".to_string(), 512)])
        );
        assert_eq!(
            (x.io_serviced[1].major, x.io_serviced[1].stats.get("Read")),
            (259, Some(&1))
        );
        assert_eq!(
            x.cfs,
            Some(CfsSample {
                periods: 7,
                throttled_periods: 2,
                throttled_ns: 1_500_000
            })
        );
        fs.add_file(format!("{cg}/cpu.max"), "max 100000\n");
        let x = r.sample_with("/kubepods/podx", Want::CADVISOR);
        assert_eq!(x.unwrap().cadvisor.unwrap().cfs, None);
    }

    #[test]
    fn ids_and_uids_from_cgroup_names() {
        assert_eq!(
            extract_id_from_cgroup_path("/kubepods/burstable/pod2f/9be25294"),
            "9be25294"
        );
        assert_eq!(
            extract_id_from_cgroup_path("kubepods-burstable-pod2f.slice/cri-containerd-aaef.scope"),
            "aaef"
        );
        assert_eq!(
            pod_uid_from_cgroup_name("pod2fc9-fd"),
            Some("2fc9-fd".into())
        );
        assert_eq!(
            pod_uid_from_cgroup_name("kubepods-burstable-pod2fc9_fd.slice"),
            Some("2fc9-fd".into())
        );
        assert_eq!(pod_uid_from_cgroup_name("burstable"), None);
        assert_eq!(pod_uid_from_cgroup_name("kubepods-besteffort.slice"), None);
    }
}
