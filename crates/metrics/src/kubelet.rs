//! The kubelet's own metrics (mirrors `pkg/kubelet/metrics/metrics.go`,
//! `pkg/kubelet/server/metrics/metrics.go`, `pkg/kubelet/prober/prober_manager.go`,
//! component-base `prometheus/restclient` and `prometheus/version`): names, labels, help
//! texts, stability levels and buckets as upstream 1.35.4 declares them.
//!
//! Registered in the `/metrics` registry ([`crate::legacy_registry`]) are the families
//! issue #8 lists and those their subsystems update next to them; upstream's families of
//! subsystems kubelet-rs refuses (CPU/memory/topology managers, device plugins, DRA,
//! pod resources API, image volumes) are not registered; the graceful shutdown gauges are
//! registered with their gates ([`GracefulShutdownMetrics`]).

use prometheus::core::Collector;
use prometheus::{Counter, CounterVec, Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec};

use crate::registry::{KubeRegistry, RegisterError, Stability, StabilityLevel, opts};

const ALPHA: Stability = Stability::of(StabilityLevel::Alpha);
const BETA: Stability = Stability::of(StabilityLevel::Beta);
const INTERNAL: Stability = Stability::of(StabilityLevel::Internal);

/// `metrics.DefBuckets` (prometheus `DefBuckets`).
pub const DEF_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The pod startup timeline's histogram: a kubelet-rs family (the `kubelet_rs_` prefix never
/// collides with an upstream name).
pub const POD_STARTUP_STEP_DURATION: &str = "kubelet_rs_pod_startup_step_duration_seconds";

/// `podStartupDurationBuckets`.
pub const POD_STARTUP_DURATION_BUCKETS: [f64; 25] = [
    0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 30.0, 45.0, 60.0, 120.0, 180.0, 240.0,
    300.0, 360.0, 480.0, 600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0,
];

/// `metrics.ExponentialBuckets(start, factor, count)`.
pub fn exponential_buckets(start: f64, factor: f64, count: usize) -> Vec<f64> {
    let mut next = start;
    (0..count)
        .map(|_| {
            let b = next;
            next *= factor;
            b
        })
        .collect()
}

/// Values of the `container_type` label (`metrics.Container` …).
pub mod container_type {
    /// A regular container.
    pub const CONTAINER: &str = "container";
    /// An init container (sidecars included).
    pub const INIT_CONTAINER: &str = "init_container";
    /// An ephemeral container.
    pub const EPHEMERAL_CONTAINER: &str = "ephemeral_container";
}

/// The families of `pkg/kubelet/metrics` kubelet-rs registers and updates.
#[derive(Clone)]
pub struct KubeletMetrics {
    /// `kubelet_node_name{node}`: always 1.
    pub node_name: GaugeVec,
    /// `kubelet_pod_worker_duration_seconds{operation_type}`.
    pub pod_worker_duration: HistogramVec,
    /// `kubelet_pod_start_duration_seconds`.
    pub pod_start_duration: Histogram,
    /// `kubelet_pod_start_sli_duration_seconds`.
    pub pod_start_sli_duration: HistogramVec,
    /// `kubelet_pod_start_total_duration_seconds`.
    pub pod_start_total_duration: HistogramVec,
    /// `kubelet_first_network_pod_start_sli_duration_seconds` (INTERNAL).
    pub first_network_pod_start_sli_duration: Gauge,
    /// `kubelet_pod_worker_start_duration_seconds`.
    pub pod_worker_start_duration: Histogram,
    /// `kubelet_pleg_relist_duration_seconds`.
    pub pleg_relist_duration: Histogram,
    /// `kubelet_pleg_discard_events`.
    pub pleg_discard_events: Counter,
    /// `kubelet_pleg_relist_interval_seconds`.
    pub pleg_relist_interval: Histogram,
    /// `kubelet_pleg_last_seen_seconds`.
    pub pleg_last_seen: Gauge,
    /// `kubelet_evented_pleg_connection_error_count`.
    pub evented_pleg_conn_err: Counter,
    /// `kubelet_evented_pleg_connection_success_count`.
    pub evented_pleg_conn: Counter,
    /// `kubelet_evented_pleg_connection_latency_seconds`.
    pub evented_pleg_conn_latency: Histogram,
    /// `kubelet_runtime_operations_total{operation_type}`.
    pub runtime_operations: CounterVec,
    /// `kubelet_runtime_operations_duration_seconds{operation_type}`.
    pub runtime_operations_duration: HistogramVec,
    /// `kubelet_runtime_operations_errors_total{operation_type}`.
    pub runtime_operations_errors: CounterVec,
    /// `kubelet_image_garbage_collected_total{reason}` (`age`, `space`).
    pub image_garbage_collected_total: CounterVec,
    /// `kubelet_evictions{eviction_signal}` (the eviction manager, `kubelet-eviction`).
    pub evictions: CounterVec,
    /// `kubelet_eviction_stats_age_seconds{eviction_signal}`.
    pub eviction_stats_age: HistogramVec,
    /// `kubelet_running_pods`.
    pub running_pod_count: Gauge,
    /// `kubelet_running_containers{container_state}`.
    pub running_container_count: GaugeVec,
    /// `kubelet_restarted_pods_total{static}`.
    pub restarted_pod_total: CounterVec,
    /// `kubelet_started_pods_total`.
    pub started_pods_total: Counter,
    /// `kubelet_started_pods_errors_total`.
    pub started_pods_errors_total: Counter,
    /// `kubelet_started_containers_total{container_type}`.
    pub started_containers_total: CounterVec,
    /// `kubelet_started_containers_errors_total{container_type,code}`.
    pub started_containers_errors_total: CounterVec,
    /// `kubelet_run_podsandbox_duration_seconds{runtime_handler}`.
    pub run_podsandbox_duration: HistogramVec,
    /// `kubelet_run_podsandbox_errors_total{runtime_handler}`.
    pub run_podsandbox_errors: CounterVec,
    /// `kubelet_http_requests_total{method,path,server_type,long_running}`.
    pub http_requests: CounterVec,
    /// `kubelet_http_requests_duration_seconds{method,path,server_type,long_running}`.
    pub http_requests_duration: HistogramVec,
    /// `kubelet_http_inflight_requests{method,path,server_type,long_running}`.
    pub http_inflight_requests: GaugeVec,
    /// `rest_client_requests_total{code,method,host}`.
    pub rest_client_requests: CounterVec,
    /// `kubernetes_build_info{…}`: always 1.
    pub build_info: GaugeVec,
    /// `kubelet_rs_pod_startup_step_duration_seconds{step}`: kubelet-rs's own family (no
    /// upstream counterpart), the pod startup timeline's steps
    /// (`kubelet_container::timeline`).
    pub pod_startup_step_duration: HistogramVec,
    /// The CPU, memory and topology managers' families.
    pub resource_managers: ResourceManagerMetrics,
}

/// The resource managers' families (`metrics.go`: `CPUManager*`,
/// `ContainerAlignedComputeResources*`, `MemoryManagerPinning*`,
/// `TopologyManagerAdmission*`), registered with the others, as upstream's `Register`.
#[derive(Clone)]
pub struct ResourceManagerMetrics {
    /// `kubelet_cpu_manager_pinning_requests_total`.
    pub cpu_manager_pinning_requests_total: Counter,
    /// `kubelet_cpu_manager_pinning_errors_total`.
    pub cpu_manager_pinning_errors_total: Counter,
    /// `kubelet_cpu_manager_shared_pool_size_millicores`.
    pub cpu_manager_shared_pool_size_millicores: Gauge,
    /// `kubelet_cpu_manager_exclusive_cpu_allocation_count`.
    pub cpu_manager_exclusive_cpu_allocation_count: Gauge,
    /// `kubelet_cpu_manager_allocation_per_numa{numa_node}`.
    pub cpu_manager_allocation_per_numa: GaugeVec,
    /// `kubelet_container_aligned_compute_resources_count{scope,boundary}`.
    pub container_aligned_compute_resources: CounterVec,
    /// `kubelet_container_aligned_compute_resources_failure_count{scope,boundary}`.
    pub container_aligned_compute_resources_failure: CounterVec,
    /// `kubelet_memory_manager_pinning_requests_total` (no memory manager policy but
    /// `None` runs in kubelet-rs: stays 0).
    pub memory_manager_pinning_requests_total: Counter,
    /// `kubelet_memory_manager_pinning_errors_total` (stays 0, as above).
    pub memory_manager_pinning_errors_total: Counter,
    /// `kubelet_topology_manager_admission_requests_total`.
    pub topology_manager_admission_requests_total: Counter,
    /// `kubelet_topology_manager_admission_errors_total`.
    pub topology_manager_admission_errors_total: Counter,
    /// `kubelet_topology_manager_admission_duration_ms`.
    pub topology_manager_admission_duration_ms: Histogram,
}

impl ResourceManagerMetrics {
    fn register(b: &Builder<'_>) -> Result<Self, RegisterError> {
        let aligned = &["scope", "boundary"];
        Ok(ResourceManagerMetrics {
            cpu_manager_pinning_requests_total: b.counter(
                "kubelet_cpu_manager_pinning_requests_total",
                "The number of cpu core allocations which required pinning.",
                ALPHA,
            )?,
            cpu_manager_pinning_errors_total: b.counter(
                "kubelet_cpu_manager_pinning_errors_total",
                "The number of cpu core allocations which required pinning failed.",
                ALPHA,
            )?,
            cpu_manager_shared_pool_size_millicores: b.gauge(
                "kubelet_cpu_manager_shared_pool_size_millicores",
                "The size of the shared CPU pool for non-guaranteed QoS pods, in millicores.",
                ALPHA,
            )?,
            cpu_manager_exclusive_cpu_allocation_count: b.gauge(
                "kubelet_cpu_manager_exclusive_cpu_allocation_count",
                "The total number of CPUs exclusively allocated to containers running on this node",
                ALPHA,
            )?,
            cpu_manager_allocation_per_numa: b.gauge_vec(
                "kubelet_cpu_manager_allocation_per_numa",
                "Number of CPUs allocated per NUMA node",
                ALPHA,
                &["numa_node"],
            )?,
            container_aligned_compute_resources: b.counter_vec(
                "kubelet_container_aligned_compute_resources_count",
                "Cumulative number of aligned compute resources allocated to containers by alignment type.",
                ALPHA,
                aligned,
            )?,
            container_aligned_compute_resources_failure: b.counter_vec(
                "kubelet_container_aligned_compute_resources_failure_count",
                "Cumulative number of failures to allocate aligned compute resources to containers by alignment type.",
                ALPHA,
                aligned,
            )?,
            memory_manager_pinning_requests_total: b.counter(
                "kubelet_memory_manager_pinning_requests_total",
                "The number of memory pages allocations which required pinning.",
                ALPHA,
            )?,
            memory_manager_pinning_errors_total: b.counter(
                "kubelet_memory_manager_pinning_errors_total",
                "The number of memory pages allocations which required pinning that failed.",
                ALPHA,
            )?,
            topology_manager_admission_requests_total: b.counter(
                "kubelet_topology_manager_admission_requests_total",
                "The number of admission requests where resources have to be aligned.",
                ALPHA,
            )?,
            topology_manager_admission_errors_total: b.counter(
                "kubelet_topology_manager_admission_errors_total",
                "The number of admission request failures where resources could not be aligned.",
                ALPHA,
            )?,
            topology_manager_admission_duration_ms: b.histogram(
                "kubelet_topology_manager_admission_duration_ms",
                "Duration in milliseconds to serve a pod admission request.",
                ALPHA,
                &exponential_buckets(0.05, 2.0, 15),
            )?,
        })
    }
}

/// The prober's families, served on `/metrics/probes` (`prober.ProberResults`,
/// `prober.ProberDuration`).
#[derive(Clone)]
pub struct ProberMetrics {
    /// `prober_probe_total{probe_type,result,container,pod,namespace,pod_uid}` (BETA).
    pub probe_total: CounterVec,
    /// `prober_probe_duration_seconds{probe_type,container,pod,namespace}`.
    pub probe_duration: HistogramVec,
}

fn err(name: &str) -> impl FnOnce(prometheus::Error) -> RegisterError + '_ {
    move |source| RegisterError::new(name, source)
}

fn histogram_opts(name: &str, help: &str, s: Stability, buckets: Vec<f64>) -> HistogramOpts {
    HistogramOpts {
        common_opts: opts(name, help, s),
        buckets,
    }
}

/// The family builders, each registering into `reg` as it creates.
struct Builder<'a> {
    reg: &'a KubeRegistry,
}

impl Builder<'_> {
    fn add<C: Collector + Clone + 'static>(
        &self,
        name: &str,
        s: Stability,
        c: Result<C, prometheus::Error>,
    ) -> Result<C, RegisterError> {
        let c = c.map_err(err(name))?;
        self.reg.register(name, s, Box::new(c.clone()))?;
        Ok(c)
    }
    fn counter(&self, name: &str, help: &str, s: Stability) -> Result<Counter, RegisterError> {
        self.add(name, s, Counter::with_opts(opts(name, help, s)))
    }
    fn counter_vec(
        &self,
        name: &str,
        help: &str,
        s: Stability,
        labels: &[&str],
    ) -> Result<CounterVec, RegisterError> {
        self.add(name, s, CounterVec::new(opts(name, help, s), labels))
    }
    fn gauge(&self, name: &str, help: &str, s: Stability) -> Result<Gauge, RegisterError> {
        self.add(name, s, Gauge::with_opts(opts(name, help, s)))
    }
    fn gauge_vec(
        &self,
        name: &str,
        help: &str,
        s: Stability,
        labels: &[&str],
    ) -> Result<GaugeVec, RegisterError> {
        self.add(name, s, GaugeVec::new(opts(name, help, s), labels))
    }
    fn histogram(
        &self,
        name: &str,
        help: &str,
        s: Stability,
        buckets: &[f64],
    ) -> Result<Histogram, RegisterError> {
        self.add(
            name,
            s,
            Histogram::with_opts(histogram_opts(name, help, s, buckets.to_vec())),
        )
    }
    fn histogram_vec(
        &self,
        name: &str,
        help: &str,
        s: Stability,
        buckets: &[f64],
        labels: &[&str],
    ) -> Result<HistogramVec, RegisterError> {
        self.add(
            name,
            s,
            HistogramVec::new(histogram_opts(name, help, s, buckets.to_vec()), labels),
        )
    }
}

/// The `kubernetes_build_info` labels (`version.Get()`), for kubelet-rs.
#[derive(Debug, Clone, Default)]
pub struct BuildInfo {
    /// `major`.
    pub major: String,
    /// `minor`.
    pub minor: String,
    /// `git_version` (`v1.35.4+kubelet-rs.0.1.0`).
    pub git_version: String,
    /// `git_commit`.
    pub git_commit: String,
    /// `git_tree_state`.
    pub git_tree_state: String,
    /// `build_date`.
    pub build_date: String,
    /// `go_version`: the Rust compiler here.
    pub go_version: String,
    /// `compiler`.
    pub compiler: String,
    /// `platform` (`linux/amd64`).
    pub platform: String,
}

impl KubeletMetrics {
    /// Creates the families and registers them in `reg` (`metrics.Register()` plus the
    /// server, rest client and version metrics legacyregistry carries).
    pub fn register(reg: &KubeRegistry) -> Result<Self, RegisterError> {
        let b = Builder { reg };
        let op = &["operation_type"];
        let http_labels = &["method", "path", "server_type", "long_running"];
        let runtime_buckets = exponential_buckets(0.005, 2.5, 14);
        Ok(KubeletMetrics {
            first_network_pod_start_sli_duration: b.gauge(
                "kubelet_first_network_pod_start_sli_duration_seconds",
                "Duration in seconds to start the first network pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
                INTERNAL,
            )?,
            node_name: b.gauge_vec(
                "kubelet_node_name",
                "The node's name. The count is always 1.",
                ALPHA,
                &["node"],
            )?,
            pod_worker_duration: b.histogram_vec(
                "kubelet_pod_worker_duration_seconds",
                "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
                ALPHA,
                &DEF_BUCKETS,
                op,
            )?,
            pod_start_duration: b.histogram(
                "kubelet_pod_start_duration_seconds",
                "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
                ALPHA,
                &POD_STARTUP_DURATION_BUCKETS,
            )?,
            pod_start_sli_duration: b.histogram_vec(
                "kubelet_pod_start_sli_duration_seconds",
                "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
                ALPHA,
                &POD_STARTUP_DURATION_BUCKETS,
                &[],
            )?,
            pod_start_total_duration: b.histogram_vec(
                "kubelet_pod_start_total_duration_seconds",
                "Duration in seconds to start a pod since creation, including time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
                ALPHA,
                &POD_STARTUP_DURATION_BUCKETS,
                &[],
            )?,
            pod_worker_start_duration: b.histogram(
                "kubelet_pod_worker_start_duration_seconds",
                "Duration in seconds from kubelet seeing a pod to starting a worker.",
                ALPHA,
                &DEF_BUCKETS,
            )?,
            pleg_relist_duration: b.histogram(
                "kubelet_pleg_relist_duration_seconds",
                "Duration in seconds for relisting pods in PLEG.",
                ALPHA,
                &DEF_BUCKETS,
            )?,
            pleg_discard_events: b.counter(
                "kubelet_pleg_discard_events",
                "The number of discard events in PLEG.",
                ALPHA,
            )?,
            pleg_relist_interval: b.histogram(
                "kubelet_pleg_relist_interval_seconds",
                "Interval in seconds between relisting in PLEG.",
                ALPHA,
                &DEF_BUCKETS,
            )?,
            pleg_last_seen: b.gauge(
                "kubelet_pleg_last_seen_seconds",
                "Timestamp in seconds when PLEG was last seen active.",
                ALPHA,
            )?,
            evented_pleg_conn_err: b.counter(
                "kubelet_evented_pleg_connection_error_count",
                "The number of errors encountered during the establishment of streaming connection with the CRI runtime.",
                ALPHA,
            )?,
            evented_pleg_conn: b.counter(
                "kubelet_evented_pleg_connection_success_count",
                "The number of times a streaming client was obtained to receive CRI Events.",
                ALPHA,
            )?,
            evented_pleg_conn_latency: b.histogram(
                "kubelet_evented_pleg_connection_latency_seconds",
                "The latency of streaming connection with the CRI runtime, measured in seconds.",
                ALPHA,
                &DEF_BUCKETS,
            )?,
            runtime_operations: b.counter_vec(
                "kubelet_runtime_operations_total",
                "Cumulative number of runtime operations by operation type.",
                ALPHA,
                op,
            )?,
            runtime_operations_duration: b.histogram_vec(
                "kubelet_runtime_operations_duration_seconds",
                "Duration in seconds of runtime operations. Broken down by operation type.",
                ALPHA,
                &runtime_buckets,
                op,
            )?,
            runtime_operations_errors: b.counter_vec(
                "kubelet_runtime_operations_errors_total",
                "Cumulative number of runtime operation errors by operation type.",
                ALPHA,
                op,
            )?,
            image_garbage_collected_total: b.counter_vec(
                "kubelet_image_garbage_collected_total",
                "Total number of images garbage collected by the kubelet, whether through disk usage or image age.",
                ALPHA,
                &["reason"],
            )?,
            evictions: b.counter_vec(
                "kubelet_evictions",
                "Cumulative number of pod evictions by eviction signal",
                ALPHA,
                &["eviction_signal"],
            )?,
            eviction_stats_age: b.histogram_vec(
                "kubelet_eviction_stats_age_seconds",
                "Time between when stats are collected, and when pod is evicted based on those stats by eviction signal",
                ALPHA,
                &DEF_BUCKETS,
                &["eviction_signal"],
            )?,
            running_container_count: b.gauge_vec(
                "kubelet_running_containers",
                "Number of containers currently running",
                ALPHA,
                &["container_state"],
            )?,
            running_pod_count: b.gauge(
                "kubelet_running_pods",
                "Number of pods that have a running pod sandbox",
                ALPHA,
            )?,
            restarted_pod_total: b.counter_vec(
                "kubelet_restarted_pods_total",
                "Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)",
                ALPHA,
                &["static"],
            )?,
            started_pods_total: b.counter(
                "kubelet_started_pods_total",
                "Cumulative number of pods started",
                ALPHA,
            )?,
            started_pods_errors_total: b.counter(
                "kubelet_started_pods_errors_total",
                "Cumulative number of errors when starting pods",
                ALPHA,
            )?,
            started_containers_total: b.counter_vec(
                "kubelet_started_containers_total",
                "Cumulative number of containers started",
                ALPHA,
                &["container_type"],
            )?,
            started_containers_errors_total: b.counter_vec(
                "kubelet_started_containers_errors_total",
                "Cumulative number of errors when starting containers",
                ALPHA,
                &["container_type", "code"],
            )?,
            run_podsandbox_duration: b.histogram_vec(
                "kubelet_run_podsandbox_duration_seconds",
                "Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.",
                ALPHA,
                &DEF_BUCKETS,
                &["runtime_handler"],
            )?,
            run_podsandbox_errors: b.counter_vec(
                "kubelet_run_podsandbox_errors_total",
                "Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.",
                ALPHA,
                &["runtime_handler"],
            )?,
            http_requests: b.counter_vec(
                "kubelet_http_requests_total",
                "Number of the http requests received since the server started",
                ALPHA,
                http_labels,
            )?,
            http_requests_duration: b.histogram_vec(
                "kubelet_http_requests_duration_seconds",
                "Duration in seconds to serve http requests",
                ALPHA,
                &DEF_BUCKETS,
                http_labels,
            )?,
            http_inflight_requests: b.gauge_vec(
                "kubelet_http_inflight_requests",
                "Number of the inflight http requests",
                ALPHA,
                http_labels,
            )?,
            rest_client_requests: b.counter_vec(
                "rest_client_requests_total",
                "Number of HTTP requests, partitioned by status code, method, and host.",
                ALPHA,
                &["code", "method", "host"],
            )?,
            build_info: b.gauge_vec(
                "kubernetes_build_info",
                "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
                ALPHA,
                &[
                    "major",
                    "minor",
                    "git_version",
                    "git_commit",
                    "git_tree_state",
                    "build_date",
                    "go_version",
                    "compiler",
                    "platform",
                ],
            )?,
            pod_startup_step_duration: b.histogram_vec(
                POD_STARTUP_STEP_DURATION,
                "Duration in seconds from the kubelet seeing a pod to each step of its start (kubelet-rs only), observed once per pod and step",
                ALPHA,
                &exponential_buckets(0.001, 2.0, 20),
                &["step"],
            )?,
            resource_managers: ResourceManagerMetrics::register(&b)?,
        })
    }

    /// `kubernetes_build_info` set to 1 for `info` (component-base `version.RegisterBuildInfo`).
    pub fn set_build_info(&self, info: &BuildInfo) {
        self.build_info
            .with_label_values(&[
                &info.major,
                &info.minor,
                &info.git_version,
                &info.git_commit,
                &info.git_tree_state,
                &info.build_date,
                &info.go_version,
                &info.compiler,
                &info.platform,
            ])
            .set(1.0);
    }
}

/// The image volume counters (`metrics.go`, registered only with the gate `ImageVolume`).
#[derive(Clone)]
pub struct ImageVolumeMetrics {
    /// `kubelet_image_volume_requested_total` (BETA).
    pub requested_total: Counter,
    /// `kubelet_image_volume_mounted_succeed_total` (BETA).
    pub mounted_succeed_total: Counter,
    /// `kubelet_image_volume_mounted_errors_total` (BETA).
    pub mounted_errors_total: Counter,
}

impl ImageVolumeMetrics {
    /// Creates the image volume families and registers them in `reg`.
    pub fn register(reg: &KubeRegistry) -> Result<Self, RegisterError> {
        let b = Builder { reg };
        Ok(ImageVolumeMetrics {
            requested_total: b.counter(
                "kubelet_image_volume_requested_total",
                "Number of requested image volumes.",
                BETA,
            )?,
            mounted_succeed_total: b.counter(
                "kubelet_image_volume_mounted_succeed_total",
                "Number of successful image volume mounts.",
                BETA,
            )?,
            mounted_errors_total: b.counter(
                "kubelet_image_volume_mounted_errors_total",
                "Number of failed image volume mounts.",
                BETA,
            )?,
        })
    }
}

/// The graceful node shutdown gauges (`metrics.go` `GracefulShutdownStartTime`,
/// `GracefulShutdownEndTime`; registered only with the gates `GracefulNodeShutdown` and
/// `GracefulNodeShutdownBasedOnPodPriority`).
#[derive(Clone)]
pub struct GracefulShutdownMetrics {
    /// `kubelet_graceful_shutdown_start_time_seconds`.
    pub start_time: Gauge,
    /// `kubelet_graceful_shutdown_end_time_seconds`.
    pub end_time: Gauge,
}

impl GracefulShutdownMetrics {
    /// Creates the graceful shutdown gauges and registers them in `reg`.
    pub fn register(reg: &KubeRegistry) -> Result<Self, RegisterError> {
        let b = Builder { reg };
        Ok(GracefulShutdownMetrics {
            start_time: b.gauge(
                "kubelet_graceful_shutdown_start_time_seconds",
                "Last graceful shutdown start time since unix epoch in seconds",
                ALPHA,
            )?,
            end_time: b.gauge(
                "kubelet_graceful_shutdown_end_time_seconds",
                "Last graceful shutdown end time since unix epoch in seconds",
                ALPHA,
            )?,
        })
    }
}

impl ProberMetrics {
    /// Creates the prober families and registers them in `reg`.
    pub fn register(reg: &KubeRegistry) -> Result<Self, RegisterError> {
        let b = Builder { reg };
        Ok(ProberMetrics {
            probe_total: b.counter_vec(
                "prober_probe_total",
                "Cumulative number of a liveness, readiness or startup probe for a container by result.",
                BETA,
                &["probe_type", "result", "container", "pod", "namespace", "pod_uid"],
            )?,
            probe_duration: b.histogram_vec(
                "prober_probe_duration_seconds",
                "Duration in seconds for a probe response.",
                ALPHA,
                &DEF_BUCKETS,
                &["probe_type", "container", "pod", "namespace"],
            )?,
        })
    }
}

/// `process_start_time_seconds` as component-base's `RegisterProcessStartTime` (ALPHA),
/// for the registries that carry no process collector (`/metrics/probes`).
pub fn register_process_start_time(
    reg: &KubeRegistry,
    start_unix: f64,
) -> Result<(), RegisterError> {
    let b = Builder { reg };
    let g = b.gauge(
        "process_start_time_seconds",
        "Start time of the process since unix epoch in seconds.",
        ALPHA,
    )?;
    g.set(start_unix);
    Ok(())
}
