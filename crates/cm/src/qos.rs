//! The node's pod cgroup hierarchy: `kubepods`, `kubepods/burstable`,
//! `kubepods/besteffort` (mirrors `pkg/kubelet/cm/qos_container_manager_linux.go` `Start`
//! and `node_container_manager_linux.go` `enforceNodeAllocatableCgroups` for `pods`), and
//! keeping the QoS cgroups' values current as pods come and go
//! ([`QosContainerManager::update_cgroups`], upstream `UpdateCgroups`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::CmError;
use crate::cgroup_manager::{CgroupManager, ResourceConfig};
use crate::cgroups::{CgroupDriver, CgroupName, CgroupVersion};
use crate::hostfs::HostFs;

/// cgroup v1 controllers the kubelet manages pod cgroups in (those mounted are used).
pub const V1_CONTROLLERS: [&str; 7] = [
    "cpu", "cpuacct", "cpuset", "memory", "pids", "hugetlb", "blkio",
];

/// The smallest `cpu.shares` (upstream `MinShares`), given to best-effort pods.
pub const MIN_SHARES: i64 = 2;
/// The largest `cpu.shares` (upstream `MaxShares`).
pub const MAX_SHARES: i64 = 262_144;

/// Upstream `MilliCPUToShares`: 1 CPU = 1024 shares, clamped to [2, 262144]; 0 → 2.
/// The one implementation: kuberuntime's container resources use it too.
pub fn milli_cpu_to_shares(milli: i64) -> i64 {
    if milli == 0 {
        return MIN_SHARES;
    }
    (milli.saturating_mul(1024) / 1000).clamp(MIN_SHARES, MAX_SHARES)
}

/// cgroup v2 `cpu.weight` for v1 shares (runc's `ConvertCPUSharesToCgroupV2Value`).
pub fn shares_to_weight(shares: i64) -> i64 {
    match u64::try_from(shares) {
        Ok(s) if s > 0 => {
            i64::try_from(crate::cgroup_manager::cpu_shares_to_cpu_weight(s)).unwrap_or(10_000)
        }
        _ => 0,
    }
}

/// The QoS cgroup names, in the driver's form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosCgroups {
    /// `kubepods` (node allocatable root).
    pub pods: String,
    /// `kubepods/burstable`.
    pub burstable: String,
    /// `kubepods/besteffort`.
    pub besteffort: String,
}

impl QosCgroups {
    /// Names for a node allocatable root.
    pub fn new(root: &CgroupName, driver: CgroupDriver) -> Self {
        QosCgroups {
            pods: root.for_driver(driver),
            burstable: root.child("burstable").for_driver(driver),
            besteffort: root.child("besteffort").for_driver(driver),
        }
    }
}

/// What to create and enforce.
#[derive(Debug, Clone, Copy)]
pub struct QosSetup<'a> {
    /// cgroup hierarchy of the host.
    pub version: CgroupVersion,
    /// The names to create.
    pub cgroups: &'a QosCgroups,
    /// `(millicores, bytes)` limits for `kubepods` (see `NodeConfig::kubepods_limits`).
    pub pods_limits: Option<(i64, i64)>,
    /// `kubepods`' `pids.max`: the pid capacity, less the `pid` reservations when `pods`
    /// is enforced (upstream `getNodeAllocatableInternalAbsolute`'s `pid`; `None` when the
    /// capacity is unknown).
    pub pids_limit: Option<i64>,
}

/// libcontainer's pids value: 0 is not written, a negative one is `max`.
fn pids_value(limit: Option<i64>) -> Option<String> {
    match limit? {
        0 => None,
        v if v < 0 => Some("max".into()),
        v => Some(v.to_string()),
    }
}

fn mkdir(fs: &dyn HostFs, path: &Path) -> Result<(), CmError> {
    fs.create_dir_all(path).map_err(|e| CmError::Cgroup {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

fn write(fs: &dyn HostFs, path: PathBuf, value: &str) -> Result<(), CmError> {
    fs.write(&path, value).map_err(|e| CmError::Cgroup {
        path: path.display().to_string(),
        reason: format!("writing {value:?}: {e}"),
    })
}

/// Creates the hierarchy and applies the `kubepods` limits and best-effort shares.
pub fn setup_qos_cgroups(fs: &dyn HostFs, setup: QosSetup<'_>) -> Result<(), CmError> {
    match setup.version {
        CgroupVersion::V1 => setup_v1(fs, setup),
        CgroupVersion::V2 => setup_v2(fs, setup),
    }
}

fn rel(name: &str) -> &str {
    name.trim_start_matches('/')
}

fn setup_v1(fs: &dyn HostFs, setup: QosSetup<'_>) -> Result<(), CmError> {
    let base = Path::new("/sys/fs/cgroup");
    let c = setup.cgroups;
    for ctrl in V1_CONTROLLERS {
        let root = base.join(ctrl);
        if !fs.exists(&root) {
            continue;
        }
        for name in [&c.pods, &c.burstable, &c.besteffort] {
            let dir = root.join(rel(name));
            mkdir(fs, &dir)?;
            if ctrl == "cpuset" {
                inherit_cpuset(fs, &dir)?;
            }
        }
    }
    let cpu = base.join("cpu");
    if let Some((milli, bytes)) = setup.pods_limits {
        write(
            fs,
            cpu.join(rel(&c.pods)).join("cpu.shares"),
            &milli_cpu_to_shares(milli).to_string(),
        )?;
        write(
            fs,
            base.join("memory")
                .join(rel(&c.pods))
                .join("memory.limit_in_bytes"),
            &bytes.to_string(),
        )?;
    }
    let pids = base.join("pids");
    if let Some(v) = pids_value(setup.pids_limit)
        && fs.exists(&pids)
    {
        write(fs, pids.join(rel(&c.pods)).join("pids.max"), &v)?;
    }
    write(
        fs,
        cpu.join(rel(&c.besteffort)).join("cpu.shares"),
        &MIN_SHARES.to_string(),
    )
}

/// The QoS hierarchy through the cgroup manager, as upstream makes it with any driver
/// (kubelet-rs uses it for the systemd driver, where each cgroup is a slice unit):
/// `createNodeAllocatableCgroups` (`kubepods` created with `kubepods_config` unless it
/// exists), `qosContainerManager.Start` (`Validate` of `kubepods`; Burstable and
/// BestEffort created, or updated when they exist, with huge pages unbounded and
/// BestEffort's 2 CPU shares), then `enforceNodeAllocatableCgroups`' update of
/// `kubepods` with the same config.
pub fn setup_qos_cgroups_with_manager(
    cgroups: &CgroupManager,
    names: &QosCgroups,
    kubepods_config: &ResourceConfig,
) -> Result<(), CmError> {
    let kubepods = cgroups.cgroup_name(&names.pods);
    if !cgroups.exists(&kubepods) {
        cgroups.create(&kubepods, kubepods_config)?;
    }
    cgroups.validate(&kubepods).map_err(|e| {
        CmError::Cgroup {
            path: names.pods.clone(),
            reason: format!(
                "failed to initialize top level QOS containers: error validating root container {} : {e}",
                kubepods.go_quoted()
            ),
        }
    })?;
    let unbounded: BTreeMap<i64, i64> = cgroups
        .huge_page_size_bytes()
        .into_iter()
        .map(|size| (size, i64::MAX))
        .collect();
    for (class, name, shares) in [
        ("Burstable", &names.burstable, None),
        ("BestEffort", &names.besteffort, Some(MIN_SHARES as u64)),
    ] {
        let name = cgroups.cgroup_name(name);
        let config = ResourceConfig {
            cpu_shares: shares,
            huge_page_limit: unbounded.clone(),
            ..ResourceConfig::default()
        };
        let (what, result) = if cgroups.exists(&name) {
            ("update", cgroups.update(&name, &config))
        } else {
            ("create", cgroups.create(&name, &config))
        };
        result.map_err(|e| CmError::Cgroup {
            path: name.for_driver(cgroups.driver()),
            reason: format!(
                "failed to initialize top level QOS containers: failed to {what} top level {class} QOS cgroup : {e}"
            ),
        })?;
    }
    cgroups.update(&kubepods, kubepods_config)
}

/// A new v1 cpuset cgroup starts empty; give it its parent's CPUs and memory nodes.
pub(crate) fn inherit_cpuset(fs: &dyn HostFs, dir: &Path) -> Result<(), CmError> {
    let Some(parent) = dir.parent() else {
        return Ok(());
    };
    for file in ["cpuset.cpus", "cpuset.mems"] {
        let mine = fs.read_to_string(&dir.join(file)).unwrap_or_default();
        if !mine.trim().is_empty() {
            continue;
        }
        let theirs = fs.read_to_string(&parent.join(file)).unwrap_or_default();
        if !theirs.trim().is_empty() {
            write(fs, dir.join(file), theirs.trim())?;
        }
    }
    Ok(())
}

fn setup_v2(fs: &dyn HostFs, setup: QosSetup<'_>) -> Result<(), CmError> {
    let base = PathBuf::from("/sys/fs/cgroup");
    let c = setup.cgroups;
    let available = fs
        .read_to_string(&base.join("cgroup.controllers"))
        .unwrap_or_default();
    let enable: Vec<String> = ["cpuset", "cpu", "io", "memory", "hugetlb", "pids"]
        .iter()
        .filter(|ctl| available.split_whitespace().any(|a| a == **ctl))
        .map(|ctl| format!("+{ctl}"))
        .collect();
    let enable = enable.join(" ");
    let mut parent = base.clone();
    for name in [&c.pods, &c.burstable, &c.besteffort] {
        let dir = base.join(rel(name));
        mkdir(fs, &dir)?;
        if !enable.is_empty() {
            if let Some(p) = dir.parent() {
                parent = p.to_path_buf();
            }
            write(fs, parent.join("cgroup.subtree_control"), &enable)?;
        }
    }
    if !enable.is_empty() {
        write(
            fs,
            base.join(rel(&c.pods)).join("cgroup.subtree_control"),
            &enable,
        )?;
    }
    if let Some(v) = pids_value(setup.pids_limit) {
        write(fs, base.join(rel(&c.pods)).join("pids.max"), &v)?;
    }
    if let Some((milli, bytes)) = setup.pods_limits {
        let weight = shares_to_weight(milli_cpu_to_shares(milli));
        write(
            fs,
            base.join(rel(&c.pods)).join("cpu.weight"),
            &weight.to_string(),
        )?;
        write(
            fs,
            base.join(rel(&c.pods)).join("memory.max"),
            &bytes.to_string(),
        )?;
    }
    write(
        fs,
        base.join(rel(&c.besteffort)).join("cpu.weight"),
        &shares_to_weight(MIN_SHARES).to_string(),
    )
}

/// Upstream `periodicQOSCgroupUpdateInterval`.
pub const PERIODIC_QOS_CGROUP_UPDATE_INTERVAL: std::time::Duration =
    std::time::Duration::from_secs(60);

/// What the active pods ask of the QoS cgroups (what upstream's `UpdateCgroups` sums from
/// `activePods`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QosUpdate {
    /// Sum of the Burstable pods' CPU requests (`PodRequests`), in millicores.
    pub burstable_cpu_request_milli: i64,
    /// `qosReserved` memory, with the `QOSReserved` gate on (`None` otherwise).
    pub memory_reserve: Option<QosMemoryReserve>,
    /// MemoryQoS (gate on, cgroup v2; `None` otherwise): the Guaranteed and the Burstable
    /// pods' memory requests, for upstream `setMemoryQoS`.
    pub memory_qos: Option<QosMemoryRequests>,
}

/// Inputs of upstream `setMemoryQoS` (`getQoSMemoryRequests`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QosMemoryRequests {
    /// Sum of the Guaranteed pods' memory requests.
    pub guaranteed: i64,
    /// Sum of the Burstable pods' memory requests.
    pub burstable: i64,
}

/// Upstream `setMemoryQoS`: `memory.min` of the Burstable cgroup = its pods' requests, of
/// the pods' root (the Guaranteed "class") = the Guaranteed and Burstable pods' requests;
/// none where the sum is 0.
fn set_memory_qos(configs: &mut [ResourceConfig; 3], r: &QosMemoryRequests) {
    let burstable_min = r.burstable;
    let guaranteed_min = r.guaranteed + burstable_min;
    if burstable_min > 0 {
        configs[1]
            .unified
            .insert(MEMORY_MIN.to_string(), burstable_min.to_string());
        tracing::debug!(
            qos = "Burstable",
            memory_min = burstable_min,
            "MemoryQoS config for qos"
        );
    }
    if guaranteed_min > 0 {
        configs[0]
            .unified
            .insert(MEMORY_MIN.to_string(), guaranteed_min.to_string());
        tracing::debug!(
            qos = "Guaranteed",
            memory_min = guaranteed_min,
            "MemoryQoS config for qos"
        );
    }
}

/// The cgroup v2 file MemoryQoS sets (upstream `Cgroup2MemoryMin`).
pub const MEMORY_MIN: &str = "memory.min";

/// Inputs of upstream `setMemoryReserve`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QosMemoryReserve {
    /// `qosReserved` memory percentage.
    pub percent: i64,
    /// Node allocatable memory in bytes (0: unknown, no limits are set).
    pub allocatable: i64,
    /// Sum of the Guaranteed pods' memory requests.
    pub guaranteed_requests: i64,
    /// Sum of the Burstable pods' memory requests.
    pub burstable_requests: i64,
}

/// The QoS cgroups' values kept current (upstream `qosContainerManagerImpl`).
pub struct QosContainerManager {
    cgroups: CgroupManager,
    /// Guaranteed (`kubepods`), Burstable, BestEffort.
    names: [CgroupName; 3],
    lock: Mutex<()>,
}

impl QosContainerManager {
    /// systemd's D-Bus API for the systemd driver.
    pub fn with_systemd(
        mut self,
        systemd: Option<std::sync::Arc<kubelet_systemd::Systemd>>,
    ) -> Self {
        self.cgroups = self.cgroups.with_systemd(systemd);
        self
    }

    /// The manager of the QoS cgroups under `kubepods`.
    pub fn new(cgroups: CgroupManager, kubepods: &CgroupName) -> Self {
        QosContainerManager {
            cgroups,
            names: [
                kubepods.clone(),
                kubepods.child("burstable"),
                kubepods.child("besteffort"),
            ],
            lock: Mutex::new(()),
        }
    }

    /// `setHugePagesUnbounded`: every host page size at `1 << 62`.
    fn huge_pages_unbounded(&self) -> BTreeMap<i64, i64> {
        self.cgroups
            .huge_page_sizes()
            .iter()
            .filter_map(|s| {
                let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
                let shift = match unit {
                    "KB" => 10,
                    "MB" => 20,
                    "GB" => 30,
                    "TB" => 40,
                    _ => return None,
                };
                Some((num.parse::<i64>().ok()? << shift, 1_i64 << 62))
            })
            .collect()
    }

    /// Upstream `UpdateCgroups`: Burstable CPU shares from the sum of its pods' requests,
    /// BestEffort at [`MIN_SHARES`], huge pages unbounded in all three, and with
    /// `qosReserved` memory (`QOSReserved` gate) the Burstable and BestEffort memory
    /// limits — lowered to the current usage for a cgroup already above its limit
    /// (`retrySetMemoryReserve`).
    pub fn update_cgroups(&self, update: &QosUpdate) -> Result<(), CmError> {
        let _guard = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let hugepages = self.huge_pages_unbounded();
        let mut configs: [ResourceConfig; 3] = std::array::from_fn(|_| ResourceConfig {
            huge_page_limit: hugepages.clone(),
            ..ResourceConfig::default()
        });
        let burstable_shares = milli_cpu_to_shares(update.burstable_cpu_request_milli);
        configs[1].cpu_shares = u64::try_from(burstable_shares).ok();
        configs[2].cpu_shares = u64::try_from(MIN_SHARES).ok();
        if let Some(requests) = &update.memory_qos {
            set_memory_qos(&mut configs, requests);
        }
        if let Some(reserve) = update.memory_reserve {
            set_memory_reserve(&mut configs, &reserve);
            // Every cgroup is tried, as upstream does, before the failures are looked at.
            let failures = self
                .names
                .iter()
                .zip(&configs)
                .filter(|(name, config)| self.cgroups.update(name, config).is_err())
                .count();
            if failures == 0 {
                tracing::trace!("Updated QoS cgroup configuration");
                return Ok(());
            }
            self.retry_set_memory_reserve(&mut configs);
        }
        for (name, config) in self.names.iter().zip(&configs) {
            if let Err(e) = self.cgroups.update(name, config) {
                tracing::error!(err = %e, "Failed to update QoS cgroup configuration");
                return Err(e);
            }
        }
        tracing::trace!("Updated QoS cgroup configuration");
        Ok(())
    }

    /// Upstream `retrySetMemoryReserve`: a cgroup whose usage is above the limit tried
    /// gets its usage as the limit instead.
    fn retry_set_memory_reserve(&self, configs: &mut [ResourceConfig; 3]) {
        for (name, config) in self.names.iter().zip(configs.iter_mut()) {
            let usage = match self.cgroups.memory_usage(name) {
                Ok(u) => u,
                Err(e) => {
                    tracing::debug!(err = %e, "Failed to get resource stats");
                    return;
                }
            };
            if config.memory.is_some_and(|limit| usage > limit) {
                config.memory = Some(usage);
            }
        }
    }
}

/// Upstream `setMemoryReserve`.
fn set_memory_reserve(configs: &mut [ResourceConfig; 3], r: &QosMemoryReserve) {
    if r.allocatable == 0 {
        tracing::debug!(
            "Allocatable memory reported as 0, might be in standalone mode, not setting QoS memory limits"
        );
        return;
    }
    let burstable = r.allocatable - r.guaranteed_requests * r.percent / 100;
    let best_effort = burstable - r.burstable_requests * r.percent / 100;
    configs[1].memory = Some(burstable);
    configs[2].memory = Some(best_effort);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::cgroups::node_allocatable_root;
    use crate::hostfs::FakeHostFs;
    use std::sync::Arc;

    fn qos_manager(fs: &Arc<FakeHostFs>, version: CgroupVersion) -> QosContainerManager {
        QosContainerManager::new(
            CgroupManager::new(fs.clone(), version, CgroupDriver::Cgroupfs),
            &node_allocatable_root("/", true),
        )
    }

    #[test]
    fn update_cgroups_sets_burstable_shares_from_requests_and_best_effort_minimum() {
        let fs = Arc::new(FakeHostFs::default());
        for c in ["cpu", "memory", "hugetlb"] {
            fs.add_dir(format!("/sys/fs/cgroup/{c}"));
        }
        fs.add_dir("/sys/kernel/mm/hugepages/hugepages-2048kB");
        let m = qos_manager(&fs, CgroupVersion::V1);
        m.update_cgroups(&QosUpdate {
            burstable_cpu_request_milli: 1500,
            memory_reserve: None,
            memory_qos: None,
        })
        .unwrap();
        let unbounded = (1_i64 << 62).to_string();
        let w = |p: &str, v: &str| (PathBuf::from(format!("/sys/fs/cgroup/{p}")), v.to_string());
        assert_eq!(
            fs.writes(),
            [
                w("hugetlb/kubepods/hugetlb.2MB.limit_in_bytes", &unbounded),
                w("cpu/kubepods/burstable/cpu.shares", "1536"),
                w(
                    "hugetlb/kubepods/burstable/hugetlb.2MB.limit_in_bytes",
                    &unbounded
                ),
                w("cpu/kubepods/besteffort/cpu.shares", "2"),
                w(
                    "hugetlb/kubepods/besteffort/hugetlb.2MB.limit_in_bytes",
                    &unbounded
                ),
            ]
        );

        // No Burstable pod: the minimum; v2 writes weights.
        let fs = Arc::new(FakeHostFs::default());
        let m = qos_manager(&fs, CgroupVersion::V2);
        m.update_cgroups(&QosUpdate::default()).unwrap();
        assert_eq!(
            fs.writes(),
            [
                w("kubepods/burstable/cpu.weight", "1"),
                w("kubepods/besteffort/cpu.weight", "1"),
            ]
        );

        // MemoryQoS (upstream `setMemoryQoS`): memory.min of Burstable = its requests, of the
        // pods' root = Guaranteed + Burstable; BestEffort none.
        let fs = Arc::new(FakeHostFs::default());
        let m = qos_manager(&fs, CgroupVersion::V2);
        m.update_cgroups(&QosUpdate {
            memory_qos: Some(QosMemoryRequests {
                guaranteed: 100,
                burstable: 50,
            }),
            ..QosUpdate::default()
        })
        .unwrap();
        assert_eq!(
            fs.writes(),
            [
                w("kubepods/memory.min", "150"),
                w("kubepods/burstable/cpu.weight", "1"),
                w("kubepods/burstable/memory.min", "50"),
                w("kubepods/besteffort/cpu.weight", "1"),
            ]
        );
        // Only Guaranteed pods: the root only.
        let fs = Arc::new(FakeHostFs::default());
        let m = qos_manager(&fs, CgroupVersion::V2);
        m.update_cgroups(&QosUpdate {
            memory_qos: Some(QosMemoryRequests {
                guaranteed: 100,
                burstable: 0,
            }),
            ..QosUpdate::default()
        })
        .unwrap();
        assert!(fs.writes().contains(&w("kubepods/memory.min", "100")));
        assert!(
            !fs.writes()
                .iter()
                .any(|(p, _)| p.ends_with("burstable/memory.min"))
        );
    }

    #[test]
    fn qos_reserved_memory_limits_and_retry_at_usage() {
        let fs = Arc::new(FakeHostFs::default());
        fs.add_dir("/sys/fs/cgroup/memory");
        let m = qos_manager(&fs, CgroupVersion::V1);
        let reserve = QosMemoryReserve {
            percent: 50,
            allocatable: 1000 << 20,
            guaranteed_requests: 200 << 20,
            burstable_requests: 100 << 20,
        };
        m.update_cgroups(&QosUpdate {
            burstable_cpu_request_milli: 0,
            memory_reserve: Some(reserve),
            memory_qos: None,
        })
        .unwrap();
        let mem = |q: &str| {
            PathBuf::from(format!(
                "/sys/fs/cgroup/memory/kubepods/{q}memory.limit_in_bytes"
            ))
        };
        assert_eq!(
            fs.writes(),
            [
                (mem("burstable/"), (900_i64 << 20).to_string()),
                (mem("besteffort/"), (850_i64 << 20).to_string()),
            ]
        );
        // Burstable already uses more than its new limit: the write fails, the retry
        // sets the usage.
        let fs = Arc::new(FakeHostFs::default());
        fs.add_dir("/sys/fs/cgroup/memory");
        for q in ["", "burstable/", "besteffort/"] {
            fs.add_file(
                format!("/sys/fs/cgroup/memory/kubepods/{q}memory.usage_in_bytes"),
                (950_i64 << 20).to_string(),
            );
        }
        fs.deny_writes(mem("burstable/"));
        let m = qos_manager(&fs, CgroupVersion::V1);
        let err = m
            .update_cgroups(&QosUpdate {
                burstable_cpu_request_milli: 0,
                memory_reserve: Some(reserve),
                memory_qos: None,
            })
            .unwrap_err();
        assert!(
            err.to_string().contains("burstable/memory.limit_in_bytes"),
            "{err}"
        );
        let tried: Vec<String> = fs.writes().into_iter().map(|(_, v)| v).collect();
        // First round: best-effort written (850Mi); second round: burstable refused again.
        assert_eq!(tried, [(850_i64 << 20).to_string()]);

        // Standalone (allocatable unknown): no memory limits.
        let fs = Arc::new(FakeHostFs::default());
        fs.add_dir("/sys/fs/cgroup/memory");
        let m = qos_manager(&fs, CgroupVersion::V1);
        m.update_cgroups(&QosUpdate {
            burstable_cpu_request_milli: 0,
            memory_reserve: Some(QosMemoryReserve {
                allocatable: 0,
                ..reserve
            }),
            memory_qos: None,
        })
        .unwrap();
        assert!(fs.writes().is_empty(), "{:?}", fs.writes());
    }

    #[test]
    fn shares_math() {
        assert_eq!(milli_cpu_to_shares(0), 2);
        assert_eq!(milli_cpu_to_shares(1), 2);
        assert_eq!(milli_cpu_to_shares(1_000_000), 262_144);
        assert_eq!(milli_cpu_to_shares(-5), 2);
        assert_eq!(milli_cpu_to_shares(1000), 1024);
        assert_eq!(milli_cpu_to_shares(2000), 2048);
        assert_eq!(shares_to_weight(2), 1);
        assert_eq!(shares_to_weight(1024), 39);
        assert_eq!(shares_to_weight(262_144), 10000);
    }

    #[test]
    fn v1_creates_hierarchy_in_mounted_controllers_and_sets_limits() {
        let fs = FakeHostFs::default();
        fs.set_fs_type("/sys/fs/cgroup/cpu", 0);
        fs.set_fs_type("/sys/fs/cgroup/memory", 0);
        fs.set_fs_type("/sys/fs/cgroup/cpuset", 0);
        fs.add_file("/sys/fs/cgroup/cpuset/cpuset.cpus", "0-1\n");
        fs.add_file("/sys/fs/cgroup/cpuset/cpuset.mems", "0\n");
        let names = QosCgroups::new(&node_allocatable_root("/", true), CgroupDriver::Cgroupfs);
        setup_qos_cgroups(
            &fs,
            QosSetup {
                version: CgroupVersion::V1,
                cgroups: &names,
                pods_limits: Some((1500, 1 << 30)),
                pids_limit: Some(1000),
            },
        )
        .unwrap();
        let dirs = fs.dirs();
        assert!(dirs.contains(&PathBuf::from("/sys/fs/cgroup/cpu/kubepods/burstable")));
        assert!(dirs.contains(&PathBuf::from("/sys/fs/cgroup/memory/kubepods/besteffort")));
        assert!(!dirs.iter().any(|d| d.starts_with("/sys/fs/cgroup/pids")));
        let writes = fs.writes();
        let get = |p: &str| {
            writes
                .iter()
                .find(|(w, _)| w == Path::new(p))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            get("/sys/fs/cgroup/cpu/kubepods/cpu.shares").as_deref(),
            Some("1536")
        );
        assert_eq!(
            get("/sys/fs/cgroup/memory/kubepods/memory.limit_in_bytes").as_deref(),
            Some("1073741824")
        );
        assert_eq!(
            get("/sys/fs/cgroup/cpu/kubepods/besteffort/cpu.shares").as_deref(),
            Some("2")
        );
        assert_eq!(
            get("/sys/fs/cgroup/cpuset/kubepods/cpuset.cpus").as_deref(),
            Some("0-1")
        );
        // No pids hierarchy mounted: no pids.max.
        assert!(!writes.iter().any(|(w, _)| w.ends_with("pids.max")));
    }

    /// `pid` reservations: `kubepods`' pids.max is the pid capacity less them (v1 pids
    /// hierarchy), and `max` for a negative value as libcontainer writes it.
    #[test]
    fn v1_pods_pids_limit_goes_to_the_kubepods_pids_hierarchy() {
        let fs = FakeHostFs::default();
        fs.set_fs_type("/sys/fs/cgroup/cpu", 0);
        fs.set_fs_type("/sys/fs/cgroup/pids", 0);
        let names = QosCgroups::new(&node_allocatable_root("/", true), CgroupDriver::Systemd);
        let setup = |pids_limit| QosSetup {
            version: CgroupVersion::V1,
            cgroups: &names,
            pods_limits: Some((1000, 1 << 30)),
            pids_limit,
        };
        setup_qos_cgroups(&fs, setup(Some(31_768))).unwrap();
        let pids_max = PathBuf::from("/sys/fs/cgroup/pids/kubepods.slice/pids.max");
        assert!(fs.writes().contains(&(pids_max.clone(), "31768".into())));
        let fs = FakeHostFs::default();
        fs.set_fs_type("/sys/fs/cgroup/pids", 0);
        setup_qos_cgroups(&fs, setup(None)).unwrap();
        assert!(!fs.writes().iter().any(|(w, _)| *w == pids_max));
    }

    #[test]
    fn v2_enables_controllers_and_sets_weight() {
        let fs = FakeHostFs::default();
        fs.add_file("/sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
        let names = QosCgroups::new(&node_allocatable_root("/", true), CgroupDriver::Cgroupfs);
        setup_qos_cgroups(
            &fs,
            QosSetup {
                version: CgroupVersion::V2,
                cgroups: &names,
                pods_limits: Some((1000, 1 << 30)),
                pids_limit: Some(30_000),
            },
        )
        .unwrap();
        let writes = fs.writes();
        assert!(writes.contains(&(
            PathBuf::from("/sys/fs/cgroup/cgroup.subtree_control"),
            "+cpu +memory +pids".into()
        )));
        assert!(writes.contains(&(
            PathBuf::from("/sys/fs/cgroup/kubepods/cpu.weight"),
            "39".into()
        )));
        assert!(writes.contains(&(
            PathBuf::from("/sys/fs/cgroup/kubepods/besteffort/cpu.weight"),
            "1".into()
        )));
        assert!(writes.contains(&(
            PathBuf::from("/sys/fs/cgroup/kubepods/pids.max"),
            "30000".into()
        )));
    }

    #[test]
    fn write_failure_names_the_file() {
        let fs = FakeHostFs::default();
        fs.set_fs_type("/sys/fs/cgroup/cpu", 0);
        fs.deny_writes("/sys/fs/cgroup/cpu/kubepods/besteffort/cpu.shares");
        let names = QosCgroups::new(&node_allocatable_root("/", true), CgroupDriver::Cgroupfs);
        let err = setup_qos_cgroups(
            &fs,
            QosSetup {
                version: CgroupVersion::V1,
                cgroups: &names,
                pods_limits: None,
                pids_limit: None,
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("besteffort/cpu.shares"), "{err}");
    }
}
