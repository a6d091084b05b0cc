//! `eviction-detection`: issue #10's eviction detection latency, kubelet-rs against the
//! upstream kubelet in one run (see `kubelet_bench::eviction_detect` and `bench/README.md`).
//!
//! ```sh
//! cargo run --release -p kubelet-bench --bin eviction-detection -- [--repeat N]
//!     [--memcg off|on|both] [--kubelet PATH] [--out FILE]
//! ```

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use kubelet_bench::cluster;
use kubelet_bench::eviction_detect::{self, EvictionRun, PRESSURE_AT_MIB};
use kubelet_bench::suite_report::render_rows;
use kubelet_e2e::cluster::{Cluster, NodeKubelet, NodeSpec};

struct Options {
    repeat: usize,
    memcg: Vec<bool>,
    kubelet: PathBuf,
    out: Option<PathBuf>,
}

/// Node Ready → the hog is created.
const SETTLE: Duration = Duration::from_secs(25);

const USAGE: &str =
    "usage: eviction-detection [--repeat N] [--memcg off|on|both] [--kubelet PATH] [--out FILE]\n";

fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        repeat: 3,
        memcg: vec![false, true],
        kubelet: cluster::default_kubelet_rs(),
        out: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--repeat" => o.repeat = val()?.parse().context("--repeat")?,
            "--memcg" => {
                o.memcg = match val()?.as_str() {
                    "off" => vec![false],
                    "on" => vec![true],
                    "both" => vec![false, true],
                    other => bail!("--memcg {other}: off, on or both"),
                }
            }
            "--kubelet" => o.kubelet = PathBuf::from(val()?),
            "--out" => o.out = Some(PathBuf::from(val()?)),
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other}\n{USAGE}"),
        }
    }
    Ok(o)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = parse(&args)?;
    let threshold_mib = eviction_detect::mem_total_mib()
        .map_err(anyhow::Error::msg)?
        .saturating_sub(PRESSURE_AT_MIB);
    let (c, client) = cluster::prepare(&opts.kubelet)
        .await
        .map_err(anyhow::Error::msg)?;
    let mut runs = Vec::new();
    for repeat in 0..opts.repeat {
        for &memcg in &opts.memcg {
            // The same nodes as `cluster-node` (names, addresses, ports).
            for (kubelet, name, ip, port) in cluster::NODES {
                eprintln!("[bench] repeat {repeat}, kernelMemcgNotification {memcg}: {kubelet}");
                let which = if kubelet == "upstream" {
                    NodeKubelet::Upstream
                } else {
                    NodeKubelet::KubeletRs(opts.kubelet.clone())
                };
                let mut spec = NodeSpec::new(which, name, ip);
                spec.port = port;
                spec.eviction_hard = vec![(
                    "allocatableMemory.available".into(),
                    format!("{threshold_mib}Mi"),
                )];
                spec.extra_config = vec![format!("kernelMemcgNotification: {memcg}")];
                let mut run = EvictionRun {
                    kubelet: kubelet.into(),
                    memcg_notification: memcg,
                    repeat,
                    threshold_mib,
                    ..EvictionRun::default()
                };
                if let Err(e) = run_node(&c, &client, spec, &mut run).await {
                    eprintln!("[bench] {kubelet}: {e}");
                    run.error = Some(e);
                }
                eprintln!(
                    "[bench]   crossed → event {:?} s, → failed {:?} s",
                    run.crossed_to_event_s, run.crossed_to_failed_s
                );
                runs.push(run);
            }
        }
    }
    let table = render_rows(&eviction_detect::rows(&runs));
    print!("{table}");
    if let Some(out) = &opts.out {
        let json = serde_json::json!({ "runs": runs, "table": table });
        std::fs::write(out, serde_json::to_string_pretty(&json)? + "\n")?;
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
    run: &mut EvictionRun,
) -> Result<(), String> {
    let name = spec.name.clone();
    let (node, ready) = cluster::start_fresh_node(c, client, spec).await?;
    let result = async {
        ready.await.map_err(|e| e.to_string())??;
        // Both eviction managers past their first rounds: upstream's first one fails until
        // its Node object exists (its summary needs the node), so its memcg notifiers get
        // their thresholds one 10 s round after start.
        tokio::time::sleep(SETTLE).await;
        let root = format!("/kubelet-rs-test/{name}");
        let dir = eviction_detect::pods_cgroup_dir(&root);
        eviction_detect::measure(client, &name, &dir, Duration::from_secs(120), run).await
    }
    .await;
    cluster::delete_pods(client, Duration::from_secs(60))
        .await
        .ok();
    cluster::stop_node(client, node, result).await
}
