//! The kubelet's Prometheus metrics: upstream's families (`pkg/kubelet/metrics`,
//! `pkg/kubelet/server/metrics`, `pkg/kubelet/prober`, component-base's `restclient`,
//! `version`, process collector and meta metrics) in the registries upstream serves them
//! from, and the exposition formats client_golang negotiates.
//!
//! * [`legacy_registry`]: `/metrics` (component-base `legacyregistry`), holding
//!   [`KubeletMetrics`] ([`kubelet`]) and the process collector.
//! * [`probes_registry`]: `/metrics/probes`, holding [`ProberMetrics`] ([`prober`]) and
//!   `process_start_time_seconds`.
//! * [`scrape`]: gathers a registry in the format the `Accept` header negotiates
//!   ([`expfmt`]).
//!
//! Like upstream's package-level metric variables, the registries are process-wide:
//! subsystems update them through [`with`] / [`with_prober`] without plumbing.
//! [`register`] (called once at start) fills in the node name and build information and
//! reports a registration failure, which upstream's `MustRegister` would panic on.

pub mod expfmt;
mod kubelet;
mod process;
mod registry;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::sync::LazyLock;
use std::time::{SystemTime, UNIX_EPOCH};

pub use kubelet::{
    BuildInfo, DEF_BUCKETS, GracefulShutdownMetrics, ImageVolumeMetrics, KubeletMetrics,
    POD_STARTUP_DURATION_BUCKETS, POD_STARTUP_STEP_DURATION, ProberMetrics, ResourceManagerMetrics,
    container_type, exponential_buckets, register_process_start_time,
};
pub use process::{ProcessCollector, ProcessFigures};
pub use registry::{
    CURRENT_VERSION, KubeRegistry, RegisterError, Stability, StabilityLevel, opts, set_show_hidden,
};

struct Legacy {
    registry: KubeRegistry,
    kubelet: KubeletMetrics,
}

struct Probes {
    registry: KubeRegistry,
    prober: ProberMetrics,
}

fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// When this process registered its metrics (legacyregistry's `processStart`).
static PROCESS_START: LazyLock<f64> = LazyLock::new(now_unix);

static LEGACY: LazyLock<Result<Legacy, RegisterError>> = LazyLock::new(|| {
    LazyLock::force(&PROCESS_START);
    let registry = KubeRegistry::with_meta_metrics()?;
    let process =
        ProcessCollector::new().map_err(|e| RegisterError::new("process_cpu_seconds_total", e))?;
    registry.raw_register("process_cpu_seconds_total", Box::new(process))?;
    let kubelet = KubeletMetrics::register(&registry)?;
    Ok(Legacy { registry, kubelet })
});

static PROBES: LazyLock<Result<Probes, RegisterError>> = LazyLock::new(|| {
    let registry = KubeRegistry::new();
    register_process_start_time(&registry, *PROCESS_START)?;
    let prober = ProberMetrics::register(&registry)?;
    Ok(Probes { registry, prober })
});

/// Registers every family (if not yet), sets `kubelet_node_name{node}` and
/// `kubernetes_build_info`: the kubelet's `metrics.Register()` at start.
pub fn register(node_name: &str, build: &BuildInfo) -> Result<(), RegisterError> {
    let legacy = LEGACY.as_ref().map_err(Clone::clone)?;
    PROBES.as_ref().map_err(Clone::clone)?;
    legacy
        .kubelet
        .node_name
        .with_label_values(&[node_name])
        .set(1.0);
    legacy.kubelet.set_build_info(build);
    Ok(())
}

/// The `/metrics` registry.
pub fn legacy_registry() -> Option<&'static KubeRegistry> {
    LEGACY.as_ref().ok().map(|l| &l.registry)
}

/// The `/metrics/probes` registry.
pub fn probes_registry() -> Option<&'static KubeRegistry> {
    PROBES.as_ref().ok().map(|p| &p.registry)
}

/// The kubelet's families (`None` only if registration failed, which [`register`] reports).
pub fn kubelet() -> Option<&'static KubeletMetrics> {
    LEGACY.as_ref().ok().map(|l| &l.kubelet)
}

/// The prober's families.
pub fn prober() -> Option<&'static ProberMetrics> {
    PROBES.as_ref().ok().map(|p| &p.prober)
}

static IMAGE_VOLUME: std::sync::OnceLock<ImageVolumeMetrics> = std::sync::OnceLock::new();

/// Registers the image volume families in the `/metrics` registry (upstream: when the gate
/// `ImageVolume` is on); once.
pub fn register_image_volume() -> Result<(), RegisterError> {
    static ONCE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _once = ONCE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if IMAGE_VOLUME.get().is_some() {
        return Ok(());
    }
    let legacy = LEGACY.as_ref().map_err(Clone::clone)?;
    let m = ImageVolumeMetrics::register(&legacy.registry)?;
    let _ = IMAGE_VOLUME.set(m);
    Ok(())
}

/// Runs `f` on the image volume families when they are registered.
pub fn with_image_volume(f: impl FnOnce(&ImageVolumeMetrics)) {
    if let Some(m) = IMAGE_VOLUME.get() {
        f(m);
    }
}

static GRACEFUL_SHUTDOWN: std::sync::OnceLock<GracefulShutdownMetrics> = std::sync::OnceLock::new();

/// Registers the graceful shutdown gauges in the `/metrics` registry (upstream: when the
/// gates `GracefulNodeShutdown` and `GracefulNodeShutdownBasedOnPodPriority` are on); once.
pub fn register_graceful_shutdown() -> Result<(), RegisterError> {
    static ONCE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _once = ONCE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if GRACEFUL_SHUTDOWN.get().is_some() {
        return Ok(());
    }
    let legacy = LEGACY.as_ref().map_err(Clone::clone)?;
    let m = GracefulShutdownMetrics::register(&legacy.registry)?;
    let _ = GRACEFUL_SHUTDOWN.set(m);
    Ok(())
}

/// Runs `f` on the graceful shutdown gauges when they are registered.
pub fn with_graceful_shutdown(f: impl FnOnce(&GracefulShutdownMetrics)) {
    if let Some(m) = GRACEFUL_SHUTDOWN.get() {
        f(m);
    }
}

/// Runs `f` on the kubelet's families.
pub fn with(f: impl FnOnce(&KubeletMetrics)) {
    if let Some(m) = kubelet() {
        f(m);
    }
}

/// Runs `f` on the prober's families.
pub fn with_prober(f: impl FnOnce(&ProberMetrics)) {
    if let Some(m) = prober() {
        f(m);
    }
}

/// The Unix time this process started counting (the `Process-Start-Time-Unix` header).
pub fn process_start_unix() -> i64 {
    *PROCESS_START as i64
}

/// A scrape: the negotiated `Content-Type` and the body.
#[derive(Debug, Clone)]
pub struct Scrape {
    /// The `Content-Type` header.
    pub content_type: String,
    /// The exposition.
    pub body: Vec<u8>,
}

/// Gathers `registry` in the format `accept` negotiates (promhttp `HandlerFor`).
pub fn scrape(registry: &KubeRegistry, accept: Option<&str>) -> Scrape {
    let format = expfmt::negotiate(accept);
    Scrape {
        content_type: format.content_type(),
        body: expfmt::encode(&registry.gather(), &format),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
