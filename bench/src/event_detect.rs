//! B9 of perf-anchors §6, event-detection latency: a container killed from outside → its
//! status updated in the kubelet's `/pods`.
//!
//! With K static pods running (busybox `sleep 3600`, `restartPolicy: Never`, see
//! [`crate::manifest::PodTemplate::SleepNoRestart`]), for each pod in turn:
//! 1. a pause of [`EventDetectConfig::pause`] plus a fraction of a second that differs per kill
//!    ([`kill_phase`]), so that the kills fall at spread-out phases of the kubelets' 1 s PLEG
//!    relist instead of at one fixed offset after the previous detection (which right after a
//!    relist would give every kill the same latency); both kubelets of a repetition get the
//!    same phases ([`run_interleaved`]), so their kills pair up ([`paired_differences_ms`]);
//! 2. the container's init process is found from outside the kubelet — CRI `ContainerStatus`
//!    (verbose) gives its PID, checked against `/proc/<pid>/cgroup` (the container's cgroup
//!    is named after its ID) — and sent SIGKILL: the kubelet asks nothing of the runtime;
//! 3. from the kill (`t0`), two pollers run side by side every [`EventDetectConfig::poll`]:
//!    * the kubelet's `/pods` (read-only port; a standalone kubelet serves its status manager's
//!      status of static pods there) until the container is no longer shown running with the
//!      killed container's ID ([`shows_kill`]: `state.terminated`, or anything else but
//!      running with that ID) → the **latency**;
//!    * CRI `ContainerStatus` of the container until the runtime reports it EXITED → the
//!      **floor**: the earliest a kubelet could know (containerd learns the exit from the
//!      shim's event at once; a kubelet with CRI container events could report about then).
//!
//! A poll's time is taken when its answer has arrived, so both figures include up to one poll
//! interval plus one request. `restartPolicy: Never`: after the kill neither kubelet restarts
//! the container, so the status goes from running to terminated (exit code 137) and stays
//! there — no restart can overtake the observation, and neither kubelet has restart work
//! running during the next kill.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use kubelet_cri::v1::ContainerState;
use kubelet_cri::{RemoteRuntimeService, RuntimeService};
use serde::Serialize;
use serde_json::Value;

use crate::error::{BenchError, BenchResult};
use crate::report::Variant;
use crate::scrape::get;
use crate::suite_report::{GoalKind, Row, Spread};

/// What to measure in one kubelet run.
#[derive(Clone, Debug)]
pub struct EventDetectConfig {
    /// The read-only port (set by the kubelet run).
    pub port: u16,
    /// Full names (`<name>-<node>`) of the pods, one kill each (set by the kubelet run).
    pub pods: Vec<String>,
    /// The container to kill in each pod.
    pub container: String,
    /// Poll interval of `/pods` and of CRI `ContainerStatus` after a kill.
    pub poll: Duration,
    /// How long to wait for every container shown running in `/pods`.
    pub ready_timeout: Duration,
    /// How long to wait for a kill to show in `/pods`.
    pub detect_timeout: Duration,
    /// Base pause before each kill (a spread fraction of a second is added).
    pub pause: Duration,
    /// Start of the kill phases, in `[0, 1)` ([`kill_phase`]).
    pub phase_seed: f64,
}

/// The benchmark's view of one container in a `/pods` answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContainerView {
    /// The pod, or its status of the container, is not listed.
    Missing,
    /// `state.running`; the container ID without its `<runtime>://` prefix (empty if none).
    Running {
        /// Container ID.
        id: String,
    },
    /// Any other state.
    NotRunning {
        /// Container ID (empty if none).
        id: String,
        /// One line: `terminated exitCode 137 reason Error`, `waiting ContainerCreating`, …
        state: String,
    },
}

/// `<runtime>://<id>` → `<id>` (an ID without a prefix is returned as is).
pub fn bare_container_id(id: &str) -> &str {
    id.split_once("://").map_or(id, |(_, bare)| bare)
}

/// Container `container` of pod `pod` (full name) in a `/pods` answer (a `v1.PodList`).
pub fn container_view(list: &Value, pod: &str, container: &str) -> ContainerView {
    let items = list["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    match items
        .iter()
        .find(|p| p["metadata"]["name"].as_str() == Some(pod))
    {
        Some(p) => pod_container_view(p, container),
        None => ContainerView::Missing,
    }
}

/// Container `container` of one pod (a `v1.Pod` as JSON).
pub fn pod_container_view(p: &Value, container: &str) -> ContainerView {
    let statuses = p["status"]["containerStatuses"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let Some(c) = statuses
        .iter()
        .find(|c| c["name"].as_str() == Some(container))
    else {
        return ContainerView::Missing;
    };
    let id = bare_container_id(c["containerID"].as_str().unwrap_or("")).to_owned();
    let state = &c["state"];
    if state.get("running").is_some_and(Value::is_object) {
        return ContainerView::Running { id };
    }
    let state = if let Some(t) = state.get("terminated").filter(|t| t.is_object()) {
        let mut s = "terminated".to_owned();
        if let Some(code) = t["exitCode"].as_i64() {
            s.push_str(&format!(" exitCode {code}"));
        }
        if let Some(r) = t["reason"].as_str() {
            s.push_str(&format!(" reason {r}"));
        }
        s
    } else if let Some(w) = state.get("waiting").filter(|w| w.is_object()) {
        format!("waiting {}", w["reason"].as_str().unwrap_or(""))
            .trim_end()
            .to_owned()
    } else {
        "no state".to_owned()
    };
    ContainerView::NotRunning { id, state }
}

/// Whether `view` shows that container `killed` (bare ID) is no longer running, and how:
/// `None` while it is still shown running with that ID or not listed.
pub fn shows_kill(view: &ContainerView, killed: &str) -> Option<String> {
    match view {
        ContainerView::Missing => None,
        ContainerView::Running { id } if id == killed => None,
        ContainerView::Running { id } => Some(format!("running again as {id}")),
        ContainerView::NotRunning { state, .. } => Some(state.clone()),
    }
}

/// The PID in a verbose CRI `ContainerStatus` answer's `info` (containerd: the JSON under key
/// `info` has `"pid"`); `None` without one or for PID 0.
pub fn pid_from_verbose_info(info: &HashMap<String, String>) -> Option<u32> {
    let v: Value = serde_json::from_str(info.get("info")?).ok()?;
    v["pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .filter(|&p| p > 0)
}

/// Whether a `/proc/<pid>/cgroup` text puts the process in container `id`'s cgroup: a path
/// component equal to the ID (cgroupfs driver) or `cri-containerd-<id>.scope` (systemd).
pub fn cgroup_is_container(cgroup: &str, id: &str) -> bool {
    if id.is_empty() {
        return false;
    }
    let scope = format!("cri-containerd-{id}.scope");
    cgroup.lines().any(|l| {
        l.splitn(3, ':')
            .nth(2)
            .is_some_and(|path| path.split('/').any(|c| c == id || c == scope))
    })
}

/// Fraction of a second added to the pause before kill `i`: `seed + i × 0.618…` modulo 1 (the
/// golden-ratio sequence), so even a few kills cover the relist period evenly.
pub fn kill_phase(i: usize, seed: f64) -> f64 {
    (seed + i as f64 * 0.618_033_988_749_895).rem_euclid(1.0)
}

/// A seed for [`kill_phase`] from the clock, in `[0, 1)`.
pub fn clock_seed() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    f64::from(nanos) / 1e9
}

/// One kill.
#[derive(Clone, Debug, Serialize)]
pub struct KillSample {
    /// Pod (full name).
    pub pod: String,
    /// The killed container's ID.
    pub container_id: String,
    /// Its init process.
    pub pid: u32,
    /// The pause before the kill, in seconds.
    pub pause_s: f64,
    /// Kill → the kubelet's `/pods` shows the container not running.
    pub pods_status_s: f64,
    /// What `/pods` showed then.
    pub status_seen: String,
    /// Kill → CRI `ContainerStatus` EXITED (`None`: not seen before `/pods` gave up).
    pub cri_exited_s: Option<f64>,
}

/// One kubelet run's kills.
#[derive(Clone, Debug, Serialize)]
pub struct EventDetectOutcome {
    /// From the first manifest's rename to every container running in `/pods`, in seconds.
    pub all_running_s: f64,
    /// The kills, in order.
    pub samples: Vec<KillSample>,
}

impl EventDetectOutcome {
    /// Median of kill → `/pods` over the kills.
    pub fn median_s(&self) -> Option<f64> {
        let v: Vec<f64> = self.samples.iter().map(|s| s.pods_status_s).collect();
        crate::stats::median(&v)
    }

    /// Largest kill → `/pods`.
    pub fn max_s(&self) -> Option<f64> {
        self.samples
            .iter()
            .map(|s| s.pods_status_s)
            .reduce(f64::max)
    }

    /// Median of kill → CRI EXITED over the kills that saw it.
    pub fn cri_median_s(&self) -> Option<f64> {
        let v: Vec<f64> = self.samples.iter().filter_map(|s| s.cri_exited_s).collect();
        crate::stats::median(&v)
    }
}

async fn pod_list(port: u16) -> BenchResult<Value> {
    let body = get(port, "/pods").await?;
    serde_json::from_str(&body)
        .map_err(|e| BenchError::Kubelet(format!("GET /pods: not JSON: {e}")))
}

/// Runs the kills against a kubelet whose pods are `cfg.pods` (see the module doc); `started`
/// is the first manifest's rename.
pub async fn measure(
    rt: &RemoteRuntimeService,
    cfg: &EventDetectConfig,
    started: Instant,
) -> BenchResult<EventDetectOutcome> {
    // Every container running, with its ID, in the kubelet's own status.
    let deadline = Instant::now() + cfg.ready_timeout;
    let ids = loop {
        let list = pod_list(cfg.port).await?;
        let views: Vec<ContainerView> = cfg
            .pods
            .iter()
            .map(|p| container_view(&list, p, &cfg.container))
            .collect();
        let ids: Vec<String> = views
            .iter()
            .filter_map(|v| match v {
                ContainerView::Running { id } if !id.is_empty() => Some(id.clone()),
                _ => None,
            })
            .collect();
        if ids.len() == cfg.pods.len() {
            break ids;
        }
        if Instant::now() > deadline {
            return Err(BenchError::Timeout(format!(
                "{} of {} containers shown running in /pods after {} s: {views:?}",
                ids.len(),
                cfg.pods.len(),
                cfg.ready_timeout.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let all_running_s = started.elapsed().as_secs_f64();
    let mut samples = Vec::with_capacity(ids.len());
    for (i, (pod, id)) in cfg.pods.iter().zip(&ids).enumerate() {
        let pause = cfg.pause + Duration::from_secs_f64(kill_phase(i, cfg.phase_seed));
        tokio::time::sleep(pause).await;
        let mut s = kill_and_watch(rt, cfg, pod, id).await?;
        s.pause_s = pause.as_secs_f64();
        samples.push(s);
    }
    Ok(EventDetectOutcome {
        all_running_s,
        samples,
    })
}

/// Finds container `id`'s init process from outside the kubelet (CRI `ContainerStatus`
/// verbose, checked against `/proc/<pid>/cgroup`) and sends it SIGKILL; returns its PID and
/// the time of the kill. `pod` only names the container in errors.
pub async fn kill_from_outside(
    rt: &RemoteRuntimeService,
    pod: &str,
    id: &str,
) -> BenchResult<(u32, Instant)> {
    let st = rt
        .container_status(id, true)
        .await
        .map_err(BenchError::cri(format!("ContainerStatus {id}")))?;
    let running = st
        .status
        .as_ref()
        .is_some_and(|s| s.state == ContainerState::ContainerRunning as i32);
    if !running {
        return Err(BenchError::Kubelet(format!(
            "container {id} of {pod} is not RUNNING in CRI before the kill"
        )));
    }
    let pid = pid_from_verbose_info(&st.info).ok_or_else(|| {
        BenchError::Kubelet(format!(
            "no pid in the verbose ContainerStatus of {id} ({pod})"
        ))
    })?;
    let cgroup_path = format!("/proc/{pid}/cgroup");
    let cgroup = std::fs::read_to_string(&cgroup_path).unwrap_or_default();
    if !cgroup_is_container(&cgroup, id) {
        return Err(BenchError::Kubelet(format!(
            "pid {pid} is not in the cgroup of container {id} ({pod}): not killed"
        )));
    }
    let raw_pid =
        i32::try_from(pid).map_err(|_| BenchError::Kubelet(format!("pid {pid} out of range")))?;
    let t0 = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(raw_pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .map_err(|e| BenchError::Kubelet(format!("kill -9 {pid} ({pod}): {e}")))?;
    Ok((pid, t0))
}

/// Polls CRI `ContainerStatus` of `id` every `poll` until the runtime reports it EXITED: the
/// time since `t0`, or `None` once `deadline` has passed (the floor of B9).
pub async fn cri_exited_after(
    rt: &RemoteRuntimeService,
    id: &str,
    t0: Instant,
    deadline: Instant,
    poll: Duration,
) -> Option<Duration> {
    loop {
        if let Ok(r) = rt.container_status(id, false).await
            && r.status
                .as_ref()
                .is_some_and(|s| s.state == ContainerState::ContainerExited as i32)
        {
            return Some(t0.elapsed());
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(poll).await;
    }
}

/// Kills container `id`'s init process and times `/pods` and CRI until they show it.
async fn kill_and_watch(
    rt: &RemoteRuntimeService,
    cfg: &EventDetectConfig,
    pod: &str,
    id: &str,
) -> BenchResult<KillSample> {
    let (pid, t0) = kill_from_outside(rt, pod, id).await?;
    let deadline = t0 + cfg.detect_timeout;
    let cri = cri_exited_after(rt, id, t0, deadline, cfg.poll);
    let pods = async {
        loop {
            let list = pod_list(cfg.port).await?;
            let at = t0.elapsed();
            if let Some(seen) = shows_kill(&container_view(&list, pod, &cfg.container), id) {
                return Ok((at, seen));
            }
            if Instant::now() > deadline {
                return Err(BenchError::Timeout(format!(
                    "{pod}: container {id} still shown running in /pods {} s after SIGKILL",
                    cfg.detect_timeout.as_secs()
                )));
            }
            tokio::time::sleep(cfg.poll).await;
        }
    };
    let (cri, pods) = tokio::join!(cri, pods);
    let (at, status_seen) = pods?;
    Ok(KillSample {
        pod: pod.to_owned(),
        container_id: id.to_owned(),
        pid,
        pause_s: 0.0,
        pods_status_s: at.as_secs_f64(),
        status_seen,
        cri_exited_s: cri.map(|d| d.as_secs_f64()),
    })
}

/// One kubelet run of the B9 benchmark.
#[derive(Clone, Debug, Serialize)]
pub struct EventRun {
    /// kubelet-rs or upstream.
    pub variant: Variant,
    /// Repetition (0-based).
    pub repeat: usize,
    /// `/proc/loadavg` before the run.
    pub loadavg_before: String,
    /// Other kubelets or foreign pods present (kept with `--allow-foreign-pods`).
    pub busy_before: Option<String>,
    /// The kills.
    pub outcome: Option<EventDetectOutcome>,
    /// Why there is no outcome.
    pub error: Option<String>,
}

/// The note every B9 row carries.
pub const B9_NOTE: &str = "SIGKILL of the container's init process from outside (pid from CRI ContainerStatus); \
     /pods on the read-only port and CRI ContainerStatus polled every 10 ms; restartPolicy Never; \
     floor = CRI reports the container EXITED. Both kubelets: generic PLEG, 1 s relist (EventedPLEG \
     is off by default in 1.35, and containerd 1.6 has no CRI container events), so the \
     ≤ 0.1 s goal with CRI events does not apply on this runtime. Standalone (no API \
     server); the API status is measured in cluster mode (the B9 \"status in the API\" rows)";

/// The B9 rows of the runs: per run, the median and the largest of its kills, each over the
/// repetitions; the floor column is the CRI EXITED time of both kubelets' runs.
pub fn b9_rows(runs: &[EventRun], kills: usize) -> Vec<Row> {
    let per_run = |v: Option<Variant>, f: &dyn Fn(&EventDetectOutcome) -> Option<f64>| {
        let vals: Vec<f64> = runs
            .iter()
            .filter(|r| r.error.is_none() && v.is_none_or(|v| r.variant == v))
            .filter_map(|r| r.outcome.as_ref().and_then(f))
            .collect();
        Spread::of(&vals)
    };
    let three = |f: &dyn Fn(&EventDetectOutcome) -> Option<f64>| {
        (
            per_run(Some(Variant::KubeletRs), f),
            per_run(Some(Variant::Upstream), f),
            per_run(None, &|o| o.cri_median_s()),
        )
    };
    vec![
        Row::measured(
            "B9",
            &format!(
                "container killed from outside → status terminated in /pods, median of {kills} kills"
            ),
            "s",
            three(&EventDetectOutcome::median_s),
            Some((GoalKind::VsUpstream, 1.0)),
            B9_NOTE,
        ),
        Row::measured(
            "B9",
            &format!(
                "container killed from outside → status terminated in /pods, slowest of {kills} kills"
            ),
            "s",
            three(&EventDetectOutcome::max_s),
            None,
            "as above; floor column: median CRI EXITED time",
        ),
        Row::measured(
            "B9",
            "kill → /pods, kubelet-rs minus upstream at the same kill phase (paired)",
            "ms",
            (Spread::of(&paired_differences_ms(runs)), None, None),
            None,
            "per repetition the median over the kills of the difference; both kubelets get the same \
             kill phases, so the wait for the next 1 s relist cancels: this is the difference in \
             their own work from relist to status (negative: kubelet-rs faster)",
        ),
    ]
}

/// Per repetition, the median over kill index `i` of kubelet-rs's kill `i` minus upstream's
/// kill `i`, in ms: both ran the same kill phases, so the wait for the next relist cancels
/// and what is left is the difference in the kubelets' own work from relist to status.
/// Repetitions without two good runs with the same number of kills are skipped.
pub fn paired_differences_ms(runs: &[EventRun]) -> Vec<f64> {
    let find = |v: Variant, rep: usize| {
        runs.iter()
            .find(|r| r.variant == v && r.repeat == rep && r.error.is_none())
            .and_then(|r| r.outcome.as_ref())
    };
    let mut reps: Vec<usize> = runs.iter().map(|r| r.repeat).collect();
    reps.sort_unstable();
    reps.dedup();
    reps.into_iter()
        .filter_map(|rep| {
            let (a, b) = (
                find(Variant::KubeletRs, rep)?,
                find(Variant::Upstream, rep)?,
            );
            if a.samples.len() != b.samples.len() {
                return None;
            }
            let d: Vec<f64> = a
                .samples
                .iter()
                .zip(&b.samples)
                .map(|(x, y)| (x.pods_status_s - y.pods_status_s) * 1e3)
                .collect();
            crate::stats::median(&d)
        })
        .collect()
}

/// The B9 row when the benchmark did not run.
pub fn b9_not_measured(why: &str) -> Row {
    Row::not_measured(
        "B9",
        "event detection: container killed from outside → status in /pods",
        Some((GoalKind::VsUpstream, 1.0)),
        why,
    )
}

/// Options of the B9 runs ([`run_interleaved`]).
#[derive(Clone, Debug)]
pub struct EventBenchOptions {
    /// Pods per run, one kill each.
    pub kills: usize,
    /// Repetitions; each runs kubelet-rs then upstream.
    pub repeat: usize,
    /// Poll interval after a kill.
    pub poll: Duration,
    /// Base pause before each kill.
    pub pause: Duration,
    /// Wait for a free machine before each run.
    pub quiet_timeout: Duration,
    /// Run even with other kubelets or foreign pods present (noted in the run).
    pub allow_foreign_pods: bool,
    /// Keep the run directories.
    pub keep: bool,
}

impl Default for EventBenchOptions {
    fn default() -> Self {
        Self {
            kills: 5,
            repeat: 3,
            poll: Duration::from_millis(10),
            pause: Duration::from_secs(1),
            quiet_timeout: Duration::from_secs(120),
            allow_foreign_pods: false,
            keep: false,
        }
    }
}

/// For each repetition, kubelet-rs then upstream (those of `bins` that are set), each started
/// standalone with `opts.kills` static pods (`restartPolicy: Never`) and each pod's container
/// killed once ([`measure`]). `hack/runtime-up.sh` runs before each run (the upstream
/// kubelet's image GC can remove the pause image on this host, see the README). Failures are
/// recorded in the runs, not returned.
pub async fn run_interleaved(
    repo: &std::path::Path,
    opts: &EventBenchOptions,
    runtime: &crate::env::RuntimeInfo,
    rt: std::sync::Arc<RemoteRuntimeService>,
    bins: &crate::suite::Binaries,
    tag: &str,
) -> Vec<EventRun> {
    use crate::kubelet::{KubeletRunConfig, run_kubelet_variant};
    let seed = clock_seed();
    let mut runs = Vec::new();
    for repeat in 0..opts.repeat {
        // Both kubelets of a repetition get the same kill phases (paired: the wait for the
        // next relist, which the phase decides, is then the same on both sides); the
        // golden-ratio sequence continues from repetition to repetition.
        let phase_seed = kill_phase(repeat * opts.kills, seed);
        let kubelets = [
            (Variant::KubeletRs, &bins.kubelet_rs),
            (Variant::Upstream, &bins.upstream),
        ];
        for (variant, bin) in kubelets {
            let Some(bin) = bin else { continue };
            let mut run = EventRun {
                variant,
                repeat,
                loadavg_before: crate::env::loadavg(),
                busy_before: None,
                outcome: None,
                error: None,
            };
            run.error = prepare(repo, opts, &rt, &mut run).await.err();
            if run.error.is_none() {
                let cfg = KubeletRunConfig {
                    event_detect: Some(EventDetectConfig {
                        port: 0,
                        pods: Vec::new(),
                        container: crate::manifest::CONTAINER_NAME.to_owned(),
                        poll: opts.poll,
                        ready_timeout: Duration::from_secs(120),
                        detect_timeout: Duration::from_secs(30),
                        pause: opts.pause,
                        phase_seed,
                    }),
                    keep: opts.keep,
                    ..KubeletRunConfig::measurement(
                        bin.clone(),
                        runtime,
                        opts.kills,
                        format!("e{}{repeat}", variant.tag()),
                        crate::manifest::PodTemplate::SleepNoRestart,
                        Vec::new(),
                    )
                };
                run.loadavg_before = crate::env::loadavg();
                match run_kubelet_variant(rt.clone(), &cfg).await {
                    Ok(o) => {
                        run.outcome = o.event_detect;
                        if run.outcome.is_none() {
                            run.error = Some("no kills measured".into());
                        }
                    }
                    Err(e) => run.error = Some(e.to_string()),
                }
            }
            let others = crate::env::other_kubelets(&[]);
            if run.error.is_none() && !others.is_empty() {
                let note = format!("other kubelets at the end of the run ({others:?})");
                if opts.allow_foreign_pods {
                    run.busy_before = Some(match run.busy_before.take() {
                        Some(b) => format!("{b}; {note}"),
                        None => note,
                    });
                } else {
                    run.outcome = None;
                    run.error = Some(format!("result discarded: {note}"));
                }
            }
            progress(tag, &run);
            runs.push(run);
        }
    }
    runs
}

/// `hack/runtime-up.sh` and the wait for a free machine before one run.
async fn prepare(
    repo: &std::path::Path,
    opts: &EventBenchOptions,
    rt: &RemoteRuntimeService,
    run: &mut EventRun,
) -> Result<(), String> {
    crate::env::runtime_up(repo).map_err(|e| format!("hack/runtime-up.sh: {e}"))?;
    let busy = crate::guard::wait_quiet(rt, opts.quiet_timeout)
        .await
        .map_err(|e| e.to_string())?;
    if !busy.is_quiet() {
        run.busy_before = Some(busy.describe());
        if !opts.allow_foreign_pods {
            return Err(crate::guard::refused_message(&busy, opts.quiet_timeout));
        }
    }
    Ok(())
}

fn progress(tag: &str, r: &EventRun) {
    let what = format!("{tag} B9 {} run {}", r.variant.label(), r.repeat + 1);
    match (&r.outcome, &r.error) {
        (Some(o), _) => {
            let ms =
                |v: Option<f64>| v.map_or_else(|| "?".to_owned(), |v| format!("{:.0}", v * 1e3));
            let each: Vec<String> = o
                .samples
                .iter()
                .map(|s| format!("{:.0}", s.pods_status_s * 1e3))
                .collect();
            eprintln!(
                "{what}: kill → /pods median {} ms (each: {} ms), CRI EXITED median {} ms (load {})",
                ms(o.median_s()),
                each.join(", "),
                ms(o.cri_median_s()),
                r.loadavg_before
            );
        }
        (None, Some(e)) => eprintln!("{what}: FAILED: {e}"),
        (None, None) => eprintln!("{what}: no result"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(state: Value, id: &str) -> Value {
        json!({
            "kind": "PodList",
            "items": [
                { "metadata": { "name": "other" }, "status": {} },
                {
                    "metadata": { "name": "p-krsbench-node" },
                    "status": {
                        "phase": "Running",
                        "containerStatuses": [
                            { "name": "side", "containerID": "containerd://zzz",
                              "state": { "running": { "startedAt": "x" } } },
                            { "name": "sleeper", "containerID": id, "restartCount": 0,
                              "state": state },
                        ],
                    },
                },
            ],
        })
    }

    #[test]
    fn views_of_a_pod_list() {
        let running = list(
            json!({ "running": { "startedAt": "2026-12-01T00:00:00Z" } }),
            "containerd://abc",
        );
        let v = container_view(&running, "p-krsbench-node", "sleeper");
        assert_eq!(v, ContainerView::Running { id: "abc".into() });
        assert_eq!(shows_kill(&v, "abc"), None);
        assert_eq!(
            shows_kill(&v, "old"),
            Some("running again as abc".to_owned())
        );

        let term = list(
            json!({ "terminated": { "exitCode": 137, "reason": "Error", "containerID": "containerd://abc" } }),
            "containerd://abc",
        );
        let v = container_view(&term, "p-krsbench-node", "sleeper");
        assert_eq!(
            v,
            ContainerView::NotRunning {
                id: "abc".into(),
                state: "terminated exitCode 137 reason Error".into()
            }
        );
        assert_eq!(
            shows_kill(&v, "abc").as_deref(),
            Some("terminated exitCode 137 reason Error")
        );

        let waiting = list(json!({ "waiting": { "reason": "ContainerCreating" } }), "");
        let v = container_view(&waiting, "p-krsbench-node", "sleeper");
        assert_eq!(
            v,
            ContainerView::NotRunning {
                id: String::new(),
                state: "waiting ContainerCreating".into()
            }
        );
        // Empty state object (e.g. the status not filled in yet).
        let none = list(json!({}), "containerd://abc");
        assert_eq!(
            shows_kill(&container_view(&none, "p-krsbench-node", "sleeper"), "abc").as_deref(),
            Some("no state")
        );
    }

    #[test]
    fn missing_pods_and_containers_are_not_a_detection() {
        let l = list(json!({ "running": {} }), "containerd://abc");
        let v = container_view(&l, "q-krsbench-node", "sleeper");
        assert_eq!(v, ContainerView::Missing);
        assert_eq!(shows_kill(&v, "abc"), None);
        assert_eq!(
            container_view(&l, "p-krsbench-node", "nope"),
            ContainerView::Missing
        );
        assert_eq!(container_view(&json!({}), "p", "c"), ContainerView::Missing);
        // A pod listed before its container statuses are.
        assert_eq!(
            container_view(&l, "other", "sleeper"),
            ContainerView::Missing
        );
    }

    #[test]
    fn ids_lose_their_runtime_prefix() {
        assert_eq!(bare_container_id("containerd://abc"), "abc");
        assert_eq!(bare_container_id("abc"), "abc");
        assert_eq!(bare_container_id(""), "");
    }

    #[test]
    fn pid_of_a_verbose_status() {
        let mut info = HashMap::new();
        assert_eq!(pid_from_verbose_info(&info), None);
        info.insert(
            "info".to_owned(),
            r#"{"sandboxID":"s","pid":4242,"removing":false}"#.to_owned(),
        );
        assert_eq!(pid_from_verbose_info(&info), Some(4242));
        info.insert("info".to_owned(), r#"{"pid":0}"#.to_owned());
        assert_eq!(pid_from_verbose_info(&info), None);
        info.insert("info".to_owned(), "not json".to_owned());
        assert_eq!(pid_from_verbose_info(&info), None);
    }

    #[test]
    fn cgroup_membership() {
        let v1 = "12:memory:/kubepods/besteffort/pod1234/abcdef\n11:cpu,cpuacct:/kubepods/besteffort/pod1234/abcdef\n0::/\n";
        assert!(cgroup_is_container(v1, "abcdef"));
        assert!(!cgroup_is_container(v1, "abcde"));
        assert!(!cgroup_is_container(v1, "pod1234x"));
        assert!(!cgroup_is_container(v1, ""));
        let systemd = "0::/kubepods.slice/kubepods-besteffort.slice/cri-containerd-abcdef.scope\n";
        assert!(cgroup_is_container(systemd, "abcdef"));
        assert!(!cgroup_is_container("0::/user.slice\n", "abcdef"));
    }

    #[test]
    fn kill_phases_spread_over_the_second() {
        let phases: Vec<f64> = (0..5).map(|i| kill_phase(i, 0.0)).collect();
        assert!(phases.iter().all(|p| (0.0..1.0).contains(p)));
        let mut sorted = phases.clone();
        sorted.sort_by(f64::total_cmp);
        // Five golden-ratio points leave no gap wider than 0.4 s (including the wrap-around).
        let gaps: Vec<f64> = sorted
            .windows(2)
            .map(|w| w[1] - w[0])
            .chain([1.0 - sorted[4] + sorted[0]])
            .collect();
        assert!(gaps.iter().all(|g| *g < 0.4), "{sorted:?}");
        assert!((kill_phase(1, 0.5) - 0.118_033_988_749_895).abs() < 1e-9);
        assert!((0.0..1.0).contains(&clock_seed()));
    }

    fn run(variant: Variant, repeat: usize, pods: &[f64], cri: &[f64]) -> EventRun {
        EventRun {
            variant,
            repeat,
            loadavg_before: String::new(),
            busy_before: None,
            outcome: Some(EventDetectOutcome {
                all_running_s: 1.0,
                samples: pods
                    .iter()
                    .zip(cri)
                    .map(|(&p, &c)| KillSample {
                        pod: "p".into(),
                        container_id: "c".into(),
                        pid: 1,
                        pause_s: 1.0,
                        pods_status_s: p,
                        status_seen: "terminated".into(),
                        cri_exited_s: Some(c),
                    })
                    .collect(),
            }),
            error: None,
        }
    }

    #[test]
    fn rows_take_medians_per_run_then_over_runs() {
        let mut failed = run(Variant::Upstream, 2, &[9.0], &[9.0]);
        failed.error = Some("boom".into());
        let runs = vec![
            run(Variant::KubeletRs, 0, &[0.5, 0.7, 0.6], &[0.01, 0.02, 0.03]),
            run(Variant::Upstream, 0, &[1.0, 1.2, 0.8], &[0.02, 0.02, 0.02]),
            run(Variant::KubeletRs, 1, &[0.4, 0.9, 0.4], &[0.01, 0.01, 0.01]),
            run(Variant::Upstream, 1, &[0.9, 0.9, 1.4], &[0.03, 0.03, 0.03]),
            failed,
        ];
        let rows = b9_rows(&runs, 3);
        assert_eq!(rows.len(), 3);
        let med = &rows[0];
        assert_eq!(med.id, "B9");
        let rs = med.kubelet_rs.unwrap();
        assert_eq!((rs.median, rs.min, rs.max, rs.n), (0.5, 0.4, 0.6, 2));
        let up = med.upstream.unwrap();
        assert_eq!((up.median, up.n), (0.95, 2));
        // Floor: the per-run CRI medians of all four good runs.
        let floor = med.floor.unwrap();
        assert_eq!((floor.n, floor.min, floor.max), (4, 0.01, 0.03));
        assert!((med.ratio_upstream.unwrap() - 0.5 / 0.95).abs() < 1e-9);
        assert_eq!(med.met, Some(true));
        let max = &rows[1];
        assert_eq!(max.kubelet_rs.unwrap().median, 0.8);
        assert!((max.upstream.unwrap().median - 1.3).abs() < 1e-9);
        assert_eq!(max.met, None);
        // Paired: rep 0 differences -500, -500, -200 ms → -500; rep 1 -500, 0, -1000 → -500.
        let d = paired_differences_ms(&runs);
        assert_eq!(d.len(), 2);
        assert!(d.iter().all(|x| (x + 500.0).abs() < 1e-6), "{d:?}");
        let paired = &rows[2];
        assert!((paired.kubelet_rs.unwrap().median + 500.0).abs() < 1e-6);
        assert!(paired.upstream.is_none() && paired.ratio_upstream.is_none());
        // A repetition with a failed run or different kill counts is skipped.
        let uneven = vec![
            run(Variant::KubeletRs, 0, &[0.5, 0.7], &[0.0, 0.0]),
            run(Variant::Upstream, 0, &[1.0], &[0.0]),
            run(Variant::KubeletRs, 1, &[0.5], &[0.0]),
        ];
        assert!(paired_differences_ms(&uneven).is_empty());
        // Nothing measured: rows without numbers.
        let none = b9_rows(&[], 5);
        assert!(none[0].kubelet_rs.is_none() && none[0].met.is_none());
        assert!(b9_not_measured("x").note.starts_with("not measured"));
    }
}
