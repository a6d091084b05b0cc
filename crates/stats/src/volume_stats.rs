//! Pod volume usage (`pods[].volume[]`): upstream's `fsResourceAnalyzer`
//! (`pkg/kubelet/server/stats/fs_resource_analyzer.go`) and `volumeStatCalculator`
//! (`volume_stat_calculator.go`) over the volume plugins' `GetMetrics`
//! (`pkg/volume/metrics_du.go`, `metrics_cached.go`).
//!
//! Measured on a background cadence, never on a scrape: every `volumeStatsAggPeriod`
//! (default 1 m; 0 disables, as upstream's `Volume stats collection disabled`) the pods are
//! listed; a pod seen for the first time is measured at once, then again after a jittered
//! period (`wait.JitterUntil(period, 1.0)`: between one and two periods). A volume is
//! measured as `MetricsDu` does: `du` of its directory (bytes and inodes used) and `statfs`
//! of its filesystem (capacity, available, inodes, inodes free). `configMap`, `secret`,
//! `downwardAPI` and `projected` volumes wrap it in `NewCachedMetrics`: their first
//! successful measure is kept for the life of the pod. `hostPath` has no metrics
//! (`MetricsNil`) and is not listed. Where a volume lives and what it is comes from a
//! [`PodVolumeSource`] (the kubelet's pods and volume layout), the measures through
//! [`FsInfo`] (fakes for both in tests).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::fs::FsInfo;
use crate::provider::Clock;
use crate::types::{FsStats, Time, VolumeStats};

/// One volume of a pod with metrics (upstream `ListVolumesForPod`'s `MetricsProvider`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodVolume {
    /// The volume's name in the pod.
    pub name: String,
    /// Its directory on the host.
    pub path: PathBuf,
    /// `IsLocalEphemeralVolume` (`emptyDir` on disk, `configMap`, `gitRepo`): counted in the
    /// pod's `ephemeral-storage`, listed first.
    pub ephemeral: bool,
    /// `NewCachedMetrics`: measured once.
    pub cached: bool,
}

/// A pod and its volumes with metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodVolumes {
    /// The pod's UID.
    pub uid: String,
    /// Its volumes.
    pub volumes: Vec<PodVolume>,
}

/// The pods whose volumes are measured (upstream `statsProvider.GetPods` and
/// `ListVolumesForPod`).
pub trait PodVolumeSource: Send + Sync {
    /// The kubelet's pods, each with its volumes that have metrics.
    fn pods(&self) -> Vec<PodVolumes>;
}

/// `PodVolumeStats`: a pod's latest volume measures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodVolumeStats {
    /// Local ephemeral volumes, by name.
    pub ephemeral: Vec<VolumeStats>,
    /// The others, by name.
    pub persistent: Vec<VolumeStats>,
}

/// One pod's `volumeStatCalculator`.
#[derive(Debug, Default)]
struct Calculator {
    /// When to measure next (`None`: at the next update).
    next: Option<Time>,
    latest: Option<PodVolumeStats>,
    /// `NewCachedMetrics` results by volume name.
    cached: HashMap<String, VolumeStats>,
}

/// `fsResourceAnalyzer`: the pods' calculators and their latest measures.
pub struct FsResourceAnalyzer {
    source: Arc<dyn PodVolumeSource>,
    fs: Arc<dyn FsInfo>,
    period: Duration,
    clock: Clock,
    calculators: Mutex<HashMap<String, Calculator>>,
    jitter: std::collections::hash_map::RandomState,
}

impl FsResourceAnalyzer {
    /// An analyzer measuring every `period` (`volumeStatsAggPeriod`).
    pub fn new(
        source: Arc<dyn PodVolumeSource>,
        fs: Arc<dyn FsInfo>,
        period: Duration,
        clock: Clock,
    ) -> Self {
        FsResourceAnalyzer {
            source,
            fs,
            period,
            clock,
            calculators: Mutex::new(HashMap::new()),
            jitter: std::collections::hash_map::RandomState::new(),
        }
    }

    /// `Start`: the background loop on the blocking pool, every `period`; nothing (and
    /// upstream's log line) when the period is 0.
    pub fn start(self: &Arc<Self>, cancel: tokio_util::sync::CancellationToken) {
        if self.period.is_zero() {
            tracing::info!("Volume stats collection disabled");
            return;
        }
        tracing::info!("Starting FS ResourceAnalyzer");
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                let a = this.clone();
                if tokio::task::spawn_blocking(move || a.update())
                    .await
                    .is_err()
                {
                    return;
                }
                tokio::select! {
                    () = tokio::time::sleep(this.period) => {}
                    () = cancel.cancelled() => return,
                }
            }
        });
    }

    /// `GetPodVolumeStats`: the pod's latest measures, `None` before the first.
    pub fn pod_volume_stats(&self, uid: &str) -> Option<PodVolumeStats> {
        self.state().get(uid).and_then(|c| c.latest.clone())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HashMap<String, Calculator>> {
        self.calculators
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// One round (`updateCachedPodVolumeStats` and the calculators that are due): new pods
    /// get a calculator, gone pods lose theirs, due pods are measured.
    pub fn update(&self) {
        let now = Time((self.clock)());
        let pods = self.source.pods();
        let due: Vec<(PodVolumes, HashMap<String, VolumeStats>)> = {
            let mut calcs = self.state();
            calcs.retain(|uid, _| pods.iter().any(|p| &p.uid == uid));
            pods.into_iter()
                .filter_map(|p| {
                    let c = calcs.entry(p.uid.clone()).or_default();
                    let is_due = c.next.is_none_or(|next| next <= now);
                    is_due.then(|| (p, c.cached.clone()))
                })
                .collect()
        };
        for (pod, mut cached) in due {
            let stats = self.calc(&pod, &mut cached, now);
            let next = self.next_time(&pod.uid, now);
            if let Some(c) = self.state().get_mut(&pod.uid) {
                c.latest = Some(stats);
                c.cached = cached;
                c.next = Some(next);
            }
        }
    }

    /// `JitterUntil(period, 1.0)`: now + period × (1 + a random fraction).
    fn next_time(&self, uid: &str, now: Time) -> Time {
        let frac = (self.jitter.hash_one((uid, now.0.as_nanosecond())) % 1000) as f64 / 1000.0;
        let wait = self.period.mul_f64(1.0 + frac);
        let nanos = now.0.as_nanosecond() + wait.as_nanos() as i128;
        Time(jiff::Timestamp::from_nanosecond(nanos).unwrap_or(now.0))
    }

    /// `calcAndStoreStats`.
    fn calc(
        &self,
        pod: &PodVolumes,
        cached: &mut HashMap<String, VolumeStats>,
        now: Time,
    ) -> PodVolumeStats {
        let mut out = PodVolumeStats::default();
        for v in &pod.volumes {
            let stats = match cached.get(&v.name) {
                Some(s) if v.cached => s.clone(),
                _ => match self.metrics_du(v, now) {
                    Ok(s) => {
                        if v.cached {
                            cached.insert(v.name.clone(), s.clone());
                        }
                        s
                    }
                    Err(e) => {
                        tracing::debug!(pod_uid = %pod.uid, volume_name = %v.name, err = %e, "Failed to calculate volume metrics");
                        continue;
                    }
                },
            };
            if v.ephemeral {
                out.ephemeral.push(stats);
            } else {
                out.persistent.push(stats);
            }
        }
        out.ephemeral.sort_by(|a, b| a.name.cmp(&b.name));
        out.persistent.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// `metricsDu.GetMetrics` + `parsePodVolumeStats`.
    fn metrics_du(&self, v: &PodVolume, now: Time) -> std::io::Result<VolumeStats> {
        let usage = self.fs.dir_usage(&v.path)?;
        let cap = self.fs.capacity(&v.path)?;
        Ok(VolumeStats {
            fs: FsStats {
                time: now,
                available_bytes: Some(cap.available),
                capacity_bytes: Some(cap.capacity),
                used_bytes: Some(usage.bytes),
                inodes_free: Some(cap.inodes_free),
                inodes: Some(cap.inodes),
                inodes_used: Some(usage.inodes),
            },
            name: v.name.clone(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::fs::{DirUsage, FakeFsInfo, FsCapacity};

    struct Pods(Mutex<Vec<PodVolumes>>);
    impl PodVolumeSource for Pods {
        fn pods(&self) -> Vec<PodVolumes> {
            self.0.lock().unwrap().clone()
        }
    }

    fn vol(name: &str, ephemeral: bool, cached: bool) -> PodVolume {
        PodVolume {
            name: name.into(),
            path: PathBuf::from(format!("/var/lib/kubelet/pods/u1/volumes/x/{name}")),
            ephemeral,
            cached,
        }
    }

    #[test]
    fn measured_when_first_seen_then_after_a_jittered_period_cached_volumes_once() {
        let fs = Arc::new(FakeFsInfo::default());
        fs.set_capacity(
            "/var/lib/kubelet",
            FsCapacity {
                capacity: 1000,
                available: 600,
                usage: 400,
                inodes: 50,
                inodes_free: 20,
            },
        );
        let dir = |n: &str| format!("/var/lib/kubelet/pods/u1/volumes/x/{n}");
        fs.set_usage(
            dir("cache"),
            DirUsage {
                bytes: 40,
                inodes: 3,
            },
        );
        fs.set_usage(
            dir("config"),
            DirUsage {
                bytes: 8,
                inodes: 2,
            },
        );
        fs.set_usage(
            dir("token"),
            DirUsage {
                bytes: 4,
                inodes: 1,
            },
        );
        let pods = Arc::new(Pods(Mutex::new(vec![PodVolumes {
            uid: "u1".into(),
            volumes: vec![
                vol("token", false, true),
                vol("config", true, true),
                vol("cache", true, false),
                vol("gone", true, false),
            ],
        }])));
        let now = Arc::new(Mutex::new(0i64));
        let n = now.clone();
        let clock: Clock =
            Arc::new(move || jiff::Timestamp::from_second(1_000 + *n.lock().unwrap()).unwrap());
        let a = FsResourceAnalyzer::new(pods.clone(), fs.clone(), Duration::from_secs(60), clock);
        assert_eq!(
            a.pod_volume_stats("u1"),
            None,
            "nothing before the first update"
        );
        a.update();
        let s = a.pod_volume_stats("u1").unwrap();
        let names = |v: &[VolumeStats]| v.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&s.ephemeral),
            ["cache", "config"],
            "no metrics: not listed"
        );
        assert_eq!(names(&s.persistent), ["token"]);
        let cache = &s.ephemeral[0];
        assert_eq!(cache.fs.used_bytes, Some(40));
        assert_eq!(cache.fs.inodes_used, Some(3));
        assert_eq!(cache.fs.capacity_bytes, Some(1000));
        assert_eq!(cache.fs.available_bytes, Some(600));
        assert_eq!(
            (cache.fs.inodes, cache.fs.inodes_free),
            (Some(50), Some(20))
        );
        assert_eq!(cache.fs.time, Time::from_nanos(1_000_000_000_000));

        // Usage changes; before a period has passed nothing is measured again.
        fs.set_usage(
            dir("cache"),
            DirUsage {
                bytes: 90,
                inodes: 4,
            },
        );
        fs.set_usage(
            dir("config"),
            DirUsage {
                bytes: 99,
                inodes: 9,
            },
        );
        *now.lock().unwrap() = 59;
        a.update();
        assert_eq!(a.pod_volume_stats("u1").unwrap(), s);
        // After two periods it is: the emptyDir again, the configMap from its cache.
        *now.lock().unwrap() = 120;
        a.update();
        let s2 = a.pod_volume_stats("u1").unwrap();
        assert_eq!(s2.ephemeral[0].fs.used_bytes, Some(90));
        assert_eq!(s2.ephemeral[1].fs.used_bytes, Some(8), "cached metrics");

        // A pod that is gone loses its calculator.
        pods.0.lock().unwrap().clear();
        a.update();
        assert_eq!(a.pod_volume_stats("u1"), None);
    }
}
