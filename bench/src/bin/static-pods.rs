//! `static-pods`: perf-anchors §6 B4 (static pods to Running, N = 30 and N = 100) against the
//! §5.2 CRI floor, on the private containerd of `hack/runtime-up.sh`. See `bench/README.md`.

use std::process::ExitCode;

use kubelet_bench::cli::{self, Options, Parsed};
use kubelet_bench::env;
use kubelet_bench::report::{aggregate, render_markdown};
use kubelet_bench::suite::{JsonReport, resolve_binaries, run_all_on_the_runtime};
use kubelet_bench::suite_report as sr;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match cli::parse_args(&args) {
        Ok(Parsed::Run(o)) => *o,
        Ok(Parsed::Help) => {
            print!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("static-pods: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("static-pods: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(opts, args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("static-pods: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs everything; `Ok(false)` when some run failed (the table is still printed).
async fn run(opts: Options, args: Vec<String>) -> anyhow::Result<bool> {
    let repo = env::repo_root();
    let mut bins = resolve_binaries(&opts, &repo).map_err(anyhow::Error::msg)?;
    eprintln!("[bench] hack/runtime-up.sh ...");
    let (runtime, records) = run_all_on_the_runtime(&repo, &opts, &bins, "[bench]").await?;
    let summary = aggregate(&records);
    println!("{}", render_markdown(&summary, opts.goal));
    if let Some(steady) = &opts.steady {
        let rows = sr::steady_rows(
            &records,
            &opts.pods,
            (steady.window.as_secs_f64(), steady.settle.as_secs_f64()),
        );
        println!("{}", sr::render_rows(&rows));
        println!("{}", sr::render_cri_methods(&records, &opts.pods));
    }
    for r in records.iter().filter(|r| r.error.is_none()) {
        if let Some(busy) = &r.busy_before {
            let what = format!("N={} {} run {}", r.pods, r.variant.label(), r.repeat + 1);
            bins.notes
                .push(format!("{what} ran while there were {busy}"));
        }
    }
    for n in &bins.notes {
        println!("- {n}");
    }
    let all_ok = records.iter().all(|r| r.error.is_none());
    if let Some(out) = &opts.out {
        JsonReport::new("static-pods", &args, &runtime, &bins, records)
            .write(out)
            .map_err(anyhow::Error::msg)?;
        eprintln!("[bench] wrote {}", out.display());
    }
    Ok(all_ok)
}
