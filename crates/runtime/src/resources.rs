//! CPU/memory requests and limits → CRI `LinuxContainerResources` (upstream
//! `kuberuntime_container_linux.go` `calculateLinuxResources`,
//! `generateLinuxContainerResources`, `helpers_linux.go` and `pkg/kubelet/cm/helpers_linux.go`
//! `MilliCPUToShares`; sandbox resources from `kuberuntime_sandbox_linux.go`).

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubelet_container::is_restartable_init_container;
use kubelet_cri::v1::{HugepageLimit, LinuxContainerResources};

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
#[derive(Clone, Debug, PartialEq, Eq)]
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
fn unit_size(mut bytes: u64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB", "PB"];
    let mut i = 0;
    while bytes >= 1024 && bytes.is_multiple_of(1024) && i + 1 < units.len() {
        bytes /= 1024;
        i += 1;
    }
    format!("{bytes}{}", units[i])
}

fn get<'a>(m: &'a Option<BTreeMap<String, Quantity>>, name: &str) -> Option<&'a Quantity> {
    m.as_ref().and_then(|m| m.get(name))
}

fn milli(q: Option<&Quantity>) -> i64 {
    q.and_then(|q| quantity::milli_value(q).ok()).unwrap_or(0)
}

fn bytes(q: Option<&Quantity>) -> i64 {
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

/// `generateLinuxContainerResources` (without MemoryQoS and swap, both gated off on this
/// node type): shares/quota/memory, OOM score adjustment by QoS, and huge page limits.
pub fn generate_linux_container_resources(
    settings: &ResourceSettings,
    pod: &Pod,
    container: &Container,
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
    let mut r = calculate_linux_resources(settings, cpu_request, cpu_limit, memory_limit, false);
    r.oom_score_adj = qos::container_oom_score_adjust(pod, container, settings.memory_capacity);
    r.hugepage_limits = hugepage_limits(settings, res);
    r
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
    let Some(spec) = pod.spec.as_ref() else {
        return 0;
    };
    let of = |c: &Container| c.resources.as_ref().map_or(0, &pick);
    let mut total: i64 = spec.containers.iter().map(of).sum();
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
        init_max = init_max.max(peak);
    }
    total.max(init_max)
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
/// sandbox's `LinuxPodSandboxConfig.resources`.
pub fn sandbox_resources(settings: &ResourceSettings, pod: &Pod) -> LinuxContainerResources {
    if let Some(pod_res) = pod_level_resources(pod) {
        let cpu_request = get(&pod_res.requests, "cpu").map(|q| milli(Some(q)));
        return calculate_linux_resources(
            settings,
            cpu_request,
            milli(get(&pod_res.limits, "cpu")),
            bytes(get(&pod_res.limits, "memory")),
            false,
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
        false,
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
            let r = generate_linux_container_resources(&s, &pod, c);
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

    #[test]
    fn sandbox_resources_sum_containers() {
        let s = ResourceSettings::default();
        let pod = pod_with(vec![
            resources(&[("cpu", "100m")], &[("cpu", "200m"), ("memory", "10Mi")]),
            resources(&[("cpu", "300m")], &[("memory", "20Mi")]),
        ]);
        let r = sandbox_resources(&s, &pod);
        assert_eq!(r.cpu_shares, milli_cpu_to_shares(400));
        assert_eq!(r.cpu_quota, 20_000);
        assert_eq!(r.memory_limit_in_bytes, 30 << 20);
        assert_eq!(
            overhead_resources(&s, &pod),
            LinuxContainerResources::default()
        );
    }
}
