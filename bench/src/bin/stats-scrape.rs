//! `stats-scrape`: issue 8's benchmark. For kubelet-rs and the upstream kubelet in turn, on
//! the private containerd of `hack/runtime-up.sh`: start the kubelet standalone with N static
//! pods (default 100), wait until they run, then measure `/stats/summary` and
//! `/metrics/resource` on the read-only port (latency, kubelet CPU per scrape, idle CPU; see
//! `kubelet_bench::scrape`). Prints a markdown table; `--out FILE` writes the JSON.
//!
//! ```sh
//! cargo run --release -p kubelet-bench --bin stats-scrape -- \
//!     --kubelet target/release/kubelet-rs --upstream _output/bin/kubelet [--pods 100] \
//!     [--scrapes 20] [--out /tmp/stats-scrape.json]
//! ```
//!
//! Without `--upstream` only kubelet-rs runs (A/B of two builds: one run each, in turn).
//! `--paths /stats/summary,/metrics/resource` chooses the endpoints, `--interval-ms`,
//! `--warmup-s` and `--idle-s` the pause between scrapes, the warm-up and the idle window
//! (defaults 1000, 20, 20); `--profile FILE` records `perf record --call-graph fp` (or
//! `--call-graph MODE`) of the kubelet during each endpoint's scrapes to
//! `FILE.<endpoint index>`; `--dump PREFIX` keeps each endpoint's last answer in
//! `PREFIX.<kubelet>.<endpoint index>` (to compare the two kubelets' contents).
//!
//! Both kubelets get `--containerd=<the private containerd's socket>`: upstream's embedded
//! cAdvisor finds a node's containers through its own containerd client, whose default is
//! `/run/containerd/containerd.sock`, where a standard node's containerd listens. Without it
//! upstream's cAdvisor cannot name the containers of the private containerd, and upstream's
//! summary serves the runtime's figures for them (no pod network, process counts, container
//! pressure or page faults): less work and less content than on a standard node, so not like
//! for like with kubelet-rs, which reads them. kubelet-rs ignores the flag (with a warning at
//! start, as every cAdvisor flag). `--no-cadvisor-containerd` leaves it out.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use kubelet_bench::kubelet::{KubeletRunConfig, run_kubelet_variant};
use kubelet_bench::manifest::PodTemplate;
use kubelet_bench::scrape::{ScrapeConfig, ScrapeOutcome};
use kubelet_bench::{cri_ops, env};

struct Opts {
    kubelet: PathBuf,
    upstream: Option<PathBuf>,
    pods: usize,
    scrapes: usize,
    out: Option<PathBuf>,
    paths: Vec<String>,
    interval: Duration,
    warmup: Duration,
    idle: Duration,
    profile: Option<PathBuf>,
    call_graph: String,
    dump: Option<PathBuf>,
    cadvisor_containerd: bool,
}

fn parse(args: &[String]) -> anyhow::Result<Opts> {
    let mut o = Opts {
        kubelet: PathBuf::new(),
        upstream: None,
        pods: 100,
        scrapes: 20,
        out: None,
        paths: vec!["/stats/summary".into(), "/metrics/resource".into()],
        interval: Duration::from_secs(1),
        warmup: Duration::from_secs(20),
        idle: Duration::from_secs(20),
        profile: None,
        call_graph: "fp".into(),
        dump: None,
        cadvisor_containerd: true,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().context(format!("{a} needs a value"));
        match a.as_str() {
            "--kubelet" => o.kubelet = PathBuf::from(value()?),
            "--upstream" => o.upstream = Some(PathBuf::from(value()?)),
            "--pods" => o.pods = value()?.parse()?,
            "--scrapes" => o.scrapes = value()?.parse()?,
            "--out" => o.out = Some(PathBuf::from(value()?)),
            "--paths" => o.paths = value()?.split(',').map(str::to_string).collect(),
            "--interval-ms" => o.interval = Duration::from_millis(value()?.parse()?),
            "--warmup-s" => o.warmup = Duration::from_secs(value()?.parse()?),
            "--idle-s" => o.idle = Duration::from_secs(value()?.parse()?),
            "--profile" => o.profile = Some(PathBuf::from(value()?)),
            "--call-graph" => o.call_graph = value()?.clone(),
            "--dump" => o.dump = Some(PathBuf::from(value()?)),
            "--no-cadvisor-containerd" => o.cadvisor_containerd = false,
            other => bail!("unknown argument {other:?}"),
        }
    }
    if o.kubelet.as_os_str().is_empty() {
        bail!("--kubelet PATH is required");
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args) {
        Ok(o) => env::block_on_main("stats-scrape", async { run(o).await.map(|()| true) }),
        Err(e) => {
            eprintln!("stats-scrape: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(o: Opts) -> anyhow::Result<()> {
    let repo = env::repo_root();
    let runtime = env::runtime_up(&repo)?;
    let cri = cri_ops::connect(&runtime.endpoint).await?;
    cri_ops::cleanup_leftovers(&cri).await?;
    let mut variants = vec![("kubelet-rs", o.kubelet.clone())];
    if let Some(u) = &o.upstream {
        variants.push(("upstream", u.clone()));
    }
    let mut results: Vec<(&str, ScrapeOutcome)> = Vec::new();
    for (label, binary) in variants {
        eprintln!(
            "[bench] {label}: {} pods, {} scrapes per endpoint",
            o.pods, o.scrapes
        );
        let cfg = KubeletRunConfig {
            scrape: Some(ScrapeConfig {
                port: 0,
                paths: o.paths.clone(),
                count: o.scrapes,
                interval: o.interval,
                warmup: o.warmup,
                idle_window: o.idle,
                profile: o.profile.clone(),
                call_graph: o.call_graph.clone(),
                dump: o
                    .dump
                    .as_ref()
                    .map(|d| PathBuf::from(format!("{}.{label}", d.display()))),
            }),
            ..KubeletRunConfig::measurement(
                binary,
                &runtime,
                o.pods,
                format!("s{}{}", &label[..1], o.pods),
                PodTemplate::Sleep,
                if o.cadvisor_containerd {
                    vec![env::containerd_flag(&runtime.endpoint)]
                } else {
                    Vec::new()
                },
            )
        };
        let outcome = run_kubelet_variant(cri.clone(), &cfg)
            .await
            .with_context(|| format!("{label} run"))?;
        let scrape = outcome.scrape.context("no scrape outcome")?;
        results.push((label, scrape));
    }
    println!(
        "| kubelet | idle CPU (ms/s) | endpoint | p50 (ms) | max (ms) | CPU per scrape (ms) | bytes |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (label, s) in &results {
        for e in &s.endpoints {
            println!(
                "| {label} | {:.1} | `{}` | {:.1} | {:.1} | {:.1} | {} |",
                s.idle_cpu_ms_per_s, e.path, e.p50_ms, e.p99_ms, e.cpu_ms_per_scrape, e.bytes
            );
        }
    }
    if let [(_, rs), (_, up)] = results.as_slice() {
        for (a, b) in rs.endpoints.iter().zip(&up.endpoints) {
            println!(
                "- `{}`: kubelet-rs CPU per scrape = {:.2} × upstream's",
                a.path,
                a.cpu_ms_per_scrape / b.cpu_ms_per_scrape.max(0.001)
            );
        }
    }
    if let Some(out) = &o.out {
        let json: serde_json::Value = results
            .iter()
            .map(|(l, s)| {
                (
                    (*l).to_string(),
                    serde_json::to_value(s).unwrap_or_default(),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into();
        std::fs::write(out, serde_json::to_string_pretty(&json)? + "\n")?;
    }
    Ok(())
}
