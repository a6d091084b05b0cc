//! A kubelet as a cluster node, against the real control plane (`hack/cluster-up.sh`): the
//! "Must show" list of issue #7, once for the upstream kubelet v1.35.4 (the reference: these
//! must pass there) and once for kubelet-rs (this crate's binary), each node on its own
//! containerd, bridge and pod subnet (`hack/lib/cluster-node.sh`):
//!
//! * the node is Ready in `kubectl get nodes` with upstream's capacity and allocatable;
//! * a Deployment of 10 replicas on the node reaches Running and Ready;
//! * `kubectl delete pod` ends the pod within its grace period (SIGTERM first, SIGKILL when
//!   the grace period is over) and the pod object disappears;
//! * pods that do not fit (`OutOfcpu`, `OutOfpods`, an unsafe sysctl) end `Failed` with
//!   upstream's reason and message;
//! * a static pod has a mirror pod, which comes back when deleted;
//! * the API server away for 60 s: no container restarted, the node Ready again within 30 s
//!   of its return (the upstream kubelet needs up to about a minute here: it gets 120 s),
//!   pod statuses reconciled (a pod that completed meanwhile is `Succeeded`);
//! * the kubelet killed with SIGKILL and restarted: no container restarted, the Node object
//!   is the same;
//! * `env`/`envFrom` from a ConfigMap and a Secret reach the container; a missing key is
//!   `CreateContainerConfigError` with upstream's message;
//! * configMap, secret and service-account token volumes: the files, a ConfigMap update
//!   within the sync period (old `..data` target removed), unmounted with the pod;
//!
//! and, with two nodes at once (upstream + kubelet-rs, and two upstream nodes as the
//! reference), one Deployment spreads across both and their pods reach each other and the
//! host.
//!
//! Tests run one at a time (a process-wide lock: the API server outage would disturb any
//! other), each in its own namespace `t-harness-<test>` on nodes `krs-t-harness-*`, and clean
//! up after themselves. Built as ignored with `KRS_SKIP_CLUSTER_TESTS=1` or
//! `KRS_SKIP_RUNTIME_TESTS=1`. Set `KRS_CLUSTER_BIN` to the upstream binaries if they are not
//! in `_output/bin`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use kubelet_apimachinery::Quantity;
use kubelet_e2e::cluster::{self, Cluster, ClusterNode, NodeKubelet, NodeSpec};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The nodes of these tests: name and node IP (on `lo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TestNode {
    Upstream,
    /// A second upstream node, for the two-node tests' reference run.
    Upstream2,
    KubeletRs,
}

/// The test nodes' taint: other users of the shared control plane (a conformance run
/// schedules its pods on any node) keep off; the tests' pods tolerate it.
const TAINT_KEY: &str = "kubelet-rs.test/harness";

impl TestNode {
    fn spec(self) -> NodeSpec {
        let mut spec = self.untainted_spec();
        spec.taints = vec![format!("{TAINT_KEY}=:NoSchedule")];
        spec
    }

    fn untainted_spec(self) -> NodeSpec {
        match self {
            TestNode::Upstream => {
                NodeSpec::new(NodeKubelet::Upstream, "krs-t-harness-up", "198.18.255.30")
            }
            TestNode::Upstream2 => {
                NodeSpec::new(NodeKubelet::Upstream, "krs-t-harness-up2", "198.18.255.32")
            }
            TestNode::KubeletRs => NodeSpec::new(
                NodeKubelet::KubeletRs(PathBuf::from(env!("CARGO_BIN_EXE_kubelet-rs"))),
                "krs-t-harness-rs",
                "198.18.255.31",
            ),
        }
    }
}

const BUSYBOX: &str = "docker.io/library/busybox:1.36";

/// One test at a time in this process.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A namespace deleted (with its pods, waiting for them) on drop.
struct Namespace<'a> {
    c: &'a Cluster,
    name: String,
}

impl<'a> Namespace<'a> {
    fn create(c: &'a Cluster, test: &str) -> Result<Self, Box<dyn std::error::Error>> {
        let name = format!("t-harness-{test}");
        // A previous run that was killed may have left it behind.
        c.kubectl_output([
            "delete",
            "namespace",
            &name,
            "--ignore-not-found",
            "--wait",
            "--timeout=120s",
        ])?;
        c.kubectl_output(["create", "namespace", &name])?;
        wait_for(&format!("ServiceAccount default in {name}"), 60, || {
            Ok(
                c.kubectl_output(["-n", &name, "get", "serviceaccount", "default"])
                    .is_ok()
                    .then_some(()),
            )
        })?;
        Ok(Namespace { c, name })
    }
}

impl Drop for Namespace<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.c.kubectl_output([
            "delete",
            "namespace",
            &self.name,
            "--wait",
            "--timeout=120s",
        ]) {
            eprintln!("deleting namespace {}: {e}", self.name);
        }
    }
}

/// `kubectl <args> -o json`, parsed.
fn get_json(c: &Cluster, args: &[&str]) -> Result<Value, Box<dyn std::error::Error>> {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-o", "json"]);
    Ok(serde_json::from_str(&c.kubectl_output(all)?)?)
}

/// `kubectl create -f -` with `object` on stdin.
fn create(c: &Cluster, ns: &str, object: &Value) -> TestResult {
    let mut child = c
        .kubectl()
        .args(["-n", ns, "create", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(object.to_string().as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(format!(
            "kubectl create {}: {}",
            object["metadata"]["name"],
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(())
}

/// Polls `f` every 500 ms until it returns `Some`, for at most `secs` seconds.
fn wait_for<T>(
    what: &str,
    secs: u64,
    mut f: impl FnMut() -> Result<Option<T>, Box<dyn std::error::Error>>,
) -> Result<T, Box<dyn std::error::Error>> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f()? {
            return Ok(v);
        }
        if Instant::now() >= deadline {
            return Err(format!("timed out after {secs}s waiting for {what}").into());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A busybox pod running `script` (`sh -c`), without a service account token (the volume
/// tests turn it back on), tolerating cordoned nodes.
fn busybox_pod(name: &str, node: Option<&str>, script: &str, grace: u32) -> Value {
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"test": name}},
        "spec": {
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": grace,
            // Schedulable even when someone cordons our node (a conformance run cordons
            // every node but its own).
            "tolerations": [
                {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
            ],
            "containers": [{"name": "main", "image": BUSYBOX, "command": ["sh", "-c", script]}],
        },
    });
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

/// Runs until SIGTERM, then exits 0.
const SLEEPER: &str = "trap 'exit 0' TERM; while true; do sleep 1; done";

fn pod_json(c: &Cluster, ns: &str, pod: &str) -> Result<Value, Box<dyn std::error::Error>> {
    get_json(c, &["-n", ns, "get", "pod", pod])
}

fn condition<'v>(object: &'v Value, kind: &str) -> Option<&'v Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn wait_pod_running_ready(
    c: &Cluster,
    ns: &str,
    pod: &str,
) -> Result<Value, Box<dyn std::error::Error>> {
    wait_for(&format!("pod {ns}/{pod} Running and Ready"), 120, || {
        let p = pod_json(c, ns, pod)?;
        let ready = condition(&p, "Ready").is_some_and(|c| c["status"] == "True");
        Ok((p["status"]["phase"] == "Running" && ready).then_some(p))
    })
}

fn wait_pod_phase(
    c: &Cluster,
    ns: &str,
    pod: &str,
    phase: &str,
    secs: u64,
) -> Result<Value, Box<dyn std::error::Error>> {
    wait_for(&format!("pod {ns}/{pod} {phase}"), secs, || {
        let p = pod_json(c, ns, pod)?;
        Ok((p["status"]["phase"] == phase).then_some(p))
    })
}

/// (containerID, restartCount) of the pod's only container.
fn container_identity(pod: &Value) -> (String, u64) {
    let s = &pod["status"]["containerStatuses"][0];
    (
        s["containerID"].as_str().unwrap_or_default().to_string(),
        s["restartCount"].as_u64().unwrap_or(u64::MAX),
    )
}

fn node_json(c: &Cluster, node: &str) -> Result<Value, Box<dyn std::error::Error>> {
    get_json(c, &["get", "node", node])
}

fn parse_time(s: &str) -> Result<SystemTime, Box<dyn std::error::Error>> {
    // RFC 3339 UTC as the API server writes it: 2026-11-30T17:47:21Z or with .ffffffZ.
    let out = Command::new("date")
        .args(["-u", "-d", s, "+%s%N"])
        .output()?;
    let ns: u64 = String::from_utf8(out.stdout)?.trim().parse()?;
    Ok(SystemTime::UNIX_EPOCH + Duration::from_nanos(ns))
}

/// The node's Lease was renewed after `after`.
fn lease_renewed_after(
    c: &Cluster,
    node: &str,
    after: SystemTime,
) -> Result<bool, Box<dyn std::error::Error>> {
    let lease = match get_json(c, &["-n", "kube-node-lease", "get", "lease", node]) {
        Ok(l) => l,
        Err(_) => return Ok(false),
    };
    let Some(renew) = lease["spec"]["renewTime"].as_str() else {
        return Ok(false);
    };
    Ok(parse_time(renew)? > after)
}

fn node_ready(node: &Value) -> bool {
    condition(node, "Ready").is_some_and(|c| c["status"] == "True")
}

/// Resource name → milli-units.
type Resources = BTreeMap<String, i64>;

/// Milli-units of a quantity, for comparing values whatever their format.
fn milli(q: &str) -> Result<i64, Box<dyn std::error::Error>> {
    Ok(Quantity::parse(q)
        .map_err(|e| format!("quantity {q:?}: {e:?}"))?
        .scaled_value(-3))
}

/// What upstream's node status reports on this machine for a node whose `--root-dir` is
/// `root` (cadvisor machine info, `hack/lib/cluster-node.sh`'s config: no reserved resources,
/// hard eviction memory.available 100Mi and nodefs.available 1Gi), in milli-units.
fn expected_resources(
    root: &Path,
    max_pods: u32,
) -> Result<(Resources, Resources), Box<dyn std::error::Error>> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo")?;
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count() as i64;
    let meminfo = std::fs::read_to_string("/proc/meminfo")?;
    let mem_kib: i64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("no MemTotal in /proc/meminfo")?;
    // statvfs of the root dir: total blocks times the fundamental block size.
    let out = Command::new("stat")
        .args(["-f", "-c", "%b %S"])
        .arg(root)
        .output()?;
    let text = String::from_utf8(out.stdout)?;
    let mut it = text.split_whitespace().map(str::parse::<i64>);
    let (blocks, bsize) = match (it.next(), it.next()) {
        (Some(Ok(b)), Some(Ok(s))) => (b, s),
        _ => return Err(format!("stat -f {}: {text:?}", root.display()).into()),
    };
    let mut capacity = BTreeMap::from([
        ("cpu".to_string(), cpus * 1000),
        ("memory".to_string(), mem_kib * 1024 * 1000),
        ("pods".to_string(), i64::from(max_pods) * 1000),
        ("ephemeral-storage".to_string(), blocks * bsize * 1000),
    ]);
    let mut hugepages = 0;
    for entry in std::fs::read_dir("/sys/kernel/mm/hugepages")? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(kib) = name
            .strip_prefix("hugepages-")
            .and_then(|s| s.strip_suffix("kB"))
        else {
            continue;
        };
        let kib: i64 = kib.parse()?;
        let pages: i64 = std::fs::read_to_string(entry.path().join("nr_hugepages"))?
            .trim()
            .parse()?;
        let size = if kib % (1024 * 1024) == 0 {
            format!("{}Gi", kib / (1024 * 1024))
        } else if kib % 1024 == 0 {
            format!("{}Mi", kib / 1024)
        } else {
            format!("{kib}Ki")
        };
        capacity.insert(format!("hugepages-{size}"), pages * kib * 1024 * 1000);
        hugepages += pages * kib * 1024 * 1000;
    }
    let mut allocatable = capacity.clone();
    // Allocatable = capacity - reserved (none) - hard eviction; memory also less hugepages.
    *allocatable.get_mut("memory").ok_or("memory")? -= 100 * 1024 * 1024 * 1000 + hugepages;
    *allocatable
        .get_mut("ephemeral-storage")
        .ok_or("ephemeral-storage")? -= 1024 * 1024 * 1024 * 1000;
    Ok((capacity, allocatable))
}

fn resources(
    node: &Value,
    field: &str,
) -> Result<BTreeMap<String, i64>, Box<dyn std::error::Error>> {
    node["status"][field]
        .as_object()
        .ok_or_else(|| format!("node has no status.{field}"))?
        .iter()
        .map(|(k, v)| Ok((k.clone(), milli(v.as_str().ok_or("not a string")?)?)))
        .collect()
}

// ---- the tests, one function per "Must show" item -------------------------------------

fn node_ready_with_capacity_and_allocatable(kubelet: TestNode) -> TestResult {
    let _serial = serial();
    let c = cluster::ensure()?;
    let node = c.start_node(kubelet.spec())?;
    let name = &node.spec.name;

    // As a user sees it: `kubectl get nodes` lists the node as Ready (`Ready,SchedulingDisabled`
    // while hack/conformance.sh has cordoned every other node, which may run at the same time).
    let table = c.kubectl_output(["get", "nodes", "--no-headers"])?;
    let row = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .ok_or_else(|| format!("{name} not in kubectl get nodes:\n{table}"))?;
    let status = row.split_whitespace().nth(1).unwrap_or_default();
    assert!(
        status == "Ready" || status == "Ready,SchedulingDisabled",
        "{row}"
    );

    let n = node_json(&c, name)?;
    let (capacity, allocatable) = expected_resources(&node.dir.join("root"), 110)?;
    assert_eq!(resources(&n, "capacity")?, capacity, "capacity of {name}");
    assert_eq!(
        resources(&n, "allocatable")?,
        allocatable,
        "allocatable of {name}"
    );
    node.stop()?;
    Ok(())
}

fn deployment_of_ten_replicas_runs(kubelet: TestNode) -> TestResult {
    let _serial = serial();
    let c = cluster::ensure()?;
    let node = c.start_node(kubelet.spec())?;
    let ns = Namespace::create(&c, "deploy10")?;
    let mut template = busybox_pod("web", None, SLEEPER, 5);
    template["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": node.spec.name});
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 10,
            "selector": {"matchLabels": {"test": "web"}},
            "template": {"metadata": template["metadata"], "spec": template["spec"]},
        },
    });
    create(&c, &ns.name, &deployment)?;
    c.kubectl_output([
        "-n",
        &ns.name,
        "rollout",
        "status",
        "deployment/web",
        "--timeout=300s",
    ])?;
    let pods = get_json(&c, &["-n", &ns.name, "get", "pods", "-l", "test=web"])?;
    let pods = pods["items"].as_array().ok_or("no items")?;
    assert_eq!(pods.len(), 10, "pods of the Deployment");
    for p in pods {
        let pod = &p["metadata"]["name"];
        assert_eq!(p["spec"]["nodeName"], json!(node.spec.name), "{pod}");
        assert_eq!(p["status"]["phase"], "Running", "{pod}");
        assert!(
            condition(p, "Ready").is_some_and(|c| c["status"] == "True"),
            "{pod} Ready: {p}"
        );
        assert_eq!(p["status"]["containerStatuses"][0]["ready"], true, "{pod}");
    }
    drop(ns);
    node.stop()?;
    Ok(())
}

/// `kubectl delete pod` of a pod that exits on SIGTERM returns well within the grace period,
/// after the container exited 0; a pod that ignores SIGTERM is killed when its (short)
/// grace period is over. Both pod objects are gone afterwards.
fn delete_pod_is_graceful(kubelet: TestNode) -> TestResult {
    let _serial = serial();
    let c = cluster::ensure()?;
    let node = c.start_node(kubelet.spec())?;
    let ns = Namespace::create(&c, "graceful")?;
    let name = node.spec.name.as_str();
    create(
        &c,
        &ns.name,
        &busybox_pod(
            "polite",
            Some(name),
            "trap 'echo got TERM; exit 0' TERM; while true; do sleep 1; done",
            30,
        ),
    )?;
    create(
        &c,
        &ns.name,
        &busybox_pod(
            "stubborn",
            Some(name),
            "trap '' TERM; while true; do sleep 1; done",
            3,
        ),
    )?;
    wait_pod_running_ready(&c, &ns.name, "polite")?;
    wait_pod_running_ready(&c, &ns.name, "stubborn")?;

    for (pod, grace, exit_code) in [("polite", 30, 0), ("stubborn", 3, 137)] {
        // Watch the pod while it is deleted, to see its container's last state.
        let mut watch = c
            .kubectl()
            .args([
                "-n",
                &ns.name,
                "get",
                "pod",
                pod,
                "--watch",
                "--output-watch-events",
                "-o",
                "json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut stdout = watch.stdout.take().ok_or("no stdout")?;
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stdout.read_to_string(&mut s);
            s
        });
        std::thread::sleep(Duration::from_secs(1));
        let start = Instant::now();
        c.kubectl_output([
            "-n",
            &ns.name,
            "delete",
            "pod",
            pod,
            "--wait",
            "--timeout=90s",
        ])?;
        let took = start.elapsed();
        std::thread::sleep(Duration::from_secs(1));
        watch.kill()?;
        watch.wait()?;
        let events = reader.join().map_err(|_| "watch reader panicked")?;

        if exit_code == 0 {
            // Gone as soon as the container exited, not at the end of the grace period.
            assert!(
                took < Duration::from_secs(grace),
                "{pod}: deletion took {took:?}, grace period {grace}s"
            );
        } else {
            // Killed when its grace period was over (not before; not much later).
            assert!(
                took >= Duration::from_secs(grace),
                "{pod} ignores SIGTERM but was gone after {took:?}, before its grace period of {grace}s"
            );
            assert!(
                took < Duration::from_secs(grace + 20),
                "{pod}: deletion took {took:?}, grace period {grace}s"
            );
        }
        let gone = c.kubectl_output(["-n", &ns.name, "get", "pod", pod, "--ignore-not-found"])?;
        assert_eq!(gone, "", "{pod} still exists");

        let events: Vec<Value> = serde_json::Deserializer::from_str(&events)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()?;
        let terminated: Vec<&Value> = events
            .iter()
            .filter_map(|e| {
                e["object"]["status"]["containerStatuses"][0]["state"].get("terminated")
            })
            .collect();
        let last = terminated
            .last()
            .ok_or_else(|| format!("{pod}: no terminated state seen in {events:?}"))?;
        assert_eq!(last["exitCode"], exit_code, "{pod}: {last}");
        assert!(
            events.iter().any(|e| e["type"] == "DELETED"),
            "{pod}: no DELETED event"
        );
    }
    drop(ns);
    node.stop()?;
    Ok(())
}

/// Pods bound to the node (`spec.nodeName`, past the scheduler) that do not fit end
/// `Failed` with upstream's reason and message. maxPods is 2 for this node.
fn pods_that_do_not_fit_fail(kubelet: TestNode) -> TestResult {
    let _serial = serial();
    let c = cluster::ensure()?;
    let mut spec = kubelet.spec();
    spec.max_pods = Some(2);
    let node = c.start_node(spec)?;
    let ns = Namespace::create(&c, "admission")?;
    let name = node.spec.name.as_str();
    let cpus = milli(
        node_json(&c, name)?["status"]["allocatable"]["cpu"]
            .as_str()
            .ok_or("cpu")?,
    )?;

    let mut hog = busybox_pod("cpu-hog", Some(name), SLEEPER, 1);
    hog["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "1000"}});
    create(&c, &ns.name, &hog)?;
    let mut sysctl = busybox_pod("unsafe-sysctl", Some(name), SLEEPER, 1);
    sysctl["spec"]["securityContext"] =
        json!({"sysctls": [{"name": "kernel.msgmax", "value": "65536"}]});
    create(&c, &ns.name, &sysctl)?;
    let expect = [
        (
            "cpu-hog",
            "OutOfcpu",
            format!(
                "Pod was rejected: Node didn't have enough resource: cpu, requested: 1000000, used: 0, capacity: {cpus}"
            ),
        ),
        (
            "unsafe-sysctl",
            "SysctlForbidden",
            "Pod was rejected: forbidden sysctl: \"kernel.msgmax\" not allowlisted".to_string(),
        ),
    ];
    for (pod, reason, message) in &expect {
        let p = wait_pod_phase(&c, &ns.name, pod, "Failed", 60)?;
        assert_eq!(p["status"]["reason"], *reason, "{pod}: {}", p["status"]);
        assert_eq!(p["status"]["message"], json!(message), "{pod}");
    }

    // Two pods fill the node; the third is one too many.
    for pod in ["fill-1", "fill-2"] {
        create(&c, &ns.name, &busybox_pod(pod, Some(name), SLEEPER, 1))?;
        wait_pod_running_ready(&c, &ns.name, pod)?;
    }
    create(
        &c,
        &ns.name,
        &busybox_pod("one-too-many", Some(name), SLEEPER, 1),
    )?;
    let p = wait_pod_phase(&c, &ns.name, "one-too-many", "Failed", 60)?;
    assert_eq!(p["status"]["reason"], "OutOfpods", "{}", p["status"]);
    assert_eq!(
        p["status"]["message"],
        "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
    );
    drop(ns);
    node.stop()?;
    Ok(())
}

/// `env` from a ConfigMap key and a Secret key (`valueFrom`) and `envFrom` of both with
/// prefixes reach the container, which writes them to its termination message; a missing
/// key leaves the container waiting in `CreateContainerConfigError` with upstream's message.
fn env_from_config_map_and_secret(kubelet: TestNode) -> TestResult {
    let _serial = serial();
    let c = cluster::ensure()?;
    let node = c.start_node(kubelet.spec())?;
    let ns = Namespace::create(&c, "envobjects")?;
    let name = node.spec.name.as_str();
    create(
        &c,
        &ns.name,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
            "data": {"greeting": "hello", "other": "x"}}),
    )?;
    create(
        &c,
        &ns.name,
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"},
            "stringData": {"password": "s3cr3t"}}),
    )?;
    let mut pod = busybox_pod(
        "env",
        Some(name),
        r#"printf '%s' "$GREETING $PASSWORD $CM_greeting $CM_other $S_password" > /dev/termination-log"#,
        1,
    );
    pod["spec"]["restartPolicy"] = json!("Never");
    pod["spec"]["containers"][0]["env"] = json!([
        {"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "greeting"}}},
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "password"}}},
    ]);
    pod["spec"]["containers"][0]["envFrom"] = json!([
        {"prefix": "CM_", "configMapRef": {"name": "cfg"}},
        {"prefix": "S_", "secretRef": {"name": "sec"}},
    ]);
    create(&c, &ns.name, &pod)?;
    let done = wait_pod_phase(&c, &ns.name, "env", "Succeeded", 120)?;
    assert_eq!(
        done["status"]["containerStatuses"][0]["state"]["terminated"]["message"],
        "hello s3cr3t hello x s3cr3t",
        "{}",
        done["status"]
    );

    let mut nokey = busybox_pod("nokey", Some(name), SLEEPER, 1);
    nokey["spec"]["containers"][0]["env"] =
        json!([{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "nokey"}}}]);
    create(&c, &ns.name, &nokey)?;
    let waiting = wait_for("nokey in CreateContainerConfigError", 60, || {
        let p = pod_json(&c, &ns.name, "nokey")?;
        let w = &p["status"]["containerStatuses"][0]["state"]["waiting"];
        Ok((w["reason"] == "CreateContainerConfigError").then(|| w.clone()))
    })?;
    assert_eq!(
        waiting["message"],
        json!(format!(
            "couldn't find key nokey in ConfigMap {}/cfg",
            ns.name
        ))
    );
    drop(ns);
    node.stop()?;
    Ok(())
}

fn is_mount_point(path: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let p = path.to_string_lossy();
    mounts
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(p.as_ref()))
}

/// configMap, secret and the service-account (projected token) volumes: the files in the
/// container and under `<root-dir>/pods/<uid>/volumes/<plugin>/<name>` (secret and projected
/// on a tmpfs); a ConfigMap update reaches the file within the sync period and the old
/// `..data` target goes; the volumes are unmounted and removed with the pod.
fn volumes_from_config_map_secret_and_token(kubelet: TestNode) -> TestResult {
    let _serial = serial();
    let c = cluster::ensure()?;
    let node = c.start_node(kubelet.spec())?;
    let ns = Namespace::create(&c, "volumes")?;
    let name = node.spec.name.as_str();
    create(
        &c,
        &ns.name,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
            "data": {"k": "v1"}}),
    )?;
    create(
        &c,
        &ns.name,
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"},
            "stringData": {"p": "s3cr3t"}}),
    )?;
    let with_volumes = |pod: &mut Value| {
        pod["spec"]
            .as_object_mut()
            .map(|s| s.remove("automountServiceAccountToken"));
        pod["spec"]["volumes"] = json!([
            {"name": "cfg", "configMap": {"name": "cfg"}},
            {"name": "sec", "secret": {"secretName": "sec", "defaultMode": 256}},
        ]);
        pod["spec"]["containers"][0]["volumeMounts"] = json!([
            {"name": "cfg", "mountPath": "/etc/cfg"},
            {"name": "sec", "mountPath": "/etc/sec"},
        ]);
    };
    let mut reader = busybox_pod(
        "reader",
        Some(name),
        "printf '%s %s %s %s' \"$(cat /etc/cfg/k)\" \"$(cat /etc/sec/p)\" \
         \"$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)\" \
         \"$(stat -L -c %a /etc/sec/p)\" > /dev/termination-log; \
         touch /etc/cfg/x 2>/dev/null || printf ' ro' >> /dev/termination-log",
        1,
    );
    reader["spec"]["restartPolicy"] = json!("Never");
    with_volumes(&mut reader);
    create(&c, &ns.name, &reader)?;
    let done = wait_pod_phase(&c, &ns.name, "reader", "Succeeded", 120)?;
    assert_eq!(
        done["status"]["containerStatuses"][0]["state"]["terminated"]["message"],
        json!(format!("v1 s3cr3t {} 400 ro", ns.name)),
        "{}",
        done["status"]
    );

    let mut pod = busybox_pod("vol", Some(name), SLEEPER, 1);
    with_volumes(&mut pod);
    create(&c, &ns.name, &pod)?;
    let p = wait_pod_running_ready(&c, &ns.name, "vol")?;
    let uid = p["metadata"]["uid"].as_str().ok_or("no uid")?.to_string();
    let volumes = node.dir.join("root/pods").join(&uid).join("volumes");
    let cfg = volumes.join("kubernetes.io~configmap/cfg");
    let sec = volumes.join("kubernetes.io~secret/sec");
    assert_eq!(std::fs::read_to_string(cfg.join("k"))?, "v1");
    assert_eq!(std::fs::read_to_string(sec.join("p"))?, "s3cr3t");
    assert!(is_mount_point(&sec), "the secret volume is a tmpfs");
    assert!(!is_mount_point(&cfg), "configMap volumes are on disk");
    let access = std::fs::read_dir(volumes.join("kubernetes.io~projected"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("kube-api-access-"))
        })
        .ok_or("no kube-api-access volume")?;
    assert!(is_mount_point(&access));
    let token = std::fs::read_to_string(access.join("token"))?;
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    assert!(std::fs::read_to_string(access.join("ca.crt"))?.contains("BEGIN CERTIFICATE"));
    assert_eq!(std::fs::read_to_string(access.join("namespace"))?, ns.name);

    let old = std::fs::read_link(cfg.join("..data"))?;
    c.kubectl_output([
        "-n",
        &ns.name,
        "patch",
        "configmap",
        "cfg",
        "-p",
        r#"{"data":{"k":"v2"}}"#,
    ])?;
    // Within the sync period (syncFrequency, 1 min) plus the watch's delay.
    wait_for("the ConfigMap update in the volume", 100, || {
        Ok((std::fs::read_to_string(cfg.join("k"))? == "v2").then_some(()))
    })?;
    assert!(
        !cfg.join(&old).exists(),
        "old ..data target {old:?} removed"
    );

    c.kubectl_output([
        "-n",
        &ns.name,
        "delete",
        "pod",
        "vol",
        "--wait",
        "--timeout=60s",
    ])?;
    wait_for("the pod's volumes unmounted and removed", 60, || {
        Ok(
            (!is_mount_point(&sec) && !is_mount_point(&access) && !sec.exists() && !cfg.exists())
                .then_some(()),
        )
    })?;
    drop(ns);
    node.stop()?;
    Ok(())
}

/// A static pod (file in `staticPodPath`) appears as a mirror pod `<pod>-<node>`; deleting
/// the mirror pod brings a new one (new UID) while the static pod's container keeps running;
/// removing the file removes the mirror pod.
fn static_pod_has_a_mirror_pod(kubelet: TestNode) -> TestResult {
    let _serial = serial();
    let c = cluster::ensure()?;
    let node = c.start_node(kubelet.spec())?;
    let ns = Namespace::create(&c, "static")?;
    let mut pod = busybox_pod("static-web", None, SLEEPER, 2);
    pod["metadata"]["namespace"] = json!(ns.name);
    let manifest = node.manifests_dir().join("static-web.json");
    std::fs::write(&manifest, pod.to_string())?;
    let mirror = format!("static-web-{}", node.spec.name);

    let first = wait_pod_running_ready(&c, &ns.name, &mirror)?;
    assert!(
        first["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string(),
        "not a mirror pod: {}",
        first["metadata"]
    );
    assert_eq!(first["spec"]["nodeName"], json!(node.spec.name));
    let uid = first["metadata"]["uid"].clone();
    let container = container_identity(&first);

    c.kubectl_output(["-n", &ns.name, "delete", "pod", &mirror, "--wait=false"])?;
    let second = wait_for(&format!("a new mirror pod {mirror}"), 60, || {
        Ok(match pod_json(&c, &ns.name, &mirror) {
            Ok(p)
                if p["metadata"]["uid"] != uid
                    && p["metadata"]["deletionTimestamp"].is_null()
                    && p["status"]["phase"] == "Running" =>
            {
                Some(p)
            }
            _ => None,
        })
    })?;
    assert!(second["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string());
    // Wait for the status of the new mirror pod to carry the container, then compare.
    let second = wait_for("the new mirror pod's container status", 30, || {
        let p = pod_json(&c, &ns.name, &mirror)?;
        Ok(p["status"]["containerStatuses"][0]["containerID"]
            .is_string()
            .then_some(p))
    })?;
    assert_eq!(
        container_identity(&second),
        container,
        "the static pod's container was restarted"
    );

    std::fs::remove_file(&manifest)?;
    wait_for(&format!("{mirror} gone"), 60, || {
        Ok(
            c.kubectl_output(["-n", &ns.name, "get", "pod", &mirror, "--ignore-not-found"])?
                .is_empty()
                .then_some(()),
        )
    })?;
    drop(ns);
    node.stop()?;
    Ok(())
}

/// The API server away for 60 s: no container restarted, the node's Lease renewed within
/// 30 s of the API server's return and the node Ready (kubelet-rs: within 30 s, the issue's
/// bar; upstream: 120 s, see below), and a pod that completed
/// during the outage (told to by a file in its hostPath volume) `Succeeded` in the API.
fn apiserver_outage(kubelet: TestNode) -> TestResult {
    let _serial = serial();
    let c = cluster::ensure()?;
    let node = c.start_node(kubelet.spec())?;
    let ns = Namespace::create(&c, "outage")?;
    let name = node.spec.name.as_str();
    let trigger = tempfile::tempdir()?;
    create(&c, &ns.name, &busybox_pod("steady", Some(name), SLEEPER, 2))?;
    let mut finisher = busybox_pod(
        "finisher",
        Some(name),
        "while [ ! -e /trigger/go ]; do sleep 1; done; exit 0",
        2,
    );
    finisher["spec"]["restartPolicy"] = json!("Never");
    finisher["spec"]["volumes"] =
        json!([{"name": "trigger", "hostPath": {"path": trigger.path(), "type": "Directory"}}]);
    finisher["spec"]["containers"][0]["volumeMounts"] =
        json!([{"name": "trigger", "mountPath": "/trigger"}]);
    create(&c, &ns.name, &finisher)?;
    let before = container_identity(&wait_pod_running_ready(&c, &ns.name, "steady")?);
    wait_pod_running_ready(&c, &ns.name, "finisher")?;
    let node_uid = node_json(&c, name)?["metadata"]["uid"].clone();

    let mut touched = Ok(());
    let outage = c.stop_apiserver_for(60, || {
        touched = std::fs::write(trigger.path().join("go"), b"");
    })?;
    touched?;
    let back = Instant::now();
    // The kubelet heartbeats again: its Lease is renewed within 30 s of the return.
    wait_for(
        &format!("{name}'s Lease renewed after the outage"),
        30,
        || Ok(lease_renewed_after(&c, name, outage.stopped)?.then_some(())),
    )
    .map_err(|e| format!("{e} (API server back at {:?})", outage.returned))?;
    // And reports Ready. kube-controller-manager may have marked the node Unknown when the
    // API server came back (no lease renewal for longer than its 50 s grace period); the
    // kubelet must then send Ready again. The issue asks kubelet-rs for 30 s. The upstream
    // kubelet compares its status with its own Node from an informer, whose watch backs
    // off after the outage (client-go reflector, up to about a minute): it sent Ready again
    // 51 s after the return in one measurement here. So the reference gets 120 s.
    let ready_within: u64 = match kubelet {
        TestNode::KubeletRs => 30,
        TestNode::Upstream | TestNode::Upstream2 => 120,
    };
    let mut seen = String::new();
    wait_for(
        &format!("{name} Ready after the outage"),
        ready_within.saturating_sub(back.elapsed().as_secs()),
        || {
            let n = match node_json(&c, name) {
                Ok(n) => n,
                Err(e) => {
                    seen = e.to_string();
                    return Ok(None);
                }
            };
            seen = format!("Ready condition {:?}", condition(&n, "Ready"));
            Ok(node_ready(&n).then_some(()))
        },
    )
    .map_err(|e| {
        format!(
            "{e}: last seen {seen} (API server back at {:?})",
            outage.returned
        )
    })?;
    eprintln!(
        "{name} Ready again {:?} after the API server returned",
        back.elapsed()
    );

    let finished = wait_pod_phase(&c, &ns.name, "finisher", "Succeeded", 30)?;
    assert_eq!(
        finished["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        0
    );
    let steady = wait_pod_running_ready(&c, &ns.name, "steady")?;
    assert_eq!(
        container_identity(&steady),
        before,
        "steady's container was restarted"
    );
    assert_eq!(
        node_json(&c, name)?["metadata"]["uid"],
        node_uid,
        "the Node was recreated"
    );
    drop(ns);
    node.stop()?;
    Ok(())
}

/// The kubelet killed with SIGKILL and started again: its pod's container is not
/// restarted and the Node object is the same one.
fn kubelet_sigkill_and_restart(kubelet: TestNode) -> TestResult {
    let _serial = serial();
    let c = cluster::ensure()?;
    let node = c.start_node(kubelet.spec())?;
    let ns = Namespace::create(&c, "sigkill")?;
    let name = node.spec.name.as_str();
    create(&c, &ns.name, &busybox_pod("steady", Some(name), SLEEPER, 2))?;
    let before = container_identity(&wait_pod_running_ready(&c, &ns.name, "steady")?);
    let node_uid = node_json(&c, name)?["metadata"]["uid"].clone();

    let pid = node.kubelet_pid()?;
    node.kill_kubelet()?;
    wait_for(&format!("kubelet pid {pid} gone"), 10, || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Gone, or a zombie (this machine's PID 1 does not reap orphans).
        Ok((stat.is_empty() || stat.split_whitespace().nth(2) == Some("Z")).then_some(()))
    })?;
    assert_eq!(
        node_json(&c, name)?["metadata"]["uid"],
        node_uid,
        "the Node went away"
    );
    let killed_at = SystemTime::now();
    node.restart_kubelet()?;
    assert_ne!(node.kubelet_pid()?, pid, "the kubelet was not restarted");
    wait_for(
        &format!("{name} Ready with its Lease renewed after the restart"),
        60,
        || {
            let ready = node_json(&c, name).map(|n| node_ready(&n)).unwrap_or(false);
            Ok((ready && lease_renewed_after(&c, name, killed_at)?).then_some(()))
        },
    )?;
    // Give the new kubelet time to sync the pod (a restart would show in its status).
    std::thread::sleep(Duration::from_secs(15));
    let steady = wait_pod_running_ready(&c, &ns.name, "steady")?;
    assert_eq!(
        container_identity(&steady),
        before,
        "the container was restarted"
    );
    assert_eq!(
        node_json(&c, name)?["metadata"]["uid"],
        node_uid,
        "the Node was recreated"
    );
    drop(ns);
    node.stop()?;
    Ok(())
}

/// An HTTP GET of `http://ip:8080/` from the host; the body.
fn http_get(ip: &str) -> Result<String, Box<dyn std::error::Error>> {
    let addr = format!("{ip}:8080").parse()?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(b"GET / HTTP/1.0\r\n\r\n")?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .trim()
        .to_string())
}

/// Two nodes at once, each on its own containerd and pod subnet: one Deployment spreads
/// across both (2 + 2), the host reaches every pod, and a pod on each node reaches a pod
/// on the other.
fn deployment_spreads_across_two_nodes(a: TestNode, b: TestNode) -> TestResult {
    let _serial = serial();
    let c = cluster::ensure()?;
    let nodes: Vec<ClusterNode> = vec![c.start_node(a.spec())?, c.start_node(b.spec())?];
    let names: Vec<&str> = nodes.iter().map(|n| n.spec.name.as_str()).collect();
    let ns = Namespace::create(&c, "spread")?;
    let mut template = busybox_pod(
        "web",
        None,
        "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www",
        2,
    );
    template["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": names}]}]}}});
    template["spec"]["topologySpreadConstraints"] = json!([{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"test": "web"}}}]);
    create(
        &c,
        &ns.name,
        &json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 4,
                "selector": {"matchLabels": {"test": "web"}},
                "template": {"metadata": template["metadata"], "spec": template["spec"]},
            },
        }),
    )?;
    c.kubectl_output([
        "-n",
        &ns.name,
        "rollout",
        "status",
        "deployment/web",
        "--timeout=180s",
    ])?;
    let pods = get_json(&c, &["-n", &ns.name, "get", "pods", "-l", "test=web"])?;
    let pods = pods["items"].as_array().ok_or("no items")?.clone();
    let mut per_node: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for p in &pods {
        assert_eq!(p["status"]["phase"], "Running");
        per_node
            .entry(
                p["spec"]["nodeName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
            .or_default()
            .push((
                p["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                p["status"]["podIP"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            ));
    }
    for n in &names {
        assert_eq!(
            per_node.get(*n).map(Vec::len),
            Some(2),
            "pods per node: {per_node:?}"
        );
    }
    for (pod, ip) in per_node.values().flatten() {
        assert_eq!(http_get(ip)?, *pod, "GET http://{ip}:8080/ from the host");
    }
    // From each node to a pod on the other one.
    for (i, from) in names.iter().enumerate() {
        let to = names[1 - i];
        let (pod, ip) = &per_node[to][0];
        let client = format!("client-{i}");
        let mut p = busybox_pod(
            &client,
            Some(from),
            &format!(
                "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 {ip} 8080 | tail -n 1 | grep -x {pod}"
            ),
            1,
        );
        p["spec"]["restartPolicy"] = json!("Never");
        create(&c, &ns.name, &p)?;
        let done = wait_for(&format!("{client} on {from} to finish"), 60, || {
            let p = pod_json(&c, &ns.name, &client)?;
            let phase = p["status"]["phase"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            Ok(matches!(phase.as_str(), "Succeeded" | "Failed").then_some(phase))
        })?;
        assert_eq!(
            done, "Succeeded",
            "pod on {from} fetching {pod} ({ip}) on {to}"
        );
    }
    drop(ns);
    for n in nodes {
        n.stop()?;
    }
    Ok(())
}

/// The test functions for one kubelet.
macro_rules! node_tests {
    ($module:ident, $kubelet:expr) => {
        mod $module {
            use super::*;

            #[cfg_attr(
                any(krs_skip_cluster, krs_skip_runtime),
                ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
            )]
            #[test]
            fn node_ready_with_capacity_and_allocatable() -> TestResult {
                super::node_ready_with_capacity_and_allocatable($kubelet)
            }

            #[cfg_attr(
                any(krs_skip_cluster, krs_skip_runtime),
                ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
            )]
            #[test]
            fn deployment_of_ten_replicas_runs() -> TestResult {
                super::deployment_of_ten_replicas_runs($kubelet)
            }

            #[cfg_attr(
                any(krs_skip_cluster, krs_skip_runtime),
                ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
            )]
            #[test]
            fn delete_pod_is_graceful() -> TestResult {
                super::delete_pod_is_graceful($kubelet)
            }

            #[cfg_attr(
                any(krs_skip_cluster, krs_skip_runtime),
                ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
            )]
            #[test]
            fn pods_that_do_not_fit_fail() -> TestResult {
                super::pods_that_do_not_fit_fail($kubelet)
            }

            #[cfg_attr(
                any(krs_skip_cluster, krs_skip_runtime),
                ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
            )]
            #[test]
            fn static_pod_has_a_mirror_pod() -> TestResult {
                super::static_pod_has_a_mirror_pod($kubelet)
            }

            #[cfg_attr(
                any(krs_skip_cluster, krs_skip_runtime),
                ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
            )]
            #[test]
            fn apiserver_outage() -> TestResult {
                super::apiserver_outage($kubelet)
            }

            #[cfg_attr(
                any(krs_skip_cluster, krs_skip_runtime),
                ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
            )]
            #[test]
            fn kubelet_sigkill_and_restart() -> TestResult {
                super::kubelet_sigkill_and_restart($kubelet)
            }

            #[cfg_attr(
                any(krs_skip_cluster, krs_skip_runtime),
                ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
            )]
            #[test]
            fn env_from_config_map_and_secret() -> TestResult {
                super::env_from_config_map_and_secret($kubelet)
            }

            #[cfg_attr(
                any(krs_skip_cluster, krs_skip_runtime),
                ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
            )]
            #[test]
            fn volumes_from_config_map_secret_and_token() -> TestResult {
                super::volumes_from_config_map_secret_and_token($kubelet)
            }
        }
    };
}

node_tests!(upstream, TestNode::Upstream);
node_tests!(kubelet_rs, TestNode::KubeletRs);

#[cfg_attr(
    any(krs_skip_cluster, krs_skip_runtime),
    ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
)]
#[test]
fn deployment_spreads_across_upstream_and_kubelet_rs() -> TestResult {
    deployment_spreads_across_two_nodes(TestNode::Upstream, TestNode::KubeletRs)
}

/// The reference for the test above: two upstream nodes.
#[cfg_attr(
    any(krs_skip_cluster, krs_skip_runtime),
    ignore = "KRS_SKIP_CLUSTER_TESTS=1 or KRS_SKIP_RUNTIME_TESTS=1"
)]
#[test]
fn deployment_spreads_across_two_upstream_nodes() -> TestResult {
    deployment_spreads_across_two_nodes(TestNode::Upstream, TestNode::Upstream2)
}
