//! The raw CRI floor (perf-anchors §5.2): for N pods, RunPodSandbox + CreateContainer +
//! StartContainer of one busybox `sleep 3600` container each, straight over CRI with a bounded
//! number of parallel workers, configured as a kubelet would (labels, log directory, cgroup
//! parent `/kubepods/besteffort/pod<uid>`, best-effort resources). Then StopPodSandbox +
//! RemovePodSandbox of all of them until ListPodSandbox shows none.
//!
//! Whatever happens, every sandbox created is torn down before [`run_floor`] returns.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kubelet_cri::v1::{
    ContainerConfig, ContainerMetadata, ImageSpec, LinuxContainerConfig, LinuxContainerResources,
    LinuxPodSandboxConfig, LinuxSandboxSecurityContext, NamespaceMode, NamespaceOption,
    PodSandboxConfig, PodSandboxMetadata,
};
use kubelet_cri::{RemoteRuntimeService, RuntimeService};

use crate::cri_ops::{
    CONTAINER_NAME_LABEL, POD_NAME_LABEL, POD_NAMESPACE_LABEL, POD_UID_LABEL, cleanup_leftovers,
    remove_pod_cgroups, wait_none_listed,
};
use crate::error::{BenchError, BenchResult};
use crate::manifest::{CONTAINER_NAME, NAMESPACE, pod_name};
use crate::report::FloorPhases;
use crate::stats::{LatencySummary, percentile};

/// One floor batch.
#[derive(Clone, Debug)]
pub struct FloorConfig {
    /// Pods to start.
    pub pods: usize,
    /// Parallel workers (each runs one pod's three calls at a time).
    pub workers: usize,
    /// Tag in the pod names (unique per batch).
    pub tag: String,
    /// The busybox image.
    pub image: String,
    /// Directory under which the pod log directories are created.
    pub log_root: PathBuf,
}

/// What one floor batch measured.
#[derive(Clone, Debug)]
pub struct FloorOutcome {
    /// Per pod: start of RunPodSandbox → StartContainer returned; makespan from the batch start.
    pub startup: LatencySummary,
    /// Medians of the three calls.
    pub phases: FloorPhases,
    /// Teardown start → every StopPodSandbox returned.
    pub teardown_stopped: Duration,
    /// Teardown start → ListPodSandbox shows none of the batch.
    pub teardown_gone: Duration,
}

/// Timings of one pod.
#[derive(Clone, Copy, Debug)]
struct PodTiming {
    total: Duration,
    run_sandbox: Duration,
    create: Duration,
    start: Duration,
    done: Instant,
}

/// Parallel workers for N pods as in perf-anchors §5.2: all at once up to 30, else 10.
pub fn default_workers(pods: usize) -> usize {
    if pods <= 30 { pods.max(1) } else { 10 }
}

/// A UUID-shaped pod UID unique to this process, batch and pod.
pub fn pod_uid(tag: &str, index: usize) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in tag.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let pid = std::process::id();
    format!(
        "{pid:08x}-{:04x}-4000-8000-{:012x}",
        h & 0xffff,
        index as u64
    )
}

fn pod_labels(name: &str, uid: &str) -> HashMap<String, String> {
    [
        (POD_NAME_LABEL, name),
        (POD_NAMESPACE_LABEL, NAMESPACE),
        (POD_UID_LABEL, uid),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

fn namespaces() -> NamespaceOption {
    NamespaceOption {
        network: NamespaceMode::Pod as i32,
        pid: NamespaceMode::Container as i32,
        ipc: NamespaceMode::Pod as i32,
        ..Default::default()
    }
}

/// The sandbox config a kubelet would send for a best-effort pod.
pub fn sandbox_config(name: &str, uid: &str, log_root: &Path) -> PodSandboxConfig {
    PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: name.to_owned(),
            uid: uid.to_owned(),
            namespace: NAMESPACE.to_owned(),
            attempt: 0,
        }),
        hostname: name.to_owned(),
        log_directory: log_root
            .join(format!("{NAMESPACE}_{name}_{uid}"))
            .display()
            .to_string(),
        labels: pod_labels(name, uid),
        linux: Some(LinuxPodSandboxConfig {
            cgroup_parent: format!("/kubepods/besteffort/pod{uid}"),
            security_context: Some(LinuxSandboxSecurityContext {
                namespace_options: Some(namespaces()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The container config a kubelet would send for busybox `sleep 3600` in a best-effort pod.
pub fn container_config(name: &str, uid: &str, image: &str) -> ContainerConfig {
    let mut labels = pod_labels(name, uid);
    labels.insert(CONTAINER_NAME_LABEL.to_owned(), CONTAINER_NAME.to_owned());
    ContainerConfig {
        metadata: Some(ContainerMetadata {
            name: CONTAINER_NAME.to_owned(),
            attempt: 0,
        }),
        image: Some(ImageSpec {
            image: image.to_owned(),
            ..Default::default()
        }),
        command: vec!["sleep".to_owned(), "3600".to_owned()],
        log_path: format!("{CONTAINER_NAME}/0.log"),
        labels,
        linux: Some(LinuxContainerConfig {
            resources: Some(LinuxContainerResources {
                cpu_shares: 2,
                oom_score_adj: 1000,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Starts one pod; the sandbox ID goes to `created` as soon as it exists.
async fn start_pod(
    rt: &RemoteRuntimeService,
    cfg: &FloorConfig,
    index: usize,
    created: &Mutex<Vec<(String, String)>>,
) -> BenchResult<PodTiming> {
    let name = pod_name(&cfg.tag, index);
    let uid = pod_uid(&cfg.tag, index);
    let sb_cfg = sandbox_config(&name, &uid, &cfg.log_root);
    let log_dir = PathBuf::from(&sb_cfg.log_directory);
    std::fs::create_dir_all(&log_dir).map_err(BenchError::io("create", &log_dir))?;
    let c_cfg = container_config(&name, &uid, &cfg.image);
    let t0 = Instant::now();
    let sb = rt
        .run_pod_sandbox(&sb_cfg, "")
        .await
        .map_err(BenchError::cri(format!("RunPodSandbox {name}")))?;
    let t1 = Instant::now();
    if let Ok(mut c) = created.lock() {
        c.push((sb.clone(), uid));
    }
    let c = rt
        .create_container(&sb, &c_cfg, &sb_cfg)
        .await
        .map_err(BenchError::cri(format!("CreateContainer {name}")))?;
    let t2 = Instant::now();
    rt.start_container(&c)
        .await
        .map_err(BenchError::cri(format!("StartContainer {name}")))?;
    let t3 = Instant::now();
    Ok(PodTiming {
        total: t3 - t0,
        run_sandbox: t1 - t0,
        create: t2 - t1,
        start: t3 - t2,
        done: t3,
    })
}

/// Runs `f(i)` for i in 0..n on `workers` tasks; results in index order.
async fn parallel<T, F, Fut>(n: usize, workers: usize, f: F) -> Vec<BenchResult<T>>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = BenchResult<T>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let f = Arc::new(f);
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..workers.clamp(1, n.max(1)) {
        let (next, f) = (next.clone(), f.clone());
        set.spawn(async move {
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    return out;
                }
                out.push((i, f(i).await));
            }
        });
    }
    let mut results: Vec<(usize, BenchResult<T>)> = Vec::with_capacity(n);
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok(part) => results.extend(part),
            Err(e) => results.push((usize::MAX, Err(BenchError::Kubelet(format!("worker: {e}"))))),
        }
    }
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// Runs one floor batch; every sandbox it created is gone when it returns, error or not.
pub async fn run_floor(
    rt: Arc<RemoteRuntimeService>,
    cfg: FloorConfig,
) -> BenchResult<FloorOutcome> {
    let created = Arc::new(Mutex::new(Vec::new()));
    let started = start_all(rt.clone(), &cfg, created.clone()).await;
    let ids: Vec<(String, String)> = created.lock().map(|c| c.clone()).unwrap_or_default();
    let teardown = teardown(rt.clone(), &ids, cfg.workers).await;
    if started.is_err() || teardown.is_err() {
        // Belt and braces: whatever is left (e.g. a sandbox whose Stop failed).
        let _ = cleanup_leftovers(&rt).await;
    }
    remove_pod_cgroups(ids.iter().map(|(_, uid)| uid.as_str()));
    let (startup, phases) = started?;
    let (teardown_stopped, teardown_gone) = teardown?;
    Ok(FloorOutcome {
        startup,
        phases,
        teardown_stopped,
        teardown_gone,
    })
}

async fn start_all(
    rt: Arc<RemoteRuntimeService>,
    cfg: &FloorConfig,
    created: Arc<Mutex<Vec<(String, String)>>>,
) -> BenchResult<(LatencySummary, FloorPhases)> {
    let shared = Arc::new(cfg.clone());
    let t0 = Instant::now();
    let results = parallel(cfg.pods, cfg.workers, move |i| {
        let (rt, cfg, created) = (rt.clone(), shared.clone(), created.clone());
        async move { start_pod(&rt, &cfg, i, &created).await }
    })
    .await;
    let timings: Vec<PodTiming> = results.into_iter().collect::<BenchResult<_>>()?;
    let last = timings.iter().map(|t| t.done).max().unwrap_or(t0);
    let col = |f: fn(&PodTiming) -> Duration| timings.iter().map(f).collect::<Vec<_>>();
    let p50 = |v: Vec<Duration>| percentile(&v, 50.0).unwrap_or_default().as_secs_f64();
    let summary = LatencySummary::new(&col(|t| t.total), last - t0)
        .ok_or_else(|| BenchError::Kubelet("the floor batch has no pods".into()))?;
    let phases = FloorPhases {
        run_pod_sandbox_p50_s: p50(col(|t| t.run_sandbox)),
        create_container_p50_s: p50(col(|t| t.create)),
        start_container_p50_s: p50(col(|t| t.start)),
    };
    Ok((summary, phases))
}

/// Stop + remove of every created sandbox with the same parallelism; returns (all stopped, gone).
async fn teardown(
    rt: Arc<RemoteRuntimeService>,
    ids: &[(String, String)],
    workers: usize,
) -> BenchResult<(Duration, Duration)> {
    let t0 = Instant::now();
    let ids: Arc<Vec<String>> = Arc::new(ids.iter().map(|(id, _)| id.clone()).collect());
    let rt2 = rt.clone();
    let ids2 = ids.clone();
    let results = parallel(ids.len(), workers, move |i| {
        let (rt, ids) = (rt2.clone(), ids2.clone());
        async move {
            let id = ids.get(i).cloned().unwrap_or_default();
            rt.stop_pod_sandbox(&id)
                .await
                .map_err(BenchError::cri(format!("StopPodSandbox {id}")))?;
            let stopped = Instant::now();
            rt.remove_pod_sandbox(&id)
                .await
                .map_err(BenchError::cri(format!("RemovePodSandbox {id}")))?;
            Ok(stopped)
        }
    })
    .await;
    let stopped: Vec<Instant> = results.into_iter().collect::<BenchResult<_>>()?;
    let all_stopped = stopped.iter().max().copied().unwrap_or(t0);
    let gone = wait_none_listed(&rt, Duration::from_millis(20), Duration::from_secs(60))
        .await?
        .ok_or_else(|| {
            BenchError::Timeout("floor sandboxes still listed 60 s after removal".into())
        })?;
    Ok((all_stopped - t0, gone - t0))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn workers_match_perf_anchors() {
        assert_eq!(default_workers(30), 30);
        assert_eq!(default_workers(10), 10);
        assert_eq!(default_workers(100), 10);
        assert_eq!(default_workers(0), 1);
    }

    #[test]
    fn configs_look_like_a_kubelets() {
        let uid = pod_uid("f30r0", 3);
        assert_eq!(uid.len(), 36);
        assert_ne!(uid, pod_uid("f30r0", 4));
        assert_ne!(uid, pod_uid("f30r1", 3));
        let sb = sandbox_config("krsbench-f30r0-003", &uid, Path::new("/logs"));
        let linux = sb.linux.as_ref().unwrap();
        assert_eq!(
            linux.cgroup_parent,
            format!("/kubepods/besteffort/pod{uid}")
        );
        assert_eq!(
            sb.log_directory,
            format!("/logs/krsbench_krsbench-f30r0-003_{uid}")
        );
        assert_eq!(sb.labels[POD_NAMESPACE_LABEL], NAMESPACE);
        let c = container_config("krsbench-f30r0-003", &uid, "busybox");
        assert_eq!(c.command, ["sleep", "3600"]);
        assert_eq!(c.labels[POD_NAME_LABEL], "krsbench-f30r0-003");
        assert_eq!(c.labels[CONTAINER_NAME_LABEL], CONTAINER_NAME);
    }

    #[tokio::test]
    async fn parallel_keeps_order_and_bounds_workers() {
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (r, p) = (running.clone(), peak.clone());
        let out = parallel(20, 3, move |i| {
            let (r, p) = (r.clone(), p.clone());
            async move {
                let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                tokio::task::yield_now().await;
                r.fetch_sub(1, Ordering::SeqCst);
                Ok(i * 2)
            }
        })
        .await;
        let got: Vec<usize> = out.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(got, (0..20).map(|i| i * 2).collect::<Vec<_>>());
        assert!(peak.load(Ordering::SeqCst) <= 3);
    }
}
