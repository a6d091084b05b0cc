//! Upstream `pkg/kubelet/eviction/helpers.go` (and `helpers_linux.go`): signal observations
//! from the summary, thresholds met, grace periods, node conditions, pod ranking and the
//! eviction message.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_apimachinery::eviction::{Signal, Threshold, ThresholdValue};
use kubelet_apimachinery::{Format, Quantity};
use kubelet_container::events::Annotations;
use kubelet_container::qos::is_pod_level_resources_set;
use kubelet_stats::types::{FsStats, PodStats, Summary, Time};

/// The name of the pods system container in the summary (`statsapi.SystemContainerPods`).
pub const SYSTEM_CONTAINER_PODS: &str = "pods";

/// A node condition the eviction manager reports (`v1.NodeConditionType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeConditionType {
    /// `MemoryPressure`.
    MemoryPressure,
    /// `DiskPressure`.
    DiskPressure,
    /// `PIDPressure`.
    PidPressure,
}

impl NodeConditionType {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeConditionType::MemoryPressure => "MemoryPressure",
            NodeConditionType::DiskPressure => "DiskPressure",
            NodeConditionType::PidPressure => "PIDPressure",
        }
    }
}

/// Go's `%v` of a `[]v1.NodeConditionType`: `[MemoryPressure DiskPressure]`.
pub fn format_conditions(conditions: &[NodeConditionType]) -> String {
    let names: Vec<&str> = conditions.iter().map(|c| c.as_str()).collect();
    format!("[{}]", names.join(" "))
}

/// The resource a signal reclaims (upstream `signalToResource`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResourceName {
    /// `memory`.
    Memory,
    /// `ephemeral-storage`.
    EphemeralStorage,
    /// `inodes` (internal to the eviction manager).
    Inodes,
    /// `pids` (internal to the eviction manager).
    Pids,
}

impl ResourceName {
    /// The resource name as upstream writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceName::Memory => "memory",
            ResourceName::EphemeralStorage => "ephemeral-storage",
            ResourceName::Inodes => "inodes",
            ResourceName::Pids => "pids",
        }
    }

    /// The format upstream gives quantities of this resource (`BinarySI` for bytes,
    /// `DecimalSI` for counts).
    pub fn format(self) -> Format {
        match self {
            ResourceName::Memory | ResourceName::EphemeralStorage => Format::BinarySI,
            ResourceName::Inodes | ResourceName::Pids => Format::DecimalSI,
        }
    }
}

/// Upstream `signalToResource`.
pub fn signal_to_resource(signal: Signal) -> ResourceName {
    match signal {
        Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable => ResourceName::Memory,
        Signal::NodeFsAvailable | Signal::ImageFsAvailable | Signal::ContainerFsAvailable => {
            ResourceName::EphemeralStorage
        }
        Signal::NodeFsInodesFree | Signal::ImageFsInodesFree | Signal::ContainerFsInodesFree => {
            ResourceName::Inodes
        }
        Signal::PidAvailable => ResourceName::Pids,
    }
}

/// Upstream `signalToNodeCondition`.
pub fn signal_to_node_condition(signal: Signal) -> NodeConditionType {
    match signal {
        Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable => {
            NodeConditionType::MemoryPressure
        }
        Signal::PidAvailable => NodeConditionType::PidPressure,
        _ => NodeConditionType::DiskPressure,
    }
}

/// One observed value of a signal (upstream `signalObservation`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SignalObservation {
    /// The amount available (bytes, inodes or PIDs).
    pub available: i64,
    /// The total.
    pub capacity: i64,
    /// When the figures were collected (`None`: Go's zero time).
    pub time: Option<Time>,
}

/// Upstream `signalObservations`.
pub type SignalObservations = BTreeMap<Signal, SignalObservation>;

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn fs_observations(fs: &FsStats, bytes: Signal, inodes: Signal, result: &mut SignalObservations) {
    if let (Some(available), Some(capacity)) = (fs.available_bytes, fs.capacity_bytes) {
        result.insert(
            bytes,
            SignalObservation {
                available: int(available),
                capacity: int(capacity),
                time: Some(fs.time),
            },
        );
    }
    if let (Some(free), Some(total)) = (fs.inodes_free, fs.inodes) {
        result.insert(
            inodes,
            SignalObservation {
                available: int(free),
                capacity: int(total),
                time: Some(fs.time),
            },
        );
    }
}

/// Upstream `makeSignalObservations`: `memory.available` is the node's available memory
/// (capacity minus the root cgroup's working set) with capacity `available + workingSet`;
/// `allocatableMemory.available` the same from the `pods` system container; the
/// filesystems' available bytes and free inodes; `pid.available` is `maxpid` minus the
/// running processes.
pub fn make_signal_observations(summary: &Summary) -> SignalObservations {
    let mut result = SignalObservations::new();
    if let Some(m) = &summary.node.memory
        && let (Some(available), Some(ws)) = (m.available_bytes, m.working_set_bytes)
    {
        result.insert(
            Signal::MemoryAvailable,
            SignalObservation {
                available: int(available),
                capacity: int(available.saturating_add(ws)),
                time: Some(m.time),
            },
        );
    }
    match summary
        .node
        .system_containers
        .iter()
        .find(|c| c.name == SYSTEM_CONTAINER_PODS)
    {
        None => tracing::error!(
            err = %format!("system container {SYSTEM_CONTAINER_PODS:?} not found in metrics"),
            signal = %Signal::AllocatableMemoryAvailable,
            "Eviction manager: failed to construct signal"
        ),
        Some(c) => {
            if let Some(m) = &c.memory
                && let (Some(available), Some(ws)) = (m.available_bytes, m.working_set_bytes)
            {
                result.insert(
                    Signal::AllocatableMemoryAvailable,
                    SignalObservation {
                        available: int(available),
                        capacity: int(available.saturating_add(ws)),
                        time: Some(m.time),
                    },
                );
            }
        }
    }
    if let Some(fs) = &summary.node.fs {
        fs_observations(
            fs,
            Signal::NodeFsAvailable,
            Signal::NodeFsInodesFree,
            &mut result,
        );
    }
    if let Some(rt) = &summary.node.runtime {
        if let Some(fs) = &rt.image_fs {
            fs_observations(
                fs,
                Signal::ImageFsAvailable,
                Signal::ImageFsInodesFree,
                &mut result,
            );
        }
        if let Some(fs) = &rt.container_fs {
            fs_observations(
                fs,
                Signal::ContainerFsAvailable,
                Signal::ContainerFsInodesFree,
                &mut result,
            );
        }
    }
    if let Some(r) = &summary.node.rlimit
        && let (Some(running), Some(max)) = (r.num_of_running_processes, r.max_pid)
    {
        result.insert(
            Signal::PidAvailable,
            SignalObservation {
                available: max - running,
                capacity: max,
                time: Some(r.time),
            },
        );
    }
    result
}

/// Upstream `GetThresholdQuantity` of `value` for a signal observed with `capacity`.
pub fn threshold_quantity(value: &ThresholdValue, signal: Signal, capacity: i64) -> Quantity {
    value.quantity_for_capacity(&Quantity::from_int(
        capacity,
        signal_to_resource(signal).format(),
    ))
}

/// Upstream `thresholdsMet`: the thresholds whose signal is below them, ignoring grace
/// periods; with `enforce_min_reclaim`, below the threshold plus its minimum reclaim.
pub fn thresholds_met(
    thresholds: &[Threshold],
    observations: &SignalObservations,
    enforce_min_reclaim: bool,
) -> Vec<Threshold> {
    let mut results = Vec::new();
    for threshold in thresholds {
        let Some(observed) = observations.get(&threshold.signal) else {
            tracing::info!(signal = %threshold.signal, "Eviction manager: no observation found for eviction signal");
            continue;
        };
        let mut quantity =
            threshold_quantity(&threshold.value, threshold.signal, observed.capacity).value();
        if enforce_min_reclaim && let Some(min) = &threshold.min_reclaim {
            quantity = quantity.saturating_add(
                threshold_quantity(min, threshold.signal, observed.capacity).value(),
            );
        }
        if quantity > observed.available {
            results.push(*threshold);
        }
    }
    results
}

/// Upstream `thresholdsUpdatedStats`: the thresholds whose observation is newer than the
/// previous round's (or has no time, or had no previous observation).
pub fn thresholds_updated_stats(
    thresholds: &[Threshold],
    observations: &SignalObservations,
    last: &SignalObservations,
) -> Vec<Threshold> {
    let mut results = Vec::new();
    for threshold in thresholds {
        let Some(observed) = observations.get(&threshold.signal) else {
            tracing::info!(signal = %threshold.signal, "Eviction manager: no observation found for eviction signal");
            continue;
        };
        let updated = match (last.get(&threshold.signal), observed.time) {
            (None, _) | (_, None) => true,
            (Some(l), Some(t)) => l.time.is_none_or(|lt| t.0 > lt.0),
        };
        if updated {
            results.push(*threshold);
        }
    }
    results
}

/// When each threshold was first met (upstream `thresholdsObservedAt`).
pub type ThresholdsObservedAt = Vec<(Threshold, Instant)>;

/// When each node condition was last observed (upstream `nodeConditionsObservedAt`).
pub type NodeConditionsObservedAt = Vec<(NodeConditionType, Instant)>;

/// Upstream `thresholdsFirstObservedAt`: keeps the first time of thresholds still met.
pub fn thresholds_first_observed_at(
    thresholds: &[Threshold],
    last: &ThresholdsObservedAt,
    now: Instant,
) -> ThresholdsObservedAt {
    let mut results: ThresholdsObservedAt = Vec::new();
    for t in thresholds {
        if results.iter().any(|(r, _)| r == t) {
            continue;
        }
        let at = last.iter().find(|(l, _)| l == t).map_or(now, |(_, at)| *at);
        results.push((*t, at));
    }
    results
}

/// Upstream `thresholdsMetGracePeriod`: the thresholds met for at least their grace period.
pub fn thresholds_met_grace_period(
    observed_at: &ThresholdsObservedAt,
    now: Instant,
) -> Vec<Threshold> {
    let mut results = Vec::new();
    for (threshold, at) in observed_at {
        let duration = now.saturating_duration_since(*at);
        let grace = threshold.grace_period.as_std().unwrap_or(Duration::ZERO);
        if duration < grace {
            tracing::debug!(signal = %threshold.signal, duration = ?duration, grace_period = ?grace, "Eviction manager: eviction criteria not yet met");
            continue;
        }
        results.push(*threshold);
    }
    results
}

/// Upstream `nodeConditions`: the conditions of the thresholds, each once.
pub fn node_conditions(thresholds: &[Threshold]) -> Vec<NodeConditionType> {
    let mut results = Vec::new();
    for t in thresholds {
        let c = signal_to_node_condition(t.signal);
        if !results.contains(&c) {
            results.push(c);
        }
    }
    results
}

/// Upstream `nodeConditionsLastObservedAt`: the conditions observed now at `now`, the
/// others with their previous time.
pub fn node_conditions_last_observed_at(
    conditions: &[NodeConditionType],
    last: &NodeConditionsObservedAt,
    now: Instant,
) -> NodeConditionsObservedAt {
    let mut results: NodeConditionsObservedAt = conditions.iter().map(|c| (*c, now)).collect();
    for (c, at) in last {
        if !results.iter().any(|(r, _)| r == c) {
            results.push((*c, *at));
        }
    }
    results
}

/// Upstream `nodeConditionsObservedSince`: the conditions observed within `period`.
pub fn node_conditions_observed_since(
    observed_at: &NodeConditionsObservedAt,
    period: Duration,
    now: Instant,
) -> Vec<NodeConditionType> {
    observed_at
        .iter()
        .filter(|(_, at)| now.saturating_duration_since(*at) < period)
        .map(|(c, _)| *c)
        .collect()
}

/// Upstream `hasThreshold` (grace period, operator, signal and value compared; not the
/// minimum reclaim).
fn has_threshold(inputs: &[Threshold], item: &Threshold) -> bool {
    inputs.iter().any(|i| {
        i.grace_period == item.grace_period
            && i.operator == item.operator
            && i.signal == item.signal
            && compare_threshold_value(&i.value, &item.value)
    })
}

fn compare_threshold_value(a: &ThresholdValue, b: &ThresholdValue) -> bool {
    match (a, b) {
        (ThresholdValue::Quantity(x), ThresholdValue::Quantity(y)) => {
            x.cmp_value(y) == Ordering::Equal
        }
        (ThresholdValue::Percentage(x), ThresholdValue::Percentage(y)) => x == y,
        _ => false,
    }
}

/// Upstream `mergeThresholds`: `a` plus those of `b` not in it.
pub fn merge_thresholds(a: Vec<Threshold>, b: &[Threshold]) -> Vec<Threshold> {
    let mut results = a;
    for t in b {
        if !has_threshold(&results, t) {
            results.push(*t);
        }
    }
    results
}

/// Upstream `byEvictionPriority`: memory thresholds first. Upstream's `Less` is not a
/// strict order; a stable partition gives the order it produces on its inputs (memory
/// signals first, the others in their order; every signal here has a resource).
pub fn sort_by_eviction_priority(thresholds: &mut [Threshold]) {
    thresholds.sort_by_key(|t| {
        !matches!(
            t.signal,
            Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable
        )
    });
}

/// Upstream `UpdateContainerFsThresholds`: the `containerfs.*` thresholds follow nodefs (one
/// filesystem, or containers split from images) or imagefs (a dedicated image
/// filesystem holding the containers too); configured `containerfs.*` thresholds are
/// replaced (upstream returns an error saying so, which the manager logs).
pub fn update_container_fs_thresholds(
    thresholds: &[Threshold],
    image_fs: bool,
    separate_container_image_fs: bool,
) -> (Vec<Threshold>, Vec<String>) {
    let mut warnings = Vec::new();
    let find = |signal: Signal, hard: bool| {
        thresholds
            .iter()
            .rev()
            .find(|t| t.signal == signal && t.is_hard() == hard)
            .copied()
    };
    let mut out: Vec<Threshold> = Vec::new();
    for t in thresholds {
        if matches!(
            t.signal,
            Signal::ContainerFsAvailable | Signal::ContainerFsInodesFree
        ) {
            warnings.push(format!(
                "found {} for {} eviction. ignoring",
                t.signal,
                if t.is_hard() { "hard" } else { "soft" }
            ));
            continue;
        }
        out.push(*t);
    }
    let (bytes, inodes) = if image_fs && !separate_container_image_fs {
        (Signal::ImageFsAvailable, Signal::ImageFsInodesFree)
    } else {
        (Signal::NodeFsAvailable, Signal::NodeFsInodesFree)
    };
    for (from, to) in [
        (bytes, Signal::ContainerFsAvailable),
        (inodes, Signal::ContainerFsInodesFree),
    ] {
        for hard in [true, false] {
            // Upstream appends a zero-valued threshold when the source is absent; a zero
            // threshold is never met, so it is left out here.
            if let Some(src) = find(from, hard) {
                out.push(Threshold { signal: to, ..src });
            }
        }
    }
    (out, warnings)
}

/// Which pod filesystem usage a disk ranking measures (upstream `fsStatsType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsStatsType {
    /// The containers' writable layers.
    Root,
    /// The containers' logs.
    Logs,
    /// Local volumes (hostPath, emptyDir on disk, configMap, downwardAPI, gitRepo).
    LocalVolumeSource,
    /// Images (counted by no per-pod figure, as upstream).
    Images,
}

/// A lookup of a pod's stats (upstream `statsFunc`).
pub struct StatsFunc {
    by_uid: BTreeMap<String, PodStats>,
}

impl StatsFunc {
    /// Upstream `cachedStatsFunc`.
    pub fn new(pods: &[PodStats]) -> Self {
        StatsFunc {
            by_uid: pods
                .iter()
                .map(|p| (p.pod_ref.uid.clone(), p.clone()))
                .collect(),
        }
    }

    /// The stats of `pod`, if the summary had them.
    pub fn get(&self, pod: &Pod) -> Option<&PodStats> {
        self.by_uid.get(pod_uid(pod))
    }
}

fn pod_uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

fn memory_usage(stats: &PodStats) -> i64 {
    stats
        .memory
        .as_ref()
        .and_then(|m| m.working_set_bytes)
        .map_or(0, int)
}

fn process_usage(stats: &PodStats) -> i64 {
    stats
        .process_stats
        .as_ref()
        .and_then(|p| p.process_count)
        .map_or(0, int)
}

fn parse_request(c: &Container, resource: &str) -> Option<Quantity> {
    let q = c.resources.as_ref()?.requests.as_ref()?.get(resource)?;
    Quantity::parse(&q.0).ok()
}

/// Upstream `GetResourceRequestQuantity` for `ephemeral-storage`: the containers' sum, or
/// the largest init container's if larger (restartable init containers add up).
fn ephemeral_request(pod: &Pod) -> i64 {
    let Some(spec) = pod.spec.as_ref() else {
        return 0;
    };
    let req = |c: &Container| parse_request(c, "ephemeral-storage").map_or(0, |q| q.value());
    let mut sum: i64 = spec.containers.iter().map(req).sum();
    let mut sidecars = 0i64;
    let mut init_peak = 0i64;
    for c in spec.init_containers.iter().flatten() {
        let r = req(c);
        if c.restart_policy.as_deref() == Some("Always") {
            sum += r;
            sidecars += r;
            init_peak = init_peak.max(sidecars);
        } else {
            init_peak = init_peak.max(r + sidecars);
        }
    }
    sum.max(init_peak)
}

fn memory_request(pod: &Pod) -> i64 {
    kubelet_admission::resources::resource_request(pod, "memory")
}

/// Upstream `corev1helpers.PodPriority`: the spec's priority, else 0.
pub fn pod_priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// Upstream `cmpBool`: `true` first.
fn cmp_bool(a: bool, b: bool) -> Ordering {
    match (a, b) {
        (x, y) if x == y => Ordering::Equal,
        (true, _) => Ordering::Less,
        _ => Ordering::Greater,
    }
}

/// Upstream `priority`: lower priority first.
pub fn priority(p1: &Pod, p2: &Pod) -> Ordering {
    pod_priority(p1).cmp(&pod_priority(p2))
}

fn with_stats<'a>(
    stats: &'a StatsFunc,
    p1: &Pod,
    p2: &Pod,
) -> Result<(&'a PodStats, &'a PodStats), Ordering> {
    match (stats.get(p1), stats.get(p2)) {
        (Some(a), Some(b)) => Ok((a, b)),
        (a, b) => Err(cmp_bool(a.is_none(), b.is_none())),
    }
}

/// Upstream `exceedMemoryRequests`: pods using more than they request first (pods without
/// stats before all).
pub fn exceed_memory_requests(stats: &StatsFunc, p1: &Pod, p2: &Pod) -> Ordering {
    match with_stats(stats, p1, p2) {
        Err(o) => o,
        Ok((s1, s2)) => cmp_bool(
            memory_usage(s1) > memory_request(p1),
            memory_usage(s2) > memory_request(p2),
        ),
    }
}

/// Upstream `memory`: the largest usage above request first.
pub fn memory(stats: &StatsFunc, p1: &Pod, p2: &Pod) -> Ordering {
    match with_stats(stats, p1, p2) {
        Err(o) => o,
        Ok((s1, s2)) => {
            let a = memory_usage(s1) - memory_request(p1);
            let b = memory_usage(s2) - memory_request(p2);
            b.cmp(&a)
        }
    }
}

/// Upstream `process`: the most processes first.
pub fn process(stats: &StatsFunc, p1: &Pod, p2: &Pod) -> Ordering {
    match with_stats(stats, p1, p2) {
        Err(o) => o,
        Ok((s1, s2)) => process_usage(s2).cmp(&process_usage(s1)),
    }
}

fn fs_used(fs: Option<&FsStats>) -> (i64, i64) {
    fs.map_or((0, 0), |f| {
        (f.used_bytes.map_or(0, int), f.inodes_used.map_or(0, int))
    })
}

/// Upstream `localVolumeNames`: hostPath volumes and local ephemeral ones (emptyDir not in
/// memory, configMap, downwardAPI, gitRepo).
fn local_volume_names(pod: &Pod) -> Vec<&str> {
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter(|v| {
            v.host_path.is_some()
                || v.git_repo.is_some()
                || v.config_map.is_some()
                || v.downward_api.is_some()
                || v.empty_dir
                    .as_ref()
                    .is_some_and(|e| e.medium.as_deref() != Some("Memory"))
        })
        .map(|v| v.name.as_str())
        .collect()
}

/// Upstream `podDiskUsage`: `(bytes, inodes)` of the measured filesystems.
pub fn pod_disk_usage(stats: &PodStats, pod: &Pod, measure: &[FsStatsType]) -> (i64, i64) {
    let (mut disk, mut inodes) = (0i64, 0i64);
    for c in &stats.containers {
        if measure.contains(&FsStatsType::Root) {
            let (d, i) = fs_used(c.rootfs.as_ref());
            disk += d;
            inodes += i;
        }
        if measure.contains(&FsStatsType::Logs) {
            let (d, i) = fs_used(c.logs.as_ref());
            disk += d;
            inodes += i;
        }
    }
    if measure.contains(&FsStatsType::LocalVolumeSource) {
        for name in local_volume_names(pod) {
            if let Some(v) = stats.volume_stats.iter().find(|v| v.name == name) {
                let (d, i) = fs_used(Some(&v.fs));
                disk += d;
                inodes += i;
            }
        }
    }
    (disk, inodes)
}

fn disk_of(usage: (i64, i64), resource: ResourceName) -> i64 {
    if resource == ResourceName::Inodes {
        usage.1
    } else {
        usage.0
    }
}

fn disk_request(pod: &Pod, resource: ResourceName) -> i64 {
    if resource == ResourceName::EphemeralStorage {
        ephemeral_request(pod)
    } else {
        0
    }
}

/// Upstream `exceedDiskRequests`.
pub fn exceed_disk_requests(
    stats: &StatsFunc,
    measure: &[FsStatsType],
    resource: ResourceName,
    p1: &Pod,
    p2: &Pod,
) -> Ordering {
    match with_stats(stats, p1, p2) {
        Err(o) => o,
        Ok((s1, s2)) => cmp_bool(
            disk_of(pod_disk_usage(s1, p1, measure), resource) > disk_request(p1, resource),
            disk_of(pod_disk_usage(s2, p2, measure), resource) > disk_request(p2, resource),
        ),
    }
}

/// Upstream `disk`: the largest usage above the ephemeral-storage request first (upstream
/// subtracts the ephemeral-storage request for inodes too).
pub fn disk(
    stats: &StatsFunc,
    measure: &[FsStatsType],
    resource: ResourceName,
    p1: &Pod,
    p2: &Pod,
) -> Ordering {
    match with_stats(stats, p1, p2) {
        Err(o) => o,
        Ok((s1, s2)) => {
            let a = disk_of(pod_disk_usage(s1, p1, measure), resource) - ephemeral_request(p1);
            let b = disk_of(pod_disk_usage(s2, p2, measure), resource) - ephemeral_request(p2);
            b.cmp(&a)
        }
    }
}

/// How pods are ranked for a signal (upstream `rankFunc`).
#[derive(Clone, Debug, PartialEq)]
pub enum RankFunc {
    /// `rankMemoryPressure`.
    Memory,
    /// `rankPIDPressure`.
    Pid,
    /// `rankDiskPressureFunc(fsStatsToMeasure, diskResource)`.
    Disk(Vec<FsStatsType>, ResourceName),
}

impl RankFunc {
    /// Sorts `pods` with the most evictable first.
    pub fn rank(&self, pods: &mut [std::sync::Arc<Pod>], stats: &StatsFunc) {
        match self {
            RankFunc::Memory => rank_memory_pressure(pods, stats),
            RankFunc::Pid => rank_pid_pressure(pods, stats),
            RankFunc::Disk(m, r) => rank_disk_pressure(pods, stats, m, *r),
        }
    }
}

/// Upstream `rankMemoryPressure`: usage above requests, then priority, then usage above
/// request.
pub fn rank_memory_pressure(pods: &mut [std::sync::Arc<Pod>], stats: &StatsFunc) {
    pods.sort_by(|a, b| {
        exceed_memory_requests(stats, a, b)
            .then_with(|| priority(a, b))
            .then_with(|| memory(stats, a, b))
    });
}

/// Upstream `rankPIDPressure`: priority, then process count.
pub fn rank_pid_pressure(pods: &mut [std::sync::Arc<Pod>], stats: &StatsFunc) {
    pods.sort_by(|a, b| priority(a, b).then_with(|| process(stats, a, b)));
}

/// Upstream `rankDiskPressureFunc`: usage above requests, priority, usage.
pub fn rank_disk_pressure(
    pods: &mut [std::sync::Arc<Pod>],
    stats: &StatsFunc,
    measure: &[FsStatsType],
    resource: ResourceName,
) {
    pods.sort_by(|a, b| {
        exceed_disk_requests(stats, measure, resource, a, b)
            .then_with(|| priority(a, b))
            .then_with(|| disk(stats, measure, resource, a, b))
    });
}

/// Upstream `buildSignalToRankFunc`.
pub fn build_signal_to_rank_func(with_image_fs: bool, split: bool) -> BTreeMap<Signal, RankFunc> {
    use FsStatsType::{Images, LocalVolumeSource, Logs, Root};
    use ResourceName::{EphemeralStorage, Inodes};
    let mut m = BTreeMap::new();
    m.insert(Signal::MemoryAvailable, RankFunc::Memory);
    m.insert(Signal::AllocatableMemoryAvailable, RankFunc::Memory);
    m.insert(Signal::PidAvailable, RankFunc::Pid);
    let disk = |v: &[FsStatsType], r| RankFunc::Disk(v.to_vec(), r);
    let (node, image, container) = if with_image_fs && !split {
        let node = vec![Logs, LocalVolumeSource];
        let image = vec![Root, Images];
        (node, image.clone(), image)
    } else if with_image_fs && split {
        let node = vec![Logs, LocalVolumeSource, Root];
        (node.clone(), vec![Images], node)
    } else {
        let all = vec![Images, Root, Logs, LocalVolumeSource];
        (all.clone(), all.clone(), all)
    };
    m.insert(Signal::NodeFsAvailable, disk(&node, EphemeralStorage));
    m.insert(Signal::NodeFsInodesFree, disk(&node, Inodes));
    m.insert(Signal::ImageFsAvailable, disk(&image, EphemeralStorage));
    m.insert(Signal::ImageFsInodesFree, disk(&image, Inodes));
    m.insert(
        Signal::ContainerFsAvailable,
        disk(&container, EphemeralStorage),
    );
    m.insert(Signal::ContainerFsInodesFree, disk(&container, Inodes));
    m
}

/// A node-level reclaim step (upstream `nodeReclaimFunc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeReclaimFunc {
    /// `containerGC.DeleteAllUnusedContainers`.
    DeleteAllUnusedContainers,
    /// `imageGC.DeleteUnusedImages`.
    DeleteUnusedImages,
}

/// Upstream `buildSignalToNodeReclaimFuncs`; memory and PID signals have none.
pub fn build_signal_to_node_reclaim_funcs(
    with_image_fs: bool,
    split: bool,
) -> BTreeMap<Signal, Vec<NodeReclaimFunc>> {
    use NodeReclaimFunc::{DeleteAllUnusedContainers as C, DeleteUnusedImages as I};
    let mut m = BTreeMap::new();
    let (node, image, container): (Vec<_>, Vec<_>, Vec<_>) = if with_image_fs && !split {
        (vec![], vec![C, I], vec![C, I])
    } else if with_image_fs && split {
        (vec![C], vec![I], vec![C])
    } else {
        (vec![C, I], vec![C, I], vec![C, I])
    };
    m.insert(Signal::NodeFsAvailable, node.clone());
    m.insert(Signal::NodeFsInodesFree, node);
    m.insert(Signal::ImageFsAvailable, image.clone());
    m.insert(Signal::ImageFsInodesFree, image);
    m.insert(Signal::ContainerFsAvailable, container.clone());
    m.insert(Signal::ContainerFsInodesFree, container);
    m
}

fn quantity_string(v: i64, resource: ResourceName) -> String {
    Quantity::from_int(v, resource.format()).to_string()
}

/// Upstream `getThresholdMetInfo`: the first threshold of the resource with an observation.
fn threshold_met_info(
    resource: ResourceName,
    thresholds: &[Threshold],
    observations: &SignalObservations,
) -> Option<(Quantity, i64)> {
    thresholds
        .iter()
        .filter(|t| signal_to_resource(t.signal) == resource)
        .find_map(|t| {
            observations.get(&t.signal).map(|o| {
                (
                    threshold_quantity(&t.value, t.signal, o.capacity),
                    o.available,
                )
            })
        })
}

/// Upstream `evictionMessage`: `The node was low on resource: <resource>. Threshold
/// quantity: <q>, available: <a>. ` then, for each container using more than it requests
/// of the resource, `Container <name> was using <usage>, request is <request>, has larger
/// consumption of <resource>. ` (memory: working set; ephemeral storage: rootfs + logs).
/// Pod-level resources are not supported by kubelet-rs (refused at admission), so the
/// pod-level sentence never applies.
pub fn eviction_message(
    resource: ResourceName,
    pod: &Pod,
    stats: &StatsFunc,
    (thresholds, observations): (&[Threshold], &SignalObservations),
    pod_level_resources: bool,
) -> (String, Annotations) {
    let mut annotations = Annotations::new();
    let mut message = format!("The node was low on resource: {}. ", resource.as_str());
    if let Some((q, available)) = threshold_met_info(resource, thresholds, observations) {
        message += &format!(
            "Threshold quantity: {q}, available: {}. ",
            quantity_string(available, resource)
        );
    }
    let Some(pod_stats) = stats.get(pod) else {
        return (message, annotations);
    };
    let Some(spec) = pod.spec.as_ref() else {
        return (message, annotations);
    };
    // Pod-level resources: the pod's own memory request and usage, beside the containers'.
    if resource == ResourceName::Memory
        && pod_level_resources
        && is_pod_level_resources_set(pod)
        && let Some(request) = spec
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("memory"))
        && pod_stats.memory.is_some()
    {
        let usage = quantity_string(memory_usage(pod_stats), ResourceName::Memory);
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        message += &format!(
            "Pod {name} was using {usage}, request is {}, has larger consumption of memory. ",
            Quantity::parse(&request.0).map_or_else(|_| request.0.clone(), |q| q.to_string())
        );
        annotations.insert(OFFENDING_POD_KEY.to_string(), name.to_string());
        annotations.insert(OFFENDING_POD_USAGE_KEY.to_string(), usage);
    }
    let mut exceeded: Vec<&str> = Vec::new();
    let mut usages: Vec<String> = Vec::new();
    let containers: Vec<&Container> = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .collect();
    for cs in &pod_stats.containers {
        let Some(container) = containers.iter().find(|c| c.name == cs.name) else {
            continue;
        };
        let request = parse_request(container, resource.as_str())
            .unwrap_or_else(|| Quantity::from_int(0, Format::DecimalSI));
        let usage = match resource {
            ResourceName::EphemeralStorage => match (
                cs.rootfs.as_ref().and_then(|f| f.used_bytes),
                cs.logs.as_ref().and_then(|f| f.used_bytes),
            ) {
                (Some(r), Some(l)) => Some(int(r.saturating_add(l))),
                _ => None,
            },
            ResourceName::Memory => cs
                .memory
                .as_ref()
                .and_then(|m| m.working_set_bytes)
                .map(int),
            _ => None,
        };
        if let Some(usage) = usage
            && Quantity::from_int(usage, Format::BinarySI).cmp_value(&request) == Ordering::Greater
        {
            let usage = quantity_string(usage, ResourceName::Memory);
            message += &format!(
                "Container {} was using {usage}, request is {request}, has larger consumption of {}. ",
                container.name,
                resource.as_str()
            );
            exceeded.push(&container.name);
            usages.push(usage);
        }
    }
    annotations.insert(OFFENDING_CONTAINERS_KEY.to_string(), exceeded.join(","));
    annotations.insert(OFFENDING_CONTAINERS_USAGE_KEY.to_string(), usages.join(","));
    annotations.insert(
        STARVED_RESOURCE_KEY.to_string(),
        resource.as_str().to_string(),
    );
    (message, annotations)
}

/// Upstream `OffendingContainersKey`: event annotation, the containers past their request.
pub const OFFENDING_CONTAINERS_KEY: &str = "offending_containers";
/// Upstream `OffendingContainersUsageKey`: their usage, in the same order.
pub const OFFENDING_CONTAINERS_USAGE_KEY: &str = "offending_containers_usage";
/// Upstream `OffendingPodKey`: the pod past its pod-level request.
pub const OFFENDING_POD_KEY: &str = "offending_pod";
/// Upstream `OffendingPodUsageKey`: its usage.
pub const OFFENDING_POD_USAGE_KEY: &str = "offending_pod_usage";
/// Upstream `StarvedResourceKey`: the resource the node was low on.
pub const STARVED_RESOURCE_KEY: &str = "starved_resource";

/// Message of a pod evicted for a container past its `ephemeral-storage` limit (upstream
/// `containerEphemeralStorageMessageFmt`).
pub fn container_ephemeral_storage_message(container: &str, limit: &Quantity) -> String {
    format!("Container {container} exceeded its local ephemeral storage limit \"{limit}\". ")
}

/// Message of a pod evicted for using more than its containers' `ephemeral-storage` limits
/// together (upstream `podEphemeralStorageMessageFmt`).
pub fn pod_ephemeral_storage_message(limit: &Quantity) -> String {
    format!("Pod ephemeral local storage usage exceeds the total limit of containers {limit}. ")
}

/// Message of a pod evicted for an emptyDir volume past its `sizeLimit` (upstream
/// `emptyDirMessageFmt`).
pub fn empty_dir_message(volume: &str, limit: &Quantity) -> String {
    format!("Usage of EmptyDir volume \"{volume}\" exceeds the limit \"{limit}\". ")
}

/// `kubelet_evictions` label of an emptyDir eviction (upstream `signalEmptyDirFsLimit`).
pub const SIGNAL_EMPTY_DIR_FS_LIMIT: &str = "emptydirfs.limit";
/// Label of a pod-level `ephemeral-storage` eviction (upstream `signalEphemeralPodFsLimit`).
pub const SIGNAL_EPHEMERAL_POD_FS_LIMIT: &str = "ephemeralpodfs.limit";
/// Label of a container `ephemeral-storage` eviction (upstream
/// `signalEphemeralContainerFsLimit`).
pub const SIGNAL_EPHEMERAL_CONTAINER_FS_LIMIT: &str = "ephemeralcontainerfs.limit";

fn parse_limit(c: &Container, resource: &str) -> Option<Quantity> {
    let q = c.resources.as_ref()?.limits.as_ref()?.get(resource)?;
    Quantity::parse(&q.0).ok()
}

/// Upstream `resourcehelper.PodLimits(pod, {})[ephemeral-storage]`: the regular and
/// restartable init containers' limits add up, a regular init container (with the
/// sidecars started before it) only raises the peak, the overhead is added; `None` when
/// no container sets the limit. (Pod-level `resources` do not support ephemeral-storage.)
pub fn pod_ephemeral_storage_limit(pod: &Pod) -> Option<Quantity> {
    const R: &str = "ephemeral-storage";
    let spec = pod.spec.as_ref()?;
    let mut found = false;
    let mut lim = |c: &Container| match parse_limit(c, R) {
        Some(q) => {
            found = true;
            Some(q)
        }
        None => None,
    };
    let add = |a: Option<Quantity>, b: Option<Quantity>| match (a, b) {
        (Some(a), Some(b)) => Some(a.add(&b)),
        (a, b) => a.or(b),
    };
    let max = |a: Option<Quantity>, b: Option<Quantity>| match (a, b) {
        (Some(a), Some(b)) => Some(if b.cmp_value(&a) == Ordering::Greater {
            b
        } else {
            a
        }),
        (a, b) => a.or(b),
    };
    let mut sum: Option<Quantity> = None;
    for c in &spec.containers {
        sum = add(sum, lim(c));
    }
    let mut sidecars: Option<Quantity> = None;
    let mut init_peak: Option<Quantity> = None;
    for c in spec.init_containers.iter().flatten() {
        let l = lim(c);
        let peak = if c.restart_policy.as_deref() == Some("Always") {
            sum = add(sum, l);
            sidecars = add(sidecars, l);
            sidecars
        } else {
            add(l, sidecars)
        };
        init_peak = max(init_peak, peak);
    }
    if !found {
        return None;
    }
    let mut limit = max(sum, init_peak)?;
    if let Some(o) = spec
        .overhead
        .as_ref()
        .and_then(|o| o.get(R))
        .and_then(|q| Quantity::parse(&q.0).ok())
    {
        limit = limit.add(&o);
    }
    Some(limit)
}

/// A container's `ephemeral-storage` limit when set and not zero (upstream
/// `container.Resources.Limits.StorageEphemeral()`).
pub fn container_ephemeral_storage_limit(c: &Container) -> Option<Quantity> {
    parse_limit(c, "ephemeral-storage").filter(|q| q.value() != 0)
}

/// Upstream `diskUsage`: the filesystem's used bytes (0 when unknown), as a BinarySI
/// quantity.
pub fn disk_usage(fs: Option<&FsStats>) -> Quantity {
    Quantity::from_int(
        fs.and_then(|f| f.used_bytes).map_or(0, int),
        Format::BinarySI,
    )
}
