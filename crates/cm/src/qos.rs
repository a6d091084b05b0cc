//! The node's pod cgroup hierarchy: `kubepods`, `kubepods/burstable`,
//! `kubepods/besteffort` (mirrors `pkg/kubelet/cm/qos_container_manager_linux.go` `Start`
//! and `node_container_manager_linux.go` `enforceNodeAllocatableCgroups` for `pods`).

use std::path::{Path, PathBuf};

use crate::CmError;
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
    if shares <= 0 {
        return 0;
    }
    1 + ((shares - 2) * 9999) / 262_142
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
    /// `(millicores, bytes)` limits for `kubepods` when `pods` is enforced.
    pub pods_limits: Option<(i64, i64)>,
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
    write(
        fs,
        cpu.join(rel(&c.besteffort)).join("cpu.shares"),
        &MIN_SHARES.to_string(),
    )
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::cgroups::node_allocatable_root;
    use crate::hostfs::FakeHostFs;

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
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("besteffort/cpu.shares"), "{err}");
    }
}
