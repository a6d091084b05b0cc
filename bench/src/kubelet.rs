//! A kubelet variant (kubelet-rs or upstream) with static pods, perf-anchors §6 B4: start the
//! kubelet standalone, wait for `/healthz`, write N manifests at once (dot-file then rename),
//! time rename → container RUNNING in CRI `ListContainers`, remove the manifests, time the
//! teardown, stop the kubelet with SIGTERM.
//!
//! Whatever happens, the kubelet is stopped and every sandbox of the benchmark removed before
//! [`run_kubelet_variant`] returns.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubelet_cri::RemoteRuntimeService;

use crate::cri_ops::{
    bench_sandboxes, cleanup_leftovers, is_ready, remove_pod_cgroups, running_pod_names,
    sandbox_uid,
};
use crate::cri_proxy::CriProxy;
use crate::error::{BenchError, BenchResult};
use crate::event_detect::{EventDetectConfig, EventDetectOutcome};
use crate::manifest::{
    KubeletSettings, PodTemplate, kubelet_config, pod_name, static_pod_full_name,
    static_pod_manifest,
};
use crate::probe_cost::{ProbeCostConfig, ProbeCostOutcome};
use crate::process::KubeletProcess;
use crate::scrape::{ScrapeConfig, ScrapeOutcome};
use crate::stats::LatencySummary;
use crate::tracker::{RunningTracker, startup_timeout_message};

/// One kubelet batch.
#[derive(Clone, Debug)]
pub struct KubeletRunConfig {
    /// The kubelet binary.
    pub binary: PathBuf,
    /// `containerRuntimeEndpoint`.
    pub endpoint: String,
    /// The busybox image.
    pub image: String,
    /// Pods in the batch.
    pub pods: usize,
    /// Tag in the manifest names (unique per batch).
    pub tag: String,
    /// Directory in which the run directory is created.
    pub work_dir: PathBuf,
    /// How long to wait for `/healthz`.
    pub healthz_timeout: Duration,
    /// Pause between healthy and writing the manifests.
    pub settle: Duration,
    /// How long to wait for all containers RUNNING, and for all stopped after removal.
    pub timeout: Duration,
    /// ListContainers / ListPodSandbox poll interval.
    pub poll: Duration,
    /// How long to wait for the sandboxes to disappear after they stopped.
    pub gone_timeout: Duration,
    /// Keep the run directory (config, kubelet log) even on success.
    pub keep: bool,
    /// Stats scrapes once the pods run (`port` is set to the read-only port chosen here).
    pub scrape: Option<ScrapeConfig>,
    /// Flags added after the common ones (both kubelets get the same).
    pub extra_args: Vec<String>,
    /// What the pods run.
    pub template: PodTemplate,
    /// Prober cost window once the pods run (`port` and `pods` are set here).
    pub probe_cost: Option<ProbeCostConfig>,
    /// B9 kills once the pods run (`port` and `pods` are set here).
    pub event_detect: Option<EventDetectConfig>,
    /// Steady-state window once the pods run (B6, B10). When set, the kubelet talks to the
    /// runtime through the CRI call-counting proxy ([`crate::cri_proxy`]) for the whole run.
    pub steady: Option<crate::steady::SteadyConfig>,
    /// Idle window with no pod at all, after `/healthz` and `settle`, before any manifest is
    /// written (B1/B2 standalone, 0 pods); through the counting proxy like `steady`.
    pub idle_window: Option<crate::steady::SteadyConfig>,
    /// The manifests are in place before the kubelet is started, and each pod's clock starts
    /// at the kubelet's `exec` (B3: process start → first static pod Running), not at a
    /// rename; `/healthz` is awaited after the pods run.
    pub preplaced: bool,
}

impl KubeletRunConfig {
    /// A batch of `pods` pods (`template`) for the measurement commands (`stats-scrape`,
    /// `prober-cost`): run directories under `/var/lib/kubelet-rs-test/bench`, 60 s for
    /// `/healthz`, 2 s settle, 300 s for the pods to run and stop, 25 ms polls, 15 s for the
    /// sandboxes to go, the run directory kept only on error, no measurement set.
    pub fn measurement(
        binary: PathBuf,
        runtime: &crate::env::RuntimeInfo,
        pods: usize,
        tag: String,
        template: PodTemplate,
        extra_args: Vec<String>,
    ) -> Self {
        Self {
            binary,
            endpoint: runtime.endpoint.clone(),
            image: runtime.busybox_image.clone(),
            pods,
            tag,
            work_dir: PathBuf::from("/var/lib/kubelet-rs-test/bench"),
            healthz_timeout: Duration::from_secs(60),
            settle: Duration::from_secs(2),
            timeout: Duration::from_secs(300),
            poll: Duration::from_millis(25),
            gone_timeout: Duration::from_secs(15),
            keep: false,
            scrape: None,
            extra_args,
            template,
            probe_cost: None,
            event_detect: None,
            steady: None,
            idle_window: None,
            preplaced: false,
        }
    }
}

/// What one kubelet batch measured.
#[derive(Clone, Debug)]
pub struct KubeletOutcome {
    /// Per pod: manifest rename → container seen RUNNING; makespan from the first rename.
    pub startup: LatencySummary,
    /// Manifests removed → no sandbox ready and no container running.
    pub teardown_stopped: Duration,
    /// Manifests removed → no sandbox listed (`None`: still listed after the gone timeout).
    pub teardown_gone: Option<Duration>,
    /// exec → `/healthz` ok.
    pub healthy_after: Duration,
    /// The stats scrapes, when asked for.
    pub scrape: Option<ScrapeOutcome>,
    /// The prober cost window, when asked for.
    pub probe_cost: Option<ProbeCostOutcome>,
    /// The B9 kills, when asked for.
    pub event_detect: Option<EventDetectOutcome>,
    /// Where the start-up time went, from the kubelet's `-v=2` log ([`crate::steps`]); filled
    /// in once the kubelet has stopped.
    pub steps: Vec<crate::steps::StepMedian>,
    /// Per pod: rename → container seen RUNNING, in seconds, in pod order.
    pub latencies_s: Vec<f64>,
    /// CPU charged to the kubelet from the first rename to all RUNNING (its cgroup, see
    /// `crate::charge`).
    pub startup_cpu: crate::report::StartupCpu,
    /// The steady-state window, when asked for.
    pub steady: Option<crate::steady::SteadyOutcome>,
    /// The idle window with no pod, when asked for.
    pub idle: Option<crate::steady::SteadyOutcome>,
}

/// Files of one run: `config.json`, `kubelet.log`, `manifests/`, `logs/`, `root/`, `plugins/`.
struct RunDir {
    dir: tempfile::TempDir,
}

impl RunDir {
    fn create(parent: &Path) -> BenchResult<Self> {
        std::fs::create_dir_all(parent).map_err(BenchError::io("create", parent))?;
        let dir = tempfile::Builder::new()
            .prefix("krsbench-")
            .tempdir_in(parent)
            .map_err(BenchError::io("create a run directory in", parent))?;
        for sub in ["manifests", "logs", "root", "plugins"] {
            let p = dir.path().join(sub);
            std::fs::create_dir(&p).map_err(BenchError::io("create", &p))?;
        }
        Ok(Self { dir })
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }
}

/// Runs one kubelet batch; the kubelet is stopped and the batch's sandboxes removed when it
/// returns, error or not. On error the run directory (with the kubelet log) is kept.
pub async fn run_kubelet_variant(
    rt: Arc<RemoteRuntimeService>,
    cfg: &KubeletRunConfig,
) -> BenchResult<KubeletOutcome> {
    let dir = RunDir::create(&cfg.work_dir)?;
    let healthz_port = crate::env::free_port()?;
    let port = crate::env::free_port()?;
    let read_only_port =
        if cfg.scrape.is_some() || cfg.probe_cost.is_some() || cfg.event_detect.is_some() {
            crate::env::free_port()?
        } else {
            0
        };
    let config_path = dir.path("config.json");
    // B6/B10: the kubelet's CRI calls go through the counting proxy (stopped when dropped,
    // after the kubelet).
    let proxy = match cfg.steady.or(cfg.idle_window) {
        Some(_) => Some(CriProxy::start(
            &dir.path("cri-proxy.sock"),
            Path::new(crate::charge::socket_path(&cfg.endpoint)),
        )?),
        None => None,
    };
    let endpoint = proxy
        .as_ref()
        .map_or_else(|| cfg.endpoint.clone(), CriProxy::endpoint);
    let config = kubelet_config(&KubeletSettings {
        runtime_endpoint: &endpoint,
        static_pod_path: &dir.path("manifests"),
        pod_logs_dir: &dir.path("logs"),
        volume_plugin_dir: &dir.path("plugins"),
        healthz_port,
        port,
        read_only_port,
    });
    std::fs::write(&config_path, config).map_err(BenchError::io("write", &config_path))?;
    let names: Vec<String> = (0..cfg.pods).map(|i| pod_name(&cfg.tag, i)).collect();
    // B3: the manifests are there before the kubelet starts; every clock starts at exec.
    if cfg.preplaced {
        write_manifests(&dir.path("manifests"), &names, &cfg.image, cfg.template)?;
    }
    if let Err(e) = crate::env::make_shared_mount(&dir.path("root")) {
        eprintln!("[bench] WARNING: {e}; the upstream kubelet will mount it itself");
    }
    let spawned = Instant::now();
    let mut proc = match KubeletProcess::spawn(
        &cfg.binary,
        &config_path,
        &dir.path("root"),
        &dir.path("kubelet.log"),
        &cfg.extra_args,
    ) {
        Ok(proc) => proc,
        Err(e) => {
            crate::env::unmount_under(dir.dir.path());
            return Err(e);
        }
    };
    let mut uids = BTreeSet::new();
    let ports = (healthz_port, read_only_port);
    let run = (names.as_slice(), cfg.preplaced.then_some(spawned));
    let result = measure(
        &rt,
        cfg,
        &dir,
        &mut proc,
        ports,
        run,
        &mut uids,
        proxy.as_ref(),
    )
    .await;
    let stopped = proc.stop(Duration::from_secs(15)).await;
    drop(proxy);
    for (m, e) in crate::env::unmount_under(dir.dir.path()) {
        eprintln!("[bench] WARNING: cannot unmount {}: {e}", m.display());
    }
    let cleaned = cleanup_leftovers(&rt).await;
    remove_pod_cgroups(uids.iter().map(String::as_str));
    let log = dir.path("kubelet.log");
    let keep = |dir: RunDir| {
        let kept = dir.dir.keep();
        eprintln!("[bench] kept {}", kept.display());
    };
    match (result, stopped, cleaned) {
        (Ok(mut o), Ok(()), Ok(_)) => {
            // The log is complete once the kubelet has stopped; unreadable: no steps.
            o.steps = std::fs::read_to_string(&log)
                .map(|text| crate::steps::from_log(&text, crate::manifest::NAMESPACE))
                .unwrap_or_default();
            if cfg.keep {
                keep(dir);
            }
            Ok(o)
        }
        (Err(e), _, _) | (Ok(_), Err(e), _) | (Ok(_), Ok(()), Err(e)) => {
            keep(dir);
            Err(BenchError::Kubelet(format!(
                "{e} (kubelet log: {})",
                log.display()
            )))
        }
    }
}

/// `(names, preplaced)`: the batch's pod names, and the kubelet's exec time when the
/// manifests were written before it (B3).
#[allow(clippy::too_many_arguments)]
async fn measure(
    rt: &RemoteRuntimeService,
    cfg: &KubeletRunConfig,
    dir: &RunDir,
    proc: &mut KubeletProcess,
    (healthz_port, read_only_port): (u16, u16),
    (names, preplaced): (&[String], Option<Instant>),
    uids: &mut BTreeSet<String>,
    proxy: Option<&CriProxy>,
) -> BenchResult<KubeletOutcome> {
    let manifests = dir.path("manifests");
    let mut healthy_after = None;
    let mut idle = None;
    if preplaced.is_none() {
        healthy_after = Some(proc.wait_healthy(healthz_port, cfg.healthz_timeout).await?);
        tokio::time::sleep(cfg.settle).await;
        proc.check_alive()?;
        idle = match (&cfg.idle_window, proxy) {
            (Some(w), Some(p)) => Some(
                crate::steady::measure(
                    proc,
                    w,
                    || p.counts(),
                    || crate::charge::runtime_cpu_seconds(&cfg.endpoint),
                )
                .await?,
            ),
            _ => None,
        };
    }
    let cpu0 = (
        proc.cpu_seconds(),
        crate::charge::runtime_cpu_seconds(&cfg.endpoint),
    );
    let cri0 = proxy.map(CriProxy::counts);
    let starts = match preplaced {
        Some(t) => vec![t; names.len()],
        None => write_manifests(&manifests, names, &cfg.image, cfg.template)?,
    };
    let full_names: Vec<String> = names.iter().map(|n| static_pod_full_name(n)).collect();
    let mut tracker = RunningTracker::new(full_names.clone());
    loop {
        let running = running_pod_names(rt).await?;
        tracker.observe(running.iter().map(String::as_str), Instant::now());
        if tracker.all_seen() {
            break;
        }
        proc.check_alive()?;
        if starts.first().is_some_and(|t| t.elapsed() > cfg.timeout) {
            return Err(BenchError::Timeout(startup_timeout_message(
                &tracker,
                cfg.timeout,
            )));
        }
        tokio::time::sleep(cfg.poll).await;
    }
    let cpu1 = (
        proc.cpu_seconds(),
        crate::charge::runtime_cpu_seconds(&cfg.endpoint),
    );
    let healthy_after = match healthy_after {
        Some(h) => h,
        None => {
            proc.wait_healthy(healthz_port, cfg.healthz_timeout).await?;
            preplaced.map_or(Duration::ZERO, |t| t.elapsed())
        }
    };
    let cri_calls_startup = proxy.zip(cri0).map(|(p, c0)| p.counts().since(&c0).total());
    let (latencies, makespan) = tracker
        .latencies(&starts)
        .ok_or_else(|| BenchError::Kubelet("pods seen running without a start time".into()))?;
    let startup_cpu = crate::report::StartupCpu::between(cpu0, cpu1, proc.in_cgroup());
    let latencies_s = latencies.iter().map(Duration::as_secs_f64).collect();
    let startup = LatencySummary::new(&latencies, makespan)
        .ok_or_else(|| BenchError::Kubelet("the batch has no pods".into()))?;
    for sb in bench_sandboxes(rt).await? {
        uids.extend(sandbox_uid(&sb));
    }
    let scrape = match (&cfg.scrape, proc.pid()) {
        (Some(s), Some(pid)) => {
            let s = ScrapeConfig {
                port: read_only_port,
                ..s.clone()
            };
            let outcome = crate::scrape::measure(pid, &s).await?;
            proc.check_alive()?;
            Some(outcome)
        }
        _ => None,
    };
    let probe_cost = match (&cfg.probe_cost, proc.pid(), starts.first()) {
        (Some(p), Some(pid), Some(&first)) => {
            let p = ProbeCostConfig {
                port: read_only_port,
                pods: full_names.clone(),
                ..p.clone()
            };
            let outcome = crate::probe_cost::measure(pid, &p, first).await?;
            proc.check_alive()?;
            Some(outcome)
        }
        _ => None,
    };
    let steady = match (&cfg.steady, proxy) {
        (Some(s), Some(p)) => {
            let runtime_cpu = || crate::charge::runtime_cpu_seconds(&cfg.endpoint);
            let mut o = crate::steady::measure(proc, s, || p.counts(), runtime_cpu).await?;
            o.cri_calls_startup = cri_calls_startup;
            Some(o)
        }
        _ => None,
    };
    // After any steady window: the kills change what runs.
    let event_detect = match (&cfg.event_detect, starts.first()) {
        (Some(e), Some(&first)) => {
            let e = EventDetectConfig {
                port: read_only_port,
                pods: full_names,
                ..e.clone()
            };
            let outcome = crate::event_detect::measure(rt, &e, first).await?;
            proc.check_alive()?;
            Some(outcome)
        }
        _ => None,
    };
    let (teardown_stopped, teardown_gone) = teardown(rt, cfg, &manifests, names, proc).await?;
    let startup_cpu = crate::report::StartupCpu {
        kubelet_memory_peak_mib: proc.memory_peak_mib(),
        ..startup_cpu
    };
    Ok(KubeletOutcome {
        latencies_s,
        startup_cpu,
        startup,
        teardown_stopped,
        teardown_gone,
        healthy_after,
        scrape,
        probe_cost,
        event_detect,
        steps: Vec::new(),
        steady,
        idle,
    })
}

/// Writes every manifest as a dot-file, then renames them all; returns each rename's time.
fn write_manifests(
    dir: &Path,
    names: &[String],
    image: &str,
    template: PodTemplate,
) -> BenchResult<Vec<Instant>> {
    let mut staged = Vec::with_capacity(names.len());
    for name in names {
        let tmp = dir.join(format!(".{name}.yaml"));
        std::fs::write(&tmp, static_pod_manifest(name, image, template))
            .map_err(BenchError::io("write", &tmp))?;
        staged.push((tmp, dir.join(format!("{name}.yaml"))));
    }
    let mut starts = Vec::with_capacity(names.len());
    for (tmp, dst) in &staged {
        std::fs::rename(tmp, dst).map_err(BenchError::io("rename", tmp))?;
        starts.push(Instant::now());
    }
    Ok(starts)
}

/// Removes the manifests; polls until nothing is ready or running (stopped), then until nothing
/// is listed (gone) or the gone timeout passes.
async fn teardown(
    rt: &RemoteRuntimeService,
    cfg: &KubeletRunConfig,
    dir: &Path,
    names: &[String],
    proc: &mut KubeletProcess,
) -> BenchResult<(Duration, Option<Duration>)> {
    let t0 = Instant::now();
    for name in names {
        let p = dir.join(format!("{name}.yaml"));
        std::fs::remove_file(&p).map_err(BenchError::io("remove", &p))?;
    }
    let mut stopped = None;
    loop {
        let sandboxes = bench_sandboxes(rt).await?;
        let now = Instant::now();
        if sandboxes.is_empty() {
            let stopped = stopped.unwrap_or(now) - t0;
            return Ok((stopped, Some(now - t0)));
        }
        if stopped.is_none()
            && !sandboxes.iter().any(is_ready)
            && running_pod_names(rt).await?.is_empty()
        {
            stopped = Some(now);
        }
        match stopped {
            Some(s) if now - s > cfg.gone_timeout => return Ok((s - t0, None)),
            None if now - t0 > cfg.timeout => {
                let ready = sandboxes.iter().filter(|s| is_ready(s)).count();
                return Err(BenchError::Timeout(format!(
                    "{ready} sandboxes still ready {} s after their manifests were removed",
                    cfg.timeout.as_secs()
                )));
            }
            _ => {}
        }
        proc.check_alive()?;
        tokio::time::sleep(cfg.poll).await;
    }
}
