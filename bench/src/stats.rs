//! Percentiles and medians of latency samples (pure; unit-tested).
//!
//! Percentiles use the nearest-rank method, as clusterloader2's `PodStartupLatency` does
//! (`perf-tests/clusterloader2/pkg/measurement/util`): the p-th percentile of n sorted samples
//! is the sample at rank `ceil(p/100 * n)` (1-based). With 30 samples p99 is the maximum.

use std::time::Duration;

use serde::Serialize;

/// Nearest-rank percentile `p` (0 < p <= 100) of `samples`; `None` when there are none.
pub fn percentile(samples: &[Duration], p: f64) -> Option<Duration> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    let rank = (p / 100.0 * n as f64).ceil();
    // rank is in [0, n] for p in [0, 100]; clamp so p <= 0 gives the minimum.
    let idx = (rank as usize).clamp(1, n) - 1;
    sorted.get(idx).copied()
}

/// Median of `values` (the mean of the two middle values for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let mid = n / 2;
    if n % 2 == 1 {
        sorted.get(mid).copied()
    } else {
        Some((sorted.get(mid - 1)? + sorted.get(mid)?) / 2.0)
    }
}

/// Per-pod latency summary of one measured batch, in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Number of pods.
    pub pods: usize,
    /// First start → last pod running.
    pub makespan_s: f64,
    /// Median per-pod latency.
    pub p50_s: f64,
    /// 90th percentile per-pod latency.
    pub p90_s: f64,
    /// 99th percentile per-pod latency.
    pub p99_s: f64,
    /// Slowest pod.
    pub max_s: f64,
}

impl LatencySummary {
    /// Summarises per-pod `latencies` and the batch `makespan`; `None` without samples.
    pub fn new(latencies: &[Duration], makespan: Duration) -> Option<Self> {
        Some(Self {
            pods: latencies.len(),
            makespan_s: makespan.as_secs_f64(),
            p50_s: percentile(latencies, 50.0)?.as_secs_f64(),
            p90_s: percentile(latencies, 90.0)?.as_secs_f64(),
            p99_s: percentile(latencies, 99.0)?.as_secs_f64(),
            max_s: percentile(latencies, 100.0)?.as_secs_f64(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn nearest_rank_percentiles() {
        let s = ms(&[50, 10, 40, 20, 30]);
        assert_eq!(percentile(&s, 50.0), Some(Duration::from_millis(30)));
        assert_eq!(percentile(&s, 20.0), Some(Duration::from_millis(10)));
        assert_eq!(percentile(&s, 21.0), Some(Duration::from_millis(20)));
        assert_eq!(percentile(&s, 99.0), Some(Duration::from_millis(50)));
        assert_eq!(percentile(&s, 100.0), Some(Duration::from_millis(50)));
        assert_eq!(percentile(&s, 0.0), Some(Duration::from_millis(10)));
    }

    #[test]
    fn p99_of_100_samples_is_the_99th() {
        let s: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&s, 99.0), Some(Duration::from_millis(99)));
        assert_eq!(percentile(&s, 50.0), Some(Duration::from_millis(50)));
        assert_eq!(percentile(&s, 90.0), Some(Duration::from_millis(90)));
    }

    #[test]
    fn p99_of_30_samples_is_the_max() {
        let s: Vec<Duration> = (1..=30).map(Duration::from_millis).collect();
        assert_eq!(percentile(&s, 99.0), Some(Duration::from_millis(30)));
    }

    #[test]
    fn empty_inputs_give_none() {
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(median(&[]), None);
        assert_eq!(LatencySummary::new(&[], Duration::ZERO), None);
    }

    #[test]
    fn median_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
    }

    #[test]
    fn summary_fields() {
        let s = LatencySummary::new(&ms(&[100, 300, 200]), Duration::from_millis(400));
        let s = s.unwrap();
        assert_eq!(s.pods, 3);
        assert!((s.makespan_s - 0.4).abs() < 1e-9);
        assert!((s.p50_s - 0.2).abs() < 1e-9);
        assert!((s.p99_s - 0.3).abs() < 1e-9);
        assert!((s.max_s - 0.3).abs() < 1e-9);
    }
}
