//! `suite`: every benchmark of the crate as one run (issue #11), written as `results.json`,
//! `results.md` and plots in one directory. See `bench/README.md`, "The suite".
//!
//! ```sh
//! cargo run --release -p kubelet-bench --bin suite -- --out-dir bench/results/<date>-suite
//! cargo run --release -p kubelet-bench --bin suite -- --quick            # CI regression check
//! cargo run --release -p kubelet-bench --bin suite -- --quick --record-baseline
//! ```
//!
//! The static-pods runs (B4, B8) are made in this process through the library
//! (`kubelet_bench::suite::run_all`, the same code as the `static-pods` command); the cluster
//! runs (B1–B3, B5, B7 in cluster mode) by the sibling `cluster-node` binary, whose JSON is read
//! back (it drives the control plane of `hack/cluster-up.sh` and its own node containerds).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{Context as _, bail};
use kubelet_bench::cli::Options;
use kubelet_bench::env;
use kubelet_bench::event_detect::{EventBenchOptions, b9_not_measured, b9_rows, run_interleaved};
use kubelet_bench::eviction_detect::EvictionRun;
use kubelet_bench::plots::{self, LinePlot, Series};
use kubelet_bench::report::{RunRecord, Variant, aggregate};
use kubelet_bench::suite::{JsonReport, resolve_binaries, run_all_on_the_runtime};
use kubelet_bench::suite_report::{
    self as sr, Baseline, GoalKind, QuickFigure, Row, Verdict, compare, quick_figures,
};

const USAGE: &str = "\
usage: suite [--out-dir DIR] [--quick [--record-baseline [--provisional NOTE]]]
             [--kubelet PATH] [--upstream PATH] [--repeat N] [--no-cluster]
             [--cluster-idle-seconds S] [--baseline FILE] [--allow-foreign-pods]
             [--no-event-detection] [--no-eviction-detection] [--no-standalone]
             [--standalone-idle-seconds S]
             [--no-steady] [--steady-seconds S] [--steady-repeat N] [--steady-pods N]...

  --out-dir DIR          where results.json, results.md, the plots and the raw JSON of each
                         command go (default bench/results/<UTC date>-suite; --quick: a
                         directory under /var/lib/kubelet-rs-test/bench)
  --quick                CI mode (< 5 min): static pods N=10, floor / kubelet-rs / upstream,
                         5 interleaved repetitions; ratios compared with --baseline; exit 1 on
                         a regression beyond the noise band, naming the figure
  --record-baseline      with --quick: write this run's figures to --baseline instead
  --provisional NOTE     with --record-baseline: mark the baseline provisional (busy machine)
  --baseline FILE        default bench/results/quick-baseline.json
  --kubelet PATH         kubelet-rs (default $CARGO_TARGET_DIR/release/kubelet-rs)
  --upstream PATH        upstream kubelet (default $KRS_CLUSTER_BIN/kubelet, else
                         _output/bin/kubelet, if present)
  --repeat N             repetitions, interleaved (default 3; --quick: 5)
  --no-cluster           skip cluster-node (B1/B2/B3/B5/B7 cluster rows become 'not measured')
  --cluster-idle-seconds idle period of cluster-node (default 150)
  --no-event-detection   skip B9 (container killed from outside → /pods; full run only)
  --no-eviction-detection
                         skip E1 (issue #10: memory threshold crossed → eviction, through the
                         sibling eviction-detection binary; full run with the cluster only)
  --no-standalone        skip the standalone start and idle runs (B3 exec → first static pod
                         RUNNING; B1/B2 with no pod; full run only)
  --standalone-idle-seconds S
                         idle window of the standalone runs with no pod (default 150)
  --allow-foreign-pods   passed to the static-pods runs (only with the runtime lock held)
  --no-steady            skip the steady-state runs (B6 at 30 and 100 pods, B10 at 110 pods;
                         not made in --quick mode)
  --steady-seconds S     steady-state window after all RUNNING + 30 s (default 300); with
                         --quick, given explicitly, the steady-state runs are made too
  --steady-pods N        steady-state batch size, repeatable (default 30, 100 (B6) and 110
                         (B10)); a size below 110 gives B6 rows, 110 and more B10 rows
  --steady-repeat N      repetitions of the steady-state runs (default: --repeat); each
                         kubelet run takes about S + 60 s, i.e. 3 sizes x 2 kubelets x N runs
";

#[derive(Debug)]
struct SuiteOptions {
    out_dir: Option<PathBuf>,
    quick: bool,
    record_baseline: bool,
    provisional: Option<String>,
    baseline: Option<PathBuf>,
    kubelet: Option<PathBuf>,
    upstream: Option<PathBuf>,
    repeat: usize,
    cluster: bool,
    cluster_idle: u64,
    allow_foreign_pods: bool,
    event_detection: bool,
    eviction_detection: bool,
    standalone: bool,
    standalone_idle_seconds: f64,
    steady: bool,
    steady_seconds: f64,
    steady_repeat: usize,
    steady_pods: Vec<usize>,
}

fn parse(args: &[String]) -> anyhow::Result<Option<SuiteOptions>> {
    let mut o = SuiteOptions {
        out_dir: None,
        quick: false,
        record_baseline: false,
        provisional: None,
        baseline: None,
        kubelet: None,
        upstream: None,
        repeat: 0,
        cluster: true,
        cluster_idle: 150,
        allow_foreign_pods: false,
        event_detection: true,
        eviction_detection: true,
        standalone: true,
        standalone_idle_seconds: 150.0,
        steady: true,
        steady_seconds: 300.0,
        steady_repeat: 0,
        steady_pods: Vec::new(),
    };
    let mut explicit_steady = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "--out-dir" => o.out_dir = Some(PathBuf::from(val()?)),
            "--quick" => o.quick = true,
            "--record-baseline" => o.record_baseline = true,
            "--provisional" => o.provisional = Some(val()?.clone()),
            "--baseline" => o.baseline = Some(PathBuf::from(val()?)),
            "--kubelet" => o.kubelet = Some(PathBuf::from(val()?)),
            "--upstream" => o.upstream = Some(PathBuf::from(val()?)),
            "--repeat" => {
                o.repeat = val()?.parse().context("--repeat")?;
                if o.repeat == 0 {
                    bail!("--repeat must be at least 1");
                }
            }
            "--no-cluster" => o.cluster = false,
            "--cluster-idle-seconds" => {
                o.cluster_idle = val()?.parse().context("--cluster-idle-seconds")?
            }
            "--allow-foreign-pods" => o.allow_foreign_pods = true,
            "--no-event-detection" => o.event_detection = false,
            "--no-eviction-detection" => o.eviction_detection = false,
            "--no-standalone" => o.standalone = false,
            "--standalone-idle-seconds" => {
                o.standalone_idle_seconds = val()?.parse().context("--standalone-idle-seconds")?;
                if !(o.standalone_idle_seconds.is_finite() && o.standalone_idle_seconds > 0.0) {
                    bail!("--standalone-idle-seconds must be more than 0");
                }
            }
            "--no-steady" => o.steady = false,
            "--steady-seconds" => {
                o.steady_seconds = val()?.parse().context("--steady-seconds")?;
                explicit_steady = true;
                if !(o.steady_seconds.is_finite() && o.steady_seconds > 0.0) {
                    bail!("--steady-seconds must be more than 0");
                }
            }
            "--steady-repeat" => {
                o.steady_repeat = val()?.parse().context("--steady-repeat")?;
                if o.steady_repeat == 0 {
                    bail!("--steady-repeat must be at least 1");
                }
            }
            "--steady-pods" => {
                let n: usize = val()?.parse().context("--steady-pods")?;
                if n == 0 {
                    bail!("--steady-pods must be at least 1");
                }
                o.steady_pods.push(n);
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    if o.repeat == 0 {
        // Default: 3 for a full run; 5 for the quick mode, whose N=10 runs are short and whose
        // verdict rests on the median ratio (a single disturbed repetition must not move it).
        o.repeat = if o.quick { 5 } else { 3 };
    }
    if o.steady_repeat == 0 {
        o.steady_repeat = o.repeat;
    }
    if o.quick && !explicit_steady {
        o.steady = false;
    }
    if o.steady_pods.is_empty() {
        o.steady_pods = vec![30, 100, sr::B10_PODS];
    }
    if o.record_baseline && !o.quick {
        bail!("--record-baseline needs --quick");
    }
    if o.provisional.is_some() && !o.record_baseline {
        bail!("--provisional needs --record-baseline");
    }
    Ok(Some(o))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match parse(&args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("suite: {e:#}");
            return ExitCode::from(2);
        }
    };
    env::block_on_main("suite", run(opts, args))
}

/// Notes (and failures) of the runs of one phase: `what N=… kubelet run K failed: …`, or that
/// it ran while the runtime was busy.
fn note_runs(what: &str, recs: &[RunRecord], notes: &mut Vec<String>, failed: &mut Vec<String>) {
    for r in recs {
        let run = format!(
            "{what} N={} {} run {}",
            r.pods,
            r.variant.label(),
            r.repeat + 1
        );
        if let Some(e) = &r.error {
            let msg = format!("{run} failed: {e}");
            notes.push(msg.clone());
            failed.push(msg);
        } else if let Some(busy) = &r.busy_before {
            notes.push(format!("{run} ran while there were {busy}"));
        }
    }
}

fn git_commit(repo: &Path) -> String {
    let out = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let head = out(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty =
        out(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    if dirty { format!("{head}-dirty") } else { head }
}

fn utc_now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

async fn run(opts: SuiteOptions, args: Vec<String>) -> anyhow::Result<bool> {
    let repo = env::repo_root();
    let commit = git_commit(&repo);
    let started = utc_now();
    let out_dir = match (&opts.out_dir, opts.quick) {
        (Some(d), _) => d.clone(),
        (None, false) => repo.join(format!(
            "bench/results/{}-suite",
            jiff::Timestamp::now().strftime("%Y-%m-%d")
        )),
        (None, true) => PathBuf::from(format!(
            "/var/lib/kubelet-rs-test/bench/quick-{}",
            std::process::id()
        )),
    };
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    // The harness's Go binaries: $KRS_CLUSTER_BIN (hack/lib/cluster.sh) or _output/bin.
    let upstream = opts.upstream.clone().or_else(|| {
        let bin_dir = std::env::var_os("KRS_CLUSTER_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo.join("_output/bin"));
        let p = bin_dir.join("kubelet");
        p.is_file().then_some(p)
    });
    let pods: Vec<usize> = if opts.quick { vec![10] } else { vec![30, 100] };
    let sp_opts = Options {
        pods: pods.clone(),
        repeat: opts.repeat,
        kubelet: opts.kubelet.clone(),
        upstream: upstream.clone(),
        allow_foreign_pods: opts.allow_foreign_pods,
        // With --allow-foreign-pods there is nothing to wait for (the runs go ahead anyway).
        quiet_timeout: if opts.allow_foreign_pods {
            Duration::ZERO
        } else {
            Options::default().quiet_timeout
        },
        // The quick mode does not report "gone": do not wait 15 s for upstream's stopped
        // sandboxes (its container GC removes them a minute later).
        gone_timeout: if opts.quick {
            Duration::from_secs(2)
        } else {
            Options::default().gone_timeout
        },
        ..Options::default()
    };
    let mut notes: Vec<String> = Vec::new();
    let bins = resolve_binaries(&sp_opts, &repo).map_err(anyhow::Error::msg)?;
    notes.extend(bins.notes.iter().cloned());
    if std::env::var_os("KRS_TEST_SYNC_DELAY_MS").is_some() {
        notes.push(format!(
            "KRS_TEST_SYNC_DELAY_MS={} was set: kubelet-rs ran with the test-only SyncPod slowdown",
            std::env::var("KRS_TEST_SYNC_DELAY_MS").unwrap_or_default()
        ));
    }

    // 1. static pods: B4, B8 (floor, kubelet-rs, upstream interleaved per repetition).
    eprintln!("[suite] static pods {pods:?}, {} repetitions", opts.repeat);
    let (runtime, records) = run_all_on_the_runtime(&repo, &sp_opts, &bins, "[suite]").await?;
    for r in records.iter().filter(|r| r.error.is_none()) {
        if let Some(busy) = &r.busy_before {
            notes.push(format!(
                "N={} {} run {} ran while there were {busy}",
                r.pods,
                r.variant.label(),
                r.repeat + 1
            ));
        }
    }
    let mut failed: Vec<String> = records
        .iter()
        .filter_map(|r| {
            let e = r.error.as_ref()?;
            Some(format!(
                "N={} {} run {} failed: {e}",
                r.pods,
                r.variant.label(),
                r.repeat + 1
            ))
        })
        .collect();
    notes.extend(failed.iter().cloned());
    let sp_json = out_dir.join("static-pods.json");
    JsonReport::new("suite", &args, &runtime, &bins, records.clone())
        .write(&sp_json)
        .map_err(anyhow::Error::msg)?;

    // 1b. steady state: B6 (30, 100 pods), B10 (110 pods), through the CRI counting proxy.
    let steady_pods: Vec<usize> = opts.steady_pods.clone();
    let steady_records: Vec<RunRecord> = if opts.steady {
        let steady_opts = Options {
            pods: steady_pods.clone(),
            repeat: opts.steady_repeat,
            steady: Some(kubelet_bench::steady::SteadyConfig::with_window(
                Duration::from_secs_f64(opts.steady_seconds),
            )),
            // 110 pods on a 2-CPU machine: more than the 60 s of the B4 runs.
            timeout: Duration::from_secs(300),
            ..sp_opts.clone()
        };
        eprintln!(
            "[suite] steady state {steady_pods:?}, {} s windows, {} repetitions",
            opts.steady_seconds, opts.steady_repeat
        );
        let (_, recs) = run_all_on_the_runtime(&repo, &steady_opts, &bins, "[suite]").await?;
        note_runs("steady", &recs, &mut notes, &mut failed);
        let steady_json = out_dir.join("steady-pods.json");
        JsonReport::new("suite", &args, &runtime, &bins, recs.clone())
            .write(&steady_json)
            .map_err(anyhow::Error::msg)?;
        recs
    } else {
        Vec::new()
    };

    // 1c. standalone start and idle (full run only): B3 (the one manifest in place before
    // exec → its container RUNNING) and B1/B2 with no pod (an idle window before any manifest).
    let standalone = if opts.standalone && !opts.quick {
        let one = Options {
            pods: vec![1],
            skip_floor: true,
            ..sp_opts.clone()
        };
        // B3's floor: the same pod through CRI alone (RunPodSandbox + Create + Start).
        let start_opts = Options {
            preplaced: true,
            skip_floor: false,
            ..one.clone()
        };
        let idle_opts = Options {
            idle_window: Some(kubelet_bench::steady::SteadyConfig::with_window(
                Duration::from_secs_f64(opts.standalone_idle_seconds),
            )),
            ..one
        };
        eprintln!(
            "[suite] standalone: exec → first static pod, then {} s idle windows with no pod, {} repetitions",
            opts.standalone_idle_seconds, opts.repeat
        );
        let (_, start) = run_all_on_the_runtime(&repo, &start_opts, &bins, "[suite]").await?;
        note_runs("standalone start", &start, &mut notes, &mut failed);
        let (_, idle) = run_all_on_the_runtime(&repo, &idle_opts, &bins, "[suite]").await?;
        note_runs("standalone idle", &idle, &mut notes, &mut failed);
        for (file, recs) in [
            ("standalone-start.json", &start),
            ("standalone-idle.json", &idle),
        ] {
            JsonReport::new("suite", &args, &runtime, &bins, recs.clone())
                .write(&out_dir.join(file))
                .map_err(anyhow::Error::msg)?;
        }
        Some((start, idle))
    } else {
        None
    };

    // 1d. B9 event detection (full run only), in-process on the same runtime.
    let b9 = if opts.event_detection && !opts.quick {
        let b9_opts = EventBenchOptions {
            repeat: opts.repeat,
            allow_foreign_pods: opts.allow_foreign_pods,
            quiet_timeout: sp_opts.quiet_timeout,
            ..EventBenchOptions::default()
        };
        eprintln!(
            "[suite] B9 event detection: {} kills per run, {} repetitions",
            b9_opts.kills, b9_opts.repeat
        );
        let cri = kubelet_bench::cri_ops::connect(&runtime.endpoint).await?;
        let runs = tokio::select! {
            r = run_interleaved(&repo, &b9_opts, &runtime, cri.clone(), &bins, "[suite]") => r,
            _ = tokio::signal::ctrl_c() => {
                eprintln!("[suite] interrupted: cleaning up");
                kubelet_bench::cri_ops::cleanup_leftovers(&cri).await?;
                bail!("interrupted");
            }
        };
        for r in &runs {
            if let Some(e) = &r.error {
                let msg = format!("B9 {} run {} failed: {e}", r.variant.label(), r.repeat + 1);
                notes.push(msg.clone());
                failed.push(msg);
            } else if let Some(busy) = &r.busy_before {
                notes.push(format!(
                    "B9 {} run {} ran while there were {busy}",
                    r.variant.label(),
                    r.repeat + 1
                ));
            }
        }
        let path = out_dir.join("event-detection.json");
        let doc = serde_json::json!({ "kills": b9_opts.kills, "runs": runs });
        std::fs::write(&path, serde_json::to_string_pretty(&doc)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        Some((b9_rows(&runs, b9_opts.kills), "event-detection.json"))
    } else {
        None
    };

    // 2. cluster mode (full run only): the sibling cluster-node binary.
    let cluster_doc = if opts.cluster && !opts.quick {
        run_cluster_node(&opts, &bins, &out_dir, &mut notes)
    } else {
        None
    };

    // 2b. issue #10's eviction detection (full run with the cluster only): the sibling
    // eviction-detection binary.
    let eviction_doc = if opts.cluster && opts.eviction_detection && !opts.quick {
        let out = out_dir.join("eviction-detection.json");
        let args = ["--repeat".to_string(), opts.repeat.to_string()];
        run_sibling("eviction-detection", &args, &bins, &out, &mut notes)
    } else {
        None
    };

    // 3. B12: stripped sizes.
    let size = size_row(&bins, &out_dir);

    // The table.
    let mut rows: Vec<Row> = sr::static_pod_rows(&records, &pods);
    if let Some(doc) = &cluster_doc {
        rows.extend(sr::cluster_rows(doc));
    }
    if let Some(runs) = eviction_doc
        .as_ref()
        .and_then(|d| d.get("runs"))
        .and_then(|r| serde_json::from_value::<Vec<EvictionRun>>(r.clone()).ok())
    {
        rows.extend(kubelet_bench::eviction_detect::rows(&runs));
    } else if !opts.quick {
        rows.push(Row::not_measured(
            "E1",
            "eviction detection: memory threshold crossed → Evicted event (issue #10)",
            Some((GoalKind::VsUpstream, 1.0)),
            if opts.cluster && opts.eviction_detection {
                "eviction-detection did not run (see the notes)"
            } else {
                "skipped (--no-eviction-detection or --no-cluster)"
            },
        ));
    }
    if !steady_records.is_empty() {
        let settle = kubelet_bench::steady::SteadyConfig::with_window(Duration::ZERO).settle;
        rows.extend(sr::steady_rows(
            &steady_records,
            &steady_pods,
            (opts.steady_seconds, settle.as_secs_f64()),
        ));
    }
    if let Some((start, idle)) = &standalone {
        rows.extend(sr::standalone_rows(start, idle, &steady_records));
    }
    rows.extend(sr::unmeasured_rows(
        cluster_doc.is_some(),
        !steady_records.is_empty(),
        standalone.is_some(),
    ));
    match &b9 {
        Some((b9_rows, _)) => rows.extend(b9_rows.iter().cloned()),
        None => rows.push(b9_not_measured(if opts.quick {
            "not part of the quick mode (run `event-detection` or a full suite)"
        } else {
            "skipped (--no-event-detection)"
        })),
    }
    if opts.quick {
        rows.retain(|r| !r.note.starts_with("not measured"));
    }
    rows.push(size);
    sr::sort_rows(&mut rows);

    // Quick mode: figures and verdicts.
    let figures = quick_figures(&records, pods.first().copied().unwrap_or(10));
    let mut quick_ok = true;
    let mut verdicts: Vec<Verdict> = Vec::new();
    let mut quick_lines: Vec<String> = Vec::new();
    if opts.quick {
        let baseline_path = opts
            .baseline
            .clone()
            .unwrap_or_else(|| repo.join("bench/results/quick-baseline.json"));
        if !figures.iter().any(|f| f.name.ends_with("kubelet-rs/floor")) {
            quick_ok = false;
            quick_lines.push("no kubelet-rs/floor figure: the runs failed (see above)".into());
        }
        if opts.record_baseline {
            if !failed.is_empty() {
                bail!("not recording a baseline from a run with failures");
            }
            let b = Baseline {
                provisional: opts.provisional.is_some(),
                note: opts.provisional.clone().unwrap_or_else(|| {
                    "recorded with `suite --quick --record-baseline` on a quiet machine".into()
                }),
                commit: commit.clone(),
                recorded_at: started.clone(),
                figures: figures.clone(),
            };
            std::fs::write(&baseline_path, serde_json::to_string_pretty(&b)? + "\n")
                .with_context(|| format!("writing {}", baseline_path.display()))?;
            quick_lines.push(format!("baseline recorded in {}", baseline_path.display()));
        } else {
            match read_baseline(&baseline_path) {
                Ok(b) => {
                    if b.provisional {
                        quick_lines.push(format!(
                            "WARNING: the baseline is provisional ({}): re-record it on a quiet machine",
                            b.note
                        ));
                    }
                    verdicts = compare(&b, &figures);
                    for v in &verdicts {
                        quick_lines.push(format!(
                            "{}: baseline {:.3}, now {:.3}, band +{:.0} % (limit {:.3}): {}",
                            v.name,
                            v.baseline,
                            v.current,
                            v.band * 100.0,
                            v.baseline * (1.0 + v.band),
                            if v.regressed { "REGRESSED" } else { "ok" }
                        ));
                    }
                    for f in &b.figures {
                        if !verdicts.iter().any(|v| v.name == f.name) {
                            quick_lines.push(format!(
                                "{}: not compared (not measured in this run)",
                                f.name
                            ));
                        }
                    }
                    if verdicts.iter().any(|v| v.regressed) {
                        quick_ok = false;
                    }
                }
                Err(e) => {
                    quick_ok = false;
                    quick_lines.push(format!("{e:#}"));
                }
            }
        }
        if !failed.is_empty() {
            quick_ok = false;
        }
    }

    // Plots.
    let plot_files = write_plots(
        &out_dir,
        (&records, &steady_records),
        cluster_doc.as_ref(),
        &mut notes,
    );
    let cri_by_method: serde_json::Value = steady_pods
        .iter()
        .map(|&n| {
            let of = |v: Variant| serde_json::json!(sr::cri_method_medians(&steady_records, n, v));
            (
                n.to_string(),
                serde_json::json!({
                    "kubelet-rs": of(Variant::KubeletRs),
                    "upstream": of(Variant::Upstream),
                }),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into();
    // Sections after the table: where each kubelet's start-up time went (B4 runs, from the
    // kubelets' `-v=2` logs), the CRI calls by method in the steady state.
    let mut sections = vec![kubelet_bench::report::render_steps(&aggregate(&records))];
    if !steady_records.is_empty() {
        sections.push(format!(
            "\n## CRI calls by method, steady state (B6, B10)\n\nMedians over the repetitions \
             of the calls per minute in the window, counted by the proxy in front of containerd.\n\n{}",
            sr::render_cri_methods(&steady_records, &steady_pods)
        ));
    }

    // results.json and results.md.
    let results = serde_json::json!({
        "commit": commit,
        "started": started,
        "finished": utc_now(),
        "command": std::iter::once("suite".to_owned()).chain(args).collect::<Vec<_>>(),
        "quick": opts.quick,
        "repetitions": opts.repeat,
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "loadavg_at_end": env::loadavg(),
        "kubelet_rs": bins.kubelet_rs.as_ref().map(|p| p.display().to_string()),
        "upstream": bins.upstream.as_ref().map(|p| p.display().to_string()),
        "rows": rows,
        "quick_figures": figures,
        "quick_verdicts": verdicts,
        "steady_seconds": (!steady_records.is_empty()).then_some(opts.steady_seconds),
        "cri_by_method_per_min": (!steady_records.is_empty()).then_some(cri_by_method),
        "plots": plot_files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "notes": notes,
        "raw": {
            "static_pods": "static-pods.json",
            "cluster_node": cluster_doc.as_ref().map(|_| "cluster-node.json"),
            "event_detection": b9.as_ref().map(|(_, f)| *f),
            "eviction_detection": eviction_doc.as_ref().map(|_| "eviction-detection.json"),
            "steady_pods": (!steady_records.is_empty()).then_some("steady-pods.json"),
        },
    });
    std::fs::write(
        out_dir.join("results.json"),
        serde_json::to_string_pretty(&results)? + "\n",
    )?;
    let md = render_md(
        &commit,
        &started,
        &opts,
        &rows,
        &figures,
        &quick_lines,
        &plot_files,
        &notes,
        &sections,
    );
    std::fs::write(out_dir.join("results.md"), &md)?;
    println!("{md}");
    eprintln!(
        "[suite] wrote {}/results.md and results.json",
        out_dir.display()
    );
    if opts.quick {
        let regressed: Vec<&str> = verdicts
            .iter()
            .filter(|v| v.regressed)
            .map(|v| v.name.as_str())
            .collect();
        if quick_ok {
            eprintln!("bench quick: PASS");
        } else if regressed.is_empty() {
            eprintln!("bench quick: FAIL ({})", quick_lines.join("; "));
        } else {
            eprintln!("bench quick: FAIL: regression in {}", regressed.join(", "));
        }
        return Ok(quick_ok);
    }
    Ok(failed.is_empty())
}

fn read_baseline(path: &Path) -> anyhow::Result<Baseline> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "no baseline at {} (record one with `suite --quick --record-baseline` on a quiet machine)",
            path.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn run_cluster_node(
    opts: &SuiteOptions,
    bins: &kubelet_bench::suite::Binaries,
    out_dir: &Path,
    notes: &mut Vec<String>,
) -> Option<serde_json::Value> {
    let args = [
        "--repeat".to_string(),
        opts.repeat.to_string(),
        "--idle-seconds".to_string(),
        opts.cluster_idle.to_string(),
    ];
    run_sibling(
        "cluster-node",
        &args,
        bins,
        &out_dir.join("cluster-node.json"),
        notes,
    )
}

/// Runs the benchmark binary `name` next to this one with `args`, `--out out` and the
/// kubelet-rs binary; its JSON, or `None` (with a note) when it could not run. A run that
/// exits with a failure still gives its JSON (the failed runs are in it).
fn run_sibling(
    name: &str,
    args: &[String],
    bins: &kubelet_bench::suite::Binaries,
    out: &Path,
    notes: &mut Vec<String>,
) -> Option<serde_json::Value> {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)));
    let Some(exe) = exe.filter(|e| e.is_file()) else {
        notes.push(format!(
            "{name} binary not found next to suite (cargo build --release -p kubelet-bench): its rows are not measured"
        ));
        return None;
    };
    let mut cmd = Command::new(&exe);
    cmd.args(args).arg("--out").arg(out);
    if let Some(k) = &bins.kubelet_rs {
        cmd.arg("--kubelet").arg(k);
    }
    eprintln!("[suite] {name}: {cmd:?}");
    match cmd.status() {
        Ok(s) if !s.success() => notes.push(format!(
            "{name} exited with {s}: some runs failed (see {})",
            out.file_name().unwrap_or_default().to_string_lossy()
        )),
        Ok(_) => {}
        Err(e) => {
            notes.push(format!("cannot run {}: {e}", exe.display()));
            return None;
        }
    }
    let text = std::fs::read_to_string(out).ok()?;
    serde_json::from_str(&text).ok()
}

/// Size in bytes of a stripped copy of `bin` (`strip` from binutils).
fn stripped_size(bin: &Path, tmp: &Path) -> Result<u64, String> {
    let copy = tmp.join(bin.file_name().unwrap_or_default());
    std::fs::copy(bin, &copy).map_err(|e| format!("copy {}: {e}", bin.display()))?;
    let st = Command::new("strip")
        .arg(&copy)
        .status()
        .map_err(|e| format!("strip: {e}"))?;
    if !st.success() {
        return Err(format!("strip {} failed: {st}", bin.display()));
    }
    let len = std::fs::metadata(&copy).map_err(|e| e.to_string())?.len();
    let _ = std::fs::remove_file(&copy);
    Ok(len)
}

fn size_row(bins: &kubelet_bench::suite::Binaries, out_dir: &Path) -> Row {
    let Ok(tmp) = tempfile::tempdir_in(out_dir) else {
        return Row::not_measured(
            "B12",
            "stripped binary size",
            None,
            "no temporary directory",
        );
    };
    let mut note = Vec::new();
    let mut size = |b: &Option<PathBuf>| match b {
        Some(b) => match stripped_size(b, tmp.path()) {
            Ok(n) => Some(n),
            Err(e) => {
                note.push(e);
                None
            }
        },
        None => None,
    };
    let rs = size(&bins.kubelet_rs);
    let up = size(&bins.upstream);
    note.insert(0, "`strip` of a copy of each binary".into());
    sr::size_row(rs, up, &note.join("; "))
}

fn write_plots(
    out_dir: &Path,
    (records, steady): (&[RunRecord], &[RunRecord]),
    cluster: Option<&serde_json::Value>,
    notes: &mut Vec<String>,
) -> Vec<PathBuf> {
    let font = plots::register_font();
    if let Err(e) = &font {
        let msg = format!("PLOTS NOT WRITTEN: {e}");
        eprintln!("[suite] {msg}");
        notes.push(msg);
        return Vec::new();
    }
    let mut plots_to_write: Vec<(&str, LinePlot)> = Vec::new();
    // B4 makespan against pod count.
    let aggs = aggregate(records);
    let mut b4 = Vec::new();
    for v in [Variant::Floor, Variant::KubeletRs, Variant::Upstream] {
        let pts: Vec<(f64, f64)> = aggs
            .iter()
            .filter(|a| a.variant == v)
            .filter_map(|a| Some((a.pods as f64, a.makespan_s?)))
            .collect();
        if !pts.is_empty() {
            b4.push(Series {
                label: v.label().into(),
                points: pts,
            });
        }
    }
    if !b4.is_empty() {
        plots_to_write.push((
            "b4-makespan",
            LinePlot {
                title: "B4: static pods → all RUNNING, makespan (median)".into(),
                x_desc: "pods".into(),
                y_desc: "seconds".into(),
                series: b4,
            },
        ));
    }
    // Start-up latency CDFs: the API pods of cluster-node, else the static pods.
    let mut cdfs = Vec::new();
    if let Some(doc) = cluster {
        for kubelet in ["kubelet-rs", "upstream"] {
            let mut by_batch: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
            for r in doc
                .get("runs")
                .and_then(|r| r.as_array())
                .into_iter()
                .flatten()
            {
                if r.get("kubelet").and_then(|k| k.as_str()) != Some(kubelet) {
                    continue;
                }
                for (b, v) in r
                    .get("batches")
                    .and_then(|b| b.as_object())
                    .into_iter()
                    .flatten()
                {
                    by_batch.entry(b.clone()).or_default().extend(
                        v.as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|x| x.as_f64()),
                    );
                }
            }
            for (b, v) in by_batch {
                cdfs.push(Series {
                    label: format!("{kubelet}, batch {b}"),
                    points: plots::cdf(&v.iter().map(|ms| ms / 1000.0).collect::<Vec<_>>()),
                });
            }
        }
    }
    let cdf_title = if cdfs.is_empty() {
        let n = records.iter().map(|r| r.pods).max().unwrap_or(0);
        for v in [Variant::KubeletRs, Variant::Upstream] {
            let lat: Vec<f64> = records
                .iter()
                .filter(|r| r.variant == v && r.pods == n)
                .flat_map(|r| r.latencies_s.iter().copied())
                .collect();
            if !lat.is_empty() {
                cdfs.push(Series {
                    label: format!("{}, {n} static pods", v.label()),
                    points: plots::cdf(&lat),
                });
            }
        }
        format!("static pod start-up (rename → RUNNING), N={n}, all repetitions")
    } else {
        "API pod created → Running, all repetitions".to_owned()
    };
    if !cdfs.is_empty() {
        plots_to_write.push((
            "startup-cdf",
            LinePlot {
                title: format!("Start-up latency CDF: {cdf_title}"),
                x_desc: "seconds".into(),
                y_desc: "fraction of pods".into(),
                series: cdfs,
            },
        ));
    }
    // RSS and CPU over the idle period (cluster mode, first repetition of each kubelet).
    if let Some(doc) = cluster {
        let mut rss = Vec::new();
        let mut cpu = Vec::new();
        for kubelet in ["kubelet-rs", "upstream"] {
            let run = doc.get("runs").and_then(|r| r.as_array()).and_then(|a| {
                a.iter().find(|r| {
                    r.get("kubelet").and_then(|k| k.as_str()) == Some(kubelet)
                        && r.get("idle_samples")
                            .and_then(|s| s.as_array())
                            .is_some_and(|s| !s.is_empty())
                })
            });
            let Some(samples) = run
                .and_then(|r| r.get("idle_samples"))
                .and_then(|s| s.as_array())
            else {
                continue;
            };
            let pt = |key: &str, scale: f64| -> Vec<(f64, f64)> {
                samples
                    .iter()
                    .filter_map(|s| Some((s.get("t_s")?.as_f64()?, s.get(key)?.as_f64()? * scale)))
                    .collect()
            };
            rss.push(Series {
                label: kubelet.into(),
                points: pt("rss_kib", 1.0 / 1024.0),
            });
            cpu.push(Series {
                label: kubelet.into(),
                points: pt("cpu_s", 1.0),
            });
        }
        if !rss.is_empty() {
            plots_to_write.push((
                "idle-rss",
                LinePlot {
                    title: "Idle kubelet RSS, cluster mode, 30 pods running".into(),
                    x_desc: "seconds into the idle period".into(),
                    y_desc: "RSS (MiB)".into(),
                    series: rss,
                },
            ));
            plots_to_write.push((
                "idle-cpu",
                LinePlot {
                    title: "Idle kubelet CPU, cluster mode, cumulative".into(),
                    x_desc: "seconds into the idle period".into(),
                    y_desc: "CPU-seconds since the idle period began".into(),
                    series: cpu,
                },
            ));
        }
    }
    // B6: RSS and CPU over the steady window, 30 pods (else the smallest batch), first
    // successful run of each kubelet.
    let plot_n = if steady.iter().any(|r| r.pods == 30) {
        30
    } else {
        steady.iter().map(|r| r.pods).min().unwrap_or(30)
    };
    let mut rss = Vec::new();
    let mut cpu = Vec::new();
    for v in [Variant::KubeletRs, Variant::Upstream] {
        let Some(o) = steady
            .iter()
            .filter(|r| r.pods == plot_n && r.variant == v && r.error.is_none())
            .find_map(|r| r.steady.as_ref())
        else {
            continue;
        };
        let pts = |f: &dyn Fn(&kubelet_bench::steady::SteadySample) -> Option<f64>| {
            o.samples
                .iter()
                .filter_map(|s| Some((s.t_s, f(s)?)))
                .collect::<Vec<_>>()
        };
        rss.push(Series {
            label: v.label().into(),
            points: pts(&|s| Some(s.rss_kib? as f64 / 1024.0)),
        });
        cpu.push(Series {
            label: v.label().into(),
            points: pts(&|s| s.cpu_s),
        });
    }
    if !rss.is_empty() {
        plots_to_write.push((
            "b6-steady-rss",
            LinePlot {
                title: format!("B6: kubelet RSS, steady state, {plot_n} static pods"),
                x_desc: "seconds into the window".into(),
                y_desc: "RSS (MiB)".into(),
                series: rss,
            },
        ));
        plots_to_write.push((
            "b6-steady-cpu",
            LinePlot {
                title: format!("B6: kubelet CPU, steady state, {plot_n} static pods, cumulative"),
                x_desc: "seconds into the window".into(),
                y_desc: "CPU-seconds since the window began".into(),
                series: cpu,
            },
        ));
    }
    let mut files = Vec::new();
    for (stem, plot) in &plots_to_write {
        match plots::write(out_dir, stem, plot) {
            Ok(f) => files.extend(f),
            Err(e) => {
                let msg = format!("PLOT {stem} NOT WRITTEN: {e}");
                eprintln!("[suite] {msg}");
                notes.push(msg);
            }
        }
    }
    files
}

#[allow(clippy::too_many_arguments)]
fn render_md(
    commit: &str,
    started: &str,
    opts: &SuiteOptions,
    rows: &[Row],
    figures: &[QuickFigure],
    quick_lines: &[String],
    plots: &[PathBuf],
    notes: &[String],
    sections: &[String],
) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let mode = if opts.quick { "quick mode" } else { "full run" };
    let _ = writeln!(s, "# kubelet-rs benchmark suite ({mode})\n");
    let _ = writeln!(
        s,
        "Commit `{commit}`, started {started}, {} interleaved repetitions, {} CPUs, load average at the end {}.\n",
        opts.repeat,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        env::loadavg()
    );
    s.push_str(&sr::render_rows(rows));
    s.push_str(
        "\nValues are medians over the repetitions with (min–max); ratios are of the medians. \
         \"not measured\" rows were skipped in this run or have no command yet, and carry no number. See bench/README.md, \
         \"The suite\", for how each figure is taken.\n",
    );
    if opts.quick {
        s.push_str(
            "\n## Quick mode\n\n| figure | ratios per repetition | median |\n|---|---|---|\n",
        );
        for f in figures {
            let rs: Vec<String> = f.ratios.iter().map(|r| format!("{r:.3}")).collect();
            let _ = writeln!(
                s,
                "| {} | {} | {:.3} |",
                f.name,
                rs.join(", "),
                f.spread.median
            );
        }
        s.push('\n');
        for l in quick_lines {
            let _ = writeln!(s, "- {l}");
        }
    }
    for section in sections {
        s.push_str(section);
    }
    if !plots.is_empty() {
        s.push_str("\n## Plots\n\n");
        for p in plots
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "png"))
        {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let _ = writeln!(s, "![{name}]({name})");
        }
    }
    if !notes.is_empty() {
        s.push_str("\n## Notes\n\n");
        for n in notes {
            let _ = writeln!(s, "- {n}");
        }
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse_ok(args: &[&str]) -> SuiteOptions {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        parse(&args).unwrap().unwrap()
    }

    #[test]
    fn steady_options() {
        let full = parse_ok(&["--repeat", "2"]);
        assert!(full.steady);
        assert_eq!(full.steady_seconds, 300.0);
        assert_eq!(full.steady_repeat, 2);
        assert_eq!(full.steady_pods, vec![30, 100, 110]);
        assert!(!parse_ok(&["--no-steady"]).steady);
        // Quick mode: no steady runs unless a window is asked for.
        assert!(!parse_ok(&["--quick"]).steady);
        let q = parse_ok(&[
            "--quick",
            "--steady-seconds",
            "30",
            "--steady-pods",
            "10",
            "--steady-repeat",
            "1",
        ]);
        assert!(q.steady);
        assert_eq!((q.steady_seconds, q.steady_repeat), (30.0, 1));
        assert_eq!(q.steady_pods, vec![10]);
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(parse(&args(&["--steady-seconds", "0"])).is_err());
        assert!(parse(&args(&["--steady-pods", "0"])).is_err());
        assert!(parse(&args(&["--steady-repeat", "0"])).is_err());
    }

    #[test]
    fn standalone_options() {
        let full = parse_ok(&[]);
        assert!(full.standalone);
        assert_eq!(full.standalone_idle_seconds, 150.0);
        assert!(!parse_ok(&["--no-standalone"]).standalone);
        let short = parse_ok(&["--standalone-idle-seconds", "60"]);
        assert_eq!(short.standalone_idle_seconds, 60.0);
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(parse(&args(&["--standalone-idle-seconds", "0"])).is_err());
        assert!(parse(&args(&["--standalone-idle-seconds", "NaN"])).is_err());
    }

    #[test]
    fn eviction_detection_option() {
        assert!(parse_ok(&[]).eviction_detection);
        assert!(!parse_ok(&["--no-eviction-detection"]).eviction_detection);
    }
}
