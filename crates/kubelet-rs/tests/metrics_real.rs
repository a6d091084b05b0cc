//! Standalone kubelet-rs against the real containerd of `hack/runtime-up.sh`: every
//! metrics endpoint of both ports scraped and parsed with a Prometheus text-format parser
//! (`kubelet_metrics::testing`, openmetrics-parser), and the families issue #8 lists
//! carrying the values a node running a probed pod must show. Run under the shared
//! runtime lock (`flock /var/lib/kubelet-rs-test/dev-runtime.lock`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::node::{Node, busybox_pod, runtime_lock};
use kubelet_metrics::testing::{Family, parse, total, value};

const T: Duration = Duration::from_secs(90);

/// The metrics endpoints upstream serves on both ports (`InstallAuthNotRequiredHandlers`).
const ENDPOINTS: [&str; 4] = [
    "/metrics",
    "/metrics/probes",
    "/metrics/resource",
    "/metrics/cadvisor",
];

/// The endpoints kubelet-rs serves today; `/metrics/resource` and `/metrics/cadvisor` come
/// with the stats summary provider (`crates/stats`): once they answer 200 they are parsed
/// too, and this list must name them.
const REQUIRED: [&str; 4] = [
    "/metrics",
    "/metrics/probes",
    "/metrics/resource",
    "/metrics/cadvisor",
];

fn family<'a>(families: &'a HashMap<String, Family>, name: &str, text: &str) -> &'a Family {
    families
        .get(name)
        .unwrap_or_else(|| panic!("{name} missing from the scrape:\n{text}"))
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn every_metrics_endpoint_parses_and_reports_the_node() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-metrics").await;
    node.start().await;
    let probe = "    readinessProbe:
      exec:
        command: [\"true\"]
      periodSeconds: 1
    livenessProbe:
      exec:
        command: [\"true\"]
      periodSeconds: 1
";
    node.write_manifest(
        "probed.yaml",
        &(busybox_pod("probed", &node.busybox, "Always", "sleep 3600") + probe),
    );
    node.wait_for("probed ready", T, || async {
        let p = node.pod("probed")?;
        let ready = p["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        ready.then_some(())
    })
    .await;
    let pod_name = format!("probed-{}", node.name);
    // A liveness round after readiness: both probe types have results.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let ca = node.dir.path().join("root/pki/kubelet.crt");
    let mut scrapes: HashMap<(&str, &str), String> = HashMap::new();
    for path in ENDPOINTS {
        let (ro_status, ro_body) = common::http_get(node.ro_port, path)
            .unwrap_or_else(|| panic!("read-only port refused {path}"));
        let (rw_status, rw_body) = common::tls::https_get(node.secure_port, path, &ca).await;
        assert_eq!(
            ro_status, rw_status,
            "{path}: both ports serve the same handlers"
        );
        if ro_status == 404 && !REQUIRED.contains(&path) {
            eprintln!("{path}: not served yet (crates/stats)");
            continue;
        }
        assert_eq!(
            ro_status,
            200,
            "{path}: {ro_body}\nkubelet log:\n{}",
            node.log()
        );
        for (port, body) in [("readonly", ro_body), ("readwrite", rw_body)] {
            parse(&body).unwrap_or_else(|e| panic!("{path} on the {port} port: {e}\n{body}"));
            scrapes.insert((path, port), body);
        }
    }

    let text = &scrapes[&("/metrics", "readonly")];
    let m = parse(text).unwrap();
    let f = |name| family(&m, name, text);
    assert_eq!(value(f("kubelet_node_name"), &["rt-metrics"]), Some(1.0));
    assert!(value(f("kubelet_running_pods"), &[]).unwrap() >= 1.0);
    assert!(value(f("kubelet_running_containers"), &["running"]).unwrap() >= 1.0);
    assert!(value(f("kubelet_started_pods_total"), &[]).unwrap() >= 1.0);
    assert!(value(f("kubelet_started_containers_total"), &["container"]).unwrap() >= 1.0);
    for op in [
        "run_podsandbox",
        "create_container",
        "start_container",
        "list_podsandbox",
    ] {
        let n = value(f("kubelet_runtime_operations_total"), &[op]).unwrap_or(0.0);
        assert!(n >= 1.0, "{op}: {n}\n{text}");
        assert!(value(f("kubelet_runtime_operations_duration_seconds"), &[op]).unwrap() >= 1.0);
    }
    assert!(value(f("kubelet_pleg_relist_duration_seconds"), &[]).unwrap() >= 1.0);
    assert!(value(f("kubelet_pleg_relist_interval_seconds"), &[]).unwrap() >= 1.0);
    // Set by the healthz check's PLEG health; a recent Unix time.
    let now = jiff::Timestamp::now().as_second() as f64;
    let last_seen = value(f("kubelet_pleg_last_seen_seconds"), &[]).unwrap();
    assert!(
        last_seen == 0.0 || (now - last_seen).abs() < 60.0,
        "{last_seen}"
    );
    assert!(value(f("kubelet_pod_start_duration_seconds"), &[]).unwrap() >= 1.0);
    assert!(total(f("kubelet_pod_worker_duration_seconds")) >= 1.0);
    assert!(value(f("kubelet_pod_worker_start_duration_seconds"), &[]).unwrap() >= 1.0);
    assert!(value(f("kubelet_restarted_pods_total"), &["true"]).is_some());
    assert!(
        value(
            f("kubelet_http_requests_total"),
            &["false", "GET", "pods", "readonly"]
        )
        .unwrap()
            >= 1.0
    );
    assert!(value(f("process_start_time_seconds"), &[]).unwrap() > 1.7e9);
    assert!(value(f("process_resident_memory_bytes"), &[]).unwrap() > 0.0);
    assert!(total(f("kubernetes_build_info")) == 1.0);
    assert!(f("registered_metrics_total").help.starts_with("[BETA] "));
    // The secure port's own requests carry `server_type="readwrite"`.
    let rw = &scrapes[&("/metrics", "readwrite")];
    assert!(rw.contains("server_type=\"readwrite\""), "{rw}");

    // `/metrics/cadvisor`: a few families of the root cgroup (this node runs without
    // `cgroupsPerQOS`); every family upstream serves, on every cgroup class, is checked by
    // `cadvisor_real.rs`, the container series' values by `stats_real.rs`.
    let cadvisor_text = &scrapes[&("/metrics/cadvisor", "readonly")];
    let c = parse(cadvisor_text).unwrap();
    for name in [
        "container_cpu_usage_seconds_total",
        "container_cpu_user_seconds_total",
        "container_cpu_system_seconds_total",
        "container_memory_working_set_bytes",
        "container_oom_events_total",
        "container_processes",
        "container_threads",
        "container_threads_max",
        "container_file_descriptors",
        "container_sockets",
        "container_pressure_cpu_waiting_seconds_total",
        "container_pressure_io_stalled_seconds_total",
        // `NetworkUsageMetrics`: the root's interfaces (`/proc/1/net/dev`).
        "container_network_receive_bytes_total",
        "container_network_receive_packets_total",
        "container_network_receive_packets_dropped_total",
        "container_network_receive_errors_total",
        "container_network_transmit_bytes_total",
        "container_network_transmit_packets_total",
        "container_network_transmit_packets_dropped_total",
        "container_network_transmit_errors_total",
        "machine_memory_bytes",
    ] {
        // Panics when the family is missing.
        family(&c, name, cadvisor_text);
    }
    assert!(total(family(&c, "container_processes", cadvisor_text)) >= 1.0);
    assert!(
        cadvisor_text.lines().any(|l| l
            .starts_with("container_network_receive_bytes_total{container=\"\",id=\"/\"")
            && l.contains("interface=\"")),
        "the root's interfaces:\n{cadvisor_text}"
    );

    let probes_text = &scrapes[&("/metrics/probes", "readonly")];
    let p = parse(probes_text).unwrap();
    let total_f = family(&p, "prober_probe_total", probes_text);
    // Labels in name order: container, namespace, pod, pod_uid, probe_type, result.
    let uid = node.pod("probed").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    for probe_type in ["Readiness", "Liveness"] {
        let n = value(
            total_f,
            &["main", "default", &pod_name, &uid, probe_type, "successful"],
        );
        assert!(
            n.unwrap_or(0.0) >= 1.0,
            "{probe_type}: {n:?}\n{probes_text}"
        );
    }
    assert!(total(family(&p, "prober_probe_duration_seconds", probes_text)) >= 2.0);
    node.cleanup().await;
}
