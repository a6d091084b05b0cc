//! The kubelet's and the system's own cgroups (`kubeletCgroups`, `systemCgroups`): upstream
//! `pkg/kubelet/cm/container_manager_linux.go` — `setupNode`'s system containers
//! (`newSystemCgroups`, `ensureSystemCgroups`, `ensureProcessInContainerWithOOMScore`,
//! `getContainer`, `isKernelPid`, `isProcessRunningInHost`) and the two loops `Start` runs
//! for them (every minute each system container's ensure-state function; without
//! `kubeletCgroups`, every 5 minutes the kubelet's OOM score and the discovery of its own
//! cgroup), with `pkg/kubelet/cm/util` `GetPids` (the processes directly in the root
//! cgroup: v1's `devices` hierarchy, or the unified one).
//!
//! A system container is always a cgroupfs cgroup, whatever the cgroup driver (upstream's
//! `createManager` builds libcontainer's fs manager, `Systemd: false`). Moving a process
//! into it is that manager's `Apply` without resources: the directory in every mounted
//! hierarchy except `devices` (`SkipDevices`; a new v1 cpuset cgroup gets its parent's CPUs
//! and memory nodes), the pid written to each `cgroup.procs`.

use std::path::{Path, PathBuf};

use crate::CmError;
use crate::cgroups::CgroupVersion;
use crate::hostfs::HostFs;

const CGROUP_MOUNT: &str = "/sys/fs/cgroup";

/// How often `Start` runs the system containers' ensure-state functions.
pub const ENSURE_STATE_PERIOD: std::time::Duration = std::time::Duration::from_secs(60);
/// How often `Start` runs the periodic tasks (the kubelet's OOM score and cgroup, when
/// `kubeletCgroups` is not set).
pub const PERIODIC_TASKS_PERIOD: std::time::Duration = std::time::Duration::from_secs(300);

/// One system container (upstream `systemContainer` with its fs manager).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemCgroup {
    /// The absolute cgroupfs name (`kubeletCgroups`, `systemCgroups`).
    pub name: String,
}

impl SystemCgroup {
    /// The cgroup's directories: one per mounted v1 hierarchy but `devices`, or the
    /// unified one.
    fn dirs(&self, fs: &dyn HostFs, version: CgroupVersion) -> Result<Vec<PathBuf>, CmError> {
        let rel = self.name.trim_start_matches('/');
        let base = Path::new(CGROUP_MOUNT);
        match version {
            CgroupVersion::V2 => Ok(vec![base.join(rel)]),
            CgroupVersion::V1 => Ok(fs
                .read_dir(base)
                .map_err(|e| CmError::Read {
                    path: base.display().to_string(),
                    source: e,
                })?
                .into_iter()
                .filter(|h| h != "unified" && h != "devices")
                .map(|h| base.join(h).join(rel))
                .collect()),
        }
    }

    /// libcontainer's fs manager `Apply(pid)`: creates the cgroup where missing and moves
    /// `pid` into it.
    pub fn apply(&self, fs: &dyn HostFs, version: CgroupVersion, pid: u32) -> Result<(), CmError> {
        for dir in self.dirs(fs, version)? {
            let err = |reason: String| CmError::Cgroup {
                path: dir.display().to_string(),
                reason,
            };
            fs.create_dir_all(&dir).map_err(|e| err(e.to_string()))?;
            if version == CgroupVersion::V1
                && dir.starts_with(Path::new(CGROUP_MOUNT).join("cpuset"))
            {
                crate::qos::inherit_cpuset(fs, &dir)?;
            }
            fs.write(&dir.join("cgroup.procs"), &pid.to_string())
                .map_err(|e| err(format!("failed to write {pid} to cgroup.procs: {e}")))?;
        }
        Ok(())
    }
}

/// `setupNode`'s system containers and `Start`'s loops over them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemContainers {
    /// `systemCgroups`: every non-kernel process of the root cgroup is moved there.
    pub system: Option<SystemCgroup>,
    /// `kubeletCgroups`: the kubelet is kept there.
    pub kubelet: Option<SystemCgroup>,
    /// The kubelet's `oomScoreAdj`.
    pub kubelet_oom_score_adj: i32,
}

impl SystemContainers {
    /// `setupNode`: `systemCgroups` may not be the root (upstream's error).
    pub fn new(
        system_cgroups: &str,
        kubelet_cgroups: &str,
        kubelet_oom_score_adj: i32,
    ) -> Result<Self, CmError> {
        if system_cgroups == "/" {
            return Err(CmError::Config(
                "system container cannot be root (\"/\")".to_string(),
            ));
        }
        let named = |n: &str| {
            (!n.is_empty()).then(|| SystemCgroup {
                name: n.to_string(),
            })
        };
        Ok(SystemContainers {
            system: named(system_cgroups),
            kubelet: named(kubelet_cgroups),
            kubelet_oom_score_adj,
        })
    }

    /// Whether `Start` runs the every-minute loop (a system container is configured).
    pub fn has_ensure_state_funcs(&self) -> bool {
        self.system.is_some() || self.kubelet.is_some()
    }

    /// One pass of `Start`'s every-minute loop: each system container's ensure-state
    /// function, errors logged with upstream's message ("Failed to ensure state").
    pub fn ensure_state(&self, fs: &dyn HostFs, version: CgroupVersion, kubelet_pid: u32) {
        if let Some(system) = &self.system
            && let Err(e) = ensure_system_cgroups(fs, version, system)
        {
            tracing::info!(container_name = %system.name, err = %e, "Failed to ensure state");
        }
        if let Some(kubelet) = &self.kubelet
            && let Err(e) = ensure_process_in_container_with_oom_score(
                fs,
                version,
                kubelet_pid,
                self.kubelet_oom_score_adj,
                Some(kubelet),
            )
        {
            tracing::info!(container_name = %kubelet.name, err = %e, "Failed to ensure state");
        }
    }

    /// One pass of `Start`'s 5-minute periodic task when `kubeletCgroups` is not set: the
    /// kubelet's OOM score, then its cgroup (upstream stores it as `KubeletCgroupsName`,
    /// which the summary's `kubelet` system container then reads). `None` when
    /// `kubeletCgroups` is set (no such task) or either step failed (logged as upstream).
    pub fn periodic_task(
        &self,
        fs: &dyn HostFs,
        version: CgroupVersion,
        kubelet_pid: u32,
    ) -> Option<String> {
        if self.kubelet.is_some() {
            return None;
        }
        if let Err(e) = ensure_process_in_container_with_oom_score(
            fs,
            version,
            kubelet_pid,
            self.kubelet_oom_score_adj,
            None,
        ) {
            tracing::error!(err = %e, "Failed to ensure process in container with oom score");
            return None;
        }
        match get_container(fs, version, kubelet_pid) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::error!(err = %e, "Failed to find cgroups of kubelet");
                None
            }
        }
    }
}

/// `cmutil.GetPids("/")`: the processes directly in the root cgroup (v1: of the `devices`
/// hierarchy).
fn root_pids(fs: &dyn HostFs, version: CgroupVersion) -> Result<Vec<u32>, CmError> {
    let base = Path::new(CGROUP_MOUNT);
    let procs = match version {
        CgroupVersion::V2 => base.join("cgroup.procs"),
        CgroupVersion::V1 => base.join("devices").join("cgroup.procs"),
    };
    let text = fs.read_to_string(&procs).map_err(|e| CmError::Read {
        path: procs.display().to_string(),
        source: e,
    })?;
    Ok(text
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .collect())
}

/// `isKernelPid`: kernel threads have no executable.
fn is_kernel_pid(fs: &dyn HostFs, pid: u32) -> bool {
    matches!(
        fs.read_link(&PathBuf::from(format!("/proc/{pid}/exe"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound
    )
}

/// `ensureSystemCgroups("/", manager)`: moves every non-kernel process but init out of the
/// root cgroup into `system`, at most 11 rounds; the last move error is returned.
pub fn ensure_system_cgroups(
    fs: &dyn HostFs,
    version: CgroupVersion,
    system: &SystemCgroup,
) -> Result<(), CmError> {
    let mut final_err = None;
    for _ in 0..=10 {
        let all = match root_pids(fs, version) {
            Ok(p) => p,
            Err(e) => {
                final_err = Some(CmError::Cgroup {
                    path: "/".into(),
                    reason: format!("failed to list PIDs for root: {e}"),
                });
                continue;
            }
        };
        let pids: Vec<u32> = all
            .into_iter()
            .filter(|p| *p != 1 && !is_kernel_pid(fs, *p))
            .collect();
        if pids.is_empty() {
            return Ok(());
        }
        tracing::debug!(?pids, "Moving non-kernel processes");
        for pid in pids {
            if let Err(e) = system.apply(fs, version, pid) {
                final_err = Some(CmError::Cgroup {
                    path: system.name.clone(),
                    reason: format!(
                        "failed to move PID {pid} into the system container {:?}: {e}",
                        system.name
                    ),
                });
            }
        }
    }
    final_err.map_or(Ok(()), Err)
}

/// `isProcessRunningInHost`: the process shares init's pid namespace.
/// Upstream's errors (the OS error added).
fn is_process_running_in_host(fs: &dyn HostFs, pid: u32) -> Result<bool, CmError> {
    let ns = |p: u32, what: String| {
        fs.read_link(&PathBuf::from(format!("/proc/{p}/ns/pid")))
            .map_err(|e| CmError::Config(format!("failed to find pid namespace of {what}: {e}")))
    };
    let init = ns(1, "init process".into())?;
    Ok(init == ns(pid, format!("process {pid}"))?)
}

/// `getContainer`: the cgroup of `pid` — v2: the unified one; v1: the `cpu` one, which
/// must equal the `memory` one, or the `name=systemd` one when that hierarchy exists
/// (upstream logs when CPU or memory accounting is not on for it).
pub fn get_container(fs: &dyn HostFs, version: CgroupVersion, pid: u32) -> Result<String, CmError> {
    let path = PathBuf::from(format!("/proc/{pid}/cgroup"));
    let table = fs.read_to_string(&path).map_err(|e| CmError::Read {
        path: path.display().to_string(),
        source: e,
    })?;
    container_of(&table, version).map_err(|reason| CmError::Parse {
        path: path.display().to_string(),
        reason,
    })
}

/// [`get_container`] on the text of `/proc/<pid>/cgroup`.
pub fn container_of(table: &str, version: CgroupVersion) -> Result<String, String> {
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
    if version == CgroupVersion::V2 {
        return of("").ok_or_else(|| "no unified cgroup".to_string());
    }
    let cpu = of("cpu").ok_or_else(|| "cpu cgroup not found".to_string())?;
    let memory = of("memory").ok_or_else(|| "memory cgroup not found".to_string())?;
    if cpu != memory {
        return Err(format!(
            "cpu and memory cgroup hierarchy not unified.  cpu: {cpu}, memory: {memory}"
        ));
    }
    if let Some(systemd) = of("name=systemd") {
        if systemd != cpu {
            tracing::info!(cgroup = %systemd, "CPUAccounting not enabled for process");
            tracing::info!(cgroup = %systemd, "MemoryAccounting not enabled for process");
        }
        return Ok(systemd);
    }
    Ok(cpu)
}

/// `ensureProcessInContainerWithOOMScore`: a process of the host's pid namespace is moved
/// into `manager` (when given and not there yet) and gets `oom_score_adj`; the errors of
/// both steps together.
pub fn ensure_process_in_container_with_oom_score(
    fs: &dyn HostFs,
    version: CgroupVersion,
    pid: u32,
    oom_score_adj: i32,
    manager: Option<&SystemCgroup>,
) -> Result<(), CmError> {
    if !is_process_running_in_host(fs, pid)? {
        tracing::debug!(pid, "PID is not running in the host namespace");
        return Ok(());
    }
    let mut errs = Vec::new();
    if let Some(m) = manager {
        let cont = match get_container(fs, version, pid) {
            Ok(c) => c,
            Err(e) => {
                errs.push(format!("failed to find container of PID {pid}: {e}"));
                String::new()
            }
        };
        if cont != m.name
            && let Err(e) = m.apply(fs, version, pid)
        {
            errs.push(format!(
                "failed to move PID {pid} (in {cont:?}) to {:?}: {e}",
                m.name
            ));
        }
    }
    if let Err(e) = crate::oom::apply_oom_score_adj(fs, pid, oom_score_adj) {
        errs.push(format!(
            "failed to apply oom score {oom_score_adj} to PID {pid}: {e}"
        ));
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(CmError::Config(errs.remove(0))),
        _ => Err(CmError::Config(format!("[{}]", errs.join(", ")))),
    }
}

#[cfg(test)]
#[path = "system_containers_tests.rs"]
mod tests;
