//! Builds the kuberuntime manager from the configuration (the runtime half of
//! `NewMainKubelet`): this module only translates `KubeletConfiguration` into
//! `kubelet_runtime::setup::RuntimeManagerSettings`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kubelet_config::KubeletServer;
use kubelet_container::{ContainerGcPolicy, PodStateProvider, ProbeResults, RealClock};
use kubelet_cpumanager::kubelet::CpuManagerLifecycle;
use kubelet_runtime::env::{EnvObjects, NodeEnvInfo};
use kubelet_runtime::manager::KubeGenericRuntimeManager;
use kubelet_runtime::os::RealOs;
use kubelet_runtime::runtimeclass::RuntimeHandlerResolver;
use kubelet_runtime::setup::{RuntimeManagerParts, RuntimeManagerSettings, new_runtime_manager};
use kubelet_runtime::volumes::LocalVolumes;
use kubelet_volume::{MountedVolumes, RealMounter, VolumeManager, VolumeObjects};

use super::KubeletDeps;
use crate::startup::RunError;

/// Container GC policy from the (deprecated) flags, with upstream's defaults.
pub fn gc_policy(server: &KubeletServer) -> ContainerGcPolicy {
    ContainerGcPolicy {
        min_age: server
            .flags
            .minimum_gc_age
            .as_std()
            .unwrap_or(Duration::ZERO),
        max_per_pod_container: server.flags.max_per_pod_container_count,
        max_containers: server.flags.max_container_count,
    }
}

fn err(what: &str, e: impl std::fmt::Display) -> RunError {
    RunError::Kubelet(format!("{what}: {e}"))
}

/// Upstream `enforceMemoryQoS`: the `MemoryQoS` gate on a cgroup v2 host.
pub fn memory_qos(deps: &KubeletDeps<'_>) -> bool {
    deps.server
        .feature_gates
        .enabled(kubelet_features::gates::MEMORY_QOS)
        && deps.cgroup_version == kubelet_cm::CgroupVersion::V2
}

/// The settings the runtime manager takes, from flags, config and node facts.
pub fn settings(deps: &KubeletDeps<'_>) -> Result<RuntimeManagerSettings, RunError> {
    let s = deps.server;
    let c = &s.config;
    let (cpu, memory) = deps.node_config.pods_cgroup_limits(&deps.machine);
    let cgroup_v2 = deps.cgroup_version == kubelet_cm::CgroupVersion::V2;
    Ok(RuntimeManagerSettings {
        root_dir: PathBuf::from(&s.flags.root_directory),
        pod_logs_dir: PathBuf::from(&c.pod_logs_dir),
        cgroup_driver: deps.runtime.cgroup_driver,
        cgroup_root: c.cgroup_root.clone(),
        cgroups_per_qos: c.cgroups_per_qos.unwrap_or(true),
        cgroup_v2,
        resolv_conf: c
            .resolver_config
            .as_deref()
            .filter(|p| !p.is_empty())
            .map(PathBuf::from),
        cluster_dns: deps.cluster_dns.clone(),
        cluster_domain: c.cluster_domain.clone(),
        serialize_image_pulls: c.serialize_image_pulls.unwrap_or(true),
        max_parallel_image_pulls: c.max_parallel_image_pulls,
        ensure_secret_pulled_images: s
            .feature_gates
            .enabled(kubelet_features::gates::KUBELET_ENSURE_SECRET_PULLED_IMAGES),
        env_files: s.feature_gates.enabled(kubelet_features::gates::ENV_FILES),
        hostname_override: s
            .feature_gates
            .enabled(kubelet_features::gates::HOSTNAME_OVERRIDE),
        container_log_max_size: deps.container_log_max_size,
        container_log_max_files: c.container_log_max_files.unwrap_or(5),
        cpu_cfs_quota: c.cpu_cfs_quota.unwrap_or(true),
        cpu_cfs_quota_period: c
            .cpu_cfs_quota_period
            .and_then(|d| d.as_std())
            .unwrap_or(Duration::from_millis(100)),
        seccomp_default: s.flags.seccomp_default || c.seccomp_default.unwrap_or(false),
        single_process_oom_kill: c.single_process_oom_kill.unwrap_or(!cgroup_v2),
        memory_capacity: i64::try_from(deps.machine.memory_capacity).unwrap_or(i64::MAX),
        swap: kubelet_runtime::swap::SwapSettings {
            controller_available: kubelet_cm::swap::swap_controller_available(
                deps.host_fs.as_ref(),
                deps.cgroup_version,
            ),
            // NodeSwap is GA and locked on in 1.35.
            limited_swap: c.memory_swap.swap_behavior == "LimitedSwap",
            swap_capacity: i64::try_from(kubelet_cm::swap::swap_capacity(deps.host_fs.as_ref()))
                .unwrap_or(i64::MAX),
        },
        memory_qos: memory_qos(deps),
        memory_throttling_factor: c.memory_throttling_factor.unwrap_or(0.9),
        node_ips: deps.node_ips.clone(),
        allocatable_milli_cpu: cpu,
        allocatable_memory: memory,
        allocatable_ephemeral_storage: 0,
    })
}

/// The volume manager (upstream `volumemanager.NewVolumeManager` in `NewMainKubelet`):
/// `objects` are the ConfigMap/Secret/token managers in API server mode, `NoVolumeObjects`
/// in standalone mode.
pub fn build_volume_manager(
    deps: &KubeletDeps<'_>,
    objects: Arc<dyn VolumeObjects>,
) -> Result<Arc<VolumeManager>, RunError> {
    let s = settings(deps)?;
    // emptyDirs are set up before the containers, so a failure is a `FailedMount`.
    let local = LocalVolumes::new(Arc::new(RealOs), s.root_dir.clone())
        .with_node_allocatable_memory(s.allocatable_memory);
    Ok(Arc::new(
        VolumeManager::new(
            s.root_dir,
            objects,
            Arc::new(RealMounter::new()),
            deps.recorder.clone(),
            NodeEnvInfo {
                host_ips: Vec::new(),
                allocatable_milli_cpu: s.allocatable_milli_cpu,
                allocatable_memory: node_allocatable_memory(deps),
                allocatable_ephemeral_storage: s.allocatable_ephemeral_storage,
            },
        )
        .with_local_volumes(Arc::new(local)),
    ))
}

/// The node's `status.allocatable` memory, which upstream's volume host reads
/// (`GetNodeAllocatable`): capacity minus kube- and system-reserved and the hard eviction
/// threshold.
fn node_allocatable_memory(deps: &KubeletDeps<'_>) -> i64 {
    let capacity = kubelet_cm::capacity_from_machine_info(&deps.machine, &[]);
    let reserved = deps.node_config.node_allocatable_reservation(&capacity);
    let memory = |m: &std::collections::BTreeMap<
        String,
        kubelet_apimachinery::quantity::Quantity,
    >| { m.get("memory").map(|q| q.value()).unwrap_or(0) };
    (memory(&capacity) - memory(&reserved)).max(0)
}

/// The CRI-backed runtime the pod workers drive; `env_objects` are the ConfigMap and
/// Secret managers (`NoEnvObjects` in standalone mode), `probes` the prober's results
/// (liveness and startup failures restart containers), `runtime_classes` the RuntimeClass
/// manager (`NoRuntimeClassManager` in standalone mode); container mounts of the volume
/// manager's volumes come from `volumes`, hostPath and emptyDir from `LocalVolumes`; the
/// CPU manager's hooks run around each container (`internalLifecycle`).
pub async fn build_runtime(
    deps: &KubeletDeps<'_>,
    pod_state: Arc<dyn PodStateProvider>,
    env_objects: Arc<dyn EnvObjects>,
    probes: Arc<dyn ProbeResults>,
    volumes: Arc<VolumeManager>,
    runtime_classes: Arc<dyn RuntimeHandlerResolver>,
    managers: &super::topology_manager::ResourceManagers,
) -> Result<Arc<KubeGenericRuntimeManager>, RunError> {
    let settings = settings(deps)?;
    let local = LocalVolumes::new(Arc::new(RealOs), settings.root_dir.clone())
        .with_node_allocatable_memory(settings.allocatable_memory);
    let volumes = MountedVolumes::new(volumes, Arc::new(local));
    let manager = new_runtime_manager(
        &settings,
        RuntimeManagerParts {
            runtime: deps.runtime.runtime.clone(),
            image: deps.runtime.image.clone(),
            os: Arc::new(RealOs),
            probes,
            pod_state,
            env_objects,
            volumes: Some(Arc::new(volumes)),
            clock: Arc::new(RealClock),
            recorder: deps.recorder.clone(),
        },
    )
    .await
    .map_err(|e| err("failed to initialize the container runtime manager", e))?;
    let actuated = pod_resources_state(deps, kubelet_runtime::resize::ACTUATED_STATE_FILE);
    // Upstream's `insecureContainerLifecycleHTTPClient` has the prober's transport.
    let lifecycle_http =
        kubelet_prober::HttpProber::new().map_err(|e| err("failed to create the prober", e))?;
    let mut manager = manager
        .with_runtime_class_manager(runtime_classes)
        .with_lifecycle_http_client(Arc::new(lifecycle_http))
        .with_actuated_state(Arc::new(actuated))
        .with_internal_lifecycle(internal_lifecycle(managers));
    if let Some(reader) = exclusive_cpus_reader(deps, &managers.cpu) {
        manager = manager.with_cpu_allocation_reader(reader);
    }
    if let Some(userns) = userns_manager(
        deps.server,
        &settings.root_dir,
        &kubelet_runtime::userns::RealSubIds,
        Arc::new(RealOs),
    )? {
        manager = manager.with_userns_manager(userns);
    }
    Ok(Arc::new(manager))
}

/// `cm.NewInternalContainerLifecycle`: the CPU manager's hooks (with the topology
/// manager's `AddContainer`/`RemoveContainer`), then the memory manager's (`cpuset_cpus`,
/// then `cpuset_mems` at `PreCreateContainer`; `AddContainer` of each at
/// `PreStartContainer`).
pub fn internal_lifecycle(
    managers: &super::topology_manager::ResourceManagers,
) -> Arc<dyn kubelet_runtime::internal_lifecycle::InternalContainerLifecycle> {
    Arc::new(kubelet_runtime::internal_lifecycle::ComposedLifecycle(
        vec![
            Arc::new(CpuManagerLifecycle::new(
                managers.cpu.clone(),
                managers.topology.clone(),
            )),
            Arc::new(kubelet_memorymanager::kubelet::MemoryManagerLifecycle(
                managers.memory.clone(),
            )),
        ],
    ))
}

/// With `DisableCPUQuotaWithExclusiveCPUs` (on by default): the CPU manager's view of
/// which containers are pinned, so they, their sandboxes and pod cgroups get no CFS
/// quota; without the gate, none (every quota is set).
pub fn exclusive_cpus_reader(
    deps: &KubeletDeps<'_>,
    cpu_manager: &kubelet_cpumanager::kubelet::CpuManager,
) -> Option<Arc<dyn kubelet_runtime::internal_lifecycle::CpuAllocationReader>> {
    deps.server
        .feature_gates
        .enabled(kubelet_features::gates::DISABLE_CPU_QUOTA_WITH_EXCLUSIVE_CPUS)
        .then(|| {
            Arc::new(CpuManagerLifecycle {
                cpu: cpu_manager.clone(),
                topology: None,
            }) as Arc<dyn kubelet_runtime::internal_lifecycle::CpuAllocationReader>
        })
}

/// The user namespace manager (upstream `NewMainKubelet`'s `userns.MakeUserNsManager`): with
/// the `UserNamespacesSupport` gate on (its 1.35 default), the kubelet's ID range from the
/// `kubelet` user's subordinate IDs (`getsubids`) or the default, `userNamespaces.idsPerPod`
/// per pod, the allocations of existing pod directories recorded; a failure stops the start
/// with upstream's message. `None` with the gate off.
pub(crate) fn userns_manager(
    s: &kubelet_config::KubeletServer,
    root_dir: &std::path::Path,
    subids: &dyn kubelet_runtime::userns::SubIdsCommand,
    os: Arc<dyn kubelet_runtime::os::OsInterface>,
) -> Result<Option<Arc<kubelet_runtime::userns::UsernsManager>>, RunError> {
    use kubelet_runtime::userns::{DEFAULT_IDS_PER_POD, UsernsManager, get_kubelet_mappings};
    if !s
        .feature_gates
        .enabled(kubelet_features::gates::USER_NAMESPACES_SUPPORT)
    {
        return Ok(None);
    }
    // Validation keeps `idsPerPod` a positive multiple of 65536 that fits in 32 bits.
    let ids_per_pod = s
        .config
        .user_namespaces
        .as_ref()
        .and_then(|u| u.ids_per_pod)
        .and_then(|n| u32::try_from(n).ok());
    let mapping = get_kubelet_mappings(
        os.as_ref(),
        subids,
        ids_per_pod.unwrap_or(DEFAULT_IDS_PER_POD),
    )
    .map_err(|e| err("create user namespace manager", e))?;
    let max_pods = usize::try_from(s.config.max_pods).unwrap_or(0);
    let manager = UsernsManager::new(os, root_dir, mapping, ids_per_pod, max_pods)
        .map_err(|e| err("create user namespace manager", e))?;
    Ok(Some(Arc::new(manager)))
}

/// A pod resources state checkpointed to `<root-dir>/<file>` (upstream
/// `allocation.NewManager`'s `state.NewStateCheckpoint`).
pub fn pod_resources_state(
    deps: &KubeletDeps<'_>,
    file: &str,
) -> kubelet_runtime::resize::PodResourcesState {
    kubelet_runtime::resize::PodResourcesState::with_checkpoint(
        Arc::new(RealOs),
        std::path::Path::new(&deps.server.flags.root_directory).join(file),
    )
}

/// The probe manager (upstream `prober.NewManager`): workers read the status manager, exec
/// probes run through CRI `ExecSync`, results go to `results`.
pub fn build_probe_manager(
    deps: &KubeletDeps<'_>,
    status: Arc<kubelet_status::StatusManager>,
    results: Arc<kubelet_prober::ProberResults>,
) -> Result<kubelet_prober::ProbeManager, RunError> {
    let http =
        kubelet_prober::HttpProber::new().map_err(|e| err("failed to create the prober", e))?;
    Ok(kubelet_prober::ProbeManager::new(
        kubelet_prober::ProbeManagerParts {
            status,
            results,
            runner: Arc::new(kubelet_prober::CriCommandRunner(
                deps.runtime.runtime.clone(),
            )),
            http,
            recorder: deps.recorder.clone(),
            clock: Arc::new(RealClock),
            change_container_status_on_kubelet_restart: deps
                .server
                .feature_gates
                .enabled(kubelet_features::gates::CHANGE_CONTAINER_STATUS_ON_KUBELET_RESTART),
            shutdown: deps.shutdown.clone(),
        },
    ))
}
