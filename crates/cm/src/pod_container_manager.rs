//! Pod-level cgroups (`pkg/kubelet/cm/pod_container_manager_linux.go`): created before the
//! pod's sandbox so the runtime finds its cgroup parent in place, with the pod's resource
//! values (upstream `ResourceConfigForPod`, computed by the caller: CPU shares, CFS quota
//! and period, memory limit, huge page limits) and `podPidsLimit` as `pids.max`
//! (`EnsureExists`); updated on an in-place resize (`SetPodCgroupConfig`, read back with
//! `GetPodCgroupConfig`); found again by walking the QoS cgroups (`GetAllPodsFromCgroups`)
//! and destroyed — leftover processes killed, directories removed — once the pod is gone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::CmError;
use crate::cgroup_manager::{CgroupManager, CgroupResource, ResourceConfig};
use crate::cgroups::{CgroupDriver, CgroupName, CgroupVersion};
use crate::hostfs::HostFs;
use crate::qos::V1_CONTROLLERS;

const CGROUP_MOUNT: &str = "/sys/fs/cgroup";
/// The prefix of a pod cgroup's last component (upstream `podCgroupNamePrefix`).
pub const POD_CGROUP_NAME_PREFIX: &str = "pod";

/// Sends `SIGKILL` to processes left in a pod cgroup (upstream `killOnePid`).
pub trait ProcessKiller: Send + Sync {
    /// Kills `pid`; a process that is already gone is not an error.
    fn kill(&self, pid: i32) -> std::io::Result<()>;
}

/// The real host.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealProcessKiller;

impl ProcessKiller for RealProcessKiller {
    fn kill(&self, pid: i32) -> std::io::Result<()> {
        match nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        ) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
            Err(e) => Err(std::io::Error::from(e)),
        }
    }
}

/// Records the processes it is asked to kill (and kills nothing).
#[derive(Debug, Default)]
pub struct FakeProcessKiller {
    killed: std::sync::Mutex<Vec<i32>>,
}

impl FakeProcessKiller {
    /// The pids asked for, in order.
    pub fn killed(&self) -> Vec<i32> {
        self.killed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl ProcessKiller for FakeProcessKiller {
    fn kill(&self, pid: i32) -> std::io::Result<()> {
        self.killed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(pid);
        Ok(())
    }
}

/// The pod cgroups of one node: where they live and what they get.
pub struct PodContainerManager {
    cgroups: CgroupManager,
    fs: Arc<dyn HostFs>,
    killer: Arc<dyn ProcessKiller>,
    version: CgroupVersion,
    driver: CgroupDriver,
    /// Guaranteed (`kubepods`), burstable and best-effort QoS cgroups.
    qos: [CgroupName; 3],
    pod_pids_limit: i64,
}

fn cgroup_err(path: &Path, reason: impl std::fmt::Display) -> CmError {
    CmError::Cgroup {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

impl PodContainerManager {
    /// The manager for the pods under `kubepods` (upstream `NodeAllocatableRoot` with
    /// `cgroupsPerQOS`); `pod_pids_limit` ≤ 0 means no limit.
    pub fn new(
        fs: Arc<dyn HostFs>,
        killer: Arc<dyn ProcessKiller>,
        version: CgroupVersion,
        driver: CgroupDriver,
        kubepods: &CgroupName,
        pod_pids_limit: i64,
    ) -> Self {
        PodContainerManager {
            cgroups: CgroupManager::new(fs.clone(), version, driver),
            fs,
            killer,
            version,
            driver,
            qos: [
                kubepods.clone(),
                kubepods.child("burstable"),
                kubepods.child("besteffort"),
            ],
            pod_pids_limit,
        }
    }

    /// systemd's D-Bus API for the systemd driver: pod cgroups become slice units
    /// (created, updated and stopped through it, `crate::systemd_cgroups`).
    pub fn with_systemd(mut self, systemd: Option<Arc<kubelet_systemd::Systemd>>) -> Self {
        self.cgroups = self.cgroups.with_systemd(systemd);
        self
    }

    fn rel(&self, name: &CgroupName) -> String {
        name.for_driver(self.driver)
            .trim_start_matches('/')
            .to_string()
    }

    /// The v1 controllers the kubelet creates pod cgroups in (those mounted).
    fn v1_controllers(&self) -> Vec<PathBuf> {
        V1_CONTROLLERS
            .iter()
            .map(|c| Path::new(CGROUP_MOUNT).join(c))
            .filter(|p| self.fs.exists(p))
            .collect()
    }

    /// Every hierarchy a pod cgroup may exist in (upstream `CgroupSubsystems.MountPoints`):
    /// each v1 hierarchy, or the unified one.
    fn mount_points(&self) -> Result<Vec<PathBuf>, CmError> {
        let base = Path::new(CGROUP_MOUNT);
        match self.version {
            CgroupVersion::V2 => Ok(vec![base.to_path_buf()]),
            CgroupVersion::V1 => Ok(self
                .fs
                .read_dir(base)
                .map_err(|e| cgroup_err(base, e))?
                .into_iter()
                .filter(|n| n != "unified")
                .map(|n| base.join(n))
                .collect()),
        }
    }

    /// Whether the pod cgroup exists in every hierarchy the kubelet manages (upstream `Exists`).
    pub fn exists(&self, name: &CgroupName) -> bool {
        let rel = self.rel(name);
        match self.version {
            CgroupVersion::V2 => self.fs.exists(&Path::new(CGROUP_MOUNT).join(rel)),
            CgroupVersion::V1 => {
                let ctrls = self.v1_controllers();
                !ctrls.is_empty() && ctrls.iter().all(|c| self.fs.exists(&c.join(&rel)))
            }
        }
    }

    /// Creates the pod cgroup unless it exists, then writes `config` and the pids limit
    /// into it (upstream `EnsureExists` → `Create`: a failed write is logged, as
    /// upstream's `Create` only logs its `Set` error).
    pub fn ensure_exists(&self, name: &CgroupName, config: &ResourceConfig) -> Result<(), CmError> {
        if self.exists(name) {
            return Ok(());
        }
        if self.driver == CgroupDriver::Systemd {
            // libcontainer's systemd manager: the slice unit, its directories, its values.
            let mut config = config.clone();
            if self.pod_pids_limit > 0 {
                config.pids_limit = Some(self.pod_pids_limit);
            }
            self.cgroups.create(name, &config)?;
            tracing::debug!(cgroup = %name.for_driver(self.driver), ?config, "Created pod cgroup");
            return Ok(());
        }
        let rel = self.rel(name);
        match self.version {
            CgroupVersion::V1 => {
                for ctrl in self.v1_controllers() {
                    let dir = ctrl.join(&rel);
                    self.fs
                        .create_dir_all(&dir)
                        .map_err(|e| cgroup_err(&dir, e))?;
                    if ctrl.ends_with("cpuset") {
                        crate::qos::inherit_cpuset(self.fs.as_ref(), &dir)?;
                    }
                }
            }
            CgroupVersion::V2 => {
                let dir = Path::new(CGROUP_MOUNT).join(&rel);
                crate::cgroup_manager::enable_controllers_above(self.fs.as_ref(), &dir)?;
                self.fs
                    .create_dir_all(&dir)
                    .map_err(|e| cgroup_err(&dir, e))?;
            }
        }
        let mut config = config.clone();
        if self.pod_pids_limit > 0 {
            config.pids_limit = Some(self.pod_pids_limit);
        }
        if let Err(e) = self.cgroups.update(name, &config) {
            tracing::error!(cgroup = %name.for_driver(self.driver), err = %e, "cgroup manager.Set failed");
        }
        tracing::debug!(cgroup = %name.for_driver(self.driver), ?config, "Created pod cgroup");
        Ok(())
    }

    /// Upstream `SetPodCgroupConfig`: writes `config` into the existing pod cgroup.
    pub fn set_pod_cgroup_config(
        &self,
        name: &CgroupName,
        config: &ResourceConfig,
    ) -> Result<(), CmError> {
        self.cgroups.update(name, config)
    }

    /// Upstream `GetPodCgroupConfig`: the pod cgroup's CPU or memory values as set now.
    pub fn get_pod_cgroup_config(
        &self,
        name: &CgroupName,
        resource: CgroupResource,
    ) -> Result<ResourceConfig, CmError> {
        self.cgroups.get_cgroup_config(name, resource)
    }

    /// The pod UID a QoS cgroup child stands for, from its directory name.
    fn pod_uid(&self, dir_name: &str) -> Option<String> {
        let component = match self.driver {
            CgroupDriver::Cgroupfs => dir_name.to_string(),
            // `kubepods-burstable-pod<uid_with_underscores>.slice` → `pod<uid>`
            // (upstream `ParseSystemdToCgroupName`).
            CgroupDriver::Systemd => {
                let unit = dir_name.strip_suffix(".slice")?;
                let last = unit.rsplit('-').next().unwrap_or(unit);
                last.replace('_', "-")
            }
        };
        let parts: Vec<&str> = component.split(POD_CGROUP_NAME_PREFIX).collect();
        match parts.as_slice() {
            [_, uid] => Some((*uid).to_string()),
            _ if component.contains(POD_CGROUP_NAME_PREFIX) => {
                tracing::info!(path = %dir_name, "Pod cgroup manager ignored unexpected cgroup because it is not a pod");
                None
            }
            _ => None,
        }
    }

    /// Every pod cgroup under the QoS cgroups, by pod UID (upstream `GetAllPodsFromCgroups`).
    pub fn get_all_pods_from_cgroups(&self) -> Result<BTreeMap<String, CgroupName>, CmError> {
        self.pods_from_cgroups_in(self.mount_points()?)
    }

    /// The pod cgroups of one hierarchy only, the `round`-th modulo their number (one on
    /// cgroup v2). Not upstream: upstream lists every hierarchy at every housekeeping (on
    /// cgroup v1 about 27 directory reads every 2 s, a tenth of an idle kubelet's CPU);
    /// housekeeping asks for one per round, so every hierarchy is listed within as many
    /// rounds as there are hierarchies and an orphaned pod cgroup is found that much later.
    pub fn get_pods_from_cgroups_round(
        &self,
        round: usize,
    ) -> Result<BTreeMap<String, CgroupName>, CmError> {
        let mounts = self.mount_points()?;
        let Some(mount) = mounts.get(round % mounts.len().max(1)) else {
            return Ok(BTreeMap::new());
        };
        self.pods_from_cgroups_in([mount.clone()])
    }

    fn pods_from_cgroups_in(
        &self,
        mounts: impl IntoIterator<Item = PathBuf>,
    ) -> Result<BTreeMap<String, CgroupName>, CmError> {
        let mut found = BTreeMap::new();
        for mount in mounts {
            for qos in &self.qos {
                let dir = mount.join(self.rel(qos));
                let children = match self.fs.read_dir(&dir) {
                    Ok(c) => c,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        return Err(CmError::Cgroup {
                            path: dir.display().to_string(),
                            reason: format!("failed to read the cgroup directory: {e}"),
                        });
                    }
                };
                for child in children {
                    if let Some(uid) = self.pod_uid(&child) {
                        let name = qos.child(&format!("{POD_CGROUP_NAME_PREFIX}{uid}"));
                        found.insert(uid, name);
                    }
                }
            }
        }
        Ok(found)
    }

    /// Every process in the cgroup and its descendants, in one hierarchy.
    fn pids_in(&self, dir: &Path, out: &mut Vec<i32>) {
        if let Ok(procs) = self.fs.read_to_string(&dir.join("cgroup.procs")) {
            out.extend(procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
        }
        for child in self.fs.read_dir(dir).unwrap_or_default() {
            self.pids_in(&dir.join(child), out);
        }
    }

    /// Upstream `tryKillingCgroupProcesses`: up to 5 rounds of `SIGKILL`.
    fn kill_cgroup_processes(&self, dirs: &[PathBuf]) -> Result<(), CmError> {
        let mut pids = Vec::new();
        for d in dirs {
            self.pids_in(d, &mut pids);
        }
        pids.sort_unstable();
        pids.dedup();
        let mut errs = Vec::new();
        let mut killed = std::collections::HashSet::new();
        for _ in 0..5 {
            errs.clear();
            for &pid in &pids {
                if killed.contains(&pid) {
                    continue;
                }
                tracing::debug!(pid, "Attempting to kill process from cgroup");
                match self.killer.kill(pid) {
                    Ok(()) => {
                        killed.insert(pid);
                    }
                    Err(e) => errs.push(format!("pid {pid}: {e}")),
                }
            }
            if errs.is_empty() {
                return Ok(());
            }
        }
        Err(CmError::Cgroup {
            path: dirs
                .first()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            reason: format!(
                "failed to kill all the processes attached to the cgroup: {}",
                errs.join(", ")
            ),
        })
    }

    /// Removes a cgroup directory and its descendants, deepest first.
    fn remove_tree(&self, dir: &Path) -> Result<(), CmError> {
        for child in self.fs.read_dir(dir).unwrap_or_default() {
            self.remove_tree(&dir.join(child))?;
        }
        match self.fs.remove_dir(dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(cgroup_err(
                dir,
                format!("failed to delete cgroup path: {e}"),
            )),
        }
    }

    /// Kills what is left in the pod cgroup and deletes it in every hierarchy (upstream
    /// `Destroy`); in a hybrid v1 host the unified hierarchy's copy too.
    pub fn destroy(&self, name: &CgroupName) -> Result<(), CmError> {
        let rel = self.rel(name);
        let mut dirs: Vec<PathBuf> = self
            .mount_points()?
            .into_iter()
            .map(|m| m.join(&rel))
            .collect();
        let unified = Path::new(CGROUP_MOUNT).join("unified");
        if self.version == CgroupVersion::V1 && self.fs.exists(&unified) {
            dirs.push(unified.join(&rel));
        }
        dirs.retain(|d| self.fs.exists(d));
        self.kill_cgroup_processes(&dirs)?;
        // The systemd driver stops the slice unit first (libcontainer's systemd `Destroy`:
        // on v2 a failure ends it there, on v1 the directories go anyway).
        let stopped = self.cgroups.stop_unit(name);
        if self.version == CgroupVersion::V2 && stopped.is_err() {
            return stopped;
        }
        for d in &dirs {
            self.remove_tree(d)?;
        }
        stopped
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::cgroups::node_allocatable_root;
    use crate::hostfs::FakeHostFs;

    fn pcm(
        fs: &Arc<FakeHostFs>,
        version: CgroupVersion,
        driver: CgroupDriver,
        limit: i64,
    ) -> (PodContainerManager, Arc<FakeProcessKiller>) {
        let killed = Arc::new(FakeProcessKiller::default());
        let m = PodContainerManager::new(
            fs.clone(),
            killed.clone(),
            version,
            driver,
            &node_allocatable_root("/", true),
            limit,
        );
        (m, killed)
    }

    fn v1_host() -> Arc<FakeHostFs> {
        let fs = Arc::new(FakeHostFs::default());
        for c in ["cpu", "memory", "pids", "devices", "unified"] {
            fs.add_dir(format!("/sys/fs/cgroup/{c}"));
        }
        fs
    }

    fn burstable_pod() -> CgroupName {
        node_allocatable_root("/", true)
            .child("burstable")
            .child("pod1234-abcd")
    }

    #[test]
    fn pod_pids_limit_written_to_pod_cgroup() {
        // cgroup v1: the pod cgroup in every managed controller, pids.max in `pids`.
        let fs = v1_host();
        let (m, _) = pcm(&fs, CgroupVersion::V1, CgroupDriver::Cgroupfs, 100);
        let pod = burstable_pod();
        assert!(!m.exists(&pod));
        m.ensure_exists(&pod, &ResourceConfig::default()).unwrap();
        assert!(m.exists(&pod));
        for c in ["cpu", "memory", "pids"] {
            assert!(
                fs.dirs().contains(&PathBuf::from(format!(
                    "/sys/fs/cgroup/{c}/kubepods/burstable/pod1234-abcd"
                ))),
                "{c}: {:?}",
                fs.dirs()
            );
        }
        assert_eq!(
            fs.writes(),
            [(
                PathBuf::from("/sys/fs/cgroup/pids/kubepods/burstable/pod1234-abcd/pids.max"),
                "100".to_string()
            )]
        );
        // Existing: nothing is written again.
        m.ensure_exists(&pod, &ResourceConfig::default()).unwrap();
        assert_eq!(fs.writes().len(), 1);

        // No limit (-1, the default, or 0): the cgroup without pids.max.
        for limit in [-1, 0] {
            let fs = v1_host();
            let (m, _) = pcm(&fs, CgroupVersion::V1, CgroupDriver::Cgroupfs, limit);
            m.ensure_exists(&pod, &ResourceConfig::default()).unwrap();
            assert!(m.exists(&pod));
            assert!(fs.writes().is_empty(), "{:?}", fs.writes());
        }

        // cgroup v2: controllers delegated down to the QoS cgroup, pids.max in the pod's.
        let fs = Arc::new(FakeHostFs::default());
        fs.add_file("/sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
        fs.add_file(
            "/sys/fs/cgroup/kubepods/cgroup.controllers",
            "cpu memory pids\n",
        );
        fs.add_file(
            "/sys/fs/cgroup/kubepods/burstable/cgroup.controllers",
            "cpu memory pids\n",
        );
        let (m, _) = pcm(&fs, CgroupVersion::V2, CgroupDriver::Cgroupfs, 42);
        m.ensure_exists(&pod, &ResourceConfig::default()).unwrap();
        let writes = fs.writes();
        assert!(writes.contains(&(
            PathBuf::from("/sys/fs/cgroup/kubepods/burstable/cgroup.subtree_control"),
            "+cpu +memory +pids".to_string()
        )));
        assert_eq!(
            writes.last().unwrap(),
            &(
                PathBuf::from("/sys/fs/cgroup/kubepods/burstable/pod1234-abcd/pids.max"),
                "42".to_string()
            )
        );

        // systemd driver: the slice names, the unit started and its TasksMax set.
        let fs = v1_host();
        let (m, _) = pcm(&fs, CgroupVersion::V1, CgroupDriver::Systemd, 7);
        let (fake, sd) = crate::systemd_cgroups::test_systemd();
        let m = m.with_systemd(sd);
        m.ensure_exists(&pod, &ResourceConfig::default()).unwrap();
        let unit = "kubepods-burstable-pod1234_abcd.slice";
        assert_eq!(fake.active(), [unit]);
        assert_eq!(
            fake.calls().last(),
            Some(&kubelet_systemd::SystemdCall::SetUnitProperties {
                name: unit.into(),
                runtime: true,
                properties: vec![kubelet_systemd::prop(
                    "TasksMax",
                    kubelet_systemd::PropValue::U64(7)
                )],
            })
        );
        assert_eq!(
            fs.writes()[0].0,
            PathBuf::from(
                "/sys/fs/cgroup/pids/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd.slice/pids.max"
            )
        );
        assert_eq!(
            m.get_all_pods_from_cgroups().unwrap(),
            BTreeMap::from([("1234-abcd".to_string(), pod.clone())])
        );
    }

    #[test]
    fn pod_cgroups_are_found_and_destroyed() {
        let fs = v1_host();
        let (m, killed) = pcm(&fs, CgroupVersion::V1, CgroupDriver::Cgroupfs, -1);
        let pod = burstable_pod();
        m.ensure_exists(&pod, &ResourceConfig::default()).unwrap();
        let guaranteed = node_allocatable_root("/", true).child("podgg-1");
        m.ensure_exists(&guaranteed, &ResourceConfig::default())
            .unwrap();
        // What the runtime adds: a container cgroup (with a process) in more hierarchies.
        let ctr = "/sys/fs/cgroup/devices/kubepods/burstable/pod1234-abcd/c0ffee";
        fs.add_dir(ctr);
        fs.add_file(format!("{ctr}/cgroup.procs"), "4242\n");
        fs.add_dir("/sys/fs/cgroup/unified/kubepods/burstable/pod1234-abcd/c0ffee");
        fs.add_dir("/sys/fs/cgroup/cpu/kubepods/besteffort/system");

        let found = m.get_all_pods_from_cgroups().unwrap();
        assert_eq!(
            found,
            BTreeMap::from([
                ("1234-abcd".to_string(), pod.clone()),
                ("gg-1".to_string(), guaranteed.clone()),
            ])
        );
        m.destroy(&pod).unwrap();
        assert_eq!(killed.killed(), [4242]);
        assert!(!m.exists(&pod));
        let left: Vec<PathBuf> = fs
            .dirs()
            .into_iter()
            .filter(|d| d.to_string_lossy().contains("pod1234"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        assert!(
            fs.removed().contains(&PathBuf::from(
                "/sys/fs/cgroup/unified/kubepods/burstable/pod1234-abcd/c0ffee"
            )),
            "{:?}",
            fs.removed()
        );
        assert_eq!(
            m.get_all_pods_from_cgroups()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["gg-1"]
        );
    }

    #[test]
    fn one_hierarchy_per_round_covers_every_hierarchy_in_turn() {
        let fs = v1_host();
        let (m, _) = pcm(&fs, CgroupVersion::V1, CgroupDriver::Cgroupfs, -1);
        // A leftover pod cgroup in a single hierarchy.
        fs.add_dir("/sys/fs/cgroup/memory/kubepods/besteffort/podleft-1");
        let all = m.get_all_pods_from_cgroups().unwrap();
        assert_eq!(all.keys().collect::<Vec<_>>(), ["left-1"]);
        let hierarchies = m.mount_points().unwrap().len();
        assert!(hierarchies > 1);
        let rounds: Vec<_> = (0..hierarchies)
            .map(|r| m.get_pods_from_cgroups_round(r).unwrap())
            .collect();
        assert_eq!(
            rounds.iter().filter(|f| !f.is_empty()).count(),
            1,
            "found in the memory hierarchy's round only"
        );
        assert!(rounds.contains(&all));
        // The rounds wrap around.
        assert_eq!(
            m.get_pods_from_cgroups_round(hierarchies).unwrap(),
            rounds[0]
        );
    }
}
