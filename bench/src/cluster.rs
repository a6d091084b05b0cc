//! The cluster-mode benchmark (`cluster-node` binary): kubelet-rs and the upstream kubelet each
//! join the control plane of `hack/cluster-up.sh` as a node (`hack/lib/cluster-node.sh`: own
//! containerd, same KubeletConfiguration), one after the other, and are measured alike:
//!
//! * process start → node `Ready=True` seen through a watch on the Node (the process start
//!   time comes from `/proc/<pid>/stat` and `/proc/uptime`, 10 ms resolution);
//! * pod creation → `Running` seen through a watch on the pods, for N pods created at R pods/s
//!   (bound with `spec.nodeName`, so the scheduler is not measured), p50 and p99;
//! * API requests the node's user (`system:node:<name>`) made per pod start and per idle
//!   minute, counted in the API server's audit log (`hack/cluster-up.sh` logs every request of
//!   the group `system:nodes`);
//! * the kubelet's RSS and CPU seconds over one idle minute with the first batch running.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use serde::Serialize;

use crate::stats::percentile;

/// The namespace the benchmark's pods live in.
pub const NAMESPACE: &str = "krsbench-cluster";

/// Errors of the cluster benchmark (all carried as text: every one ends the run).
pub type Result<T> = std::result::Result<T, String>;

fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// One pod batch: `pods` created at `rate` pods per second.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Batch {
    pub pods: usize,
    pub rate: f64,
}

/// What one kubelet measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NodeRun {
    /// `kubelet-rs` or `upstream`.
    pub kubelet: String,
    /// Process start → Ready seen.
    pub start_to_ready_ms: Option<f64>,
    /// Per batch (`<pods>@<rate>`): latencies in ms, sorted.
    pub batches: BTreeMap<String, Vec<f64>>,
    /// API requests of the node's user while each batch started, per pod.
    pub api_per_pod_start: BTreeMap<String, f64>,
    /// API requests of the node's user during the idle minute.
    pub api_per_idle_minute: Option<f64>,
    /// RSS at the end of the idle minute, KiB.
    pub idle_rss_kib: Option<u64>,
    /// PSS (`Pss` of `/proc/<pid>/smaps_rollup`) at the end of the idle minute, KiB.
    pub idle_pss_kib: Option<u64>,
    /// CPU seconds (user + system) used during the idle minute.
    pub idle_cpu_seconds: Option<f64>,
    /// RSS and CPU over the idle period, one sample every 5 s (and at its end).
    pub idle_samples: Vec<IdleSample>,
    /// B8 in cluster mode: the first batch deleted through the API.
    pub teardown: Option<crate::cluster_events::ApiTeardown>,
    /// B9 in cluster mode: containers killed from outside, seen in the API.
    pub kills: Vec<crate::cluster_events::ApiKill>,
    /// What went wrong, if anything.
    pub error: Option<String>,
}

/// One sample of the idle kubelet.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct IdleSample {
    /// Seconds since the idle period began.
    pub t_s: f64,
    /// VmRSS, KiB.
    pub rss_kib: u64,
    /// CPU-seconds (user + system) since the idle period began.
    pub cpu_s: f64,
}

/// The admin client of the test cluster.
pub async fn admin_client(kubeconfig: &Path) -> Result<Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).map_err(err("admin kubeconfig"))?;
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(err("admin kubeconfig"))?;
    Client::try_from(cfg).map_err(err("admin client"))
}

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Watches the Node `name` until it is Ready; returns when that was seen.
pub async fn wait_node_ready(
    client: Client,
    name: String,
    timeout: Duration,
) -> Result<SystemTime> {
    let nodes: Api<Node> = Api::all(client);
    let wp = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(290);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let stream = nodes.watch(&wp, "0").await.map_err(err("watch nodes"))?;
        let mut stream = stream.boxed();
        loop {
            let next = tokio::time::timeout_at(deadline, stream.try_next())
                .await
                .map_err(|_| format!("node {name} not Ready within {timeout:?}"))?;
            match next.map_err(err("watch nodes"))? {
                Some(WatchEvent::Added(n) | WatchEvent::Modified(n)) if is_ready(&n) => {
                    return Ok(SystemTime::now());
                }
                Some(_) => {}
                None => break,
            }
        }
    }
}

/// The wall-clock start time of process `pid`.
pub fn process_start(pid: u32) -> Result<SystemTime> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(err("process stat"))?;
    let start_ticks: f64 = stat_field(&stat, 22)?;
    let uptime = std::fs::read_to_string("/proc/uptime").map_err(err("/proc/uptime"))?;
    let now = SystemTime::now();
    let up: f64 = uptime
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or("unreadable /proc/uptime")?;
    let age = up - start_ticks / clock_ticks();
    Ok(now - Duration::from_secs_f64(age.max(0.0)))
}

fn clock_ticks() -> f64 {
    // USER_HZ is 100 on every Linux architecture the kubelet runs on.
    100.0
}

/// Field `n` (1-based, as in proc(5)) of `/proc/<pid>/stat`.
fn stat_field(stat: &str, n: usize) -> Result<f64> {
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).ok_or("bad stat")?;
    rest.split_whitespace()
        .nth(n - 3)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no field {n} in /proc stat"))
}

/// CPU seconds (utime + stime) of `pid` so far.
pub fn cpu_seconds(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(err("process stat"))?;
    Ok((stat_field(&stat, 14)? + stat_field(&stat, 15)?) / clock_ticks())
}

/// VmRSS of `pid` in KiB.
pub fn rss_kib(pid: u32) -> Result<u64> {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(err("process status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| "no VmRSS".to_string())
}

/// Requests of `user` received in `[from, to)` according to the audit log at `path` (JSON
/// lines, `requestReceivedTimestamp` RFC 3339).
pub fn audit_requests(path: &Path, user: &str, from: SystemTime, to: SystemTime) -> Result<u64> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "audit log {}: {e} (hack/cluster-up.sh writes it; restart the control plane if it predates that)",
            path.display()
        )
    })?;
    Ok(count_audit(&text, user, from, to))
}

/// [`audit_requests`] over the log's text.
pub fn count_audit(text: &str, user: &str, from: SystemTime, to: SystemTime) -> u64 {
    let (from, to) = (unix_nanos(from), unix_nanos(to));
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["user"]["username"].as_str() == Some(user))
        .filter_map(|v| {
            v["requestReceivedTimestamp"]
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        })
        .filter(|t| {
            let n = t.as_nanosecond();
            n >= from && n < to
        })
        .count() as u64
}

fn unix_nanos(t: SystemTime) -> i128 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or_default()
}

/// A busybox `sleep 3600` pod bound to `node`, without a service account token volume.
pub fn bench_pod(name: &str, node: &str) -> Pod {
    let value = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            // No service account token volume on either kubelet (both build projected
            // volumes): the figures stay comparable with earlier runs, and the benchmark
            // measures the pod lifecycle rather than TokenRequest round trips.
            "automountServiceAccountToken": false,
            "containers": [{
                "name": "c",
                "image": "docker.io/library/busybox:1.36",
                "imagePullPolicy": "Never",
                "command": ["sleep", "3600"],
            }],
        },
    });
    serde_json::from_value(value).unwrap_or_default()
}

fn is_running(p: &Pod) -> bool {
    p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

/// Creates the namespace if it is missing.
pub async fn ensure_namespace(client: &Client) -> Result<()> {
    let ns: Api<Namespace> = Api::all(client.clone());
    let obj: Namespace = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}
    }))
    .map_err(err("namespace"))?;
    match ns.create(&PostParams::default(), &obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(format!("create namespace {NAMESPACE}: {e}")),
    }
}

/// Creates `batch.pods` pods named `<prefix>-<i>` at `batch.rate` pods/s and returns each
/// pod's creation → Running latency (seen through a watch started before the first create).
pub async fn run_batch(
    client: &Client,
    node: &str,
    prefix: &str,
    batch: Batch,
    timeout: Duration,
) -> Result<Vec<Duration>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, SystemTime)>();
    let watch_api = pods.clone();
    let label_prefix = format!("{prefix}-");
    let watcher = tokio::spawn(async move {
        let wp = WatchParams::default().timeout(290);
        loop {
            let Ok(stream) = watch_api.watch(&wp, "0").await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let mut stream = stream.boxed();
            while let Some(Ok(ev)) = stream.next().await {
                if let WatchEvent::Added(p) | WatchEvent::Modified(p) = ev
                    && is_running(&p)
                    && let Some(name) = p.metadata.name
                    && name.starts_with(&label_prefix)
                {
                    let _ = tx.send((name, SystemTime::now()));
                }
            }
        }
    });
    // Give the watch a moment to be established before the first create.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut created = BTreeMap::new();
    let period = Duration::from_secs_f64(1.0 / batch.rate.max(0.001));
    let mut tick = tokio::time::interval(period);
    for i in 0..batch.pods {
        tick.tick().await;
        let name = format!("{prefix}-{i}");
        let at = SystemTime::now();
        pods.create(&PostParams::default(), &bench_pod(&name, node))
            .await
            .map_err(err("create pod"))?;
        created.insert(name, at);
    }
    let mut running: BTreeMap<String, SystemTime> = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + timeout;
    while running.len() < created.len() {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some((name, at))) => {
                running.entry(name).or_insert(at);
            }
            Ok(None) => break,
            Err(_) => break,
        }
    }
    watcher.abort();
    if running.len() < created.len() {
        return Err(format!(
            "only {} of {} pods Running within {timeout:?}",
            running.len(),
            created.len()
        ));
    }
    Ok(created
        .iter()
        .filter_map(|(n, c)| running.get(n).and_then(|r| r.duration_since(*c).ok()))
        .collect())
}

/// Deletes every pod of the namespace and waits until they are gone.
pub async fn delete_pods(client: &Client, timeout: Duration) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let list = pods
        .list(&Default::default())
        .await
        .map_err(err("list pods"))?;
    for p in list.items {
        if let Some(name) = p.metadata.name {
            let _ = pods.delete(&name, &DeleteParams::default()).await;
        }
    }
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let left = pods
            .list(&Default::default())
            .await
            .map_err(err("list pods"))?
            .items
            .len();
        if left == 0 {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            // Force what the kubelet did not finish, so the next run starts clean.
            for p in pods
                .list(&Default::default())
                .await
                .map_err(err("list"))?
                .items
            {
                if let Some(name) = p.metadata.name {
                    let _ = pods
                        .delete(&name, &DeleteParams::default().grace_period(0))
                        .await;
                }
            }
            return Err(format!(
                "{left} pods still there {timeout:?} after deletion"
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `$CARGO_TARGET_DIR/release/kubelet-rs` (else the repository's `target/`): the
/// kubelet-rs a cluster benchmark runs unless told otherwise.
pub fn default_kubelet_rs() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| crate::env::repo_root().join("target"), PathBuf::from);
    target.join("release").join("kubelet-rs")
}

/// What a cluster benchmark starts from: `kubelet` exists, the control plane of
/// `hack/cluster-up.sh` is up, its admin client, and the benchmark's namespace.
pub async fn prepare(kubelet: &Path) -> Result<(kubelet_e2e::cluster::Cluster, Client)> {
    if !kubelet.exists() {
        return Err(format!(
            "{}: no kubelet-rs binary (cargo build --release -p kubelet-rs, or --kubelet)",
            kubelet.display()
        ));
    }
    eprintln!("[bench] hack/cluster-up.sh ...");
    let c = tokio::task::spawn_blocking(kubelet_e2e::cluster::ensure)
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let client = admin_client(&c.kubeconfig).await?;
    ensure_namespace(&client).await?;
    Ok((c, client))
}

/// The benchmark's two nodes, one kubelet each: (kubelet, node name, node IP, port).
pub const NODES: [(&str, &str, &str, u16); 2] = [
    ("kubelet-rs", "krsbench-rs", "198.18.255.20", 10270),
    ("upstream", "krsbench-up", "198.18.255.21", 10271),
];

/// A node of the benchmark started afresh (leftover pods and its Node object deleted first),
/// and a watch that returns when it is Ready.
pub async fn start_fresh_node(
    c: &kubelet_e2e::cluster::Cluster,
    client: &Client,
    spec: kubelet_e2e::cluster::NodeSpec,
) -> Result<(
    kubelet_e2e::cluster::ClusterNode,
    tokio::task::JoinHandle<Result<SystemTime>>,
)> {
    let name = spec.name.clone();
    delete_pods(client, Duration::from_secs(60)).await.ok();
    delete_node(client, &name).await;
    let ready = tokio::spawn(wait_node_ready(
        client.clone(),
        name,
        Duration::from_secs(300),
    ));
    let c2 = c.clone();
    let node = tokio::task::spawn_blocking(move || c2.start_node(spec))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("node start: {e}"))?;
    Ok((node, ready))
}

/// Stops a node of [`start_fresh_node`] and deletes its Node object; `result` (the
/// measurement's) comes first, then a failure to stop.
pub async fn stop_node(
    client: &Client,
    node: kubelet_e2e::cluster::ClusterNode,
    result: Result<()>,
) -> Result<()> {
    let name = node.spec.name.clone();
    let down = tokio::task::spawn_blocking(move || node.stop()).await;
    delete_node(client, &name).await;
    result?;
    match down {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("node stop: {e}")),
        Err(e) => Err(e.to_string()),
    }
}

/// Deletes the Node object `name` (so the next start registers afresh).
pub async fn delete_node(client: &Client, name: &str) {
    let nodes: Api<Node> = Api::all(client.clone());
    let _ = nodes.delete(name, &DeleteParams::default()).await;
}

/// Milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// p50 and p99 (nearest rank) of `samples`, in ms.
pub fn p50_p99(samples: &[f64]) -> Option<(f64, f64)> {
    let ds: Vec<Duration> = samples
        .iter()
        .map(|m| Duration::from_secs_f64(m / 1000.0))
        .collect();
    Some((ms(percentile(&ds, 50.0)?), ms(percentile(&ds, 99.0)?)))
}

/// The batch key used in [`NodeRun::batches`].
pub fn batch_key(b: Batch) -> String {
    format!("{}@{}/s", b.pods, b.rate)
}

/// Median of the runs' values picked by `f`.
fn median_of(runs: &[&NodeRun], f: impl Fn(&NodeRun) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = runs.iter().filter_map(|r| f(r)).collect();
    crate::stats::median(&v)
}

/// The markdown table: one row per metric, the kubelet-rs and upstream medians over the
/// repeats, the ratio and the goal.
pub fn render(runs: &[NodeRun], batches: &[Batch]) -> String {
    let of = |k: &str| -> Vec<&NodeRun> {
        runs.iter()
            .filter(|r| r.kubelet == k && r.error.is_none())
            .collect()
    };
    let (rs, up) = (of("kubelet-rs"), of("upstream"));
    let mut rows: Vec<(String, Option<f64>, Option<f64>, &str)> = vec![(
        "process start → node Ready (ms)".into(),
        median_of(&rs, |r| r.start_to_ready_ms),
        median_of(&up, |r| r.start_to_ready_ms),
        "≤ 0.33",
    )];
    for b in batches {
        let key = batch_key(*b);
        for (label, idx, goal) in [("p50", 0, "—"), ("p99", 1, "≤ 1.0, ≤ 5 s")] {
            let pick = |r: &NodeRun| {
                r.batches
                    .get(&key)
                    .and_then(|s| p50_p99(s))
                    .map(|(a, b)| if idx == 0 { a } else { b })
            };
            rows.push((
                format!("pod created → Running, {key}, {label} (ms)"),
                median_of(&rs, pick),
                median_of(&up, pick),
                goal,
            ));
        }
        rows.push((
            format!("API requests per pod start, {key}"),
            median_of(&rs, |r| r.api_per_pod_start.get(&key).copied()),
            median_of(&up, |r| r.api_per_pod_start.get(&key).copied()),
            "≤ 1.0",
        ));
    }
    rows.push((
        "API requests per idle minute".into(),
        median_of(&rs, |r| r.api_per_idle_minute),
        median_of(&up, |r| r.api_per_idle_minute),
        "≤ 1.0",
    ));
    rows.push((
        "RSS, idle, first batch running (MiB)".into(),
        median_of(&rs, |r| r.idle_rss_kib.map(|k| k as f64 / 1024.0)),
        median_of(&up, |r| r.idle_rss_kib.map(|k| k as f64 / 1024.0)),
        "≤ 0.2",
    ));
    rows.push((
        "CPU seconds per idle minute".into(),
        median_of(&rs, |r| r.idle_cpu_seconds),
        median_of(&up, |r| r.idle_cpu_seconds),
        "≤ 0.15",
    ));
    let f = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.2}"));
    let mut out = String::from(
        "| metric | kubelet-rs | upstream | ratio | goal |\n|---|---:|---:|---:|---|\n",
    );
    for (name, a, b, goal) in rows {
        let ratio = match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "—".into(),
        };
        out.push_str(&format!(
            "| {name} | {} | {} | {ratio} | {goal} |\n",
            f(a),
            f(b)
        ));
    }
    for r in runs.iter().filter(|r| r.error.is_some()) {
        out.push_str(&format!(
            "\nfailed run ({}): {}\n",
            r.kubelet,
            r.error.as_deref().unwrap_or_default()
        ));
    }
    out
}

/// The audit log of the test cluster.
pub fn audit_log(cluster_dir: &Path) -> PathBuf {
    cluster_dir.join("logs").join("audit.log")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn audit_lines_are_counted_per_user_and_window() {
        let text = r#"{"user":{"username":"system:node:a"},"requestReceivedTimestamp":"2026-01-01T00:00:01.000000Z"}
{"user":{"username":"system:node:b"},"requestReceivedTimestamp":"2026-01-01T00:00:01.500000Z"}
{"user":{"username":"system:node:a"},"requestReceivedTimestamp":"2026-01-01T00:00:03.000000Z"}
not json
"#;
        let t = |s: u64| UNIX_EPOCH + Duration::from_secs(1_767_225_600 + s);
        assert_eq!(count_audit(text, "system:node:a", t(0), t(2)), 1);
        assert_eq!(count_audit(text, "system:node:a", t(0), t(4)), 2);
        assert_eq!(count_audit(text, "system:node:b", t(0), t(4)), 1);
    }

    #[test]
    fn stat_fields_after_a_command_with_spaces() {
        let stat = "42 (a b) S 1 2 3 4 5 6 7 8 9 10 150 50 0 0 20 0 1 0 12345 0 0";
        assert_eq!(stat_field(stat, 14).unwrap(), 150.0);
        assert_eq!(stat_field(stat, 15).unwrap(), 50.0);
        assert_eq!(stat_field(stat, 22).unwrap(), 12345.0);
    }

    #[test]
    fn table_has_ratios() {
        let mut a = NodeRun {
            kubelet: "kubelet-rs".into(),
            start_to_ready_ms: Some(100.0),
            ..NodeRun::default()
        };
        a.batches.insert("2@1/s".into(), vec![10.0, 20.0]);
        let mut b = a.clone();
        b.kubelet = "upstream".into();
        b.start_to_ready_ms = Some(400.0);
        let t = render(&[a, b], &[Batch { pods: 2, rate: 1.0 }]);
        assert!(
            t.contains("| process start → node Ready (ms) | 100.00 | 400.00 | 0.25 | ≤ 0.33 |"),
            "{t}"
        );
    }
}
