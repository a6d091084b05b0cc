//! Writing resource values into an existing cgroup (upstream
//! `pkg/kubelet/cm/cgroup_manager_linux.go` `Update` / `SetCgroupConfig` → `toResources`,
//! `maybeSetHugetlb`, `getCPUWeight`, and the file writes of the libcontainer `Set` it calls:
//! `github.com/opencontainers/cgroups` `fs` (v1) and `fs2` (v2)), and reading them back
//! (`cgroup_v1_manager_linux.go` / `cgroup_v2_manager_linux.go` `GetCgroupConfig`,
//! `MemoryUsage`).
//!
//! | value | cgroup v1 | cgroup v2 |
//! | --- | --- | --- |
//! | CPU shares | `cpu/…/cpu.shares` | `cpu.weight` (`getCPUWeight`) |
//! | CFS period, quota | `cpu/…/cpu.cfs_period_us`, `cpu.cfs_quota_us` | `cpu.max` (`<quota\|max> <period>`) |
//! | memory limit | `memory/…/memory.limit_in_bytes` | `memory.max` |
//! | pids limit | `pids/…/pids.max` | `pids.max` |
//! | huge pages | `hugetlb/…/hugetlb.<size>.limit_in_bytes` (+ `.rsvd.`) | `hugetlb.<size>.max` (+ `.rsvd.`) |
//! | cpuset CPUs | `cpuset/…/cpuset.cpus` | `cpuset.cpus` |
//!
//! A value left `None` (or 0, as libcontainer reads it) is not written.
//!
//! With the systemd driver each cgroup is a slice unit of systemd, as libcontainer's
//! `systemd` managers (`github.com/opencontainers/cgroups/systemd` `v1.go`, `v2.go`) make
//! it: [`CgroupManager::create`] starts the transient unit over D-Bus (`Apply(-1)`), makes
//! the directories and sets the values; [`CgroupManager::update`] first sets the unit's
//! properties (`SetUnitProperties`, `crate::systemd_cgroups`), then writes the same files
//! under the slice directories; [`CgroupManager::stop_unit`] stops the unit before a
//! cgroup's directories are removed. The D-Bus boundary is `kubelet_systemd`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kubelet_systemd::Systemd;

use crate::CmError;
use crate::cgroups::{CgroupDriver, CgroupName, CgroupVersion};
use crate::hostfs::HostFs;
use crate::systemd_cgroups;

/// libcontainer's v1 subsystems (`legacySubsystems`) whose directories `Apply` makes for
/// a systemd slice (`name=systemd` is systemd's own).
const LIBCONTAINER_V1_SUBSYSTEMS: [&str; 14] = [
    "cpuset",
    "devices",
    "memory",
    "cpu",
    "cpuacct",
    "pids",
    "blkio",
    "hugetlb",
    "perf_event",
    "freezer",
    "net_prio",
    "net_cls",
    "rdma",
    "misc",
];

const CGROUP_MOUNT: &str = "/sys/fs/cgroup";
const HUGEPAGES_DIR: &str = "/sys/kernel/mm/hugepages";

/// The v1 hierarchies upstream's `Validate` checks (its allow list; `hugetlb` only counts
/// when mounted, as every other one).
const V1_VALIDATED_CONTROLLERS: [&str; 7] = [
    "cpu", "cpuacct", "cpuset", "hugetlb", "memory", "pids", "systemd",
];

/// `getSupportedUnifiedControllers` before the intersection with the root's.
const V2_VALIDATED_CONTROLLERS: [&str; 5] = ["cpu", "cpuset", "hugetlb", "memory", "pids"];

/// The resource values of a cgroup (upstream `ResourceConfig`); `None` leaves a value as
/// it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceConfig {
    /// Memory limit in bytes.
    pub memory: Option<i64>,
    /// CPU shares (v1 `cpu.shares`; converted to `cpu.weight` on v2).
    pub cpu_shares: Option<u64>,
    /// CFS quota in microseconds (-1: none).
    pub cpu_quota: Option<i64>,
    /// CFS period in microseconds.
    pub cpu_period: Option<u64>,
    /// Huge page limits in bytes by page size in bytes.
    pub huge_page_limit: BTreeMap<i64, i64>,
    /// Maximum number of pids (-1: `max`).
    pub pids_limit: Option<i64>,
    /// CPUs of the cpuset (`cpuset.cpus`), e.g. `0-3`.
    pub cpuset_cpus: Option<String>,
    /// cgroup v2 files written as given, after the rest (upstream `ResourceConfig.Unified`:
    /// MemoryQoS's `memory.min`); on v1 a non-empty map is an error, as libcontainer's
    /// `ErrV1NoUnified`.
    pub unified: BTreeMap<String, String>,
}

/// Which values [`CgroupManager::get_cgroup_config`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupResource {
    /// Shares, quota and period.
    Cpu,
    /// The memory limit.
    Memory,
}

/// Upstream `getCPUWeight`: shares [2, 262144] → weight [1, 10000].
pub fn cpu_shares_to_cpu_weight(shares: u64) -> u64 {
    if shares >= 262_144 {
        return 10_000;
    }
    1 + (shares.saturating_sub(2) * 9999) / 262_142
}

/// Upstream `cpuWeightToCPUShares` (the inverse, for reading v2 cgroups back).
pub fn cpu_weight_to_cpu_shares(weight: u64) -> u64 {
    (weight.saturating_sub(1) * 262_142) / 9999 + 2
}

/// `v1helper.HugePageUnitSizeFromByteSize`: 2097152 → `2MB`.
pub fn huge_page_unit_size(mut bytes: i64) -> String {
    const UNITS: [&str; 6] = ["B", "KB", "MB", "GB", "TB", "PB"];
    let mut i = 0;
    while bytes != 0 && bytes % 1024 == 0 && i + 1 < UNITS.len() {
        bytes /= 1024;
        i += 1;
    }
    format!("{bytes}{}", UNITS[i])
}

/// An OS error as Go prints a `syscall.Errno` (`no such file or directory`).
fn go_errno_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => {
            let desc = nix::errno::Errno::from_raw(n).desc();
            let mut chars = desc.chars();
            chars.next().map_or_else(String::new, |c| {
                c.to_lowercase().chain(chars).collect::<String>()
            })
        }
        None => e.to_string(),
    }
}

fn cgroup_err(path: &Path, reason: impl std::fmt::Display) -> CmError {
    CmError::Cgroup {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// cgroup v2: a child only gets the controllers its parent delegates; enable every
/// available controller in each ancestor of `dir` under the mount, as runc's
/// `CreateCgroupPath` does.
pub(crate) fn enable_controllers_above(fs: &dyn HostFs, dir: &Path) -> Result<(), CmError> {
    let base = Path::new(CGROUP_MOUNT);
    let mut ancestors: Vec<&Path> = dir
        .ancestors()
        .skip(1)
        .take_while(|p| p.starts_with(base))
        .collect();
    ancestors.reverse();
    for parent in ancestors {
        let available = fs
            .read_to_string(&parent.join("cgroup.controllers"))
            .unwrap_or_default();
        let enable: Vec<String> = available
            .split_whitespace()
            .map(|c| format!("+{c}"))
            .collect();
        if !enable.is_empty() {
            let path = parent.join("cgroup.subtree_control");
            let value = enable.join(" ");
            fs.write(&path, &value)
                .map_err(|e| cgroup_err(&path, format!("writing {value:?}: {e}")))?;
        }
    }
    Ok(())
}

/// Sets and reads cgroup values through [`HostFs`] (upstream `CgroupManager`).
#[derive(Clone)]
pub struct CgroupManager {
    fs: Arc<dyn HostFs>,
    version: CgroupVersion,
    driver: CgroupDriver,
    systemd: Option<Arc<Systemd>>,
}

impl CgroupManager {
    /// The manager for a host's hierarchy and driver. The systemd driver needs
    /// [`CgroupManager::with_systemd`]: without it every change is an error.
    pub fn new(fs: Arc<dyn HostFs>, version: CgroupVersion, driver: CgroupDriver) -> Self {
        CgroupManager {
            fs,
            version,
            driver,
            systemd: None,
        }
    }

    /// systemd's D-Bus API, for the systemd driver (ignored with cgroupfs).
    pub fn with_systemd(mut self, systemd: Option<Arc<Systemd>>) -> Self {
        self.systemd = systemd;
        self
    }

    /// systemd, when the driver is systemd; an error when it has none.
    fn sd(&self) -> Result<Option<&Systemd>, CmError> {
        match self.driver {
            CgroupDriver::Cgroupfs => Ok(None),
            CgroupDriver::Systemd => self.systemd.as_deref().map(Some).ok_or_else(|| {
                CmError::Systemd(
                    "the systemd cgroup driver has no connection to systemd".to_string(),
                )
            }),
        }
    }

    /// Upstream `Exists`: `Validate` succeeds.
    pub fn exists(&self, name: &CgroupName) -> bool {
        self.validate(name).is_ok()
    }

    /// Upstream `Create`: with the systemd driver the slice unit is started first
    /// (`Apply(-1)`: an existing unit is fine); then the cgroup's directories are made
    /// (v1: in each mounted hierarchy, a new cpuset one given its parent's CPUs and memory
    /// nodes; v2: the controllers enabled in every ancestor) and the values set, a failed
    /// `Set` only logged, as upstream.
    pub fn create(&self, name: &CgroupName, r: &ResourceConfig) -> Result<(), CmError> {
        if let Some(sd) = self.sd()? {
            let (unit, parent) = systemd_cgroups::unit_and_parent(name);
            let props = systemd_cgroups::apply_properties(self.version, &unit, &parent);
            sd.start_unit(&unit, &props, true).map_err(|e| {
                CmError::Systemd(match self.version {
                    CgroupVersion::V1 => e.to_string(),
                    CgroupVersion::V2 => format!(
                        "unable to start unit {unit:?} (properties {}): {e}",
                        systemd_cgroups::go_properties(&props)
                    ),
                })
            })?;
        }
        self.make_dirs(name)?;
        if let Err(e) = self.update(name, r) {
            tracing::error!(cgroup = %name.for_driver(self.driver), err = %e, "cgroup manager.Set failed");
        }
        Ok(())
    }

    fn make_dirs(&self, name: &CgroupName) -> Result<(), CmError> {
        let mkdir = |dir: &Path| self.fs.create_dir_all(dir).map_err(|e| cgroup_err(dir, e));
        match self.version {
            CgroupVersion::V1 => {
                for sub in LIBCONTAINER_V1_SUBSYSTEMS {
                    let Some(dir) = self.v1_dir(sub, name) else {
                        continue;
                    };
                    mkdir(&dir)?;
                    if sub == "cpuset" {
                        crate::qos::inherit_cpuset(self.fs.as_ref(), &dir)?;
                    }
                }
            }
            CgroupVersion::V2 => {
                let dir = self.v2_dir(name);
                enable_controllers_above(self.fs.as_ref(), &dir)?;
                mkdir(&dir)?;
            }
        }
        Ok(())
    }

    /// The systemd half of upstream `Destroy` (libcontainer `stopUnit`): the slice unit
    /// is stopped; nothing with cgroupfs. The caller removes the directories.
    pub fn stop_unit(&self, name: &CgroupName) -> Result<(), CmError> {
        if let Some(sd) = self.sd()? {
            let (unit, _) = systemd_cgroups::unit_and_parent(name);
            sd.stop_unit(&unit)
                .map_err(|e| CmError::Systemd(e.to_string()))?;
        }
        Ok(())
    }

    /// The host filesystem the manager writes through.
    pub fn fs(&self) -> &Arc<dyn HostFs> {
        &self.fs
    }

    /// The cgroup hierarchy of the host.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// The cgroup driver the names are rendered for.
    pub fn driver(&self) -> CgroupDriver {
        self.driver
    }

    /// A name in the driver's notation, parsed (upstream `CgroupManager.CgroupName`).
    pub fn cgroup_name(&self, name: &str) -> CgroupName {
        CgroupName::from_driver(name, self.driver)
    }

    /// Upstream `Validate`: the cgroup exists in every hierarchy the kubelet checks.
    ///
    /// v1: its directory in each mounted controller of `cpu`, `cpuacct`, `cpuset`,
    /// `memory`, `systemd` (the `name=systemd` hierarchy), `pids` and, when mounted,
    /// `hugetlb`; v2: its `cgroup.controllers` lists every controller of `cpu`, `cpuset`,
    /// `memory`, `hugetlb`, `pids` the root has.
    pub fn validate(&self, name: &CgroupName) -> Result<(), CmError> {
        match self.version {
            CgroupVersion::V1 => {
                let missing: Vec<String> = V1_VALIDATED_CONTROLLERS
                    .iter()
                    .filter_map(|ctrl| self.v1_dir(ctrl, name))
                    .filter(|dir| !self.fs.exists(dir))
                    .map(|dir| dir.display().to_string())
                    .collect();
                if missing.is_empty() {
                    return Ok(());
                }
                Err(CmError::InvalidCgroup(format!(
                    "cgroup {} has some missing paths: {}",
                    name.go_quoted(),
                    missing.join(", ")
                )))
            }
            CgroupVersion::V2 => {
                let controllers = |dir: &Path| {
                    let file = dir.join("cgroup.controllers");
                    self.fs.read_to_string(&file).map_err(|e| (file, e))
                };
                let root = controllers(Path::new(CGROUP_MOUNT)).unwrap_or_default();
                let enabled = controllers(&self.v2_dir(name)).map_err(|(file, e)| {
                    CmError::InvalidCgroup(format!(
                        "could not read controllers for cgroup {}: open {}: {}",
                        name.go_quoted(),
                        file.display(),
                        go_errno_text(&e)
                    ))
                })?;
                let mut missing: Vec<&str> = V2_VALIDATED_CONTROLLERS
                    .iter()
                    .copied()
                    .filter(|c| root.split_whitespace().any(|r| r == *c))
                    .filter(|c| !enabled.split_whitespace().any(|e| e == *c))
                    .collect();
                missing.sort_unstable();
                if missing.is_empty() {
                    return Ok(());
                }
                Err(CmError::InvalidCgroup(format!(
                    "cgroup {} has some missing controllers: {}",
                    name.go_quoted(),
                    missing.join(", ")
                )))
            }
        }
    }

    /// The cgroup's path relative to a hierarchy root, in the driver's notation.
    pub fn rel(&self, name: &CgroupName) -> String {
        name.for_driver(self.driver)
            .trim_start_matches('/')
            .to_string()
    }

    /// The cgroup's directory in v1 controller `ctrl`, if that controller is mounted.
    fn v1_dir(&self, ctrl: &str, name: &CgroupName) -> Option<PathBuf> {
        let root = Path::new(CGROUP_MOUNT).join(ctrl);
        self.fs.exists(&root).then(|| root.join(self.rel(name)))
    }

    fn v2_dir(&self, name: &CgroupName) -> PathBuf {
        Path::new(CGROUP_MOUNT).join(self.rel(name))
    }

    /// libcontainer's `HugePageSizes`: the host's page sizes (`hugepages-2048kB` → `2MB`).
    pub fn huge_page_sizes(&self) -> Vec<String> {
        self.huge_page_size_bytes()
            .into_iter()
            .map(huge_page_unit_size)
            .collect()
    }

    /// The host's huge page sizes in bytes, smallest first.
    pub fn huge_page_size_bytes(&self) -> Vec<i64> {
        let mut sizes: Vec<i64> = self
            .fs
            .read_dir(Path::new(HUGEPAGES_DIR))
            .unwrap_or_default()
            .iter()
            .filter_map(|n| {
                n.strip_prefix("hugepages-")?
                    .strip_suffix("kB")?
                    .parse::<i64>()
                    .ok()
            })
            .collect();
        sizes.sort_unstable();
        sizes.into_iter().map(|kb| kb * 1024).collect()
    }

    /// `maybeSetHugetlb`: every page size the config names, and 0 for the host's others;
    /// nothing without the hugetlb controller.
    fn hugetlb_limits(&self, r: &ResourceConfig) -> Vec<(String, i64)> {
        let supported = match self.version {
            CgroupVersion::V1 => self.fs.exists(&Path::new(CGROUP_MOUNT).join("hugetlb")),
            CgroupVersion::V2 => self
                .fs
                .read_to_string(&Path::new(CGROUP_MOUNT).join("cgroup.controllers"))
                .unwrap_or_default()
                .split_whitespace()
                .any(|c| c == "hugetlb"),
        };
        if !supported {
            tracing::trace!("Optional subsystem not supported: hugetlb");
            return Vec::new();
        }
        let mut out: Vec<(String, i64)> = r
            .huge_page_limit
            .iter()
            .map(|(size, limit)| (huge_page_unit_size(*size), *limit))
            .collect();
        for size in self.huge_page_sizes() {
            if !out.iter().any(|(s, _)| *s == size) {
                out.push((size, 0));
            }
        }
        out
    }

    fn write(&self, path: PathBuf, value: &str) -> Result<(), CmError> {
        self.fs
            .write(&path, value)
            .map_err(|e| cgroup_err(&path, format!("writing {value:?}: {e}")))
    }

    /// Writes `limit` to `<prefix><suffix>` and, where the kernel has it, to the
    /// reservation file `<prefix>.rsvd<suffix>` (libcontainer's hugetlb `Set`).
    fn write_hugetlb(
        &self,
        dir: &Path,
        limits: &[(String, i64)],
        suffix: &str,
    ) -> Result<(), CmError> {
        for (size, limit) in limits {
            let value = limit.to_string();
            self.write(dir.join(format!("hugetlb.{size}{suffix}")), &value)?;
            let rsvd = dir.join(format!("hugetlb.{size}.rsvd{suffix}"));
            if self.fs.exists(&rsvd) {
                self.write(rsvd, &value)?;
            }
        }
        Ok(())
    }

    /// Upstream `Update` (`SetCgroupConfig`): writes the config's values into the existing
    /// cgroup; the first failing write is the error.
    ///
    /// With the systemd driver the unit's properties are set first (libcontainer's
    /// systemd `Set`), then the files, with the CFS quota as systemd rounds it.
    pub fn update(&self, name: &CgroupName, r: &ResourceConfig) -> Result<(), CmError> {
        let rounded;
        let r = match self.sd()? {
            None => r,
            Some(sd) => {
                if self.version == CgroupVersion::V1 && !r.unified.is_empty() {
                    return Err(cgroup_err(
                        Path::new(&name.to_cgroupfs()),
                        "invalid configuration: cannot use unified on cgroup v1",
                    ));
                }
                let (unit, _) = systemd_cgroups::unit_and_parent(name);
                let (props, r2) = systemd_cgroups::resources_properties(sd, self.version, r)
                    .map_err(|e| CmError::Systemd(e.to_string()))?;
                sd.set_unit_properties(&unit, &props).map_err(|e| {
                    CmError::Systemd(match self.version {
                        CgroupVersion::V1 => e.to_string(),
                        CgroupVersion::V2 => format!("unable to set unit properties: {e}"),
                    })
                })?;
                rounded = r2;
                &rounded
            }
        };
        match self.version {
            CgroupVersion::V1 => self.set_v1(name, r),
            CgroupVersion::V2 => self.set_v2(name, r),
        }
    }

    /// libcontainer `fs.Manager.Set`, subsystems in its order: cpuset, memory, cpu, pids,
    /// hugetlb.
    fn set_v1(&self, name: &CgroupName, r: &ResourceConfig) -> Result<(), CmError> {
        if !r.unified.is_empty() {
            return Err(cgroup_err(
                Path::new(&name.to_cgroupfs()),
                "invalid configuration: cannot use unified on cgroup v1",
            ));
        }
        if let (Some(dir), Some(cpus)) = (self.v1_dir("cpuset", name), r.cpuset_cpus.as_ref())
            && !cpus.is_empty()
        {
            self.write(dir.join("cpuset.cpus"), cpus)?;
        }
        if let (Some(dir), Some(mem)) = (self.v1_dir("memory", name), r.memory)
            && mem != 0
        {
            self.write(dir.join("memory.limit_in_bytes"), &mem.to_string())?;
        }
        if let Some(dir) = self.v1_dir("cpu", name) {
            if let Some(shares) = r.cpu_shares.filter(|s| *s != 0) {
                self.write(dir.join("cpu.shares"), &shares.to_string())?;
            }
            let quota = r.cpu_quota.filter(|q| *q != 0);
            // A smaller period may be refused (EINVAL) until the quota is set: retry it
            // after the quota, as libcontainer does.
            let mut retry_period = None;
            if let Some(period) = r.cpu_period.filter(|p| *p != 0) {
                let path = dir.join("cpu.cfs_period_us");
                match self.fs.write(&path, &period.to_string()) {
                    Ok(()) => {}
                    Err(e)
                        if quota.is_some()
                            && e.raw_os_error() == Some(nix::errno::Errno::EINVAL as i32) =>
                    {
                        retry_period = Some(period);
                    }
                    Err(e) => return Err(cgroup_err(&path, format!("writing {period:?}: {e}"))),
                }
            }
            if let Some(quota) = quota {
                self.write(dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
                if let Some(period) = retry_period {
                    self.write(dir.join("cpu.cfs_period_us"), &period.to_string())?;
                }
            }
        }
        if let (Some(dir), Some(pids)) = (self.v1_dir("pids", name), r.pids_limit)
            && pids != 0
        {
            let value = if pids > 0 {
                pids.to_string()
            } else {
                "max".into()
            };
            self.write(dir.join("pids.max"), &value)?;
        }
        let limits = self.hugetlb_limits(r);
        if let Some(dir) = self.v1_dir("hugetlb", name) {
            self.write_hugetlb(&dir, &limits, ".limit_in_bytes")?;
        }
        Ok(())
    }

    /// libcontainer `fs2.Manager.Set`, in its order: pids, memory, cpu, cpuset, hugetlb.
    fn set_v2(&self, name: &CgroupName, r: &ResourceConfig) -> Result<(), CmError> {
        let dir = self.v2_dir(name);
        let num_to_str = |v: i64| match v {
            0 => None,
            v if v < 0 => Some("max".to_string()),
            v => Some(v.to_string()),
        };
        if let Some(v) = r.pids_limit.and_then(num_to_str) {
            self.write(dir.join("pids.max"), &v)?;
        }
        if let Some(v) = r.memory.and_then(num_to_str) {
            self.write(dir.join("memory.max"), &v)?;
        }
        if let Some(shares) = r.cpu_shares.filter(|s| *s != 0) {
            self.write(
                dir.join("cpu.weight"),
                &cpu_shares_to_cpu_weight(shares).to_string(),
            )?;
        }
        let quota = r.cpu_quota.unwrap_or(0);
        let period = r.cpu_period.unwrap_or(0);
        if quota != 0 || period != 0 {
            let quota = if quota > 0 {
                quota.to_string()
            } else {
                "max".into()
            };
            let period = if period == 0 { 100_000 } else { period };
            self.write(dir.join("cpu.max"), &format!("{quota} {period}"))?;
        }
        if let Some(cpus) = r.cpuset_cpus.as_ref().filter(|c| !c.is_empty()) {
            self.write(dir.join("cpuset.cpus"), cpus)?;
        }
        let limits = self.hugetlb_limits(r);
        self.write_hugetlb(&dir, &limits, ".max")?;
        // libcontainer `setUnified`: each key is a file of the cgroup.
        for (key, value) in &r.unified {
            if key.contains('/') || !key.contains('.') {
                return Err(cgroup_err(
                    &dir,
                    format!("unified resource {key:?} is not a cgroup file"),
                ));
            }
            self.write(dir.join(key), value)?;
        }
        Ok(())
    }

    fn read(&self, path: PathBuf) -> Result<String, CmError> {
        self.fs
            .read_to_string(&path)
            .map(|s| s.trim().to_string())
            .map_err(|source| CmError::Read {
                path: path.display().to_string(),
                source,
            })
    }

    fn read_num<T: std::str::FromStr>(&self, path: PathBuf) -> Result<T, CmError> {
        let text = self.read(path.clone())?;
        text.parse().map_err(|_| CmError::Parse {
            path: path.display().to_string(),
            reason: format!("not a number: {text:?}"),
        })
    }

    fn v1_dir_required(&self, ctrl: &str, name: &CgroupName) -> Result<PathBuf, CmError> {
        self.v1_dir(ctrl, name).ok_or_else(|| CmError::Cgroup {
            path: format!("{CGROUP_MOUNT}/{ctrl}"),
            reason: format!("the {ctrl} controller is not mounted"),
        })
    }

    /// Upstream `GetCgroupConfig`: the cgroup's CPU (shares, quota, period) or memory
    /// (limit) values as set now. An unlimited v1 memory cgroup reads as the kernel's
    /// page-rounded maximum; an unlimited v2 one (`max`) as `i64::MAX`.
    pub fn get_cgroup_config(
        &self,
        name: &CgroupName,
        resource: CgroupResource,
    ) -> Result<ResourceConfig, CmError> {
        let mut r = ResourceConfig::default();
        match (self.version, resource) {
            (CgroupVersion::V1, CgroupResource::Cpu) => {
                let dir = self.v1_dir_required("cpu", name)?;
                r.cpu_quota = Some(self.read_num(dir.join("cpu.cfs_quota_us"))?);
                r.cpu_period = Some(self.read_num(dir.join("cpu.cfs_period_us"))?);
                r.cpu_shares = Some(self.read_num(dir.join("cpu.shares"))?);
            }
            (CgroupVersion::V1, CgroupResource::Memory) => {
                let dir = self.v1_dir_required("memory", name)?;
                let limit: u64 = self.read_num(dir.join("memory.limit_in_bytes"))?;
                r.memory = Some(i64::try_from(limit).unwrap_or(i64::MAX));
            }
            (CgroupVersion::V2, CgroupResource::Cpu) => {
                let dir = self.v2_dir(name);
                let max = self.read(dir.join("cpu.max"))?;
                let mut parts = max.split_whitespace();
                let quota = match parts.next() {
                    Some("max") | None => -1,
                    Some(q) => q.parse().map_err(|_| CmError::Parse {
                        path: dir.join("cpu.max").display().to_string(),
                        reason: format!("bad quota in {max:?}"),
                    })?,
                };
                let period = parts.next().and_then(|p| p.parse().ok()).unwrap_or(100_000);
                r.cpu_quota = Some(quota);
                r.cpu_period = Some(period);
                let weight: u64 = self.read_num(dir.join("cpu.weight"))?;
                r.cpu_shares = Some(cpu_weight_to_cpu_shares(weight));
            }
            (CgroupVersion::V2, CgroupResource::Memory) => {
                let text = self.read(self.v2_dir(name).join("memory.max"))?;
                r.memory = Some(if text == "max" {
                    i64::MAX
                } else {
                    text.parse().map_err(|_| CmError::Parse {
                        path: self.v2_dir(name).join("memory.max").display().to_string(),
                        reason: format!("not a number: {text:?}"),
                    })?
                });
            }
        }
        Ok(r)
    }

    /// Upstream `MemoryUsage`: v1 `memory.usage_in_bytes`, v2 `memory.current`.
    pub fn memory_usage(&self, name: &CgroupName) -> Result<i64, CmError> {
        match self.version {
            CgroupVersion::V1 => {
                let dir = self.v1_dir_required("memory", name)?;
                self.read_num(dir.join("memory.usage_in_bytes"))
            }
            CgroupVersion::V2 => self.read_num(self.v2_dir(name).join("memory.current")),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::hostfs::FakeHostFs;

    fn name() -> CgroupName {
        CgroupName::from_cgroupfs("/kubepods/pod1")
    }

    #[test]
    fn weight_and_unit_conversions() {
        assert_eq!(cpu_shares_to_cpu_weight(2), 1);
        assert_eq!(cpu_shares_to_cpu_weight(1024), 39);
        assert_eq!(cpu_shares_to_cpu_weight(262_144), 10_000);
        assert_eq!(cpu_shares_to_cpu_weight(1 << 20), 10_000);
        assert_eq!(cpu_weight_to_cpu_shares(1), 2);
        assert_eq!(cpu_weight_to_cpu_shares(10_000), 262_144);
        assert_eq!(huge_page_unit_size(2 << 20), "2MB");
        assert_eq!(huge_page_unit_size(1 << 30), "1GB");
        assert_eq!(huge_page_unit_size(64 << 10), "64KB");
    }

    #[test]
    fn v1_writes_in_libcontainer_order_and_hugetlb_for_every_host_size() {
        let fs = Arc::new(FakeHostFs::default());
        for c in ["cpu", "memory", "pids", "hugetlb"] {
            fs.add_dir(format!("/sys/fs/cgroup/{c}"));
        }
        fs.add_dir("/sys/kernel/mm/hugepages/hugepages-2048kB");
        fs.add_dir("/sys/kernel/mm/hugepages/hugepages-1048576kB");
        fs.add_file(
            "/sys/fs/cgroup/hugetlb/kubepods/pod1/hugetlb.2MB.rsvd.limit_in_bytes",
            "0",
        );
        let m = CgroupManager::new(fs.clone(), CgroupVersion::V1, CgroupDriver::Cgroupfs);
        let r = ResourceConfig {
            memory: Some(64 << 20),
            cpu_shares: Some(512),
            cpu_quota: Some(50_000),
            cpu_period: Some(100_000),
            huge_page_limit: BTreeMap::from([(2 << 20, 4 << 20)]),
            pids_limit: Some(-1),
            cpuset_cpus: None,
            unified: BTreeMap::new(),
        };
        m.update(&name(), &r).unwrap();
        let d = "/sys/fs/cgroup";
        let want: Vec<(PathBuf, String)> = [
            ("memory", "memory.limit_in_bytes", "67108864"),
            ("cpu", "cpu.shares", "512"),
            ("cpu", "cpu.cfs_period_us", "100000"),
            ("cpu", "cpu.cfs_quota_us", "50000"),
            ("pids", "pids.max", "max"),
            ("hugetlb", "hugetlb.2MB.limit_in_bytes", "4194304"),
            ("hugetlb", "hugetlb.2MB.rsvd.limit_in_bytes", "4194304"),
            ("hugetlb", "hugetlb.1GB.limit_in_bytes", "0"),
        ]
        .iter()
        .map(|(c, f, v)| {
            (
                PathBuf::from(format!("{d}/{c}/kubepods/pod1/{f}")),
                v.to_string(),
            )
        })
        .collect();
        assert_eq!(fs.writes(), want);
        // Reading back what was written.
        let cpu = m.get_cgroup_config(&name(), CgroupResource::Cpu).unwrap();
        assert_eq!(
            (cpu.cpu_shares, cpu.cpu_quota, cpu.cpu_period),
            (Some(512), Some(50_000), Some(100_000))
        );
        let mem = m
            .get_cgroup_config(&name(), CgroupResource::Memory)
            .unwrap();
        assert_eq!(mem.memory, Some(64 << 20));
    }

    /// MemoryQoS's `memory.min` (upstream `Unified`): written last on v2; refused on v1 as
    /// libcontainer refuses it.
    #[test]
    fn unified_files_on_v2_refused_on_v1() {
        let r = ResourceConfig {
            memory: Some(1 << 30),
            unified: BTreeMap::from([("memory.min".to_string(), "1024".to_string())]),
            ..ResourceConfig::default()
        };
        let fs = Arc::new(FakeHostFs::default());
        let m = CgroupManager::new(fs.clone(), CgroupVersion::V2, CgroupDriver::Cgroupfs);
        m.update(&name(), &r).unwrap();
        let dir = PathBuf::from("/sys/fs/cgroup/kubepods/pod1");
        assert_eq!(
            fs.writes(),
            [
                (dir.join("memory.max"), "1073741824".to_string()),
                (dir.join("memory.min"), "1024".to_string()),
            ]
        );
        let bad = ResourceConfig {
            unified: BTreeMap::from([("../x".to_string(), "1".to_string())]),
            ..ResourceConfig::default()
        };
        assert!(m.update(&name(), &bad).is_err());
        let fs = Arc::new(FakeHostFs::default());
        fs.add_dir("/sys/fs/cgroup/memory");
        let m = CgroupManager::new(fs.clone(), CgroupVersion::V1, CgroupDriver::Cgroupfs);
        let err = m.update(&name(), &r).unwrap_err();
        assert!(
            err.to_string().contains("cannot use unified on cgroup v1"),
            "{err}"
        );
        assert!(fs.writes().is_empty());
    }

    #[test]
    fn v2_cpu_max_weight_and_unset_values() {
        let fs = Arc::new(FakeHostFs::default());
        fs.add_file("/sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
        let m = CgroupManager::new(fs.clone(), CgroupVersion::V2, CgroupDriver::Cgroupfs);
        let r = ResourceConfig {
            memory: Some(1 << 30),
            cpu_shares: Some(1024),
            cpu_quota: Some(-1),
            cpu_period: Some(50_000),
            pids_limit: Some(100),
            ..ResourceConfig::default()
        };
        m.update(&name(), &r).unwrap();
        let dir = PathBuf::from("/sys/fs/cgroup/kubepods/pod1");
        assert_eq!(
            fs.writes(),
            [
                (dir.join("pids.max"), "100".to_string()),
                (dir.join("memory.max"), "1073741824".to_string()),
                (dir.join("cpu.weight"), "39".to_string()),
                (dir.join("cpu.max"), "max 50000".to_string()),
            ]
        );
        let cpu = m.get_cgroup_config(&name(), CgroupResource::Cpu).unwrap();
        assert_eq!((cpu.cpu_quota, cpu.cpu_period), (Some(-1), Some(50_000)));
        // Only the shares: nothing else is touched.
        let fs = Arc::new(FakeHostFs::default());
        let m = CgroupManager::new(fs.clone(), CgroupVersion::V2, CgroupDriver::Cgroupfs);
        let shares = ResourceConfig {
            cpu_shares: Some(2),
            ..ResourceConfig::default()
        };
        m.update(&name(), &shares).unwrap();
        assert_eq!(fs.writes(), [(dir.join("cpu.weight"), "1".to_string())]);
    }

    #[test]
    fn v1_period_refused_before_quota_is_retried_after_it() {
        struct EinvalOnce {
            inner: FakeHostFs,
            refused: std::sync::atomic::AtomicBool,
        }
        impl HostFs for EinvalOnce {
            fn read_to_string(&self, p: &Path) -> std::io::Result<String> {
                self.inner.read_to_string(p)
            }
            fn write(&self, p: &Path, d: &str) -> std::io::Result<()> {
                if p.ends_with("cpu.cfs_period_us")
                    && !self.refused.swap(true, std::sync::atomic::Ordering::SeqCst)
                {
                    return Err(std::io::Error::from_raw_os_error(
                        nix::errno::Errno::EINVAL as i32,
                    ));
                }
                self.inner.write(p, d)
            }
            fn create_dir_all(&self, p: &Path) -> std::io::Result<()> {
                self.inner.create_dir_all(p)
            }
            fn exists(&self, p: &Path) -> bool {
                self.inner.exists(p)
            }
            fn fs_type(&self, p: &Path) -> std::io::Result<i64> {
                self.inner.fs_type(p)
            }
            fn read_dir(&self, p: &Path) -> std::io::Result<Vec<String>> {
                self.inner.read_dir(p)
            }
            fn remove_dir(&self, p: &Path) -> std::io::Result<()> {
                self.inner.remove_dir(p)
            }
        }
        let fs = Arc::new(EinvalOnce {
            inner: FakeHostFs::default(),
            refused: Default::default(),
        });
        fs.inner.add_dir("/sys/fs/cgroup/cpu");
        let m = CgroupManager::new(fs.clone(), CgroupVersion::V1, CgroupDriver::Cgroupfs);
        let r = ResourceConfig {
            cpu_quota: Some(10_000),
            cpu_period: Some(20_000),
            ..ResourceConfig::default()
        };
        m.update(&name(), &r).unwrap();
        let files: Vec<String> = fs
            .inner
            .writes()
            .iter()
            .map(|(p, v)| format!("{}={v}", p.file_name().unwrap().to_string_lossy()))
            .collect();
        assert_eq!(files, ["cpu.cfs_quota_us=10000", "cpu.cfs_period_us=20000"]);
    }
}
