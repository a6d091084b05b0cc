//! The summary API's types (`k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go`), serialized
//! with upstream's JSON names and `omitempty` rules.

use serde::{Serialize, Serializer};

/// `metav1.Time`: RFC 3339 in UTC, whole seconds on the wire; the full precision stays in
/// memory (`container_start_time_seconds` uses it, as upstream's `UnixNano`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Time(pub jiff::Timestamp);

impl Time {
    /// A time from nanoseconds since the epoch (CRI timestamps); out of range is the epoch.
    pub fn from_nanos(nanos: i64) -> Self {
        Time(jiff::Timestamp::from_nanosecond(i128::from(nanos)).unwrap_or_default())
    }

    /// Seconds since the epoch, with the fraction.
    pub fn as_secs_f64(&self) -> f64 {
        self.0.as_nanosecond() as f64 / 1e9
    }

    /// Milliseconds since the epoch (the text format's sample timestamps).
    pub fn as_millis(&self) -> i64 {
        self.0.as_millisecond()
    }
}

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // `metav1.Time.MarshalJSON`: `t.UTC().Format(time.RFC3339)`.
        let mut buf = [0u8; 20];
        match rfc3339_seconds(self.0.as_second(), &mut buf) {
            Some(text) => s.serialize_str(text),
            None => {
                let secs = jiff::Timestamp::from_second(self.0.as_second()).unwrap_or_default();
                s.serialize_str(&secs.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            }
        }
    }
}

/// `jiff::Timestamp::MAX` in seconds.
const MAX_SECS: i64 = 253_402_207_200;

/// `YYYY-MM-DDTHH:MM:SSZ` of `secs` since the epoch into `buf`, from 1970 to jiff's
/// largest timestamp (`None` otherwise): the civil date of the day number (H. Hinnant's `civil_from_days`),
/// without a formatter nor an allocation (a summary has thousands of times).
fn rfc3339_seconds(secs: i64, buf: &mut [u8; 20]) -> Option<&str> {
    if !(0..=MAX_SECS).contains(&secs) {
        return None;
    }
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let mut put = |at: usize, v: i64, width: usize| {
        let mut v = v;
        for i in (at..at + width).rev() {
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, rem / 3600, 2);
    put(14, rem / 60 % 60, 2);
    put(17, rem % 60, 2);
    for (i, c) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'Z'),
    ] {
        buf[i] = c;
    }
    std::str::from_utf8(buf).ok()
}

/// `Summary`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Summary {
    /// Node-level stats.
    pub node: NodeStats,
    /// Per-pod stats (upstream always makes the slice: `[]` when there are none).
    pub pods: Vec<PodStats>,
}

/// `NodeStats`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeStats {
    /// The node's name.
    pub node_name: String,
    /// `kubelet`, `runtime`, `misc`, `pods` system containers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub system_containers: Vec<ContainerStats>,
    /// The node's boot time.
    pub start_time: Time,
    /// CPU of the root cgroup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuStats>,
    /// Memory of the root cgroup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    /// IO pressure (`KubeletPSI`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io: Option<IoStats>,
    /// Network of the host network namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkStats>,
    /// The filesystem of `--root-dir`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs: Option<FsStats>,
    /// The runtime's image and container filesystems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeStats>,
    /// PID limit and process count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rlimit: Option<RlimitStats>,
    /// Swap of the root cgroup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap: Option<SwapStats>,
}

/// `RlimitStats`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct RlimitStats {
    /// When read.
    pub time: Time,
    /// `kernel.pid_max` (bounded by `kernel.threads-max`).
    #[serde(rename = "maxpid", skip_serializing_if = "Option::is_none")]
    pub max_pid: Option<i64>,
    /// Processes (tasks) on the node.
    #[serde(rename = "curproc", skip_serializing_if = "Option::is_none")]
    pub num_of_running_processes: Option<i64>,
}

/// `RuntimeStats`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeStats {
    /// The filesystem holding images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_fs: Option<FsStats>,
    /// The filesystem holding container writable layers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_fs: Option<FsStats>,
}

/// `ProcessStats`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct ProcessStats {
    /// Processes in the pod's containers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_count: Option<u64>,
}

/// `PodStats`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodStats {
    /// The pod.
    pub pod_ref: PodReference,
    /// The sandbox's creation time.
    pub start_time: Time,
    /// The pod's running containers (a pod is listed once it has one).
    pub containers: Vec<ContainerStats>,
    /// CPU of the pod cgroup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuStats>,
    /// Memory of the pod cgroup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    /// IO pressure (`KubeletPSI`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io: Option<IoStats>,
    /// Network of the pod's network namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkStats>,
    /// Volumes.
    #[serde(rename = "volume", skip_serializing_if = "Vec::is_empty")]
    pub volume_stats: Vec<VolumeStats>,
    /// Writable layers + logs + local volumes.
    #[serde(rename = "ephemeral-storage", skip_serializing_if = "Option::is_none")]
    pub ephemeral_storage: Option<FsStats>,
    /// Process count.
    #[serde(rename = "process_stats", skip_serializing_if = "Option::is_none")]
    pub process_stats: Option<ProcessStats>,
    /// Swap of the pod cgroup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap: Option<SwapStats>,
}

/// `ContainerStats`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStats {
    /// The container's name in the pod (or the system container's name).
    pub name: String,
    /// The container's creation time.
    pub start_time: Time,
    /// CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuStats>,
    /// Memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    /// IO pressure (`KubeletPSI`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io: Option<IoStats>,
    /// The writable layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rootfs: Option<FsStats>,
    /// The container's log directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logs: Option<FsStats>,
    /// Swap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap: Option<SwapStats>,
}

/// `PodReference`.
#[derive(Debug, Clone, Serialize, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodReference {
    /// Name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// UID.
    pub uid: String,
}

/// `InterfaceStats`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InterfaceStats {
    /// Interface name.
    pub name: String,
    /// Received bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rx_bytes: Option<u64>,
    /// Receive errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rx_errors: Option<u64>,
    /// Sent bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tx_bytes: Option<u64>,
    /// Send errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tx_errors: Option<u64>,
}

/// `NetworkStats`: the default interface (`eth0`) inline, and every interface.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct NetworkStats {
    /// When read.
    pub time: Time,
    /// The default interface.
    #[serde(flatten)]
    pub default: InterfaceStats,
    /// All interfaces.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<InterfaceStats>,
}

/// `CPUStats`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CpuStats {
    /// When read.
    pub time: Time,
    /// Rate between the last two samples, in billionths of a core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_nano_cores: Option<u64>,
    /// Cumulative CPU time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_core_nano_seconds: Option<u64>,
    /// CPU pressure (`KubeletPSI`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psi: Option<PsiStats>,
}

/// `MemoryStats`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStats {
    /// When read.
    pub time: Time,
    /// Limit − working set (absent when unlimited).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    /// Usage, page cache included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_bytes: Option<u64>,
    /// Usage − inactive file pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_set_bytes: Option<u64>,
    /// Anonymous memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Page faults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_faults: Option<u64>,
    /// Major page faults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub major_page_faults: Option<u64>,
    /// Memory pressure (`KubeletPSI`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psi: Option<PsiStats>,
}

/// `IOStats` (`KubeletPSI`).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct IoStats {
    /// When read.
    pub time: Time,
    /// IO pressure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psi: Option<PsiStats>,
}

/// `PSIStats`: pressure stall information of one resource.
#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq)]
pub struct PsiStats {
    /// All tasks stalled.
    pub full: PsiData,
    /// Some tasks stalled.
    pub some: PsiData,
}

/// `PSIData`.
#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq)]
pub struct PsiData {
    /// Total stall time, as the kernel counts it (microseconds; upstream passes the
    /// `total=` value through).
    pub total: u64,
    /// Average share of stalled time over 10 s, in percent.
    #[serde(serialize_with = "go_float")]
    pub avg10: f64,
    /// Over 60 s.
    #[serde(serialize_with = "go_float")]
    pub avg60: f64,
    /// Over 300 s.
    #[serde(serialize_with = "go_float")]
    pub avg300: f64,
}

/// A float as Go's `encoding/json` writes it: integral values without a fraction (`0`, not
/// `0.0`).
fn go_float<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

/// `SwapStats`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SwapStats {
    /// When read.
    pub time: Time,
    /// Swap limit − usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_available_bytes: Option<u64>,
    /// Swap usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_usage_bytes: Option<u64>,
}

/// `VolumeStats`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VolumeStats {
    /// Usage of the volume's filesystem.
    #[serde(flatten)]
    pub fs: FsStats,
    /// The volume's name in the pod.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// `FsStats`.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FsStats {
    /// When read.
    pub time: Time,
    /// Free bytes for unprivileged users.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    /// Size of the filesystem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    /// Bytes used (by the object, or by the filesystem).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_bytes: Option<u64>,
    /// Free inodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes_free: Option<u64>,
    /// Inodes of the filesystem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes: Option<u64>,
    /// Inodes used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes_used: Option<u64>,
}

/// `SystemContainerPods` and friends.
pub mod system_containers {
    /// `SystemContainerKubelet`.
    pub const KUBELET: &str = "kubelet";
    /// `SystemContainerRuntime`.
    pub const RUNTIME: &str = "runtime";
    /// `SystemContainerMisc`.
    pub const MISC: &str = "misc";
    /// `SystemContainerPods`.
    pub const PODS: &str = "pods";
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn times_as_jiffs_rfc3339() {
        let jiff = |secs: i64| {
            jiff::Timestamp::from_second(secs)
                .unwrap()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        };
        let mut secs: Vec<i64> = vec![0, 59, 86_399, 86_400, 951_782_400, MAX_SECS];
        // Leap days and year ends over the whole range, then a pseudo-random walk.
        secs.extend((1970..10_000).flat_map(|y| {
            let t = jiff::civil::date(y, 2, 28).at(23, 59, 59, 0);
            let t = t
                .to_zoned(jiff::tz::TimeZone::UTC)
                .unwrap()
                .timestamp()
                .as_second();
            [t, t + 1, t + 86_400, t + 306 * 86_400]
        }));
        let mut x: i64 = 12345;
        for _ in 0..10_000 {
            x = (x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1)) & i64::MAX;
            secs.push(x % (MAX_SECS + 1));
        }
        let mut buf = [0u8; 20];
        for s in secs.into_iter().filter(|s| *s <= MAX_SECS) {
            assert_eq!(rfc3339_seconds(s, &mut buf), Some(jiff(s).as_str()), "{s}");
        }
        assert_eq!(rfc3339_seconds(-1, &mut buf), None);
        assert_eq!(rfc3339_seconds(MAX_SECS + 1, &mut buf), None);
        assert_eq!(MAX_SECS, jiff::Timestamp::MAX.as_second());
        let t = Time::from_nanos(-1_500_000_000);
        let want = format!("\"{}\"", jiff(t.0.as_second()));
        assert_eq!(serde_json::to_string(&t).unwrap(), want);
        let t = Time::from_nanos(1_764_567_890_123_456_789);
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            "\"2025-12-01T05:44:50Z\""
        );
    }

    #[test]
    fn names_and_omitempty_are_upstreams() {
        let s = Summary {
            node: NodeStats {
                node_name: "n".into(),
                start_time: Time::from_nanos(1_500_000_000),
                rlimit: Some(RlimitStats {
                    max_pid: Some(4_194_304),
                    ..Default::default()
                }),
                network: Some(NetworkStats {
                    default: InterfaceStats {
                        name: "eth0".into(),
                        rx_bytes: Some(5),
                        ..Default::default()
                    },
                    ..Default::default()
                }),
                ..Default::default()
            },
            pods: Vec::new(),
        };
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "node": {
                    "nodeName": "n",
                    "startTime": "1970-01-01T00:00:01Z",
                    "network": {"time": "1970-01-01T00:00:00Z", "name": "eth0", "rxBytes": 5},
                    "rlimit": {"time": "1970-01-01T00:00:00Z", "maxpid": 4194304},
                },
                "pods": [],
            })
        );
    }
}
