//! CPU/memory requests and limits → CRI `LinuxContainerResources` (upstream
//! `kuberuntime_container_linux.go` `calculateLinuxResources`,
//! `generateLinuxContainerResources`, `helpers_linux.go` and `pkg/kubelet/cm/helpers_linux.go`
//! `MilliCPUToShares`, `ResourceConfigForPod`; sandbox resources from
//! `kuberuntime_sandbox_linux.go`; the sums `qos_container_manager_linux.go`'s
//! `UpdateCgroups` makes over the active pods).

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubelet_cm::ResourceConfig;
use kubelet_cm::cgroup_manager::huge_page_unit_size;
use kubelet_container::qos::{is_pod_level_resources_set, is_supported_pod_level_resource};
use kubelet_container::{QosClass, get_pod_qos, is_restartable_init_container};
use kubelet_cri::v1::{HugepageLimit, LinuxContainerResources};

use crate::swap::{SwapSettings, configure_container_swap_resources};
use crate::{qos, quantity};

pub use kubelet_cm::qos::{MAX_SHARES, MIN_SHARES, milli_cpu_to_shares};
const MILLI_CPU_TO_CPU: i64 = 1000;
/// Default CFS period, 100 ms in microseconds (`quotaPeriod`).
pub const QUOTA_PERIOD_US: i64 = 100_000;
/// Smallest CFS quota the kernel accepts, 1 ms (`minQuotaPeriod`).
pub const MIN_QUOTA_PERIOD_US: i64 = 1000;

/// `milliCPUToQuota`: CFS quota for a CPU limit over `period`; 0 (unlimited) without a limit,
/// at least 1 ms otherwise.
pub fn milli_cpu_to_quota(milli_cpu: i64, period: i64) -> i64 {
    if milli_cpu == 0 {
        return 0;
    }
    (milli_cpu * period / MILLI_CPU_TO_CPU).max(MIN_QUOTA_PERIOD_US)
}

/// Node and kubelet settings that shape container resources.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceSettings {
    /// `cpuCFSQuota`: enforce CPU limits with CFS quota.
    pub cpu_cfs_quota: bool,
    /// `cpuCFSQuotaPeriod` in microseconds.
    pub cpu_cfs_quota_period_us: i64,
    /// Node memory capacity in bytes, for the burstable OOM score heuristic.
    pub memory_capacity: i64,
    /// The host runs the unified cgroup v2 hierarchy.
    pub cgroup_v2: bool,
    /// `singleProcessOOMKill`; when false on cgroup v2, `memory.oom.group=1` is set.
    pub single_process_oom_kill: bool,
    /// Huge page sizes the host supports, in libcontainer notation (`2MB`, `1GB`).
    pub hugepage_sizes: Vec<String>,
    /// Swap per container ([`crate::swap`]).
    pub swap: SwapSettings,
    /// MemoryQoS: the gate is on and the host runs cgroup v2 (upstream `enforceMemoryQoS`).
    pub memory_qos: bool,
    /// `memoryThrottlingFactor` (MemoryQoS's `memory.high`).
    pub memory_throttling_factor: f64,
    /// Node allocatable memory in bytes (MemoryQoS's `memory.high` of a container without a
    /// memory limit; upstream `getNodeAllocatable`).
    pub allocatable_memory: i64,
}

impl Default for ResourceSettings {
    fn default() -> Self {
        Self {
            cpu_cfs_quota: true,
            cpu_cfs_quota_period_us: QUOTA_PERIOD_US,
            memory_capacity: 0,
            cgroup_v2: false,
            single_process_oom_kill: false,
            hugepage_sizes: Vec::new(),
            swap: SwapSettings::default(),
            memory_qos: false,
            memory_throttling_factor: 0.9,
            allocatable_memory: 0,
        }
    }
}

/// Reads host huge page sizes from `/sys/kernel/mm/hugepages` (`hugepages-2048kB` → `2MB`),
/// like libcontainer's `HugePageSizes`. An unreadable directory means none.
pub fn discover_hugepage_sizes(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut sizes: Vec<(u64, String)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let kb: u64 = name
                .strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse()
                .ok()?;
            Some((kb, unit_size(kb * 1024)))
        })
        .collect();
    sizes.sort();
    sizes.into_iter().map(|(_, s)| s).collect()
}

/// `HugePageUnitSizeFromByteSize`: 2097152 → `2MB`.
fn unit_size(bytes: u64) -> String {
    huge_page_unit_size(i64::try_from(bytes).unwrap_or(i64::MAX))
}

fn get<'a>(m: &'a Option<BTreeMap<String, Quantity>>, name: &str) -> Option<&'a Quantity> {
    m.as_ref().and_then(|m| m.get(name))
}

fn milli(q: Option<&Quantity>) -> i64 {
    q.and_then(|q| quantity::milli_value(q).ok()).unwrap_or(0)
}

pub(crate) fn bytes(q: Option<&Quantity>) -> i64 {
    q.and_then(|q| quantity::value(q).ok()).unwrap_or(0)
}

/// `calculateLinuxResources`: shares from the request (or the limit when no request is
/// given), memory limit, and CFS quota/period. `cpu_request_milli` is `None` when
/// no CPU request exists at all.
pub fn calculate_linux_resources(
    settings: &ResourceSettings,
    cpu_request_milli: Option<i64>,
    cpu_limit_milli: i64,
    memory_limit: i64,
    disable_cpu_quota: bool,
) -> LinuxContainerResources {
    let shares = milli_cpu_to_shares(cpu_request_milli.unwrap_or(cpu_limit_milli));
    let mut r = LinuxContainerResources {
        cpu_shares: shares,
        ..Default::default()
    };
    if memory_limit != 0 {
        r.memory_limit_in_bytes = memory_limit;
    }
    if settings.cpu_cfs_quota {
        let period = settings.cpu_cfs_quota_period_us;
        r.cpu_quota = if disable_cpu_quota {
            -1
        } else {
            milli_cpu_to_quota(cpu_limit_milli, period)
        };
        r.cpu_period = period;
    }
    if settings.cgroup_v2 && !settings.single_process_oom_kill {
        r.unified
            .insert("memory.oom.group".to_string(), "1".to_string());
    }
    r
}

fn pod_level_resources(pod: &Pod) -> Option<&ResourceRequirements> {
    pod.spec.as_ref().and_then(|s| s.resources.as_ref())
}

/// `generateLinuxContainerResources`: shares/quota/memory, OOM score adjustment by QoS, huge
/// page limits, swap ([`crate::swap`]), and with MemoryQoS `memory.min`/`memory.high`.
/// `disable_cpu_quota`: the container has exclusive CPUs and `DisableCPUQuotaWithExclusiveCPUs`
/// is on (the quota is then -1, unlimited).
pub fn generate_linux_container_resources(
    settings: &ResourceSettings,
    pod: &Pod,
    container: &Container,
    disable_cpu_quota: bool,
) -> LinuxContainerResources {
    let empty = ResourceRequirements::default();
    let res = container.resources.as_ref().unwrap_or(&empty);
    let cpu_request = get(&res.requests, "cpu").map(|q| milli(Some(q)));
    let pod_limits = pod_level_resources(pod).map(|r| &r.limits);
    // With pod-level resources, a container without its own limit inherits the pod's.
    let mut cpu_limit = milli(get(&res.limits, "cpu"));
    if cpu_limit == 0 {
        cpu_limit = pod_limits.map_or(0, |l| milli(get(l, "cpu")));
    }
    let mut memory_limit = bytes(get(&res.limits, "memory"));
    if memory_limit == 0 {
        memory_limit = pod_limits.map_or(0, |l| bytes(get(l, "memory")));
    }
    let mut r = calculate_linux_resources(
        settings,
        cpu_request,
        cpu_limit,
        memory_limit,
        disable_cpu_quota,
    );
    r.oom_score_adj = qos::container_oom_score_adjust(pod, container, settings.memory_capacity);
    r.hugepage_limits = hugepage_limits(settings, res);
    configure_container_swap_resources(settings, &mut r, pod, container);
    if settings.memory_qos {
        let request = bytes(get(&res.requests, "memory"));
        let limit = bytes(get(&res.limits, "memory"));
        for (k, v) in memory_qos_unified(settings, request, limit) {
            r.unified.insert(k, v);
        }
    }
    r
}

/// The page size MemoryQoS rounds `memory.high` down to (upstream `os.Getpagesize()`).
fn page_size() -> i64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .filter(|p| *p > 0)
        .map_or(4096, i64::from)
}

/// MemoryQoS of one container (upstream `generateLinuxContainerResources` with
/// `enforceMemoryQoS`): `memory.min` = the container's memory request; unless request =
/// limit (Guaranteed-like), `memory.high` = floor((request + factor × (limit, or node
/// allocatable memory without a limit, − request)) / page size) × page size, when above the
/// request. The container's own request and limit, as upstream reads them.
pub fn memory_qos_unified(
    settings: &ResourceSettings,
    request: i64,
    limit: i64,
) -> BTreeMap<String, String> {
    let mut unified = BTreeMap::new();
    if request != 0 {
        unified.insert("memory.min".to_string(), request.to_string());
    }
    if request != limit {
        let page = page_size();
        let factor = settings.memory_throttling_factor;
        let ceiling = if limit != 0 {
            limit
        } else {
            settings.allocatable_memory
        };
        let high = if ceiling > 0 {
            ((request as f64 + (ceiling as f64 - request as f64) * factor) / page as f64).floor()
                as i64
                * page
        } else {
            0
        };
        if high != 0 && high > request {
            unified.insert("memory.high".to_string(), high.to_string());
        }
    }
    unified
}

/// `GetHugepageLimitsFromResources`: every host page size limited to 0 unless the container
/// asks for `hugepages-<size>`.
pub fn hugepage_limits(
    settings: &ResourceSettings,
    res: &ResourceRequirements,
) -> Vec<HugepageLimit> {
    let mut wanted: BTreeMap<String, u64> = BTreeMap::new();
    for (name, amount) in res.limits.iter().flatten() {
        let Some(size) = name.strip_prefix("hugepages-") else {
            continue;
        };
        let Ok(size_bytes) = quantity::value(&Quantity(size.to_string())) else {
            continue;
        };
        let Ok(size_bytes) = u64::try_from(size_bytes) else {
            continue;
        };
        let limit = u64::try_from(bytes(Some(amount))).unwrap_or(0);
        wanted.insert(unit_size(size_bytes), limit);
    }
    settings
        .hugepage_sizes
        .iter()
        .map(|page_size| HugepageLimit {
            page_size: page_size.clone(),
            limit: wanted.get(page_size).copied().unwrap_or(0),
        })
        .collect()
}

/// Sum over regular containers, combined with init containers the way the scheduler does
/// (`resourcehelper.PodRequests`/`PodLimits`): sidecars add up, regular init containers
/// only raise the maximum.
fn pod_total(pod: &Pod, pick: impl Fn(&ResourceRequirements) -> i64) -> i64 {
    aggregate(pod, pick, |_| {})
}

/// `AggregateContainerRequests` / `AggregateContainerLimits` for one resource; `each` sees
/// what each container counts with (upstream `ContainerFn`: an init container's own value
/// plus the sidecars started before it).
fn aggregate(
    pod: &Pod,
    pick: impl Fn(&ResourceRequirements) -> i64,
    mut each: impl FnMut(i64),
) -> i64 {
    let Some(spec) = pod.spec.as_ref() else {
        return 0;
    };
    let of = |c: &Container| c.resources.as_ref().map_or(0, &pick);
    let mut total = 0;
    for c in &spec.containers {
        let v = of(c);
        each(v);
        total += v;
    }
    let mut sidecars = 0;
    let mut init_max = 0;
    for c in spec.init_containers.iter().flatten() {
        let v = of(c);
        let peak = if is_restartable_init_container(c) {
            total += v;
            sidecars += v;
            sidecars
        } else {
            v + sidecars
        };
        each(peak);
        init_max = init_max.max(peak);
    }
    total.max(init_max)
}

/// A quantity in the resource's unit: millicores for `cpu`, bytes otherwise.
fn amount(name: &str, q: Option<&Quantity>) -> i64 {
    if name == "cpu" { milli(q) } else { bytes(q) }
}

fn overhead(pod: &Pod, name: &str) -> i64 {
    amount(name, pod.spec.as_ref().and_then(|s| get(&s.overhead, name)))
}

/// `PodRequests` for one resource, with pod-level resources (the `PodLevelResources`
/// gate, on by default in 1.35) and the overhead.
pub fn pod_request(pod: &Pod, name: &str) -> i64 {
    let pod_level = pod_level_resources(pod)
        .and_then(|r| get(&r.requests, name))
        .filter(|_| is_supported_pod_level_resource(name));
    let value = match pod_level {
        Some(q) => amount(name, Some(q)),
        None => pod_total(pod, |r| amount(name, get(&r.requests, name))),
    };
    value + overhead(pod, name)
}

/// `PodLimits` for one resource (pod-level resources, overhead added to a non-zero
/// limit); `each` as in [`aggregate`].
fn pod_limit(pod: &Pod, name: &str, each: impl FnMut(i64)) -> i64 {
    let container_total = aggregate(pod, |r| amount(name, get(&r.limits, name)), each);
    let pod_level = pod_level_resources(pod)
        .and_then(|r| get(&r.limits, name))
        .filter(|_| is_supported_pod_level_resource(name));
    let value = pod_level.map_or(container_total, |q| amount(name, Some(q)));
    if value == 0 {
        return 0;
    }
    value + overhead(pod, name)
}

/// `ResourceConfigForPod`: the pod cgroup's values by
/// QoS class — Guaranteed: shares, quota and period, memory limit; Burstable: shares, the
/// quota and period only when every container has a CPU limit (or the pod has one), the
/// memory limit only when every container has a memory limit (or the pod has one);
/// BestEffort: `MinShares`. Huge page limits from the requests, for every class.
/// `enforce_cpu_limits` is `cpuCFSQuota` (off: quota -1); `cpu_period` is
/// `cpuCFSQuotaPeriod` in microseconds; with `enforce_memory_qos` (MemoryQoS on cgroup v2,
/// at the pod cgroup's creation) `memory.min` = the pod's memory requests.
pub fn resource_config_for_pod(
    pod: &Pod,
    enforce_cpu_limits: bool,
    cpu_period: u64,
    enforce_memory_qos: bool,
) -> ResourceConfig {
    let mut cpu_declared = true;
    let mut memory_declared = true;
    let cpu_limits = pod_limit(pod, "cpu", |v| cpu_declared &= v != 0);
    let memory_limits = pod_limit(pod, "memory", |v| memory_declared &= v != 0);
    if let Some(pod_res) = pod_level_resources(pod).filter(|_| is_pod_level_resources_set(pod)) {
        cpu_declared |= milli(get(&pod_res.limits, "cpu")) != 0;
        memory_declared |= bytes(get(&pod_res.limits, "memory")) != 0;
    }
    let shares = u64::try_from(milli_cpu_to_shares(pod_request(pod, "cpu"))).ok();
    let quota = if enforce_cpu_limits {
        milli_cpu_to_quota(
            cpu_limits,
            i64::try_from(cpu_period).unwrap_or(QUOTA_PERIOD_US),
        )
    } else {
        -1
    };
    let mut config = ResourceConfig {
        huge_page_limit: huge_page_requests(pod),
        ..ResourceConfig::default()
    };
    match get_pod_qos(pod) {
        QosClass::Guaranteed => {
            config.cpu_shares = shares;
            config.cpu_quota = Some(quota);
            config.cpu_period = Some(cpu_period);
            config.memory = Some(memory_limits);
        }
        QosClass::Burstable => {
            config.cpu_shares = shares;
            if cpu_declared {
                config.cpu_quota = Some(quota);
                config.cpu_period = Some(cpu_period);
            }
            if memory_declared {
                config.memory = Some(memory_limits);
            }
        }
        QosClass::BestEffort => {
            config.cpu_shares = u64::try_from(MIN_SHARES).ok();
        }
    }
    if enforce_memory_qos {
        let memory_min = pod_request(pod, "memory");
        if memory_min > 0 {
            config
                .unified
                .insert("memory.min".to_string(), memory_min.to_string());
        }
    }
    config
}

/// `HugePageLimits(PodRequests(pod))`: huge page requests in bytes by page size in bytes.
fn huge_page_requests(pod: &Pod) -> BTreeMap<i64, i64> {
    let Some(spec) = pod.spec.as_ref() else {
        return BTreeMap::new();
    };
    let names: std::collections::BTreeSet<&String> = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .filter_map(|c| c.resources.as_ref())
        .chain(spec.resources.as_ref())
        .flat_map(|r| r.requests.iter().flatten().map(|(n, _)| n))
        .filter(|n| n.starts_with("hugepages-"))
        .collect();
    let mut out = BTreeMap::new();
    for name in names {
        let Some(size) = name
            .strip_prefix("hugepages-")
            .and_then(|s| quantity::value(&Quantity(s.to_string())).ok())
        else {
            continue;
        };
        *out.entry(size).or_insert(0) += pod_request(pod, name);
    }
    out
}

/// What [`kubelet_cm::QosContainerManager::update_cgroups`] needs from the active pods:
/// the Burstable pods' CPU requests (`setCPUCgroupConfig`) and the Guaranteed and
/// Burstable pods' memory requests (`getQoSMemoryRequests`), summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QosPodRequests {
    /// Burstable CPU requests, millicores.
    pub burstable_cpu_milli: i64,
    /// Guaranteed memory requests, bytes.
    pub guaranteed_memory: i64,
    /// Burstable memory requests, bytes.
    pub burstable_memory: i64,
}

/// Sums [`QosPodRequests`] over `pods`.
pub fn qos_pod_requests<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> QosPodRequests {
    let mut out = QosPodRequests::default();
    for pod in pods {
        match get_pod_qos(pod) {
            QosClass::Guaranteed => out.guaranteed_memory += pod_request(pod, "memory"),
            QosClass::Burstable => {
                out.burstable_cpu_milli += pod_request(pod, "cpu");
                out.burstable_memory += pod_request(pod, "memory");
            }
            QosClass::BestEffort => {}
        }
    }
    out
}

/// The memory of `ResourceConfigForPod`: the pod-level memory limit if set, else the sum of
/// the container limits (`PodLimits`, with the overhead) when every container declares one;
/// `None` when the pod cgroup gets no memory limit.
pub fn pod_memory_limit(pod: &Pod) -> Option<i64> {
    if let Some(pod_res) = pod_level_resources(pod) {
        let limit = bytes(get(&pod_res.limits, "memory"));
        if limit > 0 {
            return Some(limit);
        }
    }
    let spec = pod.spec.as_ref()?;
    let declared = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .all(|c| {
            c.resources
                .as_ref()
                .is_some_and(|r| bytes(get(&r.limits, "memory")) > 0)
        });
    if !declared {
        return None;
    }
    let overhead = bytes(spec.overhead.as_ref().and_then(|o| o.get("memory")));
    Some(pod_total(pod, |r| bytes(get(&r.limits, "memory"))) + overhead)
}

/// `calculateSandboxResources`: pod-wide requests and limits without overhead, for the
/// sandbox's `LinuxPodSandboxConfig.resources`; `disable_cpu_quota` when a container of
/// the pod has exclusive CPUs (`DisableCPUQuotaWithExclusiveCPUs`).
pub fn sandbox_resources(
    settings: &ResourceSettings,
    pod: &Pod,
    disable_cpu_quota: bool,
) -> LinuxContainerResources {
    if let Some(pod_res) = pod_level_resources(pod) {
        let cpu_request = get(&pod_res.requests, "cpu").map(|q| milli(Some(q)));
        return calculate_linux_resources(
            settings,
            cpu_request,
            milli(get(&pod_res.limits, "cpu")),
            bytes(get(&pod_res.limits, "memory")),
            disable_cpu_quota,
        );
    }
    let has_cpu_request = pod.spec.as_ref().is_some_and(|s| {
        s.containers
            .iter()
            .chain(s.init_containers.iter().flatten())
            .any(|c| {
                c.resources
                    .as_ref()
                    .is_some_and(|r| get(&r.requests, "cpu").is_some())
            })
    });
    let cpu_request = pod_total(pod, |r| milli(get(&r.requests, "cpu")));
    calculate_linux_resources(
        settings,
        has_cpu_request.then_some(cpu_request),
        pod_total(pod, |r| milli(get(&r.limits, "cpu"))),
        pod_total(pod, |r| bytes(get(&r.limits, "memory"))),
        disable_cpu_quota,
    )
}

/// `convertOverheadToLinuxResources`: `spec.overhead` treated as requests == limits.
pub fn overhead_resources(settings: &ResourceSettings, pod: &Pod) -> LinuxContainerResources {
    match pod.spec.as_ref().and_then(|s| s.overhead.as_ref()) {
        Some(overhead) => {
            let cpu = milli(overhead.get("cpu"));
            calculate_linux_resources(
                settings,
                Some(cpu),
                cpu,
                bytes(overhead.get("memory")),
                false,
            )
        }
        None => LinuxContainerResources::default(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::qos::tests::{pod_with, resources};

    #[test]
    fn shares_and_quota_math() {
        for (milli, shares) in [
            (0, 2),
            (1, 2),
            (100, 102),
            (1000, 1024),
            (1_000_000, 262_144),
        ] {
            assert_eq!(milli_cpu_to_shares(milli), shares, "shares for {milli}m");
        }
        for (milli, quota) in [
            (0, 0),
            (5, 1000),
            (10, 1000),
            (250, 25_000),
            (2000, 200_000),
        ] {
            assert_eq!(
                milli_cpu_to_quota(milli, QUOTA_PERIOD_US),
                quota,
                "quota for {milli}m"
            );
        }
        assert_eq!(milli_cpu_to_quota(500, 50_000), 25_000);
    }

    #[test]
    fn container_resources_follow_upstream() {
        let s = ResourceSettings {
            memory_capacity: 8 << 30,
            ..ResourceSettings::default()
        };
        let cases = [
            // (requests, limits) -> (shares, quota, memory)
            (resources(&[], &[]), (2, 0, 0)),
            (resources(&[("cpu", "250m")], &[]), (256, 0, 0)),
            (
                resources(&[], &[("cpu", "500m"), ("memory", "64Mi")]),
                (512, 50_000, 64 << 20),
            ),
            (
                resources(&[("cpu", "100m")], &[("cpu", "2")]),
                (102, 200_000, 0),
            ),
        ];
        for (res, (shares, quota, mem)) in cases {
            let pod = pod_with(vec![res.clone()]);
            let c = &pod
                .spec
                .as_ref()
                .map(|s| s.containers[0].clone())
                .unwrap_or_default();
            let r = generate_linux_container_resources(&s, &pod, c, false);
            assert_eq!(
                (r.cpu_shares, r.cpu_quota, r.memory_limit_in_bytes),
                (shares, quota, mem),
                "{res:?}"
            );
            assert_eq!(r.cpu_period, QUOTA_PERIOD_US);
            assert!(r.unified.is_empty(), "cgroup v1 has no unified map");
        }
    }

    #[test]
    fn no_quota_when_cfs_quota_disabled_and_oom_group_on_v2() {
        let s = ResourceSettings {
            cpu_cfs_quota: false,
            cgroup_v2: true,
            ..ResourceSettings::default()
        };
        let r = calculate_linux_resources(&s, None, 500, 0, false);
        assert_eq!((r.cpu_quota, r.cpu_period), (0, 0));
        assert_eq!(
            r.unified.get("memory.oom.group").map(String::as_str),
            Some("1")
        );
    }

    #[test]
    fn hugepages_default_to_zero() {
        let s = ResourceSettings {
            hugepage_sizes: vec!["2MB".into(), "1GB".into()],
            ..ResourceSettings::default()
        };
        let res = resources(&[], &[("hugepages-2Mi", "4Mi")]);
        let limits = hugepage_limits(&s, &res);
        assert_eq!(limits.len(), 2);
        assert_eq!(
            (limits[0].page_size.as_str(), limits[0].limit),
            ("2MB", 4 << 20)
        );
        assert_eq!((limits[1].page_size.as_str(), limits[1].limit), ("1GB", 0));
        assert_eq!(unit_size(2 << 20), "2MB");
        assert_eq!(unit_size(1 << 30), "1GB");
    }

    /// Upstream `TestGenerateContainerConfigWithMemoryQoSEnforced`: memory.min = request;
    /// memory.high from the limit, or from node allocatable without one, rounded down to the
    /// page size; none for request = limit; nothing without MemoryQoS.
    #[test]
    fn memory_qos_sets_memory_min_and_high() {
        let s = ResourceSettings {
            memory_qos: true,
            allocatable_memory: 1 << 30,
            ..ResourceSettings::default()
        };
        let page = page_size();
        let high = |req: i64, ceiling: i64| {
            ((req as f64 + (ceiling - req) as f64 * 0.9) / page as f64).floor() as i64 * page
        };
        let with_limit = pod_with(vec![resources(
            &[("memory", "128Mi")],
            &[("memory", "256Mi")],
        )]);
        let c = &with_limit.spec.as_ref().unwrap().containers[0];
        let r = generate_linux_container_resources(&s, &with_limit, c, false);
        assert_eq!(r.unified["memory.min"], (128_i64 << 20).to_string());
        assert_eq!(
            r.unified["memory.high"],
            high(128 << 20, 256 << 20).to_string()
        );
        let no_limit = pod_with(vec![resources(&[("memory", "128Mi")], &[])]);
        let c = &no_limit.spec.as_ref().unwrap().containers[0];
        let r = generate_linux_container_resources(&s, &no_limit, c, false);
        assert_eq!(
            r.unified["memory.high"],
            high(128 << 20, 1 << 30).to_string()
        );
        // Request = limit: memory.min only.
        let equal = pod_with(vec![resources(
            &[("memory", "64Mi")],
            &[("memory", "64Mi")],
        )]);
        let c = &equal.spec.as_ref().unwrap().containers[0];
        let r = generate_linux_container_resources(&s, &equal, c, false);
        assert_eq!(
            r.unified.get("memory.min").map(String::as_str),
            Some("67108864")
        );
        assert!(!r.unified.contains_key("memory.high"));
        // No request, no limit, no allocatable: nothing.
        let none = ResourceSettings {
            allocatable_memory: 0,
            ..s.clone()
        };
        assert!(memory_qos_unified(&none, 0, 0).is_empty());
        // The gate off: nothing.
        let c = &with_limit.spec.as_ref().unwrap().containers[0];
        let r =
            generate_linux_container_resources(&ResourceSettings::default(), &with_limit, c, false);
        assert!(!r.unified.contains_key("memory.min"));
        // The pod cgroup (`ResourceConfigForPod` with enforceMemoryQoS): the pod's requests.
        let two = pod_with(vec![
            resources(&[("memory", "100Mi")], &[]),
            resources(&[("memory", "28Mi")], &[]),
        ]);
        let rc = resource_config_for_pod(&two, true, 100_000, true);
        assert_eq!(rc.unified["memory.min"], (128_i64 << 20).to_string());
        assert!(
            resource_config_for_pod(&two, true, 100_000, false)
                .unified
                .is_empty()
        );
        let best_effort = pod_with(vec![resources(&[], &[])]);
        assert!(
            resource_config_for_pod(&best_effort, true, 100_000, true)
                .unified
                .is_empty()
        );
    }

    #[test]
    fn exclusive_cpus_leave_the_cfs_quota_unlimited() {
        let s = ResourceSettings::default();
        let pod = pod_with(vec![resources(
            &[("cpu", "2"), ("memory", "10Mi")],
            &[("cpu", "2"), ("memory", "10Mi")],
        )]);
        let c = &pod.spec.as_ref().unwrap().containers[0];
        let quota = |disable| generate_linux_container_resources(&s, &pod, c, disable).cpu_quota;
        assert_eq!((quota(false), quota(true)), (200_000, -1));
        assert_eq!(sandbox_resources(&s, &pod, true).cpu_quota, -1);
        assert_eq!(sandbox_resources(&s, &pod, false).cpu_quota, 200_000);
    }

    #[test]
    fn sandbox_resources_sum_containers() {
        let s = ResourceSettings::default();
        let pod = pod_with(vec![
            resources(&[("cpu", "100m")], &[("cpu", "200m"), ("memory", "10Mi")]),
            resources(&[("cpu", "300m")], &[("memory", "20Mi")]),
        ]);
        let r = sandbox_resources(&s, &pod, false);
        assert_eq!(r.cpu_shares, milli_cpu_to_shares(400));
        assert_eq!(r.cpu_quota, 20_000);
        assert_eq!(r.memory_limit_in_bytes, 30 << 20);
        assert_eq!(
            overhead_resources(&s, &pod),
            LinuxContainerResources::default()
        );
    }

    #[test]
    fn resource_config_for_pod_with_init_containers_pod_level_resources_and_overhead() {
        // Burstable: a sidecar with limits, a regular init container without a memory
        // limit counts with the sidecar's (upstream's cumulative `ContainerFn`), so both
        // limits are "declared"; the overhead adds to requests and to non-zero limits.
        let mut pod = pod_with(vec![resources(
            &[("cpu", "100m"), ("memory", "10Mi")],
            &[("cpu", "200m"), ("memory", "20Mi")],
        )]);
        let spec = pod.spec.as_mut().unwrap();
        spec.init_containers = Some(vec![
            Container {
                name: "sidecar".into(),
                restart_policy: Some("Always".into()),
                resources: Some(resources(
                    &[("cpu", "50m")],
                    &[("cpu", "100m"), ("memory", "5Mi")],
                )),
                ..Container::default()
            },
            Container {
                name: "init".into(),
                resources: Some(resources(&[("cpu", "1")], &[("cpu", "1")])),
                ..Container::default()
            },
        ]);
        spec.overhead = Some(
            [
                ("cpu".to_string(), Quantity("10m".into())),
                ("memory".to_string(), Quantity("1Mi".into())),
            ]
            .into(),
        );
        let r = resource_config_for_pod(&pod, true, QUOTA_PERIOD_US as u64, false);
        // Requests: max(100m + 50m, 50m + 1000m) + 10m; limits: max(300m, 1100m) + 10m.
        assert_eq!(r.cpu_shares, Some(milli_cpu_to_shares(1060) as u64));
        assert_eq!(r.cpu_quota, Some(111_000));
        assert_eq!(r.memory, Some((25 << 20) + (1 << 20)));

        // Pod-level limits make the limits declared even where containers set none.
        let mut pod = pod_with(vec![resources(&[("cpu", "100m")], &[])]);
        pod.spec.as_mut().unwrap().resources = Some(resources(
            &[("cpu", "500m"), ("memory", "64Mi")],
            &[("cpu", "1"), ("memory", "128Mi")],
        ));
        let r = resource_config_for_pod(&pod, true, QUOTA_PERIOD_US as u64, false);
        assert_eq!(r.cpu_shares, Some(512));
        assert_eq!(r.cpu_quota, Some(100_000));
        assert_eq!(r.memory, Some(128 << 20));

        // The QoS sums: Burstable CPU requests; Guaranteed and Burstable memory requests.
        let g = pod_with(vec![resources(
            &[("cpu", "1"), ("memory", "1Gi")],
            &[("cpu", "1"), ("memory", "1Gi")],
        )]);
        let be = pod_with(vec![resources(&[], &[])]);
        assert_eq!(
            qos_pod_requests([&g, &pod, &be]),
            QosPodRequests {
                burstable_cpu_milli: 500,
                guaranteed_memory: 1 << 30,
                burstable_memory: 64 << 20,
            }
        );
    }
}
