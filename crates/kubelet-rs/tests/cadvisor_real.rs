//! `/metrics/cadvisor` of a standalone kubelet-rs on the real containerd of
//! `hack/runtime-up.sh` (`cgroupsPerQOS`, a burstable pod with CPU and memory limits) against
//! the families upstream's kubelet serves on the same harness (`tests/data/
//! upstream-cadvisor-families.tsv`, recorded from `krs-upstream` with the same pod; how: its
//! header): every upstream family is served with upstream's TYPE, HELP and label names, on
//! every cgroup class upstream reports it on (root, QoS, pod, container); every family
//! kubelet-rs serves beyond them, or on more classes, is one this file names with the
//! reason. Serialised with the other real-runtime tests (run under
//! `flock /var/lib/kubelet-rs-test/dev-runtime.lock`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::http_get;
use common::node::{Node, busybox_pod, runtime_lock};

const T: Duration = Duration::from_secs(60);
/// A cgroup root of its own, so the test never touches another kubelet's `kubepods`.
const CGROUP_ROOT: &str = "krs-test-cadvisor";
const UPSTREAM: &str = include_str!("data/upstream-cadvisor-families.tsv");

/// Families upstream serves only for cgroups that did block I/O (the blkio tables): the
/// recording has none, kubelet-rs's scrape may.
const BLKIO_ONLY: [&str; 3] = [
    "container_fs_reads_bytes_total",
    "container_fs_writes_bytes_total",
    "container_blkio_device_usage_total",
];

/// Classes kubelet-rs reports a family on beyond the recording, and why: upstream's cAdvisor
/// does not see the harness' private containerd, so its container cgroups are raw ones,
/// while cAdvisor's containerd handler (what a node whose cAdvisor sees its runtime uses)
/// reports the sandbox's network and the container process' ulimits.
const CONTAINERD_HANDLER_EXTRAS: [&str; 9] = [
    "container_network_receive_bytes_total",
    "container_network_receive_errors_total",
    "container_network_receive_packets_dropped_total",
    "container_network_receive_packets_total",
    "container_network_transmit_bytes_total",
    "container_network_transmit_errors_total",
    "container_network_transmit_packets_dropped_total",
    "container_network_transmit_packets_total",
    "container_ulimits_soft",
];

#[derive(Debug, Default)]
struct FamilyShape {
    kind: String,
    help: String,
    labels: String,
    classes: BTreeSet<String>,
}

/// The cgroup class of an `id`: root, qos (the pods cgroup and its QoS cgroups), pod (a pod
/// cgroup), container (below a pod cgroup).
fn class(id: &str) -> &'static str {
    if id == "/" {
        return "root";
    }
    let last = id.rsplit('/').next().unwrap_or_default();
    let pod = |s: &str| s.starts_with("pod") || (s.starts_with("kubepods-") && s.contains("-pod"));
    if ["kubepods", "besteffort", "burstable"].contains(&last)
        || [
            "kubepods.slice",
            "kubepods-besteffort.slice",
            "kubepods-burstable.slice",
        ]
        .contains(&last)
    {
        "qos"
    } else if pod(last) {
        "pod"
    } else {
        "container"
    }
}

/// One [`FamilyShape`] per family of an exposition.
fn shapes(text: &str) -> BTreeMap<String, FamilyShape> {
    let mut out: BTreeMap<String, FamilyShape> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap();
            out.entry(name.into()).or_default().help = help.into();
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            out.entry(name.into()).or_default().kind = kind.into();
        } else if !line.is_empty() {
            let end = line.find(['{', ' ']).unwrap();
            let name = &line[..end];
            let labels = line[end..]
                .strip_prefix('{')
                .and_then(|l| l.split_once("} "))
                .map(|(l, _)| l)
                .unwrap_or_default();
            let mut names = Vec::new();
            let mut id = None;
            for pair in labels.split("\",").filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once("=\"").unwrap();
                names.push(k);
                if k == "id" {
                    id = Some(v.trim_end_matches('"').to_string());
                }
            }
            let f = out.entry(name.into()).or_default();
            f.labels = names.join(",");
            f.classes
                .insert(id.as_deref().map_or("-", class).to_string());
        }
    }
    out
}

fn upstream() -> BTreeMap<String, FamilyShape> {
    UPSTREAM
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.splitn(5, '\t').collect();
            let [name, kind, labels, classes, help] = f.as_slice() else {
                panic!("bad line {l:?}");
            };
            (
                name.to_string(),
                FamilyShape {
                    kind: kind.to_string(),
                    help: help.to_string(),
                    labels: labels.to_string(),
                    classes: classes.split(',').map(str::to_string).collect(),
                },
            )
        })
        .collect()
}

#[test]
fn classes_of_cgroup_ids() {
    assert_eq!(class("/"), "root");
    assert_eq!(class("/r/kubepods"), "qos");
    assert_eq!(class("/r/kubepods/burstable"), "qos");
    assert_eq!(class("/r/kubepods/burstable/pod1-2"), "pod");
    assert_eq!(class("/r/kubepods/burstable/pod1-2/abc"), "container");
    assert_eq!(class("/kubepods.slice/kubepods-burstable.slice"), "qos");
    assert_eq!(
        class("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1_2.slice"),
        "pod"
    );
    let up = upstream();
    assert!(up.len() > 70, "{}", up.len());
    assert_eq!(
        up["container_memory_failures_total"].labels,
        "container,failure_type,id,image,name,namespace,pod,scope"
    );
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn cadvisor_serves_every_upstream_family_on_every_cgroup_class() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-cadvisor").await;
    let config = std::fs::read_to_string(&node.config).unwrap();
    let config = config.replace(
        "cgroupsPerQOS: false\n",
        &format!("cgroupsPerQOS: true\ncgroupRoot: /{CGROUP_ROOT}\n"),
    );
    std::fs::write(&node.config, config).unwrap();
    node.start().await;
    let resources = "    resources:
      requests: {cpu: 100m, memory: 32Mi}
      limits: {cpu: 200m, memory: 64Mi}
";
    node.write_manifest(
        "bb.yaml",
        &(busybox_pod("bb", &node.busybox, "Always", "sleep 3600") + resources),
    );
    node.wait_for("bb running", T, || async { node.running("bb").await.pop() })
        .await;
    let pod_name = format!("bb-{}", node.name);
    let text = node
        .wait_for("bb's container in /metrics/cadvisor", T, || async {
            let (status, body) = http_get(node.ro_port, "/metrics/cadvisor")?;
            let seen = body.lines().any(|l| {
                l.starts_with("container_spec_cpu_quota{container=\"main\"")
                    && l.contains(&format!("pod=\"{pod_name}\""))
            });
            (status == 200 && seen).then_some(body)
        })
        .await;
    kubelet_metrics::testing::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let ours = shapes(&text);

    let mut problems = Vec::new();
    for (name, up) in upstream() {
        let Some(f) = ours.get(&name) else {
            problems.push(format!("{name}: missing"));
            continue;
        };
        if (f.kind.as_str(), f.help.as_str(), f.labels.as_str())
            != (up.kind.as_str(), up.help.as_str(), up.labels.as_str())
        {
            problems.push(format!(
                "{name}: TYPE/HELP/labels {:?} {:?} {:?}, upstream {:?} {:?} {:?}",
                f.kind, f.help, f.labels, up.kind, up.help, up.labels
            ));
        }
        let missing: Vec<_> = up.classes.difference(&f.classes).collect();
        if !missing.is_empty() {
            problems.push(format!("{name}: no series on {missing:?}"));
        }
        let extra: Vec<_> = f.classes.difference(&up.classes).collect();
        let allowed =
            |c: &String| c == "container" && CONTAINERD_HANDLER_EXTRAS.contains(&name.as_str());
        if !extra.iter().all(|c| allowed(c)) {
            problems.push(format!("{name}: series on {extra:?}, upstream has none"));
        }
    }
    let up = upstream();
    for name in ours.keys() {
        if !up.contains_key(name) && !BLKIO_ONLY.contains(&name.as_str()) {
            problems.push(format!("{name}: served, upstream does not"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}\n{text}");

    // The machine collector's labels and the version are the host's.
    let machine_id = std::fs::read_to_string("/etc/machine-id").unwrap();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("machine_cpu_cores{")
            && l.contains(&format!("machine_id=\"{}\"", machine_id.trim()))),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "cadvisor_version_info{{cadvisorRevision=\"\",cadvisorVersion=\"\",dockerVersion=\"\",kernelVersion=\"{}\"",
            kernel.trim()
        )),
        "{text}"
    );
    let cpus = std::fs::read_dir("/sys/devices/system/cpu")
        .unwrap()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_prefix("cpu")
                .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
        })
        .count();
    assert!(
        text.lines()
            .any(|l| l.starts_with("machine_cpu_cores{") && l.ends_with(&format!("}} {cpus}"))),
        "{cpus} CPUs:\n{text}"
    );
    // The root's filesystems have a size; the pod's cgroup its limits.
    assert!(
        text.lines()
            .any(|l| l.starts_with("container_fs_limit_bytes{")
                && l.contains("id=\"/\"")
                && !l.contains("} 0 ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("container_spec_cpu_quota{container=\"\"")
                && l.contains(&format!("pod=\"{pod_name}\""))
                && l.ends_with(" 20000")),
        "the pod cgroup's quota:\n{text}"
    );
    node.remove_manifest("bb.yaml");
    node.wait_for("bb gone", T, || async {
        node.running("bb").await.is_empty().then_some(())
    })
    .await;
    drop(node);
    common::remove_cgroup_root(CGROUP_ROOT);
}
