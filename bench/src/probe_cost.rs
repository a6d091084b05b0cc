//! Prober cost (issue 9's benchmark): with N web pods running (busybox `httpd`, with or
//! without an exec readiness and an httpGet liveness probe every second, see
//! [`crate::manifest::PodTemplate::Web`]), the kubelet's CPU over a window.
//!
//! 1. wait until every pod is Ready with a pod IP in the kubelet's `/pods` (read-only port;
//!    standalone kubelets serve the status manager's status of static pods there);
//! 2. a warm-up, so that every probe worker has started;
//! 3. `prober_probe_total` of `/metrics/probes` read, then the kubelet's `utime + stime`
//!    (`/proc/<pid>/stat`) before and after the window, then `prober_probe_total` again —
//!    the two scrapes fall outside the CPU window;
//! 4. the pods checked again: every pod Ready, no container restarted, every pod with its
//!    own IP; with probes, both probe types ran and succeeded during the window. Anything else
//!    is listed in [`ProbeCostOutcome::problems`]: the run is an error, not a number (its
//!    figures are kept to show what happened).
//!
//! The runtime's CPU (containerd, shims and runc executing `ExecSync` for the exec probes) is
//! not counted, for either kubelet; nor is `httpd` answering the HTTP probes.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::{BenchError, BenchResult};
use crate::scrape::{Perf, cpu_ms, get};

/// What to measure.
#[derive(Clone, Debug)]
pub struct ProbeCostConfig {
    /// The read-only port (set by the kubelet run).
    pub port: u16,
    /// Full names (`<name>-<node>`) of the pods (set by the kubelet run).
    pub pods: Vec<String>,
    /// Whether the pods have probes (then `/metrics/probes` must show them running).
    pub probes: bool,
    /// How long to wait for every pod Ready.
    pub ready_timeout: Duration,
    /// Pause between all Ready and the window.
    pub warmup: Duration,
    /// The CPU window.
    pub window: Duration,
    /// `perf record --call-graph <call_graph>` of the kubelet during the window to this file.
    pub profile: Option<PathBuf>,
    /// `perf record --call-graph` mode.
    pub call_graph: String,
}

/// `prober_probe_total` of the benchmark's namespace, summed over pods.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ProbeCounts {
    /// `probe_type="Liveness",result="successful"`.
    pub liveness_ok: f64,
    /// Liveness, any other result.
    pub liveness_failed: f64,
    /// `probe_type="Readiness",result="successful"`.
    pub readiness_ok: f64,
    /// Readiness, any other result.
    pub readiness_failed: f64,
}

impl ProbeCounts {
    /// Sums the `prober_probe_total` samples of namespace `namespace` in a Prometheus text
    /// exposition.
    pub fn parse(text: &str, namespace: &str) -> Self {
        let mut c = Self::default();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("prober_probe_total{") else {
                continue;
            };
            let Some((labels, value)) = rest.rsplit_once('}') else {
                continue;
            };
            // A value, optionally followed by a timestamp.
            let Some(v) = value
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
            else {
                continue;
            };
            let label = |k: &str| {
                let key = format!("{k}=\"");
                labels
                    .split(',')
                    .find_map(|kv| kv.trim().strip_prefix(key.as_str()))
                    .and_then(|v| v.strip_suffix('"'))
            };
            if label("namespace") != Some(namespace) {
                continue;
            }
            let ok = label("result") == Some("successful");
            match (label("probe_type"), ok) {
                (Some("Liveness"), true) => c.liveness_ok += v,
                (Some("Liveness"), false) => c.liveness_failed += v,
                (Some("Readiness"), true) => c.readiness_ok += v,
                (Some("Readiness"), false) => c.readiness_failed += v,
                _ => {}
            }
        }
        c
    }

    /// `self − before`, per second of `secs`.
    pub fn rate_since(&self, before: &Self, secs: f64) -> Self {
        let r = |a: f64, b: f64| (a - b) / secs.max(f64::EPSILON);
        Self {
            liveness_ok: r(self.liveness_ok, before.liveness_ok),
            liveness_failed: r(self.liveness_failed, before.liveness_failed),
            readiness_ok: r(self.readiness_ok, before.readiness_ok),
            readiness_failed: r(self.readiness_failed, before.readiness_failed),
        }
    }
}

/// The benchmark's pods as a kubelet's `/pods` shows them.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PodsState {
    /// Pods expected.
    pub expected: usize,
    /// Of those, listed.
    pub listed: usize,
    /// Listed with phase Running.
    pub running: usize,
    /// Listed with condition Ready True.
    pub ready: usize,
    /// Sum of every container's `restartCount`.
    pub restarts: u64,
    /// Distinct non-empty `status.podIP`s that are not the host's IP.
    pub pod_ips: usize,
    /// Up to 3 names of pods that are not Ready (or not listed).
    pub not_ready_examples: Vec<String>,
}

impl PodsState {
    /// The state of `expected` (full pod names) in a `/pods` answer (a `v1.PodList`).
    pub fn from_pod_list(list: &Value, expected: &[String]) -> Self {
        let items = list["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let mut s = Self {
            expected: expected.len(),
            ..Self::default()
        };
        let mut ips = BTreeSet::new();
        for name in expected {
            let Some(pod) = items
                .iter()
                .find(|p| p["metadata"]["name"].as_str() == Some(name))
            else {
                s.not_ready(name);
                continue;
            };
            s.listed += 1;
            let status = &pod["status"];
            if status["phase"] == "Running" {
                s.running += 1;
            }
            let ready = status["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            });
            if ready {
                s.ready += 1;
            } else {
                s.not_ready(name);
            }
            s.restarts += status["containerStatuses"].as_array().map_or(0, |cs| {
                cs.iter().filter_map(|c| c["restartCount"].as_u64()).sum()
            });
            if let Some(ip) = status["podIP"].as_str().filter(|ip| !ip.is_empty())
                && status["hostIP"].as_str() != Some(ip)
            {
                ips.insert(ip.to_owned());
            }
        }
        s.pod_ips = ips.len();
        s
    }

    fn not_ready(&mut self, name: &str) {
        if self.not_ready_examples.len() < 3 {
            self.not_ready_examples.push(name.to_owned());
        }
    }

    /// Every pod Ready and with its own pod IP.
    pub fn all_ready(&self) -> bool {
        self.ready == self.expected && self.pod_ips == self.expected
    }

    /// What is wrong: pods not Ready, restarts, missing pod IPs (`None`: nothing).
    pub fn problem(&self) -> Option<String> {
        let mut p = Vec::new();
        if self.ready != self.expected {
            p.push(format!(
                "{} of {} pods Ready ({} listed, {} Running; not Ready e.g. {:?})",
                self.ready, self.expected, self.listed, self.running, self.not_ready_examples
            ));
        }
        if self.restarts > 0 {
            p.push(format!("{} container restarts", self.restarts));
        }
        if self.pod_ips != self.expected {
            p.push(format!(
                "{} distinct pod IPs for {} pods",
                self.pod_ips, self.expected
            ));
        }
        (!p.is_empty()).then(|| p.join("; "))
    }
}

/// The probes of the window that show they did not all run and succeed (`None`: fine).
/// With one probe of each type per pod per second, each type must have succeeded at least
/// 0.9 times per pod per second (a kubelet whose probes error or fall behind does less work,
/// so its CPU would not compare), and failed at most 1 % of the time.
pub fn probe_problem(rates: &ProbeCounts, pods: usize) -> Option<String> {
    let min = pods as f64 * 0.9;
    let mut p = Vec::new();
    for (kind, ok, failed) in [
        ("liveness", rates.liveness_ok, rates.liveness_failed),
        ("readiness", rates.readiness_ok, rates.readiness_failed),
    ] {
        if ok < min {
            p.push(format!(
                "{kind} probes: {ok:.1} successful/s for {pods} pods (at least {min:.1} expected)"
            ));
        }
        if failed > 0.01 * (ok + failed) {
            p.push(format!(
                "{kind} probes: {failed:.2} failed/s against {ok:.1} successful/s"
            ));
        }
    }
    (!p.is_empty()).then(|| p.join("; "))
}

/// One kubelet's figures.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ProbeCostOutcome {
    /// Whether the pods had probes.
    pub probes: bool,
    /// Pods.
    pub pods: usize,
    /// The CPU window's length in seconds.
    pub window_s: f64,
    /// Kubelet CPU (`utime + stime`) over the window, in CPU-seconds per minute.
    pub cpu_s_per_min: f64,
    /// `prober_probe_total` increase per second during the window.
    pub probe_rates: ProbeCounts,
    /// From the first manifest's rename to every pod Ready, in seconds.
    pub all_ready_s: f64,
    /// `/proc/loadavg` when the window started.
    pub loadavg_start: String,
    /// `/proc/loadavg` when it ended.
    pub loadavg_end: String,
    /// The pods after the window.
    pub pods_after: PodsState,
    /// Why the figures do not count (pods not Ready, restarts, probes not running or
    /// failing): empty when they do. The caller reports such a run as an error.
    pub problems: Vec<String>,
}

async fn pods_state(cfg: &ProbeCostConfig) -> BenchResult<PodsState> {
    let body = get(cfg.port, "/pods").await?;
    let list: Value = serde_json::from_str(&body)
        .map_err(|e| BenchError::Kubelet(format!("GET /pods: not JSON: {e}")))?;
    Ok(PodsState::from_pod_list(&list, &cfg.pods))
}

async fn probe_counts(cfg: &ProbeCostConfig) -> BenchResult<ProbeCounts> {
    let text = get(cfg.port, "/metrics/probes").await?;
    Ok(ProbeCounts::parse(&text, crate::manifest::NAMESPACE))
}

/// Measures the kubelet `pid` (see the module doc); `started` is the first manifest's rename.
pub async fn measure(
    pid: u32,
    cfg: &ProbeCostConfig,
    started: Instant,
) -> BenchResult<ProbeCostOutcome> {
    let deadline = Instant::now() + cfg.ready_timeout;
    loop {
        let state = pods_state(cfg).await?;
        if state.all_ready() {
            break;
        }
        if Instant::now() > deadline {
            return Err(BenchError::Timeout(format!(
                "not every pod Ready with a pod IP {} s after they ran: {}",
                cfg.ready_timeout.as_secs(),
                state.problem().unwrap_or_default()
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let all_ready_s = started.elapsed().as_secs_f64();
    tokio::time::sleep(cfg.warmup).await;
    let before = if cfg.probes {
        probe_counts(cfg).await?
    } else {
        ProbeCounts::default()
    };
    let perf = match &cfg.profile {
        Some(p) => Some(Perf::record(
            pid,
            &p.display().to_string(),
            &cfg.call_graph,
        )?),
        None => None,
    };
    let loadavg_start = crate::env::loadavg();
    let (c0, t0) = (cpu_ms(pid)?, Instant::now());
    tokio::time::sleep(cfg.window).await;
    let (c1, window) = (cpu_ms(pid)?, t0.elapsed());
    let loadavg_end = crate::env::loadavg();
    if let Some(perf) = perf {
        perf.stop().await?;
    }
    let secs = window.as_secs_f64();
    let probe_rates = if cfg.probes {
        probe_counts(cfg).await?.rate_since(&before, secs)
    } else {
        ProbeCounts::default()
    };
    let pods_after = pods_state(cfg).await?;
    let mut problems = Vec::new();
    if let Some(p) = pods_after.problem() {
        problems.push(format!("after the window: {p}"));
    }
    if cfg.probes
        && let Some(p) = probe_problem(&probe_rates, cfg.pods.len())
    {
        problems.push(format!("during the window: {p}"));
    }
    Ok(ProbeCostOutcome {
        problems,
        probes: cfg.probes,
        pods: cfg.pods.len(),
        window_s: secs,
        cpu_s_per_min: (c1 - c0) / 1000.0 / secs * 60.0,
        probe_rates,
        all_ready_s,
        loadavg_start,
        loadavg_end,
        pods_after,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn probe_counts_sum_the_namespace() {
        let text = r#"# HELP prober_probe_total [BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{container="web",namespace="krsbench",pod="a-n",pod_uid="1",probe_type="Liveness",result="successful"} 10
prober_probe_total{container="web",namespace="krsbench",pod="b-n",pod_uid="2",probe_type="Liveness",result="successful"} 12
prober_probe_total{container="web",namespace="krsbench",pod="b-n",pod_uid="2",probe_type="Liveness",result="failed"} 1
prober_probe_total{container="web",namespace="krsbench",pod="a-n",pod_uid="1",probe_type="Readiness",result="successful"} 7
prober_probe_total{container="web",namespace="krsbench",pod="a-n",pod_uid="1",probe_type="Readiness",result="unknown"} 2
prober_probe_total{container="web",namespace="other",pod="c",pod_uid="3",probe_type="Readiness",result="successful"} 99
prober_probe_total{container="web",namespace="krsbench",pod="a-n",pod_uid="1",probe_type="Startup",result="successful"} 5 1700000000000
"#;
        let c = ProbeCounts::parse(text, "krsbench");
        assert_eq!(
            c,
            ProbeCounts {
                liveness_ok: 22.0,
                liveness_failed: 1.0,
                readiness_ok: 7.0,
                readiness_failed: 2.0,
            }
        );
        let later = ProbeCounts {
            liveness_ok: 42.0,
            ..c
        };
        assert_eq!(later.rate_since(&c, 10.0).liveness_ok, 2.0);
        assert_eq!(later.rate_since(&c, 10.0).readiness_ok, 0.0);
    }

    fn pod(name: &str, ready: bool, ip: &str, restarts: u64) -> Value {
        json!({
            "metadata": { "name": name },
            "status": {
                "phase": "Running",
                "hostIP": "10.0.0.1",
                "podIP": ip,
                "conditions": [{ "type": "Ready", "status": if ready { "True" } else { "False" } }],
                "containerStatuses": [{ "name": "web", "restartCount": restarts }],
            },
        })
    }

    #[test]
    fn pods_state_counts_ready_ips_and_restarts() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let good = json!({ "items": [
            pod("a", true, "198.18.0.2", 0),
            pod("b", true, "198.18.0.3", 0),
            pod("c", true, "198.18.0.4", 0),
            pod("other", false, "", 5),
        ]});
        let s = PodsState::from_pod_list(&good, &names);
        assert!(s.all_ready());
        assert_eq!(s.problem(), None);
        assert_eq!((s.listed, s.running, s.ready, s.pod_ips), (3, 3, 3, 3));

        let bad = json!({ "items": [
            pod("a", true, "198.18.0.2", 1),
            pod("b", false, "10.0.0.1", 0),
        ]});
        let s = PodsState::from_pod_list(&bad, &names);
        assert!(!s.all_ready());
        assert_eq!((s.listed, s.ready, s.restarts, s.pod_ips), (2, 1, 1, 1));
        assert_eq!(s.not_ready_examples, vec!["b".to_string(), "c".to_string()]);
        let p = s.problem().unwrap();
        assert!(p.contains("1 of 3 pods Ready"), "{p}");
        assert!(p.contains("1 container restarts"), "{p}");
        assert!(p.contains("1 distinct pod IPs for 3 pods"), "{p}");

        // Two pods sharing an IP (host network) do not count twice.
        let shared = json!({ "items": [
            pod("a", true, "198.18.0.2", 0),
            pod("b", true, "198.18.0.2", 0),
            pod("c", true, "198.18.0.4", 0),
        ]});
        assert!(!PodsState::from_pod_list(&shared, &names).all_ready());
    }

    #[test]
    fn probe_problems() {
        let fine = ProbeCounts {
            liveness_ok: 100.0,
            liveness_failed: 0.0,
            readiness_ok: 99.0,
            readiness_failed: 0.5,
        };
        assert_eq!(probe_problem(&fine, 100), None);
        let none = ProbeCounts {
            liveness_ok: 0.0,
            ..fine
        };
        assert!(
            probe_problem(&none, 100)
                .unwrap()
                .contains("liveness probes: 0.0 successful/s")
        );
        let failing = ProbeCounts {
            readiness_failed: 5.0,
            ..fine
        };
        assert!(
            probe_problem(&failing, 100)
                .unwrap()
                .contains("readiness probes: 5.00 failed/s")
        );
    }
}
