//! `RunKubelet` → `createAndInitKubelet` → `startKubelet` (`cmd/kubelet/app/server.go`,
//! `pkg/kubelet/kubelet.go`): start the container manager, the pod sources, the PLEG, the
//! pod workers, the sync loop and the read-only server.

mod active_deadline;
mod admission;
mod allocation;
mod api;
mod container_logs;
pub(crate) mod cpu_manager;
mod crash_loop;
mod evented;
mod eviction;
pub(crate) mod memory_manager;
pub(crate) mod topology_manager;
pub use eviction::eviction_config;
pub mod host;
mod housekeeping;
mod image_gc;
mod metrics;
mod node_setup;
pub(crate) mod nodeshutdown;
mod pod_cgroups;
mod pod_manager;
mod pod_state;
mod runtime_setup;
mod secure;
mod stats;
#[cfg(test)]
mod support_proofs;
mod sync_loop;
mod syncer;
#[cfg(test)]
mod test_config;

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kubelet_cm::{HostFs, MachineInfo, NodeConfig, QosCgroups, QosSetup};
use kubelet_config::KubeletServer;
use kubelet_container::events::{EventType, node_ref, reasons};
use kubelet_container::{Backoff, Cache, ContainerGc, RealClock, Runtime};
use kubelet_pleg::{GenericPleg, RelistDuration};
use kubelet_podsource::PodConfig;
use kubelet_podworkers::{PodWorkers, PodWorkersConfig, WorkQueue};
use kubelet_status::{ReasonCache, StatusManager};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub(crate) use api::certificates::{build_kubelet_clients, start_client_certificate_manager};
pub use host::{SyncLoopMonitor, sync_loop_timeout};
pub use pod_manager::PodManager;
pub(crate) use secure::secure_server_wanted;

use crate::configz::Configz;
use crate::startup::{PreInitRuntime, RunError};

/// Everything `RunKubelet` is built from (upstream `kubelet.Dependencies` + `KubeletServer`).
pub struct KubeletDeps<'a> {
    /// Flags and configuration.
    pub server: &'a KubeletServer,
    /// The node name.
    pub node_name: String,
    /// Machine facts.
    pub machine: MachineInfo,
    /// Parsed container-manager settings.
    pub node_config: NodeConfig,
    /// The usable `--node-ip` entries (pods' hostIP, serving certificate SANs).
    pub node_ips: Vec<std::net::IpAddr>,
    /// The usable `clusterDNS` entries.
    pub cluster_dns: Vec<std::net::IpAddr>,
    /// `containerLogMaxSize` in bytes.
    pub container_log_max_size: i64,
    /// The secure server's TLS, checked before the start (`None` without `enableServer`).
    pub serving_tls: Option<kubelet_server::PreparedTls>,
    /// The host's cgroup hierarchy, detected once at start.
    pub cgroup_version: kubelet_cm::CgroupVersion,
    /// The connected CRI runtime.
    pub runtime: PreInitRuntime,
    /// systemd's D-Bus API, for the systemd cgroup driver (`None` with cgroupfs, or when
    /// systemd is not running: `startup::systemd_connection`).
    pub systemd: Option<Arc<kubelet_systemd::Systemd>>,
    /// The registered configuration.
    pub configz: Configz,
    /// The API server clients; `None` in standalone mode (no `--kubeconfig`).
    pub clients: Option<Arc<kubelet_client::KubeletClients>>,
    /// Where events go (upstream `kubeDeps.Recorder`).
    pub recorder: Arc<dyn kubelet_container::EventRecorder>,
    /// Host filesystem (cgroups, /proc).
    pub host_fs: Arc<dyn HostFs>,
    /// The kubelet's own resource limits (`maxOpenFiles`).
    pub rlimits: Arc<dyn kubelet_cm::Rlimits>,
    /// Kills processes left in the cgroup of a pod that is gone.
    pub process_killer: Arc<dyn kubelet_cm::ProcessKiller>,
    /// Cancelled on shutdown.
    pub shutdown: CancellationToken,
    /// Cancelled by a critical task that stopped.
    pub fatal: CancellationToken,
}

/// The kubelet's shared state: what the sync loop, the housekeeping and the servers use.
pub struct Kubelet {
    /// Desired pods.
    pub pod_manager: PodManager,
    /// The pod lifecycle.
    pub pod_workers: PodWorkers,
    /// Latest status per pod.
    pub status_manager: Arc<StatusManager>,
    /// The container runtime.
    pub runtime: Arc<dyn Runtime>,
    /// Pod status cache filled by the PLEG.
    pub cache: Arc<Cache>,
    /// The PLEG (for its health).
    pub pleg: Arc<GenericPleg>,
    /// Pods to resync when their crash-loop back-off expires.
    pub backoff_requeue: Arc<WorkQueue>,
    /// CrashLoopBackOff state per container (garbage collected by housekeeping).
    pub backoff: Arc<Backoff>,
    /// Container GC, run on its own task (`StartGarbageCollection`).
    pub container_gc: Arc<ContainerGc>,
    /// `--root-dir` (pod directories live in `<root-dir>/pods`).
    pub root_dir: PathBuf,
    /// Filesystem access for the pod directories.
    pub os: Arc<dyn kubelet_runtime::os::OsInterface>,
    /// Sync loop liveness.
    pub sync_loop_monitor: SyncLoopMonitor,
    /// Pod admission (`canAdmitPod`).
    pub admit_handlers: kubelet_admission::PodAdmitHandlers,
    /// Pod-level cgroups (with `cgroupsPerQOS`).
    pub pod_cgroups: Option<Arc<pod_cgroups::PodCgroups>>,
    /// The volume manager (tears down the volumes of orphaned pods in housekeeping).
    pub volume_manager: Arc<kubelet_volume::VolumeManager>,
    /// This node's Node object, from the node informer (empty in standalone mode).
    pub node_lister: kubelet_apipods::NodeLister,
    /// Creates and deletes mirror pods (`None` in standalone mode).
    pub mirror_pod_client: Option<Arc<dyn kubelet_apipods::MirrorClient>>,
    /// Where events go.
    pub recorder: Arc<dyn kubelet_container::EventRecorder>,
    /// Handlers that make the sync loop resync a pod (`PodSyncLoopHandlers`).
    pub pod_sync_loop_handlers: Vec<Arc<dyn active_deadline::PodSyncLoopHandler>>,
    /// The probe workers (`CleanupPods` in housekeeping).
    pub probe_manager: kubelet_prober::ProbeManager,
    /// The resources allocated to admitted pods (in-place resize).
    pub allocation: Arc<allocation::AllocationManager>,
    /// The resources the runtime last applied to running containers.
    pub actuated: Arc<kubelet_runtime::resize::ActuatedState>,
    /// The eviction manager (`kubelet-eviction`): node pressure, evictions, its admit handler.
    pub eviction_manager: Arc<kubelet_eviction::ManagerImpl>,
    /// The node shutdown manager (`kubelet-nodeshutdown`): its `ShutdownStatus` feeds
    /// node status, its admit handler admission.
    pub shutdown_manager: Arc<nodeshutdown::NodeShutdown>,
    /// User namespace ID allocations (`None` with `UserNamespacesSupport` off).
    pub userns: Option<Arc<kubelet_runtime::userns::UsernsManager>>,
    registered_sources: BTreeSet<String>,
    seen_sources: Mutex<HashSet<String>>,
    worker_count: AtomicUsize,
}

impl Kubelet {
    /// Notes that `source` has sent its first snapshot.
    pub fn mark_source_seen(&self, source: &str) {
        self.seen_sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(source.to_string());
    }

    /// Every configured source has reported at least once (upstream `sourcesReady.AllReady`).
    pub fn sources_ready(&self) -> bool {
        let seen = self
            .seen_sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.registered_sources.iter().all(|s| seen.contains(s))
    }

    /// Records the number of pod workers; true when it went down (a pod finished).
    pub fn note_worker_count(&self, n: usize) -> bool {
        self.worker_count.swap(n, Ordering::Relaxed) > n
    }
}

/// The running kubelet's tasks.
pub struct RunningKubelet {
    tasks: JoinSet<()>,
    /// The kubelet state (for tests and servers).
    pub kubelet: Arc<Kubelet>,
}

impl RunningKubelet {
    /// Waits for every task to finish (after shutdown was cancelled).
    pub async fn wait(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }
}

/// What the container manager's start set up: the QoS cgroups (with `cgroupsPerQOS`) and
/// the events of the reserved cgroups' enforcement, recorded after `BirthCry`.
struct ContainerManagerStarted {
    qos: Option<QosCgroups>,
    reserved_events: Vec<kubelet_cm::EnforcementEvent>,
    /// `kubeletCgroups` and `systemCgroups`, kept up to date by `Start`'s loops.
    system: kubelet_cm::SystemContainers,
}

/// Container manager `Start` (`setupNode`): kernel tunables, then the QoS cgroup
/// hierarchy with `kubepods` limited (cpu shares, memory, pids: to node allocatable with
/// `pods` enforced, to the machine's capacity otherwise), then
/// the reserved cgroups' enforcement (`system-reserved`, `kube-reserved` and their
/// `-compressible` forms, upstream `enforceNodeAllocatableCgroups`). A reserved cgroup that
/// cannot be enforced stops the kubelet, as upstream's `Failed to start ContainerManager`.
/// With the systemd driver the hierarchy is made of slice units through systemd's D-Bus
/// API (`setup_qos_cgroups_with_manager`), and a host without systemd stops the start
/// (`systemd_not_running`).
fn start_container_manager(deps: &KubeletDeps<'_>) -> Result<ContainerManagerStarted, RunError> {
    node_setup::setup_kernel_tunables(deps.server, deps.host_fs.as_ref())?;
    let c = &deps.server.config;
    if !c.cgroups_per_qos.unwrap_or(true) {
        // Validation refuses every enforcement without `cgroupsPerQOS`.
        return Ok(ContainerManagerStarted {
            qos: None,
            reserved_events: Vec::new(),
            system: node_setup::system_containers(deps.server)?,
        });
    }
    let version = deps.cgroup_version;
    let driver = deps.runtime.cgroup_driver;
    let root = kubelet_cm::node_allocatable_root(&c.cgroup_root, true);
    let cgroups = QosCgroups::new(&root, driver);
    // `kubepods` is limited "no matter what": to node allocatable with `pods` enforced,
    // to the machine's capacity otherwise.
    let limits = deps.node_config.kubepods_limits(
        &deps.machine,
        kubelet_cm::pid_capacity(deps.host_fs.as_ref()),
    );
    let manager = kubelet_cm::CgroupManager::new(deps.host_fs.clone(), version, driver)
        .with_systemd(deps.systemd.clone());
    match driver {
        kubelet_cm::CgroupDriver::Cgroupfs => kubelet_cm::setup_qos_cgroups(
            deps.host_fs.as_ref(),
            QosSetup {
                version,
                cgroups: &cgroups,
                pods_limits: Some(limits.cpu_memory),
                pids_limit: limits.pids,
            },
        )?,
        kubelet_cm::CgroupDriver::Systemd => {
            if deps.systemd.is_none() {
                return Err(RunError::Kubelet(systemd_not_running(deps)));
            }
            let config = kubepods_config(deps, limits);
            kubelet_cm::setup_qos_cgroups_with_manager(&manager, &cgroups, &config)
                .map_err(|e| RunError::Kubelet(format!("Failed to start ContainerManager: {e}")))?;
        }
    }
    tracing::info!(pods = %cgroups.pods, "Created QoS cgroup hierarchy");
    let all_cpus = deps.machine.online_cpus.to_string();
    let (reserved_events, result) = kubelet_cm::enforce_reserved_cgroups(
        &manager,
        &deps.node_config,
        kubelet_cm::ReservedCgroups {
            system_reserved_cgroup: &c.system_reserved_cgroup,
            kube_reserved_cgroup: &c.kube_reserved_cgroup,
            all_cpus: &all_cpus,
            memory_qos: deps
                .server
                .feature_gates
                .enabled(kubelet_features::gates::MEMORY_QOS),
        },
    );
    if let Err(e) = result {
        record_enforcement_events(deps, &reserved_events);
        return Err(RunError::Kubelet(format!(
            "Failed to start ContainerManager: {e}"
        )));
    }
    Ok(ContainerManagerStarted {
        qos: Some(cgroups),
        reserved_events,
        system: node_setup::system_containers(deps.server)?,
    })
}

/// The start's error when the systemd driver is chosen and systemd is not running:
/// upstream's libcontainer message (its container manager fails the same way when it
/// first creates a cgroup), naming `cgroupDriver` and where the driver came from.
fn systemd_not_running(deps: &KubeletDeps<'_>) -> String {
    let source = match deps.runtime.cgroup_driver_source {
        kubelet_cri::CgroupDriverSource::Runtime => {
            "the container runtime reports the systemd cgroup driver (CRI RuntimeConfig), which overrides cgroupDriver (--cgroup-driver)"
        }
        _ => "cgroupDriver (--cgroup-driver) is \"systemd\"",
    };
    format!(
        "Failed to start ContainerManager: systemd not running on this host, cannot use systemd cgroups manager: {source}, but {} does not exist, so systemd's D-Bus API (org.freedesktop.systemd1) cannot be used to create the pod cgroups; use the cgroupfs driver (cgroupDriver: cgroupfs, and the same driver in the container runtime)",
        kubelet_systemd::RUN_SYSTEMD_SYSTEM
    )
}

/// `kubepods`' config (upstream `getCgroupConfig(nodeAllocatable, false)`): CPU shares,
/// memory and pids from `limits`, the huge page limits of node allocatable (the host's
/// capacity per size), and under the `none` CPU manager policy every CPU as its cpuset.
fn kubepods_config(
    deps: &KubeletDeps<'_>,
    limits: kubelet_cm::KubepodsLimits,
) -> kubelet_cm::ResourceConfig {
    let (milli, bytes) = limits.cpu_memory;
    let huge_page_limit = kubelet_cm::read_hugepages(deps.host_fs.as_ref())
        .into_iter()
        .map(|h| {
            let size = i64::try_from(h.page_size_kib.saturating_mul(1024)).unwrap_or(i64::MAX);
            let total = i64::try_from(h.num_pages)
                .unwrap_or(i64::MAX)
                .saturating_mul(size);
            (size, total)
        })
        .collect();
    kubelet_cm::ResourceConfig {
        memory: Some(bytes),
        cpu_shares: u64::try_from(kubelet_cm::qos::milli_cpu_to_shares(milli)).ok(),
        pids_limit: limits.pids,
        huge_page_limit,
        cpuset_cpus: (!cpu_manager::is_static(deps.server))
            .then(|| deps.machine.online_cpus.to_string())
            .filter(|c| !c.is_empty()),
        ..kubelet_cm::ResourceConfig::default()
    }
}

/// Records `enforceNodeAllocatableCgroups`' events on the node.
fn record_enforcement_events(deps: &KubeletDeps<'_>, events: &[kubelet_cm::EnforcementEvent]) {
    for e in events {
        let (kind, reason, message) = match e {
            kubelet_cm::EnforcementEvent::Enforced(m) => (
                EventType::Normal,
                reasons::SUCCESSFUL_NODE_ALLOCATABLE_ENFORCEMENT,
                m,
            ),
            kubelet_cm::EnforcementEvent::Failed(m) => (
                EventType::Warning,
                reasons::FAILED_NODE_ALLOCATABLE_ENFORCEMENT,
                m,
            ),
        };
        deps.recorder
            .event(&node_ref(&deps.node_name), kind, reason, message);
    }
}

/// Starts the pod sources configured (`staticPodPath`, `staticPodURL`).
fn start_pod_sources(
    server: &KubeletServer,
    config: &PodConfig,
    cancel: &CancellationToken,
) -> Vec<tokio::task::JoinHandle<()>> {
    let c = &server.config;
    let mut handles = Vec::new();
    if !c.static_pod_path.is_empty() {
        tracing::info!(path = %c.static_pod_path, "Adding static pod path");
        let period = c
            .file_check_frequency
            .as_std()
            .unwrap_or(Duration::from_secs(20));
        handles.push(config.start_file_source(&c.static_pod_path, period, cancel.clone()));
    }
    if !c.static_pod_url.is_empty() {
        tracing::info!(url = %c.static_pod_url, "Adding pod URL with HTTP header");
        let headers = c
            .static_pod_url_header
            .iter()
            .flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone())))
            .collect();
        let period = c
            .http_check_frequency
            .as_std()
            .unwrap_or(Duration::from_secs(20));
        handles.push(config.start_http_source(&c.static_pod_url, headers, period, cancel.clone()));
    }
    handles
}

/// The kubelet's long-lived parts before they are started (upstream `NewMainKubelet`).
struct Built {
    kubelet: Arc<Kubelet>,
    manager: Arc<kubelet_runtime::manager::KubeGenericRuntimeManager>,
    pod_config: PodConfig,
    sources: Vec<tokio::task::JoinHandle<()>>,
    inputs: sync_loop::SyncLoopInputs,
    pleg_tx: tokio::sync::mpsc::Sender<kubelet_pleg::PodLifecycleEvent>,
    eviction: eviction::Eviction,
    cpu_manager: kubelet_cpumanager::kubelet::CpuManager,
    memory_manager: kubelet_memorymanager::kubelet::MemoryManager,
}

/// `NewMainKubelet`: runtime manager, PLEG, status manager, pod workers, pod manager.
async fn new_main_kubelet(deps: &KubeletDeps<'_>) -> Result<Built, RunError> {
    let server = deps.server;
    let c = &server.config;
    let (pod_config, updates) = PodConfig::new(deps.node_name.clone());
    // Empty in standalone mode (upstream's empty node indexer); the node informer fills it
    // in API server mode.
    let node_lister = kubelet_apipods::NodeLister::new(deps.node_name.clone());
    // Sources are registered before the kubelet asks which ones it must have seen before it
    // may treat unknown runtime pods as orphans (upstream `makePodSourceConfig` runs before
    // `NewMainKubelet`); their updates wait in the channel until the sync loop runs.
    let mut sources = start_pod_sources(server, &pod_config, &deps.shutdown);
    sources.extend(api::start_api_pod_source(deps, &pod_config, &node_lister));
    let mirror_pod_client = api::pod_source::mirror_client(deps, &node_lister);
    let pod_state = Arc::new(pod_state::PodWorkersState::default());
    let objects = api::objects::build(deps, &node_lister)?;
    let env_objects = api::objects::env_objects(objects.as_ref());
    let volume_manager =
        runtime_setup::build_volume_manager(deps, api::objects::volume_objects(objects.as_ref()))?;
    let (probe_results, probe_updates) = kubelet_prober::ProberResults::new();
    let runtime_classes = api::objects::runtime_class_manager(deps);
    // `NewContainerManager`'s `topologymanager.NewManager` and `cpumanager.NewManager`.
    let resource_managers =
        topology_manager::new_resource_managers(server, &deps.machine, &deps.node_config)?;
    let cpu_manager = resource_managers.cpu.clone();
    let memory_manager = resource_managers.memory.clone();
    let manager = runtime_setup::build_runtime(
        deps,
        pod_state.clone(),
        env_objects,
        probe_results.clone(),
        volume_manager.clone(),
        runtime_classes,
        &resource_managers,
    )
    .await?;
    let runtime: Arc<dyn Runtime> = manager.clone();
    let cache = Arc::new(Cache::new());
    let (pleg_tx, pleg_events) = tokio::sync::mpsc::channel(kubelet_pleg::PLEG_CHANNEL_CAPACITY);
    let pleg = GenericPleg::with_sender(
        runtime.clone(),
        cache.clone(),
        RelistDuration::default(),
        pleg_tx.clone(),
    );
    let status_manager = Arc::new(StatusManager::default());
    let probe_manager =
        runtime_setup::build_probe_manager(deps, status_manager.clone(), probe_results)?;
    let backoff_requeue = Arc::new(WorkQueue::new());
    let pod_cgroups = pod_cgroups::PodCgroups::from_config(
        c,
        deps.host_fs.clone(),
        deps.process_killer.clone(),
        (deps.cgroup_version, deps.runtime.cgroup_driver),
        pod_state.clone(),
        pod_cgroups::QosReservedMemory::from_deps(deps),
    )
    .map(|p| p.with_systemd(deps.systemd.clone()))
    .map(|p| p.with_memory_qos(runtime_setup::memory_qos(deps)))
    .map(
        |p| match runtime_setup::exclusive_cpus_reader(deps, &cpu_manager) {
            Some(reader) => p.with_cpu_allocation_reader(reader),
            None => p,
        },
    )
    .map(Arc::new);
    if let Some(pc) = &pod_cgroups {
        manager.set_pod_cgroup_config(pc.clone());
    }
    let backoff: Arc<Backoff> =
        Arc::new(crash_loop::crash_loop_back_off(server, Arc::new(RealClock)));
    let active_deadline = Arc::new(active_deadline::ActiveDeadlineHandler::new(
        status_manager.clone(),
        deps.recorder.clone(),
        Arc::new(RealClock),
    ));
    let allocation = Arc::new(
        allocation::AllocationManager::new(
            runtime_setup::pod_resources_state(deps, kubelet_runtime::resize::ALLOCATED_STATE_FILE),
            admission::node_allocatable(c, &deps.machine, &deps.node_config),
        )
        .with_static_cpu_policy(cpu_manager::is_static(server)),
    );
    let actuated = manager.actuated_state().clone();
    let syncer = Arc::new(syncer::KubeletSyncer {
        allocation: allocation.clone(),
        actuated: actuated.clone(),
        runtime: runtime.clone(),
        status_manager: status_manager.clone(),
        reason_cache: Arc::new(ReasonCache::new(1000)),
        backoff: backoff.clone(),
        backoff_requeue: backoff_requeue.clone(),
        // Upstream reports hostIP(s) only with an API client (`generateAPIPodStatus`).
        host_ips: deps
            .clients
            .as_ref()
            .map(|_| deps.node_ips.iter().map(ToString::to_string).collect())
            .unwrap_or_default(),
        sync_slots: Arc::new(tokio::sync::Semaphore::new(syncer::sync_pod_slots(
            deps.machine.num_cores(),
        ))),
        pod_cgroups: pod_cgroups.clone(),
        volume_manager: volume_manager.clone(),
        recorder: deps.recorder.clone(),
        mirror_pod_client: mirror_pod_client.clone(),
        node_lister: node_lister.clone(),
        pod_sync_handlers: vec![active_deadline.clone()],
        probe_manager: probe_manager.clone(),
        pleg: pleg.clone(),
        objects: objects.clone(),
        userns: manager.userns_manager().cloned(),
    });
    let resync = c.sync_frequency.as_std().unwrap_or(Duration::from_secs(60));
    let pod_workers = PodWorkers::new(
        api::objects::registering(syncer, objects.as_ref()),
        cache.clone(),
        Arc::new(WorkQueue::new()),
        PodWorkersConfig {
            resync_interval: resync,
            ..PodWorkersConfig::default()
        },
    );
    pod_state.set(pod_workers.clone());
    let container_gc = Arc::new(ContainerGc::new(
        runtime.clone(),
        runtime_setup::gc_policy(server),
    ));
    let eviction = eviction::new_manager(deps)?;
    let shutdown_manager = Arc::new(nodeshutdown::new_manager(deps));
    let kubelet = Arc::new(Kubelet {
        pod_manager: PodManager::default(),
        pod_workers,
        status_manager,
        runtime,
        cache,
        pleg,
        backoff_requeue,
        backoff,
        container_gc,
        root_dir: PathBuf::from(&server.flags.root_directory),
        os: Arc::new(kubelet_runtime::os::RealOs),
        sync_loop_monitor: SyncLoopMonitor::new(sync_loop_timeout(resync)),
        admit_handlers: admission::admit_handlers(
            deps,
            Arc::new(kubelet_apipods::NodeInfoGetter::new(
                node_lister.clone(),
                admission::initial_node(deps),
            )),
            eviction.manager.clone(),
            shutdown_manager.manager.clone(),
            resource_managers.topology.clone(),
        )
        .map_err(|e| RunError::Kubelet(format!("failed to create kubelet: {e}")))?,
        node_lister,
        mirror_pod_client,
        pod_cgroups,
        volume_manager,
        recorder: deps.recorder.clone(),
        pod_sync_loop_handlers: vec![active_deadline],
        probe_manager,
        allocation,
        actuated,
        eviction_manager: eviction.manager.clone(),
        shutdown_manager,
        userns: manager.userns_manager().cloned(),
        registered_sources: pod_config.registered_sources(),
        seen_sources: Mutex::new(HashSet::new()),
        worker_count: AtomicUsize::new(0),
    });
    Ok(Built {
        kubelet,
        manager,
        pod_config,
        sources,
        inputs: sync_loop::SyncLoopInputs {
            updates,
            pleg: pleg_events,
            probes: probe_updates,
        },
        pleg_tx,
        eviction,
        cpu_manager,
        memory_manager,
    })
}

/// The PLEG: the generic relist, plus the CRI event stream with the `EventedPLEG` gate.
fn spawn_pleg(deps: &KubeletDeps<'_>, b: &Built, tasks: &mut JoinSet<()>) {
    let k = &b.kubelet;
    tasks.spawn(k.pleg.clone().run(deps.shutdown.clone()));
    if deps
        .server
        .feature_gates
        .enabled(kubelet_features::gates::EVENTED_PLEG)
    {
        let evented = kubelet_pleg::EventedPleg::new(
            k.runtime.clone(),
            k.cache.clone(),
            k.pleg.clone(),
            b.pleg_tx.clone(),
        );
        tasks.spawn(evented::run_evented_pleg(
            deps.runtime.runtime.clone(),
            evented,
            deps.shutdown.clone(),
        ));
    }
}

/// Container GC on its own task (upstream `StartGarbageCollection`): every `ContainerGCPeriod`,
/// and when housekeeping saw a pod worker finish; never on the sync loop.
fn spawn_container_gc(deps: &KubeletDeps<'_>, b: &Built, tasks: &mut JoinSet<()>) {
    let cancel = deps.shutdown.clone();
    let kubelet = b.kubelet.clone();
    tasks.spawn(async move {
        let gc = kubelet.container_gc.clone();
        tokio::select! {
            () = cancel.cancelled() => {}
            () = gc.run(kubelet_container::CONTAINER_GC_PERIOD, || kubelet.sources_ready()) => {}
        }
    });
}

/// Container log rotation on its own task (upstream `containerLogManager.Start`), every
/// `containerLogMonitorInterval`.
fn spawn_log_rotation(deps: &KubeletDeps<'_>, b: &Built, tasks: &mut JoinSet<()>) {
    let interval = deps
        .server
        .config
        .container_log_monitor_interval
        .and_then(|d| d.as_std())
        .unwrap_or(Duration::from_secs(10));
    let cancel = deps.shutdown.clone();
    let manager = b.manager.clone();
    tasks.spawn(async move {
        tokio::select! {
            () = cancel.cancelled() => {}
            () = manager.log_manager().run(interval) => {}
        }
    });
}

/// The sync loop; if it ends before shutdown, the kubelet stops (`fatal`).
fn spawn_sync_loop(
    deps: &KubeletDeps<'_>,
    kubelet: Arc<Kubelet>,
    inputs: sync_loop::SyncLoopInputs,
    tasks: &mut JoinSet<()>,
) {
    let fatal = deps.fatal.clone();
    let cancel = deps.shutdown.clone();
    tasks.spawn(async move {
        sync_loop::sync_loop(kubelet, inputs, cancel.clone()).await;
        if !cancel.is_cancelled() {
            fatal.cancel();
        }
    });
}

/// `cgroupVersionCheck` (`initializeModules`): a Warning event on a cgroup v1 host.
fn cgroup_version_check(deps: &KubeletDeps<'_>) {
    if deps.cgroup_version == kubelet_cm::CgroupVersion::V1 {
        deps.recorder.event(
            &node_ref(&deps.node_name),
            EventType::Warning,
            reasons::CGROUP_V1,
            CGROUP_V1_DEPRECATED_WARNING,
        );
        tracing::debug!(
            error = CGROUP_V1_DEPRECATED_WARNING,
            "Warning: cgroup check"
        );
    }
}

/// `cm.CgroupV1DeprecatedWarning`.
const CGROUP_V1_DEPRECATED_WARNING: &str = "cgroup v1 detected. cgroup v1 support is deprecated and will be removed in a future release. Please migrate to cgroup v2. More information at https://git.k8s.io/enhancements/keps/sig-node/5573-remove-cgroup-v1";

/// `RunKubelet` + `startKubelet`: builds the kubelet, starts its loops, the pod sources and
/// the servers, and returns the running tasks.
pub async fn run_kubelet(deps: KubeletDeps<'_>) -> Result<RunningKubelet, RunError> {
    metrics::register(deps.server, &deps.node_name).map_err(RunError::Kubelet)?;
    let started = start_container_manager(&deps)?;
    let b = new_main_kubelet(&deps).await?;
    if deps
        .server
        .feature_gates
        .enabled(kubelet_features::gates::CONTAINER_CHECKPOINT)
    {
        // `setupDataDirs`: the directory `/checkpoint/` archives go to, 0700 when made.
        let dir = host::checkpoints_dir(&b.kubelet.root_dir);
        let os = &b.kubelet.os;
        if !os.is_dir(&dir) {
            os.mkdir_all(&dir)
                .and_then(|()| os.chmod(&dir, 0o700))
                .map_err(|e| {
                    RunError::Kubelet(format!("error creating checkpoint directory: {e}"))
                })?;
        }
    }
    // `BirthCry`: an event that the kubelet (re)started.
    deps.recorder.event(
        &node_ref(&deps.node_name),
        EventType::Normal,
        reasons::STARTING_KUBELET,
        "Starting kubelet.",
    );
    cgroup_version_check(&deps);
    if started.qos.is_some() {
        // `enforceNodeAllocatableCgroups` (the container manager's start, after
        // `BirthCry` upstream): the node allocatable cgroup was updated, then the
        // reserved cgroups.
        deps.recorder.event(
            &node_ref(&deps.node_name),
            EventType::Normal,
            reasons::SUCCESSFUL_NODE_ALLOCATABLE_ENFORCEMENT,
            "Updated Node Allocatable limit across pods",
        );
    }
    record_enforcement_events(&deps, &started.reserved_events);
    node_setup::set_max_open_files(deps.server, deps.rlimits.as_ref());
    // `containerManager.Start` (`initializeRuntimeDependentModules`, before the sync loop
    // admits a pod): the CPU manager's state and reconcile loop.
    let mut tasks = JoinSet::new();
    cpu_manager::start(
        &b.cpu_manager,
        &b.kubelet,
        b.manager.runtime_service().clone(),
        deps.shutdown.clone(),
        &mut tasks,
    )
    .await?;
    memory_manager::start(
        &b.memory_manager,
        &b.kubelet,
        b.manager.runtime_service().as_ref(),
    )
    .await?;
    node_setup::spawn_system_container_loops(
        started.system,
        deps.host_fs.clone(),
        deps.cgroup_version,
        deps.shutdown.clone(),
        &mut tasks,
    );
    let stats = stats::summary_provider(&deps, &b.kubelet);
    let image_gc = image_gc::new_image_gc_manager(&deps, b.kubelet.runtime.clone(), &stats)?;
    spawn_pleg(&deps, &b, &mut tasks);
    spawn_log_rotation(&deps, &b, &mut tasks);
    // `StartGarbageCollection`, then `imageManager.Start` (`initializeModules`).
    spawn_container_gc(&deps, &b, &mut tasks);
    image_gc::spawn_image_gc(&deps, &image_gc, &mut tasks);
    let Built {
        kubelet,
        pod_config,
        sources,
        inputs,
        eviction,
        ..
    } = b;
    pod_cgroups::spawn_qos_updates(&kubelet, deps.shutdown.clone(), &mut tasks);
    spawn_sync_loop(&deps, kubelet.clone(), inputs, &mut tasks);
    for h in sources {
        tasks.spawn(async move {
            let _ = h.await;
        });
    }
    // The config must outlive the sources; it is dropped when shutdown comes.
    let cancel = deps.shutdown.clone();
    tasks.spawn(async move {
        cancel.cancelled().await;
        drop(pod_config);
    });
    eviction::start(
        &eviction,
        &kubelet,
        stats.clone(),
        image_gc.clone(),
        deps.shutdown.clone(),
        &mut tasks,
    );
    // `shutdownManager.Start()`, last of `initializeRuntimeDependentModules`.
    nodeshutdown::start(&kubelet.shutdown_manager, &kubelet, &mut tasks);
    let host: kubelet_server::Host = Arc::new(
        host::KubeletHost::new(kubelet.clone(), deps.runtime.runtime.clone()).with_stats(stats),
    );
    secure::start_secure_server(
        &deps,
        &host,
        deps.configz.payload(),
        &deps.shutdown,
        &mut tasks,
    )
    .await?;
    start_read_only_server(deps.server, &host, &deps.shutdown, &mut tasks).await?;
    if let Some(clients) = &deps.clients {
        api::start_api_mode(&deps, clients, &kubelet, image_gc.clone(), &mut tasks).await?;
    }
    Ok(RunningKubelet { tasks, kubelet })
}

/// `ListenAndServeReadOnly` on `address:readOnlyPort` when the port is non-zero.
async fn start_read_only_server(
    server: &KubeletServer,
    host: &kubelet_server::Host,
    cancel: &CancellationToken,
    tasks: &mut JoinSet<()>,
) -> Result<(), RunError> {
    let port = server.config.read_only_port;
    if port <= 0 {
        return Ok(());
    }
    let port = u16::try_from(port)
        .map_err(|_| RunError::Kubelet(format!("invalid readOnlyPort {port}")))?;
    let address = &server.config.address;
    let listener = kubelet_server::bind(address, port).await?;
    tracing::info!(address = %address, port, "Starting to listen read-only");
    let router = kubelet_server::read_only_router(host.clone());
    let cancel = cancel.clone();
    tasks.spawn(async move {
        if let Err(e) = kubelet_server::serve(listener, router, cancel).await {
            tracing::error!(err = %e, "read-only server failed");
        }
    });
    Ok(())
}
