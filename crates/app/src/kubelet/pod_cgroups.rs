//! The kubelet's use of pod-level and QoS cgroups (`pkg/kubelet/kubelet.go` `SyncPod`, the
//! `NewPodContainerManager` block; `kubelet_pods.go` `killPod`, `HandlePodCleanups` /
//! `cleanupOrphanedPodCgroups`; `cm/qos_container_manager_linux.go` `Start`'s periodic
//! `UpdateCgroups`): with `cgroupsPerQOS` every pod gets its cgroup — with upstream's
//! `ResourceConfigForPod` values and `podPidsLimit` — before its sandbox, and loses it once
//! no pod worker runs it any more; the QoS cgroups follow the active pods (Burstable CPU
//! shares, `qosReserved` memory) when a pod cgroup is created, after a pod is killed, and
//! every minute.

use kubelet_container::events::{EventRecorder, EventType, pod_ref, reasons};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use k8s_openapi::api::core::v1::{Pod as ApiPod, PodStatus as ApiPodStatus};
use kubelet_cm::{
    CgroupDriver, CgroupManager, CgroupName, CgroupResource, CgroupVersion, HostFs,
    PodContainerManager, ProcessKiller, QosContainerManager, QosMemoryRequests, QosMemoryReserve,
    QosUpdate, ResourceConfig,
};
use kubelet_config::KubeletConfiguration;
use kubelet_container::{PodStateProvider, PodStatus, Runtime, convert_pod_status_to_running_pod};
use kubelet_podworkers::PodSyncError;
use kubelet_runtime::cgroup::PodCgroupNamer;
use kubelet_runtime::internal_lifecycle::{CpuAllocationReader, NoExclusiveCpus};
use kubelet_runtime::resources::{qos_pod_requests, resource_config_for_pod};

use super::pod_manager::pod_uid;
use super::{Kubelet, KubeletDeps};

/// The active pods (upstream `GetActivePods`), read when the QoS cgroups are updated.
type ActivePodsFn = Box<dyn Fn() -> Vec<Arc<ApiPod>> + Send + Sync>;

/// Pod cgroup names and the managers that create, update and remove them.
pub struct PodCgroups {
    namer: PodCgroupNamer,
    pcm: PodContainerManager,
    qos: QosContainerManager,
    pod_state: Arc<dyn PodStateProvider>,
    /// `cpuCFSQuota`.
    enforce_cpu_limits: bool,
    /// `cpuCFSQuotaPeriod` in microseconds.
    cpu_cfs_quota_period_us: u64,
    /// `qosReserved` memory, only with the `QOSReserved` gate on.
    qos_reserved: Option<QosReservedMemory>,
    /// MemoryQoS (gate on, cgroup v2): `memory.min` of new pod cgroups and the QoS cgroups.
    memory_qos: bool,
    /// Pods with exclusive CPUs get no CFS quota (`DisableCPUQuotaWithExclusiveCPUs`).
    exclusive_cpus: Arc<dyn CpuAllocationReader>,
    active_pods: OnceLock<ActivePodsFn>,
    /// Calls of [`PodCgroups::cgroup_pods`], to list the hierarchies in turn.
    housekeeping_round: AtomicUsize,
}

/// `qosReserved` memory as upstream's `UpdateCgroups` applies it with the `QOSReserved`
/// feature gate (alpha, off by default: `qosReserved` then changes nothing, as upstream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QosReservedMemory {
    /// The `memory` percentage.
    pub percent: i64,
    /// Node allocatable memory, absolute (capacity minus kube- and system-reserved,
    /// upstream `GetNodeAllocatableAbsolute`).
    pub allocatable: i64,
}

impl QosReservedMemory {
    /// From the configuration: `None` without the gate or without a `memory` entry.
    pub fn from_deps(deps: &KubeletDeps<'_>) -> Option<Self> {
        let gate = deps
            .server
            .feature_gates
            .enabled(kubelet_features::gates::QOS_RESERVED);
        let percent = *deps.node_config.qos_reserved.get("memory")?;
        let (_, allocatable) = deps.node_config.pods_cgroup_limits(&deps.machine);
        gate.then_some(QosReservedMemory {
            percent,
            allocatable,
        })
    }
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
    /// systemd's D-Bus API for the systemd driver: the pod and QoS cgroups are slice
    /// units, created, updated and stopped through it.
    pub fn with_systemd(mut self, systemd: Option<Arc<kubelet_systemd::Systemd>>) -> Self {
        self.qos = self.qos.with_systemd(systemd.clone());
        self.pcm = self.pcm.with_systemd(systemd);
        self
    }

    /// `NewPodContainerManager`: with `cgroupsPerQOS`, pod cgroups under the QoS cgroups
    /// of `cgroupRoot`, with `podPidsLimit`, `cpuCFSQuota` and `cpuCFSQuotaPeriod`; none
    /// otherwise (upstream's no-op manager).
    pub fn from_config(
        c: &KubeletConfiguration,
        fs: Arc<dyn HostFs>,
        killer: Arc<dyn ProcessKiller>,
        (version, driver): (CgroupVersion, CgroupDriver),
        pod_state: Arc<dyn PodStateProvider>,
        qos_reserved: Option<QosReservedMemory>,
    ) -> Option<Self> {
        if !c.cgroups_per_qos.unwrap_or(true) {
            return None;
        }
        let namer = PodCgroupNamer::new(driver, &c.cgroup_root, true);
        let qos = QosContainerManager::new(
            CgroupManager::new(fs.clone(), version, driver),
            namer.kubepods(),
        );
        let pcm = PodContainerManager::new(
            fs,
            killer,
            version,
            driver,
            namer.kubepods(),
            c.pod_pids_limit.unwrap_or(-1),
        );
        let period = c
            .cpu_cfs_quota_period
            .and_then(|d| d.as_std())
            .map_or(100_000, |d| u64::try_from(d.as_micros()).unwrap_or(100_000));
        Some(PodCgroups {
            namer,
            pcm,
            qos,
            pod_state,
            enforce_cpu_limits: c.cpu_cfs_quota.unwrap_or(true),
            cpu_cfs_quota_period_us: period,
            qos_reserved,
            memory_qos: false,
            exclusive_cpus: Arc::new(NoExclusiveCpus),
            active_pods: OnceLock::new(),
            housekeeping_round: AtomicUsize::new(0),
        })
    }

    /// MemoryQoS (upstream: the `MemoryQoS` gate on a cgroup v2 host): new pod cgroups get
    /// `memory.min` = the pod's memory requests, the QoS cgroups the sums of theirs.
    pub fn with_memory_qos(mut self, on: bool) -> Self {
        self.memory_qos = on;
        self
    }

    /// A pod with exclusive CPUs gets a pod cgroup without CFS quota (upstream
    /// `EnsureExists` and the resize's `ResourceConfigForPod` with
    /// `DisableCPUQuotaWithExclusiveCPUs`); the kubelet sets it only with that gate on.
    pub fn with_cpu_allocation_reader(mut self, reader: Arc<dyn CpuAllocationReader>) -> Self {
        self.exclusive_cpus = reader;
        self
    }

    /// `enforceCPULimits` for `pod`: `cpuCFSQuota`, unless the pod has exclusive CPUs.
    fn enforce_cpu_limits(&self, pod: &ApiPod) -> bool {
        if !self.enforce_cpu_limits {
            return false;
        }
        if self.exclusive_cpus.pod_has_exclusive_cpus(pod) {
            tracing::debug!(pod = %pod_uid(pod), "Disabled CFS quota");
            return false;
        }
        true
    }

    /// Where [`Self::update_qos_cgroups`] reads the active pods from (upstream passes
    /// `GetActivePods` to the container manager's `Start`); until set, there are none.
    pub fn set_active_pods(&self, f: ActivePodsFn) {
        let _ = self.active_pods.set(f);
    }

    /// Upstream `UpdateQOSCgroups`: the QoS cgroups' values from the active pods.
    pub fn update_qos_cgroups(&self) -> Result<(), kubelet_cm::CmError> {
        let pods = self.active_pods.get().map(|f| f()).unwrap_or_default();
        let sums = qos_pod_requests(pods.iter().map(AsRef::as_ref));
        let memory_reserve = self.qos_reserved.map(|r| QosMemoryReserve {
            percent: r.percent,
            allocatable: r.allocatable,
            guaranteed_requests: sums.guaranteed_memory,
            burstable_requests: sums.burstable_memory,
        });
        self.qos.update_cgroups(&QosUpdate {
            burstable_cpu_request_milli: sums.burstable_cpu_milli,
            memory_reserve,
            memory_qos: self.memory_qos.then_some(QosMemoryRequests {
                guaranteed: sums.guaranteed_memory,
                burstable: sums.burstable_memory,
            }),
        })
    }

    /// `ResourceConfigForPod` with this node's `cpuCFSQuota` and `cpuCFSQuotaPeriod`, as a
    /// resize applies it (upstream passes `enforceMemoryQoS` false there).
    pub fn resource_config_for_pod(&self, pod: &ApiPod) -> ResourceConfig {
        resource_config_for_pod(
            pod,
            self.enforce_cpu_limits(pod),
            self.cpu_cfs_quota_period_us,
            false,
        )
    }

    /// The `SyncPod` step: a pod that has running containers but no cgroup (a kubelet
    /// restarted with `cgroupsPerQOS` newly on) is killed so it restarts inside its cgroup;
    /// then, unless the pod was killed and never restarts, the QoS cgroups are updated and
    /// the pod cgroup is created with its values. `first_sync` is [`is_first_sync`] of the
    /// pod's generated API status.
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
                Ok(()) => {
                    pod_killed = true;
                    self.after_kill_pod();
                }
                Err(e) => tracing::error!(pod = %uid, err = %e, "KillPod failed"),
            }
        }
        let mut run_once =
            pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) == Some("Never");
        // With ContainerRestartRules, a pod with any restartable container is not run-once.
        if kubelet_container::gates::container_restart_rules()
            && let Some(spec) = pod.spec.as_ref()
            && spec
                .containers
                .iter()
                .any(|c| kubelet_container::is_container_restartable(spec, c))
        {
            run_once = false;
        }
        // A run-once pod killed above is not expected to run again: no cgroup for it.
        let skip = pod_killed && run_once;
        if !skip && !exists {
            if let Err(e) = self.update_qos_cgroups() {
                tracing::debug!(pod = %uid, err = %e, "Failed to update QoS cgroups while syncing pod");
            }
            // Creation (upstream `EnsureExists`): with MemoryQoS, `memory.min` too.
            let config = resource_config_for_pod(
                pod,
                self.enforce_cpu_limits(pod),
                self.cpu_cfs_quota_period_us,
                self.memory_qos,
            );
            self.pcm.ensure_exists(&name, &config).map_err(|e| {
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

    /// Upstream `killPod`'s tail: once a pod's containers are stopped, the QoS cgroups
    /// are updated (errors are logged).
    pub fn after_kill_pod(&self) {
        if let Err(e) = self.update_qos_cgroups() {
            tracing::debug!(err = %e, "Failed to update QoS cgroups while killing pod");
        }
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

    /// The pod cgroups on the host (upstream `GetAllPodsFromCgroups`), one hierarchy per
    /// call in turn (`PodContainerManager::get_pods_from_cgroups_round`).
    pub fn cgroup_pods(&self) -> Result<CgroupPods, kubelet_cm::CmError> {
        let round = self.housekeeping_round.fetch_add(1, Ordering::Relaxed);
        self.pcm.get_pods_from_cgroups_round(round)
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

impl kubelet_runtime::resize::PodCgroupConfig for PodCgroups {
    fn resource_config_for_pod(&self, pod: &ApiPod) -> Option<ResourceConfig> {
        self.namer
            .pod_cgroup_name(pod)
            .map(|_| PodCgroups::resource_config_for_pod(self, pod))
    }

    fn get_pod_cgroup_config(
        &self,
        pod: &ApiPod,
        resource: CgroupResource,
    ) -> Result<ResourceConfig, String> {
        let name = self
            .namer
            .pod_cgroup_name(pod)
            .ok_or_else(|| "no pod cgroup without cgroupsPerQOS".to_string())?;
        self.pcm
            .get_pod_cgroup_config(&name, resource)
            .map_err(|e| e.to_string())
    }

    fn set_pod_cgroup_config(&self, pod: &ApiPod, config: &ResourceConfig) -> Result<(), String> {
        let name = self
            .namer
            .pod_cgroup_name(pod)
            .ok_or_else(|| "no pod cgroup without cgroupsPerQOS".to_string())?;
        self.pcm
            .set_pod_cgroup_config(&name, config)
            .map_err(|e| e.to_string())
    }
}

/// The QoS container manager's `Start` tail: the active pods are the kubelet's, and the
/// QoS cgroups are updated at once and every minute (`periodicQOSCgroupUpdateInterval`).
pub fn spawn_qos_updates(
    kubelet: &Arc<Kubelet>,
    cancel: tokio_util::sync::CancellationToken,
    tasks: &mut tokio::task::JoinSet<()>,
) {
    let Some(pc) = kubelet.pod_cgroups.clone() else {
        return;
    };
    let weak: Weak<Kubelet> = Arc::downgrade(kubelet);
    pc.set_active_pods(Box::new(move || {
        weak.upgrade()
            .map(|kl| kl.active_pods())
            .unwrap_or_default()
    }));
    tasks.spawn(async move {
        let mut tick = tokio::time::interval(kubelet_cm::qos::PERIODIC_QOS_CGROUP_UPDATE_INTERVAL);
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                _ = tick.tick() => {
                    if let Err(e) = pc.update_qos_cgroups() {
                        tracing::info!(err = %e, "Failed to reserve QoS requests");
                    }
                }
            }
        }
    });
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
        pod_cgroups_on(extra, fs, CgroupVersion::V1)
    }

    fn pod_cgroups_on(
        extra: &str,
        fs: &Arc<FakeHostFs>,
        version: CgroupVersion,
    ) -> Option<PodCgroups> {
        let server = crate::kubelet::test_config::server(extra);
        PodCgroups::from_config(
            &server.config,
            fs.clone(),
            Arc::new(FakeProcessKiller::default()),
            (version, CgroupDriver::Cgroupfs),
            Arc::new(NoTermination),
            None,
        )
    }

    /// A pod whose containers have these `(requests, limits)`.
    fn pod_with(uid: &str, containers: &[(serde_json::Value, serde_json::Value)]) -> ApiPod {
        let containers: Vec<serde_json::Value> = containers
            .iter()
            .enumerate()
            .map(|(i, (req, lim))| {
                serde_json::json!({"name": format!("c{i}"), "image": "busybox",
                    "resources": {"requests": req, "limits": lim}})
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": uid, "namespace": "default", "uid": uid},
            "spec": {"containers": containers}
        }))
        .unwrap()
    }

    fn guaranteed() -> ApiPod {
        let r = serde_json::json!({"cpu": "500m", "memory": "128Mi", "hugepages-2Mi": "4Mi"});
        pod_with("g", &[(r.clone(), r)])
    }

    fn burstable_limited() -> ApiPod {
        use serde_json::json;
        pod_with(
            "bl",
            &[
                (
                    json!({"cpu": "100m", "memory": "64Mi"}),
                    json!({"cpu": "200m", "memory": "128Mi"}),
                ),
                (
                    json!({"cpu": "300m", "memory": "32Mi"}),
                    json!({"cpu": "300m", "memory": "64Mi"}),
                ),
            ],
        )
    }

    fn burstable_unlimited() -> ApiPod {
        use serde_json::json;
        pod_with(
            "bu",
            &[
                (json!({"cpu": "250m"}), json!({"memory": "64Mi"})),
                (json!({"memory": "32Mi"}), json!({})),
            ],
        )
    }

    fn best_effort() -> ApiPod {
        pod_with("be", &[(serde_json::json!({}), serde_json::json!({}))])
    }

    /// The files written into `pod`'s cgroup by its first `SyncPod` on a fake host with the
    /// cpu, cpuacct, memory, pids and hugetlb controllers (v1) or the same controllers
    /// delegated (v2), and 2 MiB and 1 GiB huge pages, as `<controller>/<file>=<value>`
    /// (v1) or `<file>=<value>` (v2).
    async fn pod_cgroup_files(extra: &str, version: CgroupVersion, pod: &ApiPod) -> Vec<String> {
        let fs = Arc::new(FakeHostFs::default());
        for c in ["cpu", "cpuacct", "memory", "pids", "hugetlb"] {
            fs.add_dir(format!("/sys/fs/cgroup/{c}"));
        }
        fs.add_file(
            "/sys/fs/cgroup/cgroup.controllers",
            "cpu memory pids hugetlb\n",
        );
        fs.add_dir("/sys/kernel/mm/hugepages/hugepages-2048kB");
        fs.add_dir("/sys/kernel/mm/hugepages/hugepages-1048576kB");
        let pc = pod_cgroups_on(extra, &fs, version).unwrap();
        pc.sync_pod(
            &FakeRuntime::default(),
            &kubelet_container::NoopRecorder,
            pod,
            &PodStatus::default(),
            true,
        )
        .await
        .unwrap();
        let uid = pod_uid(pod);
        fs.writes()
            .into_iter()
            .filter_map(|(path, value)| {
                let path = path.to_string_lossy().into_owned();
                let (dir, file) = path.rsplit_once('/')?;
                if !dir.ends_with(&format!("/pod{uid}")) {
                    return None;
                }
                let rel = dir.strip_prefix("/sys/fs/cgroup/")?;
                Some(match version {
                    CgroupVersion::V1 => {
                        format!(
                            "{}/{file}={value}",
                            rel.split('/').next().unwrap_or_default()
                        )
                    }
                    CgroupVersion::V2 => format!("{file}={value}"),
                })
            })
            .collect()
    }

    /// `DisableCPUQuotaWithExclusiveCPUs`: a pod with exclusive CPUs gets its pod cgroup
    /// without CFS quota (-1), at creation and in a resize's config.
    #[tokio::test]
    async fn a_pod_with_exclusive_cpus_gets_no_cfs_quota() {
        use kubelet_runtime::internal_lifecycle::FakeExclusiveCpus;
        let fs = Arc::new(FakeHostFs::default());
        for c in ["cpu", "cpuacct", "memory", "pids", "hugetlb"] {
            fs.add_dir(format!("/sys/fs/cgroup/{c}"));
        }
        let pc = pod_cgroups_on("", &fs, CgroupVersion::V1)
            .unwrap()
            .with_cpu_allocation_reader(Arc::new(FakeExclusiveCpus(vec![(
                "g".into(),
                "c0".into(),
            )])));
        pc.sync_pod(
            &FakeRuntime::default(),
            &kubelet_container::NoopRecorder,
            &guaranteed(),
            &PodStatus::default(),
            true,
        )
        .await
        .unwrap();
        let quota = fs
            .writes()
            .iter()
            .find(|(p, _)| p.ends_with("podg/cpu.cfs_quota_us"))
            .map(|(_, v)| v.clone());
        assert_eq!(quota.as_deref(), Some("-1"));
        assert_eq!(
            pc.resource_config_for_pod(&guaranteed()).cpu_quota,
            Some(-1)
        );
        // Another pod keeps its quota.
        assert_eq!(
            pc.resource_config_for_pod(&burstable_limited()).cpu_quota,
            Some(50_000)
        );
    }

    #[tokio::test]
    async fn pod_cgroups_get_upstream_values_per_qos_class_on_v1() {
        let v1 = CgroupVersion::V1;
        let pids = "podPidsLimit: 64\n";
        assert_eq!(
            pod_cgroup_files(pids, v1, &guaranteed()).await,
            [
                "memory/memory.limit_in_bytes=134217728",
                "cpu/cpu.shares=512",
                "cpu/cpu.cfs_period_us=100000",
                "cpu/cpu.cfs_quota_us=50000",
                "pids/pids.max=64",
                "hugetlb/hugetlb.2MB.limit_in_bytes=4194304",
                "hugetlb/hugetlb.1GB.limit_in_bytes=0",
            ]
        );
        // Burstable, every container limited: the summed limits; shares from the requests.
        assert_eq!(
            pod_cgroup_files("", v1, &burstable_limited()).await,
            [
                "memory/memory.limit_in_bytes=201326592",
                "cpu/cpu.shares=409",
                "cpu/cpu.cfs_period_us=100000",
                "cpu/cpu.cfs_quota_us=50000",
                "hugetlb/hugetlb.2MB.limit_in_bytes=0",
                "hugetlb/hugetlb.1GB.limit_in_bytes=0",
            ]
        );
        // Burstable, a container without a CPU and one without a memory limit: shares only.
        assert_eq!(
            pod_cgroup_files("", v1, &burstable_unlimited()).await,
            [
                "cpu/cpu.shares=256",
                "hugetlb/hugetlb.2MB.limit_in_bytes=0",
                "hugetlb/hugetlb.1GB.limit_in_bytes=0",
            ]
        );
        assert_eq!(
            pod_cgroup_files("", v1, &best_effort()).await,
            [
                "cpu/cpu.shares=2",
                "hugetlb/hugetlb.2MB.limit_in_bytes=0",
                "hugetlb/hugetlb.1GB.limit_in_bytes=0",
            ]
        );
        // cpuCFSQuota off: no quota (-1), the period still; a custom period.
        assert_eq!(
            pod_cgroup_files("cpuCFSQuota: false\n", v1, &guaranteed()).await[1..4],
            [
                "cpu/cpu.shares=512",
                "cpu/cpu.cfs_period_us=100000",
                "cpu/cpu.cfs_quota_us=-1",
            ]
        );
        assert_eq!(
            pod_cgroup_files(
                "featureGates: {CustomCPUCFSQuotaPeriod: true}\ncpuCFSQuotaPeriod: 50ms\n",
                v1,
                &guaranteed()
            )
            .await[1..4],
            [
                "cpu/cpu.shares=512",
                "cpu/cpu.cfs_period_us=50000",
                "cpu/cpu.cfs_quota_us=25000",
            ]
        );
    }

    #[tokio::test]
    async fn pod_cgroups_get_upstream_values_per_qos_class_on_v2() {
        let v2 = CgroupVersion::V2;
        assert_eq!(
            pod_cgroup_files("podPidsLimit: 64\n", v2, &guaranteed()).await,
            [
                "pids.max=64",
                "memory.max=134217728",
                "cpu.weight=20",
                "cpu.max=50000 100000",
                "hugetlb.2MB.max=4194304",
                "hugetlb.1GB.max=0",
            ]
        );
        assert_eq!(
            pod_cgroup_files("", v2, &burstable_limited()).await,
            [
                "memory.max=201326592",
                "cpu.weight=16",
                "cpu.max=50000 100000",
                "hugetlb.2MB.max=0",
                "hugetlb.1GB.max=0",
            ]
        );
        assert_eq!(
            pod_cgroup_files("", v2, &burstable_unlimited()).await,
            ["cpu.weight=10", "hugetlb.2MB.max=0", "hugetlb.1GB.max=0"]
        );
        assert_eq!(
            pod_cgroup_files("", v2, &best_effort()).await,
            ["cpu.weight=1", "hugetlb.2MB.max=0", "hugetlb.1GB.max=0"]
        );
        assert_eq!(
            pod_cgroup_files("cpuCFSQuota: false\n", v2, &guaranteed()).await[1..3],
            ["cpu.weight=20", "cpu.max=max 100000"]
        );
    }

    #[tokio::test]
    async fn qos_cgroups_follow_the_active_pods() {
        let fs = Arc::new(FakeHostFs::default());
        fs.add_dir("/sys/fs/cgroup/cpu");
        let pc = pod_cgroups("", &fs).unwrap();
        let active = Arc::new(std::sync::Mutex::new(vec![
            Arc::new(guaranteed()),
            Arc::new(burstable_limited()),
            Arc::new(burstable_unlimited()),
            Arc::new(best_effort()),
        ]));
        let pods = active.clone();
        pc.set_active_pods(Box::new(move || pods.lock().unwrap().clone()));
        let shares = |fs: &FakeHostFs| {
            let get = |q: &str| {
                fs.read_to_string(&PathBuf::from(format!(
                    "/sys/fs/cgroup/cpu/kubepods/{q}/cpu.shares"
                )))
                .unwrap()
            };
            (get("burstable"), get("besteffort"))
        };
        // Creating a pod cgroup updates the QoS cgroups first: 400m + 250m requested.
        pc.sync_pod(
            &FakeRuntime::default(),
            &kubelet_container::NoopRecorder,
            &burstable_unlimited(),
            &PodStatus::default(),
            true,
        )
        .await
        .unwrap();
        assert_eq!(shares(&fs), ("665".to_string(), "2".to_string()));
        let first_pod_write = fs
            .writes()
            .iter()
            .position(|(p, _)| p.to_string_lossy().contains("/podbu"))
            .unwrap();
        assert!(first_pod_write > 0, "{:?}", fs.writes());
        // A Burstable pod goes: after its kill the shares drop to the other one's.
        active.lock().unwrap().retain(|p| pod_uid(p) != "bl");
        pc.after_kill_pod();
        assert_eq!(shares(&fs), ("256".to_string(), "2".to_string()));
        active.lock().unwrap().clear();
        pc.update_qos_cgroups().unwrap();
        assert_eq!(shares(&fs), ("2".to_string(), "2".to_string()));
    }

    /// MemoryQoS on cgroup v2 (upstream `EnsureExists` with `enforceMemoryQoS` and
    /// `setMemoryQoS`): the new pod cgroup's `memory.min` is the pod's requests, the
    /// Burstable cgroup's the Burstable pods', the pods' root the Guaranteed and Burstable
    /// pods'; a resize's config has none (upstream passes false there).
    #[tokio::test]
    async fn memory_qos_sets_memory_min_of_pod_and_qos_cgroups() {
        let fs = Arc::new(FakeHostFs::default());
        fs.add_file(
            "/sys/fs/cgroup/cgroup.controllers",
            "cpu memory pids
",
        );
        let pc = pod_cgroups_on("", &fs, CgroupVersion::V2)
            .unwrap()
            .with_memory_qos(true);
        let active = vec![Arc::new(guaranteed()), Arc::new(burstable_limited())];
        pc.set_active_pods(Box::new(move || active.clone()));
        pc.sync_pod(
            &FakeRuntime::default(),
            &kubelet_container::NoopRecorder,
            &burstable_limited(),
            &PodStatus::default(),
            true,
        )
        .await
        .unwrap();
        let written = |path: &str| {
            fs.writes()
                .iter()
                .rev()
                .find(|(p, _)| p == &PathBuf::from(path))
                .map(|(_, v)| v.clone())
        };
        let mi = |n: i64| Some((n << 20).to_string());
        assert_eq!(
            written("/sys/fs/cgroup/kubepods/burstable/podbl/memory.min"),
            mi(96)
        );
        assert_eq!(
            written("/sys/fs/cgroup/kubepods/burstable/memory.min"),
            mi(96)
        );
        assert_eq!(written("/sys/fs/cgroup/kubepods/memory.min"), mi(128 + 96));
        assert!(written("/sys/fs/cgroup/kubepods/besteffort/memory.min").is_none());
        assert!(
            pc.resource_config_for_pod(&burstable_limited())
                .unified
                .is_empty()
        );
        // Without MemoryQoS: no memory.min anywhere.
        let fs = Arc::new(FakeHostFs::default());
        fs.add_file(
            "/sys/fs/cgroup/cgroup.controllers",
            "cpu memory pids
",
        );
        let pc = pod_cgroups_on("", &fs, CgroupVersion::V2).unwrap();
        pc.sync_pod(
            &FakeRuntime::default(),
            &kubelet_container::NoopRecorder,
            &burstable_limited(),
            &PodStatus::default(),
            true,
        )
        .await
        .unwrap();
        assert!(!fs.writes().iter().any(|(p, _)| p.ends_with("memory.min")));
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
