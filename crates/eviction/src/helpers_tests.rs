//! Tests of `helpers.rs`, after upstream's `helpers_test.go`.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kubelet_apimachinery::eviction::{Signal, Threshold, parse_threshold_config};
use kubelet_container::events::Annotations;
use kubelet_stats::types::{
    ContainerStats, FsStats, MemoryStats, NodeStats, PodReference, PodStats, ProcessStats,
    RlimitStats, RuntimeStats, Summary, Time, VolumeStats,
};

use crate::helpers::*;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

pub(crate) fn thresholds(
    hard: &[(&str, &str)],
    soft: &[(&str, &str)],
    grace: &[(&str, &str)],
    reclaim: &[(&str, &str)],
) -> Vec<Threshold> {
    parse_threshold_config(&[], &map(hard), &map(soft), &map(grace), &map(reclaim)).unwrap()
}

pub(crate) fn t(secs: i64) -> Time {
    Time(jiff::Timestamp::from_second(1_700_000_000 + secs).unwrap())
}

pub(crate) fn mi(n: u64) -> u64 {
    n * 1024 * 1024
}

/// Upstream's `makeMemoryStats`-style node summary: available and working set.
pub(crate) fn summary_with_memory(available: u64, working_set: u64, time: Time) -> Summary {
    Summary {
        node: NodeStats {
            memory: Some(MemoryStats {
                time,
                available_bytes: Some(available),
                working_set_bytes: Some(working_set),
                ..MemoryStats::default()
            }),
            ..NodeStats::default()
        },
        pods: Vec::new(),
    }
}

pub(crate) fn pod(
    name: &str,
    priority: i32,
    requests: &[(&str, &str)],
    limits: &[(&str, &str)],
) -> Arc<Pod> {
    let res = |p: &[(&str, &str)]| {
        serde_json::Value::Object(
            p.iter()
                .map(|(k, v)| ((*k).to_string(), serde_json::json!(v)))
                .collect(),
        )
    };
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
            "spec": {
                "priority": priority,
                "containers": [{
                    "name": name,
                    "image": "busybox",
                    "resources": {"requests": res(requests), "limits": res(limits)},
                }],
                "volumes": [{"name": "disk", "emptyDir": {}}],
            },
        }))
        .unwrap(),
    )
}

pub(crate) fn pod_stats(
    p: &Pod,
    working_set: u64,
    rootfs: u64,
    logs: u64,
    volume: u64,
    procs: u64,
) -> PodStats {
    let name = p.metadata.name.clone().unwrap();
    let fs = |b: u64| FsStats {
        time: t(0),
        used_bytes: Some(b),
        inodes_used: Some(b / 1000),
        ..FsStats::default()
    };
    PodStats {
        pod_ref: PodReference {
            name: name.clone(),
            namespace: "default".into(),
            uid: p.metadata.uid.clone().unwrap(),
        },
        containers: vec![ContainerStats {
            name,
            memory: Some(MemoryStats {
                time: t(0),
                working_set_bytes: Some(working_set),
                ..MemoryStats::default()
            }),
            rootfs: Some(fs(rootfs)),
            logs: Some(fs(logs)),
            ..ContainerStats::default()
        }],
        memory: Some(MemoryStats {
            time: t(0),
            working_set_bytes: Some(working_set),
            ..MemoryStats::default()
        }),
        volume_stats: vec![VolumeStats {
            name: "disk".into(),
            fs: fs(volume),
        }],
        process_stats: Some(ProcessStats {
            process_count: Some(procs),
        }),
        ..PodStats::default()
    }
}

fn names(pods: &[Arc<Pod>]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

#[test]
fn make_signal_observations_as_upstream() {
    let fs = |avail: u64, cap: u64, ifree: u64, inodes: u64| FsStats {
        time: t(1),
        available_bytes: Some(avail),
        capacity_bytes: Some(cap),
        inodes_free: Some(ifree),
        inodes: Some(inodes),
        ..FsStats::default()
    };
    let mut s = summary_with_memory(mi(500), mi(1500), t(1));
    s.node.system_containers = vec![ContainerStats {
        name: "pods".into(),
        memory: Some(MemoryStats {
            time: t(2),
            available_bytes: Some(mi(100)),
            working_set_bytes: Some(mi(900)),
            ..MemoryStats::default()
        }),
        ..ContainerStats::default()
    }];
    s.node.fs = Some(fs(10, 100, 20, 200));
    s.node.runtime = Some(RuntimeStats {
        image_fs: Some(fs(30, 300, 40, 400)),
        container_fs: Some(fs(50, 500, 60, 600)),
    });
    s.node.rlimit = Some(RlimitStats {
        time: t(3),
        max_pid: Some(1000),
        num_of_running_processes: Some(300),
    });
    let o = make_signal_observations(&s);
    let get = |sig| {
        let x = o[&sig];
        (x.available, x.capacity)
    };
    let m = |n: u64| i64::try_from(mi(n)).unwrap();
    assert_eq!(get(Signal::MemoryAvailable), (m(500), m(2000)));
    assert_eq!(get(Signal::AllocatableMemoryAvailable), (m(100), m(1000)));
    assert_eq!(o[&Signal::AllocatableMemoryAvailable].time, Some(t(2)));
    assert_eq!(get(Signal::NodeFsAvailable), (10, 100));
    assert_eq!(get(Signal::NodeFsInodesFree), (20, 200));
    assert_eq!(get(Signal::ImageFsAvailable), (30, 300));
    assert_eq!(get(Signal::ImageFsInodesFree), (40, 400));
    assert_eq!(get(Signal::ContainerFsAvailable), (50, 500));
    assert_eq!(get(Signal::ContainerFsInodesFree), (60, 600));
    assert_eq!(get(Signal::PidAvailable), (700, 1000));
    // Missing figures: no observation.
    let empty = make_signal_observations(&Summary::default());
    assert!(empty.is_empty());
}

#[test]
fn thresholds_met_with_and_without_min_reclaim() {
    // Upstream TestThresholdsMet: 1Gi threshold, 500Mi min reclaim.
    let th = thresholds(
        &[("memory.available", "1Gi")],
        &[],
        &[],
        &[("memory.available", "500Mi")],
    );
    let obs = |avail: u64| make_signal_observations(&summary_with_memory(avail, mi(1000), t(0)));
    assert!(thresholds_met(&th, &obs(mi(2048)), false).is_empty());
    assert_eq!(thresholds_met(&th, &obs(mi(500)), false), th);
    // 1.2Gi available: above the threshold, below threshold + min reclaim.
    assert!(thresholds_met(&th, &obs(mi(1229)), false).is_empty());
    assert_eq!(thresholds_met(&th, &obs(mi(1229)), true), th);
    // Exactly at the threshold is not below it.
    assert!(thresholds_met(&th, &obs(mi(1024)), false).is_empty());
    // No observation: not met.
    assert!(thresholds_met(&th, &SignalObservations::new(), false).is_empty());
}

#[test]
fn percentage_thresholds_use_the_observed_capacity() {
    let th = thresholds(&[("memory.available", "10%")], &[], &[], &[]);
    // capacity = 100 + 900 Mi; 10 % = 100 Mi.
    let obs = make_signal_observations(&summary_with_memory(mi(99), mi(901), t(0)));
    assert_eq!(thresholds_met(&th, &obs, false).len(), 1);
    let obs = make_signal_observations(&summary_with_memory(mi(101), mi(899), t(0)));
    assert!(thresholds_met(&th, &obs, false).is_empty());
}

#[test]
fn grace_periods_and_first_observed_at() {
    let th = thresholds(
        &[("memory.available", "1Gi")],
        &[("memory.available", "2Gi")],
        &[("memory.available", "30s")],
        &[],
    );
    let now = Instant::now();
    let first = thresholds_first_observed_at(&th, &Vec::new(), now);
    assert_eq!(first.len(), 2);
    // Only the hard one at once.
    let met = thresholds_met_grace_period(&first, now);
    assert_eq!(met.len(), 1);
    assert!(met[0].is_hard());
    // Kept first time on the next round.
    let later = now + Duration::from_secs(31);
    let again = thresholds_first_observed_at(&th, &first, later);
    assert_eq!(again[1].1, now);
    assert_eq!(thresholds_met_grace_period(&again, later).len(), 2);
    // A threshold no longer met is forgotten.
    let dropped = thresholds_first_observed_at(&th[..1], &again, later);
    assert_eq!(dropped.len(), 1);
}

#[test]
fn node_conditions_and_transition_period() {
    let th = thresholds(
        &[
            ("memory.available", "1Gi"),
            ("allocatableMemory.available", "1Gi"),
            ("nodefs.available", "1Gi"),
            ("pid.available", "10"),
        ],
        &[],
        &[],
        &[],
    );
    let c = node_conditions(&th);
    assert_eq!(
        format_conditions(&c),
        "[MemoryPressure DiskPressure PIDPressure]"
    );
    let now = Instant::now();
    let at =
        node_conditions_last_observed_at(&[NodeConditionType::MemoryPressure], &Vec::new(), now);
    let period = Duration::from_secs(300);
    assert_eq!(
        node_conditions_observed_since(&at, period, now + Duration::from_secs(299)),
        [NodeConditionType::MemoryPressure]
    );
    assert!(node_conditions_observed_since(&at, period, now + period).is_empty());
    // Not observed now: keeps the old time.
    let later = node_conditions_last_observed_at(&[], &at, now + Duration::from_secs(10));
    assert_eq!(later, at);
}

#[test]
fn thresholds_updated_stats_compares_observation_times() {
    let th = thresholds(&[("memory.available", "1Gi")], &[], &[], &[]);
    let o1 = make_signal_observations(&summary_with_memory(1, 1, t(1)));
    let o2 = make_signal_observations(&summary_with_memory(1, 1, t(2)));
    assert_eq!(
        thresholds_updated_stats(&th, &o1, &SignalObservations::new()),
        th
    );
    assert!(thresholds_updated_stats(&th, &o1, &o1).is_empty());
    assert_eq!(thresholds_updated_stats(&th, &o2, &o1), th);
}

#[test]
fn merge_thresholds_ignores_duplicates() {
    let a = thresholds(&[("memory.available", "1Gi")], &[], &[], &[]);
    let b = thresholds(
        &[("memory.available", "1Gi"), ("nodefs.available", "1Gi")],
        &[],
        &[],
        &[("memory.available", "1Mi")],
    );
    let merged = merge_thresholds(a, &b);
    assert_eq!(merged.len(), 2);
}

#[test]
fn memory_thresholds_sort_first() {
    let mut th = thresholds(
        &[
            ("nodefs.available", "1Gi"),
            ("memory.available", "1Gi"),
            ("pid.available", "5"),
        ],
        &[],
        &[],
        &[],
    );
    sort_by_eviction_priority(&mut th);
    assert_eq!(th[0].signal, Signal::MemoryAvailable);
}

#[test]
fn container_fs_thresholds_follow_nodefs_or_imagefs() {
    let th = thresholds(
        &[
            ("nodefs.available", "1Gi"),
            ("imagefs.available", "2Gi"),
            ("nodefs.inodesFree", "5%"),
            ("imagefs.inodesFree", "6%"),
            ("containerfs.available", "9Gi"),
        ],
        &[],
        &[],
        &[],
    );
    let get = |v: &[Threshold], s| v.iter().find(|t| t.signal == s).copied().unwrap();
    let (one_fs, warnings) = update_container_fs_thresholds(&th, false, false);
    assert_eq!(
        warnings,
        ["found containerfs.available for hard eviction. ignoring"]
    );
    assert_eq!(
        get(&one_fs, Signal::ContainerFsAvailable).value,
        get(&th, Signal::NodeFsAvailable).value
    );
    let (image_fs, _) = update_container_fs_thresholds(&th, true, false);
    assert_eq!(
        get(&image_fs, Signal::ContainerFsAvailable).value,
        get(&th, Signal::ImageFsAvailable).value
    );
    assert_eq!(
        get(&image_fs, Signal::ContainerFsInodesFree).value,
        get(&th, Signal::ImageFsInodesFree).value
    );
    let (split, _) = update_container_fs_thresholds(&th, true, true);
    assert_eq!(
        get(&split, Signal::ContainerFsAvailable).value,
        get(&th, Signal::NodeFsAvailable).value
    );
}

/// Upstream TestOrderedByExceedsRequestMemory / TestOrderedByPriority / TestOrderedByMemory
/// combined as `rankMemoryPressure`.
#[test]
fn rank_memory_pressure_as_upstream() {
    let below = pod("below-requests", -1, &[("memory", "200Mi")], &[]);
    let exceeds = pod("above-requests", -1, &[("memory", "200Mi")], &[]);
    let high = pod("high-priority-high-usage", 1, &[("memory", "100Mi")], &[]);
    let low = pod("low-priority-high-usage", -1, &[], &[]);
    let low_small = pod("low-priority-low-usage", -1, &[], &[]);
    let stats = StatsFunc::new(&[
        pod_stats(&below, mi(199), 0, 0, 0, 0),
        pod_stats(&exceeds, mi(201), 0, 0, 0, 0),
        pod_stats(&high, mi(900), 0, 0, 0, 0),
        pod_stats(&low, mi(700), 0, 0, 0, 0),
        pod_stats(&low_small, mi(50), 0, 0, 0, 0),
    ]);
    let mut pods = vec![below, high, low_small, exceeds, low];
    rank_memory_pressure(&mut pods, &stats);
    assert_eq!(
        names(&pods),
        [
            // exceed requests, lowest priority first, most above request first
            "low-priority-high-usage",
            "low-priority-low-usage",
            "above-requests",
            "high-priority-high-usage",
            // within requests last
            "below-requests",
        ]
    );
}

#[test]
fn pods_without_stats_are_ranked_first() {
    let a = pod("with-stats", 0, &[], &[]);
    let b = pod("no-stats", 0, &[], &[]);
    let stats = StatsFunc::new(&[pod_stats(&a, mi(500), 0, 0, 0, 0)]);
    let mut pods = vec![a, b];
    rank_memory_pressure(&mut pods, &stats);
    assert_eq!(names(&pods), ["no-stats", "with-stats"]);
}

#[test]
fn rank_pid_pressure_by_priority_then_processes() {
    let a = pod("low-few", 0, &[], &[]);
    let b = pod("low-many", 0, &[], &[]);
    let c = pod("high-many", 10, &[], &[]);
    let stats = StatsFunc::new(&[
        pod_stats(&a, 0, 0, 0, 0, 3),
        pod_stats(&b, 0, 0, 0, 0, 30),
        pod_stats(&c, 0, 0, 0, 0, 300),
    ]);
    let mut pods = vec![c, a, b];
    rank_pid_pressure(&mut pods, &stats);
    assert_eq!(names(&pods), ["low-many", "low-few", "high-many"]);
}

#[test]
fn rank_disk_pressure_by_ephemeral_usage() {
    let within = pod("within-request", 0, &[("ephemeral-storage", "10Mi")], &[]);
    let big = pod("big", 0, &[], &[]);
    let small = pod("small", 0, &[], &[]);
    let stats = StatsFunc::new(&[
        pod_stats(&within, 0, mi(2), mi(2), mi(2), 0),
        pod_stats(&big, 0, mi(50), mi(1), mi(100), 0),
        pod_stats(&small, 0, mi(1), mi(1), mi(1), 0),
    ]);
    let all = [
        FsStatsType::Images,
        FsStatsType::Root,
        FsStatsType::Logs,
        FsStatsType::LocalVolumeSource,
    ];
    let mut pods = vec![within, small, big];
    rank_disk_pressure(&mut pods, &stats, &all, ResourceName::EphemeralStorage);
    assert_eq!(names(&pods), ["big", "small", "within-request"]);
    // With an imagefs, nodefs counts only logs and volumes.
    let p = pod("x", 0, &[], &[]);
    let s = pod_stats(&p, 0, mi(50), mi(1), mi(2), 0);
    assert_eq!(
        pod_disk_usage(&s, &p, &[FsStatsType::Logs, FsStatsType::LocalVolumeSource]).0,
        i64::try_from(mi(3)).unwrap()
    );
}

#[test]
fn signal_maps_as_upstream() {
    let rank = build_signal_to_rank_func(false, false);
    assert_eq!(rank.len(), 9);
    assert_eq!(rank[&Signal::MemoryAvailable], RankFunc::Memory);
    assert_eq!(rank[&Signal::PidAvailable], RankFunc::Pid);
    let reclaim = build_signal_to_node_reclaim_funcs(true, false);
    assert!(reclaim[&Signal::NodeFsAvailable].is_empty());
    assert_eq!(
        reclaim[&Signal::ImageFsAvailable],
        [
            NodeReclaimFunc::DeleteAllUnusedContainers,
            NodeReclaimFunc::DeleteUnusedImages
        ]
    );
    assert!(!reclaim.contains_key(&Signal::MemoryAvailable));
}

#[test]
fn eviction_message_as_upstream() {
    let th = thresholds(&[("memory.available", "100Mi")], &[], &[], &[]);
    let p = pod("hog", 0, &[], &[]);
    let stats = StatsFunc::new(&[pod_stats(&p, mi(600), 0, 0, 0, 0)]);
    let obs = make_signal_observations(&summary_with_memory(mi(80), mi(1000), t(0)));
    let (msg, annotations) = eviction_message(ResourceName::Memory, &p, &stats, (&th, &obs), true);
    assert_eq!(
        msg,
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. \
         Container hog was using 600Mi, request is 0, has larger consumption of memory. "
    );
    // Upstream's event annotations (`AnnotatedEventf`).
    let expected: Annotations = [
        ("offending_containers", "hog"),
        ("offending_containers_usage", "600Mi"),
        ("starved_resource", "memory"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .into();
    assert_eq!(annotations, expected);
    // Within its request: no container sentence, empty lists.
    let g = pod("guaranteed", 0, &[("memory", "1Gi")], &[("memory", "1Gi")]);
    let stats = StatsFunc::new(&[pod_stats(&g, mi(600), 0, 0, 0, 0)]);
    let (msg, annotations) = eviction_message(ResourceName::Memory, &g, &stats, (&th, &obs), true);
    assert_eq!(
        msg,
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. "
    );
    assert_eq!(annotations["offending_containers"], "");
    assert_eq!(annotations["offending_containers_usage"], "");
    assert_eq!(annotations["starved_resource"], "memory");
    // No stats for the pod: the message only, no annotations (upstream returns early).
    let (_, annotations) = eviction_message(
        ResourceName::Memory,
        &g,
        &StatsFunc::new(&[]),
        (&th, &obs),
        true,
    );
    assert!(annotations.is_empty());
}

/// `PodLevelResources`: a pod with a pod-level memory request is named with its usage (in
/// the message and the `offending_pod*` annotations), whether or not it is past the
/// request, as upstream does; not with the gate off.
#[test]
fn eviction_message_names_a_pod_with_pod_level_resources() {
    let th = thresholds(&[("memory.available", "100Mi")], &[], &[], &[]);
    let obs = make_signal_observations(&summary_with_memory(mi(80), mi(1000), t(0)));
    let mut p = (*pod("pl", 0, &[], &[])).clone();
    if let Some(spec) = p.spec.as_mut() {
        spec.resources =
            serde_json::from_value(serde_json::json!({"requests": {"memory": "512Mi"}})).unwrap();
    }
    let stats = StatsFunc::new(&[pod_stats(&p, mi(600), 0, 0, 0, 0)]);
    let (msg, annotations) = eviction_message(ResourceName::Memory, &p, &stats, (&th, &obs), true);
    assert_eq!(
        msg,
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. \
         Pod pl was using 600Mi, request is 512Mi, has larger consumption of memory. \
         Container pl was using 600Mi, request is 0, has larger consumption of memory. "
    );
    assert_eq!(annotations["offending_pod"], "pl");
    assert_eq!(annotations["offending_pod_usage"], "600Mi");
    let (msg, annotations) = eviction_message(ResourceName::Memory, &p, &stats, (&th, &obs), false);
    assert!(!msg.contains("Pod pl"));
    assert!(!annotations.contains_key("offending_pod"));
}
