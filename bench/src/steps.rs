//! Where each kubelet's start-up time goes, from its own log at `-v=2` (pure; unit-tested).
//!
//! - kubelet-rs: the `"Pod startup timeline"` line it logs at the pod's first Ready (its pod
//!   startup timeline, `ARCHITECTURE.md` "Pod startup timeline"): every step's offset from
//!   `seen`, read from a monotonic clock. Per-container steps (`containerStarted(c)`) count
//!   at their last container.
//! - upstream: it has no such line, so the steps are the times of the lines it logs at `-v=2`
//!   for a static pod in standalone mode: `seen` = `"SyncLoop ADD"`, `syncStarted` = the first
//!   `"No sandbox for pod can be found. Need to start a new one"` (its first `SyncPod`),
//!   `plegContainerStarted` = the last `"SyncLoop (PLEG): event for pod"` of type
//!   `ContainerStarted` (the sandbox and containers seen running by a relist, so up to one
//!   relist period, 1 s, after they started). Offsets come from the klog header times
//!   (microseconds, wall clock). Upstream logs nothing at `-v=2` when a static pod becomes
//!   Ready in standalone mode (its status manager does not log there, and
//!   `"Observed pod startup duration"` needs the API server), so it has no `ready` step.
//!
//! For each step: the median over the batch's pods of its offset from `seen`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::stats::median;

/// One step of a batch: the median over its pods of the offset from `seen`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepMedian {
    /// The step's name (kubelet-rs: its timeline's; upstream: see the module doc).
    pub step: String,
    /// Pods that logged the step.
    pub pods: usize,
    /// Median offset from `seen`, seconds.
    pub p50_s: f64,
}

/// The steps of every pod in the log of one kubelet run, kubelet-rs's timeline lines if the
/// log has any, else upstream's lines; only pods of `namespace`. Empty when neither is there.
pub fn from_log(log: &str, namespace: &str) -> Vec<StepMedian> {
    let rs = kubelet_rs_pods(log, namespace);
    if rs.is_empty() {
        medians(&upstream_pods(log, namespace))
    } else {
        medians(&rs)
    }
}

/// Per pod (`namespace/name`), in order of first appearance: each step and its offset (s).
type PodSteps = BTreeMap<String, Vec<(String, f64)>>;

/// Medians per step, steps in the order they first appear in the pods' lists.
fn medians(pods: &PodSteps) -> Vec<StepMedian> {
    let mut order: Vec<&str> = Vec::new();
    for steps in pods.values() {
        for (step, _) in steps {
            if !order.contains(&step.as_str()) {
                order.push(step);
            }
        }
    }
    order
        .into_iter()
        .filter_map(|step| {
            let values: Vec<f64> = pods
                .values()
                .filter_map(|steps| {
                    steps
                        .iter()
                        .filter(|(s, _)| s == step)
                        .map(|(_, v)| *v)
                        .reduce(f64::max)
                })
                .collect();
            Some(StepMedian {
                step: step.to_owned(),
                pods: values.len(),
                p50_s: median(&values)?,
            })
        })
        .collect()
}

fn kubelet_rs_pods(log: &str, namespace: &str) -> PodSteps {
    let prefix = format!("{namespace}/");
    let mut out = PodSteps::new();
    for line in log.lines() {
        if !line.contains("] \"Pod startup timeline\"") {
            continue;
        }
        let (Some(pod), Some(steps)) = (quoted(line, "pod"), quoted(line, "steps")) else {
            continue;
        };
        if !pod.starts_with(&prefix) {
            continue;
        }
        let parsed: Vec<(String, f64)> = steps
            .split(' ')
            .filter_map(|part| {
                let (step, since) = part.rsplit_once('=')?;
                let step = step.split_once('(').map_or(step, |(s, _)| s);
                Some((step.to_owned(), go_duration_seconds(since)?))
            })
            .collect();
        out.insert(pod.to_owned(), parsed);
    }
    out
}

fn upstream_pods(log: &str, namespace: &str) -> PodSteps {
    let prefix = format!("\"{namespace}/");
    // Per pod: seen, first sync, last PLEG ContainerStarted (seconds of the day).
    let mut times: BTreeMap<String, [Option<f64>; 3]> = BTreeMap::new();
    for line in log.lines() {
        let slot = if line.contains("] \"SyncLoop ADD\"") {
            0
        } else if line.contains("] \"No sandbox for pod can be found. Need to start a new one\"") {
            1
        } else if line.contains("] \"SyncLoop (PLEG): event for pod\"")
            && line.contains("\"Type\":\"ContainerStarted\"")
        {
            2
        } else {
            continue;
        };
        let Some(t) = klog_seconds_of_day(line) else {
            continue;
        };
        // Every `"namespace/name"` on the line (`pods=[…]` of an ADD may name several).
        let mut rest = line;
        while let Some(i) = rest.find(&prefix) {
            let after = &rest[i + 1..];
            let Some(end) = after.find('"') else { break };
            let pod = &after[..end];
            let e = times.entry(pod.to_owned()).or_default();
            e[slot] = match (slot, e[slot]) {
                (2, Some(prev)) => Some(prev.max(t)),
                (_, Some(prev)) => Some(prev),
                (_, None) => Some(t),
            };
            rest = &after[end..];
        }
    }
    times
        .into_iter()
        .filter_map(|(pod, [seen, sync, started])| {
            let seen = seen?;
            // A run crossing midnight: the header has no date.
            let since = |t: f64| {
                let d = t - seen;
                if d < -43_200.0 { d + 86_400.0 } else { d }
            };
            let mut steps = vec![("seen".to_owned(), 0.0)];
            steps.extend(sync.map(|t| ("syncStarted".to_owned(), since(t))));
            steps.extend(started.map(|t| ("plegContainerStarted".to_owned(), since(t))));
            Some((pod, steps))
        })
        .collect()
}

/// The value of `key="…"` on a klog text line (no escapes inside).
fn quoted<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!(" {key}=\""))? + key.len() + 3;
    let rest = &line[start..];
    Some(&rest[..rest.find('"')?])
}

/// `I1201 15:04:05.123456 …`: the time of day in seconds.
fn klog_seconds_of_day(line: &str) -> Option<f64> {
    let time = line.get(6..21)?;
    let mut parts = time.splitn(3, ':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

/// A Go `time.Duration` string (`0s`, `412µs`, `1.5ms`, `2m3.5s`, `1h0m0s`) in seconds.
pub fn go_duration_seconds(s: &str) -> Option<f64> {
    if s == "0" {
        return Some(0.0);
    }
    if s.is_empty() {
        return None;
    }
    let mut total = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|&i| i > 0)?;
        let value: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let (unit, len) = [
            ("ns", 1e-9),
            ("µs", 1e-6),
            ("μs", 1e-6),
            ("us", 1e-6),
            ("ms", 1e-3),
            ("s", 1.0),
            ("m", 60.0),
            ("h", 3600.0),
        ]
        .into_iter()
        .find(|(u, _)| rest.starts_with(u))
        .map(|(u, f)| (f, u.len()))?;
        total += value * unit;
        rest = &rest[len..];
    }
    Some(total)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn go_durations() {
        for (s, want) in [
            ("0s", 0.0),
            ("412µs", 412e-6),
            ("1.5ms", 1.5e-3),
            ("2.1s", 2.1),
            ("2m3.5s", 123.5),
            ("1h0m0s", 3600.0),
            ("750ns", 750e-9),
        ] {
            assert!(close(go_duration_seconds(s).unwrap(), want), "{s}");
        }
        for bad in ["", "s", "1x", "ms1"] {
            assert_eq!(go_duration_seconds(bad), None, "{bad}");
        }
    }

    #[test]
    fn kubelet_rs_timeline_lines() {
        let log = "\
I1201 15:50:01.000001    7 sync_loop.rs:1] \"SyncLoop ADD\" source=\"file\" pods=[\"krsbench/a-krsbench-node\"]
I1201 15:50:02.000000    7 timeline.rs:1] \"Pod startup timeline\" pod=\"krsbench/a-krsbench-node\" podUID=\"u1\" steps=\"seen=0s admitted=412µs workerStarted=1ms sandboxCreated=100ms networkReady=110ms imagePulled(sleeper)=111ms containerCreated(sleeper)=150ms containerStarted(sleeper)=200ms ready=300ms\"
I1201 15:50:02.000000    7 timeline.rs:1] \"Pod startup timeline\" pod=\"krsbench/b-krsbench-node\" podUID=\"u2\" steps=\"seen=0s admitted=588µs workerStarted=3ms sandboxCreated=300ms networkReady=310ms imagePulled(sleeper)=311ms containerCreated(sleeper)=350ms containerStarted(sleeper)=400ms ready=500ms\"
I1201 15:50:02.000000    7 timeline.rs:1] \"Pod startup timeline\" pod=\"other/c\" podUID=\"u3\" steps=\"seen=0s ready=9s\"
";
        let got = from_log(log, "krsbench");
        let names: Vec<&str> = got.iter().map(|s| s.step.as_str()).collect();
        assert_eq!(
            names,
            [
                "seen",
                "admitted",
                "workerStarted",
                "sandboxCreated",
                "networkReady",
                "imagePulled",
                "containerCreated",
                "containerStarted",
                "ready"
            ]
        );
        assert!(got.iter().all(|s| s.pods == 2));
        assert!(close(got[1].p50_s, 0.0005));
        assert!(close(got[8].p50_s, 0.4));
    }

    #[test]
    fn per_container_steps_count_at_the_last_container() {
        let log = "I1201 15:50:02.000000 7 t.rs:1] \"Pod startup timeline\" pod=\"krsbench/a\" podUID=\"u\" steps=\"seen=0s containerStarted(init)=1s containerStarted(main)=2s ready=3s\"";
        let got = from_log(log, "krsbench");
        assert_eq!(got[1].step, "containerStarted");
        assert!(close(got[1].p50_s, 2.0));
    }

    #[test]
    fn upstream_v2_lines() {
        let log = "\
I1201 23:59:59.500000    9 kubelet.go:2588] \"SyncLoop ADD\" source=\"file\" pods=[\"krsbench/a-krsbench-node\",\"krsbench/b-krsbench-node\"]
I1201 23:59:59.600000    9 util.go:30] \"No sandbox for pod can be found. Need to start a new one\" pod=\"krsbench/a-krsbench-node\"
I1201 23:59:59.700000    9 util.go:30] \"No sandbox for pod can be found. Need to start a new one\" pod=\"krsbench/b-krsbench-node\"
I1201 23:59:59.800000    9 util.go:30] \"No sandbox for pod can be found. Need to start a new one\" pod=\"krsbench/a-krsbench-node\"
I1202 00:00:00.500000    9 kubelet.go:2619] \"SyncLoop (PLEG): event for pod\" pod=\"krsbench/a-krsbench-node\" event={\"ID\":\"u1\",\"Type\":\"ContainerStarted\",\"Data\":\"s1\"}
I1202 00:00:00.500000    9 kubelet.go:2619] \"SyncLoop (PLEG): event for pod\" pod=\"krsbench/a-krsbench-node\" event={\"ID\":\"u1\",\"Type\":\"ContainerStarted\",\"Data\":\"c1\"}
I1202 00:00:01.500000    9 kubelet.go:2619] \"SyncLoop (PLEG): event for pod\" pod=\"krsbench/b-krsbench-node\" event={\"ID\":\"u2\",\"Type\":\"ContainerStarted\",\"Data\":\"s2\"}
I1202 00:00:02.500000    9 kubelet.go:2619] \"SyncLoop (PLEG): event for pod\" pod=\"krsbench/b-krsbench-node\" event={\"ID\":\"u2\",\"Type\":\"ContainerStarted\",\"Data\":\"c2\"}
I1202 00:00:02.600000    9 kubelet.go:2619] \"SyncLoop (PLEG): event for pod\" pod=\"krsbench/b-krsbench-node\" event={\"ID\":\"u2\",\"Type\":\"ContainerDied\",\"Data\":\"c2\"}
";
        let got = from_log(log, "krsbench");
        let names: Vec<(&str, usize)> = got.iter().map(|s| (s.step.as_str(), s.pods)).collect();
        assert_eq!(
            names,
            [("seen", 2), ("syncStarted", 2), ("plegContainerStarted", 2)]
        );
        // First sync: 0.1 and 0.2 s; last ContainerStarted across midnight: 1 and 3 s.
        assert!(close(got[1].p50_s, 0.15), "{got:?}");
        assert!(close(got[2].p50_s, 2.0), "{got:?}");
    }

    #[test]
    fn nothing_to_read() {
        assert!(from_log("", "krsbench").is_empty());
        assert!(from_log("garbage\nI1201 x] \"SyncLoop ADD\"", "krsbench").is_empty());
    }
}
