//! The `suite` command's table (pure; unit-tested): one row per benchmark figure of
//! perf-anchors §6 (B1–B12), built from the `static-pods` runs, the `cluster-node` JSON and the
//! binary sizes, with medians and spread (min/max) over repetitions, ratios and goals; and the
//! quick mode's comparison with the committed baseline.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::report::{RunRecord, Variant};
use crate::stats::median;

/// Median and spread of one figure over repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Repetitions.
    pub n: usize,
}

impl Spread {
    /// `None` without values (non-finite values are ignored).
    pub fn of(values: &[f64]) -> Option<Self> {
        let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        Some(Self {
            median: median(&v)?,
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            n: v.len(),
        })
    }

    /// (max − min) / median: the relative width of the spread (0 for a zero median).
    pub fn relative_width(&self) -> f64 {
        if self.median > 0.0 {
            (self.max - self.min) / self.median
        } else {
            0.0
        }
    }
}

/// What a row's goal compares.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GoalKind {
    /// kubelet-rs / upstream ≤ the value.
    VsUpstream,
    /// kubelet-rs / floor ≤ the value.
    VsFloor,
}

/// One line of the table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `B1` … `B12`.
    pub id: String,
    /// What is measured.
    pub figure: String,
    /// Unit of the three value columns.
    pub unit: String,
    /// kubelet-rs.
    pub kubelet_rs: Option<Spread>,
    /// The upstream kubelet.
    pub upstream: Option<Spread>,
    /// The raw CRI floor, where one applies.
    pub floor: Option<Spread>,
    /// kubelet-rs / upstream (medians).
    pub ratio_upstream: Option<f64>,
    /// kubelet-rs / floor (medians).
    pub ratio_floor: Option<f64>,
    /// The goal, e.g. `≤ 0.2`.
    pub goal: Option<(GoalKind, f64)>,
    /// Whether the goal is met (`None`: no goal or not measured).
    pub met: Option<bool>,
    /// `not measured: …`, or how the figure was taken.
    pub note: String,
}

impl Row {
    /// A row with figures; ratios and `met` computed.
    pub fn measured(
        id: &str,
        figure: &str,
        unit: &str,
        (kubelet_rs, upstream, floor): (Option<Spread>, Option<Spread>, Option<Spread>),
        goal: Option<(GoalKind, f64)>,
        note: &str,
    ) -> Self {
        let ratio = |a: Option<Spread>, b: Option<Spread>| match (a, b) {
            (Some(a), Some(b)) if b.median > 0.0 => Some(a.median / b.median),
            _ => None,
        };
        let ratio_upstream = ratio(kubelet_rs, upstream);
        let ratio_floor = ratio(kubelet_rs, floor);
        let met = goal.and_then(|(kind, v)| {
            let r = match kind {
                GoalKind::VsUpstream => ratio_upstream,
                GoalKind::VsFloor => ratio_floor,
            }?;
            Some(r <= v)
        });
        Self {
            id: id.into(),
            figure: figure.into(),
            unit: unit.into(),
            kubelet_rs,
            upstream,
            floor,
            ratio_upstream,
            ratio_floor,
            goal,
            met,
            note: note.into(),
        }
    }

    /// A row that no benchmark measures yet: it says so and carries no number.
    pub fn not_measured(id: &str, figure: &str, goal: Option<(GoalKind, f64)>, why: &str) -> Self {
        Self {
            note: format!("not measured: {why}"),
            ..Self::measured(id, figure, "", (None, None, None), goal, "")
        }
    }
}

/// Per-repeat values of `f` for the successful runs of (`pods`, `variant`).
pub fn per_repeat(
    records: &[RunRecord],
    pods: usize,
    variant: Variant,
    f: impl Fn(&RunRecord) -> Option<f64>,
) -> Vec<f64> {
    records
        .iter()
        .filter(|r| r.pods == pods && r.variant == variant && r.error.is_none())
        .filter_map(f)
        .collect()
}

/// Per repeat, `a / b` of the successful runs of the same repeat (interleaved runs are paired).
pub fn paired_ratios(
    records: &[RunRecord],
    pods: usize,
    (a, b): (Variant, Variant),
    f: impl Fn(&RunRecord) -> Option<f64>,
) -> Vec<f64> {
    let find = |v: Variant, rep: usize| {
        records
            .iter()
            .find(|r| r.pods == pods && r.variant == v && r.repeat == rep && r.error.is_none())
            .and_then(&f)
    };
    let mut reps: Vec<usize> = records.iter().map(|r| r.repeat).collect();
    reps.sort_unstable();
    reps.dedup();
    reps.into_iter()
        .filter_map(|rep| match (find(a, rep), find(b, rep)) {
            (Some(x), Some(y)) if y > 0.0 => Some(x / y),
            _ => None,
        })
        .collect()
}

/// The row values of `f` over the successful runs with `n` pods: the kubelet-rs, upstream and
/// (when `with_floor`) floor spreads over the repetitions.
fn spreads(
    records: &[RunRecord],
    n: usize,
    f: &dyn Fn(&RunRecord) -> Option<f64>,
    with_floor: bool,
) -> (Option<Spread>, Option<Spread>, Option<Spread>) {
    let of = |v: Variant| Spread::of(&per_repeat(records, n, v, f));
    (
        of(Variant::KubeletRs),
        of(Variant::Upstream),
        with_floor.then(|| of(Variant::Floor)).flatten(),
    )
}

/// The B4 and B8 rows of the `static-pods` runs, per batch size.
pub fn static_pod_rows(records: &[RunRecord], sizes: &[usize]) -> Vec<Row> {
    let mut rows = Vec::new();
    let makespan = |r: &RunRecord| r.startup.map(|s| s.makespan_s);
    let cpu = |r: &RunRecord| r.startup_cpu.and_then(|c| c.kubelet_cpu_s);
    let cpu_rt = |r: &RunRecord| r.startup_cpu.and_then(|c| c.kubelet_plus_runtime_cpu_s);
    for &n in sizes {
        let three =
            |f: &dyn Fn(&RunRecord) -> Option<f64>, floor: bool| spreads(records, n, f, floor);
        rows.push(Row::measured(
            "B4",
            &format!("{n} static pods → all RUNNING (CRI), makespan"),
            "s",
            three(&makespan, true),
            Some((GoalKind::VsFloor, 1.1)),
            "cgroupsPerQOS true on both kubelets; floor = RunPodSandbox+Create+Start over CRI",
        ));
        rows.push(Row::measured(
            "B4",
            &format!("{n} static pods, kubelet CPU over start-up (own cgroup)"),
            "CPU-s",
            three(&cpu, false),
            None,
            "first rename → all RUNNING; cpuacct of the kubelet's own cgroup",
        ));
        rows.push(Row::measured(
            "B4",
            &format!("{n} static pods, kubelet + containerd CPU over start-up"),
            "CPU-s",
            three(&cpu_rt, false),
            None,
            "kubelet cgroup + containerd + its shims (with the runc runs they reaped)",
        ));
        rows.push(Row::measured(
            "B8",
            &format!("teardown of {n} static pods (manifests removed → none running)"),
            "s",
            three(&|r: &RunRecord| r.teardown_stopped_s, true),
            Some((GoalKind::VsUpstream, 1.0)),
            "bounded by terminationGracePeriodSeconds 1 (sleep ignores SIGTERM); floor stops at once",
        ));
    }
    rows
}

/// The rows of a `cluster-node` JSON document (`runs` of [`crate::cluster::NodeRun`]).
pub fn cluster_rows(doc: &serde_json::Value) -> Vec<Row> {
    let runs: Vec<&serde_json::Value> = doc
        .get("runs")
        .and_then(|r| r.as_array())
        .map(|a| {
            a.iter()
                .filter(|r| r.get("error").is_none_or(|e| e.is_null()))
                .collect()
        })
        .unwrap_or_default();
    let of = |kubelet: &str, f: &dyn Fn(&serde_json::Value) -> Option<f64>| {
        let v: Vec<f64> = runs
            .iter()
            .filter(|r| r.get("kubelet").and_then(|k| k.as_str()) == Some(kubelet))
            .filter_map(|r| f(r))
            .collect();
        Spread::of(&v)
    };
    let pair = |f: &dyn Fn(&serde_json::Value) -> Option<f64>| {
        (of("kubelet-rs", f), of("upstream", f), None)
    };
    let num = |key: &'static str| move |r: &serde_json::Value| r.get(key)?.as_f64();
    let mut rows = vec![
        Row::measured(
            "B1",
            "idle RSS, cluster mode, 30 pods running",
            "MiB",
            pair(&|r| Some(r.get("idle_rss_kib")?.as_f64()? / 1024.0)),
            Some((GoalKind::VsUpstream, 0.2)),
            "VmRSS of the kubelet process at the end of the idle period",
        ),
        Row::measured(
            "B1",
            "idle PSS, cluster mode, 30 pods running",
            "MiB",
            pair(&|r| Some(r.get("idle_pss_kib")?.as_f64()? / 1024.0)),
            None,
            "Pss of the kubelet's smaps_rollup at the end of the idle period (shared pages split)",
        ),
        Row::measured(
            "B2",
            "idle CPU, cluster mode, 30 pods running",
            "CPU-s/min",
            pair(&num("idle_cpu_seconds")),
            Some((GoalKind::VsUpstream, 0.15)),
            "utime+stime of the kubelet process over the idle period",
        ),
        Row::measured(
            "B3",
            "process start → node Ready",
            "ms",
            pair(&num("start_to_ready_ms")),
            Some((GoalKind::VsUpstream, 0.33)),
            "",
        ),
    ];
    let batches: Vec<String> = runs
        .iter()
        .filter_map(|r| r.get("batches")?.as_object())
        .flat_map(|o| o.keys().cloned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for b in &batches {
        for (label, p) in [("p50", 50.0), ("p99", 99.0)] {
            let f = |r: &serde_json::Value| {
                let v: Vec<f64> = r
                    .get("batches")?
                    .get(b)?
                    .as_array()?
                    .iter()
                    .filter_map(serde_json::Value::as_f64)
                    .collect();
                nearest_rank(&v, p)
            };
            rows.push(Row::measured(
                "B5",
                &format!("API pod created → Running, batch {b}, {label}"),
                "ms",
                pair(&f),
                (label == "p99").then_some((GoalKind::VsUpstream, 1.0)),
                "",
            ));
        }
        rows.push(Row::measured(
            "B7",
            &format!("API requests per pod start, batch {b}"),
            "requests",
            pair(&|r| r.get("api_per_pod_start")?.get(b)?.as_f64()),
            Some((GoalKind::VsUpstream, 1.0)),
            "audit log of the API server, user system:node:<node>",
        ));
    }
    rows.push(Row::measured(
        "B7",
        "API requests per idle minute",
        "requests/min",
        pair(&num("api_per_idle_minute")),
        Some((GoalKind::VsUpstream, 1.0)),
        "",
    ));
    let teardown = |key: &'static str| {
        move |r: &serde_json::Value| Some(r.get("teardown")?.get(key)?.as_f64()? / 1000.0)
    };
    let torn = runs
        .iter()
        .find_map(|r| r.get("teardown")?.get("pods")?.as_u64());
    if let Some(n) = torn {
        rows.push(Row::measured(
            "B8",
            &format!("teardown of {n} pods in cluster mode (API delete → none running)"),
            "s",
            pair(&teardown("stopped_ms")),
            Some((GoalKind::VsUpstream, 1.0)),
            "all pods of the first batch deleted through the API at once → the node's containerd \
             shows no ready sandbox and no running container of the namespace; \
             terminationGracePeriodSeconds 1 (sleep ignores SIGTERM)",
        ));
        rows.push(Row::measured(
            "B8",
            &format!("teardown of {n} pods in cluster mode (API delete → pods gone from the API)"),
            "s",
            pair(&teardown("gone_ms")),
            None,
            "as above, until the API lists no pod: the kubelet's final status and the pods' removal",
        ));
    }
    let kills = |f: fn(&[crate::cluster_events::ApiKill]) -> Option<f64>| {
        move |r: &serde_json::Value| {
            let k: Vec<crate::cluster_events::ApiKill> =
                serde_json::from_value(r.get("kills")?.clone()).ok()?;
            f(&k)
        }
    };
    let k = doc.get("kills").and_then(serde_json::Value::as_u64);
    if let Some(k) = k.filter(|&k| k > 0) {
        use crate::cluster_events::{max_api_s, median_api_s, median_cri_s};
        let floor = {
            let v: Vec<f64> = runs.iter().filter_map(|r| kills(median_cri_s)(r)).collect();
            Spread::of(&v)
        };
        let (rs, up, _) = pair(&kills(median_api_s));
        rows.push(Row::measured(
            "B9",
            &format!("container killed from outside → status in the API, median of {k} kills"),
            "s",
            (rs, up, floor),
            Some((GoalKind::VsUpstream, 1.0)),
            "cluster mode: SIGKILL of the init process of a restartPolicy Never pod's container \
             from outside; a watch on the pod, opened before the kill, until the API no longer \
             shows it running with that ID; floor = CRI reports it EXITED (polled every 10 ms); \
             both kubelets: generic PLEG (1 s relist), status manager patch",
        ));
        let (rs, up, _) = pair(&kills(max_api_s));
        rows.push(Row::measured(
            "B9",
            &format!("container killed from outside → status in the API, slowest of {k} kills"),
            "s",
            (rs, up, floor),
            None,
            "as above; floor column: median CRI EXITED time",
        ));
    }
    rows
}

/// Batch size from which steady-state rows are B10 (upstream's default `maxPods`) rather
/// than B6.
pub const B10_PODS: usize = 110;

/// Per method, the median over the successful runs of (`pods`, `variant`) of its calls per
/// minute in the steady window (a method a run did not call counts 0 there).
pub fn cri_method_medians(
    records: &[RunRecord],
    pods: usize,
    variant: Variant,
) -> std::collections::BTreeMap<String, f64> {
    let runs: Vec<&crate::steady::SteadyOutcome> = records
        .iter()
        .filter(|r| r.pods == pods && r.variant == variant && r.error.is_none())
        .filter_map(|r| r.steady.as_ref())
        .collect();
    let methods: std::collections::BTreeSet<&String> = runs
        .iter()
        .flat_map(|o| o.cri_by_method_per_min.keys())
        .collect();
    methods
        .into_iter()
        .filter_map(|m| {
            let v: Vec<f64> = runs
                .iter()
                .map(|o| o.cri_by_method_per_min.get(m).copied().unwrap_or(0.0))
                .collect();
            Some((m.clone(), median(&v)?))
        })
        .collect()
}

/// `Method rate, …` of the `top` busiest methods of a per-method map.
pub fn top_methods(m: &std::collections::BTreeMap<String, f64>, top: usize) -> String {
    let mut v: Vec<(&String, &f64)> = m.iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
    let mut parts: Vec<String> = v
        .iter()
        .take(top)
        .map(|(m, r)| format!("{} {}", m.rsplit('/').next().unwrap_or(m), sig(**r)))
        .collect();
    if v.len() > top {
        parts.push(format!("+{} more", v.len() - top));
    }
    parts.join(", ")
}

/// The B6 (and, at [`B10_PODS`], B10) rows of the steady-state runs: CPU, RSS, PSS and CRI
/// calls per minute over the window; at [`B10_PODS`] also the time to all RUNNING.
pub fn steady_rows(
    records: &[RunRecord],
    sizes: &[usize],
    (window_s, settle_s): (f64, f64),
) -> Vec<Row> {
    let mut rows = Vec::new();
    let st = |f: fn(&crate::steady::SteadyOutcome) -> Option<f64>| {
        move |r: &RunRecord| r.steady.as_ref().and_then(f)
    };
    let window = if window_s >= 60.0 && (window_s % 60.0).abs() < 1e-9 {
        format!("{:.0} min", window_s / 60.0)
    } else {
        format!("{window_s:.0} s")
    };
    for &n in sizes {
        let b10 = n >= B10_PODS;
        let id = if b10 { "B10" } else { "B6" };
        let goal = |v: f64| (!b10).then_some((GoalKind::VsUpstream, v));
        let two = |f: &dyn Fn(&RunRecord) -> Option<f64>| spreads(records, n, f, false);
        if b10 {
            let makespan = |r: &RunRecord| r.startup.map(|s| s.makespan_s);
            rows.push(Row::measured(
                id,
                &format!("{n} static pods → all RUNNING (CRI), makespan"),
                "s",
                spreads(records, n, &makespan, true),
                None,
                "maxPods 110 (default); the kubelets through the CRI counting proxy, the floor direct",
            ));
            rows.push(Row::measured(
                id,
                &format!("{n} static pods, CRI calls over start-up"),
                "calls",
                two(&|r: &RunRecord| Some(r.steady.as_ref()?.cri_calls_startup? as f64)),
                None,
                "counting proxy, first rename → all RUNNING",
            ));
        }
        rows.push(Row::measured(
            id,
            &format!("{n} pods, steady state {window}: kubelet CPU"),
            "CPU-s/min",
            two(&st(|o| o.cpu_s_per_min)),
            goal(0.15),
            &format!(
                "cpuacct of the kubelet's own cgroup over the window, which starts {settle_s:.0} s after all RUNNING"
            ),
        ));
        rows.push(Row::measured(
            id,
            &format!("{n} pods, steady state: kubelet RSS"),
            "MiB",
            two(&st(|o| o.rss_mib)),
            goal(0.2),
            "median of smaps_rollup Rss sampled every 5 s over the window",
        ));
        rows.push(Row::measured(
            id,
            &format!("{n} pods, steady state: kubelet PSS"),
            "MiB",
            two(&st(|o| o.pss_mib)),
            None,
            "median of smaps_rollup Pss",
        ));
        let methods = |v: Variant| top_methods(&cri_method_medians(records, n, v), 4);
        rows.push(Row::measured(
            id,
            &format!("{n} pods, steady state: CRI calls"),
            "calls/min",
            two(&st(|o| Some(o.cri_calls_per_min))),
            goal(1.0),
            &format!(
                "counting proxy; kubelet-rs: {}; upstream: {}",
                methods(Variant::KubeletRs),
                methods(Variant::Upstream)
            ),
        ));
        rows.push(Row::measured(
            id,
            &format!("{n} pods, steady state: kubelet + containerd CPU"),
            "CPU-s/min",
            two(&st(|o| o.cpu_with_runtime_s_per_min)),
            None,
            "the kubelet's cgroup plus the containerd serving it and its shims over the window: what its CRI calls cost the runtime is charged to it",
        ));
    }
    rows
}

/// The per-method table of the steady-state runs (medians of calls per minute).
pub fn render_cri_methods(records: &[RunRecord], sizes: &[usize]) -> String {
    let mut s = String::from(
        "| pods | CRI method | kubelet-rs calls/min | upstream calls/min |\n|---|---|---|---|\n",
    );
    for &n in sizes {
        let rs = cri_method_medians(records, n, Variant::KubeletRs);
        let up = cri_method_medians(records, n, Variant::Upstream);
        let methods: std::collections::BTreeSet<&String> = rs.keys().chain(up.keys()).collect();
        for m in methods {
            let cell = |x: Option<&f64>| x.map_or_else(|| "0".to_owned(), |v| sig(*v));
            let _ = writeln!(
                s,
                "| {n} | {m} | {} | {} |",
                cell(rs.get(m)),
                cell(up.get(m))
            );
        }
    }
    s
}

/// Nearest-rank percentile of unsorted values.
pub fn nearest_rank(values: &[f64], p: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v.get(rank.clamp(1, v.len()) - 1).copied()
}

/// Rows of the benchmarks this run did not measure (B1/B2 standalone and B3 first static pod
/// unless `with_standalone`, B6 and B10 unless `with_steady`, the cluster rows unless
/// `with_cluster`): explicit, with no number. B9 has its command (`crate::event_detect`); the
/// suite adds its rows, or `event_detect::b9_not_measured` when it did not run it.
pub fn unmeasured_rows(with_cluster: bool, with_steady: bool, with_standalone: bool) -> Vec<Row> {
    let mut rows = vec![
        Row::not_measured(
            "B1",
            "idle RSS and PSS, standalone, 0 and 30 pods",
            Some((GoalKind::VsUpstream, 0.2)),
            "standalone runs not made (--no-standalone or --quick)",
        ),
        Row::not_measured(
            "B2",
            "idle CPU, standalone, 0 and 30 pods",
            Some((GoalKind::VsUpstream, 0.15)),
            "standalone runs not made (--no-standalone or --quick)",
        ),
        Row::not_measured(
            "B3",
            "process start → first static pod Running",
            Some((GoalKind::VsUpstream, 0.33)),
            "standalone runs not made (--no-standalone or --quick)",
        ),
        Row::not_measured(
            "B6",
            "steady state 30/100 pods for 5 min: CPU, RSS, CRI calls per minute by method",
            Some((GoalKind::VsUpstream, 1.0)),
            "steady-state runs not made (--no-steady or --quick)",
        ),
        Row::not_measured(
            "B10",
            "110 pods on one node: time to all Running, steady-state cost",
            None,
            "steady-state runs not made (--no-steady or --quick)",
        ),
    ];
    if with_steady {
        rows.retain(|r| r.id != "B6" && r.id != "B10");
    }
    if with_standalone {
        rows.retain(|r| !["B1", "B2", "B3"].contains(&r.id.as_str()));
    }
    if !with_cluster {
        for (id, what) in [
            ("B1", "idle RSS, cluster mode"),
            ("B2", "idle CPU, cluster mode"),
            ("B3", "process start → node Ready"),
            ("B5", "API pod startup latency p50/p99"),
            ("B7", "API requests per pod start and per idle minute"),
            ("B8", "teardown in cluster mode (API delete → none running)"),
            ("B9", "container killed from outside → status in the API"),
        ] {
            rows.push(Row::not_measured(
                id,
                what,
                None,
                "cluster-node not run (--no-cluster)",
            ));
        }
    }
    rows
}

/// Standalone rows from the suite's standalone runs: B3 from the runs whose one manifest was
/// in place before exec (`start`), B1/B2 with no pod from the idle windows (`idle`), and B1/B2
/// with 30 pods from the steady-state window at N = 30 (`steady`, when it was measured).
pub fn standalone_rows(start: &[RunRecord], idle: &[RunRecord], steady: &[RunRecord]) -> Vec<Row> {
    let first_pod = |r: &RunRecord| r.startup.map(|s| s.makespan_s * 1000.0);
    let mut rows = vec![Row::measured(
        "B3",
        "process start → first static pod RUNNING (CRI)",
        "ms",
        spreads(start, 1, &first_pod, true),
        Some((GoalKind::VsUpstream, 0.33)),
        "one manifest in place before exec; exec → its container RUNNING in ListContainers; floor: the same pod through CRI alone",
    )];
    type Pick = fn(&crate::steady::SteadyOutcome) -> Option<f64>;
    let figures: [(&str, &str, &str, Pick, f64); 3] = [
        ("B1", "idle RSS", "MiB", |o| o.rss_mib, 0.2),
        ("B1", "idle PSS", "MiB", |o| o.pss_mib, 0.2),
        ("B2", "idle CPU", "CPU-s/min", |o| o.cpu_s_per_min, 0.15),
    ];
    let steady_at_30 = steady.iter().any(|r| r.pods == 30 && r.steady.is_some());
    for (id, what, unit, pick, goal) in figures {
        let of_idle = move |r: &RunRecord| r.idle.as_ref().and_then(pick);
        rows.push(Row::measured(
            id,
            &format!("{what}, standalone, no pod"),
            unit,
            spreads(idle, 1, &of_idle, false),
            Some((GoalKind::VsUpstream, goal)),
            "an idle window after /healthz and 30 s, before any manifest (smaps_rollup every 5 s, the kubelet's cgroup cpuacct)",
        ));
        let figure = format!("{what}, standalone, 30 pods");
        let goal = Some((GoalKind::VsUpstream, goal));
        rows.push(if steady_at_30 {
            let of_steady = move |r: &RunRecord| r.steady.as_ref().and_then(pick);
            Row::measured(
                id,
                &figure,
                unit,
                spreads(steady, 30, &of_steady, false),
                goal,
                "the B6 steady-state window with 30 pods",
            )
        } else {
            Row::not_measured(id, &figure, goal, "no steady-state run with 30 pods")
        });
    }
    rows
}

/// The B12 row: stripped binary sizes in MB (10^6 bytes).
pub fn size_row(kubelet_rs: Option<u64>, upstream: Option<u64>, note: &str) -> Row {
    let mb = |b: Option<u64>| b.and_then(|b| Spread::of(&[b as f64 / 1e6]));
    Row::measured(
        "B12",
        "stripped binary size",
        "MB",
        (mb(kubelet_rs), mb(upstream), None),
        Some((GoalKind::VsUpstream, 0.2)),
        note,
    )
}

/// Orders rows by benchmark number (B1 < B2 < … < B12), keeping the order within one id.
pub fn sort_rows(rows: &mut [Row]) {
    rows.sort_by_key(|r| {
        r.id.trim_start_matches('B')
            .parse::<u32>()
            .unwrap_or(u32::MAX)
    });
}

fn spread_cell(s: Option<Spread>) -> String {
    match s {
        None => "—".into(),
        Some(s) if s.n <= 1 => sig(s.median),
        Some(s) => format!("{} ({}–{})", sig(s.median), sig(s.min), sig(s.max)),
    }
}

/// Three significant figures, without exponent for ordinary values.
pub fn sig(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The Markdown table of the rows.
pub fn render_rows(rows: &[Row]) -> String {
    let mut s = String::from(
        "| id | figure | unit | kubelet-rs median (min–max) | upstream | CRI floor | kubelet-rs / upstream | kubelet-rs / floor | goal | met? | note |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let goal = match r.goal {
            Some((GoalKind::VsUpstream, v)) => format!("≤ {v} × upstream"),
            Some((GoalKind::VsFloor, v)) => format!("≤ {v} × floor"),
            None => "—".into(),
        };
        let met = match (r.met, r.kubelet_rs.is_some()) {
            (Some(true), _) => "yes",
            (Some(false), _) => "**no**",
            (None, false) if r.note.starts_with("not measured") => "not measured",
            (None, _) => "—",
        };
        let ratio = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}"));
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.id,
            r.figure,
            r.unit,
            spread_cell(r.kubelet_rs),
            spread_cell(r.upstream),
            spread_cell(r.floor),
            ratio(r.ratio_upstream),
            ratio(r.ratio_floor),
            goal,
            met,
            r.note
        );
    }
    s
}

/// One figure of the quick mode: a ratio per repetition (never an absolute time).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuickFigure {
    /// Stable name, e.g. `B4 N=10 makespan kubelet-rs/floor`.
    pub name: String,
    /// The ratios of the repetitions.
    pub ratios: Vec<f64>,
    /// Median and spread of `ratios`.
    pub spread: Spread,
}

/// The quick mode's figures of `static-pods` runs at `pods` pods: kubelet-rs makespan over the
/// floor's and over upstream's, paired per repetition.
pub fn quick_figures(records: &[RunRecord], pods: usize) -> Vec<QuickFigure> {
    let makespan = |r: &RunRecord| r.startup.map(|s| s.makespan_s);
    let mut out = Vec::new();
    for (name, other) in [
        (
            format!("B4 N={pods} makespan kubelet-rs/floor"),
            Variant::Floor,
        ),
        (
            format!("B4 N={pods} makespan kubelet-rs/upstream"),
            Variant::Upstream,
        ),
    ] {
        let ratios = paired_ratios(records, pods, (Variant::KubeletRs, other), makespan);
        if let Some(spread) = Spread::of(&ratios) {
            out.push(QuickFigure {
                name,
                ratios,
                spread,
            });
        }
    }
    out
}

/// The committed quick-mode baseline (`bench/results/quick-baseline.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// `true` when recorded on a busy machine: to be re-recorded on a quiet one.
    pub provisional: bool,
    /// Where and how it was recorded.
    pub note: String,
    /// Commit it was recorded at.
    pub commit: String,
    /// When (UTC).
    pub recorded_at: String,
    /// The figures.
    pub figures: Vec<QuickFigure>,
}

/// Smallest noise band: a ratio may rise by 10 % before it counts, however steady the
/// repetitions were.
pub const MIN_BAND: f64 = 0.10;

/// Outcome of one figure's comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// The figure.
    pub name: String,
    /// Baseline median ratio.
    pub baseline: f64,
    /// This run's median ratio.
    pub current: f64,
    /// Relative band allowed.
    pub band: f64,
    /// `current > baseline × (1 + band)`.
    pub regressed: bool,
}

/// Compares each current figure with the baseline's figure of the same name. The noise band of
/// a figure is the widest of: [`MIN_BAND`], the relative width (max − min)/median of the
/// baseline's repetitions, and that of this run's. A figure regresses when its median ratio
/// exceeds the baseline's median × (1 + band). Figures missing on either side are skipped (and
/// listed by the caller).
pub fn compare(baseline: &Baseline, current: &[QuickFigure]) -> Vec<Verdict> {
    current
        .iter()
        .filter_map(|c| {
            let b = baseline.figures.iter().find(|b| b.name == c.name)?;
            let band = MIN_BAND
                .max(b.spread.relative_width())
                .max(c.spread.relative_width());
            Some(Verdict {
                name: c.name.clone(),
                baseline: b.spread.median,
                current: c.spread.median,
                band,
                regressed: c.spread.median > b.spread.median * (1.0 + band),
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::stats::LatencySummary;

    fn rec(variant: Variant, pods: usize, repeat: usize, makespan: f64) -> RunRecord {
        RunRecord {
            variant,
            pods,
            repeat,
            workers: None,
            startup: Some(LatencySummary {
                pods,
                makespan_s: makespan,
                p50_s: makespan,
                p90_s: makespan,
                p99_s: makespan,
                max_s: makespan,
            }),
            phases: None,
            teardown_stopped_s: Some(makespan * 2.0),
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

    fn steady_rec(variant: Variant, pods: usize, repeat: usize, cpu: f64) -> RunRecord {
        let mut r = rec(variant, pods, repeat, 2.0);
        let mut by = std::collections::BTreeMap::new();
        by.insert("RuntimeService/ListContainers".to_owned(), cpu * 10.0);
        if variant == Variant::Upstream {
            by.insert("ImageService/ImageFsInfo".to_owned(), 6.0);
        }
        r.steady = Some(crate::steady::SteadyOutcome {
            window_s: 300.0,
            cpu_s_per_min: Some(cpu),
            cpu_with_runtime_s_per_min: Some(cpu * 10.0),
            cpu_in_cgroup: true,
            rss_mib: Some(cpu * 100.0),
            rss_max_mib: None,
            pss_mib: None,
            cri_calls_per_min: by.values().sum(),
            cri_by_method_per_min: by,
            cri_calls_startup: None,
            samples: Vec::new(),
        });
        r
    }

    #[test]
    fn standalone_rows_b1_b2_b3() {
        let (mut start, mut idle, mut steady) = (Vec::new(), Vec::new(), Vec::new());
        for rep in 0..3 {
            let f = rep as f64;
            start.push(rec(Variant::KubeletRs, 1, rep, 0.2 + f * 0.01));
            start.push(rec(Variant::Upstream, 1, rep, 1.0 + f * 0.1));
            for (v, cpu) in [(Variant::KubeletRs, 0.05), (Variant::Upstream, 1.0)] {
                let mut r = steady_rec(v, 1, rep, cpu + f * 0.01);
                r.idle = r.steady.take();
                idle.push(r);
            }
            steady.push(steady_rec(Variant::KubeletRs, 30, rep, 0.2));
            steady.push(steady_rec(Variant::Upstream, 30, rep, 2.0));
        }
        let rows = standalone_rows(&start, &idle, &steady);
        let figs: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.id.as_str(), r.figure.as_str()))
            .collect();
        assert_eq!(
            figs,
            [
                ("B3", "process start → first static pod RUNNING (CRI)"),
                ("B1", "idle RSS, standalone, no pod"),
                ("B1", "idle RSS, standalone, 30 pods"),
                ("B1", "idle PSS, standalone, no pod"),
                ("B1", "idle PSS, standalone, 30 pods"),
                ("B2", "idle CPU, standalone, no pod"),
                ("B2", "idle CPU, standalone, 30 pods"),
            ]
        );
        // B3 in ms, the median of the repetitions.
        assert!((rows[0].kubelet_rs.unwrap().median - 210.0).abs() < 1e-9);
        assert!((rows[0].upstream.unwrap().median - 1100.0).abs() < 1e-9);
        assert_eq!(rows[0].met, Some(true));
        assert_eq!(rows[0].floor, None);
        start.push(rec(Variant::Floor, 1, 0, 0.15));
        let with_floor = standalone_rows(&start, &idle, &steady);
        assert!((with_floor[0].floor.unwrap().median - 150.0).abs() < 1e-9);
        // No pod: the idle windows; 30 pods: the steady windows.
        assert!((rows[5].kubelet_rs.unwrap().median - 0.06).abs() < 1e-9);
        assert!((rows[6].ratio_upstream.unwrap() - 0.1).abs() < 1e-9);
        assert!((rows[1].kubelet_rs.unwrap().median - 6.0).abs() < 1e-9);
        // The PSS of the fake windows is unknown: no number, no verdict.
        assert_eq!(rows[3].kubelet_rs, None);
        assert_eq!(rows[3].met, None);
        // Without a 30-pod steady run those rows say so.
        let rows = standalone_rows(&start, &idle, &[]);
        assert!(rows[2].note.starts_with("not measured"), "{}", rows[2].note);
        // Measured: B1/B2/B3 standalone leave the unmeasured rows.
        assert!(
            unmeasured_rows(true, true, true)
                .iter()
                .all(|r| !["B1", "B2", "B3"].contains(&r.id.as_str()))
        );
        assert!(
            unmeasured_rows(true, true, false)
                .iter()
                .any(|r| r.id == "B3")
        );
    }

    #[test]
    fn steady_rows_b6_and_b10() {
        let mut recs = Vec::new();
        for rep in 0..3 {
            let f = rep as f64;
            recs.push(rec(Variant::Floor, 110, rep, 10.0));
            for n in [30, 110] {
                recs.push(steady_rec(Variant::KubeletRs, n, rep, 0.1 + f * 0.01));
                recs.push(steady_rec(Variant::Upstream, n, rep, 1.0 + f * 0.1));
            }
        }
        // The floor's records have no steady outcome: no value in the steady rows.
        let rows = steady_rows(&recs, &[30, 110], (300.0, 30.0));
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "B6", "B6", "B6", "B6", "B6", "B10", "B10", "B10", "B10", "B10", "B10", "B10"
            ]
        );
        let cpu = &rows[0];
        assert_eq!(cpu.unit, "CPU-s/min");
        assert!((cpu.kubelet_rs.unwrap().median - 0.11).abs() < 1e-9);
        assert!((cpu.ratio_upstream.unwrap() - 0.1).abs() < 1e-9);
        assert_eq!(cpu.met, Some(true));
        assert!(cpu.figure.contains("steady state 5 min:"), "{}", cpu.figure);
        let short = steady_rows(&recs, &[30], (30.0, 10.0));
        assert!(short[0].figure.contains("steady state 30 s:"));
        assert!(short[0].note.contains("starts 10 s after"));
        let cri = &rows[3];
        assert!((cri.upstream.unwrap().median - 17.0).abs() < 1e-9);
        assert!(
            cri.note.contains(
                "kubelet-rs: ListContainers 1.10; upstream: ListContainers 11.0, ImageFsInfo 6.00"
            ),
            "{}",
            cri.note
        );
        // The second CPU figure: kubelet + containerd (no goal).
        let with_rt = &rows[4];
        assert!(with_rt.figure.contains("kubelet + containerd CPU"));
        assert!((with_rt.kubelet_rs.unwrap().median - 1.1).abs() < 1e-9);
        assert!((with_rt.upstream.unwrap().median - 11.0).abs() < 1e-9);
        assert_eq!(with_rt.goal, None);
        let b10 = &rows[5];
        assert!(b10.figure.contains("makespan"));
        assert_eq!(b10.floor.unwrap().median, 10.0);
        assert_eq!(b10.goal, None);
        assert_eq!(rows[6].unit, "calls");
        assert_eq!(rows[6].kubelet_rs, None);
        assert_eq!(rows[7].goal, None);
        // Per method: a method a run did not call counts 0 there.
        let up = cri_method_medians(&recs, 30, Variant::Upstream);
        assert_eq!(up["ImageService/ImageFsInfo"], 6.0);
        let md = render_cri_methods(&recs, &[30]);
        assert!(
            md.contains("| 30 | ImageService/ImageFsInfo | 0 | 6.00 |"),
            "{md}"
        );
        // Measured: B6 and B10 leave the unmeasured rows.
        assert!(
            unmeasured_rows(true, true, false)
                .iter()
                .all(|r| r.id != "B6" && r.id != "B10")
        );
        assert!(
            unmeasured_rows(true, false, false)
                .iter()
                .any(|r| r.id == "B6")
        );
    }

    #[test]
    fn spread_and_width() {
        let s = Spread::of(&[3.0, 1.0, 2.0, f64::NAN]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        assert!((s.relative_width() - 1.0).abs() < 1e-9);
        assert!(Spread::of(&[]).is_none());
    }

    #[test]
    fn paired_ratios_pair_by_repeat_and_skip_failures() {
        let mut failed = rec(Variant::KubeletRs, 10, 2, 9.0);
        failed.error = Some("x".into());
        let recs = vec![
            rec(Variant::Floor, 10, 0, 2.0),
            rec(Variant::KubeletRs, 10, 0, 3.0),
            rec(Variant::Floor, 10, 1, 4.0),
            rec(Variant::KubeletRs, 10, 1, 5.0),
            rec(Variant::Floor, 10, 2, 1.0),
            failed,
        ];
        let r = paired_ratios(&recs, 10, (Variant::KubeletRs, Variant::Floor), |r| {
            r.startup.map(|s| s.makespan_s)
        });
        assert_eq!(r, vec![1.5, 1.25]);
    }

    #[test]
    fn rows_compute_ratios_and_goals() {
        let recs = vec![
            rec(Variant::Floor, 30, 0, 2.0),
            rec(Variant::KubeletRs, 30, 0, 2.1),
            rec(Variant::Upstream, 30, 0, 4.0),
        ];
        let rows = static_pod_rows(&recs, &[30]);
        let b4 = &rows[0];
        assert_eq!(b4.id, "B4");
        assert!((b4.ratio_floor.unwrap() - 1.05).abs() < 1e-9);
        assert_eq!(b4.met, Some(true));
        let b8 = rows.iter().find(|r| r.id == "B8").unwrap();
        assert!((b8.ratio_upstream.unwrap() - 0.525).abs() < 1e-9);
        // No CPU figures in these records: the CPU rows have no numbers and no verdict.
        assert!(rows[1].kubelet_rs.is_none() && rows[1].met.is_none());
        let nm = Row::not_measured("B9", "x", Some((GoalKind::VsUpstream, 1.0)), "why");
        assert_eq!(nm.met, None);
        let md = render_rows(&[nm]);
        assert!(md.contains("not measured: why"), "{md}");
        assert!(md.contains("| not measured |"), "{md}");
    }

    #[test]
    fn cluster_rows_from_json() {
        let doc = serde_json::json!({"runs": [
            {"kubelet": "kubelet-rs", "start_to_ready_ms": 50.0, "idle_rss_kib": 20480,
             "idle_cpu_seconds": 0.2, "api_per_idle_minute": 6.0,
             "batches": {"30@1": [100.0, 200.0, 300.0]}, "api_per_pod_start": {"30@1": 7.0}},
            {"kubelet": "upstream", "start_to_ready_ms": 500.0, "idle_rss_kib": 102400,
             "idle_cpu_seconds": 1.0, "api_per_idle_minute": 30.0,
             "batches": {"30@1": [400.0, 500.0, 600.0]}, "api_per_pod_start": {"30@1": 11.0}},
            {"kubelet": "upstream", "error": "boom"}
        ]});
        let rows = cluster_rows(&doc);
        let b1 = rows.iter().find(|r| r.id == "B1").unwrap();
        assert!((b1.ratio_upstream.unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(b1.met, Some(true));
        let p99 = rows.iter().find(|r| r.figure.contains("p99")).unwrap();
        assert!((p99.ratio_upstream.unwrap() - 0.5).abs() < 1e-9);
        assert!(
            rows.iter()
                .any(|r| r.id == "B7" && r.figure.contains("idle"))
        );
        // A document without teardown or kills (written before them) has no B8/B9 rows.
        assert!(!rows.iter().any(|r| r.id == "B8" || r.id == "B9"));
    }

    #[test]
    fn cluster_rows_b8_teardown_and_b9_kills_seen_in_the_api() {
        let kill = |api: f64, cri: f64| {
            serde_json::json!({"pod": "k-0", "container_id": "c", "pid": 1, "pause_s": 1.0,
                               "api_status_s": api, "status_seen": "terminated", "cri_exited_s": cri})
        };
        let doc = serde_json::json!({"kills": 3, "runs": [
            {"kubelet": "kubelet-rs", "teardown": {"pods": 30, "stopped_ms": 4000.0, "gone_ms": 5000.0},
             "kills": [kill(0.5, 0.05), kill(0.7, 0.07), kill(0.6, 0.06)]},
            {"kubelet": "upstream", "teardown": {"pods": 30, "stopped_ms": 5000.0, "gone_ms": 8000.0},
             "kills": [kill(0.8, 0.05), kill(1.0, 0.05), kill(0.9, 0.05)]},
        ]});
        let rows = cluster_rows(&doc);
        let b8: Vec<&Row> = rows.iter().filter(|r| r.id == "B8").collect();
        assert_eq!(b8.len(), 2);
        assert!(b8[0].figure.contains("30 pods") && b8[0].figure.contains("none running"));
        assert!((b8[0].ratio_upstream.unwrap() - 0.8).abs() < 1e-9);
        assert_eq!(b8[0].met, Some(true));
        assert!((b8[1].ratio_upstream.unwrap() - 0.625).abs() < 1e-9);
        let b9: Vec<&Row> = rows.iter().filter(|r| r.id == "B9").collect();
        assert_eq!(b9.len(), 2);
        assert!(b9[0].figure.contains("median of 3 kills"));
        assert!((b9[0].ratio_upstream.unwrap() - 0.6 / 0.9).abs() < 1e-9);
        // Floor: the median over both runs of each run's median CRI EXITED time.
        assert!((b9[0].floor.unwrap().median - 0.055).abs() < 1e-9);
        assert!((b9[1].kubelet_rs.unwrap().median - 0.7).abs() < 1e-9);
    }

    #[test]
    fn quick_comparison_uses_the_widest_band() {
        let fig = |name: &str, ratios: &[f64]| QuickFigure {
            name: name.into(),
            ratios: ratios.to_vec(),
            spread: Spread::of(ratios).unwrap(),
        };
        let baseline = Baseline {
            provisional: false,
            note: String::new(),
            commit: String::new(),
            recorded_at: String::new(),
            figures: vec![fig("a", &[1.0, 1.02, 1.04]), fig("b", &[1.0, 1.3, 1.6])],
        };
        // a: band 10 % (steady reps) -> 1.2 regresses; b: band 60 % -> 1.5 does not.
        let v = compare(
            &baseline,
            &[
                fig("a", &[1.19, 1.2, 1.21]),
                fig("b", &[1.5, 1.5, 1.5]),
                fig("c", &[9.0]),
            ],
        );
        assert_eq!(v.len(), 2);
        assert!(v[0].regressed && (v[0].band - MIN_BAND).abs() < 1e-9);
        assert!(!v[1].regressed && (v[1].band - 0.6 / 1.3).abs() < 1e-9);
        let ok = compare(&baseline, &[fig("a", &[1.05, 1.1, 1.12])]);
        assert!(!ok[0].regressed);
    }

    #[test]
    fn cluster_rows_of_a_recorded_cluster_node_run() {
        // A JSON written by `cluster-node` before idle samples existed.
        let text = include_str!("../results/2026-12-01-cluster-node-s9-idle150.json");
        let doc: serde_json::Value = serde_json::from_str(text).unwrap();
        let rows = cluster_rows(&doc);
        for id in ["B1", "B2", "B3", "B5", "B7"] {
            let r = rows.iter().find(|r| r.id == id).unwrap();
            assert!(r.ratio_upstream.is_some(), "{id}: {r:?}");
        }
        assert_eq!(rows.iter().filter(|r| r.id == "B5").count(), 4);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v = [3.0, 1.0, 2.0, 4.0];
        assert_eq!(nearest_rank(&v, 50.0), Some(2.0));
        assert_eq!(nearest_rank(&v, 99.0), Some(4.0));
        assert_eq!(nearest_rank(&[], 50.0), None);
    }
}
