//! Which pods of a batch have been seen running, and when (pure; unit-tested).
//!
//! The kubelet variants poll CRI `ListContainers` and feed the pod names of the RUNNING
//! containers (label `io.kubernetes.pod.name`) to [`RunningTracker::observe`]; the first poll that
//! shows a pod's container running is that pod's "running" time.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// First time each expected pod was seen running.
#[derive(Debug)]
pub struct RunningTracker {
    names: Vec<String>,
    index: HashMap<String, usize>,
    seen: Vec<Option<Instant>>,
}

impl RunningTracker {
    /// Tracks the pods named `names` (the kubelet's full pod names), in batch order.
    pub fn new(names: Vec<String>) -> Self {
        let index = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        let seen = vec![None; names.len()];
        Self { names, index, seen }
    }

    /// Records `now` for every pod in `running` not seen before; unknown names are ignored.
    /// Returns how many pods were newly seen.
    pub fn observe<'a>(
        &mut self,
        running: impl IntoIterator<Item = &'a str>,
        now: Instant,
    ) -> usize {
        let mut new = 0;
        for name in running {
            if let Some(slot) = self.index.get(name).and_then(|&i| self.seen.get_mut(i))
                && slot.is_none()
            {
                *slot = Some(now);
                new += 1;
            }
        }
        new
    }

    /// Pods seen so far.
    pub fn seen_count(&self) -> usize {
        self.seen.iter().filter(|s| s.is_some()).count()
    }

    /// Whether every pod has been seen.
    pub fn all_seen(&self) -> bool {
        self.seen.iter().all(Option::is_some)
    }

    /// Names of the pods not seen yet.
    pub fn missing(&self) -> Vec<&str> {
        self.names
            .iter()
            .zip(&self.seen)
            .filter(|(_, s)| s.is_none())
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// Per-pod latency (`starts[i]` → seen running) and the makespan (earliest start → last
    /// seen). `None` unless every pod was seen and `starts` has one entry per pod.
    pub fn latencies(&self, starts: &[Instant]) -> Option<(Vec<Duration>, Duration)> {
        if starts.len() != self.seen.len() {
            return None;
        }
        let mut lat = Vec::with_capacity(starts.len());
        for (start, seen) in starts.iter().zip(&self.seen) {
            lat.push(seen.as_ref()?.saturating_duration_since(*start));
        }
        let first = starts.iter().min()?;
        let last = self.seen.iter().flatten().max()?;
        Some((lat, last.saturating_duration_since(*first)))
    }
}

/// The error when pods did not all come up in time.
pub fn startup_timeout_message(tracker: &RunningTracker, timeout: Duration) -> String {
    let secs = timeout.as_secs_f64();
    let seen = tracker.seen_count();
    if seen == 0 {
        format!("no container RUNNING after {secs:.0} s: is the sync loop in this build?")
    } else {
        let missing = tracker.missing();
        let shown: Vec<&str> = missing.iter().take(3).copied().collect();
        format!(
            "only {seen} of {} containers RUNNING after {secs:.0} s (missing e.g. {})",
            seen + missing.len(),
            shown.join(", ")
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["a".into(), "b".into(), "c".into()]
    }

    #[test]
    fn first_sighting_wins_and_unknown_names_are_ignored() {
        let t0 = Instant::now();
        let mut t = RunningTracker::new(names());
        assert_eq!(t.observe(["b", "zzz"], t0 + Duration::from_millis(100)), 1);
        assert_eq!(t.observe(["b", "a"], t0 + Duration::from_millis(200)), 1);
        assert_eq!(t.seen_count(), 2);
        assert!(!t.all_seen());
        assert_eq!(t.missing(), vec!["c"]);
        assert_eq!(t.latencies(&[t0, t0, t0]), None);
        assert_eq!(t.observe(["c", "c"], t0 + Duration::from_millis(450)), 1);
        assert!(t.all_seen());
        let starts = [
            t0,
            t0 + Duration::from_millis(10),
            t0 + Duration::from_millis(20),
        ];
        let (lat, makespan) = t.latencies(&starts).unwrap();
        assert_eq!(
            lat,
            vec![
                Duration::from_millis(200),
                Duration::from_millis(90),
                Duration::from_millis(430)
            ]
        );
        assert_eq!(makespan, Duration::from_millis(450));
    }

    #[test]
    fn latencies_need_one_start_per_pod() {
        let t0 = Instant::now();
        let mut t = RunningTracker::new(names());
        t.observe(["a", "b", "c"], t0);
        assert_eq!(t.latencies(&[t0]), None);
    }

    #[test]
    fn timeout_messages() {
        let mut t = RunningTracker::new(names());
        let none = startup_timeout_message(&t, Duration::from_secs(60));
        assert_eq!(
            none,
            "no container RUNNING after 60 s: is the sync loop in this build?"
        );
        t.observe(["a"], Instant::now());
        let some = startup_timeout_message(&t, Duration::from_secs(60));
        assert_eq!(
            some,
            "only 1 of 3 containers RUNNING after 60 s (missing e.g. b, c)"
        );
    }
}
