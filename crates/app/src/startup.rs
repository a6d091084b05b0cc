//! The startup sequence of `cmd/kubelet/app/server.go` `run()`, one named function per
//! step, in upstream's order. [`run`] calls them; ARCHITECTURE.md maps each to upstream.

use std::path::Path;
use std::time::Duration;

use kubelet_cm::{
    CgroupDriver, CgroupVersion, HostFs, MachineInfo, NodeConfig, NodeConfigInput, RealHostFs,
};
use kubelet_config::{HostInfo, KubeletServer};
use tokio_util::sync::CancellationToken;

use crate::auth::{AuthError, AuthSettings, build_auth};
use crate::configz::Configz;
use crate::lockfile::{self, LockError, LockFile};
use crate::notify::notify_ready;
use crate::startable::check_startable;
use crate::version;

/// Why the kubelet stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Logging could not be set up.
    #[error("{0}")]
    Logging(#[from] kubelet_klog::LogError),
    /// The configuration is invalid (every error, upstream wording).
    #[error("failed to validate kubelet configuration, error: {0}")]
    Validation(kubelet_config::ValidationErrors),
    /// The lock-file step failed.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The API server clients could not be built from `--kubeconfig`.
    #[error(transparent)]
    Clients(#[from] kubelet_client::ClientError),
    /// A setting needs a part of API server mode kubelet-rs does not have yet.
    #[error("{0}")]
    ApiModeUnsupported(String),
    /// The node name is invalid.
    #[error("{0}")]
    Hostname(String),
    /// `BuildAuth` refused the settings.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// Container-manager set-up failed.
    #[error(transparent)]
    ContainerManager(#[from] kubelet_cm::CmError),
    /// The container runtime could not be reached or is unusable.
    #[error(transparent)]
    Runtime(#[from] kubelet_cri::CriError),
    /// A server could not start.
    #[error(transparent)]
    Server(#[from] kubelet_server::ServerError),
    /// The Kubelet itself failed.
    #[error("{0}")]
    Kubelet(String),
    /// The tokio runtime could not be built.
    #[error("failed to start the async runtime: {0}")]
    AsyncRuntime(std::io::Error),
}

/// The host facts validation needs (cgroup v1 or v2).
pub fn host_info() -> HostInfo {
    match CgroupVersion::detect(&RealHostFs) {
        Ok(v) => HostInfo {
            cgroup_v1: v == CgroupVersion::V1,
        },
        Err(e) => {
            eprintln!("W cannot detect the cgroup version, assuming v2: {e}");
            HostInfo { cgroup_v1: false }
        }
    }
}

/// `logs.InitLogs` + `logsapi.ValidateAndApply`: format, verbosity and vmodule from the config.
pub fn init_logging(s: &KubeletServer) -> Result<(), RunError> {
    let format: kubelet_klog::Format = s.config.logging.format.parse()?;
    let vmodule = kubelet_klog::VModule::new(
        s.config
            .logging
            .vmodule
            .iter()
            .map(|v| (v.file_pattern.clone(), v.verbosity)),
    );
    kubelet_klog::init(format, s.config.logging.verbosity, vmodule)?;
    for w in &s.warnings {
        tracing::warn!("{w}");
    }
    Ok(())
}

/// Builds the tokio runtime and runs [`run`] on it.
pub fn run_blocking(s: KubeletServer, host: HostInfo) -> Result<(), RunError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("kubelet-rs")
        .build()
        .map_err(RunError::AsyncRuntime)?;
    rt.block_on(run(s, host))
}

/// Step: feature gates. The gates were set while loading; log them as upstream does and
/// hand the ones pure pod logic reads to it (upstream `utilfeature.DefaultFeatureGate`).
pub fn set_feature_gates(s: &KubeletServer) {
    tracing::info!(gates = ?s.config.feature_gates, "feature gates");
    kubelet_container::gates::set_container_restart_rules(
        s.feature_gates
            .enabled(kubelet_features::gates::CONTAINER_RESTART_RULES),
    );
    kubelet_container::gates::set_restart_all_containers_on_container_exits(
        s.feature_gates
            .enabled(kubelet_features::gates::RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS),
    );
    kubelet_container::gates::set_image_volume(
        s.feature_gates
            .enabled(kubelet_features::gates::IMAGE_VOLUME),
    );
}

/// Step: `ValidateKubeletServer` (configuration; the flags were validated while loading).
pub fn validate_kubelet_server(s: &KubeletServer, host: HostInfo) -> Result<(), RunError> {
    kubelet_config::validate_kubelet_configuration(&s.config, &s.feature_gates, host)
        .map_err(RunError::Validation)
}

/// Step: the MemoryQoS warning on cgroup v1.
pub fn memory_qos_warning(s: &KubeletServer, host: HostInfo) {
    if s.feature_gates.enabled(kubelet_features::gates::MEMORY_QOS) && host.cgroup_v1 {
        tracing::warn!(
            "MemoryQoS feature only works with cgroups v2 on Linux, but enabled with cgroups v1"
        );
    }
}

/// Step: `--lock-file` / `--exit-on-lock-contention`.
pub async fn acquire_lock_file(
    s: &KubeletServer,
    contention: &CancellationToken,
) -> Result<Option<LockFile>, RunError> {
    let path = &s.flags.lock_file_path;
    if s.flags.exit_on_lock_contention && path.is_empty() {
        return Err(LockError::NoLockFile.into());
    }
    if path.is_empty() {
        return Ok(None);
    }
    tracing::info!(path = %path, "Acquiring file lock");
    let lock = lockfile::acquire(Path::new(path)).await?;
    if s.flags.exit_on_lock_contention {
        tracing::info!(path = %path, "Watching for inotify events");
        lockfile::watch_for_contention(&lock, contention.clone())?;
    }
    Ok(Some(lock))
}

/// Step: configz registration of the configuration as `InitializeTLS` left it.
pub fn init_configz(s: &KubeletServer) -> Configz {
    Configz::new(crate::configz::kubelet_config_object(&s.config, &s.flags))
}

/// Upstream `run()`: `standaloneMode := len(s.KubeConfig) == 0`.
pub fn is_standalone(s: &KubeletServer) -> bool {
    s.flags.kubeconfig.is_empty()
}

/// The API server clients and, with `rotateCertificates`, the client certificate manager
/// to start with them.
pub type ApiClients = (
    std::sync::Arc<kubelet_client::KubeletClients>,
    Option<std::sync::Arc<kubelet_certificate::Manager>>,
);

/// Step: standalone mode, or the API server clients (`buildKubeletClientConfig`: TLS
/// bootstrap from `--bootstrap-kubeconfig`, or the rotating client certificate with
/// `rotateCertificates`; then `KubeClient`, `EventClient`, `HeartbeatClient` with their
/// QPS, burst and timeouts). Without `rotateCertificates`, a bootstrap waits for its
/// certificate (as upstream); otherwise building does not contact the API server.
pub async fn build_clients(
    s: &KubeletServer,
    node_name: &str,
) -> Result<Option<ApiClients>, RunError> {
    if is_standalone(s) {
        tracing::info!("Standalone mode, no API client");
        return Ok(None);
    }
    let built = crate::kubelet::build_kubelet_clients(s, node_name).await?;
    tracing::info!(kubeconfig = %s.flags.kubeconfig, settings = ?built.clients.settings, "Built the API server clients");
    Ok(Some((built.clients, built.client_certificate_manager)))
}

/// Step (in `run()`, before `RunKubelet`): `makeEventRecorder`: every event is logged at
/// V(3), and sent through the event client when there is an API server
/// (`crates/events`).
pub fn make_event_recorder(
    node_name: &str,
    clients: Option<&kubelet_client::KubeletClients>,
    shutdown: &CancellationToken,
) -> std::sync::Arc<dyn kubelet_container::EventRecorder> {
    let sink = clients.map(|c| {
        std::sync::Arc::new(kubelet_events::KubeEventSink::new(c.event.clone()))
            as std::sync::Arc<dyn kubelet_events::EventSink>
    });
    kubelet_events::make_event_recorder(
        node_name,
        sink,
        std::sync::Arc::new(kubelet_container::RealClock),
        shutdown.clone(),
    )
}

/// Step: `nodeutil.GetHostname(--hostname-override)`: trimmed and lower-cased.
pub fn node_name(hostname_override: &str) -> Result<String, RunError> {
    let raw = if hostname_override.trim().is_empty() {
        nix::unistd::gethostname()
            .map_err(|e| RunError::Hostname(format!("couldn't determine hostname: {e}")))?
            .to_string_lossy()
            .into_owned()
    } else {
        hostname_override.to_string()
    };
    let name = raw.trim().to_lowercase();
    if name.is_empty() {
        return Err(RunError::Hostname("empty hostname is invalid".into()));
    }
    Ok(name)
}

/// Step: `BuildAuth`'s checks (standalone: no client, so the webhooks are refused).
pub fn build_auth_step(s: &KubeletServer) -> Result<AuthSettings, RunError> {
    Ok(build_auth(&s.config, !is_standalone(s))?)
}

/// Step: cgroup roots (`NodeAllocatableRoot` and the configured kubelet/runtime/system cgroups).
pub fn cgroup_roots(s: &KubeletServer) -> Vec<String> {
    let c = &s.config;
    let cgroups_per_qos = c.cgroups_per_qos.unwrap_or(true);
    let mut roots =
        vec![kubelet_cm::node_allocatable_root(&c.cgroup_root, cgroups_per_qos).to_cgroupfs()];
    for extra in [
        &c.kubelet_cgroups,
        &s.flags.runtime_cgroups,
        &c.system_cgroups,
    ] {
        if !extra.is_empty() {
            roots.push(extra.clone());
        }
    }
    tracing::info!(roots = ?roots, "Using cgroup roots");
    roots
}

/// Step: machine info.
pub fn machine_info(fs: &dyn HostFs) -> Result<MachineInfo, RunError> {
    let m = kubelet_cm::read_machine_info(fs)?;
    tracing::info!(cores = m.num_cores(), memory = m.memory_capacity, kernel = %m.kernel_version, os = %m.os_image, "Machine info");
    Ok(m)
}

/// Step: reserved CPUs, kube/system reserved, hard eviction thresholds, QoS reserved.
pub fn container_manager_config(
    s: &KubeletServer,
    machine: &MachineInfo,
) -> Result<NodeConfig, RunError> {
    let c = &s.config;
    let no_thresholds = std::collections::BTreeMap::new();
    Ok(NodeConfig::parse(
        NodeConfigInput {
            reserved_system_cpus: &c.reserved_system_cpus,
            kube_reserved: &c.kube_reserved,
            system_reserved: &c.system_reserved,
            eviction_hard: c.eviction_hard.as_ref().unwrap_or(&no_thresholds),
            ignore_eviction_for_allocatable: s
                .flags
                .experimental_node_allocatable_ignore_eviction_threshold,
            qos_reserved: &c.qos_reserved,
            enforce_node_allocatable: c.enforce_node_allocatable.as_deref().unwrap_or(&[]),
        },
        machine,
    )?)
}

/// Resource-manager policies kubelet-rs does not implement yet are refused rather than
/// silently ignored (a node that does not pin memory when asked to would differ from
/// upstream without telling anyone); the gates upstream checks here are honoured. The
/// topology, CPU and memory managers' own checks are
/// [`crate::kubelet::topology_manager::new_resource_managers`]'s.
pub fn check_resource_managers(s: &KubeletServer) -> Result<(), RunError> {
    let c = &s.config;
    if c.cpu_manager_policy == "static"
        && s.feature_gates
            .enabled_by_name("InPlacePodVerticalScalingExclusiveCPUs")
            .unwrap_or(false)
    {
        return Err(RunError::Kubelet(
            "feature gate InPlacePodVerticalScalingExclusiveCPUs (resizing the exclusive CPUs of the cpuManagerPolicy \"static\") is not implemented by kubelet-rs yet; turn it off".to_string(),
        ));
    }
    if !c.topology_manager_policy_options.is_empty()
        && !s
            .feature_gates
            .enabled(kubelet_features::gates::TOPOLOGY_MANAGER_POLICY_OPTIONS)
    {
        return Err(RunError::Kubelet(format!(
            "topology manager policy options {:?} require feature gates \"TopologyManagerPolicyOptions\" enabled",
            c.topology_manager_policy_options
        )));
    }
    Ok(())
}

/// The cgroup hierarchy [`host_info`] detected (detected once, at start).
pub fn cgroup_version(host: HostInfo) -> CgroupVersion {
    if host.cgroup_v1 {
        CgroupVersion::V1
    } else {
        CgroupVersion::V2
    }
}

/// Step (container manager): swap rules (`failSwapOn`, `LimitedSwap` needs cgroup v2).
pub fn check_swap(s: &KubeletServer, fs: &dyn HostFs, host: HostInfo) -> Result<(), RunError> {
    let version = cgroup_version(host);
    kubelet_cm::check_swap(
        fs,
        s.config.fail_swap_on.unwrap_or(true),
        &s.config.memory_swap.swap_behavior,
        version,
    )?;
    Ok(())
}

/// Step: OOM score of the kubelet itself; failure is logged and start-up continues.
pub fn apply_oom_score(fs: &dyn HostFs, value: i32) {
    if let Err(e) = kubelet_cm::apply_oom_score_adj(fs, 0, value) {
        tracing::info!(err = %e, "Failed to ApplyOOMScoreAdj");
    }
}

/// The connected runtime.
pub struct PreInitRuntime {
    /// CRI runtime service.
    pub runtime: std::sync::Arc<kubelet_cri::RemoteRuntimeService>,
    /// CRI image service.
    pub image: std::sync::Arc<kubelet_cri::RemoteImageService>,
    /// The runtime's Version answer.
    pub version: kubelet_cri::v1::VersionResponse,
    /// The cgroup driver (from CRI, or the configured one).
    pub cgroup_driver: CgroupDriver,
    /// Where the driver came from (the runtime's `RuntimeConfig`, or `cgroupDriver`).
    pub cgroup_driver_source: kubelet_cri::CgroupDriverSource,
    /// The features of the runtime's first `Status` answer (`None`: it reports none, or
    /// the call failed). Admission's node before a Node object exists (standalone mode
    /// throughout) reports them as `status.features`.
    pub features: Option<kubelet_container::RuntimeFeatures>,
}

/// Step: CRI runtime pre-init: connect and validate, then the cgroup driver from CRI.
pub async fn pre_init_runtime_service(s: &KubeletServer) -> Result<PreInitRuntime, RunError> {
    let c = &s.config;
    let timeout = c
        .runtime_request_timeout
        .as_std()
        .unwrap_or(Duration::from_secs(120));
    let (runtime, image, version) = kubelet_cri::pre_init_runtime_service(
        &c.container_runtime_endpoint,
        &c.image_service_endpoint,
        timeout,
    )
    .await?;
    let driver = kubelet_cri::cgroup_driver_from_cri(&runtime, &c.cgroup_driver).await?;
    tracing::info!(driver = %driver.driver, source = ?driver.source, "Using cgroup driver");
    let cgroup_driver: CgroupDriver = driver.driver.parse()?;
    let features = runtime_features(&runtime).await;
    Ok(PreInitRuntime {
        runtime: std::sync::Arc::new(runtime),
        image: std::sync::Arc::new(image),
        version,
        cgroup_driver,
        cgroup_driver_source: driver.source,
        features,
    })
}

/// systemd's D-Bus API for the systemd cgroup driver (libcontainer's `dbusConnManager`,
/// connected on the first call): `None` with cgroupfs, and when systemd is not running
/// (`IsRunningSystemd`), which the container manager's start refuses where it needs
/// systemd (`start_container_manager`).
pub fn systemd_connection(
    driver: CgroupDriver,
) -> Result<Option<std::sync::Arc<kubelet_systemd::Systemd>>, RunError> {
    if driver != CgroupDriver::Systemd || !kubelet_systemd::is_running_systemd() {
        return Ok(None);
    }
    let manager = kubelet_systemd::DbusSystemdManager::system()
        .map_err(|e| RunError::Kubelet(format!("systemd cgroup driver: {e}")))?;
    Ok(Some(std::sync::Arc::new(kubelet_systemd::Systemd::new(
        std::sync::Arc::new(manager),
    ))))
}

/// The features of a CRI `Status` answer (upstream `toKubeRuntimeStatus`); a failed call
/// is logged and reads as no features.
async fn runtime_features(
    runtime: &dyn kubelet_cri::RuntimeService,
) -> Option<kubelet_container::RuntimeFeatures> {
    match runtime.status(false).await {
        Ok(resp) => resp.features.map(|f| kubelet_container::RuntimeFeatures {
            supplemental_groups_policy: f.supplemental_groups_policy,
        }),
        Err(e) => {
            tracing::error!(err = %e, "Container runtime sanity check failed");
            None
        }
    }
}

/// Step: the healthz server on `healthzBindAddress:healthzPort` (plain HTTP, ping only).
pub async fn start_healthz(
    s: &KubeletServer,
    cancel: &CancellationToken,
) -> Result<Option<tokio::task::JoinHandle<()>>, RunError> {
    let port = s.config.healthz_port.unwrap_or(0);
    if port <= 0 {
        return Ok(None);
    }
    let port = u16::try_from(port)
        .map_err(|_| RunError::Kubelet(format!("invalid healthzPort {port}")))?;
    let listener = kubelet_server::bind(&s.config.healthz_bind_address, port).await?;
    tracing::info!(address = %s.config.healthz_bind_address, port, "Starting healthz server");
    let cancel = cancel.clone();
    Ok(Some(tokio::spawn(async move {
        if let Err(e) =
            kubelet_server::serve(listener, kubelet_server::healthz_router(), cancel).await
        {
            tracing::error!(err = %e, "healthz server failed");
        }
    })))
}

/// SIGTERM and SIGINT, caught from the first step of [`run`] on (upstream's
/// `SetupSignalContext` before `Run`): a signal that arrives while the kubelet starts is kept
/// and ends it as soon as it is up, instead of killing it with the default action.
pub struct ShutdownSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    pub fn install() -> Result<Self, RunError> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            term: signal(SignalKind::terminate()).map_err(RunError::AsyncRuntime)?,
            int: signal(SignalKind::interrupt()).map_err(RunError::AsyncRuntime)?,
        })
    }
}

impl ShutdownSignals {
    /// The next SIGTERM or SIGINT, by name.
    pub async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

/// Waits for SIGTERM/SIGINT, lock contention, or a fatal error of the kubelet.
pub async fn wait_for_shutdown(
    signals: &mut ShutdownSignals,
    contention: &CancellationToken,
    fatal: &CancellationToken,
) -> Result<(), RunError> {
    tokio::select! {
        signal = signals.recv() => tracing::info!("Received {signal}, shutting down"),
        _ = contention.cancelled() => tracing::info!("Lock file contention, shutting down"),
        _ = fatal.cancelled() => return Err(RunError::Kubelet("a critical kubelet task stopped".into())),
    }
    Ok(())
}

/// What [`start`] leaves running: the kubelet, the healthz server, and what ends them.
struct Started {
    kubelet: crate::kubelet::RunningKubelet,
    healthz: Option<tokio::task::JoinHandle<()>>,
    shutdown: CancellationToken,
    contention: CancellationToken,
    fatal: CancellationToken,
    _lock: Option<LockFile>,
}

/// `run()`: every step in upstream's order, then wait, then shut down cleanly. The checks
/// of [`check_startable`] (validation, the standalone mode, hostname, auth, machine info,
/// container-manager settings, resource managers, swap, node IPs, TLS, clusterDNS,
/// containerLogMaxSize) all run before the first step that writes or binds anything.
///
/// SIGTERM or SIGINT while the kubelet starts (a runtime that does not answer, an API server
/// that is down) stops the start where it is and exits cleanly; upstream's steps see a
/// cancelled context and fail or go on, depending on the step.
pub async fn run(s: KubeletServer, host: HostInfo) -> Result<(), RunError> {
    let mut signals = ShutdownSignals::install()?;
    let started = tokio::select! {
        started = start(s, host) => started?,
        signal = signals.recv() => {
            tracing::info!(signal, "Received a signal while starting, shutting down");
            return Ok(());
        }
    };
    notify_ready();
    tracing::info!("Started kubelet");

    let result = wait_for_shutdown(&mut signals, &started.contention, &started.fatal).await;
    started.shutdown.cancel();
    let drain = async {
        started.kubelet.wait().await;
        if let Some(h) = started.healthz {
            let _ = h.await;
        }
    };
    if tokio::time::timeout(Duration::from_millis(1500), drain)
        .await
        .is_err()
    {
        tracing::warn!("Some kubelet tasks did not stop in time");
    }
    result
}

/// Every start-up step, from the version line to the healthz server.
async fn start(s: KubeletServer, host: HostInfo) -> Result<Started, RunError> {
    tracing::info!(version = %version::git_version(), "Kubelet version");
    set_feature_gates(&s);
    let fs = RealHostFs;
    let checked = check_startable(&s, host, &fs)?;
    for w in kubelet_config::support::warnings(&s) {
        tracing::warn!("{w}");
    }
    for w in &checked.warnings {
        w.log();
    }
    memory_qos_warning(&s, host);
    let contention = CancellationToken::new();
    let lock = acquire_lock_file(&s, &contention).await?;
    let configz = init_configz(&s);
    let api_clients = build_clients(&s, &checked.node_name).await?;
    tracing::debug!(auth = ?checked.auth, "Authentication and authorization");
    let _roots = cgroup_roots(&s);
    apply_oom_score(&fs, s.config.oom_score_adj.unwrap_or(-999));
    let runtime = pre_init_runtime_service(&s).await?;
    let systemd = systemd_connection(runtime.cgroup_driver)?;

    let shutdown = CancellationToken::new();
    let fatal = CancellationToken::new();
    let (clients, client_certificate_manager) = api_clients.unzip();
    if let Some(manager) = client_certificate_manager.flatten() {
        crate::kubelet::start_client_certificate_manager(manager, &shutdown, &fatal);
    }
    let recorder = make_event_recorder(&checked.node_name, clients.as_deref(), &shutdown);
    let kubelet = crate::kubelet::run_kubelet(crate::kubelet::KubeletDeps {
        server: &s,
        node_name: checked.node_name,
        machine: checked.machine,
        node_config: checked.node_config,
        node_ips: checked.node_ips,
        cluster_dns: checked.cluster_dns,
        container_log_max_size: checked.container_log_max_size,
        serving_tls: checked.tls,
        cgroup_version: cgroup_version(host),
        runtime,
        systemd,
        configz,
        recorder,
        clients,
        host_fs: std::sync::Arc::new(fs),
        rlimits: std::sync::Arc::new(kubelet_cm::RealRlimits),
        process_killer: std::sync::Arc::new(kubelet_cm::RealProcessKiller),
        shutdown: shutdown.clone(),
        fatal: fatal.clone(),
    })
    .await?;
    let healthz = start_healthz(&s, &shutdown).await?;
    Ok(Started {
        kubelet,
        healthz,
        shutdown,
        contention,
        fatal,
        _lock: lock,
    })
}
