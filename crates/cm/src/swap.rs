//! Swap checks of `NewContainerManager` (`pkg/kubelet/cm/container_manager_linux.go`) and
//! `run()` (`LimitedSwap` needs cgroup v2).

use std::path::Path;

use crate::CmError;
use crate::cgroups::CgroupVersion;
use crate::hostfs::HostFs;

/// Whether `/proc/swaps` lists any swap device (its first line is a header).
pub fn swap_enabled(fs: &dyn HostFs) -> Result<bool, CmError> {
    let swaps = fs
        .read_to_string(Path::new("/proc/swaps"))
        .map_err(|source| CmError::Read {
            path: "/proc/swaps".into(),
            source,
        })?;
    Ok(swaps.lines().skip(1).any(|l| !l.trim().is_empty()))
}

/// Upstream `checkSwapControllerAvailability` (`kuberuntime_container_linux.go`): cgroup v1
/// has `/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes` (swap accounting on); v2 has
/// `memory.swap.max` in the kubelet's own cgroup (`/proc/self/cgroup`'s `0::` line; the root
/// cgroup has none). Unreadable means not available, as upstream.
pub fn swap_controller_available(fs: &dyn HostFs, version: CgroupVersion) -> bool {
    if version == CgroupVersion::V1 {
        return fs.exists(Path::new(
            "/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes",
        ));
    }
    let Ok(own) = fs.read_to_string(Path::new("/proc/self/cgroup")) else {
        return false;
    };
    let Some(path) = own.lines().find_map(|l| l.strip_prefix("0::")) else {
        return false;
    };
    fs.exists(
        &Path::new("/sys/fs/cgroup")
            .join(path.trim().trim_start_matches('/'))
            .join("memory.swap.max"),
    )
}

/// The machine's swap in bytes (`SwapTotal` of `/proc/meminfo`, cAdvisor's
/// `MachineInfo.SwapCapacity`); 0 when unreadable or absent.
pub fn swap_capacity(fs: &dyn HostFs) -> u64 {
    let Ok(meminfo) = fs.read_to_string(Path::new("/proc/meminfo")) else {
        return 0;
    };
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("SwapTotal:"))
        .and_then(|v| {
            let mut parts = v.split_whitespace();
            let n: u64 = parts.next()?.parse().ok()?;
            match parts.next() {
                Some("kB") => n.checked_mul(1024),
                None => Some(n),
                Some(_) => None,
            }
        })
        .unwrap_or(0)
}

/// Upstream's swap rules: with `failSwapOn` the kubelet refuses a host with swap on;
/// `LimitedSwap` is only supported on cgroup v2.
pub fn check_swap(
    fs: &dyn HostFs,
    fail_swap_on: bool,
    swap_behavior: &str,
    version: CgroupVersion,
) -> Result<(), CmError> {
    if swap_behavior == "LimitedSwap" && version == CgroupVersion::V1 {
        return Err(CmError::Config(
            "swap behavior LimitedSwap is only supported with cgroupv2".into(),
        ));
    }
    if fail_swap_on && swap_enabled(fs)? {
        return Err(CmError::Config("running with swap on is not supported, please disable swap or set --fail-swap-on flag to false".into()));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::hostfs::FakeHostFs;

    const HEADER: &str = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";

    #[test]
    fn swap_on_refused_only_with_fail_swap_on() {
        let fs = FakeHostFs::default();
        fs.add_file("/proc/swaps", format!("{HEADER}/swapfile file 1024 0 -2\n"));
        let err = check_swap(&fs, true, "", CgroupVersion::V2).unwrap_err();
        assert!(err.to_string().contains("--fail-swap-on"), "{err}");
        assert!(check_swap(&fs, false, "", CgroupVersion::V2).is_ok());
    }

    #[test]
    fn swap_controller_as_upstream_checks_it() {
        let fs = FakeHostFs::default();
        assert!(!swap_controller_available(&fs, CgroupVersion::V1));
        fs.add_file(
            "/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes",
            "9223372036854771712\n",
        );
        assert!(swap_controller_available(&fs, CgroupVersion::V1));
        // v2: the own cgroup's memory.swap.max, not the root's.
        let fs = FakeHostFs::default();
        fs.add_file("/proc/self/cgroup", "0::/system.slice/kubelet.service\n");
        fs.add_file("/sys/fs/cgroup/memory.swap.max", "max\n");
        assert!(!swap_controller_available(&fs, CgroupVersion::V2));
        fs.add_file(
            "/sys/fs/cgroup/system.slice/kubelet.service/memory.swap.max",
            "max\n",
        );
        assert!(swap_controller_available(&fs, CgroupVersion::V2));
    }

    #[test]
    fn swap_capacity_from_meminfo() {
        let fs = FakeHostFs::default();
        assert_eq!(swap_capacity(&fs), 0);
        fs.add_file(
            "/proc/meminfo",
            "MemTotal: 10 kB\nSwapTotal:        2048 kB\n",
        );
        assert_eq!(swap_capacity(&fs), 2 * 1024 * 1024);
        fs.add_file("/proc/meminfo", "MemTotal: 10 kB\n");
        assert_eq!(swap_capacity(&fs), 0);
    }

    #[test]
    fn no_swap_is_fine() {
        let fs = FakeHostFs::default();
        fs.add_file("/proc/swaps", HEADER);
        assert!(check_swap(&fs, true, "", CgroupVersion::V1).is_ok());
    }

    #[test]
    fn limited_swap_needs_v2() {
        let fs = FakeHostFs::default();
        fs.add_file("/proc/swaps", HEADER);
        assert!(check_swap(&fs, false, "LimitedSwap", CgroupVersion::V1).is_err());
        assert!(check_swap(&fs, false, "LimitedSwap", CgroupVersion::V2).is_ok());
    }
}
