//! `event-detection`: B9 of perf-anchors §6 (issue #11), event-detection latency. For each
//! repetition, kubelet-rs then the upstream kubelet, each started standalone on the private
//! containerd of `hack/runtime-up.sh` with K static busybox `sleep` pods
//! (`restartPolicy: Never`); each pod's container is killed from outside (SIGKILL of its init
//! process) and the time until the kubelet's `/pods` shows it terminated is taken, with the
//! time until CRI reports it EXITED as the floor (`kubelet_bench::event_detect`). Prints the B9
//! rows of the suite's table and each kill; `--out FILE` writes every run as JSON.
//!
//! ```sh
//! flock -w 1500 /var/lib/kubelet-rs-test/dev-runtime.lock \
//!   $CARGO_TARGET_DIR/release/event-detection [--kubelet PATH] [--upstream PATH] \
//!     [--kills 5] [--repeat 3] [--poll-ms 10] [--out FILE]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use kubelet_bench::cli::Options;
use kubelet_bench::event_detect::{EventBenchOptions, b9_rows, run_interleaved};
use kubelet_bench::suite::resolve_binaries;
use kubelet_bench::suite_report::render_rows;
use kubelet_bench::{cri_ops, env};

const USAGE: &str = "\
usage: event-detection [--kubelet PATH] [--upstream PATH] [--kills K] [--repeat R]
                       [--poll-ms MS] [--pause-ms MS] [--out FILE] [--keep]
                       [--allow-foreign-pods]

  --kubelet PATH        kubelet-rs (default $CARGO_TARGET_DIR/release/kubelet-rs)
  --upstream PATH       upstream kubelet (default $KRS_CLUSTER_BIN/kubelet, else
                        _output/bin/kubelet, if present)
  --kills K             static pods per run, one kill each (default 5)
  --repeat R            repetitions, each kubelet-rs then upstream (default 3)
  --poll-ms MS          /pods and CRI poll interval after a kill (default 10)
  --pause-ms MS         base pause before each kill; a spread fraction of a second is added
                        (default 1000)
  --out FILE            every run and kill as JSON
  --keep                keep the run directories (config, kubelet.log)
  --allow-foreign-pods  run even with other kubelets or foreign pods (only with the runtime
                        lock held)
";

struct Opts {
    bench: EventBenchOptions,
    kubelet: Option<PathBuf>,
    upstream: Option<PathBuf>,
    out: Option<PathBuf>,
}

fn parse(args: &[String]) -> anyhow::Result<Option<Opts>> {
    let mut o = Opts {
        bench: EventBenchOptions::default(),
        kubelet: None,
        upstream: None,
        out: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "--kubelet" => o.kubelet = Some(PathBuf::from(val()?)),
            "--upstream" => o.upstream = Some(PathBuf::from(val()?)),
            "--kills" => o.bench.kills = val()?.parse().context("--kills")?,
            "--repeat" => o.bench.repeat = val()?.parse().context("--repeat")?,
            "--poll-ms" => {
                o.bench.poll = Duration::from_millis(val()?.parse().context("--poll-ms")?)
            }
            "--pause-ms" => {
                o.bench.pause = Duration::from_millis(val()?.parse().context("--pause-ms")?)
            }
            "--out" => o.out = Some(PathBuf::from(val()?)),
            "--keep" => o.bench.keep = true,
            "--allow-foreign-pods" => {
                o.bench.allow_foreign_pods = true;
                o.bench.quiet_timeout = Duration::ZERO;
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    if o.bench.kills == 0 || o.bench.repeat == 0 || o.bench.poll.is_zero() {
        bail!("--kills, --repeat and --poll-ms must be at least 1");
    }
    Ok(Some(o))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args) {
        Ok(Some(o)) => env::block_on_main("event-detection", run(o, args)),
        Ok(None) => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("event-detection: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The upstream kubelet: `--upstream`, else `$KRS_CLUSTER_BIN/kubelet` or `_output/bin/kubelet`
/// if present.
fn default_upstream(repo: &std::path::Path) -> Option<PathBuf> {
    let dir = std::env::var_os("KRS_CLUSTER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join("_output/bin"));
    let p = dir.join("kubelet");
    p.is_file().then_some(p)
}

async fn run(o: Opts, args: Vec<String>) -> anyhow::Result<bool> {
    let repo = env::repo_root();
    let sel = Options {
        kubelet: o.kubelet.clone(),
        upstream: o.upstream.clone().or_else(|| default_upstream(&repo)),
        ..Options::default()
    };
    let bins = resolve_binaries(&sel, &repo).map_err(anyhow::Error::msg)?;
    for n in &bins.notes {
        eprintln!("[b9] {n}");
    }
    let runtime = env::runtime_up(&repo)?;
    let cri = cri_ops::connect(&runtime.endpoint).await?;
    cri_ops::cleanup_leftovers(&cri)
        .await
        .context("removing leftover benchmark sandboxes")?;
    let runs = tokio::select! {
        r = run_interleaved(&repo, &o.bench, &runtime, cri.clone(), &bins, "[b9]") => r,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("[b9] interrupted: cleaning up");
            cri_ops::cleanup_leftovers(&cri).await?;
            bail!("interrupted");
        }
    };
    let rows = b9_rows(&runs, o.bench.kills);
    println!("{}", render_rows(&rows));
    println!(
        "| kubelet | run | kill → /pods (ms) | kill → CRI EXITED (ms) | pause (s) | /pods showed |"
    );
    println!("|---|---:|---:|---:|---:|---|");
    for r in &runs {
        match (&r.outcome, &r.error) {
            (Some(out), _) => {
                for s in &out.samples {
                    println!(
                        "| {} | {} | {:.0} | {} | {:.2} | {} |",
                        r.variant.label(),
                        r.repeat + 1,
                        s.pods_status_s * 1e3,
                        s.cri_exited_s
                            .map_or_else(|| "—".to_owned(), |c| format!("{:.0}", c * 1e3)),
                        s.pause_s,
                        s.status_seen
                    );
                }
            }
            (None, e) => println!(
                "| {} | {} | ERROR: {} | | | |",
                r.variant.label(),
                r.repeat + 1,
                e.as_deref().unwrap_or("no outcome").replace('|', "\\|")
            ),
        }
    }
    for n in &bins.notes {
        println!("- {n}");
    }
    if let Some(out) = &o.out {
        let doc = serde_json::json!({
            "command": std::iter::once("event-detection".to_owned()).chain(args).collect::<Vec<_>>(),
            "endpoint": runtime.endpoint,
            "kubelet_rs": bins.kubelet_rs.as_ref().map(|p| p.display().to_string()),
            "upstream": bins.upstream.as_ref().map(|p| p.display().to_string()),
            "kills": o.bench.kills,
            "poll_ms": o.bench.poll.as_millis() as u64,
            "notes": bins.notes,
            "rows": rows,
            "runs": runs,
        });
        std::fs::write(out, serde_json::to_string_pretty(&doc)? + "\n")
            .with_context(|| format!("writing {}", out.display()))?;
        eprintln!("[b9] wrote {}", out.display());
    }
    Ok(runs.iter().all(|r| r.error.is_none()))
}
