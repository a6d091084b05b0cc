//! `/metrics/resource` (upstream `pkg/kubelet/metrics/collectors/resource_metrics.go`): the
//! node, pod and container CPU/memory/swap of `GetCPUAndMemoryStats`, with the samples'
//! timestamps, and `resource_scrape_error`. (`scrape_error`, deprecated in 1.29.0, is hidden
//! at 1.35 and cannot be shown again by `showHiddenMetricsForVersion`, which only reaches
//! back one minor version.)

use crate::prom::{Desc, Families, Kind, Stability};
use crate::types::{ContainerStats, PodStats, Summary};

const CONTAINER: &[&str] = &["container", "pod", "namespace"];
const POD: &[&str] = &["pod", "namespace"];

use Kind::{Counter, Gauge};
use Stability::{Alpha, Stable};

const NODE_CPU: Desc = Desc::new(
    "node_cpu_usage_seconds_total",
    "Cumulative cpu time consumed by the node in core-seconds",
    &[],
    Stable,
    Counter,
);
const NODE_MEMORY: Desc = Desc::new(
    "node_memory_working_set_bytes",
    "Current working set of the node in bytes",
    &[],
    Stable,
    Gauge,
);
const NODE_SWAP: Desc = Desc::new(
    "node_swap_usage_bytes",
    "Current swap usage of the node in bytes. Reported only on non-windows systems",
    &[],
    Alpha,
    Gauge,
);
const CONTAINER_CPU: Desc = Desc::new(
    "container_cpu_usage_seconds_total",
    "Cumulative cpu time consumed by the container in core-seconds",
    CONTAINER,
    Stable,
    Counter,
);
const CONTAINER_MEMORY: Desc = Desc::new(
    "container_memory_working_set_bytes",
    "Current working set of the container in bytes",
    CONTAINER,
    Stable,
    Gauge,
);
const CONTAINER_SWAP: Desc = Desc::new(
    "container_swap_usage_bytes",
    "Current amount of the container swap usage in bytes. Reported only on non-windows systems",
    CONTAINER,
    Alpha,
    Gauge,
);
const CONTAINER_SWAP_LIMIT: Desc = Desc::new(
    "container_swap_limit_bytes",
    "Current amount of the container swap limit in bytes. Reported only on non-windows systems",
    CONTAINER,
    Alpha,
    Gauge,
);
const POD_CPU: Desc = Desc::new(
    "pod_cpu_usage_seconds_total",
    "Cumulative cpu time consumed by the pod in core-seconds",
    POD,
    Stable,
    Counter,
);
const POD_MEMORY: Desc = Desc::new(
    "pod_memory_working_set_bytes",
    "Current working set of the pod in bytes",
    POD,
    Stable,
    Gauge,
);
const POD_SWAP: Desc = Desc::new(
    "pod_swap_usage_bytes",
    "Current amount of the pod swap usage in bytes. Reported only on non-windows systems",
    POD,
    Alpha,
    Gauge,
);
const SCRAPE_ERROR: Desc = Desc::new(
    "resource_scrape_error",
    "1 if there was an error while getting container metrics, 0 otherwise",
    &[],
    Stable,
    Gauge,
);
const CONTAINER_START: Desc = Desc::new(
    "container_start_time_seconds",
    "Start time of the container since unix epoch in seconds",
    CONTAINER,
    Stable,
    Gauge,
);

/// The exposition of a `GetCPUAndMemoryStats` result (`Err`: only `resource_scrape_error 1`,
/// the cause logged as upstream does).
pub fn render(summary: Result<&Summary, &crate::StatsError>) -> String {
    let mut f = Families::default();
    let summary = match summary {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(err = %e, "Error getting summary for resourceMetric prometheus endpoint");
            f.push(&SCRAPE_ERROR, &[], 1.0, None);
            return f.render();
        }
    };
    let node = &summary.node;
    if let Some(cpu) = &node.cpu
        && let Some(v) = cpu.usage_core_nano_seconds
    {
        f.push(&NODE_CPU, &[], v as f64 / 1e9, Some(cpu.time.as_millis()));
    }
    if let Some(m) = &node.memory
        && let Some(v) = m.working_set_bytes
    {
        f.push(&NODE_MEMORY, &[], v as f64, Some(m.time.as_millis()));
    }
    if let Some(s) = &node.swap
        && let Some(v) = s.swap_usage_bytes
    {
        f.push(&NODE_SWAP, &[], v as f64, Some(s.time.as_millis()));
    }
    for pod in &summary.pods {
        for c in &pod.containers {
            container(&mut f, pod, c);
        }
        let labels = [pod.pod_ref.name.as_str(), pod.pod_ref.namespace.as_str()];
        if let Some(cpu) = &pod.cpu
            && let Some(v) = cpu.usage_core_nano_seconds
        {
            f.push(
                &POD_CPU,
                &labels,
                v as f64 / 1e9,
                Some(cpu.time.as_millis()),
            );
        }
        if let Some(m) = &pod.memory
            && let Some(v) = m.working_set_bytes
        {
            f.push(&POD_MEMORY, &labels, v as f64, Some(m.time.as_millis()));
        }
        if let Some(s) = &pod.swap
            && let Some(v) = s.swap_usage_bytes
        {
            f.push(&POD_SWAP, &labels, v as f64, Some(s.time.as_millis()));
        }
    }
    f.push(&SCRAPE_ERROR, &[], 0.0, None);
    f.render()
}

fn container(f: &mut Families, pod: &PodStats, c: &ContainerStats) {
    let labels = [
        c.name.as_str(),
        pod.pod_ref.name.as_str(),
        pod.pod_ref.namespace.as_str(),
    ];
    if c.start_time.0.as_second() > 0 {
        f.push(&CONTAINER_START, &labels, c.start_time.as_secs_f64(), None);
    }
    if let Some(cpu) = &c.cpu
        && let Some(v) = cpu.usage_core_nano_seconds
    {
        f.push(
            &CONTAINER_CPU,
            &labels,
            v as f64 / 1e9,
            Some(cpu.time.as_millis()),
        );
    }
    if let Some(m) = &c.memory
        && let Some(v) = m.working_set_bytes
    {
        f.push(
            &CONTAINER_MEMORY,
            &labels,
            v as f64,
            Some(m.time.as_millis()),
        );
    }
    if let Some(s) = &c.swap {
        let usage = s.swap_usage_bytes.unwrap_or(0) as f64;
        if s.swap_usage_bytes.is_some() {
            f.push(&CONTAINER_SWAP, &labels, usage, Some(s.time.as_millis()));
        }
        if let Some(avail) = s.swap_available_bytes {
            f.push(
                &CONTAINER_SWAP_LIMIT,
                &labels,
                avail as f64 + usage,
                Some(s.time.as_millis()),
            );
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::types::*;

    #[test]
    fn upstream_families_labels_and_timestamps() {
        let t = Time::from_nanos(1_764_547_200_500_000_000);
        let summary = Summary {
            node: NodeStats {
                cpu: Some(CpuStats {
                    time: t,
                    usage_core_nano_seconds: Some(2_500_000_000),
                    ..Default::default()
                }),
                memory: Some(MemoryStats {
                    time: t,
                    working_set_bytes: Some(1024),
                    ..Default::default()
                }),
                ..Default::default()
            },
            pods: vec![PodStats {
                pod_ref: PodReference {
                    name: "web".into(),
                    namespace: "default".into(),
                    uid: "u".into(),
                },
                containers: vec![ContainerStats {
                    name: "app".into(),
                    start_time: Time::from_nanos(1_764_547_000_250_000_000),
                    cpu: Some(CpuStats {
                        time: t,
                        usage_core_nano_seconds: Some(1_000_000),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                memory: Some(MemoryStats {
                    time: t,
                    working_set_bytes: Some(4096),
                    ..Default::default()
                }),
                ..Default::default()
            }],
        };
        let text = render(Ok(&summary));
        let want = "\
# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container=\"app\",namespace=\"default\",pod=\"web\"} 0.001 1764547200500
# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container=\"app\",namespace=\"default\",pod=\"web\"} 1.7645470002499998e+09
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 2.5 1764547200500
# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 1024 1764547200500
# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace=\"default\",pod=\"web\"} 4096 1764547200500
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
";
        assert_eq!(text, want);
        let err = render(Err(&crate::StatsError::Runtime("down".into())));
        assert!(err.ends_with("resource_scrape_error 1\n"), "{err}");
    }
}
