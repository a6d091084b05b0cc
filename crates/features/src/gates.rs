//! Typed names for the gates the kubelet's startup, config and server paths consult
//! (the constants of `pkg/features/kube_features.go` and `k8s.io/component-base/zpages/features`).

use crate::Feature;

pub const ALL_ALPHA: Feature = Feature("AllAlpha");
pub const ALL_BETA: Feature = Feature("AllBeta");

pub const CONTAINER_CHECKPOINT: Feature = Feature("ContainerCheckpoint");
pub const CONTAINER_RESTART_RULES: Feature = Feature("ContainerRestartRules");
pub const RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS: Feature =
    Feature("RestartAllContainersOnContainerExits");
pub const CPU_CFS_QUOTA_PERIOD: Feature = Feature("CustomCPUCFSQuotaPeriod");
pub const CPU_MANAGER_POLICY_ALPHA_OPTIONS: Feature = Feature("CPUManagerPolicyAlphaOptions");
pub const CPU_MANAGER_POLICY_BETA_OPTIONS: Feature = Feature("CPUManagerPolicyBetaOptions");
pub const CPU_MANAGER_POLICY_OPTIONS: Feature = Feature("CPUManagerPolicyOptions");
pub const CHANGE_CONTAINER_STATUS_ON_KUBELET_RESTART: Feature =
    Feature("ChangeContainerStatusOnKubeletRestart");
pub const ALLOW_OVERWRITE_TERMINATION_GRACE_PERIOD_SECONDS: Feature =
    Feature("AllowOverwriteTerminationGracePeriodSeconds");
pub const COMPONENT_FLAGZ: Feature = Feature("ComponentFlagz");
pub const COMPONENT_STATUSZ: Feature = Feature("ComponentStatusz");
pub const DISABLE_CPU_QUOTA_WITH_EXCLUSIVE_CPUS: Feature =
    Feature("DisableCPUQuotaWithExclusiveCPUs");
pub const ENV_FILES: Feature = Feature("EnvFiles");
pub const EVENTED_PLEG: Feature = Feature("EventedPLEG");
pub const EXEC_PROBE_TIMEOUT: Feature = Feature("ExecProbeTimeout");
pub const GRACEFUL_NODE_SHUTDOWN: Feature = Feature("GracefulNodeShutdown");
pub const GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY: Feature =
    Feature("GracefulNodeShutdownBasedOnPodPriority");
pub const HOSTNAME_OVERRIDE: Feature = Feature("HostnameOverride");
pub const IMAGE_MAXIMUM_GC_AGE: Feature = Feature("ImageMaximumGCAge");
pub const IMAGE_VOLUME: Feature = Feature("ImageVolume");
pub const IN_PLACE_POD_VERTICAL_SCALING: Feature = Feature("InPlacePodVerticalScaling");
pub const KUBELET_CGROUP_DRIVER_FROM_CRI: Feature = Feature("KubeletCgroupDriverFromCRI");
pub const KUBELET_CRASH_LOOP_BACK_OFF_MAX: Feature = Feature("KubeletCrashLoopBackOffMax");
pub const KUBELET_ENSURE_SECRET_PULLED_IMAGES: Feature = Feature("KubeletEnsureSecretPulledImages");
pub const KUBELET_FINE_GRAINED_AUTHZ: Feature = Feature("KubeletFineGrainedAuthz");
pub const KUBELET_IN_USER_NAMESPACE: Feature = Feature("KubeletInUserNamespace");
pub const KUBELET_PSI: Feature = Feature("KubeletPSI");
pub const KUBELET_POD_RESOURCES_GET: Feature = Feature("KubeletPodResourcesGet");
pub const KUBELET_SEPARATE_DISK_GC: Feature = Feature("KubeletSeparateDiskGC");
pub const KUBELET_TRACING: Feature = Feature("KubeletTracing");
pub const MEMORY_MANAGER: Feature = Feature("MemoryManager");
pub const MEMORY_QOS: Feature = Feature("MemoryQoS");
pub const NODE_LOG_QUERY: Feature = Feature("NodeLogQuery");
pub const NODE_SWAP: Feature = Feature("NodeSwap");
pub const POD_AND_CONTAINER_STATS_FROM_CRI: Feature = Feature("PodAndContainerStatsFromCRI");
pub const POD_LEVEL_RESOURCES: Feature = Feature("PodLevelResources");
pub const POD_LOGS_QUERY_SPLIT_STREAMS: Feature = Feature("PodLogsQuerySplitStreams");
pub const POD_OBSERVED_GENERATION_TRACKING: Feature = Feature("PodObservedGenerationTracking");
pub const POD_READY_TO_START_CONTAINERS_CONDITION: Feature =
    Feature("PodReadyToStartContainersCondition");
pub const PORT_FORWARD_WEBSOCKETS: Feature = Feature("PortForwardWebsockets");
pub const QOS_RESERVED: Feature = Feature("QOSReserved");
pub const REDUCE_DEFAULT_CRASH_LOOP_BACK_OFF_DECAY: Feature =
    Feature("ReduceDefaultCrashLoopBackOffDecay");
pub const RELOAD_KUBELET_SERVER_CERTIFICATE_FILE: Feature =
    Feature("ReloadKubeletServerCertificateFile");
pub const ROTATE_KUBELET_SERVER_CERTIFICATE: Feature = Feature("RotateKubeletServerCertificate");
pub const SIDECAR_CONTAINERS: Feature = Feature("SidecarContainers");
pub const SYSTEMD_WATCHDOG: Feature = Feature("SystemdWatchdog");
pub const TOPOLOGY_MANAGER_POLICY_ALPHA_OPTIONS: Feature =
    Feature("TopologyManagerPolicyAlphaOptions");
pub const TOPOLOGY_MANAGER_POLICY_BETA_OPTIONS: Feature =
    Feature("TopologyManagerPolicyBetaOptions");
pub const TOPOLOGY_MANAGER_POLICY_OPTIONS: Feature = Feature("TopologyManagerPolicyOptions");
pub const USER_NAMESPACES_SUPPORT: Feature = Feature("UserNamespacesSupport");
pub const LOGGING_ALPHA_OPTIONS: Feature = Feature("LoggingAlphaOptions");
pub const LOGGING_BETA_OPTIONS: Feature = Feature("LoggingBetaOptions");
pub const CONTEXTUAL_LOGGING: Feature = Feature("ContextualLogging");

/// Every typed name above, for the test that checks each one is registered.
pub const ALL: &[Feature] = &[
    ALL_ALPHA,
    ALL_BETA,
    CONTAINER_CHECKPOINT,
    CONTAINER_RESTART_RULES,
    RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS,
    CPU_CFS_QUOTA_PERIOD,
    CPU_MANAGER_POLICY_ALPHA_OPTIONS,
    CPU_MANAGER_POLICY_BETA_OPTIONS,
    CPU_MANAGER_POLICY_OPTIONS,
    CHANGE_CONTAINER_STATUS_ON_KUBELET_RESTART,
    ALLOW_OVERWRITE_TERMINATION_GRACE_PERIOD_SECONDS,
    COMPONENT_FLAGZ,
    COMPONENT_STATUSZ,
    DISABLE_CPU_QUOTA_WITH_EXCLUSIVE_CPUS,
    ENV_FILES,
    EVENTED_PLEG,
    EXEC_PROBE_TIMEOUT,
    GRACEFUL_NODE_SHUTDOWN,
    GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY,
    HOSTNAME_OVERRIDE,
    IMAGE_MAXIMUM_GC_AGE,
    IMAGE_VOLUME,
    IN_PLACE_POD_VERTICAL_SCALING,
    KUBELET_CGROUP_DRIVER_FROM_CRI,
    KUBELET_CRASH_LOOP_BACK_OFF_MAX,
    KUBELET_ENSURE_SECRET_PULLED_IMAGES,
    KUBELET_FINE_GRAINED_AUTHZ,
    KUBELET_IN_USER_NAMESPACE,
    KUBELET_PSI,
    KUBELET_POD_RESOURCES_GET,
    KUBELET_SEPARATE_DISK_GC,
    KUBELET_TRACING,
    MEMORY_MANAGER,
    MEMORY_QOS,
    NODE_LOG_QUERY,
    NODE_SWAP,
    POD_AND_CONTAINER_STATS_FROM_CRI,
    POD_LEVEL_RESOURCES,
    POD_LOGS_QUERY_SPLIT_STREAMS,
    POD_OBSERVED_GENERATION_TRACKING,
    POD_READY_TO_START_CONTAINERS_CONDITION,
    PORT_FORWARD_WEBSOCKETS,
    QOS_RESERVED,
    REDUCE_DEFAULT_CRASH_LOOP_BACK_OFF_DECAY,
    RELOAD_KUBELET_SERVER_CERTIFICATE_FILE,
    ROTATE_KUBELET_SERVER_CERTIFICATE,
    SIDECAR_CONTAINERS,
    SYSTEMD_WATCHDOG,
    TOPOLOGY_MANAGER_POLICY_ALPHA_OPTIONS,
    TOPOLOGY_MANAGER_POLICY_BETA_OPTIONS,
    TOPOLOGY_MANAGER_POLICY_OPTIONS,
    USER_NAMESPACES_SUPPORT,
    LOGGING_ALPHA_OPTIONS,
    LOGGING_BETA_OPTIONS,
    CONTEXTUAL_LOGGING,
];
