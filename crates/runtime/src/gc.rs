//! Container, sandbox and log-directory garbage collection (upstream `kuberuntime_gc.go`).
//!
//! Dead containers are grouped per (pod UID, container name) "evict unit"; deleted pods lose
//! all of them, live pods keep `maxPerPodContainer` (1) newest per unit. Sandboxes without
//! containers that are not ready go when their pod is gone or a newer sandbox exists.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use kubelet_container::{ContainerGcPolicy, RuntimeError};
use kubelet_cri::v1::{ContainerState, PodSandboxState};

use crate::actions::KillReason;
use crate::labels::container_info_from_labels;
use crate::manager::KubeGenericRuntimeManager;

#[derive(Clone, Debug)]
struct GcContainer {
    id: String,
    name: String,
    created_at: i64,
    unknown: bool,
}

#[derive(Clone, Debug)]
struct GcSandbox {
    id: String,
    created_at: i64,
    active: bool,
}

type EvictUnits = BTreeMap<(String, String), Vec<GcContainer>>;

fn count(units: &EvictUnits) -> usize {
    units.values().map(Vec::len).sum()
}

impl KubeGenericRuntimeManager {
    /// `GarbageCollect`: containers, then sandboxes, then pod log directories.
    pub(crate) async fn garbage_collect_impl(
        &self,
        policy: &ContainerGcPolicy,
        all_sources_ready: bool,
        evict_non_deleted_pods: bool,
    ) -> Result<(), RuntimeError> {
        let mut errors = Vec::new();
        if let Err(e) = self
            .evict_containers(policy, all_sources_ready, evict_non_deleted_pods)
            .await
        {
            errors.push(e.to_string());
        }
        if let Err(e) = self.evict_sandboxes(evict_non_deleted_pods).await {
            errors.push(e.to_string());
        }
        self.evict_pod_logs_directories(all_sources_ready).await;
        if errors.is_empty() {
            Ok(())
        } else {
            Err(RuntimeError::Invalid(errors.join("; ")))
        }
    }

    fn pod_removable(&self, uid: &str, evict_non_deleted_pods: bool) -> bool {
        self.pod_state.should_pod_content_be_removed(uid)
            || (evict_non_deleted_pods && self.pod_state.should_pod_runtime_be_removed(uid))
    }

    /// `evictableContainers`: not running and created at least `min_age` ago.
    async fn evictable_containers(
        &self,
        min_age: std::time::Duration,
    ) -> Result<EvictUnits, RuntimeError> {
        let newest = jiff::Timestamp::now().as_nanosecond()
            - i128::try_from(min_age.as_nanos()).unwrap_or(i128::MAX);
        let mut units = EvictUnits::new();
        for c in self.list_containers(true).await? {
            if c.state == ContainerState::ContainerRunning as i32
                || i128::from(c.created_at) > newest
            {
                continue;
            }
            let l = container_info_from_labels(&c.labels);
            let name = c
                .metadata
                .as_ref()
                .map(|m| m.name.clone())
                .unwrap_or_default();
            units
                .entry((l.pod_uid, name.clone()))
                .or_default()
                .push(GcContainer {
                    id: c.id.clone(),
                    name,
                    created_at: c.created_at,
                    unknown: c.state == ContainerState::ContainerUnknown as i32,
                });
        }
        Ok(units)
    }

    /// `removeOldestN`: removes the `n` oldest; returns the kept ones (newest first).
    async fn remove_oldest_n(
        &self,
        mut containers: Vec<GcContainer>,
        n: usize,
    ) -> Vec<GcContainer> {
        containers.sort_by_key(|c| std::cmp::Reverse(c.created_at));
        let keep = containers.len().saturating_sub(n);
        for c in containers.iter().skip(keep).rev() {
            if c.unknown {
                let id = self.id(&c.id);
                let msg = "Container is in unknown state, try killing it before removal";
                if let Err(e) = self
                    .kill_container(None, &id, &c.name, msg, KillReason::Unknown, None)
                    .await
                {
                    tracing::error!(container_id = %c.id, error = %e, "Failed to stop container");
                    continue;
                }
            }
            if let Err(e) = self.remove_container(&c.id).await {
                tracing::error!(container_id = %c.id, error = %e, "Failed to remove container");
            }
        }
        containers.truncate(keep);
        containers
    }

    async fn enforce_max_per_unit(&self, units: &mut EvictUnits, max: usize) {
        for containers in units.values_mut() {
            let excess = containers.len().saturating_sub(max);
            if excess > 0 {
                *containers = self
                    .remove_oldest_n(std::mem::take(containers), excess)
                    .await;
            }
        }
    }

    /// `evictContainers`.
    async fn evict_containers(
        &self,
        policy: &ContainerGcPolicy,
        all_sources_ready: bool,
        evict_non_deleted: bool,
    ) -> Result<(), RuntimeError> {
        let mut units = self.evictable_containers(policy.min_age).await?;
        if all_sources_ready {
            let removable: Vec<_> = units
                .keys()
                .filter(|(uid, _)| self.pod_removable(uid, evict_non_deleted))
                .cloned()
                .collect();
            for key in removable {
                if let Some(all) = units.remove(&key) {
                    let n = all.len();
                    self.remove_oldest_n(all, n).await;
                }
            }
        }
        if let Ok(max) = usize::try_from(policy.max_per_pod_container) {
            self.enforce_max_per_unit(&mut units, max).await;
        }
        if let Ok(max) = usize::try_from(policy.max_containers)
            && count(&units) > max
            && !units.is_empty()
        {
            let per_unit = (max / units.len()).max(1);
            self.enforce_max_per_unit(&mut units, per_unit).await;
            let total = count(&units);
            if total > max {
                let flat: Vec<GcContainer> = units.into_values().flatten().collect();
                self.remove_oldest_n(flat, total - max).await;
            }
        }
        Ok(())
    }

    /// `evictSandboxes`: not-ready sandboxes without containers, of deleted pods or
    /// superseded by a newer sandbox.
    async fn evict_sandboxes(&self, evict_non_deleted: bool) -> Result<(), RuntimeError> {
        let with_containers: HashSet<String> = self
            .list_containers(true)
            .await?
            .into_iter()
            .map(|c| c.pod_sandbox_id)
            .collect();
        let mut by_pod: BTreeMap<String, Vec<GcSandbox>> = BTreeMap::new();
        for s in self.list_sandboxes(true).await? {
            let Some(m) = s.metadata.as_ref() else {
                continue;
            };
            let active =
                s.state == PodSandboxState::SandboxReady as i32 || with_containers.contains(&s.id);
            by_pod.entry(m.uid.clone()).or_default().push(GcSandbox {
                id: s.id.clone(),
                created_at: s.created_at,
                active,
            });
        }
        for (uid, mut sandboxes) in by_pod {
            sandboxes.sort_by_key(|s| std::cmp::Reverse(s.created_at));
            let keep = if self.pod_removable(&uid, evict_non_deleted) {
                0
            } else {
                1
            };
            for s in sandboxes.iter().skip(keep).filter(|s| !s.active) {
                self.remove_sandbox(&s.id).await;
            }
        }
        Ok(())
    }

    async fn remove_sandbox(&self, id: &str) {
        if let Err(e) = self.runtime.stop_pod_sandbox(id).await
            && !e.is_not_found()
        {
            tracing::error!(sandbox_id = id, error = %e, "Failed to stop sandbox before removing");
            return;
        }
        if let Err(e) = self.runtime.remove_pod_sandbox(id).await
            && !e.is_not_found()
        {
            tracing::error!(sandbox_id = id, error = %e, "Failed to remove sandbox");
        }
    }

    /// `evictPodLogsDirectories`: log directories of removed pods, and dangling legacy symlinks
    /// of exited or vanished containers.
    async fn evict_pod_logs_directories(&self, all_sources_ready: bool) {
        let root = &self.config.pod_logs_dir;
        if all_sources_ready {
            for name in self.os.read_dir(root).unwrap_or_default() {
                let uid = name.rsplit('_').next().unwrap_or_default();
                if !self.pod_state.should_pod_content_be_removed(uid) {
                    continue;
                }
                let dir = root.join(&name);
                if let Err(e) = self.os.remove_dir_all(&dir) {
                    tracing::error!(path = %dir.display(), error = %e, "Failed to remove pod logs directory");
                }
            }
        }
        let legacy = &self.config.legacy_container_logs_dir;
        for name in self
            .os
            .read_dir(legacy)
            .unwrap_or_default()
            .into_iter()
            .filter(|n| n.ends_with(".log"))
        {
            let link = legacy.join(&name);
            if self.os.exists(&link) {
                continue;
            }
            if let Some(id) = container_id_from_legacy_symlink(&link) {
                match self.runtime.container_status(&id, false).await {
                    Ok(resp)
                        if resp
                            .status
                            .as_ref()
                            .is_some_and(|s| s.state != ContainerState::ContainerExited as i32) =>
                    {
                        continue;
                    }
                    Err(e) if !e.is_not_found() => continue,
                    _ => {}
                }
            }
            if let Err(e) = self.os.remove_file(&link) {
                tracing::error!(path = %link.display(), error = %e, "Failed to remove container log dead symlink");
            }
        }
    }
}

/// `getContainerIDFromLegacyLogSymlink`: the 64-hex ID after the last `-`.
fn container_id_from_legacy_symlink(link: &Path) -> Option<String> {
    let name = link.file_name()?.to_str()?.strip_suffix(".log")?;
    let id = name.rsplit('-').next()?;
    (id.len() == 64).then(|| id.to_string())
}
