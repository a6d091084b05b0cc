//! The kubelet's use of pod-level cgroups (`pkg/kubelet/kubelet.go` `SyncPod`, the
//! `NewPodContainerManager` block, and `kubelet_pods.go` `HandlePodCleanups` /
//! `cleanupOrphanedPodCgroups`): with `cgroupsPerQOS` every pod gets its cgroup — with
//! `podPidsLimit` — before its sandbox, and loses it once no pod worker runs it any more.

use kubelet_container::events::{EventRecorder, EventType, pod_ref, reasons};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod as ApiPod, PodStatus as ApiPodStatus};
use kubelet_cm::{
    CgroupDriver, CgroupName, CgroupVersion, HostFs, PodContainerManager, ProcessKiller,
};
use kubelet_config::KubeletConfiguration;
use kubelet_container::{PodStateProvider, PodStatus, Runtime, convert_pod_status_to_running_pod};
use kubelet_podworkers::PodSyncError;
use kubelet_runtime::cgroup::PodCgroupNamer;

use super::pod_manager::pod_uid;

/// Pod cgroup names and the manager that creates and removes them.
pub struct PodCgroups {
    namer: PodCgroupNamer,
    pcm: PodContainerManager,
    pod_state: Arc<dyn PodStateProvider>,
}

/// Upstream `SyncPod`'s `firstSync`: no container of the generated API status is running.
pub fn is_first_sync(api_status: &ApiPodStatus) -> bool {
    !api_status
        .container_statuses
        .iter()
        .flatten()
        .any(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
}

/// Pod cgroups found on the host, by pod UID (taken before the pod workers are read).
pub type CgroupPods = BTreeMap<String, CgroupName>;

impl PodCgroups {
    /// `NewPodContainerManager`: with `cgroupsPerQOS`, pod cgroups under the QoS cgroups
    /// of `cgroupRoot`, with `podPidsLimit`; none otherwise (upstream's no-op manager).
    pub fn from_config(
        c: &KubeletConfiguration,
        fs: Arc<dyn HostFs>,
        killer: Arc<dyn ProcessKiller>,
        (version, driver): (CgroupVersion, CgroupDriver),
        pod_state: Arc<dyn PodStateProvider>,
    ) -> Option<Self> {
        if !c.cgroups_per_qos.unwrap_or(true) {
            return None;
        }
        let namer = PodCgroupNamer::new(driver, &c.cgroup_root, true);
        let pcm = PodContainerManager::new(
            fs,
            killer,
            version,
            driver,
            namer.kubepods(),
            c.pod_pids_limit.unwrap_or(-1),
        );
        Some(PodCgroups {
            namer,
            pcm,
            pod_state,
        })
    }

    /// The `SyncPod` step: a pod that has running containers but no cgroup (a kubelet
    /// restarted with `cgroupsPerQOS` newly on) is killed so it restarts inside its cgroup;
    /// then the cgroup is created unless the pod was killed and never restarts.
    /// `first_sync` is [`is_first_sync`] of the pod's generated API status.
    pub async fn sync_pod(
        &self,
        runtime: &dyn Runtime,
        recorder: &dyn EventRecorder,
        pod: &ApiPod,
        pod_status: &PodStatus,
        first_sync: bool,
    ) -> Result<(), PodSyncError> {
        let uid = pod_uid(pod);
        let Some(name) = self.namer.pod_cgroup_name(pod) else {
            return Ok(());
        };
        if self.pod_state.is_pod_termination_requested(uid) {
            return Ok(());
        }
        let exists = self.pcm.exists(&name);
        let mut pod_killed = false;
        if !exists && !first_sync {
            let running = convert_pod_status_to_running_pod(runtime.type_name(), pod_status);
            match runtime.kill_pod(Some(pod), &running, None).await {
                Ok(()) => pod_killed = true,
                Err(e) => tracing::error!(pod = %uid, err = %e, "KillPod failed"),
            }
        }
        let never = pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) == Some("Never");
        // A run-once pod killed above is not expected to run again: no cgroup for it.
        let skip = pod_killed && never;
        if !skip && !exists {
            self.pcm.ensure_exists(&name).map_err(|e| {
                recorder.event(
                    &pod_ref(pod),
                    EventType::Warning,
                    reasons::FAILED_TO_CREATE_POD_CONTAINER,
                    &format!("unable to ensure pod container exists: {e}"),
                );
                PodSyncError::Failed(format!(
                    "failed to ensure that the pod: {uid} cgroups exist and are correctly applied: {e}"
                ))
            })?;
        }
        Ok(())
    }

    /// The `SyncTerminatedPod` step: the pod's cgroup goes (processes left in it are
    /// killed) before the pod is reported finished, so the status manager deletes the
    /// API object only once its resources are released (upstream `pcm.Destroy` in
    /// `SyncTerminatedPod`). An error is returned so the worker retries.
    pub fn sync_terminated_pod(&self, pod: &ApiPod) -> Result<(), PodSyncError> {
        let Some(name) = self.namer.pod_cgroup_name(pod) else {
            return Ok(());
        };
        self.pcm.destroy(&name).map_err(|e| {
            PodSyncError::Failed(format!(
                "failed to destroy the cgroups of pod {}: {e}",
                pod_uid(pod)
            ))
        })?;
        tracing::debug!(pod = %pod_uid(pod), "Pod termination removed cgroups");
        Ok(())
    }

    /// The pod cgroups on the host (upstream `GetAllPodsFromCgroups`).
    pub fn cgroup_pods(&self) -> Result<CgroupPods, kubelet_cm::CmError> {
        self.pcm.get_all_pods_from_cgroups()
    }

    /// Upstream `cleanupOrphanedPodCgroups`: destroys the cgroups of pods no worker may
    /// still run. Errors are logged; the next housekeeping tries again.
    pub fn cleanup_orphaned_pod_cgroups(
        &self,
        cgroup_pods: &CgroupPods,
        possibly_running: &HashSet<String>,
    ) {
        for (uid, name) in cgroup_pods {
            if possibly_running.contains(uid) {
                continue;
            }
            tracing::debug!(pod_uid = %uid, "Orphaned pod found, removing pod cgroups");
            if let Err(e) = self.pcm.destroy(name) {
                tracing::info!(pod_uid = %uid, err = %e, "Failed to destroy orphaned pod cgroup");
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::PathBuf;

    use kubelet_cm::{FakeHostFs, FakeProcessKiller};
    use kubelet_container::fake::FakeRuntime;

    use super::*;

    struct NoTermination;
    impl PodStateProvider for NoTermination {
        fn is_pod_termination_requested(&self, _: &str) -> bool {
            false
        }
        fn should_pod_content_be_removed(&self, _: &str) -> bool {
            false
        }
        fn should_pod_runtime_be_removed(&self, _: &str) -> bool {
            false
        }
    }

    fn pod() -> ApiPod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "u-1"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}
        }))
        .unwrap()
    }

    fn pod_cgroups(extra: &str, fs: &Arc<FakeHostFs>) -> Option<PodCgroups> {
        let server = crate::kubelet::test_config::server(extra);
        PodCgroups::from_config(
            &server.config,
            fs.clone(),
            Arc::new(FakeProcessKiller::default()),
            (CgroupVersion::V1, CgroupDriver::Cgroupfs),
            Arc::new(NoTermination),
        )
    }

    /// A v1 host with the `pids` controller after one `SyncPod` of [`pod`].
    async fn synced(extra: &str) -> (Arc<FakeHostFs>, PodCgroups) {
        let fs = Arc::new(FakeHostFs::default());
        fs.add_dir("/sys/fs/cgroup/pids");
        let pc = pod_cgroups(extra, &fs).unwrap();
        let first_sync = is_first_sync(&ApiPodStatus::default());
        pc.sync_pod(
            &FakeRuntime::default(),
            &kubelet_container::NoopRecorder,
            &pod(),
            &PodStatus::default(),
            first_sync,
        )
        .await
        .unwrap();
        (fs, pc)
    }

    #[tokio::test]
    async fn pod_pids_limit_from_config_reaches_the_pod_cgroup_and_housekeeping_removes_it() {
        let (fs, pc) = synced("podPidsLimit: 64\ncgroupRoot: /custom\n").await;
        let dir = PathBuf::from("/sys/fs/cgroup/pids/custom/kubepods/besteffort/podu-1");
        assert_eq!(fs.writes(), [(dir.join("pids.max"), "64".to_string())]);

        let found = pc.cgroup_pods().unwrap();
        assert_eq!(found.keys().collect::<Vec<_>>(), ["u-1"]);
        pc.cleanup_orphaned_pod_cgroups(&found, &HashSet::from(["u-1".to_string()]));
        assert!(
            fs.removed().is_empty(),
            "a possibly running pod keeps its cgroup"
        );
        pc.cleanup_orphaned_pod_cgroups(&found, &HashSet::new());
        assert_eq!(fs.removed(), std::slice::from_ref(&dir));

        // SyncTerminatedPod removes the cgroup of a terminated pod at once.
        let (fs, pc) = synced("cgroupRoot: /custom\n").await;
        pc.sync_terminated_pod(&pod()).unwrap();
        assert_eq!(fs.removed(), [dir]);

        // The default (-1): a pod cgroup without a pids limit.
        let (fs, _) = synced("").await;
        assert!(fs.writes().is_empty(), "{:?}", fs.writes());
        assert_eq!(fs.dirs().len(), 2, "{:?}", fs.dirs());

        // Without cgroupsPerQOS there are no pod cgroups.
        assert!(pod_cgroups("cgroupsPerQOS: false\nenforceNodeAllocatable: []\n", &fs).is_none());
    }
}
