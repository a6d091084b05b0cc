//! `/stats/summary`, `/metrics/resource` and `/metrics/cadvisor` of a kubelet-rs running a
//! static pod on the real containerd of `hack/runtime-up.sh`, with `cgroupsPerQOS` (so the
//! pod and container figures come from the cgroups, as upstream's come from cAdvisor).
//! Serialised with the other real-runtime tests (one kubelet per containerd).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::http_get;
use common::node::{Node, busybox_pod, runtime_lock};

const T: Duration = Duration::from_secs(60);
/// A cgroup root of its own, so the test never touches another kubelet's `kubepods`.
const CGROUP_ROOT: &str = "krs-test-stats";

fn get_json(port: u16, path: &str) -> serde_json::Value {
    let (status, body) = http_get(port, path).unwrap();
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

fn u64_at(v: &serde_json::Value, ptr: &str) -> u64 {
    v.pointer(ptr)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or_else(|| panic!("no number at {ptr} in {v:#}"))
}

/// The sample value of the first line of `text` starting with `prefix`.
fn sample(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l[prefix.len()..].split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no sample {prefix} in\n{text}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn summary_and_resource_metrics_of_a_running_pod() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-stats").await;
    let config = std::fs::read_to_string(&node.config).unwrap();
    let config = config.replace(
        "cgroupsPerQOS: false\n",
        &format!("cgroupsPerQOS: true\ncgroupRoot: /{CGROUP_ROOT}\nvolumeStatsAggPeriod: 1s\n"),
    );
    std::fs::write(&node.config, config).unwrap();
    node.start().await;
    // Some CPU (a busy loop a tenth of the time), some memory, some log.
    // 256 KiB in an emptyDir: the pod's volume stats.
    let cmd = "dd if=/dev/zero of=/scratch/blob bs=1024 count=256; echo started; while true; do i=0; while [ $i -lt 300 ]; do i=$((i+1)); done; sleep 0.2; done";
    let volume = "    volumeMounts:
    - name: scratch
      mountPath: /scratch
  volumes:
  - name: scratch
    emptyDir: {}
";
    node.write_manifest(
        "busy.yaml",
        &(busybox_pod("busy", &node.busybox, "Always", cmd) + volume),
    );
    node.wait_for("busy running", T, || async {
        node.running("busy").await.pop()
    })
    .await;
    let pod_name = format!("busy-{}", node.name);
    let port = node.ro_port;

    let summary = node
        .wait_for("busy in /stats/summary", T, || async {
            let s = get_json(port, "/stats/summary");
            let found = s["pods"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["podRef"]["name"] == pod_name.as_str());
            found.then_some(s)
        })
        .await;
    assert_eq!(summary["node"]["nodeName"], node.name.as_str());
    assert!(u64_at(&summary, "/node/cpu/usageCoreNanoSeconds") > 0);
    assert!(u64_at(&summary, "/node/memory/workingSetBytes") > 0);
    assert!(u64_at(&summary, "/node/fs/capacityBytes") > 0);
    assert!(
        u64_at(&summary, "/node/runtime/imageFs/usedBytes") > 0,
        "{summary:#}"
    );
    assert!(u64_at(&summary, "/node/rlimit/maxpid") > 0);
    assert!(
        summary["node"]["systemContainers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "pods"),
        "{summary:#}"
    );
    // Two seconds later the rates are there.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let summary = get_json(port, "/stats/summary");
    let pod = summary["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["podRef"]["name"] == pod_name.as_str())
        .unwrap()
        .clone();
    assert_eq!(pod["podRef"]["namespace"], "default");
    let c = &pod["containers"][0];
    assert_eq!(c["name"], "main");
    assert!(u64_at(c, "/cpu/usageCoreNanoSeconds") > 0, "{pod:#}");
    assert!(c.pointer("/cpu/usageNanoCores").is_some(), "{pod:#}");
    assert!(u64_at(c, "/memory/workingSetBytes") > 0, "{pod:#}");
    assert!(u64_at(&pod, "/memory/workingSetBytes") >= u64_at(c, "/memory/workingSetBytes"));
    assert!(u64_at(&pod, "/cpu/usageCoreNanoSeconds") >= u64_at(c, "/cpu/usageCoreNanoSeconds"));
    assert!(u64_at(c, "/logs/usedBytes") > 0, "{pod:#}");
    assert!(c.pointer("/rootfs/usedBytes").is_some(), "{pod:#}");
    assert!(u64_at(&pod, "/ephemeral-storage/usedBytes") > 0);
    assert!(u64_at(&pod, "/process_stats/process_count") >= 1, "{pod:#}");
    assert!(pod.pointer("/network/interfaces").is_some(), "{pod:#}");
    // `KubeletPSI` (on by default): pressure of CPU, memory and IO (zeros on cgroup v1).
    for ptr in [
        "/cpu/psi/some/total",
        "/memory/psi/full/avg10",
        "/io/psi/some/total",
    ] {
        assert!(c.pointer(ptr).is_some(), "{ptr}: {pod:#}");
    }
    assert!(
        summary.pointer("/node/cpu/psi/full/total").is_some(),
        "{summary:#}"
    );
    // The emptyDir, measured in the background every volumeStatsAggPeriod (1 s here).
    let pod = node
        .wait_for("the emptyDir's volume stats", T, || async {
            let s = get_json(port, "/stats/summary");
            let pod = s["pods"]
                .as_array()?
                .iter()
                .find(|p| p["podRef"]["name"] == pod_name.as_str())?
                .clone();
            let used = pod.pointer("/volume/0/usedBytes")?.as_u64()?;
            (used >= 256 * 1024).then_some(pod)
        })
        .await;
    let v = &pod["volume"][0];
    assert_eq!(v["name"], "scratch", "{pod:#}");
    assert!(
        u64_at(v, "/capacityBytes") > 0 && u64_at(v, "/inodesUsed") >= 2,
        "{pod:#}"
    );
    assert!(
        u64_at(&pod, "/ephemeral-storage/usedBytes") >= 256 * 1024,
        "the emptyDir counts: {pod:#}"
    );

    let cpu_mem = get_json(port, "/stats/summary?only_cpu_and_memory=true");
    assert!(cpu_mem["node"].get("fs").is_none());
    assert!(cpu_mem["pods"][0]["containers"][0].get("logs").is_none());

    let (status, text) = http_get(port, "/metrics/resource").unwrap();
    assert_eq!(status, 200);
    let labels = format!("{{container=\"main\",namespace=\"default\",pod=\"{pod_name}\"}}");
    assert!(sample(&text, &format!("container_cpu_usage_seconds_total{labels}")) > 0.0);
    assert!(
        sample(
            &text,
            &format!("container_memory_working_set_bytes{labels}")
        ) > 0.0
    );
    assert!(sample(&text, &format!("container_start_time_seconds{labels}")) > 1e9);
    assert!(sample(&text, "node_cpu_usage_seconds_total") > 0.0);
    assert_eq!(sample(&text, "resource_scrape_error"), 0.0);

    let (status, text) = http_get(port, "/metrics/cadvisor").unwrap();
    assert_eq!(status, 200);
    let line = text
        .lines()
        .find(|l| {
            l.starts_with("container_memory_working_set_bytes{container=\"main\"")
                && l.contains(&format!("pod=\"{pod_name}\""))
        })
        .unwrap_or_else(|| panic!("no container series in\n{text}"));
    assert!(
        line.contains(&format!("id=\"/{CGROUP_ROOT}/kubepods/besteffort/pod")),
        "{line}"
    );
    assert_eq!(sample(&text, "container_scrape_error"), 0.0);
    // cAdvisor's user/system CPU, OOM, process and pressure families for the container.
    let main = |family: &str| {
        text.lines()
            .find(|l| {
                l.starts_with(&format!("{family}{{container=\"main\""))
                    && l.contains(&format!("pod=\"{pod_name}\""))
            })
            .unwrap_or_else(|| panic!("no {family} for main in\n{text}"))
            .rsplit(' ')
            .nth(1)
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    assert!(
        main("container_cpu_user_seconds_total") + main("container_cpu_system_seconds_total") > 0.0
    );
    assert!(main("container_threads") >= 1.0);
    assert!(main("container_processes") >= 1.0);
    assert!(main("container_file_descriptors") >= 1.0);
    assert_eq!(main("container_oom_events_total"), 0.0);
    assert!(main("container_ulimits_soft") != 0.0);
    assert!(main("container_pressure_cpu_waiting_seconds_total") >= 0.0);
    // The network families only on the sandbox (pause) container, as cAdvisor's
    // `RemoveNetMetrics`: `container=""`, `name` = the sandbox ID, the runtime's pause image.
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("container_network_receive_bytes_total{container=\"main\"")),
        "{text}"
    );
    let sandbox_net = text
        .lines()
        .find(|l| {
            l.starts_with("container_network_receive_bytes_total{container=\"\"")
                && l.contains(&format!("pod=\"{pod_name}\""))
        })
        .unwrap_or_else(|| panic!("no sandbox network series in\n{text}"));
    assert!(
        sandbox_net.contains("image=\"registry.k8s.io/pause"),
        "{sandbox_net}"
    );
    assert!(sandbox_net.contains("interface=\""), "{sandbox_net}");
    assert!(
        text.lines().any(
            |l| l.starts_with("container_memory_working_set_bytes{container=\"\"")
                && l.contains(&format!("pod=\"{pod_name}\""))
                && l.contains("image=\"registry.k8s.io/pause")
        ),
        "the sandbox's cgroup series:\n{text}"
    );

    node.cleanup().await;
    common::remove_cgroup_root(CGROUP_ROOT);
}
