//! Pod cgroup names handed to the runtime as `cgroup_parent` (upstream
//! `pkg/kubelet/cm/pod_container_manager_linux.go` `GetPodContainerName` and
//! `cgroup_manager_linux.go` `CgroupName.ToCgroupfs/ToSystemd`).
//!
//! With `cgroupsPerQOS` the pod cgroup is `<cgroupRoot>/kubepods[/burstable|/besteffort]/pod<uid>`;
//! the systemd driver spells it as nested slices
//! (`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_with_underscores>.slice`).
//! Names are built and rendered with `kubelet-cm`'s [`CgroupName`].

use k8s_openapi::api::core::v1::Pod;

use kubelet_container::{QosClass, get_pod_qos};

/// The cgroup driver: `kubelet-cm`'s, so pod cgroups and the QoS cgroups
/// `kubelet-cm` creates are always named by the same rules.
pub use kubelet_cm::CgroupDriver;
use kubelet_cm::{CgroupName, node_allocatable_root};

/// Computes pod cgroup parents from `cgroupDriver`, `cgroupRoot` and `cgroupsPerQOS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodCgroupNamer {
    driver: CgroupDriver,
    /// `<cgroupRoot>/kubepods` (upstream `NodeAllocatableRoot`).
    kubepods: CgroupName,
    cgroups_per_qos: bool,
}

impl PodCgroupNamer {
    /// `cgroup_root` is in cgroupfs notation for both drivers (`/`, `/custom`), as
    /// upstream parses `--cgroup-root` (`ParseCgroupfsToCgroupName`).
    pub fn new(driver: CgroupDriver, cgroup_root: &str, cgroups_per_qos: bool) -> Self {
        Self {
            driver,
            kubepods: node_allocatable_root(cgroup_root, true),
            cgroups_per_qos,
        }
    }

    /// The pod's cgroup in the driver's notation; empty without `cgroupsPerQOS`
    /// (the runtime then uses its default), like upstream's no-op pod container manager.
    pub fn pod_cgroup_parent(&self, pod: &Pod) -> String {
        self.pod_cgroup_name(pod)
            .map(|name| name.for_driver(self.driver))
            .unwrap_or_default()
    }

    /// The pod's cgroup (upstream `GetPodContainerName`): `<qos cgroup>/pod<uid>`;
    /// none without `cgroupsPerQOS`.
    pub fn pod_cgroup_name(&self, pod: &Pod) -> Option<CgroupName> {
        if !self.cgroups_per_qos {
            return None;
        }
        let qos_parent = match get_pod_qos(pod) {
            QosClass::Guaranteed => self.kubepods.clone(),
            QosClass::Burstable => self.kubepods.child("burstable"),
            QosClass::BestEffort => self.kubepods.child("besteffort"),
        };
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        Some(qos_parent.child(&format!("pod{uid}")))
    }

    /// `<cgroupRoot>/kubepods`, the parent of the QoS cgroups.
    pub fn kubepods(&self) -> &CgroupName {
        &self.kubepods
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
        let n = PodCgroupNamer::new(CgroupDriver::Systemd, "/custom/root", true);
        assert_eq!(
            n.pod_cgroup_parent(&pod("be")),
            "/custom.slice/custom-root.slice/custom-root-kubepods.slice/custom-root-kubepods-besteffort.slice/custom-root-kubepods-besteffort-pod1234_abcd.slice"
        );
    }
}
