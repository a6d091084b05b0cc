//! OpenMetrics when asked, on a real kubelet-rs: a standalone node on the real containerd
//! of `hack/runtime-up.sh` running a pod, every metrics endpoint of both ports scraped with
//! Prometheus' default `Accept` header and parsed by an OpenMetrics parser
//! (`kubelet_metrics::testing::parse_openmetrics`), and scraped without it (the 0.0.4 text
//! format, parsed by the text parser). Upstream answers the text format to both (its
//! handlers do not enable OpenMetrics): a deliberate difference, see `crates/server/src/openmetrics.rs`.
//! Run under the shared runtime lock (`flock /var/lib/kubelet-rs-test/dev-runtime.lock`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::node::{Node, busybox_pod, runtime_lock};
use kubelet_metrics::testing::{parse, parse_openmetrics};

const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// `(status, content type, body)` of `GET url` with `accept`.
fn curl(url: &str, accept: Option<&str>) -> (String, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let headers = dir.path().join("headers");
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-k", "--max-time", "30", "-D"])
        .arg(&headers)
        .args(["-w", "\n%{http_code}"]);
    if let Some(a) = accept {
        cmd.args(["-H", &format!("Accept: {a}")]);
    }
    let out = cmd.arg(url).output().unwrap();
    let mut body = String::from_utf8_lossy(&out.stdout).into_owned();
    let status = body
        .rsplit_once('\n')
        .map(|(_, s)| s.to_string())
        .unwrap_or_default();
    body.truncate(body.len() - status.len() - 1);
    let ct = std::fs::read_to_string(&headers)
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    (status, ct, body)
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn every_metrics_endpoint_answers_openmetrics_when_asked() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-openmetrics").await;
    node.start().await;
    node.write_manifest(
        "om.yaml",
        &busybox_pod("om", &node.busybox, "Always", "sleep 3600"),
    );
    node.wait_for("om running", Duration::from_secs(90), || async {
        (node.phase("om")? == "Running").then_some(())
    })
    .await;
    let om_type =
        "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores";
    for base in [
        format!("http://127.0.0.1:{}", node.ro_port),
        format!("https://127.0.0.1:{}", node.secure_port),
    ] {
        for path in [
            "/metrics",
            "/metrics/probes",
            "/metrics/resource",
            "/metrics/cadvisor",
        ] {
            let url = format!("{base}{path}");
            let (status, ct, body) = curl(&url, Some(PROMETHEUS_ACCEPT));
            assert_eq!(status, "200", "{url}: {body}");
            assert_eq!(ct, om_type, "{url}");
            let families =
                parse_openmetrics(&body).unwrap_or_else(|e| panic!("{url}: {e}\n{body}"));
            if path == "/metrics/cadvisor" {
                let cpu = families
                    .get("container_cpu_usage_seconds")
                    .unwrap_or_else(|| panic!("{url}: no container_cpu_usage_seconds\n{body}"));
                assert!(
                    cpu.iter_samples().count() > 0,
                    "{url}: no container_cpu_usage_seconds samples"
                );
                assert!(
                    body.contains("\ncontainer_cpu_usage_seconds_total{"),
                    "{url}"
                );
            }
            if path == "/metrics/resource" {
                assert!(
                    families.contains_key("container_memory_working_set_bytes"),
                    "{url}"
                );
            }
            let (status, ct, text) = curl(&url, None);
            assert_eq!(status, "200", "{url}");
            assert!(ct.starts_with("text/plain; version=0.0.4"), "{url}: {ct}");
            parse(&text).unwrap_or_else(|e| panic!("{url} (text): {e}\n{text}"));
        }
    }
    node.cleanup().await;
}
