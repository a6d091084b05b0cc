//! The `/metrics` registries scraped and parsed: upstream's names, types, help texts,
//! labels and buckets.

use super::*;
use crate::testing::{parse, total, value};
use openmetrics_parser::PrometheusType;

fn scrape_text(reg: &KubeRegistry) -> String {
    String::from_utf8(scrape(reg, None).body).unwrap()
}

#[test]
fn the_legacy_registry_serves_upstreams_families() {
    register(
        "node-a",
        &BuildInfo {
            major: "1".into(),
            minor: "35".into(),
            git_version: "v1.35.4+kubelet-rs.0.1.0".into(),
            platform: "linux/amd64".into(),
            ..BuildInfo::default()
        },
    )
    .unwrap();
    with(|m| {
        m.runtime_operations
            .with_label_values(&["list_containers"])
            .inc();
        m.runtime_operations_duration
            .with_label_values(&["list_containers"])
            .observe(0.002);
        m.evictions.with_label_values(&["memory.available"]).inc();
        m.started_containers_total
            .with_label_values(&[container_type::INIT_CONTAINER])
            .inc();
        m.pod_startup_step_duration
            .with_label_values(&["ready"])
            .observe(1.5);
    });
    let text = scrape_text(legacy_registry().unwrap());
    let families = parse(&text).unwrap();
    // Families present with no sample recorded (plain metrics, not vectors).
    for (name, kind, help) in [
        (
            "kubelet_running_pods",
            PrometheusType::Gauge,
            "[ALPHA] Number of pods that have a running pod sandbox",
        ),
        (
            "kubelet_pleg_relist_duration_seconds",
            PrometheusType::Histogram,
            "[ALPHA] Duration in seconds for relisting pods in PLEG.",
        ),
        (
            "kubelet_pleg_relist_interval_seconds",
            PrometheusType::Histogram,
            "[ALPHA] Interval in seconds between relisting in PLEG.",
        ),
        (
            "kubelet_pleg_last_seen_seconds",
            PrometheusType::Gauge,
            "[ALPHA] Timestamp in seconds when PLEG was last seen active.",
        ),
        (
            "kubelet_pod_start_duration_seconds",
            PrometheusType::Histogram,
            "[ALPHA] Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
        ),
        (
            "kubelet_started_pods_total",
            PrometheusType::Counter,
            "[ALPHA] Cumulative number of pods started",
        ),
        (
            "kubelet_first_network_pod_start_sli_duration_seconds",
            PrometheusType::Gauge,
            "[INTERNAL] Duration in seconds to start the first network pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
        ),
        (
            "kubelet_evictions",
            PrometheusType::Counter,
            "[ALPHA] Cumulative number of pod evictions by eviction signal",
        ),
        (
            "kubelet_node_name",
            PrometheusType::Gauge,
            "[ALPHA] The node's name. The count is always 1.",
        ),
        (
            "registered_metrics_total",
            PrometheusType::Counter,
            "[BETA] The count of registered metrics broken by stability level and deprecation version.",
        ),
        (
            "process_cpu_seconds_total",
            PrometheusType::Counter,
            "Total user and system CPU time spent in seconds.",
        ),
        (
            "process_start_time_seconds",
            PrometheusType::Gauge,
            "Start time of the process since unix epoch in seconds.",
        ),
        (
            "process_resident_memory_bytes",
            PrometheusType::Gauge,
            "Resident memory size in bytes.",
        ),
        (
            "kubernetes_build_info",
            PrometheusType::Gauge,
            "[ALPHA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
        ),
    ] {
        let f = families.get(name).unwrap();
        assert_eq!(f.family_type, kind, "{name}");
        assert_eq!(f.help, help, "{name}");
    }
    assert_eq!(
        value(&families["kubelet_node_name"], &["node-a"]),
        Some(1.0)
    );
    assert_eq!(
        value(&families["kubelet_evictions"], &["memory.available"]),
        Some(1.0)
    );
    // A counter named without `_total` keeps its name, as the 0.0.4 format writes it.
    assert!(text.contains("\nkubelet_evictions{eviction_signal=\"memory.available\"} 1\n"));
    assert_eq!(
        value(
            &families["kubelet_started_containers_total"],
            &["init_container"]
        ),
        Some(1.0)
    );
    assert!(total(&families["kubelet_runtime_operations_total"]) >= 1.0);
    // kubelet-rs's own family (the pod startup timeline), under its own prefix.
    let steps = &families[crate::POD_STARTUP_STEP_DURATION];
    assert_eq!(steps.family_type, PrometheusType::Histogram);
    assert!(
        steps
            .help
            .starts_with("[ALPHA] Duration in seconds from the kubelet seeing a pod")
    );
    assert!(text.contains(
        "\nkubelet_rs_pod_startup_step_duration_seconds_bucket{step=\"ready\",le=\"2.048\"} 1\n"
    ));
    // Upstream's buckets: ExponentialBuckets(.005, 2.5, 14) for runtime operations.
    for le in [
        "0.005",
        "0.0125",
        "0.03125",
        "298.0232238769531",
        "745.0580596923828",
    ] {
        let line = format!(
            "kubelet_runtime_operations_duration_seconds_bucket{{operation_type=\"list_containers\",le=\"{le}"
        );
        assert!(text.contains(&line), "{line}\n{text}");
    }
    // Vectors without a sample are not served at all, as client_golang skips them.
    assert!(!families.contains_key("kubelet_http_requests_total"));
    // Even the label-less vector (`PodStartSLIDuration`) until its first pod.
    assert!(!families.contains_key("kubelet_pod_start_sli_duration_seconds"));
}

#[test]
fn the_probes_registry_serves_the_prober_families() {
    with_prober(|p| {
        p.probe_total
            .with_label_values(&["Liveness", "successful", "c", "p", "ns", "uid"])
            .inc();
        p.probe_duration
            .with_label_values(&["Liveness", "c", "p", "ns"])
            .observe(0.01);
    });
    let text = scrape_text(probes_registry().unwrap());
    let families = parse(&text).unwrap();
    let total_f = &families["prober_probe_total"];
    assert_eq!(
        total_f.help,
        "[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result."
    );
    assert_eq!(
        total_f.get_label_names(),
        [
            "container",
            "namespace",
            "pod",
            "pod_uid",
            "probe_type",
            "result"
        ]
    );
    assert_eq!(
        families["prober_probe_duration_seconds"].help,
        "[ALPHA] Duration in seconds for a probe response."
    );
    assert_eq!(
        families["process_start_time_seconds"].help,
        "[ALPHA] Start time of the process since unix epoch in seconds."
    );
    assert_eq!(families.len(), 3, "{text}");
}

#[test]
fn protobuf_is_served_when_asked() {
    let s = scrape(
        probes_registry().unwrap(),
        Some(
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
        ),
    );
    assert!(
        s.content_type
            .starts_with("application/vnd.google.protobuf")
    );
    // Delimited: a varint length, then a MetricFamily whose field 1 (name) comes first.
    assert!(s.body.len() > 10);
    assert_eq!(s.body[1], 0x0a);
}
