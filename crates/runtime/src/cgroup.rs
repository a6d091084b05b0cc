//! Pod cgroup names handed to the runtime as `cgroup_parent` (upstream
//! `pkg/kubelet/cm/pod_container_manager_linux.go` `GetPodContainerName` and
//! `cgroup_manager_linux.go` `CgroupName.ToCgroupfs/ToSystemd`).
//!
//! With `cgroupsPerQOS` the pod cgroup is `<cgroupRoot>/kubepods[/burstable|/besteffort]/pod<uid>`;
//! the systemd driver spells it as nested slices
//! (`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_with_underscores>.slice`).

use k8s_openapi::api::core::v1::Pod;

use kubelet_container::{QosClass, get_pod_qos};

/// `cgroupDriver`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupDriver {
    /// Paths in the cgroup filesystem.
    Cgroupfs,
    /// systemd slices.
    Systemd,
}

impl std::str::FromStr for CgroupDriver {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cgroupfs" => Ok(Self::Cgroupfs),
            "systemd" => Ok(Self::Systemd),
            other => Err(format!(
                "invalid cgroupDriver {other:?}: must be \"cgroupfs\" or \"systemd\""
            )),
        }
    }
}

/// Computes pod cgroup parents from `cgroupDriver`, `cgroupRoot` and `cgroupsPerQOS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodCgroupNamer {
    driver: CgroupDriver,
    root: Vec<String>,
    cgroups_per_qos: bool,
}

const KUBEPODS: &str = "kubepods";

impl PodCgroupNamer {
    /// `cgroup_root` is in the driver's notation (`/` or `/custom` for cgroupfs, `/` or
    /// `custom.slice` for systemd).
    pub fn new(driver: CgroupDriver, cgroup_root: &str, cgroups_per_qos: bool) -> Self {
        let root = match driver {
            CgroupDriver::Cgroupfs => cgroup_root
                .split('/')
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect(),
            CgroupDriver::Systemd => {
                let base = cgroup_root.rsplit('/').next().unwrap_or_default();
                let base = base.strip_suffix(".slice").unwrap_or(base);
                base.split('-')
                    .filter(|p| !p.is_empty())
                    .map(|p| p.replace('_', "-"))
                    .collect()
            }
        };
        Self {
            driver,
            root,
            cgroups_per_qos,
        }
    }

    /// The pod's cgroup in the driver's notation; empty without `cgroupsPerQOS`
    /// (the runtime then uses its default), like upstream's no-op pod container manager.
    pub fn pod_cgroup_parent(&self, pod: &Pod) -> String {
        if !self.cgroups_per_qos {
            return String::new();
        }
        let mut name = self.root.clone();
        name.push(KUBEPODS.to_string());
        match get_pod_qos(pod) {
            QosClass::Guaranteed => {}
            QosClass::Burstable => name.push("burstable".to_string()),
            QosClass::BestEffort => name.push("besteffort".to_string()),
        }
        name.push(format!(
            "pod{}",
            pod.metadata.uid.as_deref().unwrap_or_default()
        ));
        self.literal(&name)
    }

    fn literal(&self, name: &[String]) -> String {
        match self.driver {
            CgroupDriver::Cgroupfs => format!("/{}", name.join("/")),
            CgroupDriver::Systemd => {
                let parts: Vec<String> = name.iter().map(|p| p.replace('-', "_")).collect();
                // ExpandSlice: a-b-c.slice → /a.slice/a-b.slice/a-b-c.slice
                let mut out = String::new();
                for i in 1..=parts.len() {
                    out.push('/');
                    out.push_str(&parts[..i].join("-"));
                    out.push_str(".slice");
                }
                if out.is_empty() { "/".to_string() } else { out }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::qos::tests::{pod_with, resources};

    fn pod(qos: &str) -> Pod {
        let res = match qos {
            "g" => resources(
                &[("cpu", "1"), ("memory", "1Gi")],
                &[("cpu", "1"), ("memory", "1Gi")],
            ),
            "b" => resources(&[("cpu", "1")], &[]),
            _ => resources(&[], &[]),
        };
        let mut p = pod_with(vec![res]);
        p.metadata.uid = Some("1234-abcd".into());
        p
    }

    #[test]
    fn cgroupfs_names() {
        let n = PodCgroupNamer::new(CgroupDriver::Cgroupfs, "/", true);
        assert_eq!(n.pod_cgroup_parent(&pod("g")), "/kubepods/pod1234-abcd");
        assert_eq!(
            n.pod_cgroup_parent(&pod("b")),
            "/kubepods/burstable/pod1234-abcd"
        );
        assert_eq!(
            n.pod_cgroup_parent(&pod("be")),
            "/kubepods/besteffort/pod1234-abcd"
        );
        let n = PodCgroupNamer::new(CgroupDriver::Cgroupfs, "/custom/root", true);
        assert_eq!(
            n.pod_cgroup_parent(&pod("g")),
            "/custom/root/kubepods/pod1234-abcd"
        );
        let n = PodCgroupNamer::new(CgroupDriver::Cgroupfs, "/", false);
        assert_eq!(n.pod_cgroup_parent(&pod("g")), "");
    }

    #[test]
    fn systemd_names() {
        let n = PodCgroupNamer::new(CgroupDriver::Systemd, "/", true);
        assert_eq!(
            n.pod_cgroup_parent(&pod("b")),
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd.slice"
        );
        assert_eq!(
            n.pod_cgroup_parent(&pod("g")),
            "/kubepods.slice/kubepods-pod1234_abcd.slice"
        );
        assert!(
            "bogus"
                .parse::<CgroupDriver>()
                .unwrap_err()
                .contains("cgroupDriver")
        );
    }
}
