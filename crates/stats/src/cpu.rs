//! CPU rate (`usageNanoCores`) from two cumulative samples, computed when asked — the
//! cache of upstream's CRI stats provider (`cri_stats_provider.go`
//! `getAndUpdateContainerUsageNanoCores`, `cleanupOutdatedCaches`), applied to every cgroup
//! read (node, system containers, pods, containers), instead of cAdvisor's housekeeping
//! that samples every cgroup all the time.
//!
//! A reading at least [`MIN_WINDOW`] after the cached one computes a new rate and replaces
//! the cache; a closer reading answers the last rate (two scrapes in a row do not divide by
//! a few microseconds). The first reading of a cgroup has no rate, as upstream's CRI
//! provider's first call.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::types::Time;

/// The shortest interval a rate is computed over.
pub const MIN_WINDOW: Duration = Duration::from_secs(1);
/// Entries not refreshed for this long are dropped (upstream `defaultCachePeriod`).
pub const CACHE_PERIOD: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, Copy)]
struct Record {
    time: Time,
    usage_ns: u64,
    nano_cores: Option<u64>,
}

/// Rates by cgroup key.
#[derive(Debug, Default)]
pub struct CpuUsageCache {
    records: Mutex<HashMap<String, Record>>,
}

impl CpuUsageCache {
    /// The rate of `key` given a new cumulative reading (see the module doc).
    pub fn nano_cores(&self, key: &str, time: Time, usage_ns: u64) -> Option<u64> {
        let Ok(mut records) = self.records.lock() else {
            return None;
        };
        let fresh = Record {
            time,
            usage_ns,
            nano_cores: None,
        };
        // Updated in place: the key is allocated once per cgroup, not per reading.
        let Some(prev) = records.get_mut(key) else {
            records.insert(key.to_string(), fresh);
            return None;
        };
        let interval = time.0.as_nanosecond() - prev.time.0.as_nanosecond();
        if usage_ns < prev.usage_ns || interval < 0 {
            // A new cgroup under the same key (restart): start over.
            *prev = fresh;
            return None;
        }
        if interval < MIN_WINDOW.as_nanos() as i128 {
            return prev.nano_cores;
        }
        let rate = ((usage_ns - prev.usage_ns) as f64 / interval as f64 * 1e9) as u64;
        *prev = Record {
            nano_cores: Some(rate),
            ..fresh
        };
        Some(rate)
    }

    /// Drops the entries older than [`CACHE_PERIOD`] at `now`.
    pub fn cleanup(&self, now: Time) {
        if let Ok(mut records) = self.records.lock() {
            let limit = CACHE_PERIOD.as_nanos() as i128;
            records.retain(|_, r| now.0.as_nanosecond() - r.time.0.as_nanosecond() <= limit);
        }
    }

    /// How many cgroups are cached.
    pub fn len(&self) -> usize {
        self.records.lock().map(|r| r.len()).unwrap_or(0)
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: f64) -> Time {
        Time::from_nanos((secs * 1e9) as i64)
    }

    #[test]
    fn rate_from_two_samples() {
        let c = CpuUsageCache::default();
        assert_eq!(c.nano_cores("a", t(10.0), 1_000_000_000), None);
        // 0.5 s of CPU over 2 s: a quarter core.
        assert_eq!(c.nano_cores("a", t(12.0), 1_500_000_000), Some(250_000_000));
        // Too close: the last rate.
        assert_eq!(c.nano_cores("a", t(12.1), 1_600_000_000), Some(250_000_000));
        // Counter went back (new container): no rate.
        assert_eq!(c.nano_cores("a", t(14.0), 10), None);
        c.cleanup(t(14.0 + 601.0));
        assert!(c.is_empty());
    }
}
