//! Eviction detection latency (issue #10's benchmark): a memory hog pushes a node's pods past
//! a hard `allocatableMemory.available` threshold → the kubelet starts the eviction.
//!
//! Cluster mode (static pods are critical and never evicted): kubelet-rs and the upstream
//! kubelet join the control plane of `hack/cluster-up.sh` one after the other as the nodes of
//! `cluster-node` (`hack/lib/cluster-node.sh`: own containerd and cgroup root, the same
//! KubeletConfiguration), with `evictionHard: allocatableMemory.available: <capacity − 800
//! MiB>` — the threshold is crossed once the node's pods use more than 800 MiB, whatever the
//! rest of the machine does — and `kernelMemcgNotification` off (the 10 s poll) or on (the
//! kernel's memcg threshold event wakes the manager; cgroup v1). Per run, 25 s after the node
//! is Ready (both eviction managers have made their first rounds: upstream's first one fails
//! until its Node object exists, and its memcg notifiers get their thresholds in a round that
//! works):
//! 1. a watch on the namespace's Events and one on the hog pod are opened;
//! 2. the hog is created: a BestEffort busybox pod taking 1000 MiB of anonymous memory
//!    (`dd` with a 1000 MiB block, blocked on a pipe nobody reads);
//! 3. the benchmark reads the node's pods cgroup every 10 ms — working set = usage −
//!    inactive file, as the kubelet's signal — until it is above the threshold's 800 MiB:
//!    **crossed**;
//! 4. from there: the `Evicted` Event seen by the watch (**eviction started**: the kubelet
//!    records it just before the kill), and the pod seen `Failed`/`Evicted`.
//!
//! The ratio's figure is crossed → Event. Without memcg notification both kubelets poll every
//! 10 s (`evictionMonitoringPeriod`, not configurable), so the latency spreads over 0–10 s with
//! the phase of the poll: that figure needs several repetitions; with the notification it is
//! the kubelets' own work from the kernel's event to the eviction.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::Client;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde::{Deserialize, Serialize};

use crate::cluster::{NAMESPACE, Result};
use crate::suite_report::{GoalKind, Row, Spread};

/// How much the hog takes, MiB.
pub const HOG_MIB: u64 = 1000;
/// Pods' working set past which the node is under pressure, MiB.
pub const PRESSURE_AT_MIB: u64 = 800;

/// One kubelet run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EvictionRun {
    /// `kubelet-rs` or `upstream`.
    pub kubelet: String,
    /// `kernelMemcgNotification`.
    pub memcg_notification: bool,
    /// Repetition (0-based).
    pub repeat: usize,
    /// The hard `allocatableMemory.available` threshold, MiB.
    pub threshold_mib: u64,
    /// Hog created → its working set crossed the threshold, s.
    pub create_to_crossed_s: Option<f64>,
    /// Crossed → the `Evicted` Event seen, s.
    pub crossed_to_event_s: Option<f64>,
    /// Crossed → the pod seen `Failed` with reason `Evicted`, s.
    pub crossed_to_failed_s: Option<f64>,
    /// What went wrong, if anything.
    pub error: Option<String>,
}

/// The node's pods cgroup (`<cgroupRoot>/kubepods`) memory files: v1's memory hierarchy or
/// the v2 unified one.
pub fn pods_cgroup_dir(cgroup_root: &str) -> PathBuf {
    let rel = format!("{}/kubepods", cgroup_root.trim_start_matches('/'));
    let v1 = Path::new("/sys/fs/cgroup/memory");
    if v1.is_dir() {
        v1.join(rel)
    } else {
        Path::new("/sys/fs/cgroup").join(rel)
    }
}

/// Working set of a memory cgroup: usage − inactive file (v1: `memory.usage_in_bytes` and
/// `total_inactive_file`; v2: `memory.current` and `inactive_file`), as the kubelet's
/// signals compute it.
pub fn working_set(dir: &Path) -> Option<u64> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let (usage, stat, key) = match read("memory.usage_in_bytes") {
        Some(u) => (u, read("memory.stat")?, "total_inactive_file"),
        None => (
            read("memory.current")?,
            read("memory.stat")?,
            "inactive_file",
        ),
    };
    let usage: u64 = usage.trim().parse().ok()?;
    let inactive = stat_value(&stat, key).unwrap_or(0);
    Some(usage.saturating_sub(inactive))
}

/// The value of `key` in a `memory.stat` text.
pub fn stat_value(stat: &str, key: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// `MemTotal` in MiB (the node's memory capacity).
pub fn mem_total_mib() -> Result<u64> {
    let text =
        std::fs::read_to_string("/proc/meminfo").map_err(|e| format!("/proc/meminfo: {e}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib / 1024)
        .ok_or_else(|| "/proc/meminfo: no MemTotal".to_string())
}

fn hog_pod(node: &str) -> Result<Pod> {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "hog", "namespace": NAMESPACE},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "automountServiceAccountToken": false,
            "containers": [{
                "name": "hog",
                "image": "docker.io/library/busybox:1.36",
                "imagePullPolicy": "Never",
                "command": ["/bin/sh", "-c",
                    format!("dd if=/dev/zero bs={HOG_MIB}M count=1 2>/dev/null | sleep 3600")],
            }],
        },
    }))
    .map_err(|e| format!("hog pod: {e}"))
}

fn is_evicted(p: &Pod) -> bool {
    p.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Failed") && s.reason.as_deref() == Some("Evicted")
    })
}

/// One run against a node that is up (see the module doc); `pods_cgroup` is its
/// [`pods_cgroup_dir`].
pub async fn measure(
    client: &Client,
    node: &str,
    pods_cgroup: &Path,
    timeout: Duration,
    run: &mut EvictionRun,
) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let events: Api<Event> = Api::namespaced(client.clone(), NAMESPACE);
    // (what, the involved pod's UID, when seen): events of earlier runs' hogs (same name)
    // stay in the namespace, so only the new pod's count.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(&'static str, String, Instant)>();
    let ev_tx = tx.clone();
    let event_watch = tokio::spawn(async move {
        let wp = WatchParams::default()
            .fields("involvedObject.name=hog,reason=Evicted")
            .timeout(290);
        let Ok(stream) = events.watch(&wp, "0").await else {
            return;
        };
        let mut stream = stream.boxed();
        while let Ok(Some(ev)) = stream.try_next().await {
            if let WatchEvent::Added(e) = ev {
                let uid = e.involved_object.uid.unwrap_or_default();
                let _ = ev_tx.send(("event", uid, Instant::now()));
            }
        }
    });
    let pod_watch = tokio::spawn({
        let pods = pods.clone();
        async move {
            let wp = WatchParams::default()
                .fields("metadata.name=hog")
                .timeout(290);
            let Ok(stream) = pods.watch(&wp, "0").await else {
                return;
            };
            let mut stream = stream.boxed();
            while let Ok(Some(ev)) = stream.try_next().await {
                if let WatchEvent::Added(p) | WatchEvent::Modified(p) = ev
                    && is_evicted(&p)
                {
                    let uid = p.metadata.uid.unwrap_or_default();
                    let _ = tx.send(("failed", uid, Instant::now()));
                }
            }
        }
    });
    // Let both watches be established before the hog exists.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let result = async {
        let created = Instant::now();
        let hog = pods
            .create(&PostParams::default(), &hog_pod(node)?)
            .await
            .map_err(|e| format!("create hog: {e}"))?;
        let hog_uid = hog.metadata.uid.unwrap_or_default();
        let deadline = created + timeout;
        let limit = PRESSURE_AT_MIB * 1024 * 1024;
        let crossed = loop {
            if working_set(pods_cgroup).is_some_and(|ws| ws > limit) {
                break Instant::now();
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the pods' working set ({:?} B in {}) did not pass {PRESSURE_AT_MIB} MiB within {timeout:?}",
                    working_set(pods_cgroup),
                    pods_cgroup.display()
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        run.create_to_crossed_s = Some((crossed - created).as_secs_f64());
        while run.crossed_to_event_s.is_none() || run.crossed_to_failed_s.is_none() {
            let Ok(Some((what, uid, at))) =
                tokio::time::timeout_at(deadline.into(), rx.recv()).await
            else {
                return Err(format!(
                    "no eviction within {timeout:?} of the hog's creation (event {:?}, failed {:?})",
                    run.crossed_to_event_s, run.crossed_to_failed_s
                ));
            };
            if uid != hog_uid {
                continue;
            }
            let after = at.saturating_duration_since(crossed).as_secs_f64();
            match what {
                "event" => run.crossed_to_event_s.get_or_insert(after),
                _ => run.crossed_to_failed_s.get_or_insert(after),
            };
        }
        Ok(())
    }
    .await;
    event_watch.abort();
    pod_watch.abort();
    result
}

/// The rows: per `kernelMemcgNotification` setting, crossed → Event (goal ≤ 1.0 × upstream)
/// and crossed → pod Failed, medians over the repetitions.
pub fn rows(runs: &[EvictionRun]) -> Vec<Row> {
    let of = |kubelet: &str, memcg: bool, f: &dyn Fn(&EvictionRun) -> Option<f64>| {
        let v: Vec<f64> = runs
            .iter()
            .filter(|r| r.error.is_none() && r.kubelet == kubelet && r.memcg_notification == memcg)
            .filter_map(f)
            .collect();
        Spread::of(&v)
    };
    let mut rows = Vec::new();
    for memcg in [false, true] {
        if !runs.iter().any(|r| r.memcg_notification == memcg) {
            continue;
        }
        let how = if memcg {
            "kernelMemcgNotification on"
        } else {
            "10 s poll"
        };
        let event = |r: &EvictionRun| r.crossed_to_event_s;
        let failed = |r: &EvictionRun| r.crossed_to_failed_s;
        rows.push(Row::measured(
            "E1",
            &format!("eviction detection, {how}: threshold crossed → Evicted event"),
            "s",
            (
                of("kubelet-rs", memcg, &event),
                of("upstream", memcg, &event),
                None,
            ),
            Some((GoalKind::VsUpstream, 1.0)),
            "hard allocatableMemory.available threshold; a BestEffort pod takes 1000 MiB; \
             crossed = the node's pods cgroup working set above the threshold, read every 10 ms; \
             the Event seen by a watch",
        ));
        rows.push(Row::measured(
            "E1",
            &format!("eviction detection, {how}: threshold crossed → pod Failed/Evicted"),
            "s",
            (of("kubelet-rs", memcg, &failed), of("upstream", memcg, &failed), None),
            None,
            "as above, until a watch sees the pod Failed with reason Evicted (kill and status included)",
        ));
    }
    rows
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn working_set_subtracts_inactive_file() {
        let dir = std::env::temp_dir().join(format!("krs-ws-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("memory.usage_in_bytes"), "1000\n").unwrap();
        std::fs::write(
            dir.join("memory.stat"),
            "cache 5\ntotal_inactive_file 300\ntotal_active_file 1\n",
        )
        .unwrap();
        assert_eq!(working_set(&dir), Some(700));
        std::fs::remove_file(dir.join("memory.usage_in_bytes")).unwrap();
        std::fs::write(dir.join("memory.current"), "1000\n").unwrap();
        std::fs::write(dir.join("memory.stat"), "anon 9\ninactive_file 100\n").unwrap();
        assert_eq!(working_set(&dir), Some(900));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(working_set(&dir), None);
    }

    #[test]
    fn rows_per_setting_with_ratios() {
        let run = |kubelet: &str, memcg: bool, event: f64| EvictionRun {
            kubelet: kubelet.into(),
            memcg_notification: memcg,
            crossed_to_event_s: Some(event),
            crossed_to_failed_s: Some(event + 1.0),
            ..EvictionRun::default()
        };
        let rows = rows(&[
            run("kubelet-rs", false, 4.0),
            run("upstream", false, 5.0),
            run("kubelet-rs", true, 0.1),
            run("upstream", true, 0.2),
            EvictionRun {
                error: Some("boom".into()),
                ..run("upstream", true, 100.0)
            },
        ]);
        assert_eq!(rows.len(), 4);
        assert!(rows[0].figure.contains("10 s poll"));
        assert!((rows[0].ratio_upstream.unwrap() - 0.8).abs() < 1e-9);
        assert_eq!(rows[0].met, Some(true));
        assert!(rows[2].figure.contains("kernelMemcgNotification on"));
        assert!((rows[2].ratio_upstream.unwrap() - 0.5).abs() < 1e-9);
        assert!(
            super::rows(&[run("kubelet-rs", true, 1.0)])
                .iter()
                .all(|r| r.figure.contains("kernelMemcgNotification"))
        );
    }
}
