//! cgroup version detection and cgroup names (mirrors `pkg/kubelet/cm/cgroup_manager_linux.go`
//! and `node_container_manager_linux.go`'s `NodeAllocatableRoot`).

use std::path::Path;

use crate::CmError;
use crate::hostfs::HostFs;

/// `CGROUP2_SUPER_MAGIC` from `linux/magic.h`.
pub const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// The cgroup hierarchy the host uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    /// Legacy or hybrid (v1 controllers at `/sys/fs/cgroup/<controller>`).
    V1,
    /// Unified (`/sys/fs/cgroup` is cgroup2).
    V2,
}

impl CgroupVersion {
    /// Detects the version the way runc's `IsCgroup2UnifiedMode` does: `/sys/fs/cgroup`
    /// is cgroup2 → v2; anything else (tmpfs with v1 controllers, hybrid) → v1.
    pub fn detect(fs: &dyn HostFs) -> Result<Self, CmError> {
        let magic = fs
            .fs_type(Path::new("/sys/fs/cgroup"))
            .map_err(|source| CmError::Read {
                path: "/sys/fs/cgroup".into(),
                source,
            })?;
        Ok(if magic == CGROUP2_SUPER_MAGIC {
            CgroupVersion::V2
        } else {
            CgroupVersion::V1
        })
    }
}

/// The cgroup driver (`cgroupDriver`), as reported by CRI or configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupDriver {
    /// Plain cgroupfs paths.
    Cgroupfs,
    /// systemd slices.
    Systemd,
}

impl std::str::FromStr for CgroupDriver {
    type Err = CmError;
    fn from_str(s: &str) -> Result<Self, CmError> {
        match s {
            "cgroupfs" => Ok(CgroupDriver::Cgroupfs),
            "systemd" => Ok(CgroupDriver::Systemd),
            other => Err(CmError::Config(format!(
                "unknown cgroup driver {other:?} (want cgroupfs or systemd)"
            ))),
        }
    }
}

/// A cgroup name as a list of components (upstream `CgroupName`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CgroupName(pub Vec<String>);

impl CgroupName {
    /// Parses a cgroupfs path (`/a/b`) into components (upstream `ParseCgroupfsToCgroupName`).
    pub fn from_cgroupfs(path: &str) -> Self {
        CgroupName(
            path.split('/')
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect(),
        )
    }

    /// Parses a systemd slice path into components (upstream `ParseSystemdToCgroupName`):
    /// only the last slice counts, split at `-`, `_` unescaped to `-`
    /// (`/system.slice` → `["system"]`, `/a.slice/a-b_c.slice` → `["a", "b-c"]`).
    pub fn from_systemd(name: &str) -> Self {
        let base = name
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default();
        let base = base.strip_suffix(".slice").unwrap_or(base);
        CgroupName(base.split('-').map(|p| p.replace('_', "-")).collect())
    }

    /// A name in the driver's notation, parsed (upstream `CgroupManager.CgroupName`).
    pub fn from_driver(name: &str, driver: CgroupDriver) -> Self {
        match driver {
            CgroupDriver::Cgroupfs => CgroupName::from_cgroupfs(name),
            CgroupDriver::Systemd => CgroupName::from_systemd(name),
        }
    }

    /// Go's `%q` of a `CgroupName` (a `[]string`): `["a" "b"]`, as upstream's messages
    /// print it.
    pub fn go_quoted(&self) -> String {
        let parts: Vec<String> = self.0.iter().map(|c| format!("{c:?}")).collect();
        format!("[{}]", parts.join(" "))
    }

    /// A child name.
    pub fn child(&self, component: &str) -> Self {
        let mut v = self.0.clone();
        v.push(component.to_string());
        CgroupName(v)
    }

    /// The cgroupfs form: `/a/b` (`/` for the root).
    pub fn to_cgroupfs(&self) -> String {
        format!("/{}", self.0.join("/"))
    }

    /// The systemd form: `/a.slice/a-b.slice` (upstream `CgroupName.ToSystemd`).
    pub fn to_systemd(&self) -> String {
        if self.0.is_empty() {
            return "/".to_string();
        }
        let mut out = String::new();
        let mut prefix = String::new();
        for c in &self.0 {
            let escaped = c.replace('-', "_");
            prefix = if prefix.is_empty() {
                escaped
            } else {
                format!("{prefix}-{escaped}")
            };
            out.push('/');
            out.push_str(&prefix);
            out.push_str(".slice");
        }
        out
    }

    /// The form for the given driver.
    pub fn for_driver(&self, driver: CgroupDriver) -> String {
        match driver {
            CgroupDriver::Cgroupfs => self.to_cgroupfs(),
            CgroupDriver::Systemd => self.to_systemd(),
        }
    }
}

/// The name of the node-allocatable cgroup under the cgroup root.
pub const DEFAULT_NODE_ALLOCATABLE_CGROUP_NAME: &str = "kubepods";

/// Upstream `NodeAllocatableRoot`: `<cgroupRoot>/kubepods` when `cgroupsPerQOS`, else the
/// cgroup root; render it with [`CgroupName::for_driver`].
pub fn node_allocatable_root(cgroup_root: &str, cgroups_per_qos: bool) -> CgroupName {
    let root = CgroupName::from_cgroupfs(cgroup_root);
    if cgroups_per_qos {
        root.child(DEFAULT_NODE_ALLOCATABLE_CGROUP_NAME)
    } else {
        root
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::hostfs::FakeHostFs;

    #[test]
    fn detect_versions() {
        let fs = FakeHostFs::default();
        fs.set_fs_type("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC);
        assert_eq!(CgroupVersion::detect(&fs).unwrap(), CgroupVersion::V2);
        fs.set_fs_type("/sys/fs/cgroup", 0x0102_1994); // tmpfs
        assert_eq!(CgroupVersion::detect(&fs).unwrap(), CgroupVersion::V1);
        assert!(CgroupVersion::detect(&FakeHostFs::default()).is_err());
    }

    #[test]
    fn allocatable_root_forms() {
        let r = node_allocatable_root("/", true);
        assert_eq!(r.to_cgroupfs(), "/kubepods");
        assert_eq!(r.to_systemd(), "/kubepods.slice");
        assert_eq!(
            r.child("burstable").to_systemd(),
            "/kubepods.slice/kubepods-burstable.slice"
        );
        let r = node_allocatable_root("/custom", false);
        assert_eq!(r.to_cgroupfs(), "/custom");
        assert_eq!(node_allocatable_root("", false).to_cgroupfs(), "/");
    }

    #[test]
    fn systemd_and_driver_names_parse_as_upstream() {
        let n = CgroupName::from_systemd("/system.slice");
        assert_eq!(n.0, vec!["system"]);
        assert_eq!(n.to_systemd(), "/system.slice");
        let n = CgroupName::from_systemd("/kube.slice/kube-reserved_x.slice");
        assert_eq!(n.0, vec!["kube", "reserved-x"]);
        assert_eq!(n.to_systemd(), "/kube.slice/kube-reserved_x.slice");
        assert_eq!(n.go_quoted(), r#"["kube" "reserved-x"]"#);
        let n = CgroupName::from_driver("/krs-test.slice", CgroupDriver::Cgroupfs);
        assert_eq!(n.0, vec!["krs-test.slice"]);
        assert_eq!(n.to_cgroupfs(), "/krs-test.slice");
    }

    #[test]
    fn driver_parse() {
        assert_eq!(
            "systemd".parse::<CgroupDriver>().unwrap(),
            CgroupDriver::Systemd
        );
        assert!("SYSTEMD".parse::<CgroupDriver>().is_err());
    }
}
