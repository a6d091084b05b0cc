//! Results of single runs, their medians over repeats, and the markdown table (pure;
//! unit-tested).

use std::fmt::Write as _;

use serde::Serialize;

use crate::stats::{LatencySummary, median};
use crate::steps::StepMedian;

/// What was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// RunPodSandbox + CreateContainer + StartContainer straight over CRI.
    Floor,
    /// kubelet-rs with static pods.
    KubeletRs,
    /// The upstream kubelet with static pods.
    Upstream,
}

impl Variant {
    /// Name in the table.
    pub fn label(self) -> &'static str {
        match self {
            Variant::Floor => "CRI floor",
            Variant::KubeletRs => "kubelet-rs",
            Variant::Upstream => "upstream kubelet",
        }
    }

    /// Short tag used in pod names.
    pub fn tag(self) -> &'static str {
        match self {
            Variant::Floor => "f",
            Variant::KubeletRs => "k",
            Variant::Upstream => "u",
        }
    }
}

/// Median of the CRI call durations of the floor, per call, in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FloorPhases {
    /// RunPodSandbox p50.
    pub run_pod_sandbox_p50_s: f64,
    /// CreateContainer p50.
    pub create_container_p50_s: f64,
    /// StartContainer p50.
    pub start_container_p50_s: f64,
}

/// CPU charged over a batch's start-up (first manifest rename → all containers RUNNING).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct StartupCpu {
    /// The kubelet: its cgroup's `cpuacct.usage` (children included) or, when
    /// `kubelet_in_cgroup` is false, its own `utime + stime`.
    pub kubelet_cpu_s: Option<f64>,
    /// The kubelet plus the containerd serving it and that containerd's shims (with the `runc`
    /// runs they waited for): the cost a kubelet can push into the runtime.
    pub kubelet_plus_runtime_cpu_s: Option<f64>,
    /// Whether the kubelet ran in its own cgroup.
    pub kubelet_in_cgroup: bool,
    /// Peak memory of the kubelet's cgroup over the whole run, MiB (page cache included).
    pub kubelet_memory_peak_mib: Option<f64>,
}

impl StartupCpu {
    /// From (kubelet, runtime) CPU-seconds samples before and after start-up.
    pub fn between(
        before: (Option<f64>, Option<f64>),
        after: (Option<f64>, Option<f64>),
        in_cgroup: bool,
    ) -> Self {
        let d = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b >= a => Some(b - a),
            _ => None,
        };
        let kubelet = d(before.0, after.0);
        let runtime = d(before.1, after.1);
        Self {
            kubelet_cpu_s: kubelet,
            kubelet_plus_runtime_cpu_s: kubelet.zip(runtime).map(|(k, r)| k + r),
            kubelet_in_cgroup: in_cgroup,
            kubelet_memory_peak_mib: None,
        }
    }
}

/// One measured batch of one variant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunRecord {
    /// What ran.
    pub variant: Variant,
    /// Pods in the batch.
    pub pods: usize,
    /// Repeat index (0-based).
    pub repeat: usize,
    /// Parallel CRI workers (floor only).
    pub workers: Option<usize>,
    /// Start-up latencies (absent when the run failed).
    pub startup: Option<LatencySummary>,
    /// Floor only: per-call medians.
    pub phases: Option<FloorPhases>,
    /// Teardown start → every sandbox of the batch stopped (not ready).
    pub teardown_stopped_s: Option<f64>,
    /// Teardown start → no sandbox of the batch listed any more.
    pub teardown_gone_s: Option<f64>,
    /// `/proc/loadavg` just before the run.
    pub loadavg_before: String,
    /// What else used the runtime just before the run (`None`: nothing).
    pub busy_before: Option<String>,
    /// Kubelets: where the start-up time went (medians over the pods of each step's offset
    /// from `seen`, from the kubelet's `-v=2` log, [`crate::steps`]); empty for the floor.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepMedian>,
    /// Why the run failed.
    pub error: Option<String>,
    /// Kubelets: per-pod start-up latencies in seconds (empty for the floor and failed runs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub latencies_s: Vec<f64>,
    /// Kubelets: CPU charged over start-up (`None` for the floor and failed runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_cpu: Option<StartupCpu>,
    /// Kubelets with `--steady-seconds`: the steady-state window (B6, B10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::steady::SteadyOutcome>,
    /// Kubelets with an idle window: the window with no pod (B1/B2 standalone, 0 pods).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle: Option<crate::steady::SteadyOutcome>,
}

/// Medians over the repeats of one (N, variant).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Aggregate {
    /// Pods per batch.
    pub pods: usize,
    /// What ran.
    pub variant: Variant,
    /// Parallel CRI workers (floor only).
    pub workers: Option<usize>,
    /// Runs attempted.
    pub runs: usize,
    /// Runs that brought every pod up.
    pub ok_runs: usize,
    /// Median makespan.
    pub makespan_s: Option<f64>,
    /// Median of the per-run p50 latencies.
    pub p50_s: Option<f64>,
    /// Median of the per-run p99 latencies.
    pub p99_s: Option<f64>,
    /// Median teardown until all stopped.
    pub teardown_stopped_s: Option<f64>,
    /// Median teardown until all gone (runs where they went within the timeout).
    pub teardown_gone_s: Option<f64>,
    /// makespan / floor makespan.
    pub makespan_ratio: Option<f64>,
    /// p50 / floor p50.
    pub p50_ratio: Option<f64>,
    /// p99 / floor p99.
    pub p99_ratio: Option<f64>,
    /// Per step, the median over the successful runs of the step's median offset from
    /// `seen` (kubelets only), in the runs' step order.
    pub steps: Vec<StepMedian>,
    /// First error, if any run failed.
    pub first_error: Option<String>,
}

/// Medians per (N, variant), in the order N ascending then floor, kubelet-rs, upstream; ratios
/// against the floor of the same N.
pub fn aggregate(records: &[RunRecord]) -> Vec<Aggregate> {
    let mut keys: Vec<(usize, Variant)> = records.iter().map(|r| (r.pods, r.variant)).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut out: Vec<Aggregate> = keys
        .iter()
        .map(|&(pods, variant)| {
            let runs: Vec<&RunRecord> = records
                .iter()
                .filter(|r| r.pods == pods && r.variant == variant)
                .collect();
            aggregate_one(pods, variant, &runs)
        })
        .collect();
    let floors: Vec<(usize, Aggregate)> = out
        .iter()
        .filter(|a| a.variant == Variant::Floor)
        .map(|a| (a.pods, a.clone()))
        .collect();
    for a in &mut out {
        if let Some((_, f)) = floors.iter().find(|(n, _)| *n == a.pods) {
            a.makespan_ratio = ratio(a.makespan_s, f.makespan_s);
            a.p50_ratio = ratio(a.p50_s, f.p50_s);
            a.p99_ratio = ratio(a.p99_s, f.p99_s);
        }
    }
    out
}

fn aggregate_one(pods: usize, variant: Variant, runs: &[&RunRecord]) -> Aggregate {
    let ok: Vec<&LatencySummary> = runs.iter().filter_map(|r| r.startup.as_ref()).collect();
    let med = |f: fn(&LatencySummary) -> f64| median(&ok.iter().map(|s| f(s)).collect::<Vec<_>>());
    let opt_med = |f: fn(&RunRecord) -> Option<f64>| {
        median(&runs.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
    };
    Aggregate {
        pods,
        variant,
        workers: runs.iter().find_map(|r| r.workers),
        runs: runs.len(),
        ok_runs: ok.len(),
        makespan_s: med(|s| s.makespan_s),
        p50_s: med(|s| s.p50_s),
        p99_s: med(|s| s.p99_s),
        teardown_stopped_s: opt_med(|r| r.teardown_stopped_s),
        teardown_gone_s: opt_med(|r| r.teardown_gone_s),
        makespan_ratio: None,
        p50_ratio: None,
        p99_ratio: None,
        steps: step_medians(runs),
        first_error: runs.iter().find_map(|r| r.error.clone()),
    }
}

/// Per step (in the first run's order, then new ones as they appear): the median over the
/// successful runs of the runs' medians; `pods` counts the pods of every run.
fn step_medians(runs: &[&RunRecord]) -> Vec<StepMedian> {
    let ok: Vec<&RunRecord> = runs.iter().copied().filter(|r| r.error.is_none()).collect();
    let mut order: Vec<&str> = Vec::new();
    for s in ok.iter().flat_map(|r| &r.steps) {
        if !order.contains(&s.step.as_str()) {
            order.push(&s.step);
        }
    }
    order
        .into_iter()
        .filter_map(|step| {
            let of_step: Vec<&StepMedian> = ok
                .iter()
                .flat_map(|r| &r.steps)
                .filter(|s| s.step == step)
                .collect();
            Some(StepMedian {
                step: step.to_owned(),
                pods: of_step.iter().map(|s| s.pods).sum(),
                p50_s: median(&of_step.iter().map(|s| s.p50_s).collect::<Vec<_>>())?,
            })
        })
        .collect()
}

fn ratio(x: Option<f64>, floor: Option<f64>) -> Option<f64> {
    match (x, floor) {
        (Some(x), Some(f)) if f > 0.0 => Some(x / f),
        _ => None,
    }
}

fn secs(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}"))
}

fn times(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}×"))
}

/// "Where the time goes": per (N, kubelet) the median offset of each start-up step from the
/// kubelet seeing the pod, from its `-v=2` log; empty when no run has steps.
pub fn render_steps(aggs: &[Aggregate]) -> String {
    let mut s = String::new();
    let timed: Vec<&Aggregate> = aggs.iter().filter(|a| !a.steps.is_empty()).collect();
    if !timed.is_empty() {
        s.push_str(
            "\nWhere the time goes (median offset from the kubelet seeing the pod, s; from each kubelet's `-v=2` log, see `bench/README.md`):\n\n",
        );
        for a in timed {
            let steps: Vec<String> = a
                .steps
                .iter()
                .filter(|st| st.step != "seen")
                .map(|st| format!("{} {:.3}", st.step, st.p50_s))
                .collect();
            let _ = writeln!(
                s,
                "- N={} {}: {}",
                a.pods,
                a.variant.label(),
                steps.join(", ")
            );
        }
    }
    s
}

/// The markdown table: one row per (N, variant), times in seconds (medians over the repeats),
/// ratios against the CRI floor of the same N, then the errors of failed runs.
pub fn render_markdown(aggs: &[Aggregate], goal_ratio: f64) -> String {
    let mut s = String::new();
    s.push_str(
        "| N | variant | ok runs | makespan s | p50 s | p99 s | makespan ×floor | p50 ×floor | p99 ×floor | teardown stopped s | teardown gone s |\n",
    );
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for a in aggs {
        let name = match a.workers {
            Some(w) if a.variant == Variant::Floor => {
                format!("{} ({w} workers)", a.variant.label())
            }
            _ => a.variant.label().to_owned(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} |",
            a.pods,
            name,
            a.ok_runs,
            a.runs,
            secs(a.makespan_s),
            secs(a.p50_s),
            secs(a.p99_s),
            times(a.makespan_ratio),
            times(a.p50_ratio),
            times(a.p99_ratio),
            secs(a.teardown_stopped_s),
            secs(a.teardown_gone_s),
        );
    }
    let verdicts: Vec<String> = aggs
        .iter()
        .filter(|a| a.variant != Variant::Floor)
        .filter_map(|a| {
            let r = a.makespan_ratio?;
            let ok = if r <= goal_ratio { "meets" } else { "misses" };
            Some(format!(
                "N={} {}: makespan {r:.3}× floor {ok} the goal ≤ {goal_ratio}×",
                a.pods,
                a.variant.label()
            ))
        })
        .collect();
    if !verdicts.is_empty() {
        s.push('\n');
        for v in verdicts {
            let _ = writeln!(s, "- {v}");
        }
    }
    s.push_str(&render_steps(aggs));
    let errors: Vec<&Aggregate> = aggs.iter().filter(|a| a.ok_runs < a.runs).collect();
    if !errors.is_empty() {
        s.push('\n');
        for a in errors {
            let _ = writeln!(
                s,
                "- N={} {}: {} of {} runs failed: {}",
                a.pods,
                a.variant.label(),
                a.runs - a.ok_runs,
                a.runs,
                a.first_error.as_deref().unwrap_or("?")
            );
        }
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn run(variant: Variant, pods: usize, repeat: usize, makespan: f64, p50: f64) -> RunRecord {
        RunRecord {
            variant,
            pods,
            repeat,
            workers: (variant == Variant::Floor).then_some(10),
            startup: Some(LatencySummary {
                pods,
                makespan_s: makespan,
                p50_s: p50,
                p90_s: p50,
                p99_s: p50 * 2.0,
                max_s: p50 * 2.0,
            }),
            phases: None,
            teardown_stopped_s: Some(1.0),
            teardown_gone_s: None,
            loadavg_before: String::new(),
            busy_before: None,
            steps: Vec::new(),
            error: None,
            latencies_s: Vec::new(),
            startup_cpu: None,
            steady: None,
            idle: None,
        }
    }

    fn failed(variant: Variant, pods: usize, repeat: usize) -> RunRecord {
        RunRecord {
            startup: None,
            teardown_stopped_s: None,
            error: Some("no container RUNNING after 60 s".into()),
            ..run(variant, pods, repeat, 0.0, 0.0)
        }
    }

    #[test]
    fn medians_and_ratios() {
        let records = vec![
            run(Variant::KubeletRs, 30, 0, 3.0, 1.0),
            run(Variant::Floor, 30, 0, 2.0, 1.0),
            run(Variant::Floor, 30, 1, 4.0, 2.0),
            run(Variant::KubeletRs, 30, 1, 5.0, 3.0),
            run(Variant::Floor, 30, 2, 3.0, 1.5),
            run(Variant::KubeletRs, 30, 2, 3.6, 2.0),
        ];
        let a = aggregate(&records);
        assert_eq!(a.len(), 2);
        assert_eq!(
            (a[0].variant, a[1].variant),
            (Variant::Floor, Variant::KubeletRs)
        );
        assert_eq!(a[0].makespan_s, Some(3.0));
        assert_eq!(a[0].p50_s, Some(1.5));
        assert_eq!(a[0].makespan_ratio, Some(1.0));
        assert_eq!(a[1].makespan_s, Some(3.6));
        assert!((a[1].makespan_ratio.unwrap() - 1.2).abs() < 1e-9);
        assert!((a[1].p50_ratio.unwrap() - 2.0 / 1.5).abs() < 1e-9);
        assert_eq!(a[1].teardown_stopped_s, Some(1.0));
        assert_eq!(a[1].teardown_gone_s, None);
    }

    #[test]
    fn failed_runs_are_counted_and_reported() {
        let records = vec![
            run(Variant::Floor, 100, 0, 7.0, 0.7),
            failed(Variant::KubeletRs, 100, 0),
        ];
        let a = aggregate(&records);
        assert_eq!((a[1].runs, a[1].ok_runs), (1, 0));
        assert_eq!(a[1].makespan_ratio, None);
        let md = render_markdown(&a, 1.2);
        assert!(md.contains("| 100 | kubelet-rs | 0/1 | — |"), "{md}");
        assert!(
            md.contains("N=100 kubelet-rs: 1 of 1 runs failed: no container RUNNING"),
            "{md}"
        );
    }

    #[test]
    fn where_the_time_goes() {
        let step = |name: &str, p50_s| StepMedian {
            step: name.into(),
            pods: 30,
            p50_s,
        };
        let timed = |repeat, ready| RunRecord {
            steps: vec![
                step("seen", 0.0),
                step("admitted", 0.001),
                step("ready", ready),
            ],
            ..run(Variant::KubeletRs, 30, repeat, 2.0, 1.0)
        };
        let records = vec![
            run(Variant::Floor, 30, 0, 2.0, 1.0),
            timed(0, 0.5),
            timed(1, 0.7),
            timed(2, 0.6),
            RunRecord {
                steps: vec![step("seen", 0.0), step("syncStarted", 0.2)],
                ..run(Variant::Upstream, 30, 0, 2.0, 1.0)
            },
            RunRecord {
                steps: vec![step("ready", 9.0)],
                ..failed(Variant::KubeletRs, 30, 3)
            },
        ];
        let a = aggregate(&records);
        assert!(a[0].steps.is_empty());
        assert_eq!(
            a[1].steps,
            [
                step("seen", 0.0),
                step("admitted", 0.001),
                step("ready", 0.6)
            ]
            .map(|s| StepMedian { pods: 90, ..s })
        );
        let md = render_markdown(&a, 1.2);
        assert!(
            md.contains("- N=30 kubelet-rs: admitted 0.001, ready 0.600\n"),
            "{md}"
        );
        assert!(
            md.contains("- N=30 upstream kubelet: syncStarted 0.200\n"),
            "{md}"
        );
        assert!(!md.contains("CRI floor: "), "{md}");
        // The suite writes the same section into its results.md.
        let steps = render_steps(&a);
        assert!(steps.starts_with("\nWhere the time goes"), "{steps}");
        assert!(md.contains(&steps), "{md}");
        assert_eq!(render_steps(&a[..1]), "");
    }

    #[test]
    fn table_rows_and_verdict() {
        let records = vec![
            run(Variant::Floor, 30, 0, 2.0, 1.0),
            run(Variant::KubeletRs, 30, 0, 2.2, 1.1),
            run(Variant::Floor, 100, 0, 7.0, 0.7),
            run(Variant::KubeletRs, 100, 0, 10.5, 1.4),
        ];
        let md = render_markdown(&aggregate(&records), 1.2);
        let lines: Vec<&str> = md.lines().collect();
        assert!(lines[0].starts_with("| N | variant |"));
        assert_eq!(
            lines[2],
            "| 30 | CRI floor (10 workers) | 1/1 | 2.00 | 1.00 | 2.00 | 1.00× | 1.00× | 1.00× | 1.00 | — |"
        );
        assert_eq!(
            lines[3],
            "| 30 | kubelet-rs | 1/1 | 2.20 | 1.10 | 2.20 | 1.10× | 1.10× | 1.10× | 1.00 | — |"
        );
        assert!(lines[5].starts_with("| 100 | kubelet-rs | 1/1 | 10.50 |"));
        assert!(md.contains("- N=30 kubelet-rs: makespan 1.100× floor meets the goal ≤ 1.2×"));
        assert!(md.contains("- N=100 kubelet-rs: makespan 1.500× floor misses the goal ≤ 1.2×"));
    }
}
