//! `cluster-node`: kubelet-rs and the upstream kubelet join the test control plane one after
//! the other, on the same harness and the same configuration, and are measured alike (see
//! `kubelet_bench::cluster` and `bench/README.md`).
//!
//! ```sh
//! cargo run --release -p kubelet-bench --bin cluster-node -- [--repeat N] [--idle-seconds S]
//!     [--batch PODS@RATE]... [--kills K] [--kubelet PATH] [--out FILE]
//! ```

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, bail};
use kubelet_bench::cluster::{self, Batch, NodeRun};
use kubelet_bench::cluster_events;
use kubelet_e2e::cluster::{Cluster, NodeKubelet, NodeSpec};

struct Options {
    repeat: usize,
    idle: Duration,
    batches: Vec<Batch>,
    kills: usize,
    kubelet: PathBuf,
    out: Option<PathBuf>,
}

const USAGE: &str = "usage: cluster-node [--repeat N] [--idle-seconds S] [--batch PODS@RATE]... [--kills K] [--kubelet PATH] [--out FILE]\n";

fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        repeat: 1,
        idle: Duration::from_secs(60),
        batches: Vec::new(),
        kills: 5,
        kubelet: cluster::default_kubelet_rs(),
        out: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--repeat" => o.repeat = val()?.parse().context("--repeat")?,
            "--idle-seconds" => {
                o.idle = Duration::from_secs(val()?.parse().context("--idle-seconds")?)
            }
            "--kills" => o.kills = val()?.parse().context("--kills")?,
            "--kubelet" => o.kubelet = PathBuf::from(val()?),
            "--out" => o.out = Some(PathBuf::from(val()?)),
            "--batch" => {
                let v = val()?;
                let (p, r) = v
                    .split_once('@')
                    .with_context(|| format!("--batch {v}: PODS@RATE"))?;
                o.batches.push(Batch {
                    pods: p.parse().context("--batch pods")?,
                    rate: r.parse().context("--batch rate")?,
                });
            }
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other}\n{USAGE}"),
        }
    }
    if o.batches.is_empty() {
        o.batches = vec![
            Batch {
                pods: 30,
                rate: 1.0,
            },
            Batch {
                pods: 100,
                rate: 5.0,
            },
        ];
    }
    Ok(o)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = parse(&args)?;
    let (c, client) = cluster::prepare(&opts.kubelet)
        .await
        .map_err(anyhow::Error::msg)?;
    let mut runs = Vec::new();
    for rep in 0..opts.repeat {
        // Both kubelets of a repetition get the same kill phases.
        let seed = kubelet_bench::event_detect::clock_seed();
        for (kubelet, name, ip, port) in cluster::NODES {
            eprintln!("[bench] repeat {rep}: {kubelet} as node {name}");
            let which = if kubelet == "upstream" {
                NodeKubelet::Upstream
            } else {
                NodeKubelet::KubeletRs(opts.kubelet.clone())
            };
            let mut spec = NodeSpec::new(which, name, ip);
            spec.port = port;
            let mut run = NodeRun {
                kubelet: kubelet.into(),
                ..NodeRun::default()
            };
            if let Err(e) = run_node(&c, &client, spec, &opts, seed, &mut run).await {
                eprintln!("[bench] {kubelet}: {e}");
                run.error = Some(e);
            }
            runs.push(run);
        }
    }
    let table = cluster::render(&runs, &opts.batches);
    print!("{table}");
    if let Some(out) = &opts.out {
        let json = serde_json::json!({ "batches": opts.batches, "idle_seconds": opts.idle.as_secs(), "kills": opts.kills, "runs": runs, "table": table });
        std::fs::write(out, serde_json::to_string_pretty(&json)?)?;
    }
    if runs.iter().any(|r| r.error.is_some()) {
        bail!("some runs failed");
    }
    Ok(())
}

async fn run_node(
    c: &Cluster,
    client: &kube::Client,
    spec: NodeSpec,
    opts: &Options,
    seed: f64,
    run: &mut NodeRun,
) -> Result<(), String> {
    let user = format!("system:node:{}", spec.name);
    let audit = cluster::audit_log(&c.state_dir);
    let (node, ready) = cluster::start_fresh_node(c, client, spec).await?;
    let result = measure(client, &node, &user, &audit, (opts, seed), run, ready).await;
    cluster::stop_node(client, node, result).await
}

async fn measure(
    client: &kube::Client,
    node: &kubelet_e2e::cluster::ClusterNode,
    user: &str,
    audit: &std::path::Path,
    (opts, seed): (&Options, f64),
    run: &mut NodeRun,
    ready: tokio::task::JoinHandle<Result<SystemTime, String>>,
) -> Result<(), String> {
    let ready_at = ready.await.map_err(|e| e.to_string())??;
    let rt = kubelet_bench::cri_ops::connect(&node.runtime_endpoint)
        .await
        .map_err(|e| e.to_string())?;
    let pid = node.kubelet_pid().map_err(|e| e.to_string())?;
    let started = cluster::process_start(pid)?;
    run.start_to_ready_ms = ready_at.duration_since(started).ok().map(cluster::ms);
    for (i, b) in opts.batches.iter().enumerate() {
        let key = cluster::batch_key(*b);
        let t0 = SystemTime::now();
        let timeout = Duration::from_secs_f64(b.pods as f64 / b.rate + 120.0);
        let lat =
            cluster::run_batch(client, &node.spec.name, &format!("b{i}"), *b, timeout).await?;
        let t1 = SystemTime::now();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let n = cluster::audit_requests(audit, user, t0, t1)?;
        run.api_per_pod_start
            .insert(key.clone(), n as f64 / b.pods as f64);
        run.batches.insert(key, {
            let mut v: Vec<f64> = lat.into_iter().map(cluster::ms).collect();
            v.sort_by(f64::total_cmp);
            v
        });
        if i == 0 {
            // Let the pod starts settle, then one idle minute.
            tokio::time::sleep(Duration::from_secs(5)).await;
            let cpu0 = cluster::cpu_seconds(pid)?;
            let a0 = SystemTime::now();
            // Samples every 5 s for the suite's plot of RSS and CPU over the idle period.
            let t_idle = tokio::time::Instant::now();
            let end = t_idle + opts.idle;
            loop {
                let now = tokio::time::Instant::now();
                run.idle_samples.push(cluster::IdleSample {
                    t_s: (now - t_idle).as_secs_f64(),
                    rss_kib: cluster::rss_kib(pid)?,
                    cpu_s: cluster::cpu_seconds(pid)? - cpu0,
                });
                if now >= end {
                    break;
                }
                tokio::time::sleep_until(end.min(now + Duration::from_secs(5))).await;
            }
            let a1 = SystemTime::now();
            run.idle_cpu_seconds =
                Some((cluster::cpu_seconds(pid)? - cpu0) * 60.0 / opts.idle.as_secs_f64());
            run.idle_rss_kib = Some(cluster::rss_kib(pid)?);
            run.idle_pss_kib = kubelet_bench::steady::memory_kib(pid).1;
            tokio::time::sleep(Duration::from_secs(2)).await;
            let n = cluster::audit_requests(audit, user, a0, a1)?;
            run.api_per_idle_minute = Some(n as f64 * 60.0 / opts.idle.as_secs_f64());
        }
        if i == 0 {
            // B8 in cluster mode: this batch deleted through the API.
            run.teardown = Some(
                cluster_events::teardown(client, &rt, Duration::from_secs(120))
                    .await
                    .map_err(|e| format!("B8 teardown: {e}"))?,
            );
        } else {
            cluster::delete_pods(client, Duration::from_secs(120)).await?;
        }
    }
    if opts.kills > 0 {
        // B9 in cluster mode.
        run.kills = cluster_events::api_kills(
            client,
            &rt,
            &node.spec.name,
            opts.kills,
            seed,
            Duration::from_secs(60),
        )
        .await
        .map_err(|e| format!("B9 kills: {e}"))?;
        cluster::delete_pods(client, Duration::from_secs(120)).await?;
    }
    Ok(())
}
