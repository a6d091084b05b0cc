//! The whole benchmark: for each repeat, for each N, the floor then kubelet-rs then the
//! upstream kubelet (interleaved so drifting machine load hits every variant alike), one
//! [`RunRecord`] each; then the JSON document.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kubelet_cri::RemoteRuntimeService;
use serde::Serialize;

use crate::cli::Options;
use crate::env::{RuntimeInfo, loadavg};
use crate::floor::{FloorConfig, default_workers, run_floor};
use crate::guard::{refused_message, wait_quiet};
use crate::kubelet::{KubeletRunConfig, run_kubelet_variant};
use crate::report::{Aggregate, RunRecord, Variant};

/// Binaries resolved from the options.
#[derive(Clone, Debug, Default)]
pub struct Binaries {
    /// kubelet-rs, unless skipped.
    pub kubelet_rs: Option<PathBuf>,
    /// The upstream kubelet, if given and present.
    pub upstream: Option<PathBuf>,
    /// Why something is skipped.
    pub notes: Vec<String>,
}

/// Finds the binaries: `--kubelet` or the release build of kubelet-rs (an error if missing
/// unless `--skip-kubelet-rs`), and `--upstream` if it exists (a note if it does not).
pub fn resolve_binaries(opts: &Options, repo: &Path) -> Result<Binaries, String> {
    let mut b = Binaries::default();
    if !opts.skip_kubelet_rs {
        let candidates: Vec<PathBuf> = match &opts.kubelet {
            Some(p) => vec![p.clone()],
            None => std::env::var_os("CARGO_TARGET_DIR")
                .map(|d| PathBuf::from(d).join("release/kubelet-rs"))
                .into_iter()
                .chain([repo.join("target/release/kubelet-rs")])
                .collect(),
        };
        let found = candidates.iter().find(|p| p.is_file()).cloned();
        let Some(found) = found else {
            return Err(format!(
                "kubelet-rs binary not found (looked at {}): build it with `cargo build --release -p kubelet-rs`, pass --kubelet PATH, or --skip-kubelet-rs",
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        b.kubelet_rs = Some(found);
    }
    if let Some(u) = &opts.upstream {
        if u.is_file() {
            b.upstream = Some(u.clone());
        } else {
            b.notes.push(format!(
                "upstream kubelet not found at {}: upstream column skipped",
                u.display()
            ));
        }
    }
    Ok(b)
}

/// The runtime of `hack/runtime-up.sh` cleared of leftover benchmark sandboxes, then
/// [`run_all`] on it; Ctrl-C cleans up (sandboxes, floor logs) and fails. `tag` prefixes the
/// progress lines (`[bench]`, `[suite]`).
pub async fn run_all_on_the_runtime(
    repo: &Path,
    opts: &Options,
    bins: &Binaries,
    tag: &str,
) -> anyhow::Result<(RuntimeInfo, Vec<RunRecord>)> {
    use anyhow::Context as _;
    let runtime = crate::env::runtime_up(repo)?;
    let cri = crate::cri_ops::connect(&runtime.endpoint).await?;
    let left = crate::cri_ops::cleanup_leftovers(&cri)
        .await
        .context("removing leftover benchmark sandboxes")?;
    if left > 0 {
        eprintln!("{tag} removed {left} leftover benchmark sandboxes");
    }
    let records = tokio::select! {
        r = run_all(opts, &runtime, cri.clone(), bins) => r,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("{tag} interrupted: cleaning up");
            crate::cri_ops::cleanup_leftovers(&cri).await?;
            let _ = std::fs::remove_dir_all(floor_log_root(opts));
            anyhow::bail!("interrupted");
        }
    };
    Ok((runtime, records))
}

/// Runs every batch; failures are recorded, not fatal.
pub async fn run_all(
    opts: &Options,
    runtime: &RuntimeInfo,
    rt: Arc<RemoteRuntimeService>,
    bins: &Binaries,
) -> Vec<RunRecord> {
    let mut records = Vec::new();
    for repeat in 0..opts.repeat {
        for &pods in &opts.pods {
            if !opts.skip_floor {
                records.push(floor_run(opts, runtime, rt.clone(), pods, repeat).await);
            }
            let kubelets = [
                (Variant::KubeletRs, &bins.kubelet_rs),
                (Variant::Upstream, &bins.upstream),
            ];
            for (variant, bin) in kubelets {
                if let Some(bin) = bin {
                    let r = kubelet_run(opts, runtime, rt.clone(), (variant, bin), pods, repeat);
                    records.push(r.await);
                }
            }
        }
    }
    records
}

/// Where the floor's pod log directories go (removed after each floor run).
pub fn floor_log_root(opts: &Options) -> PathBuf {
    let dir = format!("floor-logs-{}", std::process::id());
    opts.work_dir.join(dir)
}

fn empty_record(variant: Variant, pods: usize, repeat: usize) -> RunRecord {
    RunRecord {
        variant,
        pods,
        repeat,
        workers: None,
        startup: None,
        phases: None,
        teardown_stopped_s: None,
        teardown_gone_s: None,
        loadavg_before: loadavg(),
        busy_before: None,
        steps: Vec::new(),
        error: None,
        latencies_s: Vec::new(),
        startup_cpu: None,
        steady: None,
        idle: None,
    }
}

fn tag(variant: Variant, pods: usize, repeat: usize) -> String {
    format!("{}{pods}r{repeat}", variant.tag())
}

async fn floor_run(
    opts: &Options,
    runtime: &RuntimeInfo,
    rt: Arc<RemoteRuntimeService>,
    pods: usize,
    repeat: usize,
) -> RunRecord {
    let workers = opts.workers.unwrap_or_else(|| default_workers(pods));
    let mut rec = empty_record(Variant::Floor, pods, repeat);
    rec.workers = Some(workers);
    match wait_quiet(&rt, opts.quiet_timeout).await {
        Ok(busy) if !busy.is_quiet() => rec.busy_before = Some(busy.describe()),
        Ok(_) => {}
        Err(e) => {
            rec.error = Some(e.to_string());
            progress(&rec);
            return rec;
        }
    }
    rec.loadavg_before = loadavg();
    let log_root = floor_log_root(opts);
    let cfg = FloorConfig {
        pods,
        workers,
        tag: tag(Variant::Floor, pods, repeat),
        image: runtime.busybox_image.clone(),
        log_root: log_root.clone(),
    };
    match run_floor(rt, cfg).await {
        Ok(o) => {
            rec.startup = Some(o.startup);
            rec.phases = Some(o.phases);
            rec.teardown_stopped_s = Some(o.teardown_stopped.as_secs_f64());
            rec.teardown_gone_s = Some(o.teardown_gone.as_secs_f64());
        }
        Err(e) => rec.error = Some(e.to_string()),
    }
    discard_if_disturbed(&mut rec, opts.allow_foreign_pods);
    let _ = std::fs::remove_dir_all(&log_root);
    progress(&rec);
    rec
}

async fn kubelet_run(
    opts: &Options,
    runtime: &RuntimeInfo,
    rt: Arc<RemoteRuntimeService>,
    (variant, binary): (Variant, &Path),
    pods: usize,
    repeat: usize,
) -> RunRecord {
    let mut rec = empty_record(variant, pods, repeat);
    match wait_quiet(&rt, opts.quiet_timeout).await {
        Ok(busy) if !busy.is_quiet() => {
            rec.busy_before = Some(busy.describe());
            if !opts.allow_foreign_pods {
                rec.error = Some(refused_message(&busy, opts.quiet_timeout));
                progress(&rec);
                return rec;
            }
        }
        Ok(_) => {}
        Err(e) => {
            rec.error = Some(e.to_string());
            progress(&rec);
            return rec;
        }
    }
    rec.loadavg_before = loadavg();
    let cfg = KubeletRunConfig {
        binary: binary.to_owned(),
        endpoint: runtime.endpoint.clone(),
        image: runtime.busybox_image.clone(),
        pods,
        tag: tag(variant, pods, repeat),
        work_dir: opts.work_dir.clone(),
        healthz_timeout: opts.timeout,
        settle: opts.settle,
        timeout: opts.timeout,
        poll: opts.poll,
        gone_timeout: opts.gone_timeout,
        keep: opts.keep,
        template: crate::manifest::PodTemplate::Sleep,
        probe_cost: None,
        event_detect: None,
        scrape: None,
        extra_args: Vec::new(),
        steady: opts.steady,
        idle_window: opts.idle_window,
        preplaced: opts.preplaced,
    };
    match run_kubelet_variant(rt, &cfg).await {
        Ok(o) => {
            rec.startup = Some(o.startup);
            rec.teardown_stopped_s = Some(o.teardown_stopped.as_secs_f64());
            rec.teardown_gone_s = o.teardown_gone.map(|d| d.as_secs_f64());
            rec.steps = o.steps;
            rec.latencies_s = o.latencies_s;
            rec.startup_cpu = Some(o.startup_cpu);
            rec.steady = o.steady;
            rec.idle = o.idle;
        }
        Err(e) => rec.error = Some(e.to_string()),
    }
    discard_if_disturbed(&mut rec, opts.allow_foreign_pods);
    progress(&rec);
    rec
}

/// A kubelet that started during the run may have killed the benchmark's pods (as orphans)
/// and took CPU: such a result is discarded, unless `--allow-foreign-pods` was given (then it
/// is kept with a note in `busy_before`).
fn discard_if_disturbed(rec: &mut RunRecord, allow_foreign_pods: bool) {
    let others = crate::env::other_kubelets(&[]);
    if rec.error.is_none() && !others.is_empty() && allow_foreign_pods {
        let note = format!("other kubelets at the end of the run ({others:?})");
        rec.busy_before = Some(match rec.busy_before.take() {
            Some(b) => format!("{b}; {note}"),
            None => note,
        });
    } else if rec.error.is_none() && !others.is_empty() {
        rec.startup = None;
        rec.error = Some(format!(
            "result discarded: another kubelet was running when the run ended ({others:?})"
        ));
    }
}

fn progress(r: &RunRecord) {
    let what = format!(
        "[bench] N={} {} run {}",
        r.pods,
        r.variant.label(),
        r.repeat + 1
    );
    match (&r.startup, &r.error) {
        (Some(s), _) => eprintln!(
            "{what}: makespan {:.2} s, p50 {:.2} s, p99 {:.2} s, teardown {} s (load {})",
            s.makespan_s,
            s.p50_s,
            s.p99_s,
            r.teardown_stopped_s
                .map_or("?".into(), |t| format!("{t:.2}")),
            r.loadavg_before
        ),
        (None, Some(e)) => eprintln!("{what}: FAILED: {e}"),
        (None, None) => eprintln!("{what}: no result"),
    }
    if let (Some(busy), None) = (&r.busy_before, &r.error) {
        eprintln!("{what}: ran while there were {busy}");
    }
}

/// The JSON document written to `--out`.
#[derive(Debug, Serialize)]
pub struct JsonReport {
    /// The command line.
    pub command: Vec<String>,
    /// `CONTAINER_RUNTIME_ENDPOINT`.
    pub endpoint: String,
    /// CPUs online.
    pub cpus: usize,
    /// kubelet-rs binary.
    pub kubelet_rs: Option<String>,
    /// Upstream kubelet binary.
    pub upstream: Option<String>,
    /// Skips and warnings.
    pub notes: Vec<String>,
    /// Every run.
    pub runs: Vec<RunRecord>,
    /// Medians per (N, variant).
    pub summary: Vec<Aggregate>,
}

impl JsonReport {
    /// The report of `runs` made by the command `program` with `args` on `runtime` with
    /// `bins`; the summary is their [`aggregate`](crate::report::aggregate).
    pub fn new(
        program: &str,
        args: &[String],
        runtime: &RuntimeInfo,
        bins: &Binaries,
        runs: Vec<RunRecord>,
    ) -> Self {
        let summary = crate::report::aggregate(&runs);
        JsonReport {
            command: std::iter::once(program.to_owned())
                .chain(args.iter().cloned())
                .collect(),
            endpoint: runtime.endpoint.clone(),
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            kubelet_rs: bins.kubelet_rs.as_ref().map(|p| p.display().to_string()),
            upstream: bins.upstream.as_ref().map(|p| p.display().to_string()),
            notes: bins.notes.clone(),
            runs,
            summary,
        }
    }

    /// Writes the report, pretty-printed, to `path`.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("writing {}: {e}", path.display()))
    }
}
