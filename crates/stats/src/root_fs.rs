//! The root container's filesystems in `/metrics/cadvisor` (cAdvisor v0.53.0 `fs/fs.go`
//! `NewFsInfo`/`processMounts`, `GetGlobalFsInfo`/`GetFsInfoForPath`, `getDiskStatsMap`;
//! `container/raw/handler.go` `getFsStats`/`fsToFsStats`): the partitions are the mounts of
//! `/proc/self/mountinfo` with an `ext*`, `nfs*`, `btrfs`, `overlay`, `tmpfs`, `xfs` or `zfs`
//! filesystem, one per source (a later bind mount of the same source is skipped; a `tmpfs`
//! is named by its mount point, an `overlay` `<source>_<major>-<minor>`), listed once — as
//! cAdvisor does when the kubelet starts, so mounts made later (pod volumes) are not
//! filesystems of the root. Each scrape asks `statfs` of each mount point ([`FsInfo`]) and
//! reads `/proc/diskstats` (the devices cAdvisor's `partitionRegex` keeps: `sd*`, `vd*`,
//! `xvd*`, `dm-*`, matched by name or by `major:minor`; the others report zeros).
//! Not reproduced: devicemapper thin pools and ZFS pools (`getDMStats`, `getZfstats`),
//! which cAdvisor asks `dmsetup`/`libzfs`: such partitions are reported by `statfs`; and
//! `getVfsStats`' 2 s timeout (cAdvisor leaves a hung `statfs` behind in a goroutine): a hung
//! NFS mount holds this scrape's blocking task, as it holds every other `statfs` caller.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use kubelet_cm::HostFs;

use crate::fs::FsInfo;

/// One filesystem cAdvisor lists (`partition`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Partition {
    /// The `device` label: the mount source, a tmpfs' mount point.
    pub device: String,
    /// Where it is mounted (what `statfs` is asked of).
    pub mountpoint: String,
    /// From mountinfo.
    pub major: u64,
    /// From mountinfo.
    pub minor: u64,
}

/// One line of `/proc/diskstats` (`DiskStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskStats {
    pub major: u64,
    pub minor: u64,
    pub reads_completed: u64,
    pub reads_merged: u64,
    pub sectors_read: u64,
    /// Milliseconds.
    pub read_time: u64,
    pub writes_completed: u64,
    pub writes_merged: u64,
    pub sectors_written: u64,
    /// Milliseconds.
    pub write_time: u64,
    pub io_in_progress: u64,
    /// Milliseconds.
    pub io_time: u64,
    /// Milliseconds.
    pub weighted_io_time: u64,
}

/// One filesystem's reading (`info.FsStats`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsStats {
    /// The `device` label.
    pub device: String,
    /// `Capacity` (`container_fs_limit_bytes`).
    pub limit: u64,
    /// `Capacity − Free` (`container_fs_usage_bytes`).
    pub usage: u64,
    /// `f_files`.
    pub inodes: u64,
    /// `f_ffree`.
    pub inodes_free: u64,
    /// The device's counters.
    pub disk: DiskStats,
}

/// Decodes the octal escapes (`\040`) of a mountinfo field.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b.get(i + 1..i + 4) {
            Some(d) if b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)) => {
                out.push(d.iter().fold(0u8, |v, c| v.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `processMounts` over a mountinfo table, by device.
pub fn partitions(mountinfo: &str) -> Vec<Partition> {
    const SUPPORTED: [&str; 5] = ["btrfs", "overlay", "tmpfs", "xfs", "zfs"];
    let mut out: BTreeMap<String, Partition> = BTreeMap::new();
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(mm), Some(mountpoint), Some(fs_type), Some(source)) = (
            fields.get(2),
            fields.get(4),
            fields.get(dash + 1),
            fields.get(dash + 2),
        ) else {
            continue;
        };
        let Some((major, minor)) = mm
            .split_once(':')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        else {
            continue;
        };
        let fs_type = *fs_type;
        if !fs_type.starts_with("ext")
            && !fs_type.starts_with("nfs")
            && !SUPPORTED.contains(&fs_type)
        {
            continue;
        }
        let mountpoint = unescape(mountpoint);
        let mut source = unescape(source);
        if out.contains_key(&source) && fs_type != "tmpfs" {
            continue;
        }
        if fs_type == "tmpfs" {
            source = mountpoint.clone();
        }
        if fs_type == "overlay" {
            source = format!("{source}_{major}-{minor}");
        }
        out.insert(
            source.clone(),
            Partition {
                device: source,
                mountpoint,
                major,
                minor,
            },
        );
    }
    out.into_values().collect()
}

/// `partitionRegex`: `^(?:(?:s|v|xv)d[a-z]+\d*|dm-\d+)$`.
fn is_counted_disk(name: &str) -> bool {
    let letters_digits = |rest: &str| {
        let digits = rest.trim_start_matches(|c: char| c.is_ascii_lowercase());
        digits.len() < rest.len() && digits.bytes().all(|b| b.is_ascii_digit())
    };
    if let Some(n) = name.strip_prefix("dm-") {
        return !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    }
    ["sd", "vd", "xvd"]
        .iter()
        .any(|p| name.strip_prefix(p).is_some_and(letters_digits))
}

/// `getDiskStatsMap`: `/dev/<name>` → counters, for the disks of `partitionRegex`.
pub fn parse_diskstats(s: &str) -> HashMap<String, DiskStats> {
    let mut out = HashMap::new();
    for line in s.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(name) = f.get(2).filter(|n| is_counted_disk(n)) else {
            continue;
        };
        let v: Vec<u64> = f.iter().map(|x| x.parse().unwrap_or(0)).collect();
        if v.len() < 14 {
            continue;
        }
        out.insert(
            format!("/dev/{name}"),
            DiskStats {
                major: v[0],
                minor: v[1],
                reads_completed: v[3],
                reads_merged: v[4],
                sectors_read: v[5],
                read_time: v[6],
                writes_completed: v[7],
                writes_merged: v[8],
                sectors_written: v[9],
                write_time: v[10],
                io_in_progress: v[11],
                io_time: v[12],
                weighted_io_time: v[13],
            },
        );
    }
    out
}

/// The partitions of the host's mount table (read once by the caller).
pub fn host_partitions(host: &dyn HostFs) -> Vec<Partition> {
    host.read_to_string(Path::new("/proc/self/mountinfo"))
        .map(|s| partitions(&s))
        .unwrap_or_default()
}

/// `GetGlobalFsInfo` + `fsToFsStats`: the partitions whose `statfs` answers, with their
/// device's counters.
pub fn global_fs_stats(host: &dyn HostFs, fs: &dyn FsInfo, parts: &[Partition]) -> Vec<FsStats> {
    let disks = host
        .read_to_string(Path::new("/proc/diskstats"))
        .map(|s| parse_diskstats(&s))
        .unwrap_or_default();
    parts
        .iter()
        .filter_map(|p| {
            let c = fs.capacity(Path::new(&p.mountpoint)).ok()?;
            let disk = disks
                .get(&p.device)
                .or_else(|| {
                    disks
                        .values()
                        .find(|d| d.major == p.major && d.minor == p.minor)
                })
                .copied()
                .unwrap_or_default();
            Some(FsStats {
                device: p.device.clone(),
                limit: c.capacity,
                usage: c.usage,
                inodes: c.inodes,
                inodes_free: c.inodes_free,
                disk,
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::fs::{FakeFsInfo, FsCapacity};

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:5 / /dev/shm rw shared:2 - tmpfs tmpfs rw
24 22 0:21 / /proc rw - proc proc rw
25 22 0:30 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
26 22 254:0 /var/lib/x /run/netns rw - ext4 /dev/vda rw
27 22 0:40 / /var/lib/containerd/x/rootfs rw - overlay overlay rw,lowerdir=a
28 22 0:31 / /mnt/with\\040space ro - tmpfs none ro
";

    #[test]
    fn partitions_as_process_mounts() {
        let p = partitions(MOUNTINFO);
        let devices: Vec<&str> = p.iter().map(|p| p.device.as_str()).collect();
        assert_eq!(
            devices,
            [
                "/dev/shm",
                "/dev/vda",
                "/mnt/with space",
                "/sys/fs/cgroup",
                "overlay_0-40"
            ]
        );
        let vda = p.iter().find(|p| p.device == "/dev/vda").unwrap();
        assert_eq!(
            (vda.mountpoint.as_str(), vda.major, vda.minor),
            ("/", 254, 0),
            "the bind mount is skipped"
        );
    }

    #[test]
    fn diskstats_of_counted_disks_by_name_then_major_minor() {
        let d = parse_diskstats(
            "   7       0 loop0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n 254       0 vda 11 36 427 27 27 28 118 10 0 14 38 1 1 1 1 1 1\n 259 0 nvme0n1 5 5 5 5 5 5 5 5 5 5 5\n 253 1 dm-1 1 2 3 4 5 6 7 8 9 10 11\n",
        );
        assert_eq!(d.len(), 2, "{d:?}");
        let vda = d["/dev/vda"];
        assert_eq!(
            (
                vda.reads_completed,
                vda.reads_merged,
                vda.sectors_read,
                vda.read_time
            ),
            (11, 36, 427, 27)
        );
        assert_eq!(
            (
                vda.writes_completed,
                vda.writes_merged,
                vda.sectors_written,
                vda.write_time
            ),
            (27, 28, 118, 10)
        );
        assert_eq!(
            (vda.io_in_progress, vda.io_time, vda.weighted_io_time),
            (0, 14, 38)
        );
        assert!(is_counted_disk("sda1") && is_counted_disk("xvdb") && !is_counted_disk("sd"));

        let host = kubelet_cm::FakeHostFs::default();
        host.add_file(
            "/proc/diskstats",
            " 254       0 vda 11 36 427 27 27 28 118 10 0 14 38\n",
        );
        let fs = FakeFsInfo::default();
        let cap = FsCapacity {
            capacity: 100,
            available: 50,
            usage: 40,
            inodes: 10,
            inodes_free: 4,
        };
        fs.set_capacity("/data", cap);
        let parts = vec![
            Partition {
                device: "/dev/root".into(),
                mountpoint: "/data".into(),
                major: 254,
                minor: 0,
            },
            Partition {
                device: "/gone".into(),
                mountpoint: "/gone".into(),
                ..Partition::default()
            },
        ];
        fs.set_capacity("/dev/shm", cap);
        let shm = Partition {
            device: "/dev/shm".into(),
            mountpoint: "/dev/shm".into(),
            ..Partition::default()
        };
        let parts = [parts, vec![shm]].concat();
        let s = global_fs_stats(&host, &fs, &parts);
        assert_eq!(s.len(), 2, "no statfs answer for /gone: {s:?}");
        assert_eq!(s[0].device, "/dev/root");
        assert_eq!(
            (s[0].limit, s[0].usage, s[0].inodes, s[0].inodes_free),
            (100, 40, 10, 4)
        );
        assert_eq!(s[0].disk.reads_completed, 11, "matched by major:minor");
        assert_eq!(
            (s[1].device.as_str(), s[1].disk),
            ("/dev/shm", DiskStats::default())
        );
    }
}
