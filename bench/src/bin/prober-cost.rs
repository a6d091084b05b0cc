//! `prober-cost`: issue 9's benchmark. For kubelet-rs and the upstream kubelet in turn, on
//! the private containerd of `hack/runtime-up.sh`: start the kubelet standalone with N static
//! web pods (default 100; busybox `httpd`), each with an exec readiness probe and an httpGet
//! liveness probe every second, wait until every pod is Ready with a pod IP, let the probes
//! warm up, and measure the kubelet's CPU-seconds per minute over a window
//! (`kubelet_bench::probe_cost`). As a like-for-like control, the same N pods without the
//! probes: the probe cost is the difference. Prints a markdown table; `--out FILE` writes the
//! JSON. A run in which a pod is not Ready, a container restarted or a probe type did not run
//! and succeed is an error, not a number (exit status 1).
//!
//! ```sh
//! flock -w 1500 /var/lib/kubelet-rs-test/dev-runtime.lock \
//!   $CARGO_TARGET_DIR/release/prober-cost --kubelet BUILD/kubelet-rs \
//!     --upstream _output/bin/kubelet [--pods 100] [--warmup-s 20] [--window-s 60] \
//!     [--out /tmp/prober-cost.json]
//! ```
//!
//! Without `--upstream` only kubelet-rs runs. `--no-control` skips the runs without probes;
//! `--profile PREFIX [--call-graph MODE]` records `perf record` of each kubelet during each
//! window to `PREFIX.<kubelet>.<probes|control>`. Both kubelets get
//! `--containerd=<the private containerd's socket>`, as in `stats-scrape` (upstream's
//! cAdvisor then sees the containers as on a standard node; kubelet-rs ignores the flag).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use kubelet_bench::kubelet::{KubeletRunConfig, run_kubelet_variant};
use kubelet_bench::manifest::PodTemplate;
use kubelet_bench::probe_cost::{ProbeCostConfig, ProbeCostOutcome};
use kubelet_bench::{cri_ops, env};

struct Opts {
    kubelet: PathBuf,
    upstream: Option<PathBuf>,
    pods: usize,
    warmup: Duration,
    window: Duration,
    ready_timeout: Duration,
    control: bool,
    out: Option<PathBuf>,
    profile: Option<PathBuf>,
    call_graph: String,
}

fn parse(args: &[String]) -> anyhow::Result<Opts> {
    let mut o = Opts {
        kubelet: PathBuf::new(),
        upstream: None,
        pods: 100,
        warmup: Duration::from_secs(20),
        window: Duration::from_secs(60),
        ready_timeout: Duration::from_secs(180),
        control: true,
        out: None,
        profile: None,
        call_graph: "fp".into(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().context(format!("{a} needs a value"));
        match a.as_str() {
            "--kubelet" => o.kubelet = PathBuf::from(value()?),
            "--upstream" => o.upstream = Some(PathBuf::from(value()?)),
            "--pods" => o.pods = value()?.parse()?,
            "--warmup-s" => o.warmup = Duration::from_secs(value()?.parse()?),
            "--window-s" => o.window = Duration::from_secs(value()?.parse()?),
            "--ready-timeout-s" => o.ready_timeout = Duration::from_secs(value()?.parse()?),
            "--no-control" => o.control = false,
            "--out" => o.out = Some(PathBuf::from(value()?)),
            "--profile" => o.profile = Some(PathBuf::from(value()?)),
            "--call-graph" => o.call_graph = value()?.clone(),
            other => bail!("unknown argument {other:?}"),
        }
    }
    if o.kubelet.as_os_str().is_empty() {
        bail!("--kubelet PATH is required");
    }
    if o.pods == 0 || o.window.is_zero() {
        bail!("--pods and --window-s must be positive");
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args) {
        Ok(o) => env::block_on_main("prober-cost", run(o, args)),
        Err(e) => {
            eprintln!("prober-cost: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// One kubelet run: with or without probes.
#[derive(serde::Serialize)]
struct Run {
    kubelet: &'static str,
    probes: bool,
    outcome: Option<ProbeCostOutcome>,
    error: Option<String>,
}

/// `<binary> --version`, first line (or the error).
fn version(binary: &Path) -> String {
    match std::process::Command::new(binary).arg("--version").output() {
        Ok(o) => String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
        Err(e) => format!("{}: {e}", binary.display()),
    }
}

async fn run(o: Opts, args: Vec<String>) -> anyhow::Result<bool> {
    let repo = env::repo_root();
    let runtime = env::runtime_up(&repo)?;
    let cri = cri_ops::connect(&runtime.endpoint).await?;
    cri_ops::cleanup_leftovers(&cri).await?;
    let mut kubelets = vec![("kubelet-rs", o.kubelet.clone())];
    if let Some(u) = &o.upstream {
        kubelets.push(("upstream", u.clone()));
    }
    let mut modes = vec![true];
    if o.control {
        modes.push(false);
    }
    let mut runs: Vec<Run> = Vec::new();
    for &probes in &modes {
        for (label, binary) in &kubelets {
            let what = if probes { "probes" } else { "control" };
            eprintln!(
                "[bench] {label}, {} pods, {what}: load average {}",
                o.pods,
                env::loadavg()
            );
            // The upstream kubelet's image GC can remove the pause image (see the README), so
            // `hack/runtime-up.sh` (idempotent) re-imports the images before each run.
            let result = match env::runtime_up(&repo) {
                Err(e) => Err(format!("hack/runtime-up.sh: {e}")),
                Ok(_) => {
                    let cfg = KubeletRunConfig {
                        probe_cost: Some(ProbeCostConfig {
                            port: 0,
                            pods: Vec::new(),
                            probes,
                            ready_timeout: o.ready_timeout,
                            warmup: o.warmup,
                            window: o.window,
                            profile: o
                                .profile
                                .as_ref()
                                .map(|p| PathBuf::from(format!("{}.{label}.{what}", p.display()))),
                            call_graph: o.call_graph.clone(),
                        }),
                        ..KubeletRunConfig::measurement(
                            binary.clone(),
                            &runtime,
                            o.pods,
                            format!("p{}{}{}", &label[..1], &what[..1], o.pods),
                            PodTemplate::Web { probes },
                            vec![env::containerd_flag(&runtime.endpoint)],
                        )
                    };
                    run_kubelet_variant(cri.clone(), &cfg)
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|out| out.probe_cost.ok_or_else(|| "no window measured".into()))
                }
            };
            // A window whose pods or probes were not healthy keeps its figures but is an error.
            let (outcome, error) = match result {
                Ok(r) if r.problems.is_empty() => (Some(r), None),
                Ok(r) => {
                    let e = r.problems.join("; ");
                    (Some(r), Some(e))
                }
                Err(e) => (None, Some(e)),
            };
            if let Some(r) = &outcome {
                eprintln!(
                    "[bench] {label} {what}: {:.2} CPU-s/min (load {} → {})",
                    r.cpu_s_per_min, r.loadavg_start, r.loadavg_end
                );
            }
            if let Some(e) = &error {
                eprintln!("[bench] {label} {what}: ERROR {e}");
            }
            runs.push(Run {
                kubelet: label,
                probes,
                outcome,
                error,
            });
        }
    }
    let summary = summarize(&runs);
    print_tables(&runs, &summary);
    if let Some(out) = &o.out {
        let json = serde_json::json!({
            "command": args,
            "pods": o.pods,
            "warmup_s": o.warmup.as_secs(),
            "window_s": o.window.as_secs(),
            "cpus": std::thread::available_parallelism().map_or(0, usize::from),
            "kubelet_rs": { "path": o.kubelet, "version": version(&o.kubelet) },
            "upstream": o.upstream.as_ref().map(|u| serde_json::json!({
                "path": u, "version": version(u),
            })),
            "not_counted": "the runtime's CPU (containerd, shims and runc executing ExecSync; httpd answering the HTTP probes)",
            "runs": runs,
            "summary": summary,
        });
        std::fs::write(out, serde_json::to_string_pretty(&json)? + "\n")?;
    }
    Ok(runs.iter().all(|r| r.error.is_none()))
}

/// One metric of the summary: kubelet-rs, upstream, ratio.
#[derive(serde::Serialize)]
struct Row {
    metric: &'static str,
    kubelet_rs: Option<f64>,
    upstream: Option<f64>,
    ratio: Option<f64>,
}

fn cpu(runs: &[Run], kubelet: &str, probes: bool) -> Option<f64> {
    runs.iter()
        .find(|r| r.kubelet == kubelet && r.probes == probes && r.error.is_none())
        .and_then(|r| r.outcome.as_ref())
        .map(|o| o.cpu_s_per_min)
}

/// Successful probes per second (both types) of the probed run.
fn probes_per_s(runs: &[Run], kubelet: &str) -> Option<f64> {
    runs.iter()
        .find(|r| r.kubelet == kubelet && r.probes && r.error.is_none())
        .and_then(|r| r.outcome.as_ref())
        .map(|o| o.probe_rates.liveness_ok + o.probe_rates.readiness_ok)
}

fn summarize(runs: &[Run]) -> Vec<Row> {
    let cost = |k: &str| Some(cpu(runs, k, true)? - cpu(runs, k, false)?);
    // CPU-s/min ÷ probes/min, in ms.
    let per_probe = |k: &str| Some(cost(k)? * 1000.0 / (probes_per_s(runs, k)? * 60.0));
    let row = |metric, rs: Option<f64>, up: Option<f64>| Row {
        metric,
        kubelet_rs: rs,
        upstream: up,
        ratio: rs.zip(up).and_then(|(a, b)| (b > 0.0).then(|| a / b)),
    };
    vec![
        row(
            "CPU-s/min with probes (total)",
            cpu(runs, "kubelet-rs", true),
            cpu(runs, "upstream", true),
        ),
        row(
            "CPU-s/min without probes (control)",
            cpu(runs, "kubelet-rs", false),
            cpu(runs, "upstream", false),
        ),
        row(
            "probe cost: with − without (CPU-s/min)",
            cost("kubelet-rs"),
            cost("upstream"),
        ),
        row(
            "probe cost per probe (ms of kubelet CPU)",
            per_probe("kubelet-rs"),
            per_probe("upstream"),
        ),
    ]
}

/// The 1-minute load average of a `/proc/loadavg` line.
fn load1(loadavg: &str) -> &str {
    loadavg.split_whitespace().next().unwrap_or("?")
}

fn print_tables(runs: &[Run], summary: &[Row]) {
    let f = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}"));
    println!(
        "| kubelet | pods | probes | CPU-s/min | liveness ok/s | readiness ok/s | failed/s | all Ready after (s) | 1-min load avg (start → end of window) |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---|");
    for r in runs {
        let probes = if r.probes { "yes" } else { "no (control)" };
        match (&r.outcome, &r.error) {
            (Some(o), None) => {
                let rate = &o.probe_rates;
                println!(
                    "| {} | {} | {probes} | {:.2} | {:.1} | {:.1} | {:.2} | {:.1} | {} → {} |",
                    r.kubelet,
                    o.pods,
                    o.cpu_s_per_min,
                    rate.liveness_ok,
                    rate.readiness_ok,
                    rate.liveness_failed + rate.readiness_failed,
                    o.all_ready_s,
                    load1(&o.loadavg_start),
                    load1(&o.loadavg_end)
                );
            }
            (o, e) => println!(
                "| {} | {} | {probes} | ERROR: {} (kubelet {}) | {} | {} | {} | | |",
                r.kubelet,
                o.as_ref().map_or(0, |o| o.pods),
                e.as_deref().unwrap_or("no outcome").replace('|', "\\|"),
                o.as_ref().map_or_else(
                    || "—".to_owned(),
                    |o| format!("{:.2} CPU-s/min", o.cpu_s_per_min)
                ),
                o.as_ref()
                    .map_or_else(String::new, |o| format!("{:.1}", o.probe_rates.liveness_ok)),
                o.as_ref().map_or_else(String::new, |o| format!(
                    "{:.1}",
                    o.probe_rates.readiness_ok
                )),
                o.as_ref().map_or_else(String::new, |o| format!(
                    "{:.2}",
                    o.probe_rates.liveness_failed + o.probe_rates.readiness_failed
                )),
            ),
        }
    }
    println!();
    println!("| metric | kubelet-rs | upstream | kubelet-rs / upstream |");
    println!("|---|---:|---:|---:|");
    for row in summary {
        println!(
            "| {} | {} | {} | {} |",
            row.metric,
            f(row.kubelet_rs),
            f(row.upstream),
            f(row.ratio)
        );
    }
    println!();
    println!(
        "Kubelet CPU only (`utime + stime` of the kubelet process): the runtime's CPU (containerd, shims and runc executing ExecSync for the exec probes) and httpd's are not counted for either kubelet."
    );
}
